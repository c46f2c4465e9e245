/* SPDX-License-Identifier: MIT */
/*
 * Packed tails (format version 4): the last, partial stripe of a file in
 * rows of a shared tail stripe instead of a stripe of its own.
 *
 * Why.  Every file's data starts a whole stripe, so the last stripe of a
 * frame is on average half empty: 0.75 MiB of a 1.5 MiB stripe on RAID5 x 4
 * at 512 KiB chunks, more on wider arrays — 2 % of a volume of compressed
 * EXR frames of 3-60 MB.  Packing tails into shared stripes gets that back,
 * but a shared stripe is written more than once, and writing part of a
 * stripe whose other part holds live data is the write hole: a crash
 * between the data and the parity writes leaves parity that no longer
 * matches the live chunks, and the next member lost takes them with it.
 *
 * How.  A stripe is cut into rows: row r is bytes [r * 4 KiB, (r+1) * 4 KiB)
 * of every chunk, data and parity.  Parity is computed position by
 * position, so a row's parity depends on that row alone: writing rows
 * [a, b) of every data chunk together with their parity (the engine's
 * FF_RAID_IO_ROWS write, which reads nothing) changes no other row, and a
 * crash half-way tears only rows that no extent points to yet.  Tails are
 * appended to a tail stripe in row order; a tail of m rows holds the file
 * stripe's bytes [0, m * ndata * 4 KiB), m rows of each data chunk (the
 * layout is in format.h).  Granularity is ndata * 4 KiB (12 KiB on RAID5
 * x 4), so a tail wastes a few KiB, not half a stripe.  A tail is written
 * when the file's last buffer is written (close, fsync, eviction), at once:
 * close's promise (a closed file survives a crash) is kept without waiting
 * for other files' tails.
 *
 * The checksum entry of a tail stripe (FFS_CSUM_TAILS) holds the rows
 * written (hwm), the chunk crcs over rows [0, hwm) — appending rows in
 * order continues them — and how many extents point into it.  It is
 * updated in the transaction that maps the tail, after the rows are on the
 * members, so a committed entry never covers rows not written.
 *
 * The daemon has up to TAIL_SLOTS_MAX slots for open tail stripes, each
 * with an image of the stripe (the rows written so far: the crcs continue
 * from it) and at most one write in flight — so rows land, and are mapped,
 * in order.  A tail finding every slot busy goes to a stripe of its own as
 * before (tail_busy), never waits.  How many slots: an eighth of the
 * write-buffer pool's stripes, 2 to TAIL_SLOTS_MAX (8 at the default
 * 160 MiB pool and 1.5 MiB stripes), so that 8 writers closing frames at
 * once find an idle one: with 2 slots, 4 writers sent 14 of 62 tails to
 * stripes of their own and 8 writers 36 of 64; with 8 slots none did
 * (RAID5 x 4, frames of 3-60 MB, 32 a round).
 * A tail that fits no idle open stripe opens a new one in an empty slot
 * while fewer than TAIL_OPEN_IDLE idle stripes are open, else in the slot
 * of the fullest idle one, which it retires: one writer keeps two stripes
 * open as before (two bins for the best fit), and more slots are used
 * only by tails written at the same time.  The first tail of a stripe opens it
 * with a rows write like any other: the rows past the hwm hold whatever the
 * stripe held before, parity included, and nothing reads them — scrub
 * checks a tail stripe's rows below its hwm only (FF_RAID_IO_ROWS check).
 * (It was a full-stripe write of zeros past the tail: as many bytes again
 * as the rows it would ever hold.)  The
 * stripe it opens is the one the tail's buffer had reserved; an appended
 * tail gives its reservation back.  A tail stripe is freed when its last
 * extent goes and it is not open.
 *
 * Spares.  A patch batch is replayable once the last commit lists its
 * stripe (patch.c), so a batch that opens a stripe no commit has listed
 * makes its file's fsync commit — about 200 commits, a third of the
 * member bytes (327 MiB of META in 1,031 MiB written), in 4 KiB random
 * writes to 4 files of 64 MiB with fsync every 64 on RAID5 x 4.  So each
 * slot keeps a spare: a stripe reserved in memory
 * (an appended tail's own reservation, which went back before) that every
 * commit lists although it is free on disk, and an opening takes the
 * spare a commit has listed, leaving its own reservation as the next
 * spare.  Replay treats a listed stripe that is free in the commit as
 * opened at row 0; nothing is allocated on disk until a batch there is
 * mapped, so a crash leaks nothing.  Spares go back at unmount and when
 * the allocator runs dry (ffs_tails_drop_spares).
 *
 * Locking: t->lock is a leaf, taken after fs->lock (the release of a tail
 * asks whether its stripe is open) and never held across I/O.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"

#define TAIL_SLOTS_MAX 8
#define TAIL_OPEN_IDLE 2
#define NO_STRIPE UINT64_MAX

struct tslot {
	uint64_t p;                   /* the tail stripe, NO_STRIPE: the slot is empty */
	uint32_t hwm;                 /* rows written and mapped */
	uint32_t crc[FF_MEMBERS_MAX]; /* each data chunk's crc32c over rows [0, hwm) */
	bool busy;                    /* a write to it is in flight */
	bool busy_batch;              /* that write is a patch batch, not a tail */
	bool held;                    /* a repair wants it: no more appends (ffs_tail_hold) */
	uint64_t listed_seq;          /* the last commit that listed p (ffs_tails_listing), 0: none */
	uint64_t spare;               /* reserved for the slot's next opening, NO_STRIPE: none */
	uint64_t spare_listed;        /* the last commit that listed spare, 0: none */
	uint64_t batch_seq;           /* the seq of the patch batch in flight (busy) */
	uint8_t *img;                 /* the stripe as written (rows [0, hwm) and the one in flight) */
};

