#!/bin/bash
# bench/grow_write.sh: what a write to a file not moved yet costs its writer during a grow's
# restripe (the file is moved first, in the writer's thread: fs/grow/restripe.c,
# ffs_grow_move_now), beside the same write once the file is at the new width, in one run.
#
# One run: mkfs a RAID LEVEL of WIDTH file members in MEMBERS_DIR, mount, write NFILES files of
# FILE_MB (random data), unmount; `framefs-admin grow --no-restripe` adds ADD members; mount with
# the restripe slowed to 1 MiB/s (rebuild_min and rebuild_max: it moves the files in inode order,
# so the last ones stay where they are; until the rate is set, 20 ms of latency on each write
# to the first added member holds it back, the fault-injecting member's FRAMEFS_FAULT, then
# cleared). Then for each file, last first, two rows:
#   old     4 KiB written in its middle and fsync'd while the file is in the old geometry: the
#           file is moved first (the daemon logs each move), then written
#   moved   4 KiB more at another place of the same file, fsync'd: an ordinary overwrite
# then unmount, fsck.framefs -n clean, and every file's sha256 as written (the writes
# included) on a fresh mount.
# Printed: each write's seconds, then median [min..max] over all files of all runs and
#   old_vs_moved   old write's seconds / moved write's seconds (same file, same run)
#   move_mbs       file bytes / (old - moved seconds): the rate the writer's move ran at
# The last line is
#   RESULT old_write_s=<median> moved_write_s=<median> old_vs_moved=<median> move_mbs=<median>
#
# Knobs (environment):
#   RUNS=3          runs (each on a fresh volume)
#   MEMBERS_DIR=/dev/shm  where the member files go (RAM by default); must take O_DIRECT
#   LEVEL=5         5 or 6
#   WIDTH=4         members before the grow
#   ADD=1           members the grow adds
#   NFILES=4        files written to while not moved (each is also written once moved)
#   FILE_MB=256     size of each (the largest frames: 8K DPX 16-bit is ~265 MB)
#   FRAMEFS_BUILD   build dir holding framefs, mkfs.framefs, fsck.framefs, framefs-admin
#                   (else they are taken from PATH)
# Needs root (FUSE mounts, the control socket) and python3.
set -euo pipefail

PROG=grow_write.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

RUNS=${RUNS:-3}
MEMBERS_DIR=${MEMBERS_DIR:-/dev/shm}
LEVEL=${LEVEL:-5}
WIDTH=${WIDTH:-4}
ADD=${ADD:-1}
NFILES=${NFILES:-4}
FILE_MB=${FILE_MB:-256}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-1800}
for v in RUNS WIDTH ADD NFILES FILE_MB PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
case $LEVEL in 5 | 6) ;; *) die "LEVEL must be 5 or 6 (got '$LEVEL')" ;; esac
NPARITY=$((LEVEL - 4))
NDATA=$((WIDTH - NPARITY))
[ "$NDATA" -ge 2 ] || die "RAID$LEVEL needs WIDTH >= $((NPARITY + 2))"
# the files fill half of the old array: room for the copy of the one being moved
SIZE_MB=$(((NFILES * FILE_MB * 2 / NDATA + 63) / 64 * 64 + 64))
[ "$(id -u)" -eq 0 ] || die "must run as root (FUSE mounts, the control socket)"
command -v python3 >/dev/null || die "python3 not found"
[ -d "$MEMBERS_DIR" ] || die "MEMBERS_DIR $MEMBERS_DIR is not a folder"

FRAMEFS=$(need_bin framefs)
MKFS=$(need_bin mkfs.framefs)
FSCK=$(need_bin fsck.framefs)
ADMIN=$(need_bin framefs-admin)

need=$(((WIDTH + ADD) * SIZE_MB + 64))
free=$(avail_mb "$MEMBERS_DIR")
[ "$free" -ge "$need" ] || die "$MEMBERS_DIR has $free MiB free, needs $need; lower NFILES or FILE_MB"

T=$(mktemp -d /tmp/ffgroww.XXXXXX)  # mountpoint, logs, the sums
W=$(mktemp -d "$MEMBERS_DIR/ffgroww.XXXXXX") # the members
MNT=$T/mnt
mkdir "$MNT"
OUTF=$T/out
ERRF=$T/err
DAEMON=
LOOPS=()
cleanup() {
	stop_children
	unmount "$MNT" "$DAEMON"
	[ -n "$DAEMON" ] && kill_daemon "$DAEMON"
	wait 2>/dev/null
	rm -rf --one-file-system "$W" "$T"
}
on_exit cleanup
spec() { (IFS=,; echo "$*"); }

# The writer: fill (the files, their sha256 in T/sums) or write (per file, last first: 4 KiB
# in its middle and fsync'd, timed; then 4 KiB a quarter in, timed; the sums updated; one line
# "NAME OLD_S MOVED_S BYTES" each).
cat >"$T/w.py" <<'PY'
import hashlib, os, sys, time
mode, d, n, size, sums = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
names = ["f%05d" % i for i in range(n)]
if mode == "fill":
    block = os.urandom(size)
    with open(sums, "w") as out:
        for i, name in enumerate(names):
            off = (i * 7919 * 4096 + 512) % size  # each file's bytes its own
            data = (b"%016d" % i + block[off + 16:] + block[:off])[:size]
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            out.write("%s  data/%s\n" % (hashlib.sha256(data).hexdigest(), name))
    sys.exit(0)
