/* SPDX-License-Identifier: MIT */
/*
 * The array's label: what mkfs.framefs -L writes into every member
 * superblock and LABEL= finds (scan.c).  One rule for every tool that sets
 * it, and a change of it on an assembled array.
 */
#ifndef FF_RAID_LABEL_H
#define FF_RAID_LABEL_H

#include "raid/raid.h"

/* Bytes of a label, its NUL not counted: the superblock's field is 64. */
#define FF_LABEL_MAX 63u

/* 0 when label may be a label: at most FF_LABEL_MAX bytes, none of them a
 * control character (status and fsck print it; "" is no label).  Else
 * -EINVAL with a message saying what is allowed. */
int ff_label_check(const char *label, struct ff_err *err);

/*
 * Give the array a new label, on every active member and every spare,
 * through the superblock write every other change takes: the event count
 * goes up, and each member gets its checksummed copies head then tail with
 * a flush between, so a power cut leaves each member one whole copy, with
 * the old label or the new, and assembly takes the freshest.  Posts
 * FF_EVENT_LABEL_CHANGED.  -EROFS on an array assembled read-only; -errno
 * with a message when a member's superblock could not be written.
 */
int ff_raid_set_label(struct ff_raid *r, const char *label, struct ff_err *err);

#endif
