#!/bin/bash
# One fsck corpus case:
#   run_case.sh NAME "CORRUPTION ARGS" "FSCK FLAGS"
# builds the corpus volume (4 x 64 MiB members in /dev/shm), damages it with
# ffsck-corrupt, then runs
#   fsck.framefs -n  : output must match expect/NAME.0; no member may change
#   fsck.framefs FLAGS twice : outputs must match expect/NAME.1 and NAME.2
# and, when the second run found the volume clean, mounts it and reads and
# writes through the library (ffsck-image verify).  Each expected file ends
# with the run's exit status.  UPDATE=1 rewrites the expected files instead.
# Needs FSCK, IMAGE, CORRUPT (binaries) and EXPECT (directory) in the environment.
set -u
name=$1 damage=$2 flags=$3
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

before=$(sha256sum "${members[@]}" | cut -d' ' -f1)
# shellcheck disable=SC2086
run 0 -n ${flags//-[yp]/}
after=$(sha256sum "${members[@]}" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "fsck.framefs -n changed a member"
# shellcheck disable=SC2086
run 1 $flags
# shellcheck disable=SC2086
run 2 $flags
if [ "$last_status" = 0 ]; then
	"$IMAGE" verify "${members[@]}" || fail "the repaired volume does not work"
fi
echo "PASS $name"
