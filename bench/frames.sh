#!/bin/bash
# bench/frames.sh: the frame path. framefs beside its peers, in one run, as ratios.
#
#   bench/frames.sh [ram]  RAM-backed members (tmpfs files behind loop devices, pre-touched):
#                          raw members; libfuse 3.14's null (/dev/fuse) and 3.18's null over
#                          io_uring (transport ceilings); 3.14's passthrough_ll (/dev/fuse) and
#                          3.18's passthrough_hp (io_uring) over tmpfs; btrfs RAID5 on 4 / RAID6
#                          on 6 members; framefs RAID5 on 4 members over its default transport
#                          (io_uring when the kernel allows it) and over /dev/fuse, RAID6 on 6
#                          (same members), framefs degraded read
#   bench/frames.sh disk   file-backed members on the disk (MEMBERS_DIR, default /var/tmp):
#                          raw members vs btrfs RAID5 and framefs RAID5
#
# Workload (every filesystem row): fio, THREADS jobs, psync, 1 MiB I/O, each job writing then
# reading FRAMES/THREADS files of 51,052,544 bytes (frametest's 4k preset), once with O_DIRECT
# and once buffered, end_fsync, caches dropped before every read; then CREATES empty frames
# (open O_CREAT / close) with THREADS threads. Every measurement is repeated RUNS times, the
# rows interleaved (their order rotates each run); tables show median [min..max], ratios are
# ratios of medians (with the min..max of the per-run ratios beside them). Last line: RESULT.
#
# framefs's programs come from the build dir $FRAMEFS_BUILD, wherever meson put them (only there
# when it is set: the script stops when it lacks framefs or mkfs.framefs), or else from PATH,
# where without them the script says "framefs: not built" and framefs's ratios are n/a. The libfuse 3.18 rows are built (meson, C and C++) from
# FUSE318_SRC into the scratch dir; without that source they are "not built" and n/a.
#
# For the run, as root, the script turns FUSE over io_uring on in the kernel
# (/sys/module/fuse/parameters/enable_uring) and raises fs.fuse.max_pages_limit so that
# stripe-sized requests are allowed; it prints both and puts back what it found on exit.
#
# Knobs (environment):
#   SIZE_MB=1024        size of each member (6 members in ram mode, 4 in disk mode)
#   FRAMES=32           frames per phase (a multiple of THREADS)
#   THREADS=4           fio jobs / creating threads
#   RUNS=3              repetitions of every measurement
#   CREATES=4000        empty frames per create-rate measurement
#   MEMBERS_DIR         where member files go (ram: /dev/shm, disk: /var/tmp)
#   FRAMEFS_BUILD       build dir holding mkfs.framefs, framefs (and framefs-frametest,
#                       framefs-createrate)
#   FRAMEFS_OPTS        -o options for every framefs mount (default none)
#   FRAMEFS_URING_OPTS=transport=io_uring  -o options added for the ff5uring row (framefs over
#                       FUSE io_uring, its default where the kernel allows it)
#   FRAMEFS_DEV_OPTS=transport=dev  -o options added for the ff5 row (framefs over /dev/fuse,
#                       the transport ff5uring is compared with)
#   URING_DEPTH         io_uring queue depth per CPU for the io_uring rows: io_uring_q_depth=N
#                       for libfuse 3.18's examples, uring_depth=N for framefs (default: each
#                       one's own default)
#   URING=1             0: leave the kernel's fuse.enable_uring as it is
#   FUSE_MAX_PAGES=1024 fs.fuse.max_pages_limit for the run (4 MiB: more than one stripe of
#                       every row); 0: leave it as it is
#   FUSE318_SRC         libfuse >= 3.18 source tree (default: subprojects/fuse3, which setup.sh
#                       unpacks)
#   HP_OPTS=--nopassthrough  passthrough_hp's options besides -o io_uring (--nopassthrough:
#                       reads and writes are served by the daemon, not by the kernel's FUSE
#                       passthrough)
#   FRAMEFS_MKFS_OPTS   extra mkfs.framefs options, e.g. "-c 512K" (default none)
#   FRAMEFS_MEMBERS=loop  loop: framefs gets the loop devices btrfs gets (ram mode);
#                       file: the tmpfs files behind them
#   PT_OPTS=cache=never passthrough_ll's -o options (besides source=), as bench/peers does
#   FRAMETEST=0         1: also a framefs-frametest line (-w 4k, then -r) per filesystem row,
#                       from FRAMEFS_BUILD or PATH (auto: if found); it adds ~40% to the time
#   PHASE_TIMEOUT=300   seconds one phase (a fio run, a mkfs, a mount) may take; a framefs
#                       phase that takes longer fails its row (its daemon is killed if it hangs)
#   ONLY="pt314 ff5"    run only these rows (raw4 raw6 null314 null318 pt314 hp318 btrfs5 btrfs6
#                       ff5 ff5uring ff6; null and pt are null314 and pt314), in this order
#                       (rotated each run); a row may repeat
# Needs root, fio, btrfs-progs, util-linux, fuse3, libfuse3-dev (its examples), a C compiler;
# for the 3.18 rows meson, ninja, a C++ compiler, liburing-dev and libnuma-dev.
set -euo pipefail

PROG=frames.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
FSZ=51052544 # frametest "4k" preset: 4096x3112x4 + 64 KiB header, 4 KiB aligned
EXAMPLES=/usr/share/doc/libfuse3-dev/examples

case "${1:-ram}" in
ram | disk) MODE=${1:-ram} ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

SIZE_MB=${SIZE_MB:-1024}
FRAMES=${FRAMES:-32}
THREADS=${THREADS:-4}
RUNS=${RUNS:-3}
CREATES=${CREATES:-4000}
FRAMEFS_OPTS=${FRAMEFS_OPTS:-}
FRAMEFS_MKFS_OPTS=${FRAMEFS_MKFS_OPTS:-}
FRAMEFS_MEMBERS=${FRAMEFS_MEMBERS:-loop}
PT_OPTS=${PT_OPTS:-cache=never}
FRAMETEST=${FRAMETEST:-0}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-300}
FRAMEFS_URING_OPTS=${FRAMEFS_URING_OPTS-transport=io_uring}
FRAMEFS_DEV_OPTS=${FRAMEFS_DEV_OPTS-transport=dev}
URING_DEPTH=${URING_DEPTH:-}
URING=${URING:-1}
FUSE_MAX_PAGES=${FUSE_MAX_PAGES:-1024}
FUSE318_SRC=${FUSE318_SRC:-$HERE/../subprojects/fuse3}
HP_OPTS=${HP_OPTS---nopassthrough}
if [ "$MODE" = ram ]; then
	MEMBERS_DIR=${MEMBERS_DIR:-/dev/shm}
	NMEM=6
else
	MEMBERS_DIR=${MEMBERS_DIR:-/var/tmp}
	NMEM=4
fi

