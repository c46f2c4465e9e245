/* SPDX-License-Identifier: MIT */
/*
 * Extent maps of regular files: which data stripe holds each file stripe.
 *
 * An extent map lists runs of whole stripes.  Up to FFS_INLINE_EXTENTS
 * runs live in the inode itself (a frame is one run); beyond that the map
 * moves to a B+tree keyed by file stripe.  Both forms sit behind the same
 * four primitives (find the run at or before a stripe, find the next,
 * remove, add), and the mapping logic above them is written once.
 *
 * A tail extent (FFS_X_TAIL, format.h) maps one file stripe to rows of a
 * shared tail stripe: it counts as a run of one, never merges, and its
 * removal gives the rows back to the tail stripe (tail.c) instead of
 * freeing a stripe.
 *
 * Locking: the caller holds fs->lock; a change joins the running
 * transaction, and stripes it unmaps are freed through the allocator
 * (reusable once that transaction commits).
 */
#include <errno.h>
#include <string.h>

#include "fs/meta/meta.h"

struct xrec { /* B+tree value; the key is the file stripe */
	le64 pstripe;
	le32 count;
	le32 flags;
};

/* File stripes a run covers (a tail's count field holds its rows). */
static uint64_t xcount(const struct ffs_extent *x)
{
	return ff_le32(x->flags) & FFS_X_TAIL ? 1 : ff_le32(x->count);
}

/* The inode's count of tail blocks (st_blocks) with tail x added or taken away. */
static void tail_blocks_add(struct ffs *fs, struct finode *fi, const struct ffs_extent *x, int sign)
{
	uint32_t row0, rows, n = ff_le32(fi->d.tail_blocks), b;

	ffs_tail_rows_of(x, &row0, &rows);
	b = rows * ffs_row_geo(fs, ff_le64(x->pstripe))->g->ndata;
	n = sign > 0 ? n + b : n > b ? n - b : 0;
	fi->d.tail_blocks = ff_cpu_to_le32(n);
}

static bool is_tree(const struct finode *fi)
{
	return ff_le32(fi->d.flags) & FFS_I_BTREE;
}

typedef int (*bt_find_fn)(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found,
			  void *val, uint16_t *len);

/* The B+tree form: the record found by `find` as an extent. */
static int tree_find(struct ffs *fs, struct finode *fi, uint64_t f, bt_find_fn find,
		     struct ffs_extent *x)
{
	struct bt_root t = { ff_le64(fi->d.root), fi->ino };
	uint8_t rec[FFS_BT_RECORD_MAX]; /* a corrupt record may be longer than an extent */
	struct xrec r;
	uint64_t key;
	uint16_t len;
	int rc = find(fs, &t, f, &key, rec, &len);

	if (rc < 0)
		return rc;
	if (len != sizeof(r))
		return -EUCLEAN;
	memcpy(&r, rec, sizeof(r));
	x->fstripe = ff_cpu_to_le64(key);
	x->pstripe = r.pstripe;
	x->count = r.count;
	x->flags = r.flags;
	return 0;
}

/* The run starting at or before f, if any. */
static int ext_find_le(struct ffs *fs, struct finode *fi, uint64_t f, struct ffs_extent *x)
{
	if (is_tree(fi))
		return tree_find(fs, fi, f, ffs_bt_find_le, x);
	for (int i = (int)ff_le32(fi->d.nextents) - 1; i >= 0; i--)
		if (ff_le64(fi->d.u.extents[i].fstripe) <= f) {
			*x = fi->d.u.extents[i];
			return 0;
		}
	return -ENOENT;
}

/* The first run starting at or after f. */
static int ext_find_ge(struct ffs *fs, struct finode *fi, uint64_t f, struct ffs_extent *x)
{
	if (is_tree(fi))
		return tree_find(fs, fi, f, ffs_bt_find_ge, x);
	for (unsigned i = 0; i < ff_le32(fi->d.nextents); i++)
		if (ff_le64(fi->d.u.extents[i].fstripe) >= f) {
			*x = fi->d.u.extents[i];
			return 0;
		}
	return -ENOENT;
}

