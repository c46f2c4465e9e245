/* SPDX-License-Identifier: MIT */
/*
 * Rebuild and member management: every loss pattern rebuilt onto new
 * members, hot spares taking over (also while a let-go member's write still
 * hangs: the fault's hold handshake, not a sleep, says when it does), a
 * rebuild resumed from its checkpoint, its idle rate, and replace.
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

static const char *new_member_path(unsigned idx)
{
	static char p[300];

	snprintf(p, sizeof(p), "%s/new%u.img", ut_dir, idx);
	return p;
}

/* A fresh file that will replace a lost member. */
static const char *new_member(unsigned idx)
{
	static char p[FF_MEMBERS_MAX][300];
	int fd;

	snprintf(p[idx], sizeof(p[idx]), "%s/new%u.img", ut_dir, idx);
	fd = open(p[idx], O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)ut_member_mb << 20), 0);
	close(fd);
	return p[idx];
}

/* Every single member of RAID5 and every pair of RAID6 is lost, written
 * around (full and partial writes), replaced by a new member and rebuilt;
 * then the data reads back with the array healthy, and again with another
 * member left out (so the rebuilt chunks and parity are right). */
START_TEST(rebuild_every_loss_pattern)
{
	unsigned level = _i == 0 ? 5 : 6, n = _i == 0 ? 4 : 5, cycles = 0;
	struct ff_err err = { "" };

	ut_rng = 77 + (uint64_t)_i;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(level, n);
	{
		struct ff_raid *r = ut_assemble(ut_pp, n);

		ut_write_all(r);
		ff_raid_close(r);
	}
	for (unsigned x = 0; x < n; x++) {
		for (unsigned y = x + (level == 6); y < (level == 5 ? x + 1 : n); y++) {
			uint32_t lost = (1u << x) | (1u << y);
			const struct ff_geom *g;
			struct ff_raid *r = ut_assemble_without(n, lost);
			uint8_t *buf;

			g = ff_raid_geom(r);
			buf = ff_alloc_aligned(2 * g->stripe_bytes);
			for (int k = 0; k < 20; k++) { /* degraded writes, full and partial */
				uint64_t len = (1 + ut_rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
				uint64_t off = (ut_rnd() % ((g->data_bytes - len) / 4096)) * 4096;

				ut_fill(buf, len);
				memcpy(ut_shadow + off, buf, len);
				ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf, len), 0);
			}
			free(buf);
			for (unsigned m = 0; m < n; m++) {
				if (!(lost & (1u << m)))
					continue;
				ck_assert_msg(ff_raid_add(r, new_member(m), false, &err) == 0, "add: %s", err.msg);
				ck_assert_int_eq(ff_raid_member_state(r, m), FF_MEMBER_REBUILDING);
			}
			ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
			for (unsigned m = 0; m < n; m++)
				ck_assert_int_eq(ff_raid_member_state(r, m), FF_MEMBER_ACTIVE);
			ut_verify_all(r, "rebuilt, same session");
			ff_raid_close(r);
			/* the new members now hold the lost roles: give them the old names */
			for (unsigned m = 0; m < n; m++) {
				char np[300];

				if (!(lost & (1u << m)))
					continue;
				snprintf(np, sizeof(np), "%s/new%u.img", ut_dir, m);
				ck_assert_int_eq(unlink(ut_paths[m]), 0);
				ck_assert_int_eq(rename(np, ut_paths[m]), 0);
			}
			r = ut_assemble(ut_pp, n);
			ck_assert_uint_eq(ff_raid_failed_count(r), 0);
			ut_verify_all(r, "rebuilt, reassembled");
			ff_raid_close(r);
			ut_assemble_ro = true;
			r = ut_assemble_without(n, 1u << ((x + 1) % n));
			ut_verify_all(r, "rebuilt, then another member left out");
			ff_raid_close(r);
			ut_assemble_ro = false;
			cycles++;
		}
	}
	ck_assert_uint_eq(cycles, level == 5 ? n : n * (n - 1) / 2);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* The role is rebuilt, or its rebuild has started (the superblock thread
 * marks the role rebuilding, then starts the rebuild thread). */
