#!/bin/bash
# bench/capacity.sh: what a volume holds. framefs beside btrfs RAID5 on the same members, in one
# run, as ratios.
#
#   bench/capacity.sh      every phase below (as root)
#
# 1. mix: 4 members of BENCH_CAP_MEMBER_MB (files in BENCH_CAP_MEMBERS_DIR behind loop devices);
#    btrfs (mkfs.btrfs -d raid5 -m raid1) and framefs RAID5 (mkfs.framefs -l 5) in turn on the
#    same loop devices, each filled with the facility mix until ENOSPC (bench/capmix.py: 4K DPX
#    frames of BENCH_CAP_DPX_BYTES, each with a 4 KiB ._ sidecar, one .xml per 100 frames,
#    EXR-like frames of seeded sizes in BENCH_CAP_EXR_MIN_MB..BENCH_CAP_EXR_MAX_MB), the same
#    seeded sequence for both (seed BENCH_CAP_SEED + run - 1); bytes stored = the bytes of the
#    files written completely before the first ENOSPC, read back after a remount. Printed:
#    capacity_vs_btrfs5 = framefs bytes / btrfs bytes, framefs_of_raw5 = framefs bytes /
#    ((n-1)/n x raw member bytes), btrfs5_of_raw5 the same for btrfs, and where the rest went.
# 2. small: a fresh framefs volume on the same members made with -N BENCH_CAP_SMALL_N (mkfs
#    sizes the pool for small files by it: 2 KiB an inode), filled with 4 KiB files (4 threads)
#    until ENOSPC or BENCH_CAP_SMALL_MAX files, read back after a remount:
#    small_files_per_gib = files / GiB of raw members.
# 3. check (the small-file bar): 100,000 files of 4 KiB on RAID5 x 4 of 1 GiB members made with
#    mkfs.framefs -N 200000: fits_100k_4k=yes|no. With the defaults (1 GiB members, -N 200000)
#    the small phase is that volume, filled further, and answers it; otherwise a volume of its
#    own (4 files of 1 GiB) is made for it.
# 4. write: frames.sh's O_DIRECT 4K frame write (row BENCH_CAP_WRITE_ROW, bench/frames.sh
#    ONLY=ROW RUNS=1) with this build and with FRAMEFS_BEFORE, BENCH_CAP_WRITE_RUNS times each,
#    interleaved (A B, B A, A B, ...): frames_write_vs_before = median / median.
# Last line:
#   RESULT capacity_vs_btrfs5=... framefs_of_raw5=... btrfs5_of_raw5=... small_files_per_gib=...
#          fits_100k_4k=... frames_write_vs_before=... framefs_bytes=... btrfs_bytes=...
#
# Knobs (environment):
#   BENCH_CAP_MEMBER_MB=1024      size of each of the 4 members (MiB)
#   BENCH_CAP_MEMBERS_DIR=/dev/shm where the member files go
#   BENCH_CAP_RUNS=3              fills of each filesystem (seed BENCH_CAP_SEED + run - 1)
#   BENCH_CAP_SEED=1
#   BENCH_CAP_DPX_BYTES=35389440  one DPX frame (4096 x 2160 x 4)
#   BENCH_CAP_EXR_MIN_MB=3, BENCH_CAP_EXR_MAX_MB=60  EXR-like frame sizes (10^6 bytes)
#   BENCH_CAP_CHUNK_KB=512        framefs's chunk (mkfs.framefs -c; the default)
#   BENCH_CAP_FRAMEFS_MKFS_OPTS   more mkfs.framefs options for the mix phase
#   BENCH_CAP_SMALL_N             mkfs.framefs -N for the small phase (default: the check's
#                                 200000 for 4 x 1 GiB, in proportion: 200000 x MEMBER_MB / 1024)
#   BENCH_CAP_SMALL_MAX=          at most this many 4 KiB files (default BENCH_CAP_SMALL_N)
#   BENCH_CAP_CHECK=1             0: skip the 100,000-file check when the small phase is not it
#   BENCH_CAP_WRITE_RUNS=3        frames.sh runs of each build (0: skip the phase)
#   BENCH_CAP_WRITE_ROW=ff5       frames.sh's row: ff5 (/dev/fuse) or ff5uring (io_uring, the default)
#   BENCH_CAP_WRITE_FRAMES=32     frames.sh FRAMES (frames per phase)
#   BENCH_CAP_WRITE_SIZE_MB=1024  frames.sh SIZE_MB (its 6 members in /dev/shm)
#   BENCH_CAP_PHASES="mix small check write"   the phases to run
#   FRAMEFS_BUILD                 build dir with mkfs.framefs and framefs (wherever meson put
#                                 them; only there when set), else PATH
#   FRAMEFS_BEFORE                another build dir (e.g. of the commit before the small-data
#                                 class) for the write phase; unset: frames_write_vs_before=n/a
#   PHASE_TIMEOUT=900             seconds a fill, a check or a frames.sh run may take
# Needs root, python3, btrfs-progs (and btrfs in the kernel), util-linux, fuse3; the write phase
# what bench/frames.sh needs.
set -euo pipefail

