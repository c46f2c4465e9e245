#!/usr/bin/env python3
# Proves: a member away for a while is re-added and only what was written
# without it is resynced (md's --re-add): far fewer stripes and metadata rows
# than a full rebuild writes, every file's sha256 right, fsck clean.
#   1. mounted: the member failed through framefs-admin (as a pulled cable),
#      frames written, a file deleted; framefs-admin re-add VOLUME MEMBER; status
#      shows the re-add and what it resyncs;
#   2. unmounted: the member file renamed away, the volume mounted and written
#      without it, unmounted, the file renamed back; framefs-admin re-add on the
#      other members (offline: it runs to the end there);
#   3. refused: a blank file is no member of the array; a member given back
#      twice is already in it.
# Fault injected: the member failed (1) or its file unavailable at mount (2).
import os
import random

from adminlib import Vol, check, log, run_test, seed_from_env, verify_set, write_file, write_set

FRAME = 12812288  # frametest's 2k preset
SIZES = [4096, 100000, 3 << 20, FRAME, FRAME, 9 << 20]


def full_units(st):
    g = st["geometry"]
    return g["nstripes"] + g["meta_member_bytes"] // 65536


def readd_online(v, want, rng):
    role = 1
    v.admin("fail", v.mnt, v.members[role])
    check(v.status()["state"] == "degraded", "degraded after fail")
    for i in range(3):  # frames written while it is away
        rel = "away-%02d.dpx" % i
        want[rel] = write_file(os.path.join(v.mnt, rel), FRAME, rng)
    gone = sorted(want)[0]
    os.unlink(os.path.join(v.mnt, gone))
    del want[gone]
    _, out, _ = v.admin("re-add", v.mnt, v.members[role])
    check("re-added to role %d" % role in out and "region(s)" in out, "re-add: %r" % out)
    st = v.rebuild_wait()
    rb = st["rebuild"]
    check(all(m["state"] == "active" for m in st["members"]), "active: %r" % v.roles(st))
    check(rb["readd"] and rb["readd_regions"] >= 1, "status says re-add: %r" % rb)
    full = full_units(st)
    check(0 < rb["units_rebuilt"] * 4 < full,
          "resynced %d stripes and rows, a full rebuild writes %d" % (rb["units_rebuilt"], full))
    _, text, _ = v.admin("status", v.mnt)
    check("re-add" in text and "resyncs %d region(s)" % rb["readd_regions"] in text,
          "status text: %r" % text)
    verify_set(v.mnt, want, "re-added online")
    log("ok: mounted: role %d failed, 3 frames written and a file deleted, re-added: %d stripes "
        "and metadata rows resynced (%d region(s)) where a full rebuild writes %d; files right"
        % (role, rb["units_rebuilt"], rb["readd_regions"], full))
    return full


def readd_offline(v, want, rng, full):
    role = 3
    away = v.members[role] + ".away"
    v.unmount()
    os.rename(v.members[role], away)
    others = [m for i, m in enumerate(v.members) if i != role]
    v.mount(paths=others)
    rel = "offline-away.dpx"
    want[rel] = write_file(os.path.join(v.mnt, rel), FRAME, rng)
    v.unmount()
    os.rename(away, v.members[role])
    _, out, _ = v.admin("re-add", ",".join(others), v.members[role])
    check("re-added to role %d" % role in out, "offline re-add: %r" % out)
    v.mount()
    st = v.status()
    check(st["state"] == "clean" and all(m["state"] == "active" for m in st["members"]),
          "after the offline re-add: %s %r" % (st["state"], v.roles(st)))
    verify_set(v.mnt, want, "re-added offline")
    log("ok: unmounted: member file away at a mount, re-added offline; clean, files right")


def refusals(v, rng):
    blank = v.new_file("blank")
    _, _, err = v.admin("re-add", v.mnt, blank, expect=1)
    check("not a framefs member" in err, "blank file: %r" % err)
    _, _, err = v.admin("re-add", v.mnt, v.members[0], expect=1)
    check("already part of this array" in err, "an active member: %r" % err)
    log("ok: re-add refuses a blank file and an active member, saying why")


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 256 << 20)
    try:
        v.mount()
        want = write_set(v.mnt, rng, SIZES)
        full = readd_online(v, want, rng)
        readd_offline(v, want, rng, full)
        refusals(v, rng)
        v.unmount()
        v.fsck_clean()
        v.mount()
        verify_set(v.mnt, want, "after remount")
        v.unmount()
        log("ok: fsck clean, files right after a remount")
    finally:
        v.cleanup()


run_test(test)
