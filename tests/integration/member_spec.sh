#!/bin/bash
# Proves: a volume is found by identity, so one fstab line survives a
# member's path changing: "UUID=<array uuid>" and "LABEL=<label>" name it
# for framefs, fsck.framefs and framefs-admin (raid/scan.c reads every
# candidate's member superblock: the files matching -o members= /
# --members=, and every block device).  Mounting by UUID= and LABEL=
# (directly and through mount(8), where it is written uuid=: libmount
# resolves UUID= itself through blkid); fsck by UUID= and by the comma list
# fsck(8) passes; a member renamed is still found; two arrays with one label
# and no match at all each fail with a message that says why; a loop device
# is found by the block-device scan without members=.  The systemd mount
# unit in examples/ passes systemd-analyze verify where systemd-analyze
# exists (said so when not).
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"
EXAMPLES=$(cd "$(dirname "$0")/../../examples" && pwd)

D=$(mktemp -d /dev/shm/ffspec.XXXXXX)
LOOPS=()
CLEANUPS+=('for l in "${LOOPS[@]}"; do losetup -d "$l"; done; rm -rf "$D"')
LABEL=spec-$$

# mk_array DIR NMEMBERS LABEL: members DIR/m0.. (64 MiB), prints the array uuid
mk_array() {
	local dir=$1 n=$2 label=$3 i files=()
	mkdir -p "$dir"
	for ((i = 0; i < n; i++)); do
		truncate -s 64M "$dir/m$i" || fail "cannot create $dir/m$i"
		files+=("$dir/m$i")
	done
	"$MKFS" -f -l 5 -L "$label" "${files[@]}" >"$IT_TMP/mkfs.out" 2>&1 ||
		fail "mkfs.framefs: $(cat "$IT_TMP/mkfs.out")"
	awk '$1 == "uuid" { print $2 }' "$IT_TMP/mkfs.out"
}

# expect_fail WHAT PATTERN CMD...: CMD must fail and say PATTERN on stderr
expect_fail() {
	local what=$1 pat=$2 rc=0
	shift 2
	timeout 60 "$@" >"$IT_TMP/out" 2>"$IT_TMP/err" || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "$what: status $rc (124 = hung)"
	grep -q -- "$pat" "$IT_TMP/err" || fail "$what: no '$pat' in: $(cat "$IT_TMP/err")"
}