struct tails {
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* a slot's write was mapped (busy cleared): a batch in slot_take waits */
	uint32_t rows_per_chunk;
	unsigned nslots; /* slots in use, 2..TAIL_SLOTS_MAX (ffs_tails_init) */
	struct tslot slot[TAIL_SLOTS_MAX];
};

bool ffs_tails_on(const struct ffs *fs)
{
	return fs->tails != NULL; /* made at mount with FFS_FEAT_TAILS only (read-write, version 4 and later) */
}

int ffs_tails_init(struct ffs *fs)
{
	struct tails *t;

	if (!(fs->features & FFS_FEAT_TAILS))
		return 0;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->cond, NULL);
	t->rows_per_chunk = fs->g->chunk_bytes / FFS_TAIL_ROW;
	/* an eighth of the write-buffer pool's stripes (ffs_wpool_init's count) */
	t->nslots = (unsigned)FF_MIN(FF_MAX(FF_MAX(8ull, fs->opts.write_buffer_bytes / fs->stripe_bytes) / 8,
					    2ull),
				     (unsigned long long)TAIL_SLOTS_MAX);
	for (unsigned i = 0; i < t->nslots; i++) {
		t->slot[i].p = NO_STRIPE;
		t->slot[i].spare = NO_STRIPE;
		t->slot[i].img = ff_alloc_pool_buf(fs->stripe_bytes);
		if (!t->slot[i].img) {
			fs->tails = t;
			ffs_tails_free(fs);
			return -ENOMEM;
		}
	}
	fs->tails = t;
	fs->reclaim_spares = ffs_tails_drop_spares;
	fs->tails_listing = ffs_tails_listing;
	return 0;
}

void ffs_tails_free(struct ffs *fs)
{
	struct tails *t = fs->tails;

	if (!t)
		return;
	for (unsigned i = 0; i < t->nslots; i++)
		ff_free_pool_buf(t->slot[i].img, fs->stripe_bytes);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t);
	fs->tails = NULL;
	fs->reclaim_spares = NULL;
	fs->tails_listing = NULL;
}

