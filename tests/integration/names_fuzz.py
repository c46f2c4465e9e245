#!/usr/bin/env python3
# Proves: directory entries take any name Linux allows — every byte value
# except '/' and NUL, 1 to 255 bytes, names that differ in one byte, names
# that are prefixes of each other, UTF-8 and invalid UTF-8 — exactly: a
# seeded fuzz of create/mkdir/symlink/link/rename/unlink/rmdir with random
# names checks every result against a model (EEXIST for a name taken,
# ENOENT for one not there, ENAMETOOLONG beyond 255 bytes), lookups and
# listings byte for byte, and the whole namespace again after a remount.
#
#   IT_SEED=N            the seed (printed; default from the clock)
#   IT_FUZZ_CASES=N      fuzz cases (default 3000; the volume grows by 4 x 128 MiB per 3000)
import errno
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import TestFailure, Volume, drop_caches, log, seed_from_env  # noqa: E402

MiB = 1 << 20


class NameFuzz:
    def __init__(self, vol, seed, ncases):
        self.vol = vol
        self.rng = random.Random(seed)
        self.ncases = ncases
        self.mnt = os.fsencode(vol.mnt)
        self.dirs = {b"": set()}      # directory (relative, bytes) -> names in it
        self.kind = {}                # relative path -> "f", "d" or "l"
        self.content = {}             # relative path -> a file's bytes or a symlink's target
        self.case = 0
        self.passed = 0

    def p(self, rel):
        return self.mnt + b"/" + rel if rel else self.mnt

    def fail(self, msg):
        raise TestFailure("case %d: %s" % (self.case, msg))

    def rand_name(self):
        r = self.rng.random()
        if r < 0.3:
            n = self.rng.randint(1, 255)
            b = bytes(self.rng.choice([c for c in range(1, 256) if c != 0x2F]) for _ in range(n))
        elif r < 0.5:
            b = "".join(self.rng.choice("éüñ漢字フレーム🎞️αβγ_-. ") for _ in range(self.rng.randint(1, 60))).encode()
            b = b[:255]
        elif r < 0.65 and any(self.dirs.values()):
            # a neighbour of an existing name: one byte changed, one added or removed
            d = self.rng.choice([d for d in self.dirs if self.dirs[d]])
            base = self.rng.choice(sorted(self.dirs[d]))
            k = self.rng.randint(0, 2)
            i = self.rng.randrange(len(base))
            if k == 0:
                c = self.rng.choice([c for c in range(1, 256) if c not in (0x2F, base[i])])
                b = base[:i] + bytes([c]) + base[i + 1:]
            elif k == 1 and len(base) < 255:
                b = base + bytes([self.rng.choice(b"xyz0")])
            else:
                b = base[:-1] if len(base) > 1 else base + b"q"
        elif r < 0.75:
            b = b"frame%07d.dpx" % self.rng.randint(0, 99)
        else:
            b = bytes(self.rng.choice(b"abc._-") for _ in range(self.rng.randint(1, 8)))
        if b in (b".", b".."):
            b += b"x"
        return b

    def rand_dir(self):
        return self.rng.choice(sorted(self.dirs))

    def join(self, d, n):
        return d + b"/" + n if d else n

    def expect(self, fn, err, what):
        try:
            fn()
        except OSError as e:
            if e.errno != err:
                self.fail("%s: expected %s, got %s" % (what, errno.errorcode[err], e))
            return
        self.fail("%s: expected %s, it succeeded" % (what, errno.errorcode[err]))

    def add(self, d, n, kind):
        self.dirs[d].add(n)
        rel = self.join(d, n)
        self.kind[rel] = kind
        if kind == "d":
            self.dirs[rel] = set()

    def remove(self, d, n):
        self.dirs[d].discard(n)
        rel = self.join(d, n)
        k = self.kind.pop(rel)
        self.content.pop(rel, None)
        if k == "d":
            del self.dirs[rel]

    def one_case(self):
        d = self.rand_dir()
        self.last_dir = d
        n = self.rand_name()
        rel = self.join(d, n)
        taken = n in self.dirs[d]
        op = self.rng.choices(["file", "mkdir", "symlink", "link", "rename", "unlink", "long"],
                              [30, 8, 8, 6, 15, 20, 3])[0]
        self.last = "%s %r in %r" % (op, n, d)
        if op == "long":
            long = n + b"L" * (256 - len(n) + self.rng.randint(0, 300))
            self.expect(lambda: os.open(self.p(self.join(d, long)), os.O_CREAT | os.O_WRONLY), errno.ENAMETOOLONG,
                        "create with a %d-byte name" % len(long))
            self.expect(lambda: os.stat(self.p(self.join(d, long))), errno.ENAMETOOLONG, "stat of a long name")
            return
        if op in ("file", "mkdir", "symlink"):
            if taken:
                if op == "file":
                    self.expect(lambda: os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY),
                                errno.EEXIST, "create of a taken name")
                elif op == "mkdir":
                    self.expect(lambda: os.mkdir(self.p(rel)), errno.EEXIST, "mkdir of a taken name")
                else:
                    self.expect(lambda: os.symlink(b"t", self.p(rel)), errno.EEXIST, "symlink of a taken name")
                return
            if op == "file":
                data = n * self.rng.randint(1, 3) if self.rng.random() < 0.1 else b""  # data: a stripe each
                fd = os.open(self.p(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.write(fd, data)
                os.close(fd)
                self.add(d, n, "f")
                self.content[rel] = data
            elif op == "mkdir":
                if len(self.dirs) > 40:
                    return
                os.mkdir(self.p(rel))
                self.add(d, n, "d")
            else:
                os.symlink(n, self.p(rel))
                self.add(d, n, "l")
                self.content[rel] = n
            self.check_entry(d, n)
            return
        if op == "link":
            files = [r for r, k in self.kind.items() if k == "f"]
            if not files:
                return
            src = self.rng.choice(sorted(files))
            if taken:
                self.expect(lambda: os.link(self.p(src), self.p(rel)), errno.EEXIST, "link to a taken name")
                return
            os.link(self.p(src), self.p(rel))
            self.add(d, n, "f")
            self.content[rel] = self.content[src]
            self.check_entry(d, n)
            return
        if op == "rename":
            cands = [r for r in self.kind if self.kind[r] != "d"]
            if not cands:
                return
            src = self.rng.choice(sorted(cands))
            sd, _, sn = src.rpartition(b"/")
            if taken and self.kind[rel] == "d":
                # Linux checks "target is an ancestor of the source" first (ENOTEMPTY)
                err = errno.ENOTEMPTY if src.startswith(rel + b"/") else errno.EISDIR
                self.expect(lambda: os.rename(self.p(src), self.p(rel)), err, "rename over a directory")
                return
            if src == rel:
                return
            os.rename(self.p(src), self.p(rel))
            k = self.kind[src]
            data = self.content.get(src)
            if taken:
                self.remove(d, n)
            self.remove(sd, sn)
            self.add(d, n, k)
            if data is not None:
                self.content[rel] = data
            self.expect(lambda: os.lstat(self.p(src)), errno.ENOENT, "old name after rename")
            self.check_entry(d, n)
            return
        # unlink / rmdir
        if not taken:
            self.expect(lambda: os.unlink(self.p(rel)), errno.ENOENT, "unlink of a name not there")
            return
        if self.kind[rel] == "d":
            if self.dirs[rel]:
                self.expect(lambda: os.rmdir(self.p(rel)), errno.ENOTEMPTY, "rmdir of a non-empty directory")
                return
            os.rmdir(self.p(rel))
        else:
            os.unlink(self.p(rel))
        self.remove(d, n)
        self.expect(lambda: os.lstat(self.p(rel)), errno.ENOENT, "name after unlink")

    def check_entry(self, d, n):
        rel = self.join(d, n)
        st = os.lstat(self.p(rel))
        k = self.kind[rel]
        import stat as S
        ok = {"f": S.S_ISREG, "d": S.S_ISDIR, "l": S.S_ISLNK}[k](st.st_mode)
        if not ok:
            self.fail("%r is not a %s" % (rel, k))
        if k == "l" and os.readlink(self.p(rel)) != self.content[rel]:
            self.fail("symlink %r target differs" % rel)
        if k == "f":
            with open(self.p(rel), "rb") as f:
                if f.read() != self.content[rel]:
                    self.fail("content of %r differs" % rel)

    def check_all(self, why):
        for d, names in self.dirs.items():
            got = set(os.listdir(self.p(d)))
            if got != names:
                self.fail("%s: listing of %r: extra %r, missing %r"
                          % (why, d, sorted(got - names)[:3], sorted(names - got)[:3]))
            for n in names:
                self.check_entry(d, n)

    def run(self):
        for self.case in range(1, self.ncases + 1):
            try:
                self.one_case()
            except OSError as e:
                st = os.statvfs(self.mnt)
                self.fail("unexpected %s (%s; %d entries in that directory; free: %d blocks, %d inodes)"
                          % (e, self.last, len(self.dirs[self.last_dir]), st.f_bfree, st.f_ffree))
            self.passed += 1
            if self.case % 500 == 0:
                drop_caches()
                self.check_all("after %d cases" % self.case)
        self.check_all("at the end")
        self.vol.unmount()
        self.vol.check_fsck()
        self.vol.mount()
        self.check_all("after a remount")


def main():
    seed = seed_from_env()
    ncases = int(os.environ.get("IT_FUZZ_CASES", "3000"))
    log("names-fuzz: seed %d (IT_SEED=%d to repeat), %d cases" % (seed, seed, ncases))
    # every file with data takes a whole stripe (1.5 MiB here): about 3.6 % of
    # the cases leave one behind, 188 of them fill 4 x 128 MiB by case ~5300
    vol = Volume(5, 4, 128 * MiB * max(1, -(-ncases // 3000)))
    t0 = time.monotonic()
    try:
        vol.mount()
        f = NameFuzz(vol, seed, ncases)
        f.run()
        vol.unmount()
        vol.check_fsck()
    except TestFailure as e:
        log("FAIL (seed %d): %s" % (seed, e))
        log("daemon log:\n" + vol.daemon_log())
        return 1
    finally:
        vol.cleanup()
    log("PASS: seed %d, %d fuzz cases, %d entries at the end, %.1f s"
        % (seed, f.passed, sum(len(v) for v in f.dirs.values()), time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
