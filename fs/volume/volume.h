/* SPDX-License-Identifier: MIT */
/*
 * The volume room (fs/volume/): mount, fsck's library part, scrub and the
 * tools' API stand on every floor below; what the operations (fs/ops.c)
 * and the rooms' teardown call of it.  Private to the filesystem library.
 */
#ifndef FFS_VOLUME_H
#define FFS_VOLUME_H

#include "fs/grow/grow.h"

void ffs_scrub_free(struct ffs *fs);

#endif