static bool role_rebuild_started(struct ff_raid *r, unsigned role)
{
	struct ff_raid_rebuild_status st;

	if (ff_raid_member_state(r, role) == FF_MEMBER_ACTIVE)
		return true;
	ff_raid_rebuild_status(r, &st);
	return ff_raid_member_state(r, role) == FF_MEMBER_REBUILDING && st.active;
}

/* The superblock thread hands the spare to dead `role`: poll up to ms for
 * the role's rebuild to have started (or be done), and the spare gone from
 * the list. */
static void spare_took_role(struct ff_raid *r, unsigned role, int ms)
{
	uint64_t deadline_ns = ff_mono_ns() + (uint64_t)ms * 1000000ull;

	/* no event to wait on: poll the state, up to the deadline */
	while (!role_rebuild_started(r, role) && ff_mono_ns() < deadline_ns)
		usleep(10000);
	ck_assert_msg(role_rebuild_started(r, role), "role %u: no rebuild %d ms after the failure",
		      role, ms);
	ck_assert_uint_eq(ff_raid_spare_count(r), 0);
}

/* The rebuild of `role` ends well, the role is active, every byte reads
 * back; then the array is closed and its n members removed. */
static void rebuilt_then_closed(struct ff_raid *r, unsigned role, unsigned n, const char *what)
{
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
	ut_verify_all(r, what);
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(n);
}

/* A hot spare takes over a member that fails, and is rebuilt.  _i 0: the
 * member is failed by hand; 1: fault: its writes fail with EIO after 10, in
 * the middle of a rewrite of the whole array that goes on while the spare
 * takes the role (its fault rules are let go while requests still flow). */
START_TEST(hot_spare_takes_over)
{
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ff_raid *r;
	unsigned n = 4;

	ut_rng = 88;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	ck_assert_int_eq(ff_raid_add(r, new_member(0), false, &err), 0);
	ck_assert_uint_eq(ff_raid_spare_count(r), 1);
	if (_i == 0) {
		ck_assert_int_eq(ff_raid_fail_member(r, 2, "test: failed on purpose"), 0);
	} else {
		ck_assert_int_eq(ff_fault_parse("op=w,err=EIO,after=10", &rule, &err), 0);
		ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
		free(ut_shadow);
		ut_write_all(r);
		ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->member_errors), 0);
	}
	spare_took_role(r, 2, 5000);
	rebuilt_then_closed(r, 2, n, "spare rebuilt");
}
END_TEST

/*
 * A write sent to a member before its role went to a hot spare, failing
 * after the spare took the role, must not fail the spare (role_epoch).
 * fault: every write to role 2 hangs 1.5 s, then fails with EIO.  The
 * member is failed by hand while a whole-stripe write to it hangs; the spare
 * takes role 2; the hung write then fails.  The spare rebuilds and stays.
 */
