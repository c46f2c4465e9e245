#!/usr/bin/env python3
# Proves: `framefs-admin status --footage FORMAT@FPS` gives the free space as
# running time with what a frame really costs on the volume: each frame
# rounded up to whole stripes (and one inode).  On a known array (RAID5 x 4,
# chunk 16 KiB: 48 KiB stripes) the frames, seconds and minutes equal the
# values computed here by hand for two frametest presets and a frame size in
# KiB, in the text line and in --json; one frame written really takes the
# stripes the figure counts; the same figure comes out offline from the
# members; bad formats and rates are refused with what is accepted.
# Fault injected: none.
import math
import os

from adminlib import Vol, check, log, run_test

MiB = 1 << 20
STRIPE = 3 * 16 * 1024


def up(n, a):
    return -(-n // a) * a


# frametest's rule: w*h*4 + a 64 KiB header, up to 4 KiB (tools/frametest/presets.c)
SD = up(720 * 480 * 4 + 65536, 4096)      # 1,449,984 bytes: 29.5 stripes -> 30
K4 = up(4096 * 3112 * 4 + 65536, 4096)    # 51,052,544 bytes: 1038.7 stripes -> 1039


def expect(st, frame_bytes, fps):
    per = math.ceil(frame_bytes / STRIPE)
    # the overwrite reserve is not for new frames
    avail = max(0, st["fs"]["free_stripes"] - st["fs"]["reserve_stripes"])
    frames = min(avail // per, st["fs"]["free_inodes"])
    return per, frames, int(frames / fps // 60)


def check_footage(v, spec, frame_bytes, fps, paths=None):
    where = paths or [v.mnt]
    st = v.adminj("status", "--footage", spec, *where)
    per, frames, minutes = expect(st, frame_bytes, fps)
    fo = st["footage"]
    check(fo["frame_bytes"] == frame_bytes, "%s: frame_bytes %r" % (spec, fo))
    check(fo["stripes_per_frame"] == per and fo["frame_footprint_bytes"] == per * STRIPE,
          "%s: %r, expected %d stripes per frame" % (spec, fo, per))
    check(fo["frames"] == frames and fo["minutes"] == minutes,
          "%s: %r, expected %d frames, %d minutes" % (spec, fo, frames, minutes))
    check(abs(fo["seconds"] - frames / fps) < 0.002, "%s: seconds %r" % (spec, fo))
    check(fo["fps"] == fps and fo["limited_by"] == "space", "%s: %r" % (spec, fo))
    _, out, _ = v.admin("status", "--footage", spec, *where)
    want = "%d:%02d (h:mm)" % (minutes // 60, minutes % 60)
    line = [ln for ln in out.splitlines() if ln.strip().startswith("footage")]
    check(len(line) == 1 and want in line[0] and " %d frame" % frames in line[0],
          "%s: text %r, expected %s and %d frames" % (spec, line, want, frames))
    return fo, line[0].strip()


def test():
    v = Vol(5, 4, 64 * MiB, mkfs_args=("-c", "16K"))
    try:
        # refused before any volume is asked
        for spec, what in [("5k@24", "unknown frame format '5k'"), ("4k@0", "bad frame rate"),
                           ("4k@abc", "bad frame rate"), ("4k@-24", "bad frame rate"),
                           ("4k@1001", "bad frame rate"), ("4k", "wants FORMAT@FPS"),
                           ("@24", "wants FORMAT@FPS"), ("0@24", "unknown frame format")]:
            _, out, err = v.admin("status", "--footage", spec, v.mnt, expect=2)
            check(what in err and err.count("\n") == 1 and out == "",
                  "--footage %s: %r" % (spec, err))
            if "format" in what:
                check("sd, hd, 2k, 4k, 8k, dpx-uhd" in err and "KiB" in err,
                      "the accepted formats are not listed: %r" % err)
            else:
                check("FORMAT@FPS" in err or "29.97" in err, "accepted rates: %r" % err)
        _, _, err = v.admin("metrics", "--footage", "4k@24", v.mnt, expect=2)
        check("goes with status" in err, "--footage on metrics: %r" % err)
        log("ok: bad formats and rates are refused with what is accepted")

        v.mount()
        st = v.status()
        check(st["fs"]["stripe_bytes"] == STRIPE, "stripe %d" % st["fs"]["stripe_bytes"])
        fo, line = check_footage(v, "sd@1", SD, 1)
        check(fo["stripes_per_frame"] == 30 and fo["minutes"] >= 1, "sd: %r" % fo)
        log("ok: sd@1: %s" % line)
        fo, line = check_footage(v, "4K@24", K4, 24)  # names are case-insensitive
        check(fo["stripes_per_frame"] == 1039 and fo["format"] == "4k", "4k: %r" % fo)
        log("ok: 4k@24: %s" % line)
        fo, line = check_footage(v, "4@0.5", 4096, 0.5)
        check(fo["stripes_per_frame"] == 1 and fo["minutes"] >= 60, "4 KiB: %r" % fo)
        log("ok: 4 KiB frames at 0.5 fps: %s" % line)

        # one sd frame really takes 30 stripes (what the naive free/size
        # division would count as 29.5)
        before = st["fs"]["free_stripes"]
        with open(os.path.join(v.mnt, "frame000001.raw"), "wb") as f:
            f.write(os.urandom(SD))
            f.flush()
            os.fsync(f.fileno())
        after = v.status()["fs"]["free_stripes"]
        check(before - after == 30, "one sd frame took %d stripes" % (before - after))
        online, _ = check_footage(v, "sd@25", SD, 25)
        log("ok: one sd frame written takes the 30 stripes counted")

        v.unmount()
        offline, _ = check_footage(v, "sd@25", SD, 25, paths=v.members)
        check(offline == online, "offline %r vs online %r" % (offline, online))
        log("ok: the same figure offline, from the members")
    finally:
        v.cleanup()


run_test(test)
