/* SPDX-License-Identifier: MIT */
/*
 * Patches (format version 5): small overwrites of a file's stripes kept as
 * 4 KiB blocks in rows of a tail stripe, instead of a rewrite of the whole
 * stripe.
 *
 * Why.  Data stripes are copy-on-write, whole: that is what keeps the write
 * hole shut.  For frames it costs nothing, but an editing application's
 * project database or cache writes 4 KiB here and there, and each such
 * write read the old stripe and wrote a new one — 1.5 MiB of data and
 * 0.5 MiB of parity on RAID5 x 4 at 512 KiB chunks: 269 times the bytes the
 * application wrote in 4 KiB random writes with fsync every 64, and as
 * many times the drives' wear.
 *
 * How.  A buffer that holds a few blocks of a file stripe mapped to a
 * stripe of its own (ffs_patch_plan says when) sends just those blocks,
 * packed slot after slot, to the next rows of an open tail stripe (tail.c:
 * rows are written once, whole, with their parity, to rows nothing points
 * to yet, so no live data is torn), and once they are on the members the
 * completion thread records them in the file's patch tree (format.h) in
 * the running transaction, replacing whatever older patches of those
 * blocks said.  A 4 KiB write then costs a row — ndata data blocks and the
 * parity — shared with the other blocks written at the same time, and
 * fsync's promise is kept as for any write: the rows are on the members
 * before the transaction that points to them commits.
 *
 * Reads take the stripe and lay the patched blocks over it (ffs_patch_overlay);
 * so does a buffer filling its gaps.  When a stripe's patches would cover
 * more than PATCH_SHARE of it, the next write rewrites it whole (with the
 * patches laid over) and its patches go: reading a stripe then costs at
 * most that share in extra blocks, and a patch stripe's rows are given
 * back as their patches go (its live count, tail.c).  Rewriting, punching
 * or truncating a file stripe drops its patches (ffs_patch_drop, from the
 * extent map's punch): there is one place where a stripe's content
 * changes hands.
 *
 * Locking: the tree is metadata, under fs->lock; the data path's buffers
 * under the owner's dlock, as everywhere in the data path.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"

/* A stripe is rewritten whole rather than patched past this share of its
 * blocks (numerator over 8): 4 of 8, half. */
#define PATCH_SHARE_EIGHTHS 4u

static uint32_t blocks_per_stripe(const struct ffs *fs)
{
	return (uint32_t)(fs->stripe_bytes / FFS_BLOCK);
}

/* Whether n patched blocks of a stripe pass the share. */
static bool past_share(const struct ffs *fs, uint32_t n)
{
	return n * 8 > blocks_per_stripe(fs) * PATCH_SHARE_EIGHTHS;
}

struct prec { /* one patch, decoded */
	uint64_t f;
	uint32_t b0, n, slot0;
	uint64_t p;
	uint32_t crc[FFS_PATCH_BLOCKS_MAX];
};

static struct bt_root ptree(const struct finode *fi)
{
	return (struct bt_root){ ff_le64(fi->d.u2.patch_root), fi->ino };
}

/* Below version 5 the field is rdev, whatever a regular file holds there
 * (mknod(2) of a regular file with a device number, before ops.c dropped it). */
static bool has_patches(const struct ffs *fs, const struct finode *fi)
{
	return ff_le32(fs->sb->version) >= FFS_VERSION_PATCH && S_ISREG(ff_le32(fi->d.mode)) &&
	       fi->d.u2.patch_root != 0;
}

/* A patch record of stripe f, decoded and checked: 0, or -EUCLEAN for a
 * record that is no patch. */
static int pdecode(struct ffs *fs, struct finode *fi, uint64_t f, uint64_t key, const void *rec,
		   uint16_t len, struct prec *r)
{
	struct ffs_patch x = { 0 };

	memcpy(&x, rec, FF_MIN(sizeof(x), (size_t)len));
	r->f = f;
	r->b0 = FFS_PATCH_KEY_BLOCK(key);
	r->n = len >= sizeof(x) ? ff_le16(x.nblocks) : 0;
	r->slot0 = ff_le16(x.slot0);
	r->p = ff_le64(x.pstripe);
	if (len != sizeof(x) + 4 * r->n || r->n == 0 || r->n > FFS_PATCH_BLOCKS_MAX ||
	    r->b0 + r->n > blocks_per_stripe(fs)) {
		ff_log(FF_LOG_ERR, "inode %llu: a damaged patch record at stripe %llu block %u; "
		       "run fsck.framefs", (unsigned long long)fi->ino, (unsigned long long)f, r->b0);
		return -EUCLEAN;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		le32 c;

		memcpy(&c, (const uint8_t *)rec + sizeof(x) + 4 * i, sizeof(c));
		r->crc[i] = ff_le32(c);
	}
	return 0;
}

/* The patch found by `find` at key, as long as it is one of stripe f's:
 * 0, -ENOENT, or an error (a record that is no patch: -EUCLEAN). */
static int pfind(struct ffs *fs, struct finode *fi, uint64_t f, uint64_t key, bool ge,
		 struct prec *r)
{
	struct bt_root t = ptree(fi);
	uint8_t rec[FFS_BT_RECORD_MAX];
	uint64_t found;
	uint16_t len;
	int rc;

	if (!t.root)
		return -ENOENT;
	rc = ge ? ffs_bt_find_ge(fs, &t, key, &found, rec, &len)
		: ffs_bt_find_le(fs, &t, key, &found, rec, &len);
	if (rc < 0)
		return rc;
	if (FFS_PATCH_KEY_STRIPE(found) != f)
		return -ENOENT;
	return pdecode(fs, fi, f, found, rec, len, r);
}

static int pinsert(struct ffs *fs, struct finode *fi, const struct prec *r)
{
	struct bt_root t = ptree(fi);
	union {
		struct ffs_patch x;
		uint8_t b[sizeof(struct ffs_patch) + 4 * FFS_PATCH_BLOCKS_MAX];
	} u = { .x = { ff_cpu_to_le64(r->p), ff_cpu_to_le16((uint16_t)r->slot0),
		       ff_cpu_to_le16((uint16_t)r->n), 0 } };
	int rc;

	for (uint32_t i = 0; i < r->n; i++)
		u.x.crc[i] = ff_cpu_to_le32(r->crc[i]);
	rc = ffs_bt_insert(fs, &t, FFS_PATCH_KEY(r->f, r->b0), &u,
			   (uint16_t)(sizeof(u.x) + 4 * r->n));

	fi->d.u2.patch_root = ff_cpu_to_le64(t.root);
	return rc;
}

