/* SPDX-License-Identifier: MIT */
/*
 * Read errors healed from parity (raid/health.c): the data comes back
 * right, the member stays, the range is rewritten on it and counted — for
 * reads, partial writes and rebuilds alike; too many errors within the
 * window fail it; with no redundancy left the read fails rather than
 * return wrong bytes; a META read error goes to the next copy.
 *
 * The fault (io/fault.h) is an EIO on member reads of one 4 KiB range;
 * with count=1 it fires once, as a bad sector the drive remaps when it is
 * rewritten.  Under the injected range the member file also holds garbage,
 * so that reading the file afterwards proves the rewrite.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid.h"
#include "tests/unit/helpers.h"

#define MB 36          /* the smallest member ff_geom_compute takes with UT_CHUNK */
#define SECTOR 4096u
#define ROW 8192u      /* the bad range starts this far into its chunk */

static struct ff_raid_member_info info(struct ff_raid *r, unsigned role)
{
	struct ff_raid_member_info in;

	ff_raid_member_info(r, role, &in);
	return in;
}

/* Member byte offset of row ROW of data chunk `index` of stripe s. */
static uint64_t bad_offset(struct ff_raid *r, uint64_t s)
{
	const struct ff_geom *g = ff_raid_geom(r);

	return g->data_offset + s * g->chunk_bytes + ROW;
}

/* An EIO on the member's next read of the range (fault:
 * op=r,err=EIO,count=1 over those 4 KiB), and garbage under it in the
 * member file when junk is set. */
static void bad_sector(struct ff_raid *r, unsigned role, uint64_t off, bool junk)
{
	char spec[128];
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	uint8_t bytes[SECTOR];
	int fd = junk ? open(ut_paths[role], O_WRONLY) : -1;

	if (junk) {
		ck_assert_int_ge(fd, 0);
		memset(bytes, 0x5a, sizeof(bytes));
		ck_assert_int_eq(pwrite(fd, bytes, sizeof(bytes), (off_t)off), (ssize_t)sizeof(bytes));
		ck_assert_int_eq(fsync(fd), 0);
		close(fd);
	}
	snprintf(spec, sizeof(spec), "op=r,err=EIO,count=1,from=%llu,to=%llu", (unsigned long long)off,
		 (unsigned long long)(off + SECTOR));
	ck_assert_int_eq(ff_fault_parse(spec, &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, role), &rule), 0);
}

/* The member file holds the right bytes under the range again. */
static void assert_rewritten(struct ff_raid *r, unsigned role, uint64_t s, unsigned index)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t got[SECTOR];
	int fd = open(ut_paths[role], O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), (off_t)bad_offset(r, s)), (ssize_t)sizeof(got));
	close(fd);
	ck_assert_msg(memcmp(got, ut_shadow + s * g->stripe_bytes + (uint64_t)index * g->chunk_bytes + ROW,
			     SECTOR) == 0, "role %u: the bad range was not rewritten", role);
}

static int read_stripe(struct ff_raid *r, uint64_t s, uint8_t *buf)
{
	const struct ff_geom *g = ff_raid_geom(r);

	memset(buf, 0xee, g->stripe_bytes);
	return ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, s * g->stripe_bytes, buf, g->stripe_bytes);
}

static void assert_stripe(struct ff_raid *r, uint64_t s, const uint8_t *buf)
{
	const struct ff_geom *g = ff_raid_geom(r);

	ck_assert_msg(memcmp(buf, ut_shadow + s * g->stripe_bytes, g->stripe_bytes) == 0,
		      "stripe %llu differs", (unsigned long long)s);
}

/* One read error on each width: served right, member kept, counted once,
 * range rewritten, a second read clean; the counts survive a remount. */
static void one_error_healed(unsigned level, unsigned n)
{
	struct ff_raid *r = ut_written_array(level, n, MB);
	const uint64_t s = 3;
	unsigned role = ff_raid_chunk_member(r, s, 1);
	uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);

	bad_sector(r, role, bad_offset(r, s), true);
	ck_assert_int_eq(read_stripe(r, s, buf), 0);
	assert_stripe(r, s, buf);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
	ck_assert_uint_eq(info(r, role).read_errors, 1);
	ck_assert_uint_eq(info(r, role).healed, 1);
	assert_rewritten(r, role, s, 1);
	ck_assert_int_eq(read_stripe(r, s, buf), 0); /* the member's own bytes now */
	assert_stripe(r, s, buf);
	ck_assert_uint_eq(info(r, role).read_errors, 1);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ck_assert_int_eq(ff_raid_close(r), 0);
	r = ut_assemble(ut_pp, n);
	ck_assert_uint_eq(info(r, role).read_errors, 1);
	ck_assert_uint_eq(info(r, role).healed, 1);
	ck_assert_uint_eq(info(r, role).write_errors, 0);
	ut_verify_all(r, "after the heal, remounted");
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}

