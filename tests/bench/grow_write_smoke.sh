#!/bin/bash
# bench/grow_write.sh end to end, small (RAID5 of 4 RAM members grown by one, 2 files of 24 MiB,
# one run): it exits 0, prints each file's two writes, the daemon's line for each file moved
# ahead of its write, the check after (fsck clean, every sha256 as written), a RESULT line with
# every figure as a number above 0, and cleans up (no mount, daemon or scratch file of its own is
# left). Not a timing test: no figure is compared to a bar.
# Usage: grow_write_smoke.sh PATH-TO-bench/grow_write.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" python3 sha256sum

left_before ffgroww.
FRAMEFS_BUILD=$BUILD RUNS=1 NFILES=2 FILE_MB=24 "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "grow_write.sh exit $rc"; cat "$out" >&2; }
for l in 'run 1: f00001 [0-9.]* [0-9.]* 25165824' 'run 1: f00000 [0-9.]* [0-9.]* 25165824' \
	'run 1: daemon: inode [0-9]* moved to the new width ahead of a change to it (24 MiB in [0-9.]* s)' \
	'run 1: 2 files moved ahead of their writes; fsck -n clean; every sha256 as written'; do
	grep -q "$l" "$out" || fail "no line '$l'"
done
[ "$(grep -c 'run 1: daemon: inode' "$out")" = 2 ] || fail "not 2 daemon lines of files moved"
result_get "$(last_result "$out")" old_write_s moved_write_s old_vs_moved move_mbs
positive old_write_s moved_write_s old_vs_moved move_mbs
left_none ffgroww.
finish "$(last_result "$out")"
