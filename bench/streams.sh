#!/bin/bash
# bench/streams.sh: how many paced streams each filesystem holds. framefs RAID5 beside btrfs
# RAID5 on the same RAM-backed members, in one run, as ratios.
#
#   bench/streams.sh       every case below (as root)
#
# Members: 4 files of SIZE_MB in /dev/shm, pre-touched with O_DIRECT zeros, each behind a loop
# device (losetup --direct-io=on). Both filesystems get the same loop devices, and a fresh mkfs
# for every measurement:
#   btrfs5  mkfs.btrfs -K -d raid5 -m raid1, mounted -o nodiscard
#   ff5     mkfs.framefs -K -l 5 (mkfs's 512 KiB chunk), mounted by framefs with its default
#           options (FUSE over io_uring when the kernel allows it) plus FRAMEFS_OPTS
# A measurement, for every case PRESET:THREADS:
#   framefs-frametest -w PRESET -n FRAMES -t THREADS -f FPS --max-streams=LIMIT -u 0 --json=FILE DIR
# i.e. trials of 1, 2, ... streams, each stream FRAMES frames paced at FPS by THREADS threads of
# its own, until a trial drops a frame; "found" is the most streams that held (0: not even one).
# A trial writes over the frames of the trial before it (frametest opens them O_TRUNC). At the
# found count (the last trial that held): open, write (io) and close of a frame, mean and 99th
# percentile, ms. A case's LIMIT is lowered when LIMIT streams of FRAMES frames would fill more
# than 80% of the data space (3 x SIZE_MB): a trial that runs out of space fails for want of
# space, not of speed. found = the limit means "at least that many".
# RUNS runs of every case on every filesystem; the filesystems' order rotates each run and each
# case. Tables: median [min..max] of the runs; the ratio ff5/btrfs5 of streams found is the
# median of the per-run ratios [min..max] (inf in a run in which btrfs5 held no stream and ff5
# some; no ratio in one in which neither held one).
# Last line:
#   RESULT streams_P_ff5=N streams_P_btrfs5=N streams_P_vs_btrfs5=R close_p99_P_ff5=MS
#          close_p99_P_btrfs5=MS limit_P=N ... (the same keys for every case's preset P, with
#          "-" as "_"; n/a where a row did not run or failed in a run, for a ratio whose
#          median is inf or that no run gives, and for the close_p99 of a row that held no
#          stream in any run)
# No figure is held to a bar: the script exits 0 when every measurement ran, 1 when one failed.
#
# For the run (as root) it turns FUSE over io_uring on (/sys/module/fuse/parameters/enable_uring)
# and sets fs.fuse.max_pages_limit to FUSE_MAX_PAGES, as frames.sh does; it prints what it found
# and on exit puts that back, unless someone has changed the setting since.
# After each ff5 measurement, when the build has framefs-admin, the daemon's own account
# (framefs-admin status --json MOUNT) and its request times over the measurement's trials
# (framefs-admin times MOUNT: each request's time and its waits) are saved beside frametest's
# JSON and their path printed.
#
# Knobs (environment):
#   CASES="2k:2 4k:4"   PRESET:THREADS ... (presets: framefs-frametest --list; each preset once)
#   FRAMES=48           frames a stream
#   FPS=24              frame rate of every stream (24, 23.976, 24000/1001)
#   LIMIT=10            the most streams a case tries (--max-streams=LIMIT)
#   RUNS=3              repetitions of every measurement
#   SIZE_MB=3072        size of each of the 4 members (MiB)
#   ONLY="ff5"          run only these rows (btrfs5 ff5)
#   FRAMEFS_BUILD       build dir holding mkfs.framefs, framefs, framefs-frametest (and
#                       framefs-admin), wherever meson put them; only there when set, else
#                       PATH
#   FRAMEFS_OPTS        -o options for the framefs mounts (default none)
#   OUT                 a directory to keep every measurement's frametest JSON and framefs-admin
#                       status in (a new streams-DATE folder in it); default: the scratch
#                       directory, removed on exit
#   URING=1             0: leave fuse.enable_uring as it is
#   FUSE_MAX_PAGES=1024 fs.fuse.max_pages_limit for the run; 0: leave it as it is
#   PHASE_TIMEOUT=300   seconds a mkfs, a mount or a frametest run may take (the measurement
#                       fails); a framefs daemon that holds a frametest run up PHASE_TIMEOUT
#                       + 20 s, or an unmount PHASE_TIMEOUT s, is killed, which frees a hung
#                       mount
# Needs root, python3, btrfs-progs (and btrfs in the kernel) for btrfs5, fuse3 for ff5,
# util-linux.
set -euo pipefail

