#!/usr/bin/env python3
# Proves: frames read back while other writers go on creating frames read
# back whole and exact — a DIT checking a card's frames as the capture runs.
# On RAID5 or RAID6 of any width (from the seed), writers (2-8) each create
# files of seeded sizes from 4 KiB to 2.5 stripes, so that most end in a
# tail that shares a tail stripe with other writers' tails; readers read the files just finished, O_DIRECT (so
# that every read reaches the daemon) and buffered, and every read must give
# the file's exact bytes: no error (a read that met a tail being appended to
# the same stripe used to fail with ESTALE, 1.8 % of reads), no short read.
# Then an editor's project file is rewritten in place while two readers
# read it whole: 4 KiB writes (patches, fsync every 64) and whole stripes
# (O_DIRECT), each block stamped with its writer and generation, and every
# block a reader gets must be one some writer wrote whole.  Then unmount,
# fsck, and every file again after a remount.
#
#   IT_SEED=N              the seed (printed; default from the clock)
#   IT_CAPTURE_FILES=N     files in all, shared among the writers (default 480)
#   IT_CAPTURE_LEVEL=5|6   RAID level (default from the seed)
#   IT_CAPTURE_MEMBERS=N   members (default from the seed: RAID5 x 3..8, RAID6 x 4..10)
#   IT_CAPTURE_REWRITES=N  4 KiB writes to the project file (default 3000; a
#                          whole stripe per 64 of them)
import errno
import mmap
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import TestFailure, Volume, log, seed_from_env, width_from_seed  # noqa: E402

MiB = 1 << 20
CHUNK = 512 * 1024  # mkfs's default


