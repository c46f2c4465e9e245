#!/bin/bash
# bench/grow.sh end to end, small (RAID5 of 4 x 256 MiB files in /tmp grown by one, 3 files of
# 40 MiB, one run): it exits 0, prints each row's line (the raw copy, the rebuild, the grow) and
# the check after the grow (fsck clean, the new width, every file's sha256), a RESULT line with
# every figure as a number above 0, and cleans up (no mount, daemon or scratch file of its own is
# left). Not a timing test: no figure is compared to a bar or the goal.
# Usage: grow_smoke.sh PATH-TO-bench/grow.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" python3 dd sha256sum

left_before ffgrow.
FRAMEFS_BUILD=$BUILD RUNS=1 DATA_MB=120 MEMBERS_DIR=/tmp "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "grow.sh exit $rc"; cat "$out" >&2; }
for l in 'run 1: raw copy of [1-9][0-9]* bytes (4 dd at once) in [0-9.]* s' \
	'run 1: rebuild of [1-9][0-9]* member bytes on [45] members in [0-9.]* s' \
	'run 1: grow of 4 to 5 members, 125829120 bytes of files moved in [0-9.]* s' \
	'run 1: checked: fsck -n -c clean, 5 members, 3 files'"'"' sha256 as written' \
	'goal grow_vs_raw >= 0.5: \(met\|NOT met\)'; do
	grep -q "$l" "$out" || fail "no line '$l'"
done
result_get "$(last_result "$out")" grow_vs_raw grow_vs_rebuild grow_min_per_tb grow_mbs raw_mbs rebuild_mbs
positive grow_vs_raw grow_vs_rebuild grow_min_per_tb grow_mbs raw_mbs rebuild_mbs
left_none ffgrow.
finish "$(last_result "$out")"
