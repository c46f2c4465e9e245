/* SPDX-License-Identifier: MIT */
/*
 * The metadata journal: physical block logging in a circular area of META.
 *
 * A transaction is one or more descriptor blocks, each followed by the
 * images it lists, then a commit block carrying a crc32c chained over every
 * image.  All of it is written at once and flushed: the chained crc, not
 * write ordering, decides whether a transaction counts, so a commit block
 * that reached the media before its images is simply not replayed.
 *
 * Home blocks are written later, in bulk (checkpoint): when half the
 * journal is used, when many committed blocks wait, and at unmount.  A
 * checkpoint runs right after a commit, when no block is dirty, so what it
 * writes home is exactly the last committed image of each block; then the
 * tail moves to the head.  A commit is thus one write batch and one flush,
 * and replay — every committed image after the tail, in order — restores
 * the home blocks a crash left behind.
 *
 * At most one commit is in flight.  The group-commit thread lays the
 * running transaction out under fs->lock, opens the next one and lets the
 * lock go while the records are written and flushed, so operations go on
 * meanwhile (and close enough together to share the next commit); a
 * commit made under the lock (ffs_journal_commit) first completes the one in
 * flight, so transactions reach the journal one after another.  A commit
 * that fails puts its blocks back into the running transaction.
 *
 * Data stripes are never journaled.  A transaction that maps new stripes is
 * only built after their writes completed, and a flush before its records
 * are written makes them durable first (the records' crc cannot vouch for
 * the data they point to); stripes it frees stay reserved until it has committed
 * (ffs_alloc_tx_committed), so live data is never overwritten.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/meta/meta.h"

#define TX_BLOCKS_SOFT 512u

bool ffs_journal_tx_full(const struct ffs *fs)
{
	return fs->tx_count >= TX_BLOCKS_SOFT ||
	       fs->tx_count + 8 >= ff_le64(fs->sb->journal_blocks) / 4;
}

static uint64_t jblock(const struct ffs *fs, uint64_t pos)
{
	return ff_le64(fs->sb->journal_start) + pos % ff_le64(fs->sb->journal_blocks);
}

/* The journal is fully checkpointed after every commit, so the tail can
 * move to the head whenever space runs short. */
int ffs_journal_reset_tail(struct ffs *fs)
{
	fs->sb->journal_tail_pos = ff_cpu_to_le64(fs->j_head);
	fs->sb->journal_tail_seq = ff_cpu_to_le64(fs->j_seq);
	fs->j_used = 0;
	return ffs_super_write(fs);
}

/* ---- commit -------------------------------------------------------------- */

/* Where a staged transaction goes: one journal range, two when it wraps. */
struct jrange {
	uint64_t block, nblocks;
	uint8_t *buf;
};

/*
 * Lay the transaction out in journal order — each descriptor followed by
 * its images, then the commit block — in one staging buffer, to be written
 * as one request (two when it wraps around the journal's end): a commit is
 * then a single trip through the engine and one flush.  Fills rng[0..1]
 * and returns how many ranges there are.
 */
static unsigned stage_records(struct ffs *fs, struct mbuf **list, unsigned n, uint64_t ndesc,
			      uint8_t *stage, struct jrange rng[2])
{
	uint64_t need = ndesc + n + 1, jb = ff_le64(fs->sb->journal_blocks);
	uint64_t first = fs->j_head % jb, run = FF_MIN(need, jb - first);
	struct ffs_jcommit *commit;
	uint32_t crc = 0;
	unsigned k = 0;
	uint64_t at = 0;

	for (uint64_t d = 0; d < ndesc; d++) {
		struct ffs_jdesc *desc = (struct ffs_jdesc *)(stage + at * FFS_BLOCK);
		unsigned cnt = (unsigned)FF_MIN((uint64_t)FFS_JDESC_MAX, (uint64_t)(n - k));
		uint64_t dpos = fs->j_head + at++;

		memset(desc, 0, sizeof(*desc));
		memcpy(desc->uuid, fs->sb->uuid, 16);
		desc->seq = ff_cpu_to_le64(fs->j_seq);
		desc->count = ff_cpu_to_le32(cnt);
		desc->flags = ff_cpu_to_le32(d + 1 < ndesc ? FFS_JDESC_MORE : 0);
		for (unsigned i = 0; i < cnt; i++, k++, at++) {
			desc->blocks[i] = ff_cpu_to_le64(list[k]->blockno);
			crc = ff_crc32c(crc, list[k]->data, FFS_BLOCK);
			memcpy(stage + at * FFS_BLOCK, list[k]->data, FFS_BLOCK);
		}
		ffs_block_seal(desc, FFS_B_JDESC, jblock(fs, dpos));
	}
	commit = (struct ffs_jcommit *)(stage + at * FFS_BLOCK);
	memset(commit, 0, sizeof(*commit));
	memcpy(commit->uuid, fs->sb->uuid, 16);
	commit->seq = ff_cpu_to_le64(fs->j_seq);
	commit->nblocks = ff_cpu_to_le32(n);
	commit->images_crc = ff_cpu_to_le32(crc);
	commit->commit_time_ns = ff_cpu_to_le64(ff_wall_ns());
	/* where patch batches after this commit may be (patch.c), zeros
	 * without open tail stripes; the superblock keeps the last commit's
	 * list for a journal checkpointed to its head */
	if (fs->tails_listing)
		fs->tails_listing(fs, fs->j_seq, &commit->popen);
	fs->sb->popen = commit->popen;
	ffs_block_seal(commit, FFS_B_JCOMMIT, jblock(fs, fs->j_head + at));
	rng[0] = (struct jrange){ jblock(fs, fs->j_head), run, stage };
	if (run == need)
		return 1;
	rng[1] = (struct jrange){ jblock(fs, fs->j_head + run), need - run, stage + run * FFS_BLOCK };
	return 2;
}

