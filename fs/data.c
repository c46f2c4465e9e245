/* SPDX-License-Identifier: MIT */
/*
 * File data: stripe assembly on the way in, a whole-stripe cache on the way
 * out.
 *
 * Writes.  FUSE hands us at most 1 MiB at a time, possibly out of order and
 * from several threads.  Each file stripe being written gets a stripe-sized
 * buffer (from a pool fixed at mount) that records which byte ranges it
 * holds.  The write that completes a buffer sends it to the array as one
 * full-stripe write, to a stripe that holds no live data: the file's
 * reservation, or — for a preallocated, never-written stripe — the stripe
 * itself.  Only after that write completes is the new mapping (and the
 * chunk checksums) put into the running transaction, and the stripe it
 * replaces freed once that transaction commits.  A buffer that never fills
 * (the last stripe of a frame) is completed on flush/fsync/close/unmount
 * from the old stripe or zeros, and written the same way: no stripe that
 * holds live data is ever partially overwritten.
 *
 * Reads.  Stripes are read whole, from every member at once, into a cache
 * of stripe buffers; each chunk's crc32c is checked against the checksum
 * table, and a chunk that fails is read again around its member
 * (reconstructed from parity) and rewritten.  A sequential reader gets the
 * next stripes read ahead.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <string.h>
#include <time.h>

#include "fs/fs_i.h"

#define WB_IVALS 16
#define WB_PER_INODE 64 /* bounds the linear wb_find, not the pool's use */
#define RESERVE_DEFAULT 64

struct wbuf {
	struct wbuf *next;          /* the owner's list, or the free list */
	struct wbuf *pprev, *pnext; /* the pool's partial list while partial */
	uint64_t fstripe;
	uint8_t *data;
	unsigned nival;
	struct { uint64_t a, b; } ival[WB_IVALS]; /* filled byte ranges, sorted, disjoint */
	bool writing;
	uint64_t born_ns;
	struct finode *fi;          /* owner, from attach until the buffer is free again */
	/* while writing */
	struct ffs *fs;
	uint64_t pstripe;
	bool in_place;
	uint32_t crc[FF_MEMBERS_MAX];
	struct ff_raid_io io;
	struct wbuf *done_next;
};

/*
 * The write-buffer pool, and why every writer gets a buffer.
 *
 * A buffer is FREE (p->free), HELD (taken by a writer that is about to
 * attach it to a file, or to give it back), PARTIAL (on its file's list and
 * on p->partial, oldest first) or WRITING (submitted, still on its file's
 * list so that reads see it; p->nwriting counts them).
 *
 * Rule: nobody waits for a buffer while holding a dlock or fs->lock.  Then
 *  (a) a WRITING buffer comes back FREE in bounded time: the engine
 *      completes every write (member deadlines fail a member that stops
 *      answering), and the completion thread needs only fs->lock and the
 *      owner's dlock, which no waiter holds;
 *  (b) a PARTIAL buffer can be made WRITING by anyone: wpool_evict takes
 *      its owner's dlock (holding no other lock, so no cycle), fills the
 *      gaps from the stripe it replaces or zeros and submits it;
 *  (c) a HELD buffer becomes PARTIAL or FREE without waiting on anything.
 * A waiter queues by ticket (FIFO, so no writer starves) and, at the head of
 * the queue, takes a FREE buffer, or else sleeps on p->cond while a write is
 * in flight (a) or a buffer is held (c), or else — every buffer PARTIAL —
 * evicts the oldest (b).  Each wake-up follows a state change that signals
 * p->cond (a buffer freed, attached or evicted), so the head of the queue
 * is served after at most p->total evictions and completions.
 *
 * Waits are counted by reason in fs->stats (wbuf_wait_pool: the pool was
 * empty; wbuf_wait_inode: the file had WB_PER_INODE buffers; wbuf_wait_rewrite:
 * its stripe was still being written), evictions in wbuf_evictions.
 */
struct wpool {
	pthread_mutex_t lock;       /* a leaf lock: order dlock, fs->lock, p->lock */
	pthread_cond_t cond;
	struct wbuf *free;
	struct wbuf *partial_head, *partial_tail;
	unsigned nwriting, total;
	uint64_t next_ticket, serving;
	struct wbuf *all;
	/* completed stripe writes, mapped by the completion thread */
	pthread_mutex_t dq_lock;
	pthread_cond_t dq_cond;
	struct wbuf *dq_head, *dq_tail;
	pthread_t done_thread;
	bool done_started;
	bool stop;
};
enum { RC_EMPTY, RC_LOADING, RC_READY, RC_ERROR };

struct rentry {
	uint64_t pstripe;
	uint8_t *data;
	int state;
	int err;
	uint32_t bad_chunks;       /* chunks that failed their checksum */
	unsigned refs;
	struct rentry *hnext;
	struct rentry *lru_prev, *lru_next;
	struct ff_raid_io io;
	struct ffs *fs;
	uint32_t crc[FF_MEMBERS_MAX];
	bool verify;
	bool stale;                /* invalidated while loading: discard on arrival */
};

struct rcache {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct rentry *entries;
	unsigned n;
	struct rentry **hash;
	unsigned hash_size;
	struct rentry lru; /* lru.lru_next: least recently used */
};

/* ---- the write-buffer pool ------------------------------------------------ */

/* A condition wait that names what it waits for in the request's slot (watch.c). */
static void wait_noted(pthread_cond_t *cond, pthread_mutex_t *lock, const char *what)
{
	const char *prev = ffs_watch_wait_begin(what);

	pthread_cond_wait(cond, lock);
	ffs_watch_wait_end(prev);
}

