#!/bin/bash
# bench/raid.sh: the RAID layer against its raw members, through framefs-raidbench.
#
# Runs framefs-raidbench (bench/raidbench.c) for RAID5 on 4 members, RAID5 on 8 and RAID6 on 6,
# each on tmpfs files (--dir) and on loop devices over tmpfs files (--use, losetup
# --direct-io=on), prints every run's output and RESULT line, then a summary table and a last
# RESULT line per backing with the worst configuration's (median) ratio of each kind — the
# tmpfs files' last: the bar is theirs (RAM-backed members).
# Bar: write_eff >= 0.95, read_eff >= 0.95, degraded_read_ratio >= 0.70.
#
#   write_eff           = RAID write / ((members - parity) / members x raw write of the members)
#   read_eff            = RAID read / raw read
#   degraded_read_ratio = RAID read with one member missing / healthy RAID read
#
# Knobs (environment):
#   SIZE_MB=1024     size of each member (at most 8 members in tmpfs at a time)
#   RUNS=3           framefs-raidbench --runs (each figure: median of RUNS after a warm-up run)
#   REPEATS=3        run every configuration this many times (order rotated): the verdict
#                    takes each ratio's median over them, and prints its min..max
#                    (one run's ratio moves +-8 % on this machine; REPEATS=1 for a quick look)
#   CONFIGS="5x4 5x8 6x6"  levels x members
#   BACKINGS="files loop"  tmpfs files (--dir) and/or loop devices over tmpfs files (--use)
#   RAIDBENCH_ARGS   more framefs-raidbench options (--chunk, --workers, --depth, --inflight)
#   FRAMEFS_BUILD    build dir holding framefs-raidbench (else it is taken from PATH)
# Needs root (loop devices) and util-linux.
set -euo pipefail

PROG=raid.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
indent() { sed "s/^/   /"; }
case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

SIZE_MB=${SIZE_MB:-1024}
RUNS=${RUNS:-3}
REPEATS=${REPEATS:-3}
CONFIGS=${CONFIGS:-5x4 5x8 6x6}
BACKINGS=${BACKINGS:-files loop}
RAIDBENCH_ARGS=${RAIDBENCH_ARGS:-}
for v in SIZE_MB RUNS REPEATS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number (got '${!v}')"
done
read -r -a configs <<<"$CONFIGS"
read -r -a backings <<<"$BACKINGS"
read -r -a extra <<<"$RAIDBENCH_ARGS"
maxm=0
for c in "${configs[@]}"; do
	[[ $c =~ ^([56])x([0-9]+)$ ]] || die "CONFIGS: '$c' is not LEVELxMEMBERS (5x4, 6x6, ...)"
	[ "${BASH_REMATCH[2]}" -gt "$maxm" ] && maxm=${BASH_REMATCH[2]}
done
for b in "${backings[@]}"; do
	case $b in files | loop) ;; *) die "BACKINGS: '$b' is neither files nor loop" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "must run as root (loop devices)"
command -v losetup >/dev/null || die "losetup not found (apt-get install util-linux)"

RB=$(need_bin framefs-raidbench)

if [[ " ${backings[*]} " == *" loop "* ]] && ! "$RB" --help 2>&1 | grep -q -- --use; then
	die "$RB has no --use (an older build); rebuild it or set FRAMEFS_BUILD"
fi

need=$((maxm * SIZE_MB + 256))
free=$(avail_mb /dev/shm)
[ "$free" -ge "$need" ] || die "/dev/shm has $free MiB free, needs $need (${maxm} members x ${SIZE_MB} MiB); lower SIZE_MB"

T=""
LOOPS=()
ERRF=/dev/null
cleanup() {
	stop_children # the framefs-raidbench run, if any
	detach_loops
	[ -n "$T" ] && rm -rf --one-file-system "$T"
}
on_exit cleanup
T=$(mktemp -d /dev/shm/framefs-raid.XXXXXX)
ERRF=$T/err

declare -A R=() # "cfg backing field" -> "v1 v2 ..."
add() { R[$1]="${R[$1]:-}$2 "; }

one() { # LEVEL MEMBERS BACKING: one framefs-raidbench run; records its RESULT
	local lvl=$1 n=$2 b=$3 i out res rc args=() devs=""
	args=(--level "$lvl" --members "$n" --size "${SIZE_MB}M" --runs "$RUNS" "${extra[@]}")
	if [ "$b" = files ]; then
		args+=(--dir "$T/files")
	else
		for i in $(seq 0 $((n - 1))); do
			truncate -s "${SIZE_MB}M" "$T/loop$i.img"
			attach_loops "$T/loop$i.img"
			# discards would punch the tmpfs files, but nothing here sends one (md's
			# create does not; raidbench writes): the device's discard setting is left
			# alone, since 0 written there stays until a reboot (bench/frames.sh)
			devs+="${devs:+,}${LOOPS[-1]}"
		done
		args+=(--use "$devs")
	fi
	echo "== RAID$lvl x $n on $([ "$b" = files ] && echo "tmpfs files" || echo "loop devices over tmpfs ($devs)")"
	echo "   $RB ${args[*]}"
	# in the background, so that a signal reaches our trap at once (it kills the run)
	("$RB" "${args[@]}" >"$T/out" 2>"$ERRF") &
	rc=0
	wait $! || rc=$?
	out=$(cat "$T/out")
	if [ "$rc" != 0 ]; then
		indent <<<"$out"
		die "framefs-raidbench failed (exit $rc): $(tail -n1 "$ERRF")"
	fi
	grep -v '^RESULT ' <<<"$out" | indent
	res=$(grep '^RESULT ' <<<"$out" | tail -n1)
	[ -n "$res" ] || die "framefs-raidbench printed no RESULT line"
	echo "$res backing=$b"
	for f in write_eff read_eff degraded_read_ratio; do
		v=$(sed -n "s/.* $f=\([0-9.]*\).*/\1/p" <<<"$res")
		[ -n "$v" ] || die "no $f in: $res"
		add "${lvl}x$n $b $f" "$v"
	done
	for f in "raw write" "raw read" "raid write" "raid read" "raid degraded read"; do
		v=$(awk -v k="$f" 'index($0, "  " k " ") == 1 { for (i = 1; i <= NF; i++) if ($i == "MB/s") { print $(i - 1); exit } }' <<<"$out")
		[ -n "$v" ] && add "${lvl}x$n $b $f" "$v"
	done
	detach_loops
	rm -f "$T"/loop*.img
	rm -rf --one-file-system "$T/files"
}

