#!/usr/bin/env python3
# Proves: fsck.framefs checks a volume in each state of a grow as it checks
# any volume, and a scrub checks the old rows of one being restriped.  For
# RAID5 x 3 + 1 and RAID6 x 4 + 1 on RAM members (frames with their tails,
# small files, a project file with patches):
#   1. fsck -n -c is clean on the volume PREPARED on its old array (the
#      old members' superblocks from before the grow put back on copies),
#      PREPARED on the grown array (grow --no-restripe), and GROWING with
#      the restripe stopped mid-way by a clean unmount and by kill -9 of the
#      daemon (fsck -p first then: the journal a crash leaves is replayed);
#   2. mounted mid-way (the restripe slowed: 20 ms on each write to the new
#      member until the rate is set, then rebuild_max), a scrub finds
#      nothing on the clean volume, then finds and repairs a chunk flipped
#      (unmounted, ffsck-corrupt data-bad) in a file not moved yet: old rows;
#   3. bytes flipped in a data chunk of a file not moved (an old row) and of
#      one moved (a new row), and an old-rows bit set on a free row: fsck
#      -n -c reports each and exits 4; fsck -y -c repairs them (exit 1);
#      then fsck -n -c is clean;
#   4. the next mount finishes the restripe (grow --wait: done, no row left
#      in the old geometry), every file reads back as written, and fsck -n
#      -c is clean, with no grow left to report.
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from growlib import MiB, at_width, check_files, grow_status, wait_for, write_files  # noqa: E402
from itlib import TestFailure, Volume, log  # noqa: E402

ADMIN = os.environ["ADMIN"]
CORRUPT = os.environ["CORRUPT"]
MEMBER = 32 * MiB
SLOW = 512 << 10  # the restripe's rate while the test works beside it


def run(*args, timeout=300):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)


def admin(*args):
    return run(ADMIN, *args)


def fsck(vol, members, *flags):
    r = run(vol.fsck, *flags, *members)
    return r.returncode, r.stdout + r.stderr


def fsck_clean(vol, members, what, says=None):
    rc, out = fsck(vol, members, "-n", "-c")
    if rc != 0:
        raise TestFailure("%s: fsck -n -c exit %d:\n%s" % (what, rc, out))
    if says and says not in out:
        raise TestFailure("%s: fsck -n -c did not say '%s':\n%s" % (what, says, out))
    return out


def corrupt(members, *action):
    r = run(CORRUPT, *action, "--", *members)
    if r.returncode != 0:
        raise TestFailure("ffsck-corrupt %s: %s" % (" ".join(action), r.stderr))


