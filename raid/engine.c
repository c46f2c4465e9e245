/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous engine.
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
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "raid/raid_i.h"

static void op_run(struct stripe_op *op);
static void seg_begin(struct stripe_op *op);
static void meta_rebuild_start(struct stripe_op *op);

/* ---- small helpers ---------------------------------------------------- */

static uint64_t unit_bytes(const struct ff_raid *r, unsigned space)
{
	return space == FF_SPACE_DATA ? r->g.stripe_bytes : FF_META_CHUNK;
}

static uint64_t last_unit(const struct ff_raid *r, const struct ff_raid_io *io)
{
	return io->op == FF_RAID_FLUSH ? 0 : (io->off + io->len - 1) / unit_bytes(r, io->space);
}

static unsigned nslots(const struct ff_raid *r)
{
	return r->g.nmembers;
}

static uint32_t member_slots(const struct stripe_op *op, uint32_t members)
{
	uint32_t slots = 0;

	for (unsigned s = 0; s < nslots(op->w->r); s++)
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
 * not rebuilt yet, or avoided by the caller (a checksum said it lies). */
static uint32_t slots_unavailable(const struct stripe_op *op)
{
	const struct ff_raid *r = op->w->r;
	uint32_t members = atomic_load(&r->dead_mask);

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
		raid_intent_end(r, io);
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

static void scratch_put(struct raid_worker *w, struct stripe_op *op)
{
	struct stripe_op *next;

	if (op->scratch < 0)
		return;
	w->scratch_free |= 1u << op->scratch;
	op->scratch = -1;
	next = fifo_pop(&w->scratch_wait);
	if (next) {
		if (next->io->space == FF_SPACE_META)
			meta_rebuild_start(next);
		else
			seg_begin(next); /* it will take the set just freed */
	}
}

static bool scratch_get(struct raid_worker *w, struct stripe_op *op)
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
		seg_begin(next); /* it will take the place just freed */
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
		op_run(heir);
	}
}

static void op_finish(struct stripe_op *op, int err)
{
	struct raid_worker *w = op->w;
	struct ff_raid_io *io = op->io;
	unsigned id = w->id;

	if (err)
		set_error(io, err);
	scratch_put(w, op);
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
	if (--raid_iop(io)->wops[id] == 0 && raid_iop(io)->wpos[id] > last_unit(w->r, io))
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
		if (req->tag == atomic_load(&r->role_epoch[req->member]))
			raid_member_failed(r, req->member, req->op == FF_IO_READ ? "read error"
							   : req->op == FF_IO_WRITE ? "write error"
										    : "flush error");
		op->err = req->result;
	}
	FF_ASSERT(op->pending > 0);
	if (--op->pending == 0)
		phase_done(op);
}

