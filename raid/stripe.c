/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous engine: stripe operations.
 *
 * A request is cut into units: stripes (DATA) or 64 KiB metadata chunks
 * (META).  Unit u belongs to worker u % nworkers, so each worker owns its
 * stripes outright: stripe locks, parity buffers and the ring are
 * worker-local and the data path takes no shared lock.  A request is queued
 * on every worker that owns one of its units; the last worker to finish
 * calls its done callback.
 *
 * Within a stripe, the request's range splits into at most three row
 * segments (see plan_segments); each segment is handled in one of these
 * modes, chosen afresh when it starts so that a member failing mid-request
 * switches the rest to degraded handling:
 *
 *   DIRECT    read: every requested chunk is on a live member
 *   FULL      write of every data chunk: parity from the caller's buffer, no reads
 *   RMW       write: read old data and parity, parity ^= old ^ new
 *   RCW       write: read the data not written, parity from scratch
 *   DEGRADED  a needed chunk is missing: read every live slot, recover the
 *             missing ones, then serve the read or recompute parity
 *
 * Writes and degraded reads hold the stripe lock, so a degraded read never
 * sees a half-updated stripe and partial writes to one stripe are ordered.
 *
 * This file: an op's lifetime (stripe lock, scratch, write window), its
 * member requests, and the DATA space's segments and modes.  The META space
 * and flushes are in meta.c, the worker threads in worker.c, submission in
 * submit.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "raid/raid_i.h"

/* ---- small helpers ---------------------------------------------------- */

/* Slots of the op's stripe: data, then parity (its geometry's width). */
static unsigned nslots(const struct stripe_op *op)
{
	return op->g->nmembers;
}

static uint32_t member_slots(const struct stripe_op *op, uint32_t members)
{
	uint32_t slots = 0;

	for (unsigned s = 0; s < nslots(op); s++)
		if (members & (1u << op->map[s]))
			slots |= 1u << s;
	return slots;
}

/* Slots whose member is failed or missing: neither read nor written. */
static uint32_t slots_dead(const struct stripe_op *op)
{
	return member_slots(op, atomic_load(&op->w->r->dead_mask));
}

/* Slots that cannot be read for this stripe now: dead, being rebuilt and
 * not rebuilt yet, whose read of this segment failed (to be healed), or
 * avoided by the caller (a checksum said it lies). */
static uint32_t slots_unavailable(const struct stripe_op *op)
{
	const struct ff_raid *r = op->w->r;
	uint32_t members = atomic_load(&r->dead_mask) | op->heal;

	if (!raid_stripe_rebuilt(r, op->stripe))
		members |= atomic_load(&r->rebuild_mask);
	if (op->io->op == FF_RAID_READ)
		members |= op->io->avoid_members | op->hedge;
	return member_slots(op, members);
}

static void set_error(struct ff_raid_io *io, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&raid_iop(io)->error, &zero, err);
}

/* ---- op lifetime ------------------------------------------------------- */

static void part_done(struct ff_raid *r, struct ff_raid_io *io)
{
	if (atomic_fetch_sub(&raid_iop(io)->parts, 1) == 1) {
		ff_raid_intent_end(r, io);
		ff_raid_wwd_end(r, io); /* before the write is acknowledged */
		io->result = atomic_load(&raid_iop(io)->error);
		if (io->op == FF_RAID_WRITE && io->space == FF_SPACE_DATA)
			atomic_fetch_add(&r->stats.data_writes_done, 1);
		io->done(io);
	}
}

static void fifo_push(struct op_fifo *q, struct stripe_op *op)
{
	op->wait_next = NULL;
	if (q->tail)
		q->tail->wait_next = op;
	else
		q->head = op;
	q->tail = op;
}

static struct stripe_op *fifo_pop(struct op_fifo *q)
{
	struct stripe_op *op = q->head;

	if (op) {
		q->head = op->wait_next;
		if (!q->head)
			q->tail = NULL;
	}
	return op;
}