static int pdelete(struct ffs *fs, struct finode *fi, const struct prec *r)
{
	struct bt_root t = ptree(fi);
	int rc = ffs_bt_delete(fs, &t, FFS_PATCH_KEY(r->f, r->b0));

	fi->d.u2.patch_root = ff_cpu_to_le64(t.root);
	return rc;
}

struct pcount {
	struct ffs *fs;
	struct finode *fi;
	uint64_t f;
	uint32_t count, next; /* blocks patched; the first block not yet counted */
};

static int pcount_one(void *arg, uint64_t key, const void *val, uint16_t len)
{
	struct pcount *c = arg;
	struct prec r;
	int rc = pdecode(c->fs, c->fi, c->f, key, val, len, &r);

	if (rc == 0 && r.b0 >= c->next) { /* one that overlaps the last is not counted twice */
		c->count += r.n;
		c->next = r.b0 + r.n;
	}
	return rc;
}

/* Blocks of file stripe f that patches cover (fs->lock held): one scan of
 * its records. */
static int patched_blocks(struct ffs *fs, struct finode *fi, uint64_t f, uint32_t *count)
{
	struct bt_root t = ptree(fi);
	struct pcount c = { fs, fi, f, 0, 0 };
	int rc = ffs_bt_scan(fs, &t, FFS_PATCH_KEY(f, 0), FFS_PATCH_KEY(f, UINT16_MAX), pcount_one, &c);

	*count = c.count;
	return rc;
}

/*
 * Blocks [b0, b0 + n) of file stripe f are now in slots [slot0, slot0 + n)
 * of tail stripe p (whose live count the caller has raised for it).  Older
 * patches of those blocks are cut back or dropped: a patch split in two
 * counts twice in its stripe, one dropped gives its count back.  fs->lock
 * held, in the running transaction.
 */
int ffs_patch_add(struct ffs *fs, struct finode *fi, uint64_t f, uint32_t b0, uint32_t n,
		  uint64_t p, uint32_t slot0, const uint32_t *crc)
{
	uint32_t e = b0 + n;
	struct prec r, nw = { f, b0, n, slot0, p, { 0 } };
	int rc;

	FF_ASSERT(n >= 1 && n <= FFS_PATCH_BLOCKS_MAX && e <= blocks_per_stripe(fs));
	memcpy(nw.crc, crc, n * sizeof(*crc));
	for (;;) {
		unsigned parts = 0;

		rc = pfind(fs, fi, f, FFS_PATCH_KEY(f, e - 1), false, &r);
		if (rc == -ENOENT || (rc == 0 && r.b0 + r.n <= b0))
			break; /* nothing older reaches into [b0, e) */
		if (rc < 0)
			return rc;
		rc = pdelete(fs, fi, &r);
		atomic_fetch_add(&fi->map_gen, 1); /* its readers read again (data.c) */
		if (rc == 0) /* the blocks of it that ours replace are dead: out of the cache */
			ffs_pcache_forget(fs, r.p, r.slot0 + (FF_MAX(r.b0, b0) - r.b0),
				      FF_MIN(r.b0 + r.n, e) - FF_MAX(r.b0, b0));
		if (rc == 0 && r.b0 < b0) { /* its blocks before ours stay */
			struct prec l = { f, r.b0, b0 - r.b0, r.slot0, r.p, { 0 } };

			memcpy(l.crc, r.crc, l.n * sizeof(*r.crc));
			rc = pinsert(fs, fi, &l);
			parts++;
		}
		if (rc == 0 && r.b0 + r.n > e) { /* and those after */
			struct prec h = { f, e, r.b0 + r.n - e, r.slot0 + (e - r.b0), r.p, { 0 } };

			memcpy(h.crc, r.crc + (e - r.b0), h.n * sizeof(*r.crc));
			rc = pinsert(fs, fi, &h);
			parts++;
		}
		if (rc == 0 && parts == 0)
			rc = ffs_tail_release(fs, r.p);
		if (rc == 0 && parts == 2)
			rc = ffs_tail_grab(fs, r.p);
		if (rc < 0)
			return rc;
		if (r.b0 <= b0)
			break; /* patches do not overlap: none below it reaches here */
	}
	rc = pinsert(fs, fi, &nw);
	return rc < 0 ? rc : ffs_istore(fs, fi);
}

/* Drop the patches of file stripes [f0, f1) (fs->lock held). */
int ffs_patch_drop(struct ffs *fs, struct finode *fi, uint64_t f0, uint64_t f1)
{
	struct bt_root t;
	int rc = 0;

	if (!has_patches(fs, fi))
		return 0;
	for (uint64_t key = FFS_PATCH_KEY(f0, 0);;) {
		uint8_t rec[FFS_BT_RECORD_MAX];
		uint64_t found;
		uint16_t len;
		struct prec r;

		t = ptree(fi);
		if (!t.root)
			break;
		rc = ffs_bt_find_ge(fs, &t, key, &found, rec, &len);
		if (rc == -ENOENT || (rc == 0 && FFS_PATCH_KEY_STRIPE(found) >= f1)) {
			rc = 0;
			break;
		}
		if (rc == 0)
			rc = pfind(fs, fi, FFS_PATCH_KEY_STRIPE(found), found, true, &r);
		if (rc == 0)
			rc = pdelete(fs, fi, &r);
		atomic_fetch_add(&fi->map_gen, 1); /* its readers read again (data.c) */
		if (rc == 0)
			ffs_pcache_forget(fs, r.p, r.slot0, r.n);
		if (rc == 0)
			rc = ffs_tail_release(fs, r.p);
		if (rc < 0)
			return rc;
		key = found + 1;
	}
	t = ptree(fi);
	if (t.root && f0 == 0 && f1 == UINT64_MAX) { /* every patch gone: so is the tree */
		rc = ffs_bt_destroy(fs, &t);
		fi->d.u2.patch_root = 0;
	}
	return rc < 0 ? rc : ffs_istore(fs, fi);
}

/*
 * Plan wb's write as patches: its byte ranges widened to whole blocks (the
 * partial blocks at their edges filled from what the file holds), each run
 * at most FFS_PATCH_BLOCKS_MAX blocks.  0 (rewrite it whole) unless the
 * file stripe is mapped, to a stripe of its own or as a tail (a file's
 * last stripe: rewriting a tail costs all its rows), the buffer is not
 * preallocated space or a small file's, and its blocks and the stripe's
 * patches stay within PATCH_SHARE_EIGHTHS of it; PATCH_MERGE (negative)
 * when they would not and the stripe has patches: the rewrite merges them.
 * dlock held.
 */
