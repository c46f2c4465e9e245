#!/bin/bash
# bench/randwrite.sh: small random writes into existing files (project databases, caches).
# framefs RAID5 beside btrfs RAID5 and ext4 on one member, in one run, as ratios, with the bytes
# each one wrote to its members for every byte the application wrote.
#
#   bench/randwrite.sh     every case below (as root)
#
# Members: 4 files of SIZE_MB in MEMBERS_DIR, pre-touched, behind loop devices (direct-io=on):
# framefs RAID5 x 4 (mkfs.framefs -K -l 5, 512 KiB chunks: mkfs's default) and btrfs
# (mkfs.btrfs -K -d raid5 -m raid1, mounted nodiscard) on the same 4 loop devices, ext4 on the
# first one alone (mkfs.ext4 -E nodiscard, no lazy init: no background writes while measured).
# Every case, for every filesystem, on a fresh filesystem:
#   1. layout (untimed): JOBS files of SIZE written in sequence (fio, 1 MiB, end_fsync), then
#      sync and caches dropped: the random writes below overwrite data that is there;
#   2. fio --rw=randwrite --bs=BS --size=SIZE --numjobs=JOBS over those files, psync, buffered
#      (the command the bars are set on), fallocate=none, each block written once (fio's random map), with
#      --fsync=FSYNC (case "fsync") or none (case "buffered"), end_fsync=1 in both (the bytes
#      reach the members before the figures are taken); at most RUNTIME s (--runtime without
#      --time_based: size-bound, time-capped; see bench/README.md);
#   3. sync; counters read again.
# Figures: MB/s (fio's bandwidth, 10^6 B/s, its run time includes the end_fsync); amplification =
# bytes written to the members / bytes fio wrote: framefs's from its engine's counter
# (framefs-admin --json status: stats.raid.write_bytes, data + parity + every metadata copy),
# btrfs's and ext4's from their loop devices (/sys/block/loopN/stat, sectors written; for framefs
# too, as a cross-check: the difference is what framefs writes with pwrite beside its rings,
# superblocks and bitmaps); reads per byte written likewise (framefs's: stats.raid.read_bytes).
# For framefs a breakdown: full stripes written (and how many of them were tails sent to a tail
# stripe), rows writes, stripes filled from the array first, metadata bytes, commits.
# Cases run in order; within a case the filesystems' order rotates each run. Medians of RUNS
# runs, [min..max]; ratios are median / median with the per-run ratios' min..max. Last line:
#   RESULT randwrite_4k_amplification=... randwrite_4k_vs_btrfs5=... randwrite_64k_vs_btrfs5=...
#          randwrite_64k_amplification=... randwrite_4k_buffered_amplification=...
#          randwrite_64k_buffered_amplification=... randwrite_4k_buffered_vs_btrfs5=...
#          randwrite_64k_buffered_vs_btrfs5=... randwrite_4k_vs_ext4=...
# (the unqualified keys are the fsync case, the one the bars are set on; amplification is framefs's).
# Bars: randwrite_4k_amplification <= 4, randwrite_4k_vs_btrfs5 >= 1.0; the other keys are context.
#
# Knobs (environment):
#   RUNS=3              repetitions of every case
#   SIZE=64M            fio --size: each job's file (the bars' run)
#   JOBS=4              fio --numjobs (the bars' run)
#   FSYNC=64            fio --fsync of the fsync cases (the bars' run)
#   RUNTIME=30          seconds each random-write job may take (a job that hits it wrote less
#                       than SIZE: its row says how much)
#   CASES="4k/fsync 4k/buffered 64k/fsync 64k/buffered"   BS/fsync|buffered, BS a fio size
#   PEERS="ff5 btrfs5 ext4"   the filesystems (ff5: framefs RAID5 x 4)
#   SIZE_MB=512         size of each member (MiB); ext4's one member holds every file
#   MEMBERS_DIR=/dev/shm  where the member files go
#   SEED=1              fio --randseed of run k is SEED + k - 1 (the same for every filesystem)
#   FRAMEFS_BUILD       build dir with mkfs.framefs, framefs, framefs-admin (wherever meson
#                       put them; only there when set), else PATH
#   FRAMEFS_OPTS        -o options for the framefs mounts (default none)
#   FRAMEFS_MKFS_OPTS   more mkfs.framefs options, e.g. "-c 128K"
#   FRAMEFS_MEMBERS=loop  loop: framefs gets the loop devices; file: the files behind them (no
#                       loop-device cross-check then)
#   PHASE_TIMEOUT=300   seconds a mkfs, mount, layout or unmount may take (the random-write
#                       job gets RUNTIME + this)
# Needs root, fio, python3, util-linux, fuse3; btrfs-progs (and btrfs in the kernel) for btrfs5,
# e2fsprogs for ext4.
set -euo pipefail

