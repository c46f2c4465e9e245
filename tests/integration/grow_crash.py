#!/usr/bin/env python3
# Proves: a grow stopped anywhere ends, every file intact.  Each iteration,
# from the same written volume, is one of three kinds, chosen by the seed:
#   a. `framefs-admin grow MEMBERS NEW` (offline) killed with SIGKILL at a
#      random point (while the filesystem's records are made, between the
#      array's superblocks, in the restripe); the same command, given
#      again, grows to the end; fsck.framefs -n -c then finds nothing;
#   b. the daemon killed with SIGKILL during the background restripe of a
#      grow given with --no-restripe, after a random number of rows moved
#      (`framefs-admin set rebuild_min/max` slows it so the kill lands
#      mid-way; until then 20 ms of latency on the added member's writes,
#      FRAMEFS_FAULT, holds it back); the next mount's restripe goes on to the end
#      (`framefs-admin grow --wait MOUNTPOINT`: done);
#   c. as b, the kill also a power cut (crash_kill9.py --powerloss's undo
#      log: a random half of the member writes no flush covered rolled back).
# During b and c a reader reads every file with O_DIRECT (each read reaches
# the daemon) in the killed mount and in the next, while the restripe moves
# them: every read that returns is exactly what was written.  Beside it in
# the killed mount a writer writes 4 KiB pieces, each fsync'd, into the
# project file and the last three frames (the last in inode order: mostly
# not moved yet, so its first write to each moves that file, in the
# daemon's request: fs/grow/restripe.c ffs_grow_move_now); after the
# remount each of them holds every piece whose fsync returned, and the one
# in flight at the kill whole or not at all.  The reader reads the others.  Every
# iteration ends mounted with every file's sha256 as written and df at the
# new width, and fsck.framefs -n -c clean.
# RAID5 x 3 + 1 (IT_GROW_LEVEL=6: RAID6 x 4 + 1), and in every other
# iteration a second grow: the volume grown once to its end beforehand, the
# stopped grow adds a fifth member (its records go below the first grow's,
# which it retires: fs/grow/grow.c).  A failure names the seed and the
# iteration, and IT_GROW_CRASH_ONLY replays that one iteration.
#   IT_GROW_CRASH_ITERS=N   iterations (default 20), the kinds in equal parts
#   IT_GROW_CRASH_KINDS=abc the kinds to draw from
#   IT_GROW_CRASH_ONLY=N    only iteration N (same kind and kill point)
#   IT_SEED=N               the kinds and kill points (printed)
import errno
import hashlib
import json
import mmap
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import MiB, check_files, write_files  # noqa: E402
from itlib import TestFailure, Volume, log, seed_from_env  # noqa: E402
import crash_kill9  # noqa: E402  (its power cut)

ADMIN = os.environ.get("ADMIN")
MEMBER = 96 * MiB
# The volume holds 21 MB: small caches make the two mounts of an iteration
# several times faster to start.
MOUNT_OPTS = ("write_buffer_mb=32", "read_cache_mb=16", "patch_cache_mb=16")
# The restripe's rate while the kill is waited for: the 21 MB take ~2.6 s,
# over which its moves commit twice (each second).
KILL_RATE = "8M"
KILL_BPS = 8 * MiB


def admin(*args, timeout=120):
    return subprocess.run([ADMIN, *args], capture_output=True, text=True, timeout=timeout)


def df_bytes(mnt):
    st = os.statvfs(mnt)
    return st.f_blocks * st.f_frsize


def mounted_within(mnt, secs):
    """Is mnt a mount point within secs?  The reader and the writer start
    beside the daemon and work from its mount on (polled every 5 ms)."""
    t0 = time.monotonic()
    while not os.path.ismount(mnt):
        if time.monotonic() - t0 > secs:
            return False
        time.sleep(0.005)
    return True


