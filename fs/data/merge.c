/* SPDX-License-Identifier: MIT */
/*
 * Merges in the background.
 *
 * A stripe whose patches pass their share (patch.c) is rewritten whole with
 * its patches laid over: a merge.  Its fill reads the stripe and every
 * patched block, one 4 KiB read each, scattered over as many batches as
 * fsyncs wrote them.  Done by the writeout that passed the share, it held
 * up that writeout's caller: in 4 KiB random writes to 4 files of 64 MiB
 * with fsync every 64 (RAID5 x 4 of loop devices) the tenth of the fsyncs
 * that merged took 12 ms on average against 1.2 ms for the others, and
 * over half of all fsync time.
 *
 * So the writeout that passes the share sends its blocks as patches, as
 * any other (durable at once, the fsync's promise kept), and queues the
 * stripe here; this thread merges it.  Nothing is lost if it never does:
 * patches are complete without a merge, which only gives their space back
 * and keeps reads short.  So the queue may let a stripe go:
 *
 *   - it holds MERGE_QUEUE stripes; when it is full the writeout merges
 *     itself, as before;
 *   - when the volume is tight (ffs_patch_plan's `tight`) writeouts merge
 *     themselves too: the rewrite gives space back at once;
 *   - unmount drops what is queued (ffs_merges_stop), and a merge that
 *     fails is not retried.
 *
 * A stripe past its share that nobody has queued is queued again by its
 * next writeout.  While it waits it keeps taking patches, up to all its
 * blocks: its reads lay that many blocks over it until the merge.
 *
 * One merge (merge_one), under the file's dlock:
 *
 *   - wait for a write of the stripe in flight: the batch that queued it
 *     adds its patches when it lands;
 *   - if the file's writers have a buffer of the stripe open, send it out
 *     as they would (patches; it queues the stripe again) and start over;
 *   - take a buffer of its own (ffs_wb_for: it waits for a pool buffer as any
 *     writer does), mark it background, and write it out (ffs_patch_plan
 *     merges such a buffer).
 *     The usual writeout does the rest: the fill without dlock,
 *     stripe_submit, and the map change in stripe_done.
 *
 * That buffer holds no user data.  An error of its write is logged, not
 * handed to the file's next fsync: the stripe and its patches stand as
 * they were.  Its map change leaves the file's fsync nothing to wait for
 * (stripe_done).  fsync and close do not wait for it in flight
 * (ffs_data_flush); unmount does (ffs_data_flush_all), and
 * framefs-admin sync (ffs_settle) also waits for what is queued.
 *
 * Locking: q->lock is a leaf, taken alone or under dlock or fs->lock,
 * never held across anything else.  The thread takes dlock, then fs->lock
 * inside it, as every writer does.
 */
#include <errno.h>
#include <string.h>

#include "fs/data/data_i.h"

/* Stripes queued at once; past it writeouts merge themselves. */
#define MERGE_QUEUE 32u

struct merges {
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* a stripe queued, stop, or (for drain) idle */
	struct {
		uint64_t ino, k;
	} q[MERGE_QUEUE];
	unsigned head, n;
	/* stripes ever queued, and ever finished or dropped: the queue is
	 * first in, first out, so the i-th queued is done once done >= i */
	uint64_t queued, done;
	bool busy;            /* the thread is merging one it took off the queue */
	bool stop;
	bool started;
	pthread_t thread;
};

/* Whether file stripe k of fi has patches past their share (fs->lock). */
static bool merge_due(struct ffs *fs, struct finode *fi, uint64_t k)
{
	bool due;

	pthread_mutex_lock(&fs->lock);
	/* a file in the old geometry of a grown array is rewritten only by its move */
	due = ffs_file_geo(fs, fi) == &fs->geo[0] && ffs_patch_past_share(fs, fi, k);
	pthread_mutex_unlock(&fs->lock);
	return due;
}

/*
 * Merge file stripe k of inode ino, if it still needs it.  Every wait here
 * ends: ffs_wb_for's (a write in flight completes, a pool buffer comes back) and
 * the writeout's fill (each engine request completes).
 */
