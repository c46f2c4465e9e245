#!/usr/bin/env python3
# Proves: foreground first during a grow's restripe (fs/grow/restripe.c), as
# rebuild-yields-to-stream proves it for a rebuild: a paced 4K write stream
# (framefs-frametest -w 4k -t 2 at 24 fps: 1225 MB/s) drops no more frames
# while the restripe moves the volume's old files beside it than the same
# stream on the same volume once the restripe is done (on a machine that
# holds the stream: none), and the restripe keeps to its rates: while the
# stream runs it moves at rebuild_min (no less: it is not starved; no more:
# it yields), and when idle at up to rebuild_max.  Every frame, old and new,
# reads back verified, the restripe finishes, and fsck.framefs -n -c finds
# nothing to repair.
# The volume: RAID5 x 4 of RAM members (512 MiB), 60 HD frames (500 MB) in
# the old geometry, grown by one member with --no-restripe and mounted.
# Rates as rebuild-yields-to-stream sets them (md's shape): 32 MiB/s while
# files are read or written, 128 MiB/s at most when idle.
# Fault injected: none in the measures; until the rates are set after the
# mount (the restripe starts at the defaults: no limit when idle), a 20 ms
# latency on the added member's writes (framefs-admin fault) holds it back.
# The rate during the stream is measured from its first half second on
# (frametest starting sends nothing yet, and the restripe's busy window is
# 0.5 s); idle, it moves at rebuild_max (its own requests are background
# ones, not counted as others').
# Printed: the restripe's MB/s (10^6 B/s, status' bytes_moved over time,
# which moves a whole old file at a time: 8.4 MB) idle and during the
# stream, and both streams' frames.
# Knobs: ADMIN_GROW_STREAM_FRAMES (frames in the stream's set, default 12),
# ADMIN_GROW_STREAM_LOOPS (times it is written, default 6: 72 frames, 3 s).
import json
import os
import subprocess
import time

from adminlib import TestFailure, Vol, check, env_int, log, run_test

SANITIZED = os.environ.get("ADMIN_SANITIZED") == "1"
PRESET, FPS = "4k", ("12" if SANITIZED else "24")
FRAMES = env_int("ADMIN_GROW_STREAM_FRAMES", 12)
LOOPS = env_int("ADMIN_GROW_STREAM_LOOPS", 6)
OLD_PRESET, OLD_FRAMES, OLD_BYTES = "hd", 60, 8359936
MIN, MAX = 32 << 20, 128 << 20
IDLE_S = 2.0


def grow(v):
    r = subprocess.run([v.admin_exe, "grow", "--no-restripe", ",".join(v.members),
                        v.new_file("n0")], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "grow --no-restripe: %s %s" % (r.stdout, r.stderr))
    v.members.append(v.base + ".n0")


def moved(v):
    g = v.status()["grow"]
    return g, time.monotonic()


def rate(a, b):
    (ga, ta), (gb, tb) = a, b
    return (gb["bytes_moved"] - ga["bytes_moved"]) / 1e6 / (tb - ta)