/* ---- the commit in flight ------------------------------------------------- */

struct journal_flight {
	struct ffs_batch b;     /* b.lock also guards io_done */
	struct ff_raid_io io[2];
	struct jrange rng[2];   /* the staged records' journal ranges */
	unsigned nrng;
	bool preflush;          /* data it maps may not be durable yet: flush before the records */
	bool io_done;           /* written and flushed (or failed: b.err) */
	bool active;            /* fs->lock: laid out, not yet finished */
	uint64_t seq, need;     /* fs->lock, as the rest */
	uint64_t freed_mark;    /* it frees fs->pending_free's entries before this mark */
	struct mbuf **list;
	unsigned n;
};

static void free_stage(struct ffs *fs)
{
	ff_free_arena(fs->jstage, fs->jstage_blocks * FFS_BLOCK);
	ff_free_arena(fs->jlist, fs->jstage_blocks * sizeof(*fs->jlist));
	fs->jstage = NULL;
	fs->jlist = NULL;
	fs->jstage_blocks = 0;
}

static struct journal_flight *flight(struct ffs *fs)
{
	struct journal_flight *jf = fs->jflight;

	if (!jf && (jf = calloc(1, sizeof(*jf)))) {
		pthread_mutex_init(&jf->b.lock, NULL);
		pthread_cond_init(&jf->b.cond, NULL);
		fs->jflight = jf;
	}
	return jf;
}

void ffs_journal_free(struct ffs *fs)
{
	struct journal_flight *jf = fs->jflight;

	if (jf) {
		FF_ASSERT(!jf->active);
		pthread_mutex_destroy(&jf->b.lock);
		pthread_cond_destroy(&jf->b.cond);
		free(jf);
		fs->jflight = NULL;
	}
	free_stage(fs);
}

uint64_t ffs_journal_durable_seq(const struct ffs *fs)
{
	const struct journal_flight *jf = fs->jflight;

	return fs->j_seq - (jf && jf->active);
}

/*
 * Under fs->lock: lay the running transaction out in the staging buffer,
 * hand its blocks to the checkpoint list and open the next transaction;
 * flight_io() writes it.  No commit may be in flight.  On error nothing
 * changed.
 */
