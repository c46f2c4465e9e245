/* SPDX-License-Identifier: MIT */
/*
 * File data: the API the operations call (ffs_data_read/write/flush/
 * truncate/fallocate).  Writes go through stripe buffers (wbuf.c), reads
 * through the stripe read cache (rcache.c), or for buffered readers over
 * FUSE's io_uring straight into the request's reply buffer
 * (ffs_data_read_into); data_i.h says what they share.
 *
 * Locking: a file's dlock guards its buffers and read-ahead position;
 * fs->lock is taken inside it, briefly, for the extent map, the size and
 * the allocator.  No pool buffer or cache entry is waited for with either
 * held (see data_i.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>

#include "fs/data/data_i.h"

/* ---- the API ----------------------------------------------------------------- */

static int aread_init(struct ffs *fs);
static void aread_free(struct ffs *fs);

int ffs_data_init(struct ffs *fs)
{
	int rc = ffs_wpool_init(fs);

	if (rc == 0)
		rc = ffs_rcache_init(fs);
	if (rc == 0)
		rc = ffs_tails_init(fs);
	if (rc == 0)
		rc = ffs_pcache_init(fs);
	if (rc == 0)
		rc = aread_init(fs);
	if (rc == 0)
		rc = ffs_wpool_start(fs);
	if (rc == 0)
		rc = ffs_merges_start(fs);
	return rc;
}

void ffs_data_free(struct ffs *fs)
{
	ffs_merges_free(fs); /* it writes through the pool */
	ffs_wpool_free(fs);
	ffs_rcache_free(fs);
	ffs_pcache_free(fs);
	ffs_tails_free(fs);
	aread_free(fs);
}

/* Whether fi is small (fs->lock taken here); promote_small reads the flag
 * without it (small.c ffs_is_small_unlocked). */
static bool is_small(struct ffs *fs, struct finode *fi)
{
	bool small;

	pthread_mutex_lock(&fs->lock);
	small = ffs_is_small(fi);
	pthread_mutex_unlock(&fs->lock);
	return small;
}

/*
 * One step of sending file stripe k out whole to a stripe of its own
 * (neither small nor a tail): wait while its buffer is being written, else
 * write it out (made from what the file holds there if there is none).
 * The caller repeats until the stripe is mapped as it wants.  dlock held,
 * let go while waiting.
 */
static int force_stripe_step(struct ffs *fs, struct finode *fi, uint64_t k, const char *what)
{
	struct wbuf *wb = ffs_wb_find(fi, k);
	int rc;

	if (wb && wb->writing) {
		wait_noted(&fi->dcond, &fi->dlock, what);
		return 0;
	}
	if (fi->write_error)
		return fi->write_error;
	if (!wb && !(wb = ffs_wb_for(fs, fi, k, &rc)))
		return rc;
	if (wb->writing)
		return 0; /* ffs_wb_for may wait: another writer sent it meanwhile */
	wb->force_stripe = true;
	rc = ffs_wb_writeout(fs, fi, wb);
	return rc < 0 ? rc : 0;
}

/*
 * A small file (small.c) is about to get a stripe other than stripe 0, or
 * preallocated stripes: its stripe 0 moves from pool blocks to a stripe
 * first, so that a file is always either small or mapped by extents.
 * Sends stripe 0 out whole and waits until stripe_done has mapped it (and
 * let the blocks go).  dlock held, let go while waiting.  The wait ends:
 * every stripe write ends in stripe_done, which wakes dcond; a write that
 * failed leaves the file small and its error in write_error, returned here.
 */
static int promote_small(struct ffs *fs, struct finode *fi)
{
	int rc = 0;

	while (rc == 0 && ffs_is_small_unlocked(fi))
		rc = force_stripe_step(fs, fi, 0, "a small file's first stripe being written");
	return rc;
}

/*
 * A file whose stripes are still in the old geometry of an array grown
 * under the volume (fs_i.h, struct ffs_geo) is read in it but changed only
 * in the array's: before a change it is moved there (fs->old_file_move;
 * without that hook, -EROFS).  A truncation to 0 needs no move: it empties
 * the file, and an empty file takes the array's geometry.  Takes fs->lock.
 */
static int leave_old_geometry(struct ffs *fs, struct finode *fi)
{
	bool old;

	if (!fs->orows)
		return 0;
	pthread_mutex_lock(&fs->lock);
	old = ffs_file_geo(fs, fi) != &fs->geo[0];
	pthread_mutex_unlock(&fs->lock);
	if (!old)
		return 0;
	return fs->old_file_move ? fs->old_file_move(fs, fi) : -EROFS;
}

