/* SPDX-License-Identifier: MIT */
/*
 * Requests in flight, and the stuck-request watchdog.
 *
 * The daemon brackets every FUSE request with ffs_req_begin/ffs_req_end.
 * Each worker thread owns one slot of a fixed table (taken the first time it
 * serves a request, given back when the thread ends; the daemon runs at most
 * FFS_REQ_SLOTS workers), where the
 * request it serves shows its op, inode and start time.  A wait on the data
 * path names what it waits for in the slot of the thread that waits
 * (ffs_watch_wait_begin/end).  A watchdog thread looks at the table every second
 * and logs, once per request, any request older than the threshold with
 * what it waits on; status shows the oldest request in flight.
 *
 * The slots are written by their own thread and read by others without a
 * lock: each field is atomic, and a reader may see one field of the next
 * request beside one of the previous — good enough for a report, and
 * start_ns (0 when idle) is what the ages are computed from.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs/fs_i.h"

struct ffs_req_slot {
	_Atomic bool used;          /* owned by a thread */
	_Atomic uint64_t start_ns;  /* 0: idle */
	_Atomic uint64_t ino;
	_Atomic(const char *) op;
	_Atomic(const char *) wait; /* what the request waits for, NULL: running */
	uint64_t logged_start;      /* watchdog: the request it has logged */
};

struct watch {
	struct ffs_req_slot slot[FFS_REQ_SLOTS];
	_Atomic uint64_t untracked; /* requests of threads beyond the table */
	_Atomic uint64_t stuck;     /* requests logged as stuck */
	uint64_t stuck_ns;
	uint64_t gen;               /* tells a thread's slot of an earlier mount from this one's */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool started, stop;
};

static _Atomic uint64_t watch_gen;
static __thread uint64_t my_gen;
static __thread struct ffs_req_slot *my_slot;
static __thread struct ffs_req_slot *cur; /* the request this thread serves */
static pthread_key_t slot_key;           /* its destructor gives the slot back */
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;

static void slot_release(void *arg)
{
	struct ffs_req_slot *s = arg;

	atomic_store(&s->start_ns, 0);
	atomic_store(&s->used, false);
}

static void slot_key_make(void)
{
	pthread_key_create(&slot_key, slot_release);
}

static struct ffs_req_slot *slot_claim(struct watch *w)
{
	for (unsigned i = 0; i < FFS_REQ_SLOTS; i++) {
		bool expected = false;

		if (atomic_compare_exchange_strong(&w->slot[i].used, &expected, true)) {
			pthread_once(&slot_once, slot_key_make);
			pthread_setspecific(slot_key, &w->slot[i]);
			return &w->slot[i];
		}
	}
	return NULL;
}

struct ffs_req_slot *ffs_req_begin(struct ffs *fs, const char *op, uint64_t ino)
{
	struct watch *w = fs->watch;

	if (!w)
		return NULL;
	if (my_gen != w->gen || !my_slot) {
		my_gen = w->gen;
		my_slot = slot_claim(w);
	}
	if (!my_slot) {
		atomic_fetch_add(&w->untracked, 1);
		return NULL;
	}
	atomic_store(&my_slot->op, op);
	atomic_store(&my_slot->ino, ino);
	atomic_store(&my_slot->wait, NULL);
	atomic_store(&my_slot->start_ns, ff_mono_ns());
	cur = my_slot;
	return my_slot;
}

void ffs_req_end(struct ffs_req_slot *s)
{
	if (!s)
		return;
	atomic_store(&s->start_ns, 0);
	cur = NULL;
}

const char *ffs_watch_wait_begin(const char *what)
{
	return cur ? atomic_exchange(&cur->wait, what) : NULL;
}

void ffs_watch_wait_end(const char *prev)
{
	if (cur)
		atomic_store(&cur->wait, prev);
}

void ffs_req_info(struct ffs *fs, struct ffs_req_info *out)
{
	struct watch *w = fs->watch;
	uint64_t now = ff_mono_ns();
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	out->stuck_ns = w->stuck_ns;
	out->stuck = atomic_load(&w->stuck);
	out->untracked = atomic_load(&w->untracked);
	for (unsigned i = 0; i < FFS_REQ_SLOTS; i++) {
		struct ffs_req_slot *s = &w->slot[i];
		uint64_t t = atomic_load(&s->start_ns), age = t && now > t ? now - t : 0;

		if (!t)
			continue;
		out->in_flight++;
		if (age >= out->oldest_age_ns) {
			out->oldest_age_ns = age;
			out->oldest_op = atomic_load(&s->op);
			out->oldest_ino = atomic_load(&s->ino);
			out->oldest_wait = atomic_load(&s->wait);
		}
	}
}

static void watch_scan(struct watch *w)
{
	uint64_t now = ff_mono_ns();

	for (unsigned i = 0; i < FFS_REQ_SLOTS; i++) {
		struct ffs_req_slot *s = &w->slot[i];
		uint64_t t = atomic_load(&s->start_ns);
		const char *what;

		if (!t || now < t + w->stuck_ns || s->logged_start == t)
			continue;
		s->logged_start = t;
		atomic_fetch_add(&w->stuck, 1);
		what = atomic_load(&s->wait);
		ff_log(FF_LOG_WARN, "request %s on inode %llu in flight for %.1f s: %s%s",
		       atomic_load(&s->op), (unsigned long long)atomic_load(&s->ino),
		       (double)(now - t) / 1e9, what ? "waiting for " : "running (no wait noted)",
		       what ? what : "");
	}
}

/* Wakes every second (a timer, not a wait for a resource) until stopped. */
static void *watch_main(void *arg)
{
	struct watch *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		if (!w->stop)
			watch_scan(w);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int ffs_watch_start(struct ffs *fs)
{
	struct watch *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->stuck_ns = (uint64_t)fs->opts.stuck_request_ms * 1000000ull;
	w->gen = atomic_fetch_add(&watch_gen, 1) + 1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	rc = -pthread_create(&w->thread, NULL, watch_main, w);
	if (rc < 0) {
		free(w);
		return rc;
	}
	w->started = true;
	fs->watch = w;
	return 0;
}

void ffs_watch_stop(struct ffs *fs)
{
	struct watch *w = fs->watch;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	fs->watch = NULL;
	free(w);
}
