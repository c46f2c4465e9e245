/* SPDX-License-Identifier: MIT */
/*
 * The superblock writer, and the batched META writes it shares with the
 * journal's commits and checkpoints: requests submitted together, waited
 * for together, the first error kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/meta/meta.h"

/* ---- batched META writes ------------------------------------------------ */

static void batch_done(struct ff_raid_io *io)
{
	struct ffs_batch *b = io->priv;

	pthread_mutex_lock(&b->lock);
	if (io->result < 0 && !b->err)
		b->err = io->result;
	if (--b->pending == 0)
		pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

int ffs_batch_init(struct ffs_batch *b, unsigned cap)
{
	memset(b, 0, sizeof(*b));
	b->io = calloc(cap, sizeof(*b->io));
	if (!b->io)
		return -ENOMEM;
	b->cap = cap;
	pthread_mutex_init(&b->lock, NULL);
	pthread_cond_init(&b->cond, NULL);
	return 0;
}

int ffs_batch_add_range(struct ffs *fs, struct ffs_batch *b, uint64_t block, void *buf,
			uint64_t nblocks)
{
	struct ff_raid_io *io;
	int rc;

	FF_ASSERT(b->n < b->cap);
	io = &b->io[b->n++];
	io->op = FF_RAID_WRITE;
	io->space = FF_SPACE_META;
	io->off = block * FFS_BLOCK;
	io->len = nblocks * FFS_BLOCK;
	io->buf = buf;
	io->done = batch_done;
	io->priv = b;
	pthread_mutex_lock(&b->lock);
	b->pending++;
	pthread_mutex_unlock(&b->lock);
	rc = ff_raid_submit(fs->raid, io);
	if (rc < 0) {
		pthread_mutex_lock(&b->lock);
		b->pending--;
		if (!b->err)
			b->err = rc;
		pthread_mutex_unlock(&b->lock);
	}
	return rc;
}

static int batch_add(struct ffs *fs, struct ffs_batch *b, uint64_t block, void *buf)
{
	return ffs_batch_add_range(fs, b, block, buf, 1);
}

int ffs_batch_wait(struct ffs_batch *b)
{
	pthread_mutex_lock(&b->lock);
	while (b->pending)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
	free(b->io);
	b->io = NULL;
	return b->err;
}

/* ---- superblock ---------------------------------------------------------- */

/*
 * Write the superblock: generation + 1, to the two copies of the next group
 * (A and C, or B and D: format.h) at once, then flush.  The groups take
 * turns, so a torn write leaves the other group one generation older.  A
 * copy records FFS_F_SB_COPIES4 once this process has written the other
 * group too: then all four copies exist (a volume made before C and D
 * gets them on its first two superblock writes).
 */
int ffs_super_write(struct ffs *fs)
{
	unsigned group = fs->sb_next_copy & 1;
	struct ffs_super *img = ff_alloc_aligned(2 * FFS_BLOCK);
	struct ffs_batch b;
	int rc;

	if (!img)
		return -ENOMEM;
	if (fs->sb_groups_written & (1u << !group))
		fs->sb->flags = ff_cpu_to_le32(ff_le32(fs->sb->flags) | FFS_F_SB_COPIES4);
	fs->sb->generation = ff_cpu_to_le64(ff_le64(fs->sb->generation) + 1);
	fs->sb->write_time = ff_cpu_to_le64(ff_wall_ns() / 1000000000ull);
	rc = ffs_batch_init(&b, 2);
	if (rc < 0) {
		free(img);
		return rc;
	}
	for (unsigned k = 0; k < 2 && rc == 0; k++) {
		uint64_t block = ffs_sb_block[group + 2 * k];

		memcpy(&img[k], fs->sb, FFS_BLOCK);
		ffs_block_seal(&img[k], FFS_B_SUPER, block);
		rc = batch_add(fs, &b, block, &img[k]);
	}
	{
		int rc2 = ffs_batch_wait(&b); /* whatever was submitted lands before img goes */

		rc = rc < 0 ? rc : rc2;
	}
	pthread_mutex_destroy(&b.lock);
	pthread_cond_destroy(&b.cond);
	free(img);
	if (rc == 0)
		rc = ff_raid_flush(fs->raid);
	if (rc == 0)
		fs->sb_groups_written |= 1u << group;
	fs->sb_next_copy = !group;
	return rc;
}
