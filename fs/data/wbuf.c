/* SPDX-License-Identifier: MIT */
/*
 * Write buffers: stripe assembly on the way in, the pool of stripe
 * buffers it draws from, and the completion thread that maps a stripe once
 * its write is on the members.
 *
 * Writes.  FUSE hands us up to max_write bytes at a time (transport.c: the
 * most whole stripes that fit fs.fuse.max_pages_limit, so at most 1 MiB at
 * the kernel's default 256 pages and 4 MiB at 1024; libfuse before 3.18
 * keeps it to 1 MiB), possibly out of order and from several threads.
 * Each file stripe being written gets a stripe-sized buffer (from a pool
 * fixed at mount) that records which byte ranges it holds.  The write that completes a buffer sends it to the array as one
 * full-stripe write, to a stripe that holds no live data: the file's
 * reservation, or — for a preallocated, never-written stripe — the stripe
 * itself.  Only after that write completes is the new mapping (and the
 * chunk checksums) put into the running transaction, and the stripe it
 * replaces freed once that transaction commits.  A buffer that never fills
 * is written out on flush/fsync/close/unmount or eviction (writeout): a
 * small file's stripe 0 goes to pool blocks (small.c); a few blocks of a
 * mapped stripe go as patches (patch.c); otherwise its gaps are filled
 * from the old stripe, its patches or zeros, and a file's last, partial
 * stripe goes as a packed tail (tail.c), anything else as a full stripe
 * as above.  Patches and tails are whole rows, with their parity, appended
 * past the hwm of a tail stripe whose lower rows hold live data: no live
 * row, and no stripe's live chunk, is ever overwritten.
 *
 * Locking: a buffer on a file's list is guarded by that file's dlock; the
 * pool's lists by p->lock, a leaf; mapping a written stripe takes fs->lock
 * on the completion thread (never on an engine thread).  Why every wait
 * for a buffer ends is written at struct wpool.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"

#define RESERVE_DEFAULT 64

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

int ffs_wpool_init(struct ffs *fs)
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

		wb->data = ff_alloc_pool_buf(fs->stripe_bytes);
		if (!wb->data)
			return -ENOMEM;
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
	wb->writing_ns = ff_mono_ns();
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

void ffs_ival_add(struct wbuf *wb, uint64_t a, uint64_t b)
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

bool ffs_ival_covers(const struct wbuf *wb, uint64_t a, uint64_t b)
{
	for (unsigned i = 0; i < wb->nival; i++)
		if (wb->ival[i].a <= a && b <= wb->ival[i].b)
			return true;
	return false;
}

struct wbuf *ffs_wb_find(struct finode *fi, uint64_t fstripe)
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

/* ---- allocation of a stripe for a buffer ------------------------------------ */

/* How many stripes to reserve when a file needs more: what the previous
 * file of its directory took (frames of a sequence are alike). */
uint64_t ffs_reserve_want(struct ffs *fs, struct finode *fi, uint64_t *hint)
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

/* ffs_reserve_stripes, leaving `keep` free; when the only free stripes
 * beyond it are those the running transaction freed, commit first: they
 * come back once it is durable.  The writer that needs the space commits,
 * not the allocator, which sits below the journal (the journal calls it
 * when a commit frees stripes).  fs->lock held. */
static int reserve_keeping(struct ffs *fs, uint64_t hint, uint64_t want, uint64_t keep,
			   uint64_t *first, uint64_t *got)
{
	if (ffs_alloc_free_stripe_count(fs) <= keep && fs->npending) {
		int rc = ffs_journal_commit(fs);

		if (rc < 0)
			return rc;
	}
	return ffs_reserve_stripes(fs, hint, want, keep, first, got);
}