static int commit_start(struct ffs *fs, struct journal_flight *jf)
{
	unsigned n = fs->tx_count;
	uint64_t ndesc = FF_DIV_ROUND_UP(n, FFS_JDESC_MAX), need = ndesc + n + 1;
	struct mbuf **list;
	unsigned k = 0;

	FF_ASSERT(!jf->active && n > 0);
	if (need > ff_le64(fs->sb->journal_blocks)) {
		ff_log(FF_LOG_ERR, "transaction of %u blocks does not fit the journal", n);
		return -EFBIG;
	}
	if (fs->j_used + need > ff_le64(fs->sb->journal_blocks)) {
		/* cannot happen after a checkpoint at half-full (a transaction is
		 * at most a quarter of the journal), but never overwrite the tail */
		ff_log(FF_LOG_ERR, "journal full: %llu of %llu blocks used", (unsigned long long)fs->j_used,
		       (unsigned long long)ff_le64(fs->sb->journal_blocks));
		return -ENOSPC;
	}
	if (!fs->jstage) {
		/* The staging buffer and the block list: arenas as large as the
		 * journal, so no commit allocates and each page is faulted in
		 * once, by the first transaction that reaches it.  (Grown to the
		 * largest transaction so far, each new buffer's pages took a
		 * fault again: 1,656 in 2 s of 4 KiB random writes with fsync.) */
		fs->jstage_blocks = ff_le64(fs->sb->journal_blocks);
		fs->jstage = ff_alloc_arena(fs->jstage_blocks * FFS_BLOCK);
		fs->jlist = ff_alloc_arena(fs->jstage_blocks * sizeof(*fs->jlist));
		if (!fs->jstage || !fs->jlist) {
			free_stage(fs);
			return -ENOMEM;
		}
	}
	list = fs->jlist;
	for (struct mbuf *mb = fs->tx_head; mb; mb = mb->tx_next) {
		if (mb->type != FFS_B_SDATA) /* file bytes: checked by their pcsum entry */
			ffs_block_seal(mb->data, mb->type, mb->blockno);
		list[k++] = mb;
	}
	FF_ASSERT(k == n);
	jf->b.io = jf->io;
	jf->b.cap = 2;
	jf->b.n = 0;
	jf->b.err = 0;
	jf->io_done = false;
	jf->nrng = stage_records(fs, list, n, ndesc, fs->jstage, jf->rng);
	/* The data stripes the transaction maps must be durable before its
	 * records can be: a drive may keep the records and lose the data
	 * (found by the power-loss simulation: replay mapped lost stripes).
	 * Their writes completed before they were mapped, so a flush issued
	 * from now on covers them; none is needed when no data write
	 * completed since the last flush. */
	jf->preflush = ff_raid_data_unflushed(fs->raid);
	/* the images are in the stage: the blocks may change again, in the next transaction */
	for (unsigned i = 0; i < n; i++) {
		list[i]->dirty = false;
		if (!list[i]->ckpt) {
			list[i]->ckpt = true;
			list[i]->ckpt_next = fs->ckpt_head;
			fs->ckpt_head = list[i];
			fs->nckpt++;
		}
	}
	/* whichever thread begins it, a commit takes the running transaction
	 * a flusher asked for */
	if (fs->commit_asked_ns) {
		ffs_times_add(fs, "(commit)", "from a flusher's ask to its start",
			      ff_mono_ns() - fs->commit_asked_ns);
		fs->commit_asked_ns = 0;
	}
	jf->list = list;
	jf->n = n;
	jf->need = need;
	jf->seq = fs->j_seq;
	jf->freed_mark = ffs_alloc_pending_mark(fs);
	jf->active = true;
	fs->tx_head = NULL;
	fs->tx_count = 0;
	fs->j_head += need;
	fs->j_used += need;
	fs->j_seq++;
	return 0;
}

/* The flight's records are written and flushed — after a flush of the data
 * they map, when it may not be durable yet; with or without fs->lock. */
static void flight_io(struct ffs *fs, struct journal_flight *jf)
{
	uint64_t t0 = ff_mono_ns(), t1, t2;
	int rc = jf->preflush ? ff_raid_flush(fs->raid) : 0;

	t1 = ff_mono_ns();
	for (unsigned i = 0; i < jf->nrng && rc == 0; i++)
		rc = ffs_batch_add_range(fs, &jf->b, jf->rng[i].block, jf->rng[i].buf, jf->rng[i].nblocks);
	pthread_mutex_lock(&jf->b.lock); /* what was submitted lands before the stage is reused */
	while (jf->b.pending)
		pthread_cond_wait(&jf->b.cond, &jf->b.lock);
	if (rc == 0)
		rc = jf->b.err;
	pthread_mutex_unlock(&jf->b.lock);
	t2 = ff_mono_ns();
	if (rc == 0)
		rc = ff_raid_flush(fs->raid);
	ffs_times_add(fs, "(commit)", NULL, ff_mono_ns() - t0);
	if (jf->preflush)
		ffs_times_add(fs, "(commit)", "a member flush before the records", t1 - t0);
	ffs_times_add(fs, "(commit)", "the records written", t2 - t1);
	ffs_times_add(fs, "(commit)", "a member flush after the records", ff_mono_ns() - t2);
	pthread_mutex_lock(&jf->b.lock);
	jf->b.err = rc;
	jf->io_done = true;
	pthread_cond_broadcast(&jf->b.cond);
	pthread_mutex_unlock(&jf->b.lock);
}

/*
 * Under fs->lock: wait for the flight's I/O (done by whoever started it)
 * and account for it — durable: its freed stripes return; failed: its
 * blocks rejoin the running transaction, which takes its place in the
 * journal.  Sets fs->commit_err; wakes the flushers.
 */