int ffs_patch_plan(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	uint32_t have = 0, want = 0;
	struct ffs_extent x;
	unsigned n = 0;
	bool tight;
	int rc;

	wb->npatch = 0;
	if (!(fs->features & FFS_FEAT_PATCHES) || wb->in_place || wb->force_stripe || wb->pstripe == WB_NO_STRIPE)
		return 0;
	for (unsigned i = 0; i < wb->nival; i++) /* a first estimate, before the lock */
		want += (uint32_t)(FF_DIV_ROUND_UP(wb->ival[i].b, FFS_BLOCK) - wb->ival[i].a / FFS_BLOCK);
	if (past_share(fs, want))
		return 0;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_is_small(fi) ? -ENOENT : ffs_extent_find(fs, fi, wb->fstripe, &x);
	if (rc == 0 && (ff_le32(x.flags) & FFS_X_UNWRITTEN))
		rc = -ENOENT;
	if (rc == 0)
		rc = patched_blocks(fs, fi, wb->fstripe, &have);
	/* Patches take space the stripe they lie over keeps too, until a merge
	 * lets both go; a rewrite takes one stripe only while it is written.
	 * So once overwrites have begun to eat into their reserve (the volume
	 * is full for new data: alloc.c), a rewrite it is, merging what the
	 * stripe has: space that patches pin no longer grows. */
	tight = fs->free_stripes < ffs_overwrite_reserve(fs);
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0 && have && wb->background)
		return PATCH_MERGE; /* the merge thread's buffer (merge.c) */
	/* -ENOENT: not mapped plainly; an error: the rewrite meets it too.
	 * Past the share, the merge is queued for the background and these
	 * blocks go as patches; it is done here when the volume is tight or
	 * the queue full (merge.c says why). */
	if (rc < 0 || tight || (past_share(fs, have + want) && !ffs_merge_defer(fs, fi, wb->fstripe)))
		return rc == 0 && have ? PATCH_MERGE : 0;
	/* runs of whole blocks, the ranges' neighbours in one block joined */
	for (unsigned i = 0; i < wb->nival; i++) {
		uint32_t a = (uint32_t)(wb->ival[i].a / FFS_BLOCK);
		uint32_t b = (uint32_t)FF_DIV_ROUND_UP(wb->ival[i].b, FFS_BLOCK);

		if (n && wb->patch[n - 1].b0 + wb->patch[n - 1].n >= a) {
			uint32_t end = FF_MAX(b, (uint32_t)wb->patch[n - 1].b0 + wb->patch[n - 1].n);

			a = wb->patch[n - 1].b0;
			b = end;
			n--;
		}
		while (a < b) {
			uint32_t m = FF_MIN(b - a, FFS_PATCH_BLOCKS_MAX);

			if (n == WB_PATCHES)
				return 0; /* too scattered for one buffer: rewritten whole */
			wb->patch[n].b0 = (uint16_t)a;
			wb->patch[n].n = (uint16_t)m;
			n++;
			a += m;
		}
	}
	if (!FFS_PBATCH_FITS(n, want))
		return 0; /* more than one batch header describes (huge stripes) */
	for (unsigned i = 0; i < n; i++) { /* the edges of each run: what the file holds there */
		uint64_t a = (uint64_t)wb->patch[i].b0 * FFS_BLOCK;
		uint64_t b = a + (uint64_t)wb->patch[i].n * FFS_BLOCK;

		rc = ffs_wb_fill_span(fs, fi, wb, a, b);
		if (rc < 0)
			return 0; /* the whole rewrite will read and report it */
	}
	wb->npatch = n;
	return (int)n;
}

bool ffs_patch_past_share(struct ffs *fs, struct finode *fi, uint64_t k)
{
	struct ffs_extent x;
	uint32_t have = 0;

	if (!(fs->features & FFS_FEAT_PATCHES) || ffs_is_small(fi) || ffs_extent_find(fs, fi, k, &x) < 0 ||
	    (ff_le32(x.flags) & FFS_X_UNWRITTEN) || patched_blocks(fs, fi, k, &have) < 0)
		return false;
	return past_share(fs, have);
}

/*
 * Block `slot` of tail stripe p into blk, checked against crc: read alone
 * (4 KiB, not the stripe: the stripe is being appended to while patches
 * are read); when it fails its checksum, once more through the read cache,
 * which checks the chunks and rebuilds a bad one from parity (counting it
 * in crc_errors and crc_repaired, and rewriting it on its member).  The
 * cache's copy of p goes first: a copy read before the block went bad on
 * the member would serve the reader but leave the member bad, failing
 * every later read of the block alone.
 */
static int read_slot(struct ffs *fs, uint64_t p, uint32_t slot, uint32_t crc, uint8_t *blk)
{
	const struct ffs_geo *geo = ffs_row_geo(fs, p);
	uint64_t in = patch_slot_offset(geo->g, slot);
	struct ff_raid_io io = { .op = FF_RAID_READ, .space = FF_SPACE_DATA, .flags = geo->raid_flags,
				 .off = p * geo->g->stripe_bytes + in, .len = FFS_BLOCK, .buf = blk };
	int rc = ff_raid_submit_wait(fs->raid, &io);

	atomic_fetch_add(&fs->stats.patch_reads, 1);
	if (rc == 0 && ffs_patch_crc(p, slot, blk) == crc)
		return 0;
	ffs_rcache_invalidate(fs, p, 1);
	rc = ffs_read_stripe_bytes(fs, p, in, FFS_BLOCK, blk);
	if (rc == 0 && ffs_patch_crc(p, slot, blk) != crc) {
		/* the chunk passed its checksum, the block not its own: counted here */
		atomic_fetch_add(&fs->stats.crc_errors, 1);
		ff_log(FF_LOG_ERR, "data stripe %llu: patched block in slot %u fails its checksum; "
		       "run a scrub", (unsigned long long)p, slot);
		rc = -EIO;
	}
	return rc;
}

