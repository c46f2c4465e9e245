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

#include "fs/fs_i.h"

/* Assemble the array (read-only when ro) and set up fs without a
 * superblock.  err says why when it fails. */
int ffs_check_open(const char *const *paths, unsigned n, bool ro, size_t meta_cache_bytes,
		   struct ffs **out, struct ff_err *err);
/* Release everything (nothing is written here); the array's result. */
int ffs_check_close(struct ffs *fs);

/* Read copy `copy` (1..meta_copies) of META block no, unverified. */
int ffs_check_read_copy(struct ffs *fs, uint64_t no, unsigned copy, void *buf);
/* Why a superblock image is unusable on this array: NULL when it is fine. */
const char *ffs_check_super_problem(const struct ffs *fs, const struct ffs_super *sb);

/* Adopt sb (copied) as the filesystem's superblock; the next super_write
 * goes to copy next_copy (0 = A, 1 = B).  Starts the caches. */
int ffs_check_start(struct ffs *fs, const struct ffs_super *sb, unsigned next_copy);

/* Does the journal hold committed transactions after the tail?  Sets the
 * journal head either way; writes nothing. */
int ffs_check_journal_pending(struct ffs *fs, bool *pending);
/* Replay them (read-write only); *replayed counts transactions. */
int ffs_check_journal_replay(struct ffs *fs, unsigned *replayed);
/* Forget whatever the journal holds: the tail moves past it. */
int ffs_check_journal_discard(struct ffs *fs);

/* Load the allocation bitmaps; a block that cannot be read counts as
 * all in use, so that nothing is allocated from it before it is rebuilt. */
int ffs_check_load_bitmaps(struct ffs *fs);

/* Commit, move the journal tail to its head and write both superblock
 * copies, marked clean: the end of a run that changed something. */
int ffs_check_finish(struct ffs *fs);

#endif
