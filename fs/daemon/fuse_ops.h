/* SPDX-License-Identifier: MIT */
#ifndef FFS_FUSE_OPS_H
#define FFS_FUSE_OPS_H

#include <fuse_lowlevel.h>

#define FFS_READLINK_MAX 4096

extern const struct fuse_lowlevel_ops ffs_fuse_ops;
/* Readahead the daemon asks for at INIT (buffered readers). */
extern unsigned ffs_fuse_readahead_bytes;

#endif
