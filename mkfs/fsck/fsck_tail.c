/* SPDX-License-Identifier: MIT */
/*
 * Packed tails (format version 4, fs/data/tail.c): a file's last, partial stripe
 * kept in rows of a shared tail stripe and mapped by an FFS_X_TAIL extent,
 * whose fields fsck_extent.c checks before it claims the rows here.  The
 * tail stripe's checksum entry (ino FFS_CSUM_TAILS) says how many rows were
 * written (hwm) and how many tails and patches point into it (live).
 * Patches (version 5, fsck_patch.c) claim slots of those rows, 4 KiB blocks
 * (a tail's slots are its whole rows'), and are settled with the tails:
 * below, "tail" stands for either, with these differences: they overlap by
 * slots, a patch in a stripe without a valid entry must match its own
 * checksums (step 2), and a patch whose file stripe is gone goes after the
 * settling (fsck_patch_unmapped).
 *
 * Once every inode has been seen and the whole-stripe duplicates settled
 * (fsck_stripes.c), each tail stripe is settled (fsck_tail_resolve):
 *  1. A stripe an ordinary extent maps whole as well is that file's when
 *     the checksum entry names it (the entry is written with the mapping),
 *     else the tails': the other side is unmapped.
 *  2. With a valid tail entry, a tail whose rows end past its hwm points at
 *     rows never written: it is dropped.  Without one nothing says what was
 *     written, and the entry is rebuilt from the tails (4).
 *  3. Tails whose slots overlap: the first in slot order keeps them.
 *  4. The entry, from the checksum-table walk (fsck_tail_entry_check): its
 *     live count must be the number of tails left; an entry that is no
 *     valid tail entry is rebuilt as a damaged ordinary entry is: hwm the
 *     end of the highest tail, crcs from the data over those rows.
 * A stripe whose bitmap bit is set and whose entry is a tail entry, with no
 * tail pointing into it, is freed: with a live count of 0 it is what a crash
 * leaves (the daemon keeps an emptied tail stripe open while it may append
 * to it: tail.c), so that repair is a minor one.  The entry goes here, the
 * bitmap bit in pass 4, as for any stripe a repair unmaps.  A claim lost
 * after the entries were checked (its inode cleared in pass 3) takes its
 * count off the entry at once (fsck_tail_forget), as a small file's
 * checksum entries go with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

bool fsck_tails_allowed(const struct fsck *c)
{
	return ff_le32(c->sb->version) >= FFS_VERSION_TAILS;
}

uint32_t fsck_tail_rows_max(const struct fsck *c)
{
	return ffs_tools_geom(c->fs)->chunk_bytes / FFS_TAIL_ROW;
}

int fsck_tail_claim_add(struct fsck *c, const struct tail_claim *t)
{
	void *grown = fsck_grow(c->tails, &c->cap_tails, c->ntails, sizeof(*c->tails), 64);

	if (!grown)
		return -ENOMEM;
	c->tails = grown;
	c->tails[c->ntails++] = *t;
	return 0;
}

int fsck_tail_claim(struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe, uint32_t row0,
		    uint32_t rows)
{
	uint32_t ndata = ffs_tools_row_geom(c->fs, p)->ndata; /* slots are the stripe's row's */

	FF_ASSERT(rows >= 1 && row0 + rows <= fsck_tail_rows_max(c) && p < c->nstripes);
	return fsck_tail_claim_add(c, &(struct tail_claim){
		.p = p, .ino = (uint32_t)ino, .fstripe = (uint32_t)fstripe, .row0 = (uint16_t)row0,
		.rows = (uint16_t)rows, .slot0 = row0 * ndata, .nslots = rows * ndata });
}

static bool claim_live(const struct fsck *c, const struct tail_claim *t)
{
	return !t->dead && (c->ino[t->ino].flags & IS_USED);
}