PROG=randwrite.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

RUNS=${RUNS:-3}
SIZE=${SIZE:-64M}
JOBS=${JOBS:-4}
FSYNC=${FSYNC:-64}
RUNTIME=${RUNTIME:-30}
CASES=${CASES:-4k/fsync 4k/buffered 64k/fsync 64k/buffered}
PEERS=${PEERS:-ff5 btrfs5 ext4}
SIZE_MB=${SIZE_MB:-512}
MEMBERS_DIR=${MEMBERS_DIR:-/dev/shm}
SEED=${SEED:-1}
FRAMEFS_OPTS=${FRAMEFS_OPTS:-}
FRAMEFS_MKFS_OPTS=${FRAMEFS_MKFS_OPTS:-}
FRAMEFS_MEMBERS=${FRAMEFS_MEMBERS:-loop}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-300}
NMEM=4

for v in RUNS JOBS FSYNC RUNTIME SIZE_MB SEED PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
[ "$RUNS" -le 32 ] || die "RUNS must be at most 32"
bytes_of() { # fio size (4k, 64K, 64M, 1g, 4096) -> bytes, or nothing
	awk -v s="$1" 'BEGIN { if (!match(s, /^[1-9][0-9]*[kKmMgG]?$/)) exit
		n = s + 0; u = tolower(substr(s, length(s)))
		printf "%.0f\n", n * (u == "k" ? 1024 : u == "m" ? 1048576 : u == "g" ? 1073741824 : 1) }'
}
SIZE_B=$(bytes_of "$SIZE")
[ -n "$SIZE_B" ] || die "SIZE must be a fio size such as 64M (got '$SIZE')"
read -r -a CASE_LIST <<<"$CASES"
[ "${#CASE_LIST[@]}" -gt 0 ] || die "CASES is empty"
for c in "${CASE_LIST[@]}"; do
	bs=${c%/*}
	if ! [[ $c == */fsync || $c == */buffered ]] || [ -z "$(bytes_of "$bs")" ]; then
		die "CASES: '$c' is not BS/fsync or BS/buffered (BS a fio size such as 4k)"
	fi
	[ $(($(bytes_of "$bs") % 4096)) = 0 ] || die "CASES: '$c': the block size must be a multiple of 4 KiB"
	[ "$(bytes_of "$bs")" -le "$SIZE_B" ] || die "CASES: '$c': the block size exceeds SIZE"
done
read -r -a PEER_LIST <<<"$PEERS"
[ "${#PEER_LIST[@]}" -gt 0 ] || die "PEERS is empty"
for p in "${PEER_LIST[@]}"; do
	case $p in ff5 | btrfs5 | ext4) ;; *) die "PEERS: no filesystem '$p' (ff5 btrfs5 ext4)" ;; esac
done
has_peer() { [[ " ${PEER_LIST[*]} " == *" $1 "* ]]; }
case "$FRAMEFS_MEMBERS" in loop | file) ;; *) die "FRAMEFS_MEMBERS must be loop or file" ;; esac
# ext4 holds every file on one member; the copy-on-write filesystems need room to write anew
[ $((JOBS * SIZE_B * 2)) -le $((SIZE_MB * 1048576)) ] ||
	die "SIZE_MB=$SIZE_MB is too small for $JOBS files of $SIZE (at most half a member); raise SIZE_MB"
