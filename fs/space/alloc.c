/* SPDX-License-Identifier: MIT */
/*
 * Allocators for inodes, pool blocks and data stripes.  Each has an
 * in-memory bitmap (loaded at mount) mirrored by on-disk bitmap blocks that
 * change inside the running transaction.  Freed stripes are cleared on
 * disk at once but stay taken in memory until the transaction commits:
 * until then the committed metadata may still point at them, and their
 * contents must survive a crash.
 *
 * Layering.  The allocator sits below the journal and the read cache, and
 * calls neither: the journal hands back the stripes a commit made reusable
 * (ffs_alloc_tx_committed), a writer that finds only such stripes commits
 * itself and asks again, and the read cache learns of freed stripes through
 * the fs->stripes_freed hook it registers, so a stale copy of a freed
 * stripe is never served once the stripe is reused.  Likewise the stripes
 * reserved ahead come back through hooks their holders register: the tail
 * slots' spares (fs->reclaim_spares, tail.c) and the cached inodes'
 * reservations (fs->reclaim_reservations, inode.c).
 */
#include <errno.h>
#include <string.h>

#include "fs/space/space.h"
#include "io/bitmap.h"

/* One on-disk bitmap, nblocks blocks from META block start holding nbits
 * bits, into a fresh word bitmap *out and its clear bits into *nfree; a
 * block that cannot be read as ffs_alloc_load says (fs_i.h). */
int ffs_alloc_load_bitmap(struct ffs *fs, uint64_t start, uint64_t nblocks, uint64_t nbits,
			  uint64_t **out, uint64_t *nfree)
{
	uint64_t *bits = calloc(FF_BITMAP_WORDS(nbits) + 1, sizeof(uint64_t));
	struct ffs_bitmap_block *blk = ff_alloc_aligned(FFS_BLOCK);
	uint64_t used = 0;
	int rc = 0;

	if (!bits || !blk) {
		free(bits);
		free(blk);
		return -ENOMEM;
	}
	for (uint64_t b = 0; b < nblocks; b++) {
		uint64_t first = b * FFS_BITS_PER_BLOCK;
		uint64_t n = FF_MIN((uint64_t)FFS_BITS_PER_BLOCK, nbits - first);
		int rd = ffs_meta_read_verified(fs, start + b, FFS_B_BITMAP, blk);

		if (rd < 0 && !fs->checking) {
			rc = rd;
			break;
		}
		for (uint64_t i = 0; i < n; i++)
			if (rd < 0 || ff_bit8_test(blk->bits, i)) {
				ff_bit_set(bits, first + i);
				used++;
			}
	}
	free(blk);
	if (rc < 0) {
		free(bits);
		return rc;
	}
	*out = bits;
	*nfree = nbits - used;
	return 0;
}

int ffs_alloc_load(struct ffs *fs)
{
	const struct ffs_super *sb = fs->sb;
	int rc;

	rc = ffs_alloc_load_bitmap(fs, ff_le64(sb->ibitmap_start), ff_le64(sb->ibitmap_blocks),
			 ff_le64(sb->ninodes), &fs->ibits, &fs->free_inodes);
	if (rc == 0)
		rc = ffs_alloc_load_bitmap(fs, ff_le64(sb->sbitmap_start), ff_le64(sb->sbitmap_blocks),
				 ff_le64(sb->nstripes), &fs->sbits, &fs->free_stripes);
	if (rc == 0)
		rc = ffs_alloc_load_bitmap(fs, ff_le64(sb->mbitmap_start), ff_le64(sb->mbitmap_blocks),
				 ff_le64(sb->pool_blocks), &fs->mbits, &fs->free_mblocks);
	return rc;
}

void ffs_alloc_free_all(struct ffs *fs)
{
	free(fs->ibits);
	free(fs->sbits);
	free(fs->mbits);
	free(fs->pending_free);
	fs->ibits = fs->sbits = fs->mbits = fs->pending_free = NULL;
}

