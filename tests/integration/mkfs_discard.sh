#!/bin/bash
# Proves: mkfs.framefs deallocates the data area of its block-device
# members, and only that.  Three loop devices (the kernel turns their
# discard into holes in the backing file) and one plain file, all in
# /dev/shm and filled with 0xff first, so every block is allocated.
#   - mkfs -K: nothing deallocated, one line says so; allocation unchanged
#   - mkfs: each loop device's line says how many bytes it deallocated,
#     which is the data area (nstripes * chunk, from mkfs's geometry); its
#     backing file's allocation drops by that much and no more (the
#     superblocks, metadata and roster stay allocated); the file member's
#     line says a file is not punched and its allocation is unchanged
#   - the volume mounts, a file written reads back the same after a
#     remount, fsck -n -c is clean
. "$(dirname "$0")/lib.sh"

SIZE_MIB=64
D=$(mktemp -d /dev/shm/ffdiscard.XXXXXX)
LOOPS=()
CLEANUPS+=('for l in "${LOOPS[@]}"; do losetup -d "$l"; done; rm -rf "$D"')

vol_fsck() {
	"$FSCK" -n -c "${VOL[@]}" >"$IT_TMP/fsck.out" 2>&1 || { cat "$IT_TMP/fsck.out" >&2; fail "fsck.framefs -n -c found problems"; }
}

# allocated FILE: bytes the filesystem holds for it
allocated() { echo $(($(stat -c '%b * %B' "$1"))); }

for i in 0 1 2 3; do
	head -c "${SIZE_MIB}M" /dev/zero | tr '\0' '\377' >"$D/m$i" || fail "cannot fill $D/m$i"
done
for i in 0 1 2; do
	l=$(losetup -f --show "$D/m$i") || fail "losetup (loop devices needed)"
	LOOPS+=("$l")
done
# not lib.sh's MEMBERS: its cleanup removes those paths, and these are
# device nodes
VOL=("${LOOPS[@]}" "$D/m3")
SPEC=$(IFS=,; echo "${VOL[*]}")
full=$((SIZE_MIB * 1024 * 1024))
for i in 0 1 2 3; do
	[ "$(allocated "$D/m$i")" = "$full" ] || fail "$D/m$i: $(allocated "$D/m$i") bytes allocated, not $full"
done

# ---- -K: nothing deallocated ---------------------------------------------------
"$MKFS" -f -K -l 5 "${VOL[@]}" >"$IT_TMP/mkfs.out" 2>&1 || fail "mkfs -K: $(cat "$IT_TMP/mkfs.out")"
grep -qx "data area not deallocated (-K)" "$IT_TMP/mkfs.out" || fail "mkfs -K does not say so: $(cat "$IT_TMP/mkfs.out")"
grep -q "deallocated [0-9]" "$IT_TMP/mkfs.out" && fail "mkfs -K deallocated: $(cat "$IT_TMP/mkfs.out")"
for i in 0 1 2 3; do
	a=$(allocated "$D/m$i")
	[ "$a" = "$full" ] || fail "mkfs -K: $D/m$i has $a bytes allocated, not $full"
done
ok "mkfs -K: every backing file still has all $full bytes allocated"

# ---- the default: each loop device's data area deallocated ---------------------
"$MKFS" -f -l 5 "${VOL[@]}" >"$IT_TMP/mkfs.out" 2>&1 || fail "mkfs: $(cat "$IT_TMP/mkfs.out")"
cat "$IT_TMP/mkfs.out"
stripes=$(sed -n 's/^  usable size .* (\([0-9]*\) stripes).*/\1/p' "$IT_TMP/mkfs.out")
[ -n "$stripes" ] || fail "no stripe count in mkfs's output"
area=$((stripes * 512 * 1024)) # the default chunk
for i in 0 1 2; do
	l=${LOOPS[i]}
	line=$(grep "^$l: " "$IT_TMP/mkfs.out") || fail "no deallocate line for $l"
	said=$(echo "$line" | sed -n 's/.*: deallocated .*, the data area (\([0-9]*\) bytes)$/\1/p')
	[ "$said" = "$area" ] || fail "$l: '$line' (the data area is $area bytes)"
	a=$(allocated "$D/m$i")
	drop=$((full - a))
	echo "$l: backing file $full -> $a bytes allocated (dropped $drop, data area $area)"
	# the data area's pages go (all of them: a loop device's discard is a
	# hole punched in its file); nothing outside it does
	[ "$drop" -ge $((area - 1024 * 1024)) ] || fail "$l: allocation dropped only $drop bytes, data area $area"
	[ "$drop" -le "$area" ] || fail "$l: allocation dropped $drop bytes, more than the data area ($area)"
done
grep -qx "$D/m3: not deallocated: a file (its blocks stay allocated in the host filesystem)" \
	"$IT_TMP/mkfs.out" || fail "no 'a file' line for $D/m3"
[ "$(allocated "$D/m3")" = "$full" ] || fail "the file member lost blocks: $(allocated "$D/m3")"
ok "mkfs: each loop device's backing file dropped by the data area ($area bytes), the file member kept all"

# ---- the volume works ------------------------------------------------------------
it_mount
head -c 20M /dev/urandom >"$IT_TMP/data"
cp "$IT_TMP/data" "$MNT/data" || fail "write on the volume"
it_unmount
vol_fsck
it_mount
cmp "$IT_TMP/data" "$MNT/data" || fail "the file read back differs"
it_unmount
vol_fsck
ok "after a deallocating mkfs: mount, write, remount, read back the same, fsck -n -c clean"
