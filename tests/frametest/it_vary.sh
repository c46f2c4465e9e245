#!/bin/bash
# --vary: every frame its own size, a pure function of (seed, stream, frame).
# On tmpfs, on ext4 over a loop device and through ft-slowfs (FUSE): the frame
# files have the sizes the CSV and the JSON report, inside MIN..MAX in 4 KiB
# steps and many distinct; the same seed writes the same sizes, another seed
# others, another stream others; MB/s is the bytes on disk over the time; a
# read without a size verifies each frame at its own size, in every order,
# whole or in pieces; a corrupted, misplaced or cut frame fails.  -s puts the
# frames end to end, each stream with its own sizes.
. "$(dirname "$0")/lib.sh"

flip() { # FILE OFFSET: xor one byte with 0x5a
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	# shellcheck disable=SC2059
	printf "\\x$(printf %02x $((b ^ 0x5a)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

sizes() { # DIR: the frame files' sizes in frame order, one a line
	find "$1" -maxdepth 1 -name 'frame*.tst' -printf '%f %s\n' | sort | awk '{ print $2 }'
}

csv_bytes() { # CSV STREAM: bytes of each frame of the stream the CSV says moved, in frame order
	python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))
        if r["stream"] == sys.argv[2] and r["status"] in ("ok", "late")]
for r in sorted(rows, key=lambda r: int(r["frame"])):
    print(r["bytes"])' "$1" "$2"
}

sum() { awk '{ s += $1 } END { printf "%.0f\n", s }' "$@"; }

# The first sizes of 64K:1M,11 for stream 0, as test_sizes.c pins them.
PINNED="888832 876544 929792 770048 610304 860160"