static int wpool_init(struct ffs *fs)
{
	struct wpool *p = calloc(1, sizeof(*p));
	unsigned n = (unsigned)FF_MAX(8ull, fs->opts.write_buffer_bytes / fs->stripe_bytes);

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->all = calloc(n, sizeof(*p->all));
	if (!p->all)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct wbuf *wb = &p->all[i];

		wb->data = ff_alloc_aligned(fs->stripe_bytes);
		if (!wb->data)
			return -ENOMEM;
		memset(wb->data, 0, fs->stripe_bytes); /* fault it in now, not on the data path */
		wb->next = p->free;
		p->free = wb;
	}
	p->total = n;
	fs->wpool = p;
	return 0;
}

static void partial_unlink(struct wpool *p, struct wbuf *wb)
{
	if (wb->pprev)
		wb->pprev->pnext = wb->pnext;
	else
		p->partial_head = wb->pnext;
	if (wb->pnext)
		wb->pnext->pprev = wb->pprev;
	else
		p->partial_tail = wb->pprev;
	wb->pprev = wb->pnext = NULL;
}

static void wpool_evict(struct ffs *fs);

/*
 * Take a buffer (HELD), waiting as long as it takes; see the pool's
 * comment for why the wait ends.  No lock may be held by the caller.
 */
static struct wbuf *wpool_take(struct ffs *fs)
{
	struct wpool *p = fs->wpool;
	struct wbuf *wb;
	uint64_t ticket;
	bool waited = false;

