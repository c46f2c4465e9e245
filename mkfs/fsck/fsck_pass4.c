/* SPDX-License-Identifier: MIT */
/*
 * Pass 4: link counts, the orphan list and the three allocation bitmaps,
 * against what passes 2 and 3 counted (again, quietly, when they repaired
 * something: see fsck.h).
 *
 * A file's link count is the number of entries naming it; a directory's is
 * 2 plus its subdirectories.  The orphan list must hold exactly the valid
 * orphans (in use, no links, no entries), each flagged.  The bitmaps must
 * mark exactly what the metadata uses; differences print as e2fsck does:
 * "+n" used but marked free, "-n" marked used but free.
 *
 * A grow taken on (GROWING, format.h) has a fourth: the old-rows map.  A
 * row leaves it in the transaction that frees it and never enters it
 * again, so it may only name rows in use; a bit on a free row is cleared
 * (the row holds nothing: the next file written there takes the new
 * geometry).  Which rows in use are old only the map knows: a block of it
 * that cannot be read is reported, never rebuilt from the counts.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

#define DIFF_RANGES_MAX 8

static void census(struct fsck *c)
{
	c->quiet = true;
	c->census_left = 0;
	fsck_state_reset(c);
	fsck_pass2(c);
	if (!c->operr)
		fsck_pass3(c);
	c->quiet = false;
	c->pass = 4;
	if (c->census_left)
		fsck_fix_problem(c, PR_4_LEFT, &(struct pctx){ .num = c->census_left });
}

static void link_counts(struct fsck *c)
{
	for (size_t k = 0; k < c->nedges; k++)
		if (!c->edges[k].dead)
			c->ino[c->edges[k].parent].subdirs++;
	for (uint64_t ino = 1; ino < c->ninodes && !c->operr && !c->stop; ino++) {
		struct ino_info *in = &c->ino[ino];
		uint64_t want = in->refs;
		struct ffs_inode d;

		if (!(in->flags & IS_USED) || (in->flags & IS_NOCOUNT))
			continue;
		if (in->dtype == DT_DIR)
			want = in->flags & IS_ORPHAN_OK ? 0 : 2ull + in->subdirs;
		if (in->nlink == want)
			continue;
		if (fsck_fix_problem(c, PR_4_NLINK, &(struct pctx){ .ino = ino, .num = in->nlink, .num2 = want,
							       .str = fsck_type_name(in->dtype) }) &&
		    fsck_slot_read(c, ino, &d) == 0) {
			d.nlink = ff_cpu_to_le32((uint32_t)want);
			in->nlink = (uint32_t)want;
			fsck_slot_write(c, ino, &d);
		}
	}
}

/* What is wrong with the orphan list, in words, or NULL. */
static const char *orphans_problem(struct fsck *c, char *why, size_t len)
{
	uint64_t n = 0;

	if (c->orphan_block_bad)
		return "its block has no readable copy";
	if (c->orphan_break) {
		snprintf(why, len, "%s (inode %llu)", c->orphan_break,
			 (unsigned long long)c->orphan_break_ino);
		return why;
	}
	for (size_t i = 0; i < c->norphans; i++)
		if (!(c->ino[c->orphans[i]].flags & IS_ORPHAN_OK)) {
			snprintf(why, len, "inode %llu on it is still linked",
				 (unsigned long long)c->orphans[i]);
			return why;
		}
	for (uint64_t ino = 1; ino < c->ninodes; ino++) {
		const struct ino_info *in = &c->ino[ino];
		bool flagged = in->diskflags & FFS_I_ORPHAN, ok = in->flags & IS_ORPHAN_OK;

		if ((in->flags & IS_USED) && flagged != ok) {
			snprintf(why, len, ok ? "inode %llu is on it but not flagged as an orphan"
					      : "inode %llu is flagged as an orphan but is not on it",
				 (unsigned long long)ino);
			return why;
		}
		n += ok;
	}
	if (c->orphan_count != n) {
		snprintf(why, len, "its count is %llu, should be %llu",
			 (unsigned long long)c->orphan_count, (unsigned long long)n);
		return why;
	}
	return NULL;
}

