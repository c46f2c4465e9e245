/* SPDX-License-Identifier: MIT */
/*
 * The array's layout end to end on real files: full-stripe and partial
 * writes against a shadow copy, read back healthy and after reassembly in
 * any order; the mirrored META space; the superblock copies and stale
 * members; bad input refused without writing.
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

START_TEST(full_stripe_write_reads_back)
{
	static const unsigned cfg[][2] = { { 5, 3 }, { 5, 4 }, { 5, 8 }, { 6, 4 }, { 6, 6 } };
	struct ff_raid *r;

	ut_rng = 42 + (uint64_t)_i;
	ut_make_members(cfg[_i][1], UT_MEMBER_MB);
	ut_create(cfg[_i][0], cfg[_i][1]);
	r = ut_assemble(ut_pp, cfg[_i][1]);
	{
		/* whole stripes: every member gets its chunk of each, data and
		 * parity, and nothing of it is counted as META */
		const struct ff_geom *g = ff_raid_geom(r);
		struct ff_raid_stats *st = ff_raid_stats(r);
		uint64_t wb = atomic_load(&st->write_bytes), mb = atomic_load(&st->meta_write_bytes);

		ut_write_all(r);
		ck_assert_uint_eq(atomic_load(&st->write_bytes) - wb,
				  g->data_bytes / g->ndata * g->nmembers);
		ck_assert_uint_eq(atomic_load(&st->meta_write_bytes), mb);
	}
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->rmw_segments), 0);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->full_stripe_writes), 0);
	ut_verify_all(r, "healthy");
	ck_assert_int_eq(ff_raid_close(r), 0);
	/* and after reassembly in reverse order */
	{
		const char *rev[FF_MEMBERS_MAX];

		for (unsigned i = 0; i < cfg[_i][1]; i++)
			rev[i] = ut_pp[cfg[_i][1] - 1 - i];
		r = ut_assemble(rev, cfg[_i][1]);
	}
	ut_verify_all(r, "reassembled");
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(cfg[_i][1]);
}
END_TEST

/* Random partial writes (RMW and RCW) against the shadow copy. */
START_TEST(partial_writes_match_shadow)
{
	static const unsigned cfg[][2] = { { 5, 4 }, { 5, 8 }, { 6, 6 } };
	unsigned level = cfg[_i][0], n = cfg[_i][1];
	const struct ff_geom *g;
	struct ff_raid *r;
	uint8_t *buf;

	ut_rng = 99 + (uint64_t)_i;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(level, n);
	r = ut_assemble(ut_pp, n);
	g = ff_raid_geom(r);
	ut_write_all(r);
	buf = ff_alloc_aligned(4 * g->stripe_bytes);
	for (int k = 0; k < 300; k++) {
		uint64_t len = (1 + ut_rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
		uint64_t off = (ut_rnd() % ((g->data_bytes - len) / 4096)) * 4096;

		ut_fill(buf, len);
		memcpy(ut_shadow + off, buf, len);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf, len), 0);
	}
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	if (n >= 8)
		ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rmw_segments), 0);
	ut_verify_all(r, "after partial writes");
	ff_raid_close(r);
	/* parity is right too: every single member can be lost */
	ut_assemble_ro = true;
	for (unsigned x = 0; x < n; x++) {
		r = ut_assemble_without(n, 1u << x);
		ut_verify_all(r, "partial writes, then degraded");
		ff_raid_close(r);
	}
	ut_assemble_ro = false;
	free(buf);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* The mirrored metadata space: written on every copy (counted as META
 * member bytes), read from any. */
START_TEST(meta_space_mirrors)
{
	unsigned level = _i == 0 ? 5 : 6, n = _i == 0 ? 4 : 6;
	struct ff_raid *r;
	const struct ff_geom *g;
	uint8_t *a, *b;
	uint64_t len = 4 * FF_MiB;

	ut_rng = 21;
	ut_make_members(n, UT_MEMBER_MB);
	ut_create(level, n);
	r = ut_assemble(ut_pp, n);
	g = ff_raid_geom(r);
	ck_assert_uint_ge(g->meta_bytes, len);
	a = ff_alloc_aligned(len);
	b = ff_alloc_aligned(len);
	ut_fill(a, len);
	{
		/* every copy is member bytes written, and all of it META */
		struct ff_raid_stats *st = ff_raid_stats(r);
		uint64_t wb = atomic_load(&st->write_bytes), mb = atomic_load(&st->meta_write_bytes);

		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, 0, a, len), 0);
		ck_assert_uint_eq(atomic_load(&st->meta_write_bytes) - mb, g->meta_copies * len);
		ck_assert_uint_eq(atomic_load(&st->write_bytes) - wb, g->meta_copies * len);
	}
	for (unsigned c = 1; c <= g->meta_copies; c++) {
		struct ff_raid_io io = { .op = FF_RAID_READ, .space = FF_SPACE_META, .off = 0,
					 .len = len, .buf = b, .meta_copy = (uint8_t)c };

		memset(b, 0, len);
		ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
		ck_assert_msg(memcmp(a, b, len) == 0, "meta copy %u differs", c);
	}
	ff_raid_close(r);
	/* any nparity members lost: metadata still reads */
	ut_assemble_ro = true;
	r = ut_assemble_without(n, level == 5 ? 1u << 1 : (1u << 0) | (1u << 1));
	memset(b, 0, len);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_META, 0, b, len), 0);
	ck_assert_int_eq(memcmp(a, b, len), 0);
	ff_raid_close(r);
	ut_assemble_ro = false;
	free(a);
	free(b);
	ut_remove_members(n);
}
END_TEST