for v in SIZE_MB FRAMES THREADS RUNS CREATES PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
[ $((FRAMES % THREADS)) -eq 0 ] || die "FRAMES ($FRAMES) must be a multiple of THREADS ($THREADS)"
[ "$RUNS" -le 32 ] || die "RUNS must be at most 32"
case "$FRAMEFS_MEMBERS" in loop | file) ;; *) die "FRAMEFS_MEMBERS must be loop or file" ;; esac
case "$FRAMETEST" in auto | 0 | 1) ;; *) die "FRAMETEST must be auto, 0 or 1" ;; esac
case "$URING" in 0 | 1) ;; *) die "URING must be 0 or 1" ;; esac
if ! [[ $FUSE_MAX_PAGES =~ ^[0-9]+$ ]] || [ "$FUSE_MAX_PAGES" -gt 65535 ]; then
	die "FUSE_MAX_PAGES must be 0 (leave it) or a number of pages up to 65535"
fi
[ -z "$URING_DEPTH" ] || [[ $URING_DEPTH =~ ^[1-9][0-9]*$ ]] || die "URING_DEPTH must be a positive whole number"
[ "$(id -u)" -eq 0 ] || die "must run as root (loop devices, mounts, drop_caches)"
for t in fio losetup mkfs.btrfs btrfs fusermount3 findmnt pgrep ps timeout cc pkg-config dd stat awk sort; do
	command -v "$t" >/dev/null || die "$t not found (see bench/README.md for the packages)"
done
for f in null.c passthrough_ll.c; do
	[ -r "$EXAMPLES/$f" ] || die "libfuse's example $EXAMPLES/$f not found (apt-get install libfuse3-dev)"
done
pkg-config --exists fuse3 || die "pkg-config does not know fuse3 (apt-get install libfuse3-dev)"
[ -d "$MEMBERS_DIR" ] || die "MEMBERS_DIR $MEMBERS_DIR is not a directory"
# framefs's programs: the build FRAMEFS_BUILD names must hold framefs and mkfs.framefs; from PATH,
# framefs's rows run when they are there
if [ -n "${FRAMEFS_BUILD:-}" ]; then
	MKFS_FRAMEFS=$(need_bin mkfs.framefs)
	FRAMEFS=$(need_bin framefs)
else
	MKFS_FRAMEFS=$(find_bin mkfs.framefs || true)
	FRAMEFS=$(find_bin framefs || true)
fi
HAVE_FRAMEFS=0
[ -n "$MKFS_FRAMEFS" ] && [ -n "$FRAMEFS" ] && HAVE_FRAMEFS=1
FT=""
[ "$FRAMETEST" = auto ] && FT=$(find_bin framefs-frametest || true)
[ "$FRAMETEST" = 1 ] && FT=$(need_bin framefs-frametest)
CREATERATE=$(find_bin framefs-createrate || true)
ADMIN=$(find_bin framefs-admin || true) # for the daemon's own account of its transport

FRAME_MB=$(((FRAMES * FSZ + 1048575) / 1048576)) # one phase's frames, MiB
# RAID5 on 4 members holds 3 members of data; btrfs takes metadata (RAID1) from the same
# members, framefs its own metadata: keep the frames within 60% of the data space.
[ $((FRAME_MB * 10)) -le $((SIZE_MB * 3 * 6)) ] ||
	die "SIZE_MB=$SIZE_MB is too small for FRAMES=$FRAMES (${FRAME_MB} MiB per phase); raise SIZE_MB or lower FRAMES"

# ---- what lives where, and its clean-up -------------------------------------------------------

W="" # member files
S="" # tmpfs scratch: binaries, passthrough's source dir, outputs
MNT="" # mountpoints (plain directories and null's file, removed with rmdir / rm -f only)
LOOPS=()
DAEMONS=() # pid:comm of every FUSE daemon we started
declare -A MPID=() # mountpoint -> pid:comm of the FUSE daemon serving it
ERRF=/dev/null
OUTF=/dev/null
cleanup() {
	local m p busy=0
	stop_children
	if [ -n "$MNT" ]; then
		for m in "$MNT/fs" "$MNT/nullfile"; do
			unmount "$m" "${MPID[$m]:-}" || { warn "cannot unmount $m"; busy=1; }
		done
	fi
	for p in "${DAEMONS[@]}"; do kill_daemon "$p"; done
	detach_loops
	restore_kernel
	for m in "$W" "$S" "$MNT"; do
		[ -n "$m" ] || continue
		if findmnt -rn -o TARGET | grep -qF -- "$m/"; then
			warn "something is still mounted under $m; leaving it"
			busy=1
		fi
	done
	if [ "$busy" = 0 ]; then
		[ -n "$W" ] && rm -rf --one-file-system "$W"
		[ -n "$S" ] && rm -rf --one-file-system "$S"
		if [ -n "$MNT" ]; then
			rm -f "$MNT/nullfile"
			rmdir "$MNT/fs" "$MNT" 2>/dev/null
		fi
	fi
}
on_exit cleanup

# ---- memory and space -----------------------------------------------------------------------

if [ "$MODE" = ram ]; then
	# members + passthrough's tmpfs source (one phase of frames) + 512 MiB; the page cache of
	# the buffered phases is reclaimable (and dropped before every read)
	need=$((NMEM * SIZE_MB + FRAME_MB + 512))
	[ "$(mem_avail_mb)" -ge "$need" ] ||
		die "needs ~${need} MiB of memory (members ${NMEM}x${SIZE_MB} MiB, frames ${FRAME_MB} MiB), $(mem_avail_mb) MiB available; lower SIZE_MB/FRAMES"
	[ "$(avail_mb /dev/shm)" -ge $((NMEM * SIZE_MB + FRAME_MB + 256)) ] ||
		die "/dev/shm has $(avail_mb /dev/shm) MiB free, needs $((NMEM * SIZE_MB + FRAME_MB + 256))"
fi
[ "$(avail_mb "$MEMBERS_DIR")" -ge $((NMEM * SIZE_MB + 256)) ] ||
	die "$MEMBERS_DIR has $(avail_mb "$MEMBERS_DIR") MiB free, needs $((NMEM * SIZE_MB + 256))"

W=$(mktemp -d "$MEMBERS_DIR/framefs-frames.XXXXXX")
S=$(mktemp -d /dev/shm/framefs-frames-scratch.XXXXXX)
MNT=$(mktemp -d /tmp/framefs-frames-mnt.XXXXXX)
mkdir "$MNT/fs" "$S/ptsrc" "$S/bin"
ERRF=$S/err
OUTF=$S/out

V="" # the value the last measurement produced

# ---- tools ----------------------------------------------------------------------------------

build_example() { # NAME -> $S/bin/NAME
	local cflags libs
	cflags=$(pkg-config --cflags fuse3)
	libs=$(pkg-config --libs fuse3)
	# shellcheck disable=SC2086 # word splitting of pkg-config output is intended
	cc -O2 -o "$S/bin/$1" "$EXAMPLES/$1.c" $cflags $libs 2>"$ERRF" ||
		die "cannot build libfuse's $1 example: $(tail -n1 "$ERRF")"
}
build_example null
build_example passthrough_ll
V314=$(pkg-config --modversion fuse3)

