#!/bin/bash
# Proves: with -o default_permissions,allow_other, and with -o allow_other
# alone (the daemon adds default_permissions and says so), users other than
# root get EACCES/EPERM exactly where POSIX says (permissions.c has the
# cases); without allow_other nobody else gets in.  The users are throwaway
# uids entered with setpriv (no /etc/passwd entry needed).
#   permissions.sh PERMISSIONS_PROG
. "$(dirname "$0")/lib.sh"
PROG=$1
as_user() { # UID ARGS...
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env "$@"
}
implied="allow_other given without default_permissions: added default_permissions"

for opts in allow_other,default_permissions allow_other; do
	it_make_array 5 4 128M
	it_mount -o "$opts"
	if [ "$opts" = allow_other ]; then
		grep -q "$implied" "$DAEMON_LOG" || fail "-o allow_other: the daemon did not say it added default_permissions"
		grep " $MNT fuse.framefs " /proc/mounts | grep -q "default_permissions" ||
			fail "-o allow_other: the mount has no default_permissions: $(grep " $MNT " /proc/mounts)"
	fi
	"$PROG" "$MNT" setup || fail "-o $opts: setup as root"
	as_user 54321 "$PROG" "$MNT" user-a || fail "-o $opts: checks as uid 54321"
	as_user 54322 "$PROG" "$MNT" user-b || fail "-o $opts: checks as uid 54322"
	# without allow_other nobody but the mounting user gets in at all
	it_unmount
	it_fsck
	it_mount
	as_user 54321 stat "$MNT" >/dev/null 2>&1 && fail "without allow_other uid 54321 could stat the mount"
	"$PROG" "$MNT" verify || fail "-o $opts: verify as root after remount"
	it_unmount
	it_fsck
	ok "permissions for users other than root with -o $opts"
done
