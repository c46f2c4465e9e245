/* SPDX-License-Identifier: MIT */
/*
 * Submitting a request to the engine: checking it, dealing its units to
 * the workers that own them, and the synchronous helpers built on that.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "raid/raid_i.h"

/* ---- submission -------------------------------------------------------- */

static void push(struct raid_worker *w, struct ff_raid_io *io)
{
	bool was_empty;

	raid_iop(io)->wnext[w->id] = NULL;
	pthread_mutex_lock(&w->inbox_lock);
	was_empty = w->inbox_head == NULL;
	if (w->inbox_tail)
		raid_iop(w->inbox_tail)->wnext[w->id] = io;
	else
		w->inbox_head = io;
	w->inbox_tail = io;
	pthread_mutex_unlock(&w->inbox_lock);
	if (was_empty) /* a non-empty inbox already has a wake-up pending */
		ff_worker_wake(w);
}

/* FF_RAID_IO_ROWS (raid.h): a DATA write or check of rows [a, a + len) within one chunk. */
static bool rows_valid(const struct ff_raid *r, const struct ff_raid_io *io)
{
	const struct ff_geom *g = raid_io_geom(r, io);
	uint64_t a = io->off % g->stripe_bytes;

	return (io->op == FF_RAID_WRITE || io->op == FF_RAID_CHECK) && io->space == FF_SPACE_DATA &&
	       io->len > 0 &&
	       a < g->chunk_bytes && io->len <= g->chunk_bytes - a;
}

static int validate(const struct ff_raid *r, const struct ff_raid_io *io)
{
	const struct ff_geom *g = raid_io_geom(r, io);
	uint64_t size;

	if (!io->done)
		return -EINVAL;
	if ((io->flags & FF_RAID_IO_OLD_GEOM) && (!raid_grown(r) || io->space != FF_SPACE_DATA))
		return -EINVAL;
	if ((io->flags & FF_RAID_IO_ROWS) && !rows_valid(r, io))
		return -EINVAL;
	if (io->op == FF_RAID_FLUSH)
		return 0;
	if (io->op == FF_RAID_REBUILD && (!io->rebuild_members || (io->space == FF_SPACE_DATA &&
	    (io->off % g->stripe_bytes || io->len != g->stripe_bytes))))
		return -EINVAL;
	if (io->op == FF_RAID_CHECK && !(io->flags & FF_RAID_IO_ROWS) &&
	    (io->space != FF_SPACE_DATA || io->off % g->stripe_bytes || io->len != g->stripe_bytes))
		return -EINVAL;
	if ((io->op != FF_RAID_READ && io->op != FF_RAID_WRITE && io->op != FF_RAID_REBUILD &&
	     io->op != FF_RAID_CHECK) ||
	    (io->space != FF_SPACE_DATA && io->space != FF_SPACE_META))
		return -EINVAL;
	size = io->space == FF_SPACE_DATA ? g->data_bytes : r->g.meta_bytes;
	if (io->len == 0 || io->off % r->g.io_align || io->len % r->g.io_align ||
	    (io->op != FF_RAID_REBUILD && (uintptr_t)io->buf % r->g.io_align) || io->off > size || io->len > size - io->off ||
	    io->meta_copy > r->g.meta_copies)
		return -EINVAL;
	/* io_align >= 512 also gives the parity routines their 64-byte multiples */
	if (io->op == FF_RAID_WRITE && r->read_only)
		return -EROFS;
	return 0;
}

int ff_raid_submit(struct ff_raid *r, struct ff_raid_io *io)
{
	unsigned nw = r->nworkers, parts;
	uint64_t u0, u1;
	int rc = validate(r, io);

	if (rc < 0)
		return rc;
	io->result = 0;
	atomic_store(&raid_iop(io)->error, 0);
	atomic_store(&io->check_mismatch, 0);
	ff_raid_intent_begin(r, io); /* before any member sees the write */
	ff_raid_wwd_begin(r, io);   /* likewise, while a role has no member */
	if (io->op == FF_RAID_FLUSH) {
		raid_iop(io)->wpos[0] = 0;
		raid_iop(io)->wops[0] = 0;
		atomic_store(&raid_iop(io)->parts, 1);
		push(&r->worker[0], io);
		return 0;
	}
	u0 = io->off / ff_unit_bytes(r, io);
	u1 = (io->off + io->len - 1) / ff_unit_bytes(r, io);
	parts = (unsigned)FF_MIN(u1 - u0 + 1, (uint64_t)nw);
	for (unsigned k = 0; k < parts; k++) {
		unsigned w = (unsigned)((u0 + k) % nw);

		raid_iop(io)->wpos[w] = u0 + k;
		raid_iop(io)->wops[w] = 0;
	}
	atomic_store(&raid_iop(io)->parts, parts);
	for (unsigned k = 0; k < parts; k++)
		push(&r->worker[(u0 + k) % nw], io);
	return 0;
}

struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void sync_done(struct ff_raid_io *io)
{
	struct sync_wait *s = io->priv;

	pthread_mutex_lock(&s->lock);
	s->done = true;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

int ff_raid_submit_wait(struct ff_raid *r, struct ff_raid_io *io)
{
	struct sync_wait s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
	int rc;

	io->done = sync_done;
	io->priv = &s;
	rc = ff_raid_submit(r, io);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s.lock);
	while (!s.done)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	return io->result;
}

int ff_raid_rw(struct ff_raid *r, int op, int space, uint64_t off, void *buf, uint64_t len)
{
	struct ff_raid_io io;

	memset(&io, 0, sizeof(io));
	io.op = (uint8_t)op;
	io.space = (uint8_t)space;
	io.off = off;
	io.len = len;
	io.buf = buf;
	return ff_raid_submit_wait(r, &io);
}

int ff_raid_flush(struct ff_raid *r)
{
	uint64_t done = atomic_load(&r->stats.data_writes_done); /* what this flush will cover */
	uint64_t seen = atomic_load(&r->stats.data_writes_flushed);
	struct ff_raid_io io;
	int rc;

	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_FLUSH;
	rc = ff_raid_submit_wait(r, &io);
	while (rc == 0 && seen < done &&
	       !atomic_compare_exchange_weak(&r->stats.data_writes_flushed, &seen, done))
		;
	return rc;
}

bool ff_raid_data_unflushed(struct ff_raid *r)
{
	return atomic_load(&r->stats.data_writes_flushed) != atomic_load(&r->stats.data_writes_done);
}
