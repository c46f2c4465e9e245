#!/bin/bash
# --streams: N streams in DIR/streamNN, each paced and judged on its own.
# --max-streams: against ft-slowfs serving one 10 ms request at a time (at
# most ~100 frames a second), streams of 20 fps must top out at about 5.
. "$(dirname "$0")/lib.sh"

mount_tmpfs "$WORK/t" 256m
run_ft -w 1 -z 128 -n 20 --streams 3 -t 2 -f 50 -u 0 "$WORK/t/m"
expect_rc 0 "3 streams write"
for s in 00 01 02; do
	[ "$(ls "$WORK/t/m/stream$s" | wc -l)" = 20 ] || fail "stream$s has not 20 frames"
done
run_ft -r -n 20 --streams 3 -f 50 -u 0 --json="$WORK/s.json" "$WORK/t/m"
expect_rc 0 "3 streams read"
expect_last "^PASS: 3 stream\(s\) of 128KiB at 50 fps: dropped 0, verified 60/60 frames$" "3 streams"
[ "$(json_get "$WORK/s.json" "len(j['streams'])")" = 3 ] || fail "json streams"
[ "$(json_get "$WORK/s.json" "all(s['pass'] and s['verified'] == 20 for s in j['streams'])")" = True ] ||
	fail "each stream verified on its own"
# A stream's frames read as another stream's are caught by the stream id.
cp "$WORK/t/m/stream00/frame000007.tst" "$WORK/t/m/stream01/frame000007.tst"
run_ft -r -n 20 --streams 3 -u 0 "$WORK/t/m"
expect_rc 1 "cross-stream frame"
expect_out "stream 1 frame 7: header names frame 7 of stream 0" "stream id checked"
expect_out "^ +1 +20 +0 +0 .* FAIL$" "stream 1 fails alone"
expect_out "^ +2 +20 +0 +0 .* PASS$" "stream 2 passes"
run_ft -r -n 20 --streams 4 -u 0 "$WORK/t/m"
expect_rc 2 "a fourth stream that was never written"
expect_err "stream03 does not exist: write 4 stream\(s\) first" "missing stream"
ok "--streams: each stream verified and judged on its own"

mount_slowfs "$WORK/t/back" 10 "$WORK/slow" -s
run_ft -w 1 -z 64 -n 20 -f 20 -q 3 -b 3 --max-streams=8 -u 0 --json="$WORK/m.json" "$WORK/slow/ms"
found=$(json_get "$WORK/m.json" "j['max_streams']['found']")
[ "$found" -ge 2 ] && [ "$found" -le 5 ] || fail "max streams $found, expected 2..5 (5 is the ceiling)"
expect_rc 0 "max streams"
expect_last "^PASS: $found stream\(s\) of 64KiB at 20 fps: dropped 0, verified 0/0 frames$" "verdict"
[ "$(json_get "$WORK/m.json" "all(t['pass'] and t['dropped'] == 0 for t in j['max_streams']['trials'][:$found])")" = True ] ||
	fail "every trial up to $found passes with no drop"
[ "$(json_get "$WORK/m.json" "j['max_streams']['trials'][$found]['pass']")" = False ] ||
	fail "the trial after $found fails"
expect_out "Max streams sustained with no dropped frame: $found" "report"
ok "--max-streams: $found streams of 20 fps in a ~100 frames/s directory"