def stream(v, d, tag):
    """The paced write stream; returns its frames, and the restripe's
    (status, time) samples every 0.25 s while it ran."""
    p = subprocess.Popen([v.frametest, "--json", "-u", "0", "-w", PRESET, "-n", str(FRAMES),
                          "-l", str(LOOPS), "-t", "2", "-f", FPS, d],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    samples = [moved(v)]
    while p.poll() is None:
        time.sleep(0.25)  # a sampling period, not a synchronisation
        samples.append(moved(v))
    out, err = p.communicate()
    try:
        res = json.loads(out)
    except ValueError:
        raise TestFailure("frametest printed no JSON: %s %s" % (out[-500:], err[-500:]))
    fr = res["frames"]
    log("%s: %s @ %s fps x %d frames: dropped %d, late %d, errors %d; lowest fps in 1 s %s"
        % (tag, PRESET, FPS, FRAMES * LOOPS, fr["dropped"], fr["late"], fr["errors"],
           res.get("lowest_fps_1s")))
    check(fr["errors"] == 0, "%s: the stream saw errors: %r\n%s" % (tag, fr, err[-1000:]))
    return fr, samples


def read_back(v, d, n, what):
    r = subprocess.run([v.frametest, "--json", "-u", "0", "-r", "-n", str(n), "-t", "2", d],
                       capture_output=True, text=True)
    fr = json.loads(r.stdout)["frames"]
    check(r.returncode == 0 and fr["verified"] == n and fr["verify_failed"] == 0,
          "%s do not read back: %r" % (what, fr))


def test():
    t0 = time.monotonic()
    v = Vol(5, 4, 512 << 20)
    try:
        v.mount()
        old = os.path.join(v.mnt, "old")
        os.mkdir(old)
        r = subprocess.run([v.frametest, "-u", "0", "-w", OLD_PRESET, "-n", str(OLD_FRAMES),
                            "-t", "2", old], capture_output=True, text=True)
        check(r.returncode == 0, "writing the old frames: %s %s" % (r.stdout[-500:], r.stderr[-500:]))
        v.unmount()
        grow(v)
        v.mount(env={"FRAMEFS_FAULT": "%s@op=w,lat_us=20000" % os.path.basename(v.members[-1])})
        v.admin("set", v.mnt, "rebuild_min=%d" % MIN, "rebuild_max=%d" % MAX)
        v.admin("fault", v.mnt, "clear")
        g = v.status()["grow"]
        check(g["state"] == "restriping", "the restripe is not under way after the mount: %r" % g)

        # idle: up to rebuild_max
        a = moved(v)
        time.sleep(IDLE_S)  # a measure over a span, not a synchronisation
        b = moved(v)
        idle = rate(a, b)
        check(b[0]["state"] == "restriping", "the restripe ended before the stream: %r" % b[0])

        # the stream beside the restripe
        d = os.path.join(v.mnt, "ft")
        os.mkdir(d)
        fr, samples = stream(v, d, "restriping")
        # from the stream's first half second on: frametest starting (no
        # request yet) is idle to the restripe, and its busy window is 0.5 s
        first = next(i for i, x in enumerate(samples) if x[1] - samples[0][1] >= 0.5)
        streaming = rate(samples[first], samples[-1])
        log("restripe: %.1f MB/s idle (rebuild_max %.1f MB/s), %.1f MB/s during the stream "
            "(rebuild_min %.1f MB/s); per 0.25 s: %s"
            % (idle, MAX / 1e6, streaming, MIN / 1e6,
               [round(rate(x, y)) for x, y in zip(samples, samples[1:])]))
        check(samples[-1][0]["state"] == "restriping",
              "the restripe ended during the stream: %r" % samples[-1][0])
        span = samples[-1][1] - samples[first][1]
        slack = 2 * OLD_BYTES / 1e6 / span  # a file is counted when its move commits
        check(streaming >= 0.75 * MIN / 1e6, "the restripe moved %.1f MB/s during the stream, "
              "below its minimum %.1f MB/s" % (streaming, MIN / 1e6))
        check(streaming <= 1.25 * MIN / 1e6 + slack, "the restripe moved %.1f MB/s during the "
              "stream: it did not yield to its minimum %.1f MB/s" % (streaming, MIN / 1e6))
        check(idle <= 1.25 * MAX / 1e6 + 2 * OLD_BYTES / 1e6 / IDLE_S,
              "the restripe moved %.1f MB/s idle, above its maximum %.1f MB/s"
              % (idle, MAX / 1e6))
        check(idle >= 0.75 * MAX / 1e6 - 2 * OLD_BYTES / 1e6 / IDLE_S,
              "the restripe moved %.1f MB/s idle, well below its maximum %.1f MB/s: it took its "
              "own requests for others'" % (idle, MAX / 1e6))

        # the same stream once the restripe is done: what this machine holds
        v.admin("set", v.mnt, "rebuild_min=0", "rebuild_max=0")
        g = v.adminj("grow", "--wait", v.mnt)["grow"]
        check(g["state"] == "done", "the restripe did not finish: %r" % g)
        base, _ = stream(v, d, "no restripe")
        check(fr["dropped"] <= base["dropped"], "the stream dropped %d frame(s) beside the "
              "restripe, %d without it" % (fr["dropped"], base["dropped"]))
        read_back(v, d, FRAMES, "the stream's frames")
        read_back(v, old, OLD_FRAMES, "the old frames, moved")
        v.unmount()
        v.fsck_clean()
        log("took %.1f s" % (time.monotonic() - t0))
    finally:
        v.cleanup()


run_test(test)
