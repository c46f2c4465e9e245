/* SPDX-License-Identifier: MIT */
/*
 * Entry points for fsck.framefs: the mount sequence of mount.c taken apart
 * so that the checker decides at each step (see check.h).
 */
#include <errno.h>
#include <string.h>

#include "fs/check.h"

int ffs_check_open(const char *const *paths, unsigned n, bool ro, size_t meta_cache_bytes,
		   struct ffs **out, struct ff_err *err)
{
	struct ff_raid_opts o = { .read_only = ro, .workers = 2 };
	struct ffs *fs = calloc(1, sizeof(*fs));
	int rc;

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	fs->ro = ro;
	fs->checking = true;
	fs->opts.ro = ro;
	fs->opts.meta_cache_bytes = meta_cache_bytes ? meta_cache_bytes : 256 * FF_MiB;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->commit_cond, NULL);
	pthread_cond_init(&fs->committed_cond, NULL);
	rc = ff_raid_assemble(paths, n, &o, &fs->raid, err);
	if (rc < 0) {
		pthread_mutex_destroy(&fs->lock);
		pthread_cond_destroy(&fs->commit_cond);
		pthread_cond_destroy(&fs->committed_cond);
		free(fs);
		return rc;
	}
	fs->g = ff_raid_geom(fs->raid);
	fs->stripe_bytes = fs->g->stripe_bytes;
	*out = fs;
	return 0;
}

int ffs_check_close(struct ffs *fs)
{
	int rc;

	icache_free(fs);
	meta_cache_free(fs);
	alloc_free_all(fs);
	journal_free(fs); /* what mount.c's teardown frees, but for the daemon's parts */
	free(fs->sb);
	rc = ff_raid_close(fs->raid);
	pthread_mutex_destroy(&fs->lock);
	pthread_cond_destroy(&fs->commit_cond);
	pthread_cond_destroy(&fs->committed_cond);
	free(fs);
	return rc;
}

int ffs_check_read_copy(struct ffs *fs, uint64_t no, unsigned copy, void *buf)
{
	struct ff_raid_io io;

	FF_ASSERT(copy >= 1 && copy <= fs->g->meta_copies);
	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_READ;
	io.space = FF_SPACE_META;
	io.meta_copy = (uint8_t)copy;
	io.off = no * FFS_BLOCK;
	io.len = FFS_BLOCK;
	io.buf = buf;
	return ff_raid_submit_wait(fs->raid, &io);
}

/* The layout mkfs would compute for this array and the superblock's own
 * inode and journal sizes must be exactly the superblock's. */
static bool layout_matches(const struct ffs *fs, const struct ffs_super *sb)
{
	struct ffs_super *want = calloc(1, sizeof(*want));
	struct ff_err err;
	bool ok;

	if (!want)
		return false;
	ok = ffs_layout(want, fs->g, ff_le64(sb->ninodes), ff_le64(sb->journal_blocks), &err) == 0;
#define SAME(f) (want->f == sb->f)
	ok = ok && SAME(meta_blocks) && SAME(journal_start) && SAME(journal_blocks) &&
	     SAME(itable_start) && SAME(itable_blocks) && SAME(ninodes) && SAME(ibitmap_start) &&
	     SAME(ibitmap_blocks) && SAME(sbitmap_start) && SAME(sbitmap_blocks) &&
	     SAME(mbitmap_start) && SAME(mbitmap_blocks) && SAME(csum_start) && SAME(csum_blocks) &&
	     SAME(csum_entry_bytes) && SAME(csum_per_block) && SAME(pool_start) && SAME(pool_blocks);
#undef SAME
	free(want);
	return ok;
}

const char *ffs_check_super_problem(const struct ffs *fs, const struct ffs_super *sb)
{
	const struct ff_geom *g = fs->g;

	if (ff_le64(sb->magic) != FFS_SB_MAGIC)
		return "no framefs magic";
	if (ff_le32(sb->version) != FFS_VERSION || ff_le32(sb->block_bytes) != FFS_BLOCK)
		return "unsupported version or block size";
	if (memcmp(sb->uuid, ff_raid_uuid(fs->raid), 16) != 0)
		return "made for another array";
	if (ff_le32(sb->level) != g->level || ff_le32(sb->nmembers) != g->nmembers ||
	    ff_le32(sb->chunk_bytes) != g->chunk_bytes || ff_le32(sb->ndata) != g->ndata ||
	    ff_le64(sb->stripe_bytes) != g->stripe_bytes || ff_le64(sb->nstripes) != g->nstripes)
		return "geometry differs from the array";
	/* bound the sizes before computing with them */
	if (ff_le64(sb->meta_blocks) != g->meta_bytes / FFS_BLOCK ||
	    ff_le64(sb->journal_blocks) >= ff_le64(sb->meta_blocks) ||
	    ff_le64(sb->ninodes) / FFS_INODES_PER_BLOCK >= ff_le64(sb->meta_blocks) ||
	    !layout_matches(fs, sb))
		return "layout is inconsistent";
	return NULL;
}

