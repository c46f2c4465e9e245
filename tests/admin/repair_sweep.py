#!/usr/bin/env python3
# Proves: a repair never folds the bytes it repairs into parity.  On every
# array width swept, chunks flipped on every member (data chunks on each
# member, and for the scrub round its P and Q chunks too) are healed by a
# read, by scrub and by fsck.framefs -y -c; after each heal a scrub that
# repairs nothing finds no bad chunk and no bad parity, and with every
# member pattern up to the parity budget left out (each single member on
# RAID5, each pair on RAID6, read-only mounts) every file reads back
# byte-identical through the daemon (O_DIRECT: no page cache answers).
# Wide arrays are the point: there a one-chunk write is a read-modify-write,
# which reads the bad chunk still on disk into P and Q.
# Fault injected: one byte XORed with a random non-zero value at a random
# offset of the chosen chunks, written into the member files while the
# volume is unmounted (where: framefs-admin status --json geometry, and the
# level's parity rotation, mirrored from raid/geom.c).  RAID6 also gets
# stripes with two bad chunks: two data chunks, and (scrub round) a data
# chunk beside a bad P or a bad Q.  The read and fsck rounds flip data
# chunks only: reads and fsck -c check data against its checksums, never
# parity, so a bad P or Q is scrub's to find.
# Size: IT_REPAIR_SWEEP=full sweeps RAID5 x 3..8 and RAID6 x 4..10 (singles
# and pairs left out on RAID6); the default (CI) runs RAID5 x 3 and x 5 and
# RAID6 x 4 and x 8, every pair left out but no single member on RAID6
# (about 50 s in release and in ASan here); IT_REPAIR_SWEEP=5x5,6x8 runs
# those arrays with every single member and every pair left out.
import json
import os
import random
import subprocess
import time
from itertools import combinations

from adminlib import (TestFailure, Vol, check, log, member_data_area, run_test, seed_from_env,
                      verify_set, write_set)

CHUNK = 64 << 10
MEMBER_SIZE = 64 << 20
FULL = [(5, n) for n in range(3, 9)] + [(6, n) for n in range(4, 11)]
CI = [(5, 3), (5, 5), (6, 4), (6, 8)]
METHODS = ("read", "scrub", "fsck")


def sweep():
    """[(level, nmembers)], and whether RAID6 also loses single members."""
    knob = os.environ.get("IT_REPAIR_SWEEP", "")
    if knob == "full":
        return FULL, True
    if knob:
        return [tuple(int(x) for x in a.split("x")) for a in knob.split(",")], True
    return CI, False


def slot_members(level, n, stripe):
    """Member of each slot of a stripe (data 0..ndata-1, P, Q): raid/geom.c."""
    pd = n - 1 - stripe % n
    if level == 5:
        return [(pd + 1 + i) % n for i in range(n - 1)] + [pd]
    return [(pd + 2 + i) % n for i in range(n - 2)] + [pd, (pd + 1) % n]


def full_stripes(v, start, nstripes):
    """Stripes whose every chunk, on every member, holds non-zero bytes to its
    end: all their data chunks carry file data (the files are random bytes).
    The end too, since a tail stripe (packed tails, format version 4) holds
    data in its first rows only, and a byte flipped in a row no tail uses is
    no damage to data — only to that row's parity."""
    zero = bytes(4096)
    used = None
    for path in v.members:
        with open(path, "rb") as f:
            f.seek(start)
            mine = {s for s in range(nstripes) if f.read(CHUNK)[-4096:] != zero}
        used = mine if used is None else used & mine
    return sorted(used)


class Plan:
    """Which chunks to flip in one round: a list of (stripe, [slots])."""

    def __init__(self, level, n, pool, method, rng):
        self.level, self.n = level, n
        self.ndata = n - (1 if level == 5 else 2)
        self.free = list(pool)
        rng.shuffle(self.free)
        self.hits = []
        kinds = ["data"] + (["P"] + (["Q"] if level == 6 else []) if method == "scrub" else [])
        for m in range(n):
            for kind in kinds:
                self.take(lambda sm, m=m, kind=kind: [self.slot_of(sm, m, kind)], "%s on member %d"
                          % (kind, m))
        if level == 6:
            doubles = [("data", "data")] + ([("data", "P"), ("data", "Q")]
                                            if method == "scrub" else [])
            for a, b in doubles:
                self.take(lambda sm, a=a, b=b: self.two(a, b), "%s + %s" % (a, b))

    def slot_of(self, sm, m, kind):
        s = sm.index(m)
        want = {"data": s < self.ndata, "P": s == self.ndata, "Q": s == self.ndata + 1}[kind]
        return s if want else None

    def two(self, a, b):
        second = {"data": 1, "P": self.ndata, "Q": self.ndata + 1}[b]
        return [0, second]

    def take(self, pick, what):
        for stripe in self.free:
            slots = pick(slot_members(self.level, self.n, stripe))
            if None not in slots:
                self.free.remove(stripe)
                self.hits.append((stripe, slots))
                return
        raise TestFailure("no written stripe left for %s" % what)

    def data_chunks(self):
        return sum(1 for _, slots in self.hits for s in slots if s < self.ndata)

    def parity_only(self):
        return sum(1 for _, slots in self.hits if all(s >= self.ndata for s in slots))

    def flip(self, v, start, rng):
        for stripe, slots in self.hits:
            sm = slot_members(self.level, self.n, stripe)
            for s in slots:
                off = start + stripe * CHUNK + rng.randrange(CHUNK)
                with open(v.members[sm[s]], "r+b") as f:
                    f.seek(off)
                    b = f.read(1)[0]
                    f.seek(off)
                    f.write(bytes([b ^ rng.randrange(1, 256)]))