static void file_hash(const char *path, uint64_t *h)
{
	uint8_t buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	*h = 1469598103934665603ull;
	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			*h = (*h ^ buf[i]) * 1099511628211ull;
	close(fd);
}

static void expect_create_fails(const char *const *list, unsigned n, unsigned level,
				uint32_t chunk, const char *needle)
{
	struct ff_raid_create_params p = { .level = level, .chunk_bytes = chunk };
	struct ff_err err = { "" };
	uint64_t before[FF_MEMBERS_MAX], after;

	for (unsigned i = 0; i < n; i++)
		file_hash(list[i], &before[i]);
	ck_assert_int_lt(ff_raid_create(list, n, &p, &err), 0);
	ck_assert_msg(strstr(err.msg, needle) != NULL, "error '%s' lacks '%s'", err.msg, needle);
	for (unsigned i = 0; i < n; i++) {
		file_hash(list[i], &after);
		ck_assert_msg(after == before[i], "%s changed although create failed", list[i]);
	}
}

START_TEST(bad_input_is_refused_without_writing)
{
	const char *dup[4];
	struct ff_raid *r = NULL;
	struct ff_raid_opts o = { 0 };
	struct ff_err err = { "" };
	char small[300], other[5][300];
	const char *mixed[4], *otherp[5];

	ut_make_members(6, UT_MEMBER_MB);
	/* wrong member counts */
	expect_create_fails(ut_pp, 2, 5, UT_CHUNK, "RAID5 needs 3 to 32 members, 2 given");
	expect_create_fails(ut_pp, 3, 6, UT_CHUNK, "RAID6 needs 4 to 32 members, 3 given");
	expect_create_fails(ut_pp, 4, 5, 3000, "chunk size 3000");
	expect_create_fails(ut_pp, 4, 7, UT_CHUNK, "RAID level 7");
	/* duplicates, named */
	dup[0] = ut_pp[0]; dup[1] = ut_pp[1]; dup[2] = ut_pp[2]; dup[3] = ut_pp[1];
	expect_create_fails(dup, 4, 5, UT_CHUNK, "are the same member");
	/* too small, named */
	snprintf(small, sizeof(small), "%s/small.img", ut_dir);
	{
		int fd = open(small, O_CREAT | O_RDWR, 0600);

		ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
		close(fd);
	}
	{
		const char *l[4] = { ut_pp[0], ut_pp[1], small, ut_pp[2] };

		expect_create_fails(l, 4, 5, UT_CHUNK, small);
	}
	/* a member carrying a signature is refused without -f */
	ut_create(5, 4);
	expect_create_fails(ut_pp, 4, 5, UT_CHUNK, "carries a framefs member signature");
	/* a file that is no member */
	{
		const char *l[4] = { ut_pp[0], ut_pp[1], ut_pp[2], ut_pp[4] };

		ck_assert_int_lt(ff_raid_assemble(l, 4, &o, &r, &err), 0);
		ck_assert_msg(strstr(err.msg, "not a framefs member") && strstr(err.msg, ut_pp[4]),
			      "%s", err.msg);
	}
	/* a member of another array */
	for (int i = 0; i < 5; i++) {
		int fd;

		snprintf(other[i], sizeof(other[i]), "%s/o%d.img", ut_dir, i);
		fd = open(other[i], O_CREAT | O_RDWR, 0600);
		ck_assert_int_eq(ftruncate(fd, (off_t)UT_MEMBER_MB << 20), 0);
		close(fd);
		otherp[i] = other[i];
	}
	{
		struct ff_raid_create_params p = { .level = 5, .chunk_bytes = UT_CHUNK };

		ck_assert_int_eq(ff_raid_create(otherp, 3, &p, &err), 0);
	}
	mixed[0] = ut_pp[0]; mixed[1] = ut_pp[1]; mixed[2] = other[0]; mixed[3] = ut_pp[3];
	ck_assert_int_lt(ff_raid_assemble(mixed, 4, &o, &r, &err), 0);
	ck_assert_msg(strstr(err.msg, "belongs to another array") && strstr(err.msg, other[0]),
		      "%s", err.msg);
	/* too many missing */
	ck_assert_int_lt(ff_raid_assemble(ut_pp, 2, &o, &r, &err), 0);
	ck_assert_msg(strstr(err.msg, "cannot assemble RAID5: 2 of 4 members missing"), "%s", err.msg);
	/* unaligned and out-of-range requests */
	r = ut_assemble(ut_pp, 4);
	{
		uint8_t *buf = ff_alloc_aligned(1 << 20);
		const struct ff_geom *g = ff_raid_geom(r);

		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 100, buf, 4096), -EINVAL);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, buf, 1000), -EINVAL);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, 0, buf + 8, 4096), -EINVAL);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, g->data_bytes, buf, 4096),
				 -EINVAL);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_META, g->meta_bytes - 4096, buf,
					    8192), -EINVAL);
		free(buf);
	}
	ff_raid_close(r);
	for (int i = 0; i < 5; i++)
		unlink(other[i]);
	unlink(small);
	ut_remove_members(6);
}
END_TEST