static int commit_finish(struct ffs *fs)
{
	struct journal_flight *jf = fs->jflight;
	int rc;

	if (!jf || !jf->active)
		return 0;
	pthread_mutex_lock(&jf->b.lock);
	while (!jf->io_done)
		pthread_cond_wait(&jf->b.cond, &jf->b.lock);
	rc = jf->b.err;
	pthread_mutex_unlock(&jf->b.lock);
	if (rc == 0) {
		ffs_alloc_tx_committed(fs, jf->freed_mark);
		fs->commits++;
		atomic_fetch_add(&fs->stats.commits, 1);
		fs->last_commit_ns = ff_mono_ns();
	} else {
		ff_log(FF_LOG_ERR, "journal commit %llu failed: %s", (unsigned long long)jf->seq,
		       strerror(-rc));
		for (unsigned i = 0; i < jf->n; i++)
			ffs_mb_dirty(fs, jf->list[i]); /* no-op for a block dirtied again since */
		fs->j_head -= jf->need;
		fs->j_used -= jf->need;
		fs->j_seq = jf->seq;
	}
	jf->list = NULL; /* fs->jlist, for the next commit */
	jf->active = false;
	fs->commit_err = rc;
	pthread_cond_broadcast(&fs->committed_cond);
	return rc;
}

static bool checkpoint_due(const struct ffs *fs)
{
	return fs->j_used * 2 > ff_le64(fs->sb->journal_blocks) || fs->nckpt * 2 > fs->max_mbufs;
}

/* Commit the running transaction after the one in flight; with let_go,
 * fs->lock is released while the records are written and flushed. */
static int commit(struct ffs *fs, bool let_go)
{
	struct journal_flight *jf;
	int rc;

	if (fs->ro)
		return 0;
	commit_finish(fs); /* one at a time; a failed one is back in the running transaction */
	if (fs->tx_count == 0) {
		ffs_alloc_tx_committed(fs, ffs_alloc_pending_mark(fs));
		return 0;
	}
	jf = flight(fs);
	if (!jf)
		return -ENOMEM;
	rc = commit_start(fs, jf);
	if (rc < 0)
		return rc;
	if (let_go)
		pthread_mutex_unlock(&fs->lock);
	flight_io(fs, jf);
	if (let_go)
		pthread_mutex_lock(&fs->lock);
	commit_finish(fs); /* unless a commit under the lock did it meanwhile */
	rc = fs->commit_err;
	if (rc == 0 && checkpoint_due(fs)) {
		uint64_t t = ff_mono_ns();

		rc = ffs_journal_checkpoint(fs);
		ffs_times_add(fs, "(checkpoint, under fs->lock)", NULL, ff_mono_ns() - t);
	}
	return rc;
}

int ffs_journal_commit(struct ffs *fs)
{
	return commit(fs, false);
}

int ffs_journal_commit_unlocked(struct ffs *fs)
{
	return commit(fs, true);
}

static int ckpt_cmp(const void *a, const void *b)
{
	uint64_t x = (*(struct mbuf *const *)a)->blockno, y = (*(struct mbuf *const *)b)->blockno;

	return x < y ? -1 : x > y;
}

/*
 * The checkpoint's blocks go home in runs: sorted by block number, each run
 * of consecutive blocks copied into the staging buffer and written as one
 * request.  Tree nodes and checksum-table blocks changed together tend to
 * lie together: in 4 KiB random writes to 4 files of 64 MiB with fsync
 * every 64, 5,832 blocks in 741 runs over 23 checkpoints, so 741 requests
 * instead of 5,832 — each one a write on every META copy, and a member
 * I/O costs mostly its wake-ups (92,244 context switches in a 2.45 s run);
 * member writes fell from 20,484 to about 10,000 a run.  The stage and the
 * list are free: no commit is in flight (commit_finish), and fs->lock keeps
 * one from starting.  They are large enough: every block on the checkpoint list
 * was logged since the last checkpoint, so there are at most as many as
 * the journal has blocks, which is their size (commit_start).
 */
static int ckpt_write(struct ffs *fs, struct ffs_batch *b)
{
	struct mbuf **list = fs->jlist;
	unsigned n = 0;
	int rc = 0;

	FF_ASSERT(fs->jstage && fs->nckpt <= fs->jstage_blocks);
	for (struct mbuf *mb = fs->ckpt_head; mb; mb = mb->ckpt_next)
		list[n++] = mb;
	FF_ASSERT(n == fs->nckpt);
	qsort(list, n, sizeof(*list), ckpt_cmp);
	for (unsigned i = 0, at = 0; i < n && rc == 0;) {
		unsigned j = i;
		uint8_t *run = fs->jstage + (size_t)at * FFS_BLOCK;

		do /* sealed at commit */
			memcpy(fs->jstage + (size_t)at++ * FFS_BLOCK, list[j]->data, FFS_BLOCK);
		while (++j < n && list[j]->blockno == list[j - 1]->blockno + 1);
		rc = ffs_batch_add_range(fs, b, list[i]->blockno, run, j - i);
		i = j;
	}
	return rc;
}