def reader_main(mnt, sums_path, log_path):
    """Read every file, again and again, with O_DIRECT until killed; one
    line per read: monotonic time, ok / bad (whole, other bytes) / err."""
    with open(sums_path) as f:
        sums = json.load(f)
    buf = mmap.mmap(-1, MiB)
    if not mounted_within(mnt, 60):
        return
    with open(log_path, "w", buffering=1) as lg:
        while True:
            for name, want in sorted(sums.items()):
                h, got, what = hashlib.sha256(), 0, "ok"
                try:
                    fd = os.open(os.path.join(mnt, name), os.O_RDONLY | os.O_DIRECT)
                    try:
                        size = os.fstat(fd).st_size
                        while got < size:
                            n = os.preadv(fd, [buf], got)
                            if n <= 0:
                                break
                            h.update(buf[:n])
                            got += n
                    finally:
                        os.close(fd)
                    if got != size:
                        what = "err short read: %d of %d bytes" % (got, size)
                    elif h.hexdigest() != want:
                        what = "bad"
                except OSError as e:
                    what = "err " + (errno.errorcode.get(e.errno, str(e.errno)))
                    time.sleep(0.01)
                lg.write("%.6f %s %s\n" % (time.monotonic(), name, what))


# The files the writer changes (the last in inode order: the restripe
# reaches them last); the reader reads the others.
WRITTEN = ("project.db", "frame007.dpx", "frame006.dpx", "frame005.dpx")
PIECE = 4096


def writer_main(mnt, log_path, seed):
    """4 KiB pieces into WRITTEN, round and round, each pwrite then fsync'd,
    until killed or the mount fails; each logged "begin NAME OFFSET HEX"
    before and "done" once fsync returned."""
    rng = random.Random(int(seed))
    if not mounted_within(mnt, 60):
        return
    with open(log_path, "w", buffering=1) as lg:
        while True:
            for name in WRITTEN:
                path = os.path.join(mnt, name)
                try:
                    fd = os.open(path, os.O_WRONLY)
                    try:
                        at = rng.randrange(os.fstat(fd).st_size // PIECE) * PIECE
                        piece = rng.randbytes(PIECE)
                        lg.write("begin %s %d %s\n" % (name, at, piece.hex()))
                        os.pwrite(fd, piece, at)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                except OSError as e:
                    lg.write("err %s\n" % errno.errorcode.get(e.errno, str(e.errno)))
                    return
                lg.write("done\n")
                time.sleep(0.02)  # pacing: about 40 pieces a second, not a wait for anything


def written_want(log_path, originals):
    """From the writer's log: per file it wrote to, the contents it may hold
    now (the pieces whose fsync returned laid over the original; with the
    piece in flight at the kill, both with it and without it); and the
    count of pieces done."""
    want = {name: bytearray(data) for name, data in originals.items()}
    pending, done = None, 0
    with open(log_path) as f:
        lines = f.read().split("\n")[:-1]  # whole lines only
    for line in lines:
        w = line.split(" ")
        if w[0] == "begin":
            pending = (w[1], int(w[2]), bytes.fromhex(w[3]))
            if len(pending[2]) != PIECE:  # a line cut by the kill: not begun
                pending = None
        elif w[0] == "done" and pending:
            name, at, piece = pending
            want[name][at:at + PIECE] = piece
            pending, done = None, done + 1
    sums = {name: {hashlib.sha256(bytes(b)).hexdigest()} for name, b in want.items()}
    if pending:
        name, at, piece = pending
        b = bytearray(want[name])
        b[at:at + PIECE] = piece
        sums[name].add(hashlib.sha256(bytes(b)).hexdigest())
    return sums, done


class Writer:
    """The writer (writer_main) in a process of its own."""

    def __init__(self, vol, seed, tag):
        self.path = os.path.join(vol.tmp, "writer.%s.log" % tag)
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", vol.mnt,
                                   self.path, str(seed)])

    def kill(self):
        self.p.kill()
        self.p.wait()