ssize_t ffs_data_write(struct ffs *fs, struct finode *fi, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *src = buf;
	size_t done = 0;
	int rc = leave_old_geometry(fs, fi);

	if (rc < 0)
		return rc;

	/* small_max is fixed at mkfs: without the class no file is ever small,
	 * and a frame's writes take no fs->lock for it */
	bool beyond = off + len > fs->stripe_bytes && ffs_small_max(fs), grew;
	uint64_t before;

	pthread_mutex_lock(&fi->dlock);
	/* a write past stripe 0: the file leaves the small class first, and
	 * may not enter it until this write is done (ffs_wb_for may let go of
	 * dlock, and another writer's flush would find the file small) */
	if (beyond) {
		fi->beyond_small++;
		rc = promote_small(fs, fi);
	}
	while (done < len && rc == 0) {
		uint64_t k = (off + done) / fs->stripe_bytes, o = (off + done) % fs->stripe_bytes;
		size_t n = (size_t)FF_MIN(len - done, fs->stripe_bytes - o);
		struct wbuf *wb = ffs_wb_for(fs, fi, k, &rc);

		if (!wb)
			break;
		if (wb->nival == WB_IVALS && !ffs_ival_covers(wb, o, o + n)) {
			rc = ffs_wb_fill(fs, fi, wb); /* too fragmented: complete it first */
			if (rc < 0)
				break;
		}
		memcpy(wb->data + o, src + done, n);
		ffs_ival_add(wb, o, o + n);
		wb->hi = FF_MAX(wb->hi, o + n);
		done += n;
		if (ffs_ival_covers(wb, 0, fs->stripe_bytes)) {
			rc = ffs_wb_writeout(fs, fi, wb);
			if (rc < 0)
				break;
		}
	}
	if (beyond)
		fi->beyond_small--;
	pthread_mutex_unlock(&fi->dlock);
	if (done == 0 && rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	grew = off + done > ff_le64(fi->d.size);
	if (grew)
		fi->d.size = ff_cpu_to_le64(off + done);
	ffs_inode_touch(fi, true, true);
	before = fi->tx_seq;
	rc = ffs_istore(fs, fi);
	/* times alone: whatever writes the data (a stripe's mapping, or a
	 * patch batch, which carries them for replay) decides what fsync
	 * commits (patch.c) */
	if (!grew && (fs->features & FFS_FEAT_PATCHES))
		fi->tx_seq = before;
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : (ssize_t)done;
}

/* Where file stripe k's bytes come from: a buffer being assembled (copied
 * out under dlock into dst), a hole (zeros), data stripe *p, or a tail
 * (tail.c: copied out into dst, or -EAGAIN without one).
 *
 * A stripe found in the map is read after fs->lock is let go, so the file
 * may be rewritten meanwhile and the stripe freed — and once that free is
 * committed, given to another file and written: the read cache's checksums
 * would then vouch for the other file's bytes.  *gen is the file's map
 * generation at the lookup (NO_GEN: nothing was looked up, nothing to
 * check); a reader that finds it moved reads again (map_moved).  With hold,
 * the lookup also holds reuse off (alloc.c) and *gen says whether to let
 * go. */
enum src { SRC_DONE, SRC_ZERO, SRC_STRIPE };
#define NO_GEN UINT64_MAX
#define READ_TRIES 4 /* the last one holds reuse off */

static bool map_moved(struct finode *fi, uint64_t gen)
{
	return gen != NO_GEN && atomic_load(&fi->map_gen) != gen;
}

static int read_source(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t o, size_t n,
		       uint8_t *dst, uint64_t *p, uint64_t *gen, bool hold)
{
	struct ffs_extent x;
	uint32_t flags, row0, rows;
	struct wbuf *wb;
	bool patched;
	int rc = 0;

	*gen = NO_GEN;
	pthread_mutex_lock(&fi->dlock);
	/* patches being written hold only their blocks: read once they are
	 * mapped (stripe_done wakes dcond; every write ends there) */
	while ((wb = ffs_wb_find(fi, k)) && wb->writing && !ffs_ival_covers(wb, o, o + n))
		wait_noted(&fi->dcond, &fi->dlock, "patches of this stripe being written");
	if (wb && dst && !ffs_ival_covers(wb, o, o + n))
		rc = ffs_wb_fill(fs, fi, wb);
	if (wb && rc == 0 && dst)
		memcpy(dst, wb->data + o, n);
	pthread_mutex_unlock(&fi->dlock);
	if (wb)
		return rc < 0 ? rc : dst ? SRC_DONE : -EAGAIN;
	pthread_mutex_lock(&fs->lock);
	if (k == 0 && ffs_is_small(fi)) { /* in pool blocks (small.c): copied here */
		rc = dst ? ffs_small_read(fs, fi, o, n, dst) : -EAGAIN;
		pthread_mutex_unlock(&fs->lock);
		return rc < 0 ? rc : SRC_DONE;
	}
	rc = ffs_extent_find(fs, fi, k, &x);
	patched = ffs_patch_any(fs, fi);
	*gen = atomic_load(&fi->map_gen);
	if (hold)
		ffs_alloc_reuse_hold(fs);
	pthread_mutex_unlock(&fs->lock);
	flags = rc == 0 ? ff_le32(x.flags) : 0;
	if (rc == -ENOENT || (rc == 0 && (flags & FFS_X_UNWRITTEN)))
		return SRC_ZERO;
	if (rc < 0)
		return rc;
	*p = ff_le64(x.pstripe) + (k - ff_le64(x.fstripe));
	if (flags & FFS_X_TAIL) { /* not one piece of a stripe: copied, never referenced */
		if (!dst)
			return -EAGAIN;
		ffs_tail_rows_of(&x, &row0, &rows);
		rc = ffs_tail_read(fs, *p, row0, rows, o, n, dst);
	} else if (patched) { /* the stripe with its patches laid over (patch.c) */
		if (!dst)
			return -EAGAIN;
		rc = ffs_read_stripe_bytes(fs, *p, o, n, dst);
	} else {
		return SRC_STRIPE;
	}
	if (rc == 0 && patched)
		rc = ffs_patch_overlay(fs, fi, k, o, n, dst, NULL);
	return rc < 0 ? rc : SRC_DONE;
}



static uint64_t file_size(struct ffs *fs, struct finode *fi)
{
	uint64_t size;

	pthread_mutex_lock(&fs->lock);
	size = ff_le64(fi->d.size);
	pthread_mutex_unlock(&fs->lock);
	return size;
}

/* The file's size and the geometry its stripes are in (fs_i.h ffs_file_geo):
 * a read maps its offsets to file stripes of that geometry's bytes. */
static uint64_t file_size_geo(struct ffs *fs, struct finode *fi, const struct ffs_geo **geo)
{
	uint64_t size;

	pthread_mutex_lock(&fs->lock);
	size = ff_le64(fi->d.size);
	*geo = ffs_file_geo(fs, fi);
	pthread_mutex_unlock(&fs->lock);
	return size;
}

/* Did fi leave geometry geo (a grow's restripe moved it, restripe.c, or it
 * was truncated to 0)?  Its file stripes are then of another size.  A
 * file in the array's geometry never leaves it: no lock for those. */
static bool geo_moved(struct ffs *fs, struct finode *fi, const struct ffs_geo *geo)
{
	bool moved;

	if (!fs->orows || geo == &fs->geo[0])
		return false;
	pthread_mutex_lock(&fs->lock);
	moved = ffs_file_geo(fs, fi) != geo;
	pthread_mutex_unlock(&fs->lock);
	return moved;
}

ssize_t ffs_data_read(struct ffs *fs, struct finode *fi, void *buf, size_t len, uint64_t off,
		      unsigned flags)
{
	const struct ffs_geo *geo;
	uint64_t size = file_size_geo(fs, fi, &geo), S = geo->g->stripe_bytes;
	uint8_t *dst = buf;
	size_t done = 0, asked = len;
	int rc = 0;

	if (off >= size)
		return 0;
	len = (size_t)FF_MIN((uint64_t)len, size - off);
	while (done < len && rc >= 0) {
		uint64_t k = (off + done) / S, o = (off + done) % S, p;
		size_t n = (size_t)FF_MIN(len - done, S - o);

		/* ends: each try but the last needs the map to move again, the
		 * last holds reuse off and is not checked.  A file in the old
		 * geometry holds it off at once: a grow's restripe frees its
		 * rows, and a row leaves the old geometry when it may be
		 * reused (alloc.c), so one read unheld there would fail its
		 * checksums (logged, counted against the members) */
		for (unsigned tries = 0;; tries++) {
			bool hold = tries == READ_TRIES - 1 || geo != &fs->geo[0];
			uint64_t gen;

			rc = read_source(fs, fi, k, o, n, dst + done, &p, &gen, hold);
			if (rc == SRC_ZERO)
				memset(dst + done, 0, n);
			if (rc == SRC_STRIPE) {
				if (!(flags & FFS_READ_KERNEL_AHEAD))
					ffs_read_ahead(fs, fi, k, size);
				rc = ffs_read_stripe_bytes(fs, p, o, n, dst + done);
			}
			if (hold && gen != NO_GEN) {
				pthread_mutex_lock(&fs->lock);
				ffs_alloc_reuse_release(fs);
				pthread_mutex_unlock(&fs->lock);
			}
			if (hold || !map_moved(fi, gen))
				break;
			atomic_fetch_add(&fs->stats.reads_again, 1);
			if (geo_moved(fs, fi, geo))
				break;
		}
		/* moved to another geometry under this read: the whole read
		 * again in the new one (a file moves once: old to new) */
		if (rc >= 0 && geo_moved(fs, fi, geo)) {
			size = file_size_geo(fs, fi, &geo);
			S = geo->g->stripe_bytes;
			done = 0;
			len = off >= size ? 0 : (size_t)FF_MIN((uint64_t)asked, size - off);
			rc = 0;
			continue;
		}
		if (rc >= 0)
			done += n;
	}
	/* an error fails the whole read, not just its rest: to FUSE a short
	 * reply is the end of the file, and the kernel would cut its size
	 * there (fuse_short_read) for every later reader */
	return rc < 0 ? rc : (ssize_t)done;
}

/*
 * The same read without copying: the pieces point into the stripe cache,
 * held until ffs_data_read_unref.  -EAGAIN when a piece is not plainly in a
 * data stripe (a hole, a buffer being assembled) or its stripe would need a
 * cache entry while this reader holds others: the caller copies instead.
 * Where each piece comes from is settled before any entry is held, since
 * that takes dlock, and a writer holding dlock may wait for a free entry.
 */
ssize_t ffs_data_read_ref(struct ffs *fs, struct finode *fi, size_t len, uint64_t off,
			  unsigned flags, struct ffs_rref *ref)
{
	const struct ffs_geo *geo;
	uint64_t size = file_size_geo(fs, fi, &geo), S = geo->g->stripe_bytes;
	uint64_t ps[FFS_RREF_MAX], gen[FFS_RREF_MAX];
	size_t done = 0, ns[FFS_RREF_MAX];
	unsigned n = 0;

	ref->n = 0;
	if (geo != &fs->geo[0])
		return -EAGAIN; /* not moved since a grow: copied (ffs_data_read follows a move) */
	if (off >= size)
		return 0;
	len = (size_t)FF_MIN((uint64_t)len, size - off);
	for (; done < len; n++) {
		uint64_t k = (off + done) / S, o = (off + done) % S;
		int rc = n < FFS_RREF_MAX ? read_source(fs, fi, k, o, 0, NULL, &ps[n], &gen[n], false)
					  : -EAGAIN;

		if (rc != SRC_STRIPE)
			return rc < 0 ? rc : -EAGAIN;
		ns[n] = (size_t)FF_MIN(len - done, S - o);
		if (!(flags & FFS_READ_KERNEL_AHEAD))
			ffs_read_ahead(fs, fi, k, size);
		done += ns[n];
	}
	done = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t o = (off + done) % S;
		struct rentry *e;
		int rc = ffs_stripe_get(fs, ps[i], i ? RC_WAIT_LOAD : RC_WAIT, &e);

		if (rc < 0) {
			/* ESTALE: the stripe was freed (and its copy dropped) while
			 * it loaded, the file rewritten meanwhile: the copying read
			 * reads the map again, with its tries (CI's read-during-capture
			 * got ESTALE here, 3 runs in 10 of 20,000 rewrites) */
			ffs_data_read_unref(fs, ref);
			return rc == -ESTALE ? -EAGAIN : rc;
		}
		ref->iov[i].iov_base = e->data + o;
		ref->iov[i].iov_len = ns[i];
		ref->pin[i] = e;
		ref->n = i + 1;
		done += ns[i];
	}
	for (unsigned i = 0; i < n; i++)
		if (map_moved(fi, gen[i])) { /* the stripe may be another file's now */
			ffs_data_read_unref(fs, ref);
			atomic_fetch_add(&fs->stats.reads_again, 1);
			return -EAGAIN; /* copied instead, with its tries */
		}
	return (ssize_t)done;
}