	pthread_mutex_lock(&p->lock);
	ticket = p->next_ticket++;
	while (ticket != p->serving || !p->free) {
		if (ticket == p->serving && !p->nwriting && p->partial_head) {
			pthread_mutex_unlock(&p->lock);
			wpool_evict(fs);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (!waited)
			atomic_fetch_add(&fs->stats.wbuf_wait_pool, 1);
		waited = true;
		wait_noted(&p->cond, &p->lock, "a free write buffer");
	}
	wb = p->free;
	p->free = wb->next;
	p->serving++;
	pthread_cond_broadcast(&p->cond); /* the next ticket may be served too */
	pthread_mutex_unlock(&p->lock);
	return wb;
}

/* A HELD or WRITING buffer goes back to the free list. */
static void wpool_put(struct ffs *fs, struct wbuf *wb)
{
	struct wpool *p = fs->wpool;

	pthread_mutex_lock(&p->lock);
	if (wb->writing)
		p->nwriting--;
	wb->writing = false;
	wb->fi = NULL;
	wb->next = p->free;
	p->free = wb;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* HELD -> PARTIAL, owned by fi (dlock held). */
static void wpool_attach(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	struct wpool *p = fs->wpool;

	wb->fi = fi;
	wb->writing = false;
	wb->next = fi->wbufs;
	fi->wbufs = wb;
	fi->nwbufs++;
	pthread_mutex_lock(&p->lock);
	wb->pnext = NULL;
	wb->pprev = p->partial_tail;
	if (p->partial_tail)
		p->partial_tail->pnext = wb;
	else
		p->partial_head = wb;
	p->partial_tail = wb;
	pthread_cond_broadcast(&p->cond); /* a waiter may now evict it */
	pthread_mutex_unlock(&p->lock);
}

/* PARTIAL -> WRITING (dlock held). */
static void wpool_mark_writing(struct ffs *fs, struct wbuf *wb)
{
	struct wpool *p = fs->wpool;

	pthread_mutex_lock(&p->lock);
	partial_unlink(p, wb);
	wb->writing = true;
	p->nwriting++;
	pthread_mutex_unlock(&p->lock);
}

/* PARTIAL -> HELD (dlock held): off the partial list, still on fi's list. */
static void wpool_detach_partial(struct ffs *fs, struct wbuf *wb)
{
	struct wpool *p = fs->wpool;

	pthread_mutex_lock(&p->lock);
	partial_unlink(p, wb);
	pthread_mutex_unlock(&p->lock);
}

/* ---- filled ranges ------------------------------------------------------- */

static void ival_add(struct wbuf *wb, uint64_t a, uint64_t b)
{
	unsigned i = 0, j;

	while (i < wb->nival && wb->ival[i].b < a)
		i++;
	j = i;
	while (j < wb->nival && wb->ival[j].a <= b) {
		a = FF_MIN(a, wb->ival[j].a);
		b = FF_MAX(b, wb->ival[j].b);
		j++;
	}
	/* ranges i..j-1 merge into [a, b) */
	if (j == i) {
		FF_ASSERT(wb->nival < WB_IVALS);
		memmove(&wb->ival[i + 1], &wb->ival[i], (wb->nival - i) * sizeof(wb->ival[0]));
		wb->nival++;
	} else if (j > i + 1) {
		memmove(&wb->ival[i + 1], &wb->ival[j], (wb->nival - j) * sizeof(wb->ival[0]));
		wb->nival -= j - i - 1;
	}
	wb->ival[i].a = a;
	wb->ival[i].b = b;
}

static bool ival_covers(const struct wbuf *wb, uint64_t a, uint64_t b)
{
	for (unsigned i = 0; i < wb->nival; i++)
		if (wb->ival[i].a <= a && b <= wb->ival[i].b)
			return true;
	return false;
}

static struct wbuf *wb_find(struct finode *fi, uint64_t fstripe)
{
	for (struct wbuf *wb = fi->wbufs; wb; wb = wb->next)
		if (wb->fstripe == fstripe)
			return wb;
	return NULL;
}

static void wb_unlink(struct finode *fi, struct wbuf *wb)
{
	struct wbuf **pp = &fi->wbufs;

	while (*pp != wb)
		pp = &(*pp)->next;
	*pp = wb->next;
	fi->nwbufs--;
}

/* ---- the stripe read cache ------------------------------------------------- */

static unsigned rhash(const struct rcache *c, uint64_t p)
{
	return (unsigned)((p * 0x9E3779B97F4A7C15ull) >> 32) & (c->hash_size - 1);
}

static void rc_lru_unlink(struct rentry *e)
{
	if (e->lru_prev) {
		e->lru_prev->lru_next = e->lru_next;
		e->lru_next->lru_prev = e->lru_prev;
		e->lru_prev = e->lru_next = NULL;
	}
}

static void rc_lru_push(struct rcache *c, struct rentry *e)
{
	e->lru_prev = c->lru.lru_prev;
	e->lru_next = &c->lru;
	c->lru.lru_prev->lru_next = e;
	c->lru.lru_prev = e;
}

static void rc_unhash(struct rcache *c, struct rentry *e)
{
	struct rentry **pp = &c->hash[rhash(c, e->pstripe)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->state = RC_EMPTY;
}

static int rcache_init(struct ffs *fs)
{
	struct rcache *c = calloc(1, sizeof(*c));
	unsigned n = (unsigned)FF_MAX(8ull, fs->opts.read_cache_bytes / fs->stripe_bytes);

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	c->lru.lru_next = c->lru.lru_prev = &c->lru;
	c->n = n;
	c->hash_size = 1;
	while (c->hash_size < 2 * n)
		c->hash_size <<= 1;
	c->hash = calloc(c->hash_size, sizeof(*c->hash));
	c->entries = calloc(n, sizeof(*c->entries));
	if (!c->hash || !c->entries)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		c->entries[i].data = ff_alloc_aligned(fs->stripe_bytes);
		if (!c->entries[i].data)
			return -ENOMEM;
		memset(c->entries[i].data, 0, fs->stripe_bytes); /* faulted in at mount */
		c->entries[i].fs = fs;
		rc_lru_push(c, &c->entries[i]);
	}
	fs->rcache = c;
	fs->stripes_freed = ffs_rcache_invalidate;
	return 0;
}

static void rc_verify(struct rentry *e)
{
	struct ffs *fs = e->fs;
	uint32_t C = fs->g->chunk_bytes;

	e->bad_chunks = 0;
	if (!e->verify)
		return;
	for (uint32_t i = 0; i < fs->g->ndata; i++)
		if (ff_crc32c(0, e->data + (size_t)i * C, C) != e->crc[i])
			e->bad_chunks |= 1u << i;
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

/* Expected checksums of a stripe; fs->lock must not be held by the caller. */
static int stripe_crcs(struct ffs *fs, uint64_t p, uint32_t *crc)
{
	uint32_t ino, fstripe;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_csum_get(fs, p, &ino, &fstripe, crc);
	pthread_mutex_unlock(&fs->lock);
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

/* Takes a reference on e, waits until it is loaded and drops c->lock. */
static struct rentry *rc_hold(struct rcache *c, struct rentry *e)
{
	e->refs++;
	while (e->state == RC_LOADING)
		wait_noted(&c->cond, &c->lock, "a stripe read");
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* How rc_get waits. */
enum {
	RC_AHEAD,      /* start a read-ahead, never wait: NULL */
	RC_WAIT,       /* wait for a free entry and for the load */
	RC_WAIT_LOAD,  /* wait for the load, not for a free entry (NULL if none) */
};

/*
 * Find or start loading stripe p.  Waiting, returns the entry READY or ERROR
 * and referenced.  Why waiting for a free entry ends: an entry is busy while
 * it loads (the engine completes every read) or while a reader holds it, and
 * a reader that holds entries never waits for another one (RC_WAIT_LOAD), so
 * every holder lets go after a copy.
 */
static struct rentry *rc_get(struct ffs *fs, uint64_t p, int mode, const uint32_t *crc)
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
		for (v = c->lru.lru_next; v != &c->lru && (v->refs || v->state == RC_LOADING);)
			v = v->lru_next;
		if (v != &c->lru)
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
	} else {
		e = v;
		rc_unhash(c, e);
		e->pstripe = p;
		e->state = RC_LOADING;
		e->hnext = c->hash[rhash(c, p)];
		c->hash[rhash(c, p)] = e;
		e->refs++; /* the read holds it */
		e->stale = false;
		e->verify = crc != NULL;
		if (crc)
			memcpy(e->crc, crc, fs->g->ndata * sizeof(uint32_t));
		memset(&e->io, 0, sizeof(e->io));
		e->io.op = FF_RAID_READ;
		e->io.space = FF_SPACE_DATA;
		e->io.off = p * fs->stripe_bytes;
		e->io.len = fs->stripe_bytes;
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
	rc_lru_unlink(e);
	rc_lru_push(c, e);
	if (!wait) {
		pthread_mutex_unlock(&c->lock);
		return NULL;
	}
	return rc_hold(c, e);
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
	rc_lru_unlink(e);
	rc_lru_push(c, e);
	return rc_hold(c, e);
}

static void rc_put(struct ffs *fs, struct rentry *e)
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
			if (e->state == RC_LOADING)
				e->stale = true; /* what arrives is from before: drop it then */
			else
				rc_unhash(c, e);
			break;
		}
	pthread_mutex_unlock(&c->lock);
}

/*
 * A chunk failed its checksum: rebuild the stripe in the cache entry around
 * the members of the bad chunks (fs/repair.c), and write it back whole —
 * parity from the verified stripe, never from the bad chunk still on disk.
 */
static int rc_repair(struct ffs *fs, struct rentry *e)
{
	uint32_t bad = e->bad_chunks;
	int rc;

	atomic_fetch_add(&fs->stats.crc_errors, (uint64_t)__builtin_popcount(bad));
	rc = ffs_repair_reconstruct(fs, e->pstripe, bad, e->crc, e->data);
	rc_verify(e);
	if (rc < 0 || e->bad_chunks) {
		ff_log(FF_LOG_ERR, "data stripe %llu: chunks fail their checksum even rebuilt from parity",
		       (unsigned long long)e->pstripe);
		return -EIO;
	}
	if (fs->ro)
		return 0; /* served from parity; the repair waits for a read-write mount */
	rc = ffs_repair_rewrite(fs, e->pstripe, e->data, bad);
	ff_log(FF_LOG_WARN, "data stripe %llu: %d chunk(s) failed their checksum (mask 0x%x), %s",
	       (unsigned long long)e->pstripe, __builtin_popcount(bad), bad,
	       rc == 0 ? "repaired from parity" : "rebuilt but could not be rewritten");
	if (rc == 0)
		atomic_fetch_add(&fs->stats.crc_repaired, (uint64_t)__builtin_popcount(bad));
	return 0;
}

/* Data stripe p in the cache, verified (repaired if a chunk was bad) and
 * referenced: release with rc_put.  A caller that already holds entries
 * passes RC_WAIT_LOAD and gets -EAGAIN rather than wait for a free one. */
static int stripe_get(struct ffs *fs, uint64_t p, int mode, struct rentry **out)
{
	uint32_t crc[FF_MEMBERS_MAX];
	struct rentry *e = rc_get_cached(fs, p); /* a hit needs no checksums */
	int rc = 0;

	for (unsigned tries = 0;; tries++) {
		if (!e) {
			rc = stripe_crcs(fs, p, crc);
			if (rc < 0)
				return rc;
			e = rc_get(fs, p, mode, crc);
			if (!e)
				return -EAGAIN;
		}
		rc = e->state == RC_ERROR ? (e->err ? e->err : -EIO) : 0;
		if (rc != -ESTALE || tries == 3)
			break;
		rc_put(fs, e); /* loaded across an invalidation: read it again */
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
		rc_put(fs, e);
		return rc;
	}
	*out = e;
	return 0;
}

/* Copy bytes [off, off+len) of data stripe p out, through the cache. */
static int read_stripe_bytes(struct ffs *fs, uint64_t p, uint64_t off, size_t len, void *dst)
{
	struct rentry *e;
	int rc = stripe_get(fs, p, RC_WAIT, &e);

	if (rc == 0) {
		memcpy(dst, e->data + off, len);
		rc_put(fs, e);
	}
	return rc;
}

/* ---- allocation of a stripe for a buffer ------------------------------------ */

/* How many stripes to reserve when a file needs more: what the previous
 * file of its directory took (frames of a sequence are alike). */
static uint64_t reserve_want(struct ffs *fs, struct finode *fi, uint64_t *hint)
{
	struct finode *dir;
	uint64_t want = RESERVE_DEFAULT;

	*hint = fi->alloc_hint;
	if (ffs_iget(fs, ff_le64(fi->d.parent), &dir) == 0) {
		if (dir->last_file_stripes)
			want = dir->last_file_stripes;
		if (!*hint)
			*hint = dir->alloc_hint;
		ffs_iput(fs, dir);
	}
	return want;
}

/*
 * Reserve stripes for a file (fs->lock held).  When the only free stripes
 * are those the running transaction freed, commit first: they come back
 * once it is durable.  The writer that needs the space commits, not the
 * allocator, which sits below the journal (the journal calls it when a
 * commit frees stripes).
 */
static int reserve_stripes(struct ffs *fs, uint64_t hint, uint64_t want, uint64_t *first,
			   uint64_t *got)
{
	if (!ffs_alloc_free_stripe_count(fs) && fs->npending) {
		int rc = ffs_journal_commit(fs);

		if (rc < 0)
			return rc;
	}
	return ffs_reserve_stripes(fs, hint, want, first, got);
}

/* Pick the stripe this buffer goes to: in place when the file stripe is
 * preallocated and unwritten, else the next reserved one.  fs->lock held. */
static int pick_stripe(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *p,
		       bool *in_place)
{
	uint64_t run, first, got, hint;
	uint32_t flags;
	int rc = ffs_extent_lookup(fs, fi, fstripe, p, &run, &flags);

	*in_place = rc == 0 && (flags & FFS_X_UNWRITTEN);
	if (*in_place)
		return 0;
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!fi->reserve_count) {
		uint64_t want = reserve_want(fs, fi, &hint);

		rc = reserve_stripes(fs, hint, want, &first, &got);
		if (rc < 0)
			return rc;
		fi->reserve_first = first;
		fi->reserve_count = got;
	}
	*p = fi->reserve_first++;
	fi->reserve_count--;
	return 0;
}

static void release_reservation(struct ffs *fs, struct finode *fi)
{
	if (fi->reserve_count)
		ffs_unreserve_stripes(fs, fi->reserve_first, fi->reserve_count);
	fi->reserve_count = 0;
}

/*
 * Send a complete buffer to a free stripe, asynchronously.  The writer's
 * FUSE request is answered at once; the completion thread maps the stripe
 * (stripe_done).  Until then the buffer stays on the inode's list, marked
 * writing, so reads are served from it and rewrites of that stripe wait.
 * Called with the buffer marked writing and no locks held.
 */
static void stripe_write_done(struct ff_raid_io *io);

static int stripe_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	const struct ff_geom *g = fs->g;
	int rc;

