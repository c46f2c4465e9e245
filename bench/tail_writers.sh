#!/bin/bash
# Packed tails under 1, 2, 4 and 8 writers (fs/data/tail.c): frametest --vary
# streams of 3-60 MB frames (every frame ends in a tail) on RAID5 x 4 of
# 2 GiB members in /dev/shm, 32 frames a round; per round, the tails packed
# and those that found every tail-stripe slot busy and took a stripe of
# their own (tail_busy).  A count, not a speed: the fps printed is context.
# Usage: [FRAMEFS_BUILD=build] bench/tail_writers.sh   (as root: it mounts)
set -u
PROG=tail_writers.sh
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
B=$(realpath "${FRAMEFS_BUILD:-build}")
W=$(mktemp -d /dev/shm/framefs-tailw.XXXXXX) || exit 1
mkdir -p "$W/mnt"
cleanup() {
	cd / || return
	if unmount "$W/mnt" "$(daemon_pid "$W/mnt" framefs)"; then
		rm -rf --one-file-system "$W"
	else
		warn "leaving $W (something is still mounted)"
	fi
}
on_exit cleanup
for i in 0 1 2 3; do truncate -s 2G "$W/m$i"; done
M=$W/m0,$W/m1,$W/m2,$W/m3
cd "$W" || exit 1
"$B/mkfs/mkfs.framefs" -q -f ${M//,/ } && "$B/fs/daemon/framefs" "$M" "$W/mnt" || exit 1
prev_w=0 prev_b=0
for S in 1 2 4 8; do
  mkdir -p "$W/mnt/s$S"
  r=$("$B"/tools/frametest/framefs-frametest -w --vary=3M:60M,$S --streams $S -n $((32 / S)) -u 0 "$W/mnt/s$S" 2>&1 | tail -1)
  read -r w b st < <("$B"/tools/admin/framefs-admin --json status "$W/mnt" | python3 -c "
import json,sys; j=json.load(sys.stdin)
def find(d,k):
  if isinstance(d,dict):
    for a,b in d.items():
      if a==k: return b
      r=find(b,k)
      if r is not None: return r
print(find(j,'tail_writes'), find(j,'tail_busy'), find(j,'tail_stripes'))")
  echo "$S writers: tails $((w - prev_w)), busy $((b - prev_b)) ($r)"
  prev_w=$w prev_b=$b
done