void ffs_data_read_unref(struct ffs *fs, struct ffs_rref *ref)
{
	for (unsigned i = 0; i < ref->n; i++)
		ffs_rc_put(fs, ref->pin[i]);
	ref->n = 0;
}

/* Bounds of a read straight into the caller's buffer (ffs_data_read_into,
 * below): the chunks it checks (4 MiB of 16 KiB chunks, the smallest) and
 * the runs of consecutive stripes it reads, one engine request each (a file
 * whose extents break more often than that is read through the cache). */
#define DIRECT_CHUNKS_MAX 256
#define DIRECT_RUNS_MAX 8

struct direct_run {
	struct ff_raid_io io;
	struct direct_read *r;
	bool bad;
};

struct direct_read {
	_Atomic unsigned pending;           /* runs in flight, + 1 while submitting */
	struct ffs *fs;
	struct finode *fi;
	const uint8_t *base;                /* the caller's buffer */
	uint64_t gen0, fh, off;             /* the map's generation; the request */
	size_t len, done;
	unsigned nruns;
	ffs_read_done_fn done_fn;           /* called once, with the result */
	void *priv;
	struct direct_read *next_free;      /* in fs->aread_free, when from the pool */
	bool pooled;
	uint32_t crc[DIRECT_CHUNKS_MAX];    /* chunk j holds base[j*C, (j+1)*C) */
	struct direct_run run[DIRECT_RUNS_MAX];
};