/* Is p a tail stripe the daemon may still append to (or a slot's spare)?
 * fs->lock held. */
static bool tail_open(struct ffs *fs, uint64_t p)
{
	struct tails *t = fs->tails;
	bool open = false;

	if (!t)
		return false;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++)
		open |= t->slot[i].p == p || t->slot[i].spare == p;
	pthread_mutex_unlock(&t->lock);
	return open;
}

/* An open tail stripe that lost its last tail is retired at once when no
 * write to it is in flight, so that an empty one is freed in the same
 * transaction (a crash cannot leave it allocated).  fs->lock held. */
static void tail_retire_idle(struct ffs *fs, uint64_t p)
{
	struct tails *t = fs->tails;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++)
		if (t->slot[i].p == p && !t->slot[i].busy)
			t->slot[i].p = NO_STRIPE;
	pthread_mutex_unlock(&t->lock);
}

/* Free tail stripe p if nothing lives in it and no slot has it; once: its
 * checksum entry keeps saying live 0 after the free, so a second call in
 * the same transaction (replay releases the last patch of a listed stripe,
 * then lets the listed stripes go) finds it freed rather than freeing it
 * again (a power cut left a volume unmountable so: "bit already clear"). */
int ffs_tail_closed(struct ffs *fs, uint64_t p)
{
	uint32_t ino, f, crc[FF_MEMBERS_MAX];
	int rc = ffs_csum_get(fs, p, &ino, &f, crc);

	if (rc == 0 && ino == FFS_CSUM_TAILS && FFS_CSUM_TAIL_LIVE(f) == 0 && !tail_open(fs, p) &&
	    !ffs_stripe_freed_in_tx(fs, p))
		rc = ffs_free_stripes(fs, p, 1);
	return rc;
}

/* Tail stripe p's live count moved by delta (+1 or -1): its new count, or
 * an error when p holds none to move (fs->lock held). */
static int live_add(struct ffs *fs, uint64_t p, int delta)
{
	uint32_t ino, f, crc[FF_MEMBERS_MAX], live;
	int rc = ffs_csum_get(fs, p, &ino, &f, crc);

	if (rc < 0)
		return rc;
	live = FFS_CSUM_TAIL_LIVE(f);
	if (ino != FFS_CSUM_TAILS || live == 0 || (delta > 0 && live == 0xffffu)) {
		ff_log(FF_LOG_ERR, "data stripe %llu: a tail or patch points into it, but it holds "
		       "none; run fsck.framefs", (unsigned long long)p);
		return -EUCLEAN;
	}
	live = (uint32_t)((int)live + delta);
	rc = ffs_csum_set(fs, p, FFS_CSUM_TAILS, FFS_CSUM_TAIL_PACK(FFS_CSUM_TAIL_HWM(f), live), crc);
	return rc < 0 ? rc : (int)live;
}

int ffs_tail_release(struct ffs *fs, uint64_t p)
{
	int live = live_add(fs, p, -1);

	if (live != 0)
		return live < 0 ? live : 0;
	tail_retire_idle(fs, p);
	return ffs_tail_closed(fs, p);
}

int ffs_tail_grab(struct ffs *fs, uint64_t p)
{
	int live = live_add(fs, p, +1);

	return live < 0 ? live : 0;
}

uint32_t ffs_csum_vlen(const struct ffs *fs, uint32_t ino, uint32_t fstripe)
{
	if (ino == FFS_CSUM_TAILS)
		return FF_MIN(FFS_CSUM_TAIL_HWM(fstripe) * FFS_TAIL_ROW, fs->g->chunk_bytes);
	return fs->g->chunk_bytes;
}

/*
 * How many rows buffer wb would take as a tail, 0 when it goes to a stripe
 * of its own: tails are off, it is preallocated (written in place), a small
 * file moving to stripes, or its bytes fill every row.  What it holds ends
 * at the file's size or the highest byte written into it (hi), whichever is
 * further (a write lands in the buffer before the size catches up).  dlock
 * held; takes fs->lock.
 */
