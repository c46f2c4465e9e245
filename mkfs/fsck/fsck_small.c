/* SPDX-License-Identifier: MIT */
/*
 * Small files (format version 3, fs/meta/small.c): a regular file flagged
 * FFS_I_SMALL keeps its bytes in pool blocks its inode lists (u.small),
 * each checked against its entry in the small-data checksum table (the
 * owner inode and ffs_sdata_crc of the block's data).
 *
 * The scan of pass 2 looks at a small inode's flags and fields only
 * (fsck_small_inode, fsck_pass2.c); fsck_small_check does the rest once
 * every inode has been seen, so that the blocks that carry a header (B+tree
 * nodes, xattr, value and symlink blocks) have claimed their place in the
 * pool first: a small-data block has no header that could prove it is one,
 * so a block both claim is the small file's to lose.
 *
 *  1. Claims: every block each small file lists, once.  A block two small
 *     files list goes to the one its checksum entry names (the entry is
 *     written in the transaction that writes the list: small.c), else to
 *     the first.
 *  2. The table's blocks: one with no readable copy is rebuilt from the
 *     claims and the data.
 *  3. Each file's list, in order: a block outside the pool, listed twice,
 *     lost to another claim, or whose data matches its checksum in no copy
 *     ends the file there; it is truncated to the blocks before it (data is
 *     lost: asked, as for the extents of a damaged map).  So is a list
 *     longer than the volume's small_max allows.  A block whose entry names
 *     another inode, or none, while its data matches the entry's checksum
 *     keeps its data: the entry is fixed (entry_fix says why).
 *  4. Entries that name an inode for blocks no small file holds are
 *     cleared.
 *
 * The size is not held to the list: a small file may be longer than its
 * blocks (extended by truncate: the rest of stripe 0 reads as zeros, and
 * nothing maps what lies past it), and blocks past the size are never read
 * (a store may land in a transaction before the size that covers it:
 * wbuf.c's hi).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

bool fsck_small_allowed(const struct fsck *c)
{
	return ff_le32(c->sb->small_max) != 0;
}

/* The blocks a small file may hold on this volume.  A rebuilt superblock
 * says mkfs's default threshold (fs/volume/check.c), which need not be the one
 * the volume was made with: then only the inode's own room bounds it. */
static uint32_t blocks_max(const struct fsck *c)
{
	if (c->sb_rebuilt)
		return FFS_SMALL_BLOCKS_MAX;
	return (uint32_t)FF_MIN(FFS_SMALL_BLOCKS_MAX,
				FF_DIV_ROUND_UP(ff_le32(c->sb->small_max), FFS_BLOCK));
}

/* How much of the list the library reads: the count, within the list. */
static uint32_t listed(const struct ffs_inode *d)
{
	return FF_MIN(ff_le32(d->u.small.count), FFS_SMALL_BLOCKS_MAX);
}

/* Entry i of the list: an index into the pool (pool_blocks or more: outside). */
static uint64_t pool_index(const struct ffs_inode *d, uint32_t i)
{
	return ff_le32(d->u.small.block[i]);
}

static bool listed_before(const struct ffs_inode *d, uint32_t i, uint64_t idx)
{
	for (uint32_t j = 0; j < i; j++)
		if (pool_index(d, j) == idx)
			return true;
	return false;
}

static bool is_small(const struct fsck *c, uint64_t ino)
{
	const struct ino_info *in = &c->ino[ino];

	return (in->flags & IS_USED) && in->dtype == DT_REG && (in->diskflags & FFS_I_SMALL);
}

/* Does small file ino hold pool block idx (its claim, settled)? */
static bool holds(const struct fsck *c, uint64_t ino, uint64_t idx)
{
	return idx < c->pool_blocks && c->pool_type[idx] == POOL_SDATA && c->pool_owner[idx] == ino;
}

static void release(struct fsck *c, uint64_t idx)
{
	c->pool_owner[idx] = 0;
	c->pool_type[idx] = 0;
}

