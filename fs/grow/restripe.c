/* SPDX-License-Identifier: MIT */
/*
 * The restripe: every file still in the old geometry of a grow taken on
 * (grow.c) is copied to free rows at the new width and its map swapped in
 * one transaction; its old rows are freed by that commit only, so a stop
 * anywhere leaves every file readable where it was.  When no row is left in
 * the old geometry the grow ends (the superblock, then the array).
 *
 * Two drivers share one pass over the inodes (restripe_pass):
 *  - offline (ffs_grow_run, framefs-admin grow): no limit, to the end;
 *  - mounted (ffs_grow_start, the daemon): a thread that yields to streams
 *    as a rebuild does — min_bps while files are read or written, max_bps
 *    (0: no limit) when idle — and stops between two stripes at unmount.
 *
 * Mounted, the move pauses while the array has no redundancy left (RAID5
 * with a member failed or being rebuilt, RAID6 with two): every row it
 * wrote then would be one failure from lost, and the files it moves are
 * safe where they are.  It goes on when a rebuild ends (pause_unprotected).
 *
 * Mounted, users work on beside it.  A file in the old geometry is moved
 * before anything changes it: a write, a truncation to a size other than 0
 * or a fallocate moves it first, in the writer's thread (ffs_grow_move_now,
 * through the data path's hook), and goes on in the new geometry.  So an
 * old file's bytes never change while they are copied; what can change is
 * that the file is moved by the other mover (the thread, or a writer), or
 * truncated to 0 or unlinked and rewritten: the commit then finds the file
 * no longer in the geometry it was copied from (or another size), drops the
 * copies and leaves it.  Readers of the file read again when its map moves
 * (data.c, map_gen), in its new geometry.
 */
#include <errno.h>
#include <string.h>

#include "fs/grow/grow.h"
#include "io/bitmap.h"

/* What a mover keeps from one file to the next: the ring its copies are
 * written through (ring_get) and the list of the rows it copied, grown only
 * for a file with more stripes than any before it. */
struct move_ring;
struct moved;
struct mover {
	struct move_ring *ring;
	struct moved *moves;
	uint64_t moves_cap;
	bool now; /* a writer waits on it: no throttle, no pause, no stop (ffs_grow_move_now) */
};

struct restripe {
	pthread_t thread;
	bool started, running;
	/* asked by ffs_grow_stop (under lock, with the broadcast), read
	 * between stripes by the thread without it: atomic */
	_Atomic bool stop;
	bool mounted;               /* the daemon's thread: it pauses without redundancy */
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* stop asked (throttle and pause wake), the array's
				     * members changed (pause wakes: ffs_grow_array_changed) */
	uint64_t min_bps, max_bps;  /* 0: no limit */
	uint64_t start_ns;          /* for the status' rate */
	double tokens;              /* bytes the rate allows now (throttle) */
	uint64_t tokens_ns;         /* when tokens was last filled */
	uint64_t fg_moved_ns;       /* when others' foreground bytes last moved */
	uint64_t end_ns;            /* when the thread ended (the rate's span), 0 while it runs */
	uint64_t last_fg;           /* the engine's foreground bytes (ours are background) */
	uint64_t last_user;         /* users' request bytes (fs->stats.user_bytes) */
	uint64_t nospc_bytes;       /* the largest file a pass left for want of free rows */
	struct ffs_grow_status st;
	struct mover bg;            /* the thread's, or the offline run's (restripe) */
	struct mover now;           /* the writers' (ffs_grow_move_now), one at a time */
	pthread_mutex_t now_lock;   /* held by the writer whose move uses `now` */
};

static struct restripe *rs_get(struct ffs *fs)
{
	if (!fs->restripe) {
		struct restripe *rs = calloc(1, sizeof(*rs));
		pthread_condattr_t ca;

		if (!rs)
			return NULL;
		pthread_mutex_init(&rs->lock, NULL);
		pthread_mutex_init(&rs->now_lock, NULL);
		rs->now.now = true;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* as ff_mono_ns: wait_or_stop */
		pthread_cond_init(&rs->cond, &ca);
		pthread_condattr_destroy(&ca);
		rs->min_bps = FFS_GROW_MIN_BPS_DEFAULT;
		rs->max_bps = FFS_GROW_MAX_BPS_DEFAULT;
		/* published whole: engine threads read it (ffs_grow_array_changed) */
		__atomic_store_n(&fs->restripe, rs, __ATOMIC_RELEASE);
	}
	return fs->restripe;
}

/* Wait ns, or less when stop is asked: ends at the deadline (rs->cond is
 * on the monotonic clock, rs_get) or at ffs_grow_stop's broadcast. */
static void wait_or_stop(struct restripe *rs, uint64_t ns)
{
	uint64_t due = ff_mono_ns() + ns;
	struct timespec ts = { .tv_sec = (time_t)(due / 1000000000ull),
			       .tv_nsec = (long)(due % 1000000000ull) };

	pthread_mutex_lock(&rs->lock);
	if (!rs->stop)
		pthread_cond_timedwait(&rs->cond, &rs->lock, &ts);
	pthread_mutex_unlock(&rs->lock);
}