	pthread_mutex_lock(&fs->lock);
	fi->refs++; /* held until the completion thread is done with it */
	pthread_mutex_unlock(&fs->lock);
	for (uint32_t i = 0; i < g->ndata; i++)
		wb->crc[i] = ff_crc32c(0, wb->data + (size_t)i * g->chunk_bytes, g->chunk_bytes);
	wb->fs = fs;
	wb->fi = fi;
	memset(&wb->io, 0, sizeof(wb->io));
	wb->io.op = FF_RAID_WRITE;
	wb->io.space = FF_SPACE_DATA;
	wb->io.flags = FF_RAID_IO_NO_INTENT; /* a free (or never written) stripe: nothing to tear */
	wb->io.off = wb->pstripe * fs->stripe_bytes;
	wb->io.len = fs->stripe_bytes;
	wb->io.buf = wb->data;
	wb->io.done = stripe_write_done;
	wb->io.priv = wb;
	atomic_fetch_add(&fs->stats.stripe_writes, 1);
	rc = ff_raid_submit(fs->raid, &wb->io);
	if (rc < 0) {
		wb->io.result = rc;
		stripe_write_done(&wb->io);
	}
	return 0;
}

/* Engine thread: hand the buffer to the completion thread (never take
 * fs->lock on an engine thread). */
