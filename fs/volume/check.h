/* SPDX-License-Identifier: MIT */
/*
 * The library as fsck.framefs (and the test corpus's corruption tool) use
 * it: a struct ffs set up step by step, without the daemon's threads, so
 * that the checker can look at each superblock copy, decide about the
 * journal, and load bitmaps that may be damaged — and then repair through
 * the same metadata cache and journal as every other change.
 *
 * With fs->checking set (ffs_check_open does), the library reports instead
 * of fixing: a bad mirror copy is read around but not rewritten (fsck
 * reports it in its own pass), and an on-disk bitmap bit that already has
 * the value being written is accepted (fsck rewrites the bitmaps from what
 * it counted).
 */
#ifndef FFS_CHECK_H
#define FFS_CHECK_H

#include "fs/ffs_tools.h"

/* Assemble the array (read-only when ro) and set up fs without a
 * superblock.  err says why when it fails. */
int ffs_check_open(const char *const *paths, unsigned n, bool ro, size_t meta_cache_bytes,
		   struct ffs **out, struct ff_err *err);
/* Release everything (nothing is written here); the array's result. */
int ffs_check_close(struct ffs *fs);

/* Read copy `copy` (1..meta_copies) of META block no, unverified. */
int ffs_check_read_copy(struct ffs *fs, uint64_t no, unsigned copy, void *buf);

/*
 * fsck's scans over the META space (every copy of every block in pass 5,
 * the small files' data in pass 2) read one whole 64 KiB chunk of a copy
 * per request and serve its 16 blocks from there: a copy of one chunk lives
 * on one member, so the request is one member read.  One block per round
 * trip made fsck of 100,000 small files take 20 s, nearly all of it
 * waiting on those round trips.  A window is read again once anything was
 * written to the META space since (the engine's meta_write_bytes moved),
 * so it never serves an image older than the disk's; a chunk that cannot
 * be read whole is read block by block, so an error stays the block's own.
 */
#define FFS_CHECK_RUN_BLOCKS (FF_META_CHUNK / FFS_BLOCK)
struct ffs_check_runs {
	uint8_t *buf; /* FFS_CHECK_RUN_BLOCKS blocks per copy */
	struct {
		uint64_t chunk;     /* META chunk held */
		uint64_t gen;       /* meta_write_bytes when it was read */
		bool valid, failed; /* failed: read it block by block */
	} w[FF_META_COPIES_MAX];
};
int ffs_check_runs_init(struct ffs *fs, struct ffs_check_runs *runs);
void ffs_check_runs_free(struct ffs_check_runs *runs);
/* ffs_check_read_copy through the windows. */
int ffs_check_run_read(struct ffs *fs, struct ffs_check_runs *runs, uint64_t no, unsigned copy,
		       void *buf);
/* ffs_meta_read_sdata through the windows: the cached image when the cache
 * holds a newer one than the disk, else the first copy that matches crc;
 * -EBADMSG when copies were read and none matches. */
int ffs_check_run_read_sdata(struct ffs *fs, struct ffs_check_runs *runs, uint64_t no,
			     uint32_t crc, void *buf);
/* Why a superblock image is unusable on this array: NULL when it is fine. */
const char *ffs_check_super_problem(const struct ffs *fs, const struct ffs_super *sb);

/* No copy of the superblock is valid: make one (into sb, not adopted)
 * from the array — geometry, uuid, label — and the layout on disk: mkfs's
 * layout for this array with its default sizes, else with the journal and
 * inode-table sizes the inode table shows, checked against the regions
 * mkfs writes whole; and a journal tail from the journal's own records
 * (ffs_journal_find_tail).  -ENOENT when no framefs layout is found. */
struct ffs_check_rebuilt {
	uint64_t ninodes, journal_blocks;
	bool default_layout;      /* mkfs's default sizes */
	unsigned pending;         /* journal transactions a replay will apply */
	bool grown;               /* on an array grown since mkfs: its grow's records found */
	const char *grown_why;    /* -ENOENT on a grown array: why they were not */
};
int ffs_check_rebuild_super(struct ffs *fs, struct ffs_super *sb, uint64_t generation,
			    struct ffs_check_rebuilt *info);
/* A rebuilt superblock's inode-table high-water mark, from the loaded
 * inode bitmap (the table is initialised at least that far). */
void ffs_check_hwm_from_bitmap(struct ffs *fs);

/* Adopt sb (copied) as the filesystem's superblock; the next ffs_super_write
 * goes to group next_copy (0 = copies A and C, 1 = B and D).  Starts the
 * caches. */
int ffs_check_start(struct ffs *fs, const struct ffs_super *sb, unsigned next_copy);

/* Does the journal hold committed transactions after the tail?  Sets the
 * journal head either way; writes nothing. */
int ffs_check_journal_pending(struct ffs *fs, bool *pending);
/* Replay them (read-write only); *replayed counts transactions. */
int ffs_check_journal_replay(struct ffs *fs, unsigned *replayed);
/* Forget whatever the journal holds: the tail moves past it. */
int ffs_check_journal_discard(struct ffs *fs);

/* Load the allocation bitmaps; a block that cannot be read counts as
 * all in use, so that nothing is allocated from it before it is rebuilt.
 * On a grown array, then which rows are old (fs/grow/grow.c
 * ffs_grow_check_load): data rows are read in their geometry from here on. */
int ffs_check_load_bitmaps(struct ffs *fs);

/* Patch batches (format version 5, fs/data/patch.c) written after the last
 * commit, past the hwm of the tail stripes it lists: how many there are
 * (writes nothing), or, read-write only, lay them over their files as a
 * mount does (after the journal and the bitmaps: the batches' own blocks
 * and checksums are checked, the patch trees grow in the pool).  A commit
 * made before they are laid over would forget where they are. */
int ffs_check_patch_pending(struct ffs *fs, unsigned *count);
int ffs_check_patch_replay(struct ffs *fs, unsigned *replayed);

/* Commit, move the journal tail to its head and write both groups of
 * superblock copies, marked clean: the end of a run that changed
 * something. */
int ffs_check_finish(struct ffs *fs);

/*
 * A grow under way (format.h, struct ffs_grow_rec; fs/grow/) is checked
 * like any volume: PREPARED on the old array at the old width, PREPARED on
 * a grown array with every row in the old geometry (nothing was written
 * since the array grew), GROWING with each row in the geometry the on-disk
 * old-rows map gives it (ffs_check_load_bitmaps loads it and tells the
 * engine).  ffs_check_super_problem's answers for a superblock whose grow
 * does not fit the array: not damage of the copy, so never a reason to
 * rebuild the superblock (ffs_check_super_misfit).
 */
#define FFS_CHECK_GROW_MISFIT \
	"its grow does not fit this array (another width or level than the array's, before or " \
	"after): check the members given; a superblock rebuilt from the array would lose the grow"
#define FFS_CHECK_GROW_NO_RECORDS \
	"the array was grown under it without the filesystem's records (framefs-admin grow makes " \
	"them): nothing says which rows are in which geometry; it mounts read-only"
/* Does this ffs_check_super_problem answer say that the copy is whole but
 * made for another array, version, geometry or grow (what is wrong may be
 * the members given), rather than damaged? */
bool ffs_check_super_misfit(const char *why);

#endif