[ "$(id -u)" -eq 0 ] || die "must run as root (loop devices, mounts, drop_caches)"
for t in fio python3 losetup findmnt pgrep timeout truncate dd awk sort; do
	command -v "$t" >/dev/null || die "$t not found (see bench/README.md for the packages)"
done
if has_peer btrfs5; then
	command -v mkfs.btrfs >/dev/null || die "mkfs.btrfs not found (btrfs-progs)"
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || grep -qw btrfs /proc/filesystems ||
		die "the kernel has no btrfs (modprobe btrfs failed)"
fi
if has_peer ext4; then
	command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 not found (e2fsprogs)"
fi
[ -d "$MEMBERS_DIR" ] || die "MEMBERS_DIR $MEMBERS_DIR is not a directory"

if has_peer ff5; then
	command -v fusermount3 >/dev/null || die "fusermount3 not found (fuse3)"
	MKFS_FRAMEFS=$(need_bin mkfs.framefs)
	FRAMEFS=$(need_bin framefs)
	ADMIN=$(need_bin framefs-admin) # its counters are the amplification
fi

need=$((NMEM * SIZE_MB + 128))
[ "$(avail_mb "$MEMBERS_DIR")" -ge "$need" ] ||
	die "$MEMBERS_DIR has $(avail_mb "$MEMBERS_DIR") MiB free, needs $need (4 members of $SIZE_MB MiB)"
if [ "$(stat -f -c %T "$MEMBERS_DIR")" = tmpfs ]; then
	[ "$(mem_avail_mb)" -ge $((need + 512)) ] ||
		die "needs ~$((need + 512)) MiB of memory for the members in tmpfs, $(mem_avail_mb) MiB available"
fi

# ---- what lives where, and its clean-up -------------------------------------------------------

W="" # member files, outputs
MNT=""
LOOPS=()
MPID="" # pid of the framefs daemon serving $MNT/fs
ERRF=/dev/null
OUTF=/dev/null

on_exit cleanup_mount

W=$(mktemp -d "$MEMBERS_DIR/framefs-randwrite.XXXXXX")
MNT=$(mktemp -d /tmp/framefs-randwrite-mnt.XXXXXX)
mkdir "$MNT/fs"
ERRF=$W/err
OUTF=$W/out


# ---- members ----------------------------------------------------------------------------------

MFILES=()
for i in $(seq 0 $((NMEM - 1))); do
	MFILES+=("$W/m$i.img")
	truncate -s "${SIZE_MB}M" "$W/m$i.img"
done
touch_members() { # fill holes (never written, or punched by a discard) so that page allocation
	# in tmpfs is not measured
	local f alloc
	for f in "${MFILES[@]}"; do
		alloc=$(stat -c '%b*%B' "$f")
		if [ $((alloc)) -lt $((SIZE_MB * 1048576)) ]; then
			dd if=/dev/zero of="$f" bs=1M count="$SIZE_MB" oflag=direct conv=notrunc status=none 2>"$ERRF" ||
				die "pre-touch $f: $(lasterr)"
		fi
	done
}
touch_members
attach_loops "${MFILES[@]}"

# ---- the filesystems --------------------------------------------------------------------------

devs_of() { # PEER -> the loop devices whose counters are its member bytes
	case $1 in
	ext4) echo "${LOOPS[0]}" ;;
	ff5) [ "$FRAMEFS_MEMBERS" = loop ] && echo "${LOOPS[*]}" ;;
	*) echo "${LOOPS[*]}" ;;
	esac
}
loop_sectors() { # DEV... -> "sectors-read sectors-written" summed (fields 3 and 7 of the stat file)
	local d
	for d in "$@"; do cat "/sys/block/${d#/dev/}/stat"; done | awk '{ r += $3; w += $7 } END { printf "%.0f %.0f\n", r, w }'
}

