/* SPDX-License-Identifier: MIT */
/*
 * The stripe read cache and read-ahead.
 *
 * Reads.  Stripes are read whole, from every member at once, into a cache
 * of stripe buffers; each chunk's crc32c is checked against the checksum
 * table, and a chunk that fails is read again around its member
 * (reconstructed from parity) and rewritten.  A sequential reader gets the
 * next stripes read ahead.
 *
 * Locking: c->lock guards the hash, the LRU list and every entry's state
 * and references; it is a leaf (taken after fs->lock, or alone), and no
 * entry's read is waited for with fs->lock held.  An entry's data may be
 * read without the lock while a reference is held.  Completions run on
 * engine threads and never take fs->lock.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"
#include "io/hash.h"

_Thread_local bool ffs_io_background;

enum { RC_EMPTY, RC_LOADING, RC_READY, RC_ERROR };

struct rcache {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rentry *entries;
	unsigned n;
	struct rentry **hash;
	unsigned hash_size;
	struct ff_lru lru; /* every entry, least recently used first */
};

static unsigned rhash(const struct rcache *c, uint64_t p)
{
	return ff_hash_bucket(p, c->hash_size - 1);
}

/* e out of the hash (if it is there); its state left as it is. */
static void rc_unlink(struct rcache *c, struct rentry *e)
{
	struct rentry **pp = &c->hash[rhash(c, e->pstripe)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
}

static void rc_unhash(struct rcache *c, struct rentry *e)
{
	rc_unlink(c, e);
	e->state = RC_EMPTY;
}

int ffs_rcache_init(struct ffs *fs)
{
	struct rcache *c = calloc(1, sizeof(*c));
	unsigned n = (unsigned)FF_MAX(8ull, fs->opts.read_cache_bytes / fs->stripe_bytes);

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	ff_lru_init(&c->lru);
	c->n = n;
	c->hash_size = 1;
	while (c->hash_size < 2 * n)
		c->hash_size <<= 1;
	c->hash = calloc(c->hash_size, sizeof(*c->hash));
	c->entries = calloc(n, sizeof(*c->entries));
	if (!c->hash || !c->entries)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		c->entries[i].data = ff_alloc_pool_buf(fs->stripe_bytes);
		if (!c->entries[i].data)
			return -ENOMEM;
		c->entries[i].fs = fs;
		ff_lru_touch(&c->lru, &c->entries[i].lru);
	}
	fs->rcache = c;
	fs->stripes_freed = ffs_rcache_invalidate;
	return 0;
}

static void rc_verify(struct rentry *e)
{
	/* reads only the geometry: no lock taken (an engine thread) */
	e->bad_chunks = e->verify ? ffs_repair_bad_chunks(e->fs, e->pstripe, e->data, e->crc, e->vlen) : 0;
}

