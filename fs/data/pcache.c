/* SPDX-License-Identifier: MIT */
/*
 * The patch cache: the newest patched blocks (patch.c), kept in memory as
 * they are written, so that a merge or a read finds them without a 4 KiB
 * read from the members.
 *
 * Why.  A stripe is merged once its patches cover half of it; its patched
 * blocks were written by as many fsyncs as wrote them, in as many rows of
 * as many tail stripes, and the merge read each back alone: about 190
 * reads of 4 KiB per merge on RAID5 x 4 at 512 KiB chunks.  On this
 * machine a member I/O costs mostly its wake-ups, and those reads were
 * about a tenth of a run of 4 KiB random writes with fsync (the run was
 * 10-11 % faster with the merge's patch reads skipped).  The blocks were
 * in memory when they were written; keeping the newest of them costs a
 * memcpy of 4 KiB each.
 *
 * What it holds.  Blocks by (tail stripe, slot), the newest patch_cache_mb
 * of them (a FIFO: a merge wants blocks of every age alike, and a block
 * read is about to be merged away, so hits do not move it).  A block goes
 * in when its batch is sent (ffs_patch_submit), before anything points to it,
 * and leaves when the patch that points to it is superseded or dropped
 * (patch.c calls ffs_pcache_forget), so the cache holds live blocks only.
 *
 * How much.  Stripes written at random reach half patched together, so
 * the live patches peak near half the data written at random; a merge
 * whose blocks are only partly cached still waits for a wave of reads.
 * In a run of 4 KiB random writes to 4 files of 64 MiB written once,
 * fsync every 64 (RAID5 x 4 of loop devices), 128 MiB held every block a
 * merge wanted, and the run was 1.08-1.17 times as fast as with no cache
 * (medians of 6 and 10 rounds); 64 MiB held 75 % of them and gained
 * nothing measurable.  Hence 128 MiB by default.
 *
 * Why a cached block is never stale.  Slots are written once while their
 * tail stripe lives; a patch record points to (p, slot) only after the
 * batch that wrote it there, and every patch batch's slots go through
 * ffs_pcache_put, which replaces what the key held.  So the entry for a slot a
 * record points to holds what that batch wrote, whatever happened to the
 * stripe before.  The reader still checks it against the record's
 * checksum (patch.c wave_finish), as it checks a block read from the
 * members, and one that fails goes to the members (read_slot).
 *
 * Memory: the blocks are allocated and touched once, at mount, as the
 * write buffers are (ff_alloc_pool_buf): the data path neither allocates
 * nor takes page faults, and a fork (event_cmd) does not share them.
 *
 * Locking: c->lock is a leaf, taken after fs->lock or alone, held for a
 * lookup and a 4 KiB copy.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"
#include "io/hash.h"

#define PC_NIL UINT32_MAX

struct pce {
	uint64_t key;        /* (p << 16) | slot: slots are 16 bits (FFS_FEAT_PATCHES) */
	uint32_t hnext;      /* hash chain */
	uint32_t older, newer; /* the FIFO, or the free list (newer) */
};

struct pcache {
	pthread_mutex_t lock;
	uint32_t n, hmask;
	uint8_t *blocks;     /* n blocks of FFS_BLOCK */
	struct pce *e;
	uint32_t *hash;
	uint32_t oldest, newest, free;
	uint32_t used;       /* entries in the FIFO */
};

static uint64_t pc_key(uint64_t p, uint32_t slot)
{
	return p << 16 | slot;
}

static uint32_t pc_hash(const struct pcache *c, uint64_t key)
{
	return ff_hash_bucket(key, c->hmask);
}

static void pc_release(struct pcache *c)
{
	ff_free_pool_buf(c->e, c->n * sizeof(*c->e));
	ff_free_pool_buf(c->hash, ((size_t)c->hmask + 1) * sizeof(*c->hash));
	ff_free_pool_buf(c->blocks, (size_t)c->n * FFS_BLOCK);
	free(c);
}

