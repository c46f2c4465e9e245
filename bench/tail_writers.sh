#!/bin/bash
# bench/tail_writers.sh: packed tails under 1, 2, 4 and 8 writers (fs/data/tail.c):
# framefs-frametest --vary streams of 3-60 MB frames (every frame ends in a tail) on RAID5 x 4
# of 2 GiB members in /dev/shm, FRAMES frames a round; per round, the tails packed and those
# that found every tail-stripe slot busy and took a stripe of their own (tail_busy). A count,
# not a speed: the fps printed is context. Last line:
#   RESULT tails_1=... tail_busy_1=... tails_2=... tail_busy_2=... (and for 4 and 8 writers)
#
# Knobs (environment):
#   FRAMES=32        frames a round, shared by its writers (a multiple of 8)
#   FRAMEFS_BUILD    build dir holding mkfs.framefs, framefs, framefs-frametest and
#                    framefs-admin (wherever meson put them; only there when set), else PATH
# Needs root (a FUSE mount) and python3.
set -euo pipefail

PROG=tail_writers.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
case "${1:-}" in
"") ;;
-h | --help | help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac

FRAMES=${FRAMES:-32}
[[ $FRAMES =~ ^[1-9][0-9]*$ ]] || die "FRAMES must be a multiple of 8 (got '$FRAMES')"
[ $((FRAMES % 8)) = 0 ] || die "FRAMES must be a multiple of 8 (got '$FRAMES')"
[ "$(id -u)" -eq 0 ] || die "must run as root (a FUSE mount)"
command -v python3 >/dev/null || die "python3 not found"
MKFS=$(need_bin mkfs.framefs)
FRAMEFS=$(need_bin framefs)
FT=$(need_bin framefs-frametest)
ADMIN=$(need_bin framefs-admin)

W=$(mktemp -d /dev/shm/framefs-tailw.XXXXXX)
mkdir -p "$W/mnt"
cleanup() {
	cd / || return
	stop_children # a frametest round, if any
	if unmount "$W/mnt" "$(daemon_pid "$W/mnt" framefs)"; then
		rm -rf --one-file-system "$W"
	else
		warn "leaving $W (something is still mounted)"
	fi
}
on_exit cleanup
for i in 0 1 2 3; do truncate -s 2G "$W/m$i"; done
M=$W/m0,$W/m1,$W/m2,$W/m3
"$MKFS" -q -f "$W/m0" "$W/m1" "$W/m2" "$W/m3"
"$FRAMEFS" "$M" "$W/mnt"
prev_w=0 prev_b=0
RESULT=()
for S in 1 2 4 8; do
	mkdir -p "$W/mnt/s$S"
	r=$("$FT" -w --vary=3M:60M,$S --streams $S -n $((FRAMES / S)) -u 0 "$W/mnt/s$S" 2>&1 | tail -1)
	read -r w b < <("$ADMIN" --json status "$W/mnt" | python3 -c "
import json,sys; j=json.load(sys.stdin)
def find(d,k):
  if isinstance(d,dict):
    for a,b in d.items():
      if a==k: return b
      r=find(b,k)
      if r is not None: return r
print(find(j,'tail_writes'), find(j,'tail_busy'))")
	echo "$S writers: tails $((w - prev_w)), busy $((b - prev_b)) ($r)"
	RESULT+=("tails_$S=$((w - prev_w))" "tail_busy_$S=$((b - prev_b))")
	prev_w=$w prev_b=$b
done
echo "RESULT ${RESULT[*]}"