uint32_t ffs_tail_rows(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	const struct ff_geom *g = fs->g;
	uint64_t base = wb->fstripe * fs->stripe_bytes, size, len;
	uint32_t rows;

	if (!ffs_tails_on(fs) || wb->in_place || wb->force_stripe || wb->hi >= fs->stripe_bytes)
		return 0; /* (a frame's full stripes: written to the end, no lock taken) */
	pthread_mutex_lock(&fs->lock);
	size = ff_le64(fi->d.size);
	pthread_mutex_unlock(&fs->lock);
	len = FF_MIN(FF_MAX(size > base ? size - base : 0, wb->hi), fs->stripe_bytes);
	if (len == 0)
		return 0;
	rows = (uint32_t)FF_DIV_ROUND_UP(len, (uint64_t)g->ndata * FFS_TAIL_ROW);
	if (rows >= fs->tails->rows_per_chunk)
		return 0;
	/* past its content the buffer must read as zeros, whatever a fill
	 * brought in: the tail keeps [0, rows * ndata * 4 KiB) */
	memset(wb->data + len, 0, (size_t)rows * g->ndata * FFS_TAIL_ROW - len);
	return rows;
}

/*
 * Take an idle slot for `rows` rows (no lock held): the best fit among the
 * idle open stripes; else an idle slot opens a new tail stripe, retiring
 * the stripe it held (*retired): on its spare when a commit has listed it,
 * *own (the buffer's reservation) becoming the spare and *own
 * WB_NO_STRIPE; else on *own.  NULL when every slot is busy or too full.
 * The slot is ours (busy) until the write is mapped (ffs_tail_done); its hwm
 * is where the rows go.  A patch batch waits for a slot; a tail never does,
 * and it breaks the chain of batches replay follows from the listed rows
 * (patch.c), so the stripe counts as unlisted until a commit maps it.
 */
static struct tslot *slot_take(struct ffs *fs, uint32_t rows, uint64_t *ownp, uint64_t *retired,
			       bool batch)
{
	struct tails *t = fs->tails;
	struct tslot *s, *empty, *fullest, *reopen;
	uint64_t own = *ownp;
	unsigned idle_open;

	*retired = NO_STRIPE;
	pthread_mutex_lock(&t->lock);
again:
	s = empty = fullest = NULL;
	idle_open = 0;
	for (unsigned i = 0; i < t->nslots; i++) { /* idle slots: the best fit, and one to reopen */
		struct tslot *x = &t->slot[i];

		if (x->busy)
			continue;
		if (x->p == NO_STRIPE) { /* one with a listed spare first */
			if (!empty || (x->spare_listed && !empty->spare_listed))
				empty = x;
			continue;
		}
		idle_open++;
		if (!x->held && x->hwm + rows <= t->rows_per_chunk && (!s || x->hwm > s->hwm))
			s = x;
		if (!fullest || x->hwm > fullest->hwm)
			fullest = x;
	}
	/* a new stripe: in an empty slot while few idle stripes are open, else
	 * in place of the fullest idle one (the comment at the top says why) */
	reopen = empty && idle_open < TAIL_OPEN_IDLE ? empty : fullest ? fullest : empty;
	if (!s && !reopen && batch && own != WB_NO_STRIPE) {
		/* every slot has a write in flight: the engine completes each
		 * (member deadlines), and ffs_tail_done clears busy and signals;
		 * the waiter holds no lock ffs_tail_done needs (no dlock either:
		 * the completion thread takes dlocks after a slot's write) */
		const char *prev = ffs_watch_wait_begin("a tail stripe slot for patches");

		pthread_cond_wait(&t->cond, &t->lock);
		ffs_watch_wait_end(prev);
		goto again;
	}
	if (!s && (!reopen || own == WB_NO_STRIPE)) {
		pthread_mutex_unlock(&t->lock);
		atomic_fetch_add(&fs->stats.tail_busy, 1);
		return NULL;
	}
	if (!s) { /* open a tail stripe: rows [0, rows) */
		s = reopen;
		*retired = s->p;
		if (s->spare != NO_STRIPE && s->spare_listed) {
			s->p = s->spare;
			s->listed_seq = s->spare_listed;
			s->spare = own;
			s->spare_listed = 0;
			*ownp = WB_NO_STRIPE; /* the slot's now */
		} else {
			s->p = own;
			s->listed_seq = 0;
		}
		s->hwm = 0;
		s->held = false;
		memset(s->crc, 0, sizeof(s->crc));
		memset(s->img, 0, fs->stripe_bytes);
	}
	s->busy = true;
	s->busy_batch = batch;
	if (!batch)
		s->listed_seq = 0;
	s->batch_seq = atomic_fetch_add(&fs->pbatch_seq, 1); /* under t->lock: see ffs_tails_listing */
	pthread_mutex_unlock(&t->lock);
	return s;
}