/* Link the valid orphans afresh, in inode order, each flagged. */
static int orphans_rebuild(struct fsck *c)
{
	uint64_t next = 0, n = 0;
	struct mbuf *mb;
	int rc = 0;

	for (uint64_t ino = c->ninodes; ino-- > 1 && rc == 0;) {
		struct ino_info *in = &c->ino[ino];
		bool ok = in->flags & IS_ORPHAN_OK;
		struct ffs_inode d;

		if (!(in->flags & IS_USED) || (!ok && !(in->diskflags & FFS_I_ORPHAN)))
			continue;
		rc = fsck_slot_read(c, ino, &d);
		if (rc < 0)
			break;
		d.flags = ff_cpu_to_le32(ok ? ff_le32(d.flags) | FFS_I_ORPHAN
					    : ff_le32(d.flags) & ~(uint32_t)FFS_I_ORPHAN);
		d.orphan_next = ff_cpu_to_le64(ok ? next : 0);
		in->diskflags = (uint8_t)ff_le32(d.flags);
		rc = fsck_slot_write(c, ino, &d);
		if (ok) {
			next = ino;
			n++;
		}
	}
	if (rc == 0)
		rc = c->orphan_block_bad ? ffs_mb_new(c->fs, FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, &mb)
					 : ffs_mb_get(c->fs, FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, &mb);
	if (rc == 0) {
		((struct ffs_orphan_block *)mb->data)->head = ff_cpu_to_le64(next);
		((struct ffs_orphan_block *)mb->data)->count = ff_cpu_to_le64(n);
		ffs_mb_dirty(c->fs, mb);
		ffs_mb_put(c->fs, mb);
		rc = fsck_commit(c, false);
	}
	if (rc < 0)
		fsck_operr(c, rc, "cannot rebuild the orphan list");
	return rc;
}

struct bitmap {
	const char *name;
	uint64_t start, nbits;
	uint64_t base;          /* number printed for bit 0 */
	bool (*used)(const struct fsck *c, uint64_t i);
	enum ffs_tools_map map; /* the library's in-memory copy, made to match */
	bool counted;           /* used() tells every bit: an unreadable block is rewritten */
};

static bool inode_used(const struct fsck *c, uint64_t i)
{
	return i == 0 || (c->ino[i].flags & IS_USED);
}

static bool stripe_used(const struct fsck *c, uint64_t i)
{
	return c->stripe[i].ino != 0;
}

static bool pool_used(const struct fsck *c, uint64_t i)
{
	return c->pool_owner[i] != 0;
}

/* Old as loaded, and in use. */
static bool row_old(const struct fsck *c, uint64_t i)
{
	return c->stripe[i].ino != 0 && ffs_tools_bit(c->fs, FFS_TOOLS_OLD_ROWS, i);
}

static bool row_old_arg(const void *arg, uint64_t i)
{
	return row_old(arg, i);
}

struct diffs {
	uint64_t base;
	char text[256];
	size_t len;
	unsigned ranges;
	uint64_t more;
};

static void diff_range(struct diffs *d, char sign, uint64_t a, uint64_t b)
{
	if (d->ranges++ >= DIFF_RANGES_MAX) {
		d->more += b - a + 1;
		return;
	}
	a += d->base;
	b += d->base;
	if (a == b)
		d->len += (size_t)snprintf(d->text + d->len, sizeof(d->text) - d->len, "%s%c%llu",
					   d->len ? " " : "", sign, (unsigned long long)a);
	else
		d->len += (size_t)snprintf(d->text + d->len, sizeof(d->text) - d->len,
					   "%s%c(%llu-%llu)", d->len ? " " : "", sign,
					   (unsigned long long)a, (unsigned long long)b);
	d->len = FF_MIN(d->len, sizeof(d->text) - 1);
}

struct run {
	char sign;
	uint64_t a, b;
};

static void run_add(struct diffs *d, struct run *r, char sign, uint64_t i)
{
	if (r->sign == sign && r->b + 1 == i) {
		r->b = i;
		return;
	}
	if (r->sign)
		diff_range(d, r->sign, r->a, r->b);
	*r = (struct run){ sign, i, i };
}

/* Write bitmap block b from the counts (fresh: it was unreadable). */
static int bitmap_rewrite(struct fsck *c, const struct bitmap *bm, uint64_t b, bool fresh)
{
	uint64_t first = b * FFS_BITS_PER_BLOCK, n = FF_MIN(FFS_BITS_PER_BLOCK, bm->nbits - first);
	struct ffs_bitmap_block *blk;
	struct mbuf *mb;
	bool changed = fresh;
	int rc = fresh ? ffs_mb_new(c->fs, bm->start + b, FFS_B_BITMAP, &mb)
		       : ffs_mb_get(c->fs, bm->start + b, FFS_B_BITMAP, &mb);

	if (rc < 0)
		return rc;
	blk = (struct ffs_bitmap_block *)mb->data;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t bit = (uint8_t)(1u << (i % 8)), old = blk->bits[i / 8];

		if (bm->used(c, first + i))
			blk->bits[i / 8] |= bit;
		else
			blk->bits[i / 8] &= (uint8_t)~bit;
		changed |= old != blk->bits[i / 8];
	}
	if (changed)
		ffs_mb_dirty(c->fs, mb);
	ffs_mb_put(c->fs, mb);
	return fsck_commit(c, false);
}

