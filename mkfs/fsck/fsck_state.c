/* SPDX-License-Identifier: MIT */
/*
 * What passes 2 and 3 count: per inode, per data stripe, per pool block,
 * the duplicate claims and the entries that name directories.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

int fsck_state_alloc(struct fsck *c)
{
	const struct ffs_super *sb = ffs_tools_super(c->fs);

	c->ninodes = ff_le64(sb->ninodes);
	c->nstripes = ff_le64(sb->nstripes);
	c->pool_start = ff_le64(sb->pool_start);
	c->pool_blocks = ff_le64(sb->pool_blocks);
	c->ino = calloc(c->ninodes, sizeof(*c->ino));
	c->fin = calloc(c->ninodes, sizeof(*c->fin));
	c->stripe = calloc(c->nstripes, sizeof(*c->stripe));
	c->unwritten = calloc(FF_BITMAP_WORDS(c->nstripes), sizeof(uint64_t));
	c->pool_owner = calloc(c->pool_blocks, sizeof(*c->pool_owner));
	c->pool_type = calloc(c->pool_blocks, sizeof(*c->pool_type));
	c->buf = ff_alloc_aligned(FFS_BLOCK);
	c->sbuf = ff_alloc_aligned(ffs_tools_stripe_bytes_max(c->fs)); /* rows of either geometry */
	c->rbuf = ff_alloc_aligned(ffs_tools_stripe_bytes_max(c->fs));
	if (!c->ino || !c->fin || !c->stripe || !c->unwritten || !c->pool_owner || !c->pool_type || !c->buf ||
	    !c->sbuf || !c->rbuf)
		return -ENOMEM;
	return ffs_check_runs_init(c->fs, &c->runs);
}

static void edges_free(struct fsck *c)
{
	for (size_t i = 0; i < c->nedges; i++)
		free(c->edges[i].name);
	c->nedges = 0;
}

/* Forget every count (before the census). */
void fsck_state_reset(struct fsck *c)
{
	memset(c->ino, 0, c->ninodes * sizeof(*c->ino));
	memset(c->stripe, 0, c->nstripes * sizeof(*c->stripe));
	memset(c->unwritten, 0, FF_BITMAP_WORDS(c->nstripes) * sizeof(uint64_t));
	memset(c->pool_owner, 0, c->pool_blocks * sizeof(*c->pool_owner));
	memset(c->pool_type, 0, c->pool_blocks);
	c->ndups = 0;
	c->ntails = 0;
	c->tails_settled = false;
	c->xvalue_seen = false;
	edges_free(c);
	free(c->orphans);
	c->orphans = NULL;
	c->norphans = 0;
	c->orphan_break = NULL;
	c->orphan_block_bad = false;
}

void fsck_state_free(struct fsck *c)
{
	fsck_path_free(c);
	edges_free(c);
	free(c->edges);
	free(c->ino);
	free(c->fin);
	free(c->stripe);
	free(c->unwritten);
	free(c->pool_owner);
	free(c->pool_type);
	free(c->dups);
	free(c->tails);
	free(c->orphans);
	free(c->buf);
	free(c->sbuf);
	free(c->rbuf);
	ffs_check_runs_free(&c->runs);
}

bool fsck_pool_contains(const struct fsck *c, uint64_t blk)
{
	return blk >= c->pool_start && blk - c->pool_start < c->pool_blocks;
}

/* Take pool block blk for ino; false (and the current owner) if taken. */
bool fsck_pool_claim(struct fsck *c, uint64_t blk, uint64_t ino, uint8_t type, uint64_t *other)
{
	uint64_t i = blk - c->pool_start;

	FF_ASSERT(fsck_pool_contains(c, blk));
	if (c->pool_owner[i]) {
		*other = c->pool_owner[i];
		return false;
	}
	c->pool_owner[i] = (uint32_t)ino;
	c->pool_type[i] = type;
	return true;
}

void *fsck_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first)
{
	size_t want = *cap ? *cap * 2 : first;
	void *w;

	if (n < *cap)
		return v;
	w = realloc(v, want * elem);
	if (w)
		*cap = want;
	return w;
}

int fsck_dup_add(struct fsck *c, uint64_t pstripe, uint64_t ino, uint64_t fstripe, bool unwritten)
{
	void *grown = fsck_grow(c->dups, &c->cap_dups, c->ndups, sizeof(*c->dups), 64);

	if (!grown)
		return -ENOMEM;
	c->dups = grown;
	c->dups[c->ndups++] = (struct dup){ pstripe, (uint32_t)ino, (uint32_t)fstripe, unwritten };
	return 0;
}

int fsck_edge_add(struct fsck *c, uint64_t parent, uint64_t child, const char *name)
{
	void *grown = fsck_grow(c->edges, &c->cap_edges, c->nedges, sizeof(*c->edges), 64);

	if (!grown)
		return -ENOMEM;
	c->edges = grown;
	c->edges[c->nedges].name = strdup(name);
	if (!c->edges[c->nedges].name)
		return -ENOMEM;
	c->edges[c->nedges].parent = parent;
	c->edges[c->nedges].child = child;
	c->edges[c->nedges].dead = false;
	c->nedges++;
	return 0;
}

static bool inode_used(const void *arg, uint64_t i)
{
	const struct fsck *c = arg;

	return i == 0 || (c->ino[i].flags & IS_USED);
}

static bool stripe_used(const void *arg, uint64_t i)
{
	const struct fsck *c = arg;

	return c->stripe[i].ino != 0;
}

static bool pool_used(const void *arg, uint64_t i)
{
	const struct fsck *c = arg;

	return c->pool_owner[i] != 0;
}

/*
 * Before a repair allocates anything, the library's in-memory allocators
 * must see exactly what the metadata uses, whatever the on-disk bitmaps
 * say: a bit missing there would let a rebuilt tree land on a live block,
 * and an unreadable bitmap block (loaded as all taken) would push a new
 * inode past the end of the initialised inode table.
 */
void fsck_reserve_counted(struct fsck *c)
{
	ffs_tools_alloc_from(c->fs, FFS_TOOLS_INODES, inode_used, c);
	ffs_tools_alloc_from(c->fs, FFS_TOOLS_STRIPES, stripe_used, c);
	ffs_tools_alloc_from(c->fs, FFS_TOOLS_POOL, pool_used, c);
}

const char *fsck_type_name(uint8_t dtype)
{
	switch (dtype) {
	case DT_REG: return "regular file";
	case DT_DIR: return "directory";
	case DT_LNK: return "symbolic link";
	case DT_CHR: return "character device";
	case DT_BLK: return "block device";
	case DT_FIFO: return "fifo";
	case DT_SOCK: return "socket";
	default: return "unknown type";
	}
}
