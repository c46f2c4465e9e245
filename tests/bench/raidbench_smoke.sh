#!/bin/bash
# framefs-raidbench end to end, small (members of 64 MiB, one timed run): it
# runs every phase and verifies what the degraded read returned (run 0), its
# RESULT line carries every figure as a positive number, the buffer it reports
# is the default's (64 requests of 2 stripes), and bad options exit non-zero
# with one line saying why.  Not a timing test: no figure is compared to a bar.
# Usage: raidbench_smoke.sh PATH-TO-framefs-raidbench
set -u
RB=$1
dir=$(mktemp -d /dev/shm/ffrb-smoke.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

# run WHAT ARGS...: exit 0, a RESULT line whose figures are all > 0
run() {
	local what=$1 line f; shift
	if ! "$RB" --dir "$dir/m" --size 64M --runs 1 "$@" >"$dir/out" 2>"$dir/err"; then
		fail "$what: exit $?"; cat "$dir/out" "$dir/err" >&2; return
	fi
	line=$(grep '^RESULT ' "$dir/out")
	for f in write_eff read_eff degraded_read_ratio raw_write_mbs raw_read_mbs raid_write_mbs \
		raid_read_mbs degraded_read_mbs; do
		if ! [[ " $line " =~ \ $f=([0-9]+(\.[0-9]+)?)\  ]] ||
			! awk -v v="${BASH_REMATCH[1]}" 'BEGIN { exit !(v > 0) }'; then
			fail "$what: no positive $f in '$line'"
			return
		fi
	done
	echo "ok: $what: $line"
}
run "RAID5 x 4" --level 5 --members 4
grep -q "RESULT level=5 members=4 " "$dir/out" || fail "RAID5 x 4: RESULT names another array"
# 3 data chunks of 512 KiB per stripe: 64 x 2 x 1.5 MiB
grep -q "every phase's buffer 192.00 MiB" "$dir/out" || fail "RAID5 x 4: not the default buffer"
run "RAID6 x 6, 64 KiB chunks" --level 6 --members 6 --chunk 64K
grep -q "RESULT level=6 members=6 " "$dir/out" || fail "RAID6 x 6: RESULT names another array"
run "RAID5 x 5 through io_uring" --level 5 --members 5 --ring-only --buffer 160M
grep -q "through io_uring (--ring-only)" "$dir/out" || fail "--ring-only: not said"

# expect_bad WHAT PATTERN ARGS...: exits non-zero, says PATTERN, no RESULT
expect_bad() {
	local what=$1 pat=$2; shift 2
	if "$RB" --dir "$dir/m" --size 64M --runs 1 "$@" >"$dir/out" 2>"$dir/err"; then
		fail "$what: exit 0"
	elif ! grep -q -- "$pat" "$dir/err" "$dir/out"; then
		fail "$what: no '$pat'"; cat "$dir/out" "$dir/err" >&2
	elif grep -q '^RESULT' "$dir/out"; then
		fail "$what: printed a RESULT"
	else
		echo "ok: $what"
	fi
}
expect_bad "a buffer smaller than the requests in flight" "--buffer must hold" --buffer 1M
expect_bad "a buffer of nothing" "--buffer" --buffer 0
expect_bad "a piece that is no power of two" "--piece" --piece 48K
expect_bad "two members" "usage" --members 2
[ "$fails" = 0 ] && echo PASS
exit "$fails"