PROG=capacity.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
CAPMIX=$HERE/capmix.py

case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

MEMBER_MB=${BENCH_CAP_MEMBER_MB:-1024}
MEMBERS_DIR=${BENCH_CAP_MEMBERS_DIR:-/dev/shm}
RUNS=${BENCH_CAP_RUNS:-3}
SEED=${BENCH_CAP_SEED:-1}
DPX_BYTES=${BENCH_CAP_DPX_BYTES:-35389440}
EXR_MIN_MB=${BENCH_CAP_EXR_MIN_MB:-3}
EXR_MAX_MB=${BENCH_CAP_EXR_MAX_MB:-60}
CHUNK_KB=${BENCH_CAP_CHUNK_KB:-512}
FF_MKFS_OPTS=${BENCH_CAP_FRAMEFS_MKFS_OPTS:-}
SMALL_N=${BENCH_CAP_SMALL_N:-$((200000 * ${BENCH_CAP_MEMBER_MB:-1024} / 1024))}
SMALL_MAX=${BENCH_CAP_SMALL_MAX:-$SMALL_N}
CHECK=${BENCH_CAP_CHECK:-1}
WRITE_RUNS=${BENCH_CAP_WRITE_RUNS:-3}
WRITE_ROW=${BENCH_CAP_WRITE_ROW:-ff5}
WRITE_FRAMES=${BENCH_CAP_WRITE_FRAMES:-32}
WRITE_SIZE_MB=${BENCH_CAP_WRITE_SIZE_MB:-1024}
PHASES=${BENCH_CAP_PHASES:-mix small check write}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-900}
NMEM=4
SMALL_BYTES=4096
CHECK_FILES=100000
CHECK_N=200000
CHECK_MB=1024

for v in MEMBER_MB RUNS SEED DPX_BYTES EXR_MIN_MB EXR_MAX_MB CHUNK_KB SMALL_N SMALL_MAX WRITE_FRAMES \
	WRITE_SIZE_MB PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
[[ $WRITE_RUNS =~ ^[0-9]+$ ]] || die "BENCH_CAP_WRITE_RUNS must be a whole number"
[ "$EXR_MIN_MB" -le "$EXR_MAX_MB" ] || die "BENCH_CAP_EXR_MIN_MB must not exceed BENCH_CAP_EXR_MAX_MB"
[ "$RUNS" -le 32 ] || die "BENCH_CAP_RUNS must be at most 32"
case "$CHECK" in 0 | 1) ;; *) die "BENCH_CAP_CHECK must be 0 or 1" ;; esac
case "$WRITE_ROW" in ff5 | ff5uring) ;; *) die "BENCH_CAP_WRITE_ROW must be ff5 or ff5uring" ;; esac
for p in $PHASES; do
	case $p in mix | small | check | write) ;; *) die "BENCH_CAP_PHASES: no phase '$p' (mix small check write)" ;; esac
done
has_phase() { [[ " $PHASES " == *" $1 "* ]]; }
[ "$(id -u)" -eq 0 ] || die "must run as root (loop devices, mounts)"
for t in python3 losetup mkfs.btrfs btrfs fusermount3 findmnt pgrep timeout truncate awk sort; do
	command -v "$t" >/dev/null || die "$t not found (see bench/README.md for the packages)"