# libfuse >= 3.18's null and passthrough_hp, from FUSE318_SRC (setup.sh unpacks Debian's source
# package into subprojects/fuse3), in a meson build of that tree of our own in the scratch dir:
# static, examples only (the source tree and the project's build are left alone)
HAVE318=0
WHY318=""
V318=""
build318() {
	local b=$S/fuse318 t0 t
	if [ ! -f "$FUSE318_SRC/meson.build" ] || [ ! -f "$FUSE318_SRC/example/passthrough_hp.cc" ]; then
		WHY318="no libfuse source in $FUSE318_SRC (./setup.sh unpacks it into subprojects/fuse3)"
		return 1
	fi
	V318=$(sed -n "s/^ *version *: *'\([0-9.]*\)'.*/\1/p" "$FUSE318_SRC/meson.build" | head -n1)
	case "$V318" in
	3.1[89]* | 3.[2-9][0-9]* | [4-9].*) ;;
	*) WHY318="libfuse in $FUSE318_SRC is ${V318:-of no version I can read}, not 3.18 or later"; return 1 ;;
	esac
	for t in meson ninja c++; do
		command -v "$t" >/dev/null || { WHY318="$t not found (see bench/README.md)"; return 1; }
	done
	t0=$(date +%s)
	run meson setup "$b" "$FUSE318_SRC" --buildtype=release -Ddefault_library=static \
		-Dexamples=true -Dutils=false -Dtests=false -Duseroot=false -Dinitscriptdir= ||
		{ WHY318="meson setup of $FUSE318_SRC failed: $(lasterr)"; return 1; }
	run ninja -C "$b" example/null example/passthrough_hp ||
		{ WHY318="building libfuse's examples from $FUSE318_SRC failed: $(grep -m1 -i 'error' "$OUTF" || lasterr)"; return 1; }
	mkdir -p "$S/bin318"
	cp "$b/example/null" "$b/example/passthrough_hp" "$S/bin318/"
	BUILD318_S=$(($(date +%s) - t0))
}
BUILD318_S=0
build318 && HAVE318=1

if [ -z "$CREATERATE" ]; then
	CREATERATE=$S/bin/framefs-createrate
	cc -O2 -pthread -o "$CREATERATE" "$HERE/create_rate.c" 2>"$ERRF" ||
		die "cannot build bench/create_rate.c: $(tail -n1 "$ERRF")"
fi

# ---- the kernel's FUSE settings for the run (put back on exit by cleanup) --------------------

kernel_fuse_set "$URING" "$FUSE_MAX_PAGES" "the io_uring rows run"
URING_ON=0
[ "$(cat "$URING_PARAM" 2>/dev/null || true)" = Y ] && URING_ON=1

# ---- members --------------------------------------------------------------------------------

MFILES=()
for i in $(seq 0 $((NMEM - 1))); do
	MFILES+=("$W/m$i.img")
	truncate -s "${SIZE_MB}M" "$W/m$i.img"
done
# Loop devices over the member files: btrfs needs block devices (and framefs gets the same
# ones in ram mode, FRAMEFS_MEMBERS=loop).
# No discards: on a tmpfs (or any) backing file they punch holes, undoing the pre-touch.
# Each mkfs is told (-K) and btrfs mounts nodiscard; the loop device is left as it is:
# 0 written to its discard_max_bytes stays until a reboot (the kernel refuses any other
# value once the granularity is gone), and later users of the device (mkfs's own
# discard, its tests) find discard switched off.
attach_loops "${MFILES[@]}"

touch_members() { # FILE...: fill holes (pages never written, or punched), so that first
	# touches are not measured; whole-file O_DIRECT zeros when anything is missing
	local f alloc
	for f in "$@"; do
		alloc=$(stat -c '%b*%B' "$f")
		if [ $((alloc)) -lt $((SIZE_MB * 1048576)) ]; then
			[ "$TOUCHED" = 1 ] && echo "(re-touching ${f##*/}: $((SIZE_MB - alloc / 1048576)) MiB of holes)"
			dd if=/dev/zero of="$f" bs=1M count="$SIZE_MB" oflag=direct conv=notrunc status=none 2>"$ERRF" ||
				die "pre-touch $f: $(tail -n1 "$ERRF")"
		fi
	done
}
TOUCHED=0
touch_members "${MFILES[@]}"
TOUCHED=1

# ---- measurements ---------------------------------------------------------------------------

declare -A R=() # key -> "v1 v2 ..." (one per run, in run order)
add() { R[$1]="${R[$1]:-}$2 "; }
addm() { add "$1" "$V"; [ "$VC" = - ] || add "$1.c" "$VC"; } # KEY: a fio phase's MB/s, and its CPU ms per GB as KEY.c

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# CPU per GB moved. Each fio job runs $S/tick as it starts and ends its I/O (exec_prerun,
# exec_postrun): the time and the machine's busy CPU time in clock ticks (user, nice, system,
# irq and softirq of /proc/stat's "cpu" line: every CPU, the fio jobs, the kernel, the daemon
# and the loop devices' workers; idle, iowait and the time the host stole are not busy). The
# window from the last job's start to the first job's end holds no fio set-up or teardown (a
# fio of 4 jobs costs ~0.3 CPU-s to start here, as much as a phase); over it, busy CPU time /
# (MB/s x seconds) is the phase's CPU per GB, in ms.
TICK_MS=$((1000 / $(getconf CLK_TCK)))
printf '#!/bin/sh\nawk -v w="$1" -v t="$(date +%%s%%N)" '"'"'$1 == "cpu" { print w, t, $2 + $3 + $4 + $7 + $8; exit }'"'"' /proc/stat >>%s\n' \
	"$S/ticks" >"$S/tick"
chmod +x "$S/tick"

