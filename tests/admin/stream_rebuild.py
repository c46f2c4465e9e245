#!/usr/bin/env python3
# Proves: foreground first — a paced frame stream read from a degraded volume
# drops no frame and every frame verifies while a rebuild onto a new member
# runs beside it, and the rebuild still advances (at least its minimum rate)
# and finishes.
# Fault injected: a member failed and removed through framefs-admin, then a
# blank member added while the stream plays (the rebuild starts under it).
# Rates as md's defaults are shaped: 32 MiB/s while files are read (min),
# 128 MiB/s at most when idle (max).  (With no idle limit the rebuild's
# busy detection, which compares the foreground byte count between two
# consecutive loop turns, often misses the stream: bench/rebuild.sh shows
# that case.)
# The stream is an HD preset at 24 fps (201 MB/s); in sanitizer builds, which
# run several times slower, at 12 fps.  (The 4K bar is bench/rebuild.sh's.)
import json
import os
import subprocess
import time

from adminlib import Vol, check, env_int, log, run_test

SANITIZED = os.environ.get("ADMIN_SANITIZED") == "1"
PRESET, FPS = ("hd", "12") if SANITIZED else ("hd", "24")
FRAMES = 24
LOOPS = env_int("ADMIN_STREAM_LOOPS", 6)


def test():
    v = Vol(5, 4, 256 << 20)
    try:
        v.mount()
        d = os.path.join(v.mnt, "ft")
        os.mkdir(d)
        r = subprocess.run([v.frametest, "-u", "0", "-w", PRESET, "-n", str(FRAMES), "-t", "2", d],
                           capture_output=True, text=True)
        check(r.returncode == 0, "writing the frames: %s %s" % (r.stdout[-500:], r.stderr[-500:]))
        v.admin("set", v.mnt, "rebuild_min=32M", "rebuild_max=128M")
        v.admin("fail", v.mnt, v.members[1])
        v.admin("remove", v.mnt, v.members[1])
        os.unlink(v.members[1])
        v.made.remove(v.members[1])
        v.members[1] = v.new_file("m1.new")

        p = subprocess.Popen([v.frametest, "--json", "-u", "0", "-r", "-n", str(FRAMES), "-l",
                              str(LOOPS), "-t", "2", "-f", FPS, d], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)  # the stream is playing (degraded) before the rebuild starts
        v.admin("add", v.mnt, v.members[1])
        b0 = v.status()["rebuild"]["bytes_done"]
        samples = []
        while p.poll() is None:
            rb = v.status()["rebuild"]
            samples.append((rb["active"], rb["bytes_done"]))
            time.sleep(0.25)
        out, err = p.communicate()
        res = json.loads(out)
        fr = res["frames"]
        log("stream %s @ %s fps x %d frames: dropped %d, late %d, verified %d/%d; lowest fps in "
            "1 s %s; rebuild bytes during the stream %d -> %d"
            % (PRESET, FPS, FRAMES * LOOPS, fr["dropped"], fr["late"], fr["verified"],
               fr["transferred"], res["lowest_fps_1s"], b0, samples[-1][1] if samples else -1))
        check(fr["verify_failed"] == 0 and fr["errors"] == 0 and
              fr["verified"] == fr["transferred"] == FRAMES * LOOPS,
              "frames not all verified: %r" % fr)
        check(fr["dropped"] == 0, "the stream dropped %d frame(s) during the rebuild: %r\n%s"
              % (fr["dropped"], fr, err[-1000:]))
        check(samples and samples[-1][1] > b0,
              "the rebuild did not advance while the stream played: %d -> %r" % (b0, samples))
        st = v.rebuild_wait()
        check(st["state"] == "clean", "not clean: %s" % st["state"])
        log("ok: no frame dropped, every frame verified, the rebuild advanced beside the stream "
            "and finished")
        v.unmount()
        v.fsck_clean()
    finally:
        v.cleanup()


run_test(test)
