#!/bin/bash
# bench/capacity.sh end to end, small: its mix and small phases (4 members of 128 MiB, the
# smallest btrfs takes; one fill each of btrfs RAID5 and framefs RAID5 with the facility mix,
# then 500 files of 4 KiB on framefs made with -N 500). It exits 0, prints both fills and the
# small files read back, and a RESULT line with every key (the bytes each stored and their
# ratios as numbers above 0), and cleans up (no loop device, mount, daemon or scratch folder of
# its own left). The write phase (frames.sh with two builds) is frames.sh's own smoke; the
# 100,000-file check is the integration suite's small-files-100k.
# Not a timing test: no figure is compared to a bar.
# Usage: capacity_smoke.sh PATH-TO-bench/capacity.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" python3 losetup mkfs.btrfs fusermount3
need_btrfs

left_before framefs-capacity
FRAMEFS_BUILD=$BUILD BENCH_CAP_MEMBER_MB=128 BENCH_CAP_RUNS=1 BENCH_CAP_SMALL_N=500 BENCH_CAP_CHECK=0 \
	BENCH_CAP_PHASES="mix small" "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "capacity.sh exit $rc"; cat "$out" >&2; }
for fs in btrfs framefs; do
	grep -q "^  $fs  *[1-9][0-9]* files,  *[1-9][0-9]* bytes" "$out" || fail "no $fs fill with its files and bytes"
done
grep -q -- '-N 500: 500 files of 4 KiB read back of 500 tried' "$out" || fail "no 500 small files read back"
result_get "$(last_result "$out")" capacity_vs_btrfs5 framefs_of_raw5 btrfs5_of_raw5 small_files_per_gib fits_100k_4k \
	frames_write_vs_before framefs_bytes btrfs_bytes
positive capacity_vs_btrfs5 framefs_of_raw5 btrfs5_of_raw5 small_files_per_gib framefs_bytes btrfs_bytes
left_none framefs-capacity
finish "$(last_result "$out")"