fio_mbs() { # RW FIO-ARGS... -> V = MB/s (10^6 B/s), VC = CPU ms per GB (10^9 B) or "-"; says
	# why and fails otherwise
	local rw=$1
	shift
	V="" VC=""
	: >"$S/ticks"
	# in $S: fio leaves each job's JOB.prerun.txt and JOB.postrun.txt (the script's output) in
	# its working directory
	run env -C "$S" fio --output-format=terse --terse-version=3 --exec_prerun="$S/tick pre" \
		--exec_postrun="$S/tick post" "$@" || { warn "fio $rw failed: $(lasterr)"; return 1; }
	V=$(awk -F';' -v rw="$rw" '$1 == 3 { bw = (rw == "read") ? $7 : $48; v = bw * 1024 / 1e6 }
		END { if (v > 0) printf "%.0f", v }' "$OUTF")
	[ -n "$V" ] || { warn "fio $rw: no throughput in its output"; return 1; }
	VC=$(awk -v mbs="$V" -v ms="$TICK_MS" '$1 == "pre" && (t0 == "" || $2 > t0) { t0 = $2; b0 = $3 }
		$1 == "post" && (t1 == "" || $2 < t1) { t1 = $2; b1 = $3 }
		END { s = (t1 - t0) / 1e9; if (t0 == "" || t1 == "" || s < 0.05) { print "-"; exit }
		      printf "%.0f", (b1 - b0) * ms / (mbs * s / 1000) }' "$S/ticks")
}

frames_fio() { # DIR RW DIRECT [NRFILES] -> V = MB/s of the frametest-style workload
	local dir=$1 rw=$2 direct=$3 nr=${4:-$((FRAMES / THREADS))}
	mkdir -p "$dir"
	[ "$rw" = write ] || drop_caches
	fio_mbs "$rw" --name=f --directory="$dir" --ioengine=psync --bs=1M --filesize=$FSZ \
		--nrfiles="$nr" --file_service_type=sequential --numjobs="$THREADS" --group_reporting \
		--fallocate=none --direct="$direct" --rw="$rw" --end_fsync=1
}

raw_fio() { # RW DEV... -> V = MB/s over all of them at once, no filesystem (as peers.sh)
	local rw=$1 args=() i=0 d
	shift
	for d in "$@"; do args+=(--name="j$i" --filename="$d"); i=$((i + 1)); done
	fio_mbs "$rw" --ioengine=io_uring --direct=1 --bs=1M --iodepth=16 --rw="$rw" \
		--size=$((SIZE_MB * 3 / 4))M --group_reporting "${args[@]}"
}

null_fio() { # RW DIRECT -> V = MB/s: THREADS jobs on disjoint ranges of null's one (4 GiB)
	# file, each moving what one job moves in frames_fio
	local rw=$1 direct=$2 per=$((FRAMES / THREADS)) cap loops=1
	per=$((per * FSZ))
	cap=$(((4 << 30) / THREADS / 1048576 * 1048576))
	if [ "$per" -gt "$cap" ]; then loops=$(((per + cap - 1) / cap)); per=$cap; fi
	[ "$rw" = write ] || drop_caches
	fio_mbs "$rw" --name=n --filename="$MNT/nullfile" --ioengine=psync --bs=1M --size="$per" \
		--offset_increment="$per" --numjobs="$THREADS" --loops="$loops" --group_reporting \
		--rw="$rw" --direct="$direct"
}

create_rate() { # DIR -> V = empty frames created (and closed) per second
	V=""
	mkdir -p "$1"
	sync
	run "$CREATERATE" -q -t "$THREADS" -n "$CREATES" "$1" || { warn "create rate in $1: $(lasterr)"; return 1; }
	V=$(head -n1 "$OUTF")
}

ft_mbs() { # DIR MODE(w|r) -> V = MB/s from framefs-frametest's JSON
	local dir=$1 mode=$2 args=(-r)
	[ "$mode" = w ] && args=(-w 4k)
	V=""
	mkdir -p "$dir"
	[ "$mode" = w ] || drop_caches
	run "$FT" "${args[@]}" -t "$THREADS" -n "$FRAMES" -u 0 --json "$dir" || true
	V=$(sed -n 's/.*"throughput":{"MB_s":\([0-9.]*\).*/\1/p' "$OUTF")
	[ -n "$V" ] || { warn "framefs-frametest -$mode in $dir: $(lasterr)"; return 1; }
	V=$(printf '%.0f' "$V")
}

hwm_mb() { # PID -> VmHWM in MiB
	awk '/^VmHWM:/ { printf "%.0f", $2 / 1024 }' "/proc/$1/status" 2>/dev/null
}

FUSE_PID=""
fuse_wait() { # MOUNTPOINT COMM: wait (up to 15 s) until mounted; FUSE_PID = its daemon
	local i
	for i in $(seq 1 75); do
		if mounted "$1" && FUSE_PID=$(daemon_pid "$1" "$2"); then
			DAEMONS+=("$FUSE_PID:$2")
			MPID[$1]="$FUSE_PID:$2"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# pieces of a row's line, printed as they come
say() { printf '%s' "$*"; }

# The filesystem suite, the same for every filesystem row, on a mounted DIR:
#   warm-up (one frame per thread, untimed), buffered write/read (then removed), empty-frame
#   creates, O_DIRECT write/read (kept: the degraded read reads them), framefs-frametest.
# KEY prefixes the results; HOOK (a function or ":") runs after every phase (RSS sampling).
fs_suite() { # DIR KEY HOOK -> fails on the first failed phase
	local d=$1 k=$2 hook=$3
	frames_fio "$d/warm" write 1 1 || return 1
	rm -rf "$d/warm"
	frames_fio "$d/b" write 0 || return 1
	addm "$k.bw"; say "  buffered w $V"; $hook
	frames_fio "$d/b" read 0 || return 1
	addm "$k.br"; say " r $V"; $hook
	rm -rf "$d/b"
	create_rate "$d/c" || return 1
	add "$k.cr" "$V"; say "  creates $V/s"; $hook
	frames_fio "$d/d" write 1 || return 1
	addm "$k.dw"; say "  O_DIRECT w $V"; $hook
	frames_fio "$d/d" read 1 || return 1
	addm "$k.dr"; say " r $V"; $hook
	if [ -n "$FT" ]; then
		ft_mbs "$d/ft" w || return 1
		add "$k.ftw" "$V"; say "  frametest w $V"; $hook
		ft_mbs "$d/ft" r || return 1
		add "$k.ftr" "$V"; say " r $V"; $hook
		rm -rf "$d/ft"
	fi
}

# ---- rows -----------------------------------------------------------------------------------

row_raw() { # N
	local n=$1 devs
	if [ "$MODE" = ram ]; then devs=("${LOOPS[@]:0:$n}"); else devs=("${MFILES[@]:0:$n}"); fi
	touch_members "${MFILES[@]:0:$n}"
	say "raw $n members (no fs)"
	raw_fio write "${devs[@]}" || die "raw $n members: write failed"
	addm "raw$n.dw"; say "  O_DIRECT w $V"
	raw_fio read "${devs[@]}" || die "raw $n members: read failed"
	addm "raw$n.dr"; say " r $V"
	echo
}

fuse_transport() { # PID -> io_uring when the daemon has libfuse's ring threads (fuse-ring-N,
	# one per CPU queue, started once FUSE_INIT accepted io_uring), else /dev/fuse
	local t
	for t in /proc/"$1"/task/*/comm; do
		case $(cat "$t" 2>/dev/null) in fuse-ring-*) echo io_uring; return 0 ;; esac
	done
	echo /dev/fuse
}
add_transport() { # KEY PID: note the transport this run of the row was served over
	local t
	t=$(fuse_transport "$2")
	add "$1.tp" "$t"
	say "  [$t]"
}

URING_O="io_uring${URING_DEPTH:+,io_uring_q_depth=$URING_DEPTH}" # libfuse 3.18's options

row_null() { # KEY BINARY LABEL [OPTION...]
	local k=$1 bin=$2 label=$3 p
	shift 3
	touch "$MNT/nullfile"
	run "$bin" "$@" "$MNT/nullfile" || die "$label: $(lasterr)"
	fuse_wait "$MNT/nullfile" null || die "$label did not mount"
	p=$FUSE_PID
	say "$label"
	null_fio write 1 || die "$label: O_DIRECT write failed"
	addm "$k.dw"; say "  O_DIRECT w $V"
	null_fio read 1 || die "$label: O_DIRECT read failed"
	addm "$k.dr"; say " r $V"
	null_fio write 0 || die "$label: buffered write failed"
	addm "$k.bw"; say "  buffered w $V"
	null_fio read 0 || die "$label: buffered read failed"
	addm "$k.br"; say " r $V"
	add "$k.rss" "$(hwm_mb "$p")"
	add_transport "$k" "$p"
	echo
	unmount "$MNT/nullfile" "${MPID[$MNT/nullfile]:-}" || die "cannot unmount $label"
	wait_gone "$p" || true
}

PT_HWM=0
PT_PID=""
pt_hook() { local h; h=$(hwm_mb "$PT_PID"); [ "${h:-0}" -gt "$PT_HWM" ] && PT_HWM=$h; return 0; }
row_pt() { # KEY COMM LABEL COMMAND...: a passthrough example over $S/ptsrc, mounted on $MNT/fs
	local k=$1 comm=$2 label=$3 m=$MNT/fs
	shift 3
	run "$@" || die "$label: $(lasterr)"
	fuse_wait "$m" "$comm" || die "$label did not mount"
	PT_PID=$FUSE_PID
	PT_HWM=0
	say "$label"
	fs_suite "$m" "$k" pt_hook || die "$label row failed"
	add "$k.rss" "$PT_HWM"
	add_transport "$k" "$PT_PID"
	echo "  RSS ${PT_HWM} MiB"
	unmount "$m" "${MPID[$m]:-}" || die "cannot unmount $label"
	wait_gone "$PT_PID" || true
	find "$S/ptsrc" -mindepth 1 -delete
}

row_btrfs() { # LEVEL N
	local lvl=$1 n=$2 m=$MNT/fs l
	touch_members "${MFILES[@]:0:$n}"
	# -K: no discard at mkfs; nodiscard: no async discard on delete
	run mkfs.btrfs -q -f -K -d "raid$lvl" -m raid1 "${LOOPS[@]:0:$n}" || die "mkfs.btrfs raid$lvl: $(lasterr)"
	btrfs device scan "${LOOPS[@]:0:$n}" >/dev/null 2>&1 || true
	run mount -t btrfs -o nodiscard "${LOOPS[0]}" "$m" || die "mount btrfs raid$lvl: $(lasterr)"
	say "btrfs RAID$lvl, $n members"
	fs_suite "$m" "btrfs$lvl" : || die "btrfs RAID$lvl row failed"
	echo
	unmount "$m" "${MPID[$m]:-}" || die "cannot unmount btrfs"
	for l in "${LOOPS[@]:0:$n}"; do btrfs device scan --forget "$l" >/dev/null 2>&1 || true; done
}

FF_HWM=0 # peak RSS over every framefs mount
FF_MOUNT_HWM=0
FF_PID=""
FF_FAILS=0
ff_hook() {
	local h
	h=$(hwm_mb "$FF_PID")
	[ "${h:-0}" -gt "$FF_MOUNT_HWM" ] && FF_MOUNT_HWM=$h
	[ "${h:-0}" -gt "$FF_HWM" ] && FF_HWM=$h
	return 0
}
ff_member() { # I -> member I as framefs gets it
	if [ "$MODE" = disk ] || [ "$FRAMEFS_MEMBERS" = file ]; then echo "${MFILES[$1]}"; else echo "${LOOPS[$1]}"; fi
}
ff_mount() { # N SKIP(-1: none) [OPTIONS]: mount members 0..N-1 but SKIP with FRAMEFS_OPTS and
	# OPTIONS; sets FF_PID
	local n=$1 skip=$2 more=${3:-} i list="" opts=() o
	for i in $(seq 0 $((n - 1))); do
		[ "$i" = "$skip" ] || list+="${list:+,}$(ff_member "$i")"
	done
	o=$FRAMEFS_OPTS${more:+${FRAMEFS_OPTS:+,}$more}
	[ -n "$o" ] && opts=(-o "$o")
	run "$FRAMEFS" "${opts[@]}" "$list" "$MNT/fs" || { warn "framefs $list: $(lasterr)"; return 1; }
	fuse_wait "$MNT/fs" framefs ||
		{ warn "framefs did not mount $list (no mount, or no process named framefs with $MNT/fs in its argv)"; return 1; }
	FF_PID=$FUSE_PID
}
ff_unmount() {
	ff_hook # the phase's last RSS sample, before the unmount
	unmount "$MNT/fs" "${MPID[$MNT/fs]:-}" || { warn "cannot unmount framefs"; return 1; }
	wait_gone "$FF_PID" || return 1
}
ff_fail() { # MESSAGE: a framefs row failed; the run goes on without it
	echo
	warn "framefs: $*"
	FF_FAILS=$((FF_FAILS + 1))
	unmount "$MNT/fs" "${MPID[$MNT/fs]:-}" || true
}
declare -A FF_SHOWN=() # row key -> 1 once its daemon's fuse status line was printed
ff_fuse_status() { # KEY: the daemon's own account of its FUSE side (framefs-admin status), once
	# per row, and the transport this run was served over
	local line=""
	add_transport "$1" "$FF_PID"
	[ -n "${FF_SHOWN[$1]:-}" ] && return 0
	FF_SHOWN[$1]=1
	if [ -n "$ADMIN" ]; then
		line=$(timeout 10 "$ADMIN" status "$MNT/fs" 2>/dev/null | grep -m1 '^ *fuse ' | sed 's/^ *fuse *//' || true)
	fi
	[ -n "$line" ] && FF_FUSE[$1]=$line && FF_NEWLINE=$line
	return 0
}
FF_NEWLINE="" # the status line to print under the row (its first run)
declare -A FF_FUSE=()
row_framefs() { # LEVEL N DEGRADED(0|1) RUN [KEY [OPTIONS]]: KEY (ffLEVEL) names the row's figures,
	# OPTIONS are added to FRAMEFS_OPTS for its mounts
	local lvl=$1 n=$2 degraded=$3 run=$4 k=${5:-ff$1} more=${6:-} skip i mkfs_opts=() members=()
	for i in $(seq 0 $((n - 1))); do members+=("$(ff_member "$i")"); done
	touch_members "${MFILES[@]:0:$n}"
	read -r -a mkfs_opts <<<"$FRAMEFS_MKFS_OPTS"
	run "$MKFS_FRAMEFS" -l "$lvl" -K "${mkfs_opts[@]}" -L framebench -f "${members[@]}" || {
		ff_fail "mkfs.framefs -l $lvl on $n members failed: $(lasterr)"; return 0; }
	FF_MOUNT_HWM=0
	ff_mount "$n" -1 "$more" || { ff_fail "RAID$lvl${more:+ ($more)} mount failed"; return 0; }
	say "framefs RAID$lvl, $n members${more:+ ($more)}"
	fs_suite "$MNT/fs" "$k" ff_hook || { ff_fail "RAID$lvl${more:+ ($more)}: a phase failed"; return 0; }
	ff_fuse_status "$k"
	ff_unmount || { ff_fail "RAID$lvl${more:+ ($more)} unmount failed"; return 0; }
	if [ "$degraded" = 1 ]; then
		skip=$(((run - 1) % n))
		ff_mount "$n" "$skip" "$more" || { ff_fail "RAID$lvl degraded mount (member $skip left out) failed"; return 0; }
		frames_fio "$MNT/fs/d" read 1 || { ff_fail "RAID$lvl degraded read failed"; return 0; }
		add "$k.dg" "$V"; say "  degraded (m$skip out) r $V"
		ff_unmount || { ff_fail "RAID$lvl degraded unmount failed"; return 0; }
	fi
	add "$k.rss" "$FF_MOUNT_HWM"
	echo "  RSS ${FF_MOUNT_HWM} MiB"
	[ -z "$FF_NEWLINE" ] || echo "    ($FF_NEWLINE)"
	FF_NEWLINE=""
}

# ---- statistics -----------------------------------------------------------------------------

stat3() { # KEY -> "median min max" of its values, nothing if none
	# shellcheck disable=SC2086 # the values are space-separated numbers
	[ -n "${R[$1]:-}" ] && printf '%s\n' ${R[$1]} | sort -g | awk '{ v[NR] = $1 }
		END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      printf "%.0f %.0f %.0f\n", m, v[1], v[NR] }'
}
cell() { # KEY -> "median [min..max]" or "-"
	local s
	s=$(stat3 "$1" || true)
	[ -n "$s" ] || { echo "-"; return; }
	# shellcheck disable=SC2086
	set -- $s
	if [ "$RUNS" -gt 1 ]; then echo "$1 [$2..$3]"; else echo "$1"; fi
}
ratio() { # NUM DEN -> "median-ratio per-run-min per-run-max", nothing if either is missing
	[ -n "${R[$1]:-}" ] && [ -n "${R[$2]:-}" ] || return 0
	awk -v a="${R[$1]}" -v b="${R[$2]}" 'function med(x, n,   t) { return (n % 2) ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2 }
		function isort(x, n,   i, j, t) { for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j > 0 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t } }
		BEGIN { na = split(a, x, " "); nb = split(b, y, " ")
			for (i = 1; i <= na; i++) xs[i] = x[i]; for (i = 1; i <= nb; i++) ys[i] = y[i]
			isort(xs, na); isort(ys, nb)
			if (med(ys, nb) <= 0) exit
			r = med(xs, na) / med(ys, nb); lo = hi = ""
			if (na == nb) for (i = 1; i <= na; i++) if (y[i] > 0) { q = x[i] / y[i]
				if (lo == "" || q < lo) lo = q; if (hi == "" || q > hi) hi = q }
			if (lo == "") { lo = r; hi = r }
			printf "%.2f %.2f %.2f\n", r, lo, hi }'
}

# ---- the run --------------------------------------------------------------------------------

echo "frames.sh $MODE: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $(fio --version)"
echo "members: $NMEM x ${SIZE_MB} MiB in $W$([ "$MODE" = ram ] && echo " behind loop devices (direct-io=on): ${LOOPS[*]}")"
echo "workload: $THREADS threads x $((FRAMES / THREADS)) frames of $FSZ bytes, 1 MiB psync I/O, end_fsync, caches dropped before reads; $CREATES empty frames; $RUNS runs, rows interleaved"
if [ "$HAVE_FRAMEFS" = 1 ]; then
	echo "framefs: $FRAMEFS, $MKFS_FRAMEFS${FRAMEFS_OPTS:+ (-o $FRAMEFS_OPTS)}${FRAMEFS_MKFS_OPTS:+ (mkfs $FRAMEFS_MKFS_OPTS)}"
else
	echo "framefs: not built ($(bin_missing "$([ -n "$FRAMEFS" ] && echo mkfs.framefs || echo framefs)")); its rows and ratios are n/a"
fi
[ -n "$FT" ] && echo "frametest: $FT"
echo "create rate: $CREATERATE"
if [ "$MODE" = ram ]; then
	echo "libfuse $V314 (system, examples from $EXAMPLES): null, passthrough_ll${PT_OPTS:+ -o $PT_OPTS}, over /dev/fuse"
	if [ "$HAVE318" = 1 ]; then
		echo "libfuse $V318 ($(readlink -f "$FUSE318_SRC"), built here in ${BUILD318_S} s): null -o $URING_O, passthrough_hp $HP_OPTS -o $URING_O"
	else
		echo "libfuse 3.18: not built ($WHY318); its rows and ratios are n/a"
	fi
fi
printf 'kernel: %s\n' "${KSET[@]}"
[ "$URING_ON" = 1 ] || echo "kernel: FUSE over io_uring is off: every row runs over /dev/fuse"
echo

FF_MORE=${URING_DEPTH:+,uring_depth=$URING_DEPTH} # framefs's io_uring row: its queue depth
if [ "$MODE" = ram ]; then
	ROWS=(raw4 raw6 null314)
	[ "$HAVE318" = 1 ] && ROWS+=(null318)
	ROWS+=(pt314)
	[ "$HAVE318" = 1 ] && ROWS+=(hp318)
	ROWS+=(btrfs5 btrfs6)
	[ "$HAVE_FRAMEFS" = 1 ] && ROWS+=(ff5 ff5uring ff6)
else
	ROWS=(raw4 btrfs5)
	[ "$HAVE_FRAMEFS" = 1 ] && ROWS+=(ff5)
fi
if [ -n "${ONLY:-}" ]; then # a subset, for looking into one row (the RESULT then has gaps)
	read -r -a want <<<"$ONLY"
	for i in "${!want[@]}"; do # the names these rows had before the 3.18 rows came
		case ${want[$i]} in null) want[i]=null314 ;; pt) want[i]=pt314 ;; esac
	done
	for r in "${want[@]}"; do [[ " ${ROWS[*]} " == *" $r "* ]] || die "ONLY: no row '$r' here (rows: ${ROWS[*]})"; done
	ROWS=("${want[@]}")