/* Change bit i of an on-disk bitmap inside the running transaction. */
static int disk_bit(struct ffs *fs, uint64_t start, uint64_t i, bool value)
{
	struct mbuf *mb;
	struct ffs_bitmap_block *blk;
	uint64_t bit = i % FFS_BITS_PER_BLOCK;
	int rc = ffs_mb_get(fs, start + i / FFS_BITS_PER_BLOCK, FFS_B_BITMAP, &mb);

	if (rc == -EUCLEAN && fs->checking)
		return 0; /* unreadable: fsck rewrites the whole block from its counts */
	if (rc < 0)
		return rc;
	blk = (struct ffs_bitmap_block *)mb->data;
	if (ff_bit8_test(blk->bits, bit) == value) {
		ffs_mb_put(fs, mb);
		if (fs->checking) /* fsck rewrites the bitmaps from what it counted */
			return 0;
		ff_log(FF_LOG_ERR, "bitmap block %llu: bit %llu is already %s: run fsck.framefs",
		       (unsigned long long)(start + i / FFS_BITS_PER_BLOCK), (unsigned long long)bit,
		       value ? "set" : "clear");
		return -EUCLEAN;
	}
	if (value)
		ff_bit8_set(blk->bits, bit);
	else
		ff_bit8_clear(blk->bits, bit);
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	return 0;
}

bool ffs_stripe_freed_in_tx(struct ffs *fs, uint64_t p)
{
	struct mbuf *mb;
	bool clear;

	if (!ffs_stripe_in_use(fs, p))
		return false; /* free before this transaction, or never taken */
	if (ffs_mb_get(fs, ff_le64(fs->sb->sbitmap_start) + p / FFS_BITS_PER_BLOCK, FFS_B_BITMAP,
		       &mb) < 0)
		return false; /* unreadable: as taken, the free reports it */
	clear = !ff_bit8_test(((struct ffs_bitmap_block *)mb->data)->bits, p % FFS_BITS_PER_BLOCK);
	ffs_mb_put(fs, mb);
	return clear;
}

/* First clear bit at or after from, wrapping once; UINT64_MAX if none. */
static uint64_t find_clear(const uint64_t *bits, uint64_t nbits, uint64_t from)
{
	uint64_t i = ff_bit_find_next_clear(bits, nbits, from);

	if (i < nbits)
		return i;
	i = ff_bit_find_next_clear(bits, from, 0); /* [0, from) */
	return i < from ? i : UINT64_MAX;
}

static void itable_hwm_raise(struct ffs *fs, uint64_t ino)
{
	uint64_t blk = ino / FFS_INODES_PER_BLOCK + 1;

	if (blk > ff_le64(fs->sb->itable_hwm))
		fs->sb->itable_hwm = ff_cpu_to_le64(blk);
}

int ffs_alloc_inode(struct ffs *fs, uint64_t *ino)
{
	uint64_t n = ff_le64(fs->sb->ninodes), i;
	int rc;

	if (!fs->free_inodes)
		return -ENOSPC;
	i = find_clear(fs->ibits, n, 1);
	if (i == UINT64_MAX)
		return -ENOSPC;
	rc = disk_bit(fs, ff_le64(fs->sb->ibitmap_start), i, true);
	if (rc < 0)
		return rc;
	ff_bit_set(fs->ibits, i);
	fs->free_inodes--;
	itable_hwm_raise(fs, i);
	*ino = i;
	return 0;
}

int ffs_free_inode_bit(struct ffs *fs, uint64_t ino)
{
	int rc;

	FF_ASSERT(ff_bit_test(fs->ibits, ino));
	rc = disk_bit(fs, ff_le64(fs->sb->ibitmap_start), ino, false);
	if (rc < 0)
		return rc;
	ff_bit_clear(fs->ibits, ino);
	fs->free_inodes++;
	return 0;
}

bool ffs_inode_bit_used(const struct ffs *fs, uint64_t ino)
{
	return ino < ff_le64(fs->sb->ninodes) && ff_bit_test(fs->ibits, ino);
}

