#!/usr/bin/env python3
# Proves: `framefs-admin grow MEMBERS NEW...` grows an unmounted volume to
# the end (fs/grow/).  For each case (RAID5 x 3 + 1, RAID5 x 4 + 2, RAID6
# x 5 + 2), a volume written through a real FUSE mount (frames of several
# stripes, files with a packed tail, small files, a file with small
# overwrites: patches) is grown, then
#   1. fsck.framefs -n -c finds nothing to repair (every chunk checked);
#   2. mounted on all its members, every file's sha256 is what was written,
#      and df's size is the new width's: nstripes x (new data chunks) x
#      chunk, against the old width's before (the rows' count is the same);
#   3. a new file written, read back, and every file again, with one member
#      left out (RAID6: two) on a read-only mount.
# A case LxN+K+K2 grows twice, one grow after the other (RAID5 x 3 + 1 + 1:
# a volume grown once grows again): after each, fsck clean, every file's
# sha256 (files written at the middle width too) and df at that width; at
# the end a degraded read-only mount reads every file.
# IT_GROW_CASES=LxN+K[+K2],... runs only those cases (the ASan+UBSan step: 5x3+1).
# Refusals leave the volume as it was (fsck clean, files read back): a
# member too small, a member given twice, a mounted volume, and (RAID5 x 3)
# a volume too full for its largest file to move (a 300 MiB file with
# less than that free; removed, the grow goes on).
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import MiB, admin, cases_from_env, check_files, write_files  # noqa: E402
from itlib import TestFailure, Volume, log  # noqa: E402

def df_bytes(mnt):
    st = os.statvfs(mnt)
    return st.f_blocks * st.f_frsize


