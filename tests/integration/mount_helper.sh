#!/bin/bash
# Proves: framefs works as a mount(8) type — "mount -t fuse.framefs" and an
# /etc/fstab line (mount.fuse3 from the fuse3 package starts the daemon) —
# with the usual FUSE options passed through (allow_other,
# default_permissions, ro) and fstab-only words (defaults, noauto, nofail)
# ignored; the daemon goes to the background only once mounted, so a bad
# member list makes mount(8) fail at once with the daemon's message and
# leaves no mount behind; unmounting writes everything out and marks the
# array clean.
#
# How mount.fuse3 finds the built daemon: it runs "framefs SOURCE MNT -o OPTS"
# through /bin/sh.  Where mount(8) keeps the caller's environment, the PATH
# this test puts first (a temporary directory holding a "framefs" symlink to
# the build) finds it; where mount(8) starts its helper with no PATH at all
# (seen here: setuid mount under a capability-limited root), /bin/sh looks in
# its default path, so a symlink /usr/local/sbin/framefs to the build stands
# there for the test, unless a framefs is installed there already, and is
# removed when the test ends.
. "$(dirname "$0")/lib.sh"

it_helper_on_path

# The daemon mount(8) started: found by its unique mountpoint argument.
helper_pid() {
	local p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "framefs .* $MNT\( \|$\)" && { basename "$p"; return 0; }
	done
	return 1
}

# umount(8), then wait for the background daemon to finish writing and exit.
helper_umount() {
	local pid i
	pid=$(helper_pid) || fail "no framefs process for $MNT"
	umount "$MNT" || fail "umount $MNT"
	for ((i = 0; i < 600; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	fail "framefs ($pid) still running 60 s after umount"
}
# if a check fails while mounted by the helper, take it down on exit
CLEANUPS+=('grep -qs " $MNT " /proc/mounts && { p=$(helper_pid) ; umount "$MNT" || umount -l "$MNT"; [ -n "$p" ] && kill "$p"; sleep 1; }')

it_make_array 5 4 128M

# 1. mount -t fuse.framefs with FUSE options
mount -t fuse.framefs -o allow_other,default_permissions "$SPEC" "$MNT" ||
	fail "mount -t fuse.framefs failed"
grep " $MNT " /proc/mounts | grep -q "fuse.framefs rw,.*default_permissions,allow_other" ||
	fail "options not in effect: $(grep " $MNT " /proc/mounts)"
head -c 3000000 /dev/urandom >"$IT_TMP/data"
cp "$IT_TMP/data" "$MNT/copied" || fail "write through the helper mount"
mkdir "$MNT/dir" && echo hello >"$MNT/dir/hello" || fail "mkdir/write"
# allow_other: another user can read the mount
setpriv --reuid=54321 --regid=54321 --clear-groups cat "$MNT/dir/hello" >/dev/null ||
	fail "allow_other: uid 54321 cannot read"
helper_umount
ok "mount -t fuse.framefs"

# the daemon marked the array clean: a foreground mount does not complain
it_mount
it_expect_clean_start "after umount of a mount(8) mount"
cmp "$IT_TMP/data" "$MNT/copied" || fail "data written through the helper mount differs"
it_unmount
it_fsck

# 2. an /etc/fstab line, mounted by its mountpoint
cp /etc/fstab "$IT_TMP/fstab.orig"
CLEANUPS+=('cp "$IT_TMP/fstab.orig" /etc/fstab')
echo "$SPEC $MNT fuse.framefs defaults,noauto,nofail,allow_other 0 0" >>/etc/fstab
mount "$MNT" || fail "mount $MNT from /etc/fstab"
grep " $MNT " /proc/mounts | grep -q "fuse.framefs rw,.*allow_other" ||
	fail "fstab mount options: $(grep " $MNT " /proc/mounts)"
cmp "$IT_TMP/data" "$MNT/copied" || fail "data after the fstab mount differs"
[ "$(cat "$MNT/dir/hello")" = hello ] || fail "small file after the fstab mount"
echo again >"$MNT/dir/again"
helper_umount
cp "$IT_TMP/fstab.orig" /etc/fstab
ok "/etc/fstab line"

# 3. read-only through mount(8)
mount -t fuse.framefs -o ro "$SPEC" "$MNT" || fail "mount -t fuse.framefs -o ro"
grep -q " $MNT fuse.framefs ro," /proc/mounts || fail "not read-only: $(grep " $MNT " /proc/mounts)"
[ "$(cat "$MNT/dir/again")" = again ] || fail "file written before the ro mount"
touch "$MNT/x" 2>/dev/null && fail "created a file on a read-only mount"
helper_umount
ok "mount -t fuse.framefs -o ro"

# 4. a wrong member list: mount(8) fails at once with the daemon's message, no mount left
rc=0
timeout 60 mount -t fuse.framefs "/dev/shm/does-not-exist-$$,${MEMBERS[1]}" "$MNT" 2>"$IT_TMP/err" || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "mount with a missing member: status $rc (124 = hung)"
grep -q "framefs:" "$IT_TMP/err" || fail "no message from framefs: $(cat "$IT_TMP/err")"
grep -qs " $MNT " /proc/mounts && fail "a failed mount left something mounted"
helper_pid >/dev/null && fail "a failed mount left a daemon running"
# the daemon started directly (backgrounding) reports the same way
rc=0
timeout 60 "$FRAMEFS" "/dev/shm/does-not-exist-$$" "$MNT" 2>"$IT_TMP/err" || rc=$?
[ "$rc" = 1 ] || fail "framefs with a missing member: status $rc, expected 1"
[ -s "$IT_TMP/err" ] || fail "framefs with a missing member said nothing"
ok "a failing mount reports and cleans up"

# 5. and the volume is still fine
it_mount
it_expect_clean_start "after the read-only and failed mounts"
cmp "$IT_TMP/data" "$MNT/copied" || fail "data at the end"
it_unmount
it_fsck
ok "mount(8), fstab and failure reporting"