echo "raid.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $RB, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "members of ${SIZE_MB} MiB, raidbench --runs $RUNS${RAIDBENCH_ARGS:+ $RAIDBENCH_ARGS}, $REPEATS repeat(s)"
echo
jobs=()
for c in "${configs[@]}"; do
	for b in "${backings[@]}"; do jobs+=("$c $b"); done
done
T0=$(date +%s)
for rep in $(seq 1 "$REPEATS"); do
	[ "$REPEATS" -gt 1 ] && echo "#### repeat $rep/$REPEATS"
	for j in $(seq 0 $((${#jobs[@]} - 1))); do
		read -r c b <<<"${jobs[$(((j + rep - 1) % ${#jobs[@]}))]}"
		one "${c%x*}" "${c#*x}" "$b"
		echo
	done
done
echo "(done in $(($(date +%s) - T0)) s; load average $(cut -d' ' -f1-3 /proc/loadavg))"
echo

cell() { # KEY [DECIMALS] -> "median [min..max]" (min..max only with several values)
	local k=$1 d=${2:-0}
	[ -n "${R[$k]:-}" ] || { echo "-"; return; }
	# shellcheck disable=SC2086 # space-separated numbers
	printf '%s\n' ${R[$k]} | sort -g | awk -v d="$d" '{ v[NR] = $1 }
		END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		      if (NR > 1) printf "%.*f [%.*f..%.*f]\n", d, m, d, v[1], d, v[NR]; else printf "%.*f\n", d, m }'
}
worst() { # FIELD [BACKING] -> the smallest of the configurations' medians (over the repeats)
	local k all=""
	for k in "${!R[@]}"; do
		[[ $k == *" $1" ]] || continue
		[ -z "${2:-}" ] || [[ $k == *" $2 $1" ]] || continue
		# shellcheck disable=SC2086
		all+="$(printf '%s\n' ${R[$k]} | sort -g | awk '{ v[NR] = $1 }
			END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }') "
	done
	# shellcheck disable=SC2086
	printf '%s\n' $all | sort -g | head -n1
}
verdict() { # VALUE BAR
	awk -v v="$1" -v b="$2" 'BEGIN { print (v >= b) ? "ok" : "BELOW" }'
}

echo "MB/s are medians of raidbench's $RUNS runs$([ "$REPEATS" -gt 1 ] && echo ", then median [min..max] over $REPEATS repeats")"
W1=16 W2=18
[ "$REPEATS" -gt 1 ] && W1=22 W2=22
printf '%-6s %-6s %-*s %-*s %-*s %-*s %-*s %-*s %-*s %s\n' config on $W1 "raw write" $W1 "raw read" \
	$W1 "raid write" $W1 "raid read" $W1 "degraded read" $W2 "write_eff>=0.95" $W2 "read_eff>=0.95" "degraded>=0.70"
for c in "${configs[@]}"; do
	for b in "${backings[@]}"; do
		k="$c $b"
		printf '%-6s %-6s %-*s %-*s %-*s %-*s %-*s %-*s %-*s %s\n' "$c" "$b" $W1 "$(cell "$k raw write")" \
			$W1 "$(cell "$k raw read")" $W1 "$(cell "$k raid write")" $W1 "$(cell "$k raid read")" \
			$W1 "$(cell "$k raid degraded read")" $W2 "$(cell "$k write_eff" 3)" $W2 "$(cell "$k read_eff" 3)" \
			"$(cell "$k degraded_read_ratio" 3)"
	done
done
# one line per backing; the bar (above) is on RAM-backed members, the tmpfs files, so the
# last line is theirs when they ran: loop devices add a kernel thread's copy per member
echo
for b in loop files; do
	[[ " ${backings[*]} " == *" $b "* ]] || continue
	we=$(worst write_eff "$b")
	re=$(worst read_eff "$b")
	dr=$(worst degraded_read_ratio "$b")
	echo "worst on $b: write_eff $we ($(verdict "$we" 0.95)), read_eff $re ($(verdict "$re" 0.95)), degraded_read_ratio $dr ($(verdict "$dr" 0.70))"
	pass=yes
	[ "$(verdict "$we" 0.95)$(verdict "$re" 0.95)$(verdict "$dr" 0.70)" = okokok ] || pass=no
	echo "RESULT backing=$b min_write_eff=$we min_read_eff=$re min_degraded_read_ratio=$dr pass=$pass"
done
