#!/bin/bash
# Runs one C integration test program on a real mount:
#   run_c.sh PROG LEVEL NMEMBERS MEMBER_SIZE [MOUNT_OPTIONS [MKFS_OPTIONS]]
# mkfs, mount, "PROG MNT run", unmount (the daemon must write everything
# out and exit 0), fsck, mount again, "PROG MNT verify", unmount, fsck.
. "$(dirname "$0")/lib.sh"
[ $# -ge 4 ] || fail "usage: run_c.sh PROG LEVEL NMEMBERS MEMBER_SIZE [MOUNT_OPTIONS]"
PROG=$1 LEVEL=$2 NMEMB=$3 SIZE=$4 OPTS=${5:-} MKFS_OPTS=${6:-}
MOPT=()
[ -n "$OPTS" ] && MOPT=(-o "$OPTS")

# shellcheck disable=SC2086 # MKFS_OPTS is a list of words
it_make_array "$LEVEL" "$NMEMB" "$SIZE" $MKFS_OPTS
it_mount "${MOPT[@]}"
"$PROG" "$MNT" run || fail "$(basename "$PROG") run"
it_unmount
it_fsck
it_mount "${MOPT[@]}"
it_expect_clean_start "after a clean unmount"
"$PROG" "$MNT" verify || fail "$(basename "$PROG") verify (after remount)"
it_unmount
it_fsck
ok "$(basename "$PROG") on RAID$LEVEL x$NMEMB"
