/* SPDX-License-Identifier: MIT */
/*
 * Regular files' extent maps (inline or in a B+tree) and the data stripes
 * they claim.
 *
 * A valid extent is non-empty, inside the data area, sorted after the one
 * before it, with known flags.  The first walk claims each stripe of each
 * valid extent; a stripe claimed twice is settled once every inode has been
 * seen: the file the checksum table names for it keeps it (the table is
 * written together with the mapping, so it tells who wrote the stripe
 * last), the others lose it.  A map with bad extents, a damaged tree or a
 * lost stripe is rebuilt: its valid extents are read again, keeping only
 * stripes the file still owns, and mapped afresh through the library.
 *
 * A tail extent (FFS_X_TAIL, version 4) maps one file stripe to rows of a
 * shared tail stripe: valid with no other flag, rows inside the chunk, on
 * a volume that has tails; it counts as one file stripe but not in
 * nstripes, and its claim goes to the tail list (fsck_tail.c), which
 * settles the tail stripes after the whole-stripe duplicates.
 *
 * On an array grown under the volume, a file's stripes are all in one
 * geometry, the one its first mapped stripe's row is in (the library's
 * ffs_file_geo): its size maps to file stripes of that geometry's bytes,
 * and a tail's blocks are its rows times its tail stripe's data chunks.  A
 * file whose rows are in both geometries cannot be read whole: its file
 * stripes in the other geometry's rows hold bytes laid out for another
 * stripe size, at offsets the map does not give.  Only corruption (or a
 * bug) makes one: the restripe moves a file whole, in one transaction, and
 * a file in the old geometry takes no writes.  No repair puts those bytes
 * back where they belong, so none is made (PR_2_GEO_MIXED): unmapping them
 * would drop data someone may still copy out, and changing a row's bit in
 * the old-rows map would make the data in it unreadable (its chunks and
 * parity are laid out in its own geometry).  The file is reported and left
 * as it is; the rows in its geometry read right.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

#define BAD_EXTENTS_MAX 8u
/* the checksum table keeps file stripes in 31 bits (the top one: unwritten) */
#define FSTRIPE_LIMIT ((uint64_t)FFS_CSUM_UNWRITTEN)

struct xcol {
	struct fsck *c;
	uint64_t ino;
	bool rebuild;          /* second walk: collect what the file still owns (the
				* first collects every valid extent: fsck_map) */
	uint64_t next_f;       /* end of the last accepted extent */
	uint64_t eof;          /* file stripes the size covers (in its geometry) */
	uint64_t size;         /* the inode's */
	const struct ff_geom *geo; /* the file's geometry: its first mapped stripe's row's */
	uint64_t mixed;        /* stripes in rows of another geometry than geo */
	uint64_t mixed_blk;    /* the first of them */
	uint64_t nstripes;
	uint64_t tail_blocks;  /* the valid tails' 4 KiB blocks (the inode's tail_blocks) */
	unsigned bad;
	bool remove;           /* a bad extent is to be removed */
	char why[96];          /* a problem's words with a number in them */
	struct fsck_run *runs;
	size_t nruns, cap;
};

struct xrec { /* a B+tree record of an extent map, as extent.c writes it */
	le64 pstripe;
	le32 count;
	le32 flags;
};
_Static_assert(sizeof(struct xrec) == 16, "extent record");

static int push_run(struct xcol *x, uint64_t f, uint64_t p, uint64_t n, uint32_t flags)
{
	struct fsck_run *last = x->nruns ? &x->runs[x->nruns - 1] : NULL;
	void *grown;

	if (last && last->f + last->n == f && last->p + last->n == p && last->flags == flags &&
	    !(flags & FFS_X_TAIL) && last->n + n <= UINT32_MAX) {
		last->n += n;
		return 0;
	}
	grown = fsck_grow(x->runs, &x->cap, x->nruns, sizeof(*x->runs), 16);
	if (!grown)
		return -ENOMEM;
	x->runs = grown;
	x->runs[x->nruns++] = (struct fsck_run){ f, p, n, flags, 0, 0 };
	return 0;
}

