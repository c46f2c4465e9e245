#!/bin/bash
# bench/randwrite.sh end to end, small (members of 192 MiB, 2 files of 2 MiB, the 4 KiB fsync
# case, one run): it exits 0 and cleans up (no loop device, mount or scratch directory of its own is
# left), its RESULT line carries the bars' keys with numbers, framefs's 4 KiB fsync case writes
# more to its members than fio wrote (each overwrite is a patch: a row with its parity, and the
# commit's metadata on every copy), and the
# engine's member-bytes counter agrees with the loop devices under it (what the engine does not
# count, superblocks and bitmaps, is at most 1 MiB here), with btrfs RAID5 and ext4 beside it.
# Not a timing test: no figure is compared to a bar.  Without root, fio, python3, losetup,
# btrfs, ext4 or /dev/fuse it fails, saying what is missing (setup.sh installs them all).
# Usage: randwrite_smoke.sh PATH-TO-bench/randwrite.sh BUILD-DIR
set -u
# shellcheck source=tests/bench/smokelib.sh
. "$(dirname "$0")/smokelib.sh"
smoke_init "$@" fio python3 losetup mkfs.btrfs mkfs.ext4
need_btrfs
peers="ff5 btrfs5 ext4"

left_before framefs-randwrite
FRAMEFS_BUILD=$BUILD RUNS=1 SIZE=2M JOBS=2 SIZE_MB=192 RUNTIME=20 CASES=4k/fsync \
	PEERS="$peers" "$SCRIPT" >"$out" 2>&1
rc=$?
[ "$rc" = 0 ] || { fail "randwrite.sh exit $rc"; cat "$out" >&2; }
line=$(grep '^RESULT ' "$out")
for k in randwrite_4k_amplification randwrite_4k_vs_btrfs5 randwrite_64k_vs_btrfs5; do
	if [[ " $line " =~ \ $k=([0-9.]+|n/a)\  ]]; then
		v=${BASH_REMATCH[1]}
		if [ "$v" = n/a ] && [ "$k" != randwrite_64k_vs_btrfs5 ]; then
			fail "$k=n/a in '$line'"
		fi
	else
		fail "no $k in '$line'"
	fi
done
# the 64k case did not run: its figures are n/a
[[ " $line " =~ \ randwrite_64k_vs_btrfs5=n/a\  ]] || fail "randwrite_64k_vs_btrfs5 is not n/a in '$line'"
if [[ " $line " =~ \ randwrite_4k_amplification=([0-9.]+)\  ]]; then
	awk -v a="${BASH_REMATCH[1]}" 'BEGIN { exit !(a > 1) }' || fail "4k fsync amplification ${BASH_REMATCH[1]} is not above 1"
fi
# "loop devices xA written (+N B beside the engine)": 0 <= N <= 1 MiB on every framefs row
n=0
while read -r extra; do
	n=$((n + 1))
	if [ "$extra" -lt 0 ] || [ "$extra" -gt 1048576 ]; then
		fail "the loop devices saw $extra bytes the engine did not count"
	fi
done < <(sed -n 's/.*(+\(-\{0,1\}[0-9]*\) B beside the engine).*/\1/p' "$out")
[ "$n" = 1 ] || fail "expected 1 framefs row with the loop-device cross-check, found $n"
grep -q 'full stripes (' "$out" || fail "no framefs breakdown line"
left_none framefs-randwrite
finish "peers $peers: $line"
