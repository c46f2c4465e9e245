/* SPDX-License-Identifier: MIT */
/*
 * The timed part: worker threads asking their stream's scheduler for the
 * next frame, moving it with blocking open / pread|pwrite / close, and
 * writing its record.  No allocation happens here.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define IO_CALL_MAX (1ull << 30)	/* Linux moves at most ~2 GiB per call */
#define TICK_NS 20000000ull		/* how often the main thread looks at the workers */

static void sleep_until(uint64_t abs_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(abs_ns / FT_NS_PER_S),
			       .tv_nsec = (long)(abs_ns % FT_NS_PER_S) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t file_index(const struct ft_run *run, const struct ft_stream *st, uint64_t pos)
{
	uint64_t n = run->cfg->frames, k = pos % n;

	switch (run->cfg->order) {
	case FT_ORDER_REVERSE: return n - 1 - k;
	case FT_ORDER_RANDOM: return st->perm[k];
	case FT_ORDER_FORWARD: break;
	}
	return k;
}

struct drop_ctx {
	struct ft_run *run;
	struct ft_stream *st;
};

/* Called by the scheduler, under the stream lock. */
static void on_drop(void *ctx, uint64_t pos, uint64_t at_ns, enum ft_status why)
{
	struct drop_ctx *d = ctx;
	struct ft_rec *r = &d->st->recs[pos];

	r->frame = file_index(d->run, d->st, pos);
	r->start_ns = r->done_ns = at_ns;
	r->status = (uint8_t)why;
	atomic_fetch_add(&d->st->dropped, 1);
}

/* Where frame idx lies and what of it moves: the run's one size, or its own (--vary). */
struct span {
	uint64_t frame_bytes;
	uint64_t file_off;	/* the frame's start in the stream file (-s), else 0 */
	uint64_t io_off, io_len;	/* the part moved (-c), from the frame's start */
};

static void frame_span(const struct ft_run *run, const struct ft_stream *st, uint64_t idx,
		       struct span *sp)
{
	bool vary = ft_vary_on(&run->vary);

	sp->frame_bytes = vary ? ft_vary_bytes(&run->vary, st->id, idx) : run->frame_bytes;
	sp->file_off = !run->cfg->single_file ? 0 : st->offsets ? st->offsets[idx]
								 : idx * run->frame_bytes;
	sp->io_off = run->io_off;
	sp->io_len = run->io_len;
	if (vary)
		ft_crop_range(sp->frame_bytes, run->cfg->crop_pct, &sp->io_off, &sp->io_len);
}

/* Move len bytes at file offset off in calls of piece bytes (-i, --io-size). */
static int xfer(int fd, bool wr, uint8_t *buf, uint64_t off, uint64_t len, uint64_t piece)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t want = len - done < piece ? len - done : piece;
		ssize_t n;

		if (want > IO_CALL_MAX)
			want = IO_CALL_MAX;
		n = wr ? pwrite(fd, buf + done, want, (off_t)(off + done))
		       : pread(fd, buf + done, want, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return wr ? -EIO : -ENODATA;	/* a file shorter than its frame */
		done += (uint64_t)n;
	}
	return 0;
}

static int open_frame(struct ft_worker *w, uint64_t idx)
{
	const struct ft_run *run = w->run;
	int flags = O_CLOEXEC | (run->direct ? O_DIRECT : 0);

	flags |= run->write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
	ft_frame_path(&run->names, run->cfg->files_per_dir, idx, w->path, sizeof(w->path));
	return openat(w->st->dirfd, w->path, flags, 0644);
}