void ff_scratch_put(struct raid_worker *w, struct stripe_op *op)
{
	struct stripe_op *next;

	if (op->scratch < 0)
		return;
	w->scratch_free |= 1u << op->scratch;
	op->scratch = -1;
	next = fifo_pop(&w->scratch_wait);
	if (next) {
		if (next->io->space == FF_SPACE_META)
			ff_meta_rebuild_start(next);
		else
			ff_seg_begin(next); /* it will take the set just freed */
	}
}

bool ff_scratch_get(struct raid_worker *w, struct stripe_op *op)
{
	if (op->scratch >= 0)
		return true;
	if (!w->scratch_free) {
		fifo_push(&w->scratch_wait, op);
		return false;
	}
	op->scratch = __builtin_ctz(w->scratch_free);
	w->scratch_free &= ~(1u << op->scratch);
	return true;
}

/* A DATA write takes a window place before it reads or computes anything,
 * and keeps it until the op finishes (see struct raid_worker). */
static bool window_get(struct raid_worker *w, struct stripe_op *op)
{
	if (op->in_window || op->io->op != FF_RAID_WRITE)
		return true;
	if (!w->window_free) {
		atomic_fetch_add(&w->r->stats.window_waits, 1);
		fifo_push(&w->window_wait, op);
		return false;
	}
	w->window_free--;
	op->in_window = 1;
	return true;
}

static void window_put(struct raid_worker *w, struct stripe_op *op)
{
	struct stripe_op *next;

	if (!op->in_window)
		return;
	op->in_window = 0;
	w->window_free++;
	next = fifo_pop(&w->window_wait);
	if (next)
		ff_seg_begin(next); /* it will take the place just freed */
}

/* Take the stripe lock, or queue behind its holder (FIFO per stripe). */
static bool op_lock(struct stripe_op *op)
{
	struct raid_worker *w = op->w;

	for (struct stripe_op *h = w->locked; h; h = h->next) {
		if (h->stripe != op->stripe)
			continue;
		while (h->lock_wait)
			h = h->lock_wait;
		h->lock_wait = op;
		op->lock_wait = NULL;
		return false;
	}
	op->locked = 1;
	op->next = w->locked;
	w->locked = op;
	return true;
}

static void op_unlock(struct stripe_op *op)
{
	struct raid_worker *w = op->w;
	struct stripe_op **pp = &w->locked, *heir;

	while (*pp != op)
		pp = &(*pp)->next;
	*pp = op->next;
	op->locked = 0;
	heir = op->lock_wait;
	op->lock_wait = NULL;
	if (heir) {
		heir->locked = 1;
		heir->next = w->locked;
		w->locked = heir;
		ff_op_run(heir);
	}
}

void ff_op_finish(struct stripe_op *op, int err)
{
	struct raid_worker *w = op->w;
	struct ff_raid_io *io = op->io;
	unsigned id = w->id;

	if (err)
		set_error(io, err);
	ff_scratch_put(w, op);
	if (op->locked)
		op_unlock(op);
	window_put(w, op);
	op->io = NULL;
	w->bg_running -= op->background;
	op->background = 0;
	op->next = w->free_ops;
	w->free_ops = op;
	w->nfree++;
	FF_ASSERT(raid_iop(io)->wops[id] > 0);
	if (--raid_iop(io)->wops[id] == 0 && raid_iop(io)->wpos[id] > ff_last_unit(w->r, io))
		part_done(w->r, io);
}

/* ---- member requests --------------------------------------------------- */

static void phase_done(struct stripe_op *op);