static int ext_remove(struct ffs *fs, struct finode *fi, uint64_t f)
{
	unsigned n = ff_le32(fi->d.nextents);

	if (is_tree(fi)) {
		struct bt_root t = { ff_le64(fi->d.root), fi->ino };
		int rc = ffs_bt_delete(fs, &t, f);

		fi->d.root = ff_cpu_to_le64(t.root);
		return rc;
	}
	for (unsigned i = 0; i < n; i++)
		if (ff_le64(fi->d.u.extents[i].fstripe) == f) {
			memmove(&fi->d.u.extents[i], &fi->d.u.extents[i + 1],
				(n - i - 1) * sizeof(struct ffs_extent));
			fi->d.nextents = ff_cpu_to_le32(n - 1);
			return 0;
		}
	return -ENOENT;
}

static int tree_add(struct ffs *fs, struct finode *fi, const struct ffs_extent *x)
{
	struct bt_root t = { ff_le64(fi->d.root), fi->ino };
	struct xrec r = { x->pstripe, x->count, x->flags };
	int rc = ffs_bt_insert(fs, &t, ff_le64(x->fstripe), &r, sizeof(r));

	fi->d.root = ff_cpu_to_le64(t.root);
	return rc;
}

/* Move a full inline map into a B+tree. */
static int ext_to_tree(struct ffs *fs, struct finode *fi)
{
	struct ffs_extent saved[FFS_INLINE_EXTENTS];
	unsigned n = ff_le32(fi->d.nextents);
	int rc = 0;

	memcpy(saved, fi->d.u.extents, sizeof(saved));
	memset(&fi->d.u, 0, sizeof(fi->d.u));
	fi->d.nextents = 0;
	fi->d.root = 0;
	ffs_iflags_change(fi, FFS_I_BTREE, 0);
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = tree_add(fs, fi, &saved[i]);
	return rc;
}

static int ext_add(struct ffs *fs, struct finode *fi, const struct ffs_extent *x)
{
	unsigned n = ff_le32(fi->d.nextents), i;

	if (ffs_is_small(fi)) { /* u holds its block list: data.c moves it to stripes first */
		ff_log(FF_LOG_ERR, "inode %llu: an extent for a small file; run fsck.framefs",
		       (unsigned long long)fi->ino);
		return -EUCLEAN;
	}
	if (is_tree(fi))
		return tree_add(fs, fi, x);
	if (n == FFS_INLINE_EXTENTS) {
		int rc = ext_to_tree(fs, fi);

		return rc < 0 ? rc : tree_add(fs, fi, x);
	}
	for (i = 0; i < n && ff_le64(fi->d.u.extents[i].fstripe) < ff_le64(x->fstripe); i++)
		;
	memmove(&fi->d.u.extents[i + 1], &fi->d.u.extents[i], (n - i) * sizeof(*x));
	fi->d.u.extents[i] = *x;
	fi->d.nextents = ff_cpu_to_le32(n + 1);
	return 0;
}

static struct ffs_extent mkext(uint64_t f, uint64_t p, uint64_t n, uint32_t flags)
{
	return (struct ffs_extent){ ff_cpu_to_le64(f), ff_cpu_to_le64(p),
				    ff_cpu_to_le32((uint32_t)n), ff_cpu_to_le32(flags) };
}

/*
 * Remove file stripes [f, end) from the map.  Physical stripes inside
 * [keep, keep+nkeep) are the ones about to be mapped again (a preallocated
 * run written in place) and are not freed.  *given (when not NULL) counts
 * the stripes freed and the tails let go: what the file may take back
 * (fi->regrow, wbuf.c ffs_wb_reserve_stripes); a stripe replaced is not given up.
 */