/* One frame's open / transfer / close, timed; 0 or -errno with *op naming the step. */
static int frame_io(struct ft_worker *w, uint64_t idx, const struct span *sp, struct ft_rec *r,
		    const char **op)
{
	const struct ft_run *run = w->run;
	bool one_file = run->cfg->single_file;
	uint64_t t = ft_now_ns();
	int fd = one_file ? w->st->filefd : open_frame(w, idx), rc = 0;

	r->open_ns = ft_now_ns() - t;
	*op = "open";
	if (fd < 0)
		return -errno;
	t = ft_now_ns();
	if (!run->cfg->empty) {
		*op = run->write ? "write" : "read";
		rc = xfer(fd, run->write, w->buf, sp->file_off + sp->io_off, sp->io_len,
			  ft_piece_bytes(sp->io_len, run->cfg->ios_per_frame, run->cfg->io_size,
					 run->align));
	}
	r->io_ns = ft_now_ns() - t;
	t = ft_now_ns();
	if (!one_file && close(fd) != 0 && !rc) {
		*op = "close";
		rc = -errno;
	}
	r->close_ns = ft_now_ns() - t;
	return rc;
}

static void stop_stream(struct ft_worker *w, uint64_t idx, const char *op, int rc)
{
	struct ft_stream *st = w->st;

	pthread_mutex_lock(&st->lock);
	st->sched.stopped = true;
	if (!st->error[0])
		snprintf(st->error, sizeof(st->error), "stream %u, frame %" PRIu64 " (%.160s): %s: %s",
			 st->id, idx, w->run->cfg->single_file ? FT_STREAM_FILE : w->path, op,
			 rc == -ENODATA ? "file shorter than the frame size" : strerror(-rc));
	pthread_mutex_unlock(&st->lock);
}

static void check_frame(struct ft_worker *w, uint64_t idx, const struct span *sp,
			struct ft_rec *r)
{
	struct ft_stream *st = w->st;
	struct ft_check chk;

	if (ft_verify(w->buf, sp->frame_bytes, sp->io_off, sp->io_len, idx, st->id, &chk) == 0) {
		r->verify = FT_V_OK;
		return;
	}
	r->verify = FT_V_BAD;
	atomic_fetch_add(&st->vfail, 1);
	pthread_mutex_lock(&st->lock);
	if (st->nvmsg < FT_VMSG_MAX)
		snprintf(st->vmsg[st->nvmsg++], sizeof(st->vmsg[0]), "stream %u frame %" PRIu64
			 ": %s", st->id, idx, chk.why);
	pthread_mutex_unlock(&st->lock);
}

static void run_frame(struct ft_worker *w, uint64_t pos)
{
	struct ft_run *run = w->run;
	struct ft_stream *st = w->st;
	struct ft_rec *r = &st->recs[pos];
	uint64_t idx = file_index(run, st, pos);
	const char *op = "";
	struct span sp;
	int rc;

	r->frame = idx;
	frame_span(run, st, idx, &sp);
	if (run->write && !run->cfg->empty)	/* before the clock */
		ft_stamp_frame_sized(&run->stamp, w->buf, sp.frame_bytes, idx, st->id);
	r->start_ns = ft_now_ns() - run->t0;
	rc = frame_io(w, idx, &sp, r, &op);
	r->done_ns = ft_now_ns() - run->t0;
	if (rc) {
		r->status = FT_ST_ERROR;
		atomic_fetch_add(&st->dropped, 1);
		stop_stream(w, idx, op, rc);
		return;
	}
	r->bytes = run->cfg->empty ? 0 : sp.io_len;
	r->status = (uint8_t)ft_sched_judge(&run->pace, pos, r->done_ns);
	atomic_fetch_add(&st->done, 1);
	atomic_fetch_add(&st->bytes, r->bytes);
	if (ft_status_dropped((enum ft_status)r->status, run->write))
		atomic_fetch_add(&st->dropped, 1);
	/* After the record: checking is this tool's work, not the storage's. */
	if (run->verify)
		check_frame(w, idx, &sp, r);
}