fi
T0=$(date +%s)
declare -A ROWTIME=()
for run in $(seq 1 "$RUNS"); do
	echo "== run $run/$RUNS (load average $(cut -d" " -f1-3 /proc/loadavg))"
	nrows=${#ROWS[@]}
	for j in $(seq 0 $((nrows - 1))); do
		r=${ROWS[$(((j + run - 1) % nrows))]}
		t=$(date +%s)
		case $r in
		raw4) row_raw 4 ;;
		raw6) row_raw 6 ;;
		null314) row_null null314 "$S/bin/null" "FUSE null $V314, /dev/fuse" ;;
		null318) row_null null318 "$S/bin318/null" "FUSE null $V318, io_uring" -o "$URING_O" ;;
		pt314) row_pt pt314 passthrough_ll "passthrough_ll $V314 over tmpfs ($PT_OPTS)" \
			"$S/bin/passthrough_ll" -o "source=$S/ptsrc${PT_OPTS:+,$PT_OPTS}" "$MNT/fs" ;;
		hp318) # shellcheck disable=SC2086 # HP_OPTS: options, split at spaces
			row_pt hp318 passthrough_hp "passthrough_hp $V318 over tmpfs ($HP_OPTS)" \
				"$S/bin318/passthrough_hp" $HP_OPTS -o "$URING_O" "$S/ptsrc" "$MNT/fs" ;;
		btrfs5) row_btrfs 5 4 ;;
		btrfs6) row_btrfs 6 6 ;;
		ff5) row_framefs 5 4 1 "$run" ff5 "$FRAMEFS_DEV_OPTS" ;;
		ff5uring) row_framefs 5 4 0 "$run" ff5uring "$FRAMEFS_URING_OPTS$FF_MORE" ;;
		ff6) row_framefs 6 6 0 "$run" ff6 ;;
		esac
		ROWTIME[$r]=$((${ROWTIME[$r]:-0} + $(date +%s) - t))
	done