static void issue(struct stripe_op *op, unsigned op_code, unsigned member, uint64_t off,
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
	if (op->io->op != FF_RAID_REBUILD)
		atomic_fetch_add(&w->r->stats.fg_bytes, len);
	/* a member being replaced: its replacement gets the same write */
	if (op_code == FF_IO_WRITE && member != w->r->g.nmembers &&
	    (int)member == atomic_load(&w->r->shadow_role))
		issue(op, op_code, w->r->g.nmembers, off, buf, len);
	if (op_code == FF_IO_READ) {
		atomic_fetch_add(&w->r->stats.member_reads, 1);
		atomic_fetch_add(&w->r->stats.read_bytes, len);
	} else if (op_code == FF_IO_WRITE) {
		atomic_fetch_add(&w->r->stats.member_writes, 1);
		atomic_fetch_add(&w->r->stats.write_bytes, len);
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
static void plan_segments(struct stripe_op *op, uint32_t C)
{
	uint32_t i0 = (uint32_t)(op->lo / C), i1 = (uint32_t)((op->hi - 1) / C);
	uint32_t r0 = (uint32_t)(op->lo % C), r1 = (uint32_t)((op->hi - 1) % C + 1);
	uint32_t cut[4] = { 0, FF_MIN(r0, r1), FF_MAX(r0, r1), C };

	op->nseg = 0;
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
	const struct ff_geom *g = &op->w->r->g;
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
	const struct ff_geom *g = &op->w->r->g;

	return g->data_offset + op->stripe * g->chunk_bytes + op->seg[op->cur].a;
}

static void issue_slots(struct stripe_op *op, unsigned op_code, uint32_t slots, bool callers)
{
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < nslots(op->w->r); s++)
		if (slots & (1u << s))
			issue(op, op_code, op->map[s], slot_offset(op), slot_ptr(op, s, callers),
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
	struct raid_worker *w = op->w;
	const struct seg *sg = &op->seg[op->cur];
	unsigned lost[FF_MEMBERS_MAX];
	unsigned nlost = sorted_slots(op->unavail, lost);

	for (unsigned s = 0; s < nslots(w->r); s++)
		op->slot[s] = slot_ptr(op, s, callers);
	if (nlost > w->r->g.nparity)
		return -EIO;
	return w->r->lv->parity->recover(&w->gf, sg->b - sg->a, op->slot, lost, nlost) ? -EIO : 0;
}

static void seg_gen_parity(struct stripe_op *op)
{
	struct raid_worker *w = op->w;
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < nslots(w->r); s++)
		op->slot[s] = slot_ptr(op, s, true);
	w->r->lv->parity->gen(&w->gf, sg->b - sg->a, op->slot);
}

static void seg_rmw_update(struct stripe_op *op)
{
	struct raid_worker *w = op->w;
	const struct seg *sg = &op->seg[op->cur];
	uint32_t len = sg->b - sg->a;
	void *parity[FF_PARITY_MAX];

	for (unsigned p = 0; p < w->r->g.nparity; p++)
		parity[p] = slot_ptr(op, w->r->g.ndata + p, true);
	for (unsigned s = 0; s < w->r->g.ndata; s++) {
		if (!(sg->wmask & (1u << s)))
			continue;
		w->r->lv->parity->update(&w->gf, len, s, slot_ptr(op, s, false), parity);
		w->r->lv->parity->update(&w->gf, len, s, slot_ptr(op, s, true), parity);
	}
}

/* Choose the segment's mode and the slots it must read first. */
static void seg_plan(struct stripe_op *op, bool *need_scratch)
{
	const struct ff_geom *g = &op->w->r->g;
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
	const struct ff_geom *g = &op->w->r->g;
	const struct seg *sg = &op->seg[op->cur];

	for (unsigned s = 0; s < g->nmembers; s++) {
		void *dst = s < g->ndata ? slot_ptr(op, s, true)
					 : (char *)op->w->scratch[op->scratch][s] + sg->a;

		issue(op, FF_IO_READ, op->map[s], slot_offset(op), dst, sg->b - sg->a);
	}
}

static void check_compare(struct stripe_op *op)
{
	const struct ff_geom *g = &op->w->r->g;
	const struct seg *sg = &op->seg[op->cur];

	seg_gen_parity(op);
	for (unsigned p = 0; p < g->nparity; p++)
		if (memcmp((char *)op->pbuf[p] + sg->a,
			   (char *)op->w->scratch[op->scratch][g->ndata + p] + sg->a, sg->b - sg->a))
			atomic_fetch_or(&op->io->check_mismatch, 1u << p);
}

static void seg_write_phase(struct stripe_op *op)
{
	const struct ff_geom *g = &op->w->r->g;
	uint32_t data = (1u << g->ndata) - 1, all = (1u << g->nmembers) - 1;
	uint32_t slots = (op->seg[op->cur].wmask | (all & ~data)) & ~op->dead;
	bool callers = true;

	if (op->mode == MODE_REBUILD) { /* only the rebuilt chunks, from scratch */
		slots = member_slots(op, op->io->rebuild_members) & ~op->dead;
		callers = false;
	}
	op->writing = 1;
	op->err = 0;
	if (op->mode == MODE_REBUILD && (op->io->flags & FF_RAID_IO_TO_SHADOW)) {
		/* a replacement copy: the chunk goes to the new member only */
		const struct seg *sg = &op->seg[op->cur];

		for (unsigned s = 0; s < nslots(op->w->r); s++)
			if (member_slots(op, op->io->rebuild_members) & (1u << s))
				issue(op, FF_IO_WRITE, op->w->r->g.nmembers, slot_offset(op),
				      slot_ptr(op, s, false), sg->b - sg->a);
		if (!op->pending)
			phase_done(op);
		return;
	}
	issue_slots(op, FF_IO_WRITE, slots, callers);
	if (!op->pending)
		phase_done(op);
}

/* seg[cur] becomes its first piece: all of it, or piece_bytes of a write or
 * of a read while a member is out (it recovers rows from the others). */
static void piece_first(struct stripe_op *op)
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
	if (sg->b < op->seg_end) { /* the segment's next piece */
		sg->a = sg->b;
		sg->b = FF_MIN(sg->a + op->w->r->piece_bytes, op->seg_end);
		op->piece++;
		atomic_fetch_add(&op->w->r->stats.pieces, 1);
		seg_begin(op);
	} else if (++op->cur < op->nseg) {
		piece_first(op);
		seg_begin(op);
	} else {
		op_finish(op, 0);
	}
}