static void stripe_write_done(struct ff_raid_io *io)
{
	struct wbuf *wb = io->priv;
	struct wpool *p = wb->fs->wpool;

	pthread_mutex_lock(&p->dq_lock);
	wb->done_next = NULL;
	if (p->dq_tail)
		p->dq_tail->done_next = wb;
	else
		p->dq_head = wb;
	p->dq_tail = wb;
	pthread_cond_signal(&p->dq_cond);
	pthread_mutex_unlock(&p->dq_lock);
}

/* Completion thread: the stripe is on the members; map it, then let the
 * buffer go. */
static void stripe_done(struct ffs *fs, struct wbuf *wb)
{
	struct finode *fi = wb->fi;
	uint64_t p = wb->pstripe;
	int rc = wb->io.result;

	pthread_mutex_lock(&fs->lock);
	if (rc == 0 && !wb->in_place)
		rc = ffs_commit_stripes(fs, p, 1);
	if (rc == 0)
		rc = ffs_csum_set(fs, p, (uint32_t)fi->ino, (uint32_t)wb->fstripe, wb->crc);
	if (rc == 0)
		rc = ffs_extent_map(fs, fi, wb->fstripe, p, 1, 0);
	if (rc < 0 && !wb->in_place)
		ffs_unreserve_stripes(fs, p, 1);
	if (rc == 0) {
		fi->alloc_hint = p + 1;
		ffs_rcache_invalidate(fs, p, 1);
	}
	pthread_mutex_unlock(&fs->lock);
	ff_log(FF_LOG_DEBUG, "inode %llu: file stripe %llu -> data stripe %llu%s",
	       (unsigned long long)fi->ino, (unsigned long long)wb->fstripe, (unsigned long long)p,
	       wb->in_place ? " (in place)" : "");
	if (rc < 0)
		ff_log(FF_LOG_ERR, "inode %llu: stripe %llu could not be written: %s",
		       (unsigned long long)fi->ino, (unsigned long long)wb->fstripe, strerror(-rc));
	pthread_mutex_lock(&fi->dlock);
	wb_unlink(fi, wb);
	wpool_put(fs, wb);
	if (rc < 0 && !fi->write_error)
		fi->write_error = rc;
	pthread_cond_broadcast(&fi->dcond);
	pthread_mutex_unlock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	ffs_iput(fs, fi);
	if (ffs_journal_tx_full(fs) && (rc = ffs_journal_commit(fs)) < 0)
		ff_log(FF_LOG_ERR, "commit failed: %s", strerror(-rc));
	pthread_mutex_unlock(&fs->lock);
}

static void *done_main(void *arg)
{
	struct ffs *fs = arg;
	struct wpool *p = fs->wpool;

	pthread_mutex_lock(&p->dq_lock);
	for (;;) {
		struct wbuf *wb = p->dq_head;

		if (!wb) {
			if (p->stop)
				break;
			pthread_cond_wait(&p->dq_cond, &p->dq_lock);
			continue;
		}
		p->dq_head = wb->done_next;
		if (!p->dq_head)
			p->dq_tail = NULL;
		pthread_mutex_unlock(&p->dq_lock);
		stripe_done(fs, wb);
		pthread_mutex_lock(&p->dq_lock);
	}
	pthread_mutex_unlock(&p->dq_lock);
	return NULL;
}

/* Fill the gaps of a partial buffer from what the file holds there now
 * (its stripe, or zeros for a hole or a preallocated stripe). */
static int wb_fill(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	uint64_t p, run, prev = 0;
	uint32_t flags;
	bool mapped;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_extent_lookup(fs, fi, wb->fstripe, &p, &run, &flags);
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	mapped = rc == 0 && !(flags & FFS_X_UNWRITTEN);
	rc = 0;
	for (unsigned i = 0; i <= wb->nival; i++) {
		uint64_t a = prev, b = i < wb->nival ? wb->ival[i].a : fs->stripe_bytes;

		if (b > a) {
			if (mapped)
				rc = read_stripe_bytes(fs, p, a, b - a, wb->data + a);
			else
				memset(wb->data + a, 0, b - a);
			if (rc < 0)
				return rc;
		}
		if (i < wb->nival)
			prev = wb->ival[i].b;
	}
	wb->nival = 1;
	wb->ival[0].a = 0;
	wb->ival[0].b = fs->stripe_bytes;
	atomic_fetch_add(&fs->stats.stripe_fills, 1);
	return 0;
}

