/* SPDX-License-Identifier: MIT */
/*
 * The playback / capture model against a simulated clock: which frames are
 * late, skipped or dropped for a queue, worked out by hand for small cases.
 */
#include <string.h>

#include "check_main.h"
#include "pacing.h"

#define MS 1000000ull
#define N_MAX 64

static struct ft_rec recs[N_MAX];

static void on_drop(void *ctx, uint64_t pos, uint64_t at_ns, enum ft_status why)
{
	struct ft_rec *r = ctx;

	ck_assert_uint_eq(r[pos].status, FT_ST_PENDING);	/* each position decided once */
	r[pos].status = (uint8_t)why;
	r[pos].start_ns = r[pos].done_ns = at_ns;
}

/* Workers that each take work_ns per frame, driven in time order. */
static void simulate(struct ft_sched *s, unsigned workers, uint64_t work_ns)
{
	uint64_t free_at[8] = { 0 };

	ck_assert_uint_le(workers, 8);
	for (int guard = 0; guard < 100000; guard++) {
		unsigned w = 0;
		struct ft_pick p;

		for (unsigned i = 1; i < workers; i++)
			if (free_at[i] < free_at[w])
				w = i;
		p = ft_sched_next(s, free_at[w], on_drop, recs);
		if (p.kind == FT_PICK_DONE) {
			free_at[w] = UINT64_MAX;	/* this worker is finished */
			for (unsigned i = 0; i < workers; i++)
				if (free_at[i] != UINT64_MAX)
					goto next;
			return;
		}
		if (p.kind == FT_PICK_WAIT) {
			ck_assert_uint_gt(p.until_ns, free_at[w]);
			free_at[w] = p.until_ns;
			continue;
		}
		ck_assert_uint_eq(recs[p.pos].status, FT_ST_PENDING);
		recs[p.pos].start_ns = free_at[w];
		free_at[w] += work_ns;
		recs[p.pos].done_ns = free_at[w];
		recs[p.pos].status = (uint8_t)ft_sched_judge(&s->pace, p.pos, free_at[w]);
next:;
	}
	ck_abort_msg("the scheduler did not finish");
}

static struct ft_sched sched;

static void start(uint64_t fps, uint32_t prebuffer, bool write, uint64_t n, uint32_t q)
{
	struct ft_pace p = { fps, 1, prebuffer };

	memset(recs, 0, sizeof(recs));
	ft_sched_init(&sched, &p, write, n, q);
}

START_TEST(rational_rates_are_exact)
{
	struct ft_pace p = { 24000, 1001, 5 };

	ck_assert_uint_eq(ft_pace_span_ns(&p, 24000), 1001ull * FT_NS_PER_S);
	ck_assert_uint_eq(ft_pace_gate_ns(&p, 24), 1001000000ull);
	ck_assert_uint_eq(ft_pace_deadline_ns(&p, 0), ft_pace_span_ns(&p, 5));
	p.fps_num = 0;
	ck_assert_uint_eq(ft_pace_deadline_ns(&p, 100), 0);
}
END_TEST

START_TEST(unpaced_hands_out_every_frame_once)
{
	struct ft_drops d;

	start(0, 5, false, 40, 5);
	simulate(&sched, 3, 7 * MS);
	ft_account(recs, 40, false, &sched.pace, &d);
	ck_assert_uint_eq(d.transferred, 40);
	ck_assert_uint_eq(d.dropped, 0);
	ck_assert_uint_eq(d.late, 0);
}
END_TEST

START_TEST(fast_reader_drops_nothing_and_waits_for_gates)
{
	struct ft_drops d;

	start(25, 2, false, 20, 5);	/* 40 ms per frame, each read takes 30 ms */
	simulate(&sched, 1, 30 * MS);
	ft_account(recs, 20, false, &sched.pace, &d);
	ck_assert_uint_eq(d.dropped, 0);
	for (uint64_t k = 0; k < 20; k++)
		ck_assert_uint_ge(recs[k].start_ns, k * 40 * MS);	/* never before its gate */
}
END_TEST

/*
 * 25 fps (40 ms), prebuffer 2, one reader taking 100 ms: deadlines are
 * (2 + k) * 40 ms.  Reads 0, 1, 4, 6, 9 complete late (by 20, 80, 60, 80,
 * 60 ms); 2, 3, 5, 7, 8 are skipped because their deadline passed first.
 */
START_TEST(slow_reader_is_late_then_skips)
{
	static const uint8_t want[10] = { FT_ST_LATE, FT_ST_LATE, FT_ST_SKIPPED, FT_ST_SKIPPED,
					  FT_ST_LATE, FT_ST_SKIPPED, FT_ST_LATE, FT_ST_SKIPPED,
					  FT_ST_SKIPPED, FT_ST_LATE };
	struct ft_drops d;

	start(25, 2, false, 10, 5);
	simulate(&sched, 1, 100 * MS);
	for (int k = 0; k < 10; k++)
		ck_assert_msg(recs[k].status == want[k], "frame %d: status %u", k, recs[k].status);
	ft_account(recs, 10, false, &sched.pace, &d);
	ck_assert_uint_eq(d.dropped, 10);
	ck_assert_uint_eq(d.late, 5);
	ck_assert_uint_eq(d.skipped, 5);
	ck_assert_uint_eq(d.transferred, 5);
	ck_assert_uint_eq(d.longest_drop_run, 10);
	ck_assert_uint_eq(d.lateness_max_ns, 80 * MS);
}
END_TEST

