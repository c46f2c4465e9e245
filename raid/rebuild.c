/* SPDX-License-Identifier: MIT */
/*
 * Rebuild.
 *
 * A member that joins a degraded array (added, or a hot spare taking over
 * a failed role) is REBUILDING: every write reaches it, but it is read only
 * where its contents are known good — metadata once the metadata phase is
 * done, data stripes whose bit is set in r->rebuilt (rebuilt, or written
 * whole since the rebuild began).
 *
 * The rebuild thread walks three phases: the mirrored metadata rows, then
 * the stripes the filesystem has allocated, then the rest; each unit is a
 * FF_RAID_REBUILD request that the engine runs under the stripe lock.  It
 * keeps a few units in flight, yields to foreground I/O (min rate while
 * the array is busy, max rate when idle, like md's speed_limit_min/max)
 * and checkpoints (phase, position) in the member superblocks, so a daemon
 * restart resumes where it stopped.
 *
 * This file: the rebuild thread and its API.  Adding, removing, hot spares
 * and replacing members are in members.c.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid_i.h"
#include "raid/rebuild_i.h"

/* ---- checkpoint encoding -------------------------------------------------- */

static uint64_t ckpt_encode(unsigned phase, uint64_t pos)
{
	return ((uint64_t)phase << RB_PHASE_SHIFT) | (pos & ((1ull << RB_PHASE_SHIFT) - 1));
}

static void ckpt_decode(uint64_t v, unsigned *phase, uint64_t *pos)
{
	*phase = (unsigned)(v >> RB_PHASE_SHIFT);
	*pos = v & ((1ull << RB_PHASE_SHIFT) - 1);
	if (*phase > PH_DONE)
		*phase = PH_META, *pos = 0;
}

static bool allocated(struct ff_raid *r, uint64_t stripe)
{
	return !r->alloc_query || r->alloc_query(r->alloc_arg, stripe);
}

uint64_t ff_rebuild_meta_rows(const struct ff_raid *r)
{
	return r->g.meta_member_bytes / FF_META_CHUNK;
}

/* Which stripes the rebuilding members already hold, from a checkpoint. */
static void seed_rebuilt(struct ff_raid *r, unsigned phase, uint64_t pos)
{
	for (uint64_t s = 0; s < r->g.nstripes; s++) {
		bool done = phase == PH_DONE || (phase == PH_ALLOCATED && s < pos && allocated(r, s)) ||
			    (phase == PH_REST && (allocated(r, s) || s < pos));

		if (done)
			raid_mark_rebuilt(r, s);
	}
}

/* Progress in bytes to write, and how much a checkpoint already covers. */
static void progress_from_checkpoint(struct ff_raid *r, struct raid_rebuild *rb)
{
	uint64_t nt = (uint64_t)__builtin_popcount(rb->targets), done = 0;

	if (rb->filter) { /* a re-add starts at the beginning: only the marked units */
		uint64_t rows = 0, stripes = 0;

		for (uint64_t m = 0; m < ff_rebuild_meta_rows(r); m++)
			rows += ff_raid_wwd_meta_row_marked(r, m);
		for (uint64_t s = 0; s < r->g.nstripes; s++)
			stripes += ff_raid_wwd_stripe_marked(r, s);
		rb->progress_total = nt * (rows * FF_META_CHUNK + stripes * r->g.chunk_bytes);
		rb->progress_bytes = 0;
		return;
	}

	rb->progress_total = nt * (ff_rebuild_meta_rows(r) * FF_META_CHUNK + r->g.nstripes * r->g.chunk_bytes);
	if (rb->phase == PH_META) {
		rb->progress_bytes = nt * rb->pos * FF_META_CHUNK;
		return;
	}
	for (uint64_t s = 0; s < r->g.nstripes; s++)
		done += rb->phase == PH_DONE || (allocated(r, s) ? rb->phase == PH_REST || s < rb->pos
							 : rb->phase == PH_REST && s < rb->pos);
	rb->progress_bytes = nt * (ff_rebuild_meta_rows(r) * FF_META_CHUNK + done * r->g.chunk_bytes);
}