/* Let a partial buffer go without writing it: its reserved stripe returns
 * to the allocator; err (if any) waits for the next fsync or close.  dlock
 * held. */
static void wb_drop(struct ffs *fs, struct finode *fi, struct wbuf *wb, int err)
{
	wpool_detach_partial(fs, wb);
	wb_unlink(fi, wb);
	if (!wb->in_place) {
		pthread_mutex_lock(&fs->lock);
		ffs_unreserve_stripes(fs, wb->pstripe, 1);
		pthread_mutex_unlock(&fs->lock);
	}
	wpool_put(fs, wb);
	if (err && !fi->write_error)
		fi->write_error = err;
	pthread_cond_broadcast(&fi->dcond);
}

/* Write a partial buffer out (its stripe was reserved when it was made), or
 * drop it with an error kept for the next fsync or close.  Called with dlock
 * held; drops it while handing the buffer over. */
static int wb_writeout(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	int rc = 0;

	FF_ASSERT(!wb->writing && wb->fi == fi);
	if (!ival_covers(wb, 0, fs->stripe_bytes))
		rc = wb_fill(fs, fi, wb);
	if (rc < 0) {
		wb_drop(fs, fi, wb, rc);
		return rc;
	}
	wpool_mark_writing(fs, wb);
	pthread_mutex_unlock(&fi->dlock);
	rc = stripe_submit(fs, fi, wb);
	pthread_mutex_lock(&fi->dlock);
	return rc;
}

/* The oldest buffer of fi that is not being written, or NULL (dlock held). */
static struct wbuf *wb_oldest_partial(struct finode *fi)
{
	struct wbuf *old = NULL;

	for (struct wbuf *w = fi->wbufs; w; w = w->next)
		if (!w->writing && (!old || w->born_ns < old->born_ns))
			old = w;
	return old;
}

/* Whether any buffer of fi is being written (dlock held). */
static bool wb_writing(const struct finode *fi)
{
	for (const struct wbuf *w = fi->wbufs; w; w = w->next)
		if (w->writing)
			return true;
	return false;
}

/*
 * Write out the oldest partial buffer of the pool, whoever owns it (b in the
 * pool's comment).  No lock held on entry: the owner's dlock is taken with
 * nothing else held.  The owner is pinned under fs->lock while its buffer
 * is still on the partial list, so it cannot be freed meanwhile; if its
 * buffers were all sent out in between, that is progress too.
 */
static void wpool_evict(struct ffs *fs)
{
	struct wpool *p = fs->wpool;
	struct finode *fi = NULL;
	struct wbuf *wb;

	pthread_mutex_lock(&fs->lock);
	pthread_mutex_lock(&p->lock);
	if (p->partial_head) {
		fi = p->partial_head->fi;
		fi->refs++;
	}
	pthread_mutex_unlock(&p->lock);
	pthread_mutex_unlock(&fs->lock);
	if (!fi)
		return;
	pthread_mutex_lock(&fi->dlock);
	wb = wb_oldest_partial(fi);
	if (wb) {
		atomic_fetch_add(&fs->stats.wbuf_evictions, 1);
		wb_writeout(fs, fi, wb); /* an error is the owner's, for its fsync or close */
	}
	pthread_mutex_unlock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	ffs_iput(fs, fi);
	pthread_mutex_unlock(&fs->lock);
}

/* ---- the API ----------------------------------------------------------------- */

int ffs_data_init(struct ffs *fs)
{
	int rc = wpool_init(fs);

	if (rc == 0)
		rc = rcache_init(fs);
	if (rc == 0) {
		struct wpool *p = fs->wpool;

		pthread_mutex_init(&p->dq_lock, NULL);
		pthread_cond_init(&p->dq_cond, NULL);
		rc = -pthread_create(&p->done_thread, NULL, done_main, fs);
		p->done_started = rc == 0;
	}
	return rc;
}

void ffs_data_free(struct ffs *fs)
{
	if (fs->wpool && fs->wpool->done_started) {
		struct wpool *p = fs->wpool;

		pthread_mutex_lock(&p->dq_lock);
		p->stop = true;
		pthread_cond_signal(&p->dq_cond);
		pthread_mutex_unlock(&p->dq_lock);
		pthread_join(p->done_thread, NULL);
		p->done_started = false;
	}
	if (fs->wpool) {
		for (unsigned i = 0; i < fs->wpool->total; i++)
			free(fs->wpool->all[i].data);
		free(fs->wpool->all);
		free(fs->wpool);
		fs->wpool = NULL;
	}
	fs->stripes_freed = NULL;
	if (fs->rcache) {
		for (unsigned i = 0; i < fs->rcache->n; i++)
			free(fs->rcache->entries[i].data);
		free(fs->rcache->entries);
		free(fs->rcache->hash);
		free(fs->rcache);
		fs->rcache = NULL;
	}
}

/*
 * The buffer for file stripe k, attached to fi if it was not; NULL only on
 * error.  dlock held, dropped while waiting.  Each pass either returns or
 * waits for an event that must come: a write in flight completing (dcond is
 * broadcast when it does), or a buffer from the pool (wpool_take).
 */
static struct wbuf *wb_for(struct ffs *fs, struct finode *fi, uint64_t k, int *err)
{
	struct wbuf *wb, *held = NULL;