ff_mount() { # mount framefs on $MNT/fs; sets MPID
	local i list opts=()
	if [ "$FRAMEFS_MEMBERS" = loop ]; then list=$(IFS=,; echo "${LOOPS[*]}"); else list=$(IFS=,; echo "${MFILES[*]}"); fi
	[ -n "$FRAMEFS_OPTS" ] && opts=(-o "$FRAMEFS_OPTS")
	run "$FRAMEFS" "${opts[@]}" "$list" "$MNT/fs" || { warn "framefs $list: $(lasterr)"; return 1; }
	for i in $(seq 1 75); do
		mounted "$MNT/fs" && MPID=$(daemon_pid "$MNT/fs" framefs) && return 0
		sleep 0.2
	done
	warn "framefs did not mount $list"
	return 1
}
fs_make() { # PEER: a fresh filesystem, mounted on $MNT/fs
	local opts=() m
	touch_members
	case $1 in
	ff5)
		if [ "$FRAMEFS_MEMBERS" = loop ]; then m=("${LOOPS[@]}"); else m=("${MFILES[@]}"); fi
		read -r -a opts <<<"$FRAMEFS_MKFS_OPTS"
		run "$MKFS_FRAMEFS" -q -f -K -l 5 -L randbench "${opts[@]}" "${m[@]}" ||
			{ warn "mkfs.framefs: $(lasterr)"; return 1; }
		ff_mount
		;;
	btrfs5)
		# -K: no discard (on a loop device over tmpfs a discard punches the file)
		run mkfs.btrfs -q -f -K -d raid5 -m raid1 "${LOOPS[@]}" || { warn "mkfs.btrfs: $(lasterr)"; return 1; }
		btrfs device scan "${LOOPS[@]}" >/dev/null 2>&1 || true
		run mount -t btrfs -o nodiscard "${LOOPS[0]}" "$MNT/fs" || { warn "mount btrfs: $(lasterr)"; return 1; }
		;;
	ext4)
		run mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "${LOOPS[0]}" ||
			{ warn "mkfs.ext4: $(lasterr)"; return 1; }
		run mount -t ext4 -o nodiscard "${LOOPS[0]}" "$MNT/fs" || { warn "mount ext4: $(lasterr)"; return 1; }
		;;
	esac
}
fs_drop() { # PEER: unmount (and wait for framefs's daemon to let go of the members)
	unmount "$MNT/fs" "$MPID" || { warn "cannot unmount $1"; return 1; }
	if [ "$1" = ff5 ]; then
		[ -z "$MPID" ] || wait_gone "$MPID" framefs || return 1
		MPID=""
		return 0
	fi
	[ "$1" = btrfs5 ] && for l in "${LOOPS[@]}"; do btrfs device scan --forget "$l" >/dev/null 2>&1 || true; done
	return 0
}

FF_KEYS="write_bytes meta_write_bytes read_bytes full_stripe_writes rows_writes rmw_segments rcw_segments stripe_writes stripe_fills tail_writes wbuf_evictions small_stores commits"
ff_counters() { # -> the values of FF_KEYS, in order, from the daemon's status
	# shellcheck disable=SC2086 # FF_KEYS: one word a key
	timeout 30 "$ADMIN" --json status "$MNT/fs" 2>"$ERRF" | python3 -c '
import json, sys
d = json.load(sys.stdin)["stats"]
s = dict(d["raid"]); s.update(d["fs"] or {})
print(" ".join(str(s[k]) for k in sys.argv[1:]))' $FF_KEYS
}

# ---- measurements -----------------------------------------------------------------------------

declare -A R=() # key -> "v1 v2 ..." (one per run, in run order)
add() { R[$1]="${R[$1]:-}$2 "; }
FAILS=0

fio_json() { # FILE -> "io_bytes bw_bytes runtime_ms" of the group's writes, or nothing
	python3 -c '
import json, sys
try:
    j = json.load(open(sys.argv[1]))["jobs"][0]
except Exception:
    sys.exit(0)
w = j["write"]
if j.get("error", 0) == 0 and w["io_bytes"] > 0:
    print(w["io_bytes"], w["bw_bytes"], w["runtime"])' "$1"
}

