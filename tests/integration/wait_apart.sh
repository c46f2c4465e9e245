#!/bin/bash
# Proves: a request that waits does not hold up the other requests of its
# CPU.  Over io_uring libfuse hands each CPU's requests to one queue thread;
# framefs answers those that may wait (fsync, flush, release, read, write,
# truncate, fallocate) from worker threads of its own (fs/daemon/offload.c,
# on the libfuse setup.sh patches), so the queue thread goes on to the next
# request.  Over /dev/fuse libfuse's own threads do the same.
#
# Fault injected: every flush of member 0 is delayed FLUSH_LAT_MS
# (framefs-admin fault m0@op=f,lat_ms=...), so an fsync of new data waits
# that long for its commit.  From the CPU the fsync runs on (taskset), an
# O_DIRECT read and a getxattr (neither is answered from the kernel's
# caches) must complete while the fsync is still in flight, on each
# transport.  Without the workers the read waits behind the fsync on the
# CPU's one queue thread and the fsync ends first.
#
# Changes /sys/module/fuse/parameters/enable_uring for its run and puts back
# what it found.  On a libfuse older than 3.18 (the ASan run) io_uring falls
# back to /dev/fuse, which must pass the same way.
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"

FLUSH_LAT_MS=${FLUSH_LAT_MS:-4000}
URING_PARAM=/sys/module/fuse/parameters/enable_uring
[ -w "$URING_PARAM" ] || fail "$URING_PARAM is not writable: this kernel has no FUSE over io_uring"
CLEANUPS+=("echo $(cat "$URING_PARAM") >$URING_PARAM")
echo 1 >"$URING_PARAM"
CPU=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//') # the first CPU this test may use

status_json() { # PATH: one value of framefs-admin --json status
	"$ADMIN" --json status "$MNT" | python3 -c "import json, sys; print(json.load(sys.stdin)$1)"
}

# until_fsync_in_flight: the daemon shows the fsync as its oldest request.
# Polled (the only way to see inside the daemon), bounded by the fault's delay.
until_fsync_in_flight() {
	local i
	for ((i = 0; i < FLUSH_LAT_MS / 50; i++)); do
		[ "$(status_json '["requests"]["oldest_op"]')" = fsync ] && return 0
		kill -0 "$1" 2>/dev/null || fail "the fsync ended before the daemon showed it in flight"
		sleep 0.05
	done
	fail "no fsync in flight within ${FLUSH_LAT_MS} ms"
}

run_case() { # TRANSPORT
	local t=$1 fsync_pid t0 t1
	it_make_array 5 3 256M
	it_mount -o "transport=$t"
	it_wait_ctl
	head -c $((8 << 20)) /dev/urandom >"$IT_TMP/clip"
	dd if="$IT_TMP/clip" of="$MNT/clip" bs=1M oflag=direct status=none || fail "$t: writing the clip"
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.reel", b"A001")' "$MNT/clip" ||
		fail "$t: setxattr"
	sync -f "$MNT"
	"$ADMIN" fault "$MNT" "$(basename "${MEMBERS[0]}")@op=f,lat_ms=$FLUSH_LAT_MS" >/dev/null ||
		fail "$t: cannot arm the flush delay"
	# new data, fsync'd from CPU $CPU: its commit waits for member 0's flush
	taskset -c "$CPU" python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, os.urandom(1 << 20))
os.fsync(fd)
os.close(fd)' "$MNT/slow" &
	fsync_pid=$!
	until_fsync_in_flight "$fsync_pid"
	t0=$(now_ns)
	taskset -c "$CPU" dd if="$MNT/clip" bs=1M iflag=direct status=none | cmp -s - "$IT_TMP/clip" ||
		fail "$t: the clip read back differs"
	[ "$(taskset -c "$CPU" python3 -c 'import os, sys
print(os.getxattr(sys.argv[1], "user.reel").decode())' "$MNT/clip")" = A001 ] || fail "$t: getxattr"
	t1=$(now_ns)
	kill -0 "$fsync_pid" 2>/dev/null ||
		fail "$t: the fsync ended before the read and getxattr issued after it from CPU $CPU" \
			"($(((t1 - t0) / 1000000)) ms): they waited behind it"
	[ "$(status_json '["requests"]["oldest_op"]')" = fsync ] ||
		fail "$t: the fsync is no longer in flight after the read"
	wait "$fsync_pid" || fail "$t: the fsync failed"
	"$ADMIN" fault "$MNT" clear >/dev/null || fail "$t: cannot clear the fault"
	[ "$t" != io_uring ] || [ "$(status_json '["fuse"]["transport"]')" = io_uring ] ||
		grep -q "older than 3.18" "$DAEMON_LOG" || fail "$t: not served over io_uring, and no reason"
	it_unmount
	it_fsck
	ok "$t: O_DIRECT read and getxattr from CPU $CPU answered in $(((t1 - t0) / 1000000)) ms" \
		"while an fsync of that CPU waited ${FLUSH_LAT_MS} ms for a flush"
}

run_case io_uring
run_case dev