/* Write rows [row0, row0 + rows) of slot s's image, which the caller has
 * filled (no lock held): the chunk crcs continue over them into wb->crc,
 * and done (the write buffers') hands them to the completion thread, which
 * maps them (ffs_tail_done). */
static void rows_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb, struct tslot *s,
			uint32_t row0, uint32_t rows, uint64_t retired, void (*done)(struct ff_raid_io *io))
{
	const struct ff_geom *g = fs->g;
	int rc;

	for (uint32_t i = 0; i < g->ndata; i++)
		wb->crc[i] = ff_crc32c(s->crc[i], s->img + (size_t)i * g->chunk_bytes +
				       (size_t)row0 * FFS_TAIL_ROW, (size_t)rows * FFS_TAIL_ROW);
	if (retired != NO_STRIPE) {
		pthread_mutex_lock(&fs->lock);
		rc = ffs_tail_closed(fs, retired);
		pthread_mutex_unlock(&fs->lock);
		if (rc < 0)
			ff_log(FF_LOG_ERR, "tail stripe %llu could not be let go: %s",
			       (unsigned long long)retired, strerror(-rc));
	}
	pthread_mutex_lock(&fs->lock);
	fi->refs++; /* held until the completion thread is done with it */
	pthread_mutex_unlock(&fs->lock);
	wb->fs = fs;
	wb->fi = fi;
	wb->tslot = (int)(s - fs->tails->slot);
	wb->trow0 = row0;
	wb->trows = rows;
	memset(&wb->io, 0, sizeof(wb->io));
	wb->io.op = FF_RAID_WRITE;
	wb->io.space = FF_SPACE_DATA;
	wb->io.buf = s->img;
	wb->io.done = done;
	wb->io.priv = wb;
	/* rows [row0, row0 + rows) of every chunk, parity from them alone: rows
	 * no extent points to (opening, a reserved stripe: nothing live in it) */
	if (row0 == 0)
		atomic_fetch_add(&fs->stats.tail_stripes, 1);
	wb->io.flags = FF_RAID_IO_NO_INTENT | FF_RAID_IO_ROWS;
	wb->io.off = s->p * fs->stripe_bytes + (uint64_t)row0 * FFS_TAIL_ROW;
	wb->io.len = (uint64_t)rows * FFS_TAIL_ROW;
	rc = ff_raid_submit(fs->raid, &wb->io);
	if (rc < 0) {
		wb->io.result = rc;
		done(&wb->io);
	}
}

/*
 * Send buffer wb (marked writing, no lock held) as a tail of `rows` rows:
 * 0 when it went, 1 when every open tail stripe is busy or too full (the
 * caller writes a stripe instead).
 */
