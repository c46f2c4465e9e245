/* SPDX-License-Identifier: MIT */
/*
 * The grow's room (fs/grow/): the filesystem's side of an array grown
 * under it (raid.h, "growing"; format.h, struct ffs_grow_rec).  Private to
 * the filesystem library; the floor above (volume) calls it at mount, and
 * ffs_grow (ffs.h) is the offline tools' entry.
 */
#ifndef FFS_GROW_H
#define FFS_GROW_H

#include "fs/data/data.h"

/* At mount, the metadata loaded (fs->lock held): take on a grow the array
 * made (PREPARED on a grown array, read-write: the rows in use marked old,
 * the superblock to the new geometry), load the old-rows map and the
 * checksum extension, and tell the engine which rows are old. */
int ffs_grow_mount(struct ffs *fs, struct ff_err *err);
/* The checksum extension sb names (a grow's records, format.h), for this
 * mount or check: fs->csumx. */
void ffs_grow_records_use(struct ffs *fs);
/* For fsck (fs/volume/check.c), the bitmaps loaded: which rows are in the
 * old geometry, as a mount would see them but with nothing taken on or
 * written, and the engine told (its row hook).  GROWING: the on-disk
 * old-rows map (fs->orows_start names it); PREPARED on a grown array: every
 * row (nothing was written since the array grew); otherwise none. */
int ffs_grow_check_load(struct ffs *fs);
/* Step 1 of ffs_grow (grow.c): on the old array mounted read-write, all
 * committed (fs->lock held), the grow's records made and named by the
 * superblock (PREPARED) for an array of new_nmembers; 0 at once when a
 * grow to that width was prepared already. */
int ffs_grow_prepare(struct ffs *fs, uint32_t new_nmembers, struct ff_err *err);
/* Step 1's records alone (ffs_grow_prepare names them; a test stops
 * between): the journal checkpointed, the records for new_nmembers
 * written and flushed in the pool's last free blocks (a checksum extension
 * holding every row's checksums from the one in use, and an empty old-rows
 * map), *rec saying where (its pool_cut: this grow's blocks alone).  The
 * superblock is not changed. */
int ffs_grow_records_write(struct ffs *fs, uint32_t new_nmembers, struct ffs_grow_rec *rec,
			   struct ff_err *err);
/* Where a grow's records lie (rec's ext_* and orows_*) for nstripes rows
 * and an extension xw checksums wide, from META block start: the
 * extension, then the old-rows map (format.h). */
void ffs_grow_rec_place(struct ffs_grow_rec *rec, uint64_t nstripes, uint32_t xw, uint64_t start);
/* Did the filesystem end a grow to g's width (state none, its records
 * kept, the superblock at that width) that the array has not ended yet
 * (a stop between the two: ffs_grow_mount ends it)? */
bool ffs_grow_ended(const struct ffs_super *sb, const struct ff_geom *g);
/* Are sb's grow records (version 6) where they must be: right after the
 * pool, at the start of the pool_cut blocks it gave (the rest: an earlier
 * grow's, retired), each large enough?  xw: checksums an
 * extension entry must hold. */
bool ffs_grow_layout_ok(const struct ffs_super *sb, uint32_t xw, uint64_t meta_blocks);
/* Before a grow (restripe.c): the restripe moves one file at a time, its
 * old rows freed only after its copy is written, and each move frees at
 * least as many rows as it takes; so the free rows must hold the largest
 * file at the new width (stripes of new_stripe_bytes).  -ENOSPC, err saying
 * how much is missing, when they do not. */
int ffs_grow_room(struct ffs *fs, uint64_t new_stripe_bytes, struct ff_err *err);
/* fs->old_file_move (fs_i.h), registered by ffs_grow_mount while rows are
 * old on a read-write mount: fi, in the old geometry, moved to the array's
 * now, in the caller's thread (restripe.c), so that it can be changed; no
 * lock held.  0 once the file is in the array's geometry (moved here, by
 * the restripe, or emptied); -ENOSPC when the free rows cannot hold it at
 * the new width; -EIO when its data cannot be read. */
int ffs_grow_move_now(struct ffs *fs, struct finode *fi);
/* The array's members changed (a role failed, or rebuilt): a restripe
 * paused for want of redundancy looks again (restripe.c).  Called from the
 * engine's event hook; takes the restripe's lock briefly, never waits. */
void ffs_grow_array_changed(struct ffs *fs);
/* At unmount and on a failed mount (restripe.c): the thread stopped, freed. */
void ffs_grow_free(struct ffs *fs);

#endif
