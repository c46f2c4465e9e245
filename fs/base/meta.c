/* SPDX-License-Identifier: MIT */
/*
 * The metadata block cache.  Blocks of the mirrored META space are read
 * once, verified (type, self block number, crc32c), and kept; a block whose
 * copy fails verification is read from the other mirror copies and the good
 * image is written back over all of them.  Dirty blocks belong to the
 * running transaction and stay pinned until it commits; clean, unpinned
 * blocks are evicted least-recently-used first when the cache is full.
 */
#include <errno.h>
#include <string.h>

#include "fs/fs_i.h"
#include "io/hash.h"

static unsigned mhash(const struct ffs *fs, uint64_t no)
{
	return ff_hash_bucket(no, fs->mhash_size - 1);
}

/*
 * Buffers come from one slab made at mount (max_mbufs of them).  Only when
 * every one is dirty or pinned — a single operation dirtying more blocks
 * than the cache holds — does a block get its own allocation, freed as soon
 * as it is clean again.
 */
int ffs_meta_cache_init(struct ffs *fs, size_t max_bytes)
{
	fs->max_mbufs = (unsigned)FF_MAX(max_bytes / FFS_BLOCK, 256u);
	fs->mhash_size = 1;
	while (fs->mhash_size < fs->max_mbufs)
		fs->mhash_size <<= 1;
	fs->mhash = calloc(fs->mhash_size, sizeof(*fs->mhash));
	fs->mslab = calloc(fs->max_mbufs, sizeof(*fs->mslab));
	fs->mslab_data = ff_alloc_arena((size_t)fs->max_mbufs * FFS_BLOCK);
	fs->small_buf = ff_alloc_aligned(FFS_BLOCK);
	if (!fs->mhash || !fs->mslab || !fs->mslab_data || !fs->small_buf)
		return -ENOMEM;
	for (unsigned i = 0; i < fs->max_mbufs; i++) {
		fs->mslab[i].data = fs->mslab_data + (size_t)i * FFS_BLOCK;
		fs->mslab[i].hnext = fs->mfree;
		fs->mfree = &fs->mslab[i];
	}
	ff_lru_init(&fs->lru);
	return 0;
}

static bool from_slab(const struct ffs *fs, const struct mbuf *mb)
{
	return mb >= fs->mslab && mb < fs->mslab + fs->max_mbufs;
}

static void mb_release_mem(struct ffs *fs, struct mbuf *mb)
{
	if (from_slab(fs, mb)) {
		mb->hnext = fs->mfree;
		fs->mfree = mb;
	} else {
		free(mb->data);
		free(mb);
	}
}

static void mb_free(struct ffs *fs, struct mbuf *mb)
{
	struct mbuf **pp = &fs->mhash[mhash(fs, mb->blockno)];

	while (*pp != mb)
		pp = &(*pp)->hnext;
	*pp = mb->hnext;
	ff_lru_remove(&mb->lru);
	fs->nmbufs--;
	mb_release_mem(fs, mb);
}

/* Free clean, unpinned blocks from the cold end: every one (all), or
 * until there is room for one more. */
static void evict(struct ffs *fs, bool all)
{
	struct ff_lru_node *n = ff_lru_oldest(&fs->lru), *next;

	for (; n && (all || fs->nmbufs >= fs->max_mbufs || !fs->mfree); n = next) {
		struct mbuf *mb = FF_LRU_ENTRY(n, struct mbuf, lru);

		next = ff_lru_newer(&fs->lru, n);
		if (!mb->dirty && !mb->ckpt && !mb->pins)
			mb_free(fs, mb);
	}
}

void ffs_meta_cache_drop_clean(struct ffs *fs)
{
	evict(fs, true);
}

void ffs_meta_cache_free(struct ffs *fs)
{
	free(fs->small_buf);
	fs->small_buf = NULL;
	if (!fs->mhash)
		return;
	for (unsigned i = 0; i < fs->mhash_size; i++) {
		while (fs->mhash[i]) {
			struct mbuf *mb = fs->mhash[i];

			fs->mhash[i] = mb->hnext;
			if (!from_slab(fs, mb)) {
				free(mb->data);
				free(mb);
			}
		}
	}
	free(fs->mhash);
	free(fs->mslab);
	ff_free_arena(fs->mslab_data, (size_t)fs->max_mbufs * FFS_BLOCK);
	fs->mhash = NULL;
	fs->mslab = NULL;
	fs->mslab_data = NULL;
	fs->nmbufs = 0;
}

static struct mbuf *lookup(struct ffs *fs, uint64_t no)
{
	for (struct mbuf *mb = fs->mhash[mhash(fs, no)]; mb; mb = mb->hnext)
		if (mb->blockno == no)
			return mb;
	return NULL;
}

static struct mbuf *mb_alloc(struct ffs *fs, uint64_t no, uint32_t type)
{
	struct mbuf *mb;
	unsigned h;

	evict(fs, false);
	if (fs->mfree) {
		uint8_t *data;

		mb = fs->mfree;
		fs->mfree = mb->hnext;
		data = mb->data;
		memset(mb, 0, sizeof(*mb));
		mb->data = data;
	} else {
		mb = calloc(1, sizeof(*mb));
		if (!mb)
			return NULL;
		mb->data = ff_alloc_aligned(FFS_BLOCK);
		if (!mb->data) {
			free(mb);
			return NULL;
		}
	}
	mb->blockno = no;
	mb->type = type;
	h = mhash(fs, no);
	mb->hnext = fs->mhash[h];
	fs->mhash[h] = mb;
	fs->nmbufs++;
	return mb;
}