bool ffs_pool_block_free(const struct ffs *fs, uint64_t no)
{
	uint64_t i = no - ff_le64(fs->sb->pool_start);

	return no >= ff_le64(fs->sb->pool_start) && i < ff_le64(fs->sb->pool_blocks) &&
	       !ff_bit_test(fs->mbits, i);
}

int ffs_alloc_mblock(struct ffs *fs, uint64_t *no)
{
	uint64_t n = ff_le64(fs->sb->pool_blocks), i;
	int rc;

	if (!fs->free_mblocks)
		return -ENOSPC;
	i = find_clear(fs->mbits, n, 0);
	if (i == UINT64_MAX)
		return -ENOSPC;
	rc = disk_bit(fs, ff_le64(fs->sb->mbitmap_start), i, true);
	if (rc < 0)
		return rc;
	ff_bit_set(fs->mbits, i);
	fs->free_mblocks--;
	*no = ff_le64(fs->sb->pool_start) + i;
	return 0;
}

int ffs_free_mblock(struct ffs *fs, uint64_t no)
{
	uint64_t i = no - ff_le64(fs->sb->pool_start);
	int rc;

	/* the number came from disk (an xattr or symlink pointer, a tree node):
	 * a corrupt one is an error for the caller, not an abort */
	if (no < ff_le64(fs->sb->pool_start) || i >= ff_le64(fs->sb->pool_blocks) ||
	    !ff_bit_test(fs->mbits, i)) {
		ff_log(FF_LOG_ERR, "metadata block %llu is not an allocated pool block; run fsck.framefs",
		       (unsigned long long)no);
		return -EUCLEAN;
	}
	rc = disk_bit(fs, ff_le64(fs->sb->mbitmap_start), i, false);
	if (rc < 0)
		return rc;
	ff_bit_clear(fs->mbits, i);
	fs->free_mblocks++;
	return 0;
}

/* Length of the free run starting at i, up to max. */
static uint64_t run_length(const uint64_t *bits, uint64_t nbits, uint64_t i, uint64_t max)
{
	uint64_t end = FF_MIN(nbits, i + max);

	return i < end ? ff_bit_find_next_set(bits, end, i) - i : 0;
}

/*
 * Every free stripe is reserved ahead by files being written: take the
 * unused part of their reservations back (each reserves again when it needs
 * more) rather than refuse a writer while the volume has room.  Reservations
 * are only touched under fs->lock, which the caller holds.
 */
static void reclaim_reservations(struct ffs *fs)
{
	if (fs->reclaim_spares)
		fs->reclaim_spares(fs); /* the tail slots' spares too */
	if (fs->reclaim_reservations)
		fs->reclaim_reservations(fs);
}

/*
 * The overwrite reserve: the last free stripes, which new data (a stripe
 * no file maps yet) may not take, so that a volume filled with footage
 * still takes in-place writes to the files it holds.  Every overwrite is
 * copy-on-write: a rewritten stripe, a patch batch and the tail stripe it
 * opens each need a free stripe before the old one is let go, and the
 * project database of an editing application lives on the same volume as
 * the frames (without it, the first 4 KiB overwrite of a full volume was
 * ENOSPC, and most still were after a frame was deleted).  As ZFS keeps
 * its slop space: 1/32 of the stripes, at least FFS_OVERWRITE_RESERVE_MIN
 * and at most FFS_OVERWRITE_RESERVE_MAX (6 GiB of 1.5 MiB stripes, well
 * above what the write-buffer pool holds at once), never more than a
 * quarter of a tiny volume.  statfs answers it as free but not available
 * (f_bfree, f_bavail), as ext4 does its root reserve.  A file truncated or
 * punched takes back from it what it gave up, the save of a project with
 * O_TRUNC being an overwrite too (wbuf.c ffs_wb_reserve_stripes): should another
 * file's new data take the freed stripes first, the reserve shrinks by
 * that much.
 */
#define FFS_OVERWRITE_RESERVE_MIN 8u
#define FFS_OVERWRITE_RESERVE_MAX 4096u

