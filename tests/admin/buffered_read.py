#!/usr/bin/env python3
# Proves: buffered reads (the kernel's read-ahead, no O_DIRECT) return every
# byte written, on arrays of 3, 4 and 10 members at 16 KiB, 512 KiB and 1 MiB
# chunks, whole, with a member missing, with bits flipped on a member and
# with bits flipped in flight.  Over FUSE's io_uring they are read from the
# members straight into the requests' reply buffers (status: direct_reads);
# a chunk that fails its checksum there is read again through the stripe
# cache, which rebuilds it from parity and repairs it.  Over /dev/fuse
# there is no reply buffer to read into: direct_reads stays 0 and the same
# bytes come through the cache.  A scrub between the damage and the flips
# in flight repairs the parity the reads did not touch.
# Faults injected:
#   a member left out of the mount (degraded: its chunks rebuilt from parity);
#   persistent: one bit flipped in 3 places of every written chunk of one
#     member's data area, written into the member file while unmounted;
#   transient: "MEMBER@op=r,flip=4" (4 bits flipped in every read of one member);
#   beyond the parity: a member left out and one chunk of a data stripe
#     damaged on as many others as there are parities: that file's reads
#     fail with EIO, never end early (FUSE would take it for the end of file).
import errno
import hashlib
import os
import random

from adminlib import (Vol, check, corrupt_member, log, member_data_area, run_test, seed_from_env, sha256_direct,
                      write_file)

# level, members, chunk, file sizes: a frame that ends inside a chunk, one of
# whole stripes, a 4K DPX frame, and for the widest array a multi-stripe file
# of 8 MiB stripes with a ragged end
ARRAYS = [
    (5, 3, "16K", [(5 << 20) + 12345, 3 << 20, 51052544]),
    (5, 4, "512K", [(5 << 20) + 12345, 24 << 20, 51052544]),
    (6, 10, "1M", [(40 << 20) + 4097, 51052544]),
]


