#!/bin/bash
# Every script in bench/ run as its README says, with FRAMEFS_BUILD pointing at the build under
# test, so that a program meson builds somewhere else, a renamed option or a script that no longer
# runs fails here and not for a user:
# 1. each script, and each example that runs framefs's programs, given a build folder without
#    them, stops at once with lib.sh's one message: "NAME: no PROGRAM in DIR (meson compile -C DIR)";
# 2. each bench/NAME.sh runs end to end at its smallest size through tests/bench/NAME_smoke.sh,
#    which checks that it ran to its end and what it printed (its figures, its RESULT line) and
#    that it left nothing behind; a script without a NAME_smoke.sh fails this test.
# Each script's time is printed. Not a timing test: no figure is compared to a bar.
# Usage: bench_smoke.sh SOURCE-DIR BUILD-DIR [NAME...]   (NAME: rebuild, frames, ...; default all)
#        bench_smoke.sh SOURCE-DIR BUILD-DIR --except NAME...   (every script but those)
set -u
SRC=$1
BUILD=$2
shift 2
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/bench/smokelib.sh
. "$HERE/smokelib.sh"
[ "$(id -u)" = 0 ] || need "needs root"

names=()
for s in "$SRC"/bench/*.sh; do
	n=$(basename "$s" .sh)
	[ "$n" = lib ] || names+=("$n")
done
[ "${#names[@]}" -gt 0 ] || need "no script in $SRC/bench"
if [ "${1:-}" = --except ]; then
	shift
	keep=()
	for n in "${names[@]}"; do
		[[ " $* " == *" $n "* ]] || keep+=("$n")
	done
	names=("${keep[@]}")
elif [ $# -gt 0 ]; then
	names=("$@")
fi
empty=$(mktemp -d /tmp/bench-smoke-nobuild.XXXXXX)
trap 'rm -rf "$empty"' EXIT

# 1. the one message when the build holds no framefs (nothing is run, made or mounted before it)
missing() { # NAME PATH ARGS...: PATH with FRAMEFS_BUILD=$empty exits non-zero, saying lib.sh's message
	local name=$1 p=$2 err rc
	shift 2
	err=$(FRAMEFS_BUILD=$empty timeout 60 "$p" "$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" = 0 ]; then
		fail "$name with FRAMEFS_BUILD=$empty: exit 0"
	elif ! grep -qx "$name: no [a-z.-]* in $empty (meson compile -C $empty)" <<<"$err"; then
		fail "$name with FRAMEFS_BUILD=$empty: not lib.sh's message but: $(tail -n2 <<<"$err" | tr '\n' ' ')"
	else
		echo "ok: $name without a build: $(tail -n1 <<<"$err")"
	fi
}
for n in "${names[@]}"; do missing "$n.sh" "$SRC/bench/$n.sh"; done
# (the examples at their smallest, should one run)
missing frametest-max-streams.sh "$SRC/examples/frametest-max-streams.sh" "$empty/ft" 2k 24 1 1
PRESETS=2k RATES=24 missing frametest-validate.sh "$SRC/examples/frametest-validate.sh" "$empty/ft" 1 1
missing frametest-vs-fio.sh "$SRC/examples/frametest-vs-fio.sh" "$empty/ft" 2 2 2k 1 1

# 2. every script end to end
times=()
for n in "${names[@]}"; do
	smoke=$HERE/${n}_smoke.sh
	if [ ! -f "$smoke" ]; then
		fail "bench/$n.sh has no smoke test (tests/bench/${n}_smoke.sh)"
		times+=("$n.sh: no smoke test")
		continue
	fi
	echo "== bench/$n.sh"
	t0=$(date +%s.%N)
	bash "$smoke" "$SRC/bench/$n.sh" "$BUILD"
	rc=$?
	t=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	[ "$rc" = 0 ] || fail "bench/$n.sh: $rc check(s) failed"
	times+=("$n.sh: $([ "$rc" = 0 ] && echo ok || echo FAIL), $t s")
done
echo "== each script's smoke:"
printf '   %s\n' "${times[@]}"
finish "${#names[@]} script(s)"