uint64_t ffs_overwrite_reserve(const struct ffs *fs)
{
	uint64_t n = ff_le64(fs->sb->nstripes);

	return FF_MIN(FF_MIN(FF_MAX(n / 32, (uint64_t)FFS_OVERWRITE_RESERVE_MIN),
			     (uint64_t)FFS_OVERWRITE_RESERVE_MAX), n / 4);
}

/*
 * Reserve stripes in memory only: a file takes a run ahead of its writes so
 * that it lies in one piece, and what it does not use goes back at close.
 * Only ffs_commit_stripes() marks them on disk, when they are mapped, so a
 * crash leaks nothing.  New data leaves the overwrite reserve (keep
 * stripes) free; an overwrite passes keep 0.  -ENOSPC also when the only
 * free stripes are the ones the running transaction freed: the caller
 * commits and asks again (the allocator sits below the journal and never
 * commits itself).
 *
 * Prefer a run of `want` at or after the hint (a frame then lies right
 * after its predecessor); otherwise the longest run met while scanning.
 */
int ffs_reserve_stripes(struct ffs *fs, uint64_t hint, uint64_t want, uint64_t keep,
			uint64_t *first, uint64_t *got)
{
	uint64_t n = ff_le64(fs->sb->nstripes), i, best = UINT64_MAX, best_len = 0, visited = 0;

	if (fs->free_stripes <= keep)
		reclaim_reservations(fs);
	if (fs->free_stripes <= keep)
		return -ENOSPC;
	want = FF_MAX(1ull, FF_MIN(want, fs->free_stripes - keep));
	i = find_clear(fs->sbits, n, hint % n);
	while (i != UINT64_MAX && visited < n) {
		uint64_t len = run_length(fs->sbits, n, i, want);

		if (len > best_len) {
			best = i;
			best_len = len;
		}
		if (len >= want)
			break;
		visited += len + 1;
		i = find_clear(fs->sbits, n, (i + len + 1) % n);
		if (i == best)
			break;
	}
	if (best == UINT64_MAX)
		return -ENOSPC;
	for (uint64_t s = best; s < best + best_len; s++)
		ff_bit_set(fs->sbits, s);
	fs->free_stripes -= best_len;
	*first = best;
	*got = best_len;
	return 0;
}

void ffs_unreserve_stripes(struct ffs *fs, uint64_t first, uint64_t count)
{
	for (uint64_t s = first; s < first + count; s++) {
		FF_ASSERT(ff_bit_test(fs->sbits, s));
		ff_bit_clear(fs->sbits, s);
	}
	fs->free_stripes += count;
}

