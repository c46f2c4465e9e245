#!/usr/bin/env python3
# Proves: a grow's restripe runs in the daemon while the volume works
# (fs/grow/restripe.c).  `framefs-admin grow --no-restripe MEMBERS NEW...`
# grows the array (the records and superblocks only); the next mount moves
# every file to the new width in the background.  For RAID5 x 3 + 1 and
# RAID6 x 5 + 2 on RAM members, with the restripe slowed down
# (rebuild_max, which it moves at) so that all of this lands mid-way:
#   1. status says restriping, with the capacity before and after, and the
#      rows left drop; event_cmd gets grow-started;
#   2. read faults on one member's data area while files move (injected:
#      2 reads fail with EIO, 2 return flipped bits): each is healed from parity before
#      the data moves — counted on the member, every file right at the end;
#      while files move: readers read every file again and again, each read
#      equal to what was written (a file moved under a reader is read again
#      in its new geometry); a 4 KiB write (fsync'd) into the project file
#      and into a frame, both not moved yet, moves each first (the daemon
#      says so) and lands at the new width; a file not moved yet truncated to 0
#      and written again, another unlinked, new files written: all as asked,
#      and the move of the first one drops its copies;
#   3. an unmount mid-way stops the restripe between two stripes; a
#      read-only mount then moves nothing, says the grow is stopped and
#      reads every file; the next read-write mount goes on from there;
#   4. `framefs-admin grow --wait MOUNTPOINT` ends with state done and every
#      row at the new width; event_cmd gets grow-finished; df shows the new
#      width's capacity; every file's sha256 is right;
#   5. fsck.framefs -n -c finds nothing to repair.
# And a grow taken on with no row to move (an empty volume, grow
# --no-restripe; as a stop between the last move and the grow's end
# leaves one): the mount ends it, grow --wait says done, df is the new
# width's.
# IT_GROW_CASES=LxN+K,... runs only those cases (the ASan+UBSan step: 5x3+1).
import errno
import hashlib
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import (MiB, admin, at_width, cases_from_env, check_files, grow_status,  # noqa: E402
                     wait_for, write_files)
from itlib import TestFailure, Volume, log  # noqa: E402

SLOW = 16 * MiB  # the restripe's rate while the test works beside it


def set_rate(vol, bps):
    r = admin("set", vol.mnt, "rebuild_min=%d" % bps, "rebuild_max=%d" % bps)
    if r.returncode != 0:
        raise TestFailure("set rates: %s" % r.stderr)


def metrics(mnt):
    """framefs-admin metrics' framefs_grow_ samples, name -> value."""
    r = admin("metrics", mnt)
    if r.returncode != 0:
        raise TestFailure("metrics: exit %d: %s" % (r.returncode, r.stderr))
    return {line.split("{")[0].split()[0]: float(line.split()[-1])
            for line in r.stdout.splitlines() if line.startswith("framefs_grow_")}


def events_seen(path):
    try:
        with open(path) as f:
            return [line.split()[0] for line in f if line.strip()]
    except OSError:
        return []


class Readers:
    """Threads reading every file in sums again and again, each read whole
    and checked; a file gone (unlinked) or rewritten is skipped."""

    def __init__(self, mnt, sums, nthreads=2):
        self.mnt, self.sums, self.stop, self.errors, self.reads = mnt, dict(sums), False, [], 0
        # daemon threads: a test that fails mid-way must not wait on them
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(nthreads)]
        for t in self.threads:
            t.start()

    def run(self, i):
        names = sorted(self.sums)
        while not self.stop:
            for name in names[i::2] + names[:i]:
                if self.stop:
                    return
                want = self.sums.get(name)
                try:
                    with open(os.path.join(self.mnt, name), "rb") as f:
                        got = hashlib.sha256(f.read()).hexdigest()
                except FileNotFoundError:
                    continue
                except OSError as e:
                    if not self.stop:
                        self.errors.append("%s: %s while the restripe ran" % (name, e))
                    return
                if want is not None and got != want and self.sums.get(name) == want:
                    self.errors.append("%s read back different while the restripe ran" % name)
                self.reads += 1

    def forget(self, name):
        self.sums.pop(name, None)

    def end(self):
        self.stop = True
        for t in self.threads:
            t.join()
        if self.errors:
            raise TestFailure("; ".join(self.errors[:3]))
        return self.reads


