#!/usr/bin/env python3
# Proves: bits flipped on one member are detected by the data checksums, the
# application still gets the right bytes (rebuilt from parity), the chunk is
# repaired in place; a scrub finds and repairs the damage the reads did not
# touch and names the damaged file by path; a second scrub finds nothing;
# fsck -c is clean.  Bits flipped in flight on reads are corrected the same
# way.
# Faults injected:
#   persistent: bits flipped in every written chunk of one member's data area
#     (data and parity chunks), written into the member file while the volume
#     is unmounted (where: framefs-admin status --json geometry);
#   transient: "MEMBER@op=r,flip=4" (4 bits flipped in every read of one member).
import os
import random

from adminlib import (Vol, check, corrupt_member, log, member_data_area, run_test, seed_from_env, sha256_direct,
                      verify_set, write_file)

CORRUPT_ROLE = 1




def fs_stats(v):
    return v.status()["stats"]["fs"]


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 256 << 20)
    try:
        v.mount("read_cache_mb=1")
        want = {"read-me.mov": write_file(os.path.join(v.mnt, "read-me.mov"), 24 << 20, rng)}
        os.mkdir(os.path.join(v.mnt, "scrub-me"))
        want["scrub-me/clip.mov"] = write_file(os.path.join(v.mnt, "scrub-me/clip.mov"),
                                               (24 << 20) + 4096, rng)
        v.unmount()

        # persistent damage, written into one member while unmounted
        st = v.adminj("status", *v.members)
        start, end = member_data_area(st)
        hit = corrupt_member(v.members[CORRUPT_ROLE], start, end, st["chunk_bytes"], rng)
        check(hit >= 8, "only %d written chunks found on the member" % hit)
        log("flipped bits in %d chunks of %s (data area %d..%d)"
            % (hit, v.members[CORRUPT_ROLE], start, end))

        v.mount("read_cache_mb=1")
        got = sha256_direct(os.path.join(v.mnt, "read-me.mov"))
        check(got == want["read-me.mov"], "read-me.mov read back wrong: %s" % got)
        s = fs_stats(v)
        check(s["crc_errors"] > 0 and s["crc_repaired"] > 0,
              "the flipped bits were not detected/repaired on read: %r" % s)
        check("repaired from parity" in v.full_log(), "no repair logged:\n%s" % v.daemon_log())
        log("ok: read: %d bad chunks detected, %d repaired, the right bytes returned"
            % (s["crc_errors"], s["crc_repaired"]))

        r = v.adminj("scrub", "start", "--wait", v.mnt)
        sc = r["scrub"]
        check(sc["chunks_bad"] > 0 and sc["chunks_repaired"] == sc["chunks_bad"] and
              sc["unreadable"] == 0 and sc["error"] is None, "scrub: %r" % sc)
        files = {f["path"]: f for f in sc["files"]}
        check("/scrub-me/clip.mov" in files and files["/scrub-me/clip.mov"]["repaired"],
              "scrub did not report /scrub-me/clip.mov as repaired: %r" % sc["files"])
        _, out, _ = v.admin("scrub", "status", v.mnt)
        check("damaged file /scrub-me/clip.mov" in out and "repaired" in out,
              "scrub status text:\n%s" % out)
        log("ok: scrub: %d bad data chunks, %d repaired, %d bad parity, %d repaired; reported %s"
            % (sc["chunks_bad"], sc["chunks_repaired"], sc["parity_bad"], sc["parity_repaired"],
               sorted(files)))
        verify_set(v.mnt, want, "after scrub")
        r = v.adminj("scrub", "start", "--wait", v.mnt)
        sc = r["scrub"]
        check(sc["chunks_bad"] == 0 and sc["parity_bad"] == 0 and sc["meta_bad"] == 0 and
              sc["files"] == [] and sc["stripes_checked"] > 0, "second scrub: %r" % sc)
        log("ok: a second scrub finds nothing (%d stripes checked)" % sc["stripes_checked"])

        # transient: bits flipped in flight on every read of another member
        # (after a remount: no cached stripe may answer the reads)
        name = os.path.basename(v.members[2])
        v.unmount()
        v.mount("read_cache_mb=1")
        v.admin("fault", v.mnt, "%s@op=r,flip=4" % name)
        before = fs_stats(v)["crc_errors"]
        verify_set(v.mnt, want, "bits flipped in flight")
        after = fs_stats(v)["crc_errors"]
        check(after > before, "flips in flight not detected (%d -> %d)" % (before, after))
        v.admin("fault", v.mnt, "clear")
        log("ok: bits flipped in flight on %s: %d bad chunks detected, data right"
            % (name, after - before))
        v.unmount()
        v.fsck_clean()
        log("ok: fsck -c clean")
    finally:
        v.cleanup()


run_test(test)