START_TEST(read_error_healed_raid5_widths)
{
	ut_rng = 71;
	for (unsigned n = 3; n <= 10; n++)
		one_error_healed(5, n);
}
END_TEST

START_TEST(read_error_healed_raid6_widths)
{
	ut_rng = 72;
	for (unsigned n = 4; n <= 10; n++)
		one_error_healed(6, n);
}
END_TEST

/* RAID6: two members err in one stripe; both ranges come back from P and
 * Q, both are rewritten, neither member is failed. */
START_TEST(raid6_two_errors_in_one_stripe_healed)
{
	ut_rng = 73;
	for (unsigned n = 4; n <= 10; n++) {
		struct ff_raid *r = ut_written_array(6, n, MB);
		const uint64_t s = 5;
		unsigned last = ff_raid_geom(r)->ndata - 1;
		unsigned a = ff_raid_chunk_member(r, s, 0), b = ff_raid_chunk_member(r, s, last);
		uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);

		bad_sector(r, a, bad_offset(r, s), true);
		bad_sector(r, b, bad_offset(r, s), true);
		ck_assert_int_eq(read_stripe(r, s, buf), 0);
		assert_stripe(r, s, buf);
		ck_assert_uint_eq(ff_raid_failed_count(r), 0);
		ck_assert_uint_eq(info(r, a).read_errors, 1);
		ck_assert_uint_eq(info(r, b).read_errors, 1);
		ck_assert_uint_eq(info(r, a).healed, 1);
		ck_assert_uint_eq(info(r, b).healed, 1);
		assert_rewritten(r, a, s, 0);
		assert_rewritten(r, b, s, last);
		ut_verify_all(r, "two ranges healed");
		ff_raid_close(r);
		free(buf);
		free(ut_shadow);
		ut_remove_members(n);
	}
}
END_TEST

/* More than max_read_errors within the window fail the member, with the
 * reason and the time kept across a remount.  fault: every read of role 1
 * fails with EIO (the rewrites succeed, the sectors stay bad). */
START_TEST(read_errors_above_threshold_fail_member)
{
	struct ff_raid_opts o = { .workers = 2, .max_read_errors = 3 };
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	const struct ff_geom *g;
	struct ff_raid *r;
	uint8_t *buf;
	unsigned errors = 0;

	ut_rng = 74;
	r = ut_written_array(5, 4, MB);
	ff_raid_close(r);
	ck_assert_int_eq(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
	g = ff_raid_geom(r);
	buf = ff_alloc_aligned(g->stripe_bytes);
	ck_assert_int_eq(ff_fault_parse("op=r,err=EIO", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 1), &rule), 0);
	for (uint64_t s = 0; s < g->nstripes && errors < 4; s++) {
		ck_assert_int_eq(read_stripe(r, s, buf), 0);
		assert_stripe(r, s, buf);
		errors = (unsigned)info(r, 1).read_errors;
		ck_assert_int_eq(ff_raid_member_state(r, 1), errors <= 3 ? FF_MEMBER_ACTIVE : FF_MEMBER_FAILED);
	}
	ck_assert_uint_eq(errors, 4);
	ck_assert_uint_eq(info(r, 1).healed, 3);
	ck_assert_ptr_nonnull(strstr(info(r, 1).reason, "4 read errors within 60 s (more than 3)"));
	ck_assert_uint_ne(info(r, 1).failed_s, 0);
	ut_verify_all(r, "member 1 failed after 4 read errors");
	ff_raid_close(r);
	r = ut_assemble(ut_pp, 4);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_MISSING);
	ck_assert_ptr_nonnull(strstr(info(r, 1).reason, "read errors within 60 s"));
	ck_assert_uint_eq(info(r, 1).read_errors, 4);
	ck_assert_uint_ne(info(r, 1).failed_s, 0);
	ut_verify_all(r, "remounted degraded");
	ff_raid_close(r);
	free(buf);
	free(ut_shadow);
	ut_remove_members(4);
}
END_TEST

/* RAID5 with a member missing has no redundancy: a read error on another
 * member fails the read with EIO (never returns wrong bytes) and is
 * counted; the member is kept, and once the sector reads again so does
 * the stripe. */