void fsck_small_inode(struct fsck *c, uint64_t ino, struct ffs_inode *d, bool *dirty)
{
	uint32_t flags = ff_le32(d->flags);

	if ((flags & (FFS_I_SMALL | FFS_I_BTREE)) != (FFS_I_SMALL | FFS_I_BTREE))
		return;
	/*
	 * The library never sets both: a file moves to stripes in the
	 * transaction that maps its stripe 0 (wbuf.c).  Without a root the
	 * tree flag maps nothing: it goes, which loses nothing.  With one, the
	 * file had more extents than its inode holds, far more than a small
	 * file's bytes: the block list goes (step 4 and pass 4 give its blocks
	 * back).
	 */
	if (!d->root) {
		struct pctx p = { .ino = ino, .num = flags, .str = fsck_type_name(DT_REG) };

		if (!fsck_fix_problem(c, PR_2_BAD_FLAGS, &p))
			return;
		flags &= ~(uint32_t)FFS_I_BTREE;
	} else {
		struct pctx p = { .ino = ino, .blk = ff_le64(d->root),
				  .num = ff_le32(d->u.small.count) };

		if (!fsck_fix_problem(c, PR_2_SMALL_TREE, &p))
			return;
		flags &= ~(uint32_t)FFS_I_SMALL;
		memset(&d->u, 0, sizeof(d->u));
	}
	d->flags = ff_cpu_to_le32(flags);
	c->ino[ino].diskflags = (uint8_t)flags;
	*dirty = true;
}

/* ---- 1. claims --------------------------------------------------------------- */

/* The inode the checksum entry of pool block idx names; 0 when unreadable. */
static uint32_t entry_ino(struct fsck *c, uint64_t idx)
{
	uint32_t ino, crc;

	return ffs_pcsum_get(c->fs, c->pool_start + idx, &ino, &crc) == 0 ? ino : 0;
}

static void claim(struct fsck *c, uint64_t ino, const struct ffs_inode *d)
{
	for (uint32_t i = 0; i < listed(d); i++) {
		uint64_t idx = pool_index(d, i), other;

		if (idx >= c->pool_blocks ||
		    fsck_pool_claim(c, c->pool_start + idx, ino, POOL_SDATA, &other))
			continue;
		/* another small file listed it first: the one the entry names keeps it */
		if (c->pool_type[idx] == POOL_SDATA && other != ino && entry_ino(c, idx) == ino)
			c->pool_owner[idx] = (uint32_t)ino;
	}
}

/* ---- 2. the table's blocks ------------------------------------------------------ */

/* How many entries of table block b describe pool blocks (the last block's
 * tail lies past the pool). */
static uint64_t entries_in(const struct fsck *c, uint64_t b)
{
	uint64_t first = b * FFS_PCSUM_PER_BLOCK;

	return first < c->pool_blocks ? FF_MIN(FFS_PCSUM_PER_BLOCK, c->pool_blocks - first) : 0;
}

/* The first copy of META block no that can be read, into buf. */
static bool any_copy(struct fsck *c, uint64_t no, void *buf)
{
	for (unsigned k = 1; k <= ffs_tools_geom(c->fs)->meta_copies; k++)
		if (ffs_check_read_copy(c->fs, no, k, buf) == 0)
			return true;
	return false;
}

/*
 * Table block b, which nothing can read, written again from the claims:
 * each block a small file holds gets its owner and the checksum of its data
 * as the first readable copy has it.  With the entry gone nothing tells a
 * good copy from a bad one; pass 5 then makes the other copies the same.
 */
static int table_block_rebuild(struct fsck *c, uint64_t b)
{
	struct ffs_pcsum_block *pb;
	struct mbuf *mb;
	int rc = ffs_mb_new(c->fs, ff_le64(c->sb->pcsum_start) + b, FFS_B_PCSUM, &mb);

	if (rc < 0)
		return rc;
	pb = (struct ffs_pcsum_block *)mb->data;
	for (uint64_t i = 0; i < entries_in(c, b); i++) {
		uint64_t idx = b * FFS_PCSUM_PER_BLOCK + i, no = c->pool_start + idx;

		if (c->pool_type[idx] != POOL_SDATA || !any_copy(c, no, c->buf))
			continue;
		pb->e[i].ino = ff_cpu_to_le32(c->pool_owner[idx]);
		pb->e[i].crc = ff_cpu_to_le32(ffs_sdata_crc(no, c->buf));
	}
	ffs_mb_dirty(c->fs, mb);
	ffs_mb_put(c->fs, mb);
	return fsck_commit(c, false);
}

static int table_check(struct fsck *c)
{
	uint64_t start = ff_le64(c->sb->pcsum_start);
	int rc = 0;

	for (uint64_t b = 0; b < ff_le64(c->sb->pcsum_blocks) && rc == 0 && !c->stop; b++) {
		struct mbuf *mb;

		rc = ffs_mb_get(c->fs, start + b, FFS_B_PCSUM, &mb);
		if (rc == 0)
			ffs_mb_put(c->fs, mb);
		if (rc == 0 || rc == -ENOMEM)
			continue;
		rc = 0;
		if (fsck_fix_problem(c, PR_2_PCSUM_BLOCK, &(struct pctx){ .blk = start + b }))
			rc = table_block_rebuild(c, b);
	}
	return rc;
}

