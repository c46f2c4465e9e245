#!/bin/bash
# Proves: SIGTERM while data requests are in flight — three O_DIRECT
# writers and two readers moving 8 MiB at a time — ends the daemon cleanly
# over its default transport (/dev/fuse): it exits 0 after writing
# everything out, and the array mounts clean, passes fsck and holds what
# was written before the busy phase.  (Over libfuse 3.18.3's io_uring this
# hung the daemon 3 times in 5: why io_uring is not the default,
# fs/daemon/transport.c.)
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"

SRC=$IT_TMP/src
head -c $((64 << 20)) /dev/urandom >"$SRC"
LOOPS=()

# on a failure: the loops and the dd each may be running
kill_loops() {
	local p
	touch "$IT_TMP/stop"
	for p in "${LOOPS[@]}"; do pkill -P "$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
CLEANUPS+=(kill_loops)

in_flight() {
	"$ADMIN" --json status "$MNT" 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"]["in_flight"])' 2>/dev/null ||
		echo 0
}

transport=/dev/fuse
for level in 5 6; do
	if [ $level = 5 ]; then it_make_array 5 4 512M; else it_make_array 6 6 256M; fi
	it_mount
	for i in 1 2; do
		dd if="$SRC" of="$MNT/r$i" bs=16M oflag=direct status=none || fail "write r$i"
	done
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
	[ "$busy" -ge 2 ] || fail "$transport RAID$level: never saw two requests in flight"
	touch "$IT_TMP/stop"
	kill -TERM "$DAEMON_PID"
	it_wait_daemon
	is_mounted && fail "$transport RAID$level: still mounted after SIGTERM"
	# each loop saw the stop file or sees it after its dd, which ends at
	# once on the dead mount (or soon on the bare mountpoint)
	for p in "${LOOPS[@]}"; do wait "$p"; done
	LOOPS=()
	rm -f "$IT_TMP/stop" "$MNT"/w? "$MNT"/r? # what dd may have left in the bare mountpoint
	it_fsck
	it_mount
	it_expect_clean_start "after SIGTERM with $busy requests in flight"
	for i in 1 2; do cmp -s "$SRC" "$MNT/r$i" || fail "$transport RAID$level: r$i differs"; done
	it_unmount
	ok "$transport RAID$level: SIGTERM with $busy requests in flight: exit 0, clean, data kept"
done
