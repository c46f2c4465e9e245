/* SPDX-License-Identifier: MIT */
/*
 * The engine's scheduling: the write window bounds DATA writes in flight,
 * background requests wait for foreground ones, and members in RAM get
 * their writes in row pieces.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid.h"
#include "raid/sb.h"
#include "tests/unit/helpers.h"

/* Submit at once: stripes 0..nfull-1 whole, then npart partial writes of
 * 8..72 KiB into those same stripes; wait for all, check each succeeded,
 * keep shadow in submission order.  Returns the time it took, in ns. */
static uint64_t write_batch(struct ff_raid *r, uint8_t *buf, unsigned nfull, unsigned npart)
{
	const struct ff_geom *g = ff_raid_geom(r);
	struct ut_async_write req[32];
	struct ut_count left;
	uint64_t t0;

	ck_assert_uint_le(nfull + npart, 32);
	ut_count_init(&left, nfull + npart);
	ut_fill(buf, (nfull + npart) * g->stripe_bytes);
	t0 = ff_mono_ns();
	for (unsigned k = 0; k < nfull + npart; k++) {
		struct ut_async_write *a = &req[k];

		memset(&a->io, 0, sizeof(a->io));
		a->io.op = FF_RAID_WRITE;
		a->io.space = FF_SPACE_DATA;
		if (k < nfull) {
			a->io.off = (uint64_t)k * g->stripe_bytes;
			a->io.len = g->stripe_bytes;
		} else {
			a->io.len = (2 + ut_rnd() % 17) * 4096;
			a->io.off = (uint64_t)(k % nfull) * g->stripe_bytes +
				    (ut_rnd() % ((g->stripe_bytes - a->io.len) / 4096)) * 4096;
		}
		a->io.buf = buf + (uint64_t)k * g->stripe_bytes;
		a->io.done = ut_async_write_done;
		a->left = &left;
		memcpy(ut_shadow + a->io.off, a->io.buf, a->io.len);
		ck_assert_int_eq(ff_raid_submit(r, &a->io), 0);
	}
	ck_assert_int_eq(ut_count_wait(&left, 60000), 0);
	for (unsigned k = 0; k < nfull + npart; k++)
		ck_assert_int_eq(req[k].io.result, 0);
	return ff_mono_ns() - t0;
}

/*
 * The write window: with window W, a worker has at most W DATA writes past
 * planning; the others wait their turn, first come first served, behind
 * the stripe lock when they share a stripe.  Fault injected: 100 ms of
 * latency on every write to member 0, so that each full-stripe write takes
 * at least 100 ms.  One worker.  8 full-stripe writes submitted at once take
 * at least 8 x 100 ms with window 1 (one at a time) and under half that
 * with window 16 (all the worker's ops: together; ~100 ms, and the 300 ms
 * left over absorb a loaded machine).  Then 8 full and 16
 * partial writes into the same stripes, at once (most wait for a stripe
 * lock, then for the window): all land as if applied in submission order.
 */