static void req_done(struct ff_io_req *req)
{
	struct stripe_op *op = req->priv;
	struct ff_raid *r = op->w->r;

	if (req->result < 0 && req->member == r->g.nmembers) {
		/* the replacement member failed: the replace stops, the role is intact */
		ff_log(FF_LOG_ERR, "replacement member %s failed: %s; replace abandoned", r->shadow.path,
		       strerror(-req->result));
		atomic_store(&r->shadow_role, -1);
	} else if (req->result == -ECANCELED && !(atomic_load(&r->dead_mask) & (1u << req->member))) {
		op->err = req->result; /* read around a slow member: not its failure */
	} else if (req->result < 0) {
		atomic_fetch_add(&r->stats.member_errors, 1);
		/* a request sent to the member the role had before fails that one,
		 * which is gone already, not its successor */
		if (req->tag == atomic_load(&r->role_epoch[req->member]) &&
		    ff_raid_member_error(r, req->member, req->op, req->result))
			op->heal |= 1u << req->member; /* the retry reads around it */
		op->err = req->result;
	} else if (req->op == FF_IO_WRITE && req->member < r->g.nmembers &&
		   (op->heal & (1u << req->member))) {
		ff_raid_healed(r, req->member);
	}
	FF_ASSERT(op->pending > 0);
	if (--op->pending == 0)
		phase_done(op);
}

void ff_op_issue(struct stripe_op *op, unsigned op_code, unsigned member, uint64_t off,
		  void *buf, uint32_t len)
{
	struct raid_worker *w = op->w;
	struct ff_io_req *req = &op->req[op->pending++];

	FF_ASSERT(op->pending <= FF_ARRAY_SIZE(op->req));
	req->op = (uint8_t)op_code;
	req->member = (uint16_t)member;
	req->off = off;
	req->buf = buf;
	req->len = len;
	req->complete = req_done;
	req->priv = op;
	req->tag = atomic_load(&w->r->role_epoch[member]);
	if (op->io->op != FF_RAID_REBUILD && !(op->io->flags & FF_RAID_IO_BACKGROUND))
		atomic_fetch_add(&w->r->stats.fg_bytes, len);
	/* a member being replaced: its replacement gets the same write */
	if (op_code == FF_IO_WRITE && member != w->r->g.nmembers &&
	    (int)member == atomic_load(&w->r->shadow_role))
		ff_op_issue(op, op_code, w->r->g.nmembers, off, buf, len);
	if (op_code == FF_IO_READ) {
		atomic_fetch_add(&w->r->stats.member_reads, 1);
		atomic_fetch_add(&w->r->stats.read_bytes, len);
	} else if (op_code == FF_IO_WRITE) {
		atomic_fetch_add(&w->r->stats.member_writes, 1);
		atomic_fetch_add(&w->r->stats.write_bytes, len);
		if (op->io->space == FF_SPACE_META)
			atomic_fetch_add(&w->r->stats.meta_write_bytes, len);
	}
	ff_ring_queue(&w->ring, req);
}

/* ---- DATA: segments ---------------------------------------------------- */

/*
 * Split [lo, hi) of a stripe into row segments.  Chunk i holds stripe bytes
 * [i*C, (i+1)*C); the first chunk touched is covered from row lo%C, the
 * last up to row (hi-1)%C+1, those between entirely.  Cutting the rows at
 * those two points gives at most three segments in each of which a fixed
 * set of chunks is covered.
 */
void ff_op_plan_segments(struct stripe_op *op, uint32_t C)
{
	const struct ff_geom *g = op->g;
	uint32_t i0 = (uint32_t)(op->lo / C), i1 = (uint32_t)((op->hi - 1) / C);
	uint32_t r0 = (uint32_t)(op->lo % C), r1 = (uint32_t)((op->hi - 1) % C + 1);
	uint32_t cut[4] = { 0, FF_MIN(r0, r1), FF_MAX(r0, r1), C };

	op->nseg = 0;
	if (ff_io_rows(op->io)) {
		/* one segment, every data chunk: FULL mode, parity of these rows
		 * from the caller's bytes alone, no reads (validate() bounds it) */
		uint32_t a = (uint32_t)(op->io->off % g->stripe_bytes);

		FF_ASSERT(op->lo == 0 && op->hi == g->stripe_bytes && a + op->io->len <= C);
		op->seg[op->nseg++] = (struct seg){ a, a + (uint32_t)op->io->len, (1u << g->ndata) - 1 };
		return;
	}
	if (i0 == i1) {
		op->seg[op->nseg++] = (struct seg){ r0, r1, 1u << i0 };
		return;
	}
	for (unsigned k = 0; k < 3; k++) {
		uint32_t a = cut[k], b = cut[k + 1], mask = 0;

		if (a >= b)
			continue;
		for (uint32_t i = i0; i <= i1; i++) {
			uint32_t from = i == i0 ? r0 : 0, to = i == i1 ? r1 : C;

			if (from <= a && b <= to)
				mask |= 1u << i;
		}
		if (mask)
			op->seg[op->nseg++] = (struct seg){ a, b, mask };
	}
}

