#!/bin/bash
# The README's demo: a 4-member RAID5 of files in a scratch folder, written and
# read back through the RAID engine, with throughput and efficiency figures.
set -euo pipefail
SCRATCH=${SCRATCH:-/dev/shm/framefs-demo}
SIZE=${SIZE:-512M}
echo "== framefs demo: RAID5 on 4 file members of $SIZE in $SCRATCH"
framefs-raidbench --dir "$SCRATCH" --level 5 --members 4 --size "$SIZE" --runs 1