int ffs_journal_checkpoint(struct ffs *fs)
{
	struct ffs_batch b;
	int rc = 0;

	if (fs->ro)
		return 0;
	commit_finish(fs); /* its blocks go home only once it is durable */
	if (fs->tx_count)
		return ffs_journal_commit(fs) < 0 ? -EIO : (fs->nckpt ? ffs_journal_checkpoint(fs) : 0);
	if (fs->nckpt) {
		rc = ffs_batch_init(&b, fs->nckpt);
		if (rc == 0)
			rc = ckpt_write(fs, &b);
		if (ffs_batch_wait(&b) < 0 || rc < 0 || (rc = ff_raid_flush(fs->raid)) < 0) {
			ff_log(FF_LOG_ERR, "journal checkpoint failed");
			return rc < 0 ? rc : -EIO;
		}
		while (fs->ckpt_head) {
			struct mbuf *mb = fs->ckpt_head;

			fs->ckpt_head = mb->ckpt_next;
			mb->ckpt = false;
			mb->ckpt_next = NULL;
		}
		fs->nckpt = 0;
	}
	return ffs_journal_reset_tail(fs);
}

/* ---- group commit ------------------------------------------------------ */

/*
 * Group commit.  A flusher (close, fsync) that needs transaction `seq`
 * durable asks the commit thread and waits; the thread commits once for
 * everyone who asked before it got the lock, and lets the lock go while
 * the records are written, so the operations that arrive meanwhile go on
 * and share the next commit instead of queueing behind this one.
 */
int ffs_commit_wait(struct ffs *fs, uint64_t seq)
{
	uint64_t failures = fs->commit_failures;
	const char *prev;

	for (;;) {
		/* past the running transaction (a failed commit rolled back) is the running one */
		uint64_t want = FF_MIN(seq, fs->j_seq);

		if (fs->ro || ffs_journal_durable_seq(fs) > want)
			return 0;
		if (fs->commit_failures != failures)
			return fs->commit_err;
		if (!fs->commit_thread_started || fs->stopping)
			return ffs_journal_commit(fs);
		if (fs->commit_want < want)
			fs->commit_want = want;
		if (want == fs->j_seq && !fs->commit_asked_ns) /* the running one: not begun */
			fs->commit_asked_ns = ff_mono_ns();
		pthread_cond_signal(&fs->commit_cond);
		prev = ffs_watch_wait_begin("a journal commit");
		pthread_cond_wait(&fs->committed_cond, &fs->lock);
		ffs_watch_wait_end(prev);
	}
}

static void *commit_main(void *arg)
{
	struct ffs *fs = arg;

	pthread_mutex_lock(&fs->lock);
	while (!fs->stopping) {
		struct timespec ts;
		uint64_t due = fs->last_commit_ns + (uint64_t)fs->opts.commit_interval_ms * 1000000ull;
		int rc;

		clock_gettime(CLOCK_REALTIME, &ts); /* the condition variable's clock */
		if (fs->tx_count && (ff_mono_ns() >= due || fs->commit_want >= fs->j_seq)) {
			rc = ffs_journal_commit_unlocked(fs);
			if (rc < 0) { /* the askers get the error; the timer retries */
				fs->commit_err = rc;
				fs->commit_failures++;
				fs->commit_want = 0;
				ff_log(FF_LOG_ERR, "commit failed: %s", strerror(-rc));
			}
			fs->last_commit_ns = ff_mono_ns();
			pthread_cond_broadcast(&fs->committed_cond);
			continue;
		}
		if (fs->commit_want >= fs->j_seq) /* nothing left to commit: wake the askers */
			pthread_cond_broadcast(&fs->committed_cond);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&fs->commit_cond, &fs->lock, &ts);
	}
	pthread_mutex_unlock(&fs->lock);
	return NULL;
}

/* The group-commit thread, started at a read-write mount. */
int ffs_journal_thread_start(struct ffs *fs)
{
	int rc;

	fs->last_commit_ns = ff_mono_ns();
	rc = -pthread_create(&fs->commit_thread, NULL, commit_main, fs);
	fs->commit_thread_started = rc == 0;
	return rc;
}

