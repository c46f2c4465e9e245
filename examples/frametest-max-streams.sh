#!/bin/bash
# How many streams of a format does a volume sustain with no dropped frame?
# Writes with --max-streams (1, 2, ... streams, each paced on its own) and
# then plays the frames back the same way.
#
#   examples/frametest-max-streams.sh DIR [PRESET] [FPS] [SECONDS] [LIMIT]
#
# PRESET defaults to 4k (see framefs-frametest --list), FPS to 24, SECONDS of
# footage per stream to 10, LIMIT (most streams tried) to 16.  THREADS per
# stream (default 4) comes from the environment, and framefs-frametest from
# FT, else the build dir FRAMEFS_BUILD, else PATH, else the source tree's build.
set -euo pipefail
PROG=frametest-max-streams.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "$0")")/../bench/lib.sh"

[ $# -ge 1 ] && [ $# -le 5 ] || { usage >&2; exit 2; }
DIR=$1 PRESET=${2:-4k} FPS=${3:-24} SECS=${4:-10} LIMIT=${5:-16}
THREADS=${THREADS:-4}
[ -n "${FT:-}" ] || FT=$(tree_bin framefs-frametest)
FRAMES=$(awk -v f="$FPS" -v s="$SECS" 'BEGIN { printf "%d", f * s + 0.5 }')

mkdir -p "$DIR"
set +e
"$FT" -w "$PRESET" -n "$FRAMES" -t "$THREADS" -f "$FPS" --max-streams="$LIMIT" \
	--json="$DIR/max-streams-write.json" "$DIR/ft-max" >"$DIR/max-streams-write.txt"
wrc=$?
found=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["max_streams"]["found"])' \
	"$DIR/max-streams-write.json" 2>/dev/null || echo 0)
rrc=1
if [ "$found" -gt 0 ]; then
	"$FT" -r "$PRESET" -n "$FRAMES" -t "$THREADS" -f "$FPS" --max-streams="$found" \
		--json="$DIR/max-streams-read.json" "$DIR/ft-max" >"$DIR/max-streams-read.txt"
	rrc=$?
fi
set -e
echo "write: $(tail -n 1 "$DIR/max-streams-write.txt")"
[ "$found" -gt 0 ] && echo "read:  $(tail -n 1 "$DIR/max-streams-read.txt")"
[ $wrc -eq 0 ] && [ $rrc -eq 0 ]