done
times=""
for r in "${!ROWTIME[@]}"; do times+=" $r ${ROWTIME[$r]}s"; done
echo "(${RUNS} runs in $(($(date +%s) - T0)) s; per row:$times; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo

# ---- tables ---------------------------------------------------------------------------------

hdr="median [min..max] of $RUNS runs"
[ "$RUNS" = 1 ] && hdr="1 run"
printf '%-48s %-20s %-20s %-20s %-20s %-20s %s\n' "MB/s (10^6 B/s), $hdr" "O_DIRECT write" "O_DIRECT read" \
	"buffered write" "buffered read" "creates/s" "RSS MiB"
tp() { # KEY -> ", io_uring" / ", /dev/fuse" as its runs were served, or nothing (not FUSE)
	[ -n "${R[$1.tp]:-}" ] || return 0
	# shellcheck disable=SC2086 # one word per run
	printf '%s\n' ${R[$1.tp]} | sort | uniq -c | awk '{ n[$2] = $1; t += $1 }
		END { if (length(n) == 1) { for (k in n) printf ", %s", k }
		      else printf ", io_uring in %d of %d runs", n["io_uring"], t }'
}
trow() { # LABEL KEY (rows that did not run, ONLY=, are left out)
	[ -n "${R[$2.dw]:-}${R[$2.bw]:-}" ] || return 0
	printf '%-48s %-20s %-20s %-20s %-20s %-20s %s\n' "$1$(tp "$2")" "$(cell "$2.dw")" "$(cell "$2.dr")" \
		"$(cell "$2.bw")" "$(cell "$2.br")" "$(cell "$2.cr")" "$(cell "$2.rss")"
}
ftrow() { # LABEL KEY
	[ -n "${R[$2.ftw]:-}" ] || return 0
	printf '%-48s %-20s %-20s\n' "  (framefs-frametest -w 4k / -r)" "$(cell "$2.ftw")" "$(cell "$2.ftr")"
}
each_row() { # FN: FN LABEL KEY for every row of this mode, in table order (FN skips rows
	# that did not run: ONLY=, or framefs not built)
	"$1" "raw 4 members (fio, no fs)" raw4
	if [ "$MODE" = ram ]; then
		"$1" "raw 6 members (fio, no fs)" raw6
		"$1" "FUSE null $V314" null314
		"$1" "FUSE null $V318" null318
		"$1" "passthrough_ll $V314, tmpfs" pt314
		"$1" "passthrough_hp $V318, tmpfs" hp318
		"$1" "btrfs RAID5, 4 members" btrfs5
		"$1" "btrfs RAID6, 6 members" btrfs6
		"$1" "framefs RAID5, 4 (-o $FRAMEFS_DEV_OPTS)" ff5
		"$1" "framefs RAID5, 4 (-o $FRAMEFS_URING_OPTS)" ff5uring
		"$1" "framefs RAID6, 6 members" ff6
	else
		"$1" "btrfs RAID5, 4 members" btrfs5
		"$1" "framefs RAID5, 4 members" ff5
	fi
}
mbrow() { # LABEL KEY: the MB/s table's row, its frametest line, and ff5's degraded read
	trow "$1" "$2"
	ftrow "" "$2"
	if [ "$2" = ff5 ] && [ -n "${R[ff5.dg]:-}" ]; then
		printf '%-48s %-20s %-20s\n' "framefs RAID5, 1 of 4 missing" "" "$(cell ff5.dg)"
	fi
	return 0
}
each_row mbrow
[ "$HAVE_FRAMEFS" = 1 ] || echo "framefs                                          not built"
# CPU per GB: what each row costs the machine, and the floor it sets under framefs's rate. The
# CPUs are the bottleneck whenever they are all busy: a row's rate is then at most
# CPUs x 1000 / (ms per GB), and ratios of CPU per GB say where a slower row's time went.
ctrow() { # LABEL KEY
	[ -n "${R[$2.dw.c]:-}${R[$2.bw.c]:-}" ] || return 0
	printf '%-48s %-20s %-20s %-20s %-20s\n' "$1" "$(cell "$2.dw.c")" "$(cell "$2.dr.c")" \
		"$(cell "$2.bw.c")" "$(cell "$2.br.c")"
}
echo
printf '%-48s %-20s %-20s %-20s %-20s\n' "CPU ms per GB moved (all $(nproc) CPUs busy time)" "O_DIRECT write" \
	"O_DIRECT read" "buffered write" "buffered read"
