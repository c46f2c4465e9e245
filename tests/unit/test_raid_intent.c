/* SPDX-License-Identifier: MIT */
/*
 * The write-intent bitmap: after a crash only the regions that had writes
 * in flight are resynced.
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

/* The member holding stripe s's parity. */
static unsigned parity_member(struct ff_raid *r, uint64_t s)
{
	uint32_t used = 0;

	for (unsigned i = 0; i < ff_raid_geom(r)->ndata; i++)
		used |= 1u << ff_raid_chunk_member(r, s, i);
	return (unsigned)__builtin_ctz(~used);
}

/* A process dies with writes in flight in one region; stale parity there
 * (the torn write, injected by writing junk over a parity chunk) is found
 * and rewritten at the next assembly, while stale parity in a region that
 * had no writes in flight is left alone: only in-flight regions resync. */
START_TEST(crash_resyncs_only_regions_in_flight)
{
	struct ff_geom gg;
	const struct ff_geom *g = &gg; /* a copy: the array it came from is closed below */
	struct ff_raid *r;
	uint64_t s_hot, s_cold;
	unsigned pm_hot, pm_cold;
	uint8_t *buf;
	pid_t pid;
	int status;

	ut_rng = 123;
	ut_make_members(4, 256);
	ut_create(5, 4);
	r = ut_assemble(ut_pp, 4);
	gg = *ff_raid_geom(r);
	buf = ff_alloc_aligned(g->stripe_bytes);
	ck_assert_uint_ge(g->nstripes, 600); /* two write-intent regions at least */
	s_hot = 10;
	s_cold = g->nstripes - 10;
	pm_hot = parity_member(r, s_hot);
	pm_cold = parity_member(r, s_cold);
	ut_fill(buf, g->stripe_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, s_hot * g->stripe_bytes, buf,
				    g->stripe_bytes), 0);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, s_cold * g->stripe_bytes, buf,
				    g->stripe_bytes), 0);
	ff_raid_close(r);
	pid = fork();
	if (pid == 0) { /* writes to the hot region, then dies without closing */
		struct ff_raid_opts o = { .workers = 2 };
		struct ff_err err;
		struct ff_raid *c;

		if (ff_raid_assemble(ut_pp, 4, &o, &c, &err) < 0)
			_exit(2);
		ut_fill(buf, g->stripe_bytes);
		if (ff_raid_rw(c, FF_RAID_WRITE, FF_SPACE_DATA, s_hot * g->stripe_bytes + 4096, buf,
			       8192) < 0)
			_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* fault: the torn write (junk over hot parity) and old damage in the cold region */
	ut_junk_at(ut_paths[pm_hot], g->data_offset + s_hot * g->chunk_bytes + 8192);
	ut_junk_at(ut_paths[pm_cold], g->data_offset + s_cold * g->chunk_bytes + 8192);
	r = ut_assemble(ut_pp, 4);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 1);
	ck_assert_uint_eq(ut_parity_mismatch(r, s_hot, buf), 0);
	ck_assert_uint_ne(ut_parity_mismatch(r, s_cold, buf), 0);
	ff_raid_close(r);
	/* a clean shutdown resyncs nothing */
	r = ut_assemble(ut_pp, 4);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 0);
	ff_raid_close(r);
	free(buf);
	ut_remove_members(4);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_test(tc, crash_resyncs_only_regions_in_flight);
}

int main(void)
{
	return ut_run("raid_intent", add_tests);
}