/*
 * Patched blocks are read in waves: up to OVERLAY_WAVE slot reads in flight
 * at once, then one wait for all of them.  A stripe about to be merged has
 * up to half its blocks patched, scattered over as many batches as fsyncs
 * wrote them (192 blocks at 512 KiB chunks on RAID5 x 4); read one after
 * another, each a round trip through the engine's workers, they made a
 * merge's fill take 10-45 ms, which the fsync behind it waited for; read
 * in waves they take 1.4-15.6 ms for 189-192 blocks, and 4 KiB random
 * writes with fsync every 64 went from 63-67 to 79-83 MB/s (RAID5 x 4 on
 * /dev/shm files).  A block lands in dst itself when dst takes it whole
 * and aligned; otherwise (the edges of [o, o + n), a block part of which
 * `keep` holds, an unaligned dst) in one of OVERLAY_BOUNCE blocks of its
 * own.  The wave lives on the caller's stack (about 25 KiB): the data
 * path does not allocate.
 */
#define OVERLAY_WAVE 32u
#define OVERLAY_BOUNCE 4u

struct overlay_read {
	struct ff_raid_io io;
	uint8_t *into; /* dst's block, or a bounce block */
	uint64_t p;
	uint32_t slot, crc, b;
	bool bounced;
	bool cached;    /* copied from the patch cache, not read */
};

struct overlay_wave {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned pending; /* submitted, not completed: each completion ends one */
	unsigned n, nbounce;
	struct overlay_read r[OVERLAY_WAVE];
	_Alignas(FF_BUF_ALIGN) uint8_t bounce[OVERLAY_BOUNCE][FFS_BLOCK];
};

static void overlay_read_done(struct ff_raid_io *io)
{
	struct overlay_wave *w = io->priv;

	pthread_mutex_lock(&w->lock);
	if (--w->pending == 0)
		pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Bytes [x, y) of the stripe into dst (which holds [o, o + n)) from src,
 * but for those keep holds. */
static void copy_unkept(const struct wbuf *keep, uint64_t x, uint64_t y, const uint8_t *src,
			uint8_t *dst, uint64_t o)
{
	for (unsigned i = 0; keep && i < keep->nival && x < y; i++) {
		uint64_t a = keep->ival[i].a, b = keep->ival[i].b;

		if (b <= x || a >= y)
			continue;
		if (a > x)
			memcpy(dst + (x - o), src, (size_t)(a - x));
		src += FF_MIN(b, y) - x;
		x = FF_MIN(b, y);
	}
	if (x < y)
		memcpy(dst + (x - o), src, (size_t)(y - x));
}

static bool keeps_any(const struct wbuf *keep, uint64_t x, uint64_t y)
{
	for (unsigned i = 0; keep && i < keep->nival; i++)
		if (keep->ival[i].a < y && keep->ival[i].b > x)
			return true;
	return false;
}

/* Wait for the wave, check every block against its checksum (read_slot
 * again, through the read cache's repair, for one that fails) and lay the
 * bounced ones over dst.  Each submitted read completes, whatever its
 * result (the engine's contract): the wait ends. */
static int wave_finish(struct ffs *fs, struct overlay_wave *w, const struct wbuf *keep,
		       uint64_t o, size_t n, uint8_t *dst)
{
	int rc = 0;

	pthread_mutex_lock(&w->lock);
	while (w->pending)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < w->n; i++) {
		struct overlay_read *r = &w->r[i];
		uint64_t lo = FF_MAX((uint64_t)r->b * FFS_BLOCK, o);
		uint64_t hi = FF_MIN((uint64_t)(r->b + 1) * FFS_BLOCK, o + n);
		int err = r->io.result;

		if (err < 0 || ffs_patch_crc(r->p, r->slot, r->into) != r->crc) {
			if (r->cached) /* (no stale entry should exist: pcache.c says why) */
				ffs_pcache_forget(fs, r->p, r->slot, 1);
			err = read_slot(fs, r->p, r->slot, r->crc, r->into);
		}
		if (err == 0 && r->bounced)
			copy_unkept(keep, lo, hi, r->into + lo % FFS_BLOCK, dst, o);
		if (err < 0 && rc == 0)
			rc = err;
	}
	w->n = 0;
	w->nbounce = 0;
	return rc;
}

/* Queue block b of the stripe, in slot `slot` of p, for the wave. */
static int wave_add(struct ffs *fs, struct overlay_wave *w, const struct wbuf *keep, uint64_t o,
		    size_t n, uint8_t *dst, uint32_t b, uint64_t p, uint32_t slot, uint32_t crc)
{
	uint64_t lo = (uint64_t)b * FFS_BLOCK, hi = lo + FFS_BLOCK;
	bool whole = lo >= o && hi <= o + n && !keeps_any(keep, lo, hi) &&
		     (uintptr_t)(dst + (lo - o)) % FF_BUF_ALIGN == 0;
	struct overlay_read *r;
	int rc = 0;

	if (w->n == OVERLAY_WAVE || (!whole && w->nbounce == OVERLAY_BOUNCE))
		rc = wave_finish(fs, w, keep, o, n, dst);
	if (rc < 0)
		return rc;
	r = &w->r[w->n++];
	r->bounced = !whole;
	r->into = whole ? dst + (lo - o) : w->bounce[w->nbounce++];
	r->p = p;
	r->slot = slot;
	r->crc = crc;
	r->b = b;
	memset(&r->io, 0, sizeof(r->io));
	r->cached = ffs_pcache_get(fs, p, slot, r->into);
	if (r->cached) { /* checked against crc with the others in wave_finish */
		atomic_fetch_add(&fs->stats.patch_cache_hits, 1);
		return 0;
	}
	atomic_fetch_add(&fs->stats.patch_reads, 1);
	r->io.op = FF_RAID_READ;
	r->io.space = FF_SPACE_DATA;
	r->io.flags = ffs_row_geo(fs, p)->raid_flags;
	r->io.off = p * ffs_row_geo(fs, p)->g->stripe_bytes +
		    patch_slot_offset(ffs_row_geo(fs, p)->g, slot);
	r->io.len = FFS_BLOCK;
	r->io.buf = r->into;
	r->io.done = overlay_read_done;
	r->io.priv = w;
	pthread_mutex_lock(&w->lock);
	w->pending++;
	pthread_mutex_unlock(&w->lock);
	rc = ff_raid_submit(fs->raid, &r->io);
	if (rc < 0) { /* never reached the engine: no completion will come */
		pthread_mutex_lock(&w->lock);
		w->pending--;
		pthread_mutex_unlock(&w->lock);
		r->io.result = rc;
	}
	return 0;
}

/*
 * Lay file stripe k's patches over dst, which holds its bytes [o, o + n)
 * from the base stripe, except the bytes `keep` holds (a write buffer of
 * k filling its gaps: what it holds is newer; NULL: none).  The patches
 * are looked up a few at a time under fs->lock and read without it, in
 * waves (above), each block checked against its record's checksum.
 */