static void *worker_main(void *arg)
{
	struct ft_worker *w = arg;
	struct ft_run *run = w->run;
	struct drop_ctx dc = { run, w->st };

	pthread_mutex_lock(&run->gate_lock);
	while (!run->go)
		pthread_cond_wait(&run->gate_cond, &run->gate_lock);
	pthread_mutex_unlock(&run->gate_lock);
	/* Ends: every pass hands out a frame, waits for a later time, or stops. */
	for (;;) {
		struct ft_pick pk;

		pthread_mutex_lock(&w->st->lock);
		pk = ft_sched_next(&w->st->sched, ft_now_ns() - run->t0, on_drop, &dc);
		pthread_mutex_unlock(&w->st->lock);
		if (pk.kind == FT_PICK_DONE)
			break;
		if (pk.kind == FT_PICK_WAIT)
			sleep_until(run->t0 + pk.until_ns);
		else
			run_frame(w, pk.pos);
	}
	atomic_fetch_sub(&run->running, 1);
	return NULL;
}

/*
 * Never-run positions get their status; the run's duration is t0 to the last
 * completion (as fio counts it), not to when this thread noticed the end.
 */
static void finish_records(struct ft_run *run)
{
	uint64_t last = 0;

	for (uint32_t s = 0; s < run->nstreams; s++) {
		struct ft_stream *st = &run->streams[s];

		for (uint64_t k = 0; k < run->positions; k++) {
			if (st->recs[k].done_ns > last)
				last = st->recs[k].done_ns;
			if (st->recs[k].status != FT_ST_PENDING)
				continue;
			st->recs[k].status = FT_ST_NOT_RUN;
			st->recs[k].frame = file_index(run, st, k);
		}
	}
	if (last > 0 && last < run->duration_ns)
		run->duration_ns = last;
}

volatile sig_atomic_t ft_interrupt;

/* Frames not yet handed out become "not run"; frames in flight finish. */
static void stop_all(struct ft_run *run)
{
	run->interrupted = true;
	for (uint32_t s = 0; s < run->nstreams; s++) {
		pthread_mutex_lock(&run->streams[s].lock);
		run->streams[s].sched.stopped = true;
		pthread_mutex_unlock(&run->streams[s].lock);
	}
}

static void watch(struct ft_run *run, ft_tick_fn tick, void *ctx)
{
	uint64_t every = (uint64_t)(run->cfg->update_s * FT_NS_PER_S), next = every;

	while (atomic_load(&run->running) > 0) {
		uint64_t now = ft_now_ns() - run->t0;

		if (ft_interrupt && !run->interrupted)
			stop_all(run);
		if (tick && every && now >= next) {
			tick(ctx, run, now);
			next += every * ((now - next) / every + 1);
		}
		sleep_until(ft_now_ns() + TICK_NS);
	}
}

int ft_run_execute(struct ft_run *run, ft_tick_fn tick, void *ctx, char *err, size_t errlen)
{
	uint32_t started = 0;
	int rc = 0;

	atomic_store(&run->running, run->nworkers);
	for (; started < run->nworkers; started++) {
		rc = pthread_create(&run->workers[started].tid, NULL, worker_main,
				    &run->workers[started]);
		if (rc)
			break;
	}
	if (rc) {
		/* The started workers will find nothing to do. */
		snprintf(err, errlen, "cannot start worker thread %u: %s", started, strerror(rc));
		for (uint32_t s = 0; s < run->nstreams; s++)
			run->streams[s].sched.stopped = true;
		atomic_fetch_sub(&run->running, run->nworkers - started);
	}
	if (run->cfg->pause_s > 0 && !rc)
		sleep_until(ft_now_ns() + (uint64_t)(run->cfg->pause_s * FT_NS_PER_S));
	pthread_mutex_lock(&run->gate_lock);
	run->t0 = ft_now_ns();
	run->go = true;
	pthread_cond_broadcast(&run->gate_cond);
	pthread_mutex_unlock(&run->gate_lock);
	watch(run, rc ? NULL : tick, ctx);
	for (uint32_t i = 0; i < started; i++)
		pthread_join(run->workers[i].tid, NULL);
	run->duration_ns = ft_now_ns() - run->t0;
	finish_records(run);
	return rc ? -rc : 0;
}
