#!/usr/bin/env python3
# Proves: `framefs-admin times MOUNTPOINT` tells where a frame's requests
# spent their time, and counts what happened.  On RAID5 x 4, four frames of
# 3 MiB are written the way capture software does (open O_CREAT|O_TRUNC,
# one write, close); then
#   1. the JSON answer has a row per request with the counts the frames
#      make (create 4, flush >= 4, write >= 4), every row consistent
#      (count > 0, avg <= max, p50 <= p90 <= p99 <= max), the flush's
#      wait for its journal commit under it (close commits the file), the
#      commit thread's own phases ("(commit)": the records written), and
#      the frames' eight stripe writes, sent to mapped, with their phases;
#   2. the table form shows the same requests with their waits indented;
#   3. reset answers the times and zeroes them: the next answer has no
#      flush row, and a fifth frame makes it count 1 create;
#   4. a bad word is refused (exit 1, the usage), and an unmounted volume
#      is refused (exit 2, "needs a mounted volume").
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import TestFailure, Volume, log  # noqa: E402

ADMIN = os.environ["ADMIN"]
FRAME = 3 << 20


def admin(*args):
    return subprocess.run([ADMIN, *args], capture_output=True, text=True, timeout=60)


def times(vol, *more):
    r = admin("times", "--json", vol.mnt, *more)
    if r.returncode != 0:
        raise TestFailure("times: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    ans = json.loads(r.stdout)
    return ans["times"]["rows"]


def row(rows, op, wait=None):
    for r in rows:
        if r["op"] == op and r["wait"] == wait:
            return r
    return None


def write_frame(path, i):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, bytes([i & 0xFF]) * FRAME)
    finally:
        os.close(fd)


def check_rows(rows):
    for r in rows:
        if r["count"] <= 0 or not (r["p50_ms"] <= r["p90_ms"] <= r["p99_ms"] <= r["max_ms"]) \
                or r["avg_ms"] > r["max_ms"] + 1e-3:
            raise TestFailure("inconsistent row %s" % r)


def main():
    vol = Volume(5, 4, 256 << 20)
    try:
        vol.mount()
        for i in range(4):
            write_frame(os.path.join(vol.mnt, "f%06d.dpx" % i), i)
        rows = times(vol)
        check_rows(rows)
        for op, least in (("create", 4), ("flush", 4), ("write", 4)):
            r = row(rows, op)
            if not r or r["count"] < least or (op == "create" and r["count"] != 4):
                raise TestFailure("%s: expected %d, got %s" % (op, least, r))
        if not row(rows, "flush", "a journal commit"):
            raise TestFailure("no flush / journal commit row: %s" % rows)
        if not row(rows, "(commit)", "the records written"):
            raise TestFailure("no commit phase row: %s" % rows)
        # 3 MiB is two whole stripes at mkfs's 512 KiB chunks on 4 members
        sw = row(rows, "(a stripe write)")
        if not sw or sw["count"] != 8 or not row(rows, "(a stripe write)", "the completion thread"):
            raise TestFailure("stripe writes: expected 8 with their phases, got %s" % sw)
        log("times: create %d, flush %d (avg %.3f ms, of which commit %.3f ms)"
            % (row(rows, "create")["count"], row(rows, "flush")["count"], row(rows, "flush")["avg_ms"],
               row(rows, "flush", "a journal commit")["avg_ms"]))
        # 2. the table
        r = admin("times", vol.mnt)
        lines = r.stdout.splitlines()
        if r.returncode != 0 or not lines or "p99" not in lines[0] or \
                not any(ln.startswith("flush ") for ln in lines) or \
                not any(ln.startswith("  a journal commit") for ln in lines):
            raise TestFailure("table: exit %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
        # 3. reset
        r = admin("times", vol.mnt, "reset")
        if r.returncode != 0 or "reset" not in r.stdout:
            raise TestFailure("reset: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
        rows = times(vol)
        if row(rows, "flush") or row(rows, "create"):
            raise TestFailure("after the reset: %s" % rows)
        write_frame(os.path.join(vol.mnt, "f%06d.dpx" % 4), 4)
        rows = times(vol)
        if not row(rows, "create") or row(rows, "create")["count"] != 1:
            raise TestFailure("after the reset, one frame: %s" % rows)
        # 4. refusals
        r = admin("times", vol.mnt, "bogus")
        if r.returncode != 1 or "usage: times" not in r.stdout + r.stderr:
            raise TestFailure("times bogus: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
        vol.unmount()
        r = admin("times", vol.spec)
        if r.returncode != 2 or "mounted volume" not in r.stderr:
            raise TestFailure("times on an unmounted volume: exit %d, %s" % (r.returncode, r.stderr))
    except TestFailure as e:
        print("FAIL: %s\n%s" % (e, vol.daemon_log()))
        vol.cleanup()
        return 1
    vol.cleanup()
    print("PASS: framefs-admin times counted the frames' requests and their waits; reset zeroed "
          "them; refusals said why")
    return 0


if __name__ == "__main__":
    sys.exit(main())