def one_case(level, n, k):
    vol = Volume(level, n, 256 * MiB, mkfs_args=("-c", "64K"))
    try:
        vol.mount()
        sums = write_files(vol.mnt, 6, 3 * MiB, 20, 8 * MiB, 8)
        size_before = df_bytes(vol.mnt)
        if n == 3:
            with open(os.path.join(vol.mnt, "huge.mov"), "wb") as f:
                f.write(os.urandom(4 * MiB) * 75)
        vol.unmount()
        new = ["%s.n%d" % (vol.members[0], i) for i in range(k)]
        for p in new:
            with open(p, "wb") as f:
                f.truncate(256 * MiB)
        small = vol.members[0] + ".small"
        with open(small, "wb") as f:
            f.truncate(64 * MiB)
        # refusals first: each leaves the volume as it was
        r = admin("grow", vol.spec, small)
        if r.returncode == 0 or "too small" not in r.stderr:
            raise TestFailure("grow with a small member: exit %d: %s" % (r.returncode, r.stderr))
        r = admin("grow", vol.spec, new[0], new[0])
        if r.returncode == 0 or "given twice" not in r.stderr:
            raise TestFailure("grow with a member twice: exit %d: %s" % (r.returncode, r.stderr))
        if n == 3:
            r = admin("grow", vol.spec, *new)
            if r.returncode == 0 or "largest" not in r.stderr or "free some space" not in r.stderr:
                raise TestFailure("grow of a volume too full: exit %d: %s"
                                  % (r.returncode, r.stderr))
            log("too full: %s" % r.stderr.strip())
        vol.check_fsck()
        vol.mount()
        if n == 3:
            os.unlink(os.path.join(vol.mnt, "huge.mov"))
        r = admin("grow", vol.mnt, new[0])
        if r.returncode == 0 or "mounted" not in r.stderr:
            raise TestFailure("grow of a mounted volume: exit %d: %s" % (r.returncode, r.stderr))
        vol.unmount()
        # the grow
        r = admin("grow", vol.spec, *new)
        if r.returncode != 0 or "grown" not in r.stdout:
            raise TestFailure("grow: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
        log("RAID%d x %d + %d: %s" % (level, n, k, r.stdout.strip()))
        vol.members += new
        vol.spec = ",".join(vol.members)
        vol.check_fsck()
        vol.mount()
        check_files(vol.mnt, sums, "the grow", TestFailure)
        size_after = df_bytes(vol.mnt)
        nparity = 1 if level == 5 else 2
        want = size_before * (n + k - nparity) // (n - nparity)
        if size_after != want:
            raise TestFailure("df: %d bytes after the grow, want %d (%d before)"
                              % (size_after, want, size_before))
        data = os.urandom(5 * MiB)
        with open(os.path.join(vol.mnt, "after.dpx"), "wb") as f:
            f.write(data)
        sums["after.dpx"] = hashlib.sha256(data).hexdigest()
        check_files(vol.mnt, sums, "a new file", TestFailure)
        vol.unmount()
        vol.check_fsck()
        # degraded, read-only: without the first old member (RAID6: and the last new one)
        left = [vol.members[0]] + ([vol.members[-1]] if level == 6 else [])
        spec, vol.spec = vol.spec, ",".join(m for m in vol.members if m not in left)
        vol.mount("ro")
        check_files(vol.mnt, sums, "the grow, degraded", TestFailure)
        vol.unmount()
        vol.spec = spec
        os.unlink(small)
        log("RAID%d x %d + %d: %d files read back, df %d -> %d MiB, fsck clean"
            % (level, n, k, len(sums), size_before >> 20, size_after >> 20))
    finally:
        vol.cleanup()


def grow_to(vol, k, tag):
    """Grow vol (unmounted) by k new members of 256 MiB; its members and spec follow."""
    new = ["%s.%s%d" % (vol.members[0], tag, i) for i in range(k)]
    for p in new:
        with open(p, "wb") as f:
            f.truncate(256 * MiB)
    r = admin("grow", vol.spec, *new)
    if r.returncode != 0 or "grown" not in r.stdout:
        raise TestFailure("grow %s: exit %d: %s %s" % (tag, r.returncode, r.stdout, r.stderr))
    vol.members += new
    vol.spec = ",".join(vol.members)


def twice_case(level, n, k1, k2):
    """Two grows one after the other: n -> n + k1 -> n + k1 + k2."""
    nparity = 1 if level == 5 else 2
    vol = Volume(level, n, 256 * MiB, mkfs_args=("-c", "64K"))
    try:
        vol.mount()
        sums = write_files(vol.mnt, 4, 3 * MiB, 10, 8 * MiB, 8)
        size0 = df_bytes(vol.mnt)
        vol.unmount()
        width = n
        for step, k in ((1, k1), (2, k2)):
            grow_to(vol, k, "g%d_" % step)
            width += k
            vol.check_fsck()
            vol.mount()
            check_files(vol.mnt, sums, "grow %d" % step, TestFailure)
            size = df_bytes(vol.mnt)
            want = size0 * (width - nparity) // (n - nparity)
            if size != want:
                raise TestFailure("df: %d bytes after grow %d (%d members), want %d"
                                  % (size, step, width, want))
            data = os.urandom(5 * MiB)  # written at this width; the next grow moves it
            with open(os.path.join(vol.mnt, "after%d.dpx" % step), "wb") as f:
                f.write(data)
            sums["after%d.dpx" % step] = hashlib.sha256(data).hexdigest()
            check_files(vol.mnt, sums, "a new file after grow %d" % step, TestFailure)
            vol.unmount()
            vol.check_fsck()
            log("RAID%d x %d, grow %d to %d members: %d files read back, df %d MiB, fsck clean"
                % (level, n, step, width, len(sums), size >> 20))
        # degraded, read-only: without the first old member (RAID6: and the last new one)
        left = [vol.members[0]] + ([vol.members[-1]] if level == 6 else [])
        vol.spec = ",".join(m for m in vol.members if m not in left)
        vol.mount("ro")
        check_files(vol.mnt, sums, "grown twice, degraded", TestFailure)
        vol.unmount()
    finally:
        vol.cleanup()


def main():
    cases = cases_from_env(((5, 3, 1), (5, 4, 2), (6, 5, 2), (5, 3, 1, 1)))
    try:
        for c in cases:
            if len(c) == 4:
                twice_case(*c)
            else:
                one_case(*c)
    except TestFailure as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS: framefs-admin grow grew %s offline: fsck clean, every file's sha256 the same, df "
          "at the new width, degraded reads"
          % ", ".join("RAID%d x %d + %s" % (c[0], c[1], " + ".join(map(str, c[2:])))
                      for c in cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