def sha256_buffered(path):
    """sha256 of a file read through the page cache in 1 MiB reads."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def read_all(v, want, when):
    for name, digest in sorted(want.items()):
        got = sha256_buffered(os.path.join(v.mnt, name))
        check(got == digest, "%s: %s read back wrong (%s)" % (when, name, got))


def stats(v):
    st = v.status()
    return st["stats"]["fs"], st["fuse"]


def check_direct(v, before, when):
    """Over io_uring the clean reads went straight into the reply buffers,
    and where the daemon answers from threads of its own (offloaded_requests
    not null: libfuse with framefs's patch) the queue threads did not wait
    for them; over /dev/fuse none did."""
    s, fuse = stats(v)
    n = s["direct_reads"] - before
    if fuse.get("uring_requests", 0) > 0:
        check(n > 0, "%s: over io_uring, no read went straight into its reply buffer: %r" % (when, s))
        if fuse.get("offloaded_requests") is not None:
            check(s["direct_reads_unwaited"] > 0,
                  "%s: replies come from any thread, yet every read into a reply buffer was waited for: %r"
                  % (when, s))
    else:
        check(n == 0, "%s: over /dev/fuse, %d direct reads counted" % (when, n))
    log("ok: %s: every byte right, %d reads straight into reply buffers (%s)"
        % (when, n, "io_uring" if fuse.get("uring_requests", 0) > 0 else "/dev/fuse"))
    return s["direct_reads"]


def one_array(level, n, chunk, sizes, rng):
    member_mb = max(64, sum(sizes) * 2 // (n - (level - 4)) // (1 << 20) + 64)
    v = Vol(level, n, member_mb << 20, mkfs_args=("-c", chunk))
    what = "RAID%d x %d, %s chunks" % (level, n, chunk)
    try:
        v.mount()
        want = {}
        for i, size in enumerate(sizes):
            want["f%d.dpx" % i] = write_file(os.path.join(v.mnt, "f%d.dpx" % i), size, rng)
        v.unmount()

        # whole: a fresh mount, nothing in the page cache or the stripe cache
        v.mount()
        read_all(v, want, what)
        check_direct(v, 0, what)
        v.unmount()

        # persistent damage on member 1, written while unmounted
        st = v.adminj("status", *v.members)
        start, end = member_data_area(st)
        hit = corrupt_member(v.members[1], start, end, st["chunk_bytes"], rng)
        check(hit > 0, "%s: no written chunk found on member 1" % what)
        v.mount()
        read_all(v, want, what + ", bits flipped on member 1")
        s, _ = stats(v)
        check(s["crc_errors"] > 0 and s["crc_repaired"] > 0,
              "%s: flipped bits not detected and repaired: %r" % (what, s))
        log("ok: %s: %d chunks of member 1 damaged, %d bad chunks found on read, %d repaired"
            % (what, hit, s["crc_errors"], s["crc_repaired"]))
        # a scrub repairs what the reads did not touch (member 1's parity)
        sc = v.adminj("scrub", "start", "--wait", v.mnt)["scrub"]
        check(sc["error"] is None and sc["unreadable"] == 0, "%s: scrub: %r" % (what, sc))
        v.unmount()

        # repaired on the members: a fresh mount reads them clean; then bits
        # flipped in flight on every read of member 0
        v.mount()
        read_all(v, want, what + ", after the repair")
        s, _ = stats(v)
        check(s["crc_errors"] == 0, "%s: chunks still bad after the repair: %r" % (what, s))
        v.unmount()
        v.mount()
        v.admin("fault", v.mnt, "%s@op=r,flip=4" % os.path.basename(v.members[0]))
        read_all(v, want, what + ", bits flipped in flight")
        s, _ = stats(v)
        check(s["crc_errors"] > 0, "%s: flips in flight not detected: %r" % (what, s))
        v.admin("fault", v.mnt, "clear")
        log("ok: %s: bits flipped in flight on member 0: %d bad chunks found, data right"
            % (what, s["crc_errors"]))
        v.unmount()
        v.fsck_clean()

        # degraded, last: the member left out is stale from then on
        v.mount(paths=v.members[:-1])
        read_all(v, want, what + ", a member missing")
        check_direct(v, 0, what + ", a member missing")
        v.unmount()

        # beyond the parity: with the member still out, one chunk of data
        # stripe 2 (f0's) damaged on as many members as there are parities.
        # The read fails with EIO; it never ends early as if the file were
        # shorter (FUSE takes a short read for the end of the file)
        st = v.adminj("status", *v.members[:-1])
        start, _ = member_data_area(st)
        c = st["chunk_bytes"]
        hit = sum(corrupt_member(m, start + 2 * c, start + 3 * c, c, rng) for m in v.members[:level - 4])
        check(hit == level - 4, "%s: stripe 2 damaged on %d members, not %d" % (what, hit, level - 4))
        v.mount(paths=v.members[:-1])
        f0 = os.path.join(v.mnt, "f0.dpx")
        for attempt in range(2):
            try:
                sha256_buffered(f0)
                check(False, "%s: f0.dpx read without error past its lost stripe" % what)
            except OSError as e:
                check(e.errno == errno.EIO, "%s: f0.dpx: %s, not EIO" % (what, e))
            check(os.stat(f0).st_size == sizes[0], "%s: f0.dpx is %d bytes after the failed read, not %d"
                  % (what, os.stat(f0).st_size, sizes[0]))
        try:  # and through the stripe cache, as an O_DIRECT player reads
            sha256_direct(f0)
            check(False, "%s: f0.dpx read with O_DIRECT without error past its lost stripe" % what)
        except OSError as e:
            check(e.errno == errno.EIO, "%s: f0.dpx with O_DIRECT: %s, not EIO" % (what, e))
        read_all(v, {k: d for k, d in want.items() if k != "f0.dpx"}, what + ", f0 lost")
        log("ok: %s: a stripe beyond the parity: EIO on every read of f0 (buffered and O_DIRECT), its size kept, "
            "the others right"
            % what)
        v.unmount()
    finally:
        v.cleanup()


def test():
    rng = random.Random(seed_from_env())
    for level, n, chunk, sizes in ARRAYS:
        one_array(level, n, chunk, sizes, rng)


run_test(test)