START_TEST(raid5_degraded_read_error_is_eio)
{
	ut_rng = 75;
	for (unsigned n = 3; n <= 10; n++) {
		struct ff_raid *r = ut_written_array(5, n, MB);
		const uint64_t s = 2;
		unsigned gone = ff_raid_chunk_member(r, s, 0), role = ff_raid_chunk_member(r, s, 1);
		uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);

		ff_raid_close(r);
		r = ut_assemble_without(n, 1u << gone);
		ck_assert_int_eq(ff_raid_member_state(r, gone), FF_MEMBER_MISSING);
		bad_sector(r, role, bad_offset(r, s), false);
		ck_assert_int_eq(read_stripe(r, s, buf), -EIO);
		ck_assert_uint_eq(info(r, role).read_errors, 1);
		ck_assert_uint_eq(info(r, role).healed, 0);
		ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
		/* the sector reads again (count=1): so does the stripe, rebuilt right */
		ck_assert_int_eq(read_stripe(r, s, buf), 0);
		assert_stripe(r, s, buf);
		ff_raid_close(r);
		free(buf);
		free(ut_shadow);
		ut_remove_members(n);
	}
}
END_TEST

/* RAID6 with a member missing still has one parity to spare: a read error
 * on another member of the stripe is healed, not turned into EIO. */
START_TEST(raid6_degraded_read_error_healed)
{
	ut_rng = 76;
	for (unsigned n = 4; n <= 10; n += 3) {
		struct ff_raid *r = ut_written_array(6, n, MB);
		const uint64_t s = 4;
		unsigned gone = ff_raid_chunk_member(r, s, 1), role = ff_raid_chunk_member(r, s, 0);
		uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);

		ff_raid_close(r);
		r = ut_assemble_without(n, 1u << gone);
		bad_sector(r, role, bad_offset(r, s), true);
		ck_assert_int_eq(read_stripe(r, s, buf), 0);
		assert_stripe(r, s, buf);
		ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
		ck_assert_uint_eq(info(r, role).read_errors, 1);
		ck_assert_uint_eq(info(r, role).healed, 1);
		/* rewritten: the bytes on the member are the data again (index 0) */
		ck_assert_int_eq(read_stripe(r, s, buf), 0);
		assert_stripe(r, s, buf);
		ff_raid_close(r);
		free(buf);
		free(ut_shadow);
		ut_remove_members(n);
	}
}
END_TEST

/* A partial write reads old data first (read-modify-write reads the chunk
 * it writes, reconstruct-write the others): a read error there is
 * recovered from parity, the write goes on, and the range that failed is
 * rewritten with the stripe.  Chunk 1 is written, over a bad sector under
 * chunk 0 (stripe 6) or under chunk 1 (stripe 7): whichever mode the width
 * picks reads exactly one of the two. */
static uint64_t write_over_bad_sector(struct ff_raid *r, uint64_t s, unsigned k)
{
	const struct ff_geom *g = ff_raid_geom(r);
	unsigned m = ff_raid_chunk_member(r, s, k);
	uint8_t *chunk = ff_alloc_aligned(g->chunk_bytes), *buf = ff_alloc_aligned(g->stripe_bytes);
	uint64_t at = s * g->stripe_bytes + g->chunk_bytes, errs;
	struct ff_raid_member_info before = info(r, m); /* counts of this member so far */

	bad_sector(r, m, bad_offset(r, s), true);
	ut_fill(chunk, g->chunk_bytes);
	memcpy(ut_shadow + at, chunk, g->chunk_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, at, chunk, g->chunk_bytes), 0);
	errs = info(r, m).read_errors - before.read_errors;
	ck_assert_uint_le(errs, 1);
	ck_assert_uint_eq(info(r, m).healed - before.healed, errs);
	if (errs)
		assert_rewritten(r, m, s, k);
	ck_assert_int_eq(ff_raid_member_state(r, m), FF_MEMBER_ACTIVE);
	ck_assert_int_eq(read_stripe(r, s, buf), 0); /* heals it if the write did not read it */
	assert_stripe(r, s, buf);
	ck_assert_uint_eq(ut_parity_mismatch(r, s, buf), 0);
	free(chunk);
	free(buf);
	return errs;
}

START_TEST(partial_write_over_read_error)
{
	ut_rng = 77;
	for (unsigned n = 3; n <= 10; n++) {
		struct ff_raid *r = ut_written_array(n % 2 ? 5 : 6, n, MB);
		uint64_t errs = write_over_bad_sector(r, 6, 0) + write_over_bad_sector(r, 7, 1);

		ck_assert_msg(errs == 1, "width %u: the write read %llu bad sectors", n,
			      (unsigned long long)errs);
		ut_verify_all(r, "partial writes over read errors");
		ff_raid_close(r);
		free(ut_shadow);
		ut_remove_members(n);
	}
}
END_TEST