/* Where slot s's rows [a, b) of this segment live: the caller's buffer for
 * data the request carries (new data when writing), else scratch/parity. */
static void *slot_ptr(struct stripe_op *op, unsigned s, bool callers)
{
	const struct ff_geom *g = op->g;
	const struct seg *sg = &op->seg[op->cur];

	if (s >= g->ndata)
		return (char *)op->pbuf[s - g->ndata] + sg->a;
	if (callers && (sg->wmask & (1u << s)))
		return op->buf + ((uint64_t)s * g->chunk_bytes + sg->a - op->lo);
	FF_ASSERT(op->scratch >= 0);
	return (char *)op->w->scratch[op->scratch][s] + sg->a;
}

static uint64_t slot_offset(const struct stripe_op *op)
{
	const struct ff_geom *g = op->g;

	return g->data_offset + op->stripe * g->chunk_bytes + op->seg[op->cur].a;
}

static void issue_slots(struct stripe_op *op, unsigned op_code, uint32_t slots, bool callers)
{
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < nslots(op); s++)
		if (slots & (1u << s))
			ff_op_issue(op, op_code, op->map[s], slot_offset(op), slot_ptr(op, s, callers),
			      sg->b - sg->a);
}

static unsigned sorted_slots(uint32_t mask, unsigned *out)
{
	unsigned n = 0;

	for (unsigned s = 0; s < 32; s++)
		if (mask & (1u << s))
			out[n++] = s;
	return n;
}

/* Rebuild the unavailable slots of this segment in place; 0 or -EIO. */
static int seg_recover(struct stripe_op *op, bool callers)
{
	const struct seg *sg = &op->seg[op->cur];
	unsigned lost[FF_MEMBERS_MAX];
	unsigned nlost = sorted_slots(op->unavail, lost);

	for (unsigned s = 0; s < nslots(op); s++)
		op->slot[s] = slot_ptr(op, s, callers);
	if (nlost > op->g->nparity)
		return -EIO;
	return op->lv->parity->recover(op->gf, sg->b - sg->a, op->slot, lost, nlost) ? -EIO : 0;
}

static void seg_gen_parity(struct stripe_op *op)
{
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < nslots(op); s++)
		op->slot[s] = slot_ptr(op, s, true);
	op->lv->parity->gen(op->gf, sg->b - sg->a, op->slot);
}

static void seg_rmw_update(struct stripe_op *op)
{
	const struct seg *sg = &op->seg[op->cur];
	uint32_t len = sg->b - sg->a;
	void *parity[FF_PARITY_MAX];

	for (unsigned p = 0; p < op->g->nparity; p++)
		parity[p] = slot_ptr(op, op->g->ndata + p, true);
	for (unsigned s = 0; s < op->g->ndata; s++) {
		if (!(sg->wmask & (1u << s)))
			continue;
		op->lv->parity->update(op->gf, len, s, slot_ptr(op, s, false), parity);
		op->lv->parity->update(op->gf, len, s, slot_ptr(op, s, true), parity);
	}
}

