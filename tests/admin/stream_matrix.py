#!/usr/bin/env python3
# Proves: every stream a user brings completes and reads back verified —
# frame presets 2k, 4k, 8k, dpx-8k and variable sizes like compressed EXR
# (each frame a seeded random size between 3 and 60 MB), 1 to 8 writer
# threads, 1 or 3 streams in different directories, O_DIRECT and buffered,
# whole-frame write() calls and 1 MiB pieces, single files of 1-4 GiB
# (MOV/MXF), on RAID5 and RAID6 arrays 3 to 10 members wide.  Every cell runs
# twice: with the default write-buffer pool and read cache, and with the
# smallest the mount accepts (write_buffer_mb=1, read_cache_mb=1: 8 stripes
# each), where pool exhaustion is the normal case.
# Faults injected: in the cells marked so, a 2 ms latency on every write of
# one member (FRAMEFS_FAULT op=w,lat_ms=2); in the cells marked hog, a busy
# loop on every core beside the stream.
# Checked per run: frametest PASSes (write; read verifies every frame), the
# daemon's oldest request in flight (framefs-admin status, sampled every
# 0.25 s) stays under its stuck threshold and no request was logged stuck,
# the volume unmounts cleanly and fsck -n -c finds nothing.
# A watchdog independent of the daemon: a frametest run that outlives its
# time budget fails the test with the daemon's thread stacks (gdb) and its
# tasks' kernel stacks in the log; then the daemon is killed.
#
# Knobs: IT_MATRIX=full runs the whole product (hours); IT_MATRIX=NAME,NAME
# runs the named CI cells; IT_MATRIX_TIMEOUT_S overrides each run's budget;
# IT_MATRIX_TRANSPORT=io_uring mounts with -o transport=io_uring (default:
# the daemon's default transport).
import glob
import itertools
import json
import os
import subprocess
import threading
import time

from adminlib import TestFailure, Vol, check, log, run_test

SANITIZED = os.environ.get("ADMIN_SANITIZED") == "1"
MiB = 1 << 20
SIZES = {"2k": 12812288, "4k": 51052544, "8k": 141623296, "dpx-8k": 132718592}
VARY = "3M:60M"           # frametest --vary: the EXR-like range
VARY_MEAN = 33 * 10**6    # for sizing volumes and time budgets
POOLS = {"default": (), "min": ("write_buffer_mb=1", "read_cache_mb=1")}
# IT_MATRIX_POOLS=min (a comma list of POOLS' names) runs only those pools:
# the sanitizer run takes the smallest pool, where buffers run out.
if os.environ.get("IT_MATRIX_POOLS"):
    POOLS = {k: POOLS[k] for k in os.environ["IT_MATRIX_POOLS"].split(",")}