static void seg_begin(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	bool need_scratch;

	op->err = 0;
	op->writing = 0;
	if (op->io->op == FF_RAID_REBUILD && !(op->io->flags & FF_RAID_IO_TO_SHADOW) &&
	    raid_stripe_rebuilt(r, op->stripe)) {
		op_finish(op, 0); /* a full-stripe write already brought it up to date */
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
	    r->g.nparity) {
		op_finish(op, -EIO);
		return;
	}
	/* lock, window, scratch: always taken in this order, so no cycle */
	if (!window_get(op->w, op))
		return; /* window_put() resumes it */
	if (need_scratch && !scratch_get(op->w, op))
		return; /* scratch_put() resumes it */
	switch (op->piece ? -1 : (int)op->mode) { /* a segment counts once, not per piece */
	case MODE_FULL: atomic_fetch_add(&r->stats.full_stripe_writes, 1); break;
	case MODE_RMW: atomic_fetch_add(&r->stats.rmw_segments, 1); break;
	case MODE_RCW: atomic_fetch_add(&r->stats.rcw_segments, 1); break;
	case MODE_DEGRADED: atomic_fetch_add(&r->stats.degraded_segments, 1); break;
	}
	if (op->mode == MODE_CHECK) {
		if (op->unavail) { /* a slot is missing: parity cannot be checked */
			op_finish(op, -EAGAIN);
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
			op_finish(op, -EIO);
			return;
		}
		break;
	case MODE_DEGRADED:
		if (seg_recover(op, reading) < 0) {
			op_finish(op, -EIO);
			return;
		}
		if (reading) {
			seg_next(op);
			return;
		}
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

static void meta_phase_done(struct stripe_op *op);
static void flush_done(struct stripe_op *op);

static void phase_done(struct stripe_op *op)
{
	if (op->io->op == FF_RAID_FLUSH) {
		flush_done(op);
		return;
	}
	if (op->io->space == FF_SPACE_META) {
		meta_phase_done(op);
		return;
	}
	if (!op->writing) {
		if (op->err) {
			/* a member failed while reading: plan the segment again,
			 * degraded this time (each retry has one more member out) */
			seg_begin(op);
			return;
		}
		seg_reads_done(op);
		return;
	}
	/* write phase: failed members were marked; the stripe stands if parity allows.
	 * Not written: dead when the writes were issued, or dead since. */
	op->dead |= slots_dead(op);
	if ((unsigned)__builtin_popcount(op->dead) > op->w->r->g.nparity) {
		op_finish(op, -EIO);
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
	if (op->mode == MODE_REBUILD || (op->mode == MODE_FULL && op->lo == 0 &&
					 op->hi == op->w->r->g.stripe_bytes &&
					 op->seg[op->cur].b == op->seg_end)) {
		uint32_t rb = atomic_load(&op->w->r->rebuild_mask);

		if (rb && !op->err_seen && !(member_slots(op, rb) & op->dead_seen) &&
		    (op->mode == MODE_FULL ? (rb & ~op->rb_start) == 0
					   : (rb & ~op->io->rebuild_members) == 0))
			raid_mark_rebuilt(op->w->r, op->stripe);
	}
	seg_next(op);
}

static void op_run(struct stripe_op *op)
{
	seg_begin(op);
}

/* ---- META: mirrored chunks --------------------------------------------- */

static unsigned meta_member(const struct ff_geom *g, uint64_t chunk, unsigned copy,
			    uint64_t *off)
{
	uint64_t idx = chunk * g->meta_copies + copy;

	*off = g->meta_offset + (idx / g->nmembers) * FF_META_CHUNK;
	return (unsigned)(idx % g->nmembers);
}

static bool meta_read_next(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	uint32_t unavail = atomic_load(&r->dead_mask) | atomic_load(&r->meta_stale_mask);
	unsigned last = op->io->meta_copy ? op->io->meta_copy : r->g.meta_copies;

	for (; op->meta_copy < last; op->meta_copy++) {
		uint64_t off;
		unsigned m = meta_member(&r->g, op->stripe, op->meta_copy, &off);

		if (unavail & (1u << m))
			continue;
		op->err = 0;
		issue(op, FF_IO_READ, m, off + op->lo, op->buf, (uint32_t)(op->hi - op->lo));
		return true;
	}
	return false;
}

/*
 * META rebuild of one 64 KiB row of the target member: that row holds copy
 * k of logical chunk c; read c from another live copy, write it there.
 */
static bool meta_rebuild_read(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	unsigned target = (unsigned)__builtin_ctz(op->io->rebuild_members);
	uint64_t idx = op->stripe * r->g.nmembers + target, c = idx / r->g.meta_copies, off;
	uint32_t bad = atomic_load(&r->dead_mask) | atomic_load(&r->meta_stale_mask);

	for (; op->meta_copy < r->g.meta_copies; op->meta_copy++) {
		unsigned m = meta_member(&r->g, c, op->meta_copy, &off);

		if (m == target || (bad & (1u << m)))
			continue;
		op->err = 0;
		issue(op, FF_IO_READ, m, off, op->w->scratch[op->scratch][0], FF_META_CHUNK);
		return true;
	}
	return false;
}

static void meta_rebuild_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	uint64_t rows = r->g.meta_member_bytes / FF_META_CHUNK;
	uint64_t chunks = r->g.meta_bytes / FF_META_CHUNK;
	unsigned target = (unsigned)__builtin_ctz(op->io->rebuild_members);

	if (op->stripe >= rows || (op->stripe * r->g.nmembers + target) / r->g.meta_copies >= chunks) {
		op_finish(op, 0); /* a row no logical chunk uses */
		return;
	}
	if (!scratch_get(op->w, op))
		return; /* scratch_put() resumes it through seg_begin */
	op->meta_copy = 0;
	if (!meta_rebuild_read(op))
		op_finish(op, -EIO);
}

static void meta_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	if (op->io->op == FF_RAID_REBUILD) {
		meta_rebuild_start(op);
		return;
	}
	if (op->io->op == FF_RAID_READ) {
		op->meta_copy = op->io->meta_copy ? op->io->meta_copy - 1 : 0;
		if (!meta_read_next(op))
			op_finish(op, -EIO);
		return;
	}
	op->writing = 1;
	for (unsigned k = 0; k < r->g.meta_copies; k++) {
		uint64_t off;
		unsigned m = meta_member(&r->g, op->stripe, k, &off);

		if (!(atomic_load(&r->dead_mask) & (1u << m)))
			issue(op, FF_IO_WRITE, m, off + op->lo, op->buf, (uint32_t)(op->hi - op->lo));
	}
	if (!op->pending)
		op_finish(op, -EIO);
}

static void meta_phase_done(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	if (op->io->op == FF_RAID_REBUILD) {
		unsigned target = (unsigned)__builtin_ctz(op->io->rebuild_members);

		if (op->writing || (op->err && (op->meta_copy++, !meta_rebuild_read(op)))) {
			op_finish(op, op->err);
			return;
		}
		if (op->err)
			return; /* reading the next copy */
		op->writing = 1;
		issue(op, FF_IO_WRITE, (op->io->flags & FF_RAID_IO_TO_SHADOW) ? r->g.nmembers : target,
		      r->g.meta_offset + op->stripe * FF_META_CHUNK, op->w->scratch[op->scratch][0],
		      FF_META_CHUNK);
		return;
	}
	if (!op->writing) {
		if (op->err) {
			op->meta_copy++;
			if (!meta_read_next(op))
				op_finish(op, -EIO);
			return;
		}
		op_finish(op, 0);
		return;
	}
	/* a write stands while one copy is on a live member */
	for (unsigned k = 0; k < r->g.meta_copies; k++) {
		uint64_t off;

		if (!(atomic_load(&r->dead_mask) & (1u << meta_member(&r->g, op->stripe, k, &off)))) {
			op_finish(op, 0);
			return;
		}
	}
	op_finish(op, -EIO);
}

/* ---- FLUSH ------------------------------------------------------------- */

static void flush_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (!(atomic_load(&r->dead_mask) & (1u << m)))
			issue(op, FF_IO_FSYNC, m, 0, NULL, 0);
	if (!op->pending)
		op_finish(op, -EIO);
}

