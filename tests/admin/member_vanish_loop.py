#!/usr/bin/env python3
# Proves, with a block device member (a loop device over a file in
# /dev/shm, beside three file members), what the presence check does with
# what can really happen to a block device under a mounted volume:
#   backing file unlinked  (rm of the loop device's file: its writes go to an
#                          unlinked inode, as with a file member) -> failed,
#                          "vanished: the loop device's backing file ... was
#                          unlinked", within seconds, mid-stream;
#   node removed           (rm of the device node the member was given as, as
#                          udev does when a device goes away) -> failed once
#                          two checks in a row found it gone: "vanished: the
#                          device node ... is gone";
#   node names another     (another device's node renamed over it) -> failed:
#   device                 "vanished: ... now names another device";
#   capacity 0             (the backing file cut to 0 and losetup -c: what the
#                          kernel does to a disk it deletes, as for a pulled
#                          NVMe drive, whose writes then fail with ENOSPC)
#                          -> failed: "vanished: the device was removed (the
#                          kernel set its capacity to 0)", whether the write
#                          error or the presence check sees it first;
#   losetup -d             the kernel does not detach a loop device in use: it
#                          sets autoclear and detaches it when the array closes
#                          it.  I/O goes on to the backing file, nothing is
#                          lost: status warns (note), the array stays clean;
#                          after the unmount the loop device is gone, and the
#                          backing file attached again mounts clean (not stale)
#                          with every frame.
# Each failure case: the stream sees no error, every frame verifies, the
# remount is degraded, a new member is rebuilt: clean, fsck clean.
# Not covered here, as nothing in a test can make it happen to a loop device
# in use: /sys/dev/block/MAJ:MIN going away, or that number being given to
# another disk (diskseq) — a hot-unplugged NVMe drive (io/member.c checks
# both).
# Needs losetup (util-linux) and loop devices; without them the test fails
# saying so (a skip is a failure here).
import os
import shutil
import stat
import subprocess
import time

from adminlib import TestFailure, Vol, check, log, run_test
from member_vanish import (DETECT_S, FRAMES, end_stream, read_back, start_stream, used_stripes,
                           wait_failed, wait_frames)

LOOP_ROLE = 3