def scrub_clean(v, volume, tag):
    """A scrub that repairs nothing finds nothing: no bad chunk, no bad parity."""
    _, out, _ = v.admin("--json", "scrub", "start", "--no-repair", "--wait", *volume, expect=None)
    sc = json.loads(out)["scrub"]
    check(sc["chunks_bad"] == 0 and sc["parity_bad"] == 0 and sc["meta_bad"] == 0 and
          sc["unreadable"] == 0 and sc["stripes_checked"] > 0,
          "%s: scrub --no-repair after the heal: chunks bad %d, parity bad %d, metadata bad %d, "
          "unreadable %d (%d stripes checked)" % (tag, sc["chunks_bad"], sc["parity_bad"],
                                                 sc["meta_bad"], sc["unreadable"],
                                                 sc["stripes_checked"]))


def repair_lines(v):
    return "".join(l for l in v.full_log().splitlines(True) if "stripe" in l)


def heal(v, method, plan, want, tag):
    nd, np_ = plan.data_chunks(), plan.parity_only()
    if method == "fsck":
        r = subprocess.run([v.fsck, "-y", "-c", *v.members], capture_output=True, text=True)
        fixed = r.stdout.count("fails its checksum.  Rebuild it from parity? yes")
        check(r.returncode == 1 and fixed == nd,
              "%s: fsck -y -c exit %d, %d chunks rebuilt, expected exit 1 and %d:\n%s%s"
              % (tag, r.returncode, fixed, nd, r.stdout, r.stderr))
        scrub_clean(v, v.members, tag)
        return
    v.mount("read_cache_mb=1")
    if method == "read":
        verify_set(v.mnt, want, "%s: healing read" % tag)
        st = v.status()["stats"]
        s = st["fs"]
        # at least nd: two readers that miss the read cache at once can load
        # (and so repair) one stripe twice; every chunk found bad is repaired
        check(s["crc_repaired"] >= nd and s["crc_repaired"] == s["crc_errors"],
              "%s: crc_errors %d, crc_repaired %d, expected %d (%r; raid %r); flipped (stripe, "
              "slots): %r; the daemon said:\n%s" % (tag, s["crc_errors"], s["crc_repaired"], nd,
                                                    s, st.get("raid"), plan.hits,
                                                    repair_lines(v)))
    else:
        sc = v.adminj("scrub", "start", "--wait", v.mnt)["scrub"]
        check(sc["chunks_bad"] == nd and sc["chunks_repaired"] == nd and
              sc["parity_bad"] == np_ and sc["parity_repaired"] == np_ and sc["unreadable"] == 0,
              "%s: scrub found/repaired %d/%d bad chunks (expected %d), %d/%d bad parity "
              "(expected %d), %d unreadable" % (tag, sc["chunks_bad"], sc["chunks_repaired"], nd,
                                                sc["parity_bad"], sc["parity_repaired"], np_,
                                                sc["unreadable"]))
    scrub_clean(v, [v.mnt], tag)
    v.unmount()


def patterns(level, n, singles):
    if level == 5 or singles:
        yield from ((m,) for m in range(n))
    if level == 6:
        yield from combinations(range(n), 2)


def degraded_reads(v, level, singles, want, tag):
    n = 0
    for out in patterns(level, len(v.members), singles):
        left = [p for i, p in enumerate(v.members) if i not in out]
        v.mount("ro", "read_cache_mb=1", paths=left)
        verify_set(v.mnt, want, "%s, member(s) %s left out" % (tag, out))
        v.unmount()
        n += 1
    return n


def run_array(level, n, singles, rng):
    t0 = time.monotonic()
    v = Vol(level, n, MEMBER_SIZE, mkfs_args=("-c", "64K"))
    try:
        stripe = (n - (1 if level == 5 else 2)) * CHUNK
        v.mount()
        # at least 6 written stripes per member position; sizes cut stripes
        sizes = [8 * n * stripe // 3 + 4097, 8 * n * stripe // 3 - 513, 8 * n * stripe // 3 + 1]
        want = write_set(v.mnt, rng, sizes)
        v.unmount()
        st = v.adminj("status", *v.members)
        check(st["chunk_bytes"] == CHUNK, "chunk %d, expected %d" % (st["chunk_bytes"], CHUNK))
        start, _ = member_data_area(st)
        pool = full_stripes(v, start, st["geometry"]["nstripes"])
        for method in METHODS:
            tag = "RAID%d x %d, heal by %s" % (level, n, method)
            plan = Plan(level, n, pool, method, rng)
            plan.flip(v, start, rng)
            heal(v, method, plan, want, tag)
            k = degraded_reads(v, level, singles, want, tag)
            log("ok: %s: %d chunks flipped in %d stripes (%d data chunks, %d stripes with parity "
                "only), healed; parity clean; files right with each of %d member patterns out"
                % (tag, sum(len(s) for _, s in plan.hits), len(plan.hits), plan.data_chunks(),
                   plan.parity_only(), k))
        v.fsck_clean()
        log("ok: RAID%d x %d: fsck -n -c clean (%.1f s)" % (level, n, time.monotonic() - t0))
    finally:
        v.cleanup()


def test():
    rng = random.Random(seed_from_env())
    arrays, singles = sweep()
    log("arrays %s%s" % (" ".join("RAID%dx%d" % a for a in arrays),
                         ", single members out on RAID6 too" if singles else ""))
    for level, n in arrays:
        run_array(level, n, singles, rng)


run_test(test)