static void flush_done(struct stripe_op *op)
{
	op_finish(op, ff_raid_failed_count(op->w->r) > op->w->r->g.nparity ? -EIO : 0);
}

/* ---- worker ------------------------------------------------------------ */

static void op_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	op->cur = 0;
	op->scratch = -1;
	op->in_window = 0;
	op->err = 0;
	op->hedge = 0;
	op->pending = 0;
	op->writing = 0;
	op->locked = 0;
	op->lock_wait = NULL;
	if (op->io->op == FF_RAID_FLUSH) {
		flush_start(op);
		return;
	}
	if (op->io->space == FF_SPACE_META) {
		meta_start(op);
		return;
	}
	r->lv->map(r->g.nmembers, op->stripe, op->map);
	op->rb_start = atomic_load(&r->rebuild_mask);
	op->dead_seen = 0;
	op->err_seen = 0;
	plan_segments(op, r->g.chunk_bytes);
	piece_first(op);
	op_run(op);
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
		uint64_t unit = raid_iop(io)->wpos[w->id], ub = unit_bytes(r, io->space);

		w->free_ops = op->next;
		w->nfree--;
		op->io = io;
		op->stripe = unit;
		op->background = q.head == &w->bg_head;
		w->bg_running += op->background;
		if (io->op == FF_RAID_FLUSH) {
			op->lo = op->hi = 0;
			op->buf = NULL;
		} else {
			uint64_t start = unit * ub;

			op->lo = FF_MAX(io->off, start) - start;
			op->hi = FF_MIN(io->off + io->len, start + ub) - start;
			op->buf = io->buf ? (char *)io->buf + (start + op->lo - io->off) : NULL;
		}
		raid_iop(io)->wpos[w->id] += r->nworkers;
		raid_iop(io)->wops[w->id]++;
		if (raid_iop(io)->wpos[w->id] > last_unit(r, io))
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
				raid_member_failed(r, q->member, "no answer within the member timeout");
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
	w->ops = calloc(nops, sizeof(*w->ops));
	w->slab_bytes = pbytes + sbytes;
	w->slab = ff_alloc_aligned(w->slab_bytes);
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
	free(w->slab);
	memset(w, 0, sizeof(*w));
}