/* Stop it (unmount): the commits after this are made by their callers. */
void ffs_journal_thread_stop(struct ffs *fs)
{
	if (!fs->commit_thread_started)
		return;
	pthread_mutex_lock(&fs->lock);
	fs->stopping = true;
	pthread_cond_signal(&fs->commit_cond);
	pthread_cond_broadcast(&fs->committed_cond);
	pthread_mutex_unlock(&fs->lock);
	pthread_join(fs->commit_thread, NULL);
	fs->commit_thread_started = false;
}

/* ---- replay -------------------------------------------------------------- */

/* Read one transaction at *pos with sequence seq; on success its images
 * are in *images (homes in *homes) and *pos is past its commit block. */
static int read_tx(struct ffs *fs, uint64_t *pos, uint64_t seq, uint8_t **images,
		   uint64_t **homes, unsigned *count, struct ffs_patch_open *popen)
{
	uint8_t *blk = ff_alloc_aligned(FFS_BLOCK);
	uint64_t p = *pos;
	unsigned n = 0, cap = 0;
	uint32_t crc = 0;
	bool more = true;
	int rc = -ENOENT;

	*images = NULL;
	*homes = NULL;
	while (more) {
		struct ffs_jdesc *d = (struct ffs_jdesc *)blk;
		unsigned cnt;

		if (ffs_meta_read_check(fs, jblock(fs, p), FFS_B_JDESC, blk, true) < 0 ||
		    memcmp(d->uuid, fs->sb->uuid, 16) || ff_le64(d->seq) != seq ||
		    ff_le32(d->count) > FFS_JDESC_MAX)
			goto out;
		p++;
		cnt = ff_le32(d->count);
		more = ff_le32(d->flags) & FFS_JDESC_MORE;
		if (n + cnt > ff_le64(fs->sb->journal_blocks))
			goto out;
		if (n + cnt > cap) { /* images go to the array: keep them aligned */
			uint8_t *grown = ff_alloc_aligned((size_t)(n + cnt) * FFS_BLOCK);
			uint64_t *h = realloc(*homes, (size_t)(n + cnt) * sizeof(uint64_t));

			if (h)
				*homes = h;
			if (!grown || !h) {
				free(grown);
				rc = -ENOMEM;
				goto out;
			}
			if (*images)
				memcpy(grown, *images, (size_t)n * FFS_BLOCK);
			free(*images);
			*images = grown;
			cap = n + cnt;
		}
		for (unsigned i = 0; i < cnt; i++)
			(*homes)[n + i] = ff_le64(d->blocks[i]);
		for (unsigned i = 0; i < cnt; i++, n++, p++) {
			if (ff_raid_rw(fs->raid, FF_RAID_READ, FF_SPACE_META, jblock(fs, p) * FFS_BLOCK,
				       blk, FFS_BLOCK) < 0)
				goto out;
			memcpy(*images + (size_t)n * FFS_BLOCK, blk, FFS_BLOCK);
			crc = ff_crc32c(crc, blk, FFS_BLOCK);
		}
	}
	{
		struct ffs_jcommit *c = (struct ffs_jcommit *)blk;

		if (ffs_meta_read_check(fs, jblock(fs, p), FFS_B_JCOMMIT, blk, true) < 0 ||
		    memcmp(c->uuid, fs->sb->uuid, 16) || ff_le64(c->seq) != seq ||
		    ff_le32(c->nblocks) != n || ff_le32(c->images_crc) != crc)
			goto out;
		if (popen)
			*popen = c->popen;
	}
	*pos = p + 1;
	*count = n;
	rc = 0;
out:
	free(blk);
	if (rc < 0) {
		free(*images);
		free(*homes);
		*images = NULL;
		*homes = NULL;
	}
	return rc;
}

