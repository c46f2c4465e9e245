#!/usr/bin/env python3
# Proves: under a seeded random mix of operations — create, write at random
# offsets and sizes (bytes to several stripes, sparse), read (buffered and
# O_DIRECT, which always reaches the daemon), small in-place overwrites of
# large files (an editor's project database: 4 to 64 writes of 1 B to 64 KiB
# into a file of 3 or more stripes, mostly 4 KiB and 64 KiB at 4 KiB-aligned
# offsets, some unaligned or across a 4 KiB or a stripe boundary, some
# rewriting a block written just before, with fsync or fdatasync between
# them and the ranges read back at once, buffered and O_DIRECT), truncate,
# fallocate, punched holes, zeroed ranges, rename
# (plain, over a file, RENAME_NOREPLACE, RENAME_EXCHANGE), link, unlink
# (also of open files), mkdir, rmdir, fsync, fdatasync, syncfs, cache drops
# and remounts — every read returns exactly what an in-memory model of every
# file says, every stat and listing agrees with it, after each remount the
# whole tree is identical and the free space is what it was, and at the end
# deleting everything gives back all the space.
#
# With --threads N, N threads each run their own model in their own
# directory at the same time (the daemon sees concurrent creates, renames,
# writes and truncates), and all of them pause together for each remount.
#
#   IT_SEED=N          the seed (printed; default from the clock)
#   IT_RANDOM_OPS=N    operations, in all (default 4000)
#   IT_RANDOM_LEVEL=5|6  RAID level (default: from the seed)
#   IT_RANDOM_MEMBERS=N  members, 3..8 on RAID5, 4..10 on RAID6 (default: from
#                      the seed, so that CI runs cover every width in turn)
import ctypes
import errno
import mmap
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter, deque

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import (TestFailure, Volume, drop_caches, log, seed_from_env, small_write_range,  # noqa: E402
                   width_from_seed)

MiB = 1 << 20
MAX_FILE = 12 * MiB
MAX_FILES = 48
MAX_MODEL_BYTES = 96 * MiB
MAX_OPEN = 8
RENAME_NOREPLACE, RENAME_EXCHANGE = 1, 2
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2
FALLOC_FL_ZERO_RANGE = 16

libc = ctypes.CDLL(None, use_errno=True)
libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
AT_FDCWD = -100


def renameat2(a, b, flags):
    if libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


class Model:
    def __init__(self):
        self.data = {}      # file id -> bytearray
        self.paths = {}     # path (relative) -> file id
        self.dirs = {""}    # relative directory paths
        self.fds = {}       # open fd -> file id
        self.next_id = 1

    def links(self, fid):
        return [p for p, i in self.paths.items() if i == fid]

    def alive(self, fid):
        return fid in self.paths.values() or fid in self.fds.values()

    def gc(self, fid):
        if not self.alive(fid):
            del self.data[fid]

    def total_bytes(self):
        return sum(len(d) for d in self.data.values())

    def children(self, d):
        pre = d + "/" if d else ""
        names = set()
        for p in list(self.paths) + [x for x in self.dirs if x]:
            if p.startswith(pre) and "/" not in p[len(pre):]:
                names.add(p[len(pre):])
        return names


