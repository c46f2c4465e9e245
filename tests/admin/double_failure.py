#!/usr/bin/env python3
# Proves: one failure more than RAID5's parity allows never returns wrong
# data: every read either returns the right bytes or fails with EIO, writes
# fail rather than vanish, status says "failed" and why, the daemon logs it,
# framefs-admin refuses to fail a second member by hand, and the next mount
# (and framefs-admin offline) refuses to assemble, naming the lost roles.
# Faults injected: member 0 failed through framefs-admin; then
# "MEMBER1@op=rw,err=EIO" on member 1 (its every read and write fails).
# Mounted with -o max_read_errors=0, so that member 1's first read error
# fails it (by default a read error is healed from parity, and with none
# left it fails the read with EIO and is counted, the member kept:
# tests/unit/test_raid_heal.c raid5_degraded_read_error_is_eio).
import errno
import os
import random

from adminlib import (TestFailure, Vol, check, log, run_test, seed_from_env, sha256_direct,
                      write_set)

SIZES = [0, 4096, 300000, (5 << 20) + 11, 12 << 20, 20 << 20, 1 << 20, 7 << 20]


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 256 << 20)
    try:
        v.mount("read_cache_mb=1")
        want = write_set(v.mnt, rng, SIZES)
        v.unmount()
        v.mount("read_cache_mb=1", "max_read_errors=0")  # nothing cached: every read goes to the members

        v.admin("fail", v.mnt, v.members[0])
        _, _, err = v.admin("fail", v.mnt, v.members[1], expect=1)
        check("refused" in err and "lose data" in err, "second fail by hand: %r" % err)
        log("ok: framefs-admin refuses to fail a second RAID5 member: %s" % err.strip())

        v.admin("fault", v.mnt, "%s@op=rw,err=EIO" % os.path.basename(v.members[1]))
        right = failed = 0
        for rel, digest in sorted(want.items()):
            try:
                got = sha256_direct(os.path.join(v.mnt, rel))
            except OSError as e:
                check(e.errno == errno.EIO, "%s: read failed with %s, not EIO" % (rel, e))
                failed += 1
                continue
            check(got == digest, "%s: WRONG DATA returned after a second failure" % rel)
            right += 1
        check(failed > 0, "no read failed although two RAID5 members are gone")
        st = v.status()
        check(st["state"] == "failed" and st["failed_members"] == 2 and
              "rather than return wrong data" in st["state_reason"] and st["redundancy_left"] < 0,
              "status: %s / %s" % (st["state"], st["state_reason"]))
        _, out, _ = v.admin("status", v.mnt)
        check("state    failed: 2 of 4 members lost" in out, "status text:\n%s" % out)
        check("WITHOUT REDUNDANCY" in v.full_log(), "not logged:\n%s" % v.daemon_log())
        log("ok: %d file(s) read right, %d failed with EIO, none wrong; status: %s"
            % (right, failed, st["state_reason"]))

        # a write must fail, not vanish
        path = os.path.join(v.mnt, "after-loss.bin")
        try:
            with open(path, "wb") as f:
                f.write(os.urandom(8 << 20))
                f.flush()
                os.fsync(f.fileno())
            raise TestFailure("an 8 MiB write + fsync succeeded with two RAID5 members gone")
        except OSError as e:
            log("ok: a write after the second failure fails: %s" % e)

        v.unmount(expect_rc=None)  # it may not write everything out: that is the point
        rc = v.mount(expect_fail=True)
        log_text = v.daemon_log()
        check(rc != 0 and "cannot assemble RAID5" in log_text and "roles 0, 1" in log_text and
              "RAID5 survives 1" in log_text, "the next mount: exit %d\n%s" % (rc, log_text))
        log("ok: the next mount refuses: %s" % log_text.strip().splitlines()[-1])
        rc, out, err = v.admin("status", *v.members, expect=3)
        check("cannot assemble RAID5" in err and "failed" in err, "offline status:\n%s" % err)
        j = v.adminj("status", *v.members, expect=3)
        check(j["ok"] is False and len(j["members"]) == 4 and
              all(m["roles_seen"][1] == "failed" for m in j["members"][2:]),
              "offline --json: %r" % j)
        log("ok: framefs-admin status offline says why and what each member recorded")
    finally:
        v.cleanup()


run_test(test)