/* A torn head copy of the member superblock falls back to the tail copy;
 * a member left out while the array was written is stale afterwards. */
START_TEST(superblock_copies_and_stale_members)
{
	struct ff_raid *r;
	int fd;
	char junk[4096];

	ut_rng = 31;
	ut_make_members(4, UT_MEMBER_MB);
	ut_create(5, 4);
	memset(junk, 0x5a, sizeof(junk));
	fd = open(ut_pp[2], O_WRONLY);
	ck_assert_int_eq(pwrite(fd, junk, 100, 200), 100); /* tear copy A */
	close(fd);
	r = ut_assemble(ut_pp, 4);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ff_raid_close(r);
	/* member 3 misses writes */
	r = ut_assemble_without(4, 1u << 3);
	ut_write_all(r);
	ff_raid_close(r);
	r = ut_assemble(ut_pp, 4);
	ck_assert_int_eq(ff_raid_member_state(r, 3), FF_MEMBER_MISSING);
	ut_verify_all(r, "stale member ignored");
	ff_raid_close(r);
	free(ut_shadow);
	ut_remove_members(4);
}
END_TEST

/* Member 0 gets a superblock update the others do not (events one ahead,
 * as when the array stops half-way through writing it member after
 * member): the others are current, every member is assembled.  Two ahead
 * is not a half-written update: the others are stale and, three of four
 * on RAID5, the assembly is refused. */
static void bump_events(const char *path, uint64_t by)
{
	struct ff_err err = { "" };
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_member m;

	ck_assert_ptr_nonnull(sb);
	ck_assert_msg(ff_member_open(&m, path, false, &err) == 0, "open: %s", err.msg);
	ck_assert_int_eq(ff_sb_read(&m, sb), 0);
	sb->events = ff_cpu_to_le64(ff_le64(sb->events) + by);
	ck_assert_int_eq(ff_sb_write(&m, sb), 0);
	ff_member_close(&m);
	free(sb);
}

START_TEST(superblock_update_cut_half_way)
{
	struct ff_raid_opts o = { .workers = 2 };
	struct ff_err err = { "" };
	struct ff_raid *r;

	ut_rng = 37;
	ut_make_members(4, UT_MEMBER_MB);
	ut_create(5, 4);
	r = ut_assemble(ut_pp, 4);
	ut_write_all(r);
	ff_raid_close(r);
	bump_events(ut_pp[0], 1);
	r = ut_assemble(ut_pp, 4);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(ff_raid_member_state(r, i), FF_MEMBER_ACTIVE);
	ut_verify_all(r, "after a superblock update cut half-way");
	ff_raid_close(r);
	bump_events(ut_pp[0], 2);
	r = NULL;
	ck_assert_int_lt(ff_raid_assemble(ut_pp, 4, &o, &r, &err), 0);
	ck_assert_ptr_null(r);
	ck_assert_msg(strstr(err.msg, "stale") != NULL, "the refusal names the stale members: %s", err.msg);
	free(ut_shadow);
	ut_remove_members(4);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, full_stripe_write_reads_back, 0, 5);
	tcase_add_loop_test(tc, partial_writes_match_shadow, 0, 3);
	tcase_add_loop_test(tc, meta_space_mirrors, 0, 2);
	tcase_add_test(tc, bad_input_is_refused_without_writing);
	tcase_add_test(tc, superblock_copies_and_stale_members);
	tcase_add_test(tc, superblock_update_cut_half_way);
}

int main(void)
{
	return ut_run("raid_layout", add_tests);
}
