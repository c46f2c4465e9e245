#!/bin/bash
# The command line as frametest users type it: help, --list, one-line errors,
# and attached forms that run exactly like separate ones.
. "$(dirname "$0")/lib.sh"

run_ft
expect_rc 0 "no arguments"
expect_out "^usage: framefs-frametest" "no arguments prints the help"
ok "no arguments prints the help"

run_ft --list
expect_rc 0 "--list"
expect_out "^4k +4096x3112 +51052544 +49856 +1225.3 +1276.3 +1531.6 +3063.2" "--list 4k"
expect_out "^2k +2048x1556 +12812288 " "--list 2k"
expect_out "^dpx-8k +7680x4320 +132718592 " "--list dpx-8k"
expect_out "^v210-uhd +3840x2160 +22118400 " "--list v210"
ok "--list shows exact bytes and MB/s"

mount_tmpfs "$WORK/t" 256m
for args in "-n abc $WORK/t" "-w bogus $WORK/t" "-f 0 $WORK/t" "-Q 1 $WORK/t" \
	"--max-streams -w 4k $WORK/t" "-w 4k" "$WORK/t $WORK/u" "-w 1 -c 50 $WORK/t" \
	"-r $WORK/missing" "-r -n 3 $WORK/t" "-t 0 -w 1 $WORK/t" "-x /nonexistent/x.csv -w 1 $WORK/t"; do
	# shellcheck disable=SC2086
	run_ft $args
	expect_rc 2 "'$args'"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$args': error is not one line"
	grep -q "^framefs-frametest: " "$WORK/err" || fail "'$args': error does not name the tool"
	[ -s "$WORK/out" ] && fail "'$args': printed a report"
done
ok "bad input: one line on stderr, exit 2"

run_ft -w1 -z64 -n3 -t2 -u0 "$WORK/t/a"
expect_rc 0 "attached form"
grep "^Test parameters" "$WORK/out" >"$WORK/params.attached"
run_ft -w 1 -z 64 -n 3 -t 2 -u 0 "$WORK/t/b"
expect_rc 0 "separate form"
grep "^Test parameters" "$WORK/out" >"$WORK/params.separate"
cmp -s "$WORK/params.attached" "$WORK/params.separate" || fail "attached and separate differ"
grep -q -- "-w64 -n3 -t2" "$WORK/params.attached" || fail "parameters not echoed"
[ "$(ls "$WORK/t/a" | wc -l)" = 3 ] && [ "$(ls "$WORK/t/b" | wc -l)" = 3 ] || fail "file counts"
run_ft -r64 -n3 -u0 "$WORK/t/a"
expect_rc 0 "-r64"
expect_last "^PASS: 1 stream\(s\) of 64KiB at .* fps: dropped 0, verified 3/3 frames$" "-r64"
run_ft -r 64 -n 3 -u 0 "$WORK/t/b"
expect_rc 0 "-r 64"
run_ft -r -n 3 -u 0 "$WORK/t/b"
expect_last "verified 3/3 frames$" "-r without size"
ok "attached and separate forms run alike"

# Ctrl-C stops the test but still reports, as a FAIL, with the frames never run.
"$FT" -w 1 -z 64 -n 400 -f 20 -u 0 "$WORK/t/int" >"$WORK/out" 2>"$WORK/err" &
pid=$!
sleep 1
kill -INT "$pid"
wait "$pid"
RC=$?
expect_rc 1 "interrupted run"
expect_out "^Interrupted: " "interrupted report"
expect_last "^FAIL: 1 stream\(s\) of 64KiB at 20 fps: dropped [0-9]+, verified 0/0 frames$" "interrupted verdict"
grep -Eq "not run [1-9][0-9]*$" "$WORK/out" || fail "frames not run are counted"
ok "SIGINT: the report still comes, as a FAIL"