/*
 * Foreground first, as the rebuild (raid/rebuild.c): the volume is busy
 * while users' read or write requests came in, or the engine moved bytes
 * for foreground requests, in the last half second (files being read or
 * written; the requests are seen as they arrive, before their stripes
 * reach the members: a stream starting is met at its first frame); then
 * min_bps, else max_bps
 * (0: no limit).  A token bucket with 100 ms of burst paces the bytes
 * moved: a pause, an idle spell at max_bps or a slow one gives no credit
 * that a stream starting then would pay for.  Each turn waits until the
 * bucket holds `moved` at the rate of the moment (wait_or_stop: a deadline,
 * or at once on stop), so the loop ends.
 */
#define BUSY_NS 500000000ull

static void throttle(struct ffs *fs, struct restripe *rs, uint64_t moved)
{
	while (!rs->stop) {
		/* the restripe's own requests are background (ffs_io_background):
		 * not in fg_bytes, so what moved is others' */
		uint64_t now = ff_mono_ns(), fg = atomic_load(&ff_raid_stats(fs->raid)->fg_bytes);
		uint64_t user = atomic_load(&fs->stats.user_bytes);
		uint64_t others = fg - rs->last_fg, rate;

		/* busy: users' requests came in (seen as they arrive, before
		 * their stripes reach the members), or others' bytes moved */
		if (others > fs->g->chunk_bytes || user != rs->last_user)
			rs->fg_moved_ns = now;
		rs->last_fg = fg;
		rs->last_user = user;
		pthread_mutex_lock(&rs->lock);
		rate = now - rs->fg_moved_ns < BUSY_NS ? rs->min_bps : rs->max_bps;
		pthread_mutex_unlock(&rs->lock);
		if (!rate) {
			rs->tokens = 0;
			rs->tokens_ns = now;
			return;
		}
		rs->tokens += (double)rate * (double)(now - rs->tokens_ns) / 1e9;
		rs->tokens = FF_MIN(rs->tokens, (double)rate / 10 + (double)moved);
		rs->tokens_ns = now;
		if (rs->tokens >= (double)moved) {
			rs->tokens -= (double)moved;
			return;
		}
		wait_or_stop(rs, (uint64_t)(((double)moved - rs->tokens) * 1e9 / (double)rate) + 1);
	}
}

/* Has the array no redundancy left: as many roles not active (failed,
 * missing, or being rebuilt: not read yet) as it has parity?  why says so. */
static bool unprotected(struct ffs *fs, char *why, size_t len)
{
	const struct ff_geom *g = fs->g;
	unsigned down = 0;

	for (unsigned i = 0; i < g->nmembers; i++)
		down += ff_raid_member_state(fs->raid, i) != FF_MEMBER_ACTIVE;
	if (down < g->nparity)
		return false;
	snprintf(why, len, "%u of %u members failed or being rebuilt: no redundancy left, the move "
		 "waits for the rebuild", down, g->nmembers);
	return true;
}

/*
 * Mounted, before each stripe moved: wait while the array has no
 * redundancy left (unprotected), status saying so.  The wait ends at stop
 * (ffs_grow_stop broadcasts) or when a role comes back: the engine posts
 * rebuild-finished after the role is active again, and member-failed after
 * it is failed, and the filesystem's event hook (mount.c) then broadcasts
 * cond (ffs_grow_array_changed) under rs->lock, the lock this predicate is
 * tested under, so no change is missed between the test and the wait.  An
 * array that never gets its redundancy back keeps the move paused until
 * unmount: the files stay readable where they are.
 */
static void pause_unprotected(struct ffs *fs, struct restripe *rs)
{
	char why[sizeof(rs->st.paused_reason)];

	if (!rs->mounted)
		return; /* offline: nothing rebuilds meanwhile (a grow needs every member) */
	pthread_mutex_lock(&rs->lock);
	while (!rs->stop && unprotected(fs, why, sizeof(why))) {
		if (!rs->st.paused)
			ff_log(FF_LOG_WARN, "grow: restripe paused: %s", why);
		rs->st.paused = true;
		memcpy(rs->st.paused_reason, why, sizeof(why));
		pthread_cond_wait(&rs->cond, &rs->lock);
	}
	if (rs->st.paused && !rs->stop)
		ff_log(FF_LOG_INFO, "grow: restripe resumed: the array has redundancy again");
	rs->st.paused = false;
	rs->st.paused_reason[0] = '\0';
	pthread_mutex_unlock(&rs->lock);
}

void ffs_grow_array_changed(struct ffs *fs)
{
	struct restripe *rs = __atomic_load_n(&fs->restripe, __ATOMIC_ACQUIRE);

	if (rs) {
		pthread_mutex_lock(&rs->lock);
		pthread_cond_broadcast(&rs->cond);
		pthread_mutex_unlock(&rs->lock);
	}
}

