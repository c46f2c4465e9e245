#!/usr/bin/env python3
# Proves: every scrub that ends leaves a record in the superblock's scrub
# history (fs/base/format.h) that survives unmount and remount: when it started
# and ended, whether it repaired, what it checked, found and repaired, and
# how it ended; status --json and scrub status --json list the records
# newest first with the counts each scrub had (a clean scrub 0, a repair of
# one damaged data chunk found 1 / repaired 1, a check-only scrub of one
# found 1 / repaired 0), times within the test's wall-clock window; the
# text status names the last scrub with its local date and time; a scrub
# run offline by framefs-admin on the unmounted members is recorded too;
# more than 8 scrubs keep exactly the 8 newest; fsck.framefs -n is clean.
# Faults injected: the daemon killed (SIGKILL) right after the first scrub
# ended (its record must already be on disk); bits flipped in one data chunk of one member (3 bits,
# adminlib.corrupt_member), written while the volume is unmounted, twice:
# once before the repair scrub, once before the check-only scrub (whose
# damage the offline scrub then repairs).
import os
import random
import re
import time

from adminlib import Vol, check, corrupt_member, log, member_data_area, run_test, seed_from_env

COUNTS = ["bytes_checked", "stripes_checked", "meta_chunks_checked", "chunks_bad",
          "chunks_repaired", "chunks_unrepairable", "parity_bad", "parity_repaired", "meta_bad",
          "meta_repaired", "unreadable"]
KEYS = ["seq", "start_s", "end_s", "repair", "result"] + COUNTS


def data_chunk(v, st, data):
    """(member, offset) of the first chunk on the members that holds the
    file's bytes (a data chunk, not parity: parity is not in the file)."""
    start, end = member_data_area(st)
    chunk = st["chunk_bytes"]
    for path in v.members:
        with open(path, "rb") as f:
            for off in range(start, end, chunk):
                f.seek(off)
                b = f.read(chunk)
                if b != bytes(chunk) and data.find(b) >= 0:
                    return path, off
    raise AssertionError("no data chunk of the file found on the members")


def damage_one_chunk(v, data, rng):
    st = v.adminj("status", *v.members)
    path, off = data_chunk(v, st, data)
    hit = corrupt_member(path, off, off + st["chunk_bytes"], st["chunk_bytes"], rng)
    check(hit == 1, "corrupt_member hit %d chunks, expected 1" % hit)
    log("flipped 3 bits in the data chunk at %d of %s" % (off, os.path.basename(path)))


def scrub(v, *opts):
    sc = v.adminj("scrub", "start", "--wait", *opts, v.mnt, expect=None)["scrub"]
    check(not sc["active"], "scrub start --wait returned with the scrub active: %r" % sc)
    return sc


def expect(rec, what, repair, **counts):
    for k in KEYS:
        check(k in rec, "%s: history record lacks %r: %r" % (what, k, rec))
    check(rec["repair"] == repair and rec["result"] == "done", "%s: %r" % (what, rec))
    want = dict.fromkeys(COUNTS[3:], 0)
    want.update(counts)
    got = {k: rec[k] for k in want}
    check(got == want, "%s: counts %r, expected %r" % (what, got, want))
    check(rec["stripes_checked"] > 0 and rec["meta_chunks_checked"] > 0 and
          rec["bytes_checked"] > 0, "%s: nothing checked: %r" % (what, rec))


def history(v, t0):
    """The history from scrub status --json and status --json (they agree);
    every record's times within [t0, now], seq falling by one."""
    h = v.adminj("scrub", "status", v.mnt)["scrub"]["history"]
    check(v.status()["scrub"]["history"] == h, "status --json and scrub status --json differ")
    now = int(time.time())
    for i, r in enumerate(h):
        check(t0 <= r["start_s"] <= r["end_s"] <= now, "record %d: times %d..%d outside %d..%d"
              % (i, r["start_s"], r["end_s"], t0, now))
        check(i == 0 or r["seq"] == h[i - 1]["seq"] - 1, "seq not newest first: %r"
              % [x["seq"] for x in h])
    return h