vary_fs() { # DIR FSNAME
	local d=$1 fs=$2 n off s0

	run_ft -w --vary=64K:1M,11 -n 24 -t 2 -u 0 -x "$WORK/w.csv" --json="$WORK/w.json" "$d/v"
	expect_rc 0 "$fs: --vary write"
	expect_last "^PASS: 1 stream\(s\) of 64KiB-1MiB at .* dropped 0, verified 0/0 frames$" \
		"$fs: write verdict"
	sizes "$d/v" >"$WORK/sizes"
	[ "$(wc -l <"$WORK/sizes")" = 24 ] || fail "$fs: 24 frame files expected"
	awk '$1 < 65536 || $1 > 1048576 || $1 % 4096 { bad = 1 } END { exit bad }' "$WORK/sizes" ||
		fail "$fs: a size outside 64KiB..1MiB or not whole 4 KiB: $(tr '\n' ' ' <"$WORK/sizes")"
	n=$(sort -u "$WORK/sizes" | wc -l)
	[ "$n" -ge 16 ] || fail "$fs: only $n distinct sizes in 24 frames"
	[ "$(head -6 "$WORK/sizes" | tr '\n' ' ')" = "$PINNED " ] ||
		fail "$fs: the first sizes are not the pinned ones: $(head -6 "$WORK/sizes" | tr '\n' ' ')"
	csv_bytes "$WORK/w.csv" 0 | cmp -s - "$WORK/sizes" || fail "$fs: file sizes differ from the CSV"
	python3 - "$WORK/w.json" "$WORK/sizes" <<'EOF' || fail "$fs: write JSON"
import json, sys
j = json.load(open(sys.argv[1]))
s = [int(x) for x in open(sys.argv[2])]
assert j["test"]["vary"] == {"min_bytes": 65536, "max_bytes": 1048576, "seed": 11}, j["test"]
assert j["test"]["frame_bytes"] == 0 and j["test"]["preset"] == "64KiB-1MiB", j["test"]
b = j["bytes_per_frame"]
assert (b["min"], b["max"]) == (min(s), max(s)), (b, min(s), max(s))
assert abs(b["mean"] - sum(s) / len(s)) < 1, (b, sum(s) / len(s))
assert j["bytes"] == sum(s), (j["bytes"], sum(s))
mbs = sum(s) / j["duration_s"] / 1e6
assert abs(j["throughput"]["MB_s"] - mbs) <= 0.01 * mbs, (j["throughput"], mbs)
assert abs(j["streams"][0]["MB_s"] - mbs) <= 0.01 * mbs, (j["streams"][0], mbs)
EOF
	expect_out "^Frame size:         65536-1048576 bytes, each frame its own \(--vary 64KiB-1MiB, seed 11\)$" \
		"$fs: report frame size"
	expect_out "^Bytes per frame:    min $(sort -n "$WORK/sizes" | head -1), max $(sort -n "$WORK/sizes" | tail -1), mean [0-9]+ \(moved, over 24 frames\)$" \
		"$fs: report bytes per frame"
	ok "$fs: 24 frames of $n distinct sizes, as the CSV and JSON say; MB/s from the bytes"

	run_ft -w --vary=64K:1M,11 -n 24 -u 0 "$d/same"
	sizes "$d/same" | cmp -s - "$WORK/sizes" || fail "$fs: the same seed wrote other sizes"
	run_ft -w --vary=64K:1M,12 -n 24 -u 0 "$d/other"
	sizes "$d/other" | cmp -s - "$WORK/sizes" && fail "$fs: another seed wrote the same sizes"
	ok "$fs: the same seed writes the same sizes, another seed others"

	run_ft -r -n 24 -t 2 -u 0 --json="$WORK/r.json" "$d/v"
	expect_rc 0 "$fs: read without a size"
	expect_last "^PASS: 1 stream\(s\) of 64KiB-1MiB at .* dropped 0, verified 24/24 frames$" \
		"$fs: read verdict"
	[ "$(json_get "$WORK/r.json" "j['bytes'], j['test']['vary']['seed']")" = "$(sum "$WORK/sizes") 11" ] ||
		fail "$fs: the read moved other bytes than the files hold"
	for opt in -v -m "-l 2" "-c 30" "-i 3" "--io-size=64K" "-t 3" "--vary=64K:1M,11" --buffered; do
		# shellcheck disable=SC2086
		run_ft -r -n 24 -u 0 $opt "$d/v"
		expect_rc 0 "$fs: read $opt"
		expect_last "verified (24/24|48/48) frames$" "$fs: read $opt"
	done
	run_ft -r -n 24 -u 0 --vary=64K:1M,12 "$d/v"
	expect_rc 1 "$fs: read with the wrong seed"
	expect_out "header says version 2, [0-9]+-byte frames; expected [0-9]+" "$fs: wrong seed"
	ok "$fs: read at each frame's own size: every order, -c, -i, --io-size"

	mkdir -p "$d/bad"
	cp "$d"/v/frame*.tst "$d/bad/"
	s0=$(sed -n 6p "$WORK/sizes")
	flip "$d/bad/frame000005.tst" $((s0 - 100))
	run_ft -r -n 24 -t 2 -u 0 "$d/bad"
	expect_rc 1 "$fs: a corrupted varying frame"
	expect_out "^Verification failed: stream 0 frame 5: checksum mismatch in bytes [0-9]+-$((s0 - 1)), first wrong byte at $((s0 - 100))$" \
		"$fs: the corrupted frame and byte are named"
	expect_last "^FAIL: 1 stream\(s\) of 64KiB-1MiB at .* verified 23/24 frames$" "$fs: corrupt verdict"
	cp "$d/bad/frame000000.tst" "$d/bad/frame000001.tst"	# 888832 bytes where 876544 belong
	run_ft -r -n 24 -u 0 "$d/bad"
	expect_rc 1 "$fs: a misplaced frame"
	expect_out "frame 1: header says version 2, 888832-byte frames; expected 876544$" \
		"$fs: the misplaced frame's size is caught"
	truncate -s $((s0 - 4096)) "$d/bad/frame000005.tst"
	run_ft -r -n 24 -u 0 "$d/bad"
	expect_rc 1 "$fs: a frame cut short"
	expect_out "^I/O error: stream 0, frame 5 .*: read: file shorter than the frame size$" \
		"$fs: a cut frame is not read as a smaller one"
	ok "$fs: a corrupted, misplaced or cut frame fails, named"

	run_ft -w --vary=64K:1M,11 -n 10 --streams 2 -u 0 "$d/m"
	expect_rc 0 "$fs: --streams 2 write"
	sizes "$d/m/stream00" | cmp -s - <(head -10 "$WORK/sizes") ||
		fail "$fs: stream 0 of two does not have stream 0's sizes"
	sizes "$d/m/stream01" | cmp -s - <(head -10 "$WORK/sizes") &&
		fail "$fs: stream 1 has stream 0's sizes"
	run_ft -r -n 10 --streams 2 -t 2 -u 0 "$d/m"
	expect_last "^PASS: 2 stream\(s\) of 64KiB-1MiB at .* verified 20/20 frames$" "$fs: --streams read"
	ok "$fs: --streams: each stream its own sizes, each verified"

	run_ft -w --vary=64K:1M,11 -n 20 -s --streams 3 -t 2 -u 0 -x "$WORK/s.csv" "$d/s"
	expect_rc 0 "$fs: -s --streams 3 write"
	for s in 0 1 2; do
		csv_bytes "$WORK/s.csv" "$s" >"$WORK/s$s"
		[ "$(wc -l <"$WORK/s$s")" = 20 ] || fail "$fs: stream $s: 20 frames in the CSV"
		[ "$(stat -c %s "$d/s/stream0$s/stream.tst")" = "$(sum "$WORK/s$s")" ] ||
			fail "$fs: stream0$s/stream.tst is not the sum of its frames' sizes"
	done
	cmp -s "$WORK/s0" <(head -20 "$WORK/sizes") || fail "$fs: -s stream 0 sizes differ from the files'"
	cmp -s "$WORK/s0" "$WORK/s1" && fail "$fs: -s streams 0 and 1 have the same sizes"
	run_ft -r -s -n 20 --streams 3 -t 2 -u 0 "$d/s"
	expect_rc 0 "$fs: -s --streams 3 read"
	expect_last "^PASS: 3 stream\(s\) of 64KiB-1MiB at .* verified 60/60 frames$" "$fs: -s read"
	run_ft -r -s -n 20 --streams 3 -m --io-size=64K -u 0 "$d/s"
	expect_rc 0 "$fs: -s random order in 64 KiB pieces"
	# Byte 5000 of stream 1's frame 9 sits after frames 0..8 of stream 1's sizes.
	off=$(($(head -9 "$WORK/s1" | sum) + 5000))
	flip "$d/s/stream01/stream.tst" "$off"
	run_ft -r -s -n 20 --streams 3 -u 0 "$d/s"
	expect_rc 1 "$fs: -s corrupted"
	expect_out "^Verification failed: stream 1 frame 9: checksum mismatch in bytes 0-65535, first wrong byte at 5000$" \
		"$fs: -s names stream 1 frame 9"
	expect_out "^ +1 +20 +0 +0 .* FAIL$" "$fs: -s stream 1 fails"
	expect_out "^ +2 +20 +0 +0 .* PASS$" "$fs: -s stream 2 passes"
	ok "$fs: -s --streams 3: frames end to end, each stream its own sizes, corruption named"
}

mount_tmpfs "$WORK/tmpfs" 512m
vary_fs "$WORK/tmpfs" tmpfs
mount_ext4_loop "$WORK/ext4" 256
vary_fs "$WORK/ext4" ext4
mount_slowfs "$WORK/tmpfs/slow-back" 1 "$WORK/slow"
vary_fs "$WORK/slow" slowfs