/*
 * A member that is a file in RAM (tmpfs) takes each write as a CPU copy of
 * our buffer into its pages, made on the engine thread (sync_io) right after
 * the parity of its piece: a window of one keeps one op's pieces between
 * the parity pass and the copies (RAID5 x 4 on tmpfs files, raidbench
 * write_eff with 1 / 2 / 16: 1.06 / 1.00 / 0.80, then 1.09 / 0.95 / 0.80;
 * through io_uring's worker threads, before sync_io, 16 gave 7.1-7.2 GB/s
 * of data and 1 or 2 gave 8.4-9.1; bench/README.md).  Any other member moves the bytes
 * itself (DMA; a loop device's own thread) and wants depth more than cache:
 * no window beyond the worker's ops (loop devices over tmpfs, RAID5 x 4:
 * 6.3 / 6.5 GB/s with 1 / 2 against 7.2 with 16, RAID6 x 6: 5.9 / 6.5
 * against 7.7; files on the VM's disk: 3.1 / 4.5 with 2 against 4.6 / 4.8).
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
 * Parity over a whole 512 KiB-chunk stripe first evicts the rows the copies
 * then read again from memory.  RAID5 x 8 on tmpfs files, raidbench
 * write_eff, two passes: this design with its default (64 KiB here) 1.017 /
 * 0.981, --piece 64K 1.022 / 0.969, 256K 0.979 / 0.934; the first hack of
 * it (bench/README.md) whole stripes 0.829 / 0.894, 512 KiB 0.965 / 1.018,
 * 128 KiB 1.051 / 1.123.  0 (no pieces) unless every member is sync_io.
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

int raid_engine_start(struct ff_raid *r)
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
			raid_engine_stop(r);
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

static void worker_wake(struct raid_worker *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0)
		FF_ASSERT(errno == EAGAIN); /* counter saturated: already signalled */
}

