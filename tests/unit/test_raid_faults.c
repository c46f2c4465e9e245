/* SPDX-License-Identifier: MIT */
/*
 * Injected member faults (io/fault.h): read errors past the threshold and
 * a write error each fail the member and the array goes on (one read error
 * is healed: test_raid_heal.c); a slow member is read around and a dead
 * one failed by its deadline.
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

/* Injected read errors on every read of one member: reads still return
 * the data, and once more than FF_RAID_MAX_READ_ERRORS were healed the
 * member is marked failed in the others' superblocks. */
START_TEST(read_error_fails_member_and_reads_on)
{
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_raid *r;
	unsigned n = 4;

	ut_rng = 11;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	/* fault: every read of member role 1 fails with EIO after 3 reads */
	ck_assert_int_eq(ff_fault_parse("op=r,err=EIO,after=3", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 1), &rule), 0);
	ut_verify_all(r, "member 1 failing reads");
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_FAILED);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->member_errors), FF_RAID_MAX_READ_ERRORS);
	ff_raid_close(r);
	/* reassembled with all four: member 1 is known failed, array is degraded */
	r = ut_assemble(ut_pp, n);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_MISSING);
	ut_verify_all(r, "after failure persisted");
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* Write errors on one member: writes succeed degraded and read back. */
START_TEST(write_error_fails_member_and_writes_on)
{
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_raid *r;
	unsigned n = 6;

	ut_rng = 12;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(6, n);
	r = ut_assemble(ut_pp, n);
	/* fault: writes to role 3 fail with EIO after 10 writes */
	ck_assert_int_eq(ff_fault_parse("op=w,err=EIO,after=10", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 3), &rule), 0);
	ut_write_all(r);
	ck_assert_int_eq(ff_raid_member_state(r, 3), FF_MEMBER_FAILED);
	ut_verify_all(r, "after write errors");
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* A member that answers slowly is read around (parity) instead of waited
 * for; one that stops answering is failed after the member timeout.
 * fault: every read of role 1 is delayed 3 s (then role 2 by 10 s).  The
 * whole verify must take less than one of those reads: 2.7 s leaves room
 * for a loaded machine (tests run two at a time) where it takes ~0.2 s. */
START_TEST(slow_member_is_read_around_and_dead_one_failed)
{
	struct ff_raid_opts o = { .workers = 2, .read_slow_ms = 40, .member_timeout_ms = 20000 };
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ff_raid *r;
	uint64_t t0;

	ut_rng = 55;
	ut_make_members(4, UT_MEMBER_MB);
	ut_create(5, 4);
	r = ut_assemble(ut_pp, 4);
	ut_write_all(r);
	ff_raid_close(r);
	ck_assert_int_eq(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=3000", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 1), &rule), 0);
	t0 = ff_mono_ns();
	ut_verify_all(r, "slow member 1");
	ck_assert_msg(ff_mono_ns() - t0 < 2700000000ull, "reading took %.2f s: waited for the slow member",
		      (double)(ff_mono_ns() - t0) / 1e9);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->hedged_reads), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	ff_raid_close(r);
	/* a member that does not answer at all within the timeout is failed */
	o.read_slow_ms = 1000000; /* no reading around: the timeout must act */
	o.member_timeout_ms = 300;
	ck_assert_int_eq(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=10000", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
	t0 = ff_mono_ns();
	ut_verify_all(r, "member 2 stops answering");
	ck_assert_msg(ff_mono_ns() - t0 < 5000000000ull, "reading took %.2f s",
		      (double)(ff_mono_ns() - t0) / 1e9);
	ck_assert_int_eq(ff_raid_member_state(r, 2), FF_MEMBER_FAILED);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->member_timeouts), 0);
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(4);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_test(tc, read_error_fails_member_and_reads_on);
	tcase_add_test(tc, write_error_fails_member_and_writes_on);
	tcase_add_test(tc, slow_member_is_read_around_and_dead_one_failed);
}

int main(void)
{
	return ut_run("raid_faults", add_tests);
}
