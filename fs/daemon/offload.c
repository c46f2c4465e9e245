/* SPDX-License-Identifier: MIT */
/*
 * The pool that answers io_uring requests which may wait (offload.h).
 *
 * Bounds: slots are taken by ffs_job_run and given back by the worker that
 * takes the job, before it runs it, so a slot is only ever held by a request
 * the kernel has handed over and not had answered.  The kernel hands over at
 * most depth requests per queue before one is answered, so queues x depth
 * slots never run out: a request that found none (a broken invariant) runs
 * on its queue thread as without the pool, and is counted.
 *
 * Every wait can end: a worker sleeps on `work` only while the queue is
 * empty, and ffs_job_run signals it after queueing, ffs_offload_stop
 * broadcasts after setting `stopping`.  A job's own waits are the
 * filesystem's, each of which ends (fs/data/wbuf.c, fs/meta/journal.c); no job waits
 * for another request, so fewer workers than slots only queue jobs, they
 * never stop them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fs/daemon/offload.h"
#include "fs/ffs.h"
#include "io/ff_common.h"

static struct {
	bool active;
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct ffs_job *slot;
	unsigned *free_idx, *queue; /* both of n_slots entries */
	unsigned n_slots, n_free, q_head, q_len;
	bool stopping;
	pthread_t worker[FFS_OFFLOAD_WORKERS_MAX];
	unsigned n_workers;
	_Atomic uint64_t jobs, no_slot;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .work = PTHREAD_COND_INITIALIZER };

static void run_here(const struct ffs_job *j)
{
	struct ffs_job c = *j;

	c.run(&c);
}

/* Under pool.lock: the oldest queued job, its slot given back. */
static struct ffs_job take_job(void)
{
	unsigned idx = pool.queue[pool.q_head];

	pool.q_head = (pool.q_head + 1) % pool.n_slots;
	pool.q_len--;
	pool.free_idx[pool.n_free++] = idx;
	return pool.slot[idx];
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		while (pool.q_len == 0 && !pool.stopping)
			pthread_cond_wait(&pool.work, &pool.lock);
		if (pool.q_len == 0)
			break; /* stopping, and nothing left */
		struct ffs_job j = take_job();

		pthread_mutex_unlock(&pool.lock);
		ffs_times_add(fuse_req_userdata(j.req), "(a job's wait for a worker)", NULL,
			      ff_mono_ns() - j.queued_ns);
		j.run(&j);
		atomic_fetch_add_explicit(&pool.jobs, 1, memory_order_relaxed);
		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

bool ffs_job_queue(const struct ffs_job *j)
{
#ifdef FUSE_URING_REPLY_FROM_ANY_THREAD
	if (pool.active && fuse_req_is_uring(j->req)) {
		pthread_mutex_lock(&pool.lock);
		if (pool.n_free > 0) {
			unsigned idx = pool.free_idx[--pool.n_free];

			pool.slot[idx] = *j;
			pool.slot[idx].queued_ns = ff_mono_ns();
			pool.queue[(pool.q_head + pool.q_len++) % pool.n_slots] = idx;
			pthread_cond_signal(&pool.work);
			pthread_mutex_unlock(&pool.lock);
			return true;
		}
		pthread_mutex_unlock(&pool.lock);
		atomic_fetch_add_explicit(&pool.no_slot, 1, memory_order_relaxed);
	}
#else
	(void)j;
#endif
	return false;
}

void ffs_job_run(const struct ffs_job *j)
{
	if (!ffs_job_queue(j))
		run_here(j);
}

static void pool_free(void)
{
	free(pool.slot);
	free(pool.free_idx);
	free(pool.queue);
	pool.slot = NULL;
	pool.free_idx = pool.queue = NULL;
}

int ffs_offload_start(unsigned queues, unsigned depth)
{
	unsigned n = queues * depth;

#ifndef FUSE_URING_REPLY_FROM_ANY_THREAD
	return -ENOTSUP; /* replies must come from libfuse's queue threads */
#endif
	FF_ASSERT(!pool.active && queues > 0 && depth > 0);
	pool.slot = calloc(n, sizeof(*pool.slot));
	pool.free_idx = calloc(n, sizeof(unsigned));
	pool.queue = calloc(n, sizeof(unsigned));
	if (!pool.slot || !pool.free_idx || !pool.queue) {
		pool_free();
		return -ENOMEM;
	}
	pool.n_slots = n;
	for (unsigned i = 0; i < n; i++)
		pool.free_idx[i] = i;
	pool.n_free = n;
	pool.stopping = false;
	for (pool.n_workers = 0; pool.n_workers < FF_MIN(n, FFS_OFFLOAD_WORKERS_MAX); pool.n_workers++)
		if (pthread_create(&pool.worker[pool.n_workers], NULL, worker_main, NULL) != 0)
			break;
	if (pool.n_workers == 0) {
		pool_free();
		return -EAGAIN;
	}
	pool.active = true;
	return 0;
}

void ffs_offload_stop(void)
{
	pthread_mutex_lock(&pool.lock);
	pool.stopping = true;
	pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.lock);
	for (unsigned i = 0; i < pool.n_workers; i++)
		pthread_join(pool.worker[i], NULL);
	pool.n_workers = 0;
	pool.active = false;
	FF_ASSERT(pool.q_len == 0);
	pool_free();
}

bool ffs_offload_active(void)
{
	return pool.active;
}

uint64_t ffs_offload_jobs(void)
{
	return atomic_load_explicit(&pool.jobs, memory_order_relaxed);
}

uint64_t ffs_offload_no_slot(void)
{
	return atomic_load_explicit(&pool.no_slot, memory_order_relaxed);
}
