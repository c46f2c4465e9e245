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
 *
 * Request times: when a request ends, its time goes into the row of its op,
 * and the time it spent in each kind of noted wait into the row of (op,
 * what it waited for): the sum over the request's waits of that kind (a
 * close that waited twice for a stripe write counts the two), so a wait
 * row's average beside its op's tells the share — where a frame's open,
 * writes and close spend their time
 * (framefs-admin times).  A row is a histogram of 4 buckets per power of two
 * (percentiles to within 19%, reported as the bucket's upper edge, capped at
 * the maximum seen) with a count, a sum and a maximum, all atomics: a
 * request adds to its row without a lock.  Rows are made the first time a
 * pair is seen, under the watch lock, and never freed before unmount;
 * LAT_ROWS bounds them (the ops are fuse_ops.c's names, the waits the
 * strings handed to ffs_watch_wait_begin: a few dozen pairs), and a pair
 * beyond it is counted as dropped.  A reset zeroes the counts, not the rows.
 * A wait inside a wait is not nested: a request names one wait at a time.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs/fs_i.h"

#define LAT_SUB_BITS 2                        /* 4 buckets per power of two */
#define LAT_BUCKETS (44 << LAT_SUB_BITS)      /* up to 2^44 ns (4.9 h), the last takes the rest */
#define LAT_ROWS FFS_REQ_TIME_ROWS
#define SLOT_WAITS 4                          /* kinds of wait one request sums */

struct lat_row {
	_Atomic bool ready;        /* op and wait set: readers may match it */
	const char *op, *wait;     /* wait NULL: the whole request */
	_Atomic uint64_t sum_ns, max_ns; /* the count is the buckets' sum */
	_Atomic uint64_t b[LAT_BUCKETS];
};

struct ffs_req_slot {
	struct watch *w;            /* the mount's table this slot belongs to */
	_Atomic bool used;          /* owned by a thread */
	_Atomic uint64_t start_ns;  /* 0: idle */
	_Atomic uint64_t ino;
	_Atomic(const char *) op;
	_Atomic(const char *) wait; /* what the request waits for, NULL: running */
	/* the request's waits, summed per what it waited for and added to the
	 * times when it ends; written and read by the slot's own thread */
	uint64_t wait_start_ns;
	struct { const char *what; uint64_t ns; } waits[SLOT_WAITS];
	uint64_t logged_start;      /* watchdog: the request it has logged */
};

struct watch {
	struct ffs_req_slot slot[FFS_REQ_SLOTS];
	_Atomic uint64_t untracked; /* requests of threads beyond the table */
	_Atomic uint64_t stuck;     /* requests logged as stuck */
	uint64_t stuck_ns;
	uint64_t gen;               /* tells a thread's slot of an earlier mount from this one's */
	struct lat_row lat[LAT_ROWS];
	_Atomic unsigned nlat;      /* rows made (ready or being made) */
	_Atomic uint64_t lat_dropped; /* times of pairs beyond LAT_ROWS */
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
			w->slot[i].w = w;
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

/* ---- request times ---------------------------------------------------- */

static unsigned lat_bucket(uint64_t ns)
{
	unsigned e, i;

	if (ns < (1u << LAT_SUB_BITS))
		return (unsigned)ns;
	e = 63u - (unsigned)__builtin_clzll(ns); /* ns in [2^e, 2^(e+1)) */
	i = (e << LAT_SUB_BITS) | (unsigned)((ns >> (e - LAT_SUB_BITS)) & ((1u << LAT_SUB_BITS) - 1));
	return FF_MIN(i, LAT_BUCKETS - 1u);
}

/* The largest value bucket i holds. */
static uint64_t lat_bucket_top(unsigned i)
{
	unsigned e = i >> LAT_SUB_BITS, sub = i & ((1u << LAT_SUB_BITS) - 1);

	if (i < (1u << LAT_SUB_BITS))
		return i;
	if (i == LAT_BUCKETS - 1)
		return UINT64_MAX;
	return (1ull << e) + ((uint64_t)(sub + 1) << (e - LAT_SUB_BITS)) - 1;
}

static struct lat_row *lat_find(struct watch *w, const char *op, const char *wait)
{
	unsigned n = atomic_load(&w->nlat);

	for (unsigned i = 0; i < n; i++) {
		struct lat_row *r = &w->lat[i];

		if (atomic_load(&r->ready) && r->op == op && r->wait == wait)
			return r;
	}
	return NULL;
}

/* The row of (op, wait), made if new; NULL when the table is full.  The op
 * and wait strings are literals: equal pairs have equal pointers. */
static struct lat_row *lat_row(struct watch *w, const char *op, const char *wait)
{
	struct lat_row *r = lat_find(w, op, wait);
	unsigned n;

