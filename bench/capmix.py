#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/capmix.py: the files bench/capacity.sh fills a volume with, and their check.

  capmix.py mix DIR MANIFEST [options]     the facility mix, in one seeded order, until ENOSPC
  capmix.py small DIR MANIFEST [options]   COUNT files of SIZE bytes (4 KiB), until ENOSPC
  capmix.py verify DIR MANIFEST            read back every file the manifest lists

The facility mix (mix), one step per frame number i = 0, 1, 2, ...:
  - i % XML_EVERY == 0: dpx/A001C003_NNNN.xml (XML_MIN..XML_MAX bytes, seeded)
  - dpx/A001C003.IIIIIII.dpx, DPX_BYTES (4096 x 2160 x 4 by default: a 4K DPX frame)
  - dpx/._A001C003.IIIIIII.dpx, SIDECAR bytes (4 KiB: the AppleDouble file macOS leaves)
  - i % XML_EVERY == 0: exr/B002C001_NNNN.xml (seeded, as above)
  - exr/B002C001.IIIIIII.exr, EXR_MIN..EXR_MAX bytes (seeded: a compressed EXR frame)
The sizes come from random.Random(SEED) in this order, so two filesystems given the same seed
get the same files in the same order. Every file is written (plain buffered writes of at most
1 MiB) and closed; a file counts when every write and its close succeeded. The first ENOSPC
(at open, write or close) stops the fill: that file does not count, and nothing after it is
tried (a --probe file of SIDECAR bytes is then tried in probe/, to tell whether small files
still fit; it does not count). Any other error fails the run (exit 1).

Every 1 MiB piece of file k starts with its own 16-byte tag (k, piece) followed by seeded
random bytes at an offset that depends on k and the piece, so that verify catches a piece
that went to the wrong file or the wrong place.

The manifest lists the files that count ("k size path"); the last line printed on stdout is
  RESULT files=N bytes=B ... stop=ENOSPC|limit stopped_at=PATH stopped_size=S ...
"""
import argparse
import errno
import os
import random
import sys
import threading
import time

PIECE = 1 << 20  # write unit
SPAN = 1024  # content offsets: 4 KiB steps within 4 MiB
BUF_LEN = SPAN * 4096 + PIECE


def make_buf(seed):
    return random.Random(seed ^ 0x5EED).randbytes(BUF_LEN)


def piece(buf, k, j, n):
    """Bytes [j MiB, j MiB + n) of file k (n <= 1 MiB)."""
    tag = b"%08x%08x" % (k & 0xFFFFFFFF, j & 0xFFFFFFFF)
    s = ((k * 977 + j * 131) % SPAN) * 4096
    if n <= len(tag):
        return tag[:n]
    return tag + buf[s + len(tag) : s + n]


class Stop(Exception):
    def __init__(self, where, written):
        super().__init__(where)
        self.where = where
        self.written = written


def write_file(path, size, k, buf, fsync=False):
    """Write file k of size bytes; raises Stop on ENOSPC (where: open/write/close/fsync)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise Stop("open", 0)
        raise
    done = 0
    try:
        j = 0
        while done < size:
            n = min(PIECE, size - done)
            data = piece(buf, k, j, n)
            off = 0
            while off < n:
                try:
                    off += os.write(fd, data[off:] if off else data)
                except OSError as e:
                    if e.errno == errno.ENOSPC:
                        raise Stop("write", done + off)
                    raise
            done += n
            j += 1
        if fsync:
            try:
                os.fsync(fd)
            except OSError as e:
                if e.errno == errno.ENOSPC:
                    raise Stop("fsync", done)
                raise
        if size >= 8 * PIECE:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    try:
        os.close(fd)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise Stop("close", done)
        raise


