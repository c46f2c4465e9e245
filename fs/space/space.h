/* SPDX-License-Identifier: MIT */
/*
 * The allocators' room (fs/space/): what the floors above it call of
 * alloc.c.  Private to the filesystem library.
 */
#ifndef FFS_SPACE_H
#define FFS_SPACE_H

#include "fs/fs_i.h"

/* ---- allocators (alloc.c) ---------------------------------------------- */

/*
 * Load the three allocation bitmaps (inodes, stripes, pool blocks) into
 * memory with their free counts, for the mount and for fsck
 * (ffs_check_load_bitmaps).  One rule for a bitmap block that no copy of
 * verifies: none of its bits is ever taken as free.  Mounting, the load
 * fails with the read's error and nothing is allocated from a guess;
 * checking (fs->checking), its bits all count as in use and the load goes
 * on, since fsck rewrites every bitmap from what it counts.  -ENOMEM fails
 * it either way.  What was loaded before a failure stays for
 * ffs_alloc_free_all.
 */
int ffs_alloc_load(struct ffs *fs);
/* One on-disk bitmap (nblocks blocks from META block start, nbits bits)
 * into a fresh word bitmap *out, and its clear bits into *nfree; a block
 * no copy of verifies fails it (or, checking, counts as all set). */
int ffs_alloc_load_bitmap(struct ffs *fs, uint64_t start, uint64_t nblocks, uint64_t nbits,
			  uint64_t **out, uint64_t *nfree);
void ffs_alloc_free_all(struct ffs *fs);
/* ffs_alloc_inode, ffs_free_inode_bit, ffs_free_mblock, ffs_take_stripes,
 * ffs_csum_set/get: ffs_tools.h */
int ffs_alloc_mblock(struct ffs *fs, uint64_t *no);
/* Reserve (in memory only) `want` contiguous stripes near `hint`, fewer
 * if only shorter runs exist, at least 1, leaving `keep` free (new data
 * keeps ffs_overwrite_reserve, an overwrite 0); *got is the count
 * reserved. */
int ffs_reserve_stripes(struct ffs *fs, uint64_t hint, uint64_t want, uint64_t keep,
			uint64_t *first, uint64_t *got);
/* The stripes new data leaves free for overwrites (alloc.c). */
uint64_t ffs_overwrite_reserve(const struct ffs *fs);
void ffs_unreserve_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Reserved stripes that are now mapped: mark them on disk. */
int ffs_commit_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Free on disk now; reusable only after the transaction commits. */
int ffs_free_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Where pending_free ends now, counted from the mount: a commit taken now
 * frees the entries before this mark (fs->lock held). */
uint64_t ffs_alloc_pending_mark(const struct ffs *fs);
/* The frees before mark were made durable by a transaction: reusable (at
 * once, or when the last reader's hold ends).  By mark, not by count: a
 * hold ending while a commit is in flight reuses entries ahead of it
 * (the count taken at its start then named more than were left). */
void ffs_alloc_tx_committed(struct ffs *fs, uint64_t mark);
/* Stripe p was freed in the running transaction: clear on disk, still
 * taken in memory until the commit (fs->lock held). */
bool ffs_stripe_freed_in_tx(struct ffs *fs, uint64_t p);
/* Hold off the reuse of freed stripes, and let go (fs->lock held): see alloc.c. */
void ffs_alloc_reuse_hold(struct ffs *fs);
void ffs_alloc_reuse_release(struct ffs *fs);
uint64_t ffs_alloc_free_stripe_count(const struct ffs *fs);
/* Data stripe p is taken (mapped, reserved, or freed by a transaction not
 * yet durable); for readers without fs->lock: the answer may be a moment
 * old.  Every such test calls this one. */
bool ffs_stripe_in_use(const struct ffs *fs, uint64_t p);
/* Inode number ino is allocated (fs->lock held). */
bool ffs_inode_bit_used(const struct ffs *fs, uint64_t ino);
/* META block no is a pool block no one holds (fs->lock held). */
bool ffs_pool_block_free(const struct ffs *fs, uint64_t no);

#endif
