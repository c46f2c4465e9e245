#!/bin/bash
# bench/rebuild.sh end to end, small (RAID5 of 4 x 256 MiB, 10 % full, 1 s streams, 4 loaded
# frames, one run): it exits 0, prints each phase's line (the healthy and degraded reads, the
# idle rebuild, the stream without and during a rebuild, the loaded pair) and a RESULT line with
# every figure (the rebuild's speed and the degraded read as numbers above 0), and cleans up
# (no mount, daemon or scratch file of its own is left).
# Not a timing test: no figure is compared to a bar.
# Usage: rebuild_smoke.sh PATH-TO-bench/rebuild.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" fio python3

left_before ffrebuild.
FRAMEFS_BUILD=$BUILD RUNS=1 SIZE_MB=256 FILL_PCT=10 STREAM_S=1 LOADED_FRAMES=4 "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "rebuild.sh exit $rc"; cat "$out" >&2; }
for l in 'run 1: [0-9]* 4K frames; read healthy [0-9.]* MB/s, degraded [0-9.]* MB/s' \
	'run 1: idle rebuild of [1-9][0-9]* bytes in [0-9.]* s' \
	'run 1: 4K 24 fps stream of [0-9]* frames, degraded, no rebuild: dropped [0-9]*' \
	'run 1: 4K 24 fps stream of [0-9]* frames during the rebuild: dropped [0-9]*' \
	'run 1: 2k 24 fps stream with a CPU hog on every core: dropped [0-9]* without a rebuild'; do
	grep -q "$l" "$out" || fail "no line '$l'"
done
result_get "$(last_result "$out")" rebuild_vs_raw rebuild_min_per_tb degraded_read_ratio frames_dropped_during_rebuild \
	loaded_drops_due_to_rebuild
positive rebuild_vs_raw rebuild_min_per_tb degraded_read_ratio
left_none ffrebuild.
finish "$(last_result "$out")"