def mix_plan(a):
    """(k, path, size, kind) in the mix's order, forever."""
    rng = random.Random(a.seed)
    k = 0
    i = 0
    while True:
        if i % a.xml_every == 0:
            yield k, "dpx/A001C003_%04d.xml" % (i // a.xml_every), rng.randint(a.xml_min, a.xml_max), "xml"
            k += 1
        yield k, "dpx/A001C003.%07d.dpx" % i, a.dpx_bytes, "dpx"
        k += 1
        yield k, "dpx/._A001C003.%07d.dpx" % i, a.sidecar, "sidecar"
        k += 1
        if i % a.xml_every == 0:
            yield k, "exr/B002C001_%04d.xml" % (i // a.xml_every), rng.randint(a.xml_min, a.xml_max), "xml"
            k += 1
        yield k, "exr/B002C001.%07d.exr" % i, rng.randint(a.exr_min, a.exr_max), "exr"
        k += 1
        i += 1


def free_bytes(d):
    st = os.statvfs(d)
    return st.f_bavail * st.f_frsize


def cmd_mix(a):
    buf = make_buf(a.seed)
    for sub in ("dpx", "exr"):
        os.makedirs(os.path.join(a.dir, sub), exist_ok=True)
    counts = {"dpx": 0, "exr": 0, "sidecar": 0, "xml": 0}
    nbytes = 0
    files = 0
    stop = "ENOSPC"
    stopped = None
    t0 = time.monotonic()
    last = t0
    with open(a.manifest, "w") as man:
        for k, rel, size, kind in mix_plan(a):
            if a.limit_bytes and nbytes + size > a.limit_bytes:
                stop = "limit"
                stopped = (rel, size, "limit", 0)
                break
            try:
                write_file(os.path.join(a.dir, rel), size, k, buf, a.fsync)
            except Stop as s:
                stopped = (rel, size, s.where, s.written)
                break
            man.write("%d %d %s\n" % (k, size, rel))
            files += 1
            nbytes += size
            counts[kind] += 1
            now = time.monotonic()
            if now - last >= 10:
                print("  capmix: %d files, %.2f GB, %.0f MB/s" % (files, nbytes / 1e9, nbytes / 1e6 / (now - t0)),
                      file=sys.stderr)
                last = now
    secs = time.monotonic() - t0
    free = free_bytes(a.dir)
    probe = "-"
    if a.probe and stop == "ENOSPC":
        os.makedirs(os.path.join(a.dir, "probe"), exist_ok=True)
        try:
            write_file(os.path.join(a.dir, "probe", "._after_enospc"), a.sidecar, 1 << 30, buf)
            probe = "fits"
        except Stop as s:
            probe = "ENOSPC_at_" + s.where
        except OSError as e:
            probe = errno.errorcode.get(e.errno, str(e.errno))
    rel, size, where, written = stopped
    print("RESULT files=%d bytes=%d dpx=%d exr=%d sidecars=%d xml=%d stop=%s stopped_at=%s stopped_size=%d "
          "stopped_in=%s stopped_written=%d free_after=%d probe_4k=%s secs=%.1f"
          % (files, nbytes, counts["dpx"], counts["exr"], counts["sidecar"], counts["xml"], stop, rel, size,
             where, written, free, probe, secs))
    return 0


def small_path(a, i):
    return os.path.join(a.dir, "s%03d" % (i // a.per_dir), "._f%07d" % i)


def cmd_small(a):
    buf = make_buf(a.seed)
    for d in range((a.count + a.per_dir - 1) // a.per_dir):
        os.makedirs(os.path.join(a.dir, "s%03d" % d), exist_ok=True)
    stop = threading.Event()
    done = [[] for _ in range(a.threads)]
    first = []  # (i, where) of each thread's ENOSPC
    errors = []
    lock = threading.Lock()
    progress = [0]

    def worker(t):
        try:
            for i in range(t, a.count, a.threads):
                if stop.is_set():
                    return
                try:
                    write_file(small_path(a, i), a.size, i, buf)
                except Stop as s:
                    with lock:
                        first.append((i, s.where))
                    stop.set()
                    return
                done[t].append(i)
                if len(done[t]) % 1000 == 0:
                    with lock:
                        progress[0] += 1000
        except OSError as e:
            with lock:
                errors.append("%s: %s" % (small_path(a, i), e))
            stop.set()

    t0 = time.monotonic()
    ths = [threading.Thread(target=worker, args=(t,)) for t in range(a.threads)]
    for th in ths:
        th.start()
    last = t0
    while any(th.is_alive() for th in ths):
        time.sleep(0.5)
        now = time.monotonic()
        if now - last >= 15:
            print("  capmix: about %d files of %d B, %.0f/s" % (progress[0], a.size, progress[0] / (now - t0)),
                  file=sys.stderr)
            last = now
    for th in ths:
        th.join()
    secs = time.monotonic() - t0
    if errors:
        print("capmix.py: " + errors[0], file=sys.stderr)
        return 1
    ok = sorted(i for d in done for i in d)
    with open(a.manifest, "w") as man:
        for i in ok:
            man.write("%d %d %s\n" % (i, a.size, os.path.relpath(small_path(a, i), a.dir)))
    where = first[0][1] if first else "-"
    print("RESULT files=%d bytes=%d stop=%s stopped_in=%s first_failed=%s free_after=%d secs=%.1f rate=%.0f"
          % (len(ok), len(ok) * a.size, "ENOSPC" if first else "count", where,
             min(f[0] for f in first) if first else "-", free_bytes(a.dir), secs, len(ok) / secs if secs else 0))
    return 0


def cmd_verify(a):
    buf = make_buf(a.seed)
    entries = []
    with open(a.manifest) as man:
        for line in man:
            k, size, rel = line.rstrip("\n").split(" ", 2)
            entries.append((int(k), int(size), rel))
    bad = []
    nbytes = [0]
    lock = threading.Lock()

    def check(part):
        for k, size, rel in part:
            p = os.path.join(a.dir, rel)
            try:
                st = os.stat(p)
                why = None
                if st.st_size != size:
                    why = "size %d, expected %d" % (st.st_size, size)
                else:
                    with open(p, "rb", buffering=0) as f:
                        j = 0
                        off = 0
                        while off < size:
                            n = min(PIECE, size - off)
                            got = f.read(n)
                            if got != piece(buf, k, j, n):
                                why = "bytes differ in [%d, %d)" % (off, off + n)
                                break
                            off += n
                            j += 1
                        if why is None and size >= 8 * PIECE:
                            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            except OSError as e:
                why = str(e)
            with lock:
                if why:
                    bad.append("%s: %s" % (rel, why))
                else:
                    nbytes[0] += size

    t0 = time.monotonic()
    parts = [entries[t :: a.threads] for t in range(a.threads)]
    ths = [threading.Thread(target=check, args=(p,)) for p in parts]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    for b in bad[:10]:
        print("capmix.py: verify: " + b, file=sys.stderr)
    print("RESULT verified=%d bytes=%d bad=%d secs=%.1f" % (len(entries) - len(bad), nbytes[0], len(bad),
                                                          time.monotonic() - t0))
    return 1 if bad else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("mix", "small", "verify"):
        s = sub.add_parser(name)
        s.add_argument("dir")
        s.add_argument("manifest")
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("--threads", type=int, default=4 if name != "mix" else 1)
        if name == "mix":
            s.add_argument("--dpx-bytes", type=int, default=4096 * 2160 * 4)
            s.add_argument("--exr-min", type=int, default=3_000_000)
            s.add_argument("--exr-max", type=int, default=60_000_000)
            s.add_argument("--sidecar", type=int, default=4096)
            s.add_argument("--xml-min", type=int, default=2048)
            s.add_argument("--xml-max", type=int, default=8192)
            s.add_argument("--xml-every", type=int, default=100)
            s.add_argument("--limit-bytes", type=int, default=0, help="stop before this many bytes")
            s.add_argument("--fsync", action="store_true", help="fsync every file before its close")
            s.add_argument("--probe", action="store_true", help="after ENOSPC, try one sidecar-sized file")
        if name == "small":
            s.add_argument("--count", type=int, default=100000)
            s.add_argument("--size", type=int, default=4096)
            s.add_argument("--per-dir", type=int, default=10000)
    a = p.parse_args()
    if a.threads < 1:
        p.error("--threads must be at least 1")
    if a.cmd == "mix":
        if not (0 < a.exr_min <= a.exr_max) or a.dpx_bytes <= 0 or a.xml_every <= 0:
            p.error("sizes must be positive, --exr-min <= --exr-max")
        return cmd_mix(a)
    if a.cmd == "small":
        if a.count <= 0 or a.size <= 0 or a.per_dir <= 0:
            p.error("--count, --size and --per-dir must be positive")
        return cmd_small(a)
    return cmd_verify(a)


if __name__ == "__main__":
    sys.exit(main())
