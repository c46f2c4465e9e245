/* SPDX-License-Identifier: MIT */
/*
 * Patches (format version 5, fs/data/patch.c): 4 KiB blocks of a file stripe
 * rewritten in slots of a tail stripe, each run of them a record in the
 * file's patch tree (rooted at the inode's u2.patch_root, its nodes owned
 * by the inode; format.h gives the record).  A patch counts as one in its
 * tail stripe's live count, as a tail does.
 *
 * Pass 2 walks the tree (its nodes claimed as POOL_PTREE, apart from the
 * extent map's) and checks each record on its own: its shape, its blocks
 * inside the file stripe and its slots inside the tail stripe, no overlap
 * with the patch before it, and a file stripe the file maps with a written
 * extent (a whole stripe or a tail: fsck_map).  A valid patch is claimed in
 * the tail list (fsck_tail.c), which settles it with the tails of its
 * stripe: its rows below the stripe's hwm, its slots overlapping no other
 * claim's, its blocks matching their checksums when no valid entry says
 * what the stripe holds; and, once every tail stripe is settled, its file
 * stripe still mapped (fsck_patch_unmapped).
 *
 * A patch that fails goes, and those blocks of the file read what the
 * stripe under them holds — older data, so the repair is a major one.  The
 * tree of a file that lost any is rebuilt from the records still claimed
 * (fsck_patch_rebuild_all), after the extent maps are: the old nodes go
 * back to the pool.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

bool fsck_patches_allowed(const struct fsck *c)
{
	return ff_le32(c->sb->version) >= FFS_VERSION_PATCH;
}

/* Blocks in a file stripe of the file whose valid extents are m (its
 * geometry's stripe: fsck_extent.c). */
static uint32_t blocks_per_stripe(const struct fsck *c, const struct fsck_map *m)
{
	return (uint32_t)((m->g ? m->g : ffs_tools_geom(c->fs))->stripe_bytes / FFS_BLOCK);
}

/* Slots in tail stripe p: its rows' blocks in each of its row's data chunks. */
static uint32_t slots_max(const struct fsck *c, uint64_t p)
{
	return fsck_tail_rows_max(c) * ffs_tools_row_geom(c->fs, p)->ndata;
}

struct krec { /* a record kept for the rebuilt tree */
	uint64_t key;
	uint16_t len;
	uint8_t val[FFS_BT_RECORD_MAX];
};

struct pwalk {
	struct fsck *c;
	uint64_t ino;
	const struct fsck_map *map; /* pass 2: the file's valid extents */
	bool rebuild;               /* collect the records still claimed */
	bool have_prev;
	uint64_t prev_f;
	uint32_t prev_end;          /* the block after the last valid patch of prev_f */
	bool remove;                /* a record is to go: rebuild the tree */
	char why[96];
	struct krec *keep;
	size_t nkeep, cap;
};

/* A record as format.h defines it: NULL, or what is wrong with it. */
static const char *rec_problem(struct pwalk *w, uint64_t key, const uint8_t *val, uint16_t len,
			       struct ffs_patch *x, uint32_t *crcsum, const struct fsck_run **run)
{
	struct fsck *c = w->c;
	uint64_t f = FFS_PATCH_KEY_STRIPE(key);
	uint32_t b0 = FFS_PATCH_KEY_BLOCK(key), n;

	memset(x, 0, sizeof(*x));
	if (len >= sizeof(*x))
		memcpy(x, val, sizeof(*x));
	n = ff_le16(x->nblocks);
	if (len < sizeof(*x) || n == 0 || n > FFS_PATCH_BLOCKS_MAX || len != sizeof(*x) + 4 * n ||
	    x->reserved)
		return "is a malformed record";
	*crcsum = ff_crc32c(0, val + sizeof(*x), 4 * n);
	if (b0 + n > blocks_per_stripe(c, w->map)) {
		snprintf(w->why, sizeof(w->why), "runs past the %u blocks of a stripe",
			 blocks_per_stripe(c, w->map));
		return w->why;
	}
	if (ff_le64(x->pstripe) >= c->nstripes)
		return "lies outside the data area";
	if (ff_le16(x->slot0) + n > slots_max(c, ff_le64(x->pstripe))) {
		snprintf(w->why, sizeof(w->why), "has slots outside the %u of a tail stripe",
			 slots_max(c, ff_le64(x->pstripe)));
		return w->why;
	}
	if (w->have_prev && f == w->prev_f && b0 < w->prev_end)
		return "overlaps the patch before it";
	*run = fsck_map_find(w->map, f);
	if (!*run)
		return "patches a file stripe the file does not map";
	if ((*run)->flags & FFS_X_UNWRITTEN)
		return "patches preallocated space";
	return NULL;
}