each_row ctrow
# The floor under a RAID5 x 4 write over io_uring: its requests cost at least what null's cost
# (the transport's copy), and its member writes at least what the raw members' cost, 4/3 of the
# data (parity); the floor under a read (O_DIRECT or buffered): null's requests of that kind
# and the raw members' reads, once
floor() { # WHAT NULL-KEY RAW-KEY SHARE ROW-KEY
	local n r f v
	n=$(stat3 "$2" | cut -d' ' -f1 || true) r=$(stat3 "$3" | cut -d' ' -f1 || true)
	f=$(stat3 "$5" | cut -d' ' -f1 || true) v=$(stat3 "${2%.c}" | cut -d' ' -f1 || true)
	[ -n "$n" ] && [ -n "$r" ] && [ -n "$v" ] || return 0
	awk -v w="$1" -v n="$n" -v r="$r" -v s="$4" -v f="${f:-}" -v c="$(nproc)" -v v="$v" 'BEGIN {
		fl = n + r * s
		printf "  %s: floor %.0f ms/GB (null %.0f + %s x raw %.0f): at most %.0f MB/s on %d CPUs, %.2f x null'"'"'s rate",
			w, fl, n, (s == 1 ? "1" : "4/3"), r, c * 1e6 / fl, c, c * 1e6 / fl / v
		if (f != "") printf "; framefs %.0f ms/GB, %.2f x the floor", f, f / fl
		printf "\n" }'
}
[ "$MODE" = ram ] && {
	floor "O_DIRECT write" null318.dw.c raw4.dw.c 1.3333 ff5uring.dw.c
	floor "O_DIRECT read" null318.dr.c raw4.dr.c 1 ff5uring.dr.c
	floor "buffered read" null318.br.c raw4.dr.c 1 ff5uring.br.c
}
echo
for k in ff5 ff5uring ff6; do # the daemon's own account (framefs-admin status, first run)
	[ -z "${FF_FUSE[$k]:-}" ] || echo "  $k: ${FF_FUSE[$k]}"
