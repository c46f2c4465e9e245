#!/bin/bash
# One flipped byte in one frame must fail the read, naming the frame and the
# byte; a frame file copied over another must be named as misplaced.
. "$(dirname "$0")/lib.sh"

flip() { # FILE OFFSET: xor one byte with 0x5a
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\x$(printf %02x $((b ^ 0x5a)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

mount_tmpfs "$WORK/t" 256m
D="$WORK/t/seq"
run_ft -w 1 -z 1024 -n 8 -t 2 -u 0 "$D"
expect_rc 0 "write"
run_ft -r -n 8 -u 0 "$D"
expect_last "verified 8/8 frames$" "clean read"

flip "$D/frame000005.tst" 700000
run_ft -r -n 8 -t 2 -u 0 "$D"
expect_rc 1 "read after one flipped byte"
expect_last "^FAIL: 1 stream\(s\) of 1024KiB at .* fps: dropped 0, verified 7/8 frames$" "verdict"
expect_out "Verification failed: stream 0 frame 5: checksum mismatch in bytes 655360-720895, first wrong byte at 700000$" \
	"the report names frame and byte"
[ "$(grep -c "Verification failed" "$WORK/out")" = 1 ] || fail "exactly one frame is bad"
ok "one corrupted byte in one frame is caught and located"

# Only the middle 30% is read: a bad byte outside it is not seen, inside it is.
run_ft -r -n 8 -c 30 -u 0 "$D"
expect_rc 0 "-c 30 does not read byte 700000"
flip "$D/frame000006.tst" 525000
run_ft -r -n 8 -c 30 -u 0 "$D"
expect_rc 1 "-c 30 reads byte 525000"
expect_out "frame 6: checksum mismatch in bytes 524288-589823$" "-c names the chunk"
ok "-c checks the part it reads"

cp "$D/frame000002.tst" "$D/frame000003.tst"
run_ft -r -n 8 -u 0 --json="$WORK/r.json" "$D"
expect_rc 1 "misplaced frame"
expect_out "frame 3: header names frame 2 of stream 0 \(misplaced frame\)" "misplaced"
[ "$(json_get "$WORK/r.json" "j['frames']['verify_failed']")" = 3 ] || fail "json verify_failed"
ok "a frame in the wrong file is named"

# The same in a single stream file.
run_ft -w 1 -z 256 -n 10 -s -u 0 "$WORK/t/one"
flip "$WORK/t/one/stream.tst" $((4 * 262144 + 100000))
run_ft -r -s -n 10 -u 0 "$WORK/t/one"
expect_rc 1 "-s corrupt"
expect_out "stream 0 frame 4: checksum mismatch .* first wrong byte at 100000$" "-s names frame 4"
expect_last "verified 9/10 frames$" "-s verdict"
ok "-s: the corrupted frame is named"

# Files that were never stamped are not taken for good frames.
mkdir -p "$WORK/t/foreign"
for i in 0 1 2; do head -c 65536 /dev/zero >"$WORK/t/foreign/frame00000$i.tst"; done
run_ft -r -n 3 -u 0 "$WORK/t/foreign"
expect_rc 1 "unstamped files"
expect_out "no framefs-frametest header" "unstamped"
run_ft -r -n 3 --no-verify -u 0 "$WORK/t/foreign"
expect_rc 0 "--no-verify"
expect_last "verified 0/3 frames$" "--no-verify says nothing was checked"
ok "unstamped data fails unless --no-verify"