static int read_copy(struct ffs *fs, uint64_t no, void *buf, unsigned copy)
{
	struct ff_raid_io io;

	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_READ;
	io.space = FF_SPACE_META;
	io.off = no * FFS_BLOCK;
	io.len = FFS_BLOCK;
	io.buf = buf;
	io.meta_copy = (uint8_t)copy;
	return ff_raid_submit_wait(fs->raid, &io);
}

int ffs_meta_read_verified(struct ffs *fs, uint64_t no, uint32_t type, void *buf)
{
	return ffs_meta_read_check(fs, no, type, buf, false);
}

/* A copy of block no is good: its header (sealed blocks) or the crc its
 * pcsum entry gives (small data, FFS_B_SDATA). */
static bool copy_good(const void *buf, uint32_t type, uint64_t no, uint32_t crc)
{
	return type == FFS_B_SDATA ? ffs_sdata_crc(no, buf) == crc : ffs_block_check(buf, type, no) == 0;
}

static int read_good(struct ffs *fs, uint64_t no, uint32_t type, uint32_t crc, void *buf, bool quiet)
{
	int rc = read_copy(fs, no, buf, 0), bad = 0;

	if (rc == 0 && copy_good(buf, type, no, crc))
		return 0;
	/* the first live copy is bad or unreadable: try each copy in turn */
	for (unsigned c = 1; c <= fs->g->meta_copies; c++) {
		if (read_copy(fs, no, buf, c) < 0 || !copy_good(buf, type, no, crc)) {
			bad++;
			continue;
		}
		/* fsck reports a bad copy in its own pass and repairs it there */
		if (!fs->ro && !fs->checking && ffs_meta_write_raw(fs, no, buf, 1) == 0) {
			atomic_fetch_add(&fs->stats.meta_repaired, 1);
			ff_log(FF_LOG_WARN, "metadata block %llu: a bad copy was repaired",
			       (unsigned long long)no);
		}
		return 0;
	}
	if (!quiet && !fs->checking)
		ff_log(FF_LOG_ERR, "metadata block %llu (type %08x): no copy passes its checksum",
		       (unsigned long long)no, type);
	return rc < 0 ? rc : -EBADMSG;
}

int ffs_meta_read_check(struct ffs *fs, uint64_t no, uint32_t type, void *buf, bool quiet)
{
	FF_ASSERT(type != FFS_B_SDATA); /* its check needs the crc: ffs_meta_read_sdata */
	return read_good(fs, no, type, 0, buf, quiet);
}

static int check_range(const struct ffs *fs, uint64_t no);

int ffs_meta_read_sdata(struct ffs *fs, uint64_t no, uint32_t crc, void *buf)
{
	struct mbuf *mb;
	int rc = check_range(fs, no);

	if (rc < 0)
		return rc;
	mb = lookup(fs, no);
	if (mb) {
		if (mb->type != FFS_B_SDATA)
			return -EUCLEAN; /* a pointer to a block of another kind */
		memcpy(buf, mb->data, FFS_BLOCK);
		return 0;
	}
	return read_good(fs, no, FFS_B_SDATA, crc, buf, false);
}

bool ffs_meta_home_stale(struct ffs *fs, uint64_t no)
{
	const struct mbuf *mb = lookup(fs, no);

	return mb && (mb->dirty || mb->ckpt);
}

int ffs_meta_write_raw(struct ffs *fs, uint64_t no, const void *buf, uint64_t nblocks)
{
	return ff_raid_rw(fs->raid, FF_RAID_WRITE, FF_SPACE_META, no * FFS_BLOCK, (void *)buf,
			  nblocks * FFS_BLOCK);
}

static int check_range(const struct ffs *fs, uint64_t no)
{
	if (no >= ff_le64(fs->sb->meta_blocks)) {
		ff_log(FF_LOG_ERR, "metadata block %llu is beyond the metadata area",
		       (unsigned long long)no);
		return -EUCLEAN;
	}
	return 0;
}

int ffs_mb_get(struct ffs *fs, uint64_t no, uint32_t type, struct mbuf **out)
{
	struct mbuf *mb;
	int rc = check_range(fs, no);

	if (rc < 0)
		return rc;
	mb = lookup(fs, no);
	if (mb) {
		if (mb->type != type)
			return -EUCLEAN; /* a pointer to a block of another kind */
		ff_lru_touch(&fs->lru, &mb->lru);
		mb->pins++;
		*out = mb;
		return 0;
	}
	mb = mb_alloc(fs, no, type);
	if (!mb)
		return -ENOMEM;
	rc = ffs_meta_read_verified(fs, no, type, mb->data);
	if (rc < 0) {
		mb_free(fs, mb);
		return rc == -EBADMSG ? -EUCLEAN : rc;
	}
	ff_lru_touch(&fs->lru, &mb->lru);
	mb->pins = 1;
	*out = mb;
	return 0;
}

int ffs_mb_new(struct ffs *fs, uint64_t no, uint32_t type, struct mbuf **out)
{
	struct mbuf *mb;
	int rc = check_range(fs, no);

	if (rc < 0)
		return rc;
	mb = lookup(fs, no);
	if (!mb) {
		mb = mb_alloc(fs, no, type);
		if (!mb)
			return -ENOMEM;
		ff_lru_touch(&fs->lru, &mb->lru);
	}
	mb->type = type;
	memset(mb->data, 0, FFS_BLOCK);
	mb->pins++;
	*out = mb;
	return 0;
}

void ffs_mb_put(struct ffs *fs, struct mbuf *mb)
{
	(void)fs;
	FF_ASSERT(mb->pins > 0);
	mb->pins--;
}

void ffs_mb_dirty(struct ffs *fs, struct mbuf *mb)
{
	FF_ASSERT(!fs->ro);
	if (mb->dirty)
		return;
	mb->dirty = true;
	mb->tx_next = fs->tx_head;
	fs->tx_head = mb;
	fs->tx_count++;
}