/* A rebuild reads every other member: a read error on one of them is
 * healed like a reader's (RAID6, one member lost and replaced), and the
 * rebuilt member holds the right data.  The fault is armed before the
 * rebuild starts, so its first read of the range meets it. */
START_TEST(rebuild_heals_a_read_error_of_a_source)
{
	struct ff_err err = { "" };
	struct ff_raid *r;
	const uint64_t s = 9;
	char path[300];
	unsigned n = 6, role;
	int fd;

	ut_rng = 78;
	r = ut_written_array(6, n, MB);
	ff_raid_close(r);
	r = ut_assemble_without(n, 1u << 0);
	role = ff_raid_chunk_member(r, s, 0) == 0 ? ff_raid_chunk_member(r, s, 1)
						  : ff_raid_chunk_member(r, s, 0);
	bad_sector(r, role, bad_offset(r, s), true);
	snprintf(path, sizeof(path), "%s/new0.img", ut_dir);
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)MB << 20), 0);
	close(fd);
	ck_assert_msg(ff_raid_add(r, path, false, &err) == 0, "add: %s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 0), FF_MEMBER_ACTIVE);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
	ck_assert_uint_eq(info(r, role).read_errors, 1);
	ck_assert_uint_eq(info(r, role).healed, 1);
	ck_assert_uint_eq(info(r, 0).read_errors, 0); /* the new member's counts start at 0 */
	assert_rewritten(r, role, s, ff_raid_chunk_member(r, s, 0) == role ? 0 : 1);
	ff_raid_close(r);
	/* the rebuilt member's chunks are right: read with two others left out */
	ut_pp[0] = path;
	r = ut_assemble_without(n, (1u << 1) | (1u << 2));
	ut_verify_all(r, "rebuilt around a read error, read without roles 1 and 2");
	ff_raid_close(r);
	ut_pp[0] = ut_paths[0];
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* A META read error (mirrored metadata, raid/meta.c) is read from the
 * next copy and counted; the member stays.  The copy is not rewritten in
 * place: META reads take no stripe lock that would keep a concurrent
 * write of the chunk from being overwritten by the older copy (the scrub
 * compares and repairs copies).  fault: EIO once on copy 0 of chunk 0. */
START_TEST(meta_read_error_read_from_another_copy)
{
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ff_raid *r;
	uint8_t *want = ff_alloc_aligned(FF_META_CHUNK), *got = ff_alloc_aligned(FF_META_CHUNK);
	char spec[128];

	ut_rng = 79;
	ut_make_members(5, MB);
	ut_create(6, 5);
	r = ut_assemble(ut_pp, 5);
	ut_fill(want, FF_META_CHUNK);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, 0, want, FF_META_CHUNK), 0);
	snprintf(spec, sizeof(spec), "op=r,err=EIO,count=1,from=%llu,to=%llu",
		 (unsigned long long)ff_raid_geom(r)->meta_offset,
		 (unsigned long long)ff_raid_geom(r)->meta_offset + FF_META_CHUNK);
	ck_assert_int_eq(ff_fault_parse(spec, &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 0), &rule), 0); /* copy 0 of chunk 0 */
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_META, 0, got, FF_META_CHUNK), 0);
	ck_assert(memcmp(got, want, FF_META_CHUNK) == 0);
	ck_assert_int_eq(ff_raid_member_state(r, 0), FF_MEMBER_ACTIVE);
	ck_assert_uint_eq(info(r, 0).read_errors, 1);
	ck_assert_uint_eq(info(r, 0).healed, 0);
	ff_raid_close(r);
	free(want);
	free(got);
	ut_remove_members(5);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_test(tc, read_error_healed_raid5_widths);
	tcase_add_test(tc, read_error_healed_raid6_widths);
	tcase_add_test(tc, raid6_two_errors_in_one_stripe_healed);
	tcase_add_test(tc, read_errors_above_threshold_fail_member);
	tcase_add_test(tc, raid5_degraded_read_error_is_eio);
	tcase_add_test(tc, raid6_degraded_read_error_healed);
	tcase_add_test(tc, partial_write_over_read_error);
	tcase_add_test(tc, rebuild_heals_a_read_error_of_a_source);
	tcase_add_test(tc, meta_read_error_read_from_another_copy);
}

int main(void)
{
	return ut_run("raid_heal", add_tests);
}
