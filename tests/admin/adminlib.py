# Shared by the failure tests (tests/admin): file-backed arrays in /dev/shm,
# mounted by the real daemon through FUSE, driven through framefs-admin and
# the fault-injecting member.  Every file a test makes in /dev/shm, every
# mount and every daemon is undone by Vol.cleanup(), which each test calls
# in a finally block (SIGTERM from meson's timeout becomes SystemExit, so it
# runs then too).
#
# Environment (set by meson): FRAMEFS, MKFS, FSCK, ADMIN, FRAMETEST.
import hashlib
import json
import mmap
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time


class TestFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        raise TestFailure(msg)


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v else default


def seed_from_env():
    s = os.environ.get("ADMIN_SEED")
    seed = int(s) if s else int(time.time() * 1000) % 1000000007
    log("seed %d (ADMIN_SEED=%d to repeat)" % (seed, seed))
    return seed


signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
signal.signal(signal.SIGINT, lambda *_: sys.exit(130))


class Vol:
    """One array of file members in /dev/shm and its mount."""

    def __init__(self, level, nmembers, member_size, spares=0, mkfs_args=()):
        self.framefs = os.environ["FRAMEFS"]
        self.mkfs = os.environ["MKFS"]
        self.fsck = os.environ["FSCK"]
        self.admin_exe = os.environ["ADMIN"]
        self.frametest = os.environ.get("FRAMETEST", "")
        self.tmp = tempfile.mkdtemp(prefix="ffadm.")
        os.chmod(self.tmp, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.base = "/dev/shm/" + os.path.basename(self.tmp)
        self.member_size = member_size
        self.made = []          # every /dev/shm file this test created
        self.daemon = None
        self.nmounts = 0
        self.log_path = None
        self.level = level
        try:
            self.members = [self.new_file("m%d" % i) for i in range(nmembers)]
            self.spares = [self.new_file("s%d" % i) for i in range(spares)]
            args = [self.mkfs, "-q", "-f", "-l", str(level), *mkfs_args]
            for s in self.spares:
                args += ["-s", s]
            r = subprocess.run(args + self.members, capture_output=True, text=True)
            if r.returncode != 0:
                raise TestFailure("mkfs.framefs failed: " + r.stderr)
        except BaseException:
            self.cleanup()  # nothing is left in /dev/shm, whatever went wrong
            raise

    # ---- members ----------------------------------------------------------
    def new_file(self, name, size=None):
        p = "%s.%s" % (self.base, name)
        with open(p, "wb") as f:
            f.truncate(size or self.member_size)
        if p not in self.made:
            self.made.append(p)
        return p

    def spec(self):
        return ",".join(self.members + self.spares)

    # ---- daemon -----------------------------------------------------------
    def is_mounted(self):
        def unescape(field):  # /proc/mounts writes a space as \040
            return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
        with open("/proc/mounts") as f:
            return any(unescape(line.split()[1]) == self.mnt and line.split()[2] == "fuse.framefs"
                       for line in f)

    def daemon_log(self, lines=40):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except (OSError, TypeError):
            return ""

    def full_log(self):
        return self.daemon_log(100000)

    def mount(self, *opts, env=None, paths=None, timeout_s=60, expect_fail=False):
        self.nmounts += 1
        self.log_path = os.path.join(self.tmp, "daemon.%d.log" % self.nmounts)
        args = [self.framefs, "-f"]
        if opts:
            args += ["-o", ",".join(opts)]
        e = dict(os.environ)
        e.pop("FRAMEFS_FAULT", None)
        if env:
            e.update(env)
        spec = ",".join(paths) if paths else self.spec()
        with open(self.log_path, "w") as logf:
            self.daemon = subprocess.Popen(args + [spec, self.mnt], stdout=logf,
                                           stderr=subprocess.STDOUT, env=e)
        t0 = time.monotonic()
        while not self.is_mounted():
            if self.daemon.poll() is not None:
                rc = self.daemon.returncode
                self.daemon = None
                if expect_fail:
                    return rc
                raise TestFailure("framefs exited (%d) instead of mounting:\n%s"
                                  % (rc, self.daemon_log()))
            if time.monotonic() - t0 > timeout_s:
                raise TestFailure("framefs did not mount within %d s" % timeout_s)
            time.sleep(0.02)
        check(not expect_fail, "framefs mounted although it should have refused")
        # the control socket comes up right after the mount
        self.wait_for(lambda: os.path.exists(self.sock_path()), 10, "the control socket")
        return 0

    def sock_path(self):
        name = ""
        for ch in os.path.realpath(self.mnt).lstrip("/").encode():
            c = chr(ch)
            if c == "/":
                name += "_"
            elif c.isascii() and (c.isalnum() or c in ".-"):
                name += c
            else:
                name += "%%%02x" % ch
        return "/run/framefs/%s.sock" % (name or "_")

    def unmount(self, expect_rc=0):
        for _ in range(100):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        check(not self.is_mounted(), "cannot unmount " + self.mnt)
        rc = self.daemon.wait(timeout=300)
        self.daemon = None
        if expect_rc is not None and rc != expect_rc:
            raise TestFailure("framefs exited %d after unmount:\n%s" % (rc, self.daemon_log(400)))
        return rc

    def kill9(self):
        self.daemon.kill()
        self.daemon.wait()
        self.daemon = None
        if subprocess.run(["umount", self.mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        check(not self.is_mounted(), "cannot detach the dead mount")

    def fsck_clean(self, paths=None):
        r = subprocess.run([self.fsck, "-n", "-c", *(paths or self.members)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise TestFailure("fsck.framefs -n -c found problems (status %d):\n%s%s"
                              % (r.returncode, r.stdout, r.stderr))

    # ---- framefs-admin ----------------------------------------------------
    def admin(self, *args, expect=0, timeout=300, user=None):
        """Run framefs-admin; return (exit status, stdout, stderr)."""
        r = subprocess.run([self.admin_exe, *args], capture_output=True, text=True,
                           timeout=timeout, user=user)
        if expect is not None and r.returncode != expect:
            raise TestFailure("framefs-admin %s: exit %d, expected %d\nstdout: %s\nstderr: %s\n"
                              "daemon log:\n%s" % (" ".join(args), r.returncode, expect,
                                                   r.stdout, r.stderr, self.daemon_log()))
        return r.returncode, r.stdout, r.stderr

    def adminj(self, *args, expect=0, timeout=300):
        _, out, _ = self.admin("--json", *args, expect=expect, timeout=timeout)
        try:
            return json.loads(out)
        except ValueError:
            raise TestFailure("framefs-admin --json %s printed no JSON: %r" % (" ".join(args), out))

    def status(self):
        return self.adminj("status", self.mnt)

    def roles(self, st=None):
        st = st or self.status()
        return [(m["role"], m["state"], m["path"]) for m in st["members"]]

    def wait_for(self, pred, timeout_s, what):
        t0 = time.monotonic()
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() - t0 > timeout_s:
                raise TestFailure("timed out after %d s waiting for %s\n%s"
                                  % (timeout_s, what, self.daemon_log()))
            time.sleep(0.05)

    def rebuild_wait(self, timeout=600):
        """framefs-admin rebuild: resume and follow it to the end."""
        self.admin("rebuild", "--quiet", self.mnt, timeout=timeout)
        st = self.status()
        check(st["state"] == "clean", "after the rebuild the array is %s: %s"
              % (st["state"], st["state_reason"]))
        return st

    def cleanup(self):
        try:
            if self.is_mounted():
                if subprocess.run(["umount", self.mnt], capture_output=True).returncode != 0:
                    subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            if self.daemon is not None and self.daemon.poll() is None:
                self.daemon.terminate()
                try:
                    self.daemon.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.daemon.kill()
                    self.daemon.wait()
        finally:
            for p in self.made:
                try:
                    os.unlink(p)
                except OSError:
                    pass
            subprocess.run(["rm", "-rf", self.tmp])


# ---- data -----------------------------------------------------------------

def write_file(path, size, rng):
    """A file of pseudo-random bytes; returns its sha256."""
    h = hashlib.sha256()
    block = rng.randbytes(1 << 20)
    with open(path, "wb") as f:
        left = size
        i = 0
        while left:
            n = min(left, len(block))
            # vary each MiB so that no two chunks are alike
            chunk = i.to_bytes(8, "little") + block[8:n] if n >= 8 else block[:n]
            f.write(chunk)
            h.update(chunk)
            left -= n
            i += 1
    return h.hexdigest()


def write_set(root, rng, sizes):
    """Files of the given sizes under root; returns {relative path: sha256}."""
    want = {}
    os.makedirs(root, exist_ok=True)
    for i, size in enumerate(sizes):
        d = os.path.join(root, "shot%02d" % (i % 3))
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, "clip%03d.mov" % i)
        want[os.path.relpath(p, root)] = write_file(p, size, rng)
    return want


def sha256_direct(path):
    """sha256 of a file read with O_DIRECT: the daemon answers every read,
    not the page cache."""
    buf = mmap.mmap(-1, 4 << 20)
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        while True:
            n = os.readv(fd, [buf])
            if n == 0:
                break
            h.update(memoryview(buf)[:n])
    finally:
        os.close(fd)
        buf.close()
    return h.hexdigest()


def verify_set(root, want, when):
    for rel, digest in sorted(want.items()):
        try:
            got = sha256_direct(os.path.join(root, rel))
        except OSError as e:
            raise TestFailure("%s: cannot read %s: %s" % (when, rel, e))
        check(got == digest, "%s: %s has sha256 %s, expected %s" % (when, rel, got, digest))


def corrupt_member(path, start, end, chunk, rng):
    """Flip one bit in 3 places of every non-zero chunk in [start, end)."""
    zero = bytes(chunk)
    hit = 0
    with open(path, "r+b") as f:
        for off in range(start, end, chunk):
            f.seek(off)
            data = f.read(chunk)
            if len(data) < chunk or data == zero:
                continue
            for _ in range(3):
                pos = rng.randrange(chunk)
                f.seek(off + pos)
                f.write(bytes([data[pos] ^ (1 << rng.randrange(8))]))
            hit += 1
    return hit


def member_data_area(st):
    g = st["geometry"]
    return g["data_offset"], g["data_offset"] + g["nstripes"] * st["chunk_bytes"]


def frametest(vol, *args, timeout=600):
    """framefs-frametest --json; returns its summary (dict) and exit status."""
    r = subprocess.run([vol.frametest, "--json", "-u", "0", *args], capture_output=True,
                       text=True, timeout=timeout)
    try:
        summary = json.loads(r.stdout)
    except ValueError:
        raise TestFailure("frametest %s printed no JSON (exit %d): %s %s"
                          % (" ".join(args), r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return summary, r.returncode


def run_test(fn):
    """Run fn(); print ok / FAIL; exit 0 / 1 (never 77: a skip is a failure here)."""
    try:
        fn()
    except TestFailure as e:
        log("FAIL: %s" % e)
        sys.exit(1)
    log("PASS")
    sys.exit(0)