/* Choose the segment's mode and the slots it must read first. */
static void seg_plan(struct stripe_op *op, bool *need_scratch)
{
	const struct ff_geom *g = op->g;
	uint32_t data = (1u << g->ndata) - 1, all = (1u << g->nmembers) - 1;
	uint32_t W = op->seg[op->cur].wmask, U = op->unavail;
	unsigned nw = (unsigned)__builtin_popcount(W);

	*need_scratch = false;
	if (op->io->op == FF_RAID_CHECK) {
		/* everything is read: data into the caller's buffer, parity to compare */
		op->mode = MODE_CHECK;
		op->read_slots = all;
		*need_scratch = true;
		return;
	}
	if (op->io->op == FF_RAID_REBUILD) {
		/* read every slot that can be, rebuild the targets' chunks */
		op->mode = MODE_REBUILD;
		op->read_slots = all & ~U;
		*need_scratch = true;
		return;
	}
	if (op->io->op == FF_RAID_READ) {
		if (!(W & U)) {
			op->mode = MODE_DIRECT;
			op->read_slots = W;
			return;
		}
		op->mode = MODE_DEGRADED;
		op->read_slots = all & ~U;
		/* one data chunk lost and P alive: P alone rebuilds it, skip Q */
		if (g->nparity == 2 && __builtin_popcount(U) == 1 && (U & data))
			op->read_slots &= ~(1u << (g->ndata + 1));
		*need_scratch = (data & ~W) != 0;
		return;
	}
	if (W == data) {
		op->mode = MODE_FULL;
		op->read_slots = 0;
	} else if (U) {
		op->mode = MODE_DEGRADED;
		op->read_slots = all & ~U;
		*need_scratch = true;
	} else if (nw + g->nparity < g->ndata - nw) {
		op->mode = MODE_RMW;
		op->read_slots = W | (all & ~data);
		*need_scratch = true;
	} else {
		op->mode = MODE_RCW;
		op->read_slots = data & ~W;
		*need_scratch = true;
	}
}

/* CHECK: data slots into the caller's buffer, parity slots into scratch
 * (the computed parity goes to pbuf, to compare). */
static void check_reads(struct stripe_op *op)
{
	const struct ff_geom *g = op->g;
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < g->nmembers; s++) {
		void *dst = s < g->ndata ? slot_ptr(op, s, true)
					 : (char *)op->w->scratch[op->scratch][s] + sg->a;

		ff_op_issue(op, FF_IO_READ, op->map[s], slot_offset(op), dst, sg->b - sg->a);
	}
}

static void check_compare(struct stripe_op *op)
{
	const struct ff_geom *g = op->g;
	const struct seg *sg = &op->seg[op->cur];

	seg_gen_parity(op);
	for (unsigned p = 0; p < g->nparity; p++)
		if (memcmp((char *)op->pbuf[p] + sg->a,
			   (char *)op->w->scratch[op->scratch][g->ndata + p] + sg->a, sg->b - sg->a))
			atomic_fetch_or(&op->io->check_mismatch, 1u << p);
}

/*
 * The write phase.  The slots whose read failed (op->heal) were recovered
 * with the rest and are written back here, each range with what the other
 * members and parity say it holds: a write rewrites it as part of the
 * stripe it writes (under its write-intent record); a read or a rebuild
 * writes the recovered bytes alone.  That rewrite needs no intent record:
 * parity does not change, so a torn rewrite leaves the stripe as it was,
 * the range still recoverable — and the stripe lock keeps writes of this
 * stripe out until it is done.
 */
static void seg_write_phase(struct stripe_op *op)
{
	const struct ff_geom *g = op->g;
	uint32_t data = (1u << g->ndata) - 1, all = (1u << g->nmembers) - 1;
	uint32_t slots = (op->seg[op->cur].wmask | (all & ~data)) & ~op->dead;
	uint32_t heal = member_slots(op, op->heal) & ~op->dead;
	bool callers = true;

	if (op->w->r->read_only)
		heal = 0; /* served around the error; the rewrite waits for a read-write mount */

	if (op->mode == MODE_REBUILD) { /* only the rebuilt chunks, from scratch */
		slots = member_slots(op, op->io->rebuild_members) & ~op->dead;
		callers = false;
	} else if (op->io->op == FF_RAID_READ) {
		slots = 0;
	}
	op->writing = 1;
	op->err = 0;
	if (op->mode == MODE_REBUILD && (op->io->flags & FF_RAID_IO_TO_SHADOW)) {
		/* a replacement copy: the chunk goes to the new member only */
		const struct seg *sg = &op->seg[op->cur];

		for (unsigned s = 0; s < nslots(op); s++)
			if (member_slots(op, op->io->rebuild_members) & (1u << s))
				ff_op_issue(op, FF_IO_WRITE, op->w->r->g.nmembers, slot_offset(op),
				      slot_ptr(op, s, false), sg->b - sg->a);
		slots = 0;
	}
	issue_slots(op, FF_IO_WRITE, slots | heal, callers);
	if (!op->pending)
		phase_done(op);
}

