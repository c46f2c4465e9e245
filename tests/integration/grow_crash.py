#!/usr/bin/env python3
# Proves: a grow killed anywhere (SIGKILL of `framefs-admin grow` at a
# random point: while the filesystem's records are made, between the
# array's superblocks, in the middle of the restripe) leaves a volume that
# the same command, given again, grows to the end; then fsck.framefs -n -c
# finds nothing to repair (every data chunk against its checksum), and, on
# every fourth iteration and the last, mounted, every file's sha256 is what
# was written.
# RAID5 x 3 + 1 (IT_GROW_LEVEL=6: RAID6 x 4 + 1), the same written volume
# restored before each iteration; the kill points spread over the length
# of a whole grow, measured first.
#   IT_GROW_CRASH_ITERS=N  iterations (default 20)
#   IT_SEED=N              the kill points (printed, to replay a failure)
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import MiB, check_files, write_files  # noqa: E402
from itlib import TestFailure, Volume, log, seed_from_env  # noqa: E402

ADMIN = os.environ["ADMIN"]
MEMBER = 96 * MiB


def main():
    level = int(os.environ.get("IT_GROW_LEVEL", "5"))
    n = 3 if level == 5 else 4
    iters = int(os.environ.get("IT_GROW_CRASH_ITERS", "20"))
    seed = seed_from_env()
    rng = random.Random(seed)
    vol = Volume(level, n, MEMBER, mkfs_args=("-c", "64K"))
    old, new = list(vol.members), vol.members[0] + ".new"
    saved = [m + ".saved" for m in old]
    kills = 0
    try:
        vol.mount()
        sums = write_files(vol.mnt, 8, 2 * MiB, 0, 4 * MiB, 4)
        vol.unmount()
        for m, s in zip(old, saved):
            shutil.copyfile(m, s)
        span = None
        for it in range(iters + 1):
            for m, s in zip(old, saved):
                shutil.copyfile(s, m)
            with open(new, "wb") as f:
                f.truncate(MEMBER)
            if span is None:  # iteration 0: a whole grow, for the kill points' span
                t0 = time.monotonic()
                r = subprocess.run([ADMIN, "grow", vol.spec, new], capture_output=True, text=True)
                span = time.monotonic() - t0
                if r.returncode != 0:
                    raise TestFailure("grow: exit %d: %s" % (r.returncode, r.stderr))
                delay, killed = None, False
            else:
                delay = rng.uniform(0, span)
                w = subprocess.Popen([ADMIN, "grow", vol.spec, new], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                t0 = time.monotonic()
                while time.monotonic() - t0 < delay and w.poll() is None:
                    time.sleep(0.005)  # the kill point, not a wait for an event
                killed = w.poll() is None
                if killed:
                    w.kill()
                    kills += 1
                w.wait()
                # the same command again: the grow goes on to its end
                r = subprocess.run([ADMIN, "grow", vol.spec, new], capture_output=True, text=True)
                if r.returncode != 0:
                    raise TestFailure("iteration %d (seed %d, kill at %.3f s of %.3f): the grow "
                                      "given again: exit %d: %s" % (it, seed, delay, span,
                                                                    r.returncode, r.stderr))
            grown = Volume.__new__(Volume)
            grown.__dict__.update(vol.__dict__)
            grown.members = old + [new]
            grown.spec = ",".join(grown.members)
            grown.check_fsck()
            if it % 4 and it != iters:
                continue
            grown.mount()
            try:
                check_files(grown.mnt, sums, "iteration %d (seed %d, kill at %s s)"
                            % (it, seed, "%.3f" % delay if delay is not None else "none"),
                            TestFailure)
            finally:
                grown.unmount()
            vol.nmounts = grown.nmounts
    except TestFailure as e:
        print("FAIL: %s\n%s" % (e, vol.daemon_log()))
        return 1
    finally:
        for p in saved + [new]:
            try:
                os.unlink(p)
            except OSError:
                pass
        vol.cleanup()
    print("PASS: %d grows killed at random points (seed %d, a whole grow %.2f s) each went on to "
          "the end when given again: fsck clean, every file's sha256 the same" % (kills, seed, span))
    return 0


if __name__ == "__main__":
    sys.exit(main())
