#!/bin/bash
# One fsck corpus case:
#   run_case.sh NAME "CORRUPTION ARGS" "FSCK FLAGS" ["OPTIONS"]
# builds the corpus volume (4 x 64 MiB members in /dev/shm), damages it with
# ffsck-corrupt, then runs
#   fsck.framefs -n  : output must match expect/NAME.0; no member may change
#   fsck.framefs FLAGS twice : outputs must match expect/NAME.1 and NAME.2
# and, when the second run found the volume clean, mounts it and reads and
# writes through the library (ffsck-image verify).  Each expected file ends
# with the run's exit status.  UPDATE=1 rewrites the expected files instead.
# OPTIONS, space-separated:
#   inodes=N journal=N  build the volume with mkfs -N N / -J N
#   xvalue        /a/f2 gets a 64 KiB xattr (user.stream), held in value blocks
#   tails         a version 4 volume with packed tails: /t/t1, /t/t2, /t/t3 and
#                 /a/f1's last stripe (image.c says which rows of which stripe)
#   patches       a version 5 volume with the tails and /p/db, whose small
#                 overwrites are patches (image.c says which)
#   pending       patches, and a last round of them fsync'd without a commit
#                 by a mount that then ended as in a crash (a patch batch)
#   ro-refused    before fsck, a read-only mount must refuse the volume (a
#                 crash left the journal or patch batches to recover) and say
#                 what to do
#   mount-first   before fsck, the damaged volume must mount and hold the
#                 tree exactly as built (ffsck-image data)
#   data          after the repairs, before verify: the tree exactly as built
#   recheck       after verify (a mount and unmount): fsck.framefs -n is clean
#   copies-added  then, with copies A and B zeroed (sb-offset), fsck.framefs -n
#                 finds only those two damaged: the mount wrote copies C and D
# Needs FSCK, IMAGE, CORRUPT (binaries) and EXPECT (directory) in the environment.
set -u
name=$1 damage=$2 flags=$3 options=${4:-}
opt() { [[ " $options " == *" $1 "* ]]; }
for o in $options; do
	case $o in
	inodes=*) export FFSCK_IMAGE_INODES=${o#inodes=} ;;
	journal=*) export FFSCK_IMAGE_JOURNAL=${o#journal=} ;;
	xvalue) export FFSCK_IMAGE_XVALUE=1 ;;
	tails) export FFSCK_IMAGE_TAILS=1 ;;
	patches) export FFSCK_IMAGE_TAILS=1 FFSCK_IMAGE_PATCHES=1 ;;
	pending) export FFSCK_IMAGE_TAILS=1 FFSCK_IMAGE_PATCHES=1 FFSCK_IMAGE_PENDING=1 ;;
	esac
done
dir=$(mktemp -d /dev/shm/ffsck-case.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
members=()
for i in 0 1 2 3; do
	truncate -s 64M "$dir/m$i" || exit 1
	members+=("$dir/m$i")
done
fail() { echo "FAIL $name: $*" >&2; exit 1; }

"$IMAGE" build "${members[@]}" || fail "cannot build the volume"
# shellcheck disable=SC2086
"$CORRUPT" $damage -- "${members[@]}" || fail "cannot damage the volume ($damage)"

# run N ARGS...: fsck's standard output and exit status, compared with expect/NAME.N
run() {
	local n=$1 out status; shift
	out=$("$FSCK" "$@" "${members[@]}" 2>"$dir/stderr.$n"; echo "Exit status is $?")
	if [ "${UPDATE:-0}" = 1 ]; then
		printf '%s\n' "$out" >"$EXPECT/$name.$n"
	elif ! diff -u "$EXPECT/$name.$n" - <<<"$out" >"$dir/diff.$n"; then
		cat "$dir/diff.$n" >&2
		echo "--- stderr:" >&2
		cat "$dir/stderr.$n" >&2
		fail "run $n (fsck.framefs $*) differs from $name.$n"
	fi
	status=${out##*Exit status is }
	echo "$name: run $n (fsck.framefs $*): exit $status"
	last_status=$status
}

if opt ro-refused; then
	if "$IMAGE" data "${members[@]}" 2>"$dir/ro.err"; then
		fail "a read-only mount took a volume a crash left to recover"
	fi
	grep -q "mount read-write once" "$dir/ro.err" ||
		fail "the refused read-only mount did not say why: $(cat "$dir/ro.err")"
	echo "$name: a read-only mount refuses it, saying why"
fi
if opt mount-first; then
	"$IMAGE" data "${members[@]}" || fail "the damaged volume does not mount with its tree intact"
	echo "$name: the damaged volume mounts, the tree intact"
	# that read-only mount changed nothing: the runs below see the damage
fi

# A sparse copy of each member, compared byte for byte after the run: the
# members are mostly holes, and hashing their 256 MiB before and after took
# most of a case's time (about 2.5 of 3 s); the copy and cmp take 0.1-0.3 s.
mkdir "$dir/before" || exit 1
cp --sparse=always "${members[@]}" "$dir/before/" || fail "cannot copy the damaged members"
# shellcheck disable=SC2086
run 0 -n ${flags//-[yp]/}
for m in "${members[@]}"; do
	cmp -s "$dir/before/${m##*/}" "$m" || fail "fsck.framefs -n changed a member (${m##*/})"
done
rm -rf "$dir/before"
# shellcheck disable=SC2086
run 1 $flags
# shellcheck disable=SC2086
run 2 $flags
if [ "$last_status" = 0 ]; then
	if opt data; then
		"$IMAGE" data "${members[@]}" || fail "the repaired volume does not hold the tree as built"
		echo "$name: after the repairs the volume mounts, the tree exactly as built"
	fi
	"$IMAGE" verify "${members[@]}" || fail "the repaired volume does not work"
	if opt recheck; then
		"$FSCK" -n "${members[@]}" >"$dir/recheck" 2>&1 || {
			cat "$dir/recheck" >&2
			fail "fsck.framefs -n after a mount and unmount of the repaired volume: exit $?"
		}
		echo "$name: clean again after a mount and unmount"
	fi
	if opt copies-added; then
		"$CORRUPT" sb-offset -- "${members[@]}" || fail "cannot zero copies A and B"
		st=0
		"$FSCK" -n "${members[@]}" >"$dir/copies" 2>&1 || st=$?
		if [ "$st" != 4 ] || [ "$(grep -c '^Superblock copy [AB] (block [0-9]*) is damaged' "$dir/copies")" != 2 ] ||
			[ "$(grep -ci '^\(superblock\|no valid superblock\)' "$dir/copies")" != 2 ]; then
			cat "$dir/copies" >&2
			fail "with copies A and B zeroed after a mount: fsck -n exit $st, want 4 and A and B damaged only"
		fi
		echo "$name: the mount added copies C and D: with A and B zeroed, only they are damaged"
	fi
fi
echo "PASS $name"