/* The reads in flight that no thread waits for (ffs_data_read_into_async):
 * a fixed pool, made at mount.  A request that finds it empty is read as
 * before, its thread waiting. */
#define AREAD_POOL 64

static int aread_init(struct ffs *fs)
{
	fs->aread = calloc(AREAD_POOL, sizeof(*fs->aread));
	if (!fs->aread)
		return -ENOMEM;
	pthread_mutex_init(&fs->aread_lock, NULL);
	for (unsigned i = 0; i < AREAD_POOL; i++) {
		fs->aread[i].pooled = true;
		fs->aread[i].next_free = i + 1 < AREAD_POOL ? &fs->aread[i + 1] : NULL;
	}
	fs->aread_free = &fs->aread[0];
	return 0;
}

/* Every read of the pool has ended by now: the FUSE session ends only once
 * every request has had its reply, which the last completion sends. */
static void aread_free(struct ffs *fs)
{
	free(fs->aread);
	fs->aread = NULL;
}

static struct direct_read *aread_get(struct ffs *fs)
{
	struct direct_read *r;

	pthread_mutex_lock(&fs->aread_lock);
	r = fs->aread_free;
	if (r)
		fs->aread_free = r->next_free;
	pthread_mutex_unlock(&fs->aread_lock);
	return r;
}