PROG=streams.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"

case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

CASES=${CASES:-2k:2 4k:4}
FRAMES=${FRAMES:-48}
FPS=${FPS:-24}
LIMIT=${LIMIT:-10}
RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-3072}
ONLY=${ONLY:-}
FRAMEFS_OPTS=${FRAMEFS_OPTS:-}
OUT=${OUT:-}
URING=${URING:-1}
FUSE_MAX_PAGES=${FUSE_MAX_PAGES:-1024}
PHASE_TIMEOUT=${PHASE_TIMEOUT:-300}
NMEM=4
MEMBERS_DIR=/dev/shm

for v in FRAMES LIMIT RUNS SIZE_MB PHASE_TIMEOUT; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
[ "$RUNS" -le 32 ] || die "RUNS must be at most 32"
[ "$LIMIT" -le 256 ] || die "LIMIT must be at most 256 (framefs-frametest's most streams)"
[[ $FPS =~ ^[0-9]+(\.[0-9]+)?$|^[0-9]+/[0-9]+$ ]] || die "FPS must be a frame rate such as 24, 23.976 or 24000/1001 (got '$FPS')"
case "$URING" in 0 | 1) ;; *) die "URING must be 0 or 1" ;; esac
if ! [[ $FUSE_MAX_PAGES =~ ^[0-9]+$ ]] || [ "$FUSE_MAX_PAGES" -gt 65535 ]; then
	die "FUSE_MAX_PAGES must be 0 (leave it) or a number of pages up to 65535"
fi
ROWS=()
if [ -n "$ONLY" ]; then
	read -r -a want <<<"$ONLY"
	for r in "${want[@]}"; do
		case $r in btrfs5 | ff5) ;; *) die "ONLY: no row '$r' (rows: btrfs5 ff5)" ;; esac
	done
fi
for r in btrfs5 ff5; do # table order
	if [ -z "$ONLY" ] || [[ " $ONLY " == *" $r "* ]]; then ROWS+=("$r"); fi
done
has_row() { [[ " ${ROWS[*]} " == *" $1 "* ]]; }

[ "$(id -u)" -eq 0 ] || die "must run as root (loop devices, mounts, kernel settings)"
for t in python3 losetup findmnt pgrep ps timeout truncate dd stat awk sort; do
	command -v "$t" >/dev/null || die "$t not found (see bench/README.md for the packages)"
done
if has_row btrfs5; then
	for t in mkfs.btrfs btrfs; do command -v "$t" >/dev/null || die "$t not found (btrfs-progs)"; done
	grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || grep -qw btrfs /proc/filesystems ||
		die "the kernel has no btrfs (modprobe btrfs failed)"
fi
FT=$(need_bin framefs-frametest)
MKFS_FRAMEFS="" FRAMEFS="" ADMIN=""
if has_row ff5; then
	command -v fusermount3 >/dev/null || die "fusermount3 not found (fuse3)"
	[ -c /dev/fuse ] || die "no /dev/fuse (modprobe fuse)"
	MKFS_FRAMEFS=$(need_bin mkfs.framefs)
	FRAMEFS=$(need_bin framefs)
	ADMIN=$(find_bin framefs-admin || true) # optional: the daemon's status after each measurement
fi

# ---- the cases: frame sizes, limits, memory -----------------------------------------------------