	for (;;) {
		wb = wb_find(fi, k);
		if (wb && !wb->writing)
			break; /* being assembled: join it */
		if (wb || (fi->nwbufs >= WB_PER_INODE && wb_writing(fi))) {
			/* its stripe is going out, or the file has its most buffers and
			 * some are going out: wait for one (as the pool does) rather
			 * than send a partial stripe that would be written twice */
			if (held)
				wpool_put(fs, held);
			held = NULL;
			atomic_fetch_add(wb ? &fs->stats.wbuf_wait_rewrite : &fs->stats.wbuf_wait_inode, 1);
			wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight");
			continue;
		}
		if (fi->nwbufs >= WB_PER_INODE) { /* all partial: nothing else would free one */
			atomic_fetch_add(&fs->stats.wbuf_evictions, 1);
			*err = wb_writeout(fs, fi, wb_oldest_partial(fi));
			if (*err < 0)
				break;
			continue;
		}
		if (held) {
			wb = held;
			held = NULL;
			break;
		}
		pthread_mutex_unlock(&fi->dlock); /* the pool rule: wait with no lock held */
		held = wpool_take(fs);
		pthread_mutex_lock(&fi->dlock);
	}
	if (held) /* another writer made this stripe's buffer while we waited */
		wpool_put(fs, held);
	if (!wb || wb->fi == fi)
		return wb;
	/* the stripe it will go to is taken now, so a full volume answers this
	 * write with ENOSPC instead of failing later in the background */
	pthread_mutex_lock(&fs->lock);
	*err = pick_stripe(fs, fi, k, &wb->pstripe, &wb->in_place);
	pthread_mutex_unlock(&fs->lock);
	if (*err < 0) {
		wpool_put(fs, wb);
		return NULL;
	}
	wb->fstripe = k;
	wb->nival = 0;
	wb->born_ns = ff_mono_ns();
	wpool_attach(fs, fi, wb);
	return wb;
}