int ffs_journal_replay(struct ffs *fs, unsigned *replayed)
{
	uint64_t pos = ff_le64(fs->sb->journal_tail_pos), seq = ff_le64(fs->sb->journal_tail_seq);
	unsigned ntx = 0;
	int rc = 0;

	for (;;) {
		uint8_t *images;
		uint64_t *homes;
		struct ffs_patch_open popen;
		unsigned n;

		rc = read_tx(fs, &pos, seq, &images, &homes, &n, &popen);
		if (rc == -ENOENT) {
			rc = 0;
			break;
		}
		if (rc < 0)
			break;
		if (fs->ro) { /* a read-only array cannot take the replay */
			free(images);
			free(homes);
			if (!fs->checking) /* fsck asks whether a replay is due: it reports that itself */
				ff_log(FF_LOG_ERR, "the journal needs recovery: mount read-write once");
			return -EROFS;
		}
		for (unsigned i = 0; i < n && rc == 0; i++) {
			if (homes[i] >= ff_le64(fs->sb->meta_blocks) || ffs_is_sb_block(homes[i]) ||
			    (homes[i] >= ff_le64(fs->sb->journal_start) &&
			     homes[i] < ff_le64(fs->sb->journal_start) + ff_le64(fs->sb->journal_blocks)))
				rc = -EUCLEAN;
			else
				rc = ffs_meta_write_raw(fs, homes[i], images + (size_t)i * FFS_BLOCK, 1);
		}
		free(images);
		free(homes);
		if (rc < 0)
			break;
		fs->sb->popen = popen; /* the newest commit's says where patch batches are */
		ntx++;
		seq++;
	}
	*replayed = ntx;
	if (rc < 0)
		return rc;
	fs->j_seq = seq;
	fs->j_head = pos;
	if (fs->ro)
		return 0;
	if (ntx && (rc = ff_raid_flush(fs->raid)) < 0)
		return rc;
	return ffs_journal_reset_tail(fs);
}

/* ---- a tail for a rebuilt superblock ------------------------------------ */

struct found_tx {
	uint64_t seq, start, end; /* journal positions: start in [0, jb), end past the commit */
};