read -r -a CASE_LIST <<<"$CASES"
[ "${#CASE_LIST[@]}" -gt 0 ] || die "CASES is empty"
PRESETS=$("$FT" --list 2>/dev/null | awk 'NF == 0 { exit } $2 ~ /^[0-9]+x[0-9]+$/ && $3 ~ /^[0-9]+$/ { print $1, $3 }') ||
	die "$FT --list failed"
DATA_MB=$(((NMEM - 1) * SIZE_MB)) # RAID5 x 4: three members of data
declare -A FB=() LIM=() THREADS_OF=()
MAXBUF_MB=0 # the frame buffers of the largest trial (frametest: one a thread of every stream)
for c in "${CASE_LIST[@]}"; do
	[[ $c =~ ^([A-Za-z0-9-]+):([1-9][0-9]*)$ ]] || die "CASES: '$c' is not PRESET:THREADS (such as 2k:2)"
	p=${BASH_REMATCH[1]} th=${BASH_REMATCH[2]}
	[ -z "${FB[$p]:-}" ] || die "CASES: preset $p twice (the RESULT keys name the preset)"
	FB[$p]=$(awk -v p="$p" '$1 == p { print $2 }' <<<"$PRESETS")
	[ -n "${FB[$p]}" ] || die "CASES: '$p' is not a framefs-frametest preset ($(awk '{ printf "%s%s", s, $1; s = " " }' <<<"$PRESETS"))"
	THREADS_OF[$p]=$th
	per=$(((FRAMES * FB[$p] + 1048575) / 1048576)) # one stream's frames, MiB
	cap=$((DATA_MB * 8 / 10 / per))
	[ "$cap" -ge 1 ] || die "SIZE_MB=$SIZE_MB is too small for one $p stream of $FRAMES frames ($per MiB, more than 80% of $DATA_MB MiB of data space); raise SIZE_MB or lower FRAMES"
	LIM[$p]=$((cap < LIMIT ? cap : LIMIT))
	b=$((LIM[$p] * th * ((FB[$p] + 1048575) / 1048576)))
	[ "$b" -gt "$MAXBUF_MB" ] && MAXBUF_MB=$b
done

need=$((NMEM * SIZE_MB + MAXBUF_MB + 1024)) # + framefs's daemon (557 MiB at most in frames.sh's runs) and the rest
[ "$(mem_avail_mb)" -ge "$need" ] ||
	die "needs ~$need MiB of memory (members ${NMEM}x$SIZE_MB MiB, frame buffers $MAXBUF_MB MiB), $(mem_avail_mb) MiB available; lower SIZE_MB"
[ "$(avail_mb "$MEMBERS_DIR")" -ge $((NMEM * SIZE_MB + 64)) ] ||
	die "$MEMBERS_DIR has $(avail_mb "$MEMBERS_DIR") MiB free, needs $((NMEM * SIZE_MB + 64)); lower SIZE_MB"

# ---- what lives where, and its clean-up -------------------------------------------------------

W=""   # member files, scratch outputs
MNT="" # the mountpoint's parent
LOOPS=()
MPID="" # pid of the framefs daemon serving $MNT/fs
WD=""   # the watchdog of a framefs frametest run
ERRF=/dev/null
OUTF=/dev/null
cleanup() {
	local i
	stop_children # a frametest run is told to stop; wait for it (at most 10 s) before unmounting
	for i in $(seq 1 50); do
		[ -z "$(jobs -pr)" ] && break
		sleep 0.2
	done
	if [ -n "$MNT" ] && [ -n "$MPID" ]; then guarded_unmount 30 || true; fi
	cleanup_mount
	restore_kernel
}
on_exit cleanup

W=$(mktemp -d "$MEMBERS_DIR/framefs-streams.XXXXXX")
MNT=$(mktemp -d /tmp/framefs-streams-mnt.XXXXXX)
mkdir "$MNT/fs"
ERRF=$W/err
OUTF=$W/out
if [ -n "$OUT" ]; then
	mkdir -p "$OUT" || die "cannot create OUT=$OUT"
	O=$(mktemp -d "$OUT/streams-$(date -u +%Y%m%d-%H%M%S).XXXX")