def content(name, size):
    """A file's bytes, from its name: any misplaced block shows."""
    unit = (name.encode() + b"|") * (4096 // (len(name) + 1) + 1)
    return (unit * (size // len(unit) + 1))[:size]


class Capture:
    def __init__(self, vol, seed, writers, per_writer, stripe):
        self.vol = vol
        self.rng = random.Random(seed)
        self.writers = writers
        self.per_writer = per_writer
        self.stripe = stripe
        self.done = []          # (path, size) of finished files
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)  # a file finished, or a writer
        self.writing = writers
        self.errors = []
        self.reads = 0
        self.sizes = [[self.size() for _ in range(per_writer)] for _ in range(writers)]

    def size(self):
        r = self.rng.random()
        if r < 0.6:  # sidecars and small frames: tails only
            return self.rng.randint(1, 64) * 4096 - self.rng.randint(0, 4095)
        return self.rng.randint(4096, self.stripe * 5 // 2)

    def fail(self, msg):
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(msg)

    def writer(self, k):
        try:
            for i, size in enumerate(self.sizes[k]):
                path = os.path.join(self.vol.mnt, "w%d" % k, "frame%05d.dpx" % i)
                fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
                try:
                    data = content(path, size)
                    if os.write(fd, data) != size:
                        self.fail("%s: short write" % path)
                finally:
                    os.close(fd)
                with self.lock:
                    self.done.append((path, size))
                    self.cond.notify_all()
        except OSError as e:
            self.fail("writer %d: %s" % (k, e))
        finally:
            with self.lock:
                self.writing -= 1
                self.cond.notify_all()

    def read_one(self, path, size, direct, buf):
        flags = os.O_RDONLY | (os.O_DIRECT if direct else 0)
        try:
            fd = os.open(path, flags)
            try:
                if direct:
                    got = os.preadv(fd, [buf], 0)
                    data = buf[:got]
                else:
                    data = os.read(fd, size + 1)
                    got = len(data)
            finally:
                os.close(fd)
        except OSError as e:
            self.fail("%s (%s): %s" % (path, "O_DIRECT" if direct else "buffered",
                                       errno.errorcode.get(e.errno, e.errno)))
            return
        if got != size:
            self.fail("%s: read %d bytes of %d" % (path, got, size))
        elif data != content(path, size):
            self.fail("%s: bytes differ" % path)
        with self.lock:
            self.reads += 1

    def reader(self, j):
        rng = random.Random(j)
        buf = mmap.mmap(-1, self.stripe * 3)  # page-aligned, for O_DIRECT
        while True:
            with self.lock:
                # ends: every writer notifies once it finishes a file and once it stops
                while self.writing and not self.done:
                    self.cond.wait()
                if not self.writing:
                    return
                # the newest files: their tails are the ones still being added to
                pick = self.done[-1 - rng.randrange(min(len(self.done), 6))]
            self.read_one(pick[0], pick[1], rng.random() < 0.8, buf)

    def run(self):
        for k in range(self.writers):
            os.mkdir(os.path.join(self.vol.mnt, "w%d" % k))
        threads = [threading.Thread(target=self.writer, args=(k,)) for k in range(self.writers)]
        threads += [threading.Thread(target=self.reader, args=(j,)) for j in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.errors:
            raise TestFailure("%d reads failed during the capture, first: %s"
                              % (len(self.errors), "; ".join(self.errors[:5])))
        if self.reads < self.writers * self.per_writer // 4:
            raise TestFailure("only %d reads during the capture of %d files"
                              % (self.reads, self.writers * self.per_writer))

    def check_all(self, when):
        buf = mmap.mmap(-1, self.stripe * 3)
        for path, size in self.done:
            self.read_one(path, size, True, buf)
        if self.errors:
            raise TestFailure("%s: %s" % (when, "; ".join(self.errors[:5])))


def stamped(gen, b):
    """Block b of the project file as generation gen writes it."""
    return (b"%010d:%08d|" % (gen, b) * 205)[:4096]


class Rewrite:
    """A project file of `stripes` stripes rewritten in place while it is read."""

    def __init__(self, vol, seed, stripe, stripes, writes):
        self.path = os.path.join(vol.mnt, "project.db")
        self.rng = random.Random(seed)
        self.stripe = stripe
        self.nblocks = stripe * stripes // 4096
        self.writes = writes
        self.lock = threading.Lock()
        self.writing = 2
        self.errors = []
        self.reads = 0

    def fail(self, msg):
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(msg)

    def patches(self):
        buf = mmap.mmap(-1, 4096)
        fd = os.open(self.path, os.O_WRONLY | os.O_DIRECT)
        try:
            for i in range(self.writes):
                b = self.rng.randrange(self.nblocks)
                buf[:] = stamped(1000000 + i, b)
                os.pwritev(fd, [buf], b * 4096)
                if i % 64 == 63:
                    os.fsync(fd)
        finally:
            os.close(fd)

    def stripes(self):
        per = self.stripe // 4096
        buf = mmap.mmap(-1, self.stripe)
        fd = os.open(self.path, os.O_WRONLY | os.O_DIRECT)
        try:
            for i in range(self.writes // 64):
                s = i % (self.nblocks // per)
                buf[:] = b"".join(stamped(2000000 + i, s * per + j) for j in range(per))
                os.pwritev(fd, [buf], s * self.stripe)
        finally:
            os.close(fd)

    def writer(self, fn):
        try:
            fn()
        except OSError as e:
            self.fail("%s: %s" % (fn.__name__, e))
        finally:
            with self.lock:
                self.writing -= 1

    def check(self, buf, when):
        """Every block of the file is one a writer wrote whole."""
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        try:
            got = os.preadv(fd, [buf], 0)
        except OSError as e:
            self.fail("%s: %s" % (when, errno.errorcode.get(e.errno, e.errno)))
            return
        finally:
            os.close(fd)
        if got != self.nblocks * 4096:
            self.fail("%s: read %d bytes of %d" % (when, got, self.nblocks * 4096))
            return
        for b in range(self.nblocks):
            blk = bytes(buf[b * 4096:(b + 1) * 4096])
            try:
                gen = int(blk[:10])
            except ValueError:
                gen = -1
            if gen < 0 or blk != stamped(gen, b):
                self.fail("%s: block %d is no block a writer wrote" % (when, b))
                return
        with self.lock:
            self.reads += 1

    def reader(self):
        buf = mmap.mmap(-1, self.nblocks * 4096)
        while True:
            with self.lock:
                if not self.writing:
                    return
            self.check(buf, "a read during the rewrites")

    def run(self):
        with open(self.path, "wb") as f:
            f.write(b"".join(stamped(0, b) for b in range(self.nblocks)))
        threads = [threading.Thread(target=self.writer, args=(fn,)) for fn in (self.patches, self.stripes)]
        threads += [threading.Thread(target=self.reader) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if self.errors:
            raise TestFailure("%d reads of the project file failed, first: %s"
                              % (len(self.errors), "; ".join(self.errors[:5])))
        if self.reads < 4:
            raise TestFailure("only %d whole reads during the rewrites" % self.reads)

    def check_all(self, when):
        self.check(mmap.mmap(-1, self.nblocks * 4096), when)
        if self.errors:
            raise TestFailure("; ".join(self.errors[:5]))


def main():
    seed = seed_from_env()
    rng = random.Random(seed)
    level = int(os.environ.get("IT_CAPTURE_LEVEL", str(5 + seed % 2)))
    members = width_from_seed(level, seed, "IT_CAPTURE_MEMBERS")
    ndata = members - (level - 4)
    writers = rng.randint(2, 8)
    per_writer = int(os.environ.get("IT_CAPTURE_FILES", "480")) // writers
    stripe = ndata * CHUNK
    log("read-during-capture: seed %d (IT_SEED=%d to repeat), RAID%d x %d, %d writers x %d files"
        % (seed, seed, level, members, writers, per_writer))
    # per member: files average 1.25 stripes at most, with half again for room
    need = writers * per_writer * stripe * 15 // 8 // ndata
    vol = Volume(level, members, max(256 * MiB, need // MiB * MiB))
    t0 = time.monotonic()
    try:
        vol.mount()
        c = Capture(vol, seed, writers, per_writer, stripe)
        c.run()
        r = Rewrite(vol, seed, stripe, 6, int(os.environ.get("IT_CAPTURE_REWRITES", "3000")))
        r.run()
        vol.unmount()
        vol.check_fsck()
        vol.mount()
        c.check_all("after a remount")
        r.check_all("the project file after a remount")
        vol.unmount()
    except TestFailure as e:
        log("FAIL (seed %d): %s" % (seed, e))
        log("daemon log:\n" + vol.daemon_log())
        return 1
    finally:
        vol.cleanup()
    log("PASS: seed %d, %d files, %d reads during the capture, %d whole reads of the project "
        "file during its rewrites, %.1f s" % (seed, len(c.done), c.reads, r.reads, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
