#!/bin/bash
# Proves: a 100,000-entry directory is indexed and exact (bigdir.c), and
# stays so across a remount.  IT_BIGDIR_N sets the entry count.
#   bigdir.sh BIGDIR_PROG
. "$(dirname "$0")/lib.sh"
PROG=$1
N=${IT_BIGDIR_N:-100000}

# more inodes than the default of a small array: 100,000 frames + 5,000
it_make_array 5 4 128M -N $((N + 20000))
it_mount
"$PROG" "$MNT" run "$N" || fail "bigdir run"
it_unmount
it_fsck
it_mount
"$PROG" "$MNT" verify "$N" || fail "bigdir verify"
it_unmount
it_fsck
ok "directory of $N entries"