def timed_write(path, at):
    piece = os.urandom(4096)
    t0 = time.monotonic()
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, piece, at)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.monotonic() - t0, piece
lines = []
for name in reversed(names):
    path = os.path.join(d, name)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    at_old, at_moved = size // 2 + 512, size // 4 + 512
    s_old, p = timed_write(path, at_old)
    data[at_old:at_old + 4096] = p
    s_moved, p = timed_write(path, at_moved)
    data[at_moved:at_moved + 4096] = p
    lines.append((name, hashlib.sha256(bytes(data)).hexdigest()))
    print("%s %.4f %.4f %d" % (name, s_old, s_moved, size))
with open(sums, "w") as out:
    for name, h in sorted(lines):
        out.write("%s  data/%s\n" % (h, name))
PY

one_run() {
	local i members=() new=() spec_all moved
	rm -rf --one-file-system "${W:?}"/*
	for i in $(seq 0 $((WIDTH - 1))); do
		truncate -s "${SIZE_MB}M" "$W/m$i"
		members+=("$W/m$i")
	done
	run "$MKFS" -q -f -l "$LEVEL" "${members[@]}" || die "mkfs.framefs failed: $(lasterr)"
	ff_mount "$(spec "${members[@]}")" "$MNT" "$T/daemon.log"
	mkdir "$MNT/data"
	run python3 "$T/w.py" fill "$MNT/data" "$NFILES" "$((FILE_MB * 1048576))" "$T/sums" ||
		die "writing the files failed: $(lasterr)"
	ff_unmount "$MNT"
	for i in $(seq 1 "$ADD"); do
		truncate -s "${SIZE_MB}M" "$W/n$i"
		new+=("$W/n$i")
	done
	run "$ADMIN" grow --no-restripe "$(spec "${members[@]}")" "${new[@]}" ||
		die "framefs-admin grow --no-restripe failed: $(lasterr)"
	spec_all=$(spec "${members[@]}" "${new[@]}")
	: >"$T/daemon.log"
	# the restripe starts with the mount at its default rate (no limit when idle), and moved a
	# smoke run's files before `set` came: until then 20 ms on each write to the added member
	# holds it back (the fault-injecting member, FRAMEFS_FAULT), cleared once the rate is set
	export FRAMEFS_FAULT="n1@op=w,lat_us=20000"
	ff_mount "$spec_all" "$MNT" "$T/daemon.log"
	unset FRAMEFS_FAULT
	"$ADMIN" set "$MNT" rebuild_min=1M rebuild_max=1M >/dev/null
	"$ADMIN" fault "$MNT" clear >/dev/null
	run python3 "$T/w.py" write "$MNT/data" "$NFILES" "$((FILE_MB * 1048576))" "$T/sums" ||
		die "the writes failed: $(lasterr)"
	sed "s/^/$run /" "$OUTF" >>"$T/runs"
	sed 's/^/   run '"$run"': /' "$OUTF"
	grep -o 'inode [0-9]* moved to the new width ahead of a change.*' "$T/daemon.log" |
		sed 's/^/   run '"$run"': daemon: /'
	moved=$(grep -c 'moved to the new width ahead of a change' "$T/daemon.log" || true)
	[ "$moved" = "$NFILES" ] || die "the daemon moved $moved files ahead of a write, not $NFILES (the restripe reached some first?)"
	ff_unmount "$MNT"
	run "$FSCK" -n "$spec_all" || die "fsck.framefs -n after the writes: exit $? ($(tail -n3 "$OUTF" | tr '\n' ' '))"
	ff_mount "$spec_all" "$MNT" "$T/daemon.log"
	(cd "$MNT" && run sha256sum --quiet -c "$T/sums") ||
		die "files differ after the writes: $(head -n3 "$OUTF" | tr '\n' ' ')"
	ff_unmount "$MNT"
	echo "   run $run: $moved files moved ahead of their writes; fsck -n clean; every sha256 as written"
}

echo "framefs grow_write benchmark: RAID$LEVEL, $WIDTH + $ADD x $SIZE_MB MiB members in $MEMBERS_DIR ($(df --output=fstype "$MEMBERS_DIR" | tail -n1)), $NFILES x $FILE_MB MiB files, $RUNS run(s)"
for run in $(seq "$RUNS"); do
	one_run
done
python3 - "$T/runs" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
old = [float(r[2]) for r in rows]
moved = [float(r[3]) for r in rows]
ratio = [float(r[2]) / float(r[3]) for r in rows]
rate = [int(r[4]) / (float(r[2]) - float(r[3])) / 1e6 for r in rows]
def mm(v, f):
    return "%s [%s..%s]" % (f % statistics.median(v), f % min(v), f % max(v))
print()
print("%-40s %s" % ("old (moved first), s", mm(old, "%.3f")))
print("%-40s %s" % ("moved (an ordinary overwrite), s", mm(moved, "%.4f")))
print("%-40s %s" % ("old_vs_moved", mm(ratio, "%.0f")))
print("%-40s %s" % ("move_mbs (the writer's move)", mm(rate, "%.0f")))
print("RESULT old_write_s=%.3f moved_write_s=%.4f old_vs_moved=%.0f move_mbs=%.0f"
      % (statistics.median(old), statistics.median(moved), statistics.median(ratio),
         statistics.median(rate)))
PY