int ffs_patch_overlay(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t o, size_t n, uint8_t *dst,
		  const struct wbuf *keep)
{
	uint32_t first = (uint32_t)(o / FFS_BLOCK), last = (uint32_t)((o + n - 1) / FFS_BLOCK);
	uint32_t next = first;
	struct overlay_wave w;
	int rc = 0, rc2;

	if (n == 0)
		return 0;
	w.n = w.nbounce = w.pending = 0;
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	while (rc == 0 && next <= last) {
		struct prec got[4];
		unsigned ng = 0;

		pthread_mutex_lock(&fs->lock);
		if (!has_patches(fs, fi))
			rc = -ENOENT;
		if (rc == 0) { /* a patch starting before `next` may reach it */
			rc = pfind(fs, fi, k, FFS_PATCH_KEY(k, next), false, &got[0]);
			if (rc == 0 && got[0].b0 + got[0].n > next)
				ng = 1;
			rc = rc == -ENOENT ? 0 : rc;
		}
		while (rc == 0 && ng < 4) {
			uint32_t from = ng ? got[ng - 1].b0 + got[ng - 1].n : next;

			if (from > last)
				break;
			rc = pfind(fs, fi, k, FFS_PATCH_KEY(k, from), true, &got[ng]);
			if (rc == 0 && got[ng].b0 <= last)
				ng++;
			else if (rc == 0)
				break;
		}
		pthread_mutex_unlock(&fs->lock);
		if (rc == -ENOENT) /* no (more) patches: those found are the last */
			rc = 0;
		if (rc < 0 || ng == 0)
			break;
		for (unsigned i = 0; i < ng && rc == 0; i++) {
			uint32_t b = FF_MAX(got[i].b0, first), e = FF_MIN(got[i].b0 + got[i].n - 1, last);

			for (; b <= e && rc == 0; b++) {
				uint64_t lo = FF_MAX((uint64_t)b * FFS_BLOCK, o);
				uint64_t hi = FF_MIN((uint64_t)(b + 1) * FFS_BLOCK, o + n);
				uint32_t j = b - got[i].b0;

				if (keep && ffs_ival_covers(keep, lo, hi))
					continue; /* every byte of it is the buffer's own */
				rc = wave_add(fs, &w, keep, o, n, dst, b, got[i].p, got[i].slot0 + j,
					      got[i].crc[j]);
			}
			next = got[i].b0 + got[i].n;
		}
	}
	rc2 = wave_finish(fs, &w, keep, o, n, dst); /* what is in flight lands, whatever rc says */
	pthread_mutex_destroy(&w.lock);
	pthread_cond_destroy(&w.cond);
	return rc < 0 ? rc : rc2;
}

/* Whether file stripe k may have patches: reads that cannot lay them over
 * a stripe in the cache (ffs_data_read_ref) copy instead (fs->lock held). */
bool ffs_patch_any(const struct ffs *fs, const struct finode *fi)
{
	return has_patches(fs, fi);
}

/*
 * fsync and close write every partial buffer of the file: those that go
 * as patches go in the rows of one tail stripe together (batching: a row
 * is ndata blocks, so a buffer with one block alone would pay for a row;
 * together they fill rows and pay one write), as many as one stripe's rows
 * hold.  dlock held.
 */
static bool batch_fits(const struct wbuf *wb)
{
	uint32_t nrec = 0, nblocks = 0;

	for (; wb; wb = wb->gnext)
		for (unsigned i = 0; i < wb->npatch; i++, nrec++)
			nblocks += wb->patch[i].n;
	return FFS_PBATCH_FITS(nrec, nblocks);
}

void ffs_patch_gather(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	uint32_t cap = (uint32_t)(fs->g->chunk_bytes / FFS_TAIL_ROW), rows = ffs_patch_rows(fs, wb);
	struct wbuf *tail = wb;

	wb->gnext = NULL;
	for (struct wbuf *w = fi->wbufs; w && rows < cap; w = w->next) {
		if (w == wb || w->writing || ffs_ival_covers(w, 0, fs->stripe_bytes) ||
		    ffs_patch_plan(fs, fi, w) <= 0)
			continue;
		tail->gnext = w;
		w->gnext = NULL;
		if (ffs_patch_rows(fs, wb) > cap || !batch_fits(wb)) { /* not this one: the next step's */
			tail->gnext = NULL;
			w->npatch = 0;
			continue;
		}
		tail = w;
		rows = ffs_patch_rows(fs, wb);
	}
}

/* ---- sending patches (in the rows of a tail stripe) ------------------------ */

/*
 * Patches (ffs_patch_plan plans them: wb->patch[], runs of blocks of the file
 * stripe, and the buffers gathered behind wb on gnext, all marked
 * writing; no lock held).  They go slot after slot in row order to one
 * tail stripe; slots of the last row that no patch takes are zeros.  With
 * every slot busy this waits for one (tail.c slot_take says why that ends):
 * cheaper than the stripe rewrite a tail falls back to, and the buffers
 * are already out of everyone's way.
 */
uint32_t ffs_patch_rows(const struct ffs *fs, const struct wbuf *wb)
{
	uint32_t nblocks = 1; /* the batch's header (format.h) */

	for (; wb; wb = wb->gnext)
		for (unsigned i = 0; i < wb->npatch; i++)
			nblocks += wb->patch[i].n;
	return (uint32_t)FF_DIV_ROUND_UP(nblocks, fs->g->ndata);
}

/* The batch's header in slot `slot` of s's image: the file, its times,
 * each patch and each block's checksum (replay needs nothing else). */
