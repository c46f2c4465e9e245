#!/usr/bin/env python3
# Proves: an xattr set is atomic across a crash.  A workload replaces six
# attributes of one file in a loop with values of 0 to 65536 bytes (inline
# and in value blocks, fs/meta/xattr.c) while the daemon is killed with SIGKILL
# at a random point; with --powerloss a random half of the member writes
# no flush covered is rolled back too (crash_kill9.py's power cut).  After
# each recovery every attribute holds exactly one of the values written to
# it (the last acknowledged one or a later one the workload started), never
# a mix or an unreadable chain, and fsck.framefs -n -c finds nothing.  The
# volume has the smallest journal mkfs makes (64 blocks), so a set of a
# 64 KiB value shares it with little else.
#
#   IT_SEED=N                 the seed (printed; default from the clock)
#   IT_XATTR_CRASH_ITERS=N    crash iterations (default 8)
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crash_kill9  # noqa: E402
from itlib import TestFailure, Volume, log, run_to_kill_point, seed_from_env  # noqa: E402

NAMES = 6
SIZES = [0, 1, 900, 1024, 1025, 4000, 4097, 30000, 65535, 65536]


def value(k, gen):
    """The value generation gen writes to attribute k: its size and bytes
    follow from (k, gen) alone."""
    n = SIZES[(k * 7 + gen) % len(SIZES)]
    r = random.Random(k * 1000003 + gen)
    return (r.randbytes(64) * (n // 64 + 1))[:n]


def workload(mnt, log_path, seed):
    """Log "T k gen" before each set and "A k gen" after it returned."""
    r = random.Random(seed)
    f = os.path.join(mnt, "f")
    gen = 1000 * (seed + 1)
    with open(log_path, "a", buffering=1) as lg:
        while True:
            k = r.randrange(NAMES)
            gen += 1
            lg.write("T %d %d\n" % (k, gen))
            try:
                os.setxattr(f, "user.k%d" % k, value(k, gen))
            except OSError as e:
                lg.write("E %s\n" % e)  # the daemon died: the mount answers ENOTCONN
                return
            lg.write("A %d %d\n" % (k, gen))


def verify(f, it, cands):
    """Each attribute is one of its candidates; that one is all it may be now."""
    for k in range(NAMES):
        try:
            v = os.getxattr(f, "user.k%d" % k)
        except OSError as e:
            raise TestFailure("iteration %d: user.k%d cannot be read after recovery: %s" % (it, k, e))
        match = [g for g in sorted(cands[k]) if value(k, g) == v]
        if not match:
            raise TestFailure("iteration %d: user.k%d (%d bytes) is none of the %d values written to it"
                              % (it, k, len(v), len(cands[k])))
        cands[k] = {match[-1]}


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--workload":
        workload(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    powerloss = "--powerloss" in sys.argv[1:]
    seed = seed_from_env()
    iters = int(os.environ.get("IT_XATTR_CRASH_ITERS", "8"))
    rng = random.Random(seed)
    log("seed %d (IT_SEED), %d iterations%s" % (seed, iters, ", power cuts" if powerloss else ""))
    vol = Volume(5, 4, 256 << 20, mkfs_args=("-J", "64"))
    cut = None
    if powerloss:
        undo = os.path.join(vol.tmp, "undo")
        os.mkdir(undo)
        os.environ["FRAMEFS_UNDO_DIR"] = undo
        cut = crash_kill9.Crash(vol, seed, iters, undo_dir=undo)
    try:
        vol.mount()
        f = os.path.join(vol.mnt, "f")
        open(f, "w").close()
        cands = {}
        for k in range(NAMES):
            os.setxattr(f, "user.k%d" % k, value(k, 0))
            cands[k] = {0}
        vol.unmount()
        vol.mount()
        for it in range(iters):
            log_path = os.path.join(vol.tmp, "log.%d" % it)
            open(log_path, "w").close()
            w = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--workload", vol.mnt,
                                  log_path, str(it)])
            delay = rng.uniform(0.05, 0.8)
            run_to_kill_point(w, delay, log_path, "iteration %d: the workload" % it)
            vol.kill9()
            w.wait(timeout=30)
            if cut:
                cut.power_cut()
            acks = 0
            with open(log_path) as lg:
                for line in lg:
                    p = line.split()
                    if p[0] == "T":
                        cands[int(p[1])].add(int(p[2]))
                    acks += p[0] == "A"
            vol.mount()
            verify(f, it, cands)
            vol.unmount()
            vol.check_fsck()
            vol.mount()
            log("iteration %d: killed after %.2f s, %d sets returned; every value whole, fsck clean"
                % (it, delay, acks))
        vol.unmount()
        if cut:
            log("power cuts: %d unflushed member writes, %d rolled back"
                % (cut.stats["unflushed"], cut.stats["lost"]))
        log("ok: xattr sets survive %d crashes whole" % iters)
    finally:
        vol.cleanup()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TestFailure as e:
        log("FAIL: %s" % e)
        sys.exit(1)
