#!/usr/bin/env python3
# Proves: `framefs-admin sync MOUNTPOINT` leaves the volume settled.  A
# patched stripe whose patches pass half of it is rewritten by the merge
# thread after the fsync that passed it has returned (fs/data/merge.c); while a
# merge runs its new stripe and its old one are both taken, so the free
# space moves after every file is closed, and sync(1) cannot ask a FUSE
# daemon to wait for that.  The random-ops test read statfs during such a
# merge and saw one stripe fewer free than the next mount found.
#
# On RAID5 or RAID6 of 3 to 10 members with 64, 128 or 256 KiB chunks (by
# seed), a file of 12 stripes (the merge queue holds 32):
#   1. its stripes get 7/16 of their blocks as 4 KiB overwrites in random
#      order, fsync every 16: patches under half, nothing to merge;
#   2. every member's reads are slowed (fault injected: a 150 ms delay on
#      each read, framefs-admin fault m@op=r,lat_ms=150) and one fsync
#      takes a run of 1/8 + 1 more blocks of each stripe: twelve merges
#      queue; the file is closed and the status shows merges pending;
#   3. framefs-admin sync returns once they are done: none pending, the
#      merge thread counted twelve, and the free blocks and inodes statfs
#      shows then are those the next mount finds (fsck -n -c clean in
#      between), as are the free stripes the status shows (the closed
#      file's merges keep none reserved ahead); the file reads back as an
#      in-memory copy says, before and after the remount;
#   4. sync returns while another file is being written all along (each
#      file is written out once a sync: a writer cannot hold it up), and
#      that file reads back exactly once its writer has stopped;
#   5. on a read-only mount sync answers that nothing is buffered, and on
#      an unmounted volume framefs-admin refuses it (exit 2).
#
#   IT_SEED=N             the seed (printed; default from the clock)
#   IT_SYNC_MEMBERS=N     the width instead of the seed's
import json
import mmap
import os
import random
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from itlib import TestFailure, Volume, drop_caches, log, seed_from_env, width_from_seed  # noqa: E402

BLK = 4096
NSTRIPES = 12
ADMIN = os.environ["ADMIN"]


