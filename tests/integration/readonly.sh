#!/bin/bash
# Proves: a volume mounted -o ro refuses every change with EROFS, serves
# every read (readonly.c), and writes nothing at all to its members — not
# even the superblock or the array's clean/dirty state.
#   readonly.sh READONLY_PROG
. "$(dirname "$0")/lib.sh"
PROG=$1

it_make_array 5 4 128M
it_mount
"$PROG" "$MNT" run || fail "making the tree"
it_unmount
before=$(sha256sum "${MEMBERS[@]}" | awk '{print $1}')
it_mount -o ro
grep -q " $MNT fuse.framefs ro," /proc/mounts || fail "the kernel does not show the mount read-only"
"$PROG" "$MNT" verify || fail "read-only checks"
it_unmount
after=$(sha256sum "${MEMBERS[@]}" | awk '{print $1}')
[ "$before" = "$after" ] || fail "a read-only mount changed the members"
it_fsck
ok "read-only mount: EROFS for changes, reads work, members untouched"