/* ---- one unit -------------------------------------------------------------- */

static void unit_done(struct ff_raid_io *io)
{
	struct ff_raid *r = io->priv;
	struct raid_rebuild *rb = r->rb;
	unsigned i = (unsigned)(io - rb->io);

	pthread_mutex_lock(&rb->lock);
	rb->busy[i] = false;
	rb->inflight--;
	if (io->result < 0 && !rb->err) {
		rb->err = io->result;
	} else {
		uint64_t b = io->space == FF_SPACE_DATA
			     ? (uint64_t)__builtin_popcount(io->rebuild_members) * r->g.chunk_bytes
			     : FF_META_CHUNK;

		rb->bytes_done += b;
		rb->progress_bytes += b;
		rb->units_done++;
	}
	pthread_cond_broadcast(&rb->cond); /* the rebuild thread and ff_raid_rebuild_wait share it */
	pthread_mutex_unlock(&rb->lock);
}

/* Next unit of the current phase at or after pos, or false at its end. */
static bool next_unit(struct ff_raid *r, struct raid_rebuild *rb, uint64_t *unit)
{
	if (rb->phase == PH_META) {
		while (rb->filter && rb->pos < ff_rebuild_meta_rows(r) &&
		       !ff_raid_wwd_meta_row_marked(r, rb->pos))
			rb->pos++; /* a re-add: not written while the member was away */
		if (rb->pos >= ff_rebuild_meta_rows(r))
			return false;
		*unit = rb->pos++;
		return true;
	}
	while (rb->pos < r->g.nstripes) {
		uint64_t s = rb->pos++;
		bool a = allocated(r, s);

		if (rb->filter && !ff_raid_wwd_stripe_marked(r, s))
			continue; /* a re-add: current on the member already (marked rebuilt) */
		if (raid_row_old(r, s) && !(rb->targets & ((1u << r->g_old.nmembers) - 1))) {
			/* a row of the old geometry holds nothing on a role the grow added */
			if ((rb->phase == PH_ALLOCATED) == a)
				rb->progress_bytes += (uint64_t)__builtin_popcount(rb->targets) *
						      r->g.chunk_bytes;
			continue;
		}

		/* a replacement copies every stripe; a rebuild skips those written
		 * whole since it began */
		if ((rb->phase == PH_ALLOCATED) == a && (rb->replace || !raid_stripe_rebuilt(r, s))) {
			*unit = s;
			return true;
		}
		if ((rb->phase == PH_ALLOCATED) == a) { /* already current: written whole since */
			rb->progress_bytes += (uint64_t)__builtin_popcount(rb->targets) * r->g.chunk_bytes;
		}
	}
	return false;
}

static int issue_unit(struct ff_raid *r, struct raid_rebuild *rb, unsigned slot, uint64_t unit,
		      uint32_t target)
{
	struct ff_raid_io *io = &rb->io[slot];

	memset(io, 0, sizeof(*io));
	io->op = FF_RAID_REBUILD;
	io->rebuild_members = target;
	io->flags = FF_RAID_IO_BACKGROUND | (rb->replace ? FF_RAID_IO_TO_SHADOW : 0);
	io->done = unit_done;
	io->priv = r;
	if (rb->phase == PH_META) {
		io->space = FF_SPACE_META;
		io->off = unit * FF_META_CHUNK;
		io->len = FF_META_CHUNK;
	} else {
		io->space = FF_SPACE_DATA;
		if (raid_row_old(r, unit))
			io->flags |= FF_RAID_IO_OLD_GEOM;
		io->off = unit * raid_io_geom(r, io)->stripe_bytes;
		io->len = raid_io_geom(r, io)->stripe_bytes;
	}
	rb->busy[slot] = true;
	rb->lowest_inflight[slot] = unit;
	rb->inflight++;
	return ff_raid_submit(r, io);
}

