#!/bin/bash
# Proves: SIGTERM to the daemon writes everything out — including partial
# stripes still being assembled and data of a file another process still
# holds open — unmounts, exits 0 and marks the array clean: the next mount
# finds it clean and every byte is there.  The same for umount(8) on a RAID6
# volume.
. "$(dirname "$0")/lib.sh"

make_sources() {
	local i
	for i in 1 2 3 4 5; do
		# odd sizes: the last stripe of each is partial, buffered in the daemon
		head -c $((i * 1234567 + 11)) /dev/urandom >"$IT_TMP/src$i"
	done
}

write_all() {
	local i
	mkdir -p "$MNT/seq"
	for i in 1 2 3 4; do
		cp "$IT_TMP/src$i" "$MNT/seq/frame$i" || fail "write frame$i"
	done
	# small unaligned writes into one file, no fsync
	for i in $(seq 0 49); do
		dd if="$IT_TMP/src5" of="$MNT/patched" bs=4099 skip="$i" seek="$i" count=1 conv=notrunc status=none ||
			fail "dd into patched"
	done
}

check_all() {
	local i
	for i in 1 2 3 4; do
		cmp "$IT_TMP/src$i" "$MNT/seq/frame$i" || fail "frame$i differs after $1"
	done
	cmp -n $((50 * 4099)) "$IT_TMP/src5" "$MNT/patched" || fail "patched differs after $1"
	[ "$(stat -c %s "$MNT/patched")" = $((50 * 4099)) ] || fail "patched has the wrong size after $1"
	cmp "$IT_TMP/src5" "$MNT/held" || fail "the file held open differs after $1"
}

make_sources
for level in 5 6; do
	if [ $level = 5 ]; then it_make_array 5 4 128M; else it_make_array 6 6 96M; fi
	it_mount
	write_all
	# another process keeps a file open with data written but never closed
	exec 7<>"$MNT/held"
	cat "$IT_TMP/src5" >&7 || fail "write to the held file"
	if [ $level = 5 ]; then
		t0=$(now_ns)
		kill -TERM "$DAEMON_PID"
		it_wait_daemon
		echo "SIGTERM shutdown took $((($(now_ns) - t0) / 1000000)) ms"
		is_mounted && fail "still mounted after SIGTERM"
		exec 7>&-
		how="SIGTERM"
	else
		exec 7>&- # umount(8) needs the file closed
		it_unmount
		how="umount"
	fi
	it_fsck
	it_mount
	it_expect_clean_start "after $how"
	check_all "$how"
	it_unmount
	it_fsck
	ok "RAID$level: $how wrote everything out and left the array clean"
done