def admin(*args, timeout=120):
    try:
        return subprocess.run([ADMIN, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestFailure("framefs-admin %s did not return within %d s" % (" ".join(args), timeout))


def status(vol):
    vol.wait_ctl()
    r = admin("--json", "status", vol.mnt)
    if r.returncode != 0:
        raise TestFailure("framefs-admin status: %s" % r.stderr)
    return json.loads(r.stdout)


def sync(vol, what):
    vol.wait_ctl()
    r = admin("--json", "sync", vol.mnt)
    if r.returncode != 0:
        raise TestFailure("%s: framefs-admin sync failed (%d): %s%s"
                          % (what, r.returncode, r.stdout, r.stderr))
    return json.loads(r.stdout)


def free(vol):
    """Free blocks and inodes.  Nothing is unlinked here, so no FORGET the
    kernel sends late can move them."""
    v = os.statvfs(vol.mnt)
    return v.f_bfree, v.f_ffree


def read_direct(path, size):
    buf = mmap.mmap(-1, size)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        n = os.preadv(fd, [buf], 0)
    finally:
        os.close(fd)
    return bytes(buf[:n])


def check_file(vol, name, want, what):
    got = read_direct(os.path.join(vol.mnt, name), len(want))
    if got != bytes(want):
        bad = next(i for i in range(len(want)) if i >= len(got) or got[i] != want[i])
        raise TestFailure("%s: %s differs from its model at byte %d (block %d)"
                          % (what, name, bad, bad // BLK))


def pwrite_model(fd, model, off, data):
    if os.pwrite(fd, data, off) != len(data):
        raise TestFailure("short write at %d" % off)
    model[off:off + len(data)] = data


def settle_merges(vol, rng, stripe):
    bps = stripe // BLK
    size = NSTRIPES * stripe
    path = os.path.join(vol.mnt, "project.db")
    model = bytearray(rng.randbytes(size))
    with open(path, "wb") as f:
        f.write(model)
        os.fsync(f.fileno())
    # 1. under half of each stripe, as patches
    head = bps * 7 // 16
    blocks = [k * bps + b for k in range(NSTRIPES) for b in range(head)]
    rng.shuffle(blocks)
    fd = os.open(path, os.O_RDWR)
    for i, blk in enumerate(blocks):
        pwrite_model(fd, model, blk * BLK, rng.randbytes(BLK))
        if i % 16 == 15:
            os.fsync(fd)
    os.fsync(fd)
    st = status(vol)
    if st["stats"]["fs"]["patch_merges"] != 0 or st["fs"]["merges_pending"] != 0:
        raise TestFailure("patches under half of each stripe were merged: %d merges, %d pending"
                          % (st["stats"]["fs"]["patch_merges"], st["fs"]["merges_pending"]))
    if st["stats"]["fs"]["patch_blocks"] < len(blocks):
        raise TestFailure("%d blocks overwritten, %d went as patches: the merges to come would "
                          "not be the background's" % (len(blocks), st["stats"]["fs"]["patch_blocks"]))
    # 2. past half, in one fsync, with slow reads: the merges queue
    rules = ";".join("%s@op=r,lat_ms=150" % os.path.basename(m) for m in vol.members)
    vol.wait_ctl()
    r = admin("fault", vol.mnt, rules)
    if r.returncode != 0:
        raise TestFailure("cannot arm the read delay: %s" % r.stderr)
    run = bps // 8 + 1
    for k in range(NSTRIPES):
        pwrite_model(fd, model, (k * bps + head) * BLK, rng.randbytes(run * BLK))
    os.fsync(fd)
    os.close(fd)
    pending = status(vol)["fs"]["merges_pending"]
    if pending == 0:
        raise TestFailure("no merge pending after the fsync that passed half of %d stripes, with "
                          "every read delayed 150 ms: this test proves nothing" % NSTRIPES)
    early = free(vol)
    # 3. sync waits for them
    ans = sync(vol, "after the merges queued")
    st = status(vol)
    a = free(vol)
    if st["fs"]["merges_pending"] != 0:
        raise TestFailure("sync returned with %d merges pending" % st["fs"]["merges_pending"])
    if st["stats"]["fs"]["merges_background"] != NSTRIPES:
        raise TestFailure("the merge thread merged %d stripes, %d passed half"
                          % (st["stats"]["fs"]["merges_background"], NSTRIPES))
    log("%d merges pending after the close, free (blocks, inodes) %s then; sync finished %d "
        "merges, free %s" % (pending, early, ans["merges"], a))
    r = admin("fault", vol.mnt, "clear")
    if r.returncode != 0:
        raise TestFailure("cannot clear the read delay: %s" % r.stderr)
    check_file(vol, "project.db", model, "after sync")
    if free(vol) != a:
        raise TestFailure("the free space moved after sync, with nothing written: %s then %s"
                          % (a, free(vol)))
    vol.unmount()
    vol.check_fsck()
    vol.mount()
    b = free(vol)
    if a != b:
        raise TestFailure("free (blocks, inodes) %s after sync, %s after the remount" % (a, b))
    # statfs counts stripes reserved ahead for files being written as free;
    # the allocator's count does not: a closed file must hold none
    if st["fs"]["free_stripes"] != status(vol)["fs"]["free_stripes"]:
        raise TestFailure("%d stripes free for new files after sync, %d after the remount: the "
                          "closed file kept stripes reserved" % (st["fs"]["free_stripes"],
                                                                 status(vol)["fs"]["free_stripes"]))
    drop_caches()
    check_file(vol, "project.db", model, "after the remount")
    return model


def sync_under_writer(vol, rng, stripe):
    """4. sync while a file is being written all along."""
    size = 4 * stripe
    path = os.path.join(vol.mnt, "capture.bin")
    model = bytearray(rng.randbytes(size))
    with open(path, "wb") as f:
        f.write(model)
    stop = threading.Event()
    errors, writes = [], [0]
    wrng = random.Random(rng.getrandbits(48))

    def writer():
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                while not stop.is_set():
                    off = wrng.randrange(size // BLK) * BLK
                    n = wrng.choice([BLK, 16 * BLK, stripe // 2])
                    n = min(n, size - off)
                    pwrite_model(fd, model, off, wrng.randbytes(n))
                    writes[0] += 1
                    if writes[0] % 32 == 0:
                        os.fsync(fd)
            finally:
                os.close(fd)
        except BaseException as e:  # noqa: B902 - reported by the main thread
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    try:
        for i in range(3):
            before = writes[0]
            sync(vol, "sync %d while a file is written" % (i + 1))
            if not t.is_alive():
                raise TestFailure("the writer stopped during sync %d: %s" % (i + 1, errors))
            log("sync %d returned with the writer running (%d writes during it)"
                % (i + 1, writes[0] - before))
    finally:
        stop.set()
        t.join()
    if errors:
        raise errors[0]
    if writes[0] == 0:
        raise TestFailure("the writer wrote nothing")
    sync(vol, "after the writer stopped")
    check_file(vol, "capture.bin", model, "after the writer and sync")


def main():
    seed = seed_from_env()
    rng = random.Random(seed)
    level = 5 if seed % 2 else 6
    nmembers = width_from_seed(level, seed, "IT_SYNC_MEMBERS")
    chunk_kib = rng.choice([64, 128, 256])
    ndata = nmembers - (1 if level == 5 else 2)
    stripe = ndata * chunk_kib * 1024
    log("sync-settles: seed %d (IT_SEED=%d to repeat), RAID%d x %d, %d KiB chunks, stripe %d KiB"
        % (seed, seed, level, nmembers, chunk_kib, stripe // 1024))
    vol = Volume(level, nmembers, 256 << 20, ["-c", "%dK" % chunk_kib])
    try:
        vol.mount()
        settle_merges(vol, rng, stripe)
        sync_under_writer(vol, rng, stripe)
        vol.unmount()
        vol.check_fsck()
        # 5. read-only: nothing to do; unmounted: refused
        vol.mount("ro")
        ans = sync(vol, "read-only")
        if "read-only" not in ans.get("message", ""):
            raise TestFailure("sync on a read-only mount answered %s" % ans)
        vol.unmount()
        r = admin("sync", vol.spec)
        if r.returncode != 2 or "mounted volume" not in r.stderr:
            raise TestFailure("sync on an unmounted volume: exit %d, %s" % (r.returncode, r.stderr))
    except TestFailure as e:
        print("FAIL (seed %d): %s\n%s" % (seed, e, vol.daemon_log()))
        vol.cleanup()
        return 1
    vol.cleanup()
    print("PASS: seed %d, RAID%d x %d, %d KiB chunks: sync waited for the merges pending and the "
          "free space matched the next mount; sync returned under a writer" % (seed, level, nmembers,
                                                                             chunk_kib))
    return 0


if __name__ == "__main__":
    sys.exit(main())
