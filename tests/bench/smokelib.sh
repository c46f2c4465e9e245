# shellcheck shell=bash
# What the smoke tests of bench/'s scripts share (sourced): a missing tool fails the test saying
# so, failures are counted, a script's RESULT line is read key by key, and what a script leaves
# behind (loop devices over its scratch files, mounts, scratch folders, processes) is counted
# before and after it runs.

need() { echo "FAIL: $* (./setup.sh test installs and loads what this needs)" >&2; exit 1; }
need_root_fuse() { # TOOL...: root, /dev/fuse and each TOOL, else the test fails saying what is missing
	local t
	[ "$(id -u)" = 0 ] || need "needs root"
	for t in "$@"; do command -v "$t" >/dev/null || need "no $t"; done
	[ -c /dev/fuse ] || need "no /dev/fuse"
}
need_btrfs() { grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null || need "the kernel has no btrfs"; }

CLEAN=() # more files for the way out to remove
smoke_init() { # SCRIPT BUILD TOOL...: SCRIPT (bench/NAME.sh) and BUILD under test; root, /dev/fuse
	# and each TOOL; $out for the script's output, removed on exit with CLEAN
	# shellcheck disable=SC2034 # the smoke tests read SCRIPT and BUILD
	SCRIPT=$1 BUILD=$2
	shift 2
	need_root_fuse "$@"
	out=$(mktemp /tmp/bench-smoke.XXXXXX)
	trap 'rm -rf "$out" "${CLEAN[@]}"' EXIT
}

fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
finish() { # LINE: print it and PASS when nothing failed; exit with the number of failures
	if [ "$fails" = 0 ]; then
		echo "ok: $1"
		echo PASS
	fi
	exit "$fails"
}

last_result() { grep '^RESULT ' "$1" | tail -n1; } # FILE -> its last RESULT line
# result_get LINE KEY...: each KEY's value in the RESULT line LINE into got[KEY]; a key that is not
# there, or whose value is neither a number nor n/a, fails
declare -A got=()
result_get() {
	local line=$1 k
	shift
	[ -n "$line" ] || { fail "no RESULT line"; return; }
	for k in "$@"; do
		if [[ " $line " =~ \ $k=(-?[0-9]+(\.[0-9]+)?|n/a)\  ]]; then
			got[$k]=${BASH_REMATCH[1]}
		else
			fail "no $k=NUMBER in '$line'"
		fi
	done
}
positive() { # KEY...: got[KEY] is a number above 0 (a key result_get did not find failed there)
	local k
	for k in "$@"; do
		[ -n "${got[$k]+set}" ] || continue
		awk -v v="${got[$k]:-n/a}" 'BEGIN { exit !(v ~ /^[0-9.]+$/ && v > 0) }' ||
			fail "$k=${got[$k]:-} is not a number above 0"
	done
}

# Leftovers of a script whose scratch names hold PATTERN: loop devices over its files, mounts,
# entries in /dev/shm and /tmp, processes with PATTERN in their arguments.
leftovers() {
	echo "loops $(losetup -l -n -O BACK-FILE | grep -c -- "$1" || true)"
	echo "mounts $(findmnt -rn -o TARGET | grep -c -- "$1" || true)"
	echo "files $(find /dev/shm /tmp -maxdepth 1 -name "*$1*" | wc -l)"
	echo "processes $(pgrep -f -- "$1" | grep -cvx "$$" || true)"
}
LEFT_BEFORE=""
left_before() { LEFT_BEFORE=$(leftovers "$1"); }         # PATTERN: before the script runs
left_none() {                                             # PATTERN: after it: nothing more
	local now
	now=$(leftovers "$1")
	[ "$now" = "$LEFT_BEFORE" ] || fail "left behind (before: $(tr '\n' ' ' <<<"$LEFT_BEFORE"), after: $(tr '\n' ' ' <<<"$now"))"
}

kernel_knobs() { cat /sys/module/fuse/parameters/enable_uring /proc/sys/fs/fuse/max_pages_limit 2>/dev/null | tr '\n' ' '; }
