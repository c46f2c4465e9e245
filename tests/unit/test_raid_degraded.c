/* SPDX-License-Identifier: MIT */
/*
 * Reading and writing with members missing: every single (RAID5) and every
 * pair (RAID6) of missing members at every stripe rotation, writes while
 * degraded, reads around a member whose data is known bad, and a live
 * member that refuses a bitmap write while a role is missing.
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

/* Every loss pattern the level survives, at every stripe rotation: the
 * whole data space (nstripes >> members) is read back byte for byte. */
START_TEST(degraded_read_every_loss_pattern)
{
	static const unsigned cfg[][2] = { { 5, 4 }, { 5, 5 }, { 6, 5 }, { 6, 6 } };
	unsigned level = cfg[_i][0], n = cfg[_i][1];
	struct ff_raid *r;
	unsigned patterns = 0;

	ut_rng = 7 + (uint64_t)_i;
	r = ut_written_array(level, n, UT_MEMBER_MB);
	ck_assert_uint_ge(ff_raid_geom(r)->nstripes, 4 * n);
	ff_raid_close(r);
	for (unsigned x = 0; x < n; x++) {
		for (unsigned y = x; y < n; y++) {
			uint32_t mask = (1u << x) | (1u << y);
			char what[64];

			if (level == 5 && y != x)
				continue;
			ut_assemble_ro = true;
			r = ut_assemble_without(n, mask);
			ut_assemble_ro = false;
			ck_assert_uint_eq(ff_raid_failed_count(r), (unsigned)__builtin_popcount(mask));
			snprintf(what, sizeof(what), "RAID%u without %u,%u", level, x, y);
			ut_verify_all(r, what);
			ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->degraded_segments), 0);
			ff_raid_close(r);
			patterns++;
		}
	}
	ck_assert_uint_eq(patterns, level == 5 ? n : n * (n + 1) / 2);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* Writes while degraded (full and partial) read back while degraded. */
START_TEST(degraded_writes_read_back)
{
	unsigned level = _i == 0 ? 5 : 6, n = _i == 0 ? 4 : 6;
	uint32_t lost = _i == 0 ? 1u << 2 : (1u << 1) | (1u << 4);
	const struct ff_geom *g;
	struct ff_raid *r;
	uint8_t *buf;

	ut_rng = 5 + (uint64_t)_i;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(level, n);
	r = ut_assemble_without(n, lost);
	g = ff_raid_geom(r);
	ut_write_all(r);
	buf = ff_alloc_aligned(2 * g->stripe_bytes);
	for (int k = 0; k < 200; k++) {
		uint64_t len = (1 + ut_rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
		uint64_t off = (ut_rnd() % ((g->data_bytes - len) / 4096)) * 4096;

		ut_fill(buf, len);
		memcpy(ut_shadow + off, buf, len);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf, len), 0);
	}
	ut_verify_all(r, "degraded writes");
	ff_raid_close(r);
	r = ut_assemble_without(n, lost);
	ut_verify_all(r, "degraded writes, reassembled");
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* Flipped bits on a member are invisible to RAID; reading around the
 * member (what the filesystem does on a checksum mismatch) returns the
 * right data. */
START_TEST(avoid_member_reads_around_corruption)
{
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_raid *r;
	const struct ff_geom *g;
	uint8_t *buf;
	unsigned n = 4;

	ut_rng = 13;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(5, n);
	r = ut_assemble(ut_pp, n);
	g = ff_raid_geom(r);
	ut_write_all(r);
	/* fault: every read of role 0 returns 8 flipped bits */
	ck_assert_int_eq(ff_fault_parse("op=r,flip=8", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 0), &rule), 0);
	buf = ff_alloc_aligned(g->stripe_bytes * n);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, 0, buf, g->stripe_bytes * n), 0);
	ck_assert_int_ne(memcmp(buf, ut_shadow, g->stripe_bytes * n), 0);
	{
		struct ff_raid_io rio = { .op = FF_RAID_READ, .space = FF_SPACE_DATA, .off = 0,
					  .len = g->stripe_bytes * n, .buf = buf, .avoid_members = 1u };

		ck_assert_int_eq(ff_raid_submit_wait(r, &rio), 0);
	}
	ck_assert_int_eq(memcmp(buf, ut_shadow, g->stripe_bytes * n), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 0), FF_MEMBER_ACTIVE);
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* The member's fd (the one the bitmaps are written through) refuses writes
 * (EBADF): a read-only open of its file takes the fd's number.  The rings
 * keep their own reference to the file (registered, or a dup), so the data
 * path still writes to it: only the bitmap writes fail.  Returns the fd
 * that puts it back (allow_writes). */
static int refuse_writes(struct ff_member *m, const char *path)
{
	int saved = dup(m->fd), ro = open(path, O_RDONLY);

	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(ro, 0);
	ck_assert_int_eq(dup2(ro, m->fd), m->fd);
	close(ro);
	return saved;
}

static void allow_writes(struct ff_member *m, int saved)
{
	ck_assert_int_eq(dup2(saved, m->fd), m->fd);
	close(saved);
}

/*
 * One bitmap block write rule (ff_raid_bitmap_write): a block counts as
 * written only when every live member took it.  With role 3 missing, a
 * write is recorded in the written-while-degraded bitmap; role 1's member
 * refuses that record.  The bitmap then proves nothing: re-adding role 3's
 * member is refused (with "any member took it" as the rule it would be
 * accepted, though a later assembly without the members that took the bit
 * would not see it), and the full rebuild the refusal names restores it.
 */
START_TEST(bitmap_write_refused_by_a_live_member)
{
	const unsigned n = 4;
	struct ff_err err = { "" };
	struct ff_raid *r;
	uint8_t *buf;
	int saved;

	ut_rng = 17;
	r = ut_written_array(5, n, UT_MEMBER_MB);
	ff_raid_close(r);
	r = ut_assemble_without(n, 1u << 3);
	buf = ff_alloc_aligned(65536);
	ut_fill(buf, 65536);
	memcpy(ut_shadow, buf, 65536);
	/* fault: role 1's member refuses the bitmap write of this request */
	saved = refuse_writes(ff_raid_member(r, 1), ut_paths[1]);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, buf, 65536), 0);
	allow_writes(ff_raid_member(r, 1), saved);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	ck_assert_int_eq(ff_raid_readd(r, ut_paths[3], &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "could not be written") && strstr(err.msg, "add --force"),
		      "refusal says why and names the full rebuild: %s", err.msg);
	ck_assert_msg(ff_raid_add(r, ut_paths[3], true, &err) == 0, "add --force: %s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ut_verify_all(r, "after the full rebuild");
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, degraded_read_every_loss_pattern, 0, 4);
	tcase_add_loop_test(tc, degraded_writes_read_back, 0, 2);
	tcase_add_test(tc, avoid_member_reads_around_corruption);
	tcase_add_test(tc, bitmap_write_refused_by_a_live_member);
}

int main(void)
{
	return ut_run("raid_degraded", add_tests);
}