int ffs_tail_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb, uint32_t rows,
		void (*done)(struct ff_raid_io *io))
{
	const struct ff_geom *g = fs->g;
	uint64_t retired;
	struct tslot *s = slot_take(fs, rows, &wb->pstripe, &retired, false);
	uint32_t row0;

	if (!s)
		return 1;
	row0 = s->hwm;
	/* the slot is ours until the write is mapped: its image and crcs too */
	for (uint32_t i = 0; i < g->ndata; i++)
		memcpy(s->img + (size_t)i * g->chunk_bytes + (size_t)row0 * FFS_TAIL_ROW,
		       wb->data + (size_t)i * rows * FFS_TAIL_ROW, (size_t)rows * FFS_TAIL_ROW);
	wb->npatch = 0;
	atomic_fetch_add(&fs->stats.tail_writes, 1);
	rows_submit(fs, fi, wb, s, row0, rows, retired, done);
	return 0;
}

void ffs_tail_batch_take(struct ffs *fs, struct wbuf *wb, uint32_t rows, struct tail_batch *tb)
{
	struct tslot *s = slot_take(fs, rows, &wb->pstripe, &wb->tretired, true);

	FF_ASSERT(s); /* ffs_patch_plan took only buffers with a reserved stripe */
	tb->slot = s;
	tb->img = s->img;
	tb->p = s->p;
	tb->seq = s->batch_seq;
	tb->row0 = s->hwm;
}

void ffs_tail_batch_send(struct ffs *fs, struct finode *fi, struct wbuf *wb, const struct tail_batch *tb,
		     uint32_t rows, void (*done)(struct ff_raid_io *io))
{
	rows_submit(fs, fi, wb, tb->slot, tb->row0, rows, wb->tretired, done);
}

/*
 * Completion thread: a tail's rows are on the members (or failed).  Maps
 * the file stripe to them with the tail stripe's new checksum entry, in
 * one transaction, then lets the slot take the next tail.  fs->lock held.
 */
int ffs_tail_done(struct ffs *fs, struct finode *fi, struct wbuf *wb)
{
	struct tails *t = fs->tails;
	struct tslot *s = &t->slot[wb->tslot];
	const struct ff_geom *g = fs->g;
	uint32_t old[FF_MEMBERS_MAX], ino, f, live = 0, *crc = wb->crc; /* ffs_tail_submit's */
	uint32_t row0 = wb->trow0, rows = wb->trows, npatch = 0;
	uint64_t before;
	bool opening = row0 == 0;
	uint64_t p = s->p;
	int rc = wb->io.result;

	FF_ASSERT(s->busy);
	if (rc == 0 && ffs_is_small(fi)) { /* its bytes move from pool blocks to the tail */
		rc = ffs_small_release(fs, fi);
		if (rc == 0)
			atomic_fetch_add(&fs->stats.small_promotions, 1);
	}
	if (rc == 0 && opening)
		rc = ffs_commit_stripes(fs, p, 1);
	if (rc == 0 && !opening && (rc = ffs_csum_get(fs, p, &ino, &f, old)) == 0)
		live = FFS_CSUM_TAIL_LIVE(f);
	for (struct wbuf *w = wb; w; w = w->gnext)
		npatch += w->npatch;
	if (rc == 0) /* each patch counts one, as a tail does */
		rc = ffs_csum_set(fs, p, FFS_CSUM_TAILS,
				  FFS_CSUM_TAIL_PACK(row0 + rows, live + (npatch ? npatch : 1)), crc);
	/* may let an older tail or patch of this file go, in this stripe too */
	before = fi->tx_seq;
	for (struct wbuf *w = wb; w && rc == 0; w = w->gnext)
		for (unsigned i = 0; rc == 0 && i < w->npatch; i++) {
			uint32_t pcrc[FFS_PATCH_BLOCKS_MAX], s0 = w->patch[i].slot0;

			for (uint32_t j = 0; j < w->patch[i].n; j++) /* the slot's image is ours until done */
				pcrc[j] = ffs_patch_crc(p, s0 + j, s->img + patch_slot_offset(fs->g, s0 + j));
			rc = ffs_patch_add(fs, fi, w->fstripe, w->patch[i].b0, w->patch[i].n, p, s0, pcrc);
		}
	if (rc == 0 && npatch) {
		/* a batch in a stripe the last commit listed is replayable
		 * (patch.c): the file's fsync waits for that commit and the
		 * rows, not for one of its own */
		pthread_mutex_lock(&t->lock);
		fi->tx_seq = s->listed_seq ? FF_MAX(before, s->listed_seq) : fs->j_seq;
		pthread_mutex_unlock(&t->lock);
		fi->patch_unflushed = true;
	}
	for (struct wbuf *w = wb->gnext; w; w = w->gnext) /* gathered: their reservations go back */
		if (w->pstripe != WB_NO_STRIPE)
			ffs_unreserve_stripes(fs, w->pstripe, 1);
	if (rc == 0 && !npatch)
		rc = ffs_extent_map_tail(fs, fi, wb->fstripe, p, row0, rows);
	if (rc == 0)
		ffs_rcache_extended(fs, p);
	pthread_mutex_lock(&t->lock);
	if (!opening && wb->pstripe != WB_NO_STRIPE) { /* appended: its own stripe is not needed */
		if (s->spare == NO_STRIPE) {
			s->spare = wb->pstripe; /* listed by the next commit */
			s->spare_listed = 0;
		} else {
			ffs_unreserve_stripes(fs, wb->pstripe, 1);
		}
	}
	if (rc == 0) {
		s->hwm = row0 + rows;
		memcpy(s->crc, crc, g->ndata * sizeof(*crc));
	} else if (opening) {
		s->p = NO_STRIPE; /* never mapped: the reservation goes back below */
	}
	s->busy = false;
	if (s->p != NO_STRIPE && (s->held || s->hwm == t->rows_per_chunk))
		s->p = NO_STRIPE; /* full, or a repair waits for it: retired */
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (rc < 0 && opening)
		ffs_unreserve_stripes(fs, p, 1);
	else if (rc == 0 && !tail_open(fs, p))
		rc = ffs_tail_closed(fs, p);
	if (rc == 0 && !npatch)
		atomic_fetch_add(&fs->stats.tail_packed, 1);
	for (struct wbuf *w = wb; w; w = w->gnext)
		w->npatch = 0;
	return rc;
}

