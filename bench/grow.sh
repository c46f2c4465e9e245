#!/bin/bash
# bench/grow.sh: an offline grow's restripe beside the raw members' copy rate and framefs's own
# rebuild, in the same run, through mkfs.framefs, the daemon and framefs-admin.
#
# One run: mkfs a RAID LEVEL of WIDTH file members in MEMBERS_DIR, mount, write DATA_MB of
# FILE_MB files (random data, each file's bytes its own; their sha256 kept), unmount; then three
# rows, their order rotating from run to run:
#   raw       the raw members' copy rate: one dd per old member, all at once (O_DIRECT both
#             ways, 4 MiB blocks), each copying its share of the data set (DATA/WIDTH bytes
#             from the member's data area) to a fresh file in MEMBERS_DIR: the same bytes the
#             restripe moves, read from the same members
#   rebuild   framefs's rebuild on the array as it is then (before or after its grow): mount,
#             one member failed, removed and replaced by a fresh file, timed from
#             `framefs-admin add` to the end (rebuild.sh's idle rebuild); MB/s of member bytes
#             rebuilt
#   grow      `framefs-admin grow SPEC NEW...` on the unmounted members, timed whole (the
#             grow's records, the array's superblocks, three mounts and the restripe); MB/s
#             of file data moved (every file is moved: its size is what the restripe counts)
# then checked: fsck.framefs -n -c clean, mounted on every member at the new width, every
# file's sha256 as written.
# Printed: each run's rows (MB/s, 10^6 bytes/s; min/TB: minutes for 10^12 bytes at that rate),
# then median [min..max] over RUNS and
#   grow_vs_raw       restripe MB/s / raw copy MB/s of the same run       goal: >= 0.5
#   grow_vs_rebuild   restripe MB/s / rebuild MB/s of the same run
# The last line is
#   RESULT grow_vs_raw=<median> grow_vs_rebuild=<median> grow_min_per_tb=<median>
#          grow_mbs=<median> raw_mbs=<median> rebuild_mbs=<median>
#
# Knobs (environment):
#   RUNS=3          runs (each on a fresh volume)
#   MEMBERS_DIR=/tmp  where the member files go (on this machine /tmp is the virtual disk;
#                   /dev/shm for RAM); its filesystem must take O_DIRECT. Peak use:
#                   (WIDTH + ADD) x SIZE_MB + DATA_MB
#   LOOP=0          1: each member is a loop device over its file (losetup --direct-io=on)
#   LEVEL=5         5 or 6
#   WIDTH=4         members before the grow
#   ADD=1           members the grow adds
#   DATA_MB=3072    the data set, in FILE_MB files (rounded down to whole files)
#   FILE_MB=40      size of each file (a frame-sized file)
#   SIZE_MB         size of each member; default: the data set fills 60 % of the old array
#                   (at least 256)
#   PHASE_TIMEOUT=1800  at most this many seconds for a grow, a fill or a check
#   FRAMEFS_BUILD   build dir holding framefs, mkfs.framefs, fsck.framefs, framefs-admin
#                   (else they are taken from PATH)
# Needs root (FUSE mounts, the control socket, loop devices), python3 and coreutils' dd.
set -euo pipefail

PROG=grow.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

