#!/usr/bin/env python3
# Proves: a missing member is named by what it was — its last path, kind
# and size (NVMe model, serial and firmware where it had them) and when it
# was last seen — from the roster every member carries (raid/roster.c),
# though its own superblock is gone with it:
#  - RAID6 x 5: two members gone (one file deleted, one moved away), the
#    array mounted degraded: both roles' last_seen name the old paths and
#    sizes, seen within this test's run; the text status says "last held by";
#    the same offline, on the unmounted members;
#  - a new member added to one role is named by the roster from then on
#    (after the rebuild and a remount), the other role keeps its old name;
#  - the newest roster copy on every member torn (a byte flipped): the
#    older copy still names the member;
#  - a volume from before the roster (both copies zeroed on every member):
#    mounts, names no one for a missing role (null), and the next mount
#    writes a roster for the members present;
#  - fsck finds nothing wrong after any of it.
# Fault injected: none; members deleted, moved and their roster bytes
# damaged by hand.
import os
import random
import time

from adminlib import Vol, check, log, run_test, seed_from_env, verify_set, write_set

MiB = 1 << 20
ROSTER_BYTES = 16384


def roster_offset(copy, geom_member_bytes):
    return geom_member_bytes - MiB + copy * ROSTER_BYTES


def damage(path, off, n, byte=None):
    with open(path, "r+b") as f:
        f.seek(off)
        old = f.read(n)
        f.seek(off)
        f.write(bytes(n) if byte is None else bytes(b ^ byte for b in old))


def last_seen(st, role):
    return st["members"][role]["last_seen"]


def check_named(st, role, path, size, t0, tag):
    ls = last_seen(st, role)
    check(ls is not None, "%s: role %d names no one: %r" % (tag, role, st["members"][role]))
    check(ls["path"] == path and ls["kind"] == "file" and ls["size_bytes"] == size and
          ls["serial"] is None and ls["model"] is None,
          "%s: role %d last_seen %r, expected %s (file, %d bytes)" % (tag, role, ls, path, size))
    check(int(t0) <= ls["seen_at"] <= time.time() + 1,
          "%s: role %d seen_at %r is not within this test (started %d)"
          % (tag, role, ls["seen_at"], t0))


def main():
    rng = random.Random(seed_from_env())
    t0 = time.time()
    size = 96 * MiB
    v = Vol(6, 5, size)
    try:
        v.mount()
        want = write_set(v.mnt, rng, [4 * MiB, 3 * MiB + 4096])
        geom_member_bytes = v.status()["geometry"]["member_bytes"]
        v.unmount()
        gone, moved = v.members[1], v.members[3]
        os.unlink(gone)
        os.rename(moved, moved + ".away")
        v.made.append(moved + ".away")
        present = [m for i, m in enumerate(v.members) if i not in (1, 3)]

        v.mount(paths=present)
        st = v.status()
        check(st["state"] == "degraded", "mounted without two members: %s" % st["state"])
        check(st["members"][1]["state"] == "missing" and st["members"][3]["state"] == "missing",
              "roles 1 and 3: %r" % v.roles(st))
        check_named(st, 1, gone, size, t0, "degraded mount")
        check_named(st, 3, moved, size, t0, "degraded mount")
        _, text, _ = v.admin("status", v.mnt)
        for p in (gone, moved):
            check("last held by %s (file, 96.00 MiB), seen " % p in text,
                  "status text does not name %s:\n%s" % (p, text))
        verify_set(v.mnt, want, "degraded")
        log("degraded RAID6 x 5: roles 1 and 3 named by their last paths")

        # a new member in role 1: from then on the roster names it
        new1 = v.new_file("n1")
        v.admin("add", v.mnt, new1)
        took = [m["role"] for m in v.status()["members"] if m["path"] == new1]
        check(took == [1], "the new member took roles %r, expected [1] (the lowest missing)" % took)
        v.wait_for(lambda: v.status()["members"][1]["state"] == "active", 120, "role 1 rebuilt")
        v.unmount()
        present = [v.members[0], new1, v.members[2], v.members[4]]
        v.fsck_clean(present)
        _, text, _ = v.admin("status", *present)
        check("last held by %s (file, 96.00 MiB)" % moved in text and new1 in text,
              "offline status after the replacement:\n%s" % text)
        v.mount(paths=present)
        st = v.status()
        check(st["members"][1]["path"] == new1 and last_seen(st, 1)["path"] == new1,
              "role 1 after the replacement: %r" % st["members"][1])
        check_named(st, 3, moved, size, t0, "after the replacement")
        v.unmount()
        log("a replacement is named from then on; the other missing role keeps its name")

        # the newest copy torn on every member: the older copy still names role 3
        # (each write alternates copies; which one is newest is not known here, so
        # damage one copy, check, put it back, then the other)
        for copy in (0, 1):
            off = roster_offset(copy, geom_member_bytes) + 200
            for m in present:
                damage(m, off, 1, 0x5a)
            _, text, _ = v.admin("status", *present)
            check("last held by %s (file, 96.00 MiB)" % moved in text,
                  "roster copy %d torn on every member: status names no one:\n%s" % (copy, text))
            for m in present:
                damage(m, off, 1, 0x5a)
        log("either roster copy torn: the other names the missing member")

        # a volume from before the roster: nothing known, then written for the present ones
        for m in present:
            damage(m, roster_offset(0, geom_member_bytes), 2 * ROSTER_BYTES)
        v.mount(paths=present)
        st = v.status()
        check(last_seen(st, 3) is None, "zeroed rosters, role 3: %r" % last_seen(st, 3))
        check_named(st, 0, v.members[0], size, t0, "after zeroed rosters")
        verify_set(v.mnt, want, "after zeroed rosters")
        v.unmount()
        _, text, _ = v.admin("status", *present)
        check("last held by" not in text, "zeroed rosters, offline status:\n%s" % text)
        st = v.adminj("status", *present)
        check_named(st, 4, v.members[4], size, t0, "offline, after a mount wrote the roster")
        v.fsck_clean(present)
        log("a volume without a roster mounts, names no one, and gets one")
    finally:
        v.cleanup()


run_test(main)
