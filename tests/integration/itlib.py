# Shared by the Python integration tests: a file-backed array in /dev/shm
# mounted by the real daemon (framefs -f, our child).  Everything made is
# undone by Volume.cleanup(), which the tests call in a finally block (and
# on SIGTERM from meson's timeout).
#
# Environment: FRAMEFS, MKFS, FSCK (the built binaries).
import os
import signal
import subprocess
import sys
import tempfile
import time



# IT_TRANSPORT=io_uring (or dev) runs a test's mounts over that FUSE transport
# (-o transport=...) unless the test chose one; each clean unmount checks
# that the daemon served it over that transport (lib.sh does the same).
def with_transport(opts):
    t = os.environ.get("IT_TRANSPORT")
    if t and not any(o.startswith("transport=") for o in opts):
        return tuple(opts) + ("transport=" + t,)
    return tuple(opts)


def check_transport(log, t):
    said = {"io_uring": "FUSE over io_uring", "dev": "FUSE over /dev/fuse"}[t]
    if said not in log:
        raise TestFailure("IT_TRANSPORT=%s, but the daemon did not say '%s':\n" % (t, said)
                          + log[-3000:])

class TestFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


class Volume:
    def __init__(self, level, nmembers, member_size, mkfs_args=()):
        self.framefs = os.environ["FRAMEFS"]
        self.mkfs = os.environ["MKFS"]
        self.fsck = os.environ["FSCK"]
        self.tmp = tempfile.mkdtemp(prefix="ffit.")
        os.chmod(self.tmp, 0o755)
        self.mnt = os.path.join(self.tmp, "mnt")
        os.mkdir(self.mnt)
        self.members = ["/dev/shm/%s.m%d" % (os.path.basename(self.tmp), i) for i in range(nmembers)]
        self.spec = ",".join(self.members)
        self.daemon = None
        self.nmounts = 0
        self.transport_check = None
        self.log_path = None
        self.level = level
        for m in self.members:
            with open(m, "wb") as f:
                f.truncate(member_size)
        r = subprocess.run([self.mkfs, "-q", "-f", "-l", str(level), *mkfs_args, *self.members],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise TestFailure("mkfs.framefs failed: " + r.stderr)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))

    def is_mounted(self):
        with open("/proc/mounts") as f:
            return any(line.split()[1] == self.mnt and line.split()[2] == "fuse.framefs"
                       for line in f)

    def daemon_log(self, lines=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-lines:])
        except (OSError, TypeError):
            return ""

    def mount(self, *opts, timeout_s=60):
        """Start the daemon; returns the seconds it took until the mount showed."""
        self.nmounts += 1
        self.log_path = os.path.join(self.tmp, "daemon.%d.log" % self.nmounts)
        args = [self.framefs, "-f"]
        opts = with_transport(opts)
        # the unmount checks the daemon served what IT_TRANSPORT asked for
        t = os.environ.get("IT_TRANSPORT")
        self.transport_check = t if t in ("io_uring", "dev") and "transport=" + t in opts else None
        if opts:
            args += ["-o", ",".join(opts)]
        t0 = time.monotonic()
        with open(self.log_path, "w") as logf:
            self.daemon = subprocess.Popen(args + [self.spec, self.mnt], stdout=logf,
                                           stderr=subprocess.STDOUT)
        while not self.is_mounted():
            if self.daemon.poll() is not None:
                raise TestFailure("framefs exited (%d) instead of mounting:\n%s"
                                  % (self.daemon.returncode, self.daemon_log()))
            if time.monotonic() - t0 > timeout_s:
                raise TestFailure("framefs (mount %d) did not mount within %d s; members held by: %s;"
                                  " its log:\n%s\nits threads:\n%s"
                                  % (self.nmounts, timeout_s, self.holders(), self.daemon_log(),
                                     self.stacks()))
            time.sleep(0.02)
        return time.monotonic() - t0

    def wait_ctl(self, timeout_s=10):
        """The control socket framefs-admin talks to (as lib.sh it_wait_ctl):
        the daemon opens it just after the mount shows.  Polled, bounded."""
        name = ""
        for c in self.mnt.lstrip("/"):
            name += "_" if c == "/" else c if c.isascii() and (c.isalnum() or c in ".-") \
                else "".join("%%%02x" % b for b in c.encode())
        sock = "/run/framefs/%s.sock" % (name or "_")
        t0 = time.monotonic()
        while not os.path.exists(sock):
            if time.monotonic() - t0 > timeout_s:
                raise TestFailure("no control socket %s %d s after the mount" % (sock, timeout_s))
            time.sleep(0.05)

    def holders(self):
        """The processes with a member open, as "pid (comm)", or "none"
        (the kernel's own reference, e.g. a dead process's io_uring teardown)."""
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fds = os.listdir("/proc/%s/fd" % pid)
                if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) in self.members for fd in fds):
                    with open("/proc/%s/comm" % pid) as f:
                        found.append("%s (%s)" % (pid, f.read().strip()))
            except OSError:
                continue
        return ", ".join(found) or "none"

    def stacks(self):
        """Every thread's stack of the running daemon, by gdb (a hung mount's
        only witness once the test's tmp folder is gone)."""
        try:
            r = subprocess.run(["gdb", "-p", str(self.daemon.pid), "-batch", "-nx",
                                "-ex", "thread apply all bt 20"],
                               capture_output=True, text=True, timeout=60)
            return "\n".join(l for l in r.stdout.splitlines() if l.startswith(("#", "Thread")))
        except (OSError, subprocess.TimeoutExpired) as e:
            return "(gdb: %s)" % e

    def unmount(self):
        """umount(8); the daemon must write everything out and exit 0."""
        for _ in range(100):
            if subprocess.run(["umount", self.mnt], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        if self.is_mounted():
            raise TestFailure("cannot unmount " + self.mnt)
        rc = self.daemon.wait(timeout=300)
        self.daemon = None
        if rc != 0:
            raise TestFailure("framefs exited %d after unmount:\n%s" % (rc, self.daemon_log()))
        if "unmounted cleanly" not in self.daemon_log(10000):
            raise TestFailure("framefs did not report a clean unmount:\n" + self.daemon_log())
        if self.transport_check:
            check_transport(self.daemon_log(10000), self.transport_check)

    def kill9(self):
        """SIGKILL the daemon (a crash) and detach the dead mount."""
        self.daemon.kill()
        self.daemon.wait()
        self.daemon = None
        if subprocess.run(["umount", self.mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", self.mnt], capture_output=True)
        if self.is_mounted():
            raise TestFailure("cannot detach the dead mount")

    def check_fsck(self):
        """An unmounted array needs no repair, metadata or data (-c checks
        every data chunk against its checksum)."""
        r = subprocess.run([self.fsck, "-n", "-c", *self.members], capture_output=True, text=True)
        if r.returncode != 0:
            raise TestFailure("fsck.framefs -n -c found problems (status %d):\n%s%s"
                              % (r.returncode, r.stdout, r.stderr))
        return 1

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
            for m in self.members:
                try:
                    os.unlink(m)
                except OSError:
                    pass
            subprocess.run(["rm", "-rf", self.tmp])


def run_to_kill_point(w, delay, log_path, what):
    """Let workload process w run for delay seconds: the kill point, not a
    wait for an event.  A workload that stops before it fails the test,
    with the end of its log."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < delay:
        if w.poll() is not None:
            raise TestFailure("%s stopped before the kill:\n%s" % (what, open(log_path).read()[-300:]))
        time.sleep(0.01)


def seed_from_env():
    s = os.environ.get("IT_SEED")
    return int(s) if s else int(time.time() * 1000) % 1000000007


def width_from_seed(level, seed, knob):
    """Members for a RAID level: the environment's `knob`, else one from the
    seed (RAID5 x 3..8, RAID6 x 4..10), so that runs cover every width in
    turn.  A knob outside that range is refused."""
    lo, hi = (3, 8) if level == 5 else (4, 10)
    n = int(os.environ.get(knob, str(lo + (seed // 2) % (hi - lo + 1))))
    if not lo <= n <= hi:
        raise TestFailure("%s=%d: RAID%d takes %d to %d members here" % (knob, n, level, lo, hi))
    return n


def small_write_range(rng, size, stripe, prev, aligned=False):
    """(off, n) of one small overwrite inside a file of size bytes (at least
    two stripes), as an editor's project database writes: again a range of
    prev (written just before); 4 KiB or 64 KiB at a 4 KiB-aligned offset;
    unless aligned (O_DIRECT), also 1 B to 64 KiB anywhere, or across a
    4 KiB or a stripe boundary."""
    r = rng.random()
    if prev and r < 0.12:
        return rng.choice(prev)
    if r < 0.55 or (aligned and r < 0.8):
        return rng.randrange(size // 4096) * 4096, 4096
    if r < 0.7 or aligned:
        return rng.randrange((size - 65536) // 4096 + 1) * 4096, 65536
    if r < 0.82:
        n = rng.choice([rng.randint(1, 512), rng.randint(1, 65536)])
        return rng.randint(0, size - n), n
    unit = 4096 if r < 0.92 else stripe
    edge = rng.randint(1, (size - 1) // unit) * unit
    n = rng.randint(2, 8192 if unit == 4096 else 65536)
    off = max(0, edge - rng.randint(1, n - 1))
    return off, min(n, size - off)


def drop_caches():
    """Forget unused dentries and inodes (and with them their cached pages):
    the next lookups and reads go to the daemon.  ("2", not "3": dropping the
    whole page cache costs seconds on a busy machine.)"""
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")
