#!/usr/bin/env python3
# Proves: a member failed in the middle of a grow's restripe (fs/grow/
# restripe.c) loses no file, and the restripe finishes after the rebuild.
# For RAID6 x 4 + 1 and RAID5 x 3 + 1, a volume written through a real FUSE
# mount (growlib.write_files: frames, small files, a file with patches) is
# grown with --no-restripe and mounted; the restripe is slowed (rebuild_min
# and rebuild_max) and, once status shows rows moved (rows_left below
# rows_before), an old member is failed:
#   RAID6: the restripe goes on degraded (one parity left) and every file
#          reads back (O_DIRECT: the daemon answers) while it runs; it
#          finishes; then a replacement is added and rebuilt;
#   RAID5: with no redundancy left the restripe pauses (status: "paused" and
#          why) while every file reads back degraded; a replacement is added,
#          rebuilt, and the restripe resumes by itself and finishes.
# Degraded, a 4 KiB write (fsync'd) into the project file, not moved yet,
# moves it first (the daemon says so; RAID5: while the thread pauses).
# Then every file's sha256 is what was written, and after the unmount
# fsck.framefs -n -c finds nothing to repair.
# Fault injected: framefs-admin fail MNT MEMBER (the member marked failed,
# as an I/O error would); before the rates are set, a 20 ms latency rule on
# the added member's writes (framefs-admin fault) holds the restripe back,
# since at mount it starts at the default rates (no limit when idle).
# Knobs (environment): GROW_FAIL_FRAMES (frames of 4 MiB, default 24),
# GROW_FAIL_MEMBER_MIB (member size, default 256), GROW_FAIL_RATE (the slow
# restripe's rate, default 16M).
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import MiB, at_width, sha256_direct, write_files  # noqa: E402
from itlib import TestFailure, Volume, log  # noqa: E402

ADMIN = os.environ["ADMIN"]
FRAMES = int(os.environ.get("GROW_FAIL_FRAMES", "24"))
MEMBER_MIB = int(os.environ.get("GROW_FAIL_MEMBER_MIB", "256"))
RATE = os.environ.get("GROW_FAIL_RATE", "16M")