static int claim(struct xcol *x, uint64_t f, uint64_t p, uint64_t n, uint32_t flags)
{
	struct fsck *c = x->c;
	int rc = 0;

	for (uint64_t s = 0; s < n && rc == 0; s++) {
		struct stripe_claim *sc = &c->stripe[p + s];

		if (x->rebuild) {
			if (sc->ino == x->ino && sc->fstripe == f + s)
				rc = push_run(x, f + s, p + s, 1, flags);
		} else if (!sc->ino) {
			*sc = (struct stripe_claim){ (uint32_t)x->ino, (uint32_t)(f + s) };
			if (flags & FFS_X_UNWRITTEN)
				ff_bit_set(c->unwritten, p + s);
		} else {
			rc = fsck_dup_add(c, p + s, x->ino, f + s, flags & FFS_X_UNWRITTEN);
		}
	}
	return rc == 0 && !x->rebuild ? push_run(x, f, p, n, flags) : rc;
}

/* The file's first stripe inside the data area is in data stripe p: the
 * file's geometry is p's row's, and its size covers file stripes of that
 * geometry's bytes. */
static void geo_first(struct xcol *x, uint64_t p)
{
	const struct ff_geom *g = ffs_tools_row_geom(x->c->fs, p);

	if (x->geo)
		return;
	x->geo = g;
	x->eof = FF_DIV_ROUND_UP(x->size, g->stripe_bytes);
	if (x->size > UINT64_MAX - g->stripe_bytes)
		x->eof = UINT64_MAX;
}

/* The valid extent's data stripes [p, p + n): those in another geometry
 * than the file's are counted. */
static void geo_count(struct xcol *x, uint64_t p, uint64_t n)
{
	for (uint64_t s = p; s < p + n; s++)
		if (ffs_tools_row_geom(x->c->fs, s) != x->geo && !x->mixed++)
			x->mixed_blk = s;
}

static const char *extent_problem(struct xcol *x, uint64_t f, uint64_t p, uint64_t n,
				  uint32_t flags)
{
	if (n == 0)
		return "is empty";
	if (p >= x->c->nstripes || n > x->c->nstripes - p)
		return "lies outside the data area";
	geo_first(x, p);
	if (f >= FSTRIPE_LIMIT || n > FSTRIPE_LIMIT - f)
		return "lies beyond the largest file";
	if (flags & ~(uint32_t)FFS_X_UNWRITTEN)
		return "has unknown flags";
	if (f < x->next_f)
		return "overlaps the one before it";
	/* written data past the size cannot be read; only preallocation may lie there */
	if (!(flags & FFS_X_UNWRITTEN) && f + n > x->eof)
		return "lies beyond the end of the file";
	return NULL;
}

static const char *tail_problem(struct xcol *x, uint64_t f, uint64_t p, uint32_t row0,
				uint32_t rows, uint32_t flags)
{
	uint32_t max = fsck_tail_rows_max(x->c);

	if (!fsck_tails_allowed(x->c)) {
		snprintf(x->why, sizeof(x->why), "is a packed tail, which a version %u volume cannot hold",
			 ff_le32(x->c->sb->version));
		return x->why;
	}
	if (flags & ~(uint32_t)FFS_X_TAIL)
		return "has flags a tail may not have";
	if (p < x->c->nstripes)
		geo_first(x, p);
	if (rows == 0 || row0 + rows > max) {
		snprintf(x->why, sizeof(x->why), "has rows outside the %u of a chunk", max);
		return x->why;
	}
	if (p >= x->c->nstripes)
		return "lies outside the data area";
	if (f >= FSTRIPE_LIMIT)
		return "lies beyond the largest file";
	if (f < x->next_f)
		return "overlaps the one before it";
	if (f >= x->eof)
		return "lies beyond the end of the file";
	return NULL;
}

/* A tail extent: checked, then claimed (or, rebuilding, kept if still owned). */
static int tail_one(struct xcol *x, uint64_t f, uint64_t p, uint32_t count, uint32_t flags)
{
	struct ffs_extent e = { ff_cpu_to_le64(f), ff_cpu_to_le64(p), ff_cpu_to_le32(count),
				ff_cpu_to_le32(flags) };
	uint32_t row0, rows;
	const char *why;
	int rc;

	ffs_tail_rows_of(&e, &row0, &rows);
	why = tail_problem(x, f, p, row0, rows, flags);
	if (why) {
		x->bad++;
		if (!x->rebuild && x->bad <= BAD_EXTENTS_MAX &&
		    fsck_fix_problem(x->c, PR_2_TAIL_BAD, &(struct pctx){ .ino = x->ino, .num = f, .blk = p,
								       .num2 = rows, .num3 = row0,
								       .str = why }))
			x->remove = true;
		return 0;
	}
	x->next_f = f + 1;
	geo_count(x, p, 1);
	x->tail_blocks += (uint64_t)rows * ffs_tools_row_geom(x->c->fs, p)->ndata;
	if (!x->rebuild)
		rc = fsck_tail_claim(x->c, p, x->ino, f, row0, rows);
	else
		rc = fsck_tail_owned(x->c, p, x->ino, f) ? 0 : 1;
	if (rc != 0)
		return rc < 0 ? rc : 0;
	rc = push_run(x, f, p, 1, flags);
	if (rc == 0) {
		x->runs[x->nruns - 1].row0 = row0;
		x->runs[x->nruns - 1].rows = rows;
	}
	return rc;
}

