/* SPDX-License-Identifier: MIT */
/*
 * The metadata room (fs/meta/): the superblock and batched META writes,
 * the journal, the B+tree, inodes and extents, directories, xattrs, and
 * small-data files, as the floors above it call them.  Private to the
 * filesystem library.
 */
#ifndef FFS_META_H
#define FFS_META_H

#include "fs/space/space.h"

/* ---- the superblock and batched META writes (super.c) ------------------- */

/* ffs_super_write: ffs_tools.h */
/* META writes submitted together and waited for together. */
struct ffs_batch {
	struct ff_raid_io *io;
	unsigned n, cap;
	unsigned pending;
	int err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};
/* Room for cap requests. */
int ffs_batch_init(struct ffs_batch *b, unsigned cap);
/* Submit the write of nblocks META blocks from block on: the first error is kept. */
int ffs_batch_add_range(struct ffs *fs, struct ffs_batch *b, uint64_t block, void *buf,
			uint64_t nblocks);
/* Wait for every request submitted; the first error, 0 if none.  Frees the
 * requests; the lock and cond are the caller's to destroy. */
int ffs_batch_wait(struct ffs_batch *b);

/* ---- journal (journal.c) ------------------------------------------------ */

/* ffs_journal_commit, ffs_journal_tx_full: ffs_tools.h */
/* The same, but fs->lock (held on entry and on return) is let go while
 * the records are written: for the group-commit thread. */
int ffs_journal_commit_unlocked(struct ffs *fs);
/* Transactions with a sequence below this are durable (fs->lock). */
uint64_t ffs_journal_durable_seq(const struct ffs *fs);
/* The staging buffer and the flight (teardown). */
void ffs_journal_free(struct ffs *fs);
/* Replay committed transactions after the tail; called at mount. */
int ffs_journal_replay(struct ffs *fs, unsigned *replayed);
/* Everything is checkpointed: move the tail to the head (writes the sb). */
int ffs_journal_reset_tail(struct ffs *fs);
/* Write every committed block home, then move the tail (commits first if
 * the running transaction is not empty).  fs->lock held. */
int ffs_journal_checkpoint(struct ffs *fs);
/* A journal tail for a superblock rebuilt without one (fsck): where a
 * replay must start, and how many transactions it will apply. */
int ffs_journal_find_tail(struct ffs *fs, uint64_t *tail_pos, uint64_t *tail_seq, unsigned *ntx);
/* Group commit: make transaction `seq` (and those before it) durable,
 * together with every other flusher's that arrives meanwhile.  fs->lock
 * held (let go while waiting). */
int ffs_commit_wait(struct ffs *fs, uint64_t seq);
/* The group-commit thread (read-write mounts): start, and stop (unmount). */
int ffs_journal_thread_start(struct ffs *fs);
void ffs_journal_thread_stop(struct ffs *fs);

/* ---- B+tree (btree.c) ---------------------------------------------------- */

/* struct bt_root, ffs_bt_find_ge, ffs_bt_insert, ffs_bt_delete, ffs_bt_update: ffs_tools.h */

/* Largest key <= key. */
int ffs_bt_find_le(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found,
	       void *val, uint16_t *len);
/* Free every node. */
int ffs_bt_destroy(struct ffs *fs, struct bt_root *t);
/* Visit every node block (fsck, statistics): cb returns <0 to stop. */
int ffs_bt_walk(struct ffs *fs, struct bt_root *t, int (*cb)(void *arg, uint64_t block, int level),
	    void *arg);

/* ---- inodes (inode.c, extent.c, xattr.c) ---------------------------------- */

/* struct finode, ffs_iget, ffs_iput, ffs_istore, ffs_inode_new,
 * ffs_extent_map: ffs_tools.h */

int ffs_icache_init(struct ffs *fs);
void ffs_icache_free(struct ffs *fs);
/* Every cached inode gives back the stripes it reserved ahead (fs->lock
 * held): the allocator's fs->reclaim_reservations. */