class Reader:
    """The reader (reader_main) in a process of its own."""

    def __init__(self, vol, sums_path, tag):
        self.path = os.path.join(vol.tmp, "reader.%s.log" % tag)
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--reader", vol.mnt,
                                   sums_path, self.path])

    def kill(self):
        self.p.kill()
        self.p.wait()

    def stop(self, killed_at=None):
        """Stop it; the number of whole reads.  A read with other bytes is
        a failure; so is an error before killed_at (the daemon's death)."""
        self.kill()
        ok = 0
        try:
            with open(self.path) as f:
                lines = f.read().split("\n")[:-1]  # whole lines only
        except OSError:
            lines = []
        for line in lines:
            t, name, what = line.split(" ", 2)
            t = float(t)
            if what == "ok":
                ok += 1
            elif what == "bad":
                raise TestFailure("the reader read %s whole, and other bytes than were written"
                                  % name)
            elif killed_at is None or t < killed_at:
                raise TestFailure("the reader could not read %s while the daemon ran: %s"
                                  % (name, what))
        return ok


def grow_state(mnt, connect_s=0):
    """The daemon's grow status; connect_s: for that long, a control
    socket that refuses (a new daemon's, not bound yet: the killed one's
    file is still there) is asked again."""
    t0 = time.monotonic()
    while True:
        r = admin("grow", "--json", mnt, timeout=30)
        if r.returncode == 0 and json.loads(r.stdout).get("ok"):
            return json.loads(r.stdout)["grow"]
        if time.monotonic() - t0 > connect_s or "cannot reach the daemon" not in r.stderr:
            raise TestFailure("grow --json %s: exit %d: %s%s"
                              % (mnt, r.returncode, r.stdout, r.stderr))
        time.sleep(0.02)


