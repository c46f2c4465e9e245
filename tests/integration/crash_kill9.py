#!/usr/bin/env python3
# Proves: after the daemon is killed with SIGKILL at a random point of a
# write workload — many times, seeded and repeatable — the next mount
# succeeds (its time is logged; that it resyncs only the regions with writes
# in flight is unit test raid_intent's), fsck.framefs -n -c finds nothing to
# fix once it has replayed, and
# everything an acknowledgement covered reads back byte-identical:
#   - fsync(file) + fsync(its directory), and
#   - a clean close(2) + syncfs(2)
# acknowledge a file's content and name; fsync of the directories
# acknowledges a rename or an unlink.  Files touched after their last
# acknowledgement are checked as far as the crash allows: a file only
# written or truncated since keeps every byte outside the ranges touched and
# has a size some prefix of the operations gave it; a name only renamed
# onto holds one of the contents that could have arrived there; and no name
# the workload never made ever appears.
#
# The workload (this script with --workload) creates frame files (2-12 MiB,
# 1 MiB writes, some O_DIRECT) and small files, patches them at random
# offsets, truncates, renames (to new names and over old ones, the
# atomic-save pattern), unlinks, overwrites files of 3 or more stripes in
# place the way an editor's project database does (8 to 64 writes of 1 B to
# 64 KiB, mostly 4 KiB-aligned 4 KiB and 64 KiB, some across a 4 KiB or a
# stripe boundary, some rewriting a block just written, buffered or
# O_DIRECT, with fsync or fdatasync acknowledging them part of the way and at
# the end), and logs each step before it starts ("T")
# and each acknowledgement after it returned ("A") to a log on /tmp, not on
# the volume.  Some kills land while the daemon writes everything out at
# unmount instead.  Some files are unlinked while held open (orphans at the
# crash).  Some recovery mounts are themselves killed.  At the end, deleting
# every file must give back exactly the space and inodes of the empty volume.
#
# With --powerloss (or IT_CRASH_POWERLOSS=1) every kill is also a power cut:
# the daemon keeps an undo log of each member (FRAMEFS_UNDO_DIR, io/fault.h),
# and before the next mount a random half of the writes that no completed
# flush covered is rolled back on the members — what a drive's volatile write
# cache may lose.  The same checks must hold.
#
#   IT_SEED=N          the seed (printed; default from the clock)
#   IT_CRASH_ITERS=N   crash iterations (default 25)
#   IT_POWERLOSS_ITERS=N  with --powerloss (default 12)
#   IT_CRASH_LEVEL=5|6 RAID level (default: from the seed)
#   IT_CRASH_MEMBERS=N members, 3..8 on RAID5, 4..10 on RAID6 (default: from
#                      the seed, so that CI runs cover every width in turn)
import ctypes
import fcntl
import hashlib
import json
import mmap
import os
import random
import re
import struct
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import TestFailure, Volume, log, seed_from_env, small_write_range, width_from_seed  # noqa: E402

MiB = 1 << 20
PAGE = mmap.PAGESIZE  # the unit the kernel splits a write into requests by
DIRS = ["seq", "tmp", "misc"]
MAX_LIVE_BYTES = 180 * MiB  # counted in whole stripes: a 1-byte file takes one
STRIPE = int(os.environ.get("IT_CRASH_STRIPE", 3 * 512 * 1024))  # data bytes of a stripe
FRAME_2K = 12812288
libc = ctypes.CDLL(None, use_errno=True)


def spec_size(spec):
    """The size of the file a spec describes (content() without the bytes)."""
    size = 0
    for op in spec:
        size = max(size, op[1] + op[2]) if op[0] == "w" else op[1]
    return size


def content(spec):
    """The bytes a spec (list of operations from empty) describes."""
    b = bytearray()
    for op in spec:
        if op[0] == "w":
            _, off, n, dseed = op
            if off > len(b):
                b.extend(bytes(off - len(b)))
            b[off:off + n] = random.Random(dseed).randbytes(n)
        else:
            size = op[1]
            if size < len(b):
                del b[size:]
            else:
                b.extend(bytes(size - len(b)))
    return b


# ---- the workload (a child process) -----------------------------------------

