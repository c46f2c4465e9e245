#!/bin/bash
# Write then read back, verifying every frame, on tmpfs and on ext4 over a
# loop device, in every layout: file per frame, one file (-s), subdirectories
# (-d) with a name pattern, reverse / random / looped / split / partial reads.
. "$(dirname "$0")/lib.sh"

roundtrip() { # DIR FSNAME
	local d=$1 fs=$2

	run_ft -w 1 -z 256 -n 20 -t 2 -u 0 "$d/seq"
	expect_rc 0 "$fs write"
	expect_err "direct I/O: on" "$fs write uses O_DIRECT"
	[ "$(find "$d/seq" -name 'frame0000*.tst' -size 262144c | wc -l)" = 20 ] ||
		fail "$fs: 20 frames of 262144 bytes expected"
	run_ft -r -n 20 -t 2 -u 0 "$d/seq"
	expect_rc 0 "$fs read"
	expect_last "^PASS: 1 stream\(s\) of 256KiB at .* fps: dropped 0, verified 20/20 frames$" "$fs read"
	for opt in -v -m "-l 2" "-i 4" "-c 30" "-t 3"; do
		# shellcheck disable=SC2086
		run_ft -r -n 20 -u 0 $opt "$d/seq"
		expect_rc 0 "$fs read $opt"
	done
	run_ft -r -n 20 -l 2 -u 0 "$d/seq"
	expect_last "verified 40/40 frames$" "$fs loop"
	run_ft -r -n 20 -c 30 -u 0 "$d/seq"
	expect_out "bytes read per frame \(-c\)" "$fs -c"
	ok "$fs: file per frame, every read order"

	run_ft -w 1 -z 256 -n 16 -t 3 -s -u 0 "$d/one"
	expect_rc 0 "$fs -s write"
	[ "$(stat -c %s "$d/one/stream.tst")" = $((16 * 262144)) ] || fail "$fs: stream.tst size"
	run_ft -r -s -n 16 -t 2 -u 0 "$d/one"
	expect_rc 0 "$fs -s read (size from the stamp)"
	expect_last "verified 16/16 frames$" "$fs -s read"
	ok "$fs: one file (-s)"

	run_ft -w 64 -n 12 -d 5 --name=shot.000100.dpx -u 0 "$d/sub"
	expect_rc 0 "$fs -d write"
	[ -f "$d/sub/d00000/shot.000100.dpx" ] && [ -f "$d/sub/d00002/shot.000111.dpx" ] ||
		fail "$fs: -d / --name layout"
	run_ft -r 64 -n 12 -d 5 --name=shot.000100.dpx -u 0 "$d/sub"
	expect_last "verified 12/12 frames$" "$fs -d read"
	ok "$fs: subdirectories and name pattern"

	run_ft -e -w -n 10 -u 0 "$d/empty"
	expect_rc 0 "$fs -e write"
	[ "$(find "$d/empty" -type f -size 0 | wc -l)" = 10 ] || fail "$fs: 10 empty files"
	run_ft -e -n 10 -u 0 "$d/empty"
	expect_last "^PASS: 1 stream\(s\) of empty at" "$fs -e read"
	ok "$fs: empty frames"
}

mount_tmpfs "$WORK/tmpfs" 1g
roundtrip "$WORK/tmpfs" tmpfs
mount_ext4_loop "$WORK/ext4" 256
roundtrip "$WORK/ext4" ext4

# The real preset sizes reach the disk.
run_ft -w hd -n 2 -u 0 "$WORK/tmpfs/hd"
[ "$(stat -c %s "$WORK/tmpfs/hd/frame000001.tst")" = 8359936 ] || fail "hd frame size"
run_ft -w 4k -n 2 -u 0 "$WORK/tmpfs/4k"
[ "$(stat -c %s "$WORK/tmpfs/4k/frame000000.tst")" = 51052544 ] || fail "4k frame size"
run_ft -r -n 2 -u 0 "$WORK/tmpfs/4k"
expect_last "^PASS: 1 stream\(s\) of 4k at .* verified 2/2 frames$" "4k read names the preset"
ok "preset sizes on disk"

# Where O_DIRECT cannot be used, say so and fall back.
run_ft -w 1 -n 4 -u 0 "$WORK/tmpfs/kib"
expect_rc 0 "1 KiB frames"
expect_err "not a multiple of the .*O_DIRECT alignment; falling back to buffered I/O" "fallback note"
run_ft -r -n 4 -u 0 "$WORK/tmpfs/kib"
expect_last "verified 4/4 frames$" "1 KiB frames read"
run_ft -r -n 20 --buffered -u 0 "$WORK/tmpfs/seq"
expect_err "direct I/O: off \(--buffered\)" "--buffered note"
expect_out "buffered I/O" "--buffered report"
ok "direct I/O fallback is reported"

# A filesystem that refuses O_DIRECT: the tool says so, falls back, and still verifies.
mount_slowfs --no-direct "$WORK/tmpfs/nodirect-back" 0 "$WORK/nodirect"
run_ft -w 1 -z 256 -n 8 -t 2 -u 0 "$WORK/nodirect/f"
expect_rc 0 "write where O_DIRECT is refused"
expect_err "does not support O_DIRECT; falling back to buffered I/O" "no-O_DIRECT note on write"
run_ft -r -n 8 -u 0 "$WORK/nodirect/f"
expect_err "does not support O_DIRECT; falling back to buffered I/O" "no-O_DIRECT note on read"
expect_last "verified 8/8 frames$" "read where O_DIRECT is refused"
ok "a directory without O_DIRECT: reported, buffered, verified"
