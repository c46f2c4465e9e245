/* SPDX-License-Identifier: MIT */
/*
 * The engine's worker threads: each owns the units u with u % nworkers ==
 * its id, its ring, its stripe ops, scratch and write window.  Here: how a
 * worker picks requests (foreground before background), starts ops on
 * them, reaps its ring and checks member deadlines; and starting and
 * stopping the workers.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "raid/raid_i.h"

/* ---- worker ------------------------------------------------------------ */

static void op_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	op->cur = 0;
	op->scratch = -1;
	op->in_window = 0;
	op->err = 0;
	op->hedge = 0;
	op->heal = 0;
	op->pending = 0;
	op->writing = 0;
	op->locked = 0;
	op->lock_wait = NULL;
	if (op->io->op == FF_RAID_FLUSH) {
		ff_flush_start(op);
		return;
	}
	if (op->io->space == FF_SPACE_META) {
		ff_meta_start(op);
		return;
	}
	if (op->io->flags & FF_RAID_IO_OLD_GEOM) {
		op->g = &r->g_old;
		op->lv = r->lv_old;
		op->gf = &op->w->gf_old;
	} else {
		op->g = &r->g;
		op->lv = r->lv;
		op->gf = &op->w->gf;
	}
	op->lv->map(op->g->nmembers, op->stripe, op->map);
	op->rb_start = atomic_load(&r->rebuild_mask);
	op->dead_seen = 0;
	op->err_seen = 0;
	ff_op_plan_segments(op, op->g->chunk_bytes);
	ff_op_piece_first(op);
	ff_op_run(op);
}

/*
 * Foreground first.  Requests flagged FF_RAID_IO_BACKGROUND (rebuild, scrub)
 * wait in their own queue and get an op only when no foreground request
 * waits for one; while foreground ops are in progress at most one
 * background op runs.  On members in RAM the worker's own thread does the
 * copying, so under CPU contention a background op would take its time
 * slice from the stream; here it takes only the worker's idle moments (and
 * one op's length at most from a request that arrives meanwhile).  The
 * rebuild's rates still shape how much it asks for; this decides when.
 */
struct io_queue {
	struct ff_raid_io **head, **tail;
};

static void queue_pop(struct raid_worker *w, struct io_queue q)
{
	struct ff_raid_io *io = *q.head;

	*q.head = raid_iop(io)->wnext[w->id];
	if (!*q.head)
		*q.tail = NULL;
}

static void queue_push(struct raid_worker *w, struct io_queue q, struct ff_raid_io *io)
{
	if (*q.tail)
		raid_iop((*q.tail))->wnext[w->id] = io;
	else
		*q.head = io;
	*q.tail = io;
}

static struct io_queue fg_queue(struct raid_worker *w)
{
	return (struct io_queue){ &w->pend_head, &w->pend_tail };
}

static struct io_queue bg_queue(struct raid_worker *w)
{
	return (struct io_queue){ &w->bg_head, &w->bg_tail };
}

static void take_inbox(struct raid_worker *w);

/* The queue to take the next op's request from, or NULL: none may start. */
static struct ff_raid_io **next_request(struct raid_worker *w, struct io_queue *q)
{
	unsigned fg_running = w->r->opts.ops_per_worker - w->nfree - w->bg_running;

	if (!w->free_ops)
		return NULL;
	if (!w->pend_head && w->bg_head)
		take_inbox(w); /* a foreground request that came meanwhile goes first */
	if (w->pend_head) {
		*q = fg_queue(w);
		return q->head;
	}
	if (w->bg_head && (!fg_running || !w->bg_running)) {
		*q = bg_queue(w);
		return q->head;
	}
	return NULL;
}

