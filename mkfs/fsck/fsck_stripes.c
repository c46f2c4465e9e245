/* SPDX-License-Identifier: MIT */
/*
 * Data stripes after every inode has been counted: stripes two files (or
 * two places of one file) map, and the checksum table's owner fields.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

static int by_stripe(const void *a, const void *b)
{
	const struct dup *x = a, *y = b;

	if (x->pstripe != y->pstripe)
		return x->pstripe < y->pstripe ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

struct victim {
	uint64_t ino, count, blk, other;
};

static bool live(const struct fsck *c, uint64_t ino)
{
	return ino && (c->ino[ino].flags & IS_USED);
}

/* Who keeps stripe p among its claim and dups[0..n): the file the checksum
 * entry names, else the first live claimant (NULL: the first claim). */
static const struct dup *keeper(struct fsck *c, uint64_t p, const struct dup *d, size_t n,
				bool *first)
{
	struct stripe_claim one = c->stripe[p];
	uint32_t crc[FF_MEMBERS_MAX], ino, f;
	bool named = ffs_csum_get(c->fs, p, &ino, &f, crc) == 0;

	f &= ~FFS_CSUM_UNWRITTEN;
	*first = named && live(c, one.ino) && one.ino == ino && one.fstripe == f;
	for (size_t i = 0; i < n && !*first; i++)
		if (named && live(c, d[i].ino) && d[i].ino == ino && d[i].fstripe == f)
			return &d[i];
	*first = *first || live(c, one.ino);
	for (size_t i = 0; i < n && !*first; i++)
		if (live(c, d[i].ino))
			return &d[i];
	return NULL;
}

static void lose(struct victim *v, size_t *nv, uint64_t ino, uint64_t p, uint64_t other)
{
	for (size_t i = 0; i < *nv; i++)
		if (v[i].ino == ino) {
			v[i].count++;
			return;
		}
	v[(*nv)++] = (struct victim){ ino, 1, p, other };
}

