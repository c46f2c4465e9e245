#!/bin/bash
# Proves: where a user used to be left stuck (no message, or one that did
# not say what to do), each
# program says in one line what happened and what to do, with the right exit
# status, and does what the line says:
#   --help of every program: exit 0, usage on stdout
#   mkfs: -c 0, a label with control characters, a directory as member are
#         refused; members of very different sizes get a warning with what is
#         left unused; the -N help is true of the volume it makes; a bad -S
#         (small-file threshold) is refused, -S 0 makes a volume whose status
#         says small files are off, a -S above the stripe width is capped to it
#   framefs: a regular file as mountpoint is refused before mounting; a
#         truncated member, or one without member superblocks, refuses the
#         mount saying that leaving it out mounts degraded — which it does,
#         and framefs-admin add then takes the member back
#   no "in use by another process, waiting" right after mkfs or after the
#         previous daemon exited (the member lock is let go explicitly)
#   fsck: a label with control characters prints escaped (as status does);
#         -p says one line about a pending journal; inodes carry their paths
#   the filesystem superblock (four copies, A to D): 4 KiB zeroed at the first
#         offset of the metadata area on every member of a RAID5 x 4 (where
#         copies A and B are) still mounts, the data intact; with every copy
#         gone the mount refuses in one line that names fsck.framefs -y and
#         the members, never mkfs; fsck -n says so (exit 4), -y rebuilds it
#         (exit 1), and the volume mounts with the data intact
# Needs FRAMEFS, MKFS, FSCK, ADMIN, FRAMETEST, IMAGE, CORRUPT (meson sets them).
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?}" "${FRAMETEST:?}" "${IMAGE:?}" "${CORRUPT:?}"
OUT=$IT_TMP/out
ERR=$IT_TMP/err

# check STATUS WHAT CMD...: run CMD (stdout to $OUT, stderr to $ERR), want STATUS
check() {
	local want=$1 what=$2 st=0
	shift 2
	"$@" >"$OUT" 2>"$ERR" </dev/null || st=$?
	if [ "$st" != "$want" ]; then
		cat "$OUT" "$ERR" >&2
		fail "$what: exit $st, want $want"
	fi
}
# has FILE TEXT WHAT: FILE has a line with TEXT (fixed string)
has() {
	grep -qF -- "$2" "$1" || { cat "$OUT" "$ERR" >&2; fail "$3: no line with: $2"; }
}
# one_line WHAT: the error is one line on stderr
one_line() {
	[ "$(wc -l <"$ERR")" = 1 ] || { cat "$ERR" >&2; fail "$1: not one line on stderr"; }
}
no_stderr() {
	[ ! -s "$ERR" ] || { cat "$ERR" >&2; fail "$1: something on stderr"; }
}

# --- --help ------------------------------------------------------------------
for prog in "$MKFS" "$FSCK" "$FRAMEFS" "$ADMIN" "$FRAMETEST"; do
	check 0 "$(basename "$prog") --help" "$prog" --help
	head -1 "$OUT" | grep -q '^usage: ' || fail "$(basename "$prog") --help: no usage on stdout"
	no_stderr "$(basename "$prog") --help"
done
ok "--help exits 0 with usage on stdout: mkfs.framefs, fsck.framefs, framefs, framefs-admin, framefs-frametest"

# --- mkfs ----------------------------------------------------------------------
it_make_array 5 4 128M
check 1 "mkfs -c 0" "$MKFS" -q -f -c 0 "${MEMBERS[@]}"
has "$ERR" "mkfs.framefs: bad chunk size '0': give a power of two from 16K to 1M (default 512K)" "mkfs -c 0"
one_line "mkfs -c 0"
ok "mkfs -c 0: $(cat "$ERR")"

check 1 "mkfs -L with a control character" "$MKFS" -q -f -L $'take\t1' "${MEMBERS[@]}"
has "$ERR" "mkfs.framefs: the label has a control character (0x09 at byte 5); give a label of printable characters" "mkfs -L"
one_line "mkfs -L"
ok "mkfs -L with a tab: $(cat "$ERR")"

mkdir "$IT_TMP/dir"
check 1 "mkfs with a directory as member" "$MKFS" -q -f "$IT_TMP/dir" "${MEMBERS[@]:1}"
has "$ERR" "mkfs.framefs: $IT_TMP/dir: is a directory, not a block device or a file; give the device or file that holds the member" "mkfs, directory member"
one_line "mkfs, directory member"
check 1 "framefs with a directory as member" "$FRAMEFS" -f "$IT_TMP/dir,${MEMBERS[1]},${MEMBERS[2]},${MEMBERS[3]}" "$MNT"
has "$ERR" "framefs: $IT_TMP/dir: is a directory, not a block device or a file" "framefs, directory member"
one_line "framefs, directory member"
ok "a directory as member: $(cat "$ERR")"

