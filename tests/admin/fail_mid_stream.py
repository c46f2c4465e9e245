#!/usr/bin/env python3
# Proves: a member that starts returning I/O errors in the middle of a frame
# stream is marked failed (in the superblocks of the others: the event
# counter goes up and the next assembly ignores it), the event is logged
# with the member's path, identity and cause, the stream goes on with no
# error reaching it, and every frame verifies — read back degraded, and
# again after a remount.
# Faults injected (io/fault.h rules):
#   RAID5: "MEMBER@op=rw,err=EIO" on one member, armed through
#          framefs-admin once a third of the frames are written;
#   RAID6: the same on a second member at two thirds;
#   RAID5: FRAMEFS_FAULT="MEMBER@op=rw,err=EIO,after=N" at daemon start (the
#          environment's form), firing after N I/Os of that member.
import os
import subprocess
import time

from adminlib import Vol, check, env_int, frametest, log, run_test

FRAMES = env_int("ADMIN_STREAM_FRAMES", 36)
PRESET = "hd"  # 8.4 MB frames: 36 of them fill half of a 4 x 256 MiB RAID5
FRAME_BYTES = 8359936


def frames_written(v):
    """Frames on the volume so far, from the daemon's count of stripes in use
    (not a directory listing: no extra FUSE requests beside the stream)."""
    fs = v.status()["fs"]
    return (fs["nstripes"] - fs["free_stripes"]) * fs["stripe_bytes"] // FRAME_BYTES


def stream_with_failures(v, fail_at, tag):
    """Write a stream; arm EIO on member fail_at[k][1] once fail_at[k][0] frames exist."""
    d = os.path.join(v.mnt, "ft")
    os.mkdir(d)
    events0 = v.status()["events"]
    # paced at 24 fps (a queue as long as the stream: late frames wait, none
    # is dropped), so that the faults land in the middle of it
    p = subprocess.Popen([v.frametest, "--json", "-u", "0", "-w", PRESET, "-n", str(FRAMES),
                          "-t", "2", "-f", "24", "-q", str(FRAMES), d], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    for at, role in fail_at:
        v.wait_for(lambda: frames_written(v) >= at or p.poll() is not None, 300,
                   "%d frames written" % at)
        check(p.poll() is None, "the stream ended before the fault was armed (too fast?)")
        name = os.path.basename(v.members[role])
        v.admin("fault", v.mnt, "%s@op=rw,err=EIO" % name)
        log("%s: EIO armed on role %d (%s) after ~%d frames" % (tag, role, name, frames_written(v)))
    out, err = p.communicate(timeout=600)
    import json
    w = json.loads(out)
    check(p.returncode == 0 and w["frames"]["errors"] == 0 and w["frames"]["transferred"] == FRAMES,
          "%s: the write stream saw the failure: exit %d, %r\n%s" % (tag, p.returncode, w["frames"], err))
    return d, events0


def check_failed(v, roles, events0, tag):
    st = v.wait_for(lambda: (lambda s: s if all(s["members"][r]["state"] == "failed" for r in roles)
                             else None)(v.status()), 30, "roles %r failed" % roles)
    check(st["state"] == "degraded" and st["failed_members"] == len(roles),
          "%s: state %s (%s)" % (tag, st["state"], st["state_reason"]))
    check(st["events"] > events0, "%s: event counter %d not above %d" % (tag, st["events"], events0))
    logtext = v.full_log()
    for r in roles:
        line = [l for l in logtext.splitlines()
                if "failed:" in l and "member %s (role %d, " % (v.members[r], r) in l]
        check(line and ("read error" in line[0] or
                                                      "write error" in line[0]),
              "%s: no failure line naming %s, its identity and cause:\n%s" % (tag, v.members[r], logtext))
        log("%s: logged: %s" % (tag, line[0].strip()))
    return st


def read_back(v, d, tag):
    r, rc = frametest(v, "-r", "-n", str(FRAMES), "-t", "2", d)
    fr = r["frames"]
    check(rc == 0 and fr["verified"] == FRAMES and fr["verify_failed"] == 0 and fr["errors"] == 0,
          "%s: read back: exit %d, %r" % (tag, rc, fr))


def remount_check(v, roles, d, tag):
    v.unmount()
    v.mount("read_cache_mb=1")
    logtext = v.daemon_log(200)
    for r in roles:
        check("%s (role %d) is marked failed in the array; ignoring it" % (v.members[r], r) in logtext,
              "%s: the next assembly did not find role %d marked failed:\n%s" % (tag, r, logtext))
    st = v.status()
    check(st["state"] == "degraded" and [m["role"] for m in st["members"] if m["state"] != "active"]
          == list(roles), "%s: after remount %r" % (tag, v.roles(st)))
    read_back(v, d, tag + " after remount")
    v.unmount()
    v.fsck_clean([m for i, m in enumerate(v.members) if i not in roles])


def case_admin_fault(level, n, fail_roles):
    tag = "RAID%d" % level
    v = Vol(level, n, 256 << 20)
    try:
        v.mount("read_cache_mb=1")
        at = [FRAMES * (k + 1) // (len(fail_roles) + 1) for k in range(len(fail_roles))]
        d, ev0 = stream_with_failures(v, list(zip(at, fail_roles)), tag)
        check_failed(v, fail_roles, ev0, tag)
        read_back(v, d, tag + " degraded")
        log("ok: %s: %d member(s) failed mid-stream; no error reached the stream; %d frames verify"
            % (tag, len(fail_roles), FRAMES))
        remount_check(v, fail_roles, d, tag)
        log("ok: %s: the failure is recorded in the other members' superblocks" % tag)
    finally:
        v.cleanup()


def case_env_fault():
    tag = "RAID5 FRAMEFS_FAULT"
    v = Vol(5, 4, 256 << 20)
    try:
        name = os.path.basename(v.members[1])
        # about 6 data/parity writes per 8.4 MB frame reach each member: fires mid-stream
        v.mount("read_cache_mb=1", env={"FRAMEFS_FAULT": "%s@op=rw,err=EIO,after=%d"
                                        % (name, FRAMES * 3)})
        ev0 = v.status()["events"]
        check(v.status()["state"] == "clean", "fault fired before the stream")
        d = os.path.join(v.mnt, "ft")
        os.mkdir(d)
        w, rc = frametest(v, "-w", PRESET, "-n", str(FRAMES), "-t", "2", "-f", "24", "-q",
                          str(FRAMES), d)
        check(rc == 0 and w["frames"]["errors"] == 0, "%s: write stream: %d %r" % (tag, rc, w["frames"]))
        check_failed(v, [1], ev0, tag)
        read_back(v, d, tag + " degraded")
        log("ok: %s: the member failed after %d of its I/Os; the stream went on; frames verify"
            % (tag, FRAMES * 3))
        remount_check(v, [1], d, tag)
    finally:
        v.cleanup()


def test():
    t0 = time.monotonic()
    case_admin_fault(5, 4, [2])
    case_admin_fault(6, 5, [1, 4])
    case_env_fault()
    log("took %.1f s" % (time.monotonic() - t0))


run_test(test)