static int by_ino(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static void settle(struct fsck *c, struct victim *v, size_t *nv, size_t i, size_t j)
{
	uint64_t p = c->dups[i].pstripe;
	struct stripe_claim old = c->stripe[p], k = { 0, 0 };
	bool first;
	const struct dup *kd = keeper(c, p, &c->dups[i], j - i, &first);

	if (first)
		k = old;
	else if (kd)
		k = (struct stripe_claim){ kd->ino, kd->fstripe };
	if (live(c, old.ino) && (old.ino != k.ino || old.fstripe != k.fstripe))
		lose(v, nv, old.ino, p, k.ino);
	for (size_t m = i; m < j; m++)
		if (live(c, c->dups[m].ino) &&
		    (c->dups[m].ino != k.ino || c->dups[m].fstripe != k.fstripe))
			lose(v, nv, c->dups[m].ino, p, k.ino);
	c->stripe[p] = k;
	if (kd) /* the keeper's way of mapping it: written or preallocated */
		c->unwritten[p / 64] = (c->unwritten[p / 64] & ~(1ull << (p % 64))) |
				       ((uint64_t)kd->unwritten << (p % 64));
}

int fsck_extent_dups_resolve(struct fsck *c)
{
	struct victim *v = calloc(c->ndups * 2 + 1, sizeof(*v));
	size_t nv = 0;

	if (!v) {
		fsck_operr(c, -ENOMEM, "out of memory");
		return -ENOMEM;
	}
	if (c->ndups)
		qsort(c->dups, c->ndups, sizeof(*c->dups), by_stripe);
	for (size_t i = 0, j; i < c->ndups; i = j) {
		for (j = i; j < c->ndups && c->dups[j].pstripe == c->dups[i].pstripe; j++)
			;
		settle(c, v, &nv, i, j);
	}
	if (nv)
		qsort(v, nv, sizeof(*v), by_ino);
	for (size_t i = 0; i < nv; i++)
		if (fsck_fix_problem(c, PR_2_DUP_STRIPES, &(struct pctx){ .ino = v[i].ino, .num = v[i].count,
								     .blk = v[i].blk, .ino2 = v[i].other }))
			c->ino[v[i].ino].flags |= IS_REBUILD;
	free(v);
	c->ndups = 0;
	return 0;
}

/* The chunk checksums of stripe p as its data is now (zeros if unwritten),
 * each over the first vlen bytes of its chunk, in its row's geometry (a
 * grown array's old one for a row still in it); false when the data cannot
 * be read. */
bool fsck_data_crcs(struct fsck *c, uint64_t p, uint32_t vlen, uint32_t *crc)
{
	const struct ff_geom *g = ffs_tools_row_geom(c->fs, p);

	memset(crc, 0, sizeof(uint32_t) * FF_MEMBERS_MAX);
	if (ff_bit_test(c->unwritten, p))
		return true;
	if (ffs_repair_read_around(c->fs, p, 0, c->sbuf) < 0) /* the row's geometry and flag */
		return false;
	for (uint32_t i = 0; i < g->ndata; i++)
		crc[i] = ff_crc32c(0, (uint8_t *)c->sbuf + (size_t)i * g->chunk_bytes, vlen);
	return true;
}

static bool data_crcs(struct fsck *c, uint64_t p, uint32_t *crc)
{
	return fsck_data_crcs(c, p, ffs_tools_row_geom(c->fs, p)->chunk_bytes, crc);
}

/* A checksum-table block nothing can read: write it again from the claims,
 * each entry through the library, which puts the checksums of a row wider
 * than the table's entries (a grown array's) in the grow's extension. */
static int csum_block_rebuild(struct fsck *c, uint64_t b)
{
	const struct ffs_super *sb = c->sb;
	uint32_t per = ff_le32(sb->csum_per_block);
	uint32_t crc[FF_MEMBERS_MAX];
	struct mbuf *mb;
	int rc = ffs_mb_new(c->fs, ff_le64(sb->csum_start) + b, FFS_B_CSUM, &mb);

	if (rc < 0)
		return rc;
	ffs_mb_dirty(c->fs, mb); /* zeros: a free stripe's entry */
	ffs_mb_put(c->fs, mb);
	for (uint64_t i = 0; i < per && b * per + i < c->nstripes && rc == 0; i++) {
		uint64_t p = b * per + i;

		if (!c->stripe[p].ino)
			continue;
		if (c->stripe[p].ino == FFS_CSUM_TAILS) {
			uint32_t f;

			fsck_tail_entry_make(c, p, &f, crc);
			rc = ffs_csum_set(c->fs, p, FFS_CSUM_TAILS, f, crc);
		} else {
			data_crcs(c, p, crc);
			/* no checksums: the library marks the entry unwritten */
			rc = ffs_csum_set(c->fs, p, c->stripe[p].ino, c->stripe[p].fstripe,
					  ff_bit_test(c->unwritten, p) ? NULL : crc);
		}
	}
	return rc < 0 ? rc : fsck_commit(c, false);
}

static int owner_fix(struct fsck *c, uint64_t p, uint32_t *crc)
{
	bool unwritten = ff_bit_test(c->unwritten, p);
	int rc;

	if (!unwritten)
		data_crcs(c, p, crc); /* unreadable data: keep the crcs the entry had */
	/* no checksums: the library marks the entry unwritten */
	rc = ffs_csum_set(c->fs, p, c->stripe[p].ino, c->stripe[p].fstripe, unwritten ? NULL : crc);
	return rc < 0 ? rc : fsck_commit(c, false);
}

/* The claimed stripes of checksum-table block b against their entries. */
static int csum_block_check(struct fsck *c, uint64_t b, const uint8_t *blk)
{
	uint32_t per = ff_le32(c->sb->csum_per_block), entry = ff_le32(c->sb->csum_entry_bytes);
	uint32_t crc[FF_MEMBERS_MAX];
	int rc = 0;

	for (uint64_t i = 0; i < per && b * per + i < c->nstripes && rc == 0; i++) {
		uint64_t p = b * per + i;
		const struct stripe_claim *sc = &c->stripe[p];
		const struct ffs_csum_entry *e = (const void *)(blk + sizeof(struct ffs_bhdr) + i * entry);
		uint32_t ino = ff_le32(e->ino), f = ff_le32(e->fstripe), want, i2, f2;
		uint32_t width = (entry - (uint32_t)sizeof(*e)) / 4;
		uint32_t ndata = ffs_tools_row_geom(c->fs, p)->ndata;

		for (uint32_t k = 0; k < FF_MIN(ndata, width); k++)
			crc[k] = ff_le32(e->crc[k]);
		/* a row wider than the entries (a grown array's): the rest is in
		 * the grow's extension, which the library reads (an unreadable
		 * block of it is pass 5's to report: its copies) */
		if (ndata > width && ffs_csum_get(c->fs, p, &i2, &f2, crc) < 0)
			continue;
		if (sc->ino == FFS_CSUM_TAILS || (!sc->ino && ino == FFS_CSUM_TAILS)) {
			rc = fsck_tail_entry_check(c, p, ino, f, crc);
			continue;
		}
		if (!sc->ino)
			continue; /* a free stripe's entry is whatever its last owner left */
		want = sc->fstripe | (ff_bit_test(c->unwritten, p) ? FFS_CSUM_UNWRITTEN : 0);
		if ((ino != sc->ino || f != want) &&
		    fsck_fix_problem(c, PR_2_CSUM_OWNER, &(struct pctx){
					.blk = p, .num = ino, .num2 = f & ~FFS_CSUM_UNWRITTEN,
					.str = f & FFS_CSUM_UNWRITTEN ? " (unwritten)" : "",
					.ino = sc->ino, .num3 = sc->fstripe,
					.str2 = ff_bit_test(c->unwritten, p) ? " (unwritten)" : "" }))
			rc = owner_fix(c, p, crc);
	}
	return rc;
}

/* Every block of the table is read — an unreadable one would fail the
 * next write to any stripe it covers — and rebuilt when it cannot be. */
int fsck_extent_csum_check(struct fsck *c)
{
	uint64_t start = ff_le64(c->sb->csum_start), nblocks = ff_le64(c->sb->csum_blocks);
	uint8_t *blk = ff_alloc_aligned(FFS_BLOCK);
	int rc = blk ? 0 : -ENOMEM;

	for (uint64_t b = 0; b < nblocks && rc == 0 && !c->operr && !c->stop; b++) {
		struct mbuf *mb;

		rc = ffs_mb_get(c->fs, start + b, FFS_B_CSUM, &mb);
		if (rc == -ENOMEM)
			break;
		if (rc < 0) {
			rc = 0;
			if (fsck_fix_problem(c, PR_2_CSUM_BLOCK, &(struct pctx){ .blk = start + b }))
				rc = csum_block_rebuild(c, b);
			continue;
		}
		memcpy(blk, mb->data, FFS_BLOCK); /* owner_fix changes the cached block */
		ffs_mb_put(c->fs, mb);
		rc = csum_block_check(c, b, blk);
	}
	free(blk);
	if (rc < 0)
		fsck_operr(c, rc, "cannot fix the checksum table");
	return rc;
}