static int punch(struct ffs *fs, struct finode *fi, uint64_t f, uint64_t end, uint64_t keep,
		 uint64_t nkeep, uint64_t *given)
{
	/* their content changes hands here (patch.c) */
	int prc = fs->patches_drop ? fs->patches_drop(fs, fi, f, end) : 0;

	if (prc < 0)
		return prc;
	for (;;) {
		struct ffs_extent x;
		uint64_t xf, xp, xn, a, b;
		int rc = ext_find_le(fs, fi, end - 1, &x);

		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
		xf = ff_le64(x.fstripe);
		xp = ff_le64(x.pstripe);
		xn = xcount(&x);
		if (xf + xn <= f)
			return 0; /* the nearest run ends before the hole */
		a = FF_MAX(f, xf);
		b = FF_MIN(end, xf + xn);
		rc = ext_remove(fs, fi, xf);
		atomic_fetch_add(&fi->map_gen, 1); /* its readers read again (data.c) */
		if (rc == 0 && (ff_le32(x.flags) & FFS_X_TAIL)) { /* its rows go back (tail.c) */
			tail_blocks_add(fs, fi, &x, -1);
			if (given) /* written again, it needs a stripe */
				(*given)++;
			rc = fs->tail_release ? fs->tail_release(fs, xp) : 0;
			if (rc < 0)
				return rc;
			if (a == 0 || a <= f)
				return 0;
			end = a;
			continue;
		}
		if (rc == 0 && a > xf) {
			struct ffs_extent l = mkext(xf, xp, a - xf, ff_le32(x.flags));

			rc = ext_add(fs, fi, &l);
		}
		if (rc == 0 && xf + xn > b) {
			struct ffs_extent r = mkext(b, xp + (b - xf), xf + xn - b, ff_le32(x.flags));

			rc = ext_add(fs, fi, &r);
		}
		for (uint64_t s = a; rc == 0 && s < b; s++) {
			uint64_t ps = xp + (s - xf);

			if (ps >= keep && ps < keep + nkeep)
				continue;
			rc = ffs_free_stripes(fs, ps, 1);
			fi->d.nstripes = ff_cpu_to_le64(ff_le64(fi->d.nstripes) - 1);
			if (given)
				(*given)++;
		}
		if (rc < 0)
			return rc;
		if (a == 0 || a <= f)
			return 0;
		end = a;
	}
}

int ffs_extent_find(struct ffs *fs, struct finode *fi, uint64_t fstripe, struct ffs_extent *x)
{
	int rc = ext_find_le(fs, fi, fstripe, x);

	if (rc == 0 && ff_le64(x->fstripe) + xcount(x) <= fstripe)
		rc = -ENOENT;
	return rc;
}

int ffs_extent_lookup(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *pstripe,
		  uint64_t *run, uint32_t *flags)
{
	struct ffs_extent x;
	int rc = ext_find_le(fs, fi, fstripe, &x);

	if (rc == 0 && ff_le64(x.fstripe) + xcount(&x) > fstripe) {
		*pstripe = ff_le64(x.pstripe) + (fstripe - ff_le64(x.fstripe));
		*run = ff_le64(x.fstripe) + xcount(&x) - fstripe;
		*flags = ff_le32(x.flags);
		return 0;
	}
	if (rc < 0 && rc != -ENOENT)
		return rc;
	/* a hole: how far it reaches */
	rc = ext_find_ge(fs, fi, fstripe, &x);
	*run = rc == 0 ? ff_le64(x.fstripe) - fstripe : UINT64_MAX;
	return rc == 0 || rc == -ENOENT ? -ENOENT : rc;
}

