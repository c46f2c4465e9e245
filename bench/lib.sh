# shellcheck shell=bash
# What the benchmark scripts share (sourced after PROG is set): messages,
# mounts and the FUSE daemons behind them, loop devices, the processes a
# script started, finding the tools, timed phases, a framefs volume's
# daemon and a timed rebuild, and the clean-up on exit.

die() { echo "$PROG: $*" >&2; exit 1; }
warn() { echo "$PROG: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

mounted() { findmnt -rn --mountpoint "$1" >/dev/null 2>&1; }

kill_daemon() { # PID[:COMM] (COMM: framefs): TERM, then KILL, while that pid still is that
	# daemon (a KILLed FUSE daemon aborts its connection, which frees a hung mount and the
	# processes stuck on it); at most 5 s
	local p=${1%%:*} c=framefs i
	[[ $1 == *:* ]] && c=${1#*:}
	for i in $(seq 1 25); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$c" ] || return 0
		[ "$i" = 1 ] && kill "$p" 2>/dev/null
		[ "$i" = 10 ] && kill -9 "$p" 2>/dev/null
		sleep 0.2
	done
}

unmount() { # MOUNTPOINT [PID[:COMM]]: unmount; kills the FUSE daemon PID when it does not let
	# go, and unmounts lazily at last
	local m=$1 d=${2:-}
	mounted "$m" || return 0
	timeout 60 fusermount3 -u "$m" 2>/dev/null || timeout 60 umount "$m" 2>/dev/null || true
	mounted "$m" || return 0
	warn "$m does not unmount; killing its daemon"
	[ -n "$d" ] && kill_daemon "$d"
	timeout 10 fusermount3 -u -z "$m" 2>/dev/null || timeout 10 umount -l "$m" 2>/dev/null || true
	! mounted "$m"
}

descendants() { # PID -> every process below it
	ps -eo pid=,ppid= | awk -v root="$1" '{ up[$1] = $2 }
		END { for (p in up) { q = p; while ((q in up) && q != root && q > 1) q = up[q]; if (q == root && p != root) print p } }'
}

daemon_pid() { # MOUNTPOINT COMM -> pid of the process named COMM with MOUNTPOINT in its argv
	local p
	for p in $(pgrep -x "$2"); do
		tr '\0' '\n' 2>/dev/null <"/proc/$p/cmdline" | grep -qxF -- "$1" && { echo "$p"; return 0; }
	done
	return 1
}

wait_gone() { # PID [NAME] (NAME: daemon): wait (up to 20 s) for a daemon to exit after its unmount
	local i
	for i in $(seq 1 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.2
	done
	warn "${2:-daemon} $1 still running 20 s after its unmount"
	return 1
}

attach_loops() { # FILE... -> LOOPS: a loop device over each file, direct-io on
	local f l
	for f in "$@"; do
		l=$(losetup --direct-io=on -f --show "$f" 2>"$ERRF") || die "losetup $f: $(lasterr)"
		LOOPS+=("$l")
	done
}
detach_loops() { # detach the loop devices in LOOPS (btrfs forgets them first); LOOPS is empty after
	local l
	for l in "${LOOPS[@]}"; do
		btrfs device scan --forget "$l" >/dev/null 2>&1 || true
		losetup -d "$l" 2>/dev/null || warn "cannot detach $l"
	done
	LOOPS=()
}

# ---- tools and phases -------------------------------------------------------------------------

# framefs's programs come from the build FRAMEFS_BUILD names, as meson laid it out: a meson build
# folder lists what it builds and where (meson-info/intro-targets.json), so a program is found
# in whatever folder of the build its meson.build puts it. The list holds absolute paths; each is
# taken relative to the build folder meson recorded (meson-info.json), so a build folder that was
# moved or copied works too. Any other folder (an install's bin, bench/peers/fake-framefs) holds
# the programs at its top. python3 reads the list: meson is a python3 program, so a machine with
# a meson build has it.
find_bin_in() { # DIR NAME -> absolute path of the program NAME of the build DIR, or on PATH when
	# DIR is empty
	local d f
	[ -n "$1" ] || { command -v "$2" 2>/dev/null; return; }
	d=$(cd "$1" 2>/dev/null && pwd) || return 1 # absolute: a script may change directory
	f=$d/$2
	if [ -f "$d/meson-info/intro-targets.json" ]; then
		f=$(python3 - "$d" "$2" <<'PY'
import json, os, sys
build, name = sys.argv[1:]
info = os.path.join(build, "meson-info")
root = json.load(open(os.path.join(info, "meson-info.json")))["directories"]["build"]
for t in json.load(open(os.path.join(info, "intro-targets.json"))):
    if t["type"] == "executable" and t["name"] == name:
        print(os.path.join(build, os.path.relpath(t["filename"][0], root)))
        break
PY
		) || return 1
	fi
	[ -f "$f" ] && [ -x "$f" ] && echo "$f"
}
find_bin() { # NAME -> path: from FRAMEFS_BUILD when it is set (only there: an installed, older
	# framefs must not stand in for the build asked for), else from PATH
	find_bin_in "${FRAMEFS_BUILD:-}" "$1"
}
bin_missing() { # NAME -> why find_bin found no NAME: the one message of every script
	if [ -n "${FRAMEFS_BUILD:-}" ]; then
		echo "no $1 in $FRAMEFS_BUILD (meson compile -C $FRAMEFS_BUILD)"
	else
		echo "$1 is not on PATH; build it and set FRAMEFS_BUILD=/path/to/build"
	fi
}
need_bin() { # NAME -> path as find_bin finds it; else the script stops with bin_missing's message
	find_bin "$1" || die "$(bin_missing "$1")"
}
tree_bin() { # NAME -> path for the examples, which run from a source tree, often before anything is
	# installed: as need_bin finds it, but with neither FRAMEFS_BUILD nor NAME on PATH, from the
	# tree's build dir `build` (./setup.sh's)
	local b
	b=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build
	if [ -z "${FRAMEFS_BUILD:-}" ] && ! command -v "$1" >/dev/null && [ -d "$b" ]; then
		FRAMEFS_BUILD=$b need_bin "$1"
	else
		need_bin "$1"
	fi
}

avail_mb() { df -Pm "$1" | awk 'NR==2 { print $4 }'; }
mem_avail_mb() { awk '/^MemAvailable:/ { printf "%d", $2 / 1024 }' /proc/meminfo; }

run_for() { # SECONDS CMD...: at most SECONDS, in the background so that a signal reaches our
	# trap at once; stdout in $OUTF, stderr in $ERRF
	local rc=0 t=$1
	shift
	(timeout -k 10 "$t" "$@" >"$OUTF" 2>"$ERRF") & # (): no "Killed" job notice
	wait $! || rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "timed out after $t s" >>"$ERRF"; fi
	return "$rc"
}
run() { run_for "$PHASE_TIMEOUT" "$@"; } # CMD...: at most PHASE_TIMEOUT s
lasterr() { grep -v '^$' "$ERRF" | tail -n1; }

# ---- a framefs volume: its daemon, and a timed rebuild ------------------------------------------

# FRAMEFS and ADMIN are the programs (need_bin); DAEMON is the pid of the framefs serving the volume.
ff_mount() { # SPEC MNT LOG: framefs in the foreground of a background job on MNT, its output
	# appended to LOG; returns once the daemon answers framefs-admin status (polled every 50 ms,
	# at most 30 s); DAEMON: its pid
	"$FRAMEFS" -f "$1" "$2" >>"$3" 2>&1 &
	DAEMON=$!
	local i
	for i in $(seq 600); do
		mounted "$2" && "$ADMIN" status -q "$2" >/dev/null 2>&1 && return
		kill -0 "$DAEMON" 2>/dev/null || die "framefs exited: $(tail -5 "$3")"
		sleep 0.05
	done
	die "framefs did not mount $2 in 30 s"
}
ff_unmount() { # MNT: unmount the volume ff_mount mounted; returns once its daemon has exited
	umount "$1" || die "cannot unmount $1"
	wait "$DAEMON" || warn "framefs exited $? after unmount"
	DAEMON=
}

ff_rebuild_timed() { # MNT NEW -> "SECONDS BYTES": framefs-admin add NEW to the mounted volume
	# (one member missing), then its status polled every 20 ms until no member is left to
	# rebuild; SECONDS from the add to then, BYTES the member bytes the rebuild wrote
	python3 - "$ADMIN" "$1" "$2" <<'PY'
import json, subprocess, sys, time
admin, mnt, new = sys.argv[1:]
t0 = time.monotonic()
subprocess.run([admin, "add", "-q", mnt, new], check=True)
while True:
    rb = json.loads(subprocess.run([admin, "--json", "status", mnt], check=True,
                                   capture_output=True, text=True).stdout)["rebuild"]
    if not rb["active"] and not rb["roles"]:
        break
    time.sleep(0.02)
print("%.3f %d" % (time.monotonic() - t0, rb["bytes_done"]))
PY
}

# ---- the kernel's FUSE settings for a run -----------------------------------------------------

URING_PARAM=/sys/module/fuse/parameters/enable_uring
PAGES_SYSCTL=/proc/sys/fs/fuse/max_pages_limit
K_URING_OLD="" K_URING_SET="" # what we found in URING_PARAM and set, when we changed it
K_PAGES_OLD="" K_PAGES_SET="" # what we found in PAGES_SYSCTL and set, when we changed it
KSET=()                       # what we found and did, for the header

kernel_fuse_set() { # URING(0|1) MAX_PAGES(0: leave) WHO: turn FUSE over io_uring on (URING=1)
	# and set fs.fuse.max_pages_limit; KSET says what was found and done; restore_kernel puts
	# back what this changed. WHO names what runs over /dev/fuse without io_uring.
	local cur
	cur=$(cat "$URING_PARAM" 2>/dev/null || true)
	if [ -z "$cur" ]; then
		KSET+=("no $URING_PARAM (this kernel has no FUSE over io_uring): $3 over /dev/fuse")
	elif [ "$1" = 0 ] || [ "$cur" = Y ]; then
		KSET+=("fuse.enable_uring $cur (as found)")
	elif echo 1 >"$URING_PARAM" 2>"$ERRF"; then
		K_URING_OLD=$cur
		K_URING_SET=$(cat "$URING_PARAM")
		KSET+=("fuse.enable_uring $cur -> $K_URING_SET (put back on exit)")
	else
		KSET+=("fuse.enable_uring $cur (cannot turn it on: $(lasterr); $3 over /dev/fuse)")
	fi
	cur=$(cat "$PAGES_SYSCTL" 2>/dev/null || true)
	if [ -z "$cur" ]; then
		KSET+=("no fs.fuse.max_pages_limit (kernel before 6.13): FUSE requests of at most 1 MiB")
	elif [ "$2" = 0 ] || [ "$cur" = "$2" ]; then
		KSET+=("fs.fuse.max_pages_limit $cur (as found)")
	elif echo "$2" >"$PAGES_SYSCTL" 2>"$ERRF"; then
		K_PAGES_OLD=$cur
		K_PAGES_SET=$2
		KSET+=("fs.fuse.max_pages_limit $cur -> $2 pages (put back on exit)")
	else
		KSET+=("fs.fuse.max_pages_limit $cur (cannot set $2: $(lasterr))")
	fi
}

put_back() { # NAME FILE OLD SET: write OLD back into FILE, unless it no longer holds SET (someone
	# else changed it since)
	local cur
	cur=$(cat "$2" 2>/dev/null)
	if [ "$cur" != "$4" ]; then
		warn "$1 is $cur now (someone else changed it); leaving it"
	elif echo "$3" >"$2" 2>/dev/null; then
		warn "$1 put back to $3"
	else
		warn "cannot put $1 back to $3"
	fi
}

restore_kernel() { # put back the kernel settings kernel_fuse_set changed; once
	if [ -n "$K_URING_OLD" ]; then
		put_back fuse.enable_uring "$URING_PARAM" "$K_URING_OLD" "$K_URING_SET"
		K_URING_OLD=""
	fi
	if [ -n "$K_PAGES_OLD" ]; then
		put_back fs.fuse.max_pages_limit "$PAGES_SYSCTL" "$K_PAGES_OLD" "$K_PAGES_SET"
		K_PAGES_OLD=""
	fi
}

# ---- the way out ------------------------------------------------------------------------------

# on_exit FUNC, once the variables FUNC reads are set: FUNC undoes what the script made, once,
# whatever ends it (INT, TERM and HUP say so and exit 130 / 143), with the traps cleared and
# errexit off; the script's exit status stays its own.
on_exit() {
	EXIT_FUNC=$1
	trap run_exit_func EXIT
	trap 'warn "interrupted"; exit 130' INT
	trap 'warn "terminated"; exit 143' TERM HUP
}
run_exit_func() {
	local rc=$?
	trap - EXIT INT TERM HUP
	set +e
	"$EXIT_FUNC"
	exit "$rc"
}

stop_children() { # TERM every process this script started (a run, a mkfs, a fio) and give them 1 s
	local kids
	kids=$(descendants $$)
	# shellcheck disable=SC2086 # a list of pids
	[ -n "$kids" ] && kill -TERM $kids 2>/dev/null && sleep 1
	return 0
}

# The clean-up of a script that mounts one filesystem at a time on $MNT/fs (MPID: its framefs
# daemon, if framefs) over the loop devices LOOPS, its files in W: what it runs stopped (and
# waited for: a child that cleans up after itself on TERM, as frames.sh does), the mount and the
# daemon gone, the loop devices detached, W and MNT removed unless something is still mounted.
cleanup_mount() {
	local busy=0
	stop_children
	if [ -n "$MNT" ]; then
		unmount "$MNT/fs" "$MPID" || { warn "cannot unmount $MNT/fs"; busy=1; }
	fi
	[ -n "$MPID" ] && kill_daemon "$MPID"
	wait 2>/dev/null
	detach_loops
	if [ "$busy" = 0 ]; then
		[ -n "$W" ] && rm -rf --one-file-system "$W"
		[ -n "$MNT" ] && rmdir "$MNT/fs" "$MNT" 2>/dev/null
	else
		warn "leaving $W and $MNT (something is still mounted)"
	fi
}