static int keep_rec(struct pwalk *w, uint64_t key, const uint8_t *val, uint16_t len)
{
	void *grown = fsck_grow(w->keep, &w->cap, w->nkeep, sizeof(*w->keep), 16);

	if (!grown)
		return -ENOMEM;
	w->keep = grown;
	w->keep[w->nkeep].key = key;
	w->keep[w->nkeep].len = len;
	memcpy(w->keep[w->nkeep].val, val, len);
	w->nkeep++;
	return 0;
}

static int tree_rec(struct fsck_tree_walk *tw, uint64_t key, const uint8_t *val, uint16_t len)
{
	struct pwalk *w = tw->arg;
	struct fsck *c = w->c;
	uint32_t ndata, crcsum = 0, n, slot0, b0;
	const struct fsck_run *run = NULL;
	struct ffs_patch x;
	const char *why;
	uint64_t f = FFS_PATCH_KEY_STRIPE(key), p;

	if (w->rebuild) { /* only records pass 2 claimed can be kept: those are whole */
		memset(&x, 0, sizeof(x));
		memcpy(&x, val, FF_MIN(len, sizeof(x)));
		return fsck_patch_owned(c, ff_le64(x.pstripe), w->ino, f, FFS_PATCH_KEY_BLOCK(key))
			       ? keep_rec(w, key, val, len) : 0;
	}
	why = rec_problem(w, key, val, len, &x, &crcsum, &run);
	n = ff_le16(x.nblocks);
	b0 = FFS_PATCH_KEY_BLOCK(key);
	p = ff_le64(x.pstripe);
	if (why) {
		if (fsck_fix_problem(c, PR_2_PATCH_BAD, &(struct pctx){ .ino = w->ino, .num = f, .blk = p,
								      .num2 = n, .num3 = b0,
								      .str = why }))
			w->remove = true;
		return 0;
	}
	w->have_prev = true;
	w->prev_f = f;
	w->prev_end = b0 + n;
	slot0 = ff_le16(x.slot0);
	ndata = ffs_tools_row_geom(c->fs, p)->ndata; /* a slot's row and chunk: p's geometry */
	return fsck_tail_claim_add(c, &(struct tail_claim){
		.p = p, .ino = (uint32_t)w->ino, .fstripe = (uint32_t)f,
		.row0 = (uint16_t)(slot0 / ndata),
		.rows = (uint16_t)((slot0 + n - 1) / ndata - slot0 / ndata + 1),
		.slot0 = slot0, .nslots = n, .patch = true, .b0 = (uint16_t)b0,
		.mtail = run->flags & FFS_X_TAIL, .mp = run->p + (f - run->f), .crcsum = crcsum });
}

void fsck_patch_check(struct fsck *c, uint64_t ino, struct ffs_inode *d, const struct fsck_map *m,
		      bool *dirty)
{
	uint64_t root = ff_le64(d->u2.patch_root);
	struct pwalk w = { .c = c, .ino = ino, .map = m };
	struct fsck_tree_walk tw = { .c = c, .ino = ino, .root = root, .claim = true,
				     .pool_type = POOL_PTREE, .rec = tree_rec, .arg = &w };
	char why[96];
	int rc;

	if (!fsck_patches_allowed(c) || !root) /* below version 5 the field is rdev */
		return;
	if (ff_le32(d->flags) & FFS_I_SMALL) {
		if (fsck_fix_problem(c, PR_2_PATCH_ROOT, &(struct pctx){
				.ino = ino, .blk = root, .str = "a small file",
				.str2 = "but a small file's data has no patches" })) {
			d->u2.patch_root = 0; /* its nodes go back in pass 4 */
			*dirty = true;
		}
		return;
	}
	rc = fsck_tree_walk(&tw);
	if (rc < 0) {
		fsck_operr(c, rc, "cannot walk a patch tree");
		return;
	}
	if (tw.damaged) {
		fsck_tree_why(&tw, why, sizeof(why));
		if (fsck_fix_problem(c, PR_2_TREE_BAD, &(struct pctx){ .ino = ino, .str = "patch tree",
							     .blk = tw.bad_blk, .str2 = why }))
			w.remove = true;
		else
			c->ino[ino].flags |= IS_TREE_BAD;
	}
	if (w.remove)
		c->ino[ino].flags |= IS_PREBUILD;
}