/* The first claim on stripe p in the sorted list (or where it would be). */
static size_t first_of(const struct fsck *c, uint64_t p)
{
	size_t lo = 0, hi = c->ntails;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->tails[mid].p < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool fsck_tail_owned(const struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe)
{
	for (size_t i = first_of(c, p); i < c->ntails && c->tails[i].p == p; i++)
		if (c->tails[i].ino == ino && c->tails[i].fstripe == fstripe && !c->tails[i].patch &&
		    claim_live(c, &c->tails[i]))
			return true;
	return false;
}

bool fsck_patch_owned(const struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe, uint32_t b0)
{
	for (size_t i = first_of(c, p); i < c->ntails && c->tails[i].p == p; i++)
		if (c->tails[i].ino == ino && c->tails[i].fstripe == fstripe && c->tails[i].patch &&
		    c->tails[i].b0 == b0 && claim_live(c, &c->tails[i]))
			return true;
	return false;
}

uint32_t fsck_tail_first(const struct fsck *c, uint64_t p, uint32_t *ino, uint32_t *fstripe)
{
	*ino = 0;
	*fstripe = 0;
	for (size_t i = first_of(c, p); i < c->ntails && c->tails[i].p == p; i++)
		if (claim_live(c, &c->tails[i])) {
			*ino = c->tails[i].ino;
			*fstripe = c->tails[i].fstripe;
			break;
		}
	return c->stripe[p].ino == FFS_CSUM_TAILS ? c->stripe[p].fstripe : 0;
}

/* An entry as the library writes a tail stripe's: written rows inside the chunk. */
static bool entry_is_tails(const struct fsck *c, uint32_t ino, uint32_t f)
{
	return ino == FFS_CSUM_TAILS && !(f & FFS_CSUM_UNWRITTEN) && FFS_CSUM_TAIL_HWM(f) >= 1 &&
	       FFS_CSUM_TAIL_HWM(f) <= fsck_tail_rows_max(c);
}

static int by_slot(const void *a, const void *b)
{
	const struct tail_claim *x = a, *y = b;

	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	if (x->slot0 != y->slot0)
		return x->slot0 < y->slot0 ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	if (x->fstripe != y->fstripe)
		return x->fstripe < y->fstripe ? -1 : 1;
	return x->b0 < y->b0 ? -1 : x->b0 > y->b0;
}

/* Claim t loses its place (code says why): a tail's file gets its map
 * rebuilt without it, a patch's its patch tree. */
static void lose(struct fsck *c, struct tail_claim *t, enum problem code, const char *why,
		 uint64_t other)
{
	if (t->patch) {
		if (fsck_fix_problem(c, code == PR_2_TAIL_DUP ? PR_2_PATCH_DUP : PR_2_PATCH_BAD,
				     &(struct pctx){ .ino = t->ino, .num = t->fstripe, .blk = t->p,
						     .num2 = t->nslots, .num3 = t->b0, .str = why,
						     .ino2 = other }))
			c->ino[t->ino].flags |= IS_PREBUILD;
	} else if (fsck_fix_problem(c, code, &(struct pctx){ .ino = t->ino, .num = t->fstripe,
							   .blk = t->p, .num2 = t->rows,
							   .num3 = t->row0, .str = why, .ino2 = other })) {
		c->ino[t->ino].flags |= IS_REBUILD;
	}
	t->dead = true;
}

/* Step 1: an ordinary extent maps p whole too.  True when it keeps it. */
static bool whole_keeps(struct fsck *c, struct tail_claim *t, size_t n, uint32_t nlive)
{
	uint64_t p = t[0].p;
	struct stripe_claim whole = c->stripe[p];
	uint32_t crc[FF_MEMBERS_MAX], ino, f;
	size_t first = 0;

	if (!whole.ino || !(c->ino[whole.ino].flags & IS_USED))
		return false;
	if (ffs_csum_get(c->fs, p, &ino, &f, crc) == 0 && ino == whole.ino &&
	    (f & ~FFS_CSUM_UNWRITTEN) == whole.fstripe) {
		for (size_t i = 0; i < n; i++)
			if (claim_live(c, &t[i]))
				lose(c, &t[i], PR_2_TAIL_DUP, "lies in a stripe mapped whole by", whole.ino);
		return true;
	}
	while (!claim_live(c, &t[first]))
		first++;
	if (fsck_fix_problem(c, PR_2_TAIL_STRIPE, &(struct pctx){ .ino = whole.ino, .blk = p,
							     .num = whole.fstripe, .num2 = nlive,
							     .ino2 = t[first].ino }))
		c->ino[whole.ino].flags |= IS_REBUILD;
	ff_bit_clear(c->unwritten, p);
	return false;
}

/* Steps 1-3 for the claims t[0..n) on one stripe. */
static void settle(struct fsck *c, struct tail_claim *t, size_t n)
{
	uint32_t crc[FF_MEMBERS_MAX], ino, f, nlive = 0, end = 0, hwm = 0;
	const struct tail_claim *prev = NULL;
	char why[96];

	for (size_t i = 0; i < n; i++) {
		t[i].dead = !claim_live(c, &t[i]); /* its inode was cleared */
		nlive += !t[i].dead;
	}
	if (!nlive || whole_keeps(c, t, n, nlive))
		return;
	if (ffs_csum_get(c->fs, t[0].p, &ino, &f, crc) == 0 && entry_is_tails(c, ino, f))
		hwm = FFS_CSUM_TAIL_HWM(f);
	snprintf(why, sizeof(why), "ends past the %u rows written in its tail stripe", hwm);
	for (size_t i = 0; i < n; i++) {
		if (!claim_live(c, &t[i]))
			continue;
		if (hwm && t[i].row0 + t[i].rows > hwm)
			lose(c, &t[i], PR_2_TAIL_BAD, why, 0);
		/* nothing says what the stripe holds: a patch's own checksums do */
		else if (!hwm && t[i].patch && !fsck_patch_blocks_match(c, &t[i]))
			lose(c, &t[i], PR_2_TAIL_BAD, "does not hold the blocks its record describes", 0);
	}
	nlive = 0;
	for (size_t i = 0; i < n; i++) {
		if (!claim_live(c, &t[i]))
			continue;
		if (prev && t[i].slot0 < end) {
			lose(c, &t[i], PR_2_TAIL_DUP,
			     prev->patch ? "overlaps a patch of" : "overlaps the tail of", prev->ino);
			continue;
		}
		if (t[i].slot0 + t[i].nslots > end) {
			end = t[i].slot0 + t[i].nslots;
			prev = &t[i];
		}
		nlive++;
	}
	c->stripe[t[0].p] = nlive ? (struct stripe_claim){ FFS_CSUM_TAILS, nlive }
				  : (struct stripe_claim){ 0, 0 };
}

int fsck_tail_resolve(struct fsck *c)
{
	if (c->ntails)
		qsort(c->tails, c->ntails, sizeof(*c->tails), by_slot);
	for (size_t i = 0, j; i < c->ntails && !c->stop; i = j) {
		for (j = i; j < c->ntails && c->tails[j].p == c->tails[i].p; j++)
			;
		settle(c, &c->tails[i], j - i);
	}
	if (!c->stop)
		fsck_patch_unmapped(c);
	return 0;
}

/* The rows the live tails in p reach. */
static uint32_t tails_end(const struct fsck *c, uint64_t p)
{
	uint32_t end = 0;

	for (size_t i = first_of(c, p); i < c->ntails && c->tails[i].p == p; i++)
		if (claim_live(c, &c->tails[i]))
			end = FF_MAX(end, (uint32_t)c->tails[i].row0 + c->tails[i].rows);
	return end;
}

void fsck_tail_entry_make(struct fsck *c, uint64_t p, uint32_t *f, uint32_t *crc)
{
	uint32_t end = tails_end(c, p);

	FF_ASSERT(c->stripe[p].ino == FFS_CSUM_TAILS && end >= 1);
	fsck_data_crcs(c, p, end * FFS_TAIL_ROW, crc); /* unreadable: zeros, pass 5 tells */
	*f = FFS_CSUM_TAIL_PACK(end, c->stripe[p].fstripe);
}

static int entry_set(struct fsck *c, uint64_t p, uint32_t ino, uint32_t f, const uint32_t *crc)
{
	int rc = ffs_csum_set(c->fs, p, ino, f, crc);

	return rc < 0 ? rc : fsck_commit(c, false);
}

/* Is stripe p's bit set in the on-disk bitmap (false: clear or unreadable,
 * which pass 4 rewrites from the counts anyway)? */
static bool bit_on_disk(struct fsck *c, uint64_t p)
{
	uint64_t no = ff_le64(c->sb->sbitmap_start) + p / FFS_BITS_PER_BLOCK, i = p % FFS_BITS_PER_BLOCK;
	struct mbuf *mb;
	bool set;

	if (ffs_mb_get(c->fs, no, FFS_B_BITMAP, &mb) < 0)
		return false;
	set = (((const struct ffs_bitmap_block *)mb->data)->bits[i / 8] >> (i % 8)) & 1;
	ffs_mb_put(c->fs, mb);
	return set;
}

/* A stripe no tail points into whose entry says it holds tails. */
static int unclaimed(struct fsck *c, uint64_t p, uint32_t f)
{
	static const uint32_t zero[FF_MEMBERS_MAX];
	uint32_t live = FFS_CSUM_TAIL_LIVE(f);
	bool fix;

	if (!fsck_tails_allowed(c) || !bit_on_disk(c, p))
		return 0; /* a free stripe's entry is whatever its last owner left */
	if (live == 0)
		fix = fsck_fix_problem(c, PR_2_TAIL_LEAKED, &(struct pctx){
					       .blk = p, .num = FFS_CSUM_TAIL_HWM(f) });
	else
		fix = fsck_fix_problem(c, PR_2_TAIL_LIVE, &(struct pctx){ .blk = p, .num = live,
									  .num2 = 0 });
	return fix ? entry_set(c, p, 0, 0, zero) : 0; /* its bit goes in pass 4 */
}

int fsck_tail_entry_check(struct fsck *c, uint64_t p, uint32_t ino, uint32_t f,
			  const uint32_t *crc)
{
	uint32_t n, first, first_f, nf, mine[FF_MEMBERS_MAX];
	char why[96];

	if (c->stripe[p].ino != FFS_CSUM_TAILS)
		return unclaimed(c, p, f);
	n = fsck_tail_first(c, p, &first, &first_f);
	if (!entry_is_tails(c, ino, f)) {
		if (ino != FFS_CSUM_TAILS)
			snprintf(why, sizeof(why), "names inode %u file stripe %u%s", ino,
				 f & ~FFS_CSUM_UNWRITTEN, f & FFS_CSUM_UNWRITTEN ? " (unwritten)" : "");
		else
			snprintf(why, sizeof(why), "is a tail stripe's with %u rows written, of %u",
				 FFS_CSUM_TAIL_HWM(f), fsck_tail_rows_max(c));
		if (!fsck_fix_problem(c, PR_2_TAIL_CSUM, &(struct pctx){ .blk = p, .str = why, .num = n,
								      .ino = first }))
			return 0;
		fsck_tail_entry_make(c, p, &nf, mine);
		return entry_set(c, p, FFS_CSUM_TAILS, nf, mine);
	}
	if (FFS_CSUM_TAIL_LIVE(f) != n &&
	    fsck_fix_problem(c, PR_2_TAIL_LIVE, &(struct pctx){ .blk = p, .num = FFS_CSUM_TAIL_LIVE(f),
								.num2 = n }))
		return entry_set(c, p, FFS_CSUM_TAILS, FFS_CSUM_TAIL_PACK(FFS_CSUM_TAIL_HWM(f), n), crc);
	return 0;
}

/* Tail t's count comes off its stripe's entry; the last one frees it. */
static void forget_one(struct fsck *c, const struct tail_claim *t)
{
	static const uint32_t zero[FF_MEMBERS_MAX];
	uint32_t crc[FF_MEMBERS_MAX], ino, f, n;
	struct stripe_claim *sc = &c->stripe[t->p];
	int rc;

	if (sc->ino != FFS_CSUM_TAILS)
		return;
	n = --sc->fstripe;
	if (n == 0)
		*sc = (struct stripe_claim){ 0, 0 }; /* its bit goes in pass 4 */
	rc = ffs_csum_get(c->fs, t->p, &ino, &f, crc);
	if (rc == 0 && entry_is_tails(c, ino, f))
		rc = n ? entry_set(c, t->p, ino, FFS_CSUM_TAIL_PACK(FFS_CSUM_TAIL_HWM(f), n), crc)
		       : entry_set(c, t->p, 0, 0, zero);
	if (rc < 0)
		fsck_operr(c, rc, "cannot update a tail stripe's checksum entry");
}

void fsck_tail_forget(struct fsck *c, uint64_t ino)
{
	for (size_t i = 0; i < c->ntails; i++) {
		struct tail_claim *t = &c->tails[i];

		if (t->ino != ino || t->dead)
			continue;
		t->dead = true;
		if (c->tails_settled)
			forget_one(c, t);
	}
}