static void batch_header(struct ffs *fs, struct finode *fi, struct wbuf *wb,
			 const struct tail_batch *s, uint32_t slot, uint32_t rows)
{
	struct ffs_pbatch *h = (struct ffs_pbatch *)(void *)(s->img + patch_slot_offset(fs->g, slot));
	uint32_t nrec = 0, nblocks = 0;
	uint8_t *crcs;

	memset(h, 0, sizeof(*h));
	for (struct wbuf *w = wb; w; w = w->gnext)
		for (unsigned i = 0; i < w->npatch; i++, nrec++) {
			struct ffs_pbatch_rec r = { ff_cpu_to_le64(w->fstripe),
						    ff_cpu_to_le16(w->patch[i].b0),
						    ff_cpu_to_le16(w->patch[i].n), 0 };

			memcpy(h->data + nrec * sizeof(r), &r, sizeof(r));
		}
	crcs = h->data + nrec * sizeof(struct ffs_pbatch_rec);
	for (struct wbuf *w = wb; w; w = w->gnext)
		for (unsigned i = 0; i < w->npatch; i++)
			for (uint32_t j = 0; j < w->patch[i].n; j++, nblocks++) {
				uint32_t at = w->patch[i].slot0 + j;
				le32 c = ff_cpu_to_le32(ffs_patch_crc(s->p, at, s->img + patch_slot_offset(fs->g, at)));

				memcpy(crcs + nblocks * 4, &c, 4);
			}
	FF_ASSERT(FFS_PBATCH_FITS(nrec, nblocks));
	memcpy(h->uuid, fs->sb->uuid, sizeof(h->uuid));
	h->seq = ff_cpu_to_le64(s->seq);
	h->ino = ff_cpu_to_le64(fi->ino);
	pthread_mutex_lock(&fs->lock);
	h->igen = fi->d.generation;
	h->mtime_ns = fi->d.mtime_ns;
	h->ctime_ns = fi->d.ctime_ns;
	pthread_mutex_unlock(&fs->lock);
	h->nrec = ff_cpu_to_le32(nrec);
	h->slot0 = ff_cpu_to_le32(slot);
	h->rows = ff_cpu_to_le32(rows);
	ffs_block_seal(h, FFS_B_PBATCH, FFS_PBATCH_BLOCKNO(s->p, slot));
}

void ffs_patch_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb,
		  void (*done)(struct ff_raid_io *io))
{
	const struct ff_geom *g = fs->g;
	uint32_t rows = ffs_patch_rows(fs, wb), row0, slot;
	struct tail_batch tb, *s = &tb;

	ffs_tail_batch_take(fs, wb, rows, s);
	row0 = s->row0;
	slot = row0 * g->ndata + 1; /* after the header */

	for (struct wbuf *w = wb; w; w = w->gnext)
		for (unsigned i = 0; i < w->npatch; i++) {
			w->patch[i].slot0 = (uint16_t)slot;
			for (uint32_t j = 0; j < w->patch[i].n; j++, slot++) {
				const uint8_t *blk = w->data + (size_t)(w->patch[i].b0 + j) * FFS_BLOCK;

				memcpy(s->img + patch_slot_offset(fs->g, slot), blk, FFS_BLOCK);
				ffs_pcache_put(fs, s->p, slot, blk); /* before anything points to it */
			}
			atomic_fetch_add(&fs->stats.patch_blocks, w->patch[i].n);
		}
	for (; slot < (row0 + rows) * g->ndata; slot++)
		memset(s->img + patch_slot_offset(fs->g, slot), 0, FFS_BLOCK);
	batch_header(fs, fi, wb, s, row0 * g->ndata, rows);
	atomic_fetch_add(&fs->stats.patch_writes, 1);
	ffs_tail_batch_send(fs, fi, wb, s, rows, done);
}

/* ---- replay (mount) --------------------------------------------------------- */

/*
 * An fsync that wrote only patches, to tail stripes the last commit listed,
 * does not wait for a commit (ffs_tail_done, ops.c flush_file): each batch's
 * header (format.h) describes it.  After the journal, mount reads the
 * listed stripes past their committed hwm, batch after batch, takes those
 * written after that commit (seq >= its next_seq: rows past the hwm may
 * hold batches of an earlier life of the stripe), and lays them over their
 * files in the order they were written, with the same ffs_patch_add the
 * daemon used, after checking every block against its checksum.  A batch
 * that fails (a write torn by the crash, never acknowledged) ends its
 * stripe's replay: nothing after it in that stripe was written.  A batch
 * whose file is gone still counts its rows, as the daemon's mapping did.
 * A listed stripe free in the commit (a slot's spare, or an opening in
 * flight: tail.c) is read from row 0 and taken when a batch is found
 * there.  Then every listed tail stripe nothing points into is freed: no
 * slot is open at mount.
 */
/* A mount numbers its batches from (its mount count << this) up: 2^40
 * batches a mount, 2^24 mounts. */
#define PATCH_SEQ_MOUNT_SHIFT 40