/* A moved stripe: where file stripe k went, and its chunks' checksums
 * (none when unwritten: a preallocated row, nothing written to it). */
struct moved {
	uint64_t k, p;
	bool unwritten;
	uint32_t crc[FF_MEMBERS_MAX];
};

/*
 * Preallocation (fallocate) survives a move: a new stripe that reads as
 * zeros where the file had a preallocated, unwritten stripe gets a row of
 * its own, mapped unwritten as fallocate maps it; so do preallocated
 * stripes past the end of the file (FALLOC_FL_KEEP_SIZE).  Zeros elsewhere
 * (a hole, or zeros written) are left a hole: they read the same.
 */
/* One past the last byte the file has preallocated (an unwritten extent's
 * end, in its own geometry), 0 when none; fs->lock held. */
static uint64_t prealloc_end(struct ffs *fs, struct finode *fi, uint64_t So)
{
	uint64_t k = 0, end = 0, p, run;
	uint32_t flags;

	/* each step passes one extent or one hole: it ends after the last */
	for (;;) {
		int rc = ffs_extent_lookup(fs, fi, k, &p, &run, &flags);

		if (rc == 0 && (flags & FFS_X_UNWRITTEN))
			end = (k + run) * So;
		if ((rc < 0 && rc != -ENOENT) || run == UINT64_MAX)
			break;
		k += run;
	}
	return end;
}

/* Does new stripe k (S bytes) cover a preallocated, unwritten stripe of
 * the file (old stripes of So bytes)?  fs->lock held. */
static bool covers_prealloc(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t S, uint64_t So)
{
	for (uint64_t o = k * S / So; o <= ((k + 1) * S - 1) / So; o++) {
		uint64_t p, run;
		uint32_t flags;

		if (ffs_extent_lookup(fs, fi, o, &p, &run, &flags) == 0 && (flags & FFS_X_UNWRITTEN))
			return true;
	}
	return false;
}

/*
 * The copies' writes, MOVE_DEPTH in flight: the next stripe is read (the
 * old rows) while the last ones are written (the new), where one stripe at
 * a time left both waiting on each other (reads were 46 % of the loop,
 * writes 28 %; with the ring an offline grow moved 317 MB/s against 271,
 * medians of 3 runs on file members).  Each slot owns a stripe buffer for the
 * restripe's span (ring_get: allocated once, not per file or stripe).  A
 * write's completion clears its slot's bit and broadcasts under lock; the
 * loop waits on a slot's bit (ring_wait_slot) or on all of them
 * (ring_drain), and every such wait ends because the engine completes
 * every request it took (a member's timeout fails it).
 */
#define MOVE_DEPTH 4

struct move_ring {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned busy;      /* slots whose write is in flight */
	int err;            /* the first write's error since ring_drain */
	struct ff_raid_io io[MOVE_DEPTH];
	uint8_t *buf[MOVE_DEPTH];
};

static void ring_free(struct move_ring *q)
{
	if (!q)
		return;
	for (unsigned i = 0; i < MOVE_DEPTH; i++)
		free(q->buf[i]);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
}

static struct move_ring *ring_get(size_t stripe_bytes)
{
	struct move_ring *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	for (unsigned i = 0; i < MOVE_DEPTH; i++)
		if (!(q->buf[i] = ff_alloc_aligned(stripe_bytes))) {
			ring_free(q);
			return NULL;
		}
	return q;
}