/* seg[cur] becomes its first piece: all of it, or piece_bytes of a write or
 * of a read while a member is out (it recovers rows from the others). */
void ff_op_piece_first(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	struct seg *sg = &op->seg[op->cur];
	bool cut = op->io->op == FF_RAID_WRITE ||
		   (op->io->op == FF_RAID_READ &&
		    (atomic_load(&r->dead_mask) | atomic_load(&r->rebuild_mask)));

	op->seg_end = sg->b;
	op->piece = 0;
	if (r->piece_bytes && cut && sg->b - sg->a > r->piece_bytes)
		sg->b = sg->a + r->piece_bytes;
}

static void seg_next(struct stripe_op *op)
{
	struct seg *sg = &op->seg[op->cur];

	op->writing = 0;
	op->heal = 0; /* the failed reads were of rows behind us */
	if (sg->b < op->seg_end) { /* the segment's next piece */
		sg->a = sg->b;
		sg->b = FF_MIN(sg->a + op->w->r->piece_bytes, op->seg_end);
		op->piece++;
		atomic_fetch_add(&op->w->r->stats.pieces, 1);
		ff_seg_begin(op);
	} else if (++op->cur < op->nseg) {
		ff_op_piece_first(op);
		ff_seg_begin(op);
	} else {
		ff_op_finish(op, 0);
	}
}

void ff_seg_begin(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	bool need_scratch;

	op->err = 0;
	op->writing = 0;
	if (op->io->op == FF_RAID_REBUILD && !(op->io->flags & FF_RAID_IO_TO_SHADOW) &&
	    raid_stripe_rebuilt(r, op->stripe)) {
		ff_op_finish(op, 0); /* a full-stripe write already brought it up to date */
		return;
	}
	op->unavail = slots_unavailable(op);
	op->dead = slots_dead(op);
	seg_plan(op, &need_scratch);
	if (op->mode != MODE_DIRECT && !op->locked) {
		if (!op_lock(op))
			return; /* op_unlock() runs it when the stripe is free */
		op->unavail = slots_unavailable(op);
		op->dead = slots_dead(op);
		seg_plan(op, &need_scratch);
	}
	/* a full-stripe write reads nothing: it stands while the dead slots are
	 * within parity; everything else reads and needs the unreadable ones so */
	if ((unsigned)__builtin_popcount(op->mode == MODE_FULL ? op->dead : op->unavail) >
	    op->g->nparity) {
		ff_op_finish(op, -EIO);
		return;
	}
	/* lock, window, scratch: always taken in this order, so no cycle */
	if (!window_get(op->w, op))
		return; /* window_put() resumes it */
	if (need_scratch && !ff_scratch_get(op->w, op))
		return; /* ff_scratch_put() resumes it */
	switch (op->piece ? -1 : (int)op->mode) { /* a segment counts once, not per piece */
	case MODE_FULL:
		atomic_fetch_add(ff_io_rows(op->io) ? &r->stats.rows_writes : &r->stats.full_stripe_writes, 1);
		break;
	case MODE_RMW: atomic_fetch_add(&r->stats.rmw_segments, 1); break;
	case MODE_RCW: atomic_fetch_add(&r->stats.rcw_segments, 1); break;
	case MODE_DEGRADED: atomic_fetch_add(&r->stats.degraded_segments, 1); break;
	}
	if (op->mode == MODE_CHECK) {
		if (op->unavail) { /* a slot is missing: parity cannot be checked */
			ff_op_finish(op, -EAGAIN);
			return;
		}
		check_reads(op);
	} else {
		issue_slots(op, FF_IO_READ, op->read_slots, op->mode == MODE_DIRECT ||
			    (op->mode == MODE_DEGRADED && op->io->op == FF_RAID_READ));
	}
	if (!op->pending)
		phase_done(op);
}