struct found_batch {
	uint64_t p, seq;
	uint32_t row0, rows;
	struct ffs_pbatch *h;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found_batch *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Stripe p's checksum entry as replay sees it: a listed stripe that is free
 * in the commit is a slot's spare or an opening that was in flight
 * (tail.c), opened at row 0 with nothing in it yet (*fresh).
 */
static int replay_entry(struct ffs *fs, uint64_t p, uint32_t *ino, uint32_t *f, uint32_t *crc,
			bool *fresh)
{
	int rc = ffs_csum_get(fs, p, ino, f, crc);

	*fresh = rc == 0 && !ffs_stripe_in_use(fs, p); /* (at mount: what the commit says) */
	if (*fresh) {
		*ino = FFS_CSUM_TAILS;
		*f = FFS_CSUM_TAIL_PACK(0, 0);
		memset(crc, 0, FF_MEMBERS_MAX * sizeof(*crc));
	}
	return rc;
}

/*
 * A batch header or a patch block that fails its checksum on disk — a bad
 * sector, bits flipped on the way — is read again around the member of
 * its data chunk, rebuilt from parity (the rows of a batch were written
 * with theirs), before replay takes it for one never written: without
 * this, one bad chunk lost every fsync'd batch after it in the stripe.
 * Counted against that member as every read's checksum errors are.
 */
static void note_healed(struct ffs *fs, uint64_t p, uint32_t chunk, const char *what)
{
	atomic_fetch_add(&fs->stats.crc_errors, 1);
	atomic_fetch_add(&fs->stats.crc_repaired, 1);
	ff_raid_note_cksum_errors(fs->raid, p, 1u << chunk);
	ff_log(FF_LOG_WARN, "data stripe %llu: %s failed its checksum in data chunk %u; "
	       "replayed from parity", (unsigned long long)p, what, chunk);
}

/* len bytes at off of stripe p into buf; with around, rebuilt from the
 * other members as if the member of data chunk off / chunk were missing. */
static int read_data(struct ffs *fs, uint64_t p, uint64_t off, uint32_t len, bool around,
		     void *buf)
{
	uint32_t avoid = around ? 1u << ff_raid_chunk_member(fs->raid, p,
							      (unsigned)(off / fs->g->chunk_bytes))
				: 0;

	return ffs_repair_read_bytes_around(fs, p, off, len, avoid, buf);
}

/* Block `slot` of stripe p into h as a batch header.  One that fails its
 * check but still says it is one — its type, its place or the volume's
 * uuid — is read around its member.  Past the last batch of a stripe the
 * check always fails, on a block that says none of that: reading around
 * there would cost ndata reads at every scan, and treat the scanned
 * member as missing while it is not.  A header garbled in all three is
 * taken for the end of the chain. */
static bool read_header(struct ffs *fs, uint64_t p, uint32_t slot, struct ffs_pbatch *h)
{
	uint64_t off = patch_slot_offset(ffs_row_geo(fs, p)->g, slot);
	uint64_t blockno = FFS_PBATCH_BLOCKNO(p, slot);

	if (read_data(fs, p, off, FFS_BLOCK, false, h) < 0)
		return false; /* the engine read around an error already */
	if (ffs_block_check(h, FFS_B_PBATCH, blockno) == 0)
		return true;
	if (ff_le32(h->h.type) != FFS_B_PBATCH && ff_le64(h->h.blockno) != blockno &&
	    memcmp(h->uuid, fs->sb->uuid, sizeof(h->uuid)))
		return false;
	if (read_data(fs, p, off, FFS_BLOCK, true, h) < 0 ||
	    ffs_block_check(h, FFS_B_PBATCH, blockno) < 0)
		return false;
	note_healed(fs, p, (uint32_t)(off / fs->g->chunk_bytes), "a patch batch header");
	return true;
}

/* Collect the batches past stripe p's hwm (fs->lock held). */
static int scan_stripe(struct ffs *fs, uint64_t p, uint64_t next, struct found_batch **v,
		       unsigned *nv, unsigned *cap, uint64_t *maxseq)
{
	const struct ff_geom *g = ffs_row_geo(fs, p)->g;
	uint32_t ino, f, crc[FF_MEMBERS_MAX], R = g->chunk_bytes / FFS_TAIL_ROW, row;
	uint64_t prev = 0;
	struct ffs_pbatch *h = NULL;
	bool fresh;
	int rc = replay_entry(fs, p, &ino, &f, crc, &fresh);

	if (rc < 0 || ino != FFS_CSUM_TAILS)
		return rc < 0 ? rc : 0; /* not a tail stripe any more: nothing of it to replay */
	for (row = FFS_CSUM_TAIL_HWM(f); row < R;) {
		uint32_t slot = row * g->ndata;

		if (!h && !(h = ff_alloc_aligned(FFS_BLOCK)))
			return -ENOMEM;
		if (!read_header(fs, p, slot, h) ||
		    memcmp(h->uuid, fs->sb->uuid, sizeof(h->uuid)) || ff_le64(h->seq) < next ||
		    ff_le64(h->seq) <= prev || ff_le32(h->slot0) != slot || ff_le32(h->rows) == 0 ||
		    ff_le32(h->rows) > R - row || ff_le32(h->nrec) == 0)
			break;
		if (*nv == *cap) {
			unsigned c = *cap ? 2 * *cap : 16;
			struct found_batch *w = realloc(*v, c * sizeof(*w));

			if (!w) {
				free(h);
				return -ENOMEM;
			}
			*v = w;
			*cap = c;
		}
		(*v)[(*nv)++] = (struct found_batch){ p, ff_le64(h->seq), row, ff_le32(h->rows), h };
		prev = ff_le64(h->seq);
		*maxseq = FF_MAX(*maxseq, prev);
		row += ff_le32(h->rows);
		h = NULL;
	}
	free(h);
	return 0;
}

/* Whether record r still fits the file: its stripe mapped, not preallocated. */
static bool rec_applies(struct ffs *fs, struct finode *fi, const struct ffs_pbatch_rec *r)
{
	uint32_t n = ff_le16(r->nblocks);
	struct ffs_extent x;

	return n >= 1 && n <= FFS_PATCH_BLOCKS_MAX && ff_le16(r->b0) + n <= blocks_per_stripe(fs) &&
	       ffs_extent_find(fs, fi, ff_le64(r->fstripe), &x) == 0 &&
	       !(ff_le32(x.flags) & FFS_X_UNWRITTEN);
}

/* The rows of batch b of data chunk i into their place in buf, read
 * around its member or not. */
static bool batch_rows_read(struct ffs *fs, const struct found_batch *b, uint32_t i, bool around,
			    uint8_t *buf)
{
	uint64_t off = (uint64_t)i * fs->g->chunk_bytes + (uint64_t)b->row0 * FFS_TAIL_ROW;

	return read_data(fs, b->p, off, b->rows * FFS_TAIL_ROW, around, buf + off) == 0;
}

/* Do the n blocks from `slot` of stripe p, in buf, match their checksums? */
static bool batch_blocks_match(struct ffs *fs, uint64_t p, uint32_t slot, uint32_t n,
			       const uint8_t *crcs, const uint8_t *buf)
{
	for (uint32_t k = 0; k < n; k++) {
		le32 c;

		memcpy(&c, crcs + 4 * k, 4);
		if (ffs_patch_crc(p, slot + k, buf + patch_slot_offset(ffs_row_geo(fs, p)->g, slot + k)) !=
		    ff_le32(c))
			return false;
	}
	return true;
}

/*
 * Lay batch b over its file: 1 done, 0 skipped (torn, or its file or
 * stripes gone), or an error.  buf: a stripe's worth.  fs->lock held.
 * Whole rows advance the stripe's hwm whatever became of the file, as the
 * daemon's mapping did, so that the batches after it in the stripe replay.
 */
static int apply_batch(struct ffs *fs, const struct found_batch *b, uint8_t *buf)
{
	const struct ff_geom *g = ffs_row_geo(fs, b->p)->g;
	const struct ffs_pbatch *h = b->h;
	uint32_t ino, f, crc[FF_MEMBERS_MAX], nrec = ff_le32(h->nrec), nblocks = 0, ok = 0;
	uint32_t slot = b->row0 * g->ndata + 1, len = b->rows * FFS_TAIL_ROW;
	const uint8_t *crcs;
	struct finode *fi = NULL, *x;
	bool fresh;
	int rc = replay_entry(fs, b->p, &ino, &f, crc, &fresh);

	if (rc < 0 || ino != FFS_CSUM_TAILS || FFS_CSUM_TAIL_HWM(f) != b->row0)
		return rc < 0 ? rc : 0; /* an earlier batch of this stripe failed */
	for (uint32_t i = 0; i < nrec; i++) {
		struct ffs_pbatch_rec r;

		memcpy(&r, h->data + i * sizeof(r), sizeof(r));
		nblocks += ff_le16(r.nblocks);
	}
	if (!FFS_PBATCH_FITS(nrec, nblocks) || 1 + nblocks > b->rows * g->ndata)
		return 0;
	crcs = h->data + nrec * sizeof(struct ffs_pbatch_rec);
	/* the rows of every chunk, and the blocks' checksums; a block that
	 * fails its checksum is a torn batch (never acknowledged) or a bad
	 * chunk, which a read around that chunk's member rebuilds */
	for (uint32_t i = 0; i < g->ndata; i++)
		if (!batch_rows_read(fs, b, i, false, buf))
			return 0;
	if (!batch_blocks_match(fs, b->p, slot, nblocks, crcs, buf)) {
		uint32_t i = 0;

		/* each chunk's rows in turn rebuilt from the others, and put
		 * back as read when that did not make every block match */
		for (; i < g->ndata; i++) {
			if (batch_rows_read(fs, b, i, true, buf) &&
			    batch_blocks_match(fs, b->p, slot, nblocks, crcs, buf))
				break;
			if (!batch_rows_read(fs, b, i, false, buf))
				return 0;
		}
		if (i == g->ndata)
			return 0; /* torn: never acknowledged */
		note_healed(fs, b->p, i, "a patch batch's rows");
	}
	/* the header as scan_stripe verified it (or rebuilt it), not as read
	 * again: the checksums must vouch for what the rows should hold */
	memcpy(buf + patch_slot_offset(g, b->row0 * g->ndata), h, FFS_BLOCK);
	for (uint32_t i = 0; i < g->ndata; i++) /* the chunk checksums continued over them */
		crc[i] = ff_crc32c(crc[i], buf + (uint64_t)i * g->chunk_bytes +
					   (uint64_t)b->row0 * FFS_TAIL_ROW, len);
	if (fresh && (rc = ffs_take_stripes(fs, b->p, 1)) < 0)
		return rc;
	if (ffs_iget(fs, ff_le64(h->ino), &x) == 0) { /* else the file is gone */
		if (x->d.generation == h->igen && S_ISREG(ff_le32(x->d.mode)) && !ffs_is_small(x))
			fi = x;
		else
			ffs_iput(fs, x);
	}
	/* which records still fit the file: counted in the stripe first, as
	 * the daemon does (ffs_patch_add may let older patches there go) */
	for (uint32_t i = 0; fi && i < nrec; i++) {
		struct ffs_pbatch_rec r;

		memcpy(&r, h->data + i * sizeof(r), sizeof(r));
		ok += rec_applies(fs, fi, &r);
	}
	rc = ffs_csum_set(fs, b->p, FFS_CSUM_TAILS,
			  FFS_CSUM_TAIL_PACK(b->row0 + b->rows, FFS_CSUM_TAIL_LIVE(f) + ok), crc);
	if (!fi)
		return rc < 0 ? rc : 0;
	for (uint32_t i = 0, k = 0; i < nrec && rc == 0; i++) {
		struct ffs_pbatch_rec r;
		uint32_t pc[FFS_PATCH_BLOCKS_MAX], n;

		memcpy(&r, h->data + i * sizeof(r), sizeof(r));
		n = ff_le16(r.nblocks);
		if (rec_applies(fs, fi, &r)) {
			for (uint32_t j = 0; j < n; j++) {
				le32 c;

				memcpy(&c, crcs + 4 * (k + j), 4);
				pc[j] = ff_le32(c);
			}
			rc = ffs_patch_add(fs, fi, ff_le64(r.fstripe), ff_le16(r.b0), n, b->p,
					   slot + k, pc);
		}
		k += n;
	}
	if (rc == 0) {
		if (ff_le64(h->mtime_ns) > ff_le64(fi->d.mtime_ns))
			fi->d.mtime_ns = h->mtime_ns;
		if (ff_le64(h->ctime_ns) > ff_le64(fi->d.ctime_ns))
			fi->d.ctime_ns = h->ctime_ns;
		rc = ffs_istore(fs, fi);
	}
	ffs_iput(fs, fi);
	return rc < 0 ? rc : 1;
}

int ffs_patch_replay(struct ffs *fs, bool apply, unsigned *count)
{
	struct ffs_patch_open po = fs->sb->popen;
	uint64_t next = ff_le64(po.next_seq), maxseq = 0;
	unsigned n = ff_le32(po.count), nv = 0, cap = 0;
	struct found_batch *v = NULL;
	uint8_t *buf = NULL;
	int rc = 0;

	*count = 0;
	if (ff_le32(fs->sb->version) < FFS_VERSION_PATCH)
		return 0;
	if (n > FFS_PATCH_OPEN_MAX) {
		ff_log(FF_LOG_ERR, "the superblock lists %u open tail stripes (at most %u); run "
		       "fsck.framefs", n, FFS_PATCH_OPEN_MAX);
		return -EUCLEAN;
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		uint64_t p = ff_le64(po.stripe[i]);

		if (p < fs->g->nstripes)
			rc = scan_stripe(fs, p, next, &v, &nv, &cap, &maxseq);
	}
	if (!apply) {
		*count = rc == 0 ? nv : 0;
	} else if (rc == 0 && nv) { /* (v is NULL when no stripe held a batch) */
		buf = ff_alloc_aligned(fs->stripe_bytes);
		rc = buf ? 0 : -ENOMEM;
		qsort(v, nv, sizeof(*v), found_cmp);
		for (unsigned i = 0; i < nv && rc >= 0; i++) {
			rc = apply_batch(fs, &v[i], buf);
			*count += rc == 1;
		}
	}
	/* no slot is open now: a listed tail stripe nothing points into is
	 * what a crash left (a slot keeps an emptied stripe open), freed */
	for (unsigned i = 0; apply && rc >= 0 && i < n; i++) {
		uint64_t p = ff_le64(po.stripe[i]);

		if (p < fs->g->nstripes && ffs_stripe_in_use(fs, p)) /* a free one's entry is stale */
			rc = ffs_tail_closed(fs, p);
	}
	for (unsigned i = 0; i < nv; i++) /* found, applied or not */
		free(v[i].h);
	free(v);
	free(buf);
	/* this mount's batches (mount.c counts it next) number above any an
	 * earlier life of the volume wrote, found or not: one lost with a
	 * crash in a stripe no commit listed may lie at row 0 of a stripe a
	 * later commit lists free (a spare), and must not pass its next_seq */
	atomic_store(&fs->pbatch_seq, FF_MAX(FF_MAX(next, maxseq + 1),
					     (ff_le64(fs->sb->mount_count) + 1) << PATCH_SEQ_MOUNT_SHIFT));
	return rc < 0 ? rc : 0;
}
