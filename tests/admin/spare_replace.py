#!/usr/bin/env python3
# Proves: a hot spare given at mkfs time takes over a failing member's role
# by itself and is rebuilt (no command needed); a spare added later to a
# clean array waits, then takes over the next failure; `replace OLD NEW`
# copies OLD onto NEW while OLD keeps serving (the array stays clean, OLD
# stays active), then puts NEW in OLD's role; it is refused on a degraded
# array; the sha256 of every file is unchanged throughout; fsck is clean.
# Faults injected: "MEMBER@op=rw,err=EIO" on one member, then on another
# (through framefs-admin fault).
import os
import random

from adminlib import Vol, check, log, run_test, seed_from_env, verify_set, write_set

SIZES = [(9 << 20) + 1, 17 << 20, 4096, 3 << 20, (11 << 20) + 777]


def eio(v, role):
    v.admin("fault", v.mnt, "%s@op=rw,err=EIO" % os.path.basename(v.members[role]))
    # any I/O reaches it: a write of new data touches every member
    with open(os.path.join(v.mnt, "poke-%d" % role), "wb") as f:
        f.write(os.urandom(4 << 20))
        f.flush()
        os.fsync(f.fileno())


def wait_takeover(v, role, spare):
    def done():
        st = v.status()
        m = st["members"][role]
        return st if m["path"] == spare and st["state"] == "clean" else None
    return v.wait_for(done, 120, "%s to take over role %d and be rebuilt" % (spare, role))


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 256 << 20, spares=1)
    try:
        v.mount("read_cache_mb=1")
        want = write_set(v.mnt, rng, SIZES)
        spare = v.spares[0]

        eio(v, 2)
        st = wait_takeover(v, 2, spare)
        check(st["spares"] == [], "the spare is still listed: %r" % st["spares"])
        check("%s takes role 2; rebuilding" % spare in v.full_log(), v.daemon_log())
        verify_set(v.mnt, want, "after the mkfs spare took over")
        log("ok: the mkfs-time spare took over the failed role 2 by itself and was rebuilt")
        v.members[2] = spare
        v.spares = []

        late = v.new_file("late-spare")
        _, out, _ = v.admin("add", v.mnt, late)
        check("hot spare" in out, "add to a clean array: %r" % out)
        eio(v, 0)
        wait_takeover(v, 0, late)
        verify_set(v.mnt, want, "after the added spare took over")
        log("ok: a spare added later waited, then took over the next failure (role 0)")
        v.members[0] = late

        new = v.new_file("replacement")
        old = v.members[3]
        _, out, _ = v.admin("replace", v.mnt, old, new)
        check("role 3" in out and "old member serves" in out, "replace: %r" % out)
        st = v.status()
        check(st["members"][3]["path"] == old or st["members"][3]["path"] == new,
              "during replace: %r" % v.roles(st))
        verify_set(v.mnt, want, "during replace (the old member serves)")
        st = v.rebuild_wait()
        check(st["members"][3]["path"] == new and old not in [m["path"] for m in st["members"]],
              "after replace: %r" % v.roles(st))
        verify_set(v.mnt, want, "after replace")
        v.members[3] = new
        log("ok: replace copied role 3 onto the new member while the old one served")

        # replace needs a clean array
        v.admin("fail", v.mnt, v.members[1])
        another = v.new_file("another")
        _, _, err = v.admin("replace", v.mnt, v.members[2], another, expect=1)
        check("not clean" in err, "replace on a degraded array: %r" % err)
        log("ok: replace is refused on a degraded array: %s" % err.strip())
        v.admin("remove", v.mnt, v.members[1])
        v.admin("add", v.mnt, another)
        v.members[1] = another
        v.rebuild_wait()
        try:
            verify_set(v.mnt, want, "final")
        except Exception:
            log("daemon log:\n" + v.daemon_log(60))
            raise
        v.unmount()
        v.fsck_clean()
        v.mount()
        verify_set(v.mnt, want, "after remount")
        check(v.status()["state"] == "clean", "not clean after remount")
        v.unmount()
        log("ok: fsck clean; data right after remount")
    finally:
        v.cleanup()


run_test(test)
