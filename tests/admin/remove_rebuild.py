#!/usr/bin/env python3
# Proves: every single member of a RAID5 volume, and every pair of members of
# a RAID6 volume, can be failed, removed and replaced by a blank member that
# is rebuilt, with the sha256 of every file unchanged before, while degraded
# and after the rebuild (reads go to the daemon: O_DIRECT, a 1 MiB read
# cache); writes made while degraded survive the rebuild too; fsck is clean
# and the data is still right after a remount.
# Fault injected: the member(s) failed through framefs-admin (as when a
# drive is pulled), then their files deleted and replaced by blank ones.
import os
import random
import time
from itertools import combinations

from adminlib import (Vol, check, env_int, log, run_test, seed_from_env, verify_set,
                      write_file, write_set)

SIZES = [0, 1, 4096, 100000, (3 << 20) + 7, 12 << 20, (20 << 20) + 123, 9 << 20,
         (1 << 20) - 512, 16 << 20]


def cycle(v, want, rng, roles, n):
    tag = "roles %s" % ",".join(map(str, roles))
    for r in roles:
        v.admin("fail", v.mnt, v.members[r])
    st = v.status()
    check(st["state"] == "degraded" and
          sorted(m["role"] for m in st["members"] if m["state"] == "failed") == list(roles),
          "%s: after fail: %r" % (tag, v.roles(st)))
    verify_set(v.mnt, want, "%s degraded" % tag)
    # writes go on while degraded
    rel = "degraded-%02d.bin" % n
    want[rel] = write_file(os.path.join(v.mnt, rel), rng.randrange(1 << 20, 8 << 20), rng)
    for r in roles:
        v.admin("remove", v.mnt, v.members[r])
        os.unlink(v.members[r])
        v.made.remove(v.members[r])
    st = v.status()
    check(all(st["members"][r]["state"] == "missing" and st["members"][r]["path"] is None
              for r in roles), "%s: after remove: %r" % (tag, v.roles(st)))
    for r in roles:
        v.members[r] = v.new_file("m%d.g%d" % (r, n))
        _, out, _ = v.admin("add", v.mnt, v.members[r])
        check("takes over role %d" % r in out, "%s: add: %r" % (tag, out))
    t0 = time.monotonic()
    st = v.rebuild_wait()
    check([m["path"] for m in st["members"]] == v.members, "%s: members %r" % (tag, v.roles(st)))
    verify_set(v.mnt, want, "%s rebuilt" % tag)
    return time.monotonic() - t0


def run_level(level, nmembers, sets, rng):
    v = Vol(level, nmembers, 256 << 20)
    try:
        v.mount("read_cache_mb=1")
        want = write_set(v.mnt, rng, SIZES)
        verify_set(v.mnt, want, "before")
        rebuild_s = []
        for n, roles in enumerate(sets):
            rebuild_s.append(cycle(v, want, rng, roles, n))
        log("ok: RAID%d: %d loss pattern(s) %s failed, removed, rebuilt onto blank members; "
            "every sha256 unchanged before, degraded and after (rebuild %.2f..%.2f s)"
            % (level, len(sets), sets, min(rebuild_s), max(rebuild_s)))
        v.unmount()
        v.fsck_clean()
        v.mount()
        verify_set(v.mnt, want, "after remount")
        v.unmount()
        log("ok: RAID%d: fsck clean, data right after remount" % level)
    finally:
        v.cleanup()


def test():
    rng = random.Random(seed_from_env())
    run_level(5, 4, [(r,) for r in range(4)], rng)
    pairs = list(combinations(range(5), 2))[:env_int("ADMIN_PAIRS_MAX", 10)]
    run_level(6, 5, pairs, rng)


run_test(test)