/*
 * Bytes [o, o + n) of a file stripe that is a tail of `rows` rows at row0
 * of stripe p: piece by piece, each data chunk's rows in turn; zeros past
 * them.  A tail extent from a damaged inode (rows outside the chunk, none,
 * or a tail on a volume without them) is refused, never read.
 */
int ffs_tail_read(struct ffs *fs, uint64_t p, uint32_t row0, uint32_t rows, uint64_t o, size_t n,
	      uint8_t *dst)
{
	const struct ff_geom *g = ffs_row_geo(fs, p)->g; /* an old file's tail: the old one */
	uint64_t part = (uint64_t)rows * FFS_TAIL_ROW, end = part * g->ndata;

	if (rows == 0 || row0 + rows > g->chunk_bytes / FFS_TAIL_ROW ||
	    ff_le32(fs->sb->version) < FFS_VERSION_TAILS) {
		ff_log(FF_LOG_ERR, "data stripe %llu: a tail at rows %u..%u is not one this volume "
		       "can hold; run fsck.framefs", (unsigned long long)p, row0, row0 + rows);
		return -EUCLEAN;
	}

	while (n > 0) {
		uint64_t i = o / part, y = o % part;
		size_t m = (size_t)FF_MIN((uint64_t)n, o < end ? part - y : (uint64_t)n);
		int rc = 0;

		if (o >= end)
			memset(dst, 0, m);
		else
			rc = ffs_read_stripe_bytes(fs, p, i * g->chunk_bytes + row0 * FFS_TAIL_ROW + y, m,
					       dst);
		if (rc < 0)
			return rc;
		o += m;
		dst += m;
		n -= m;
	}
	return 0;
}