case_row() { # CASE PEER RUN -> figures added under PEER.CASE.*
	local c=$1 p=$2 run=$3 bs=${1%/*} mode=${1#*/} k="$2.$1" fsync=() d=$MNT/fs/rw devs
	local b0 b1 f0=() f1=() io bw rt amp ramp lamp capped="" t0 t1 dt line
	fs_make "$p" || return 1
	mkdir -p "$d"
	run fio --name=rw --directory="$d" --rw=write --bs=1M --size="$SIZE" --numjobs="$JOBS" \
		--ioengine=psync --fallocate=none --end_fsync=1 --output-format=json ||
		{ warn "$p $c: the layout failed: $(lasterr)"; fs_drop "$p"; return 1; }
	sync
	echo 3 >/proc/sys/vm/drop_caches
	# shellcheck disable=SC2046 # a list of devices
	read -r -a devs <<<"$(devs_of "$p")"
	[ "${#devs[@]}" -gt 0 ] && b0=$(loop_sectors "${devs[@]}")
	if [ "$p" = ff5 ]; then
		read -r -a f0 <<<"$(ff_counters)" || true
		[ "${#f0[@]}" -gt 0 ] || { warn "$p $c: framefs-admin status: $(lasterr)"; fs_drop "$p"; return 1; }
	fi
	[ "$mode" = fsync ] && fsync=(--fsync="$FSYNC")
	t0=$(date +%s.%N)
	run_for $((RUNTIME + PHASE_TIMEOUT)) fio --name=rw --directory="$d" --rw=randwrite --bs="$bs" --size="$SIZE" \
		--numjobs="$JOBS" --ioengine=psync --fallocate=none "${fsync[@]}" --end_fsync=1 --runtime="$RUNTIME" \
		--randseed=$((SEED + run - 1)) --group_reporting --output-format=json ||
		{ warn "$p $c: fio randwrite failed: $(lasterr)"; fs_drop "$p"; return 1; }
	t1=$(date +%s.%N)
	cp "$OUTF" "$W/$p.${c/\//-}.$run.json"
	sync
	[ "${#devs[@]}" -gt 0 ] && b1=$(loop_sectors "${devs[@]}")
	if [ "$p" = ff5 ]; then
		read -r -a f1 <<<"$(ff_counters)" || true
		[ "${#f1[@]}" -gt 0 ] || { warn "$p $c: framefs-admin status: $(lasterr)"; fs_drop "$p"; return 1; }
	fi
	fs_drop "$p" || return 1
	read -r io bw rt <<<"$(fio_json "$W/$p.${c/\//-}.$run.json")" || true
	[ -n "${io:-}" ] || { warn "$p $c: no write figures in fio's output"; return 1; }
	dt=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	[ "$io" -lt $((JOBS * SIZE_B)) ] &&
		capped=" (capped at ${RUNTIME} s: $(awk -v a="$io" -v b=$((JOBS * SIZE_B)) 'BEGIN { printf "%.0f", 100 * a / b }') % of the bytes)"
	add "$k.mbs" "$(awk -v b="$bw" 'BEGIN { printf "%.2f", b / 1e6 }')"
	add "$k.app" "$io"
	line=$(printf '  %-7s %9.2f MB/s, %7.1f MiB written in %5.1f s (fio %.1f s)%s' "$p" "$(awk -v b="$bw" 'BEGIN { print b / 1e6 }')" \
		"$(awk -v b="$io" 'BEGIN { print b / 1048576 }')" "$dt" "$(awk -v r="$rt" 'BEGIN { print r / 1000 }')" "$capped")
	if [ -n "${b1:-}" ]; then
		# shellcheck disable=SC2086
		set -- $b0 $b1
		lamp=$(awk -v w=$(( ($4 - $2) * 512 )) -v a="$io" 'BEGIN { printf "%.2f", w / a }')
		ramp=$(awk -v r=$(( ($3 - $1) * 512 )) -v a="$io" 'BEGIN { printf "%.2f", r / a }')
		add "$k.lamp" "$lamp"
		add "$k.ramp" "$ramp"
		add "$k.lbytes" $(( ($4 - $2) * 512 ))
	fi
	if [ "$p" = ff5 ]; then
		local i n=0 delta=()
		for i in "${!f0[@]}"; do delta+=($((f1[i] - f0[i]))); done
		# FF_KEYS: write_bytes meta_write_bytes read_bytes full_stripe_writes rows_writes rmw_segments
		# rcw_segments stripe_writes stripe_fills tail_writes wbuf_evictions small_stores commits
		amp=$(awk -v w="${delta[0]}" -v a="$io" 'BEGIN { printf "%.2f", w / a }')
		add "$k.amp" "$amp"
		add "$k.eramp" "$(awk -v r="${delta[2]}" -v a="$io" 'BEGIN { printf "%.2f", r / a }')"
		for i in $FF_KEYS; do add "$k.$i" "${delta[$n]}"; n=$((n + 1)); done
		line+=$(printf '; members: %s MiB written (x%s, engine), read %s MiB' "$(awk -v b="${delta[0]}" 'BEGIN { printf "%.1f", b / 1048576 }')" \
			"$amp" "$(awk -v b="${delta[2]}" 'BEGIN { printf "%.1f", b / 1048576 }')")
		[ -n "${lamp:-}" ] && line+=$(printf '; loop devices x%s written (+%s B beside the engine), x%s read' "$lamp" \
			$(( ($4 - $2) * 512 - delta[0] )) "$ramp")
		echo "$line"
		printf '          %s full stripes (%s of them tails sent to a tail stripe), %s rows writes, %s RMW / %s RCW segments; %s stripes filled from the array first; META %s MiB; %s commits; %s evictions\n' \
			"${delta[3]}" "${delta[9]}" "${delta[4]}" "${delta[5]}" "${delta[6]}" "${delta[8]}" \
			"$(awk -v b="${delta[1]}" 'BEGIN { printf "%.1f", b / 1048576 }')" "${delta[12]}" "${delta[10]}"
	else
		[ -n "${lamp:-}" ] && line+=$(printf '; members (loop devices): x%s written, x%s read' "$lamp" "$ramp")
		echo "$line"
	fi
}

# ---- statistics -------------------------------------------------------------------------------

stat3() { # KEY -> "median min max"
	[ -n "${R[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	printf '%s\n' ${R[$1]} | sort -g | awk '{ v[NR] = $1 }
		END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}
cell() { # KEY DECIMALS -> "median [min..max]" or "-"
	local s
	s=$(stat3 "$1")
	[ -n "$s" ] || { echo "-"; return; }
	# shellcheck disable=SC2086
	set -- $s "$2"
	if [ "$RUNS" -gt 1 ]; then printf '%.*f [%.*f..%.*f]' "$4" "$1" "$4" "$2" "$4" "$3"; else printf '%.*f' "$4" "$1"; fi
}
ratio() { # NUM DEN -> "median/median per-run-min per-run-max", nothing if either is missing
	[ -n "${R[$1]:-}" ] && [ -n "${R[$2]:-}" ] || return 0
	awk -v a="${R[$1]}" -v b="${R[$2]}" -v ma="$(stat3 "$1" | cut -d' ' -f1)" -v mb="$(stat3 "$2" | cut -d' ' -f1)" 'BEGIN {
		na = split(a, x, " "); nb = split(b, y, " "); lo = hi = ""
		if (mb <= 0) exit
		if (na == nb) for (i = 1; i <= na; i++) if (y[i] > 0) { q = x[i] / y[i]
			if (lo == "" || q < lo) lo = q; if (hi == "" || q > hi) hi = q }
		r = ma / mb; if (lo == "") { lo = r; hi = r }
		printf "%.3f %.3f %.3f\n", r, lo, hi }'
}

# ---- the run ----------------------------------------------------------------------------------

echo "randwrite.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $(fio --version)"
echo "members: $NMEM x $SIZE_MB MiB in $W behind loop devices (direct-io=on): ${LOOPS[*]}"
has_peer ff5 && echo "framefs: $FRAMEFS, $MKFS_FRAMEFS -l 5${FRAMEFS_MKFS_OPTS:+ $FRAMEFS_MKFS_OPTS} on the ${FRAMEFS_MEMBERS} members${FRAMEFS_OPTS:+, -o $FRAMEFS_OPTS}"
has_peer btrfs5 && echo "btrfs: $(mkfs.btrfs --version 2>&1 | head -n1), -d raid5 -m raid1 on the 4 loop devices, nodiscard"
has_peer ext4 && echo "ext4: $(mkfs.ext4 -V 2>&1 | head -n1), on ${LOOPS[0]} alone"
echo "workload: fio randwrite over $JOBS existing files of $SIZE (laid out first), psync, buffered, each block once, end_fsync; cases: ${CASE_LIST[*]} (fsync: --fsync=$FSYNC); at most $RUNTIME s a job; $RUNS runs"
echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

T0=$(date +%s)
for run in $(seq 1 "$RUNS"); do
	echo "== run $run/$RUNS (seed $((SEED + run - 1)), load average $(cut -d' ' -f1-3 /proc/loadavg))"
	ci=0
	for c in "${CASE_LIST[@]}"; do
		if [[ $c == */fsync ]]; then echo "${c%/*} random writes, --fsync=$FSYNC"; else echo "${c%/*} random writes, buffered (end_fsync only)"; fi
		np=${#PEER_LIST[@]}
		for j in $(seq 0 $((np - 1))); do
			p=${PEER_LIST[$(((j + run - 1 + ci) % np))]}
			case_row "$c" "$p" "$run" || { warn "$p $c run $run failed"; FAILS=$((FAILS + 1)); unmount "$MNT/fs" "$MPID" || true; }
		done
		ci=$((ci + 1))
	done
done
echo "($RUNS runs in $(($(date +%s) - T0)) s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo

# ---- summary ----------------------------------------------------------------------------------

label() { case $1 in ff5) echo "framefs RAID5 x 4" ;; btrfs5) echo "btrfs RAID5 x 4" ;; ext4) echo "ext4, 1 member" ;; esac; }
hdr="median [min..max] of $RUNS runs"
[ "$RUNS" = 1 ] && hdr="1 run"
printf '%-34s' "MB/s, $hdr"
for p in "${PEER_LIST[@]}"; do printf ' %-28s' "$(label "$p")"; done
echo
for c in "${CASE_LIST[@]}"; do
	printf '%-34s' "$c"
	for p in "${PEER_LIST[@]}"; do printf ' %-28s' "$(cell "$p.$c.mbs" 2)"; done
	echo
