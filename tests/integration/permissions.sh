#!/bin/bash
# Proves: with -o default_permissions,allow_other, users other than root get
# EACCES/EPERM exactly where POSIX says (permissions.c has the cases); the
# users are throwaway uids entered with setpriv (no /etc/passwd entry needed).
#   permissions.sh PERMISSIONS_PROG
. "$(dirname "$0")/lib.sh"
PROG=$1
as_user() { # UID ARGS...
	local uid=$1
	shift
	setpriv --reuid="$uid" --regid="$uid" --clear-groups --reset-env "$@"
}

it_make_array 5 4 128M
it_mount -o default_permissions,allow_other
"$PROG" "$MNT" setup || fail "setup as root"
as_user 54321 "$PROG" "$MNT" user-a || fail "checks as uid 54321"
as_user 54322 "$PROG" "$MNT" user-b || fail "checks as uid 54322"
# without allow_other nobody but the mounting user gets in at all
it_unmount
it_fsck
it_mount
as_user 54321 stat "$MNT" >/dev/null 2>&1 && fail "without allow_other uid 54321 could stat the mount"
"$PROG" "$MNT" verify || fail "verify as root after remount"
it_unmount
it_fsck
ok "permissions for users other than root"
