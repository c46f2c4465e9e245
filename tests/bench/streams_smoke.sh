#!/bin/bash
# bench/streams.sh end to end, tiny (members of 256 MiB, the 2k case with 1 thread a stream,
# 8 frames a stream at 24 fps, at most 2 streams, one run), btrfs RAID5 and framefs RAID5: it
# exits 0, its RESULT line carries every key of the case with a number, it cleans up (no loop
# device over its scratch files, no mount, no scratch directory in /dev/shm is left) and puts the
# kernel's FUSE settings back, and with OUT it keeps frametest's JSON of both rows and
# framefs-admin's status of the framefs row.
# Not a timing test: no figure is compared to a bar. A ratio to btrfs5 is n/a when btrfs5 held no
# stream, and a row's close p99 is n/a when it held none (a slow machine, not a broken script):
# both are accepted then, and only then.
# Without root, python3, losetup, btrfs or /dev/fuse it fails, saying what is missing.
# Usage: streams_smoke.sh PATH-TO-bench/streams.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" python3 losetup mkfs.btrfs fusermount3
need_btrfs
keep=$(mktemp -d /tmp/streams-smoke-out.XXXXXX)
CLEAN+=("$keep")

knobs_before=$(kernel_knobs)
left_before framefs-streams.
FRAMEFS_BUILD=$BUILD SIZE_MB=256 RUNS=1 FRAMES=8 LIMIT=2 CASES="2k:1" FPS=24 OUT=$keep \
	"$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "streams.sh exit $rc"; cat "$out" >&2; }
line=$(last_result "$out")
result_get "$line" streams_2k_ff5 streams_2k_btrfs5 streams_2k_vs_btrfs5 close_p99_2k_ff5 close_p99_2k_btrfs5 limit_2k
[ "${got[limit_2k]:-}" = 2 ] || fail "limit_2k is '${got[limit_2k]:-}', not LIMIT=2 (2 streams of 8 frames fit easily)"
for r in ff5 btrfs5; do
	s=${got[streams_2k_$r]:-}
	[ "$s" != n/a ] || { fail "streams_2k_$r=n/a: the $r row did not run"; continue; }
	if [ "${got[close_p99_2k_$r]:-}" = n/a ] && [ "$s" != 0 ]; then
		fail "close_p99_2k_$r=n/a although $r held $s stream(s)"
	fi
	case $s in 0 | 1 | 2) ;; *) fail "streams_2k_$r=$s is not 0..2 (LIMIT=2)" ;; esac
done
if [ "${got[streams_2k_vs_btrfs5]:-}" = n/a ] && [ "${got[streams_2k_btrfs5]:-0}" != 0 ] &&
	[ "${got[streams_2k_btrfs5]}" != n/a ] && [ "${got[streams_2k_ff5]:-n/a}" != n/a ]; then
	fail "streams_2k_vs_btrfs5=n/a although btrfs5 held ${got[streams_2k_btrfs5]:-} stream(s)"
fi
# OUT keeps every measurement's frametest JSON and, for framefs, the daemon's status
for f in btrfs5.2k.run1.json ff5.2k.run1.json ff5.2k.run1.status.json; do
	p=$(find "$keep" -name "$f" | head -n1)
	if [ -z "$p" ]; then
		fail "OUT holds no $f"
	elif ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$p" 2>/dev/null; then
		fail "$p is not JSON"
	fi
done
grep -q 'framefs-admin status: /' "$out" || fail "no framefs-admin status path printed"
left_none framefs-streams.
[ "$(kernel_knobs)" = "$knobs_before" ] || fail "the kernel's FUSE settings were '$knobs_before', now '$(kernel_knobs)'"
finish "$line"