def sb_offsets(path):
    """The member superblock's two copies (raid/sb.h ff_sb_offset)."""
    size = os.path.getsize(path)
    return (0, size // 4096 * 4096 - 4096)


def sb_save(paths):
    out = {}
    for p in paths:
        with open(p, "rb") as f:
            out[p] = []
            for off in sb_offsets(p):
                f.seek(off)
                out[p].append((off, f.read(4096)))
    return out


def mount_slowed(vol, new):
    """Mount with every write to the new member 100 ms late (the restripe
    starts unthrottled at mount, before a rate can be set; nothing else
    writes there: the metadata lives on the old members), and the rate at
    SLOW."""
    os.environ["FRAMEFS_FAULT"] = "%s@op=w,lat_ms=100" % os.path.basename(new)
    try:
        vol.mount()
    finally:
        del os.environ["FRAMEFS_FAULT"]
    # a stale socket file (kill -9) answers nothing: asked until the daemon does
    r = wait_for("the daemon's control socket", lambda: (lambda r: r if r.returncode != 3 else None)(
        admin("set", vol.mnt, "rebuild_min=%d" % SLOW, "rebuild_max=%d" % SLOW)))
    if r.returncode != 0:
        raise TestFailure("set: %s" % r.stderr)
    st = grow_status(vol.mnt)
    if st["state"] != "restriping":
        raise TestFailure("the restripe is not under way after the mount: %s" % st)


def is_old(vol, name, level):
    """Is the file not moved yet: not in whole stripes of the new width (64 KiB
    chunks, one member more)?"""
    return not at_width(os.path.join(vol.mnt, name),
                        64 * 1024 * (len(vol.members) - (1 if level == 5 else 2)))


def scrub(mnt):
    r = admin("--json", "scrub", "start", "--wait", mnt)
    if r.returncode not in (0, 1):
        raise TestFailure("scrub: exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    s = json.loads(r.stdout)
    return s.get("scrub", s)


def one_case(level, n):
    vol = Volume(level, n, MEMBER, mkfs_args=("-c", "64K"))
    old = list(vol.members)
    new = old[0] + ".new"
    snap = [m + ".old" for m in old]
    try:
        vol.mount()
        sums = write_files(vol.mnt, 8, 1 * MiB, 4, 2 * MiB, 3)
        data = os.urandom(MiB + 12345)  # the last inode: the restripe moves it last
        with open(os.path.join(vol.mnt, "late.dpx"), "wb") as f:
            f.write(data)
        sums["late.dpx"] = hashlib.sha256(data).hexdigest()
        vol.unmount()
        saved = sb_save(old)
        with open(new, "wb") as f:
            f.truncate(MEMBER)
        r = admin("grow", "--no-restripe", vol.spec, new)
        if r.returncode != 0:
            raise TestFailure("grow --no-restripe: exit %d: %s" % (r.returncode, r.stderr))
        grown = old + [new]

        # 1. PREPARED, on the grown array and on the old one
        fsck_clean(vol, grown, "prepared, the array grown", "not taken on yet")
        for m, s in zip(old, snap):
            shutil.copyfile(m, s)
            with open(s, "r+b") as f:
                for off, blk in saved[m]:
                    f.seek(off)
                    f.write(blk)
        fsck_clean(vol, snap, "prepared, the array not grown", "the array is not grown yet")
        for s in snap:
            os.unlink(s)

        # 2. GROWING, mounted: a scrub beside the restripe, a clean unmount mid-way
        vol.members, vol.spec = grown, ",".join(grown)
        mount_slowed(vol, new)
        wait_for("a file moved", lambda: grow_status(vol.mnt)["files_moved"] >= 1)
        sc = scrub(vol.mnt)
        if sc.get("chunks_bad") or sc.get("parity_bad") or sc.get("meta_bad"):
            raise TestFailure("scrub of a clean volume mid-grow found damage: %s" % sc)
        if is_old(vol, "frame000.dpx", level) or not is_old(vol, "late.dpx", level):
            raise TestFailure("want frame000 moved, late.dpx not: %s" % grow_status(vol.mnt))
        st = grow_status(vol.mnt)
        vol.unmount()
        out = fsck_clean(vol, grown, "stopped mid-way by an unmount", "(restriping)")
        log("RAID%d: unmounted with %d of %d rows left: %s" % (
            level, st["rows_left"], st["rows_before"],
            [line for line in out.splitlines() if "grow" in line][0]))

        # 2b. a chunk flipped in an old row: the scrub finds and repairs it
        corrupt(grown, "data-bad", "late.dpx")
        mount_slowed(vol, new)
        sc = scrub(vol.mnt)
        if sc.get("chunks_bad", 0) < 1 or sc.get("chunks_repaired", 0) != sc.get("chunks_bad"):
            raise TestFailure("scrub of a flipped chunk in an old row: %s\n%s"
                              % (sc, vol.daemon_log(20)))
        if not is_old(vol, "late.dpx", level):
            raise TestFailure("late.dpx moved before its scrub: %s" % grow_status(vol.mnt))
        # ... then a crash mid-way
        vol.kill9()
        rc, out = fsck(vol, grown, "-p")
        if rc not in (0, 1):
            raise TestFailure("fsck -p after kill -9 mid-grow: exit %d:\n%s" % (rc, out))
        fsck_clean(vol, grown, "stopped mid-way by kill -9", "(restriping)")

        # 3. damage in an old row, a new row and the old-rows map
        corrupt(grown, "data-bad", "late.dpx")
        corrupt(grown, "data-bad", "frame000.dpx")
        corrupt(grown, "old-row-free")
        rc, out = fsck(vol, grown, "-n", "-c")
        bad = [line for line in out.splitlines() if "fails its checksum" in line]
        if rc != 4 or len(bad) != 2 or "Old-rows bitmap differences" not in out:
            raise TestFailure("fsck -n -c on the damage: exit %d, want 4, two chunks and the "
                              "old-rows map:\n%s" % (rc, out))
        rc, out = fsck(vol, grown, "-y", "-c")
        fixed = [line for line in out.splitlines() if "Rebuild it from parity? yes" in line]
        if rc != 1 or len(fixed) != 2 or "Fix them? yes" not in out:
            raise TestFailure("fsck -y -c: exit %d, want the two chunks rebuilt and the old-rows "
                              "map fixed:\n%s" % (rc, out))
        fsck_clean(vol, grown, "after fsck -y", "(restriping)")

        # 4. the mount goes on to the end
        vol.mount()
        # the socket file a kill -9 left may still be there: until the
        # daemon answers, the admin tool says it cannot reach it (exit 3)
        r = wait_for("the daemon's control socket",
                     lambda: (lambda r: r if r.returncode != 3 else None)(
                         admin("grow", "--wait", "--json", vol.mnt)))
        st = json.loads(r.stdout)["grow"] if r.stdout else {}
        if r.returncode != 0 or st.get("state") not in ("done", "none") or st.get("rows_left"):
            raise TestFailure("grow --wait after fsck: exit %d: %s %s"
                              % (r.returncode, r.stdout, r.stderr))
        check_files(vol.mnt, sums, "fsck mid-grow and the restripe's end", TestFailure)
        vol.unmount()
        out = fsck_clean(vol, grown, "after the grow")
        if "grow from" in out:
            raise TestFailure("a grow still reported after it ended:\n%s" % out)
        log("RAID%d x %d + 1: fsck clean prepared (old and grown array), mid-way (unmount, "
            "kill -9); scrub repaired an old row; fsck found and repaired an old and a new row "
            "and the old-rows map; the restripe finished after it" % (level, n))
    finally:
        for p in snap + [new]:
            try:
                os.unlink(p)
            except OSError:
                pass
        vol.cleanup()


def main():
    t0 = time.monotonic()
    try:
        one_case(5, 3)
        one_case(6, 4)
    except TestFailure as e:
        print("FAIL: %s" % e)
        return 1
    print("PASS (%.1f s)" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