START_TEST(write_window_bounds_writes_in_flight)
{
	const unsigned windows[] = { 1, 16 }, nfull = 8;
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ff_geom geom; /* a copy: the array it describes is closed and reopened */
	struct ff_raid *r;
	uint8_t *buf;

	ut_rng = 77;
	ut_make_members(4, UT_MEMBER_MB);
	ut_create(5, 4);
	r = ut_assemble(ut_pp, 4);
	ut_write_all(r);
	geom = *ff_raid_geom(r);
	ff_raid_close(r);
	buf = ff_alloc_aligned(32 * geom.stripe_bytes);
	ck_assert_ptr_nonnull(buf);
	for (unsigned wi = 0; wi < 2; wi++) {
		struct ff_raid_opts o = { .workers = 1, .write_window = windows[wi] };
		uint64_t ns, waits;

		ck_assert_int_eq(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
		ck_assert_int_eq(ff_fault_parse("op=w,lat_ms=100", &rule, &err), 0);
		ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 0), &rule), 0);
		ns = write_batch(r, buf, nfull, 0);
		waits = atomic_load(&ff_raid_stats(r)->window_waits);
		if (windows[wi] == 1) {
			ck_assert_msg(ns >= nfull * 100000000ull,
				      "window 1: 8 full-stripe writes took %.0f ms: not one at a time",
				      (double)ns / 1e6);
			ck_assert_uint_eq(waits, nfull - 1);
		} else {
			ck_assert_msg(ns < nfull * 100000000ull / 2,
				      "window 16: 8 full-stripe writes took %.0f ms: not together",
				      (double)ns / 1e6);
			ck_assert_uint_eq(waits, 0);
		}
		write_batch(r, buf, nfull, 16);
		if (windows[wi] == 1)
			ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->window_waits), waits);
		ut_verify_all(r, windows[wi] == 1 ? "window 1" : "window 16");
		ff_raid_close(r);
	}
	free(buf);
	free(ut_shadow);
	ut_remove_members(4);
}
END_TEST

static struct ff_raid *assemble_opts(const struct ff_raid_opts *o, uint32_t skip_mask, unsigned n)
{
	const char *list[FF_MEMBERS_MAX];
	struct ff_err err = { "" };
	struct ff_raid *r = NULL;
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (!(skip_mask & (1u << i)))
			list[k++] = ut_pp[i];
	ck_assert_msg(ff_raid_assemble(list, k, o, &r, &err) == 0, "assemble: %s", err.msg);
	return r;
}

/*
 * Members in RAM (/dev/shm): writes go in 16 KiB row pieces of the 64 KiB
 * chunks (parity of a piece, then its copies), and so do reads while a
 * member is out.  Full-stripe writes, partial writes cut across pieces and
 * a degraded read all come back right and leave parity consistent; a full
 * stripe still counts as one full-stripe write.  With ring_only (every
 * request through io_uring) nothing is cut.
 */
START_TEST(pieces_on_members_in_ram)
{
	static const unsigned cfg[][2] = { { 5, 4 }, { 6, 6 } };
	unsigned level = cfg[_i][0], n = cfg[_i][1];
	struct ff_raid_opts o = { .workers = 2, .piece_bytes = 16 << 10 };
	struct ff_geom geom; /* a copy: the array is closed and assembled again */
	const struct ff_geom *g = &geom;
	struct ff_raid *r;
	uint64_t stripes;
	uint8_t *buf;

	ut_rng = 88 + (uint64_t)_i;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(level, n);
	r = assemble_opts(&o, 0, n);
	geom = *ff_raid_geom(r);
	stripes = g->nstripes;
	ut_write_all(r);
	/* 64 KiB rows in 16 KiB pieces: three more per stripe */
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->pieces), 3 * stripes);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->full_stripe_writes), stripes);
	/* partial writes: rows 4K..60K of one chunk (RMW in 4 pieces), and
	 * 40 KiB across a chunk boundary */
	for (uint64_t s = 0; s < stripes; s += 3) {
		uint64_t off = s * g->stripe_bytes + 4096;

		ut_fill(ut_shadow + off, 56 << 10);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, ut_shadow + off, 56 << 10), 0);
		off = s * g->stripe_bytes + UT_CHUNK - (20 << 10);
		ut_fill(ut_shadow + off, 40 << 10);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, ut_shadow + off, 40 << 10), 0);
	}
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rmw_segments) +
				  atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	ut_verify_all(r, "pieces");
	buf = ff_alloc_aligned(g->stripe_bytes + (size_t)g->nparity * UT_CHUNK);
	for (uint64_t s = 0; s < stripes; s++)
		ck_assert_msg(ut_parity_mismatch(r, s, buf) == 0, "stripe %llu: parity", (unsigned long long)s);
	ck_assert_int_eq(ff_raid_close(r), 0);

	/* member 1 missing: reads recover rows piece by piece */
	o.read_only = true;
	r = assemble_opts(&o, 1u << 1, n);
	ut_verify_all(r, "degraded, in pieces");
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->pieces), 0);
	ck_assert_int_eq(ff_raid_close(r), 0);

	/* through io_uring: whole segments */
	o.read_only = false;
	o.ring_only = true;
	r = assemble_opts(&o, 0, n);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, ut_shadow, g->data_bytes), 0);
	ut_verify_all(r, "ring only");
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->pieces), 0);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->full_stripe_writes), stripes);
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/*
 * Foreground first: with one worker of two stripe ops and every member read
 * taking 20 ms (fault: op=r,lat_ms=20), six background reads (as rebuild and
 * scrub send) are queued, then three foreground reads.  The foreground ones
 * take each op that comes free before any queued background read does: all
 * three complete before the fourth background one (first in, first out they
 * would complete last).
 */
