#!/bin/bash
# Proves: 100,000 files of 4 KiB fit on a RAID5 x 4 of 1 GiB members made
# with -N 200000, taking next to no stripes, and read back exactly after a
# remount; fsck finds the volume clean (small_files.c).  IT_SMALL_N sets
# the file count.
#   small_files.sh SMALL_FILES_PROG
. "$(dirname "$0")/lib.sh"
PROG=$1
N=${IT_SMALL_N:-100000}
STRIPE=$((3 * 512 * 1024)) # RAID5 x 4 at the default 512 KiB chunk

it_make_array 5 4 1G -N 200000
it_mount
t0=$(now_ns)
"$PROG" "$MNT" run "$N" "$STRIPE" || fail "small files run"
echo "created in $(( ($(now_ns) - t0) / 1000000 )) ms"
it_unmount
it_fsck
it_mount
"$PROG" "$MNT" verify "$N" "$STRIPE" || fail "small files verify"
it_unmount
it_fsck
ok "$N small files on RAID5 x 4 of 1 GiB members"
