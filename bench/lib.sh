# shellcheck shell=bash
# What the benchmark scripts share (sourced after PROG is set): messages,
# mounts and the FUSE daemons behind them, the processes a script started.

die() { echo "$PROG: $*" >&2; exit 1; }
warn() { echo "$PROG: $*" >&2; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

mounted() { findmnt -rn --mountpoint "$1" >/dev/null 2>&1; }

kill_daemon() { # PID[:COMM] (COMM: framefs): TERM, then KILL, while that pid still is that
	# daemon (a KILLed FUSE daemon aborts its connection, which frees a hung mount and the
	# processes stuck on it); at most 5 s
	local p=${1%%:*} c=framefs i
	[[ $1 == *:* ]] && c=${1#*:}
	for i in $(seq 1 25); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$c" ] || return 0
		[ "$i" = 1 ] && kill "$p" 2>/dev/null
		[ "$i" = 10 ] && kill -9 "$p" 2>/dev/null
		sleep 0.2
	done
}

unmount() { # MOUNTPOINT [PID[:COMM]]: unmount; kills the FUSE daemon PID when it does not let
	# go, and unmounts lazily at last
	local m=$1 d=${2:-}
	mounted "$m" || return 0
	timeout 60 fusermount3 -u "$m" 2>/dev/null || timeout 60 umount "$m" 2>/dev/null || true
	mounted "$m" || return 0
	warn "$m does not unmount; killing its daemon"
	[ -n "$d" ] && kill_daemon "$d"
	timeout 10 fusermount3 -u -z "$m" 2>/dev/null || timeout 10 umount -l "$m" 2>/dev/null || true
	! mounted "$m"
}

descendants() { # PID -> every process below it
	ps -eo pid=,ppid= | awk -v root="$1" '{ up[$1] = $2 }
		END { for (p in up) { q = p; while ((q in up) && q != root && q > 1) q = up[q]; if (q == root && p != root) print p } }'
}
