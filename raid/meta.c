/* SPDX-License-Identifier: MIT */
/*
 * The engine's META space and flushes.  Metadata chunks are mirrored:
 * copy k of chunk c lives on member (c * copies + k) % n, so the copies of
 * one chunk are on different members.  A read tries one live, fresh copy
 * after another; a write goes to every copy; a member being rebuilt gets
 * its copies from a live one (ff_meta_rebuild_start).  A flush is an
 * fdatasync of every live member.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "raid/raid_i.h"

/* ---- META: mirrored chunks --------------------------------------------- */

static unsigned meta_member(const struct ff_geom *g, uint64_t chunk, unsigned copy,
			    uint64_t *off)
{
	uint64_t idx = chunk * g->meta_copies + copy;

	*off = g->meta_offset + (idx / g->meta_members) * FF_META_CHUNK;
	return (unsigned)(idx % g->meta_members);
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
		ff_op_issue(op, FF_IO_READ, m, off + op->lo, op->buf, (uint32_t)(op->hi - op->lo));
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
	uint64_t idx = op->stripe * r->g.meta_members + target, c = idx / r->g.meta_copies, off;
	uint32_t bad = atomic_load(&r->dead_mask) | atomic_load(&r->meta_stale_mask);

	for (; op->meta_copy < r->g.meta_copies; op->meta_copy++) {
		unsigned m = meta_member(&r->g, c, op->meta_copy, &off);

		if (m == target || (bad & (1u << m)))
			continue;
		op->err = 0;
		ff_op_issue(op, FF_IO_READ, m, off, op->w->scratch[op->scratch][0], FF_META_CHUNK);
		return true;
	}
	return false;
}

void ff_meta_rebuild_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;
	uint64_t rows = r->g.meta_member_bytes / FF_META_CHUNK;
	uint64_t chunks = r->g.meta_bytes / FF_META_CHUNK;
	unsigned target = (unsigned)__builtin_ctz(op->io->rebuild_members);

	if (target >= r->g.meta_members || op->stripe >= rows ||
	    (op->stripe * r->g.meta_members + target) / r->g.meta_copies >= chunks) {
		ff_op_finish(op, 0); /* a row no logical chunk uses (a role added by a grow: none) */
		return;
	}
	if (!ff_scratch_get(op->w, op))
		return; /* ff_scratch_put() resumes it through ff_seg_begin */
	op->meta_copy = 0;
	if (!meta_rebuild_read(op))
		ff_op_finish(op, -EIO);
}

void ff_meta_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	if (op->io->op == FF_RAID_REBUILD) {
		ff_meta_rebuild_start(op);
		return;
	}
	if (op->io->op == FF_RAID_READ) {
		op->meta_copy = op->io->meta_copy ? op->io->meta_copy - 1 : 0;
		if (!meta_read_next(op))
			ff_op_finish(op, -EIO);
		return;
	}
	op->writing = 1;
	for (unsigned k = 0; k < r->g.meta_copies; k++) {
		uint64_t off;
		unsigned m = meta_member(&r->g, op->stripe, k, &off);

		if (!(atomic_load(&r->dead_mask) & (1u << m)))
			ff_op_issue(op, FF_IO_WRITE, m, off + op->lo, op->buf, (uint32_t)(op->hi - op->lo));
	}
	if (!op->pending)
		ff_op_finish(op, -EIO);
}

void ff_meta_phase_done(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	if (op->io->op == FF_RAID_REBUILD) {
		unsigned target = (unsigned)__builtin_ctz(op->io->rebuild_members);

		if (op->writing || (op->err && (op->meta_copy++, !meta_rebuild_read(op)))) {
			ff_op_finish(op, op->err);
			return;
		}
		if (op->err)
			return; /* reading the next copy */
		op->writing = 1;
		ff_op_issue(op, FF_IO_WRITE, (op->io->flags & FF_RAID_IO_TO_SHADOW) ? r->g.nmembers : target,
		      r->g.meta_offset + op->stripe * FF_META_CHUNK, op->w->scratch[op->scratch][0],
		      FF_META_CHUNK);
		return;
	}
	if (!op->writing) {
		if (op->err) {
			op->meta_copy++;
			if (!meta_read_next(op))
				ff_op_finish(op, -EIO);
			return;
		}
		ff_op_finish(op, 0);
		return;
	}
	/* a write stands while one copy is on a live member */
	for (unsigned k = 0; k < r->g.meta_copies; k++) {
		uint64_t off;

		if (!(atomic_load(&r->dead_mask) & (1u << meta_member(&r->g, op->stripe, k, &off)))) {
			ff_op_finish(op, 0);
			return;
		}
	}
	ff_op_finish(op, -EIO);
}

/* ---- FLUSH ------------------------------------------------------------- */

void ff_flush_start(struct stripe_op *op)
{
	struct ff_raid *r = op->w->r;

	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (!(atomic_load(&r->dead_mask) & (1u << m)))
			ff_op_issue(op, FF_IO_FSYNC, m, 0, NULL, 0);
	if (!op->pending)
		ff_op_finish(op, -EIO);
}

void ff_flush_done(struct stripe_op *op)
{
	ff_op_finish(op, ff_raid_failed_count(op->w->r) > op->w->r->g.nparity ? -EIO : 0);
}