/* Turn queued requests into stripe ops while ops are free. */
static void issue_ops(struct raid_worker *w)
{
	struct ff_raid *r = w->r;
	struct io_queue q;

	while (next_request(w, &q)) {
		struct ff_raid_io *io = *q.head;
		struct stripe_op *op = w->free_ops;
		uint64_t unit = raid_iop(io)->wpos[w->id], ub = ff_unit_bytes(r, io);

		w->free_ops = op->next;
		w->nfree--;
		op->io = io;
		op->stripe = unit;
		op->background = q.head == &w->bg_head;
		w->bg_running += op->background;
		if (io->op == FF_RAID_FLUSH) {
			op->lo = op->hi = 0;
			op->buf = NULL;
		} else if (ff_io_rows(io)) {
			/* buf is the stripe's image: chunk i of the rows at buf + i*C + a,
			 * as for a write of the whole stripe (the rows: plan_segments) */
			op->lo = 0;
			op->hi = ub;
			op->buf = io->buf;
		} else {
			uint64_t start = unit * ub;

			op->lo = FF_MAX(io->off, start) - start;
			op->hi = FF_MIN(io->off + io->len, start + ub) - start;
			op->buf = io->buf ? (char *)io->buf + (start + op->lo - io->off) : NULL;
		}
		raid_iop(io)->wpos[w->id] += r->nworkers;
		raid_iop(io)->wops[w->id]++;
		if (raid_iop(io)->wpos[w->id] > ff_last_unit(r, io))
			queue_pop(w, q);
		op_start(op);
	}
}

static void take_inbox(struct raid_worker *w)
{
	struct ff_raid_io *head;

	pthread_mutex_lock(&w->inbox_lock);
	head = w->inbox_head;
	w->inbox_head = w->inbox_tail = NULL;
	pthread_mutex_unlock(&w->inbox_lock);
	while (head) {
		struct ff_raid_io *next = raid_iop(head)->wnext[w->id];

		raid_iop(head)->wnext[w->id] = NULL;
		queue_push(w, (head->flags & FF_RAID_IO_BACKGROUND) ? bg_queue(w) : fg_queue(w), head);
		head = next;
	}
}

/*
 * Deadlines, checked every tick: a member request older than the member
 * timeout fails the member (it stopped answering) and is cancelled; a
 * plain data read older than read_slow is cancelled and its segment read
 * again around that member, from parity, so a stream's latency does not
 * follow the slowest drive.  (Only requests the kernel has not started can
 * be cancelled; the others are waited for.)
 */
static void check_deadlines(struct raid_worker *w)
{
	struct ff_raid *r = w->r;
	uint64_t now = ff_mono_ns(), tmo = (uint64_t)r->opts.member_timeout_ms * 1000000ull;
	uint64_t slow = (uint64_t)r->opts.read_slow_ms * 1000000ull;

	if (now - w->last_scan_ns < 20000000ull)
		return;
	w->last_scan_ns = now;
	for (unsigned i = 0; i < r->opts.ops_per_worker; i++) {
		struct stripe_op *op = &w->ops[i];

		if (!op->io || !op->pending)
			continue;
		for (unsigned k = 0; k < FF_ARRAY_SIZE(op->req); k++) {
			struct ff_io_req *q = &op->req[k];
			uint64_t age = now - q->submit_ns;

			if (!q->in_kernel || q->cancelled || q->priv != op || !q->submit_ns)
				continue;
			if (tmo && age > tmo) {
				atomic_fetch_add(&r->stats.member_timeouts, 1);
				ff_raid_member_failed(r, q->member, "no answer within the member timeout");
				ff_ring_cancel(&w->ring, q);
			} else if (slow && age > slow && q->op == FF_IO_READ && op->mode == MODE_DIRECT &&
				   op->io->op == FF_RAID_READ && op->io->space == FF_SPACE_DATA &&
				   /* parity can stand in for so many members, no more */
				   (unsigned)(__builtin_popcount(op->hedge) + __builtin_popcount(op->unavail)) <
					   r->g.nparity &&
				   ff_ring_cancel(&w->ring, q) == 0) {
				atomic_fetch_add(&r->stats.hedged_reads, 1);
				op->hedge |= 1u << q->member;
			}
		}
	}
}