def test():
    rng = random.Random(seed_from_env())
    t0 = int(time.time())
    v = Vol(5, 4, 64 << 20)
    try:
        v.mount("read_cache_mb=1")
        check(v.status()["scrub"]["history"] == [], "a new volume has a scrub history")
        data = rng.randbytes(6 << 20)
        with open(os.path.join(v.mnt, "clip.mov"), "wb") as f:
            f.write(data)

        # 1. a clean volume, repair; the daemon then killed (no unmount
        # writes the superblock): the record was made durable when it ended
        sc = scrub(v)
        check(sc["chunks_bad"] == 0, "first scrub found damage: %r" % sc)
        v.kill9()
        v.mount("read_cache_mb=1")
        h = history(v, t0)
        check([r["seq"] for r in h] == [1], "after kill -9: history %r" % h)
        log("ok: the record survives kill -9 right after the scrub")
        v.unmount()

        # 2. one damaged data chunk, repair
        damage_one_chunk(v, data, rng)
        v.mount("read_cache_mb=1")
        scrub(v)
        v.unmount()

        # 3. one damaged data chunk again, check only (it stays damaged)
        damage_one_chunk(v, data, rng)
        v.mount("read_cache_mb=1")
        scrub(v, "--no-repair")
        v.unmount()

        # after a remount: three records, newest first
        v.mount("read_cache_mb=1")
        h = history(v, t0)
        check(len(h) == 3 and [r["seq"] for r in h] == [3, 2, 1], "history %r" % h)
        expect(h[0], "check-only scrub", False, chunks_bad=1)
        expect(h[1], "repair scrub", True, chunks_bad=1, chunks_repaired=1)
        expect(h[2], "clean scrub", True)
        log("ok: after a remount: 3 records newest first (found/repaired %s)"
            % [(r["chunks_bad"], r["chunks_repaired"]) for r in h])
        _, out, _ = v.admin("status", v.mnt)
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(h[0]["start_s"]))
        line = re.search(r"\n  scrub +(\S+ \S+) to (\S+ \S+) \((\d+:\d\d:\d\d)\), check only, "
                         r"done: \d+ stripes, .* checked\n +data chunks bad 1, repaired 0;", out)
        check(line and line.group(1) == when, "status text does not name the last scrub (%s):\n%s"
              % (when, out))
        log("ok: the text status names the last scrub: %s" % line.group(0).strip())
        v.unmount()

        # 4. offline, on the unmounted members: repairs what scrub 3 left
        sc = v.adminj("scrub", "start", ",".join(v.members))["scrub"]
        check(sc["chunks_bad"] == 1 and sc["chunks_repaired"] == 1, "offline scrub %r" % sc)
        off = v.adminj("status", *v.members)["scrub"]["history"]
        check(len(off) == 4 and off[0]["seq"] == 4, "offline status history %r" % off)
        check(v.adminj("scrub", "status", *v.members)["scrub"]["history"] == off,
              "offline scrub status and status disagree")
        v.mount("read_cache_mb=1")
        h = history(v, t0)
        check(len(h) == 4 and h[0]["seq"] == 4, "history after the offline scrub %r" % h)
        expect(h[0], "offline scrub", True, chunks_bad=1, chunks_repaired=1)
        log("ok: the offline scrub is recorded and shows after the next mount")

        # 5. the ring: 9 scrubs in all keep the 8 newest
        for _ in range(5):
            scrub(v, "--no-repair")
        h = history(v, t0)
        check([r["seq"] for r in h] == list(range(9, 1, -1)), "after 9 scrubs: seqs %r"
              % [r["seq"] for r in h])
        check(h[-1]["repair"] and h[-1]["chunks_bad"] == 1, "the 8th newest is not scrub 2: %r"
              % h[-1])
        _, out, _ = v.admin("scrub", "status", v.mnt)
        check("scrub(s), newest first" in out and "\n#9 " in out and "\n#2 " in out and
              "\n#1 " not in out, "scrub status text:\n%s" % out)
        log("ok: 9 scrubs keep the 8 newest (seq 9..2)")
        v.unmount()
        v.fsck_clean()
        log("ok: fsck.framefs -n -c clean")
    finally:
        v.cleanup()


run_test(test)
