#!/bin/bash
# The README's demo: a framefs volume on four file members in a scratch
# folder — mkfs, mount, a 4K frame stream written and read back (verified)
# with its figures, unmount.  Knobs: SCRATCH, MEMBER_MB, FRAMES, THREADS.
set -euo pipefail
SCRATCH=${SCRATCH:-/dev/shm/framefs-demo}
MEMBER_MB=${MEMBER_MB:-2048}
FRAMES=${FRAMES:-120}
THREADS=${THREADS:-4}
MNT=$SCRATCH/mnt

cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
mkdir -p "$MNT"
echo "== members: 4 files of $MEMBER_MB MiB in $SCRATCH (pre-written so page allocation is not timed)"
for i in 0 1 2 3; do
	dd if=/dev/zero of="$SCRATCH/member$i.img" bs=1M count="$MEMBER_MB" status=none
done
M="$SCRATCH/member0.img,$SCRATCH/member1.img,$SCRATCH/member2.img,$SCRATCH/member3.img"
echo "== mkfs.framefs -l 5 (RAID5, 512 KiB chunks)"
mkfs.framefs -f -l 5 -L demo ${M//,/ }
echo "== mount"
framefs "$M" "$MNT"
df -h "$MNT"
echo "== write: $FRAMES frames of the 4K preset (51,052,544 bytes), $THREADS threads"
framefs-frametest -w 4k -t "$THREADS" -n "$FRAMES" "$MNT/A001" | tail -n 4
echo "== read back and verify"
framefs-frametest -r -t "$THREADS" -n "$FRAMES" "$MNT/A001" | tail -n 4
echo "== unmount"
fusermount3 -u "$MNT"
echo "demo done"
