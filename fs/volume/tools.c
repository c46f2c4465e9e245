/* SPDX-License-Identifier: MIT */
/*
 * The small named changes the offline tools (fsck, the fsck corpus's
 * tools) make to the library's in-memory state, and the accessors they
 * read it through (ffs_tools.h): struct ffs stays private to fs/.
 */
#include <errno.h>
#include <string.h>

#include "fs/volume/volume.h"
#include "io/bitmap.h"

const struct ffs_super *ffs_tools_super(const struct ffs *fs)
{
	return fs->sb;
}

const struct ff_geom *ffs_tools_geom(const struct ffs *fs)
{
	return fs->g;
}

bool ffs_tools_read_only(const struct ffs *fs)
{
	return fs->ro;
}

const struct ff_geom *ffs_tools_row_geom(const struct ffs *fs, uint64_t p)
{
	return ffs_row_geo(fs, p)->g;
}

uint64_t ffs_tools_stripe_bytes_max(const struct ffs *fs)
{
	return fs->geo[1].g ? FF_MAX(fs->geo[0].g->stripe_bytes, fs->geo[1].g->stripe_bytes)
			    : fs->geo[0].g->stripe_bytes;
}

uint64_t ffs_tools_old_rows_start(const struct ffs *fs)
{
	return fs->orows_start;
}

/* Unchecked: ffsck-corrupt sets wrong values on purpose. */
void ffs_tools_set_itable_hwm(struct ffs *fs, uint64_t blocks)
{
	fs->sb->itable_hwm = ff_cpu_to_le64(blocks);
}

void ffs_tools_set_version(struct ffs *fs, uint32_t version)
{
	FF_ASSERT(version >= FFS_VERSION_MIN && version <= FFS_VERSION_MAX);
	fs->sb->version = ff_cpu_to_le32(version);
}

void ffs_tools_set_scrub_record(struct ffs *fs, unsigned slot, const struct ffs_scrub_record *r)
{
	struct ffs_scrub_record *to = &fs->sb->scrub_history.rec[slot];

	FF_ASSERT(slot < FFS_SB_SCRUB_RECORDS);
	if (r)
		memcpy(to, r, sizeof(*to));
	else
		memset(to, 0, sizeof(*to));
}

/* The in-memory bitmap `map` and its size in bits (from the superblock). */
static uint64_t *map_of(const struct ffs *fs, enum ffs_tools_map map, uint64_t *nbits)
{
	switch (map) {
	case FFS_TOOLS_INODES:
		*nbits = ff_le64(fs->sb->ninodes);
		return fs->ibits;
	case FFS_TOOLS_STRIPES:
		*nbits = ff_le64(fs->sb->nstripes);
		return fs->sbits;
	case FFS_TOOLS_POOL:
		*nbits = ff_le64(fs->sb->pool_blocks);
		return fs->mbits;
	case FFS_TOOLS_OLD_ROWS:
		*nbits = ff_le64(fs->sb->nstripes);
		return fs->orows;
	}
	FF_ASSERT(!"unknown allocator map");
	return NULL;
}

/* NULL for the old-rows map, which keeps no count. */
static uint64_t *free_count_of(struct ffs *fs, enum ffs_tools_map map)
{
	if (map == FFS_TOOLS_OLD_ROWS)
		return NULL;
	return map == FFS_TOOLS_INODES ? &fs->free_inodes
	       : map == FFS_TOOLS_STRIPES ? &fs->free_stripes : &fs->free_mblocks;
}

bool ffs_tools_bit(const struct ffs *fs, enum ffs_tools_map map, uint64_t i)
{
	uint64_t nbits;
	const uint64_t *bits = map_of(fs, map, &nbits);

	FF_ASSERT(i < nbits);
	return bits && ff_bit_test(bits, i);
}

uint64_t ffs_tools_inodes_end(const struct ffs *fs)
{
	uint64_t n = ff_le64(fs->sb->ninodes);

	for (uint64_t w = FF_BITMAP_WORDS(n); w-- > 0;)
		if (fs->ibits[w])
			return FF_MIN(w * 64 + 63 - (uint64_t)__builtin_clzll(fs->ibits[w]), n - 1) + 1;
	return 0;
}

void ffs_tools_take_inode(struct ffs *fs, uint64_t ino)
{
	FF_ASSERT(ino < ff_le64(fs->sb->ninodes));
	if (!ff_bit_test(fs->ibits, ino)) {
		ff_bit_set(fs->ibits, ino);
		FF_ASSERT(fs->free_inodes > 0);
		fs->free_inodes--;
	}
}