UA=$(mk_array "$D/a" 4 "$LABEL")
[ ${#UA} = 36 ] || fail "no uuid in the mkfs output: $(cat "$IT_TMP/mkfs.out")"

# 1. mount by UUID= with -o members=DIR/*, write a file
SPEC="UUID=$UA"
it_mount -o "members=$D/a/*"
head -c 2000000 /dev/urandom >"$IT_TMP/data"
cp "$IT_TMP/data" "$MNT/f" || fail "write on the UUID= mount"
it_unmount
ok "mount by UUID= with -o members="

# 2. by LABEL= (and the tag in lower case, as fstab needs it)
SPEC="label=$LABEL"
it_mount -o "members=$D/nothing-here/*:$D/a/*"
cmp "$IT_TMP/data" "$MNT/f" || fail "data on the LABEL= mount"
it_unmount
ok "mount by label= with two globs"

# 3. fsck by UUID= and by the comma list fsck(8) passes from fstab
"$FSCK" -n "UUID=$UA" --members="$D/a/*" >"$IT_TMP/out" 2>&1 ||
	fail "fsck.framefs UUID=: $(cat "$IT_TMP/out")"
"$FSCK" -n "$D/a/m0,$D/a/m1,$D/a/m2,$D/a/m3" >"$IT_TMP/out" 2>&1 ||
	fail "fsck.framefs with a comma list: $(cat "$IT_TMP/out")"
"$FSCK" -p -f "$D/a/m0,$D/a/m1,$D/a/m2,$D/a/m3" >"$IT_TMP/out" 2>&1 ||
	fail "fsck.framefs -p -f with a comma list (fsck -A): $(cat "$IT_TMP/out")"
ok "fsck.framefs by UUID= and by a comma list"

# 4. framefs-admin takes them too
"$ADMIN" status --members="$D/a/*" "LABEL=$LABEL" >"$IT_TMP/out" 2>&1 ||
	fail "framefs-admin status LABEL=: $(cat "$IT_TMP/out")"
grep -q "uuid $UA" "$IT_TMP/out" || fail "framefs-admin status LABEL=: $(cat "$IT_TMP/out")"
ok "framefs-admin status LABEL= --members="

# 5. a member renamed (as after a replacement or a new device name): still found, not degraded
mv "$D/a/m2" "$D/a/moved-member"
SPEC="UUID=$UA"
it_mount -o "members=$D/a/*"
grep -q "degraded" "$DAEMON_LOG" && fail "mounted degraded after a rename: $(cat "$DAEMON_LOG")"
cmp "$IT_TMP/data" "$MNT/f" || fail "data after the rename"
it_unmount
ok "a renamed member is found by UUID="

# 6. mount(8): libmount resolves upper-case UUID= through blkid; uuid= reaches the daemon
it_helper_on_path
if mount -t fuse.framefs -o "members=$D/a/*" "UUID=$UA" "$MNT" 2>"$IT_TMP/err"; then
	echo "note: this mount(8) passes UUID= to the helper"
	umount "$MNT"
else
	echo "note: mount(8) itself rejects UUID=: $(cat "$IT_TMP/err") (so fstab says uuid=)"
fi
sleep 0.5
mount -t fuse.framefs -o "nofail,x-systemd.device-timeout=30s,x-systemd.mount-timeout=300,members=$D/a/*" "uuid=$UA" "$MNT" ||
	fail "mount -t fuse.framefs uuid="
cmp "$IT_TMP/data" "$MNT/f" || fail "data through the mount(8) uuid= mount"
pid=$(pgrep -n -f "framefs uuid=$UA $MNT") || fail "no daemon for the mount(8) mount"
umount "$MNT" || fail "umount the mount(8) mount"
for ((i = 0; i < 600; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "the mount(8) daemon still runs after umount"
ok "mount -t fuse.framefs uuid= with nofail and x-systemd options"

# 7. two arrays with one label: an error naming both
UB=$(mk_array "$D/b" 3 "$LABEL")
SPEC=
expect_fail "LABEL= of two arrays" "names 2 arrays" \
	"$FRAMEFS" -f -o "members=$D/a/*:$D/b/*" "LABEL=$LABEL" "$MNT"
grep -q "$UA" "$IT_TMP/err" && grep -q "$UB" "$IT_TMP/err" ||
	fail "the error does not name both uuids: $(cat "$IT_TMP/err")"
expect_fail "fsck LABEL= of two arrays" "names 2 arrays" \
	"$FSCK" -n --members="$D/a/*:$D/b/*" "LABEL=$LABEL"
is_mounted && fail "an ambiguous label mounted something"
ok "two arrays with one label: $(head -c 200 "$IT_TMP/err")..."

# 8. no match: says what was scanned and how to add file members
expect_fail "UUID= of nothing" "no member found" \
	"$FRAMEFS" -f -o "members=$D/a/*" "UUID=00000000-0000-4000-8000-000000000000" "$MNT"
grep -q "block device" "$IT_TMP/err" && grep -q "members=" "$IT_TMP/err" ||
	fail "the no-match error does not say what was scanned: $(cat "$IT_TMP/err")"
expect_fail "fsck UUID= of nothing" "no member found" "$FSCK" -n "UUID=00000000-0000-4000-8000-000000000000"
ok "no match: $(cat "$IT_TMP/err")"

# 9. loop devices: found by the block-device scan, without members=
UC=$(mk_array "$D/c" 3 "loop-$LABEL")
for i in 0 1 2; do
	l=$(losetup -f --show "$D/c/m$i") || fail "losetup (loop devices needed)"
	LOOPS+=("$l")
done
SPEC="UUID=$UC"
it_mount
it_wait_ctl
"$ADMIN" status "$MNT" >"$IT_TMP/out" 2>&1 || fail "framefs-admin status: $(cat "$IT_TMP/out")"
grep -q "/dev/loop" "$IT_TMP/out" || fail "the members are not the loop devices: $(cat "$IT_TMP/out")"
echo hello >"$MNT/x" || fail "write on the loop mount"
it_unmount
# a file and its loop device found both: the member is passed once
"$FSCK" -n "UUID=$UC" --members="$D/c/*" >"$IT_TMP/out" 2>&1 ||
	fail "fsck UUID= with each member seen as a file and a loop device: $(cat "$IT_TMP/out")"
ok "loop devices found by the block-device scan (${LOOPS[*]})"

# 10. the systemd mount unit of examples/
U=$IT_TMP/unit
mkdir -p "$U"
cp "$EXAMPLES/mnt-media.mount" "$U/"
if command -v systemd-analyze >/dev/null; then
	# --man=no: its Documentation= pages need not be installed here; the
	# package step checks them installed (tests/package/deb.sh)
	systemd-analyze verify --man=no "$U/mnt-media.mount" >"$IT_TMP/out" 2>&1 ||
		fail "systemd-analyze verify examples/mnt-media.mount: $(cat "$IT_TMP/out")"
	ok "systemd-analyze verify examples/mnt-media.mount"
else
	echo "NOT VERIFIED: systemd-analyze is not installed here; examples/mnt-media.mount unchecked"
fi
grep -q "^What=uuid=" "$U/mnt-media.mount" && grep -q "^Type=fuse.framefs" "$U/mnt-media.mount" ||
	fail "examples/mnt-media.mount: What=uuid= and Type=fuse.framefs expected"
ok "member specs by identity"