def losetup(*args):
    r = subprocess.run(["losetup", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise TestFailure("losetup %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout.strip()


def loop_attached(dev):
    return os.path.exists("/sys/block/%s/loop" % os.path.basename(dev))


class LoopVol(Vol):
    """RAID5 x 4: three file members and, as role 3, a loop device over the
    fourth member's file, given to the daemon as a node of our own in the
    test's directory (so that a case may remove or replace it)."""

    def __init__(self):
        super().__init__(5, 4, 256 << 20)
        self.loops = []
        try:
            self.backing = self.members[LOOP_ROLE]
            self.dev = self.attach(self.backing)
            self.members[LOOP_ROLE] = self.node(self.dev, "loop%d" % LOOP_ROLE)
        except BaseException:
            self.cleanup()
            raise

    def attach(self, path):
        dev = losetup("-f", "--show", "--direct-io=off", path)
        self.loops.append(dev)
        return dev

    def node(self, dev, name):
        p = os.path.join(self.tmp, name)
        os.mknod(p, stat.S_IFBLK | 0o600, os.stat(dev).st_rdev)
        return p

    def cleanup(self):
        try:
            super().cleanup()  # unmounts: the daemon closes the loop devices
        finally:
            for dev in getattr(self, "loops", []):
                if loop_attached(dev):
                    subprocess.run(["losetup", "-d", dev], capture_output=True)


def check_loop_available():
    if not shutil.which("losetup"):
        raise TestFailure("losetup (util-linux) is not installed: this test needs it")
    if not os.path.exists("/dev/loop-control"):
        raise TestFailure("no /dev/loop-control: the kernel has no loop devices")


def fail_case(tag, act, reason, expect_two_checks):
    """A stream; act(v) makes the loop member vanish; it must be failed."""
    v = LoopVol()
    try:
        v.mount("read_cache_mb=1")
        base = used_stripes(v)
        d, p = start_stream(v, "ft")
        wait_frames(v, p, base, 24, tag)
        t0 = time.monotonic()
        reason = act(v) or reason
        st, lat = wait_failed(v, LOOP_ROLE, t0, reason, p, tag)
        if expect_two_checks:
            check("failed if the next check still finds it so" in v.full_log(),
                  "%s: no warning before the second check:\n%s" % (tag, v.full_log()))
        end_stream(p, tag)
        read_back(v, d, tag + " degraded")
        v.unmount()
        left = v.members[:LOOP_ROLE]
        v.mount("read_cache_mb=1", paths=left)
        check(v.status()["state"] == "degraded", "%s: remount: %r" % (tag, v.roles()))
        read_back(v, d, tag + " remounted degraded")
        v.members[LOOP_ROLE] = v.new_file("m%d.new" % LOOP_ROLE)
        _, out, _ = v.admin("add", v.mnt, v.members[LOOP_ROLE])
        check("takes over role %d" % LOOP_ROLE in out, "%s: add: %r" % (tag, out))
        v.rebuild_wait()
        read_back(v, d, tag + " rebuilt")
        v.unmount()
        v.fsck_clean()
        log("ok: %s: the loop member failed %.2f s after it vanished (%s); stream without error, "
            "frames verify degraded, remounted and rebuilt" % (tag, lat, st["members"][LOOP_ROLE]["reason"]))
        return lat
    finally:
        v.cleanup()


def act_unlink_backing(v):
    os.unlink(v.backing)
    v.made.remove(v.backing)
    return "vanished: the loop device's backing file %s was unlinked" % v.backing


def act_rm_node(v):
    os.unlink(v.members[LOOP_ROLE])
    return "vanished: the device node %s is gone" % v.members[LOOP_ROLE]


def act_other_device(v):
    other = v.attach(v.new_file("other"))
    tmp = v.node(other, "other-node")
    os.rename(tmp, v.members[LOOP_ROLE])
    return "vanished: %s now names another device" % v.members[LOOP_ROLE]


def act_capacity_zero(v):
    os.truncate(v.backing, 0)
    losetup("-c", v.dev)
    # A stream write the loop device takes between the truncate and
    # losetup -c grows the backing file again (a loop write past its end
    # extends it), and the kernel then sets that size instead of 0: on a
    # busy machine the window is wide enough (seen: 16252928 bytes).  Both
    # are the device losing its capacity; the two messages share this
    # prefix, and test_io.c checks the capacity-0 one word for word.
    if os.path.getsize(v.backing) == 0:
        return "vanished: the device was removed (the kernel set its capacity to 0)"
    return "vanished: the device shrank to "


def case_losetup_d():
    tag = "losetup -d"
    v = LoopVol()
    try:
        v.mount("read_cache_mb=1")
        base = used_stripes(v)
        d, p = start_stream(v, "ft")
        wait_frames(v, p, base, 24, tag)
        t0 = time.monotonic()
        losetup("-d", v.dev)
        check(loop_attached(v.dev), "%s: the kernel detached the loop device in use at once" % tag)
        st = v.wait_for(lambda: (lambda s: s if s["members"][LOOP_ROLE]["note"] else None)(v.status()),
                        DETECT_S, "a warning on the loop member")
        lat = time.monotonic() - t0
        note = st["members"][LOOP_ROLE]["note"]
        check(note.startswith("loop device detached (losetup -d) while in use") and v.backing in note,
              "%s: note %r" % (tag, note))
        end_stream(p, tag)
        st = v.status()
        check(st["state"] == "clean" and st["members"][LOOP_ROLE]["state"] == "active",
              "%s: %s %r" % (tag, st["state"], v.roles(st)))
        check(note in v.full_log(), "%s: the warning is not in the log:\n%s" % (tag, v.full_log()))
        read_back(v, d, tag)
        v.unmount()
        # the last close of the device (its io_uring registration ends in a
        # kernel worker after the daemon exits) lets the kernel detach it
        t1 = time.monotonic()
        v.wait_for(lambda: not loop_attached(v.dev), 30, "the kernel to detach %s" % v.dev)
        detach_s = time.monotonic() - t1
        # the data is in the backing file: attached again, the array is whole
        os.unlink(v.members[LOOP_ROLE])
        v.members[LOOP_ROLE] = v.node(v.attach(v.backing), "loop%d.again" % LOOP_ROLE)
        v.mount("read_cache_mb=1")
        st = v.status()
        check(st["state"] == "clean", "%s: remounted with the backing file attached again: %s %r"
              % (tag, st["state"], v.roles(st)))
        read_back(v, d, tag + " remounted")
        v.unmount()
        v.fsck_clean()
        log("ok: %s: the loop device stays attached while in use (autoclear); warned %.2f s later "
            "(%s...); clean, frames verify; detached %.2f s after the unmount; attached again: "
            "clean" % (tag, lat, note[:50], detach_s))
        return lat
    finally:
        v.cleanup()


def test():
    check_loop_available()
    t0 = time.monotonic()
    lats = [fail_case("loop backing file unlinked", act_unlink_backing, None, False),
            fail_case("loop node removed", act_rm_node, None, True),
            fail_case("loop node names another device", act_other_device, None, True),
            fail_case("loop capacity set to 0", act_capacity_zero, None, False)]
    warn = case_losetup_d()
    log("detection latency: failed %s s; losetup -d warned after %.2f s"
        % (", ".join("%.2f" % x for x in lats), warn))
    log("took %.1f s" % (time.monotonic() - t0))


run_test(test)