done
echo
ratio_table() { # TITLE FRAMEFS-KEY PEER-KEY: a row per case, framefs's figure from its engine
	printf '%-34s' "$1"
	for p in "${PEER_LIST[@]}"; do printf ' %-28s' "$(label "$p")"; done
	echo
	for c in "${CASE_LIST[@]}"; do
		printf '%-34s' "$c"
		for p in "${PEER_LIST[@]}"; do
			if [ "$p" = ff5 ]; then printf ' %-28s' "$(cell "$p.$c.$2" 1)"; else printf ' %-28s' "$(cell "$p.$c.$3" 1)"; fi
		done
		echo
	done
}
ratio_table "written to members / by fio" amp lamp
ratio_table "read from members / by fio written" eramp ramp
echo "(framefs: its engine's write_bytes and read_bytes; btrfs and ext4: their loop devices' sectors)"
echo

median_run() { # KEY -> the position (1..) of the run whose value is the median (the lower of
	# the middle two when their number is even)
	# shellcheck disable=SC2086
	printf '%s\n' ${R[$1]} | awk '{ print $1, NR }' | sort -g | awk '{ v[NR] = $2 } END { print v[int((NR + 1) / 2)] }'
}
nth() { # KEY N -> the value of run N
	# shellcheck disable=SC2086
	printf '%s\n' ${R[$1]} | sed -n "${2}p"
}

