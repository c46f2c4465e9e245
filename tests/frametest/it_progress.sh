#!/bin/bash
# The live progress line: plain lines when stderr is piped, one line rewritten
# in place (\r ... ESC[K) on a terminal.
. "$(dirname "$0")/lib.sh"

mount_tmpfs "$WORK/t" 256m
run_ft -w 1 -z 64 -n 36 -f 24 -u 0.25 "$WORK/t/p"
expect_rc 0 "paced write"
n=$(grep -cE "^ +[0-9.]+ s  frames [0-9]+/36 +[0-9.]+ fps +[0-9.]+ MB/s  dropped 0$" "$WORK/err")
[ "$n" -ge 4 ] || fail "piped: $n progress lines, expected at least 4"
grep -q $'\r' "$WORK/err" && fail "piped progress contains carriage returns"
ok "piped: $n plain progress lines"

script -qec "$FT -r -n 36 -f 24 -u 0.25 $WORK/t/p" /dev/null >"$WORK/tty" 2>&1
grep -q $'\r *[0-9.]* s  frames' "$WORK/tty" || fail "terminal: no line rewritten with \\r"
grep -q $'\e\[K' "$WORK/tty" || fail "terminal: no clear-to-end-of-line"
grep -q "^PASS: 1 stream(s) of 64KiB at 24 fps: dropped 0, verified 36/36 frames" <(tr -d '\r' <"$WORK/tty") ||
	fail "terminal: verdict"
ok "terminal: progress rewritten in place"

run_ft -w 1 -z 64 -n 36 -f 24 -u 0 "$WORK/t/q"
[ -s "$WORK/err" ] && grep -q "frames [0-9]*/36" "$WORK/err" && fail "-u 0 still prints progress"
ok "-u 0: no progress line"