/* Every read of the segment has finished successfully. */
static void seg_reads_done(struct stripe_op *op)
{
	bool reading = op->io->op == FF_RAID_READ;

	switch (op->mode) {
	case MODE_DIRECT:
		seg_next(op);
		return;
	case MODE_CHECK:
		check_compare(op);
		seg_next(op);
		return;
	case MODE_REBUILD:
		if (seg_recover(op, false) < 0) {
			ff_op_finish(op, -EIO);
			return;
		}
		break;
	case MODE_DEGRADED:
		if (seg_recover(op, reading) < 0) {
			ff_op_finish(op, -EIO);
			return;
		}
		if (reading && (op->w->r->read_only || !(member_slots(op, op->heal) & ~op->dead))) {
			seg_next(op);
			return;
		}
		if (reading)
			break; /* served; the ranges that failed are written back */
		seg_gen_parity(op);
		break;
	case MODE_RMW:
		seg_rmw_update(op);
		break;
	case MODE_RCW:
	case MODE_FULL:
		seg_gen_parity(op);
		break;
	}
	seg_write_phase(op);
}

void ff_meta_phase_done(struct stripe_op *op);
void ff_flush_done(struct stripe_op *op);

/* This piece ends a FULL write of every row of the stripe.  A rows write
 * is FULL too, but of some rows only: the stripe's other rows on a
 * rebuilding member are still to be rebuilt. */
static bool op_wrote_whole_stripe(const struct stripe_op *op)
{
	return op->mode == MODE_FULL && !ff_io_rows(op->io) && op->lo == 0 &&
	       op->hi == op->g->stripe_bytes && op->seg[op->cur].b == op->seg_end;
}

static void phase_done(struct stripe_op *op)
{
	if (op->io->op == FF_RAID_FLUSH) {
		ff_flush_done(op);
		return;
	}
	if (op->io->space == FF_SPACE_META) {
		ff_meta_phase_done(op);
		return;
	}
	if (!op->writing) {
		if (op->err) {
			/* a member failed or erred while reading: plan the segment
			 * again, degraded this time (each retry has one more member
			 * dead or in op->heal, so retries end) */
			ff_seg_begin(op);
			return;
		}
		seg_reads_done(op);
		return;
	}
	if (op->io->op == FF_RAID_READ) { /* the rewrite of a read error: the data is served */
		seg_next(op);
		return;
	}
	/* write phase: failed members were marked; the stripe stands if parity allows.
	 * Not written: dead when the writes were issued, or dead since. */
	op->dead |= slots_dead(op);
	if ((unsigned)__builtin_popcount(op->dead) > op->g->nparity) {
		ff_op_finish(op, -EIO);
		return;
	}
	op->dead_seen |= op->dead;
	if (op->err)
		op->err_seen = 1;
	/*
	 * Every chunk of the rebuilding members is now current for this stripe:
	 * a rebuild op wrote them, or a write of the whole stripe — every row,
	 * every piece — reached them all, and none of them started rebuilding
	 * (a replacement included) after its first piece was planned.
	 */
	if (op->mode == MODE_REBUILD || op_wrote_whole_stripe(op)) {
		uint32_t rb = atomic_load(&op->w->r->rebuild_mask);

		if (rb && !op->err_seen && !(member_slots(op, rb) & op->dead_seen) &&
		    (op->mode == MODE_FULL ? (rb & ~op->rb_start) == 0
					   : (rb & ~op->io->rebuild_members) == 0))
			raid_mark_rebuilt(op->w->r, op->stripe);
	}
	seg_next(op);
}

void ff_op_run(struct stripe_op *op)
{
	ff_seg_begin(op);
}