RUNS=${RUNS:-3}
MEMBERS_DIR=${MEMBERS_DIR:-/tmp}
LOOP=${LOOP:-0}
LEVEL=${LEVEL:-5}
WIDTH=${WIDTH:-4}
ADD=${ADD:-1}
DATA_MB=${DATA_MB:-3072}
FILE_MB=${FILE_MB:-40}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-1800}
for v in RUNS WIDTH ADD DATA_MB FILE_MB PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
case $LEVEL in 5 | 6) ;; *) die "LEVEL must be 5 or 6 (got '$LEVEL')" ;; esac
case $LOOP in 0 | 1) ;; *) die "LOOP must be 0 or 1 (got '$LOOP')" ;; esac
NPARITY=$((LEVEL - 4))
NDATA=$((WIDTH - NPARITY))
[ "$NDATA" -ge 2 ] || die "RAID$LEVEL needs WIDTH >= $((NPARITY + 2))"
NFILES=$((DATA_MB / FILE_MB))
[ "$NFILES" -ge 1 ] || die "DATA_MB ($DATA_MB) holds no file of FILE_MB ($FILE_MB)"
DATA_BYTES=$((NFILES * FILE_MB * 1048576))
# the data set fills 60 % of the old array: room for the copies of the file being moved
SIZE_MB=${SIZE_MB:-$(((NFILES * FILE_MB * 100 / 60 / NDATA + 63) / 64 * 64))}
[[ $SIZE_MB =~ ^[1-9][0-9]*$ ]] || die "SIZE_MB must be a positive whole number (got '$SIZE_MB')"
[ "$SIZE_MB" -ge 256 ] || SIZE_MB=256
[ $((NFILES * FILE_MB * 100 / (NDATA * SIZE_MB))) -le 85 ] ||
	die "DATA_MB fills more than 85 % of $WIDTH x $SIZE_MB MiB at RAID$LEVEL; raise SIZE_MB"
[ "$(id -u)" -eq 0 ] || die "must run as root (FUSE mounts, the control socket, loop devices)"
command -v python3 >/dev/null || die "python3 not found"
[ -d "$MEMBERS_DIR" ] || die "MEMBERS_DIR $MEMBERS_DIR is not a folder"

FRAMEFS=$(need_bin framefs)
MKFS=$(need_bin mkfs.framefs)
FSCK=$(need_bin fsck.framefs)
ADMIN=$(need_bin framefs-admin)

need=$(((WIDTH + ADD) * SIZE_MB + NFILES * FILE_MB + 256))
free=$(avail_mb "$MEMBERS_DIR")
[ "$free" -ge "$need" ] || die "$MEMBERS_DIR has $free MiB free, needs $need; lower DATA_MB or SIZE_MB"

T=$(mktemp -d /tmp/ffgrow.XXXXXX)  # mountpoint, logs, the sums
W=$(mktemp -d "$MEMBERS_DIR/ffgrow.XXXXXX") # the members and the raw copy's files
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
	detach_loops
	rm -rf --one-file-system "$W" "$T"
}
on_exit cleanup

member_new() { # NAME: a fresh member W/NAME of SIZE_MB; NEWM: the path framefs gets for it
	truncate -s "${SIZE_MB}M" "$W/$1"
	NEWM=$W/$1
	if [ "$LOOP" = 1 ]; then
		attach_loops "$W/$1"
		NEWM=${LOOPS[-1]}
	fi
}
spec() { (IFS=,; echo "$*"); }
mbs() { python3 -c "print('%.1f' % ($1 / $2 / 1e6))"; } # BYTES SECONDS -> MB/s
secs_since() { python3 -c "print('%.3f' % ($EPOCHREALTIME - $1))"; }

# The data set's writer: each file its own bytes (a random block rotated by a per-file offset, the
# file's number at its start), so that a stripe put in another file's place or another place of
# its file is found; their sha256 in sha256sum's format.
cat >"$T/fill.py" <<'PY'
import hashlib, os, sys
d, n, size, sums = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
block = os.urandom(size)
with open(sums, "w") as out:
    for i in range(n):
        off = (i * 7919 * 4096 + 512) % size
        data = (b"%016d" % i + block[off + 16:] + block[:off])[:size]
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(data)
        out.write("%s  data/f%05d\n" % (hashlib.sha256(data).hexdigest(), i))
PY
fill() { # the data set written through the mount; T/sums for sha256sum -c
	mkdir "$MNT/data"
	run python3 "$T/fill.py" "$MNT/data" "$NFILES" "$((FILE_MB * 1048576))" "$T/sums" ||
		die "writing the data set failed: $(lasterr)"
	sync -f "$MNT"
}