static void bitmap_check(struct fsck *c, const struct bitmap *bm)
{
	uint64_t nblocks = FF_DIV_ROUND_UP(bm->nbits, FFS_BITS_PER_BLOCK);
	struct diffs d = { .base = bm->base };
	struct run r = { 0, 0, 0 };

	for (uint64_t b = 0; b < nblocks && !c->operr; b++) {
		uint64_t first = b * FFS_BITS_PER_BLOCK, n = FF_MIN(FFS_BITS_PER_BLOCK, bm->nbits - first);
		const struct ffs_bitmap_block *blk;
		struct mbuf *mb;

		if (ffs_mb_get(c->fs, bm->start + b, FFS_B_BITMAP, &mb) < 0) {
			if (!bm->counted)
				fsck_fix_problem(c, PR_4_OLD_ROWS_BLOCK,
						 &(struct pctx){ .blk = bm->start + b });
			else if (fsck_fix_problem(c, PR_4_BITMAP_BLOCK, &(struct pctx){ .str = bm->name,
									      .blk = bm->start + b }) &&
			    bitmap_rewrite(c, bm, b, true) < 0)
				fsck_operr(c, -EIO, "cannot rewrite a bitmap block");
			continue;
		}
		blk = (const struct ffs_bitmap_block *)mb->data;
		for (uint64_t i = 0; i < n; i++) {
			bool have = (blk->bits[i / 8] >> (i % 8)) & 1, want = bm->used(c, first + i);

			if (have != want)
				run_add(&d, &r, want ? '+' : '-', first + i);
		}
		ffs_mb_put(c->fs, mb);
	}
	if (r.sign)
		diff_range(&d, r.sign, r.a, r.b);
	if (!d.ranges)
		return;
	if (d.more)
		snprintf(d.text + d.len, sizeof(d.text) - d.len, " and %llu more",
			 (unsigned long long)d.more);
	if (!fsck_fix_problem(c, PR_4_BITMAP_DIFF, &(struct pctx){ .str = bm->name, .str2 = d.text }))
		return;
	for (uint64_t b = 0; b < nblocks && !c->operr; b++)
		bitmap_rewrite(c, bm, b, false); /* an unreadable block was rewritten above */
	if (bm->map == FFS_TOOLS_OLD_ROWS) /* the rows freed are new from here on */
		ffs_tools_alloc_from(c->fs, FFS_TOOLS_OLD_ROWS, row_old_arg, c);
}

int fsck_pass4(struct fsck *c)
{
	const struct ffs_super *sb = c->sb;
	const struct bitmap maps[] = {
		{ "Inode", ff_le64(sb->ibitmap_start), c->ninodes, 0, inode_used, FFS_TOOLS_INODES, true },
		{ "Stripe", ff_le64(sb->sbitmap_start), c->nstripes, 0, stripe_used, FFS_TOOLS_STRIPES,
		  true },
		{ "Metadata pool", ff_le64(sb->mbitmap_start), c->pool_blocks, c->pool_start, pool_used,
		  FFS_TOOLS_POOL, true },
		/* a grow taken on (0: none): nbits 0 checks nothing */
		{ "Old-rows", ffs_tools_old_rows_start(c->fs),
		  ffs_tools_old_rows_start(c->fs) ? c->nstripes : 0, 0, row_old, FFS_TOOLS_OLD_ROWS,
		  false },
	};
	char why[128];
	const char *o;

	fsck_pass_start(c, 4, "Checking link counts, the orphan list and the bitmaps");
	if (c->changed && !ffs_tools_read_only(c->fs))
		census(c);
	if (!c->operr && !c->stop)
		link_counts(c);
	o = c->operr || c->stop ? NULL : orphans_problem(c, why, sizeof(why));
	if (o && fsck_fix_problem(c, PR_4_ORPHANS, &(struct pctx){ .str = o }))
		orphans_rebuild(c);
	for (unsigned i = 0; i < FF_ARRAY_SIZE(maps) && !c->operr && !c->stop; i++)
		bitmap_check(c, &maps[i]);
	fsck_commit(c, true);
	return c->operr;
}
