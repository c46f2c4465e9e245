#!/bin/bash
# Validate a volume for N streams of 4K and 8K frames at 24 and 60 fps, the
# way the trade does it (write the frames, then play them back), with
# framefs-frametest.  Works on any directory: framefs, ext4, NFS, tmpfs.
#
#   examples/frametest-validate.sh DIR [STREAMS] [SECONDS]
#
#   DIR      a scratch directory on the volume (frames are written into it and
#            removed after each test unless KEEP=1)
#   STREAMS  concurrent streams, each paced and judged on its own (default 1)
#   SECONDS  length of each test in seconds of footage (default 10)
#
# Environment: FT (the binary; default framefs-frametest of the build dir
# FRAMEFS_BUILD, else on PATH, else in the source tree's build), THREADS per
# stream (default 4), PRESETS (default "4k 8k"),
# RATES (default "24 60"), KEEP=1 to keep the frames.
# Exit status: 0 when every test passed, 1 when any dropped a frame or read
# back a bad one, 2 on bad usage.
set -euo pipefail
PROG=frametest-validate.sh
# shellcheck source=bench/lib.sh
. "$(dirname "$(readlink -f "$0")")/../bench/lib.sh"

[ $# -ge 1 ] && [ $# -le 3 ] || { usage >&2; exit 2; }
DIR=$1
STREAMS=${2:-1}
SECS=${3:-10}
THREADS=${THREADS:-4}
PRESETS=${PRESETS:-4k 8k}
RATES=${RATES:-24 60}
[[ $STREAMS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]] || { usage >&2; exit 2; }

[ -n "${FT:-}" ] || FT=$(tree_bin framefs-frametest)
mkdir -p "$DIR"

# Bytes per frame for a preset, from the tool's own --list.
frame_bytes() { "$FT" --list | awk -v p="$1" '$1 == p && $3 ~ /^[0-9]+$/ && !n++ { print $3 }'; }

results=()
failed=0
for preset in $PRESETS; do
	bytes=$(frame_bytes "$preset")
	[ -n "$bytes" ] || { echo "unknown preset $preset" >&2; exit 2; }
	for fps in $RATES; do
		frames=$((fps * SECS))
		need=$((bytes * frames * STREAMS))
		avail=$(($(df -P -k "$DIR" | awk 'NR == 2 { print $4 }') * 1024))
		if [ "$need" -gt "$avail" ]; then
			line="SKIPPED: $STREAMS stream(s) of $preset at $fps fps: needs $((need >> 20)) MiB, $((avail >> 20)) MiB free"
			results+=("$line")
			failed=1
			continue
		fi
		echo "== $STREAMS stream(s) of $preset at $fps fps, $frames frames each: write" >&2
		common=(-n "$frames" -t "$THREADS" -f "$fps" --streams "$STREAMS" -u 1)
		set +e
		"$FT" -w "$preset" "${common[@]}" "$DIR/ft-$preset-$fps" >"$DIR/ft-$preset-$fps.write.txt"
		wrc=$?
		echo "== $STREAMS stream(s) of $preset at $fps fps: read back and verify" >&2
		"$FT" -r "$preset" "${common[@]}" "$DIR/ft-$preset-$fps" >"$DIR/ft-$preset-$fps.read.txt"
		rrc=$?
		set -e
		results+=("write $(tail -n 1 "$DIR/ft-$preset-$fps.write.txt")")
		results+=("read  $(tail -n 1 "$DIR/ft-$preset-$fps.read.txt")")
		[ $wrc -eq 0 ] && [ $rrc -eq 0 ] || failed=1
		[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR/ft-$preset-$fps"
	done
done

echo
echo "Stream validation of $DIR ($STREAMS stream(s), $THREADS thread(s) each; reports in $DIR/ft-*.txt):"
printf '  %s\n' "${results[@]}"
exit $failed
