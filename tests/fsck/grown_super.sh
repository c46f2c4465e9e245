#!/bin/bash
# Proves: fsck.framefs rebuilds the superblock of a volume grown since mkfs
# (fs/volume/check.c, grown_records) when every copy of it is lost, and
# refuses, changing nothing, when it cannot tell which grow's records are in
# use.  Damage injected: every superblock copy zeroed (ffsck-corrupt
# sb-zero-all).  For each case a RAID5 x 3 volume gets files through a real
# FUSE mount and is grown offline (framefs-admin grow) to the end, then:
#   once, 256 MiB members: the mount refuses and names fsck; fsck -n finds
#     the layout and the grow's records; fsck -y rebuilds (status 1);
#     fsck -n -c is clean; every file reads back (sha256) through a mount;
#   twice, 640 MiB members (each grow's checksum extension a different
#     length): the same;
#   RAID6 x 4 grown once, fsck and the mount given every member but one of
#     the members the metadata lives on (a degraded array): the same;
#   twice, 256 MiB members (both extensions one block: which is in use
#     cannot be told): fsck -y refuses (status 8) saying why, and nothing
#     of the filesystem changed (the members but for the array's own
#     superblocks in their first and last MiB).
. "$(dirname "$0")/../integration/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"
: "${CORRUPT:?CORRUPT must name the built ffsck-corrupt}"

# volume SIZE GROWS [LEVEL N]: RAID5 x 3 (RAID LEVEL x N) of SIZE members,
# files written, grown GROWS times by one member, every copy of its
# superblock zeroed
volume() {
	local size=$1 grows=$2 i all
	it_make_array "${3:-5}" "${4:-3}" "$size"
	it_mount
	for i in 1 2 3; do head -c $((9 << 20)) /dev/urandom >"$MNT/frame$i.dpx" || fail "write frame$i"; done
	head -c 70001 /dev/urandom >"$MNT/tail.bin" || fail "write tail.bin"
	head -c 3000 /dev/urandom >"$MNT/small.txt" || fail "write small.txt"
	(cd "$MNT" && sha256sum frame1.dpx frame2.dpx frame3.dpx tail.bin small.txt) >"$IT_TMP/sums"
	it_unmount
	for ((i = 0; i < grows; i++)); do
		all=$SPEC
		MEMBERS+=("/dev/shm/$(basename "$IT_TMP").m${#MEMBERS[@]}")
		truncate -s "$size" "${MEMBERS[-1]}"
		SPEC=$(IFS=,; echo "${MEMBERS[*]}")
		"$ADMIN" grow "$all" "${MEMBERS[-1]}" >"$IT_TMP/grow.out" 2>&1 ||
			{ cat "$IT_TMP/grow.out" >&2; fail "grow $((i + 1)) of $size members"; }
	done
	"$CORRUPT" sb-zero-all -- "${MEMBERS[@]}" || fail "cannot zero the superblock copies"
}

# fsck FLAGS WANT-STATUS: fsck.framefs FLAGS on the members, its status WANT
fsck_st() {
	local st=0
	"$FSCK" "$1" "${MEMBERS[@]}" >"$IT_TMP/fsck.out" 2>&1 || st=$?
	[ "$st" = "$2" ] || { cat "$IT_TMP/fsck.out" >&2; fail "$CASE: fsck $1: status $st, expected $2"; }
}

rebuilt() {
	CASE=$1
	"$FRAMEFS" "$SPEC" "$MNT" >"$IT_TMP/mount.out" 2>&1 && fail "$CASE: mounted with no superblock"
	grep -q "run fsck.framefs -y" "$IT_TMP/mount.out" || fail "$CASE: the refused mount does not name fsck"
	fsck_st -n 4
	grep -q "the records of the grow since mkfs" "$IT_TMP/fsck.out" ||
		{ cat "$IT_TMP/fsck.out" >&2; fail "$CASE: fsck -n does not find the grow's records"; }
	fsck_st -y 1
	it_fsck
	it_mount
	(cd "$MNT" && sha256sum --quiet -c "$IT_TMP/sums") || fail "$CASE: a file differs after the rebuild"
	it_unmount
	it_fsck
	ok "$CASE: superblock rebuilt with the grow's records, fsck -n -c clean, every file intact"
}

volume 256M 1
rebuilt "grown once"

volume 640M 2
rebuilt "grown twice, extensions of different lengths"

volume 256M 1 6 4
rm -f "${MEMBERS[1]}" # role 1 holds metadata copies: they are read from the others
MEMBERS=("${MEMBERS[0]}" "${MEMBERS[@]:2}")
SPEC=$(IFS=,; echo "${MEMBERS[*]}")
rebuilt "RAID6 grown once, a metadata member missing"

CASE="grown twice, extensions alike"
volume 256M 2
# what a refusal must leave: each member but its first and last MiB, where
# the array keeps its own superblocks and roster (raid/sb.h), which any
# read-write assembly updates
fs_sums() {
	local m
	for m in "${MEMBERS[@]}"; do
		tail -c +$((1024 * 1024 + 1)) "$m" | head -c $(($(stat -c %s "$m") - 2 * 1024 * 1024)) |
			sha256sum
	done
}
before=$(fs_sums)
fsck_st -y 8
grep -q "grown since mkfs, and its grows' records are too alike" "$IT_TMP/fsck.out" ||
	{ cat "$IT_TMP/fsck.out" >&2; fail "$CASE: fsck does not say why it refuses"; }
[ "$(fs_sums)" = "$before" ] || fail "$CASE: a refusing fsck changed the filesystem"
ok "$CASE: fsck -y refuses (status 8) and says why; the filesystem unchanged"