void raid_engine_stop(struct ff_raid *r)
{
	for (unsigned i = 0; i < r->nworkers; i++) {
		struct raid_worker *w = &r->worker[i];

		pthread_mutex_lock(&w->inbox_lock);
		w->stop = true;
		pthread_mutex_unlock(&w->inbox_lock);
		worker_wake(w);
	}
	for (unsigned i = 0; i < r->nworkers; i++) {
		pthread_join(r->worker[i].thread, NULL);
		worker_free(&r->worker[i]);
	}
	r->nworkers = 0;
}

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
		worker_wake(w);
}

static int validate(const struct ff_raid *r, const struct ff_raid_io *io)
{
	uint64_t size;

	if (!io->done)
		return -EINVAL;
	if (io->op == FF_RAID_FLUSH)
		return 0;
	if (io->op == FF_RAID_REBUILD && (!io->rebuild_members || (io->space == FF_SPACE_DATA &&
	    (io->off % r->g.stripe_bytes || io->len != r->g.stripe_bytes))))
		return -EINVAL;
	if (io->op == FF_RAID_CHECK && (io->space != FF_SPACE_DATA ||
	    io->off % r->g.stripe_bytes || io->len != r->g.stripe_bytes))
		return -EINVAL;
	if ((io->op != FF_RAID_READ && io->op != FF_RAID_WRITE && io->op != FF_RAID_REBUILD &&
	     io->op != FF_RAID_CHECK) ||
	    (io->space != FF_SPACE_DATA && io->space != FF_SPACE_META))
		return -EINVAL;
	size = io->space == FF_SPACE_DATA ? r->g.data_bytes : r->g.meta_bytes;
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
	raid_intent_begin(r, io); /* before any member sees the write */
	if (io->op == FF_RAID_FLUSH) {
		raid_iop(io)->wpos[0] = 0;
		raid_iop(io)->wops[0] = 0;
		atomic_store(&raid_iop(io)->parts, 1);
		push(&r->worker[0], io);
		return 0;
	}
	u0 = io->off / unit_bytes(r, io->space);
	u1 = (io->off + io->len - 1) / unit_bytes(r, io->space);
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