/*
 * Reserve up to `want` stripes for fi (fs->lock held), leaving the
 * overwrite reserve free (alloc.c).  When that fails, one stripe of the
 * reserve, not a run the file's new data could go on to: for an overwrite
 * (a stripe that replaces a mapped one), always; for new data, only to
 * take back what a truncation or a punched hole took from this file.
 *
 * fi->regrow counts those stripes, and a tail let go as one (written
 * again, it needs a stripe).  Every stripe the file takes for new data
 * uses one up, from the reserve or not: so it takes back, past what new
 * data may take, no more than it gave up.  A project database saved with
 * O_TRUNC on a volume full of footage is new data that needs what it gave
 * up; before, it was refused with ENOSPC when its tail had shared a tail
 * stripe, which letting it go did not free (full-volume-overwrites, seed
 * 536798316).
 */
int ffs_wb_reserve_stripes(struct ffs *fs, struct finode *fi, uint64_t hint, uint64_t want,
		    bool overwrite, uint64_t *first, uint64_t *got)
{
	int rc = reserve_keeping(fs, hint, want, ffs_overwrite_reserve(fs), first, got);

	if (rc == -ENOSPC && (overwrite || fi->regrow))
		rc = reserve_keeping(fs, hint, 1, 0, first, got);
	if (rc == 0 && !overwrite)
		fi->regrow -= FF_MIN(fi->regrow, *got);
	return rc;
}

/* Pick the stripe this buffer goes to: in place when the file stripe is
 * preallocated and unwritten, else the next reserved one; an overwrite of
 * a mapped stripe may take one of the overwrite reserve.  fs->lock held. */
static int pick_stripe(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *p,
		       bool *in_place)
{
	uint64_t run, first, got, hint;
	uint32_t flags;
	int rc = ffs_extent_lookup(fs, fi, fstripe, p, &run, &flags);
	bool mapped = rc == 0;

	*in_place = rc == 0 && (flags & FFS_X_UNWRITTEN);
	if (*in_place)
		return 0;
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (!fi->reserve_count) {
		uint64_t want = ffs_reserve_want(fs, fi, &hint);

		/* A run ahead is for an open file's next stripes, and its close
		 * gives back what is left.  A writeout of a closed file (a
		 * background merge: merge.c) takes only the stripe it needs:
		 * nothing would give the rest back (statfs counted them free
		 * while no one else could take them, and they were lost to both
		 * once the inode left the cache). */
		if (!fi->nopen)
			want = 1;
		rc = ffs_wb_reserve_stripes(fs, fi, hint, want, mapped, &first, &got);
		if (rc < 0)
			return rc;
		fi->reserve_first = first;
		fi->reserve_count = got;
	}
	*p = fi->reserve_first++;
	fi->reserve_count--;
	return 0;
}

void ffs_release_reservation(struct ffs *fs, struct finode *fi)
{
	if (fi->reserve_count)
		ffs_unreserve_stripes(fs, fi->reserve_first, fi->reserve_count);
	fi->reserve_count = 0;
}

static void wb_write_done(struct ff_raid_io *io);

/*
 * Send a complete buffer to a free stripe, asynchronously.  The writer's
 * FUSE request is answered at once; the completion thread maps the stripe
 * (stripe_done).  Until then the buffer stays on the inode's list, marked
 * writing, so reads are served from it and rewrites of that stripe wait.
 * Called with the buffer marked writing and no locks held.
 */
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
	wb->tslot = -1;
	wb->npatch = 0;
	memset(&wb->io, 0, sizeof(wb->io));
	wb->io.op = FF_RAID_WRITE;
	wb->io.space = FF_SPACE_DATA;
	wb->io.flags = FF_RAID_IO_NO_INTENT; /* a free (or never written) stripe: nothing to tear */
	wb->io.off = wb->pstripe * fs->stripe_bytes;
	wb->io.len = fs->stripe_bytes;
	wb->io.buf = wb->data;
	wb->io.done = wb_write_done;
	wb->io.priv = wb;
	atomic_fetch_add(&fs->stats.stripe_writes, 1);
	rc = ff_raid_submit(fs->raid, &wb->io);
	if (rc < 0) {
		wb->io.result = rc;
		wb_write_done(&wb->io);
	}
	return 0;
}