done
echo

# ratios: NAME NUM DEN BAR(or -)
RESULT=()
rrow() {
	local name=$1 r bar=$4 verdict="" s
	r=$(ratio "$2" "$3")
	if [ -z "$r" ]; then
		printf '  %-34s %-6s %-16s %s\n' "$name" "n/a" "" "${bar/#-/}"
		RESULT+=("$name=n/a")
		return
	fi
	# shellcheck disable=SC2086
	set -- $r
	if [ "$bar" != - ]; then
		verdict=$(awk -v r="$1" -v b="$bar" 'BEGIN { print (r >= b) ? "ok" : "BELOW" }')
		s=">= $bar $verdict"
	else
		s=""
	fi
	printf '  %-34s %-6s %-16s %s\n' "$name" "$1" "[$2..$3]" "$s"
	RESULT+=("$name=$1")
}
if [ "$MODE" = ram ]; then
	echo "ratios (median/median, [min..max] of per-run ratios), bar; framefs = RAID5 x 4 over /dev/fuse (ff5) against the /dev/fuse peers, over io_uring (ff5uring, its default) against the io_uring ones and btrfs:"
	rrow write_vs_passthrough ff5.dw pt314.dw 0.90
	rrow read_vs_passthrough ff5.dr pt314.dr -
	rrow buffered_write_vs_passthrough ff5.bw pt314.bw 1.0
	rrow buffered_read_vs_passthrough ff5.br pt314.br 1.0
	rrow write_vs_null ff5.dw null314.dw 0.50
	rrow read_vs_null ff5.dr null314.dr 0.50
	# btrfs is no FUSE peer: framefs as mounted by default (io_uring), whose reads must be 1.2 x btrfs's
	rrow write_vs_btrfs5 ff5uring.dw btrfs5.dw 3.0
	rrow read_vs_btrfs5 ff5uring.dr btrfs5.dr 1.2
	rrow raid6_write_vs_btrfs6 ff6.dw btrfs6.dw 3.0
	rrow degraded_read_ratio ff5.dg ff5.dr 0.70
	rrow create_vs_passthrough ff5.cr pt314.cr 0.5
	# framefs over io_uring (ff5uring, its default) against the io_uring ceiling (0.6 x FUSE null), its own /dev/fuse (ff5) and passthrough_hp (over io_uring)
	rrow write_vs_uring_null ff5uring.dw null318.dw 0.6
	rrow read_vs_uring_null ff5uring.dr null318.dr 0.6
	rrow write_vs_devfuse ff5uring.dw ff5.dw 1.2
	rrow read_vs_devfuse ff5uring.dr ff5.dr -
	rrow buffered_read_vs_passthrough_hp ff5uring.br hp318.br 1.0
	NRESULT=${#RESULT[@]}
	echo "peers (context):"
	for p in "passthrough_write_vs_null pt314.dw null314.dw" "passthrough_read_vs_null pt314.dr null314.dr" \
		"uring_null_write_vs_dev_null null318.dw null314.dw" "uring_null_read_vs_dev_null null318.dr null314.dr" \
		"passthrough_hp_write_vs_ll hp318.dw pt314.dw" "passthrough_hp_buffered_read_vs_ll hp318.br pt314.br" \
		"btrfs5_write_vs_passthrough btrfs5.dw pt314.dw" "btrfs5_read_vs_passthrough btrfs5.dr pt314.dr" \
		"btrfs6_write_vs_btrfs5 btrfs6.dw btrfs5.dw" "btrfs5_write_vs_raw4 btrfs5.dw raw4.dw"; do
		# shellcheck disable=SC2086
		set -- $p
		rrow "$1" "$2" "$3" -
	done
	RESULT=("${RESULT[@]:0:$NRESULT}")
	for k in ff5uring null318 hp318; do # an io_uring row that ran over /dev/fuse compares no transports
		if [[ " ${R[$k.tp]:-} " == *" /dev/fuse "* ]]; then
			warn "$k ran over /dev/fuse in some run (see its row): its io_uring ratios are not io_uring's"
		fi
	done
	if [ "$HAVE_FRAMEFS" = 1 ] && [ "$FF_HWM" -gt 0 ]; then RESULT+=("peak_rss_mb=$FF_HWM"); else RESULT+=("peak_rss_mb=n/a"); fi
	[ "$FF_FAILS" -gt 0 ] && warn "framefs: $FF_FAILS row(s) failed; see above"
	echo "RESULT ${RESULT[*]}"
else
	echo "ratios (median/median, [min..max] of per-run ratios), bar:"
	# write_eff = framefs write / ((members-1)/members x raw write), as framefs-raidbench
	for k in ff5 btrfs5; do
		[ -n "${R[$k.dw]:-}" ] || continue
		R[$k.dwe]=$(awk -v a="${R[$k.dw]}" 'BEGIN { n = split(a, x, " "); for (i = 1; i <= n; i++) printf "%.1f ", x[i] * 4 / 3 }')
	done
	rrow write_eff ff5.dwe raw4.dw 0.90
	rrow read_vs_raw ff5.dr raw4.dr -
	rrow btrfs5_write_eff btrfs5.dwe raw4.dw -
	RESULT=("${RESULT[@]:0:2}")
	rw=$(stat3 raw4.dw | cut -d' ' -f1)
	fw=$(stat3 ff5.dw | cut -d' ' -f1 || true)
	[ "$FF_FAILS" -gt 0 ] && warn "framefs: $FF_FAILS row(s) failed; see above"
	echo "RESULT mode=disk members=4 raw_write=${rw:-n/a} framefs_write=${fw:-n/a} ${RESULT[*]} peak_rss_mb=$([ "$FF_HWM" -gt 0 ] && echo "$FF_HWM" || echo n/a)"
fi