int ffs_pcache_init(struct ffs *fs)
{
	size_t bytes = fs->opts.patch_cache_bytes;
	struct pcache *c;
	uint32_t n, h = 1;

	fs->pcache = NULL;
	if (bytes == FFS_PATCH_CACHE_OFF || !(fs->features & FFS_FEAT_PATCHES))
		return 0;
	n = (uint32_t)FF_MIN(bytes / FFS_BLOCK, (size_t)UINT32_MAX / 2);
	if (n == 0)
		return 0;
	while (h < n)
		h <<= 1;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->n = n;
	c->hmask = h - 1;
	/* the index too: written on every put, it must not fault after a fork */
	c->e = ff_alloc_pool_buf(n * sizeof(*c->e));
	c->hash = ff_alloc_pool_buf(h * sizeof(*c->hash));
	c->blocks = ff_alloc_pool_buf((size_t)n * FFS_BLOCK);
	if (!c->e || !c->hash || !c->blocks) {
		pc_release(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	for (uint32_t i = 0; i < h; i++)
		c->hash[i] = PC_NIL;
	for (uint32_t i = 0; i < n; i++)
		c->e[i].newer = i + 1 < n ? i + 1 : PC_NIL;
	c->free = 0;
	c->oldest = c->newest = PC_NIL;
	fs->pcache = c;
	return 0;
}

void ffs_pcache_free(struct ffs *fs)
{
	struct pcache *c = fs->pcache;

	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	pc_release(c);
	fs->pcache = NULL;
}

/* The entry for key, or PC_NIL (c->lock held). */
static uint32_t pc_find(const struct pcache *c, uint64_t key)
{
	uint32_t i = c->hash[pc_hash(c, key)];

	while (i != PC_NIL && c->e[i].key != key)
		i = c->e[i].hnext;
	return i;
}

/* Entry i out of the hash and the FIFO, onto the free list (c->lock held). */
static void pc_remove(struct pcache *c, uint32_t i)
{
	struct pce *x = &c->e[i];
	uint32_t *pp = &c->hash[pc_hash(c, x->key)];

	while (*pp != i)
		pp = &c->e[*pp].hnext;
	*pp = x->hnext;
	if (x->older != PC_NIL)
		c->e[x->older].newer = x->newer;
	else
		c->oldest = x->newer;
	if (x->newer != PC_NIL)
		c->e[x->newer].older = x->older;
	else
		c->newest = x->older;
	x->newer = c->free;
	c->free = i;
	c->used--;
}

void ffs_pcache_put(struct ffs *fs, uint64_t p, uint32_t slot, const void *blk)
{
	struct pcache *c = fs->pcache;
	uint64_t key = pc_key(p, slot);
	uint32_t i;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	i = pc_find(c, key);
	if (i != PC_NIL)
		pc_remove(c, i); /* what the slot held before: replaced, as the newest */
	if (c->free == PC_NIL)
		pc_remove(c, c->oldest); /* full: n >= 1 entries, all in the FIFO */
	i = c->free;
	c->free = c->e[i].newer;
	c->e[i] = (struct pce){ key, c->hash[pc_hash(c, key)], c->newest, PC_NIL };
	c->hash[pc_hash(c, key)] = i;
	if (c->newest != PC_NIL)
		c->e[c->newest].newer = i;
	else
		c->oldest = i;
	c->newest = i;
	c->used++;
	memcpy(c->blocks + (size_t)i * FFS_BLOCK, blk, FFS_BLOCK);
	pthread_mutex_unlock(&c->lock);
}

bool ffs_pcache_get(struct ffs *fs, uint64_t p, uint32_t slot, void *blk)
{
	struct pcache *c = fs->pcache;
	uint32_t i;

	if (!c)
		return false;
	pthread_mutex_lock(&c->lock);
	i = pc_find(c, pc_key(p, slot));
	if (i != PC_NIL)
		memcpy(blk, c->blocks + (size_t)i * FFS_BLOCK, FFS_BLOCK);
	pthread_mutex_unlock(&c->lock);
	return i != PC_NIL;
}

void ffs_pcache_forget(struct ffs *fs, uint64_t p, uint32_t slot0, uint32_t n)
{
	struct pcache *c = fs->pcache;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (uint32_t s = slot0; s < slot0 + n; s++) {
		uint32_t i = pc_find(c, pc_key(p, s));

		if (i != PC_NIL)
			pc_remove(c, i);
	}
	pthread_mutex_unlock(&c->lock);
}

void ffs_pcache_usage(struct ffs *fs, uint64_t *blocks, uint64_t *cap)
{
	struct pcache *c = fs->pcache;

	*blocks = *cap = 0;
	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	*blocks = c->used;
	*cap = c->n;
	pthread_mutex_unlock(&c->lock);
}