def admin(vol, *args):
    r = subprocess.run([ADMIN, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise TestFailure("framefs-admin %s: exit %d: %s %s\ndaemon log:\n%s"
                          % (" ".join(args), r.returncode, r.stdout, r.stderr, vol.daemon_log()))
    return r.stdout


def status(vol):
    return json.loads(admin(vol, "--json", "status", vol.mnt))


def wait_for(vol, pred, timeout_s, what):
    """pred() polled until true (returned), or TestFailure after timeout_s."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() - t0 > timeout_s:
            raise TestFailure("timed out after %d s waiting for %s\nstatus: %s\n%s"
                              % (timeout_s, what, json.dumps(status(vol).get("grow")),
                                 vol.daemon_log()))
        time.sleep(0.05)


def check_all(vol, sums, when):
    for name, want in sorted(sums.items()):
        try:
            got = sha256_direct(os.path.join(vol.mnt, name))
        except OSError as e:
            raise TestFailure("%s: cannot read %s: %s\n%s" % (when, name, e, vol.daemon_log()))
        if got != want:
            raise TestFailure("%s: %s differs from what was written" % (when, name))


def write_old(vol, sums, name, level):
    """4 KiB written (and fsync'd) into the middle of name, which must not be
    moved yet: the daemon moves it first (fs/grow/restripe.c
    ffs_grow_move_now) and says so; sums takes its new contents."""
    path = os.path.join(vol.mnt, name)
    new_stripe = 64 * 1024 * (len(vol.members) - (1 if level == 5 else 2))
    if at_width(path, new_stripe):
        raise TestFailure("%s was moved before the test wrote to it: %r"
                          % (name, status(vol)["grow"]))
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at = len(data) // 2 // 4096 * 4096
    piece = os.urandom(4096)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(piece)
        f.flush()
        os.fsync(f.fileno())
    data[at:at + 4096] = piece
    sums[name] = hashlib.sha256(bytes(data)).hexdigest()
    ino = os.stat(path).st_ino
    if ("inode %d moved to the new width ahead of a change" % ino) not in vol.daemon_log(10000) \
            or not at_width(path, new_stripe):
        raise TestFailure("%s (inode %d): written while not moved yet, but not moved first\n%s"
                          % (name, ino, vol.daemon_log()))


def grown_and_mounted(level, n):
    """A volume of n members written, grown by one with --no-restripe,
    mounted with its restripe held back, then slowed to RATE.
    Returns (vol, sums, grow status)."""
    vol = Volume(level, n, MEMBER_MIB * MiB, mkfs_args=("-c", "64K"))
    vol.mount()
    sums = write_files(vol.mnt, FRAMES, 4 * MiB, 12, 8 * MiB, 8)
    vol.unmount()
    new = "%s.n0" % vol.members[0]
    with open(new, "wb") as f:
        f.truncate(MEMBER_MIB * MiB)
    vol.members.append(new)  # cleanup() removes it
    r = subprocess.run([ADMIN, "grow", "--no-restripe", ",".join(vol.members[:-1]), new],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise TestFailure("grow --no-restripe: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    vol.spec = ",".join(vol.members)
    # latency on the added member's writes: the restripe (the only writer of
    # DATA rows there) crawls until the rates are set
    os.environ["FRAMEFS_FAULT"] = "%s@op=w,lat_us=20000" % os.path.basename(new)
    try:
        vol.mount()
    finally:
        del os.environ["FRAMEFS_FAULT"]
    vol.wait_ctl()
    admin(vol, "set", vol.mnt, "rebuild_min=" + RATE, "rebuild_max=" + RATE)
    admin(vol, "fault", vol.mnt, "clear")
    g = status(vol)["grow"]
    if g["state"] != "restriping" or not g["rows_left"]:
        raise TestFailure("after the mount the restripe is not under way: %r" % g)
    return vol, sums, g


def fail_mid_restripe(vol, g0, role):
    """Once rows moved, fail role; returns the status after."""
    wait_for(vol, lambda: (lambda g: g["rows_left"] < g["rows_before"])(status(vol)["grow"]),
             60, "the restripe to move a row")
    admin(vol, "fail", vol.mnt, vol.members[role])
    st = status(vol)
    g = st["grow"]
    if g["state"] == "done" or not g["rows_left"]:
        raise TestFailure("the restripe ended before the failure landed: %r" % g)
    log("RAID%d: role %d failed with %d of %d rows left (state %s)"
        % (vol.level, role, g["rows_left"], g["rows_before"], g["state"]))
    return st


def replace_and_rebuild(vol, role):
    """A blank member added in the failed role's place, rebuilt to the end."""
    old = vol.members[role]
    new = "%s.r%d" % (vol.members[0], role)
    with open(new, "wb") as f:
        f.truncate(MEMBER_MIB * MiB)
    vol.members[role] = new
    os.unlink(old)
    admin(vol, "remove", vol.mnt, old)
    admin(vol, "add", vol.mnt, new)
    admin(vol, "rebuild", "--quiet", vol.mnt)
    st = status(vol)
    if st["state"] != "clean":
        raise TestFailure("after the rebuild the array is %s: %s" % (st["state"], st["state_reason"]))


def finish(vol, sums, tag, t0):
    admin(vol, "set", vol.mnt, "rebuild_min=0", "rebuild_max=0")
    g = json.loads(admin(vol, "--json", "grow", "--wait", vol.mnt))["grow"]
    if g["state"] != "done" or g["rows_left"]:
        raise TestFailure("%s: the restripe did not finish: %r\n%s" % (tag, g, vol.daemon_log()))
    return g


def case_raid6():
    t0 = time.monotonic()
    vol, sums, g0 = grown_and_mounted(6, 4)
    try:
        fail_mid_restripe(vol, g0, 1)
        # degraded, still moving: every file reads back while it runs
        check_all(vol, sums, "RAID6, degraded, restriping")
        write_old(vol, sums, "project.db", 6)  # moved first, degraded
        g = status(vol)["grow"]
        if g["state"] != "restriping":
            raise TestFailure("RAID6: after the reads the restripe is %s, not restriping (one "
                              "parity is left): %r" % (g["state"], g))
        log("RAID6: every file read back degraded with %d rows left" % g["rows_left"])
        g = finish(vol, sums, "RAID6", t0)
        if status(vol)["state"] != "degraded":
            raise TestFailure("RAID6: the array is not degraded after the restripe")
        replace_and_rebuild(vol, 1)
        check_all(vol, sums, "RAID6, grown and rebuilt")
        vol.unmount()
        vol.check_fsck()
        log("RAID6 x 4 + 1: restripe went on degraded and finished (%d files, %d MB moved); "
            "rebuilt; %d files read back; fsck clean; %.1f s"
            % (g["files_moved"], g["bytes_moved"] // 1000000, len(sums), time.monotonic() - t0))
    finally:
        vol.cleanup()


def case_raid5():
    t0 = time.monotonic()
    vol, sums, g0 = grown_and_mounted(5, 3)
    try:
        fail_mid_restripe(vol, g0, 1)
        g = wait_for(vol, lambda: (lambda g: g if g["state"] == "paused" else None)(
            status(vol)["grow"]), 10, "the restripe to pause (no redundancy left)")
        if not g.get("paused_reason"):
            raise TestFailure("RAID5: paused, but status does not say why: %r" % g)
        log("RAID5: paused: %s" % g["paused_reason"])
        check_all(vol, sums, "RAID5, degraded, restripe paused")
        g2 = status(vol)["grow"]
        if g2["state"] != "paused" or g2["rows_left"] != g["rows_left"]:
            raise TestFailure("RAID5: the paused restripe moved rows or stopped pausing: %r -> %r"
                              % (g, g2))
        # a write to a file not moved yet moves it while the thread pauses
        # (the change is written degraded, as any write is now)
        write_old(vol, sums, "project.db", 5)
        check_all(vol, sums, "RAID5, degraded, a file moved for a write")
        if status(vol)["grow"]["state"] != "paused":
            raise TestFailure("RAID5: the restripe stopped pausing after a write moved a file")
        # the rebuild at full speed (it shares the restripe's rates); the
        # restripe stays paused until the rebuild ends, then goes on by itself
        admin(vol, "set", vol.mnt, "rebuild_min=0", "rebuild_max=0")
        g2 = status(vol)["grow"]
        if g2["state"] != "paused":
            raise TestFailure("RAID5: the restripe did not stay paused: %r" % g2)
        replace_and_rebuild(vol, 1)
        # nothing but the rebuild's end wakes it (no rate change, no poke)
        g = wait_for(vol, lambda: (lambda g: g if g["state"] != "paused" else None)(
            status(vol)["grow"]), 10, "the restripe to resume after the rebuild")
        if g["state"] not in ("restriping", "done") or g.get("paused_reason"):
            raise TestFailure("RAID5: after the rebuild the restripe is %r" % g)
        text = vol.daemon_log(10000)
        if "restripe paused" not in text or "restripe resumed" not in text:
            raise TestFailure("RAID5: the daemon's log does not say paused and resumed:\n%s"
                              % vol.daemon_log())
        g = finish(vol, sums, "RAID5", t0)
        check_all(vol, sums, "RAID5, grown and rebuilt")
        vol.unmount()
        vol.check_fsck()
        log("RAID5 x 3 + 1: restripe paused while degraded, resumed after the rebuild and "
            "finished (%d files, %d MB moved); %d files read back; fsck clean; %.1f s"
            % (g["files_moved"], g["bytes_moved"] // 1000000, len(sums), time.monotonic() - t0))
    finally:
        vol.cleanup()


def main():
    t0 = time.monotonic()
    try:
        case_raid6()
        case_raid5()
    except TestFailure as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS: a member failed mid-restripe: RAID6 restriped on degraded, RAID5 paused until "
          "the rebuild; every file intact, fsck clean (%.1f s)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