void ffs_tails_listing(struct ffs *fs, uint64_t seq, struct ffs_patch_open *po)
{
	struct tails *t = fs->tails;
	unsigned n = 0;

	uint64_t next;

	memset(po, 0, sizeof(*po)); /* zeros below version 5 */
	if (!t || !(fs->features & FFS_FEAT_PATCHES))
		return;
	pthread_mutex_lock(&t->lock);
	/* batches this commit does not hold: those not yet numbered, and those
	 * in flight (numbered under t->lock, so none is missed) */
	next = atomic_load(&fs->pbatch_seq);
	for (unsigned i = 0; i < t->nslots; i++)
		if (t->slot[i].busy && t->slot[i].batch_seq < next)
			next = t->slot[i].batch_seq;
	po->next_seq = ff_cpu_to_le64(next);
	_Static_assert(2 * TAIL_SLOTS_MAX <= FFS_PATCH_OPEN_MAX, "every slot's stripe and spare listed");
	for (unsigned i = 0; i < t->nslots; i++) {
		struct tslot *s = &t->slot[i];

		/* an opening still in flight too: free in this commit, its
		 * stripe replays as opened at row 0, as a spare does */
		if (s->p != NO_STRIPE) {
			po->stripe[n++] = ff_cpu_to_le64(s->p);
			/* not while a tail is in flight: this commit's hwm is
			 * before it, and replay stops at its rows */
			s->listed_seq = s->busy && !s->busy_batch ? 0 : seq;
		}
		if (s->spare != NO_STRIPE) {
			po->stripe[n++] = ff_cpu_to_le64(s->spare);
			s->spare_listed = seq;
		}
	}
	pthread_mutex_unlock(&t->lock);
	po->count = ff_cpu_to_le32(n);
}

unsigned ffs_tails_spare_count(struct ffs *fs)
{
	struct tails *t = fs->tails;
	unsigned n = 0;

	if (!t)
		return 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++)
		n += t->slot[i].spare != NO_STRIPE;
	pthread_mutex_unlock(&t->lock);
	return n;
}

void ffs_tails_drop_spares(struct ffs *fs)
{
	struct tails *t = fs->tails;

	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++)
		if (t->slot[i].spare != NO_STRIPE) {
			ffs_unreserve_stripes(fs, t->slot[i].spare, 1);
			t->slot[i].spare = NO_STRIPE;
			t->slot[i].spare_listed = 0;
		}
	pthread_mutex_unlock(&t->lock);
}

/* Unmount: every open tail stripe is retired (freed if empty), the spares
 * given back.  fs->lock held. */
int ffs_tails_retire_all(struct ffs *fs)
{
	struct tails *t = fs->tails;
	uint64_t ps[TAIL_SLOTS_MAX];
	int rc = 0;

	if (!t)
		return 0;
	ffs_tails_drop_spares(fs);
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++) {
		FF_ASSERT(!t->slot[i].busy); /* the files were flushed: nothing in flight */
		ps[i] = t->slot[i].p;
		t->slot[i].p = NO_STRIPE;
	}
	pthread_mutex_unlock(&t->lock);
	for (unsigned i = 0; i < t->nslots && rc == 0; i++)
		if (ps[i] != NO_STRIPE)
			rc = ffs_tail_closed(fs, ps[i]);
	return rc;
}

bool ffs_tail_hold(struct ffs *fs, uint64_t p)
{
	struct tails *t = fs->tails;
	bool busy = false, retired = false;

	if (!t)
		return true;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < t->nslots; i++) {
		struct tslot *s = &t->slot[i];

		if (s->p != p)
			continue;
		if (s->busy) {
			s->held = true; /* retired when its write is mapped */
			busy = true;
		} else {
			s->p = NO_STRIPE;
			retired = true;
		}
	}
	pthread_mutex_unlock(&t->lock);
	if (retired && ffs_tail_closed(fs, p) < 0)
		ff_log(FF_LOG_ERR, "tail stripe %llu could not be let go", (unsigned long long)p);
	return !busy;
}
