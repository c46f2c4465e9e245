/* SPDX-License-Identifier: MIT */
#ifndef FFS_FUSE_OPS_H
#define FFS_FUSE_OPS_H

#include <fuse_lowlevel.h>

#define FFS_READLINK_MAX 4096

extern const struct fuse_lowlevel_ops ffs_fuse_ops;

#endif