/* Engine thread: hand the buffer to the completion thread (never take
 * fs->lock on an engine thread).  The completion of every buffer's write:
 * a stripe, a tail or a patch batch (ffs_tail_submit, ffs_patch_submit). */
static void wb_write_done(struct ff_raid_io *io)
{
	struct wbuf *wb = io->priv;
	struct wpool *p = wb->fs->wpool;

	wb->written_ns = ff_mono_ns();
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
	const char *what = wb->tslot >= 0 ? "(a tail or patch write)" : "(a stripe write)";

	/* from marked writing to mapped: the engine's part, then the wait for this thread */
	ffs_times_add(fs, what, NULL, ff_mono_ns() - wb->writing_ns);
	ffs_times_add(fs, what, "the engine, to its last member write", wb->written_ns - wb->writing_ns);
	ffs_times_add(fs, what, "the completion thread", ff_mono_ns() - wb->written_ns);

	pthread_mutex_lock(&fs->lock);
	if (wb->tslot >= 0) { /* a tail or patches (tail.c) */
		rc = ffs_tail_done(fs, fi, wb);
		pthread_mutex_unlock(&fs->lock);
		goto done;
	}
	if (rc == 0 && ffs_is_small(fi) && wb->fstripe != 0) {
		/* promote_small (data.c) moves stripe 0 first: this cannot happen */
		ff_log(FF_LOG_ERR, "inode %llu: stripe %llu of a small file; run fsck.framefs",
		       (unsigned long long)fi->ino, (unsigned long long)wb->fstripe);
		rc = -EUCLEAN;
	}
	if (rc == 0 && ffs_is_small(fi)) { /* its bytes move from pool blocks to this stripe */
		rc = ffs_small_release(fs, fi);
		if (rc == 0)
			atomic_fetch_add(&fs->stats.small_promotions, 1);
	}
	if (rc == 0 && !wb->in_place)
		rc = ffs_commit_stripes(fs, p, 1);
	if (rc == 0)
		rc = ffs_csum_set(fs, p, (uint32_t)fi->ino, (uint32_t)wb->fstripe, wb->crc);
	if (rc == 0) {
		uint64_t before = fi->tx_seq;

		rc = ffs_extent_map(fs, fi, wb->fstripe, p, 1, 0);
		/* A background merge moves bytes the file had already: its
		 * stripe and patches stand until this commits (their space is
		 * freed at the commit: alloc.c), and a batch written meanwhile
		 * replays over them as well (patch.c).  So the file's fsync
		 * need not wait for this commit (merge.c). */
		if (wb->background)
			fi->tx_seq = before;
	}
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
done:
	if (rc < 0)
		ff_log(FF_LOG_ERR, "inode %llu: stripe %llu could not be written: %s",
		       (unsigned long long)fi->ino, (unsigned long long)wb->fstripe, strerror(-rc));
	pthread_mutex_lock(&fi->dlock);
	if (wb->background)
		rc = 0; /* a merge's rewrite, logged above: the stripe and its patches stand */
	while (wb) { /* with the buffers gathered behind it (patch.c) */
		struct wbuf *g = wb->gnext;

		wb->gnext = NULL;
		wb_unlink(fi, wb);
		wpool_put(fs, wb);
		wb = g;
	}
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

/* Fill the gaps of a partial buffer within bytes [lo, hi) from what the
 * file holds there now (its stripe with its patches laid over, a tail, or
 * zeros for a hole or a preallocated stripe); its intervals stay as they
 * were, for the caller to extend.  dlock held, or the buffer being written
 * (writeout). */
static int fill_gaps(struct ffs *fs, struct finode *fi, struct wbuf *wb, uint64_t lo, uint64_t hi)
{
	struct ffs_extent x;
	uint64_t p, prev = lo;
	uint32_t flags, row0 = 0, rows = 0;
	bool mapped, small;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_extent_find(fs, fi, wb->fstripe, &x);
	small = wb->fstripe == 0 && ffs_is_small(fi);
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	flags = rc == 0 ? ff_le32(x.flags) : 0;
	p = rc == 0 ? ff_le64(x.pstripe) + (wb->fstripe - ff_le64(x.fstripe)) : 0;
	if (flags & FFS_X_TAIL)
		ffs_tail_rows_of(&x, &row0, &rows);
	mapped = rc == 0 && !(flags & FFS_X_UNWRITTEN);
	rc = 0;
	for (unsigned i = 0; i <= wb->nival; i++) {
		uint64_t a = prev, b = i < wb->nival ? wb->ival[i].a : hi;

		a = FF_MAX(a, lo);
		b = FF_MIN(b, hi);
		if (b > a) {
			if (small) { /* its stripe 0 is in pool blocks (small.c) */
				pthread_mutex_lock(&fs->lock);
				if (ffs_is_small(fi))
					rc = ffs_small_read(fs, fi, a, b - a, wb->data + a);
				else /* truncated to 0 meanwhile (nothing else ends it with dlock held) */
					memset(wb->data + a, 0, b - a);
				pthread_mutex_unlock(&fs->lock);
			} else if (mapped) {
				rc = flags & FFS_X_TAIL ? ffs_tail_read(fs, p, row0, rows, a, b - a, wb->data + a)
							: ffs_read_stripe_bytes(fs, p, a, b - a, wb->data + a);
			} else {
				memset(wb->data + a, 0, b - a);
			}
			if (rc < 0)
				return rc;
		}
		if (i < wb->nival)
			prev = wb->ival[i].b;
		if (prev >= hi)
			break;
	}
	/* the patches over every gap at once: their reads go in waves (patch.c) */
	if (mapped && !small && !ffs_ival_covers(wb, lo, hi) &&
	    (rc = ffs_patch_overlay(fs, fi, wb->fstripe, lo, hi - lo, wb->data + lo, wb)) < 0)
		return rc;
	return 0;
}

/* fill_gaps, and the buffer holds [lo, hi) now.  dlock held. */
int ffs_wb_fill_span(struct ffs *fs, struct finode *fi, struct wbuf *wb, uint64_t lo, uint64_t hi)
{
	int rc = fill_gaps(fs, fi, wb, lo, hi);

	if (rc == 0)
		ffs_ival_add(wb, lo, hi);
	return rc;
}

int ffs_wb_fill(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	/* counts whole-stripe fills, as before patches: a patch's edge blocks are not one */
	atomic_fetch_add(&fs->stats.stripe_fills, 1);
	return ffs_wb_fill_span(fs, fi, wb, 0, fs->stripe_bytes);
}

/* Let a partial buffer go without writing it: its reserved stripe returns
 * to the allocator; err (if any) waits for the next fsync or close.  dlock
 * held. */
void ffs_wb_drop(struct ffs *fs, struct finode *fi, struct wbuf *wb, int err)
{
	if (wb->background)
		err = 0; /* no user data in it: the merge thread logs it (merge.c) */
	wpool_detach_partial(fs, wb);
	wb_unlink(fi, wb);
	if (!wb->in_place && wb->pstripe != WB_NO_STRIPE) {
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
/*
 * Stripe 0 of a file that holds nothing at or past small_max goes to pool
 * blocks (small.c) instead of a stripe: 0 when it went there (the buffer is
 * let go), 1 when it takes a stripe after all, or an error (the buffer
 * dropped with it).  dlock held.  What "holds" means: its size, and what
 * writes put in this buffer (hi) before the size caught up with them.
 */
static int small_writeout(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	uint64_t len;
	bool small;
	int rc = 0;

	if (wb->fstripe != 0 || wb->force_stripe || fi->beyond_small || !ffs_small_max(fs))
		return 1; /* (small_max is fixed at mkfs: read without fs->lock) */
	pthread_mutex_lock(&fs->lock);
	len = FF_MAX(ff_le64(fi->d.size), wb->hi);
	small = ffs_small_max(fs) && len <= ffs_small_max(fs) && !ff_le64(fi->d.nstripes) &&
		!ff_le32(fi->d.nextents) && !(ff_le32(fi->d.flags) & FFS_I_BTREE) &&
		S_ISREG(ff_le32(fi->d.mode));
	pthread_mutex_unlock(&fs->lock);
	if (!small)
		return 1;
	if (!ffs_ival_covers(wb, 0, len))
		rc = ffs_wb_fill(fs, fi, wb);
	if (rc == 0) {
		pthread_mutex_lock(&fs->lock);
		rc = ffs_small_store(fs, fi, wb->data, len);
		pthread_mutex_unlock(&fs->lock);
	}
	if (rc == -ENOSPC)
		return 1; /* the pool is at its reserve: a stripe, as before the class */
	ffs_wb_drop(fs, fi, wb, rc);
	return rc;
}

static int writeout(struct ffs *fs, struct finode *fi, struct wbuf *wb, bool gather)
{
	uint32_t rows;
	int rc = 0, plan;

	FF_ASSERT(!wb->writing && wb->fi == fi);
	rc = small_writeout(fs, fi, wb);
	if (rc <= 0)
		return rc;
	rc = 0;
	if (wb->pstripe == WB_NO_STRIPE) { /* not small after all: it needs its stripe now */
		pthread_mutex_lock(&fs->lock);
		rc = pick_stripe(fs, fi, wb->fstripe, &wb->pstripe, &wb->in_place);
		pthread_mutex_unlock(&fs->lock);
		if (rc < 0) {
			wb->pstripe = WB_NO_STRIPE;
			ffs_wb_drop(fs, fi, wb, rc);
			return rc;
		}
	}
	plan = ffs_ival_covers(wb, 0, fs->stripe_bytes) ? 0 : ffs_patch_plan(fs, fi, wb);
	if (plan == PATCH_MERGE)
		atomic_fetch_add(&fs->stats.patch_merges, 1);
	if (plan > 0) {
		/* a few blocks of a mapped stripe (patch.c) */
		if (gather)
			ffs_patch_gather(fs, fi, wb);
		for (struct wbuf *g = wb; g; g = g->gnext)
			wpool_mark_writing(fs, g);
		pthread_mutex_unlock(&fi->dlock);
		ffs_patch_submit(fs, fi, wb, wb_write_done); /* may wait for a slot: no lock held */
		pthread_mutex_lock(&fi->dlock);
		return 0;
	}
	wb->npatch = 0;
	if (!ffs_ival_covers(wb, 0, fs->stripe_bytes)) {
		/*
		 * The fill reads the stripe and the patches laid over it: 4 ms
		 * on average for a patched stripe's merge (3.8 ms over 175
		 * merges, 12.5 ms at the 99th percentile, in 4 KiB random
		 * writes to 4 files of 64 MiB with fsync every 64, RAID5 x 4).
		 * Under dlock every write of the file waited that long, and
		 * with it libfuse's queue thread and every request behind it.
		 * So the buffer is marked as being written first and the fill
		 * runs without dlock: from then on writers of this stripe,
		 * readers of its gaps, flushes and truncates wait for it on
		 * dcond as for any buffer in flight (stripe_done or ffs_wb_drop
		 * wakes them), and nobody else touches it.  Its intervals grow
		 * under dlock once the fill is done, when readers may see them.
		 */
		atomic_fetch_add(&fs->stats.stripe_fills, 1);
		wpool_mark_writing(fs, wb);
		pthread_mutex_unlock(&fi->dlock);
		rc = fill_gaps(fs, fi, wb, 0, fs->stripe_bytes);
		pthread_mutex_lock(&fi->dlock);
		if (rc < 0) {
			ffs_wb_drop(fs, fi, wb, rc);
			return rc;
		}
		ffs_ival_add(wb, 0, fs->stripe_bytes);
	}
	rows = ffs_tail_rows(fs, fi, wb);
	if (!wb->writing)
		wpool_mark_writing(fs, wb);
	pthread_mutex_unlock(&fi->dlock);
	rc = rows && ffs_tail_submit(fs, fi, wb, rows, wb_write_done) == 0 ? 0 : stripe_submit(fs, fi, wb);
	pthread_mutex_lock(&fi->dlock);
	return rc;
}

int ffs_wb_writeout(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	return writeout(fs, fi, wb, false);
}

int ffs_wb_writeout_flush(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	return writeout(fs, fi, wb, true);
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
		/* with the owner's other patchable buffers: one batch (patch.c) */
		ffs_wb_writeout_flush(fs, fi, wb); /* an error is the owner's, for its fsync or close */
	}
	pthread_mutex_unlock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	ffs_iput(fs, fi);
	pthread_mutex_unlock(&fs->lock);
}

/* The completion thread (after the read cache exists). */
int ffs_wpool_start(struct ffs *fs)
{
	struct wpool *p = fs->wpool;
	int rc;

	pthread_mutex_init(&p->dq_lock, NULL);
	pthread_cond_init(&p->dq_cond, NULL);
	rc = -pthread_create(&p->done_thread, NULL, done_main, fs);
	p->done_started = rc == 0;
	return rc;
}

void ffs_wpool_free(struct ffs *fs)
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
			ff_free_pool_buf(fs->wpool->all[i].data, fs->stripe_bytes);
		free(fs->wpool->all);
		free(fs->wpool);
		fs->wpool = NULL;
	}
}