/* ---- the thread -------------------------------------------------------------- */

/*
 * Foreground first.  The array counts as busy while foreground I/O moved
 * in the last half second; then the rebuild may issue min_bps (and keeps
 * only a couple of units in flight, so it never queues far ahead of the
 * stream's requests), else max_bps.  A token bucket on the bytes issued,
 * with 100 ms of burst, enforces the rate.
 */
#define BUSY_NS 500000000ull
#define INFLIGHT_BUSY 2

static bool fg_busy(struct ff_raid *r, struct raid_rebuild *rb, uint64_t now)
{
	uint64_t fg = atomic_load(&r->stats.fg_bytes);

	if (fg != rb->fg_last) {
		rb->fg_last = fg;
		rb->fg_moved_ns = now;
	}
	return now - rb->fg_moved_ns < BUSY_NS;
}

/* A rebuild starts idle: foreground counts as busy only once it moves. */
void ff_rebuild_rate_reset(struct ff_raid *r, struct raid_rebuild *rb)
{
	uint64_t now = ff_mono_ns();

	rb->fg_last = atomic_load(&r->stats.fg_bytes);
	rb->fg_moved_ns = now - BUSY_NS;
	rb->tokens = 0;
	rb->tokens_ns = now;
}

/* 0 when a unit of `bytes` may be issued now, else how long to wait (ns). */
static uint64_t rate_wait(struct ff_raid *r, struct raid_rebuild *rb, uint64_t bytes, uint64_t now,
			  bool busy)
{
	uint64_t rate = busy ? r->rebuild_min_bps : r->rebuild_max_bps;

	if (!rate) {
		rb->tokens = 0;
		rb->tokens_ns = now;
		return 0;
	}
	rb->tokens += (double)rate * (double)(now - rb->tokens_ns) / 1e9;
	rb->tokens = FF_MIN(rb->tokens, (double)rate / 10 + (double)bytes);
	rb->tokens_ns = now;
	if (rb->tokens >= (double)bytes) {
		rb->tokens -= (double)bytes;
		return 0;
	}
	return (uint64_t)(((double)bytes - rb->tokens) * 1e9 / (double)rate) + 1;
}

static void checkpoint(struct ff_raid *r, struct raid_rebuild *rb)
{
	uint64_t low = rb->pos;

	for (unsigned i = 0; i < RB_INFLIGHT; i++)
		if (rb->busy[i] && rb->lowest_inflight[i] < low)
			low = rb->lowest_inflight[i];
	pthread_mutex_lock(&r->sb_lock);
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (rb->targets & (1u << m))
			r->sb->roles[m].rebuild_pos = ff_cpu_to_le64(ckpt_encode(rb->phase, low));
	ff_raid_sb_write_soon_locked(r);
	pthread_mutex_unlock(&r->sb_lock);
}

