#!/usr/bin/env python3
# Proves: a rebuild interrupted by SIGKILL of the daemon resumes from its
# checkpoint — at the next mount, or offline with `framefs-admin rebuild
# MEMBER...` — rather than from the start, and finishes; every file (also
# one fsynced during the rebuild) is intact and fsck -c is clean.
# Fault injected: SIGKILL of the daemon while a rebuild runs (slowed with
# `framefs-admin set` so that it is caught in the middle); before that, the
# member being replaced is failed and removed through framefs-admin.
import json
import os
import random
import re
import time

from adminlib import (Vol, check, log, run_test, seed_from_env, verify_set, write_file,
                      write_set)

RATE_BPS = 24 << 20  # a 256 MiB member takes ~11 s at this rate: SIGKILL lands mid-way
SIZES = [(40 << 20) + 5, 33 << 20, 1 << 20, 4096, (25 << 20) + 3]


def start_slow_rebuild(v, role, gen):
    v.admin("set", v.mnt, "rebuild_min=%d" % RATE_BPS, "rebuild_max=%d" % RATE_BPS)
    v.admin("fail", v.mnt, v.members[role])
    v.admin("remove", v.mnt, v.members[role])
    os.unlink(v.members[role])
    v.made.remove(v.members[role])
    v.members[role] = v.new_file("m%d.g%d" % (role, gen))
    v.admin("add", v.mnt, v.members[role])


def kill_midway(v, full_bytes):
    """SIGKILL once half of the member's bytes are rebuilt (and checkpointed)."""
    v.wait_for(lambda: v.status()["rebuild"]["bytes_done"] >= full_bytes // 2, 120,
               "half of the rebuild")
    time.sleep(1.2)  # a checkpoint (every second) past that point
    st = v.status()
    done = st["rebuild"]["bytes_done"]
    check(st["rebuild"]["active"] and done < full_bytes * 0.9, "rebuild not mid-way: %r"
          % st["rebuild"])
    v.kill9()
    log("SIGKILL with %d of %d bytes rebuilt (%.1f%% shown, phase %s)"
        % (done, full_bytes, st["rebuild"]["percent"], st["rebuild"]["phase"]))
    return done


def check_resumed(done_before, done_after, full_bytes, how):
    """The resumed run wrote what was left, give or take what was written
    since the last checkpoint (one a second; the engine's rate limiter lets
    up to about twice the set rate through)."""
    bound = full_bytes - done_before + 3 * RATE_BPS
    check(0 < done_after <= bound,
          "%s: the resumed rebuild wrote %d bytes; after %d of %d before the SIGKILL it should "
          "write at most %d: it started over" % (how, done_after, done_before, full_bytes, bound))


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 256 << 20)
    try:
        v.mount("read_cache_mb=1")
        want = write_set(v.mnt, rng, SIZES)
        full = v.status()["geometry"]
        full_bytes = full["meta_member_bytes"] + full["nstripes"] * v.status()["chunk_bytes"]

        # 1: killed, resumed by the daemon at the next mount
        start_slow_rebuild(v, 1, 1)
        v.wait_for(lambda: v.status()["rebuild"]["bytes_done"] > 0, 120, "the rebuild to start")
        want["during.mov"] = write_file(os.path.join(v.mnt, "during.mov"), 6 << 20, rng)
        fd = os.open(os.path.join(v.mnt, "during.mov"), os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        before = kill_midway(v, full_bytes)
        v.mount("read_cache_mb=1")
        m = re.search(r"rebuild of member mask (\S+) starts at phase (\d+) position (\d+)",
                      v.daemon_log(200))
        check(m and (int(m.group(2)) > 0 or int(m.group(3)) > 0),
              "the rebuild did not resume from a checkpoint:\n%s" % v.daemon_log())
        log("resumed at phase %s position %s" % (m.group(2), m.group(3)))
        st = v.rebuild_wait()
        done = st["rebuild"]["bytes_done"]
        check_resumed(before, done, full_bytes, "at mount")
        verify_set(v.mnt, want, "after the resumed rebuild")
        v.unmount()
        v.fsck_clean()
        log("ok: killed mid-rebuild, resumed at mount (it wrote %d of %d bytes), finished, data "
            "intact, fsck clean" % (done, full_bytes))

        # 2: killed, resumed offline by framefs-admin rebuild
        v.mount("read_cache_mb=1")
        start_slow_rebuild(v, 2, 2)
        before = kill_midway(v, full_bytes)
        off = v.adminj("status", *v.members)
        check(off["state"] == "rebuilding" and off["members"][2]["state"] == "rebuilding" and
              off["rebuild"]["phase"] == "pending", "offline status: %r" % off["rebuild"])
        _, out, _ = v.admin("--json", "rebuild", *v.members, timeout=600)
        r = json.loads(out)
        done = r["rebuild"]["bytes_done"]
        check(r["state"] == "clean", "offline rebuild: state %s" % r["state"])
        check_resumed(before, done, full_bytes, "offline")
        v.fsck_clean()
        v.mount()
        st = v.status()
        check(st["state"] == "clean", "after the offline rebuild: %s" % st["state"])
        verify_set(v.mnt, want, "after the offline rebuild")
        v.unmount()
        v.fsck_clean()
        log("ok: killed mid-rebuild, resumed offline by framefs-admin rebuild (it wrote %d of %d bytes "
            "), data intact, fsck clean" % (done, full_bytes))
    finally:
        v.cleanup()


run_test(test)
