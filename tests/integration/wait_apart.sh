#!/bin/bash
# Proves: a request that waits does not hold up the other requests of its
# CPU.  Over io_uring libfuse hands each CPU's requests to one queue thread;
# framefs answers those that wait for a commit (fsync, flush, release,
# truncate, fallocate) from worker threads of its own (fs/daemon/offload.c,
# on libfuse with setup.sh's patch), so the queue thread goes on to the next
# request.  Over /dev/fuse libfuse's own threads do the same.
#
# Fault injected: every flush of member 0 is delayed FLUSH_LAT_MS
# (framefs-admin fault m0@op=f,lat_ms=...), so an fsync of new data waits
# that long for its commit.  From the CPU the fsync runs on (taskset), an
# O_DIRECT read, a getxattr (neither is answered from the kernel's caches)
# and an O_DIRECT write of another file (a capture going on) must complete while the fsync is still in flight, on each
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
	local t=$1 fsync_pid out ms
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
	# from the fsync's CPU: an O_DIRECT read of the clip, a getxattr and an
	# O_DIRECT write of another file; then whether the fsync is still in
	# flight.  The written file is closed after that: its close waits for
	# a commit, by design (fs/ops.c, flush_file).
	out=$(taskset -c "$CPU" python3 - "$MNT" "$IT_TMP/clip" "$fsync_pid" <<-'PY'
		import mmap, os, sys, time
		mnt, clip, fsync_pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
		t0 = time.monotonic()
		buf = mmap.mmap(-1, 1 << 20)
		want = open(clip, "rb").read()
		fd = os.open(mnt + "/clip", os.O_RDONLY | os.O_DIRECT)
		got = b"".join(buf[:os.readv(fd, [buf])] for _ in range(len(want) >> 20))
		os.close(fd)
		assert got == want, "the clip read back differs"
		assert os.getxattr(mnt + "/clip", "user.reel") == b"A001", "getxattr"
		fd = os.open(mnt + "/capture", os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
		for i in range(8):
		    buf[:] = want[i << 20:(i + 1) << 20]
		    assert os.write(fd, buf) == 1 << 20, "short write"
		ms = int((time.monotonic() - t0) * 1000)
		try:  # a zombie (ended, not yet reaped by the shell) counts as ended
		    state = open("/proc/%d/stat" % fsync_pid).read().rsplit(")", 1)[1].split()[0]
		except FileNotFoundError:
		    state = "gone"
		print("done" if state in ("Z", "gone") else "in-flight", ms)
		sys.stdout.flush()
		os.close(fd)
	PY
	) || fail "$t: the read, getxattr or write from CPU $CPU failed"
	ms=${out#* }
	[ "${out% *}" = in-flight ] ||
		fail "$t: the fsync ended before the read, getxattr and write issued after it from" \
			"CPU $CPU ($ms ms): they waited behind it"
	wait "$fsync_pid" || fail "$t: the fsync failed"
	"$ADMIN" fault "$MNT" clear >/dev/null || fail "$t: cannot clear the fault"
	[ "$t" != io_uring ] || [ "$(status_json '["fuse"]["transport"]')" = io_uring ] ||
		grep -q "older than 3.18" "$DAEMON_LOG" || fail "$t: not served over io_uring, and no reason"
	# a request that found no slot would have waited on its queue thread
	case "$(status_json '["fuse"]["offload_no_slot"]')" in
	0 | None) ;;
	*) fail "$t: requests found the offload pool full: its bound (queues x depth) is wrong" ;;
	esac
	it_unmount
	it_fsck
	ok "$t: O_DIRECT read, getxattr and 8 MiB O_DIRECT write from CPU $CPU answered in $ms ms" \
		"while an fsync of that CPU waited ${FLUSH_LAT_MS} ms for a flush"
}

run_case io_uring
run_case dev
