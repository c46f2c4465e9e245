#!/bin/bash
# fsck.framefs command line: usage errors exit 16, an interactive run
# without a terminal exits 8, members that are not a volume exit 8 with one
# line saying why; -h exits 0.  Needs FSCK in the environment.
set -u
dir=$(mktemp -d /dev/shm/ffsck-usage.XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
fails=0
expect() { # STATUS DESCRIPTION COMMAND...
	local want=$1 what=$2 got; shift 2
	"$@" </dev/null >"$dir/out" 2>"$dir/err"
	got=$?
	if [ "$got" != "$want" ]; then
		echo "FAIL: $what: exit $got, want $want" >&2
		cat "$dir/out" "$dir/err" >&2
		fails=$((fails + 1))
	else
		echo "ok: $what (exit $got)"
	fi
}
truncate -s 64M "$dir/m0" "$dir/m1" "$dir/m2" "$dir/m3"
expect 16 "no member" "$FSCK" -n
expect 16 "-n and -y together" "$FSCK" -n -y "$dir/m0"
expect 16 "an unknown option" "$FSCK" -Z "$dir/m0"
expect 0 "-h" "$FSCK" -h
expect 8 "interactive without a terminal" "$FSCK" "$dir/m0" "$dir/m1" "$dir/m2" "$dir/m3"
expect 8 "members that are not a volume" "$FSCK" -n "$dir/m0" "$dir/m1" "$dir/m2" "$dir/m3"
if [ "$(grep -c '^fsck.framefs: ' "$dir/err")" != 1 ]; then
	echo "FAIL: not one line saying why" >&2
	fails=$((fails + 1))
fi
expect 8 "a missing member file" "$FSCK" -n "$dir/nonexistent"
[ "$fails" = 0 ] && echo PASS
exit "$fails"
