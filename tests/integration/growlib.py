"""What the grow tests share: a volume's files written the ways a facility
writes them (frames of several stripes with their tails, small files, a
project file with small overwrites: patches, a preallocated capture file),
and each read back against the sha256 of what was written."""
import hashlib
import json
import os
import subprocess
import sys
import time

from itlib import TestFailure

# one O_DIRECT checksum for the failure tests and the grow tests: the admin
# suite's (tests/admin/adminlib.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "admin"))
from adminlib import sha256_direct  # noqa: E402,F401

MiB = 1 << 20


def admin(*args, timeout_s=240):
    """framefs-admin (ADMIN) with args: the CompletedProcess.  A command
    not done within timeout_s fails the test naming it (under meson's 600 s
    limit, which kills a test without saying where it stood)."""
    try:
        return subprocess.run([os.environ["ADMIN"], *args], capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise TestFailure("framefs-admin %s: not done within %d s" % (" ".join(args), timeout_s))


def grow_status(mnt):
    """framefs-admin grow --json MOUNTPOINT's "grow" object."""
    r = admin("grow", "--json", mnt)
    if r.returncode != 0:
        raise TestFailure("grow --json %s: exit %d: %s" % (mnt, r.returncode, r.stderr))
    return json.loads(r.stdout)["grow"]


def wait_for(what, cond, timeout_s=60):
    """Poll cond (a status read) until it returns something true; bounded."""
    t0 = time.monotonic()
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() - t0 > timeout_s:
            raise TestFailure("%s: not within %d s" % (what, timeout_s))
        time.sleep(0.05)


def cases_from_env(default):
    """IT_GROW_CASES=LxN+K,... (level, members, added), else default."""
    if not os.environ.get("IT_GROW_CASES"):
        return default
    return [tuple(int(x) for x in c.replace("x", " ").replace("+", " ").split())
            for c in os.environ["IT_GROW_CASES"].split(",")]


def at_width(path, stripe):
    """Is the file at path laid out in whole stripes of `stripe` bytes, as a
    move leaves it (st_blocks covers ceil(size / stripe) of them)?  Asked of
    the daemon, past the kernel's attribute cache (stat --cached=never:
    AT_STATX_FORCE_SYNC); st_blksize cannot tell, the kernel rounds it down
    to a power of two.  For a file that took fewer blocks before its move:
    one whose last partial stripe lay in tail rows, or whose stripes were
    whole and its size not a multiple of stripe; and whose size is at least
    a tail row (4 KiB) short of a multiple of stripe."""
    r = subprocess.run(["stat", "--cached=never", "-c", "%s %b", path], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise TestFailure("stat %s: %s" % (path, r.stderr))
    size, blocks = (int(x) for x in r.stdout.split())
    whole = -(-size // stripe) * stripe
    if whole - size < 4096:
        raise TestFailure("%s: %d bytes is too near a multiple of %d to tell its layout"
                          % (path, size, stripe))
    return blocks * 512 == whole


def write_files(mnt, frames, frame_bytes, smalls, project_bytes, overwrites):
    """name -> sha256 of what was written."""
    sums = {}
    for i in range(frames):
        data = os.urandom(frame_bytes + 4096 * (i + 1))
        with open(os.path.join(mnt, "frame%03d.dpx" % i), "wb") as f:
            f.write(data)
        sums["frame%03d.dpx" % i] = hashlib.sha256(data).hexdigest()
    for i in range(smalls):  # the metadata pool or tails
        data = os.urandom(1000 + 700 * i)
        with open(os.path.join(mnt, "small%02d" % i), "wb") as f:
            f.write(data)
        sums["small%02d" % i] = hashlib.sha256(data).hexdigest()
    big = bytearray(os.urandom(project_bytes))
    with open(os.path.join(mnt, "project.db"), "wb") as f:
        f.write(big)
    with open(os.path.join(mnt, "project.db"), "r+b") as f:  # small overwrites: patches
        for k in range(overwrites):
            at = (k * 997 + 13) * 4096 % (len(big) - 4096)
            piece = os.urandom(4096)
            f.seek(at)
            f.write(piece)
            f.flush()
            os.fsync(f.fileno())
            big[at:at + 4096] = piece
    sums["project.db"] = hashlib.sha256(bytes(big)).hexdigest()
    # a recorder's file: preallocated (posix_fallocate), its first third
    # written; the rest reads as zeros and stays reserved (RESERVED)
    data = os.urandom(frame_bytes // 3)
    with open(os.path.join(mnt, "capture.mov"), "wb") as f:
        os.posix_fallocate(f.fileno(), 0, frame_bytes)
        f.write(data)
    sums["capture.mov"] = hashlib.sha256(data + bytes(frame_bytes - len(data))).hexdigest()
    RESERVED["capture.mov"] = frame_bytes
    return sums


RESERVED = {}  # name -> bytes fallocate reserved, which a grow must keep allocated


def check_files(mnt, sums, what, failure):
    """Every file's sha256 as written, else failure(message) is raised."""
    for name, want in sums.items():
        with open(os.path.join(mnt, name), "rb") as f:
            if hashlib.sha256(f.read()).hexdigest() != want:
                raise failure("%s differs after %s" % (name, what))
        if name in RESERVED and os.stat(os.path.join(mnt, name)).st_blocks * 512 < RESERVED[name]:
            raise failure("%s: %d bytes allocated after %s, %d reserved by fallocate"
                          % (name, os.stat(os.path.join(mnt, name)).st_blocks * 512, what,
                             RESERVED[name]))