	if (r)
		return r;
	pthread_mutex_lock(&w->lock);
	r = lat_find(w, op, wait); /* made meanwhile by another thread */
	n = atomic_load(&w->nlat);
	if (!r && n < LAT_ROWS) {
		r = &w->lat[n];
		r->op = op;
		r->wait = wait;
		atomic_store(&r->ready, true);
		atomic_store(&w->nlat, n + 1);
	}
	pthread_mutex_unlock(&w->lock);
	return r;
}

static void lat_add(struct watch *w, const char *op, const char *wait, uint64_t ns)
{
	struct lat_row *r = op ? lat_row(w, op, wait) : NULL;
	uint64_t m;

	if (!r) {
		atomic_fetch_add(&w->lat_dropped, 1);
		return;
	}
	atomic_fetch_add(&r->sum_ns, ns);
	atomic_fetch_add(&r->b[lat_bucket(ns)], 1);
	m = atomic_load(&r->max_ns);
	while (ns > m && !atomic_compare_exchange_weak(&r->max_ns, &m, ns))
		; /* a lost race re-reads m; ends once m >= ns or the store lands */
}

/* The value below which a share q of the row's times fall: the upper edge
 * of the bucket where the count reaches q, no more than the maximum. */
static uint64_t lat_quantile(const uint64_t *b, uint64_t n, uint64_t max, double q)
{
	uint64_t want = (uint64_t)((double)n * q), seen = 0;

	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < LAT_BUCKETS; i++) {
		seen += b[i];
		if (seen >= want)
			return FF_MIN(lat_bucket_top(i), max);
	}
	return max;
}

unsigned ffs_req_times(struct ffs *fs, struct ffs_req_time *out, unsigned max, uint64_t *dropped)
{
	struct watch *w = fs->watch;
	uint64_t b[LAT_BUCKETS];
	unsigned n, k = 0;

	*dropped = 0;
	if (!w)
		return 0;
	*dropped = atomic_load(&w->lat_dropped);
	n = atomic_load(&w->nlat);
	for (unsigned i = 0; i < n && k < max; i++) {
		struct lat_row *r = &w->lat[i];
		struct ffs_req_time *t = &out[k];
		uint64_t cnt = 0;

		if (!atomic_load(&r->ready))
			continue;
		/* the buckets are read one by one while requests add to them: the
		 * count is their sum, so the percentiles agree with it */
		for (unsigned j = 0; j < LAT_BUCKETS; j++)
			cnt += b[j] = atomic_load(&r->b[j]);
		if (!cnt)
			continue;
		t->op = r->op;
		t->wait = r->wait;
		t->count = cnt;
		t->sum_ns = atomic_load(&r->sum_ns);
		t->max_ns = atomic_load(&r->max_ns);
		t->p50_ns = lat_quantile(b, cnt, t->max_ns, 0.50);
		t->p90_ns = lat_quantile(b, cnt, t->max_ns, 0.90);
		t->p99_ns = lat_quantile(b, cnt, t->max_ns, 0.99);
		k++;
	}
	return k;
}

void ffs_req_times_reset(struct ffs *fs)
{
	struct watch *w = fs->watch;
	unsigned n;

	if (!w)
		return;
	n = atomic_load(&w->nlat);
	for (unsigned i = 0; i < n; i++) {
		struct lat_row *r = &w->lat[i];

		atomic_store(&r->sum_ns, 0);
		atomic_store(&r->max_ns, 0);
		for (unsigned j = 0; j < LAT_BUCKETS; j++)
			atomic_store(&r->b[j], 0);
	}
	atomic_store(&w->lat_dropped, 0);
}

void ffs_times_add(struct ffs *fs, const char *op, const char *what, uint64_t ns)
{
	if (fs->watch)
		lat_add(fs->watch, op, what, ns);
}

void ffs_req_end(struct ffs_req_slot *s)
{
	uint64_t t;

	if (!s)
		return;
	t = atomic_exchange(&s->start_ns, 0);
	if (t) {
		const char *op = atomic_load(&s->op);

		for (unsigned i = 0; i < SLOT_WAITS && s->waits[i].what; i++)
			lat_add(s->w, op, s->waits[i].what, s->waits[i].ns);
		lat_add(s->w, op, NULL, ff_mono_ns() - t);
	}
	memset(s->waits, 0, sizeof(s->waits));
	cur = NULL;
}

const char *ffs_watch_wait_begin(const char *what)
{
	if (!cur)
		return NULL;
	cur->wait_start_ns = ff_mono_ns();
	return atomic_exchange(&cur->wait, what);
}

void ffs_watch_wait_end(const char *prev)
{
	const char *what;
	uint64_t ns;
	unsigned i;

	if (!cur)
		return;
	what = atomic_exchange(&cur->wait, prev);
	if (!what)
		return;
	ns = ff_mono_ns() - cur->wait_start_ns;
	for (i = 0; i < SLOT_WAITS && cur->waits[i].what && cur->waits[i].what != what; i++)
		;
	if (i == SLOT_WAITS) { /* more kinds than the slot sums: this wait on its own */
		lat_add(cur->w, atomic_load(&cur->op), what, ns);
		return;
	}
	cur->waits[i].what = what;
	cur->waits[i].ns += ns;
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
