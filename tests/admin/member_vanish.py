#!/usr/bin/env python3
# Proves: a member file that vanishes while a paced frame stream writes to
# the volume is noticed within seconds (the array's presence check, about
# once a second: raid/failure.c, io/member.c) and failed like a member
# that returns I/O errors: status --json names it failed with the reason,
# the array is degraded, the event counter goes up, the daemon logs it; the
# stream sees no error and every frame verifies — degraded, after a remount
# (which mounts degraded) and after a rebuild onto a new member, which
# leaves the array clean; fsck is clean.
# Faults injected (no fault rules: the members' files themselves):
#   RAID5 x 4: one member file unlinked (rm) mid-stream;
#   RAID5 x 4: another file renamed over a member's path (mv NEW MEMBER)
#              mid-stream: the member's file is unlinked, and the path names
#              a blank file (which the remount refuses, saying to leave it
#              out; it then becomes the new member);
#   RAID6 x 5: one member unlinked, then once it is failed a second one
#              replaced by rename, both mid-stream;
#   RAID5 x 4: a member file renamed away (its data safe): only a warning
#              (note) in status, the array stays clean; moved back, the
#              warning goes;
#   RAID5 x 4 + a hot spare: the spare unlinked is dropped from the spares;
#              the target of a running `replace` unlinked stops the replace
#              (the old member serves on, the array stays clean).
# The latency from the unlink to status showing the member failed is logged
# per case (bound: DETECT_S).
import json
import os
import subprocess
import time

from adminlib import TestFailure, Vol, check, frametest, log, run_test

FRAMES = 144          # 6 s at 24 fps: a paced stream lasts that long, however fast the machine
PRESET = "sd"         # 1.4 MB frames: one stripe each on 3 data members of 512 KiB chunks
FRAME_BYTES = 1449984
DETECT_S = 5.0        # "within seconds": the check runs every second
VANISHED = "vanished: the file was unlinked"
REPLACED = "vanished: replaced by another file at its path"


def used_stripes(v):
    fs = v.status()["fs"]
    return fs["nstripes"] - fs["free_stripes"]


