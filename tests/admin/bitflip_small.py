#!/usr/bin/env python3
# Proves: a small file (format version 3: its bytes in pool blocks of the
# mirrored metadata space, no block header, checked by the pcsum table)
# whose block has bits flipped in one copy (RAID6: in two of its three) is
# found by a scrub: a check-only scrub counts it and writes nothing, a
# repairing one rewrites the bad copies from the good one (meta_bad ==
# meta_repaired == the blocks flipped, every copy on the members byte-equal
# to the file again), the files read back byte-identical and a second scrub
# finds nothing; with the files deleted, fsck -n -c is clean.
# Faults injected: bits flipped in the member files while the volume is
# unmounted, in one or two copies of one pool block of each of two small
# files (where: the copies found on the members by their content, kept to
# those in the pool, status --json fs.pool_start and fs.pool_blocks; copy k
# of META chunk c is on member (c * copies + k) % n at row (c * copies + k)
# / n of the metadata area, raid/meta.c).
import hashlib
import os
import random

from adminlib import Vol, check, log, run_test, seed_from_env, sha256_direct

BLOCK = 4096
CHUNK = 64 << 10  # META is mirrored in chunks of 16 blocks


def meta_copies_of(v, st, data):
    """{META block number: [(member path, member offset)]} of the blocks of
    the pool whose 4096 bytes are data, from the unmounted members."""
    g, fs = st["geometry"], st["fs"]
    n, copies = st["nmembers"], g["meta_copies"]
    found = {}
    for m, path in enumerate(v.members):
        with open(path, "rb") as f:
            f.seek(g["meta_offset"])
            area = f.read(g["meta_member_bytes"])
        pos = area.find(data)
        while pos >= 0:
            if pos % BLOCK == 0:
                idx = (pos // CHUNK) * n + m  # row * n + member = chunk * copies + copy
                no = idx // copies * (CHUNK // BLOCK) + pos % CHUNK // BLOCK
                if fs["pool_start"] <= no < fs["pool_start"] + fs["pool_blocks"]:
                    found.setdefault(no, []).append((path, g["meta_offset"] + pos))
            pos = area.find(data, pos + 1)
    return found


def flip_bit(path, off, rng):
    with open(path, "r+b") as f:
        pos = off + rng.randrange(BLOCK)
        f.seek(pos)
        b = f.read(1)[0]
        f.seek(pos)
        f.write(bytes([b ^ (1 << rng.randrange(8))]))


def on_members(copies):
    out = []
    for path, off in copies:
        with open(path, "rb") as f:
            f.seek(off)
            out.append(f.read(BLOCK))
    return out


def one_volume(level, nmembers, rng):
    v = Vol(level, nmembers, 128 << 20)
    try:
        v.mount()
        # a 4 KiB sidecar is one block; the .xml ends inside its third block
        files = {"clip.mov.xmp": rng.randbytes(BLOCK), "shot/clip.xml": rng.randbytes(9000)}
        os.mkdir(os.path.join(v.mnt, "shot"))
        for name, data in files.items():
            with open(os.path.join(v.mnt, name), "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())  # its write buffer goes out now: to the pool
        st = v.status()
        check(st["fs"]["version"] >= 3 and st["fs"]["small_max"] >= 9000,
              "not a volume with the small-data class: %r" % st["fs"])
        check(st["stats"]["fs"]["small_stores"] >= len(files) and
              st["fs"]["free_stripes"] == st["fs"]["nstripes"],
              "the files did not go to the pool: %r %r" % (st["fs"], st["stats"]["fs"]))
        v.unmount()

        st = v.adminj("status", *v.members)
        copies = st["geometry"]["meta_copies"]
        flipped = []  # (copies of the block, its content)
        for name, data in files.items():
            block = data[:BLOCK]  # the file's first pool block
            where = meta_copies_of(v, st, block)
            check(len(where) == 1, "%s: %d pool blocks hold its first 4 KiB, not one: %r"
                  % (name, len(where), where))
            (no, cs), = where.items()
            check(len(cs) == copies and len({p for p, _ in cs}) == copies,
                  "%s: block %d has copies %r, expected %d on different members"
                  % (name, no, cs, copies))
            bad = rng.sample(cs, copies - 1)  # all but one copy
            for path, off in bad:
                flip_bit(path, off, rng)
            flipped.append((cs, block))
            log("%s: pool block %d, flipped a bit in %d of its %d copies (%s)"
                % (name, no, len(bad), copies, ", ".join("%s@%d" % (os.path.basename(p), o)
                                                          for p, o in bad)))

        v.mount()
        # before anything reads the files (a read repairs a bad first copy itself);
        # damage left unrepaired: exit 1
        sc = v.adminj("scrub", "start", "--wait", "--no-repair", v.mnt, expect=1)["scrub"]
        check(sc["meta_bad"] == len(flipped) and sc["meta_repaired"] == 0,
              "check-only scrub: %r" % sc)
        check(all(on_members(cs).count(block) == 1 for cs, block in flipped),
              "the check-only scrub wrote a copy")
        log("ok: a check-only scrub counts %d bad metadata blocks and writes nothing"
            % sc["meta_bad"])

        sc = v.adminj("scrub", "start", "--wait", v.mnt)["scrub"]
        check(sc["meta_bad"] == len(flipped) and sc["meta_repaired"] == len(flipped) and
              sc["error"] is None, "scrub: meta_bad %d, meta_repaired %d (expected %d each)\n%s"
              % (sc["meta_bad"], sc["meta_repaired"], len(flipped), v.daemon_log()))
        for cs, block in flipped:
            check(on_members(cs) == [block] * copies, "after the scrub the copies of the "
                  "block at %r do not all hold the file's bytes" % cs)
        check("no copy is good" not in v.full_log(), "scrub said no copy is good:\n%s"
              % v.daemon_log())
        _, out, _ = v.admin("scrub", "status", v.mnt)
        check("metadata bad %d, repaired %d" % (len(flipped), len(flipped)) in out,
              "scrub status text:\n%s" % out)
        log("ok: the scrub repaired %d bad metadata blocks; every copy holds the file's bytes"
            % sc["meta_repaired"])

        for name, data in files.items():
            got = sha256_direct(os.path.join(v.mnt, name))
            check(got == hashlib.sha256(data).hexdigest(), "%s read back wrong" % name)
        sc = v.adminj("scrub", "start", "--wait", v.mnt)["scrub"]
        check(sc["meta_bad"] == 0 and sc["chunks_bad"] == 0, "second scrub: %r" % sc)
        log("ok: the files read back byte-identical; a second scrub finds nothing")
        # fsck does not know the small-data class yet: the rest of the volume
        # is checked with the small files gone
        for name in files:
            os.unlink(os.path.join(v.mnt, name))
        v.unmount()
        v.fsck_clean()
        log("ok: with the small files deleted, fsck -n -c is clean")
    finally:
        v.cleanup()


def test():
    rng = random.Random(seed_from_env())
    for level, nmembers in ((5, 4), (6, 5)):
        log("RAID%d x %d" % (level, nmembers))
        one_volume(level, nmembers, rng)


run_test(test)
