#!/bin/bash
# bench/rebuild.sh: rebuild speed, degraded reads and a 4K stream during a rebuild, on
# RAM-backed members (tmpfs files in /dev/shm), through the real daemon and framefs-admin.
#
# One run: mkfs a RAID5 of 4 members, mount, write FILL_PCT of it as 4K preset frames, then
#   degraded_read_ratio  unpaced 4K read (framefs-frametest -r -t 4) with one member failed
#                        / the same read healthy
#   rebuild_vs_raw       idle rebuild speed (member bytes rebuilt / time from `framefs-admin add`
#                        to the end, polled every 20 ms) / the raw write speed of a fresh tmpfs
#                        file like the replacement member (fio, O_DIRECT, io_uring, 1 MiB
#                        writes, depth 8)                                     bar: >= 0.80
#   rebuild_min_per_tb   minutes to rebuild 1 TB (10^12 bytes) at that speed
#                        (for scale: MegaRAID 9670W 14.1 min/TB on RAID5; xiRAID ~5 min/TB)
#   frames_dropped_during_rebuild  dropped frames of a paced 4K 24 fps read stream (4 threads,
#                        framefs-frametest -f 24) that plays while a second rebuild starts and
#                        runs beside it with the default rates (foreground first)   bar: 0
#                        (the same stream is first played degraded with no rebuild: its drops
#                        are printed beside, as what the machine drops by itself)
#   loaded_drops_due_to_rebuild  a pair of paced streams of LOADED_PRESET frames at 24 fps
#                        (degraded, then a third rebuild beside it) with a busy loop on every
#                        core (a CPU hog, as on a workstation that is never idle): drops with
#                        the rebuild minus drops without it                   bar: <= 0
#                        (each stream's seconds with no frame done are printed too; the 4K
#                        stream needs about the whole of a 2-core machine and, beside a hog,
#                        drops nearly every frame with or without a rebuild: 330-495 of 496
#                        seen, so it tells nothing there)
# Each figure is printed as min / median / max over RUNS runs; the last line is
#   RESULT rebuild_vs_raw=<median> rebuild_min_per_tb=<median> degraded_read_ratio=<median>
#          frames_dropped_during_rebuild=<max over runs>
#          loaded_drops_due_to_rebuild=<median over runs>
#
# Knobs (environment):
#   RUNS=3          runs (each on a fresh volume)
#   SIZE_MB=1024    size of each member (peak use of /dev/shm: 5 x SIZE_MB)
#   FILL_PCT=50     share of the volume written with frames before the rebuilds
#   STREAM_S=20     length of the 24 fps stream during the second rebuild (seconds)
#   LOADED_PRESET=2k  frame preset of the loaded pair of streams (framefs-frametest --list)
#   LOADED_FRAMES=48  frames written for it (they must fit beside the 4K frames: with a
#                   larger preset take fewer, e.g. LOADED_PRESET=dpx-uhd LOADED_FRAMES=20)
#   FRAMEFS_BUILD   build dir holding framefs, mkfs.framefs, framefs-admin, framefs-frametest
#                   (else they are taken from PATH)
# Needs root (FUSE mounts, /run/framefs) and fio.
set -euo pipefail

PROG=rebuild.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-1024}
FILL_PCT=${FILL_PCT:-50}
STREAM_S=${STREAM_S:-20}
LOADED_PRESET=${LOADED_PRESET:-2k}
LOADED_FRAMES=${LOADED_FRAMES:-48}
for v in RUNS SIZE_MB FILL_PCT STREAM_S LOADED_FRAMES; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
[ "$FILL_PCT" -le 90 ] || die "FILL_PCT must be at most 90"
[ "$SIZE_MB" -ge 256 ] || die "SIZE_MB must be at least 256"
[ "$(id -u)" -eq 0 ] || die "must run as root (FUSE mounts, the control socket)"
command -v fio >/dev/null || die "fio not found (apt-get install fio)"
command -v python3 >/dev/null || die "python3 not found"