def start_stream(v, name):
    d = os.path.join(v.mnt, name)
    os.mkdir(d)
    # paced at 24 fps with a queue as long as the stream: late frames wait, none is dropped
    p = subprocess.Popen([v.frametest, "--json", "-u", "0", "-w", PRESET, "-n", str(FRAMES),
                          "-t", "2", "-f", "24", "-q", str(FRAMES), d],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return d, p


def end_stream(p, tag):
    out, err = p.communicate(timeout=600)
    try:
        w = json.loads(out)
    except ValueError:
        raise TestFailure("%s: frametest printed no JSON (exit %d): %s" % (tag, p.returncode, err))
    fr = w["frames"]
    check(p.returncode == 0 and fr["errors"] == 0 and fr["transferred"] == FRAMES,
          "%s: the write stream saw the vanished member: exit %d, %r\n%s"
          % (tag, p.returncode, fr, err))


def wait_frames(v, p, base, n, tag):
    per = -(-FRAME_BYTES // v.status()["geometry"]["stripe_bytes"])
    v.wait_for(lambda: (used_stripes(v) - base) // per >= n or p.poll() is not None, 120,
               "%s: %d frames written" % (tag, n))
    check(p.poll() is None, "%s: the stream ended before the member vanished" % tag)


def read_back(v, d, tag):
    r, rc = frametest(v, "-r", "-n", str(FRAMES), "-t", "2", d)
    fr = r["frames"]
    check(rc == 0 and fr["verified"] == FRAMES and fr["verify_failed"] == 0 and fr["errors"] == 0,
          "%s: read back: exit %d, %r" % (tag, rc, fr))


def vanish(v, role, how):
    """Make role's member file vanish: 'rm' or 'mv' (a blank file renamed over it)."""
    path = v.members[role]
    if how == "rm":
        os.unlink(path)
    else:
        other = v.new_file("m%d.other" % role)
        os.rename(other, path)
        v.made.remove(other)
    return time.monotonic()


def wait_failed(v, role, t0, reason, p, tag):
    """Status shows role failed with reason; returns (status, latency in s)."""
    def failed():
        st = v.status()
        m = st["members"][role]
        return st if m["state"] == "failed" and m["reason"] else None
    st = v.wait_for(failed, 60, "%s: role %d failed" % (tag, role))
    lat = time.monotonic() - t0
    m = st["members"][role]
    check(m["reason"].startswith(reason), "%s: role %d reason %r, expected %r"
          % (tag, role, m["reason"], reason))
    check(m["path"] == v.members[role], "%s: role %d path %r" % (tag, role, m["path"]))
    check(m["hint"] and "framefs-admin add %s NEW" % v.mnt in m["hint"],
          "%s: role %d hint %r" % (tag, role, m["hint"]))
    check(st["state"] == "degraded", "%s: state %s (%s)" % (tag, st["state"], st["state_reason"]))
    check(lat < DETECT_S, "%s: role %d failed only %.2f s after it vanished" % (tag, role, lat))
    check(p.poll() is None, "%s: noticed only after the stream ended" % tag)
    line = [l for l in v.full_log().splitlines()
            if "member %s (role %d, " % (v.members[role], role) in l and "failed: " + reason in l]
    check(line, "%s: no log line for role %d:\n%s" % (tag, role, v.full_log()))
    _, text, _ = v.admin("status", v.mnt)
    check(reason in text and "hint: framefs-admin add" in text,
          "%s: status text lacks the reason or the hint:\n%s" % (tag, text))
    log("%s: role %d failed %.2f s after it vanished; logged: %s" % (tag, role, lat, line[0].strip()))
    return st, lat


def case(level, n, plan, tag):
    """plan: [(frames before, role, 'rm'|'mv')], each waited for in turn."""
    v = Vol(level, n, 256 << 20)
    lats = []
    try:
        v.mount("read_cache_mb=1")
        ev0 = v.status()["events"]
        base = used_stripes(v)
        d, p = start_stream(v, "ft")
        for at, role, how in plan:
            wait_frames(v, p, base, at, tag)
            t0 = vanish(v, role, how)
            st, lat = wait_failed(v, role, t0, VANISHED if how == "rm" else REPLACED, p, tag)
            lats.append(lat)
        end_stream(p, tag)
        roles = [r for _, r, _ in plan]
        st = v.status()
        check(st["failed_members"] == len(roles) and st["events"] > ev0 and
              [m["role"] for m in st["members"] if m["state"] == "failed"] == sorted(roles),
              "%s: after the stream: %r, events %d (before %d)"
              % (tag, v.roles(st), st["events"], ev0))
        read_back(v, d, tag + " degraded")
        log("ok: %s: %d member(s) vanished mid-stream, failed within %.2f s; the stream saw no "
            "error; %d frames verify" % (tag, len(roles), max(lats), FRAMES))
        v.unmount()
        # the remount: a path that now names a blank file is refused with the way out
        left = [m for i, m in enumerate(v.members) if i not in roles]
        for _, r, how in plan:
            if how == "mv":
                rc = v.mount(paths=left + [v.members[r]], expect_fail=True)
                check(rc != 0 and "%s: not a framefs member (no member superblock); leave it out "
                      "to mount the array degraded" % v.members[r] in v.full_log(),
                      "%s: remount with the blank file at role %d's path: %d\n%s"
                      % (tag, r, rc, v.full_log()))
        v.mount("read_cache_mb=1", paths=left)
        st = v.status()
        check(st["state"] == "degraded" and
              sorted(m["role"] for m in st["members"] if m["state"] == "missing") == sorted(roles),
              "%s: after remount %r" % (tag, v.roles(st)))
        read_back(v, d, tag + " remounted degraded")
        for r in roles:
            if not os.path.exists(v.members[r]):
                v.new_file("m%d" % r)   # the same path, a new blank file
            _, out, _ = v.admin("add", v.mnt, v.members[r])
            check("takes over role %d" % r in out, "%s: add: %r" % (tag, out))
        st = v.rebuild_wait()
        check(all(m["state"] == "active" and m["reason"] is None for m in st["members"]),
              "%s: after the rebuild %r" % (tag, v.roles(st)))
        read_back(v, d, tag + " rebuilt")
        v.unmount()
        v.fsck_clean()
        v.mount()
        check(v.status()["state"] == "clean", "%s: not clean after the rebuild and a remount" % tag)
        v.unmount()
        log("ok: %s: remounted degraded, rebuilt onto new members: clean, frames verify, fsck "
            "clean" % tag)
        return lats
    finally:
        v.cleanup()


def case_moved():
    """A member renamed away: a warning, no failure; moved back, no warning."""
    tag = "RAID5 moved"
    v = Vol(5, 4, 64 << 20)
    try:
        v.mount()
        away = v.members[0] + ".away"
        os.rename(v.members[0], away)
        v.made.append(away)
        st = v.wait_for(lambda: (lambda s: s if s["members"][0]["note"] else None)(v.status()),
                        DETECT_S, "a note on role 0")
        check(st["state"] == "clean" and st["members"][0]["state"] == "active" and
              "is no longer at %s" % v.members[0] in st["members"][0]["note"],
              "%s: %r %r" % (tag, st["state"], st["members"][0]))
        _, text, _ = v.admin("status", v.mnt)
        check("warning: the file is no longer at" in text, "%s: status text:\n%s" % (tag, text))
        os.rename(away, v.members[0])
        v.wait_for(lambda: v.status()["members"][0]["note"] is None, DETECT_S, "the note gone")
        check(v.status()["state"] == "clean", "%s: not clean" % tag)
        v.unmount()
        log("ok: %s: a member renamed away only warns (%s); back at its path, the warning goes"
            % (tag, st["members"][0]["note"][:60] + "..."))
    finally:
        v.cleanup()


def case_spare_and_replacement():
    """A hot spare that vanishes is dropped; a replacement (replace OLD NEW)
    that vanishes mid-copy stops the replace, and the old member serves on."""
    tag = "RAID5 spare, replacement"
    v = Vol(5, 4, 128 << 20, spares=1)
    try:
        v.mount()
        spare = v.spares.pop()
        check([s["path"] for s in v.status()["spares"]] == [spare], "%s: no spare" % tag)
        os.unlink(spare)
        t0 = time.monotonic()
        v.wait_for(lambda: v.status()["spares"] == [], DETECT_S, "the vanished spare dropped")
        lat = time.monotonic() - t0
        check("hot spare %s vanished: the file was unlinked; dropped from the spares" % spare
              in v.full_log(), "%s: log:\n%s" % (tag, v.full_log()))
        # slow, so that the copy is still running when its target vanishes
        v.admin("set", v.mnt, "rebuild_min=%d" % (8 << 20), "rebuild_max=%d" % (8 << 20))
        new = v.new_file("replacement")
        v.admin("replace", v.mnt, v.members[3], new)
        check(v.status()["replacing_role"] == 3, "%s: no replace running" % tag)
        os.unlink(new)
        t1 = time.monotonic()
        v.wait_for(lambda: (lambda s: s["replacing_role"] is None and not s["rebuild"]["active"]
                            and s["spares"] == [])(v.status()), DETECT_S + 5,
                   "the replace abandoned and its target dropped")
        lat2 = time.monotonic() - t1
        check("replacement member %s (for role 3) vanished: the file was unlinked; replace "
              "abandoned" % new in v.full_log(), "%s: log:\n%s" % (tag, v.full_log()))
        st = v.status()
        check(st["state"] == "clean" and v.roles(st) == [(i, "active", m) for i, m in
                                                        enumerate(v.members)],
              "%s: %s %r" % (tag, st["state"], v.roles(st)))
        v.unmount()
        v.fsck_clean()
        log("ok: %s: the vanished spare dropped after %.2f s; the vanished replacement stopped "
            "the replace (%.2f s), the old member serves: clean" % (tag, lat, lat2))
    finally:
        v.cleanup()


def test():
    t0 = time.monotonic()
    lats = []
    lats += case(5, 4, [(24, 1, "rm")], "RAID5 rm")
    lats += case(5, 4, [(24, 2, "mv")], "RAID5 mv over")
    lats += case(6, 5, [(24, 0, "rm"), (0, 3, "mv")], "RAID6 two")
    case_moved()
    case_spare_and_replacement()
    log("detection latency: %s s (max %.2f)" % (", ".join("%.2f" % x for x in lats), max(lats)))
    log("took %.1f s" % (time.monotonic() - t0))


if __name__ == "__main__":
    run_test(test)