check 0 "mkfs on equal members" "$MKFS" -q -f "${MEMBERS[@]}"
no_stderr "mkfs on equal members"
truncate -s 512M "${MEMBERS[3]}"
check 0 "mkfs on a member 4x the others" "$MKFS" -q -f "${MEMBERS[@]}"
has "$ERR" "mkfs.framefs: warning: ${MEMBERS[3]}: 384.00 MiB of its 512.00 MiB left unused (every member is used only up to the smallest one's 128.00 MiB); use members of equal size" "mkfs, unequal members"
one_line "mkfs, unequal members"
ok "members of unequal size: $(cat "$ERR")"

# -N: the help's promise holds for the volume mkfs made
check 0 "mkfs --help" "$MKFS" --help
least=$(tr -s ' \n' ' ' <"$OUT" | sed -n 's/.*number of inodes (default: one per 256 KiB of capacity, at least \([0-9]*\),.*/\1/p')
[ -n "$least" ] || fail "mkfs --help does not say how many inodes a volume gets at least"
it_make_array 5 4 128M
check 0 "fsck -n of a fresh volume" "$FSCK" -n "${MEMBERS[@]}"
ninodes=$(sed -n 's|.*: [0-9]*/\([0-9]*\) inodes.*|\1|p' "$OUT")
[ -n "$ninodes" ] || fail "fsck printed no inode count"
[ "$((ninodes + 1))" -ge "$least" ] ||
	fail "a 4 x 128 MiB volume has $((ninodes + 1)) inodes, below the $least mkfs --help promises"
ok "4 x 128 MiB: $((ninodes + 1)) inodes, at least the $least mkfs --help promises"

# -S: the small-file threshold; bad values refused in one line, the summary
# and framefs-admin status say what the volume got
for bad in 200K 137K 64X -1; do
	check 1 "mkfs -S $bad" "$MKFS" -q -f -S "$bad" "${MEMBERS[@]}"
	has "$ERR" "mkfs.framefs: bad small-file threshold '$bad': give 0 (off) to 136K (default 64K)" "mkfs -S $bad"
	one_line "mkfs -S $bad"
done
ok "mkfs -S 200K, 137K, 64X, -1: $(cat "$ERR")"
check 0 "mkfs, default -S" "$MKFS" -f -K "${MEMBERS[@]}"
has "$OUT" "  small files  up to 64.00 KiB in the mirrored metadata pool" "mkfs, default -S"
check 0 "status, default -S" "$ADMIN" status "${MEMBERS[@]}"
has "$OUT" "  small files  up to 64.00 KiB in the mirrored pool; 0 stored" "status, default -S"
check 0 "mkfs -S 0" "$MKFS" -f -K -S 0 "${MEMBERS[@]}"
has "$OUT" "  small files  off (-S 0): every file takes stripes" "mkfs -S 0"
check 0 "status, -S 0" "$ADMIN" status "${MEMBERS[@]}"
has "$OUT" "  small files  off (mkfs -S 0)" "status, -S 0"
# a 48 KiB stripe (16 KiB chunks x 3) caps the threshold: a file no larger than a stripe
check 0 "mkfs -c 16K -S 136K" "$MKFS" -f -K -c 16K -S 136K "${MEMBERS[@]}"
has "$OUT" "  small files  up to 48.00 KiB in the mirrored metadata pool (capped to the stripe width)" "mkfs -S, capped"
check 0 "status, -S capped" "$ADMIN" status "${MEMBERS[@]}"
has "$OUT" "  small files  up to 48.00 KiB in the mirrored pool" "status, -S capped"
ok "mkfs -S 0: status says small files off (mkfs -S 0); -S 136K on a 48 KiB stripe: up to 48.00 KiB"

# --- the member lock is let go when a program ends -----------------------------
for i in 1 2 3; do
	it_make_array 5 4 128M
	it_mount
	grep -F "in use by another process" "$DAEMON_LOG" && fail "mount right after mkfs waited for the member lock ($i)"
	echo "frame $i" >"$MNT/f"
	it_unmount
	it_mount
	grep -F "in use by another process" "$DAEMON_LOG" && fail "mount after the previous daemon exited waited for the member lock ($i)"
	it_unmount
	it_fsck
done
ok "no wait for the member lock right after mkfs, or after the previous daemon exited (3 rounds)"