/* ---- 3. each file's list ------------------------------------------------------------ */

/*
 * The entry of block no names `owner` (another inode, or none), but small
 * file ino holds the block and its data matches the entry's checksum.  The
 * checksum is seeded with the block number, not the owner: it proves the
 * data is what was last stored in this block, not for whom.  The list is
 * what the library maps the file by, and no other structure holds the
 * block (the claims are settled), so the list is believed and the entry
 * fixed, as the data checksum table's owners are fixed from the extent
 * maps (fsck_stripes.c).  Asked, not preened: the bytes may have been
 * another file's.  (A block freed with its file has its entry cleared,
 * crc 0 included, which its data matches by chance only: such a block
 * comes here as lost, not as this.)
 */
static int entry_fix(struct fsck *c, uint64_t ino, uint64_t no, uint32_t owner, uint32_t crc)
{
	struct pctx p = { .blk = no, .num = owner, .ino = ino };
	int rc;

	if (!fsck_fix_problem(c, PR_2_PCSUM_OWNER, &p))
		return 0;
	rc = ffs_pcsum_set(c->fs, no, (uint32_t)ino, crc);
	return rc < 0 ? rc : fsck_commit(c, false);
}

/* Why block i of small file ino's list cannot be kept (NULL: it can, its
 * entry fixed if it named another inode); why may be formatted into buf. */
static const char *block_problem(struct fsck *c, uint64_t ino, const struct ffs_inode *d,
				 uint32_t i, char *buf, size_t len, int *err)
{
	uint64_t idx = pool_index(d, i), no = c->pool_start + idx;
	uint32_t owner, crc;
	int rc;

	if (idx >= c->pool_blocks)
		return "lies outside the metadata pool";
	if (listed_before(d, i, idx))
		return "is listed twice";
	if (!c->pool_owner[idx]) /* its keeper was truncated before it, letting it go */
		return "is also listed by another small file";
	if (!holds(c, ino, idx)) {
		snprintf(buf, len, "is %s inode %u",
			 c->pool_type[idx] == POOL_SDATA ? "the data of" : "a metadata block of",
			 c->pool_owner[idx]);
		return buf;
	}
	if (ffs_pcsum_get(c->fs, no, &owner, &crc) < 0)
		return NULL; /* its table block is unreadable, left so: nothing to check with */
	rc = ffs_check_run_read_sdata(c->fs, &c->runs, no, crc, c->buf);
	if (rc == 0) {
		*err = owner == ino ? 0 : entry_fix(c, ino, no, owner, crc);
		return NULL;
	}
	if (rc != -EBADMSG)
		return "cannot be read";
	if (owner == ino)
		return "matches its checksum in no copy";
	if (!owner)
		return "is free by its checksum entry";
	snprintf(buf, len, "belongs to inode %u by its checksum entry", owner);
	return buf;
}

/* Small file ino keeps the first `keep` blocks of its list and at most
 * their bytes; the blocks past them go back (pass 4 frees them, step 4
 * clears their entries). */
static int truncate_to(struct fsck *c, uint64_t ino, struct ffs_inode *d, uint32_t keep)
{
	uint32_t flags = ff_le32(d->flags);

	for (uint32_t i = keep; i < listed(d); i++)
		if (holds(c, ino, pool_index(d, i)) && !listed_before(d, keep, pool_index(d, i)))
			release(c, pool_index(d, i));
	memset(&d->u.small.block[keep], 0,
	       (FFS_SMALL_BLOCKS_MAX - keep) * sizeof(d->u.small.block[0]));
	d->u.small.count = ff_cpu_to_le32(keep);
	d->size = ff_cpu_to_le64(FF_MIN(ff_le64(d->size), (uint64_t)keep * FFS_BLOCK));
	if (!keep) { /* nothing left: an empty file, as ffs_small_release leaves one */
		flags &= ~(uint32_t)FFS_I_SMALL;
		memset(&d->u, 0, sizeof(d->u));
	}
	d->flags = ff_cpu_to_le32(flags);
	c->ino[ino].diskflags = (uint8_t)flags;
	c->ino[ino].size = ff_le64(d->size);
	return fsck_slot_write(c, ino, d);
}