ssize_t ffs_data_write(struct ffs *fs, struct finode *fi, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *src = buf;
	size_t done = 0;
	int rc = 0;

	pthread_mutex_lock(&fi->dlock);
	while (done < len) {
		uint64_t k = (off + done) / fs->stripe_bytes, o = (off + done) % fs->stripe_bytes;
		size_t n = (size_t)FF_MIN(len - done, fs->stripe_bytes - o);
		struct wbuf *wb = wb_for(fs, fi, k, &rc);

		if (!wb)
			break;
		if (wb->nival == WB_IVALS && !ival_covers(wb, o, o + n)) {
			rc = wb_fill(fs, fi, wb); /* too fragmented: complete it first */
			if (rc < 0)
				break;
		}
		memcpy(wb->data + o, src + done, n);
		ival_add(wb, o, o + n);
		done += n;
		if (ival_covers(wb, 0, fs->stripe_bytes)) {
			rc = wb_writeout(fs, fi, wb);
			if (rc < 0)
				break;
		}
	}
	pthread_mutex_unlock(&fi->dlock);
	if (done == 0 && rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	if (off + done > ff_le64(fi->d.size))
		fi->d.size = ff_cpu_to_le64(off + done);
	ffs_inode_touch(fi, true, true);
	rc = ffs_istore(fs, fi);
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : (ssize_t)done;
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
static void read_ahead(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t size)
{
	uint64_t last = size ? (size - 1) / fs->stripe_bytes : 0, ps[16], from, to, beyond = 0;
	unsigned n = 0, r = FF_MIN(16u, fs->opts.readahead_stripes);

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
			rc_get(fs, ps[i], RC_AHEAD, crc);
	}
}

/* Where file stripe k's bytes come from: a buffer being assembled (copied
 * out under dlock into dst), a hole (zeros), or data stripe *p. */
enum src { SRC_DONE, SRC_ZERO, SRC_STRIPE };

static int read_source(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t o, size_t n,
		       uint8_t *dst, uint64_t *p)
{
	uint64_t run;
	uint32_t flags;
	struct wbuf *wb;
	int rc = 0;

	pthread_mutex_lock(&fi->dlock);
	wb = wb_find(fi, k);
	if (wb && dst && !ival_covers(wb, o, o + n) && !wb->writing)
		rc = wb_fill(fs, fi, wb);
	if (wb && rc == 0 && dst)
		memcpy(dst, wb->data + o, n);
	pthread_mutex_unlock(&fi->dlock);
	if (wb)
		return rc < 0 ? rc : dst ? SRC_DONE : -EAGAIN;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_extent_lookup(fs, fi, k, p, &run, &flags);
	pthread_mutex_unlock(&fs->lock);
	if (rc == -ENOENT || (rc == 0 && (flags & FFS_X_UNWRITTEN)))
		return SRC_ZERO;
	return rc < 0 ? rc : SRC_STRIPE;
}

static uint64_t file_size(struct ffs *fs, struct finode *fi)
{
	uint64_t size;

	pthread_mutex_lock(&fs->lock);
	size = ff_le64(fi->d.size);
	pthread_mutex_unlock(&fs->lock);
	return size;
}

ssize_t ffs_data_read(struct ffs *fs, struct finode *fi, void *buf, size_t len, uint64_t off)
{
	uint64_t size = file_size(fs, fi);
	uint8_t *dst = buf;
	size_t done = 0;
	int rc = 0;

	if (off >= size)
		return 0;
	len = (size_t)FF_MIN((uint64_t)len, size - off);
	while (done < len && rc >= 0) {
		uint64_t k = (off + done) / fs->stripe_bytes, o = (off + done) % fs->stripe_bytes, p;
		size_t n = (size_t)FF_MIN(len - done, fs->stripe_bytes - o);

		rc = read_source(fs, fi, k, o, n, dst + done, &p);
		if (rc == SRC_ZERO)
			memset(dst + done, 0, n);
		if (rc == SRC_STRIPE) {
			read_ahead(fs, fi, k, size);
			rc = read_stripe_bytes(fs, p, o, n, dst + done);
		}
		if (rc >= 0)
			done += n;
	}
	return done ? (ssize_t)done : rc < 0 ? rc : 0;
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
		      struct ffs_rref *ref)
{
	uint64_t size = file_size(fs, fi), ps[FFS_RREF_MAX];
	size_t done = 0, ns[FFS_RREF_MAX];
	unsigned n = 0;

	ref->n = 0;
	if (off >= size)
		return 0;
	len = (size_t)FF_MIN((uint64_t)len, size - off);
	for (; done < len; n++) {
		uint64_t k = (off + done) / fs->stripe_bytes, o = (off + done) % fs->stripe_bytes;
		int rc = n < FFS_RREF_MAX ? read_source(fs, fi, k, o, 0, NULL, &ps[n]) : -EAGAIN;

		if (rc != SRC_STRIPE)
			return rc < 0 ? rc : -EAGAIN;
		ns[n] = (size_t)FF_MIN(len - done, fs->stripe_bytes - o);
		read_ahead(fs, fi, k, size);
		done += ns[n];
	}
	done = 0;
	for (unsigned i = 0; i < n; i++) {
		uint64_t o = (off + done) % fs->stripe_bytes;
		struct rentry *e;
		int rc = stripe_get(fs, ps[i], i ? RC_WAIT_LOAD : RC_WAIT, &e);

		if (rc < 0) {
			ffs_data_read_unref(fs, ref);
			return rc;
		}
		ref->iov[i].iov_base = e->data + o;
		ref->iov[i].iov_len = ns[i];
		ref->pin[i] = e;
		ref->n = i + 1;
		done += ns[i];
	}
	return (ssize_t)done;
}

void ffs_data_read_unref(struct ffs *fs, struct ffs_rref *ref)
{
	for (unsigned i = 0; i < ref->n; i++)
		rc_put(fs, ref->pin[i]);
	ref->n = 0;
}

int ffs_data_flush(struct ffs *fs, struct finode *fi)
{
	int rc = 0, err;

	pthread_mutex_lock(&fi->dlock);
	for (;;) {
		struct wbuf *wb = fi->wbufs;

		while (wb && wb->writing)
			wb = wb->next;
		if (!wb) {
			if (!fi->wbufs)
				break;
			wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight"); /* others' writes in flight */
			continue;
		}
		err = wb_writeout(fs, fi, wb);
		if (err < 0 && !rc)
			rc = err;
	}
	err = fi->write_error;
	fi->write_error = 0;
	pthread_mutex_unlock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	release_reservation(fs, fi);
	if (fi->d.parent && ff_le64(fi->d.nstripes)) {
		struct finode *dir;

		if (ffs_iget(fs, ff_le64(fi->d.parent), &dir) == 0) {
			dir->last_file_stripes = ff_le64(fi->d.nstripes);
			dir->alloc_hint = fi->alloc_hint;
			ffs_iput(fs, dir);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : err;
}

int ffs_data_truncate(struct ffs *fs, struct finode *fi, uint64_t size)
{
	uint64_t keep = FF_DIV_ROUND_UP(size, fs->stripe_bytes), eof_k = size / fs->stripe_bytes;
	uint64_t eof_off = size % fs->stripe_bytes, p, run;
	uint32_t flags;
	struct wbuf *wb;
	int rc = 0;

	pthread_mutex_lock(&fi->dlock);
	/* let writes in flight land, then drop the buffers wholly past the end */
	for (;;) {
		for (wb = fi->wbufs; wb && !wb->writing; wb = wb->next)
			;
		if (!wb)
			break;
		wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight");
	}
	for (wb = fi->wbufs; wb;) {
		struct wbuf *next = wb->next;

		if (wb->fstripe >= keep)
			wb_drop(fs, fi, wb, 0);
		wb = next;
	}
	if (eof_off) {
		pthread_mutex_lock(&fs->lock);
		rc = ffs_extent_lookup(fs, fi, eof_k, &p, &run, &flags);
		pthread_mutex_unlock(&fs->lock);
		wb = wb_find(fi, eof_k);
		if (wb || (rc == 0 && !(flags & FFS_X_UNWRITTEN))) {
			int err = 0;

			wb = wb ? wb : wb_for(fs, fi, eof_k, &err);
			rc = wb ? 0 : err;
			if (wb && !ival_covers(wb, 0, eof_off))
				rc = wb_fill(fs, fi, wb);
			if (wb && rc == 0) {
				memset(wb->data + eof_off, 0, fs->stripe_bytes - eof_off);
				ival_add(wb, eof_off, fs->stripe_bytes);
				rc = wb_writeout(fs, fi, wb);
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
		rc = ffs_istore(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_data_fallocate(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len)
{
	uint64_t k0 = off / fs->stripe_bytes, k1 = FF_DIV_ROUND_UP(off + len, fs->stripe_bytes);
	uint64_t k = k0, hint;
	int rc = 0;

	if (mode & ~FALLOC_FL_KEEP_SIZE)
		return -EOPNOTSUPP;
	if (len == 0)
		return -EINVAL;
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
		reserve_want(fs, fi, &hint);
		rc = reserve_stripes(fs, fi->alloc_hint ? fi->alloc_hint : hint, run, &first, &got);
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
