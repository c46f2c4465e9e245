#!/bin/bash
# bench/tail_writers.sh end to end, small (8 frames a round): it exits 0, prints a line for each
# of its rounds of 1, 2, 4 and 8 writers with the tails packed and those that found every slot
# busy, and a RESULT line with both counts of every round, the tails packed above 0; it cleans
# up (no mount, daemon or scratch folder of its own left).
# Not a timing test: no count is compared to a bar.
# Usage: tail_writers_smoke.sh PATH-TO-bench/tail_writers.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" python3 fusermount3

left_before framefs-tailw
FRAMEFS_BUILD=$BUILD FRAMES=8 "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "tail_writers.sh exit $rc"; cat "$out" >&2; }
keys=()
for s in 1 2 4 8; do
	grep -q "^$s writers: tails [0-9]*, busy [0-9]* (" "$out" || fail "no line for $s writers"
	keys+=("tails_$s" "tail_busy_$s")
done
result_get "$(last_result "$out")" "${keys[@]}"
positive tails_1 tails_2 tails_4 tails_8
left_none framefs-tailw
finish "$(last_result "$out")"