void ffs_icache_unreserve_all(struct ffs *fs);
/* Free blocks and the inode once it has no links, lookups or opens. */
int ffs_inode_maybe_free(struct ffs *fs, struct finode *fi);
/* Free a regular file's blocks once it has no links or opens (lookups may
 * remain: the inode stays, on the orphan list, and cannot be opened). */
int ffs_inode_drop_data(struct ffs *fs, struct finode *fi);
void ffs_inode_touch(struct finode *fi, bool mtime, bool ctime);
void ffs_inode_stat(const struct ffs *fs, const struct finode *fi, struct stat *st);
int ffs_orphan_add(struct ffs *fs, struct finode *fi);
int ffs_orphan_remove(struct ffs *fs, struct finode *fi);
int ffs_orphans_process(struct ffs *fs, unsigned *freed);

/* Extent map of a regular file, in whole stripes. */
int ffs_extent_lookup(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *pstripe,
		  uint64_t *run, uint32_t *flags);
/* The extent covering fstripe (0), or -ENOENT. */
int ffs_extent_find(struct ffs *fs, struct finode *fi, uint64_t fstripe, struct ffs_extent *x);
/* ffs_extent_map_tail: ffs_tools.h */
/* Unmap and free file stripes [fstripe, end) (a hole punched). */
int ffs_extent_punch(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t end);
/* Unmap and free every stripe at or after fstripe. */
int ffs_extent_truncate(struct ffs *fs, struct finode *fi, uint64_t fstripe);
/* Iterate extents in order: cb returns <0 to stop. */
int ffs_extent_iterate(struct ffs *fs, struct finode *fi,
		   int (*cb)(void *arg, const struct ffs_extent *x), void *arg);

/* xattrs (one block per inode) and long symlinks */
int ffs_xattr_get(struct ffs *fs, struct finode *fi, const char *name, void *val, size_t size);
int ffs_xattr_set(struct ffs *fs, struct finode *fi, const char *name, const void *val, size_t size,
	      int flags);
int ffs_xattr_list(struct ffs *fs, struct finode *fi, char *list, size_t size);
int ffs_xattr_remove(struct ffs *fs, struct finode *fi, const char *name);
int ffs_xattr_drop(struct ffs *fs, struct finode *fi);

/* ---- directories (dir.c) ------------------------------------------------- */

/* ffs_dir_lookup, ffs_dir_add, ffs_dir_remove, ffs_dir_retarget: ffs_tools.h */
/* Next entry with key >= pos: fills name (NUL-terminated), ino, type and
 * the position after it.  -ENOENT at the end. */
int ffs_dir_next(struct ffs *fs, struct finode *dir, uint64_t pos, char *name, uint64_t *ino,
	     uint8_t *type, uint64_t *next_pos);
bool ffs_dir_is_empty(struct ffs *fs, struct finode *dir);

/* ---- the small-data class (small.c; fs->lock held) -------------------------- */

bool ffs_is_small(const struct finode *fi);
/* The same without fs->lock, for a writer holding fi->dlock with
 * fi->beyond_small raised: see small.c for why it may. */
bool ffs_is_small_unlocked(const struct finode *fi);
uint32_t ffs_small_max(const struct ffs *fs);  /* bytes; 0: the class is off */
/* Bytes [off, off + n) of a small file's stripe 0 (zeros past its blocks). */
int ffs_small_read(struct ffs *fs, struct finode *fi, uint64_t off, size_t n, uint8_t *dst);
/* Make fi small with these len bytes (len <= small_max), in the running
 * transaction, its old blocks (if any) given back.  -ENOSPC: the pool is
 * down to its reserve; the caller writes a stripe instead. */
int ffs_small_store(struct ffs *fs, struct finode *fi, const uint8_t *data, uint64_t len);
/* fi is no longer small (its stripe 0 is mapped, or it is truncated to 0). */
int ffs_small_release(struct ffs *fs, struct finode *fi);
/* Why inode d's small-data fields are nonsense, NULL when sane or not small. */
const char *ffs_small_problem(const struct ffs *fs, const struct ffs_inode *d);
/* The pcsum table and small-data blocks: ffs_pcsum_get, ffs_pcsum_set and
 * ffs_meta_read_sdata (ffs_tools.h: fsck checks them too). */

#endif
