#!/bin/bash
# Proves: SIGTERM while data requests are in flight — three O_DIRECT
# writers and two readers moving 8 MiB at a time — ends the daemon cleanly
# over the transport given as the first argument: dev (/dev/fuse, the
# default) or io_uring (-o transport=io_uring).  The daemon exits 0 within
# EXIT_MAX_S after writing everything out, and the array mounts clean,
# passes fsck and holds what was written before the busy phase.  A daemon
# that does not exit in time has its threads' stacks printed (gdb) and is
# a failure.  (Over libfuse 3.18.3's io_uring this hung the daemon, or left
# stripes allocated and unreferenced, while libfuse could cancel its queue
# threads inside framefs's handlers: fs/daemon/fuse_ops.c, cancel_off.)
#
# io_uring: on a build with libfuse >= 3.18 the mounts must really serve
# over io_uring (status and log), or the test fails; with an older libfuse
# (the ASan build) every mount must say it serves over /dev/fuse because
# of that, and the load runs over /dev/fuse.  Turns the kernel's
# fuse.enable_uring on for its run and puts back what it found.
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"

case "${1:-dev}" in
dev) MOUNT_OPTS=(-o transport=dev) transport=/dev/fuse ;; # named: IT_TRANSPORT must not change it
io_uring) MOUNT_OPTS=(-o transport=io_uring) transport=io_uring ;;
*) fail "usage: $0 [dev|io_uring]" ;;
esac
EXIT_MAX_S=${EXIT_MAX_S:-20} # a clean exit writes out at most a few stripes per file

HAS_URING=0
if [ "$transport" = io_uring ]; then
	URING_PARAM=/sys/module/fuse/parameters/enable_uring
	[ -w "$URING_PARAM" ] || fail "$URING_PARAM is missing: this kernel has no FUSE over io_uring"
	CLEANUPS+=("echo $(cat "$URING_PARAM") >$URING_PARAM")
	echo 1 >"$URING_PARAM"
	case "$("$FRAMEFS" --version | head -1)" in
	*"libfuse 3.1"[89]* | *"libfuse 3."[2-9][0-9]* | *"libfuse "[4-9]*) HAS_URING=1 ;;
	esac
fi

SRC=$IT_TMP/src
head -c $((64 << 20)) /dev/urandom >"$SRC"
LOOPS=()