bool fsck_patch_blocks_match(struct fsck *c, const struct tail_claim *t)
{
	const struct ff_geom *g = ffs_tools_row_geom(c->fs, t->p);
	uint32_t crcs[FFS_PATCH_BLOCKS_MAX];

	if (ffs_repair_read_around(c->fs, t->p, 0, c->sbuf) < 0) /* in its row's geometry */
		return false;
	for (uint32_t k = 0; k < t->nslots; k++) {
		uint32_t s = t->slot0 + k;
		const uint8_t *b = (const uint8_t *)c->sbuf + (size_t)(s % g->ndata) * g->chunk_bytes +
				   (size_t)(s / g->ndata) * FFS_BLOCK;

		crcs[k] = ff_cpu_to_le32(ffs_patch_crc(t->p, s, b));
	}
	return ff_crc32c(0, crcs, 4 * t->nslots) == t->crcsum;
}

void fsck_patch_unmapped(struct fsck *c)
{
	for (size_t i = 0; i < c->ntails && !c->stop; i++) {
		struct tail_claim *t = &c->tails[i];
		struct stripe_claim *sc = &c->stripe[t->p];
		bool mapped;

		if (!t->patch || t->dead || !(c->ino[t->ino].flags & IS_USED))
			continue;
		mapped = t->mtail ? fsck_tail_owned(c, t->mp, t->ino, t->fstripe)
				  : c->stripe[t->mp].ino == t->ino && c->stripe[t->mp].fstripe == t->fstripe;
		if (mapped)
			continue;
		if (fsck_fix_problem(c, PR_2_PATCH_BAD, &(struct pctx){
				.ino = t->ino, .num = t->fstripe, .blk = t->p, .num2 = t->nslots,
				.num3 = t->b0, .str = "patches a file stripe its file no longer maps" }))
			c->ino[t->ino].flags |= IS_PREBUILD;
		t->dead = true;
		if (sc->ino == FFS_CSUM_TAILS && --sc->fstripe == 0)
			*sc = (struct stripe_claim){ 0, 0 };
	}
}

/* A new tree from the records still claimed; the old nodes go back. */
static int rebuild_one(struct fsck *c, uint64_t ino)
{
	struct pwalk w = { .c = c, .ino = ino, .rebuild = true };
	struct fsck_tree_walk tw = { .c = c, .ino = ino, .pool_type = POOL_PTREE, .rec = tree_rec,
				     .arg = &w };
	struct bt_root t = { 0, ino };
	struct finode *fi;
	int rc = fsck_finode(c, ino, &fi);

	if (rc < 0)
		return rc;
	tw.root = ff_le64(fi->d.u2.patch_root);
	rc = fsck_tree_walk(&tw);
	for (size_t i = 0; i < w.nkeep && rc == 0; i++) {
		rc = ffs_bt_insert(c->fs, &t, w.keep[i].key, w.keep[i].val, w.keep[i].len);
		if (rc == 0)
			rc = fsck_commit(c, false);
	}
	free(w.keep);
	if (rc == 0) {
		fi->d.u2.patch_root = ff_cpu_to_le64(t.root);
		rc = ffs_istore(c->fs, fi);
	}
	fsck_finode_put(c, fi);
	if (rc == 0 && tw.root)
		rc = fsck_tree_free_old(c, ino, tw.root, POOL_PTREE);
	if (rc < 0)
		fsck_operr(c, rc, "cannot rebuild a patch tree");
	return rc;
}

int fsck_patch_rebuild_all(struct fsck *c)
{
	return fsck_rebuild_files(c, IS_PREBUILD, rebuild_one);
}