done
[ -r "$CAPMIX" ] || die "$CAPMIX not found"
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || grep -qw btrfs /proc/filesystems ||
	die "the kernel has no btrfs (modprobe btrfs failed)"
[ -d "$MEMBERS_DIR" ] || die "BENCH_CAP_MEMBERS_DIR $MEMBERS_DIR is not a directory"

MKFS_FRAMEFS=$(need_bin mkfs.framefs)
FRAMEFS=$(need_bin framefs)
BEFORE_OK=0
if has_phase write && [ "$WRITE_RUNS" -gt 0 ] && [ -n "${FRAMEFS_BEFORE:-}" ]; then
	FRAMEFS_BUILD=$FRAMEFS_BEFORE need_bin mkfs.framefs >/dev/null
	FRAMEFS_BUILD=$FRAMEFS_BEFORE need_bin framefs >/dev/null
	BEFORE_OK=1
fi

need=$((NMEM * MEMBER_MB + 256))
[ "$(avail_mb "$MEMBERS_DIR")" -ge "$need" ] ||
	die "$MEMBERS_DIR has $(avail_mb "$MEMBERS_DIR") MiB free, needs $need (4 members of $MEMBER_MB MiB)"
if [ "$(stat -f -c %T "$MEMBERS_DIR")" = tmpfs ]; then
	[ "$(mem_avail_mb)" -ge $((need + 512)) ] ||
		die "needs ~$((need + 512)) MiB of memory for the members in tmpfs, $(mem_avail_mb) MiB available"
fi

# ---- what lives where, and its clean-up -------------------------------------------------------

W="" # member files, manifests, logs
MNT=""
LOOPS=()
MPID="" # pid of the framefs daemon serving $MNT
ERRF=/dev/null
OUTF=/dev/null

on_exit cleanup_mount # frames.sh (the write phase), TERMed, cleans up after itself: waited for

W=$(mktemp -d "$MEMBERS_DIR/framefs-capacity.XXXXXX")
MNT=$(mktemp -d /tmp/framefs-capacity-mnt.XXXXXX)
mkdir "$MNT/fs"
ERRF=$W/err
OUTF=$W/out

field() { # NAME FILE -> the value of NAME= on the RESULT line of FILE
	awk -v k="$2" '$1 == "RESULT" { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) v = substr($i, length(k) + 2) } }
		END { print v }' "$1"
}
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

MFILES=()
make_members() { # MB DIR -> MFILES: NMEM fresh files of MB MiB in DIR
	local i
	MFILES=()
	mkdir -p "$2"
	for i in $(seq 0 $((NMEM - 1))); do
		rm -f "$2/m$i.img"
		truncate -s "${1}M" "$2/m$i.img"
		MFILES+=("$2/m$i.img")
	done
}

ff_mount() { # MEMBER,... : mount framefs on $MNT/fs; sets MPID
	local i
	run "$FRAMEFS" "$1" "$MNT/fs" || { warn "framefs $1: $(lasterr)"; return 1; }
	for i in $(seq 1 75); do
		mounted "$MNT/fs" && MPID=$(daemon_pid "$MNT/fs" framefs) && return 0
		sleep 0.2
	done
	warn "framefs did not mount $1"
	return 1
}
ff_unmount() {
	unmount "$MNT/fs" "$MPID" || return 1
	# wait for the daemon to let go of the members
	[ -z "$MPID" ] || wait_gone "$MPID" framefs || return 1
	MPID=""
}
fs_mount() { # FS(btrfs|framefs): mount the volume on the loop devices
	local list
	if [ "$1" = btrfs ]; then
		btrfs device scan "${LOOPS[@]}" >/dev/null 2>&1 || true
		run mount -t btrfs -o nodiscard "${LOOPS[0]}" "$MNT/fs" || { warn "mount btrfs: $(lasterr)"; return 1; }
	else
		list=$(IFS=,; echo "${LOOPS[*]}")
		ff_mount "$list"
	fi
}
fs_unmount() { if [ "$1" = btrfs ]; then unmount "$MNT/fs" "$MPID"; else ff_unmount; fi; }
fs_mkfs() { # FS [MKFS OPTIONS...]
	local fs=$1 opts=()
	shift
	if [ "$fs" = btrfs ]; then
		# -K: no discard (a discard on a loop device over tmpfs punches the file: time, nothing else)
		run mkfs.btrfs -q -f -K -d raid5 -m raid1 "${LOOPS[@]}" || { warn "mkfs.btrfs: $(lasterr)"; return 1; }
	else
		read -r -a opts <<<"$FF_MKFS_OPTS"
		run "$MKFS_FRAMEFS" -f -K -l 5 -c "${CHUNK_KB}K" -L capbench "${opts[@]}" "$@" "${LOOPS[@]}" ||
			{ warn "mkfs.framefs: $(lasterr)"; return 1; }
		# packed tails (format version 4): the summary says so
		if grep -q '^  tails ' "$OUTF"; then FF_TAILS=1; else FF_TAILS=0; fi
	fi
}
statfs_bytes() { # DIR -> "total free" bytes as statfs says
	stat -f -c '%b %f %S' "$1" | awk '{ printf "%.0f %.0f\n", $1 * $3, $2 * $3 }'
}