static void aread_put(struct ffs *fs, struct direct_read *r)
{
	pthread_mutex_lock(&fs->aread_lock);
	r->next_free = fs->aread_free;
	fs->aread_free = r;
	pthread_mutex_unlock(&fs->aread_lock);
}

/* The last run in: the result, the read given back to its pool, then the
 * caller told (on an engine thread, or on the submitting one when a submit
 * failed). */
static void direct_finish(struct direct_read *r)
{
	ffs_read_done_fn fn = r->done_fn;
	void *priv = r->priv;
	uint64_t fh = r->fh, off = r->off;
	size_t len = r->len;
	ssize_t res = (ssize_t)r->done;
	bool ok = true;

	for (unsigned i = 0; i < r->nruns; i++)
		ok = ok && !r->run[i].bad;
	if (ok && map_moved(r->fi, r->gen0)) { /* a stripe may be another file's now */
		atomic_fetch_add(&r->fs->stats.reads_again, 1);
		ok = false;
	}
	if (ok) {
		atomic_fetch_add(&r->fs->stats.direct_reads, r->nruns);
		if (r->pooled)
			atomic_fetch_add(&r->fs->stats.direct_reads_unwaited, r->nruns);
	}
	else
		res = -EAGAIN; /* through the cache, which rebuilds, repairs and counts */
	if (r->pooled)
		aread_put(r->fs, r);
	fn(priv, res, fh, len, off);
}

/* On an engine thread, as rc_read_done: the run's chunks are checked here. */
static void direct_done(struct ff_raid_io *io)
{
	struct direct_run *u = io->priv;
	struct direct_read *r = u->r;
	const uint64_t C = r->fs->g->chunk_bytes;
	const uint8_t *b = io->buf;

	u->bad = io->result < 0;
	for (uint64_t c = 0; !u->bad && c < io->len / C; c++)
		u->bad = ff_crc32c(0, b + c * C, (size_t)C) != r->crc[(size_t)(b - r->base) / C + c];
	if (atomic_fetch_sub(&r->pending, 1) == 1)
		direct_finish(r);
}

/*
 * A read that lands where its caller wants the bytes: each stripe piece is
 * read from the members straight into buf (over FUSE's io_uring, the
 * request's own reply buffer: fuse_ops.c) instead of into the stripe cache
 * and copied out of it.  For buffered readers, whose read-ahead the kernel
 * does: their requests come a few MiB ahead of the application, so the
 * cache's own read-ahead adds nothing for them, and its copy is one of the
 * four the bytes of a buffered read go through (member to cache, cache to
 * the reply, reply to the page cache, page cache to the reader); without
 * it buffered reads of 1 MiB ran 12-14 % faster (RAID5 x 4 on tmpfs).
 *
 * Checksums cover whole chunks, so the range must start on a chunk and its
 * last chunk must fit in cap (the reply buffer); each piece must be plain
 * stripe data (no write buffer, patch or tail: read_source) with no copy
 * in the cache, where copying is cheaper than reading.  Otherwise -EAGAIN
 * at once, nothing read; and on a member error or a chunk that fails its
 * checksum, -EAGAIN as the result: the caller reads through the cache,
 * which rebuilds and repairs.  A map that moved meanwhile (the stripe
 * freed, perhaps reused) is caught as in ffs_data_read_ref.
 *
 * r->done_fn has the result once the reads are in: 0 here then.
 */
static int direct_start(struct ffs *fs, struct finode *fi, void *buf, size_t cap, size_t len,
			uint64_t off, struct direct_read *r)
{
	const uint64_t C = fs->g->chunk_bytes, S = fs->stripe_bytes;
	const struct ffs_geo *geo;
	uint64_t size = file_size_geo(fs, fi, &geo), next_p = UINT64_MAX;
	size_t done = 0, nchunks = 0;

	if (geo != &fs->geo[0])
		return -EAGAIN; /* a file not moved since a grow: through the cache */

	r->fs = fs;
	r->fi = fi;
	r->base = buf;
	r->gen0 = NO_GEN;
	r->nruns = 0;
	if (off >= size) {
		r->done = 0;
		atomic_store(&r->pending, 1);
		direct_finish(r);
		return 0;
	}
	len = (size_t)FF_MIN((uint64_t)len, size - off);
	if (off % C)
		return -EAGAIN;
	/* where each stripe piece is, its checksums, and the runs to read */
	while (done < len) {
		uint64_t k = (off + done) / S, o = (off + done) % S, p, gen;
		size_t n = (size_t)FF_MIN((uint64_t)(len - done), S - o);
		size_t rlen = (size_t)((n + C - 1) / C * C);
		uint32_t crc[FF_MEMBERS_MAX], vlen;
		int rc = read_source(fs, fi, k, o, 0, NULL, &p, &gen, false);

		if (rc != SRC_STRIPE)
			return rc < 0 ? rc : -EAGAIN;
		if (done + rlen > cap || nchunks + rlen / C > DIRECT_CHUNKS_MAX || ffs_rc_present(fs, p) ||
		    ffs_stripe_crcs(fs, p, crc, &vlen) < 0 || vlen != C)
			return -EAGAIN;
		memcpy(&r->crc[nchunks], &crc[o / C], (size_t)(rlen / C) * sizeof(uint32_t));
		nchunks += rlen / C;
		if (r->gen0 == NO_GEN)
			r->gen0 = gen;
		if (p == next_p) { /* on from the run before, at o = 0 */
			r->run[r->nruns - 1].io.len += rlen;
		} else {
			struct ff_raid_io *io;

			if (r->nruns == DIRECT_RUNS_MAX)
				return -EAGAIN;
			io = &r->run[r->nruns++].io;
			memset(io, 0, sizeof(*io));
			io->op = FF_RAID_READ;
			io->space = FF_SPACE_DATA;
			io->off = p * S + o;
			io->len = rlen;
			io->buf = (uint8_t *)buf + done;
		}
		next_p = p + 1;
		done += n;
	}
	r->done = done;
	/* one count for each run and one for this loop, so that no completion
	 * finishes the read while runs are still being submitted */
	atomic_store(&r->pending, r->nruns + 1);
	for (unsigned i = 0; i < r->nruns; i++) {
		struct direct_run *u = &r->run[i];

		u->r = r;
		u->bad = false;
		u->io.done = direct_done;
		u->io.priv = u;
		if (ff_raid_submit(fs->raid, &u->io) < 0) {
			u->bad = true;
			atomic_fetch_sub(&r->pending, 1);
		}
	}
	if (atomic_fetch_sub(&r->pending, 1) == 1)
		direct_finish(r);
	return 0;
}