static int extent_one(struct xcol *x, uint64_t f, uint64_t p, uint64_t n, uint32_t flags,
		      const char *why)
{
	if (!why && (flags & FFS_X_TAIL))
		return tail_one(x, f, p, (uint32_t)n, flags);
	if (!why)
		why = extent_problem(x, f, p, n, flags);
	if (why) {
		x->bad++;
		if (!x->rebuild && x->bad <= BAD_EXTENTS_MAX &&
		    fsck_fix_problem(x->c, PR_2_EXTENT_BAD, &(struct pctx){ .ino = x->ino, .num = f, .blk = p,
									 .num2 = n, .str = why }))
			x->remove = true;
		return 0;
	}
	x->next_f = f + n;
	x->nstripes += n;
	geo_count(x, p, n);
	return claim(x, f, p, n, flags);
}

static int tree_rec(struct fsck_tree_walk *w, uint64_t key, const uint8_t *val, uint16_t len)
{
	struct xrec r;

	if (len != sizeof(r))
		return extent_one(w->arg, key, 0, 0, 0, "is a malformed record");
	memcpy(&r, val, sizeof(r));
	return extent_one(w->arg, key, ff_le64(r.pstripe), ff_le32(r.count), ff_le32(r.flags), NULL);
}

/* Walk the map; *w tells about the tree, if there is one. */
static int collect(struct xcol *x, const struct ffs_inode *d, struct fsck_tree_walk *w)
{
	int rc = 0;

	memset(w, 0, sizeof(*w));
	x->size = ff_le64(d->size);
	x->eof = 0; /* set with the file's geometry, at its first stripe inside the data area */
	if (ff_le32(d->flags) & FFS_I_BTREE) {
		*w = (struct fsck_tree_walk){ .c = x->c, .ino = x->ino, .root = ff_le64(d->root),
					 .claim = !x->rebuild, .rec = tree_rec, .arg = x };
		return fsck_tree_walk(w);
	}
	for (unsigned i = 0; i < FF_MIN(ff_le32(d->nextents), FFS_INLINE_EXTENTS) && rc == 0; i++) {
		const struct ffs_extent *e = &d->u.extents[i];

		rc = extent_one(x, ff_le64(e->fstripe), ff_le64(e->pstripe), ff_le32(e->count),
				ff_le32(e->flags), NULL);
	}
	return rc;
}

/* What the walk found that calls for a rebuild (or the inode's end). */
static int judge(struct fsck *c, struct xcol *x, const struct fsck_tree_walk *w,
		 const struct ffs_inode *d)
{
	uint64_t ino = x->ino;
	bool rebuild = x->remove;

	if (w->damaged) {
		char why[96];

		fsck_tree_why(w, why, sizeof(why));
		if (fsck_fix_problem(c, PR_2_TREE_BAD, &(struct pctx){ .ino = ino, .str = "regular file",
							     .blk = w->bad_blk, .str2 = why }))
			rebuild = true;
		else
			c->ino[ino].flags |= IS_TREE_BAD;
	}
	if (x->bad > BAD_EXTENTS_MAX &&
	    fsck_fix_problem(c, PR_2_EXTENTS_MANY, &(struct pctx){ .ino = ino }))
		return fsck_inode_clear(c, ino);
	if (!(ff_le32(d->flags) & FFS_I_BTREE) && ff_le32(d->nextents) > FFS_INLINE_EXTENTS &&
	    fsck_fix_problem(c, PR_2_FIELD, &(struct pctx){ .ino = ino, .str = "regular file",
						      .str2 = "an inline extent count of",
						      .num = ff_le32(d->nextents),
						      .num2 = FFS_INLINE_EXTENTS }))
		rebuild = true;
	if (x->mixed) /* no repair: see the head of this file */
		fsck_fix_problem(c, PR_2_GEO_MIXED, &(struct pctx){
					 .ino = ino, .num = x->mixed, .blk = x->mixed_blk,
					 .num2 = x->geo->nmembers,
					 .num3 = ffs_tools_row_geom(c->fs, x->mixed_blk)->nmembers });
	if (rebuild)
		c->ino[ino].flags |= IS_REBUILD;
	return 0;
}