static int file_check(struct fsck *c, uint64_t ino)
{
	uint32_t max = blocks_max(c), n, keep;
	const char *why = NULL;
	struct ffs_inode d;
	char buf[64];
	uint64_t size;
	int rc = fsck_slot_read(c, ino, &d);
	bool fix;

	if (rc < 0)
		return rc;
	n = FF_MIN(listed(&d), max);
	for (keep = 0; keep < n; keep++) {
		why = block_problem(c, ino, &d, keep, buf, sizeof(buf), &rc);
		if (why || rc < 0)
			break;
	}
	if (rc < 0)
		return rc;
	size = ff_le64(d.size);
	if (why) {
		struct pctx p = { .ino = ino, .num3 = size, .num = keep, .str = why,
				  .blk = c->pool_start + pool_index(&d, keep),
				  .num2 = FF_MIN(size, (uint64_t)keep * FFS_BLOCK) };

		fix = fsck_fix_problem(c, PR_2_SMALL_BLOCK, &p);
	} else if (ff_le32(d.u.small.count) > max) {
		struct pctx p = { .ino = ino, .num3 = size, .num = ff_le32(d.u.small.count),
				  .num2 = max };

		fix = fsck_fix_problem(c, PR_2_SMALL_COUNT, &p);
	} else {
		return 0;
	}
	return fix ? truncate_to(c, ino, &d, keep) : 0;
}

/* ---- 4. stray entries ------------------------------------------------------------------- */

struct strays {
	bool clear;
	uint64_t n, first;        /* how many; the first one's block */
	uint32_t first_ino;       /* and the inode it names */
};

/* The stray entries of table block b: counted, or cleared. */
static int strays_in(struct fsck *c, uint64_t b, struct strays *s)
{
	struct ffs_pcsum_block *pb;
	bool dirty = false;
	struct mbuf *mb;
	int rc = ffs_mb_get(c->fs, ff_le64(c->sb->pcsum_start) + b, FFS_B_PCSUM, &mb);

	if (rc < 0)
		return rc == -ENOMEM ? rc : 0; /* unreadable: step 2 asked about it */
	pb = (struct ffs_pcsum_block *)mb->data;
	for (uint64_t i = 0; i < entries_in(c, b); i++) {
		uint64_t idx = b * FFS_PCSUM_PER_BLOCK + i;

		/* a block a small file holds: its entry was judged in step 3 */
		if (!pb->e[i].ino || c->pool_type[idx] == POOL_SDATA)
			continue;
		if (!s->n++) {
			s->first = c->pool_start + idx;
			s->first_ino = ff_le32(pb->e[i].ino);
		}
		if (s->clear) {
			memset(&pb->e[i], 0, sizeof(pb->e[i]));
			dirty = true;
		}
	}
	if (dirty)
		ffs_mb_dirty(c->fs, mb);
	ffs_mb_put(c->fs, mb);
	return dirty ? fsck_commit(c, false) : 0;
}

static int strays(struct fsck *c)
{
	uint64_t nblocks = ff_le64(c->sb->pcsum_blocks);
	struct strays s = { .clear = false };
	int rc = 0;

	for (uint64_t b = 0; b < nblocks && rc == 0; b++)
		rc = strays_in(c, b, &s);
	if (rc < 0 || !s.n ||
	    !fsck_fix_problem(c, PR_2_PCSUM_STRAY, &(struct pctx){ .num = s.n, .blk = s.first,
								    .num2 = s.first_ino }))
		return rc;
	s = (struct strays){ .clear = true };
	for (uint64_t b = 0; b < nblocks && rc == 0; b++)
		rc = strays_in(c, b, &s);
	return rc;
}

int fsck_small_check(struct fsck *c)
{
	struct ffs_inode d;
	int rc = 0;

	for (uint64_t ino = 1; ino < c->ninodes && rc == 0; ino++)
		if (is_small(c, ino) && (rc = fsck_slot_read(c, ino, &d)) == 0)
			claim(c, ino, &d);
	if (rc == 0)
		rc = table_check(c);
	for (uint64_t ino = 1; ino < c->ninodes && rc == 0 && !c->stop; ino++)
		if (is_small(c, ino))
			rc = file_check(c, ino);
	if (rc == 0 && !c->stop)
		rc = strays(c);
	if (rc < 0)
		fsck_operr(c, rc, "cannot check the small files");
	return rc;
}

void fsck_small_forget(struct fsck *c, uint64_t ino, const struct ffs_inode *d)
{
	if (!(ff_le32(d->flags) & FFS_I_SMALL))
		return;
	for (uint32_t i = 0; i < listed(d); i++) {
		uint64_t idx = pool_index(d, i);

		if (!holds(c, ino, idx))
			continue;
		release(c, idx);
		/* an entry out of reach (its table block unreadable, the rebuild
		 * declined) stays: step 4 of a later run finds it */
		ffs_pcsum_set(c->fs, c->pool_start + idx, 0, 0);
	}
}
