#!/bin/bash
# Proves: members in use by a mounted volume cannot be used by anyone else —
# a second daemon, fsck.framefs (even -n) and mkfs.framefs are refused with
# "in use", and the mounted volume's data is intact afterwards.  A remount
# started the moment umount returns (while the old daemon may still be
# writing its checkpoint) waits for the old daemon and finds the array clean.
. "$(dirname "$0")/lib.sh"

it_make_array 5 4 128M
it_mount
head -c 7000001 /dev/urandom >"$IT_TMP/src"
cp "$IT_TMP/src" "$MNT/frame" || fail "write frame"
sync "$MNT/frame"

out=$IT_TMP/second.out
mkdir -p "$IT_TMP/mnt2"
st=0
"$FRAMEFS" -f "$SPEC" "$IT_TMP/mnt2" >"$out" 2>&1 || st=$?
[ "$st" != 0 ] || fail "a second framefs mounted members in use"
grep -q "in use by another process" "$out" || { cat "$out" >&2; fail "second daemon: no 'in use' error"; }
ok "a second daemon on the same members is refused: $(grep -m1 'in use by another process (' "$out")"

st=0
"$FSCK" -n "${MEMBERS[@]}" >"$out" 2>&1 || st=$?
[ "$st" != 0 ] || fail "fsck.framefs -n ran on a mounted volume"
grep -q "in use by another process" "$out" || { cat "$out" >&2; fail "fsck: no 'in use' error"; }
ok "fsck.framefs -n on the mounted volume is refused (status $st)"

st=0
"$MKFS" -q -f -l 5 "${MEMBERS[@]}" >"$out" 2>&1 || st=$?
[ "$st" != 0 ] || fail "mkfs.framefs formatted members of a mounted volume"
grep -q "in use by another process" "$out" || { cat "$out" >&2; fail "mkfs: no 'in use' error"; }
ok "mkfs.framefs over the mounted volume is refused (status $st)"

cmp "$IT_TMP/src" "$MNT/frame" || fail "the mounted volume's data changed"

# umount, then mount again at once, without waiting for the old daemon
old=$DAEMON_PID
umount "$MNT" || fail "umount"
it_mount
wait "$old" || fail "the old daemon exited with status $?"
it_expect_clean_start "remounted while the old daemon was finishing"
cmp "$IT_TMP/src" "$MNT/frame" || fail "frame differs after the quick remount"
it_unmount
it_fsck
ok "an immediate remount waited for the old daemon and found the array clean"