# --- the mountpoint --------------------------------------------------------------
touch "$IT_TMP/file"
check 2 "framefs on a regular file" "$FRAMEFS" -f "$SPEC" "$IT_TMP/file"
has "$ERR" "framefs: mountpoint $IT_TMP/file is not a directory; give a directory to mount on" "framefs on a file"
one_line "framefs on a file"
grep -qs " $IT_TMP/file " /proc/mounts && fail "framefs mounted on a regular file"
ok "a regular file as mountpoint: $(cat "$ERR")"

# --- members the array cannot use ----------------------------------------------
it_make_array 5 4 128M
truncate -s 100M "${MEMBERS[2]}"
check 1 "framefs with a truncated member" "$FRAMEFS" -f "$SPEC" "$MNT"
has "$ERR" "framefs: ${MEMBERS[2]}: member is smaller (104857600 bytes) than the array needs (134217728); leave it out to mount the array degraded (RAID5 survives 1 missing member), then add a replacement with framefs-admin add" "truncated member"
one_line "truncated member"
ok "a truncated member: $(cat "$ERR")"
full=$SPEC
SPEC="${MEMBERS[0]},${MEMBERS[1]},${MEMBERS[3]}"
it_mount
grep -q "assembled degraded" "$DAEMON_LOG" || fail "left out, the truncated member did not leave the array degraded"
it_unmount
SPEC=$full
ok "leaving the truncated member out mounts degraded"

it_make_array 5 4 128M
truncate -s 0 "${MEMBERS[1]}"
truncate -s 128M "${MEMBERS[1]}" # both member superblocks gone
check 1 "framefs with a member without superblocks" "$FRAMEFS" -f "$SPEC" "$MNT"
has "$ERR" "framefs: ${MEMBERS[1]}: not a framefs member (no member superblock); leave it out to mount the array degraded (RAID5 survives 1 missing member), then add it (or a replacement) back with framefs-admin add" "member without superblocks"
one_line "member without superblocks"
ok "a member without superblocks: $(cat "$ERR")"
check 8 "fsck with a member without superblocks" "$FSCK" -n "${MEMBERS[@]}"
has "$ERR" "fsck.framefs: ${MEMBERS[1]}: not a framefs member (no member superblock); leave it out" "fsck, member without superblocks"
one_line "fsck, member without superblocks"
SPEC="${MEMBERS[0]},${MEMBERS[2]},${MEMBERS[3]}"
it_mount
echo data >"$MNT/after" || fail "write to the degraded volume"
check 0 "framefs-admin add" "$ADMIN" add "$MNT" "${MEMBERS[1]}"
check 0 "framefs-admin rebuild" "$ADMIN" rebuild "$MNT"
it_unmount
SPEC=$full
it_fsck
ok "left out, it mounts degraded; framefs-admin add takes it back, and fsck finds all 4 clean"

# RAID6: two members cut short
it_make_array 6 6 128M
truncate -s 64M "${MEMBERS[1]}" "${MEMBERS[4]}"
check 1 "framefs with two truncated members" "$FRAMEFS" -f "$SPEC" "$MNT"
has "$ERR" "framefs: ${MEMBERS[1]}: member is smaller (67108864 bytes) than the array needs (134217728) (and 1 more member); leave them out to mount the array degraded (RAID6 survives 2 missing members), then add replacements with framefs-admin add" "two truncated members"
one_line "two truncated members"
truncate -s 64M "${MEMBERS[2]}"
check 1 "framefs with three truncated members" "$FRAMEFS" -f "$SPEC" "$MNT"
has "$ERR" "(and 2 more members); without them the array misses 3 of 6 members, more than RAID6 survives (2)" "three truncated members"
ok "RAID6, three members cut short: $(cat "$ERR")"

