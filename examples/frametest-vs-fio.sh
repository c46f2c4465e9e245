#!/bin/bash
# framefs-frametest beside fio on the same workload, to show that its figures
# are the storage's and not the tool's: THREADS threads writing FRAMES new
# frame files of one preset, one O_DIRECT I/O per frame, then reading them
# LOOPS times over (-l / fio --loops), repeated REPS times.
#
#   examples/frametest-vs-fio.sh DIR [FRAMES] [THREADS] [PRESET] [REPS] [LOOPS]
#
# Defaults: 100 frames, 4 threads, 4k (51,052,544 bytes), 3 repetitions, 4
# read loops.  Prints MB/s (10^6 bytes) per run and min / median / max per
# column; "ft read" verifies every frame, "ft read -V" is the same read with
# --no-verify.  fio runs its jobs as processes (its default) and, in the
# "-thr" columns, as threads of one process (--thread), which is how
# framefs-frametest, frametest and media applications run: on some kernels
# the two differ (seen here: tmpfs moved about twice as much with processes).
# The tools never hold their frames at the same time.  framefs-frametest comes
# from FT, else the build dir FRAMEFS_BUILD, else PATH, else the source tree's
# build.
set -euo pipefail
PROG=frametest-vs-fio.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "$0")")/../bench/lib.sh"

[ $# -ge 1 ] && [ $# -le 6 ] || { usage >&2; exit 2; }
DIR=$1 FRAMES=${2:-100} THREADS=${3:-4} PRESET=${4:-4k} REPS=${5:-3} RLOOPS=${6:-4}
[ -n "${FT:-}" ] || FT=$(tree_bin framefs-frametest)
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 2; }
[ $((FRAMES % THREADS)) = 0 ] || { echo "FRAMES must be a multiple of THREADS" >&2; exit 2; }
BYTES=$("$FT" --list | awk -v p="$PRESET" '$1 == p && $3 ~ /^[0-9]+$/ && !n++ { print $3 }')
[ -n "$BYTES" ] || { echo "unknown preset $PRESET" >&2; exit 2; }
mkdir -p "$DIR"

ft_mbs() { # JSON file -> MB/s
	python3 -c 'import json,sys; print("%.0f" % json.load(open(sys.argv[1]))["throughput"]["MB_s"])' "$1"
}
fio_mbs() { # rw, JSON file -> MB/s
	python3 -c 'import json,sys; j=json.load(open(sys.argv[2])); print("%.0f" % (j["jobs"][0][sys.argv[1]]["bw_bytes"] / 1e6))' "$1" "$2"
}
fio_run() { # rw [fio options]
	local rw=$1
	shift
	fio "$@" --name=frames --directory="$DIR/fio" --rw="$rw" --bs="$BYTES" --filesize="$BYTES" \
		--nrfiles=$((FRAMES / THREADS)) --openfiles=1 --file_service_type=sequential \
		--fallocate=none --direct=1 --ioengine=psync \
		--numjobs="$THREADS" --group_reporting --output-format=json >"$DIR/fio.json"
	fio_mbs "$rw" "$DIR/fio.json"
}

declare -A col
names=("ft write" "fio write" "fio-thr w" "ft read" "ft read -V" "fio read" "fio-thr r")
printf '%-6s' run
printf ' %10s' "${names[@]}"
printf '\n'
ft_side() {
	"$FT" -w "$PRESET" -n "$FRAMES" -t "$THREADS" -u 0 --json="$DIR/ft.json" "$DIR/ft" >/dev/null 2>&1
	v1=$(ft_mbs "$DIR/ft.json")
	"$FT" -r "$PRESET" -n "$FRAMES" -l "$RLOOPS" -t "$THREADS" -u 0 --json="$DIR/ft.json" "$DIR/ft" >/dev/null 2>&1
	v3=$(ft_mbs "$DIR/ft.json")
	"$FT" -r "$PRESET" -n "$FRAMES" -l "$RLOOPS" -t "$THREADS" -u 0 --no-verify --json="$DIR/ft.json" "$DIR/ft" >/dev/null 2>&1
	v4=$(ft_mbs "$DIR/ft.json")
	rm -rf "$DIR/ft"
}
fio_side() { # [--thread]
	mkdir -p "$DIR/fio"
	w=$(fio_run write --create_on_open=1 "$@")
	r=$(fio_run read --loops="$RLOOPS" "$@")
	rm -rf "$DIR/fio"
}
for ((rep = 1; rep <= REPS; rep++)); do
	# Alternate which tool goes first, so that neither always meets a cold filesystem.
	if ((rep % 2)); then
		ft_side
		fio_side; v2=$w v5=$r
		fio_side --thread; v6=$w v7=$r
	else
		fio_side --thread; v6=$w v7=$r
		fio_side; v2=$w v5=$r
		ft_side
	fi
	vals=("$v1" "$v2" "$v6" "$v3" "$v4" "$v5" "$v7")
	printf '%-6s' "$rep"
	printf ' %10s' "${vals[@]}"
	printf '\n'
	for i in "${!vals[@]}"; do col[$i]+="${vals[$i]} "; done
done
for stat in min median max; do
	printf '%-6s' "$stat"
	for i in "${!names[@]}"; do
		# shellcheck disable=SC2086
		printf ' %10s' "$(printf '%s\n' ${col[$i]} | sort -n | awk -v s="$stat" \
			'{ v[NR] = $1 } END { print s == "min" ? v[1] : s == "max" ? v[NR] : v[int((NR + 1) / 2)] }')"
	done
	printf '\n'
done
rm -rf "$DIR/ft" "$DIR/fio" "$DIR/ft.json" "$DIR/fio.json"