/*
 * The buffer for file stripe k, attached to fi if it was not; NULL only on
 * error.  dlock held, dropped while waiting.  Each pass either returns or
 * waits for an event that must come: a write in flight completing (dcond is
 * broadcast when it does), or a buffer from the pool (wpool_take).
 */
struct wbuf *ffs_wb_for(struct ffs *fs, struct finode *fi, uint64_t k, int *err)
{
	struct wbuf *wb, *held = NULL;
	uint64_t p, run;
	uint32_t flags;
	bool room;

again:
	for (;;) {
		wb = ffs_wb_find(fi, k);
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
			*err = ffs_wb_writeout_flush(fs, fi, wb_oldest_partial(fi));
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
	held = NULL;
	if (!wb || wb->fi == fi)
		return wb;
	/* the stripe it will go to is taken now, so a full volume answers this
	 * write with ENOSPC instead of failing later in the background */
	pthread_mutex_lock(&fs->lock);
	*err = pick_stripe(fs, fi, k, &wb->pstripe, &wb->in_place);
	if (*err == -ENOSPC && k == 0 && ffs_small_max(fs) && !ff_le64(fi->d.nstripes)) {
		/* no stripe free, but the file may be small (pool blocks): a
		 * sidecar beside the last frame of a full volume still fits.
		 * The stripe is picked at writeout if it needs one after all. */
		wb->pstripe = WB_NO_STRIPE;
		wb->in_place = false;
		*err = 0;
	}
	room = *err == -ENOSPC && fi->nwbufs && ffs_extent_lookup(fs, fi, k, &p, &run, &flags) == 0;
	pthread_mutex_unlock(&fs->lock);
	if (room && (wb_oldest_partial(fi) || wb_writing(fi))) {
		/* An overwrite that found the overwrite reserve taken (alloc.c),
		 * some of it by this file's own buffers, each of which holds the
		 * stripe it will go to: send out the oldest, or wait for one in
		 * flight, and pick again.  A patch gives its stripe back when it
		 * lands, a rewrite the stripe it replaced at the next commit.
		 * Each pass sends out or sees complete one of the file's buffers;
		 * with none left to send or wait for, the answer is ENOSPC. */
		struct wbuf *old = wb_oldest_partial(fi);

		wpool_put(fs, wb);
		if (old) {
			*err = ffs_wb_writeout_flush(fs, fi, old);
			if (*err < 0)
				return NULL;
		} else {
			wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight");
		}
		goto again;
	}
	if (*err < 0) {
		wpool_put(fs, wb);
		return NULL;
	}
	wb->fstripe = k;
	wb->nival = 0;
	wb->hi = 0;
	wb->force_stripe = false;
	wb->background = false;
	wb->born_ns = ff_mono_ns();
	wpool_attach(fs, fi, wb);
	return wb;
}