else
	O=$W/json
	mkdir "$O"
fi

# ---- the kernel's FUSE settings for the run (put back on exit) ---------------------------------

kernel_fuse_set "$URING" "$FUSE_MAX_PAGES" "framefs runs"

# ---- members ----------------------------------------------------------------------------------

MFILES=()
for i in $(seq 0 $((NMEM - 1))); do
	MFILES+=("$W/m$i.img")
	truncate -s "${SIZE_MB}M" "$W/m$i.img"
done
TOUCHED=0
touch_members() { # fill holes (never written, or punched by a discard) with O_DIRECT zeros, so
	# that tmpfs's page allocation is not measured; says so when a member had lost pages
	local f alloc
	for f in "${MFILES[@]}"; do
		alloc=$(stat -c '%b*%B' "$f")
		if [ $((alloc)) -lt $((SIZE_MB * 1048576)) ]; then
			[ "$TOUCHED" = 1 ] && echo "  (re-touching ${f##*/}: $((SIZE_MB - alloc / 1048576)) MiB of holes)"
			dd if=/dev/zero of="$f" bs=1M count="$SIZE_MB" oflag=direct conv=notrunc status=none 2>"$ERRF" ||
				die "pre-touch $f: $(lasterr)"
		fi
	done
}
touch_members
TOUCHED=1
# mkfs -K and btrfs's nodiscard: a discard on a loop device over tmpfs punches the file
attach_loops "${MFILES[@]}"

# ---- the filesystems --------------------------------------------------------------------------

ff_mount() { # framefs on $MNT/fs over the loop devices; sets MPID
	local i list opts=()
	list=$(IFS=,; echo "${LOOPS[*]}")
	[ -n "$FRAMEFS_OPTS" ] && opts=(-o "$FRAMEFS_OPTS")
	run "$FRAMEFS" "${opts[@]}" "$list" "$MNT/fs" || { warn "framefs $list: $(lasterr)"; return 1; }
	for i in $(seq 1 75); do
		mounted "$MNT/fs" && MPID=$(daemon_pid "$MNT/fs" framefs) && return 0
		sleep 0.2
	done
	warn "framefs did not mount $list (no mount, or no process named framefs with $MNT/fs in its argv)"
	return 1
}
fs_make() { # ROW: a fresh filesystem on the members, mounted on $MNT/fs
	touch_members
	case $1 in
	btrfs5)
		run mkfs.btrfs -q -f -K -d raid5 -m raid1 "${LOOPS[@]}" || { warn "mkfs.btrfs: $(lasterr)"; return 1; }
		btrfs device scan "${LOOPS[@]}" >/dev/null 2>&1 || true
		run mount -t btrfs -o nodiscard "${LOOPS[0]}" "$MNT/fs" || { warn "mount btrfs: $(lasterr)"; return 1; }
		;;
	ff5)
		run "$MKFS_FRAMEFS" -q -f -K -l 5 -L streambench "${LOOPS[@]}" || { warn "mkfs.framefs: $(lasterr)"; return 1; }
		ff_mount
		;;
	esac
}
fs_drop() { # ROW: unmount (framefs: and wait for its daemon to let go of the members)
	local l
	guarded_unmount "$PHASE_TIMEOUT" || { warn "cannot unmount $1"; return 1; }
	if [ "$1" = ff5 ]; then
		[ -z "$MPID" ] || wait_gone "$MPID" framefs || return 1
		MPID=""
	else
		for l in "${LOOPS[@]}"; do btrfs device scan --forget "$l" >/dev/null 2>&1 || true; done
	fi
	return 0
}