static int run_phase(struct ff_raid *r, struct raid_rebuild *rb)
{
	uint64_t t_ckpt = ff_mono_ns();
	uint64_t unit_bytes = rb->phase == PH_META ? FF_META_CHUNK
			      : (uint64_t)__builtin_popcount(rb->targets) * r->g.chunk_bytes;
	int rc = 0;

	pthread_mutex_lock(&rb->lock);
	for (;;) {
		uint64_t unit, wait, now = ff_mono_ns();
		bool busy;
		uint32_t targets = rb->replace ? (atomic_load(&r->shadow_role) == (int)rb->replace_role &&
						   !(atomic_load(&r->dead_mask) & rb->targets) ? rb->targets : 0)
					       : atomic_load(&r->rebuild_mask) & rb->targets;
		unsigned slot;

		if (rb->stop || rb->err || !targets)
			break;
		busy = fg_busy(r, rb, now);
		if (rb->inflight >= (busy ? INFLIGHT_BUSY : RB_INFLIGHT)) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 5000000; /* look at the foreground again soon */
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&rb->cond, &rb->lock, &ts);
			continue;
		}
		wait = rate_wait(r, rb, unit_bytes, now, busy);
		if (wait) {
			pthread_mutex_unlock(&rb->lock);
			usleep((useconds_t)FF_MIN(wait / 1000, 20000ull));
			pthread_mutex_lock(&rb->lock);
			continue;
		}
		if (now - t_ckpt > RB_CHECKPOINT_NS) {
			checkpoint(r, rb);
			t_ckpt = now;
		}
		if (!next_unit(r, rb, &unit)) {
			while (rb->inflight)
				pthread_cond_wait(&rb->cond, &rb->lock);
			break;
		}
		for (slot = 0; rb->busy[slot]; slot++)
			;
		if (rb->phase == PH_META) { /* one META request per target member */
			for (uint32_t t = targets; t && rc == 0; t &= t - 1) {
				while (rb->inflight == RB_INFLIGHT)
					pthread_cond_wait(&rb->cond, &rb->lock);
				for (slot = 0; rb->busy[slot]; slot++)
					;
				rc = issue_unit(r, rb, slot, unit, t & -t);
			}
		} else {
			rc = issue_unit(r, rb, slot, unit, targets);
		}
		if (rc < 0) {
			rb->err = rc;
			break;
		}
	}
	while (rb->inflight)
		pthread_cond_wait(&rb->cond, &rb->lock);
	rc = rb->err;
	pthread_mutex_unlock(&rb->lock);
	return rc;
}

static void finish(struct ff_raid *r, struct raid_rebuild *rb)
{
	uint32_t done = atomic_load(&r->rebuild_mask) & rb->targets;

	atomic_fetch_and(&r->readd_mask, ~done);

	for (unsigned m = 0; m < r->g.nmembers; m++) {
		uint8_t expect = FF_MEMBER_REBUILDING;

		if ((done & (1u << m)) &&
		    atomic_compare_exchange_strong(&r->state[m], &expect, FF_MEMBER_ACTIVE)) {
			ff_log(FF_LOG_INFO, "member %s (role %u) rebuilt: %.1f s", r->mem[m].path, m,
			       (double)(ff_mono_ns() - rb->start_ns) / 1e9);
			ff_raid_event(r, FF_EVENT_REBUILD_FINISHED, (int)m, "rebuilt in %.1f s",
				      (double)(ff_mono_ns() - rb->start_ns) / 1e9);
		}
	}
	atomic_fetch_and(&r->rebuild_mask, ~done);
	pthread_mutex_lock(&r->sb_lock);
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (done & (1u << m))
			r->sb->roles[m].rebuild_pos = 0;
	ff_raid_sb_write_soon_locked(r);
	pthread_mutex_unlock(&r->sb_lock);
}

void ff_replace_finish(struct ff_raid *r, struct raid_rebuild *rb);
void ff_replace_abandon(struct ff_raid *r, struct raid_rebuild *rb);

/* One rebuild-failed per target (a replace's target is the role it copies). */
static void post_failed(struct ff_raid *r, struct raid_rebuild *rb, int rc)
{
	const char *why = rc < 0 ? strerror(-rc) : "a member it needed failed";

	if (rb->replace) {
		ff_raid_event_member(r, FF_EVENT_REBUILD_FAILED, (int)rb->replace_role, &r->shadow,
				     "replace of %s stopped: %s", r->mem[rb->replace_role].path, why);
		return;
	}
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (rb->targets & (1u << m))
			ff_raid_event(r, FF_EVENT_REBUILD_FAILED, (int)m, "%s", why);
}