struct direct_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool finished;
	ssize_t res;
};

static void direct_waited(void *priv, ssize_t res, uint64_t fh, size_t len, uint64_t off)
{
	struct direct_wait *w = priv;

	(void)fh, (void)len, (void)off;
	pthread_mutex_lock(&w->lock);
	w->res = res;
	w->finished = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock); /* w is the waiter's: not touched after this */
}

ssize_t ffs_data_read_into(struct ffs *fs, struct finode *fi, void *buf, size_t cap, size_t len,
			   uint64_t off)
{
	struct direct_wait w = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct direct_read r = { .done_fn = direct_waited, .priv = &w };
	int rc = direct_start(fs, fi, buf, cap, len, off, &r);

	if (rc < 0)
		return rc;
	/* ends: the engine completes every read it took (a member that stops
	 * answering is failed at its deadline), and the last completion
	 * finishes the read */
	pthread_mutex_lock(&w.lock);
	while (!w.finished)
		wait_noted(&w.cond, &w.lock, "stripe reads into a reply");
	pthread_mutex_unlock(&w.lock);
	return w.res;
}

int ffs_data_read_into_async(struct ffs *fs, struct finode *fi, uint64_t fh, void *buf, size_t cap,
			     size_t len, uint64_t off, ffs_read_done_fn done_fn, void *priv)
{
	struct direct_read *r = aread_get(fs);
	int rc;

	if (!r)
		return -EBUSY;
	r->done_fn = done_fn;
	r->priv = priv;
	r->fh = fh;
	r->off = off;
	r->len = len;
	rc = direct_start(fs, fi, buf, cap, len, off, r);
	if (rc < 0)
		aread_put(fs, r);
	return rc;
}

/* merges: wait for the background merges of the file in flight too;
 * keep: leave the write error and the reservation (ffs_data_flush_all). */