int ffs_extent_map(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t pstripe,
	       uint64_t count, uint32_t flags)
{
	struct ffs_extent left, right, x = mkext(fstripe, pstripe, count, flags);
	uint64_t kept = 0;
	int rc;

	FF_ASSERT(count > 0 && count <= UINT32_MAX);
	/* stripes already mapped here in place (preallocated) stay counted */
	for (uint64_t s = 0; s < count; s++) {
		uint64_t p, run;
		uint32_t fl;

		if (ffs_extent_lookup(fs, fi, fstripe + s, &p, &run, &fl) == 0 && p == pstripe + s &&
		    !(fl & FFS_X_TAIL))
			kept++;
	}
	rc = punch(fs, fi, fstripe, fstripe + count, pstripe, count, NULL);
	if (rc < 0)
		return rc;
	/* merge with the run that ends right here, and the one that starts right after */
	if (fstripe > 0 && ext_find_le(fs, fi, fstripe - 1, &left) == 0 &&
	    ff_le32(left.flags) == flags && ff_le64(left.fstripe) + xcount(&left) == fstripe &&
	    ff_le64(left.pstripe) + ff_le32(left.count) == pstripe &&
	    ff_le32(left.count) + count <= UINT32_MAX) {
		rc = ext_remove(fs, fi, ff_le64(left.fstripe));
		x = mkext(ff_le64(left.fstripe), ff_le64(left.pstripe), ff_le32(left.count) + count,
			  flags);
	}
	if (rc == 0 && ext_find_ge(fs, fi, fstripe + count, &right) == 0 &&
	    ff_le64(right.fstripe) == fstripe + count && ff_le64(right.pstripe) == pstripe + count &&
	    ff_le32(right.flags) == flags && ff_le32(x.count) + ff_le32(right.count) <= UINT32_MAX) {
		rc = ext_remove(fs, fi, ff_le64(right.fstripe));
		x.count = ff_cpu_to_le32(ff_le32(x.count) + ff_le32(right.count));
	}
	if (rc == 0)
		rc = ext_add(fs, fi, &x);
	if (rc == 0) {
		fi->d.nstripes = ff_cpu_to_le64(ff_le64(fi->d.nstripes) + count - kept);
		rc = ffs_istore(fs, fi);
	}
	return rc;
}

int ffs_extent_map_tail(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t p,
			uint32_t row0, uint32_t rows)
{
	struct ffs_extent x = ffs_tail_extent_make(fstripe, p, row0, rows);
	int rc = punch(fs, fi, fstripe, fstripe + 1, 0, 0, NULL);

	if (rc == 0)
		rc = ext_add(fs, fi, &x);
	if (rc == 0)
		tail_blocks_add(fs, fi, &x, 1);
	return rc < 0 ? rc : ffs_istore(fs, fi);
}

int ffs_extent_punch(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t end)
{
	int rc = end > fstripe ? punch(fs, fi, fstripe, end, 0, 0, &fi->regrow) : 0;

	return rc < 0 ? rc : ffs_istore(fs, fi);
}

int ffs_extent_truncate(struct ffs *fs, struct finode *fi, uint64_t fstripe)
{
	int rc = fstripe == 0 ? ffs_small_release(fs, fi) : 0; /* a small file's blocks */

	if (rc == 0)
		rc = punch(fs, fi, fstripe, UINT64_MAX, 0, 0, &fi->regrow);

	return rc < 0 ? rc : ffs_istore(fs, fi);
}

int ffs_extent_iterate(struct ffs *fs, struct finode *fi,
		   int (*cb)(void *arg, const struct ffs_extent *x), void *arg)
{
	uint64_t f = 0;

	for (;;) {
		struct ffs_extent x;
		int rc = ext_find_ge(fs, fi, f, &x);

		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
		rc = cb(arg, &x);
		if (rc < 0)
			return rc;
		f = ff_le64(x.fstripe) + FF_MAX(1u, xcount(&x));
	}
}


const struct ffs_geo *ffs_file_geo(struct ffs *fs, struct finode *fi)
{
	struct ffs_extent x;

	if (!fs->orows)
		return &fs->geo[0];
	if (!fi->geo)
		fi->geo = ext_find_ge(fs, fi, 0, &x) == 0 ? ffs_row_geo(fs, ff_le64(x.pstripe))
							  : &fs->geo[0];
	return fi->geo;
}