int ffs_check_start(struct ffs *fs, const struct ffs_super *sb, unsigned next_copy)
{
	int rc;

	FF_ASSERT(!fs->sb && next_copy < 2);
	fs->sb = ff_alloc_aligned(FFS_BLOCK);
	if (!fs->sb)
		return -ENOMEM;
	memcpy(fs->sb, sb, FFS_BLOCK);
	fs->sb_next_copy = next_copy;
	rc = meta_cache_init(fs, fs->opts.meta_cache_bytes);
	return rc < 0 ? rc : icache_init(fs);
}

int ffs_check_journal_pending(struct ffs *fs, bool *pending)
{
	bool ro = fs->ro;
	unsigned n = 0;
	int rc;

	/* read-only, journal_replay stops at the first committed transaction */
	fs->ro = true;
	rc = journal_replay(fs, &n);
	fs->ro = ro;
	*pending = rc == -EROFS;
	return rc == -EROFS ? 0 : rc;
}

int ffs_check_journal_replay(struct ffs *fs, unsigned *replayed)
{
	int rc;

	FF_ASSERT(!fs->ro);
	rc = journal_replay(fs, replayed);
	meta_cache_drop_clean(fs); /* replay wrote home blocks behind the cache */
	return rc;
}

int ffs_check_journal_discard(struct ffs *fs)
{
	FF_ASSERT(!fs->ro);
	/* a sequence number no record in the journal carries: replay stops at once */
	fs->j_head = ff_le64(fs->sb->journal_tail_pos);
	fs->j_seq = ff_le64(fs->sb->journal_tail_seq) + (1ull << 32);
	fs->j_used = 0;
	fs->sb->journal_tail_seq = ff_cpu_to_le64(fs->j_seq);
	meta_cache_drop_clean(fs);
	return super_write(fs);
}

static int load_one(struct ffs *fs, uint64_t start, uint64_t nblocks, uint64_t nbits,
		    uint64_t **out, uint64_t *nfree)
{
	uint64_t *bits = calloc(FF_DIV_ROUND_UP(nbits, 64) + 1, sizeof(uint64_t));
	struct ffs_bitmap_block *blk = ff_alloc_aligned(FFS_BLOCK);
	uint64_t used = 0;

	if (!bits || !blk) {
		free(bits);
		free(blk);
		return -ENOMEM;
	}
	for (uint64_t b = 0; b < nblocks; b++) {
		uint64_t first = b * FFS_BITS_PER_BLOCK;
		uint64_t n = FF_MIN((uint64_t)FFS_BITS_PER_BLOCK, nbits - first);
		bool ok = meta_read_check(fs, start + b, FFS_B_BITMAP, blk, true) == 0;

		for (uint64_t i = 0; i < n; i++)
			if (!ok || ((blk->bits[i / 8] >> (i % 8)) & 1)) {
				bits[(first + i) / 64] |= 1ull << ((first + i) % 64);
				used++;
			}
	}
	free(blk);
	*out = bits;
	*nfree = nbits - used;
	return 0;
}

int ffs_check_load_bitmaps(struct ffs *fs)
{
	const struct ffs_super *sb = fs->sb;
	int rc;

	rc = load_one(fs, ff_le64(sb->ibitmap_start), ff_le64(sb->ibitmap_blocks),
		      ff_le64(sb->ninodes), &fs->ibits, &fs->free_inodes);
	if (rc == 0)
		rc = load_one(fs, ff_le64(sb->sbitmap_start), ff_le64(sb->sbitmap_blocks),
			      ff_le64(sb->nstripes), &fs->sbits, &fs->free_stripes);
	if (rc == 0)
		rc = load_one(fs, ff_le64(sb->mbitmap_start), ff_le64(sb->mbitmap_blocks),
			      ff_le64(sb->pool_blocks), &fs->mbits, &fs->free_mblocks);
	return rc;
}

int ffs_check_finish(struct ffs *fs)
{
	int rc;

	FF_ASSERT(!fs->ro);
	/* commit and write everything home: nothing in the journal needs replaying */
	rc = journal_checkpoint(fs);
	if (rc < 0)
		return rc;
	fs->sb->state = ff_cpu_to_le32(FFS_CLEAN);
	rc = super_write(fs);
	return rc < 0 ? rc : super_write(fs);
}