class RandomOps:
    def __init__(self, vol, seed, nops, root="", share=1):
        self.vol = vol
        self.root = root
        self.max_files = MAX_FILES // share        # the volume is shared by `share` models
        self.max_model_bytes = MAX_MODEL_BYTES // share
        self.rng = random.Random(seed)
        self.seed = seed
        self.nops = nops
        self.m = Model()
        self.counts = Counter()
        self.op_time = Counter()
        self.history = deque(maxlen=80)  # a small-overwrites op notes each of its writes
        self.opno = 0
        self.reads_checked = 0
        self.small_writes = 0  # small overwrites into large files
        self.bytes_checked = 0
        self.remounts = 0
        self.fsck_runs = 0
        self.name_seq = 0
        self.free_at_start = None
        self.stripe = vol.ndata * 512 * 1024  # data bytes of a stripe at mkfs's default chunk

    # ---- helpers -------------------------------------------------------
    def p(self, rel):
        base = os.path.join(self.vol.mnt, self.root) if self.root else self.vol.mnt
        return os.path.join(base, rel) if rel else base

    def fail(self, msg):
        raise TestFailure("%sop %d: %s\nlast operations:\n  %s" % ("[%s] " % self.root if self.root else "",
                                                                 self.opno, msg, "\n  ".join(self.history)))

    def note(self, s):
        self.history.append("%d %s" % (self.opno, s))

    def new_name(self, d):
        self.name_seq += 1
        stem = self.rng.choice(["frame", "clip", "f", "a_long_name_for_a_media_file_" * 3])
        name = "%s%06d.%s" % (stem, self.name_seq, self.rng.choice(["dpx", "exr", "mov", "bin"]))
        return "%s/%s" % (d, name) if d else name

    def rand_dir(self):
        return self.rng.choice(sorted(self.m.dirs))

    def rand_path(self):
        return self.rng.choice(sorted(self.m.paths)) if self.m.paths else None

    def expect_errno(self, what, fn, err):
        try:
            fn()
        except OSError as e:
            if e.errno != err:
                self.fail("%s: expected %s, got %s" % (what, errno.errorcode[err], e))
            return
        self.fail("%s: expected %s, it succeeded" % (what, errno.errorcode[err]))

    def gen(self, n):
        return self.rng.randbytes(n)

    def rand_size(self):
        """1 B to several stripes (creates make the 0 B files): small files
        (pool blocks below the 64 KiB small-file threshold), sizes around
        the threshold, and frames."""
        r = self.rng.random()
        if r < 0.35:
            return self.rng.randint(1, 4096)
        if r < 0.45:
            return self.rng.randint(60 * 1024, 70 * 1024)  # around small_max
        if r < 0.7:
            return self.rng.randint(4097, 400000)
        if r < 0.9:
            return self.rng.randint(400001, 2 * MiB)
        return self.rng.randint(2 * MiB, 5 * MiB)

    def rand_offset(self, size):
        r = self.rng.random()
        stripe = self.stripe
        if r < 0.25:
            return size  # append
        if r < 0.5:
            return self.rng.randint(0, max(size, 1))
        if r < 0.65:
            return self.rng.randint(0, 7) * stripe  # stripe aligned
        if r < 0.8:
            return max(0, self.rng.randint(1, 7) * stripe - self.rng.randint(1, 5000))  # straddle
        return self.rng.randint(0, MAX_FILE - 1)  # anywhere, maybe sparse

    def fd_for(self, fid):
        for fd, i in self.m.fds.items():
            if i == fid:
                return fd
        return None

    def open_path(self, rel, flags=os.O_RDWR):
        return os.open(self.p(rel), flags)

    def check_range(self, fid, off, got, how):
        want = bytes(self.m.data[fid][off:off + len(got)])
        if len(got) != len(want) or got != want:
            first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                         min(len(got), len(want)))
            self.fail("%s: read at %d returned %d bytes, model has %d; first difference at +%d"
                      % (how, off, len(got), len(want), first))
        self.reads_checked += 1
        self.bytes_checked += len(got)

    def write_all_fd(self, fd, buf, off):
        done = 0
        while done < len(buf):
            done += os.pwrite(fd, buf[done:], off + done)

    def read_all_fd(self, fd, off, n):
        out = bytearray()
        while len(out) < n:
            b = os.pread(fd, n - len(out), off + len(out))
            if not b:
                break
            out += b
        return bytes(out)

    def check_file_full(self, rel, fid):
        st = os.stat(self.p(rel))
        if st.st_size != len(self.m.data[fid]):
            self.fail("%s: size %d, model %d" % (rel, st.st_size, len(self.m.data[fid])))
        fd = os.open(self.p(rel), os.O_RDONLY)
        try:
            got = self.read_all_fd(fd, 0, st.st_size + 1)
        finally:
            os.close(fd)
        self.check_range(fid, 0, got, "full read of " + rel)

    def check_tree(self, why):
        """Every directory lists exactly the model's names; every file matches."""
        for d in sorted(self.m.dirs):
            got = set(os.listdir(self.p(d)))
            want = self.m.children(d)
            if got != want:
                self.fail("%s: listing of '%s' differs: extra %s, missing %s"
                          % (why, d, sorted(got - want)[:5], sorted(want - got)[:5]))
        for rel, fid in sorted(self.m.paths.items()):
            self.check_file_full(rel, fid)
            st = os.stat(self.p(rel))
            if st.st_nlink != len(self.m.links(fid)):
                self.fail("%s: %s has %d links, model %d" % (why, rel, st.st_nlink, len(self.m.links(fid))))

    # ---- operations ----------------------------------------------------
    def op_create(self):
        if len(self.m.data) >= self.max_files:
            return self.op_unlink()
        d = self.rand_dir()
        rel = self.new_name(d)
        fd = os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o644)
        fid = self.m.next_id
        self.m.next_id += 1
        self.m.data[fid] = bytearray()
        self.m.paths[rel] = fid
        self.note("create %s" % rel)
        self.expect_errno("create existing", lambda: os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY), errno.EEXIST)
        if len(self.m.fds) < MAX_OPEN and self.rng.random() < 0.6:
            self.m.fds[fd] = fid
        else:
            os.close(fd)

    def pick_file(self):
        """A file id and an fd to it (opened if needed; second value: close it after)."""
        if self.m.fds and self.rng.random() < 0.5:
            fd = self.rng.choice(sorted(self.m.fds))
            return self.m.fds[fd], fd, False
        rel = self.rand_path()
        if rel is None:
            return None, None, False
        return self.m.paths[rel], self.open_path(rel), True

    def op_write(self):
        if self.m.total_bytes() > self.max_model_bytes:
            return self.op_truncate(shrink=True)
        fid, fd, close = self.pick_file()
        if fid is None:
            return self.op_create()
        try:
            cur = self.m.data[fid]
            off = self.rand_offset(len(cur))
            n = min(self.rand_size(), MAX_FILE - off) if off < MAX_FILE else 1
            buf = self.gen(n)
            self.note("write id%d off %d len %d" % (fid, off, n))
            self.write_all_fd(fd, buf, off)
            if off > len(cur):
                cur.extend(bytes(off - len(cur)))
            cur[off:off + n] = buf
            # read back at once, through the same descriptor
            if self.rng.random() < 0.5:
                self.check_range(fid, off, self.read_all_fd(fd, off, n), "read after write")
        finally:
            if close:
                os.close(fd)

    def op_read(self):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            size = len(self.m.data[fid])
            off = self.rng.randint(0, size + 10)
            n = self.rng.choice([1, 100, 4096, 65536, 1 * MiB, 3 * MiB, size + 1])
            self.note("read id%d off %d len %d" % (fid, off, n))
            self.check_range(fid, off, self.read_all_fd(fd, off, n), "read")
        finally:
            if close:
                os.close(fd)

    def read_direct(self, rel, fid, off, n, how="O_DIRECT read of "):
        """Read [off, off + n) of rel (off and n 4 KiB multiples) with
        O_DIRECT, which bypasses the page cache: the daemon answers."""
        buf = mmap.mmap(-1, n)
        fd = os.open(self.p(rel), os.O_RDONLY | os.O_DIRECT)
        try:
            got = os.preadv(fd, [buf], off)
            self.check_range(fid, off, bytes(buf[:got]), how + rel)
        finally:
            os.close(fd)
            buf.close()

    def op_read_direct(self):
        rel = self.rand_path()
        if rel is None:
            return
        fid = self.m.paths[rel]
        size = len(self.m.data[fid])
        off = self.rng.randint(0, (size + 4095) // 4096) * 4096
        n = self.rng.choice([4096, 65536, MiB, 2 * MiB + 8192])
        self.note("read O_DIRECT %s off %d len %d" % (rel, off, n))
        self.read_direct(rel, fid, off, n)

    def large_file(self):
        """The path of a file of 3 or more stripes (at most MAX_FILE) for
        small overwrites: one there is, or sometimes a new one written from
        the start in 1 MiB writes; None when there is none and the model is
        too full for one."""
        need = min(3 * self.stripe, MAX_FILE)
        big = sorted(p for p, fid in self.m.paths.items() if len(self.m.data[fid]) >= need)
        if big and (self.rng.random() < 0.85 or len(self.m.data) >= self.max_files):
            return big[self.rng.randrange(len(big))]
        size = self.rng.randint(need, MAX_FILE)
        if size % 4096 and self.rng.random() < 0.5:
            size -= size % 4096
        if self.m.total_bytes() + size > self.max_model_bytes or len(self.m.data) >= self.max_files:
            return self.rng.choice(big) if big else None
        rel = self.new_name(self.rand_dir())
        self.note("create %s of %d bytes for small overwrites" % (rel, size))
        buf = self.gen(size)
        fd = os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            for off in range(0, size, MiB):
                self.write_all_fd(fd, buf[off:off + MiB], off)
        finally:
            os.close(fd)
        fid = self.m.next_id
        self.m.next_id += 1
        self.m.data[fid] = bytearray(buf)
        self.m.paths[rel] = fid
        return rel

    def op_small_overwrites(self):
        rel = self.large_file()
        if rel is None:
            return self.op_truncate(shrink=True)
        fid = self.m.paths[rel]
        cur = self.m.data[fid]
        size = len(cur)
        fd = self.fd_for(fid)
        close = fd is None
        if close:
            fd = self.open_path(rel)
        nwrites = self.rng.randint(4, 64)
        self.small_writes += nwrites
        self.note("small overwrites of %s (%d bytes, id%d): %d writes" % (rel, size, fid, nwrites))
        prev = []
        try:
            for _ in range(nwrites):
                off, n = small_write_range(self.rng, size, self.stripe, prev)
                prev.append((off, n))
                buf = self.gen(n)
                self.note("  pwrite off %d len %d" % (off, n))
                self.write_all_fd(fd, buf, off)
                cur[off:off + n] = buf
                r = self.rng.random()
                if r < 0.08:
                    sync = os.fdatasync if self.rng.random() < 0.4 else os.fsync
                    self.note("  " + sync.__name__)
                    sync(fd)
                elif r < 0.2:
                    self.check_range(fid, off, self.read_all_fd(fd, off, n), "read after a small overwrite")
                elif r < 0.28:
                    a, e = off // 4096 * 4096, (off + n + 4095) // 4096 * 4096
                    self.read_direct(rel, fid, a, e - a, "O_DIRECT read after a small overwrite of ")
            if self.rng.random() < 0.5:
                self.note("  fsync")
                os.fsync(fd)
            # the ranges again, now that others were written around them: from
            # the daemon (the file's cached pages dropped) or with O_DIRECT
            if self.rng.random() < 0.5:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            for off, n in self.rng.sample(prev, min(len(prev), 8)):
                if self.rng.random() < 0.7:
                    self.check_range(fid, off, self.read_all_fd(fd, off, n), "read back after small overwrites")
                else:
                    a, e = off // 4096 * 4096, (off + n + 4095) // 4096 * 4096
                    self.read_direct(rel, fid, a, e - a, "O_DIRECT read back after small overwrites of ")
            if self.rng.random() < 0.1:
                self.check_file_full(rel, fid)
        finally:
            if close:
                os.close(fd)

    def op_truncate(self, shrink=False):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            cur = self.m.data[fid]
            if shrink or self.rng.random() < 0.6:
                size = self.rng.randint(0, len(cur))
            else:
                size = min(MAX_FILE, len(cur) + self.rng.randint(1, 3 * MiB))
            self.note("truncate id%d %d -> %d" % (fid, len(cur), size))
            os.ftruncate(fd, size)
            if size < len(cur):
                del cur[size:]
            else:
                cur.extend(bytes(size - len(cur)))
            if os.fstat(fd).st_size != size:
                self.fail("size after truncate")
        finally:
            if close:
                os.close(fd)

    def alloc_range(self, cur):
        """A range for fallocate or zero range: (off, n, keep), or None when
        it would take the file past MAX_FILE or the model past its size."""
        off = self.rng.randint(0, len(cur) + MiB)
        n = self.rng.randint(1, 4 * MiB)
        if off + n > MAX_FILE or self.m.total_bytes() > self.max_model_bytes:
            return None
        return off, n, self.rng.random() < 0.5

    def op_fallocate(self):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            cur = self.m.data[fid]
            r = self.alloc_range(cur)
            if r is None:
                return
            off, n, keep = r
            self.note("fallocate id%d off %d len %d%s" % (fid, off, n, " keep" if keep else ""))
            fallocate(fd, FALLOC_FL_KEEP_SIZE if keep else 0, off, n)
            if not keep and off + n > len(cur):
                cur.extend(bytes(off + n - len(cur)))
        finally:
            if close:
                os.close(fd)

    def op_punch(self):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            cur = self.m.data[fid]
            off = self.rng.randint(0, len(cur) + 4096)
            n = self.rng.randint(1, 4 * MiB)
            self.note("punch id%d off %d len %d" % (fid, off, n))
            fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, n)
            end = min(off + n, len(cur))
            if off < end:
                cur[off:end] = bytes(end - off)
        finally:
            if close:
                os.close(fd)

    def op_zero_range(self):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            cur = self.m.data[fid]
            r = self.alloc_range(cur)
            if r is None:
                return
            off, n, keep = r
            self.note("zero-range id%d off %d len %d%s" % (fid, off, n, " keep" if keep else ""))
            fallocate(fd, FALLOC_FL_ZERO_RANGE | (FALLOC_FL_KEEP_SIZE if keep else 0), off, n)
            end = min(off + n, len(cur)) if keep else off + n
            if end > len(cur):
                cur.extend(bytes(end - len(cur)))
            if off < end:
                cur[off:end] = bytes(end - off)
        finally:
            if close:
                os.close(fd)

    def op_rename(self):
        src = self.rand_path()
        if src is None:
            return
        r = self.rng.random()
        others = [p for p in self.m.paths if self.m.paths[p] != self.m.paths[src]]
        if r < 0.35 or not others:
            dst = self.new_name(self.rand_dir())
            flags = RENAME_NOREPLACE if self.rng.random() < 0.3 else 0
            self.note("rename %s -> %s flags %d" % (src, dst, flags))
            renameat2(self.p(src), self.p(dst), flags)
            self.m.paths[dst] = self.m.paths.pop(src)
        elif r < 0.6:
            dst = self.rng.choice(sorted(others))
            self.note("rename %s over %s" % (src, dst))
            self.expect_errno("rename NOREPLACE over a file",
                              lambda: renameat2(self.p(src), self.p(dst), RENAME_NOREPLACE), errno.EEXIST)
            os.rename(self.p(src), self.p(dst))
            old = self.m.paths[dst]
            self.m.paths[dst] = self.m.paths.pop(src)
            self.m.gc(old)
        else:
            dst = self.rng.choice(sorted(others))
            self.note("exchange %s <-> %s" % (src, dst))
            renameat2(self.p(src), self.p(dst), RENAME_EXCHANGE)
            self.m.paths[src], self.m.paths[dst] = self.m.paths[dst], self.m.paths[src]

    def op_unlink(self):
        rel = self.rand_path()
        if rel is None:
            return
        self.note("unlink %s" % rel)
        os.unlink(self.p(rel))
        fid = self.m.paths.pop(rel)
        self.m.gc(fid)
        self.expect_errno("stat after unlink", lambda: os.stat(self.p(rel)), errno.ENOENT)

    def op_link(self):
        rel = self.rand_path()
        if rel is None:
            return
        dst = self.new_name(self.rand_dir())
        self.note("link %s %s" % (rel, dst))
        os.link(self.p(rel), self.p(dst))
        self.m.paths[dst] = self.m.paths[rel]

    def op_mkdir(self):
        if len(self.m.dirs) > 12:
            return self.op_rmdir()
        parent = self.rand_dir()
        self.name_seq += 1
        d = "%s/dir%04d" % (parent, self.name_seq) if parent else "dir%04d" % self.name_seq
        self.note("mkdir %s" % d)
        os.mkdir(self.p(d))
        self.m.dirs.add(d)

    def op_rmdir(self):
        cands = sorted(x for x in self.m.dirs if x)
        if not cands:
            return
        d = self.rng.choice(cands)
        if self.m.children(d):
            self.note("rmdir (not empty) %s" % d)
            self.expect_errno("rmdir of a non-empty directory", lambda: os.rmdir(self.p(d)), errno.ENOTEMPTY)
            return
        self.note("rmdir %s" % d)
        os.rmdir(self.p(d))
        self.m.dirs.discard(d)

    def op_fsync(self):
        fid, fd, close = self.pick_file()
        if fid is None:
            return
        try:
            self.note("fsync id%d" % fid)
            (os.fdatasync if self.rng.random() < 0.3 else os.fsync)(fd)
        finally:
            if close:
                os.close(fd)

    def op_syncfs(self):
        self.note("sync")
        os.sync()

    def op_close(self):
        if not self.m.fds:
            return
        fd = self.rng.choice(sorted(self.m.fds))
        fid = self.m.fds.pop(fd)
        self.note("close id%d" % fid)
        os.close(fd)
        self.m.gc(fid)

    def op_stat(self):
        rel = self.rand_path()
        if rel is None:
            return
        fid = self.m.paths[rel]
        st = os.stat(self.p(rel))
        if st.st_size != len(self.m.data[fid]) or st.st_nlink != len(self.m.links(fid)):
            self.fail("stat %s: size %d nlink %d, model %d %d" % (rel, st.st_size, st.st_nlink,
                                                                  len(self.m.data[fid]), len(self.m.links(fid))))

    def op_listdir(self):
        d = self.rand_dir()
        got = set(os.listdir(self.p(d)))
        if got != self.m.children(d):
            self.fail("listing of '%s' differs" % d)

    def op_drop_caches(self):
        """The kernel forgets our pages, dentries and unused inodes: reads,
        lookups and the daemon's inode cache start over."""
        self.note("drop caches")
        for rel in self.m.paths:
            fd = os.open(self.p(rel), os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        drop_caches()

    def close_all(self):
        for fd in sorted(self.m.fds):
            os.close(fd)
            fid = self.m.fds.pop(fd)
            self.m.gc(fid)

    OPS = [
        ("create", 14), ("write", 30), ("read", 18), ("read_direct", 6), ("small_overwrites", 4), ("truncate", 6),
        ("fallocate", 2), ("punch", 2), ("zero_range", 2), ("rename", 7), ("unlink", 5), ("link", 2), ("mkdir", 2), ("rmdir", 2),
        ("fsync", 4), ("syncfs", 1), ("close", 6), ("stat", 5), ("listdir", 2), ("drop_caches", 1),
    ]

    def one_op(self):
        names = [n for n, _ in self.OPS]
        weights = [w for _, w in self.OPS]
        self.opno += 1
        name = self.rng.choices(names, weights)[0]
        self.counts[name] += 1
        t_op = time.monotonic()
        try:
            getattr(self, "op_" + name)()
        except TestFailure:
            raise
        except OSError as e:
            self.fail("%s: unexpected %s" % (name, e))
        self.op_time[name] += time.monotonic() - t_op

    def delete_all(self):
        self.close_all()
        for rel in sorted(self.m.paths):
            os.unlink(self.p(rel))
        for d in sorted((x for x in self.m.dirs if x), key=lambda x: -x.count("/")):
            os.rmdir(self.p(d))
        self.m = Model()


def statfs_free(vol):
    """Free blocks and inodes once settled: framefs-admin sync waits for the
    background merges (a merge holds its new stripe and its old one while
    it runs: sync(2) cannot ask a FUSE daemon to wait for them); a closed,
    unlinked file is freed when the kernel's FORGET reaches the daemon,
    which is sent asynchronously, so wait until three readings 50 ms apart
    agree."""
    os.sync()  # the kernel's cached writes to the daemon
    vol.wait_ctl()
    r = subprocess.run([os.environ["ADMIN"], "sync", vol.mnt], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise TestFailure("framefs-admin sync failed (%d): %s" % (r.returncode, r.stderr))
    drop_caches()
    last, same = None, 0
    for _ in range(200):
        v = os.statvfs(vol.mnt)
        cur = (v.f_bfree, v.f_ffree)
        same = same + 1 if cur == last else 0
        if same == 2:
            break
        last = cur
        time.sleep(0.05)
    return cur


def remount(vol, workers):
    """Unmount (everything written out, fsck clean), mount, and every model
    must match the tree exactly; the free space must not have moved."""
    for w in workers:
        w.close_all()
    before = statfs_free(vol)
    vol.unmount()
    workers[0].fsck_runs += vol.check_fsck()
    vol.mount()
    workers[0].remounts += 1
    after = statfs_free(vol)
    if before != after:
        workers[0].fail("free blocks/inodes %s before unmount, %s after mount" % (before, after))
    for w in workers:
        w.check_tree("after remount %d" % workers[0].remounts)


def run_all(vol, seed, nops, nthreads):
    """nthreads models, each in its own directory (or the root when alone),
    in phases of concurrent operations separated by remounts."""
    rng = random.Random(seed)
    workers = []
    free_at_start = statfs_free(vol)
    for k in range(nthreads):
        root = "w%d" % k if nthreads > 1 else ""
        if root:
            os.mkdir(os.path.join(vol.mnt, root))
        workers.append(RandomOps(vol, rng.getrandbits(48), nops // nthreads, root, nthreads))
    phases = 10
    per_phase = max(1, nops // nthreads // phases)
    for phase in range(phases):
        errors = []

        def work(w):
            try:
                for _ in range(per_phase):
                    w.one_op()
            except BaseException as e:  # noqa: B902 - reported by the main thread
                errors.append(e)

        if nthreads == 1:
            work(workers[0])
        else:
            threads = [threading.Thread(target=work, args=(w,)) for w in workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        if errors:
            raise errors[0]
        remount(vol, workers)
    # delete everything: all the space comes back
    for w in workers:
        w.delete_all()
        if w.root:
            os.rmdir(w.p(""))
    end = statfs_free(vol)
    if end != free_at_start:
        workers[0].fail("after deleting everything: free %s, at the start %s" % (end, free_at_start))
    return workers


def main():
    seed = seed_from_env()
    nops = int(os.environ.get("IT_RANDOM_OPS", "4000"))
    nthreads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 1
    level = int(os.environ.get("IT_RANDOM_LEVEL", str(5 if seed % 2 else 6)))
    nmembers = width_from_seed(level, seed, "IT_RANDOM_MEMBERS")
    log("random-ops-model: seed %d (IT_SEED=%d to repeat), %d operations, %d thread(s), RAID%d x %d"
        % (seed, seed, nops, nthreads, level, nmembers))
    vol = Volume(level, nmembers, 256 * MiB)
    vol.ndata = nmembers - (1 if level == 5 else 2)
    t0 = time.monotonic()
    try:
        vol.mount()
        workers = run_all(vol, seed, nops, nthreads)
        vol.unmount()
        workers[0].fsck_runs += vol.check_fsck()
    except TestFailure as e:
        log("FAIL (seed %d): %s" % (seed, e))
        log("daemon log:\n" + vol.daemon_log())
        return 1
    finally:
        vol.cleanup()
    counts = Counter()
    for w in workers:
        counts.update(w.counts)
    log("operations: " + ", ".join("%s %d" % kv for kv in sorted(counts.items())))
    log("PASS: seed %d, %d random operations (%d thread(s)), %d small overwrites of large files, "
        "%d reads compared (%d MiB), %d remounts, %d fsck runs, %.1f s"
        % (seed, sum(counts.values()), nthreads, sum(w.small_writes for w in workers),
           sum(w.reads_checked for w in workers), sum(w.bytes_checked for w in workers) // MiB,
           workers[0].remounts, workers[0].fsck_runs, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