# where framefs's member bytes went, per case: the counts of one run, the median one (by its
# amplification), so that they add up
if has_peer ff5; then
	echo "framefs, where the member bytes went (the run with the median amplification of each case):"
	for c in "${CASE_LIST[@]}"; do
		[ -n "${R[ff5.$c.write_bytes]:-}" ] || continue
		mr=$(median_run "ff5.$c.amp")
		m() { nth "ff5.$c.$1" "$mr"; }
		awk -v c="$c" -v wb="$(m write_bytes)" -v mb="$(m meta_write_bytes)" -v rb="$(m read_bytes)" -v fsw="$(m full_stripe_writes)" \
			-v rows="$(m rows_writes)" -v rmw="$(m rmw_segments)" -v rcw="$(m rcw_segments)" -v sw="$(m stripe_writes)" \
			-v fills="$(m stripe_fills)" -v tails="$(m tail_writes)" -v ev="$(m wbuf_evictions)" -v cm="$(m commits)" \
			-v app="$(m app)" -v bs="$(bytes_of "${c%/*}")" 'BEGIN {
			w = app / bs; data = wb - mb
			printf "  %-14s %.0f writes of %d B (%.1f MiB): %.1f MiB to members = data stripes %.1f MiB (%.1f %%: %d full-stripe writes, %d of them tails sent to a tail stripe, %.1f writes of fio a stripe written; %d rows writes, %d RMW, %d RCW) + META %.1f MiB (%.1f %%, %d commits); read %.1f MiB (%d stripes filled from the array first, %d evictions)\n",
				c, w, bs, app / 1048576, wb / 1048576, data / 1048576, wb ? 100 * data / wb : 0, fsw, tails, fsw ? w / fsw : 0,
				rows, rmw, rcw, mb / 1048576, wb ? 100 * mb / wb : 0, cm, rb / 1048576, fills, ev }'
	done
	echo
fi

RESULT=()
verdict() { # VALUE BAR ge|le
	awk -v r="$1" -v b="$2" -v how="$3" 'BEGIN { ok = (how == "ge") ? r >= b : r <= b; print ok ? "ok" : (how == "ge" ? "BELOW" : "ABOVE") }'
}
rline() { # NAME "median lo hi" BAR(- none) ge|le
	local name=$1 bar=$3 how=${4:-ge} s=""
	# shellcheck disable=SC2086
	set -- $2
	if [ -z "${1:-}" ]; then
		printf '  %-38s %s\n' "$name" n/a
		RESULT+=("$name=n/a")
		return
	fi
	[ "$bar" != - ] && s="$([ "$how" = ge ] && echo ">=" || echo "<=") $bar $(verdict "$1" "$bar" "$how")"
	printf '  %-38s %-8s [%s..%s]  %s\n' "$name" "$(printf '%.3g' "$1")" "$(printf '%.3g' "$2")" "$(printf '%.3g' "$3")" "$s"
	RESULT+=("$name=$(printf '%.3g' "$1")")
}
echo "ratios (median/median, [min..max] of per-run ratios; amplification: median [min..max]), against the bars:"
rline randwrite_4k_amplification "$(stat3 ff5.4k/fsync.amp)" 4 le
rline randwrite_4k_vs_btrfs5 "$(ratio ff5.4k/fsync.mbs btrfs5.4k/fsync.mbs)" 1.0 ge
rline randwrite_64k_vs_btrfs5 "$(ratio ff5.64k/fsync.mbs btrfs5.64k/fsync.mbs)" -
rline randwrite_64k_amplification "$(stat3 ff5.64k/fsync.amp)" -
rline randwrite_4k_buffered_amplification "$(stat3 ff5.4k/buffered.amp)" -
rline randwrite_64k_buffered_amplification "$(stat3 ff5.64k/buffered.amp)" -
rline randwrite_4k_buffered_vs_btrfs5 "$(ratio ff5.4k/buffered.mbs btrfs5.4k/buffered.mbs)" -
rline randwrite_64k_buffered_vs_btrfs5 "$(ratio ff5.64k/buffered.mbs btrfs5.64k/buffered.mbs)" -
rline randwrite_4k_vs_ext4 "$(ratio ff5.4k/fsync.mbs ext4.4k/fsync.mbs)" -
[ "$FAILS" -gt 0 ] && warn "$FAILS row(s) failed; see above"
echo "RESULT ${RESULT[*]}"
[ "$FAILS" = 0 ]
