/* SPDX-License-Identifier: MIT */
/*
 * The file-data room (fs/data/): what the volume and the operations call
 * of the data path (write buffers, read cache, tails, patches, merges).
 * The data path's own shared state is in fs/data/data_i.h.  Private to
 * the filesystem library.
 */
#ifndef FFS_DATA_H
#define FFS_DATA_H

#include "fs/meta/meta.h"

/* ---- file data (data.c, wbuf.c, rcache.c: see data_i.h) -------------------- */

int ffs_data_init(struct ffs *fs);
void ffs_data_free(struct ffs *fs);
/* Write bytes into the file's stripe buffers; full stripes go to the array. */
ssize_t ffs_data_write(struct ffs *fs, struct finode *fi, const void *buf, size_t len, uint64_t off);
ssize_t ffs_data_read(struct ffs *fs, struct finode *fi, void *buf, size_t len, uint64_t off,
		      unsigned flags);
ssize_t ffs_data_read_ref(struct ffs *fs, struct finode *fi, size_t len, uint64_t off,
			  unsigned flags, struct ffs_rref *ref);
void ffs_data_read_unref(struct ffs *fs, struct ffs_rref *ref);
ssize_t ffs_data_read_into(struct ffs *fs, struct finode *fi, void *buf, size_t cap, size_t len,
			   uint64_t off);
int ffs_data_read_into_async(struct ffs *fs, struct finode *fi, uint64_t fh, void *buf, size_t cap,
			     size_t len, uint64_t off, ffs_read_done_fn done_fn, void *priv);
/* Write out every partial stripe of the file (fsync, close). */
int ffs_data_flush(struct ffs *fs, struct finode *fi);
/* The same, and wait for its background merges in flight (merge.c): when
 * it returns the file has no buffer left unless a writer made one
 * meanwhile (unmount and framefs-admin sync: mount.c flush_all).  The
 * file's first write error is returned.  keep: the file stays as its
 * writers left it, its write error for its own fsync or close and its
 * stripes reserved ahead for its next writes (framefs-admin sync, while
 * files are being written). */
int ffs_data_flush_all(struct ffs *fs, struct finode *fi, bool keep);
/* Drop buffered data beyond size and zero the tail of the EOF stripe. */
int ffs_data_truncate(struct ffs *fs, struct finode *fi, uint64_t size);
int ffs_data_fallocate(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len);
/* Forget cached stripes (they were freed). */
void ffs_rcache_invalidate(struct ffs *fs, uint64_t pstripe, uint64_t count);
/* Rows were added to tail stripe p and the rows already there are as they
 * were (fs/data/tail.c; fs->lock held, as for the map and checksum change). */
void ffs_rcache_extended(struct ffs *fs, uint64_t p);
/* Blocks the patch cache holds, and at most (pcache.c). */
void ffs_pcache_usage(struct ffs *fs, uint64_t *blocks, uint64_t *cap);

/* ---- packed tails (tail.c; see data_i.h for the data path's part) ------------ */

bool ffs_tails_on(const struct ffs *fs);
/* An extent into tail stripe p is gone (fs->lock held): freed with its last. */
int ffs_tail_release(struct ffs *fs, uint64_t p);
/* Unmount: the open tail stripes retired (fs->lock held). */
int ffs_tails_retire_all(struct ffs *fs);
/* The slots' spare stripes back to the allocator; how many there are
 * (free space: given back on demand).  fs->lock held. */
void ffs_tails_drop_spares(struct ffs *fs);
unsigned ffs_tails_spare_count(struct ffs *fs);
/* A repair is about to rewrite stripe p: no more tails go to it.  false:
 * a tail write to it is in flight, try again later.  fs->lock held. */
bool ffs_tail_hold(struct ffs *fs, uint64_t p);
/* The open tail stripes a commit of transaction seq lists for patch
 * replay, and the first batch seq it does not hold (fs->lock held). */
void ffs_tails_listing(struct ffs *fs, uint64_t seq, struct ffs_patch_open *po);
/* Mount: lay the patch batches written after the last commit over their
 * files again (apply), or only count them (fs->lock held): how many. */
int ffs_patch_replay(struct ffs *fs, bool apply, unsigned *count);
/* One more tail or patch points into tail stripe p (fs->lock held). */
int ffs_tail_grab(struct ffs *fs, uint64_t p);

/* ---- patches (patch.c; the data path's part in data_i.h) -------------------- */

/* Small overwrites go as patches on this mount: fs->features & FFS_FEAT_PATCHES. */
/* Blocks [b0, b0+n) of file stripe f are in slots [slot0, slot0+n) of tail
 * stripe p (crc: each one's ffs_patch_crc), replacing older patches of them (fs->lock held, in the running
 * transaction; p's live count is the caller's). */
int ffs_patch_add(struct ffs *fs, struct finode *fi, uint64_t f, uint32_t b0, uint32_t n,
		  uint64_t p, uint32_t slot0, const uint32_t *crc);
/* File stripes [f0, f1) lose their patches; [0, UINT64_MAX) the tree too. */
int ffs_patch_drop(struct ffs *fs, struct finode *fi, uint64_t f0, uint64_t f1);
/* Whether the file may have patches (fs->lock held). */
bool ffs_patch_any(const struct ffs *fs, const struct finode *fi);

/* Merges in the background (merge.c): the thread (started with the data
 * path, stopped first at unmount: what is queued is dropped), a wait until
 * it has done what was queued when the wait began (ffs_settle), and the
 * stripes queued or being merged now. */
int ffs_merges_start(struct ffs *fs);
void ffs_merges_stop(struct ffs *fs);
void ffs_merges_free(struct ffs *fs);
void ffs_merges_drain(struct ffs *fs);
unsigned ffs_merges_pending(struct ffs *fs);

/* The calling thread's stripe loads are background work (a grow's
 * restripe, restripe.c sets it for its thread): the engine serves them
 * behind foreground requests and leaves them out of the foreground bytes
 * its throttles watch (raid.h, fg_bytes). */
extern _Thread_local bool ffs_io_background;

#endif