void *ff_rebuild_main(void *arg)
{
	struct ff_raid *r = arg;
	struct raid_rebuild *rb = r->rb;
	int rc = 0;

	while (rb->phase < PH_DONE && rc == 0 && !rb->stop) {
		rc = run_phase(r, rb);
		if (rc < 0 || rb->stop)
			break;
		if (rb->replace ? atomic_load(&r->shadow_role) != (int)rb->replace_role ||
				  (atomic_load(&r->dead_mask) & rb->targets)
				: !(atomic_load(&r->rebuild_mask) & rb->targets))
			break;
		if (rb->phase == PH_META && !rb->replace)
			atomic_fetch_and(&r->meta_stale_mask, ~rb->targets);
		rb->phase++;
		rb->pos = 0;
		if (!rb->replace) /* a replacement restarts from scratch: nothing to keep */
			checkpoint(r, rb);
	}
	if (rc < 0)
		ff_log(FF_LOG_ERR, "rebuild stopped: %s", strerror(-rc));
	if (rc < 0 || (!rb->stop && rb->phase < PH_DONE)) /* an error, or a target died */
		post_failed(r, rb, rc);
	if (rb->replace && rb->phase == PH_DONE && rc == 0)
		ff_replace_finish(r, rb);
	else if (rb->replace)
		ff_replace_abandon(r, rb);
	else if (rc == 0 && rb->phase == PH_DONE)
		finish(r, rb);
	pthread_mutex_lock(&rb->lock);
	rb->running = false;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
	return NULL;
}

/* ---- public API ---------------------------------------------------------------- */

void ff_raid_set_alloc_query(struct ff_raid *r, bool (*fn)(void *arg, uint64_t stripe), void *arg)
{
	r->alloc_query = fn;
	r->alloc_arg = arg;
}

void ff_raid_set_rebuild_rate(struct ff_raid *r, uint64_t min_bps, uint64_t max_bps)
{
	r->rebuild_min_bps = min_bps;
	r->rebuild_max_bps = max_bps;
}

int ff_raid_rebuild_start(struct ff_raid *r)
{
	uint32_t targets = atomic_load(&r->rebuild_mask);
	struct raid_rebuild *rb;
	uint64_t ck = 0;
	int rc;

	if (!targets)
		return 0;
	if (r->rb && r->rb->running)
		return -EBUSY;
	if (raid_grown(r) && !r->row_old) {
		/* a grown array's rows are in two geometries: the row hook says which */
		ff_log(FF_LOG_INFO, "the rebuild waits for the filesystem to say which rows are in "
		       "which geometry");
		return 0;
	}
	if (!r->rb) {
		r->rb = calloc(1, sizeof(*r->rb));
		if (!r->rb)
			return -ENOMEM;
		pthread_mutex_init(&r->rb->lock, NULL);
		pthread_cond_init(&r->rb->cond, NULL);
	}
	rb = r->rb;
	if (!r->rebuilt) {
		r->rebuilt = calloc(FF_DIV_ROUND_UP(r->g.nstripes, 64) + 1, sizeof(uint64_t));
		if (!r->rebuilt)
			return -ENOMEM;
	}
	/* resume from the least advanced target's checkpoint */
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (targets & (1u << m)) {
			uint64_t v = ff_le64(r->sb->roles[m].rebuild_pos);

			ck = !ck || v < ck ? v : ck;
		}
	rb->targets = targets;
	rb->replace = false;
	/* a re-add alone resyncs the marked regions; with a member rebuilt in
	 * full beside it, everything is rebuilt */
	rb->filter = (targets & ~atomic_load(&r->readd_mask)) == 0;
	if (rb->filter)
		ck = 0;
	else
		atomic_fetch_and(&r->readd_mask, ~targets);
	ff_raid_wwd_counts(r, &rb->readd_regions, &rb->readd_meta_groups);
	rb->units_done = 0;
	ckpt_decode(ck, &rb->phase, &rb->pos);
	seed_rebuilt(r, rb->phase, rb->pos);
	if (rb->phase > PH_META)
		atomic_fetch_and(&r->meta_stale_mask, ~targets);
	progress_from_checkpoint(r, rb);
	rb->bytes_done = 0;
	rb->err = 0;
	rb->stop = false;
	rb->start_ns = ff_mono_ns();
	ff_rebuild_rate_reset(r, rb);
	rb->running = true;
	ff_log(FF_LOG_INFO, "rebuild of member mask %#x starts at phase %u position %llu", targets,
	       rb->phase, (unsigned long long)rb->pos);
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if ((targets & (1u << m)) && rb->filter)
			ff_raid_event(r, FF_EVENT_REBUILD_STARTED, (int)m, "re-add: resync of %llu "
				      "region(s) of %llu stripes and %llu metadata row group(s) written "
				      "while it was away", (unsigned long long)rb->readd_regions,
				      (unsigned long long)ff_raid_wwd_region_stripes(r),
				      (unsigned long long)rb->readd_meta_groups);
		else if (targets & (1u << m))
			ff_raid_event(r, FF_EVENT_REBUILD_STARTED, (int)m, "rebuild from parity");
	rc = -pthread_create(&rb->thread, NULL, ff_rebuild_main, r);
	if (rc < 0)
		rb->running = false;
	return rc;
}