static void merge_one(struct ffs *fs, uint64_t ino, uint64_t k)
{
	struct finode *fi;
	struct wbuf *wb;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)
		return; /* deleted meanwhile: nothing to merge */
	pthread_mutex_lock(&fi->dlock);
	/* A buffer of the stripe that the file's writers have open goes out
	 * first, as they would send it (patches, queueing the stripe again),
	 * so that the merge's buffer holds no user data; a few tries, then
	 * the stripe waits for its next writeout to queue it again. */
	for (unsigned tries = 0; tries < 4; tries++) {
		/* The batch that queued the stripe adds its patches when it
		 * lands: wait for the stripe's write in flight before counting
		 * (it ends in stripe_done, which wakes dcond). */
		while ((wb = ffs_wb_find(fi, k)) && wb->writing)
			wait_noted(&fi->dcond, &fi->dlock, "a stripe write of this file in flight");
		if (!merge_due(fs, fi, k))
			break;
		wb = ffs_wb_for(fs, fi, k, &rc);
		if (!wb)
			break; /* as a write would fail (ENOSPC: the reserve is taken) */
		if (wb->nival) {
			rc = ffs_wb_writeout(fs, fi, wb);
			if (rc < 0)
				break; /* the file's next fsync reports it */
			continue;
		}
		if (!merge_due(fs, fi, k)) {
			ffs_wb_drop(fs, fi, wb, 0); /* merged or cut while ffs_wb_for waited */
			break;
		}
		wb->background = true;
		atomic_fetch_add(&fs->stats.merges_background, 1);
		rc = ffs_wb_writeout(fs, fi, wb);
		if (rc < 0)
			ff_log(FF_LOG_WARN, "inode %llu: stripe %llu could not be merged: %s; "
			       "its patches stand", (unsigned long long)ino, (unsigned long long)k,
			       strerror(-rc));
		break;
	}
	pthread_mutex_unlock(&fi->dlock);
	pthread_mutex_lock(&fs->lock);
	ffs_iput(fs, fi);
	pthread_mutex_unlock(&fs->lock);
}

/* The wait for work ends when a stripe is queued or the thread is told to stop. */
static void *merge_main(void *arg)
{
	struct ffs *fs = arg;
	struct merges *m = fs->merges;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		uint64_t ino, k;

		if (m->stop)
			break;
		if (!m->n) {
			pthread_cond_wait(&m->cond, &m->lock);
			continue;
		}
		ino = m->q[m->head].ino;
		k = m->q[m->head].k;
		m->head = (m->head + 1) % MERGE_QUEUE;
		m->n--;
		m->busy = true;
		pthread_mutex_unlock(&m->lock);
		merge_one(fs, ino, k);
		pthread_mutex_lock(&m->lock);
		m->busy = false;
		m->done++;
		pthread_cond_broadcast(&m->cond); /* ffs_merges_drain */
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int ffs_merges_start(struct ffs *fs)
{
	struct merges *m = calloc(1, sizeof(*m));
	int rc;

	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	fs->merges = m;
	if (fs->ro || !(fs->features & FFS_FEAT_PATCHES))
		return 0; /* nothing is ever queued */
	rc = -pthread_create(&m->thread, NULL, merge_main, fs);
	m->started = rc == 0;
	return rc;
}

bool ffs_merge_defer(struct ffs *fs, struct finode *fi, uint64_t k)
{
	struct merges *m = fs->merges;
	bool queued = false;

	if (!m)
		return false;
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < m->n && !queued; i++) {
		unsigned j = (m->head + i) % MERGE_QUEUE;

		queued = m->q[j].ino == fi->ino && m->q[j].k == k;
	}
	if (!queued && m->started && !m->stop && m->n < MERGE_QUEUE) {
		unsigned j = (m->head + m->n) % MERGE_QUEUE;

		m->q[j].ino = fi->ino;
		m->q[j].k = k;
		m->n++;
		m->queued++;
		queued = true;
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
	return queued;
}

void ffs_merges_drain(struct ffs *fs)
{
	struct merges *m = fs->merges;
	uint64_t upto;

	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	/* ends: those queued by now are a bounded list, which the thread takes
	 * in order and finishes (merge_one's waits end), or stop drops; what
	 * writers queue meanwhile is not waited for */
	upto = m->queued;
	while (m->done < upto && m->started && !m->stop)
		wait_noted(&m->cond, &m->lock, "the background merges");
	pthread_mutex_unlock(&m->lock);
}

unsigned ffs_merges_pending(struct ffs *fs)
{
	struct merges *m = fs->merges;
	unsigned n;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	n = m->n + m->busy;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void ffs_merges_stop(struct ffs *fs)
{
	struct merges *m = fs->merges;

	if (!m || !m->started)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	m->done += m->n;
	m->n = 0; /* dropped: their patches stand (above) */
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	m->started = false;
}

void ffs_merges_free(struct ffs *fs)
{
	ffs_merges_stop(fs);
	if (fs->merges) {
		pthread_mutex_destroy(&fs->merges->lock);
		pthread_cond_destroy(&fs->merges->cond);
		free(fs->merges);
		fs->merges = NULL;
	}
}
