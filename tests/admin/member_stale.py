#!/usr/bin/env python3
# Proves: a stale member — one the array was assembled and written without,
# so that its event counter is behind — shows in status as "stale" when it
# is given again: its path, its event counter beside the array's, and the
# hint to re-add it (framefs-admin add --force) or put a new member in its
# place; `add` without --force says it is a stale member of this array and
# that --force takes it back; `add --force` rebuilds it and the array is
# clean with the data written while it was out.  (Assembled without it, the
# array marks its role failed, as it does a member that failed: the reason
# says so.)  The same for a member failed through framefs-admin and given
# again at the next mount.  Text status agrees with --json.
# Fault injected: none; a member left out of one mount (RAID5 x 4 and
# RAID6 x 5), and one failed through framefs-admin.
import os
import random
import time

from adminlib import Vol, check, log, run_test, seed_from_env, verify_set, write_set


def case_stale(level, n, out_role, rng):
    tag = "RAID%d stale role %d" % (level, out_role)
    v = Vol(level, n, 128 << 20)
    try:
        v.mount()
        want = write_set(v.mnt, rng, [3 << 20, 1 << 20])
        v.unmount()
        # one mount without it: the others' event counters move on
        v.mount(paths=[m for i, m in enumerate(v.members) if i != out_role])
        want.update({"while-out/" + k: h for k, h in
                     write_set(os.path.join(v.mnt, "while-out"), rng, [5 << 20, 4096]).items()})
        v.unmount()
        v.mount()
        st = v.status()
        m = st["members"][out_role]
        check(st["state"] == "degraded" and m["state"] == "stale" and m["path"] == v.members[out_role],
              "%s: status %s, role %r" % (tag, st["state"], m))
        check(isinstance(m["member_events"], int) and m["member_events"] < st["events"],
              "%s: member_events %r, array events %r" % (tag, m["member_events"], st["events"]))
        check(m["reason"].startswith("stale: its event counter %d is behind the array's %d"
                                     % (m["member_events"], st["events"])),
              "%s: reason %r" % (tag, m["reason"]))
        hint = "re-add it with framefs-admin add --force %s %s" % (v.mnt, v.members[out_role])
        check(m["hint"] and m["hint"].startswith(hint) and "framefs-admin add %s NEW" % v.mnt in m["hint"],
              "%s: hint %r" % (tag, m["hint"]))
        _, text, _ = v.admin("status", v.mnt)
        row = [l for l in text.splitlines() if l.split()[:3] == [str(out_role), "stale", "-"]]
        check(row and v.members[out_role] in row[0] and m["reason"] in text and
              "hint: " + m["hint"] in text, "%s: status text:\n%s" % (tag, text))
        # assembled without it, the array marked its role failed: the assembly says so
        check("and the array marks it failed (the array was assembled without it, or it failed)"
              in m["reason"], "%s: reason %r" % (tag, m["reason"]))
        check("%s (role %d) is marked failed in the array; ignoring it"
              % (v.members[out_role], out_role) in v.full_log(),
              "%s: the daemon log:\n%s" % (tag, v.full_log()))
        verify_set(v.mnt, want, tag + " degraded")
        # add without --force: refused, saying what it is and what to do
        _, _, err = v.admin("add", v.mnt, v.members[out_role], expect=1)
        check("%s is a stale member of this array (role %d, events %d; the array is at "
              % (v.members[out_role], out_role, m["member_events"]) in err and
              "framefs-admin add --force takes it back" in err, "%s: add: %r" % (tag, err))
        _, out, _ = v.admin("add", "--force", v.mnt, v.members[out_role])
        check("takes over role %d" % out_role in out, "%s: add --force: %r" % (tag, out))
        st = v.rebuild_wait()
        check(all(x["state"] == "active" and x["reason"] is None and x["hint"] is None
                  for x in st["members"]), "%s: after the rebuild %r" % (tag, st["members"]))
        verify_set(v.mnt, want, tag + " rebuilt")
        v.unmount()
        v.fsck_clean()
        log("ok: %s: shown stale (events %d < %d) with path and hint; add refused with the "
            "hint; add --force rebuilt it: clean, data right" % (tag, m["member_events"],
                                                                st["events"]))
    finally:
        v.cleanup()


def case_failed(rng):
    tag = "RAID5 failed then given again"
    v = Vol(5, 4, 128 << 20)
    try:
        v.mount()
        want = write_set(v.mnt, rng, [2 << 20])
        v.admin("fail", v.mnt, v.members[3])
        st = v.status()
        check(st["members"][3]["reason"] == "failed by the administrator",
              "%s: reason %r" % (tag, st["members"][3]["reason"]))
        v.unmount()
        v.mount()
        st = v.status()
        m = st["members"][3]
        check(m["state"] == "stale" and m["path"] == v.members[3] and
              m["member_events"] < st["events"] and m["reason"].startswith("stale: ") and
              "the array marks it failed" in m["reason"] and
              m["hint"].startswith("re-add it with framefs-admin add --force %s %s"
                                   % (v.mnt, v.members[3])), "%s: %r" % (tag, m))
        _, _, err = v.admin("add", v.mnt, v.members[3], expect=1)
        check("is a stale member of this array (role 3" in err, "%s: add: %r" % (tag, err))
        v.admin("add", "--force", v.mnt, v.members[3])
        v.rebuild_wait()
        verify_set(v.mnt, want, tag + " rebuilt")
        v.unmount()
        log("ok: %s: stale with its path, the reason and the hint; add --force took it back"
            % tag)
    finally:
        v.cleanup()


def test():
    t0 = time.monotonic()
    rng = random.Random(seed_from_env())
    case_stale(5, 4, 2, rng)
    case_stale(6, 5, 0, rng)
    case_failed(rng)
    log("took %.1f s" % (time.monotonic() - t0))


run_test(test)