/*
 * 25 fps capture, queue of 2, one writer taking 100 ms, prebuffer 5:
 * frames 4, 5, 7, 9 arrive to a full queue and are dropped; 0, 1, 2, 3, 6, 8
 * are written, and 2, 3, 6, 8 complete after their deadline (late, kept).
 */
START_TEST(slow_writer_drops_on_full_queue)
{
	static const uint8_t want[10] = { FT_ST_OK, FT_ST_OK, FT_ST_LATE, FT_ST_LATE, FT_ST_QFULL,
					  FT_ST_QFULL, FT_ST_LATE, FT_ST_QFULL, FT_ST_LATE,
					  FT_ST_QFULL };
	struct ft_drops d;

	start(25, 5, true, 10, 2);
	simulate(&sched, 1, 100 * MS);
	for (int k = 0; k < 10; k++)
		ck_assert_msg(recs[k].status == want[k], "frame %d: status %u", k, recs[k].status);
	ck_assert_uint_eq(recs[4].done_ns, 160 * MS);	/* dropped at its arrival */
	ft_account(recs, 10, true, &sched.pace, &d);
	ck_assert_uint_eq(d.dropped, 4);
	ck_assert_uint_eq(d.qfull, 4);
	ck_assert_uint_eq(d.late, 4);
	ck_assert_uint_eq(d.transferred, 6);
	ck_assert_uint_eq(d.longest_drop_run, 2);
	ck_assert_uint_eq(d.lateness_max_ns, 80 * MS);	/* frame 3: 400 - 320 ms */
}
END_TEST

START_TEST(two_writers_keep_up_where_one_cannot)
{
	struct ft_drops d;

	start(25, 5, true, 30, 2);	/* 60 ms per write, 40 ms per frame */
	simulate(&sched, 2, 60 * MS);
	ft_account(recs, 30, true, &sched.pace, &d);
	ck_assert_uint_eq(d.dropped, 0);
	start(25, 5, true, 30, 2);
	simulate(&sched, 1, 60 * MS);
	ft_account(recs, 30, true, &sched.pace, &d);
	ck_assert_uint_gt(d.dropped, 0);
}
END_TEST

START_TEST(stopped_stream_hands_out_nothing)
{
	struct ft_pick p;

	start(25, 5, true, 10, 2);
	sched.stopped = true;
	p = ft_sched_next(&sched, 0, on_drop, recs);
	ck_assert_int_eq(p.kind, FT_PICK_DONE);
}
END_TEST

START_TEST(lowest_fps_finds_the_worst_second)
{
	uint64_t ev[50], n = 0;

	for (uint64_t k = 0; k < 50; k++)	/* 25 fps for 2 s, frames 10..14 missing */
		if (k < 10 || k > 14)
			ev[n++] = k * 40 * MS;
	ck_assert(ft_lowest_fps(ev, n, 0, 2000 * MS) == 20.0);
	ck_assert(ft_lowest_fps(ev, 0, 0, 2000 * MS) == 0.0);
	ck_assert(ft_lowest_fps(ev, n, 0, 999 * MS) == -1.0);	/* shorter than a window */
}
END_TEST

START_TEST(shown_frames_are_the_undropped_deadlines)
{
	struct ft_pace p = { 25, 1, 2 };
	uint64_t ev[4], from, to;

	memset(recs, 0, sizeof(recs));
	recs[0].status = FT_ST_OK;
	recs[1].status = FT_ST_LATE;	/* dropped in a read, kept in a write */
	recs[2].status = FT_ST_SKIPPED;
	recs[3].status = FT_ST_OK;
	ck_assert_uint_eq(ft_shown_events(recs, 4, false, &p, ev, &from, &to), 2);
	ck_assert_uint_eq(ev[1], 5 * 40 * MS);
	ck_assert_uint_eq(from, 2 * 40 * MS);
	ck_assert_uint_eq(to, 6 * 40 * MS);
	ck_assert_uint_eq(ft_shown_events(recs, 4, true, &p, ev, &from, &to), 3);
}
END_TEST

static Suite *pacing_suite(void)
{
	Suite *s = suite_create("pacing");
	TCase *tc = tcase_create("model");

	tcase_add_test(tc, rational_rates_are_exact);
	tcase_add_test(tc, unpaced_hands_out_every_frame_once);
	tcase_add_test(tc, fast_reader_drops_nothing_and_waits_for_gates);
	tcase_add_test(tc, slow_reader_is_late_then_skips);
	tcase_add_test(tc, slow_writer_drops_on_full_queue);
	tcase_add_test(tc, two_writers_keep_up_where_one_cannot);
	tcase_add_test(tc, stopped_stream_hands_out_nothing);
	tcase_add_test(tc, lowest_fps_finds_the_worst_second);
	tcase_add_test(tc, shown_frames_are_the_undropped_deadlines);
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(pacing_suite)