# on a failure: the loops and the dd each may be running
kill_loops() {
	local p
	touch "$IT_TMP/stop"
	for p in "${LOOPS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	# the loops only: a bare wait would also wait for a daemon still
	# mounted, which exits only when the cleanup after this one unmounts
	[ ${#LOOPS[@]} = 0 ] || wait "${LOOPS[@]}" 2>/dev/null
}
CLEANUPS+=(kill_loops)

status_json() { # EXPR over the mount's status, e.g. '["fuse"]["transport"]'
	"$ADMIN" --json status "$MNT" 2>/dev/null |
		python3 -c "import json, sys; print(json.load(sys.stdin)$1)" 2>/dev/null
}

# requests in flight, polled up to 200 times: read from the pretty JSON with
# sed, not a Python per sample (on a 2-core machine under this load a
# Python start took 1.6-2 s, and the poll 40 s of the test's 53)
in_flight() {
	local n
	n=$("$ADMIN" --json status "$MNT" 2>/dev/null | sed -n 's/^ *"in_flight": *\([0-9]*\).*/\1/p')
	echo "${n:-0}"
}

# the transport the mount really serves over, once requests came
expect_transport() {
	local got
	got=$(status_json '["fuse"]["transport"]')
	if [ "$transport" = io_uring ] && [ "$HAS_URING" = 1 ]; then
		[ "$got" = io_uring ] || fail "asked for io_uring, status says $got"
		[ "$(status_json '["fuse"]["uring_requests"]')" -gt 0 ] || fail "no request came over io_uring"
		grep -q "FUSE over io_uring" "$DAEMON_LOG" || fail "the log does not say FUSE over io_uring"
	elif [ "$transport" = io_uring ]; then
		[ "$got" = /dev/fuse ] || fail "libfuse < 3.18: status says $got, expected /dev/fuse"
		grep -q "FUSE over /dev/fuse.*older than 3.18" "$DAEMON_LOG" ||
			fail "libfuse < 3.18: the log does not say why /dev/fuse"
		got="/dev/fuse (libfuse older than 3.18)"
	else
		[ "$got" = /dev/fuse ] || fail "status says $got, expected /dev/fuse"
	fi
	SERVED=$got
}

# abort_conn: the kernel ends the FUSE connection of $MNT (its number is
# the mount's device minor), failing every request still waiting on it
abort_conn() {
	local minor
	minor=$(awk -v m="$MNT" '$5 == m { split($3, d, ":"); print d[2] }' /proc/self/mountinfo)
	[ -z "$minor" ] || echo 1 >"/sys/fs/fuse/connections/$minor/abort" 2>/dev/null
	umount -l "$MNT" 2>/dev/null
	return 0
}

# wait_exit: the daemon exits within EXIT_MAX_S (polled: kill -0 is the
# state change); else its stacks go to the log and the test fails
wait_exit() {
	local i t0=$(now_ns)
	for ((i = 0; i < EXIT_MAX_S * 20; i++)); do
		kill -0 "$DAEMON_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$DAEMON_PID" 2>/dev/null; then
		echo "--- framefs $DAEMON_PID has not exited ${EXIT_MAX_S} s after SIGTERM: its threads" >&2
		timeout 60 gdb -p "$DAEMON_PID" -batch -ex 'thread apply all bt' 2>&1 |
			grep -v "^\[New LWP\|^warning:" >&2
		# the loops' dd wait on the dead connection: end it, or cleanup waits for them
		kill -KILL "$DAEMON_PID"
		abort_conn
		fail "$SERVED RAID$level: framefs hung after SIGTERM with $busy requests in flight"
	fi
	it_wait_daemon
	EXIT_MS=$((($(now_ns) - t0) / 1000000))
}

for level in 5 6; do
	if [ $level = 5 ]; then it_make_array 5 4 512M; else it_make_array 6 6 256M; fi
	it_mount "${MOUNT_OPTS[@]}"
	for i in 1 2; do
		dd if="$SRC" of="$MNT/r$i" bs=16M oflag=direct status=none || fail "write r$i"
	done
	expect_transport
	echo 3 >/proc/sys/vm/drop_caches
	# each loop ends when the mount is gone (dd fails) or when killed;
	# its files are on the mount only while a stop file is absent
	for w in 1 2 3; do
		(while [ ! -e "$IT_TMP/stop" ] &&
			dd if="$SRC" of="$MNT/w$w" bs=8M oflag=direct status=none 2>/dev/null; do :; done) &
		LOOPS+=($!)
	done
	for r in 1 2; do
		(while [ ! -e "$IT_TMP/stop" ] &&
			dd if="$MNT/r$r" of=/dev/null bs=8M iflag=direct status=none 2>/dev/null; do :; done) &
		LOOPS+=($!)
	done
	# a bounded wait for the condition itself: requests in flight
	busy=0
	for ((i = 0; i < 200 && busy < 2; i++)); do busy=$(in_flight); done
	[ "$busy" -ge 2 ] || fail "$SERVED RAID$level: never saw two requests in flight"
	touch "$IT_TMP/stop"
	kill -TERM "$DAEMON_PID"
	wait_exit
	is_mounted && fail "$SERVED RAID$level: still mounted after SIGTERM"
	# each loop saw the stop file or sees it after its dd, which ends at
	# once on the dead mount (or soon on the bare mountpoint)
	for p in "${LOOPS[@]}"; do wait "$p"; done
	LOOPS=()
	rm -f "$IT_TMP/stop" "$MNT"/w? "$MNT"/r? # what dd may have left in the bare mountpoint
	it_fsck
	it_mount "${MOUNT_OPTS[@]}"
	it_expect_clean_start "after SIGTERM with $busy requests in flight"
	for i in 1 2; do cmp -s "$SRC" "$MNT/r$i" || fail "$SERVED RAID$level: r$i differs"; done
	it_unmount
	ok "$SERVED RAID$level: SIGTERM with $busy requests in flight: exit 0 in $EXIT_MS ms, clean, data kept"
done
