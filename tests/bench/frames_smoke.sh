#!/bin/bash
# bench/frames.sh end to end, small (6 members of 128 MiB, 2 frames with 2 threads, 100 creates,
# one run), its framefs rows only: RAID5 x 4 over /dev/fuse (ff5, with the degraded read) and over
# FUSE io_uring (ff5uring). It exits 0, takes framefs and mkfs.framefs from the build under test,
# prints both rows with their figures, each served over the transport it asked for (io_uring
# where the kernel has it) with framefs-admin's account under the table, and a RESULT line with
# every key (framefs's own ratios and peak RSS as numbers above 0); it puts the kernel's FUSE
# settings back and cleans up (no loop device, mount, daemon or scratch folder of its own left).
# Not a timing test: no figure is compared to a bar.
# Usage: frames_smoke.sh PATH-TO-bench/frames.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" fio losetup cc pkg-config fusermount3

knobs_before=$(kernel_knobs)
left_before framefs-frames
FRAMEFS_BUILD=$BUILD RUNS=1 SIZE_MB=128 FRAMES=2 THREADS=2 CREATES=100 ONLY="ff5 ff5uring" \
	FUSE318_SRC=/nonexistent "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "frames.sh exit $rc"; cat "$out" >&2; }
grep -q "^framefs: $BUILD/.*framefs, $BUILD/.*mkfs.framefs$" "$out" ||
	fail "framefs is not taken from $BUILD: $(grep '^framefs' "$out" | head -n1)"
ff='O_DIRECT w [0-9]* r [0-9]*'
grep -q "^framefs RAID5, 4 members (transport=dev) .*$ff  \[/dev/fuse\]  degraded (m0 out) r [0-9]*" "$out" ||
	fail "no ff5 row over /dev/fuse with its figures and the degraded read"
uring='\[io_uring\]'
[ -e /sys/module/fuse/parameters/enable_uring ] || uring='\[/dev/fuse\]'
grep -q "^framefs RAID5, 4 members (transport=io_uring) .*$ff  $uring" "$out" ||
	fail "no ff5uring row over $uring with its figures"
grep -q '^  ff5uring: libfuse .* requests over io_uring' "$out" || fail "no framefs-admin account of ff5uring"
result_get "$(last_result "$out")" write_vs_passthrough read_vs_passthrough buffered_write_vs_passthrough \
	buffered_read_vs_passthrough write_vs_null read_vs_null write_vs_btrfs5 read_vs_btrfs5 \
	raid6_write_vs_btrfs6 degraded_read_ratio create_vs_passthrough write_vs_uring_null \
	read_vs_uring_null write_vs_devfuse read_vs_devfuse buffered_read_vs_passthrough_hp peak_rss_mb
positive degraded_read_ratio write_vs_devfuse read_vs_devfuse peak_rss_mb
[ "$(kernel_knobs)" = "$knobs_before" ] || fail "the kernel's FUSE settings were '$knobs_before', now '$(kernel_knobs)'"
left_none framefs-frames
finish "$(last_result "$out")"
