#!/bin/bash
# bench/raid.sh end to end, small (RAID5 x 4 of 64 MiB members, one raidbench run, one repeat,
# on tmpfs files and on loop devices): it exits 0, runs framefs-raidbench from the build under
# test, prints each backing's run and its summary RESULT line with the worst ratios as numbers
# above 0, and cleans up (no loop device or scratch folder of its own left). framefs-raidbench
# itself is raidbench-smoke's.
# Not a timing test: no figure is compared to a bar.
# Usage: raid_smoke.sh PATH-TO-bench/raid.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" losetup

left_before framefs-raid.
FRAMEFS_BUILD=$BUILD SIZE_MB=64 RUNS=1 REPEATS=1 CONFIGS=5x4 BACKINGS="files loop" "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "raid.sh exit $rc"; cat "$out" >&2; }
grep -q "^raid.sh: .*, $BUILD/.*framefs-raidbench, " "$out" ||
	fail "framefs-raidbench is not taken from $BUILD: $(head -n1 "$out")"
for b in files loop; do
	grep -q "^RESULT level=5 members=4 .* backing=$b$" "$out" || fail "no raidbench RESULT on $b"
	result_get "$(grep "^RESULT backing=$b " "$out")" min_write_eff min_read_eff min_degraded_read_ratio
	positive min_write_eff min_read_eff min_degraded_read_ratio
	grep -q "^RESULT backing=$b .* pass=\(yes\|no\)$" "$out" || fail "no pass=yes|no on $b"
done
left_none framefs-raid.
finish "$(grep '^RESULT backing=' "$out" | tr '\n' ' ')"