watchdog_start() { # SECONDS PID WHAT: kill the framefs daemon PID if it is still there SECONDS
	# from now. A process waiting for a FUSE reply cannot always be killed (an unmount, seen
	# here, never can), so a phase on a hung daemon would outlast any timeout; killing the
	# daemon aborts the connection and frees it.
	(
		sleep "$1"
		[ "$(cat "/proc/$2/comm" 2>/dev/null)" = framefs ] || exit 0
		warn "$3 still running after $1 s: killing framefs (pid $2)"
		kill_daemon "$2"
	) &
	WD=$!
}
watchdog_stop() {
	local kids
	[ -n "$WD" ] || return 0
	kids=$(descendants "$WD")
	# shellcheck disable=SC2086 # a list of pids
	kill "$WD" $kids 2>/dev/null || true
	wait "$WD" 2>/dev/null || true
	WD=""
}

guarded_unmount() { # SECONDS: unmount $MNT/fs; a framefs daemon (MPID) that holds the unmount up
	# for SECONDS is killed
	local rc=0
	[ -z "$MPID" ] || watchdog_start "$1" "$MPID" "the unmount"
	unmount "$MNT/fs" "$MPID" || rc=1
	watchdog_stop
	return "$rc"
}

fuse_transport() { # PID -> io_uring when the daemon has libfuse's ring threads (fuse-ring-N),
	# else /dev/fuse
	local t
	for t in /proc/"$1"/task/*/comm; do
		case $(cat "$t" 2>/dev/null) in fuse-ring-*) echo io_uring; return 0 ;; esac
	done
	echo /dev/fuse
}

# ---- measurements -----------------------------------------------------------------------------

declare -A V=() # ROW.PRESET.FIGURE.RUN -> value
declare -A FAILED=() # ROW.PRESET -> runs that failed
FAILS=0
put() { V[$1.$2]=$3; } # KEY RUN VALUE

ft_parse() { # JSON-FILE -> line 1: found limit dropped open_avg open_p99 io_avg close_avg
	# close_p99 MB/s (at the found count; "-" when none held), line 2: the trials in words
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
m = d["max_streams"]
tr, found = m["trials"], m["found"]
t = d["times_ms"]
def f(x):
    return "-" if x is None else "%.4f" % x
if found > 0:
    v = [t["open"]["avg"], t["open"]["p99"], t["io"]["avg"], t["close"]["avg"], t["close"]["p99"],
         tr[found - 1]["MB_s"]]
else:
    v = [None] * 6
print(found, m["limit"], d["frames"]["dropped"], " ".join(f(x) for x in v))
held = [x["streams"] for x in tr if x["pass"]]
w = []
if held:
    w.append("%d held" % held[0] if len(held) == 1 else "%d..%d held" % (held[0], held[-1]))
for x in tr:
    if not x["pass"]:
        if x["dropped"]:
            w.append("%d dropped %d frame%s" % (x["streams"], x["dropped"], "" if x["dropped"] == 1 else "s"))
        else:
            w.append("%d failed with no frame dropped (an error or a failed check: see the JSON)" % x["streams"])
if found == m["limit"]:
    w.append("the limit")
print("; ".join(w))' "$1"
}

plural() { if [ "$1" = 1 ]; then echo "1 $2"; else echo "$1 ${2}s"; fi; } # N WORD
ms() { # VALUE -> ms with 3 significant digits or so, never in e-notation
	awk -v v="$1" 'BEGIN { if (v == "-" || v == "") { print "-"; exit }
		if (v >= 100) printf "%.0f", v; else if (v >= 10) printf "%.1f", v
		else if (v >= 1) printf "%.2f", v; else printf "%.3f", v }'
}

measure() { # ROW PRESET RUN: one frametest --max-streams run on a fresh filesystem; fails,
	# saying why, when it could not run
	local row=$1 p=$2 run=$3 th=${THREADS_OF[$2]} lim=${LIM[$2]} rc=0 j nums desc tp="" st
	local found limit dropped oa op ia ca cp mbs
	j=$O/$row.$p.run$run.json
	fs_make "$row" || { guarded_unmount "$PHASE_TIMEOUT" || true; MPID=""; return 1; }
	[ "$row" = ff5 ] && watchdog_start $((PHASE_TIMEOUT + 20)) "$MPID" framefs-frametest
	run "$FT" -w "$p" -n "$FRAMES" -t "$th" -f "$FPS" --max-streams="$lim" -u 0 --json="$j" "$MNT/fs/ft" || rc=$?
	watchdog_stop
	# exit 0: a stream held; 1: none held (still a measurement); anything else: no measurement
	if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
		warn "$row $p: framefs-frametest exit $rc: $(lasterr)"
		fs_drop "$row" || true
		return 1
	fi
	if ! nums=$(ft_parse "$j" 2>"$ERRF"); then
		warn "$row $p: no max_streams figures in $j: $(lasterr)"
		fs_drop "$row" || true
		return 1
	fi
	if [ "$row" = ff5 ]; then
		tp=" [$(fuse_transport "$MPID")]"
		if [ -n "$ADMIN" ]; then
			st=$O/$row.$p.run$run.status.json
			timeout 30 "$ADMIN" status --json "$MNT/fs" >"$st" 2>"$ERRF" || { warn "framefs-admin status: $(lasterr)"; st=""; }
			# where the daemon spent the trials' time (every trial of this mount)
			timeout 30 "$ADMIN" times "$MNT/fs" >"$O/$row.$p.run$run.times.txt" 2>"$ERRF" ||
				warn "framefs-admin times: $(lasterr)"
		fi
	fi
	fs_drop "$row" || return 1
	desc=$(sed -n 2p <<<"$nums")
	read -r found limit dropped oa op ia ca cp mbs <<<"$(head -n1 <<<"$nums")"
	put "$row.$p.found" "$run" "$found"
	if [ "$found" -gt 0 ]; then
		put "$row.$p.open_avg" "$run" "$oa"; put "$row.$p.open_p99" "$run" "$op"
		put "$row.$p.io_avg" "$run" "$ia"
		put "$row.$p.close_avg" "$run" "$ca"; put "$row.$p.close_p99" "$run" "$cp"
		printf '  %-7s %s (%s); at %d: %.0f MB/s, %d dropped, ms avg/p99: open %s/%s, io %s, close %s/%s%s\n' \
			"$row" "$(plural "$found" stream)" "$desc" "$found" "$mbs" "$dropped" "$(ms "$oa")" "$(ms "$op")" "$(ms "$ia")" \
			"$(ms "$ca")" "$(ms "$cp")" "$tp"
	else
		printf '  %-7s 0 streams (%s)%s\n' "$row" "$desc" "$tp"
	fi
	[ "$limit" = "$lim" ] || warn "$row $p: frametest's limit is $limit, not $lim"
	[ -n "${st:-}" ] && echo "          framefs-admin status: $st, times: ${st%.status.json}.times.txt"
	return 0
}

# ---- statistics -------------------------------------------------------------------------------

vals() { # KEY -> its values, one a line, in run order
	local r
	for r in $(seq 1 "$RUNS"); do
		if [ -n "${V[$1.$r]:-}" ]; then echo "${V[$1.$r]}"; fi
	done
}
stat3() { # KEY -> "median min max", nothing when no run has it
	vals "$1" | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}
cell() { # KEY streams|ms -> "median [min..max]" or "-"
	local s f=ms
	s=$(stat3 "$1")
	[ -n "$s" ] || { echo "-"; return; }
	[ "$2" = streams ] && f=num
	# shellcheck disable=SC2086
	set -- $s
	if [ "$RUNS" -gt 1 ]; then echo "$($f "$1") [$($f "$2")..$($f "$3")]"; else $f "$1"; fi
}
num() { awk -v v="$1" 'BEGIN { printf "%g", v }'; }
ratio3() { # PRESET -> "median min max runs infs" of the per-run ratios ff5/btrfs5 of streams
	# found, over the runs in which both ran: a run in which btrfs5 held no stream and ff5 some
	# gives inf, one in which neither held one gives no ratio; runs: how many gave one, infs: how
	# many of them are inf; nothing when none did
	local r a b
	for r in $(seq 1 "$RUNS"); do
		a=${V[ff5.$1.found.$r]:-} b=${V[btrfs5.$1.found.$r]:-}
		if [ -z "$a" ] || [ -z "$b" ]; then continue; fi
		if [ "$b" -gt 0 ]; then
			awk -v a="$a" -v b="$b" 'BEGIN { print a / b }'
		elif [ "$a" -gt 0 ]; then
			echo inf
		fi
	done | awk '$1 == "inf" { ni++; next } { f[++nf] = $1 }
		END { n = nf + ni; if (n == 0) exit
			for (i = 2; i <= nf; i++) { t = f[i]; for (j = i - 1; j > 0 && f[j] > t; j--) f[j + 1] = f[j]; f[j + 1] = t }
			for (i = 1; i <= n; i++) v[i] = (i <= nf) ? sprintf("%.2f", f[i]) : "inf"
			lo = (n % 2) ? (n + 1) / 2 : n / 2; hi = (n % 2) ? lo : lo + 1
			m = (v[hi] == "inf") ? "inf" : sprintf("%.2f", (f[lo] + f[hi]) / 2)
			print m, v[1], v[n], n, ni + 0 }'
}

# ---- the run ----------------------------------------------------------------------------------

echo "streams.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r)"
echo "members: $NMEM x $SIZE_MB MiB in $W behind loop devices (direct-io=on): ${LOOPS[*]}"
echo "frametest: $FT ($("$FT" --version 2>/dev/null || echo "version unknown"))"
has_row btrfs5 && echo "btrfs5: $(mkfs.btrfs --version 2>&1 | head -n1), -d raid5 -m raid1 on the 4 loop devices, nodiscard"
has_row ff5 && echo "ff5: $FRAMEFS, $MKFS_FRAMEFS -K -l 5 on the 4 loop devices${FRAMEFS_OPTS:+, -o $FRAMEFS_OPTS}${ADMIN:+; status by $ADMIN}"
printf 'kernel: %s\n' "${KSET[@]}"
for c in "${CASE_LIST[@]}"; do
	p=${c%%:*}
	echo "case $p: frames of ${FB[$p]} B, $(plural "${THREADS_OF[$p]}" thread) a stream, $FPS fps, $FRAMES frames a stream, up to ${LIM[$p]} streams$([ "${LIM[$p]}" -lt "$LIMIT" ] && echo " (LIMIT $LIMIT lowered to what fits in 80% of the $DATA_MB MiB of data space)")"
done
echo "rows: ${ROWS[*]}; $(plural "$RUNS" run), the rows' order rotating; outputs in $O$([ -z "$OUT" ] && echo " (removed on exit; OUT=DIR keeps them)")"
echo

T0=$(date +%s)
for run in $(seq 1 "$RUNS"); do
	echo "== run $run/$RUNS (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	ci=0
	for c in "${CASE_LIST[@]}"; do
		p=${c%%:*}
		echo "$p, $(plural "${THREADS_OF[$p]}" thread) a stream:"
		n=${#ROWS[@]}
		for j in $(seq 0 $((n - 1))); do
			r=${ROWS[$(((j + run - 1 + ci) % n))]}
			if ! measure "$r" "$p" "$run"; then
				warn "$r $p run $run failed"
				FAILS=$((FAILS + 1))
				FAILED[$r.$p]=$((${FAILED[$r.$p]:-0} + 1))
			fi
		done
		ci=$((ci + 1))
	done
done
echo "($(plural "$RUNS" run) in $(($(date +%s) - T0)) s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo

# ---- tables -----------------------------------------------------------------------------------

label() { case $1 in ff5) echo "framefs RAID5 x 4" ;; btrfs5) echo "btrfs RAID5 x 4" ;; esac; }
hdr="median [min..max] of $RUNS runs"
[ "$RUNS" = 1 ] && hdr="1 run"
RESULT=()
declare -A SV=() CPV=() # row -> its RESULT figures of the case: streams, close p99
for c in "${CASE_LIST[@]}"; do
	p=${c%%:*}
	k=${p//-/_}
	echo "$p: $(plural "${THREADS_OF[$p]}" thread) a stream, $FPS fps, $FRAMES frames a stream, up to ${LIM[$p]} streams; $hdr"
	printf '%-20s %-16s | at the found count, ms:\n' "" "streams found"
	printf '%-20s %-16s | %-22s %-22s %-22s %-22s %s\n' "" "" "open avg" "open p99" "io avg" "close avg" "close p99"
	for r in "${ROWS[@]}"; do
		printf '%-20s %-16s | %-22s %-22s %-22s %-22s %s\n' "$(label "$r")" "$(cell "$r.$p.found" streams)" \
			"$(cell "$r.$p.open_avg" ms)" "$(cell "$r.$p.open_p99" ms)" "$(cell "$r.$p.io_avg" ms)" \
			"$(cell "$r.$p.close_avg" ms)" "$(cell "$r.$p.close_p99" ms)"
		nf=$(vals "$r.$p.found" | wc -l)
		n0=$(vals "$r.$p.found" | grep -cx 0 || true)
		[ -z "${FAILED[$r.$p]:-}" ] || echo "  ($r failed in ${FAILED[$r.$p]} of $RUNS runs)"
		if [ "$n0" = "$nf" ] && [ "$nf" -gt 0 ]; then
			echo "  ($r held no stream in any run: no times)"
		elif [ "$n0" != 0 ]; then
			echo "  ($r held no stream in $n0 of $nf runs: its times are over the other runs)"
		fi
		if [ "$nf" -gt 0 ] && [ "$(vals "$r.$p.found" | sort -g | tail -n1)" = "${LIM[$p]}" ]; then
			echo "  ($r held the limit, ${LIM[$p]}, in some run: it may hold more)"
		fi
	done
	rr=$(ratio3 "$p")
	if [ -n "$rr" ]; then
		read -r rm rlo rhi rn rinf <<<"$rr"
		if [ "$RUNS" -gt 1 ]; then
			echo "streams ff5/btrfs5: $rm [$rlo..$rhi] (median of the per-run ratios [min..max], $rn of $RUNS runs)"
		else
			echo "streams ff5/btrfs5: $rm"
		fi
		[ "$rinf" = 0 ] || echo "  (inf: btrfs5 held no stream and ff5 some, in $(plural "$rinf" run))"
		[ "$rn" = "$RUNS" ] || echo "  (no ratio in $((RUNS - rn)) of $RUNS runs: a row failed, or neither held a stream)"
	else
		echo "streams ff5/btrfs5: n/a (no run in which both ran and one held a stream)"
	fi
	echo
	for r in ff5 btrfs5; do
		s="n/a" cp="n/a"
		if has_row "$r" && [ -z "${FAILED[$r.$p]:-}" ]; then
			s=$(num "$(stat3 "$r.$p.found" | cut -d' ' -f1)")
			v=$(stat3 "$r.$p.close_p99" | cut -d' ' -f1)
			[ -n "$v" ] && cp=$(ms "$v")
		fi
		SV[$r]=$s CPV[$r]=$cp
	done
	rv="n/a"
	if [ "${SV[ff5]}" != n/a ] && [ "${SV[btrfs5]}" != n/a ] && [ -n "$rr" ] && [ "$rm" != inf ]; then rv=$rm; fi
	RESULT+=("streams_${k}_ff5=${SV[ff5]}" "streams_${k}_btrfs5=${SV[btrfs5]}" "streams_${k}_vs_btrfs5=$rv"
		"close_p99_${k}_ff5=${CPV[ff5]}" "close_p99_${k}_btrfs5=${CPV[btrfs5]}" "limit_$k=${LIM[$p]}")
done
[ "$FAILS" -gt 0 ] && warn "$FAILS measurement(s) failed; see above"
echo "RESULT ${RESULT[*]}"
[ "$FAILS" = 0 ]