void ffs_tools_alloc_from(struct ffs *fs, enum ffs_tools_map map,
			  bool (*used)(const void *arg, uint64_t i), const void *arg)
{
	uint64_t nbits;
	uint64_t *bits = map_of(fs, map, &nbits), *nfree = free_count_of(fs, map), left = nbits;

	if (!bits)
		return; /* no old rows: none to mark */
	/* bit by bit in place: used() may read this very map (fsck keeps an
	 * old row old while it is in use), and each bit is asked before it
	 * changes */
	for (uint64_t i = 0; i < nbits; i++) {
		bool u = used(arg, i);

		if (u)
			ff_bit_set(bits, i);
		else
			ff_bit_clear(bits, i);
		left -= u;
	}
	if (nfree)
		*nfree = left;
}

void ffs_tools_ihold(struct ffs *fs, struct finode *fi)
{
	(void)fs;
	fi->refs++; /* may be 0: an inode kept by ffs_tools_ikeep stays cached */
}

void ffs_tools_ikeep(struct ffs *fs, struct finode *fi)
{
	(void)fs;
	fi->nlookup++;
}

/* ---- ffs_grow (ffs.h): the steps of fs/grow/grow.c, mount by mount ---- */

/* The filesystem's mount for the grow's steps: small caches, no daemon.
 * Every cache is touched whole when it is made (ff_alloc_pool_buf): the
 * patch cache's default 128 MiB took 11 % of an offline grow of 480 MB,
 * at each of its two mounts.  The read cache's 16 MiB (its floor of 8
 * stripes at 2 MiB) read each byte the restripe moved once: 3.20 GB read
 * to move 3.19 (RAID5 4 -> 5 on the disk, cold cache), as 16 entries did,
 * since a read-ahead keeps what it read ahead (rcache.c rc_victim). */
static int grow_mount(const char *const *paths, unsigned n, struct ffs **fs, struct ff_err *err)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .patch_cache_bytes = 16 << 20 };

	return ffs_mount(paths, n, &o, fs, err);
}

int ffs_grow(const char *const *paths, unsigned n, const char *const *add, unsigned nadd,
	     bool force, bool restripe, struct ff_err *err)
{
	const char *all[FF_MEMBER_SET_MAX];
	struct ffs *fs;
	int rc;

	if (n + nadd > FF_MEMBER_SET_MAX) {
		ff_err_set(err, "%u members and %u more: at most %u can be given", n, nadd,
			   FF_MEMBER_SET_MAX);
		return -EINVAL;
	}
	memcpy(all, paths, n * sizeof(*all));
	memcpy(all + n, add, nadd * sizeof(*all));
	/* a grow that stopped after the array grew: it goes on from there */
	if (nadd && ff_raid_grow_written(paths, n, add[0]) == 1)
		return restripe ? ffs_grow_resume(all, n + nadd, err) : 0;
	/* every check of the members first: a refusal changes nothing */
	rc = ff_raid_grow_check(paths, n, add, nadd, force, err);
	if (rc < 0)
		return rc;
	rc = grow_mount(paths, n, &fs, err);
	if (rc < 0)
		return rc;
	rc = ffs_sync(fs);
	if (rc == 0) /* same level: nadd more data chunks a row */
		rc = ffs_grow_room(fs, fs->stripe_bytes + (uint64_t)nadd * fs->g->chunk_bytes, err);
	if (rc == 0) {
		pthread_mutex_lock(&fs->lock);
		rc = ffs_grow_prepare(fs, ff_raid_geom(fs->raid)->nmembers + nadd, err);
		pthread_mutex_unlock(&fs->lock);
	}
	if (ffs_unmount(fs) < 0 && rc == 0) {
		ff_err_set(err, "cannot unmount after preparing the grow");
		rc = -EIO;
	}
	if (rc == 0)
		rc = ff_raid_grow(paths, n, add, nadd, force, err);
	if (rc < 0 || !restripe)
		return rc;
	return ffs_grow_resume(all, n + nadd, err);
}

int ffs_grow_resume(const char *const *paths, unsigned n, struct ff_err *err)
{
	struct ffs_grow_progress pr;
	struct ffs *fs;
	int rc = grow_mount(paths, n, &fs, err); /* takes a prepared grow on (ffs_grow_mount) */

	if (rc < 0)
		return rc;
	rc = ffs_grow_run(fs, &pr);
	if (rc < 0)
		ff_err_set(err, "the restripe stopped: %s (run it again to go on)", strerror(-rc));
	else if (pr.rows_left)
		ff_err_set(err, "%llu rows are still in the old geometry after the restripe",
			   (unsigned long long)pr.rows_left);
	if (rc == 0 && pr.rows_left)
		rc = -EAGAIN;
	if (ffs_unmount(fs) < 0 && rc == 0) {
		ff_err_set(err, "cannot unmount after the restripe");
		rc = -EIO;
	}
	return rc;
}
