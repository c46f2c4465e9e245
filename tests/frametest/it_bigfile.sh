#!/bin/bash
# -s with multi-GiB stream files: frames past 2 GiB and past 4 GiB (2^32) land
# where they belong and are read back verified.  4k x 88 frames is
# 4,492,623,872 bytes in one file; --vary=40M:60M frames end to end past 4 GiB,
# written and read in 1 MiB pieces.  A flipped byte just past 2^32 is named in
# the frame that straddles it.  The files go to a folder in /dev/shm (RAM,
# 4.5 GB at most: one file at a time), which every CI machine has, so the
# test needs no disk space; it fails (never skips) if /dev/shm is too small.
. "$(dirname "$0")/lib.sh"

flip() { # FILE OFFSET: xor one byte with 0x5a
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\x$(printf %02x $((b ^ 0x5a)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

D=$(mktemp -d /dev/shm/ft-big.XXXXXX)
trap 'rm -rf "$D"; cleanup' EXIT
free_kib=$(df -Pk "$D" | awk 'NR == 2 { print $4 }')
[ "$free_kib" -ge $((5 * 1024 * 1024)) ] ||
	fail "/dev/shm has $((free_kib / 1024)) MiB free; this test needs 5 GiB there"
FRAME=51052544		# the 4k preset
G4=4294967296

run_ft -w 4k -n 88 -s -t 2 -u 0 --json="$WORK/w.json" "$D/4k"
expect_rc 0 "4k x 88 -s write"
[ "$(stat -c %s "$D/4k/stream.tst")" = $((88 * FRAME)) ] || fail "stream.tst is not 88 x $FRAME bytes"
[ "$(json_get "$WORK/w.json" "j['bytes'], j['frames']['transferred']")" = "$((88 * FRAME)) 88" ] ||
	fail "JSON bytes of the 4k write"
run_ft -r -s -n 88 -t 2 -u 0 "$D/4k"
expect_rc 0 "4k x 88 -s read"
expect_last "^PASS: 1 stream\(s\) of 4k at .* dropped 0, verified 88/88 frames$" "4k x 88 -s read"
ok "4k x 88 frames in one $((88 * FRAME))-byte file: written, read, verified"

# Frame 84 straddles 2^32 (it starts at 84 x 51052544 = 4288413696); frame 86 lies past it.
flip "$D/4k/stream.tst" $((G4 + 100))
flip "$D/4k/stream.tst" $((86 * FRAME + 1000000))
run_ft -r -s -n 88 -t 2 --io-size=1M -u 0 "$D/4k"
expect_rc 1 "4k x 88 -s read after two flipped bytes"
expect_out "^Verification failed: stream 0 frame 84: checksum mismatch in bytes 6553600-6619135, first wrong byte at $((G4 + 100 - 84 * FRAME))$" \
	"the byte just past 4 GiB is named in frame 84"
expect_out "^Verification failed: stream 0 frame 86: checksum mismatch in bytes 983040-1048575, first wrong byte at 1000000$" \
	"the byte in frame 86 is named"
expect_last "^FAIL: 1 stream\(s\) of 4k at .* verified 86/88 frames$" "verdict"
ok "flipped bytes past 4 GiB are found in frames 84 and 86, in 1 MiB pieces"
rm -rf "$D/4k"

run_ft -w --vary=40M:60M,9 -n 90 -s -t 2 --io-size=1M -u 0 -x "$WORK/v.csv" --json="$WORK/v.json" "$D/vary"
expect_rc 0 "--vary -s write"
total=$(awk -F, 'NR > 1 { s += $NF } END { printf "%.0f", s }' "$WORK/v.csv")
[ "$total" -gt "$G4" ] || fail "--vary total $total is not past 4 GiB"
[ "$(stat -c %s "$D/vary/stream.tst")" = "$total" ] || fail "stream.tst is not the sum of the CSV's bytes"
python3 - "$WORK/v.json" "$total" <<'EOF' || fail "--vary write JSON"
import json, sys
j, total = json.load(open(sys.argv[1])), int(sys.argv[2])
b = j["bytes_per_frame"]
assert j["bytes"] == total and j["test"]["io_size"] == 1 << 20, (j["bytes"], j["test"])
assert 40 << 20 <= b["min"] < b["max"] <= 60 << 20, b
EOF
run_ft -r -s -n 90 -t 2 -u 0 --json="$WORK/vr.json" "$D/vary"
expect_rc 0 "--vary -s read"
expect_last "^PASS: 1 stream\(s\) of 40MiB-60MiB at .* verified 90/90 frames$" "--vary -s read"
[ "$(json_get "$WORK/vr.json" "j['bytes']")" = "$total" ] || fail "the read moved other bytes than the file holds"
last=$(awk -F, 'NR > 1 && $3 == 89 { print $NF }' "$WORK/v.csv")
flip "$D/vary/stream.tst" $((total - last + 12345))
run_ft -r -s -n 90 -t 2 -v -u 0 "$D/vary"
expect_rc 1 "--vary -s read of a corrupted last frame"
expect_out "^Verification failed: stream 0 frame 89: checksum mismatch in bytes 0-65535, first wrong byte at 12345$" \
	"the last frame's byte is named"
expect_last "verified 89/90 frames$" "--vary -s corrupted verdict"
ok "--vary=40M:60M x 90 in one $total-byte file: written in 1 MiB pieces, read whole, verified, corruption named"