static void ring_done(struct ff_raid_io *io)
{
	struct move_ring *q = io->priv;

	pthread_mutex_lock(&q->lock);
	if (io->result < 0 && q->err == 0)
		q->err = io->result;
	q->busy &= ~(1u << (unsigned)(io - q->io));
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

/* Wait until slot i's write completed (the engine completes every request). */
static void ring_wait_slot(struct move_ring *q, unsigned i)
{
	pthread_mutex_lock(&q->lock);
	while (q->busy & (1u << i))
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

/* Wait for every write in flight; the first error among them, then none. */
static int ring_drain(struct move_ring *q)
{
	int err;

	pthread_mutex_lock(&q->lock);
	while (q->busy)
		pthread_cond_wait(&q->cond, &q->lock);
	err = q->err;
	q->err = 0;
	pthread_mutex_unlock(&q->lock);
	return err;
}

static bool all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

/* File stripe k of fi at the new width, from what the file reads there
 * (its rows' geometry: stripes, tail, patches laid over, every chunk
 * checked against its checksum and healed from parity), into ring slot
 * `slot` (its last write completed), then written whole to a free row,
 * asynchronously (ring_drain waits): nothing points at the row until the
 * move commits.  *hole: the stripe reads as zeros, nothing written. */
static int move_stripe(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t size, uint64_t So,
		       struct move_ring *q, unsigned slot, struct moved *m, bool *hole)
{
	const struct ff_geom *g = fs->geo[0].g;
	uint64_t S = g->stripe_bytes, off = k * S, got;
	uint8_t *buf = q->buf[slot];
	struct ff_raid_io *io = &q->io[slot];
	ssize_t r = off < size ? ffs_data_read(fs, fi, buf, (size_t)FF_MIN(S, size - off), off, 0) : 0;
	int rc;

	if (r < 0)
		return (int)r;
	memset(buf + r, 0, S - (uint64_t)r);
	m->unwritten = all_zero(buf, S);
	pthread_mutex_lock(&fs->lock);
	/* zeros: a hole, or an unwritten row where fallocate reserved one */
	*hole = m->unwritten && !covers_prealloc(fs, fi, k, S, So);
	/* no row free but those the running transaction freed (other files'
	 * moves, users' deletes): its commit gives them back, as a writer's
	 * does (wbuf.c reserve_keeping) */
	rc = !*hole && !ffs_alloc_free_stripe_count(fs) && fs->npending ? ffs_journal_commit(fs) : 0;
	rc = rc < 0 || *hole ? rc : ffs_reserve_stripes(fs, fi->alloc_hint, 1, 0, &m->p, &got);
	if (rc == 0 && !*hole)
		fi->alloc_hint = m->p + 1;
	pthread_mutex_unlock(&fs->lock);
	m->k = k;
	if (rc < 0 || *hole || m->unwritten)
		return rc; /* an unwritten row is only mapped, at the commit */
	for (uint32_t i = 0; i < g->ndata; i++)
		m->crc[i] = ff_crc32c(0, buf + (size_t)i * g->chunk_bytes, g->chunk_bytes);
	memset(io, 0, sizeof(*io));
	io->op = FF_RAID_WRITE;
	io->space = FF_SPACE_DATA;
	io->flags = FF_RAID_IO_NO_INTENT | FF_RAID_IO_BACKGROUND;
	io->off = m->p * S;
	io->len = S;
	io->buf = buf;
	io->done = ring_done;
	io->priv = q;
	pthread_mutex_lock(&q->lock);
	q->busy |= 1u << slot;
	pthread_mutex_unlock(&q->lock);
	rc = ff_raid_submit(fs->raid, io);
	if (rc < 0) { /* not taken: no completion comes */
		pthread_mutex_lock(&q->lock);
		q->busy &= ~(1u << slot);
		pthread_mutex_unlock(&q->lock);
		pthread_mutex_lock(&fs->lock);
		ffs_unreserve_stripes(fs, m->p, 1);
		pthread_mutex_unlock(&fs->lock);
	}
	return rc;
}

/*
 * Move fi to the array's geometry: every file stripe copied to a free row
 * (move_stripe), then in the running transaction its old map goes
 * (stripes, tail, patches: freed at the commit, their rows leaving the old
 * geometry) and the new one comes; restripe_pass commits it with its batch.
 * -EAGAIN: the file was truncated or rewritten meanwhile (left as it is
 * now); -ECANCELED: stop asked.  Either way the file is as it was and the
 * copies' rows go back.
 */
static int move_file(struct ffs *fs, struct restripe *rs, struct mover *mv, struct finode *fi,
		     uint64_t *moved)
{
	uint64_t S = fs->geo[0].g->stripe_bytes, So, size, nk, n = 0, mapped = 0;
	const struct ffs_geo *from;
	struct moved *m;
	int rc = 0, werr;

	pthread_mutex_lock(&fs->lock);
	size = ff_le64(fi->d.size);
	from = ffs_file_geo(fs, fi);
	So = from->g->stripe_bytes;
	nk = FF_DIV_ROUND_UP(FF_MAX(size, prealloc_end(fs, fi, So)), S);
	pthread_mutex_unlock(&fs->lock);
	if (nk > mv->moves_cap) {
		uint64_t cap = FF_MAX(nk, 2 * mv->moves_cap);

		m = realloc(mv->moves, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		mv->moves = m;
		mv->moves_cap = cap;
	}
	m = mv->moves;
	for (uint64_t k = 0; k < nk && rc == 0; k++) {
		unsigned slot = (unsigned)(n % MOVE_DEPTH);
		bool hole = false;

		if (!mv->now)
			pause_unprotected(fs, rs);
		ring_wait_slot(mv->ring, slot);
		rc = !mv->now && rs->stop
			? -ECANCELED : move_stripe(fs, fi, k, size, So, mv->ring, slot, &m[n], &hole);
		n += rc == 0 && !hole;
		if (rc == 0 && k * S < size && !mv->now)
			throttle(fs, rs, FF_MIN(S, size - k * S));
	}
	/* every copy written (or failed) before the map moves; the commit
	 * below makes them durable before the records that name them (its
	 * member flush ahead of the records, journal.c preflush, covers every
	 * data write completed by then): a flush here was a third one per
	 * file */
	werr = ring_drain(mv->ring);
	rc = rc < 0 ? rc : werr;
	pthread_mutex_lock(&fs->lock);
	if (rc == 0 && (ffs_file_geo(fs, fi) != from || ff_le64(fi->d.size) != size))
		rc = -EAGAIN; /* truncated (and maybe written again) while copied */
	if (rc == 0)
		rc = ffs_extent_truncate(fs, fi, 0); /* readers read again (map_gen) */
	for (uint64_t i = 0; i < n && rc == 0; i++, mapped = i) {
		rc = ffs_commit_stripes(fs, m[i].p, 1);
		if (rc == 0)
			rc = ffs_csum_set(fs, m[i].p, (uint32_t)fi->ino, (uint32_t)m[i].k,
					  m[i].unwritten ? NULL : m[i].crc);
		if (rc == 0)
			rc = ffs_extent_map(fs, fi, m[i].k, m[i].p, 1,
					    m[i].unwritten ? FFS_X_UNWRITTEN : 0);
		if (rc == 0)
			ffs_rcache_invalidate(fs, m[i].p, 1);
	}
	if (rc == 0) {
		fi->geo = NULL; /* its rows are the array's now (ffs_file_geo) */
		fi->d.size = ff_cpu_to_le64(size);
		rc = ffs_istore(fs, fi);
	}
	if (rc < 0) /* the copies not taken into the map go back */
		for (uint64_t i = mapped; i < n; i++)
			ffs_unreserve_stripes(fs, m[i].p, 1);
	pthread_mutex_unlock(&fs->lock); /* committed with the batch (restripe_pass) */
	*moved = rc == 0 ? size : 0;
	return rc;
}

static uint64_t old_rows_left(const struct ffs *fs)
{
	uint64_t n = 0;

	for (uint64_t w = 0; w < FF_BITMAP_WORDS(ff_le64(fs->sb->nstripes)); w++)
		n += (uint64_t)__builtin_popcountll(
			__atomic_load_n(&fs->orows[w], __ATOMIC_RELAXED));
	return n;
}

static void st_set(struct restripe *rs, uint64_t files, uint64_t bytes)
{
	pthread_mutex_lock(&rs->lock);
	rs->st.files_moved += files;
	rs->st.bytes_moved += bytes;
	pthread_mutex_unlock(&rs->lock);
}

/*
 * Moves are committed in batches of RESTRIPE_COMMIT_BYTES: a commit costs
 * two member flushes (journal.c: before and after its records), and the
 * smaller the files the more one per file weighs (8 MiB files: 313 MB/s
 * batched against 257, two runs each; 40 MiB files: no difference beyond
 * the noise).  Until its batch commits, a moved file's old rows stay
 * taken (a crash leaves it where it was, whole) and its copies are read
 * from the map in memory; so the batch also commits early when the next
 * file may need rows that only the batch's commit gives back.  It commits
 * after RESTRIPE_COMMIT_NS too: at full speed (300-400 MB/s on file
 * members) 256 MiB take under a second anyway, and at the throttled rate
 * while streams play (rebuild_min, 64 MiB/s) a batch of 256 MiB would hold
 * status' rows left still for 4 s and leave 4 s of copies to redo after a
 * crash.
 */
#define RESTRIPE_COMMIT_BYTES (256 * FF_MiB)
#define RESTRIPE_COMMIT_NS 1000000000ull

static int commit_batch(struct ffs *fs, uint64_t *batch)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_journal_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	*batch = 0;
	return rc;
}

/*
 * One pass over the inodes: every regular file still in the old geometry
 * moved (move_file).  *moved: the files it moved.  Stops at the first error
 * but -EAGAIN (that file changed: the next pass sees it again if it is
 * still old) and -ENOSPC (too few free rows for that file now: the files
 * after it may fit, and each move frees more rows than it takes).
 */
static int restripe_pass(struct ffs *fs, struct restripe *rs, uint64_t *moved)
{
	uint64_t ninodes, batch = 0, batch_ns = 0, S = fs->geo[0].g->stripe_bytes;
	int rc = 0;

	*moved = 0;
	rs->nospc_bytes = 0;
	pthread_mutex_lock(&fs->lock);
	ninodes = ff_le64(fs->sb->ninodes);
	pthread_mutex_unlock(&fs->lock);
	for (uint64_t ino = 1; ino < ninodes && rc == 0 && !rs->stop; ino++) {
		struct finode *fi = NULL;
		uint64_t bytes;
		bool old, commit_first;

		pthread_mutex_lock(&fs->lock);
		old = ffs_inode_bit_used(fs, ino) && ffs_iget(fs, ino, &fi) == 0;
		old = old && S_ISREG(ff_le32(fi->d.mode)) && ffs_file_geo(fs, fi) != &fs->geo[0];
		if (fi && !old)
			ffs_iput(fs, fi);
		/* a full batch, an old one, or rows the next file may need held by it */
		commit_first = old && batch && (batch >= RESTRIPE_COMMIT_BYTES ||
			ff_mono_ns() - batch_ns >= RESTRIPE_COMMIT_NS ||
			fs->free_stripes <= FF_DIV_ROUND_UP(ff_le64(fi->d.size), S));
		pthread_mutex_unlock(&fs->lock);
		if (!old)
			continue;
		if (commit_first && (rc = commit_batch(fs, &batch)) < 0) {
			pthread_mutex_lock(&fs->lock);
			ffs_iput(fs, fi);
			pthread_mutex_unlock(&fs->lock);
			break;
		}
		if (!batch)
			batch_ns = ff_mono_ns();
		rc = move_file(fs, rs, &rs->bg, fi, &bytes);
		*moved += rc == 0;
		batch += rc == 0 ? FF_MAX(bytes, 1) : 0;
		if (rc == 0)
			st_set(rs, 1, bytes);
		else if (rc == -ENOSPC)
			rs->nospc_bytes = FF_MAX(rs->nospc_bytes, ff_le64(fi->d.size));
		else if (rc != -ECANCELED)
			ff_log(rc == -EAGAIN ? FF_LOG_INFO : FF_LOG_ERR, "grow: inode %llu %s: %s",
			       (unsigned long long)ino, rc == -EAGAIN ? "changed while moved, left for "
			       "the next pass" : "could not be moved", strerror(-rc));
		/* the loop ends on stop */
		rc = rc == -EAGAIN || rc == -ECANCELED || rc == -ENOSPC ? 0 : rc;
		pthread_mutex_lock(&fs->lock);
		ffs_iput(fs, fi);
		pthread_mutex_unlock(&fs->lock);
	}
	if (rc == 0) /* the last frees durable: their rows leave the map */
		rc = commit_batch(fs, &batch);
	return rc;
}

/*
 * A file still in the old geometry is about to change (data.c, through
 * fs->old_file_move): it is moved now, in the caller's thread, at full
 * speed and even while the move thread pauses for a rebuild (a change
 * written then would be written at the array's redundancy of the moment
 * anyway), and the change goes on in the new geometry.  The caller waits
 * for its file's copy: 0.09-0.4 s for a 256 MiB file on RAM members
 * (bench/grow_write.sh), on drives as long as copying that much takes.
 *
 * One writer moves at a time (now_lock: its wait ends when the holder's
 * move does, one unthrottled file); the thread may be moving the same file
 * meanwhile, and whichever commits its map second finds the file moved and
 * drops its copies (move_file: -EAGAIN).  The loop ends: after -EAGAIN the
 * file is no longer in the geometry it was copied from, and a file leaves
 * the old geometry only once (moved, or truncated to 0), so the next test
 * finds it new.  Its old rows are freed by the next commit, whoever makes
 * it; until then a crash leaves the file where it was, and the change with
 * it (the change is in the same running transaction, after the move).
 */
int ffs_grow_move_now(struct ffs *fs, struct finode *fi)
{
	struct restripe *rs = rs_get(fs);
	uint64_t t0 = ff_mono_ns(), bytes = 0;
	bool old = true;
	int rc = 0;

	if (!rs)
		return -ENOMEM;
	pthread_mutex_lock(&rs->now_lock);
	while (rc == 0) {
		pthread_mutex_lock(&fs->lock);
		old = ffs_file_geo(fs, fi) != &fs->geo[0];
		pthread_mutex_unlock(&fs->lock);
		if (!old)
			break;
		/* made at the first such write, kept to the unmount (ffs_grow_free) */
		if (!rs->now.ring && !(rs->now.ring = ring_get(fs->geo[0].g->stripe_bytes)))
			rc = -ENOMEM;
		else if ((rc = move_file(fs, rs, &rs->now, fi, &bytes)) == 0)
			st_set(rs, 1, bytes);
		else if (rc == -EAGAIN)
			rc = 0; /* moved or emptied meanwhile: the test above says */
	}
	pthread_mutex_unlock(&rs->now_lock);
	if (bytes)
		ff_log(FF_LOG_INFO, "grow: inode %llu moved to the new width ahead of a change to it "
		       "(%llu MiB in %.2f s)", (unsigned long long)fi->ino,
		       (unsigned long long)(bytes >> 20), (double)(ff_mono_ns() - t0) / 1e9);
	else if (rc < 0)
		ff_log(FF_LOG_ERR, "grow: inode %llu could not be moved to the new width for a change "
		       "to it: %s", (unsigned long long)fi->ino, strerror(-rc));
	return rc;
}

int ffs_grow_room(struct ffs *fs, uint64_t new_stripe_bytes, struct ff_err *err)
{
	uint64_t largest = 0, need, have;

	pthread_mutex_lock(&fs->lock);
	for (uint64_t ino = 1; ino < ff_le64(fs->sb->ninodes); ino++) {
		struct finode *fi;

		if (!ffs_inode_bit_used(fs, ino) || ffs_iget(fs, ino, &fi) < 0)
			continue;
		if (S_ISREG(ff_le32(fi->d.mode)) && !ffs_is_small(fi)) /* preallocation moves too */
			largest = FF_MAX(largest, FF_MAX(ff_le64(fi->d.size),
				prealloc_end(fs, fi, ffs_file_geo(fs, fi)->g->stripe_bytes)));
		ffs_iput(fs, fi);
	}
	need = FF_DIV_ROUND_UP(largest, new_stripe_bytes);
	have = fs->free_stripes;
	pthread_mutex_unlock(&fs->lock);
	if (have >= need)
		return 0;
	ff_err_set(err, "the restripe moves one file at a time and needs room for the largest "
		   "(%llu MiB) at the new width: %llu MiB free, %llu MiB needed; free some space first",
		   (unsigned long long)(largest >> 20),
		   (unsigned long long)(have * new_stripe_bytes >> 20),
		   (unsigned long long)(need * new_stripe_bytes >> 20));
	return -ENOSPC;
}

/* The last old row freed: the grow's record says so, then the array
 * forgets its old geometry (a stop between: the next read-write mount
 * ends it, ffs_grow_mount). */
static int finish(struct ffs *fs)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	fs->sb->grow.state = ff_cpu_to_le32(FFS_GROW_NONE);
	rc = ffs_super_write(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : ff_raid_grow_finish(fs->raid); /* it says so in the log */
}

/*
 * Passes until no row is left in the old geometry.  A pass that moves
 * nothing while rows are left has files too large for the free rows
 * (-ENOSPC: users filled the volume meanwhile), or rows whose frees wait
 * for readers to let go (alloc.c, reuse hold): up to PASSES_IDLE more
 * passes, 100 ms apart, then it fails saying which.
 */
#define PASSES_IDLE 50

static int restripe(struct ffs *fs, struct restripe *rs)
{
	unsigned idle = 0;
	uint64_t moved = 1;
	int rc = 0;

	rs->bg.ring = ring_get(fs->geo[0].g->stripe_bytes);
	if (!rs->bg.ring)
		return -ENOMEM;
	while (rc == 0 && !rs->stop && old_rows_left(fs)) {
		if (!moved && ++idle > PASSES_IDLE) {
			rc = rs->nospc_bytes ? -ENOSPC : -EBUSY;
			break;
		}
		if (!moved)
			wait_or_stop(rs, 100000000ull);
		rc = restripe_pass(fs, rs, &moved);
	}
	ring_free(rs->bg.ring); /* move_file drained it */
	rs->bg.ring = NULL;
	pthread_mutex_lock(&rs->lock);
	rs->st.rows_left = old_rows_left(fs);
	pthread_mutex_unlock(&rs->lock);
	if (rc == 0 && !rs->stop && rs->st.rows_left == 0)
		rc = finish(fs);
	return rc;
}

/* The widths, the capacity at each and the rows left at the old one. */
static void st_geometry(struct ffs *fs, struct ffs_grow_status *st)
{
	const struct ff_geom *og = fs->geo[1].g, *ng = fs->geo[0].g;
	uint64_t n = ff_le64(fs->sb->nstripes);

	st->old_nmembers = og->nmembers;
	st->new_nmembers = ng->nmembers;
	st->capacity_before = n * og->ndata * og->chunk_bytes;
	st->capacity_after = n * ng->ndata * ng->chunk_bytes;
	st->rows_before = st->rows_left = old_rows_left(fs);
}

static void rs_begin(struct ffs *fs, struct restripe *rs)
{
	memset(&rs->st, 0, sizeof(rs->st));
	rs->stop = false;
	rs->start_ns = ff_mono_ns();
	rs->tokens = 0;
	rs->tokens_ns = rs->start_ns;
	rs->fg_moved_ns = rs->start_ns - BUSY_NS; /* starts idle: busy once others move */
	rs->end_ns = 0;
	rs->last_fg = atomic_load(&ff_raid_stats(fs->raid)->fg_bytes);
	rs->last_user = atomic_load(&fs->stats.user_bytes);
	rs->st.active = true;
	st_geometry(fs, &rs->st);
}

int ffs_grow_run(struct ffs *fs, struct ffs_grow_progress *pr)
{
	struct restripe *rs;
	int rc;

	memset(pr, 0, sizeof(*pr));
	if (!fs->orows_start || fs->ro)
		return 0; /* no grow taken on */
	rs = rs_get(fs);
	if (!rs)
		return -ENOMEM;
	rs_begin(fs, rs);
	rs->mounted = false;
	rs->min_bps = rs->max_bps = 0; /* offline: nothing to yield to */
	rc = restripe(fs, rs);
	pr->files_moved = rs->st.files_moved;
	pr->bytes_moved = rs->st.bytes_moved;
	pr->rows_before = rs->st.rows_before;
	pr->rows_left = rs->st.rows_left;
	return rc;
}

/* ---- mounted: the daemon's restripe thread ---- */

static void *restripe_main(void *arg)
{
	struct ffs *fs = arg;
	struct restripe *rs = fs->restripe;
	int rc;

	ffs_io_background = true; /* its reads and writes yield to streams (worker.c) */
	ff_raid_event(fs->raid, FF_EVENT_GROW_STARTED, -1,
		      "%u to %u members: %llu rows to move", rs->st.old_nmembers, rs->st.new_nmembers,
		      (unsigned long long)rs->st.rows_before);
	rc = restripe(fs, rs);
	if (rc == -EBUSY)
		ff_raid_event(fs->raid, FF_EVENT_GROW_FAILED, -1, "%llu rows in the old geometry stay "
			      "held by readers: the next mount goes on",
			      (unsigned long long)rs->st.rows_left);
	else if (rc == -ENOSPC)
		ff_raid_event(fs->raid, FF_EVENT_GROW_FAILED, -1, "the volume is too full to move a "
			      "file of %llu MiB to the new width: free that much, then remount (the "
			      "restripe goes on)", (unsigned long long)(rs->nospc_bytes >> 20));
	else if (rc < 0)
		ff_raid_event(fs->raid, FF_EVENT_GROW_FAILED, -1, "%s: the next mount goes on",
			      strerror(-rc));
	else if (!rs->stop)
		ff_raid_event(fs->raid, FF_EVENT_GROW_FINISHED, -1, "%llu files, %llu MB moved",
			      (unsigned long long)rs->st.files_moved,
			      (unsigned long long)(rs->st.bytes_moved / 1000000));
	pthread_mutex_lock(&rs->lock);
	rs->st.error = rc;
	rs->st.done = rc == 0 && !rs->stop;
	rs->end_ns = ff_mono_ns();
	rs->running = false;
	pthread_mutex_unlock(&rs->lock);
	return NULL;
}

int ffs_grow_start(struct ffs *fs)
{
	struct restripe *rs;
	int rc;

	/* a grow taken on whose last rows were moved before a stop that came
	 * ahead of its end (finish): the thread finds none left and ends it */
	if (!fs->orows_start || fs->ro)
		return 0;
	rs = rs_get(fs);
	if (!rs)
		return -ENOMEM;
	/* running is set before the thread exists and only the thread (or a
	 * failed start) clears it: a thread with nothing to move may end before
	 * pthread_create returns, and must not be shown running for ever after
	 * (grow --wait then never ended: a CI run, an empty volume grown) */
	pthread_mutex_lock(&rs->lock);
	rs_begin(fs, rs);
	rs->mounted = true;
	rs->running = true;
	pthread_mutex_unlock(&rs->lock);
	rc = -pthread_create(&rs->thread, NULL, restripe_main, fs);
	rs->started = rc == 0;
	if (rc < 0) {
		pthread_mutex_lock(&rs->lock);
		rs->running = false;
		pthread_mutex_unlock(&rs->lock);
	}
	if (rc == 0)
		ff_log(FF_LOG_INFO, "grow: restriping %llu rows from %u to %u members in the background",
		       (unsigned long long)rs->st.rows_before, rs->st.old_nmembers, rs->st.new_nmembers);
	return rc;
}

void ffs_grow_stop(struct ffs *fs)
{
	struct restripe *rs = fs->restripe;

	if (!rs || !rs->started)
		return;
	pthread_mutex_lock(&rs->lock);
	rs->stop = true;
	pthread_cond_broadcast(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
	pthread_join(rs->thread, NULL);
	rs->started = false;
}

void ffs_grow_status(struct ffs *fs, struct ffs_grow_status *st)
{
	struct restripe *rs = fs->restripe;
	double secs, frac;

	memset(st, 0, sizeof(*st));
	if ((!rs || !rs->start_ns) && fs->orows && fs->geo[1].g) {
		/* a grow under way that nothing moves in this mount (read-only,
		 * or the thread could not start): stopped */
		st_geometry(fs, st);
		return;
	}
	if (!rs || !rs->start_ns)
		return;
	pthread_mutex_lock(&rs->lock);
	*st = rs->st;
	st->active = rs->running;
	secs = (double)((rs->end_ns ? rs->end_ns : ff_mono_ns()) - rs->start_ns) / 1e9;
	pthread_mutex_unlock(&rs->lock);
	if (st->active && fs->orows)
		st->rows_left = old_rows_left(fs);
	st->mb_per_s = secs > 0 ? (double)st->bytes_moved / 1e6 / secs : 0;
	frac = st->rows_before ? 1.0 - (double)st->rows_left / (double)st->rows_before : 1.0;
	st->fraction = frac;
	st->eta_s = st->active && frac > 0 && frac < 1 ? secs * (1 - frac) / frac : 0;
}

void ffs_grow_set_rate(struct ffs *fs, uint64_t min_bps, uint64_t max_bps)
{
	struct restripe *rs = rs_get(fs);

	if (rs) {
		pthread_mutex_lock(&rs->lock);
		rs->min_bps = min_bps;
		rs->max_bps = max_bps;
		pthread_cond_broadcast(&rs->cond); /* a throttle's wait takes the new rate */
		pthread_mutex_unlock(&rs->lock);
	}
}

void ffs_grow_free(struct ffs *fs)
{
	struct restripe *rs = fs->restripe;

	if (!rs)
		return;
	ffs_grow_stop(fs);
	free(rs->bg.moves);
	ring_free(rs->now.ring); /* no request is left to move a file */
	free(rs->now.moves);
	pthread_mutex_destroy(&rs->now_lock);
	pthread_mutex_destroy(&rs->lock);
	pthread_cond_destroy(&rs->cond);
	free(rs);
	fs->restripe = NULL;
}