/* Runs on an engine thread: no fs->lock here, ever. */
static void rc_read_done(struct ff_raid_io *io)
{
	struct rentry *e = io->priv;
	struct rcache *c = e->fs->rcache;

	if (io->result == 0)
		rc_verify(e);
	pthread_mutex_lock(&c->lock);
	e->err = e->stale ? -ESTALE : io->result;
	e->state = e->err < 0 ? RC_ERROR : RC_READY;
	e->refs--;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

/* Expected checksums of a stripe, and the bytes of each chunk they cover;
 * fs->lock must not be held by the caller. */
int ffs_stripe_crcs(struct ffs *fs, uint64_t p, uint32_t *crc, uint32_t *vlen)
{
	uint32_t ino, fstripe;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_csum_get(fs, p, &ino, &fstripe, crc);
	pthread_mutex_unlock(&fs->lock);
	*vlen = ffs_csum_vlen(fs, ino, fstripe);
	return rc;
}

static struct rentry *rc_find(struct rcache *c, uint64_t p)
{
	struct rentry *e;

	for (e = c->hash[rhash(c, p)]; e; e = e->hnext)
		if (e->pstripe == p)
			break;
	return e;
}

/*
 * The least recently used entry that no reader holds and no read is
 * filling; NULL when every one is busy.  For a read-ahead, not one read
 * ahead and not read yet either (NULL then: that read-ahead is skipped).
 * A sequential reader asks for its read-ahead before it takes the stripe
 * it reads, so that stripe is newer in the LRU than the ones read ahead
 * for it; with the cache at its floor (8 entries) and 4 stripes ahead,
 * each read-ahead evicted the next stripe to be read, and a reader read
 * 1.75-1.8 x its file from the members (72 stripe reads for 40, a unit
 * test; an offline grow 5.47 GB to move 3.19).
 */
static struct rentry *rc_victim(struct rcache *c, bool for_ahead)
{
	for (struct ff_lru_node *n = ff_lru_oldest(&c->lru); n; n = ff_lru_newer(&c->lru, n)) {
		struct rentry *v = FF_LRU_ENTRY(n, struct rentry, lru);

		if (!v->refs && v->state != RC_LOADING && !(for_ahead && v->ahead))
			return v;
	}
	return NULL;
}

/* Takes a reference on e, waits until it is loaded and drops c->lock. */
static struct rentry *rc_hold(struct rcache *c, struct rentry *e)
{
	e->refs++;
	while (e->state == RC_LOADING)
		wait_noted(&c->cond, &c->lock, "a stripe read");
	pthread_mutex_unlock(&c->lock);
	return e;
}

/*
 * Find or start loading stripe p.  Waiting, returns the entry READY or ERROR
 * and referenced.  Why waiting for a free entry ends: an entry is busy while
 * it loads (the engine completes every read) or while a reader holds it, and
 * a reader that holds entries never waits for another one (RC_WAIT_LOAD), so
 * every holder lets go after a copy.
 */
static struct rentry *rc_get(struct ffs *fs, uint64_t p, int mode, const uint32_t *crc,
			     uint32_t vlen)
{
	bool wait = mode != RC_AHEAD;
	struct rcache *c = fs->rcache;
	struct rentry *e, *v = NULL;

	pthread_mutex_lock(&c->lock);
	/* find p, or a free entry to load it into; after a wait look for p
	 * again: another reader may have started loading it meanwhile, and
	 * a stripe must never sit in two entries (an invalidation would drop
	 * only one) */
	while (!(e = rc_find(c, p))) {
		v = rc_victim(c, !wait);
		if (v)
			break;
		if (mode != RC_WAIT) { /* every entry busy */
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		wait_noted(&c->cond, &c->lock, "a free read-cache entry");
	}
	if (e) {
		if (!wait) {
			pthread_mutex_unlock(&c->lock);
			return NULL;
		}
		atomic_fetch_add(&fs->stats.rcache_hits, 1);
		e->ahead = false;
	} else {
		e = v;
		rc_unhash(c, e);
		e->pstripe = p;
		e->state = RC_LOADING;
		e->hnext = c->hash[rhash(c, p)];
		c->hash[rhash(c, p)] = e;
		e->refs++; /* the read holds it */
		e->stale = false;
		e->ahead = !wait;
		e->superseded = false;
		e->verify = crc != NULL;
		e->vlen = vlen;
		const struct ffs_geo *geo = ffs_row_geo(fs, p);

		if (crc)
			memcpy(e->crc, crc, geo->g->ndata * sizeof(uint32_t));
		memset(&e->io, 0, sizeof(e->io));
		e->io.op = FF_RAID_READ;
		e->io.space = FF_SPACE_DATA;
		e->io.flags = geo->raid_flags | (ffs_io_background ? FF_RAID_IO_BACKGROUND : 0);
		e->io.off = p * geo->g->stripe_bytes;
		e->io.len = geo->g->stripe_bytes;
		e->io.buf = e->data;
		e->io.done = rc_read_done;
		e->io.priv = e;
		atomic_fetch_add(&fs->stats.stripe_reads, 1);
		if (!wait)
			atomic_fetch_add(&fs->stats.readahead, 1);
		if (ff_raid_submit(fs->raid, &e->io) < 0) {
			e->refs--;
			e->state = RC_ERROR;
			e->err = -EIO;
		}
	}
	ff_lru_touch(&c->lru, &e->lru);
	if (!wait) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	return rc_hold(c, e);
}

bool ffs_rc_present(struct ffs *fs, uint64_t p)
{
	struct rcache *c = fs->rcache;
	bool found;

	pthread_mutex_lock(&c->lock);
	found = rc_find(c, p) != NULL;
	pthread_mutex_unlock(&c->lock);
	return found;
}

/* Stripe p referenced if it is in the cache (READY or ERROR), else NULL. */
static struct rentry *rc_get_cached(struct ffs *fs, uint64_t p)
{
	struct rcache *c = fs->rcache;
	struct rentry *e;

	pthread_mutex_lock(&c->lock);
	e = rc_find(c, p);
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	atomic_fetch_add(&fs->stats.rcache_hits, 1);
	e->ahead = false;
	ff_lru_touch(&c->lru, &e->lru);
	return rc_hold(c, e);
}

void ffs_rc_put(struct ffs *fs, struct rentry *e)
{
	struct rcache *c = fs->rcache;

	pthread_mutex_lock(&c->lock);
	e->refs--;
	if (e->state == RC_ERROR && !e->refs)
		rc_unhash(c, e); /* retry from the array next time */
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void ffs_rcache_invalidate(struct ffs *fs, uint64_t pstripe, uint64_t count)
{
	struct rcache *c = fs->rcache;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	for (uint64_t p = pstripe; p < pstripe + count; p++)
		for (struct rentry *e = c->hash[rhash(c, p)]; e; e = e->hnext) {
			if (e->pstripe != p)
				continue;
			e->superseded = e->superseded || e->refs;
			if (e->state == RC_LOADING)
				e->stale = true; /* what arrives is from before: drop it then */
			else
				rc_unhash(c, e);
			break;
		}
	pthread_mutex_unlock(&c->lock);
}

/*
 * A tail or a patch batch was appended to stripe p: rows were added past
 * its old high-water mark and nothing below it changed.  A copy of p held
 * or still loading stays good for the readers that have it now: each found
 * the stripe in its file's map, and took the checksums it verifies by,
 * before the rows were added (the caller holds fs->lock for the map and
 * checksum change and this call), so it reads only rows those checksums
 * cover, which the append left as they were.  So such a copy is not failed
 * with ESTALE, as ffs_rcache_invalidate does: it leaves the hash, and the
 * next reader, which may want the new rows, loads the stripe afresh.  A
 * reader racing appends used to fail after four invalidated loads in a
 * row (1.8 % of reads of new frames during a capture of small files).
 */
void ffs_rcache_extended(struct ffs *fs, uint64_t p)
{
	struct rcache *c = fs->rcache;
	struct rentry *e;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	e = rc_find(c, p);
	if (e) {
		rc_unlink(c, e); /* its state is its holders' */
		e->superseded = e->superseded || e->refs;
		if (!e->refs)
			e->state = RC_EMPTY;
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * A chunk failed its checksum: rebuild the stripe in the cache entry around
 * the members of the bad chunks (fs/base/repair.c), and write it back whole —
 * parity from the verified stripe, never from the bad chunk still on disk.
 */
static int rc_repair(struct ffs *fs, struct rentry *e)
{
	uint32_t bad = e->bad_chunks;
	int rc;

	atomic_fetch_add(&fs->stats.crc_errors, (uint64_t)__builtin_popcount(bad));
	ff_raid_note_cksum_errors(fs->raid, e->pstripe, bad); /* per member: status shows it */
	rc = ffs_repair_reconstruct(fs, e->pstripe, bad, e->crc, e->vlen, e->data);
	rc_verify(e);
	if (rc < 0 || e->bad_chunks) {
		ff_log(FF_LOG_ERR, "data stripe %llu: chunks fail their checksum even rebuilt from parity",
		       (unsigned long long)e->pstripe);
		return -EIO;
	}
	if (fs->ro)
		return 0; /* served from parity; the repair waits for a read-write mount */
	pthread_mutex_lock(&fs->lock);
	rc = ffs_tail_hold(fs, e->pstripe) ? 0 : -EBUSY; /* a tail stripe takes no more rows */
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)
		return 0; /* a tail is being written to it: served from parity, rewritten next time */
	/* held now, the stripe takes no more rows; rows added since this copy
	 * was read would be lost by writing it back */
	pthread_mutex_lock(&fs->rcache->lock);
	rc = e->superseded ? -ESTALE : 0;
	pthread_mutex_unlock(&fs->rcache->lock);
	if (rc < 0)
		return 0; /* served from parity; the next reader's fresh copy is rewritten */
	rc = ffs_repair_rewrite(fs, e->pstripe, e->data, bad);
	ff_log(FF_LOG_WARN, "data stripe %llu: %d chunk(s) failed their checksum (mask 0x%x), %s",
	       (unsigned long long)e->pstripe, __builtin_popcount(bad), bad,
	       rc == 0 ? "repaired from parity" : "rebuilt but could not be rewritten");
	if (rc == 0)
		atomic_fetch_add(&fs->stats.crc_repaired, (uint64_t)__builtin_popcount(bad));
	return 0;
}

/* Data stripe p in the cache, verified (repaired if a chunk was bad) and
 * referenced: release with ffs_rc_put.  A caller that already holds entries
 * passes RC_WAIT_LOAD and gets -EAGAIN rather than wait for a free one. */
int ffs_stripe_get(struct ffs *fs, uint64_t p, int mode, struct rentry **out)
{
	uint32_t crc[FF_MEMBERS_MAX], vlen;
	struct rentry *e = rc_get_cached(fs, p); /* a hit needs no checksums */
	int rc = 0;

	for (unsigned tries = 0;; tries++) {
		if (!e) {
			rc = ffs_stripe_crcs(fs, p, crc, &vlen);
			if (rc < 0)
				return rc;
			e = rc_get(fs, p, mode, crc, vlen);
			if (!e)
				return -EAGAIN;
		}
		rc = e->state == RC_ERROR ? (e->err ? e->err : -EIO) : 0;
		if (rc != -ESTALE || tries == 3)
			break;
		ffs_rc_put(fs, e); /* loaded across an invalidation: read it again */
		e = NULL;
	}
	if (rc == 0 && e->bad_chunks) {
		struct rcache *c = fs->rcache;

		/* only one reader repairs; the others wait for it */
		pthread_mutex_lock(&c->lock);
		while (e->state == RC_LOADING)
			wait_noted(&c->cond, &c->lock, "a stripe repair by another reader");
		e->state = RC_LOADING;
		pthread_mutex_unlock(&c->lock);
		rc = e->bad_chunks ? rc_repair(fs, e) : 0;
		pthread_mutex_lock(&c->lock);
		e->state = rc < 0 ? RC_ERROR : RC_READY;
		e->err = rc;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
	}
	if (rc < 0) {
		ffs_rc_put(fs, e);
		return rc;
	}
	*out = e;
	return 0;
}

/* Copy bytes [off, off+len) of data stripe p out, through the cache. */
int ffs_read_stripe_bytes(struct ffs *fs, uint64_t p, uint64_t off, size_t len, void *dst)
{
	struct rentry *e;
	int rc = ffs_stripe_get(fs, p, RC_WAIT, &e);

	if (rc == 0) {
		memcpy(dst, e->data + off, len);
		ffs_rc_put(fs, e);
	}
	return rc;
}

void ffs_rcache_free(struct ffs *fs)
{
	fs->stripes_freed = NULL;
	if (fs->rcache) {
		for (unsigned i = 0; i < fs->rcache->n; i++)
			ff_free_pool_buf(fs->rcache->entries[i].data, fs->stripe_bytes);
		free(fs->rcache->entries);
		free(fs->rcache->hash);
		free(fs->rcache);
		fs->rcache = NULL;
	}
}

/*
 * Keep the next readahead_stripes stripes of a sequential reader in flight:
 * reading stripe k asks for those up to k+R it has not asked for yet, so
 * each stripe is requested once and the array always has work queued.
 *
 * Near the end of the file the window runs on into the data stripes that
 * follow its last one: the allocator lays the frames of a sequence one
 * after another, so those are the next frame's first stripes, and playback
 * crosses from file to file without a gap.  Only stripes in use (with an
 * owner in the checksum table) are read; they are checked against their
 * own checksums, whoever owns them.
 */
void ffs_read_ahead(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t size)
{
	uint64_t last, ps[16], from, to, beyond = 0;
	unsigned n = 0, r = FF_MIN(16u, fs->opts.readahead_stripes);

	if (fs->orows) { /* a grown volume: the file's own stripe size */
		pthread_mutex_lock(&fs->lock);
		last = size ? (size - 1) / ffs_file_geo(fs, fi)->g->stripe_bytes : 0;
		pthread_mutex_unlock(&fs->lock);
	} else {
		last = size ? (size - 1) / fs->stripe_bytes : 0;
	}

	pthread_mutex_lock(&fi->dlock);
	from = FF_MAX(k + 1, fi->ra_next);
	to = k + r;
	if (from <= to)
		fi->ra_next = to + 1;
	pthread_mutex_unlock(&fi->dlock);
	if (from > to)
		return;
	pthread_mutex_lock(&fs->lock);
	for (uint64_t s = from; s <= to && n < 16; s++) {
		uint64_t p, run;
		uint32_t flags;

		if (s > last) { /* past the end: the stripes after the file's last one */
			if (!beyond && ffs_extent_lookup(fs, fi, last, &p, &run, &flags) == 0)
				beyond = p + 1;
			/* a tail sits in a shared stripe: the next frame follows the
			 * stripe before it (its tail stripe is opened there, or later) */
			if (beyond && (flags & FFS_X_TAIL) && last > 0 &&
			    ffs_extent_lookup(fs, fi, last - 1, &p, &run, &flags) == 0 &&
			    !(flags & FFS_X_TAIL))
				beyond = p + 1;
			if (!beyond || beyond >= ff_le64(fs->sb->nstripes))
				break;
			ps[n++] = beyond++;
			continue;
		}
		if (ffs_extent_lookup(fs, fi, s, &p, &run, &flags) == 0 && !(flags & FFS_X_UNWRITTEN))
			ps[n++] = p;
	}
	pthread_mutex_unlock(&fs->lock);
	for (unsigned i = 0; i < n; i++) {
		uint32_t crc[FF_MEMBERS_MAX], ino, fstripe;
		int rc;

		pthread_mutex_lock(&fs->lock);
		rc = ffs_csum_get(fs, ps[i], &ino, &fstripe, crc);
		pthread_mutex_unlock(&fs->lock);
		/* a stripe reused a moment later is dropped from the cache when
		 * its new contents are mapped (stripe_done) */
		if (rc == 0 && ino && !(fstripe & FFS_CSUM_UNWRITTEN) && ffs_stripe_in_use(fs, ps[i]))
			rc_get(fs, ps[i], RC_AHEAD, crc, ffs_csum_vlen(fs, ino, fstripe));
	}
}