void ff_raid_rebuild_stop(struct ff_raid *r)
{
	struct raid_rebuild *rb = r->rb;

	if (!rb)
		return;
	pthread_mutex_lock(&rb->lock);
	rb->stop = true;
	pthread_cond_broadcast(&rb->cond);
	pthread_mutex_unlock(&rb->lock);
	if (rb->thread) {
		pthread_join(rb->thread, NULL);
		rb->thread = 0;
	}
	if (rb->phase < PH_DONE && !rb->err && !rb->replace)
		checkpoint(r, rb);
}

void ff_raid_rebuild_free(struct ff_raid *r)
{
	if (r->rb) {
		pthread_mutex_destroy(&r->rb->lock);
		pthread_cond_destroy(&r->rb->cond);
		free(r->rb);
		r->rb = NULL;
	}
	free(r->rebuilt);
	r->rebuilt = NULL;
}

int ff_raid_rebuild_wait(struct ff_raid *r)
{
	struct raid_rebuild *rb = r->rb;
	int rc;

	if (!rb)
		return 0;
	pthread_mutex_lock(&rb->lock);
	while (rb->running)
		pthread_cond_wait(&rb->cond, &rb->lock);
	rc = rb->err;
	pthread_mutex_unlock(&rb->lock);
	return rc;
}

void ff_raid_rebuild_status(struct ff_raid *r, struct ff_raid_rebuild_status *st)
{
	struct raid_rebuild *rb = r->rb;
	double secs;

	memset(st, 0, sizeof(*st));
	st->members = atomic_load(&r->rebuild_mask);
	if (!rb)
		return;
	pthread_mutex_lock(&rb->lock);
	st->active = rb->running;
	st->phase = rb->phase;
	st->fraction = rb->progress_total ? FF_MIN(1.0, (double)rb->progress_bytes /
						   (double)rb->progress_total) : 0;
	st->bytes_done = rb->bytes_done;
	secs = (double)(ff_mono_ns() - rb->start_ns) / 1e9;
	st->mb_per_s = secs > 0 ? (double)rb->bytes_done / 1e6 / secs : 0;
	st->eta_s = st->fraction > 0 && st->fraction < 1 ? secs * (1 - st->fraction) / st->fraction : 0;
	st->error = rb->err;
	st->readd = rb->filter && !rb->replace;
	st->readd_regions = rb->readd_regions;
	st->readd_meta_groups = rb->readd_meta_groups;
	st->readd_region_bytes = ff_raid_wwd_region_stripes(r) * r->g.stripe_bytes;
	st->units_rebuilt = rb->units_done;
	pthread_mutex_unlock(&rb->lock);
}