class Run:
    def __init__(self, seed, level, before):
        self.seed = seed
        self.level = level
        self.before = before  # grows ended before the one stopped: 0 or 1
        self.n = 3 if level == 5 else 4
        self.vol = Volume(level, self.n, MEMBER, mkfs_args=("-c", "64K"))
        self.old = list(self.vol.members)
        self.new = self.old[0] + ".new"
        self.sums_path = os.path.join(self.vol.tmp, "sums.json")
        self.cut = None
        self.stats = {"a": 0, "b": 0, "c": 0, "killed_a": 0, "reads": 0, "unflushed": 0, "lost": 0,
                      "pieces": 0, "moved_for_writes": 0}

    def use(self, members):
        self.vol.members = list(members)
        self.vol.spec = ",".join(members)

    def restore(self, grown):
        if grown:
            for m, s in zip(self.old + [self.new], self.saved_grown):
                shutil.copyfile(s, m)
        else:
            for m, s in zip(self.old, self.saved):
                shutil.copyfile(s, m)
            with open(self.new, "wb") as f:
                f.truncate(MEMBER)
        self.use(self.old + [self.new])

    def setup(self):
        """The files written, the volume saved twice: as written, and after
        `grow --no-restripe` (b, c); a whole grow timed for a's kill points."""
        vol = self.vol
        vol.mount(*MOUNT_OPTS)
        self.sums = write_files(vol.mnt, 8, 2 * MiB, 0, 4 * MiB, 4)
        self.originals = {}
        for name in WRITTEN:
            with open(os.path.join(vol.mnt, name), "rb") as f:
                self.originals[name] = f.read()
        nparity = 1 if self.level == 5 else 2
        # a grow keeps the rows and widens each: df goes with the data chunks
        self.df_want = (df_bytes(vol.mnt) * (self.n + self.before + 1 - nparity)
                        // (self.n - nparity))
        st = os.statvfs(vol.mnt)
        self.used = (st.f_blocks - st.f_bfree) * st.f_frsize  # what a restripe moves
        vol.unmount()
        for _ in range(self.before):  # the earlier grow, to its end
            extra = "%s.pre%d" % (self.old[0], len(self.old))
            with open(extra, "wb") as f:
                f.truncate(MEMBER)
            r = admin("grow", ",".join(self.old), extra)
            if r.returncode != 0:
                raise TestFailure("the grow before: exit %d: %s" % (r.returncode, r.stderr))
            self.old.append(extra)
        self.n += self.before
        self.saved = [m + ".saved" for m in self.old]  # written, not grown
        self.saved_grown = [m + ".grown" for m in self.old + [self.new]]  # --no-restripe done
        self.use(self.old)
        with open(self.sums_path, "w") as f:  # the reader's: the files the writer leaves alone
            json.dump({k: v for k, v in self.sums.items() if k not in WRITTEN}, f)
        for m, s in zip(self.old, self.saved):
            shutil.copyfile(m, s)
        self.restore(False)
        r = admin("grow", "--no-restripe", ",".join(self.old), self.new)
        if r.returncode != 0:
            raise TestFailure("grow --no-restripe: exit %d: %s" % (r.returncode, r.stderr))
        for m, s in zip(self.old + [self.new], self.saved_grown):
            shutil.copyfile(m, s)
        self.restore(False)
        t0 = time.monotonic()
        r = admin("grow", ",".join(self.old), self.new)
        self.span = time.monotonic() - t0
        if r.returncode != 0:
            raise TestFailure("grow: exit %d: %s" % (r.returncode, r.stderr))
        self.end(True, "the whole grow")

    def end(self, fsck_first, what, sums=None):
        """Mounted (after fsck.framefs -n -c when fsck_first): every file as
        in sums (as written at set-up), df at the new width; unmounted, fsck
        clean."""
        vol = self.vol
        if fsck_first:
            vol.check_fsck()
        if vol.daemon is None:
            vol.mount(*MOUNT_OPTS)
        check_files(vol.mnt, sums or self.sums, what, TestFailure)
        if df_bytes(vol.mnt) != self.df_want:
            raise TestFailure("df: %d bytes after %s, want %d (the new width's)"
                              % (df_bytes(vol.mnt), what, self.df_want))
        vol.unmount()
        vol.check_fsck()

    def kind_a(self, irng):
        delay = irng.uniform(0, self.span)
        self.restore(False)
        args = ["grow", ",".join(self.old), self.new]
        w = subprocess.Popen([ADMIN, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t0 = time.monotonic()
        while time.monotonic() - t0 < delay and w.poll() is None:
            time.sleep(0.005)  # the kill point, not a wait for an event
        killed = w.poll() is None
        if killed:
            w.kill()
            self.stats["killed_a"] += 1
        w.wait()
        r = admin(*args, timeout=600)  # the same command again: the grow goes on to its end
        if r.returncode != 0:
            raise TestFailure("the grow given again: exit %d: %s" % (r.returncode, r.stderr))
        self.end(True, "the grow given again")
        return "offline grow %s at %.3f s of %.3f" % ("killed" if killed else "ended before its kill",
                                                      delay, self.span)

    def kill_in_restripe(self, irng, power):
        """Mount the grown volume, slow its restripe, kill the daemon (with
        power: and cut the power) after a random number of rows moved."""
        vol = self.vol
        # the kill point: a random time into the throttled move, which takes
        # about used / KILL_BPS (the restripe commits its moves at least
        # each second, fs/grow/restripe.c: a kill lands before the first
        # commit or after some)
        delay = irng.uniform(0, 0.95 * self.used / KILL_BPS)
        if power:
            undo = os.path.join(vol.tmp, "undo")
            os.makedirs(undo, exist_ok=True)
            os.environ["FRAMEFS_UNDO_DIR"] = undo  # this daemon logs what it overwrites
            if self.cut is None:
                self.cut = crash_kill9.Crash(vol, self.seed, 1, undo_dir=undo)
            self.cut.rng = random.Random(irng.getrandbits(64))  # which writes the cut loses
        rd = Reader(vol, self.sums_path, "%d.killed" % (vol.nmounts + 1))
        wr = Writer(vol, irng.getrandbits(32), "%d.killed" % (vol.nmounts + 1))
        # latency on the added member's writes from the mount on: the
        # restripe (the only writer of DATA rows there) crawls until the
        # rates are set, where unheld it moved the 21 MB before the set
        os.environ["FRAMEFS_FAULT"] = "%s@op=w,lat_us=20000" % os.path.basename(self.new)
        try:
            try:
                vol.mount(*MOUNT_OPTS)
            finally:
                os.environ.pop("FRAMEFS_UNDO_DIR", None)
                os.environ.pop("FRAMEFS_FAULT", None)
            g = grow_state(vol.mnt, 10)
            r = admin("set", vol.mnt, "rebuild_min=" + KILL_RATE, "rebuild_max=" + KILL_RATE)
            if r.returncode != 0:
                raise TestFailure("set rebuild rates: exit %d: %s" % (r.returncode, r.stderr))
            r = admin("fault", vol.mnt, "clear")
            if r.returncode != 0:
                raise TestFailure("fault clear: exit %d: %s" % (r.returncode, r.stderr))
            t0 = time.monotonic()
            while not g["rows_before"]:  # the thread starts just after the control socket
                if time.monotonic() - t0 > 10:
                    raise TestFailure("no restripe under way 10 s after the mount: %s" % g)
                time.sleep(0.01)
                g = grow_state(vol.mnt)
            before = g["rows_before"]
            time.sleep(delay)  # the kill point, not a wait for an event
            g = grow_state(vol.mnt)
            killed_at = time.monotonic()
            vol.kill9()
        except BaseException:
            rd.kill()
            wr.kill()
            raise
        wr.kill()
        self.writer_log = wr.path
        reads = rd.stop(killed_at)
        where = "%.2f s: %d of %d rows moved and committed, %.1f MB copied%s" % (
            delay, before - g["rows_left"], before, g["bytes_moved"] / 1e6,
            "" if g["active"] else ", the restripe ended")
        if power:
            u, lost = self.cut.stats["unflushed"], self.cut.stats["lost"]
            self.cut.power_cut()
            u, lost = self.cut.stats["unflushed"] - u, self.cut.stats["lost"] - lost
            self.stats["unflushed"] += u
            self.stats["lost"] += lost
            where += "; the power cut lost %d of %d unflushed member writes" % (lost, u)
        return where, reads

    def kind_bc(self, irng, power):
        vol = self.vol
        self.restore(True)
        where, reads = self.kill_in_restripe(irng, power)
        killed_log = vol.log_path
        rd = Reader(vol, self.sums_path, "%d.after" % (vol.nmounts + 1))
        try:
            vol.mount(*MOUNT_OPTS)
            sums = dict(self.sums)
            mays, pieces = written_want(self.writer_log, self.originals)
            for name, may in sorted(mays.items()):  # before the restripe goes on
                with open(os.path.join(vol.mnt, name), "rb") as f:
                    got = hashlib.sha256(f.read()).hexdigest()
                if got not in may:
                    raise TestFailure("%s after the remount: not the pieces written to it "
                                      "(fsync'd, and the one in flight whole or not at all)" % name)
                sums[name] = got
            grow_state(vol.mnt, 10)
            t1 = time.monotonic()
            r = admin("grow", "--wait", "--json", vol.mnt, timeout=300)
            wait_s = time.monotonic() - t1
        except BaseException:
            rd.kill()
            raise
        reads_after = rd.stop()
        self.stats["reads"] += reads + reads_after
        if r.returncode != 0:
            raise TestFailure("grow --wait after the remount: exit %d: %s%s"
                              % (r.returncode, r.stdout, r.stderr))
        state = json.loads(r.stdout)["grow"]["state"]
        if state == "none":  # nothing was left to move: the killed daemon ended it
            with open(killed_log) as f:
                if "grow finished" not in f.read() + vol.daemon_log(10000):
                    raise TestFailure("after the remount no grow is under way, and none finished")
        elif state != "done":
            raise TestFailure("grow --wait after the remount: state %s, not done" % state)
        self.end(False, "the remount's restripe", sums)
        moved = sum(1 for line in open(killed_log)
                    if "moved to the new width ahead of a change" in line)
        self.stats["pieces"] += pieces
        self.stats["moved_for_writes"] += moved
        return ("daemon killed%s at %s; the remount's restripe %s in %.2f s; %d + %d whole "
                "O_DIRECT reads as written; %d fsync'd 4 KiB writes kept (%d files moved ahead "
                "of a write)" % (" (power cut)" if power else "", where,
                                 "ended" if state == "done" else "had nothing left",
                                 wait_s, reads, reads_after, pieces, moved))

    def iteration(self, it, kind):
        irng = random.Random(self.seed * 1000 + it)
        t0 = time.monotonic()
        try:
            if kind == "a":
                what = self.kind_a(irng)
            else:
                what = self.kind_bc(irng, kind == "c")
        except TestFailure as e:
            raise TestFailure("iteration %d (IT_SEED=%d IT_GROW_CRASH_ONLY=%d to replay), kind %s: %s"
                              % (it, self.seed, it, kind, e)) from None
        finally:
            if self.vol.daemon is not None and self.vol.daemon.poll() is not None:
                self.vol.daemon = None
        self.stats[kind] += 1
        log("iteration %d (%s, %s grow, %d + 1 members): %s; %d files intact, df at the new "
            "width, fsck clean (%.1f s)" % (it, kind, "a second" if self.before else "a first",
                                             self.n, what, len(self.sums), time.monotonic() - t0))

    def cleanup(self):
        self.use(self.old + [self.new])
        for p in getattr(self, "saved", []) + getattr(self, "saved_grown", []):
            try:
                os.unlink(p)
            except OSError:
                pass
        self.vol.cleanup()


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--reader":
        reader_main(*sys.argv[2:])
        return 0
    if len(sys.argv) == 5 and sys.argv[1] == "--writer":
        writer_main(*sys.argv[2:])
        return 0
    level = int(os.environ.get("IT_GROW_LEVEL", "5"))
    iters = int(os.environ.get("IT_GROW_CRASH_ITERS", "20"))
    kinds = os.environ.get("IT_GROW_CRASH_KINDS", "abc")
    only = os.environ.get("IT_GROW_CRASH_ONLY")
    seed = seed_from_env()
    rng = random.Random(seed)
    order = (list(kinds) * iters)[:iters]  # in equal parts, in the seed's order
    rng.shuffle(order)
    log("grow-crash: seed %d (IT_SEED=%d to repeat), %d iterations: %s"
        % (seed, seed, iters, "".join(order)))
    t0 = time.monotonic()
    runs = [Run(seed, level, 0), Run(seed, level, 1)]  # odd iterations: a first grow
    run = runs[0]
    try:
        for run in runs:
            run.setup()
            log("set-up: 9 files written%s, a whole grow %.2f s (offline kills spread over it)"
                % (", grown once" if run.before else "", run.span))
        for it in range(1, iters + 1):
            if only is None or int(only) == it:
                run = runs[(it - 1) % 2]
                run.iteration(it, order[it - 1])
    except TestFailure as e:
        print("FAIL (seed %d): %s\ndaemon log:\n%s" % (seed, e, run.vol.daemon_log()))
        return 1
    finally:
        for r in runs:
            r.cleanup()
    s = {k: runs[0].stats[k] + runs[1].stats[k] for k in runs[0].stats}
    if s["b"] + s["c"] and not (s["pieces"] and s["moved_for_writes"]):
        print("FAIL (seed %d): the writer beside the killed restripes kept %d pieces and moved "
              "%d files ahead of a write: it proved nothing" % (seed, s["pieces"],
                                                                s["moved_for_writes"]))
        return 1
    print("PASS: seed %d: %d grows stopped at random points, every other one a second grow "
          "(%d offline grows killed, %d daemons "
          "killed in the restripe, %d of them power cuts losing %d of %d unflushed member writes), "
          "%d O_DIRECT reads meanwhile all as written, %d fsync'd 4 KiB writes all kept (%d "
          "files moved ahead of a write); each went on to the end: every file's sha256 as "
          "written, df at the new width, fsck clean; %.1f s"
          % (seed, s["a"] + s["b"] + s["c"], s["killed_a"], s["b"] + s["c"], s["c"], s["lost"],
             s["unflushed"], s["reads"], s["pieces"], s["moved_for_writes"],
             time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