int ffs_commit_stripes(struct ffs *fs, uint64_t first, uint64_t count)
{
	for (uint64_t s = first; s < first + count; s++) {
		int rc;

		FF_ASSERT(ff_bit_test(fs->sbits, s));
		rc = disk_bit(fs, ff_le64(fs->sb->sbitmap_start), s, true);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int ffs_take_stripes(struct ffs *fs, uint64_t first, uint64_t count)
{
	for (uint64_t s = first; s < first + count; s++) {
		if (ff_bit_test(fs->sbits, s))
			return -EEXIST;
	}
	for (uint64_t s = first; s < first + count; s++)
		ff_bit_set(fs->sbits, s);
	fs->free_stripes -= count;
	return ffs_commit_stripes(fs, first, count);
}

int ffs_free_stripes(struct ffs *fs, uint64_t first, uint64_t count)
{
	/* from a corrupt extent: never index the bitmaps with it */
	if (first >= ff_le64(fs->sb->nstripes) || count > ff_le64(fs->sb->nstripes) - first)
		return -EUCLEAN;
	if (fs->npending + count > fs->cap_pending) {
		size_t cap = FF_MAX(fs->cap_pending * 2, fs->npending + count + 64);
		uint64_t *p = realloc(fs->pending_free, cap * sizeof(uint64_t));

		if (!p)
			return -ENOMEM;
		fs->pending_free = p;
		fs->cap_pending = cap;
	}
	for (uint64_t s = first; s < first + count; s++) {
		int rc = disk_bit(fs, ff_le64(fs->sb->sbitmap_start), s, false);

		/* a row in the old geometry leaves it with the same transaction
		 * (its bit in memory when the row may be reused: reuse below) */
		if (rc == 0 && fs->orows_start && ff_bit_test(fs->orows, s))
			rc = disk_bit(fs, fs->orows_start, s, false);
		if (rc < 0)
			return rc;
		fs->pending_free[fs->npending++] = s; /* in memory: still taken */
	}
	if (fs->stripes_freed)
		fs->stripes_freed(fs, first, count);
	return 0;
}

/* The first n stripes of pending_free become free for anyone. */
static void reuse(struct ffs *fs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t p = fs->pending_free[i];

		ff_bit_clear(fs->sbits, p);
		fs->free_stripes++;
		if (fs->orows) /* written next in the array's geometry (readers test it unlocked) */
			__atomic_fetch_and(&fs->orows[p / 64], ~(1ull << (p % 64)), __ATOMIC_RELAXED);
	}
	memmove(fs->pending_free, fs->pending_free + n, (fs->npending - n) * sizeof(uint64_t));
	fs->npending -= n;
	fs->pending_reused += n;
	fs->npending_durable = 0;
}

uint64_t ffs_alloc_pending_mark(const struct ffs *fs)
{
	return fs->pending_reused + fs->npending;
}

void ffs_alloc_tx_committed(struct ffs *fs, uint64_t mark)
{
	/* entries are added at the back and reused from the front: those
	 * before mark not reused yet are the first n */
	size_t n = mark > fs->pending_reused ? (size_t)(mark - fs->pending_reused) : 0;

	FF_ASSERT(n <= fs->npending);
	fs->npending_durable = FF_MAX(fs->npending_durable, n);
	if (!fs->reuse_holds && fs->npending_durable)
		reuse(fs, fs->npending_durable);
}

/*
 * A reader whose file's map moved under it on every try (data.c) reads
 * once more holding reuse off: stripes whose free becomes durable
 * meanwhile stay taken until the last hold goes, so the stripe it finds in
 * its file's map cannot become another file's before it has read it.
 * Nobody waits for a hold — it only delays reuse by one read — and a
 * writer that finds no free stripe while one is held gets ENOSPC from it
 * only if that read outlasts its commit.
 */
void ffs_alloc_reuse_hold(struct ffs *fs)
{
	fs->reuse_holds++;
}

void ffs_alloc_reuse_release(struct ffs *fs)
{
	FF_ASSERT(fs->reuse_holds > 0);
	if (!--fs->reuse_holds && fs->npending_durable)
		reuse(fs, fs->npending_durable);
}

uint64_t ffs_alloc_free_stripe_count(const struct ffs *fs)
{
	return fs->free_stripes;
}

/*
 * The one "stripe in use" test for readers that do not hold fs->lock:
 * read-ahead, scrub and the rebuild's order (raid's alloc query).  Taken
 * means mapped, reserved by a file being written, or freed by a
 * transaction not yet durable.  The word is loaded atomically while
 * fs->lock holders change it; the answer may be a moment old, which each
 * caller tolerates (see its comment).
 */
bool ffs_stripe_in_use(const struct ffs *fs, uint64_t p)
{
	uint64_t word = __atomic_load_n(&fs->sbits[p / 64], __ATOMIC_RELAXED);

	return ff_bit_test(&word, p % 64);
}

/* Where the checksums of pstripe's data chunks past the table's entry
 * width are (fs->csumx: a grow's extension, format.h). */
static int csumx_block(struct ffs *fs, uint64_t pstripe, struct mbuf **mb, size_t *off)
{
	*off = sizeof(struct ffs_bhdr) + (pstripe % fs->csumx.per_block) * 4 * fs->csumx.width;
	return ffs_mb_get(fs, fs->csumx.start + pstripe / fs->csumx.per_block, FFS_B_CSUMX, mb);
}

/* The checksums of pstripe's chunks [from, to) in its extension entry: set
 * (crc, or zeros when crc is NULL), or got into crc. */
static int csumx_rw(struct ffs *fs, uint64_t pstripe, uint32_t from, uint32_t to, uint32_t *crc,
		    bool set)
{
	struct mbuf *mb;
	size_t off;
	int rc;

	if (from >= to)
		return 0;
	if (!fs->csumx.width && !set) {
		/* an array grown without the filesystem's records (read-only,
		 * mount.c): a row in the new geometry holds nothing of it */
		memset(crc + from, 0, (to - from) * sizeof(*crc));
		return 0;
	}
	if (!fs->csumx.width || to - from > fs->csumx.width)
		return -EUCLEAN;
	rc = csumx_block(fs, pstripe, &mb, &off);
	if (rc < 0)
		return rc;
	for (uint32_t i = from; i < to; i++) {
		le32 *c = (le32 *)(void *)(mb->data + off) + (i - from);

		if (set)
			*c = ff_cpu_to_le32(crc ? crc[i] : 0);
		else
			crc[i] = ff_le32(*c);
	}
	if (set)
		ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	return 0;
}

static int csum_block(struct ffs *fs, uint64_t pstripe, struct mbuf **mb, size_t *off)
{
	uint32_t per = ff_le32(fs->sb->csum_per_block), entry = ff_le32(fs->sb->csum_entry_bytes);

	if (pstripe >= ff_le64(fs->sb->nstripes))
		return -EUCLEAN;
	*off = sizeof(struct ffs_bhdr) + (pstripe % per) * entry;
	return ffs_mb_get(fs, ff_le64(fs->sb->csum_start) + pstripe / per, FFS_B_CSUM, mb);
}

/* A stripe's data chunks (its row's geometry), and how many the table's
 * entries hold: the rest are in the extension (csumx_rw). */
static void csum_counts(const struct ffs *fs, uint64_t pstripe, uint32_t *n, uint32_t *width)
{
	*n = ffs_row_geo(fs, pstripe)->g->ndata;
	*width = (ff_le32(fs->sb->csum_entry_bytes) - (uint32_t)sizeof(struct ffs_csum_entry)) / 4;
}

int ffs_csum_set(struct ffs *fs, uint64_t pstripe, uint32_t ino, uint32_t fstripe, const uint32_t *crc)
{
	struct mbuf *mb;
	size_t off;
	int rc = csum_block(fs, pstripe, &mb, &off);
	struct ffs_csum_entry *e;
	uint32_t n, width;

	csum_counts(fs, pstripe, &n, &width);

	if (rc < 0)
		return rc;
	e = (struct ffs_csum_entry *)(mb->data + off);
	e->ino = ff_cpu_to_le32(ino);
	e->fstripe = ff_cpu_to_le32(crc ? fstripe : fstripe | FFS_CSUM_UNWRITTEN);
	for (uint32_t i = 0; i < FF_MIN(n, width); i++)
		e->crc[i] = ff_cpu_to_le32(crc ? crc[i] : 0);
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	return csumx_rw(fs, pstripe, width, n, (uint32_t *)crc, true);
}

int ffs_csum_get(struct ffs *fs, uint64_t pstripe, uint32_t *ino, uint32_t *fstripe, uint32_t *crc)
{
	struct mbuf *mb;
	size_t off;
	int rc = csum_block(fs, pstripe, &mb, &off);
	const struct ffs_csum_entry *e;
	uint32_t n, width;

	csum_counts(fs, pstripe, &n, &width);

	if (rc < 0)
		return rc;
	e = (const struct ffs_csum_entry *)(mb->data + off);
	*ino = ff_le32(e->ino);
	*fstripe = ff_le32(e->fstripe);
	for (uint32_t i = 0; i < FF_MIN(n, width); i++)
		crc[i] = ff_le32(e->crc[i]);
	ffs_mb_put(fs, mb);
	return csumx_rw(fs, pstripe, width, n, crc, false);
}