class Cell:
    def __init__(self, name, preset, frames, threads, streams=1, direct=True, io=None,
                 level=5, members=4, single=False, latency=False, hog=False):
        self.name, self.preset, self.frames, self.threads = name, preset, frames, threads
        self.streams, self.direct, self.io, self.level = streams, direct, io, level
        self.members, self.single, self.latency, self.hog = members, single, latency, hog

    def frame_bytes(self):
        return VARY_MEAN if self.preset == "vary" else SIZES[self.preset]

    def bytes(self):
        top = 60 * 10**6 if self.preset == "vary" else self.frame_bytes()
        return self.streams * self.frames * max(self.frame_bytes(), top // 2)

    def describe(self):
        return ("%s: %s x %d frames, %d thread(s), %d stream(s), %s, %s, RAID%d x %d%s%s%s"
                % (self.name, self.preset, self.frames, self.threads, self.streams,
                   "O_DIRECT" if self.direct else "buffered",
                   "%s pieces" % self.io if self.io else "whole frames", self.level,
                   self.members, ", one file" if self.single else "",
                   ", member latency" if self.latency else "", ", CPU hog" if self.hog else ""))


# The CI cells: every value of every dimension at least once, the reported
# hangs (8K x 4 threads; one file past 64 stripes) among them.
CI_CELLS = [
    Cell("8k-t4", "8k", 8, 4),
    Cell("dpx8k-t8-buffered-1m", "dpx-8k", 8, 8, direct=False, io="1M", level=6, members=6),
    Cell("2k-t1-buffered", "2k", 24, 1, direct=False, members=3),
    Cell("4k-t2-3streams-1m", "4k", 5, 2, streams=3, io="1M", level=6, members=10),
    Cell("vary-t4", "vary", 20, 4, members=8),
    Cell("vary-t2-3streams-buffered-1m", "vary", 8, 2, streams=3, direct=False, io="1M",
         level=6, members=7),
    Cell("4k-t8-buffered-hog", "4k", 16, 8, direct=False, members=5, hog=True),
    Cell("file-1g-t1", "4k", 21, 1, io="1M", single=True),
    Cell("file-t4-buffered-latency", "4k", 10, 4, direct=False, single=True, latency=True,
         level=6, members=6),
]


def full_cells():
    """The whole product, widths and levels cycling over 3..10 members."""
    cells, widths = [], itertools.cycle([(5, 3), (5, 4), (6, 6), (5, 8), (6, 10), (5, 5),
                                         (6, 4), (5, 10), (6, 7), (5, 9)])
    for preset, threads, streams, direct, io in itertools.product(
            ["2k", "4k", "8k", "dpx-8k", "vary"], [1, 2, 4, 8], [1, 3], [True, False],
            [None, "1M"]):
        level, members = next(widths)
        per = SIZES.get(preset, VARY_MEAN)
        frames = max(threads, (1 << 30) // (per * streams))
        cells.append(Cell("%s-t%d-s%d-%s-%s" % (preset, threads, streams, "d" if direct else "b",
                                                io or "whole"), preset, frames, threads,
                          streams, direct, io, level, members))
    for gib, latency, direct in itertools.product([1, 2, 4], [False, True], [True, False]):
        level, members = next(widths)
        cells.append(Cell("file-%dg-%s%s" % (gib, "d" if direct else "b",
                                             "-latency" if latency else ""), "4k",
                          (gib << 30) // SIZES["4k"] + 1, 1, direct=direct, io="1M",
                          single=True, latency=latency, level=level, members=members))
    return cells


def budget_s(cell):
    if os.environ.get("IT_MATRIX_TIMEOUT_S"):
        return int(os.environ["IT_MATRIX_TIMEOUT_S"])
    rate = (8 if SANITIZED else 40) * 10**6  # bytes/s far below any healthy run
    if cell.latency:
        rate //= 2
    return 60 + cell.bytes() // rate


class Sampler(threading.Thread):
    """Samples the daemon's oldest request in flight until stopped."""

    def __init__(self, vol):
        super().__init__(daemon=True)
        self.vol, self.stop, self.max_age_ms, self.max_op, self.samples = vol, False, 0, None, 0
        self.errors = []

    def run(self):
        while not self.stop:
            r = subprocess.run([self.vol.admin_exe, "--json", "status", self.vol.mnt],
                               capture_output=True, text=True, timeout=60)
            if r.returncode == 0:
                rq = json.loads(r.stdout)["requests"]
                self.samples += 1
                if rq["oldest_age_ms"] > self.max_age_ms:
                    self.max_age_ms, self.max_op = rq["oldest_age_ms"], rq["oldest_op"]
            else:
                self.errors.append(r.stderr.strip())
            time.sleep(0.25)  # a sampling period, not a synchronisation


def daemon_stacks(pid):
    """The daemon's threads: user stacks from gdb, kernel stacks from /proc."""
    out = []
    try:
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"],
                           capture_output=True, text=True, timeout=120)
        out.append(r.stdout[-30000:])
    except (OSError, subprocess.TimeoutExpired) as e:
        out.append("gdb: %s" % e)
    for task in sorted(glob.glob("/proc/%d/task/*" % pid)):
        try:
            with open(task + "/comm") as f:
                comm = f.read().strip()
            with open(task + "/stack") as f:
                stack = f.read().strip().replace("\n", " | ")
            out.append("%s %s: %s" % (os.path.basename(task), comm, stack))
        except OSError:
            pass
    return "\n".join(out)


def hung(vol, what, proc):
    pid = vol.daemon.pid
    stacks = daemon_stacks(pid)
    vol.kill9()
    proc.kill()
    proc.wait()
    raise TestFailure("%s did not finish within its budget: the mount hung.\ndaemon threads:\n%s\n"
                      "daemon log:\n%s" % (what, stacks, vol.daemon_log(60)))


def frametest_run(vol, cell, args, what):
    cmd = [vol.frametest, "--json", "-u", "0", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=budget_s(cell))
    except subprocess.TimeoutExpired:
        hung(vol, what, p)
    try:
        res = json.loads(out)
    except ValueError:
        raise TestFailure("%s: frametest printed no JSON (exit %d): %s %s"
                          % (what, p.returncode, out[-1500:], err[-1500:]))
    check(p.returncode == 0, "%s: frametest exit %d (%s): %s\n%s\ndaemon log:\n%s"
          % (what, p.returncode, res.get("result"), err[-1500:], " ".join(cmd),
             vol.daemon_log()))
    return res


def common_args(cell):
    a = ["-t", str(cell.threads), "-n", str(cell.frames)]
    if cell.streams > 1:
        a += ["--streams", str(cell.streams)]
    if not cell.direct:
        a += ["--buffered"]
    if cell.io:
        a += ["--io-size=%s" % cell.io]
    if cell.single:
        a += ["-s"]
    return a


def one_pool(vol, cell, pool):
    env = None
    if cell.latency:
        env = {"FRAMEFS_FAULT": "%s@op=w,lat_ms=2" % vol.members[1]}
    transport = os.environ.get("IT_MATRIX_TRANSPORT")
    vol.mount(*POOLS[pool], *(["transport=" + transport] if transport else []), env=env)
    if transport:
        fuse = vol.status().get("fuse") or {}
        want = "io_uring" if transport == "io_uring" else "/dev/fuse"
        check(str(fuse.get("transport")).startswith(want),
              "IT_MATRIX_TRANSPORT=%s, but the daemon serves %r" % (transport, fuse))
    d = os.path.join(vol.mnt, pool)
    os.mkdir(d)
    sampler = Sampler(vol)
    sampler.start()
    t0 = time.monotonic()
    w = ["-w", cell.preset]
    if cell.preset == "vary":
        w = ["--vary=" + VARY, "-w"]  # each frame its own size: -w takes none
    res_w = frametest_run(vol, cell, w + common_args(cell) + [d], "%s, %s pool: write"
                          % (cell.name, pool))
    res_r = frametest_run(vol, cell, ["-r"] + common_args(cell) + [d], "%s, %s pool: read"
                          % (cell.name, pool))
    secs = time.monotonic() - t0
    sampler.stop = True
    sampler.join()
    st = vol.status()
    fr = res_r["frames"]
    want = cell.frames * cell.streams
    check(fr["verified"] == want, "%s, %s pool: %d of %d frames verified"
          % (cell.name, pool, fr["verified"], want))
    check(sampler.samples > 0, "%s: no status sample answered: %s" % (cell.name, sampler.errors))
    check(sampler.max_age_ms < st["requests"]["stuck_ms"],
          "%s, %s pool: a %s request was in flight %d ms (threshold %d)"
          % (cell.name, pool, sampler.max_op, sampler.max_age_ms, st["requests"]["stuck_ms"]))
    check(st["requests"]["stuck_seen"] == 0, "%s, %s pool: %d requests logged stuck:\n%s"
          % (cell.name, pool, st["requests"]["stuck_seen"], vol.daemon_log()))
    fs = st["stats"]["fs"]
    log("  %-7s pool: wrote %.0f MB/s, read %.0f MB/s, %d frames verified, %.1f s; oldest request "
        "%d ms over %d samples; buffer waits pool %d inode %d rewrite %d, evictions %d"
        % (pool, res_w["throughput"]["MB_s"], res_r["throughput"]["MB_s"],
           fr["verified"], secs, sampler.max_age_ms, sampler.samples, fs["wbuf_wait_pool"],
           fs["wbuf_wait_inode"], fs["wbuf_wait_rewrite"], fs["wbuf_evictions"]))
    vol.unmount()
    vol.fsck_clean()


def run_cell(cell):
    ndata = cell.members - (cell.level - 4)
    need = 2 * cell.bytes() * 1.25 + 256 * MiB  # both pools' files stay on the volume
    member = max(256 * MiB, int(need / ndata) // (64 * MiB) * (64 * MiB) + 64 * MiB)
    log(cell.describe())
    vol = Vol(cell.level, cell.members, member)
    hogs = []
    try:
        if cell.hog:
            hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"])
                    for _ in range(os.cpu_count() or 2)]
        for pool in POOLS:
            one_pool(vol, cell, pool)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        vol.cleanup()


def test():
    sel = os.environ.get("IT_MATRIX", "")
    if sel == "full":
        cells = full_cells()
    elif sel:
        names = sel.split(",")
        cells = [c for c in CI_CELLS if c.name in names]
        check(len(cells) == len(names), "IT_MATRIX names cells that do not exist: %s" % sel)
    else:
        cells = CI_CELLS
    log("%d cells, each with the buffer pools %s" % (len(cells), ", ".join(POOLS)))
    t0 = time.monotonic()
    for c in cells:
        run_cell(c)
    log("all %d cells in %.0f s" % (len(cells), time.monotonic() - t0))


if __name__ == "__main__":
    run_test(test)