row_raw() { # one dd per old member at once, each its share of the data set
	local i t0 secs per=$((DATA_BYTES / WIDTH / 4194304)) pids=()
	[ "$per" -ge 1 ] || per=1
	t0=$EPOCHREALTIME
	for i in $(seq 0 $((WIDTH - 1))); do
		dd if="${MEMBERS[i]}" of="$W/raw$i" bs=4M count="$per" skip="$DATA_OFF" \
			iflag=direct,skip_bytes oflag=direct status=none 2>"$T/dd$i.err" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}" || die "dd of ${MEMBERS[i]} failed: $(tail -n1 "$T/dd$i.err")"
	done
	secs=$(secs_since "$t0")
	rm -f "$W"/raw*
	RAW_BYTES=$((per * 4194304 * WIDTH))
	RAW=$(mbs "$RAW_BYTES" "$secs")
	echo "   run $run: raw copy of $RAW_BYTES bytes ($WIDTH dd at once) in $secs s = $RAW MB/s"
}

row_rebuild() { # on the mounted volume, member 1 failed, removed and replaced by a fresh file;
	# the rebuild timed
	local secs bytes
	"$ADMIN" fail -q "$MNT" "${MEMBERS[1]}"
	"$ADMIN" remove -q "$MNT" "${MEMBERS[1]}"
	[ "$LOOP" = 1 ] || rm -f "${MEMBERS[1]}" # (a loop device keeps its file until the end)
	member_new "r$run"
	MEMBERS[1]=$NEWM
	read -r secs bytes < <(ff_rebuild_timed "$MNT" "${MEMBERS[1]}")
	[ "${bytes:-0}" -gt 0 ] || die "the rebuild reported no bytes rebuilt"
	REB=$(mbs "$bytes" "$secs")
	echo "   run $run: rebuild of $bytes member bytes on ${#MEMBERS[@]} members in $secs s = $REB MB/s"
}

row_grow() { # framefs-admin grow, timed whole
	local t0 secs new=() j
	for j in $(seq 1 "$ADD"); do
		member_new "n$j"
		new+=("$NEWM")
	done
	t0=$EPOCHREALTIME
	run "$ADMIN" grow "$(spec "${MEMBERS[@]}")" "${new[@]}" ||
		die "framefs-admin grow failed: $(lasterr)"
	secs=$(secs_since "$t0")
	grep -q '^grown: ' "$OUTF" || die "framefs-admin grow said: $(cat "$OUTF")"
	MEMBERS+=("${new[@]}")
	GROW=$(mbs "$DATA_BYTES" "$secs")
	echo "   run $run: grow of $WIDTH to ${#MEMBERS[@]} members, $DATA_BYTES bytes of files moved in $secs s = $GROW MB/s ($(sed -n 's/^grown: //p' "$OUTF"))"
}

check() { # fsck -n -c clean, then mounted at the new width with every file as written; left
	# mounted
	local n
	run "$FSCK" -n -c "$(spec "${MEMBERS[@]}")" ||
		die "fsck.framefs -n -c after the grow: exit $? ($(grep -v '^Pass' "$OUTF" | tail -n3 | tr '\n' ' '))"
	ff_mount "$(spec "${MEMBERS[@]}")" "$MNT" "$T/daemon.log"
	n=$("$ADMIN" --json status "$MNT" | python3 -c "import json, sys; print(json.load(sys.stdin)['nmembers'])")
	[ "$n" = $((WIDTH + ADD)) ] || die "after the grow the volume has $n members, not $((WIDTH + ADD))"
	(cd "$MNT" && run sha256sum --quiet -c "$T/sums") ||
		die "files differ after the grow: $(head -n3 "$OUTF" | tr '\n' ' ')"
	echo "   run $run: checked: fsck -n -c clean, $n members, $NFILES files' sha256 as written"
}

