/* SPDX-License-Identifier: MIT */
#include "pacing.h"

#include <assert.h>
#include <stdlib.h>

__extension__ typedef unsigned __int128 u128;

/* frames/fps in ns, exact for rational rates such as 24000/1001. */
uint64_t ft_pace_span_ns(const struct ft_pace *p, uint64_t frames)
{
	u128 ns;

	if (!ft_paced(p))
		return 0;
	ns = (u128)frames * p->fps_den * FT_NS_PER_S / p->fps_num;
	return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t ft_pace_gate_ns(const struct ft_pace *p, uint64_t pos)
{
	return ft_pace_span_ns(p, pos);
}

uint64_t ft_pace_deadline_ns(const struct ft_pace *p, uint64_t pos)
{
	return ft_pace_span_ns(p, pos + p->prebuffer);
}

bool ft_status_transferred(enum ft_status st)
{
	return st == FT_ST_OK || st == FT_ST_LATE;
}

bool ft_status_dropped(enum ft_status st, bool write)
{
	switch (st) {
	case FT_ST_OK: return false;
	case FT_ST_LATE: return !write;	/* a late write still lands; a late read is not shown */
	case FT_ST_PENDING:
	case FT_ST_SKIPPED:
	case FT_ST_QFULL:
	case FT_ST_ERROR:
	case FT_ST_NOT_RUN: return true;
	}
	return true;
}

void ft_sched_init(struct ft_sched *s, const struct ft_pace *pace, bool write, uint64_t total,
		   uint32_t queue_max)
{
	assert(queue_max >= 1 && queue_max <= FT_QUEUE_MAX);
	s->pace = *pace;
	s->write = write;
	s->stopped = false;
	s->total = total;
	s->queue_max = queue_max;
	s->next = 0;
	s->q_head = 0;
	s->q_len = 0;
}

static struct ft_pick pick_frame(uint64_t pos)
{
	return (struct ft_pick){ .kind = FT_PICK_FRAME, .pos = pos };
}

static struct ft_pick pick_wait(uint64_t until_ns)
{
	return (struct ft_pick){ .kind = FT_PICK_WAIT, .until_ns = until_ns };
}

static const struct ft_pick pick_done = { .kind = FT_PICK_DONE };

static struct ft_pick next_read(struct ft_sched *s, uint64_t now_ns, ft_drop_fn drop, void *ctx)
{
	/* Bounded by total: every pass either hands out, skips or waits. */
	while (s->next < s->total) {
		uint64_t k = s->next;

		if (now_ns >= ft_pace_deadline_ns(&s->pace, k)) {
			/* Too late to start: a player skips it to catch up. */
			drop(ctx, k, now_ns, FT_ST_SKIPPED);
			s->next++;
			continue;
		}
		if (now_ns < ft_pace_gate_ns(&s->pace, k))
			return pick_wait(ft_pace_gate_ns(&s->pace, k));
		s->next++;
		return pick_frame(k);
	}
	return pick_done;
}

/*
 * Arrivals are admitted lazily, when a worker asks.  That is exact: workers
 * only start frames inside this function, so between two calls the queue can
 * only grow, and every arrival since the last call sees the queue as it is now.
 */
static struct ft_pick next_write(struct ft_sched *s, uint64_t now_ns, ft_drop_fn drop, void *ctx)
{
	while (s->next < s->total && ft_pace_gate_ns(&s->pace, s->next) <= now_ns) {
		uint64_t k = s->next++;

		if (s->q_len < s->queue_max)
			s->q[(s->q_head + s->q_len++) % FT_QUEUE_MAX] = k;
		else
			drop(ctx, k, ft_pace_gate_ns(&s->pace, k), FT_ST_QFULL);
	}
	if (s->q_len > 0) {
		uint64_t k = s->q[s->q_head];

		s->q_head = (s->q_head + 1) % FT_QUEUE_MAX;
		s->q_len--;
		return pick_frame(k);
	}
	if (s->next >= s->total)
		return pick_done;
	return pick_wait(ft_pace_gate_ns(&s->pace, s->next));
}

struct ft_pick ft_sched_next(struct ft_sched *s, uint64_t now_ns, ft_drop_fn drop, void *ctx)
{
	if (s->stopped)
		return pick_done;
	if (!ft_paced(&s->pace)) {
		if (s->next >= s->total)
			return pick_done;
		return pick_frame(s->next++);
	}
	return s->write ? next_write(s, now_ns, drop, ctx) : next_read(s, now_ns, drop, ctx);
}

enum ft_status ft_sched_judge(const struct ft_pace *p, uint64_t pos, uint64_t done_ns)
{
	if (!ft_paced(p))
		return FT_ST_OK;
	return done_ns > ft_pace_deadline_ns(p, pos) ? FT_ST_LATE : FT_ST_OK;
}

static void count_status(struct ft_drops *d, enum ft_status st)
{
	switch (st) {
	case FT_ST_OK: break;
	case FT_ST_LATE: d->late++; break;
	case FT_ST_SKIPPED: d->skipped++; break;
	case FT_ST_QFULL: d->qfull++; break;
	case FT_ST_ERROR: d->errors++; break;
	case FT_ST_PENDING:
	case FT_ST_NOT_RUN: d->not_run++; break;
	}
}

void ft_account(const struct ft_rec *r, uint64_t n, bool write, const struct ft_pace *p,
		struct ft_drops *out)
{
	uint64_t run = 0;

	*out = (struct ft_drops){ .total = n };
	for (uint64_t k = 0; k < n; k++) {
		enum ft_status st = (enum ft_status)r[k].status;

		count_status(out, st);
		if (ft_status_transferred(st))
			out->transferred++;
		if (st == FT_ST_LATE) {
			uint64_t dl = ft_pace_deadline_ns(p, k);
			uint64_t late = r[k].done_ns > dl ? r[k].done_ns - dl : 0;

			if (late > out->lateness_max_ns)
				out->lateness_max_ns = late;
		}
		if (ft_status_dropped(st, write)) {
			out->dropped++;
			if (++run > out->longest_drop_run)
				out->longest_drop_run = run;
		} else {
			run = 0;
		}
		if (r[k].verify == FT_V_OK)
			out->verified++;
		else if (r[k].verify == FT_V_BAD)
			out->verify_failed++;
	}
}

#define WINDOW_NS FT_NS_PER_S
#define STEP_NS 1000000ull

double ft_lowest_fps(const uint64_t *events, uint64_t n, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t lo = 0, hi = 0, best = UINT64_MAX;

	if (to_ns < from_ns || to_ns - from_ns < WINDOW_NS)
		return -1.0;
	/* Bounded by the span in ms; lo and hi only move forward. */
	for (uint64_t x = from_ns; x + WINDOW_NS <= to_ns; x += STEP_NS) {
		while (lo < n && events[lo] < x)
			lo++;
		if (hi < lo)
			hi = lo;
		while (hi < n && events[hi] < x + WINDOW_NS)
			hi++;
		if (hi - lo < best)
			best = hi - lo;
	}
	return (double)best;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t ft_shown_events(const struct ft_rec *r, uint64_t n, bool write, const struct ft_pace *p,
			 uint64_t *events, uint64_t *from_ns, uint64_t *to_ns)
{
	uint64_t m = 0;

	if (ft_paced(p)) {
		for (uint64_t k = 0; k < n; k++)
			if (!ft_status_dropped((enum ft_status)r[k].status, write))
				events[m++] = ft_pace_deadline_ns(p, k);
		*from_ns = ft_pace_deadline_ns(p, 0);
		*to_ns = ft_pace_deadline_ns(p, n);
		return m;
	}
	*from_ns = 0;
	*to_ns = 0;
	for (uint64_t k = 0; k < n; k++) {
		if (!ft_status_transferred((enum ft_status)r[k].status))
			continue;
		events[m++] = r[k].done_ns;
		if (r[k].done_ns > *to_ns)
			*to_ns = r[k].done_ns;
	}
	qsort(events, m, sizeof(*events), cmp_u64);
	return m;
}