int fsck_extent_check(struct fsck *c, uint64_t ino, const struct ffs_inode *d, uint64_t *nstripes,
		      uint64_t *tail_blocks, struct fsck_map *map)
{
	struct xcol x = { .c = c, .ino = ino };
	struct fsck_tree_walk w;
	int rc = collect(&x, d, &w);

	*map = (struct fsck_map){ x.runs, x.nruns, x.geo };
	if (rc < 0) {
		fsck_operr(c, rc, "cannot walk an extent map");
		return rc;
	}
	*nstripes = x.nstripes;
	*tail_blocks = x.tail_blocks;
	return judge(c, &x, &w, d);
}

const struct fsck_run *fsck_map_find(const struct fsck_map *m, uint64_t f)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->runs[mid].f + m->runs[mid].n <= f)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->n && m->runs[lo].f <= f ? &m->runs[lo] : NULL;
}

/* Map afresh what the file still owns; the old tree's nodes go back. */
static int rebuild_one(struct fsck *c, uint64_t ino)
{
	struct xcol x = { .c = c, .ino = ino, .rebuild = true };
	struct fsck_tree_walk w;
	struct ffs_inode d;
	struct finode *fi;
	uint64_t old_root, patch_root;
	int rc = fsck_slot_read(c, ino, &d);

	if (rc == 0)
		rc = collect(&x, &d, &w);
	/* an empty inline map first, in the slot itself: the library refuses
	 * to load an inode whose map is corrupt */
	old_root = ff_le32(d.flags) & FFS_I_BTREE ? ff_le64(d.root) : 0;
	/* the patch tree is set aside meanwhile: mapping a stripe drops its
	 * patches (fs/data/patch.c), and these stripes keep theirs */
	patch_root = fsck_patches_allowed(c) ? ff_le64(d.u2.patch_root) : 0;
	if (patch_root)
		d.u2.patch_root = 0;
	d.flags = ff_cpu_to_le32(ff_le32(d.flags) & ~(uint32_t)FFS_I_BTREE);
	d.root = 0;
	d.nextents = 0;
	d.nstripes = 0;
	d.tail_blocks = 0; /* ffs_extent_map_tail counts the tails kept again */
	memset(&d.u, 0, sizeof(d.u));
	if (rc == 0)
		rc = fsck_slot_write(c, ino, &d);
	if (rc == 0)
		rc = fsck_finode(c, ino, &fi);
	if (rc < 0) {
		free(x.runs);
		return rc;
	}
	for (size_t i = 0; i < x.nruns && rc == 0; i++) {
		const struct fsck_run *r = &x.runs[i];

		if (r->flags & FFS_X_TAIL) /* its stripe's entry already counts it */
			rc = ffs_extent_map_tail(c->fs, fi, r->f, r->p, r->row0, r->rows);
		else
			rc = ffs_extent_map(c->fs, fi, r->f, r->p, r->n, r->flags);
		if (rc == 0)
			rc = fsck_commit(c, false);
	}
	if (rc == 0 && patch_root) {
		fi->d.u2.patch_root = ff_cpu_to_le64(patch_root);
		rc = ffs_istore(c->fs, fi);
	}
	fsck_finode_put(c, fi);
	free(x.runs);
	if (rc == 0 && old_root)
		rc = fsck_tree_free_old(c, ino, old_root, POOL_BTREE);
	if (rc < 0)
		fsck_operr(c, rc, "cannot rebuild an extent map");
	return rc;
}

int fsck_extent_rebuild_all(struct fsck *c)
{
	return fsck_rebuild_files(c, IS_REBUILD, rebuild_one);
}

int fsck_rebuild_files(struct fsck *c, uint16_t flag, int (*rebuild)(struct fsck *c, uint64_t ino))
{
	int rc = 0;

	for (uint64_t ino = 1; ino < c->ninodes && rc == 0; ino++)
		if ((c->ino[ino].flags & (IS_USED | flag)) == (IS_USED | flag) &&
		    c->ino[ino].dtype == DT_REG)
			rc = rebuild(c, ino);
	return rc == 0 ? fsck_commit(c, true) : rc;
}