# The rows' order rotates: each row comes first, second and last in three runs. The rebuild is
# never alone between two others, so that it runs on a mount the run makes anyway: the fill's
# when it comes first, else the check's right after the grow (a mount takes 3-5 s here).
ORDERS=("rebuild raw grow" "raw grow rebuild" "grow rebuild raw")
one_run() {
	local i rows
	detach_loops
	rm -rf --one-file-system "${W:?}"/*
	MEMBERS=()
	for i in $(seq 0 $((WIDTH - 1))); do
		member_new "m$i"
		MEMBERS+=("$NEWM")
	done
	run "$MKFS" -q -f -l "$LEVEL" "${MEMBERS[@]}" || die "mkfs.framefs failed: $(lasterr)"
	ff_mount "$(spec "${MEMBERS[@]}")" "$MNT" "$T/daemon.log"
	DATA_OFF=$("$ADMIN" --json status "$MNT" | python3 -c "import json, sys; print(json.load(sys.stdin)['geometry']['data_offset'])")
	fill
	read -r -a rows <<<"${ORDERS[(run - 1) % 3]}"
	[ "${rows[0]}" = rebuild ] && row_rebuild
	ff_unmount "$MNT"
	for i in "${rows[@]}"; do
		case $i in
		raw) row_raw ;;
		grow)
			row_grow
			check
			[ "${rows[0]}" = rebuild ] || row_rebuild
			ff_unmount "$MNT"
			;;
		esac
	done
	echo "$run $RAW $REB $GROW" >>"$T/runs"
}

echo "framefs grow benchmark: RAID$LEVEL, $WIDTH + $ADD x $SIZE_MB MiB members in $MEMBERS_DIR ($(df --output=fstype "$MEMBERS_DIR" | tail -n1)$([ "$LOOP" = 1 ] && echo ", loop devices")), $NFILES x $FILE_MB MiB files, $RUNS run(s)"
for run in $(seq "$RUNS"); do
	one_run
done
python3 - "$T/runs" <<'PY'
import statistics, sys
runs = [list(map(float, l.split())) for l in open(sys.argv[1])]
mpt = lambda mbs: 1e12 / (mbs * 1e6) / 60
rows = {"raw copy (dd, old members)": [r[1] for r in runs],
        "rebuild (member bytes)": [r[2] for r in runs],
        "restripe (framefs-admin grow)": [r[3] for r in runs]}
ratios = {"grow_vs_raw": [r[3] / r[1] for r in runs], "grow_vs_rebuild": [r[3] / r[2] for r in runs]}
def mm(v, f):
    return "%s [%s..%s]" % (f % statistics.median(v), f % min(v), f % max(v))
print()
print("%-32s %-26s %s" % ("row", "MB/s", "min/TB"))
for name, v in rows.items():
    print("%-32s %-26s %s" % (name, mm(v, "%.0f"), mm([mpt(x) for x in v], "%.2f")))
print()
for name, v in ratios.items():
    print("%-32s %s   per run: %s" % (name, mm(v, "%.3f"), " ".join("%.3f" % x for x in v)))
g = statistics.median(ratios["grow_vs_raw"])
print("goal grow_vs_raw >= 0.5: %s" % ("met" if g >= 0.5 else "NOT met"))
print("RESULT grow_vs_raw=%.3f grow_vs_rebuild=%.3f grow_min_per_tb=%.2f grow_mbs=%.0f raw_mbs=%.0f rebuild_mbs=%.0f"
      % (g, statistics.median(ratios["grow_vs_rebuild"]), statistics.median(mpt(r[3]) for r in runs),
         statistics.median(rows["restripe (framefs-admin grow)"]), statistics.median(rows["raw copy (dd, old members)"]),
         statistics.median(rows["rebuild (member bytes)"])))
PY
