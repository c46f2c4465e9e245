#!/bin/bash
# Proves: members in use by a mounted volume cannot be used by anyone else —
# a second daemon, fsck.framefs (even -n) and mkfs.framefs are refused with
# "in use", at once (well under the 5 s a busy lock is waited for when its
# holder is a daemon already unmounted), naming the daemon's pid and
# mountpoint; the mounted volume's data is intact afterwards.  A remount
# started the moment umount returns (while the old daemon may still be
# writing its checkpoint) waits for the old daemon, silently, and finds the
# array clean.
. "$(dirname "$0")/lib.sh"

REFUSE_MAX_MS=2000 # the lock is waited for up to 5000 ms when its holder is not live

# refused WHAT CMD...: CMD must fail within REFUSE_MAX_MS, saying "in use",
# the daemon's pid and its mountpoint
refused() {
	local what=$1 st=0 t0 ms
	shift
	t0=$(now_ns)
	"$@" >"$out" 2>&1 || st=$?
	ms=$((($(now_ns) - t0) / 1000000))
	[ "$st" != 0 ] || fail "$what ran on members in use"
	grep -q "in use by another process" "$out" || { cat "$out" >&2; fail "$what: no 'in use' error"; }
	grep -q "pid $DAEMON_PID" "$out" && grep -q "mounted on $MNT" "$out" ||
		{ cat "$out" >&2; fail "$what: the message names neither pid $DAEMON_PID nor $MNT"; }
	[ "$ms" -lt "$REFUSE_MAX_MS" ] || fail "$what: refused after $ms ms, not at once"
	ok "$what is refused in $ms ms (status $st): $(grep -m1 'in use by another process' "$out")"
}

it_make_array 5 4 128M
it_mount
head -c 7000001 /dev/urandom >"$IT_TMP/src"
cp "$IT_TMP/src" "$MNT/frame" || fail "write frame"
sync "$MNT/frame"

out=$IT_TMP/second.out
mkdir -p "$IT_TMP/mnt2"
refused "a second framefs on the same members" "$FRAMEFS" -f "$SPEC" "$IT_TMP/mnt2"
refused "fsck.framefs -n on the mounted volume" "$FSCK" -n "${MEMBERS[@]}"
refused "mkfs.framefs over the mounted volume" "$MKFS" -q -f -l 5 "${MEMBERS[@]}"

cmp "$IT_TMP/src" "$MNT/frame" || fail "the mounted volume's data changed"

# umount, then mount again at once, without waiting for the old daemon
old=$DAEMON_PID
umount "$MNT" || fail "umount"
it_mount
wait "$old" || fail "the old daemon exited with status $?"
it_expect_clean_start "remounted while the old daemon was finishing"

# The same with an old daemon that is surely still writing out when umount
# returns: every flush of member 0 takes 300 ms (fault injected: flush
# latency on one member), and its unmount flushes several times.  The new
# daemon waits for it without a word (the wait ends by itself: there is
# nothing for the user to act on, so nothing to say).
it_unmount
echo more >"$IT_TMP/more"
FRAMEFS_FAULT="$(basename "${MEMBERS[0]}")@op=f,lat_us=300000" it_mount
cp "$IT_TMP/more" "$MNT/more" || fail "write more"
old=$DAEMON_PID
umount "$MNT" || fail "umount"
t0=$(now_ns)
it_mount
wait "$old" || fail "the slow old daemon exited with status $?"
ms=$((($(now_ns) - t0) / 1000000))
[ "$ms" -ge 300 ] || fail "the remount took $ms ms: the old daemon was not still writing out"
it_expect_clean_start "remounted while the slow old daemon was finishing"
! grep -q "in use by another process" "$DAEMON_LOG" ||
	fail "the remount logged its wait for the exiting daemon: $(grep -m1 'in use' "$DAEMON_LOG")"
cmp "$IT_TMP/more" "$MNT/more" || fail "more differs after the quick remount"
ok "a remount waited $ms ms for a daemon still writing out, silently"
cmp "$IT_TMP/src" "$MNT/frame" || fail "frame differs after the quick remount"
it_unmount
it_fsck
ok "an immediate remount waited for the old daemon and found the array clean"