static void *worker_main(void *arg)
{
	struct raid_worker *w = arg;
	unsigned nops = w->r->opts.ops_per_worker;

	for (;;) {
		bool stop;
		int rc;

		take_inbox(w);
		issue_ops(w);
		pthread_mutex_lock(&w->inbox_lock);
		stop = w->stop && !w->inbox_head;
		pthread_mutex_unlock(&w->inbox_lock);
		if (stop && !w->pend_head && !w->bg_head && w->nfree == nops)
			break;
		rc = ff_ring_reap(&w->ring, true);
		if (rc < 0 && rc != -EINTR)
			ff_log(FF_LOG_ERR, "raid worker %u: ring: %s", w->id, strerror(-rc));
		check_deadlines(w);
	}
	return NULL;
}

static int worker_init(struct ff_raid *r, struct raid_worker *w, unsigned id)
{
	const struct ff_geom *g = &r->g;
	unsigned nops = r->opts.ops_per_worker;
	size_t pbytes = (size_t)nops * g->nparity * g->chunk_bytes;
	size_t sbytes = (size_t)SCRATCH_SETS * g->nmembers * g->chunk_bytes;
	struct iovec iov;
	char *p;
	int rc;

	w->r = r;
	w->id = id;
	w->efd = -1;
	pthread_mutex_init(&w->inbox_lock, NULL);
	ff_gf_ctx_init(&w->gf, g->ndata);
	if (raid_grown(r))
		ff_gf_ctx_init(&w->gf_old, r->g_old.ndata);
	w->ops = calloc(nops, sizeof(*w->ops));
	w->slab_bytes = pbytes + sbytes;
	w->slab = ff_alloc_arena(w->slab_bytes);
	if (!w->ops || !w->slab)
		return -ENOMEM;
	memset(w->slab, 0, w->slab_bytes); /* touch it now, not on the data path */
	p = w->slab;
	for (unsigned i = 0; i < nops; i++) {
		struct stripe_op *op = &w->ops[i];

		op->w = w;
		op->scratch = -1;
		for (unsigned k = 0; k < g->nparity; k++, p += g->chunk_bytes)
			op->pbuf[k] = p;
		op->next = w->free_ops;
		w->free_ops = op;
	}
	w->nfree = nops;
	for (unsigned s = 0; s < SCRATCH_SETS; s++)
		for (unsigned m = 0; m < g->nmembers; m++, p += g->chunk_bytes)
			w->scratch[s][m] = p;
	w->scratch_free = (1u << SCRATCH_SETS) - 1;
	w->window_free = r->opts.write_window;
	rc = ff_ring_init(&w->ring, r->memp, g->nmembers + 1, r->opts.ring_depth);
	if (rc < 0)
		return rc;
	iov.iov_base = w->slab;
	iov.iov_len = w->slab_bytes;
	if (ff_ring_register_buffers(&w->ring, &iov, 1) < 0)
		ff_log(FF_LOG_DEBUG, "cannot register stripe buffers; using plain reads/writes");
	w->efd = eventfd(0, EFD_CLOEXEC);
	if (w->efd < 0)
		return -errno;
	rc = ff_ring_set_wake_fd(&w->ring, w->efd);
	if (rc == 0 && (r->opts.member_timeout_ms || r->opts.read_slow_ms))
		rc = ff_ring_set_tick(&w->ring, 50000000ull);
	return rc;
}

static void worker_free(struct raid_worker *w)
{
	if (w->r == NULL)
		return;
	if (w->efd >= 0) {
		ff_ring_exit(&w->ring);
		close(w->efd);
	}
	pthread_mutex_destroy(&w->inbox_lock);
	free(w->ops);
	ff_free_arena(w->slab, w->slab_bytes);
	memset(w, 0, sizeof(*w));
}

/*
 * A member that is a file in RAM (tmpfs) takes each write as a CPU copy of
 * our buffer into its pages, made on the engine thread (sync_io) right after
 * the parity of its piece: a window of one keeps one op's pieces between
 * the parity pass and the copies, while they are still in cache; a wider
 * window lets later ops' parity evict them first.  Any other member moves
 * the bytes itself (DMA; a loop device's own thread) and wants depth more
 * than cache: no window beyond the worker's ops.  Measured: RAID5 x 4 on
 * tmpfs files, windows 1 / 2 / 16 gave write_eff 1.06 / 1.00 / 0.80 (and
 * 1.09 / 0.95 / 0.80); on loop devices windows 1 / 2 / 16 wrote 6324 /
 * 6535 / 7216 MB/s (RAID6 x 6: 5928 / 6496 / 7735).
 */