FRAMEFS=$(need_bin framefs)
MKFS=$(need_bin mkfs.framefs)
ADMIN=$(need_bin framefs-admin)
FT=$(need_bin framefs-frametest)

need=$((5 * SIZE_MB + 256))
free=$(avail_mb /dev/shm)
[ "$free" -ge "$need" ] || die "/dev/shm has $free MiB free, needs $need (5 x ${SIZE_MB} MiB); lower SIZE_MB"

T=$(mktemp -d /tmp/ffrebuild.XXXXXX)
SHM=/dev/shm/$(basename "$T")
MNT=$T/mnt
mkdir -p "$MNT"
DAEMON=
BG=

HOGS=()
start_hogs() { # a busy loop on every core
	local c
	for c in $(seq "$(nproc)"); do
		(while :; do :; done) &
		HOGS+=($!)
	done
}
stop_hogs() { # (a bare `wait` would wait for the daemon too)
	[ "${#HOGS[@]}" -gt 0 ] || return 0
	kill "${HOGS[@]}" 2>/dev/null || true
	wait "${HOGS[@]}" 2>/dev/null || true
	HOGS=()
}

cleanup() {
	[ -n "$BG" ] && kill "$BG" 2>/dev/null
	stop_hogs
	unmount "$MNT" "$DAEMON"
	[ -n "$DAEMON" ] && kill_daemon "$DAEMON"
	wait 2>/dev/null
	rm -f "$SHM".*
	rm -rf --one-file-system "$T"
}
on_exit cleanup