def one_case(level, n, k):
    vol = Volume(level, n, 256 * MiB, mkfs_args=("-c", "64K"))
    hook = os.path.join(vol.tmp, "hook.sh")
    events = os.path.join(vol.tmp, "events")
    with open(hook, "w") as f:
        f.write("#!/bin/sh\necho \"$1 $FRAMEFS_DETAIL\" >> %s\n" % events)
    os.chmod(hook, 0o755)
    try:
        vol.mount()
        sums = write_files(vol.mnt, 24, 3 * MiB, 12, 8 * MiB, 8)
        size_before = os.statvfs(vol.mnt).f_blocks * os.statvfs(vol.mnt).f_frsize
        vol.unmount()
        new = ["%s.n%d" % (vol.members[0], i) for i in range(k)]
        for p in new:
            with open(p, "wb") as f:
                f.truncate(256 * MiB)
        r = admin("grow", "--no-restripe", vol.spec, *new)
        if r.returncode != 0 or "background" not in r.stdout:
            raise TestFailure("grow --no-restripe: exit %d: %s %s"
                              % (r.returncode, r.stdout, r.stderr))
        vol.members += new
        vol.spec = ",".join(vol.members)

        # 1. the mount takes it on and moves in the background (slowed)
        vol.mount("event_cmd=" + hook)
        vol.wait_ctl()
        set_rate(vol, SLOW)
        st = grow_status(vol.mnt)
        if st["state"] not in ("restriping", "done") or st["new_members"] != n + k:
            raise TestFailure("status after the mount: %s" % st)
        nparity = 1 if level == 5 else 2
        if st["capacity_after"] * (n - nparity) != st["capacity_before"] * (n + k - nparity):
            raise TestFailure("capacity before/after: %s" % st)
        wait_for("grow-started event", lambda: "grow-started" in events_seen(events))
        mx = metrics(vol.mnt)
        if mx.get("framefs_grow_active") != 1 or not mx.get("framefs_grow_old_rows") or \
                mx.get("framefs_grow_capacity_after_bytes") != st["capacity_after"]:
            raise TestFailure("metrics while restriping: %s" % mx)

        # 2. read faults on one member, then users work beside it
        victim = os.path.basename(vol.members[1])
        st = json.loads(admin("status", "--json", vol.mnt).stdout)
        area = "from=%d,to=%d" % (st["geometry"]["data_offset"], st["geometry"]["data_offset"] +
                                  st["geometry"]["nstripes"] * st["chunk_bytes"])
        r = admin("fault", vol.mnt, "%s@op=r,err=EIO,count=2,%s;%s@op=r,flip=4,after=2,count=2,%s"
                  % (victim, area, victim, area))
        if r.returncode != 0:
            raise TestFailure("fault: %s" % r.stderr)

        seen = {}

        def faults_seen():
            r = admin("status", "--json", vol.mnt)
            seen["m"] = [x for x in json.loads(r.stdout)["members"] if x.get("role") == 1][0]
            m = seen["m"]
            return m if m["read_errors"] >= 2 and m["cksum_errors"] >= 1 and m["healed"] >= 2 \
                else None
        try:
            m = wait_for("the read faults on role 1", faults_seen, 30)
        except TestFailure as e:
            raise TestFailure("%s: role 1 %s; grow %s" % (e, seen.get("m"), grow_status(vol.mnt)))
        if m["state"] != "active":
            raise TestFailure("role 1 after its read faults: %s" % m)
        readers = Readers(vol.mnt, sums)
        wait_for("a file moved", lambda: grow_status(vol.mnt)["files_moved"] >= 2)
        # writes to files not moved yet (the last in inode order; the move
        # slowed further meanwhile): each moves its file first, in the
        # writer's thread, and lands at the new width
        set_rate(vol, 1 * MiB)
        old_s, new_s = st["chunk_bytes"] * (n - nparity), st["chunk_bytes"] * (n + k - nparity)
        still_old, emptied = "frame023.dpx", "frame022.dpx"  # write_files' last frames
        for name in ("project.db", still_old):  # 4 KiB in the middle, fsync'd
            path = os.path.join(vol.mnt, name)
            if at_width(path, new_s):
                raise TestFailure("%s moved before the test wrote to it (the test needs the "
                                  "restripe slower): %s" % (name, grow_status(vol.mnt)))
            readers.forget(name)
            with open(path, "rb") as f:
                data = bytearray(f.read())
            at = len(data) // 2 // 4096 * 4096 + 512
            piece = os.urandom(4096)
            t0 = time.monotonic()
            with open(path, "r+b") as f:
                f.seek(at)
                f.write(piece)
                f.flush()
                os.fsync(f.fileno())
            took = time.monotonic() - t0
            data[at:at + 4096] = piece
            sums[name] = hashlib.sha256(bytes(data)).hexdigest()
            ino = os.stat(path).st_ino
            with open(vol.log_path) as f:
                said = [line for line in f if "inode %d moved to the new width ahead of a "
                        "change" % ino in line]
            if len(said) != 1 or not at_width(path, new_s):
                raise TestFailure("%s (inode %d) written while in the old geometry: not moved "
                                  "first\n%s" % (name, ino, vol.daemon_log(20)))
            log("%s (%d KiB, %d-byte stripes): a 4 KiB write moved it to %d-byte stripes "
                "first: %.2f s" % (name, len(data) >> 10, old_s, new_s, took))
        set_rate(vol, SLOW)
        readers.forget(emptied)
        data = os.urandom(2 * MiB + 777)
        with open(os.path.join(vol.mnt, emptied), "r+b") as f:
            f.truncate(0)
            f.write(data)
        sums[emptied] = hashlib.sha256(data).hexdigest()
        gone = sorted(x for x in sums
                      if x.startswith("frame") and x not in (still_old, emptied))[-2]
        readers.forget(gone)
        os.unlink(os.path.join(vol.mnt, gone))
        del sums[gone]
        for i in range(3):
            data = os.urandom(3 * MiB + 4096 * i)
            with open(os.path.join(vol.mnt, "new%d.dpx" % i), "wb") as f:
                f.write(data)
            sums["new%d.dpx" % i] = hashlib.sha256(data).hexdigest()

        # 3. an unmount mid-way, then on
        st = grow_status(vol.mnt)
        if st["state"] != "restriping":
            raise TestFailure("the restripe ended before the unmount (the test needs it slower): %s"
                              % st)
        reads = readers.end()
        vol.unmount()
        if "grow-finished" in events_seen(events):
            raise TestFailure("grow-finished posted at an unmount mid-way")
        vol.mount("ro")  # read-only: nothing moves; status says it is stopped, files read
        vol.wait_ctl()
        ro = grow_status(vol.mnt)
        if ro["state"] != "stopped" or not ro["rows_left"] or ro["new_members"] != n + k:
            raise TestFailure("a read-only mount's grow status: %s" % ro)
        if admin("grow", "--wait", vol.mnt).returncode == 0:
            raise TestFailure("grow --wait on a read-only mount mid-grow exited 0")
        check_files(vol.mnt, sums, "a read-only mount mid-grow", TestFailure)
        vol.unmount()
        vol.mount("event_cmd=" + hook)
        vol.wait_ctl()
        st2 = grow_status(vol.mnt)
        if st2["state"] == "restriping" and st2["rows_before"] > st["rows_left"] + 1:
            raise TestFailure("the remount started over: %d rows before, %d left at the unmount"
                              % (st2["rows_before"], st["rows_left"]))

        # 4. to the end, unthrottled
        r = admin("grow", "--wait", "--json", vol.mnt)
        st = json.loads(r.stdout)["grow"] if r.stdout else {}
        if r.returncode != 0 or st.get("state") not in ("done", "none") or st.get("rows_left"):
            raise TestFailure("grow --wait: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
        wait_for("grow-finished event", lambda: "grow-finished" in events_seen(events))
        mx = metrics(vol.mnt)
        if mx.get("framefs_grow_active") != 0 or mx.get("framefs_grow_old_rows") != 0 or \
                mx.get("framefs_grow_progress_ratio") != 1:
            raise TestFailure("metrics after the restripe: %s" % mx)
        check_files(vol.mnt, sums, "the restripe", TestFailure)
        size_after = os.statvfs(vol.mnt).f_blocks * os.statvfs(vol.mnt).f_frsize
        want = size_before * (n + k - nparity) // (n - nparity)
        if size_after != want:
            raise TestFailure("df: %d bytes after the grow, want %d" % (size_after, want))
        with open(os.path.join(vol.mnt, still_old), "ab") as f:  # every file writable again
            f.write(b"more")
        vol.unmount()
        vol.check_fsck()
        log("RAID%d x %d + %d: moved in the background beside %d reads, a rewrite, an unlink and "
            "new files; an unmount mid-way; df %d -> %d MiB; events %s"
            % (level, n, k, reads, size_before >> 20, size_after >> 20,
               " ".join(events_seen(events))))
    finally:
        vol.cleanup()


def nothing_to_move():
    vol = Volume(5, 3, 64 * MiB, mkfs_args=("-c", "64K"))
    try:
        new = vol.members[0] + ".n0"
        with open(new, "wb") as f:
            f.truncate(64 * MiB)
        r = admin("grow", "--no-restripe", vol.spec, new)
        if r.returncode != 0:
            raise TestFailure("grow --no-restripe of an empty volume: %s" % r.stderr)
        vol.members.append(new)
        vol.spec = ",".join(vol.members)
        vol.mount()
        vol.wait_ctl()
        r = admin("grow", "--wait", "--json", vol.mnt)
        st = json.loads(r.stdout)["grow"] if r.stdout else {}
        if r.returncode != 0 or st.get("state") != "done":
            raise TestFailure("a grow with nothing to move: exit %d: %s %s"
                              % (r.returncode, r.stdout, r.stderr))
        vol.unmount()
        vol.check_fsck()
        log("an empty volume grown: the mount ended the grow (state done), fsck clean")
    finally:
        vol.cleanup()


def main():
    cases = cases_from_env(((5, 3, 1), (6, 5, 2)))
    try:
        for level, n, k in cases:
            one_case(level, n, k)
        nothing_to_move()
    except TestFailure as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS: a grow's restripe ran in the daemon beside readers and writers (%s), went on "
          "after an unmount, ended done: files, df, events and fsck right"
          % ", ".join("RAID%d x %d + %d" % c for c in cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