struct ordered_read {
	struct ff_raid_io io;
	unsigned rank;
};

static pthread_mutex_t order_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t order_cond = PTHREAD_COND_INITIALIZER;
static unsigned order_next;

static void ordered_read_done(struct ff_raid_io *io)
{
	struct ordered_read *o = (struct ordered_read *)io;

	pthread_mutex_lock(&order_lock);
	o->rank = order_next++;
	pthread_cond_signal(&order_cond);
	pthread_mutex_unlock(&order_lock);
}

START_TEST(background_requests_wait_for_foreground)
{
	struct ff_raid_opts o = { .workers = 1, .ops_per_worker = 2, .read_slow_ms = 0 };
	struct ordered_read rd[9];
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	const struct ff_geom *g;
	struct ff_raid *r;
	uint8_t *buf;

	ut_rng = 91;
	order_next = 0;
	ut_make_members(4, UT_MEMBER_MB);
	ut_create(5, 4);
	ck_assert_int_eq(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
	g = ff_raid_geom(r);
	buf = ff_alloc_aligned(9 * g->stripe_bytes);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=20", &rule, &err), 0);
	for (unsigned m = 0; m < 4; m++)
		ck_assert_int_eq(ff_fault_add(ff_raid_member(r, m), &rule), 0);
	for (unsigned i = 0; i < 9; i++) { /* 0..5 background, 6..8 foreground */
		memset(&rd[i], 0, sizeof(rd[i]));
		rd[i].io.op = FF_RAID_READ;
		rd[i].io.space = FF_SPACE_DATA;
		rd[i].io.flags = i < 6 ? FF_RAID_IO_BACKGROUND : 0;
		rd[i].io.off = i * g->stripe_bytes;
		rd[i].io.len = g->stripe_bytes;
		rd[i].io.buf = buf + i * g->stripe_bytes;
		rd[i].io.done = ordered_read_done;
		ck_assert_int_eq(ff_raid_submit(r, &rd[i].io), 0);
	}
	pthread_mutex_lock(&order_lock); /* every read completes: the engine answers each */
	while (order_next < 9)
		pthread_cond_wait(&order_cond, &order_lock);
	pthread_mutex_unlock(&order_lock);
	for (unsigned i = 6; i < 9; i++)
		ck_assert_msg(rd[i].rank < rd[3].rank,
			      "foreground read %u completed %u-th, background read 3 %u-th", i,
			      rd[i].rank, rd[3].rank);
	for (unsigned i = 0; i < 9; i++)
		ck_assert_int_eq(rd[i].io.result, 0);
	ff_raid_close(r);
	free(buf);
	ut_remove_members(4);
}
END_TEST



static void add_tests(TCase *tc)
{
	tcase_add_test(tc, write_window_bounds_writes_in_flight);
	tcase_add_test(tc, background_requests_wait_for_foreground);
	tcase_add_loop_test(tc, pieces_on_members_in_ram, 0, 2);
}

int main(void)
{
	return ut_run("raid_sched", add_tests);
}