static int tx_cmp(const void *a, const void *b)
{
	const struct found_tx *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct img_ref {
	uint64_t home, pos, order; /* order: images of later transactions come later */
};

static int img_cmp(const void *a, const void *b)
{
	const struct img_ref *x = a, *y = b;

	if (x->home != y->home)
		return x->home < y->home ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Every descriptor of this filesystem in the journal: (position, seq). */
static int scan_descriptors(struct ffs *fs, struct found_tx **out, size_t *nout, uint64_t *maxseq)
{
	const uint64_t batch = 256, jb = ff_le64(fs->sb->journal_blocks);
	uint8_t *buf = ff_alloc_aligned(batch * FFS_BLOCK), *one = ff_alloc_aligned(FFS_BLOCK);
	struct found_tx *v = NULL;
	size_t n = 0, cap = 0;
	int rc = buf && one ? 0 : -ENOMEM;

	for (uint64_t b = 0; b < jb && rc == 0; b += batch) {
		uint64_t cnt = FF_MIN(batch, jb - b);
		bool whole = ff_raid_rw(fs->raid, FF_RAID_READ, FF_SPACE_META,
					jblock(fs, b) * FFS_BLOCK, buf, cnt * FFS_BLOCK) == 0;

		for (uint64_t i = 0; i < cnt && rc == 0; i++) {
			const struct ffs_jdesc *d = (const struct ffs_jdesc *)(buf + i * FFS_BLOCK);
			uint64_t no = jblock(fs, b + i);

			if (!whole || ffs_block_check(d, FFS_B_JDESC, no) != 0) {
				/* another mirror copy may be good (a descriptor whose read
				 * copy is damaged, or a range that could not be read whole) */
				if (whole && ff_le32(d->h.type) != FFS_B_JDESC)
					continue;
				if (ffs_meta_read_check(fs, no, FFS_B_JDESC, one, true) < 0)
					continue;
				d = (const struct ffs_jdesc *)one;
			}
			if (memcmp(d->uuid, fs->sb->uuid, 16) != 0)
				continue; /* an older filesystem's */
			if (ff_le64(d->seq) > *maxseq)
				*maxseq = ff_le64(d->seq);
			if (n == cap) {
				struct found_tx *g = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

				if (!g) {
					rc = -ENOMEM;
					break;
				}
				v = g;
			}
			v[n++] = (struct found_tx){ ff_le64(d->seq), b + i, 0 };
		}
	}
	free(buf);
	free(one);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* The images of the transaction at start, with their journal positions. */
static int tx_images(struct ffs *fs, const struct found_tx *t, uint64_t order,
		     struct img_ref **refs, size_t *n, size_t *cap)
{
	struct ffs_jdesc *d = ff_alloc_aligned(FFS_BLOCK);
	uint64_t p = t->start;
	bool more = true;
	int rc = d ? 0 : -ENOMEM;

	while (more && rc == 0) {
		unsigned cnt;

		if (ffs_meta_read_check(fs, jblock(fs, p), FFS_B_JDESC, d, true) < 0) {
			rc = -EIO; /* read a moment ago */
			break;
		}
		cnt = ff_le32(d->count);
		more = ff_le32(d->flags) & FFS_JDESC_MORE;
		for (unsigned i = 0; i < cnt; i++) {
			if (*n == *cap) {
				struct img_ref *g = realloc(*refs, (*cap = *cap ? 2 * *cap : 256) * sizeof(**refs));

				if (!g) {
					rc = -ENOMEM;
					break;
				}
				*refs = g;
			}
			(*refs)[(*n)++] = (struct img_ref){ ff_le64(d->blocks[i]), p + 1 + i, order };
		}
		p += 1 + cnt;
	}
	free(d);
	return rc;
}

/* Does every block the run [first, last] writes hold its last image at home? */
static int run_applied(struct ffs *fs, const struct found_tx *v, size_t first, size_t last,
		       bool *applied)
{
	struct img_ref *refs = NULL;
	size_t n = 0, cap = 0;
	uint8_t *img = ff_alloc_aligned(FFS_BLOCK), *home = ff_alloc_aligned(FFS_BLOCK);
	int rc = img && home ? 0 : -ENOMEM;

	*applied = true;
	for (size_t i = first; i <= last && rc == 0; i++)
		rc = tx_images(fs, &v[i], i, &refs, &n, &cap);
	if (rc == 0 && n)
		qsort(refs, n, sizeof(*refs), img_cmp);
	for (size_t i = 0; i < n && rc == 0 && *applied; i++) {
		if (i + 1 < n && refs[i + 1].home == refs[i].home)
			continue; /* a later image of the same block follows */
		if (refs[i].home >= ff_le64(fs->sb->meta_blocks)) {
			*applied = false; /* replay will judge it */
			break;
		}
		rc = ff_raid_rw(fs->raid, FF_RAID_READ, FF_SPACE_META, jblock(fs, refs[i].pos) * FFS_BLOCK,
				img, FFS_BLOCK);
		if (rc == 0)
			rc = ff_raid_rw(fs->raid, FF_RAID_READ, FF_SPACE_META, refs[i].home * FFS_BLOCK,
					home, FFS_BLOCK);
		if (rc == 0 && memcmp(img, home, FFS_BLOCK) != 0)
			*applied = false;
	}
	free(refs);
	free(img);
	free(home);
	return rc;
}

/*
 * For a superblock rebuilt without its journal tail (fs->sb has the layout
 * and the uuid; nothing else is read from it).  Every transaction of this
 * filesystem still whole in the journal is found; the one with the highest
 * sequence is the last committed (commits are flushed one after another,
 * so none is lost while a later one survives), and the transactions before
 * it that chain to it — each ending where the next begins, one sequence
 * number lower — are its history.  Replaying a transaction that already
 * reached its home blocks is harmless when every later one is replayed
 * after it (each block ends with its last committed image; nothing but the
 * journal writes home blocks), so the tail is the start of that run —
 * unless every block the run writes already holds its last image at home:
 * then nothing is pending and the tail is the head.  *ntx: transactions a
 * replay will apply.
 */
int ffs_journal_find_tail(struct ffs *fs, uint64_t *tail_pos, uint64_t *tail_seq, unsigned *ntx)
{
	const uint64_t jb = ff_le64(fs->sb->journal_blocks);
	struct found_tx *v = NULL;
	size_t n = 0, valid = 0, first, last;
	uint64_t maxseq = 0, len;
	bool applied;
	int rc = scan_descriptors(fs, &v, &n, &maxseq);

	*ntx = 0;
	*tail_pos = 0;
	*tail_seq = maxseq + 1; /* nothing to replay: no record carries it */
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) { /* keep the transactions that read whole */
		uint8_t *images;
		uint64_t *homes, p = v[i].start;
		unsigned cnt;

		if (read_tx(fs, &p, v[i].seq, &images, &homes, &cnt, NULL) < 0)
			continue; /* a later descriptor of a transaction, or a torn one */
		free(images);
		free(homes);
		v[valid] = v[i];
		v[valid++].end = p;
	}
	if (!valid) {
		free(v);
		return 0;
	}
	qsort(v, valid, sizeof(*v), tx_cmp);
	last = valid - 1;
	first = last;
	len = v[last].end - v[last].start;
	while (first > 0 && v[first - 1].seq + 1 == v[first].seq &&
	       v[first - 1].end % jb == v[first].start && len + v[first - 1].end - v[first - 1].start <= jb) {
		first--;
		len += v[first].end - v[first].start;
	}
	rc = run_applied(fs, v, first, last, &applied);
	if (rc == 0 && applied) {
		*tail_pos = v[last].end % jb;
		*tail_seq = v[last].seq + 1;
	} else if (rc == 0) {
		*tail_pos = v[first].start;
		*tail_seq = v[first].seq;
		*ntx = (unsigned)(last - first + 1);
	}
	free(v);
	return rc;
}