# ---- header ---------------------------------------------------------------------------------

RAW=$((NMEM * MEMBER_MB * 1048576))
RAW5=$((RAW * (NMEM - 1) / NMEM))
STRIPE=$(((NMEM - 1) * CHUNK_KB * 1024))
echo "capacity.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $(mkfs.btrfs --version 2>&1 | head -n1), $(python3 --version)"
echo "members: $NMEM x $MEMBER_MB MiB in $MEMBERS_DIR behind loop devices (direct-io=on): raw $RAW bytes, (n-1)/n = $RAW5"
echo "framefs: $FRAMEFS, $MKFS_FRAMEFS (RAID5, chunk ${CHUNK_KB} KiB, stripe $(mb $STRIPE) MiB${FF_MKFS_OPTS:+, mkfs $FF_MKFS_OPTS})"
echo "btrfs: mkfs.btrfs -d raid5 -m raid1 (data RAID5; metadata RAID1, as btrfs advises: RAID5/6 metadata has the write hole), mounted nodiscard"
echo "mix: per frame a DPX of $DPX_BYTES B + a 4 KiB ._ sidecar, an EXR-like frame of ${EXR_MIN_MB}..${EXR_MAX_MB} MB (seeded), one .xml (2-8 KiB) per 100 frames of each; $RUNS runs, seeds $SEED..$((SEED + RUNS - 1))"
echo "phases: $PHASES; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo

declare -A R=() # key -> "v1 v2 ..."
add() { R[$1]="${R[$1]:-}$2 "; }
med() { # KEY -> median of its values (nothing if none)
	[ -n "${R[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	printf '%s\n' ${R[$1]} | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
range() { # NUM DEN -> "median-ratio per-run-min per-run-max" (pairs by run)
	[ -n "${R[$1]:-}" ] && [ -n "${R[$2]:-}" ] || return 0
	awk -v a="${R[$1]}" -v b="${R[$2]}" -v ma="$(med "$1")" -v mb="$(med "$2")" 'BEGIN {
		na = split(a, x, " "); nb = split(b, y, " "); lo = hi = ""
		if (mb <= 0) exit
		if (na == nb) for (i = 1; i <= na; i++) if (y[i] > 0) { q = x[i] / y[i]
			if (lo == "" || q < lo) lo = q; if (hi == "" || q > hi) hi = q }
		r = ma / mb; if (lo == "") { lo = r; hi = r }
		printf "%.3f %.3f %.3f\n", r, lo, hi }'
}
FAILS=0

# ---- 1. the facility mix ----------------------------------------------------------------------

mix_row() { # FS RUN SEED
	local fs=$1 run=$2 seed=$3 k=$1 man=$W/$1.$2.man tot free files v vb why
	fs_mkfs "$fs" || return 1
	fs_mount "$fs" || return 1
	read -r tot free < <(statfs_bytes "$MNT/fs")
	run python3 "$CAPMIX" mix "$MNT/fs/fill" "$man" --seed "$seed" --probe --dpx-bytes "$DPX_BYTES" \
		--exr-min $((EXR_MIN_MB * 1000000)) --exr-max $((EXR_MAX_MB * 1000000)) ||
		{ warn "$fs: the fill failed: $(lasterr)"; fs_unmount "$fs"; return 1; }
	cp "$OUTF" "$W/$fs.$run.mix"
	sync
	if [ "$fs" = btrfs ]; then
		btrfs filesystem usage -b "$MNT/fs" >"$W/btrfs.$run.usage" 2>/dev/null || true
	fi
	fs_unmount "$fs" || return 1
	fs_mount "$fs" || return 1
	run python3 "$CAPMIX" verify "$MNT/fs/fill" "$man" --seed "$seed" || true
	cp "$OUTF" "$W/$fs.$run.verify"
	fs_unmount "$fs" || return 1
	files=$(field "$W/$fs.$run.mix" files)
	v=$(field "$W/$fs.$run.verify" verified)
	vb=$(field "$W/$fs.$run.verify" bytes)
	if [ -z "$vb" ]; then
		warn "$fs run $run: the read-back did not finish: $(lasterr)"
		return 1
	fi
	if [ "$v" != "$files" ]; then
		warn "$fs run $run: $((files - v)) of $files files written and closed read back wrong after the remount:"
		grep 'verify:' "$ERRF" | head -n5 >&2
		FAILS=$((FAILS + 1))
	fi
	add "$k.bytes" "$vb" # what reads back is what is stored
	add "$k.files" "$v"
	add "$k.usable" "$tot"
	add "$k.of_raw5" "$(awk -v b="$vb" -v r="$RAW5" 'BEGIN { printf "%.4f", b / r }')"
	why=$(field "$W/$fs.$run.mix" stopped_in)
	printf '  %-8s %4d files, %12d bytes (%s MiB, %.4f of (n-1)/n raw); statfs size %s MiB at mkfs; stopped at %s (%s B, ENOSPC in %s after %s B), free then %s MiB; a 4 KiB file after that: %s\n' \
		"$fs" "$v" "$vb" "$(mb "$vb")" "$(awk -v b="$vb" -v r="$RAW5" 'BEGIN { print b / r }')" "$(mb "$tot")" \
		"$(field "$W/$fs.$run.mix" stopped_at)" "$(field "$W/$fs.$run.mix" stopped_size)" "$why" \
		"$(field "$W/$fs.$run.mix" stopped_written)" "$(mb "$(field "$W/$fs.$run.mix" free_after)")" \
		"$(field "$W/$fs.$run.mix" probe_4k)"
	if [ "$fs" = framefs ]; then
		# where framefs's (n-1)/n went: the metadata area (and each member's reserved MiBs), the
		# unused tails of the last stripe of every file that took stripes (above small_max,
		# 64 KiB), the stripes of the file cut short, what was free at ENOSPC
		# with packed tails a last stripe takes whole rows (4 KiB of each data chunk) of a shared
		# tail stripe: its waste is the rest of its last row; the rows of tail stripes never
		# filled are in "rest"
		awk -v st="$STRIPE" -v row="$((STRIPE / (CHUNK_KB * 1024) * 4096))" -v raw5="$RAW5" -v tot="$tot" -v cutw="$(field "$W/$fs.$run.mix" stopped_written)" \
			-v free="$(field "$W/$fs.$run.mix" free_after)" -v stored="$vb" -v tails="${FF_TAILS:-0}" '
			$2 > 65536 { n++; big += $2; u = tails ? row : st; t += (u - ($2 % st) % u) % u }
			END { cut = int((cutw + st - 1) / st) * st
			      printf "           framefs: of (n-1)/n raw %.1f MiB: metadata area and reserves %.1f MiB (%.2f %%); of the %.1f MiB of stripes: files above 64 KiB %.1f MiB, their last stripes'"'"' unused %s %.1f MiB (%d files, %.2f MiB a file: %.2f %% of (n-1)/n raw), the file cut short %.1f MiB, free %.1f MiB, rest %.1f MiB; files of 64 KiB or less (pool) %.1f KiB\n",
				raw5 / 1048576, (raw5 - tot) / 1048576, 100 * (raw5 - tot) / raw5, tot / 1048576, big / 1048576,
				tails ? "rows (packed tails)" : "tails", t / 1048576, n, n ? t / n / 1048576 : 0, 100 * t / raw5, cut / 1048576, free / 1048576,
				(tot - big - t - cut - free) / 1048576, (stored - big) / 1024 }' "$man"
	else
		awk '/Device size:|Device allocated:|Device unallocated:|Data ratio:|Free \(statfs/ { gsub(/\t+/, " "); sub(/^ +/, ""); printf "%s%s", sep, $0; sep = "; " }
			/^(Data|Metadata|System),/ { printf "%s%s", sep, $0; sep = "; " } END { if (sep) print "" }' "$W/btrfs.$run.usage" |
			sed 's/^/           btrfs: /'
	fi
}

if has_phase mix; then
	echo "== 1. facility mix until ENOSPC (each file read back after a remount)"
	make_members "$MEMBER_MB" "$W/members"
	attach_loops "${MFILES[@]}"
	echo "loop devices: ${LOOPS[*]}"
	for run in $(seq 1 "$RUNS"); do
		seed=$((SEED + run - 1))
		echo "run $run/$RUNS (seed $seed, load average $(cut -d' ' -f1-3 /proc/loadavg))"
		order="btrfs framefs"
		[ $((run % 2)) = 0 ] && order="framefs btrfs"
		for fs in $order; do
			mix_row "$fs" "$run" "$seed" || { warn "$fs run $run failed"; FAILS=$((FAILS + 1)); unmount "$MNT/fs" "$MPID" || true; }
		done
	done
	echo
fi

# ---- 2. / 3. small files ------------------------------------------------------------------------

SMALL_FILES="" SMALL_GIB="" FITS="n/a"
small_fill() { # N MAX TAG -> fills a fresh framefs made with -N N on LOOPS with up to MAX files of
	# 4 KiB; prints what fit; SFILES = files that read back after a remount
	local n=$1 max=$2 tag=$3 man=$W/$3.man tot free used list
	SFILES=""
	run "$MKFS_FRAMEFS" -q -f -K -l 5 -c "${CHUNK_KB}K" -N "$n" -L capsmall "${LOOPS[@]}" ||
		{ warn "mkfs.framefs -N $n: $(lasterr)"; return 1; }
	fs_mount framefs || return 1
	read -r tot free < <(statfs_bytes "$MNT/fs")
	run python3 "$CAPMIX" small "$MNT/fs" "$man" --count "$max" --size "$SMALL_BYTES" --threads 4 ||
		{ warn "the small-file fill failed: $(lasterr)"; fs_unmount framefs; return 1; }
	cp "$OUTF" "$W/$tag.fill"
	sync
	read -r _ free < <(statfs_bytes "$MNT/fs")
	fs_unmount framefs || return 1
	fs_mount framefs || return 1
	run python3 "$CAPMIX" verify "$MNT/fs" "$man" || true
	cp "$OUTF" "$W/$tag.verify"
	fs_unmount framefs || return 1
	SFILES=$(field "$W/$tag.verify" verified)
	[ -n "$SFILES" ] || { warn "the small-file read-back did not finish: $(lasterr)"; return 1; }
	if [ "$SFILES" != "$(field "$W/$tag.fill" files)" ]; then
		warn "$(($(field "$W/$tag.fill" files) - SFILES)) small files written and closed read back wrong:"
		grep 'verify:' "$ERRF" | head -n5 >&2
		FAILS=$((FAILS + 1))
	fi
	used=$(awk -v t="$tot" -v f="$free" -v s="$STRIPE" 'BEGIN { printf "%d", (t - f) / s }')
	printf '  -N %s: %s files of 4 KiB read back of %s tried (stop: %s%s), %.0f files/s; statfs size %s MiB; stripes taken: %s (files the pool had no room for), free then %s MiB\n' \
		"$n" "$SFILES" "$max" "$(field "$W/$tag.fill" stop)" \
		"$([ "$(field "$W/$tag.fill" stop)" = ENOSPC ] && echo " in $(field "$W/$tag.fill" stopped_in) of file $(field "$W/$tag.fill" first_failed)")" \
		"$(field "$W/$tag.fill" rate)" "$(mb "$tot")" "$used" "$(mb "$free")"
}

if has_phase small; then
	echo "== 2. 4 KiB files until ENOSPC or $SMALL_MAX files, framefs -N $SMALL_N, $NMEM x $MEMBER_MB MiB"
	if [ "${#LOOPS[@]}" = 0 ]; then
		make_members "$MEMBER_MB" "$W/members"
		attach_loops "${MFILES[@]}"
	fi
	if small_fill "$SMALL_N" "$SMALL_MAX" small; then
		SMALL_FILES=$SFILES
		SMALL_GIB=$(awk -v f="$SFILES" -v r="$RAW" 'BEGIN { printf "%.0f", f / (r / 1073741824) }')
		echo "  small_files_per_gib = $SFILES / $(awk -v r="$RAW" 'BEGIN { print r / 1073741824 }') GiB of members = $SMALL_GIB"
		if [ "$MEMBER_MB" = "$CHECK_MB" ] && [ "$SMALL_N" = "$CHECK_N" ] && [ "$SMALL_MAX" -ge "$CHECK_FILES" ]; then
			# this volume is the check's; its first 100,000 files answer it
			if [ "$SFILES" -ge "$CHECK_FILES" ]; then FITS=yes; else FITS=no; fi
			echo "  the capacity check (this volume): 100,000 files of 4 KiB on 4 x 1 GiB, -N 200000: $FITS ($SFILES fit)"
		fi
	else
		FAILS=$((FAILS + 1))
	fi
	echo
fi
detach_loops
rm -rf "$W/members"

if has_phase check && [ "$FITS" = n/a ] && [ "$CHECK" = 1 ]; then
	echo "== 3. the capacity check: $CHECK_FILES files of 4 KiB, RAID5 x 4 of 1 GiB, mkfs.framefs -N $CHECK_N"
	[ "$(avail_mb "$MEMBERS_DIR")" -ge $((NMEM * CHECK_MB + 256)) ] || die "$MEMBERS_DIR is short of room for the check"
	make_members "$CHECK_MB" "$W/check"
	attach_loops "${MFILES[@]}"
	if small_fill "$CHECK_N" "$CHECK_FILES" check; then
		if [ "$SFILES" -ge "$CHECK_FILES" ]; then FITS=yes; else FITS=no; fi
		echo "  fits: $FITS ($SFILES of $CHECK_FILES)"
	else
		FAILS=$((FAILS + 1))
	fi
	detach_loops
	rm -rf "$W/check"
	echo
fi

# ---- 4. O_DIRECT frame writes: this build against FRAMEFS_BEFORE ---------------------------------

frames_write() { # BUILD-DIR(empty: PATH) KEY: one frames.sh run of WRITE_ROW
	local log v t
	NW=$((NW + 1))
	log=$W/frames.$NW.$2.log
	(FRAMEFS_BUILD=$1 ONLY=$WRITE_ROW RUNS=1 FRAMES=$WRITE_FRAMES SIZE_MB=$WRITE_SIZE_MB \
		FUSE318_SRC=/nonexistent timeout -k 30 "$PHASE_TIMEOUT" "$HERE/frames.sh" >"$log" 2>&1) &
	wait $! || { warn "frames.sh with ${1:-PATH} failed: $(tail -n2 "$log" | tr '\n' ' ')"; return 1; }
	v=$(grep -m1 -o 'O_DIRECT w [0-9]*' "$log" | awk '{ print $3 }')
	t=$(grep -m1 -o '\[io_uring\]\|\[/dev/fuse\]' "$log" || true)
	[ -n "$v" ] || { warn "frames.sh with ${1:-PATH}: no O_DIRECT write figure in its output ($log)"; return 1; }
	add "$2.w" "$v"
	printf '  %-7s %s MB/s %s (%s)\n' "$2" "$v" "$t" "${1:-PATH}"
}
NW=0
if has_phase write && [ "$WRITE_RUNS" -gt 0 ]; then
	if [ "$BEFORE_OK" = 1 ]; then
		echo "== 4. frames.sh $WRITE_ROW O_DIRECT write (FRAMES=$WRITE_FRAMES, SIZE_MB=$WRITE_SIZE_MB, RUNS=1 a call): this build (A) and FRAMEFS_BEFORE=$FRAMEFS_BEFORE (B), $WRITE_RUNS each, interleaved"
		for run in $(seq 1 "$WRITE_RUNS"); do
			order="this before"
			[ $((run % 2)) = 0 ] && order="before this"
			for b in $order; do
				if [ "$b" = this ]; then frames_write "${FRAMEFS_BUILD:-}" this || FAILS=$((FAILS + 1))
				else frames_write "$FRAMEFS_BEFORE" before || FAILS=$((FAILS + 1)); fi
			done
		done
		echo
	else
		echo "== 4. frames_write_vs_before: n/a (FRAMEFS_BEFORE is not set)"
		echo
	fi
fi

# ---- summary ------------------------------------------------------------------------------------

echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"
RESULT=()
verdict() { awk -v r="$1" -v b="$2" 'BEGIN { print (r >= b) ? "ok" : "BELOW" }'; }
line() { # NAME "median lo hi" BAR(- none)
	local name=$1 bar=$3 s=""
	# shellcheck disable=SC2086
	set -- $2
	if [ -z "${1:-}" ]; then
		printf '  %-24s %-8s %s\n' "$name" n/a "${bar/#-/}"
		RESULT+=("$name=n/a")
		return
	fi
	[ "$bar" != - ] && s=">= $bar $(verdict "$1" "$bar")"
	printf '  %-24s %-8s [%s..%s]  %s\n' "$name" "$1" "$2" "$3" "$s"
	RESULT+=("$name=$1")
}
statline() { # KEY -> "median min max"
	[ -n "${R[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	printf '%s\n' ${R[$1]} | sort -g | awk -v m="$(med "$1")" '{ v[NR] = $1 } END { printf "%s %s %s\n", m, v[1], v[NR] }'
}
if has_phase mix; then
	echo "bytes stored, median [min..max] of $RUNS runs: framefs $(statline framefs.bytes | awk '{ printf "%.0f [%.0f..%.0f]", $1, $2, $3 }'), btrfs $(statline btrfs.bytes | awk '{ printf "%.0f [%.0f..%.0f]", $1, $2, $3 }')"
fi
echo "ratios (median/median, [min..max] of per-run ratios), bar:"
line capacity_vs_btrfs5 "$(range framefs.bytes btrfs.bytes)" 1.0
line framefs_of_raw5 "$(statline framefs.of_raw5)" 0.97
line btrfs5_of_raw5 "$(statline btrfs.of_raw5)" -
if [ -n "$SMALL_GIB" ]; then
	printf '  %-24s %-8s (%s files on %s GiB of members, -N %s)\n' small_files_per_gib "$SMALL_GIB" "$SMALL_FILES" \
		"$(awk -v r="$RAW" 'BEGIN { print r / 1073741824 }')" "$SMALL_N"
	RESULT+=("small_files_per_gib=$SMALL_GIB")
else
	printf '  %-24s %s\n' small_files_per_gib n/a
	RESULT+=("small_files_per_gib=n/a")
fi
printf '  %-24s %s\n' fits_100k_4k "$FITS"
RESULT+=("fits_100k_4k=$FITS")
if [ -n "${R[this.w]:-}" ] && [ -n "${R[before.w]:-}" ]; then
	echo "  (this build ${R[this.w]}MB/s; before ${R[before.w]}MB/s; median of the per-run ratios $(awk -v a="${R[this.w]}" -v b="${R[before.w]}" 'BEGIN {
		n = split(a, x, " "); if (split(b, y, " ") != n) { printf "n/a (unpaired)"; exit }
		for (i = 1; i <= n; i++) q[i] = y[i] > 0 ? x[i] / y[i] : 0
		for (i = 2; i <= n; i++) { t = q[i]; for (j = i - 1; j > 0 && q[j] > t; j--) q[j + 1] = q[j]; q[j + 1] = t }
		printf "%.3f", (n % 2) ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2 }'))"
fi
line frames_write_vs_before "$(range this.w before.w)" -
RESULT+=("framefs_bytes=$(med framefs.bytes || true)" "btrfs_bytes=$(med btrfs.bytes || true)")
for i in "${!RESULT[@]}"; do [ "${RESULT[$i]}" = "${RESULT[$i]%=}" ] || RESULT[i]="${RESULT[$i]}n/a"; done
[ "$FAILS" -gt 0 ] && warn "$FAILS phase(s) failed or lost files; see above"
echo "RESULT ${RESULT[*]}"
[ "$FAILS" = 0 ]