static bool all_members_sync_io(const struct ff_raid *r)
{
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (r->mem[m].fd >= 0 && !r->mem[m].sync_io)
			return false;
	return true;
}

static unsigned default_write_window(const struct ff_raid *r)
{
	return all_members_sync_io(r) ? 1 : r->opts.ops_per_worker;
}

/*
 * Row pieces for write segments, when every member is a file in RAM whose
 * I/O runs on the engine thread (sync_io): a piece's parity, then its copies
 * into the members, with the rows of all members in half the core's L2.
 * Parity over a whole stripe first would evict the rows the copies then
 * read again from memory; much smaller pieces pay more per-piece overhead
 * than they save.  RAID5 x 8 on tmpfs files, write_eff of two passes: whole
 * stripes 0.83 / 0.89, 512 KiB pieces 0.97 / 1.02, 128 KiB 1.05 / 1.12,
 * 64 KiB 1.12 / 1.13.  0 (no pieces) unless every member is sync_io.
 */
static uint32_t piece_bytes_for(const struct ff_raid *r)
{
	long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
	uint64_t want = r->opts.piece_bytes ? r->opts.piece_bytes
					    : (uint64_t)(l2 > 0 ? l2 : 1 << 20) / 2 / r->g.nmembers;
	uint32_t p = r->opts.piece_bytes ? 4096 : 16 << 10;

	if (!all_members_sync_io(r))
		return 0;
	while ((uint64_t)p * 2 <= want)
		p *= 2;
	return p < r->g.chunk_bytes ? p : 0;
}

int ff_raid_engine_start(struct ff_raid *r)
{
	struct ff_raid_opts *o = &r->opts;
	int rc = 0;

	if (o->ring_only) {
		for (unsigned m = 0; m < r->g.nmembers; m++)
			r->mem[m].sync_io = false;
		r->shadow.sync_io = false;
	}
	r->piece_bytes = piece_bytes_for(r);

	if (!o->workers)
		o->workers = 2;
	o->workers = FF_MIN(o->workers, FF_RAID_WORKERS_MAX);
	if (!o->ops_per_worker)
		o->ops_per_worker = 16;
	if (!o->write_window)
		o->write_window = default_write_window(r);
	o->write_window = FF_MIN(o->write_window, o->ops_per_worker);
	if (!o->ring_depth)
		o->ring_depth = 128;
	if (!o->member_timeout_ms)
		o->member_timeout_ms = 5000;
	if (!o->read_slow_ms)
		o->read_slow_ms = 200;
	r->nworkers = o->workers;
	for (unsigned i = 0; i < r->nworkers && rc == 0; i++)
		rc = worker_init(r, &r->worker[i], i);
	for (unsigned i = 0; i < r->nworkers && rc == 0; i++) {
		rc = -pthread_create(&r->worker[i].thread, NULL, worker_main, &r->worker[i]);
		if (rc < 0) {
			r->nworkers = i;
			ff_raid_engine_stop(r);
			return rc;
		}
	}
	if (rc < 0) {
		for (unsigned i = 0; i < r->nworkers; i++)
			worker_free(&r->worker[i]);
		r->nworkers = 0;
	}
	return rc;
}

void ff_worker_wake(struct raid_worker *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0)
		FF_ASSERT(errno == EAGAIN); /* counter saturated: already signalled */
}

void ff_raid_engine_stop(struct ff_raid *r)
{
	for (unsigned i = 0; i < r->nworkers; i++) {
		struct raid_worker *w = &r->worker[i];

		pthread_mutex_lock(&w->inbox_lock);
		w->stop = true;
		pthread_mutex_unlock(&w->inbox_lock);
		ff_worker_wake(w);
	}
	for (unsigned i = 0; i < r->nworkers; i++) {
		pthread_join(r->worker[i].thread, NULL);
		worker_free(&r->worker[i]);
	}
	r->nworkers = 0;
}