START_TEST(late_error_of_a_let_go_member_spares_its_successor)
{
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ut_async_write a;
	struct ut_count left;
	struct ff_raid *r;
	const struct ff_geom *g;
	uint8_t *buf;
	unsigned n = 4;

	ut_count_init(&left, 1);
	ut_rng = 91;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	g = ff_raid_geom(r);
	ck_assert_int_eq(ff_raid_add(r, new_member(0), false, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=w,lat_ms=1500,err=EIO", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
	buf = ff_alloc_aligned(g->stripe_bytes);
	ut_fill(buf, g->stripe_bytes);
	memset(&a, 0, sizeof(a));
	a.io = (struct ff_raid_io){ .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
				    .off = 3 * g->stripe_bytes, .len = g->stripe_bytes, .buf = buf,
				    .done = ut_async_write_done };
	a.left = &left;
	memcpy(ut_shadow + a.io.off, buf, a.io.len);
	ck_assert_int_eq(ff_raid_submit(r, &a.io), 0);
	/* role 2's write of the stripe is out, and hangs in the fault's delay */
	ck_assert_int_eq(ff_fault_wait_held(ff_raid_member(r, 2), 0, 1, 5000), 0);
	ck_assert_int_eq(ff_raid_fail_member(r, 2, "test: failed while a write to it hangs"), 0);
	spare_took_role(r, 2, 1000);
	ck_assert_msg(ut_count_left(&left) == 1, "the spare took the role only after the hung write ended");
	ck_assert_int_eq(ut_count_wait(&left, 30000), 0); /* the delay ends: the late EIO */
	ck_assert_int_eq(a.io.result, 0); /* written degraded: the data is in parity */
	ck_assert_uint_ge(atomic_load(&ff_raid_stats(r)->member_errors), 1); /* the late EIO came */
	free(buf);
	rebuilt_then_closed(r, 2, n, "after the late error");
}
END_TEST

/* A rebuild stopped half-way (the array closed) resumes from its
 * checkpoint at the next assembly, and finishes with the data intact. */
START_TEST(rebuild_resumes_from_checkpoint)
{
	struct ff_raid_rebuild_status st;
	struct ff_err err = { "" };
	struct ff_raid *r;
	unsigned n = 4;
	double first;

	ut_rng = 99;
	r = ut_written_array(5, n, 64);
	ff_raid_close(r);
	r = ut_assemble_without(n, 1u << 1);
	ff_raid_set_rebuild_rate(r, 16 << 20, 16 << 20); /* slow, so that it stops mid-way */
	ck_assert_int_eq(ff_raid_add(r, new_member(1), false, &err), 0);
	/* until it is into the data phases with something done: poll, no event */
	for (uint64_t end_ns = ff_mono_ns() + 20000000000ull; ff_mono_ns() < end_ns; usleep(20000)) {
		ff_raid_rebuild_status(r, &st);
		if (st.phase >= 1 && st.fraction > 0.0)
			break;
	}
	ff_raid_rebuild_status(r, &st);
	ck_assert(st.active);
	ck_assert_msg(st.phase >= 1 && st.fraction < 1.0, "phase %u fraction %f", st.phase,
		      st.fraction);
	first = st.fraction;
	ff_raid_close(r); /* stops the rebuild and checkpoints it */
	ck_assert_int_eq(unlink(ut_paths[1]), 0);
	ck_assert_int_eq(rename(new_member_path(1), ut_paths[1]), 0);
	r = ut_assemble(ut_pp, n);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_REBUILDING);
	ut_verify_all(r, "while the rebuild waits"); /* served around the rebuilding member */
	ck_assert_int_eq(ff_raid_rebuild_start(r), 0);
	ff_raid_rebuild_status(r, &st);
	ck_assert_msg(st.phase >= 1, "resumed at phase %u", st.phase);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	ut_verify_all(r, "resumed rebuild");
	ff_raid_close(r);
	ut_assemble_ro = true;
	r = ut_assemble_without(n, 1u << 2); /* the rebuilt member's chunks are right */
	ut_verify_all(r, "resumed rebuild, member 2 left out");
	ff_raid_close(r);
	ut_assemble_ro = false;
	ck_assert(first > 0.0);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* A rebuild on an idle array runs at the idle rate from its first unit:
 * foreground I/O from before it started does not count as "busy" (it did,
 * for half a second, at the busy rate). */
START_TEST(rebuild_starts_at_the_idle_rate)
{
	struct ff_raid_rebuild_status st;
	struct ff_err err = { "" };
	struct ff_raid *r;
	unsigned n = 4;

	ut_rng = 98;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	ff_raid_close(r);
	r = ut_assemble_without(n, 1u << 1);
	ut_verify_all(r, "degraded, before the rebuild"); /* foreground I/O just before */
	ff_raid_set_rebuild_rate(r, 64 << 10, 0);      /* busy: 64 KiB/s; idle: no limit */
	ck_assert_int_eq(ff_raid_add(r, new_member(1), false, &err), 0);
	usleep(300 * 1000);
	ff_raid_rebuild_status(r, &st);
	ck_assert_msg(!st.active || st.bytes_done > (4u << 20),
		      "after 300 ms of an idle rebuild only %llu bytes were rebuilt (busy rate)",
		      (unsigned long long)st.bytes_done);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ut_verify_all(r, "rebuilt");
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* replace OLD NEW: OLD keeps serving while NEW is filled; NEW then holds
 * the role, and the data is right with another member left out.  The array
 * has been through a rebuild first (whose bookkeeping must not leak into
 * the copy). */
START_TEST(replace_while_old_serves)
{
	struct ff_err err = { "" };
	struct ff_raid *r;
	unsigned n = 4;

	ut_rng = 66;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	ck_assert_int_eq(ff_raid_fail_member(r, 0, "test: failed on purpose"), 0);
	ck_assert_int_eq(ff_raid_remove(r, ut_paths[0], &err), 0);
	ck_assert_msg(ff_raid_add(r, new_member(0), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	/* same session: the new member keeps its file, under the old name */
	ck_assert_int_eq(unlink(ut_paths[0]), 0);
	ck_assert_int_eq(rename(new_member_path(0), ut_paths[0]), 0);
	ff_raid_set_rebuild_rate(r, 32 << 20, 32 << 20); /* slow enough to read meanwhile */
	ck_assert_msg(ff_raid_replace(r, 1, new_member(1), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_replacing(r), 1);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE); /* the old one serves */
	ut_verify_all(r, "during the replace");
	{ /* and takes writes, which reach the new member too */
		uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);
		uint64_t off = 3 * ff_raid_geom(r)->stripe_bytes;

		ut_fill(buf, ff_raid_geom(r)->stripe_bytes);
		memcpy(ut_shadow + off, buf, ff_raid_geom(r)->stripe_bytes);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf,
					    ff_raid_geom(r)->stripe_bytes), 0);
		free(buf);
	}
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_replacing(r), -1);
	ck_assert_str_eq(ff_raid_member(r, 1)->path, new_member_path(1));
	ut_verify_all(r, "after the replace");
	/* then another member fails and is rebuilt onto a fresh one */
	ck_assert_int_eq(ff_raid_fail_member(r, 3, "test: failed on purpose"), 0);
	ck_assert_int_eq(ff_raid_remove(r, ut_paths[3], &err), 0);
	ck_assert_msg(ff_raid_add(r, new_member(3), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ut_verify_all(r, "replace, then a rebuild");
	ff_raid_close(r);
	ck_assert_int_eq(unlink(ut_paths[3]), 0);
	ck_assert_int_eq(rename(new_member_path(3), ut_paths[3]), 0);
	ck_assert_int_eq(unlink(ut_paths[1]), 0);
	ck_assert_int_eq(rename(new_member_path(1), ut_paths[1]), 0);
	r = ut_assemble(ut_pp, n);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ff_raid_close(r);
	ut_assemble_ro = true;
	r = ut_assemble_without(n, 1u << 2);
	ut_verify_all(r, "replaced member with another left out");
	ff_raid_close(r);
	ut_assemble_ro = false;
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, rebuild_every_loss_pattern, 0, 2);
	tcase_add_loop_test(tc, hot_spare_takes_over, 0, 2);
	tcase_add_test(tc, late_error_of_a_let_go_member_spares_its_successor);
	tcase_add_test(tc, rebuild_resumes_from_checkpoint);
	tcase_add_test(tc, rebuild_starts_at_the_idle_rate);
	tcase_add_test(tc, replace_while_old_serves);
}

int main(void)
{
	return ut_run("raid_rebuild", add_tests);
}