# --- fsck ---------------------------------------------------------------------------
it_make_array 5 4 64M
FFSCK_IMAGE_LABEL=$'co\e[2Jrp\aus' "$IMAGE" build "${MEMBERS[@]}" || fail "ffsck-image build"
check 0 "fsck -n, control characters in the label" "$FSCK" -n "${MEMBERS[@]}"
has "$OUT" 'co\x1b[2Jrp\x07us: 415/' "fsck, label"
grep -q $'\e' "$OUT" && fail "fsck printed the label's escape character raw"
check 0 "framefs-admin status, control characters in the label" "$ADMIN" status "${MEMBERS[@]}"
has "$OUT" 'label "co\x1b[2Jrp\x07us"' "status, label"
grep -q $'\e' "$OUT" && fail "status printed the label's escape character raw"
ok "a label with control characters prints escaped: $(grep -o 'label "[^"]*"' "$OUT")"

"$IMAGE" build "${MEMBERS[@]}" || fail "ffsck-image build"
"$CORRUPT" journal-pending /a/f2 -- "${MEMBERS[@]}" || fail "ffsck-corrupt journal-pending"
check 1 "fsck -p, journal pending" "$FSCK" -p "${MEMBERS[@]}"
has "$OUT" "corpus: The journal holds committed transactions that are not yet in place.  FIXED." "fsck -p, journal"
[ "$(grep -ci journal "$OUT")" = 1 ] || { cat "$OUT" >&2; fail "fsck -p: not one line about the journal"; }
no_stderr "fsck -p, journal pending"
ok "fsck -p, journal pending: one line"

"$IMAGE" build "${MEMBERS[@]}" || fail "ffsck-image build"
"$CORRUPT" nlink /b/c/f3 5 -- "${MEMBERS[@]}" || fail "ffsck-corrupt nlink"
"$CORRUPT" dangling /b/c ghost -- "${MEMBERS[@]}" || fail "ffsck-corrupt dangling"
check 4 "fsck -n, paths" "$FSCK" -n "${MEMBERS[@]}"
has "$OUT" "Entry 'ghost' in directory 4 '/b/c' names inode" "fsck, directory path"
has "$OUT" "Inode 9 '/b/c/f3' (regular file) has link count 5, should be 1.  Fix it? no" "fsck, file path"
ok "fsck names paths beside inode numbers"

# --- the filesystem superblock -------------------------------------------------------
it_make_array 5 4 128M
it_mount
mkdir "$MNT/A001" || fail "mkdir on the fresh volume"
head -c 3000000 /dev/urandom >"$MNT/A001/frame_0001.dpx" || fail "write a frame"
echo "take 1" >"$MNT/notes"
sums=$(cd "$MNT" && sha256sum A001/frame_0001.dpx notes)
it_unmount
# the metadata area starts 1 MiB into each member (FF_MEMBER_RESERVED, raid/raid.h)
for m in "${MEMBERS[@]}"; do
	dd if=/dev/zero of="$m" bs=4096 seek=256 count=1 conv=notrunc status=none || fail "dd $m"
done
check 4 "fsck -n, 4 KiB zeroed at the metadata area's start on every member" "$FSCK" -n "${MEMBERS[@]}"
has "$OUT" "Superblock copy A (block 0) is damaged" "fsck, copy A at the zeroed offset"
has "$OUT" "Superblock copy B (block 16) is damaged" "fsck, copy B at the zeroed offset"
it_mount
[ "$(cd "$MNT" && sha256sum A001/frame_0001.dpx notes)" = "$sums" ] || fail "data differ after the zeroed offset"
it_unmount
it_fsck # the mount's superblock writes put A and B back
ok "4 KiB zeroed at the same offset of every member (copies A and B): mounts, data intact, and the mount rewrites them"

"$CORRUPT" sb-zero-all -- "${MEMBERS[@]}" || fail "ffsck-corrupt sb-zero-all"
check 1 "framefs without a filesystem superblock" "$FRAMEFS" -f "$SPEC" "$MNT"
has "$ERR" "framefs: no valid framefs superblock on this array (all 4 copies are damaged); run fsck.framefs -y ${MEMBERS[*]} to rebuild it from the member superblocks and the metadata layout" "no superblock"
one_line "no superblock"
grep -qi mkfs "$ERR" && fail "the missing-superblock message mentions mkfs"
is_mounted && fail "mounted without a superblock"
ok "no superblock: $(cat "$ERR")"
check 4 "fsck -n without a filesystem superblock" "$FSCK" -n "${MEMBERS[@]}"
has "$OUT" "No valid superblock (copies A, B, C, D: no mirror copy passes its checksum); the member superblocks and the metadata on disk give its layout (mkfs's default: " "fsck -n, no superblock"
has "$OUT" "Rebuild the superblock? no" "fsck -n, no superblock"
check 1 "fsck -y without a filesystem superblock" "$FSCK" -y "${MEMBERS[@]}"
has "$OUT" "Rebuild the superblock? yes" "fsck -y, no superblock"
no_stderr "fsck -y, no superblock"
check 0 "fsck -n after the rebuild" "$FSCK" -n "${MEMBERS[@]}"
it_mount
[ "$(cd "$MNT" && sha256sum A001/frame_0001.dpx notes)" = "$sums" ] || fail "data differ after the superblock rebuild"
echo "take 2" >"$MNT/notes2" || fail "write after the superblock rebuild"
it_unmount
it_fsck
ok "every superblock copy gone: fsck -n exit 4, fsck -y rebuilds it (exit 1), the volume mounts with its data"