jq_py() { # EXPR: evaluate EXPR on the JSON read from stdin (bound to j)
	python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

mount_vol() { ff_mount "$SPEC" "$MNT" "$T/daemon.log"; }
unmount_vol() { ff_unmount "$MNT"; }

# Raw write speed of a fresh tmpfs file like a replacement member (bytes/s).
raw_write_bps() {
	local f=$SHM.raw out
	out=$(fio --name=raw --filename="$f" --size="${SIZE_MB}M" --rw=write --bs=1M --direct=1 \
		--ioengine=io_uring --iodepth=8 --output-format=json 2>/dev/null) || die "fio failed"
	rm -f "$f"
	jq_py 'j["jobs"][0]["write"]["bw_bytes"]' <<<"$out"
}

frames_read_mbs() { # FRAMES: unpaced 4K read of every frame, 4 threads: MB/s
	"$FT" --json -u 0 -r -t 4 -n "$1" "$MNT/ft" 2>/dev/null | jq_py 'j["throughput"]["MB_s"] if j["frames"]["verify_failed"] == 0 and j["frames"]["errors"] == 0 else -1'
}

replace_member() { # ROLE: fail, remove and delete member ROLE; a fresh file stands ready
	local role=$1
	"$ADMIN" fail -q "$MNT" "${MEMBERS[role]}"
	"$ADMIN" remove -q "$MNT" "${MEMBERS[role]}"
	rm -f "${MEMBERS[role]}"
	MEMBERS[role]=$SHM.new$role.$run
	truncate -s "${SIZE_MB}M" "${MEMBERS[role]}"
}

rebuild_state() { # "active bytes_done roles" of the running rebuild
	"$ADMIN" --json status "$MNT" | jq_py '"%d %d %d" % (j["rebuild"]["active"], j["rebuild"]["bytes_done"], len(j["rebuild"]["roles"]))'
}

one_run() {
	local i st bytes active roles raw h d secs fr out b0 b1 dropped total bad lowest base
	MEMBERS=()
	for i in 0 1 2 3; do
		MEMBERS+=("$SHM.m$i")
		truncate -s "${SIZE_MB}M" "${MEMBERS[i]}"
	done
	SPEC=$(IFS=,; echo "${MEMBERS[*]}")
	"$MKFS" -q -f -l 5 "${MEMBERS[@]}" || die "mkfs.framefs failed"
	mount_vol
	mkdir "$MNT/ft"
	fr=$(("$SIZE_MB" * 3 * 1048576 / 100 * FILL_PCT / 51052544))
	[ "$fr" -ge 4 ] || fr=4
	"$FT" -u 0 -w 4k -n "$fr" -t 4 "$MNT/ft" >/dev/null 2>&1 || die "writing $fr 4K frames failed"
	mkdir "$MNT/loaded"
	"$FT" -u 0 -w "$LOADED_PRESET" -n "$LOADED_FRAMES" -t 4 "$MNT/loaded" >/dev/null 2>&1 ||
		die "writing $LOADED_FRAMES $LOADED_PRESET frames failed"
	sync

	h=$(frames_read_mbs "$fr")
	"$ADMIN" fail -q "$MNT" "${MEMBERS[1]}"
	d=$(frames_read_mbs "$fr")
	DEG+=("$(python3 -c "print('%.3f' % ($d / $h if $h > 0 and $d > 0 else 0))")")
	echo "   run $run: $fr 4K frames; read healthy $h MB/s, degraded $d MB/s"

	# idle rebuild onto a fresh member
	raw=$(raw_write_bps)
	"$ADMIN" remove -q "$MNT" "${MEMBERS[1]}"
	rm -f "${MEMBERS[1]}"
	MEMBERS[1]=$SHM.new1.$run
	truncate -s "${SIZE_MB}M" "${MEMBERS[1]}"
	read -r secs bytes < <(ff_rebuild_timed "$MNT" "${MEMBERS[1]}")
	st=$(python3 -c "
bps = $bytes / $secs
print('%.3f %.2f %.0f' % (bps / $raw, 1e12 / bps / 60, bps / 1e6))")
	read -r ratio mpt mbs <<<"$st"
	RVR+=("$ratio")
	MPT+=("$mpt")
	echo "   run $run: idle rebuild of $bytes bytes in $secs s = $mbs MB/s; raw write $(python3 -c "print('%.0f' % ($raw / 1e6))") MB/s: ratio $ratio, $mpt min/TB"

	# a 24 fps 4K stream plays while a second rebuild starts beside it (default rates); the
	# same stream first plays degraded with no rebuild: the drops this machine causes alone
	replace_member 2
	"$FT" --json -u 0 -r -t 4 -f 24 -n "$fr" -l $(((STREAM_S * 24 + fr - 1) / fr)) "$MNT/ft" \
		>"$T/stream.json" 2>"$T/stream.err" || true
	base=$(jq_py 'j["frames"]["dropped"]' <"$T/stream.json") || die "the stream printed no JSON"
	BASE+=("$base")
	"$FT" --json -u 0 -r -t 4 -f 24 -n "$fr" -l $(((STREAM_S * 24 + fr - 1) / fr)) "$MNT/ft" \
		>"$T/stream.json" 2>"$T/stream.err" &
	BG=$!
	sleep 1
	"$ADMIN" add -q "$MNT" "${MEMBERS[2]}"
	read -r active b0 roles < <(rebuild_state)
	wait "$BG" || true
	BG=
	read -r active b1 roles < <(rebuild_state)
	out=$(jq_py '"%d %d %d %s" % (j["frames"]["dropped"], j["frames"]["transferred"], j["frames"]["verify_failed"] + j["frames"]["errors"], j["lowest_fps_1s"])' <"$T/stream.json") ||
		die "the stream printed no JSON: $(tail -3 "$T/stream.err")"
	read -r dropped total bad lowest <<<"$out"
	[ "$bad" = 0 ] || die "the stream read $bad bad frame(s) during the rebuild"
	DROP+=("$dropped")
	echo "   run $run: 4K 24 fps stream of $total frames, degraded, no rebuild: dropped $base"
	echo "   run $run: 4K 24 fps stream of $total frames during the rebuild: dropped $dropped, lowest fps in 1 s $lowest; rebuild advanced $b0 -> $b1 bytes during it$([ "$roles" = 0 ] && echo ", finished")"
	"$ADMIN" rebuild -q "$MNT" >/dev/null || die "the second rebuild did not finish"

	# the same pair of streams with a busy loop on every core
	replace_member 3
	start_hogs
	stream_loaded "$LOADED_FRAMES" "$T/base.csv"
	base=$LOADED
	stream_loaded "$LOADED_FRAMES" "$T/rb.csv" "${MEMBERS[3]}"
	stop_hogs
	LDIFF+=("$((LOADED - base))")
	echo "   run $run: $LOADED_PRESET 24 fps stream with a CPU hog on every core: dropped $base without a rebuild ($(stalls "$T/base.csv") s with no frame), $LOADED with it ($(stalls "$T/rb.csv") s with no frame); rebuild advanced $LOADED_B0 -> $LOADED_B1 bytes"
	"$ADMIN" rebuild -q "$MNT" >/dev/null || die "the third rebuild did not finish"
	unmount_vol
	rm -f "$SHM".*
}

stream_loaded() { # FRAMES CSV [MEMBER]: the paced loaded stream (adding MEMBER 1 s in); sets LOADED
	local out
	"$FT" --json -u 0 -r -t 4 -f 24 -n "$1" -l $(((STREAM_S * 24 + $1 - 1) / $1)) -x "$2" \
		"$MNT/loaded" >"$T/loaded.json" 2>"$T/loaded.err" &
	BG=$!
	LOADED_B0=0 LOADED_B1=0
	if [ -n "${3:-}" ]; then
		sleep 1
		"$ADMIN" add -q "$MNT" "$3"
		read -r _ LOADED_B0 _ < <(rebuild_state)
	fi
	wait "$BG" || true
	BG=
	[ -n "${3:-}" ] && read -r _ LOADED_B1 _ < <(rebuild_state)
	out=$(jq_py '"%d %d" % (j["frames"]["dropped"], j["frames"]["verify_failed"] + j["frames"]["errors"])' <"$T/loaded.json") ||
		die "the loaded stream printed no JSON: $(tail -3 "$T/loaded.err")"
	read -r LOADED bad <<<"$out"
	[ "$bad" = 0 ] || die "the loaded stream read $bad bad frame(s)"
}

stalls() { # CSV: seconds of the stream in which no frame was done
	python3 -c "
import csv, sys
done = set(int(float(r['done_ms']) // 1000) for r in csv.DictReader(open(sys.argv[1]))
           if r['status'] == 'ok' and r['done_ms'])
print(sum(1 for s in range(max(done) + 1) if s not in done) if done else 0)" "$1"
}

stats() { # VALUES...: "min / median / max"
	python3 -c "
import statistics, sys
v = sorted(float(x) for x in sys.argv[1:])
print('%g / %g / %g' % (v[0], statistics.median(v), v[-1]))" "$@"
}
median() { python3 -c "import statistics, sys; print('%g' % statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
maxof() { python3 -c "import sys; print('%d' % max(int(x) for x in sys.argv[1:]))" "$@"; }

echo "framefs rebuild benchmark: RAID5, 4 x $SIZE_MB MiB tmpfs members, $FILL_PCT% full of 4K frames, $RUNS run(s)"
RVR=() MPT=() DEG=() DROP=() BASE=() LDIFF=()
for run in $(seq "$RUNS"); do
	one_run
done
echo
echo "                                min / median / max"
echo "rebuild_vs_raw                  $(stats "${RVR[@]}")   (bar >= 0.80)"
echo "rebuild_min_per_tb              $(stats "${MPT[@]}")   (MegaRAID 9670W 14.1, xiRAID ~5)"
echo "degraded_read_ratio             $(stats "${DEG[@]}")"
echo "frames_dropped_during_rebuild   $(stats "${DROP[@]}")   (bar 0)"
echo "  the same stream, no rebuild     $(stats "${BASE[@]}")   (what the machine drops by itself)"
echo "loaded_drops_due_to_rebuild     $(stats "${LDIFF[@]}")   (bar <= 0; $LOADED_PRESET 24 fps, CPU hog on every core)"
echo "RESULT rebuild_vs_raw=$(median "${RVR[@]}") rebuild_min_per_tb=$(median "${MPT[@]}") degraded_read_ratio=$(median "${DEG[@]}") frames_dropped_during_rebuild=$(maxof "${DROP[@]}") loaded_drops_due_to_rebuild=$(median "${LDIFF[@]}")"