class Workload:
    def __init__(self, mnt, base, logf, seed, it, mode):
        self.mnt = mnt
        self.mode = mode  # how files are acknowledged: "fsync", "syncfs" or "mixed"
        self.files = dict(base)  # path -> spec, every one acknowledged
        self.logf = logf
        self.rng = random.Random(seed)
        self.it = it
        self.seq = 0
        self.held = []  # descriptors of files unlinked while open: orphans when the crash comes

    def p(self, rel):
        return os.path.join(self.mnt, rel)

    def T(self, path, touch):
        self.logf.write("T %s %s\n" % (path, json.dumps(touch)))
        self.logf.flush()

    def A(self, path, spec):
        self.logf.write("A %s %s\n" % (path, json.dumps(spec)))
        self.logf.flush()

    def fsync_dir(self, d):
        fd = os.open(self.p(d), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def syncfs(self):
        fd = os.open(self.mnt, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if libc.syncfs(fd) != 0:
                e = ctypes.get_errno()
                raise OSError(e, os.strerror(e))
        finally:
            os.close(fd)

    def new_path(self):
        self.seq += 1
        d = self.rng.choice(DIRS)
        return "%s/i%03d_%05d.%s" % (d, self.it, self.seq, self.rng.choice(["dpx", "exr", "tmp"]))

    def dseed(self):
        return self.rng.getrandbits(62)

    def live_bytes(self):
        """An upper bound of the space the files take, in whole stripes."""
        total = 0
        for spec in self.files.values():
            end = max(((op[1] + op[2]) if op[0] == "w" else op[1] for op in spec), default=0)
            total += (end + STRIPE - 1) // STRIPE * STRIPE
        return total

    def write_ops(self, fd, path, spec, ops, direct=False):
        """Apply write ops (list of (off, n)) through fd, touching path first."""
        for off, n in ops:
            ds = self.dseed()
            self.T(path, ["w", off, n])
            data = random.Random(ds).randbytes(n)
            if direct:
                buf = mmap.mmap(-1, n)
                buf[:] = data
                done = os.pwritev(fd, [buf], off)
                buf.close()
                if done != n:
                    raise OSError(5, "short O_DIRECT write")
            else:
                done = 0
                while done < n:
                    done += os.pwrite(fd, data[done:], off + done)
            spec.append(["w", off, n, ds])

    def ack_file(self, path, fd, spec):
        """fsync + directory fsync, or close + syncfs: then the file is acknowledged."""
        if self.use_fsync():
            os.fsync(fd)
            os.close(fd)
            self.fsync_dir(os.path.dirname(path))
        else:
            os.close(fd)
            self.syncfs()
        self.files[path] = spec
        self.A(path, spec)

    def use_fsync(self):
        return self.mode == "fsync" or (self.mode == "mixed" and self.rng.random() < 0.5)

    def op_frame(self, size=None):
        path = self.new_path()
        if size is None:
            size = self.rng.choice([2 * MiB + self.rng.randint(1, 100000), 4 * MiB, 6 * MiB + 4096, FRAME_2K])
        direct = size % 4096 == 0 and self.rng.random() < 0.5
        self.T(path, ["new"])
        fd = os.open(self.p(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY | (os.O_DIRECT if direct else 0), 0o644)
        spec = []
        self.write_ops(fd, path, spec, [(o, min(MiB, size - o)) for o in range(0, size, MiB)], direct)
        self.ack_file(path, fd, spec)
        return path

    def op_small(self):
        path = self.new_path()
        self.T(path, ["new"])
        fd = os.open(self.p(path), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        spec = []
        # half of them sidecars that stay below the 64 KiB small-file
        # threshold (pool blocks), the rest reaching past it (stripes)
        reach = 60000 if self.rng.random() < 0.5 else 200000
        ops = [(self.rng.randint(0, reach - 1), self.rng.randint(1, min(70000, reach)))
               for _ in range(self.rng.randint(1, 5))]
        if reach == 60000:
            ops = [(o, min(n, reach - o)) for o, n in ops]
        self.write_ops(fd, path, spec, ops)
        if self.rng.random() < 0.1:
            os.close(fd)  # never acknowledged
            return
        self.ack_file(path, fd, spec)

    def pick(self):
        return self.rng.choice(sorted(self.files)) if self.files else None

    def op_patch(self):
        path = self.pick()
        if path is None:
            return
        spec = list(self.files[path])
        fd = os.open(self.p(path), os.O_WRONLY)
        size = os.fstat(fd).st_size
        ops = []
        for _ in range(self.rng.randint(1, 4)):
            off = self.rng.randint(0, size + 10000)
            ops.append((off, self.rng.choice([self.rng.randint(1, 5000), self.rng.randint(5000, 2 * MiB)])))
        self.write_ops(fd, path, spec, ops)
        if self.rng.random() < 0.3:
            t = self.rng.randint(0, 6 * MiB)
            self.T(path, ["t", t])
            os.ftruncate(fd, t)
            spec.append(["t", t])
        # an existing name: fsync of the file alone, or close + syncfs
        if self.use_fsync():
            os.fsync(fd)
            os.close(fd)
        else:
            os.close(fd)
            self.syncfs()
        self.files[path] = spec
        self.A(path, spec)

    def op_small_overwrites(self):
        """Many small writes in place into a file of 3 or more stripes (one
        made, written from the start and acknowledged, if there is none),
        acknowledged by fsync or fdatasync part of the way and at the end
        (close + syncfs where the mode says so).  One time in four they all
        go into one stripe, 4 KiB and 64 KiB aligned, so that its patches
        pass half of it and the merge thread rewrites it while later writes
        to it are acknowledged (fs/data/merge.c): a kill then finds merges queued,
        in flight, or written and not yet committed."""
        big = [q for q, spec in sorted(self.files.items())
               if spec_size(spec) >= 3 * STRIPE and len(spec) < 1500]  # the log lines stay short
        if big and self.rng.random() < 0.85:
            path = self.rng.choice(big)
        else:
            path = self.op_frame(self.rng.choice([0, self.rng.randint(1, 4095)]) +
                                 4096 * self.rng.randint(max(3 * STRIPE, 8 * MiB) // 4096, 20 * MiB // 4096))
        spec = list(self.files[path])
        size = spec_size(spec)
        direct = self.rng.random() < 0.25
        flags = os.O_WRONLY | (os.O_DIRECT if direct else 0)
        fd = os.open(self.p(path), flags)
        prev = []
        dense = self.rng.random() < 0.25
        if dense:
            k = self.rng.randrange(size // STRIPE)
            self.logf.write("D %s\n" % path)  # for the runner's count
        for _ in range(self.rng.randint(8, 64)):
            if dense:
                n = self.rng.choice([4096, 65536])
                off = k * STRIPE + self.rng.randrange((STRIPE - n) // 4096 + 1) * 4096
            else:
                off, n = small_write_range(self.rng, size, STRIPE, prev, direct)
            prev.append((off, n))
            self.write_ops(fd, path, spec, [(off, n)], direct)
            if self.rng.random() < 0.08:
                fd = self.ack_in_place(path, fd, spec, flags, len(prev))
                prev = []
        os.close(self.ack_in_place(path, fd, spec, flags, len(prev)))

    def ack_in_place(self, path, fd, spec, flags, nwrites):
        """Acknowledge the writes so far into an existing name, which needs
        no directory fsync: fsync or fdatasync (the size has not changed),
        or close + syncfs and open again.  Returns the descriptor to go on."""
        if self.use_fsync():
            (os.fdatasync if self.rng.random() < 0.4 else os.fsync)(fd)
        else:
            os.close(fd)
            self.syncfs()
            fd = os.open(self.p(path), flags)
        self.files[path] = list(spec)
        self.A(path, spec)
        self.logf.write("S %s %d\n" % (path, nwrites))  # for the runner's count
        self.logf.flush()
        return fd

    def op_rename(self):
        src = self.pick()
        if src is None:
            return
        others = [q for q in self.files if q != src]
        if others and self.rng.random() < 0.5:
            dst = self.rng.choice(sorted(others))  # over an acknowledged file
        else:
            dst = self.new_path()
        spec = self.files[src]
        self.T(src, ["rm"])
        self.T(dst, ["rn", spec])
        os.rename(self.p(src), self.p(dst))
        for d in {os.path.dirname(src), os.path.dirname(dst)}:
            self.fsync_dir(d)
        del self.files[src]
        self.files[dst] = spec
        self.A(src, None)
        self.A(dst, spec)

    def op_atomic_save(self):
        """Write a temporary file, fsync it, rename it over an existing one."""
        dst = self.pick()
        if dst is None:
            return
        tmp = self.new_path()
        self.T(tmp, ["new"])
        fd = os.open(self.p(tmp), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        spec = []
        n = self.rng.randint(1, 3 * MiB)
        self.write_ops(fd, tmp, spec, [(o, min(MiB, n - o)) for o in range(0, n, MiB)])
        os.fsync(fd)
        os.close(fd)
        self.T(tmp, ["rm"])
        self.T(dst, ["rn", spec])
        os.rename(self.p(tmp), self.p(dst))
        self.fsync_dir(os.path.dirname(dst))
        self.fsync_dir(os.path.dirname(tmp))
        self.files[dst] = spec
        self.A(tmp, None)
        self.A(dst, spec)

    def op_unlink(self):
        path = self.pick()
        if path is None:
            return
        self.T(path, ["rm"])
        os.unlink(self.p(path))
        self.fsync_dir(os.path.dirname(path))
        del self.files[path]
        self.A(path, None)

    def op_unlink_open(self):
        """Unlink a file while holding it open and keep writing to it: at the
        crash it is an orphan that recovery must free (the leak check at the
        end and fsck's bitmaps see it if not).  Some are then closed but
        still held by an O_PATH descriptor: their bytes are freed at the
        close, their inode stays an orphan until the kernel lets go."""
        path = self.pick()
        if path is None or len(self.held) >= 3:
            return
        fd = os.open(self.p(path), os.O_RDWR)
        opath = os.open(self.p(path), os.O_PATH)
        self.T(path, ["rm"])
        os.unlink(self.p(path))
        self.fsync_dir(os.path.dirname(path))
        del self.files[path]
        self.A(path, None)
        self.held.append(fd)
        data = random.Random(self.dseed()).randbytes(self.rng.randint(1, 2 * MiB))
        os.pwrite(fd, data, self.rng.randint(0, 3 * MiB))
        if self.rng.random() < 0.5:
            os.fsync(fd)
        if self.rng.random() < 0.5:
            os.close(fd)
            self.held[-1] = opath
        else:
            os.close(opath)

    def run(self):
        ops = [(self.op_frame, 20), (self.op_small, 15), (self.op_patch, 20), (self.op_small_overwrites, 12),
               (self.op_rename, 10), (self.op_atomic_save, 8), (self.op_unlink, 10), (self.op_unlink_open, 3)]
        if self.mode == "syncfs":  # nothing but close + syncfs: no fsync commits in between
            ops = ops[:4]
        fns, weights = zip(*ops)
        while True:
            if self.live_bytes() > MAX_LIVE_BYTES:
                path = self.pick()
                self.T(path, ["rm"])
                os.unlink(self.p(path))
                del self.files[path]  # acknowledged absent by the next directory fsync only
                if self.mode != "syncfs":
                    self.fsync_dir(os.path.dirname(path))
                    self.A(path, None)
                continue
            self.rng.choices(fns, weights)[0]()


def workload_main(mnt, base_path, log_path, seed, it, mode):
    with open(base_path) as f:
        base = json.load(f)
    with open(log_path, "a", buffering=1) as logf:
        try:
            Workload(mnt, base, logf, seed, it, mode).run()
        except OSError as e:
            logf.write("X %d %s\n" % (e.errno or 0, e.strerror))
            return 3
    return 0


# ---- the runner -----------------------------------------------------------------

class PathState:
    def __init__(self, spec):
        self.spec = spec       # acknowledged content (None: acknowledged absent)
        self.touches = []      # since the acknowledgement


class Crash:
    def __init__(self, vol, seed, iters, undo_dir=None):
        self.vol = vol
        self.undo_dir = undo_dir
        self.seed = seed
        self.iters = iters
        self.rng = random.Random(seed)
        self.base = {}         # path -> spec: acknowledged, untouched, on the volume
        self.stats = {"acks": 0, "exact": 0, "partial": 0, "weak": 0, "fsck": 0, "killed_mounts": 0,
                      "replayed": 0, "batch_mounts": 0, "batches": 0, "touched_removed": 0, "unflushed": 0, "lost": 0,
                      "small_acked": 0}
        self.clean_mount_s = None
        self.digests = {}      # spec (json) -> (size, sha256) of its content, made once

    def p(self, rel):
        return os.path.join(self.vol.mnt, rel)

    def statfs_free(self):
        """Free blocks and inodes once the kernel's FORGETs (asynchronous)
        have reached the daemon: three readings 50 ms apart agree."""
        last, same = None, 0
        for _ in range(200):
            v = os.statvfs(self.vol.mnt)
            cur = (v.f_bfree, v.f_ffree)
            same = same + 1 if cur == last else 0
            if same == 2:
                break
            last = cur
            time.sleep(0.05)
        return cur

    def read_file(self, rel):
        with open(self.p(rel), "rb") as f:
            return f.read()

    def parse_log(self, log_path):
        state = {path: PathState(spec) for path, spec in self.base.items()}
        workload_err = None
        with open(log_path) as f:
            for line in f:
                if not line.endswith("\n"):
                    break  # the workload died mid-line: cannot happen (no kill), but be exact
                kind, rest = line[0], line[2:-1]
                if kind == "X":
                    workload_err = rest
                    continue
                if kind == "S":  # small overwrites into a large file, just acknowledged
                    self.stats["small_acked"] += int(rest.split(" ")[-1])
                    continue
                if kind == "D":  # and all into one stripe, past its merge share
                    self.stats["dense"] = self.stats.get("dense", 0) + 1
                    continue
                path, js = rest.split(" ", 1)
                st = state.setdefault(path, PathState(None))
                if kind == "T":
                    st.touches.append(json.loads(js))
                else:
                    st.spec = json.loads(js)
                    st.touches = []
                    self.stats["acks"] += 1
        return state, workload_err

    def check_touched(self, it, path, st, data):
        """A file changed since its acknowledgement: check what the crash cannot excuse."""
        kinds = {t[0] for t in st.touches}
        if data is None:
            return  # not there: any unacknowledged change may have removed or not made it
        if kinds <= {"rn", "rm"}:
            cands = [t[1] for t in st.touches if t[0] == "rn"]
            if st.spec is not None:
                cands.append(st.spec)
            if any(bytes(content(c)) == data for c in cands):
                self.stats["partial"] += 1
                return
            raise TestFailure("iteration %d: %s (%d bytes) holds none of the %d contents it may hold after "
                              "an unacknowledged rename/unlink (sizes %s; touches %s)"
                              % (it, path, len(data), len(cands), [len(content(c)) for c in cands],
                                 [t[0] for t in st.touches]))
        if kinds <= {"w", "t"} and st.spec is not None:
            acked = content(st.spec)
            sizes = {len(acked)}
            size = len(acked)
            dirty = []  # (from, to) byte ranges that may hold anything
            # One write(2) reaches the daemon as several requests when the
            # kernel splits it (at most max_write each, shorter where a user
            # page had to be faulted in), each answered on its own: a crash
            # may keep the first few.  So a write that grew the file may have
            # grown it to any page boundary inside it (seen under ASan: a
            # 1,739,146-byte write kept up to 1 MiB + 7 pages).
            split = []  # (from, to): sizes a partly kept write may leave
            for t in st.touches:
                if t[0] == "w":
                    if t[1] + t[2] > size:
                        split.append((max(size, t[1]), t[1] + t[2]))
                    size = max(size, t[1] + t[2])
                    dirty.append((t[1], t[1] + t[2]))
                else:
                    dirty.append((t[1], 1 << 62))
                    size = t[1]
                sizes.add(size)
            n = len(data)
            if n not in sizes and not any(a < n < b and n % PAGE == 0 for a, b in split):
                raise TestFailure("iteration %d: %s has size %d; a prefix of its operations gives one of %s"
                                  " (or a page boundary inside a write that grew it: %s)"
                                  % (it, path, n, sorted(sizes), split))
            lim = min(len(data), len(acked))
            dirty.sort()
            pos = 0
            for a, b in dirty + [(lim, lim)]:
                a = min(a, lim)
                if pos < a and data[pos:a] != acked[pos:a]:
                    bad = next(i for i in range(pos, a) if data[i] != acked[i])
                    raise TestFailure("iteration %d: %s byte %d changed, no operation since the "
                                      "acknowledgement wrote there" % (it, path, bad))
                pos = max(pos, b)
            self.stats["partial"] += 1
            return
        self.stats["weak"] += 1  # created or rewritten wholesale, never acknowledged: readable is all

    def verify(self, it, state):
        names = set()
        for d in DIRS:
            for n in os.listdir(self.p(d)):
                names.add("%s/%s" % (d, n))
        for path in sorted(names | set(state)):
            st = state.get(path)
            exists = path in names
            if st is None:
                raise TestFailure("iteration %d: %s exists but the workload never made it" % (it, path))
            data = self.read_file(path) if exists else None
            if st.touches:
                self.check_touched(it, path, st, data)
                continue
            if st.spec is None:
                if exists:
                    raise TestFailure("iteration %d: %s was acknowledged as removed but is there" % (it, path))
                continue
            if not exists:
                raise TestFailure("iteration %d: %s was acknowledged but is missing" % (it, path))
            key = json.dumps(st.spec)
            if key not in self.digests:
                c = content(st.spec)
                self.digests[key] = (len(c), hashlib.sha256(c).digest())
            if (len(data), hashlib.sha256(data).digest()) == self.digests[key]:
                self.stats["exact"] += 1
                continue
            want = bytes(content(st.spec))
            if data != want:
                first = next((i for i in range(min(len(data), len(want))) if data[i] != want[i]),
                             min(len(data), len(want)))
                raise TestFailure("iteration %d: %s differs from what was acknowledged: size %d vs %d, "
                                  "first difference at byte %d" % (it, path, len(data), len(want), first))
            self.stats["exact"] += 1
        # start the next round from certainty: what was touched goes
        self.base = {}
        for path, st in state.items():
            if st.touches:
                if path in names:
                    os.unlink(self.p(path))
                    self.stats["touched_removed"] += 1
            elif st.spec is not None:
                self.base[path] = st.spec
        for d in DIRS:
            fd = os.open(self.p(d), os.O_RDONLY | os.O_DIRECTORY)
            os.fsync(fd)
            os.close(fd)

    def power_cut(self):
        """After a kill with --powerloss: roll back a random half of each
        member's writes that no completed flush covered, newest first, keeping
        whatever a later write that survives put over them."""
        if not self.undo_dir:
            return
        hdr = struct.Struct("<QQQQ")
        for m in self.vol.members:
            path = os.path.join(self.undo_dir, os.path.basename(m) + ".undo")
            if not os.path.exists(path):
                continue
            with open(path, "rb") as f:
                log_bytes = f.read()
            writes, durable, at = [], 0, 0
            while at + hdr.size <= len(log_bytes):
                kind, seq, off, length = hdr.unpack_from(log_bytes, at)
                at += hdr.size
                if kind == 2:
                    durable = max(durable, seq)
                    continue
                if kind != 1 or at + length > len(log_bytes):
                    break  # the daemon died while logging: that write was never issued
                writes.append((seq, off, length, at))
                at += length
            kept = []
            with open(m, "r+b") as mf:
                fcntl.flock(mf, fcntl.LOCK_EX)  # the dead daemon's rings have let go
                for seq, off, length, data_at in sorted(writes, reverse=True):
                    if seq <= durable:
                        continue
                    self.stats["unflushed"] += 1
                    if self.rng.random() < 0.5:
                        kept.append((off, off + length))
                        continue
                    self.stats["lost"] += 1
                    if os.environ.get("IT_POWERLOSS_TRACE"):
                        with open(os.environ["IT_POWERLOSS_TRACE"], "a") as tf:
                            tf.write("%s seq %d off %d len %d durable %d\n" % (os.path.basename(m), seq, off, length, durable))
                    pieces = [(off, off + length)]
                    for ks, ke in kept:
                        pieces = [q for a, b in pieces
                                  for q in ((a, min(b, ks)), (max(a, ke), b)) if q[0] < q[1]]
                    for a, b in pieces:
                        mf.seek(a)
                        mf.write(log_bytes[data_at + a - off:data_at + b - off])
                mf.flush()
                fcntl.flock(mf, fcntl.LOCK_UN)
            os.unlink(path)

    def recovery_mount(self, it):
        """Mount after a crash; sometimes kill that mount too, then mount again."""
        if it > 1 and self.rng.random() < 0.2:
            self.vol.nmounts += 1
            self.vol.log_path = os.path.join(self.vol.tmp, "daemon.%d.log" % self.vol.nmounts)
            with open(self.vol.log_path, "w") as logf:
                d = subprocess.Popen([self.vol.framefs, "-f", self.vol.spec, self.vol.mnt], stdout=logf,
                                     stderr=subprocess.STDOUT)
            time.sleep(self.rng.uniform(0, 0.08))
            d.kill()
            d.wait()
            if self.vol.is_mounted():
                subprocess.run(["umount", "-l", self.vol.mnt], capture_output=True)
            self.power_cut()
            self.stats["killed_mounts"] += 1
        t = self.vol.mount()
        log_text = self.vol.daemon_log()
        if "journal transaction" in log_text:
            self.stats["replayed"] += 1
        m = re.search(r"freed (\d+) orphaned inode", log_text)
        if m:  # files unlinked while open or held (op_unlink_open)
            self.stats["orphans"] = self.stats.get("orphans", 0) + int(m.group(1))
        m = re.search(r"replayed (\d+) patch batch", log_text)
        if m:  # fsync'd patches no commit held (format version 5: fs/data/patch.c)
            self.stats["batch_mounts"] += 1
            self.stats["batches"] += int(m.group(1))
        # No bound on its time: on a busy machine the killed daemon's teardown
        # alone (the kernel ending its rings) has held the members for 5 s.
        # That a recovery resyncs only the regions with writes in flight is
        # the unit test raid_intent's (crash_resyncs_only_regions_in_flight).
        return t

    def run(self):
        for d in DIRS:
            os.mkdir(self.p(d))
        empty = self.statfs_free()
        t_clean = []
        for _ in range(2):
            self.vol.unmount()
            t_clean.append(self.vol.mount())
        self.clean_mount_s = max(min(t_clean), 0.02)
        log("clean mount takes %.3f s" % self.clean_mount_s)
        for it in range(1, self.iters + 1):
            base_path = os.path.join(self.vol.tmp, "base.%d.json" % it)
            log_path = os.path.join(self.vol.tmp, "log.%d" % it)
            with open(base_path, "w") as f:
                json.dump(self.base, f)
            open(log_path, "w").close()
            wseed = self.rng.getrandbits(48)
            delay = self.rng.uniform(0.05, 2.5)
            mode = self.rng.choice(["mixed", "mixed", "fsync", "syncfs"])
            self.stats["mode_" + mode] = self.stats.get("mode_" + mode, 0) + 1
            w = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--workload", self.vol.mnt,
                                  base_path, log_path, str(wseed), str(it), mode])
            t0 = time.monotonic()
            while time.monotonic() - t0 < delay:
                if w.poll() is not None:
                    with open(log_path) as f:
                        tail = f.readlines()[-3:]
                    raise TestFailure("iteration %d: the workload stopped before the kill (status %d): %s\n%s"
                                      % (it, w.returncode, "".join(tail), self.vol.daemon_log()))
                time.sleep(0.01)
            if self.rng.random() < 0.15:
                # the kill lands while the daemon writes everything out at unmount
                where = "during unmount"
                w.kill()
                w.wait()
                for _ in range(100):
                    if subprocess.run(["umount", self.vol.mnt], capture_output=True).returncode == 0:
                        break
                    time.sleep(0.05)
                time.sleep(self.rng.uniform(0, 0.03))
                self.vol.kill9()
                self.power_cut()
                self.stats["killed_unmounts"] = self.stats.get("killed_unmounts", 0) + 1
            else:
                where = "under the workload"
                self.vol.kill9()
                try:
                    w.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    w.kill()
                    w.wait()
                    raise TestFailure("iteration %d: the workload hung after the daemon died" % it)
                self.power_cut()
            state, _ = self.parse_log(log_path)
            t = self.recovery_mount(it)
            self.verify(it, state)
            log("iteration %d (%s): killed %s after %.2f s; recovery mount %.3f s; %d files acknowledged "
                "and intact" % (it, mode, where, delay, t, len(self.base)))
            if it % 2 == 0 or it == self.iters:
                # a clean unmount after recovery leaves nothing for fsck to fix
                self.vol.unmount()
                self.stats["fsck"] += self.vol.check_fsck()
                self.vol.mount()
        # the last state, once more after a clean remount
        self.vol.unmount()
        self.stats["fsck"] += self.vol.check_fsck()
        self.vol.mount()
        self.verify(self.iters + 1, {path: PathState(spec) for path, spec in self.base.items()})
        # nothing leaked across all the crashes: deleting every file gives back
        # exactly the space and inodes of the empty volume
        for path in self.base:
            os.unlink(self.p(path))
        self.vol.unmount()
        self.stats["fsck"] += self.vol.check_fsck()
        self.vol.mount()
        if self.statfs_free() != empty:
            raise TestFailure("after %d crashes and deleting every file: free (blocks, inodes) %s, "
                              "the empty volume had %s" % (self.iters, self.statfs_free(), empty))
        self.vol.unmount()


def main():
    if len(sys.argv) == 8 and sys.argv[1] == "--workload":
        return workload_main(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
                             sys.argv[7])
    powerloss = "--powerloss" in sys.argv[1:] or os.environ.get("IT_CRASH_POWERLOSS") == "1"
    seed = seed_from_env()
    iters = int(os.environ.get("IT_POWERLOSS_ITERS", "12") if powerloss else os.environ.get("IT_CRASH_ITERS", "25"))
    level = int(os.environ.get("IT_CRASH_LEVEL", str(5 if seed % 2 else 6)))
    nmembers = width_from_seed(level, seed, "IT_CRASH_MEMBERS")
    log("crash-kill9: seed %d (IT_SEED=%d to repeat), %d iterations, RAID%d x %d%s"
        % (seed, seed, iters, level, nmembers, ", each kill a power cut" if powerloss else ""))
    vol = Volume(level, nmembers, 256 * MiB)
    # for the workload: the data bytes of a stripe at mkfs's default chunk
    os.environ["IT_CRASH_STRIPE"] = str((nmembers - (1 if level == 5 else 2)) * 512 * 1024)
    undo_dir = None
    if powerloss:  # after mkfs: only the daemons keep undo logs
        undo_dir = os.path.join(vol.tmp, "undo")
        os.mkdir(undo_dir)
        os.environ["FRAMEFS_UNDO_DIR"] = undo_dir
    t0 = time.monotonic()
    c = None
    try:
        vol.mount()
        c = Crash(vol, seed, iters, undo_dir)
        c.run()
    except (TestFailure, OSError) as e:
        log("FAIL (seed %d): %s" % (seed, e))
        if isinstance(e, OSError):
            log(traceback.format_exc())
        log("daemon log:\n" + vol.daemon_log())
        return 1
    finally:
        vol.cleanup()
    s = c.stats
    log("PASS: seed %d, %d crash iterations (%d of them during an unmount, %d recovery mounts also killed, "
        "%d mounts replayed the journal, %d laid %d patch batches over their files, %d orphans freed), "
        "%d acknowledgements logged (%d small overwrites of large files among them, %d runs of them into one "
        "stripe), %d acknowledged files "
        "checked byte-identical, %d touched files checked for what survives, %d fsck -n -c runs clean%s, %.1f s"
        % (seed, iters, s.get("killed_unmounts", 0), s["killed_mounts"], s["replayed"],
           s["batch_mounts"], s["batches"], s.get("orphans", 0), s["acks"],
           s["small_acked"], s.get("dense", 0), s["exact"], s["partial"] + s["weak"], s["fsck"],
           ("; power cuts lost %d of %d unflushed member writes" % (s["lost"], s["unflushed"])) if powerloss else "",
           time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