static int data_flush(struct ffs *fs, struct finode *fi, bool merges, bool keep)
{
	int rc = 0, err;

	pthread_mutex_lock(&fi->dlock);
	for (;;) {
		struct wbuf *wb = fi->wbufs;
		bool wait = false; /* a write in flight that this flush waits for */

		for (; wb && wb->writing; wb = wb->next)
			wait = wait || !wb->background || merges;
		if (!wb) {
			/* a background merge in flight holds none of the file's
			 * new bytes: its stripe's patches are durable already
			 * (merge.c), so fsync and close need not wait for it */
			if (!wait)
				break;
			wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight"); /* others' writes in flight */
			continue;
		}
		err = ffs_wb_writeout_flush(fs, fi, wb);
		if (err < 0 && !rc)
			rc = err;
	}
	err = fi->write_error;
	if (!keep)
		fi->write_error = 0;
	pthread_mutex_unlock(&fi->dlock);
	if (keep)
		return rc < 0 ? rc : err;
	pthread_mutex_lock(&fs->lock);
	ffs_release_reservation(fs, fi);
	if (fi->d.parent && ff_le64(fi->d.nstripes)) {
		struct finode *dir;

		if (ffs_iget(fs, ff_le64(fi->d.parent), &dir) == 0) {
			/* and its tail's stripe: the next frame's last buffer
			 * takes one from the reservation too */
			dir->last_file_stripes = ff_le64(fi->d.nstripes) + !!ff_le32(fi->d.tail_blocks);
			dir->alloc_hint = fi->alloc_hint;
			ffs_iput(fs, dir);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : err;
}

int ffs_data_flush(struct ffs *fs, struct finode *fi)
{
	return data_flush(fs, fi, false, false);
}

int ffs_data_flush_all(struct ffs *fs, struct finode *fi, bool keep)
{
	return data_flush(fs, fi, true, keep);
}

/* Let the file's writes in flight land (each ends in stripe_done, which
 * wakes dcond), then drop its buffers of file stripes [k0, k1) unwritten.
 * dlock held, let go while waiting. */
static void drop_buffers(struct ffs *fs, struct finode *fi, uint64_t k0, uint64_t k1)
{
	struct wbuf *wb;

	for (;;) {
		for (wb = fi->wbufs; wb && !wb->writing; wb = wb->next)
			;
		if (!wb)
			break;
		wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight");
	}
	for (wb = fi->wbufs; wb;) {
		struct wbuf *next = wb->next;

		if (wb->fstripe >= k0 && wb->fstripe < k1)
			ffs_wb_drop(fs, fi, wb, 0);
		wb = next;
	}
}

int ffs_data_truncate(struct ffs *fs, struct finode *fi, uint64_t size)
{
	uint64_t keep = FF_DIV_ROUND_UP(size, fs->stripe_bytes), eof_k = size / fs->stripe_bytes;
	uint64_t eof_off = size % fs->stripe_bytes, p, run;
	uint32_t flags;
	struct wbuf *wb;
	int rc = size ? leave_old_geometry(fs, fi) : 0; /* emptied, it takes the array's */

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fi->dlock);
	drop_buffers(fs, fi, keep, UINT64_MAX); /* those wholly past the end */
	if (eof_off) {
		bool small;

		pthread_mutex_lock(&fs->lock);
		rc = ffs_extent_lookup(fs, fi, eof_k, &p, &run, &flags);
		small = eof_k == 0 && ffs_is_small(fi);
		pthread_mutex_unlock(&fs->lock);
		wb = ffs_wb_find(fi, eof_k);
		if (wb || small || (rc == 0 && !(flags & FFS_X_UNWRITTEN))) {
			int err = 0;

			wb = wb ? wb : ffs_wb_for(fs, fi, eof_k, &err);
			rc = wb ? 0 : err;
			if (wb && !ffs_ival_covers(wb, 0, eof_off))
				rc = ffs_wb_fill(fs, fi, wb);
			if (wb && rc == 0) {
				memset(wb->data + eof_off, 0, fs->stripe_bytes - eof_off);
				ffs_ival_add(wb, eof_off, fs->stripe_bytes);
				/* what it holds ends at the new size now: a small file
				 * stays small (small_writeout measures size and hi) */
				wb->hi = FF_MIN(wb->hi, eof_off);
				if (eof_k == 0) {
					pthread_mutex_lock(&fs->lock);
					if (size < ff_le64(fi->d.size))
						fi->d.size = ff_cpu_to_le64(size);
					pthread_mutex_unlock(&fs->lock);
				}
				rc = ffs_wb_writeout(fs, fi, wb);
			}
		} else {
			rc = 0;
		}
	}
	pthread_mutex_unlock(&fi->dlock);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_extent_truncate(fs, fi, keep);
	if (rc == 0) {
		fi->d.size = ff_cpu_to_le64(size);
		if (size == 0)
			fi->geo = NULL; /* nothing mapped: asked again (ffs_file_geo) */
		rc = ffs_istore(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static int fallocate_map(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len);

/*
 * Preallocation promises whole stripes: a tail (tail.c) in file stripes
 * [k0, k1) moves to a stripe of its own first, written whole as before
 * tails, so that the mapped stripe fallocate then skips holds the space it
 * promised.  dlock held, let go while waiting; the wait ends as in
 * promote_small: every write ends in stripe_done, which wakes dcond.
 */
static int untail_range(struct ffs *fs, struct finode *fi, uint64_t k0, uint64_t k1)
{
	for (uint64_t k = k0; k < k1;) {
		uint64_t p, run;
		uint32_t flags;
		int rc;

		pthread_mutex_lock(&fs->lock);
		rc = ffs_extent_lookup(fs, fi, k, &p, &run, &flags);
		pthread_mutex_unlock(&fs->lock);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		if (rc == -ENOENT || !(flags & FFS_X_TAIL)) {
			k += FF_MAX(1ull, FF_MIN(run, k1 - k));
			continue;
		}
		rc = force_stripe_step(fs, fi, k, "a tail moving to a stripe of its own");
		if (rc < 0)
			return rc;
	}
	return 0;
}

/*
 * A hole punched in [off, off + len) (FALLOC_FL_PUNCH_HOLE, with KEEP_SIZE:
 * the kernel refuses it otherwise): the whole file stripes inside it are
 * unmapped and their stripes (or tails' rows) freed; the bytes of the
 * partial stripes at its ends are written as zeros, like any write (a
 * stripe, a tail or a small file's blocks: copy-on-write, so parity is
 * never updated in place), unless that stripe is a hole already (unmapped,
 * no buffer: zeros are what it reads, and writing them would allocate it);
 * past the end of the file there is nothing to punch.  Reads of the range
 * return zeros afterwards.
 */
static bool stripe_is_hole(struct ffs *fs, struct finode *fi, uint64_t k)
{
	uint64_t p, run;
	uint32_t flags;
	bool hole;
	int rc;

	pthread_mutex_lock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	rc = ffs_is_small(fi) ? 0 : ffs_extent_lookup(fs, fi, k, &p, &run, &flags);
	hole = rc == -ENOENT && !ffs_wb_find(fi, k);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fi->dlock);
	return hole;
}

static int punch_hole(struct ffs *fs, struct finode *fi, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[64 * 1024];
	uint64_t S = fs->stripe_bytes, end = FF_MIN(off + len, file_size(fs, fi)), k0, k1;
	int rc = 0;

	if (off >= end)
		return 0;
	k0 = FF_DIV_ROUND_UP(off, S); /* the whole stripes: [k0, k1) */
	k1 = end / S;
	if (k0 >= k1 || is_small(fs, fi)) /* no whole stripe (a small file has none): zeros only */
		k0 = k1 = end / S;
	for (uint64_t pos = off; pos < end && rc >= 0;) {
		uint64_t stop = FF_MIN(pos < k0 * S ? FF_MIN(end, k0 * S) : end, (pos / S + 1) * S);
		size_t n = (size_t)FF_MIN((uint64_t)sizeof(zeros), stop - pos);

		if (pos >= k0 * S && pos < k1 * S) { /* the whole stripes are unmapped below */
			pos = k1 * S;
			continue;
		}
		if (pos % S == 0 || pos == off) { /* a partial stripe starts: a hole already? */
			if (stripe_is_hole(fs, fi, pos / S)) {
				pos = stop;
				continue;
			}
		}
		rc = (int)ffs_data_write(fs, fi, zeros, n, pos);
		pos += n;
	}
	if (rc < 0 || k0 >= k1)
		return rc < 0 ? rc : 0;
	pthread_mutex_lock(&fi->dlock);
	drop_buffers(fs, fi, k0, k1); /* those of the whole stripes */
	pthread_mutex_lock(&fs->lock);
	rc = ffs_extent_punch(fs, fi, k0, k1);
	if (rc == 0) {
		ffs_inode_touch(fi, true, true);
		rc = ffs_istore(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fi->dlock);
	return rc;
}

int ffs_data_fallocate(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len)
{
	int rc = leave_old_geometry(fs, fi);

	if (rc < 0)
		return rc;
	if (len == 0)
		return -EINVAL;
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return punch_hole(fs, fi, off, len);
	if (mode & FALLOC_FL_ZERO_RANGE) {
		/* zeros in the range, and its space preallocated: the hole
		 * punched (whole stripes freed, the partial ends written with
		 * zeros), then preallocated as below (mode 0 extends the size) */
		if (mode & ~(FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE))
			return -EOPNOTSUPP;
		rc = punch_hole(fs, fi, off, len);
		if (rc < 0)
			return rc;
		mode &= ~FALLOC_FL_ZERO_RANGE;
	}
	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	/* preallocated stripes are extents: a small file moves to stripes
	 * first, and stays out of the class while they are mapped */
	pthread_mutex_lock(&fi->dlock);
	fi->beyond_small++;
	rc = promote_small(fs, fi);
	if (rc == 0)
		rc = untail_range(fs, fi, off / fs->stripe_bytes,
				  FF_DIV_ROUND_UP(off + len, fs->stripe_bytes));
	pthread_mutex_unlock(&fi->dlock);
	if (rc == 0)
		rc = fallocate_map(fs, fi, mode, off, len);
	pthread_mutex_lock(&fi->dlock);
	fi->beyond_small--;
	pthread_mutex_unlock(&fi->dlock);
	return rc;
}

/* fallocate's mapping, once the file is not small (fs->lock taken here). */
static int fallocate_map(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len)
{
	uint64_t k0 = off / fs->stripe_bytes, k1 = FF_DIV_ROUND_UP(off + len, fs->stripe_bytes);
	uint64_t k = k0, hint;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	while (k < k1 && rc == 0) {
		uint64_t p, run, first, got;
		uint32_t flags;

		rc = ffs_extent_lookup(fs, fi, k, &p, &run, &flags);
		if (rc == 0) { /* already mapped: skip the run */
			k += FF_MIN(run, k1 - k);
			continue;
		}
		if (rc != -ENOENT)
			break;
		run = FF_MIN(run, k1 - k);
		ffs_reserve_want(fs, fi, &hint);
		rc = ffs_wb_reserve_stripes(fs, fi, fi->alloc_hint ? fi->alloc_hint : hint, run, false,
				     &first, &got);
		if (rc < 0)
			break;
		rc = ffs_commit_stripes(fs, first, got);
		for (uint64_t i = 0; i < got && rc == 0; i++)
			rc = ffs_csum_set(fs, first + i, (uint32_t)fi->ino, (uint32_t)(k + i), NULL);
		if (rc == 0)
			rc = ffs_extent_map(fs, fi, k, first, got, FFS_X_UNWRITTEN);
		if (rc < 0) {
			ffs_unreserve_stripes(fs, first, got);
			break;
		}
		fi->alloc_hint = first + got;
		k += got;
		if (ffs_journal_tx_full(fs))
			rc = ffs_journal_commit(fs);
	}
	if (rc == 0 && !(mode & FALLOC_FL_KEEP_SIZE) && off + len > ff_le64(fi->d.size)) {
		fi->d.size = ff_cpu_to_le64(off + len);
		ffs_inode_touch(fi, true, true);
		rc = ffs_istore(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}
