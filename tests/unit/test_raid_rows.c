/* SPDX-License-Identifier: MIT */
/*
 * Rows writes (FF_RAID_IO_ROWS): rows [a, b) of every chunk of one stripe,
 * with their parity, written from a whole-stripe image.  They change those
 * rows and nothing else, read nothing from the members (healthy or
 * degraded), leave parity right (CHECK; degraded reads reconstruct the
 * rows through it), are refused when malformed, and never pass for a write
 * of the whole stripe while a member is rebuilt.  RAID5 on 3, 4 and 8
 * members and RAID6 on 4 and 6, with 64 KiB and 512 KiB chunks.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raid/raid.h"
#include "tests/unit/helpers.h"

#define ROWS_MEMBER_MB 12u    /* >= 16 stripes of 512 KiB after a 1 MiB metadata area */
#define ROW_BYTES 4096u

static const struct {
	unsigned level, n;
	uint32_t chunk;
} cfg[] = {
	{ 5, 3, 64u << 10 }, { 5, 4, 64u << 10 }, { 5, 8, 64u << 10 }, { 6, 4, 64u << 10 },
	{ 6, 6, 64u << 10 }, { 5, 3, 512u << 10 }, { 5, 4, 512u << 10 }, { 5, 8, 512u << 10 },
	{ 6, 4, 512u << 10 }, { 6, 6, 512u << 10 },
};
#define NCFG ((int)(sizeof(cfg) / sizeof(cfg[0])))

/* Fresh members, an array of cfg[i] over them (small metadata area, so the
 * members stay small), not assembled. */
static void rows_create(int i)
{
	struct ff_raid_create_params p = { .level = cfg[i].level, .chunk_bytes = cfg[i].chunk,
					   .meta_member_bytes = 1u << 20 };
	struct ff_err err = { "" };

	ut_make_members(cfg[i].n, ROWS_MEMBER_MB);
	ck_assert_msg(ff_raid_create(ut_pp, cfg[i].n, &p, &err) == 0, "create: %s", err.msg);
}

/* cfg[i] assembled and its whole data space written (full-stripe writes of
 * ut_fill data, kept in ut_shadow). */
static struct ff_raid *rows_array(int i)
{
	struct ff_raid *r;

	rows_create(i);
	r = ut_assemble(ut_pp, cfg[i].n);
	ck_assert_uint_ge(ff_raid_geom(r)->nstripes, 2 * cfg[i].n);
	ut_write_all(r);
	return r;
}

/* Row range k of a chunk (rows of 4 KiB, R per chunk): the first row, the
 * last three, four in the middle, one, all but the first and last (several
 * write pieces on members in RAM), every row. */
#define NRANGES 6u
static void row_range(uint32_t chunk, unsigned k, uint32_t *a, uint32_t *len)
{
	uint32_t R = chunk / ROW_BYTES;
	const uint32_t row0[NRANGES] = { 0, R - 3, R / 2 - 2, 5, 1, 0 };
	const uint32_t rows[NRANGES] = { 1, 3, 4, 1, R - 2, R };

	*a = row0[k % NRANGES] * ROW_BYTES;
	*len = rows[k % NRANGES] * ROW_BYTES;
}

static int rows_write(struct ff_raid *r, uint64_t stripe, uint32_t a, uint32_t len, void *img)
{
	struct ff_raid_io io = { .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
				 .flags = FF_RAID_IO_ROWS,
				 .off = stripe * ff_raid_geom(r)->stripe_bytes + a, .len = len,
				 .buf = img };

	return ff_raid_submit_wait(r, &io);
}

/* A fresh random image of the whole stripe (the bytes outside the rows
 * too, which must not reach the members); its rows go to the shadow. */
static void rows_image(const struct ff_geom *g, uint64_t stripe, uint32_t a, uint32_t len,
		       uint8_t *img)
{
	ut_fill(img, g->stripe_bytes);
	for (uint32_t i = 0; i < g->ndata; i++) {
		uint64_t at = (uint64_t)i * g->chunk_bytes + a;

		memcpy(ut_shadow + stripe * g->stripe_bytes + at, img + at, len);
	}
}

/* No fault.  Rows writes at every range on three stripes (other rotations)
 * change those rows only: the stripe reads back as the shadow, so does the
 * rest of the array, and CHECK finds the parity right. */
START_TEST(rows_write_changes_only_its_rows)
{
	struct ff_raid *r;
	const struct ff_geom *g;
	uint64_t stripes[3];
	uint8_t *img, *chk;

	ut_rng = 1000 + (uint64_t)_i;
	r = rows_array(_i);
	g = ff_raid_geom(r);
	stripes[0] = 1;
	stripes[1] = g->nstripes / 2;
	stripes[2] = g->nstripes - 1;
	img = ff_alloc_aligned(g->stripe_bytes);
	chk = ff_alloc_aligned(g->stripe_bytes);
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned q = 0; q < NRANGES; q++) {
			uint32_t a, len;

			row_range(g->chunk_bytes, q, &a, &len);
			rows_image(g, stripes[k], a, len, img);
			ck_assert_int_eq(rows_write(r, stripes[k], a, len, img), 0);
		}
		ck_assert_uint_eq(ut_parity_mismatch(r, stripes[k], chk), 0);
		ck_assert_msg(memcmp(chk, ut_shadow + stripes[k] * g->stripe_bytes, g->stripe_bytes) == 0,
			      "stripe %llu: CHECK read other bytes", (unsigned long long)stripes[k]);
	}
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->rows_writes), 3 * NRANGES);
	ut_verify_all(r, "after rows writes");
	ff_raid_close(r);
	free(img);
	free(chk);
	free(ut_shadow);
	ut_remove_members(cfg[_i].n);
}
END_TEST

/* No fault.  During a rows write the engine reads nothing (member_reads,
 * RMW/RCW/degraded segments stay put) and writes exactly the rows on every
 * member: len bytes each, data and parity. */
START_TEST(rows_write_reads_no_member)
{
	struct ff_raid *r;
	struct ff_raid_stats *st;
	const struct ff_geom *g;
	uint8_t *img;

	ut_rng = 2000 + (uint64_t)_i;
	r = rows_array(_i);
	g = ff_raid_geom(r);
	st = ff_raid_stats(r);
	img = ff_alloc_aligned(g->stripe_bytes);
	for (unsigned q = 0; q < NRANGES; q++) {
		uint64_t stripe = 2 + q, reads = atomic_load(&st->member_reads);
		uint64_t rmw = atomic_load(&st->rmw_segments), rcw = atomic_load(&st->rcw_segments);
		uint64_t deg = atomic_load(&st->degraded_segments);
		uint64_t full = atomic_load(&st->full_stripe_writes);
		uint64_t wbytes = atomic_load(&st->write_bytes);
		uint32_t a, len;

		row_range(g->chunk_bytes, q, &a, &len);
		rows_image(g, stripe, a, len, img);
		ck_assert_int_eq(rows_write(r, stripe, a, len, img), 0);
		ck_assert_uint_eq(atomic_load(&st->member_reads), reads);
		ck_assert_uint_eq(atomic_load(&st->rmw_segments), rmw);
		ck_assert_uint_eq(atomic_load(&st->rcw_segments), rcw);
		ck_assert_uint_eq(atomic_load(&st->degraded_segments), deg);
		ck_assert_uint_eq(atomic_load(&st->full_stripe_writes), full);
		ck_assert_uint_eq(atomic_load(&st->write_bytes) - wbytes, (uint64_t)g->nmembers * len);
	}
	ut_verify_all(r, "after rows writes");
	ff_raid_close(r);
	free(img);
	free(ut_shadow);
	ut_remove_members(cfg[_i].n);
}
END_TEST

/*
 * Fault: members missing at assembly — role 1 on RAID5, roles 1 and n-1 on
 * RAID6 — so the array runs degraded (those roles failed).  Rows writes on
 * n stripes (the lost roles take every slot: data, P, Q) read nothing and
 * write the live members only; then every stripe reads back right, degraded
 * (the lost data chunks recovered through the parity of the rows just
 * written, and through the old parity of the rows not written), and again
 * after reassembly without them.
 */
START_TEST(rows_write_degraded_reads_back_through_parity)
{
	unsigned n = cfg[_i].n;
	uint32_t lost = cfg[_i].level == 5 ? 1u << 1 : (1u << 1) | (1u << (n - 1));
	unsigned nlost = (unsigned)__builtin_popcount(lost);
	struct ff_raid *r;
	struct ff_raid_stats *st;
	const struct ff_geom *g;
	uint8_t *img;

	ut_rng = 3000 + (uint64_t)_i;
	r = rows_array(_i);
	ff_raid_close(r);
	r = ut_assemble_without(n, lost);
	ck_assert_uint_eq(ff_raid_failed_count(r), nlost);
	g = ff_raid_geom(r);
	st = ff_raid_stats(r);
	img = ff_alloc_aligned(g->stripe_bytes);
	for (unsigned s = 0; s < n; s++) {
		uint64_t reads = atomic_load(&st->member_reads), wbytes = atomic_load(&st->write_bytes);
		uint32_t a, len;

		row_range(g->chunk_bytes, s, &a, &len);
		rows_image(g, s, a, len, img);
		ck_assert_int_eq(rows_write(r, s, a, len, img), 0);
		ck_assert_uint_eq(atomic_load(&st->member_reads), reads);
		ck_assert_uint_eq(atomic_load(&st->write_bytes) - wbytes, (uint64_t)(n - nlost) * len);
	}
	ut_verify_all(r, "rows written degraded, read degraded");
	ck_assert_uint_gt(atomic_load(&st->degraded_segments), 0);
	ff_raid_close(r);
	ut_assemble_ro = true;
	r = ut_assemble_without(n, lost);
	ut_assemble_ro = false;
	ut_verify_all(r, "rows written degraded, reassembled");
	ff_raid_close(r);
	free(img);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* No fault.  Malformed rows requests are refused before anything is
 * written: META space, ops other than WRITE, rows past the chunk (or
 * starting in the next chunk's bytes), no rows. */
START_TEST(rows_request_malformed_is_einval)
{
	struct ff_raid *r;
	const struct ff_geom *g;
	uint64_t writes;
	uint8_t *img;
	const uint8_t ops[] = { FF_RAID_READ, FF_RAID_FLUSH, FF_RAID_CHECK, FF_RAID_REBUILD };

	ut_rng = 4000;
	rows_create(0);
	r = ut_assemble(ut_pp, cfg[0].n);
	g = ff_raid_geom(r);
	img = ff_alloc_aligned(g->stripe_bytes);
	ut_fill(img, g->stripe_bytes);
	writes = atomic_load(&ff_raid_stats(r)->member_writes);
	for (unsigned k = 0; k < sizeof(ops); k++) {
		struct ff_raid_io io = { .op = ops[k], .space = FF_SPACE_DATA, .flags = FF_RAID_IO_ROWS,
					 .off = g->stripe_bytes, .len = g->stripe_bytes, .buf = img,
					 .rebuild_members = 1u };

		ck_assert_int_eq(ff_raid_submit_wait(r, &io), -EINVAL);
	}
	{
		struct ff_raid_io io = { .op = FF_RAID_WRITE, .space = FF_SPACE_META,
					 .flags = FF_RAID_IO_ROWS, .off = 0, .len = ROW_BYTES, .buf = img };

		ck_assert_int_eq(ff_raid_submit_wait(r, &io), -EINVAL);
	}
	/* a + len > chunk, a at the chunk's end, len 0 */
	ck_assert_int_eq(rows_write(r, 1, g->chunk_bytes - ROW_BYTES, 2 * ROW_BYTES, img), -EINVAL);
	ck_assert_int_eq(rows_write(r, 1, 0, g->chunk_bytes + ROW_BYTES, img), -EINVAL);
	ck_assert_int_eq(rows_write(r, 1, g->chunk_bytes, ROW_BYTES, img), -EINVAL);
	ck_assert_int_eq(rows_write(r, 1, 0, 0, img), -EINVAL);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->member_writes), writes);
	/* and the well-formed neighbours are taken */
	ck_assert_int_eq(rows_write(r, 1, g->chunk_bytes - ROW_BYTES, ROW_BYTES, img), 0);
	ck_assert_int_eq(rows_write(r, 1, 0, g->chunk_bytes, img), 0);
	ff_raid_close(r);
	free(img);
	ut_remove_members(cfg[0].n);
}
END_TEST

/* Fault: junk over the last row of stripe 1 on one member file (pwrite
 * behind the engine).  A rows CHECK of the rows below it reads them right
 * and finds their parity right; one that takes the last row in, and a
 * CHECK of the whole stripe, find the mismatch.  What scrub relies on for
 * tail stripes, whose rows past the written ones hold old bytes. */
START_TEST(rows_check_compares_only_its_rows)
{
	struct ff_raid *r;
	const struct ff_geom *g;
	uint8_t *img, junk[ROW_BYTES];
	uint32_t R;
	int fd;

	ut_rng = 5000 + (uint64_t)_i;
	r = rows_array(_i);
	g = ff_raid_geom(r);
	R = g->chunk_bytes / ROW_BYTES;
	img = ff_alloc_aligned(g->stripe_bytes);
	ut_fill(junk, sizeof(junk));
	fd = open(ut_pp[0], O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)(g->data_offset + 1 * g->chunk_bytes +
								 (uint64_t)(R - 1) * ROW_BYTES)),
			 (ssize_t)sizeof(junk));
	close(fd);
	{
		struct ff_raid_io io = { .op = FF_RAID_CHECK, .space = FF_SPACE_DATA,
					 .flags = FF_RAID_IO_ROWS, .off = g->stripe_bytes,
					 .len = (R - 1) * ROW_BYTES, .buf = img };

		ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
		ck_assert_uint_eq(atomic_load(&io.check_mismatch), 0);
		for (uint32_t i = 0; i < g->ndata; i++)
			ck_assert_int_eq(memcmp(img + (uint64_t)i * g->chunk_bytes,
						ut_shadow + g->stripe_bytes + (uint64_t)i * g->chunk_bytes,
						(R - 1) * ROW_BYTES), 0);
		io.len = R * ROW_BYTES;
		ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
		ck_assert_uint_ne(atomic_load(&io.check_mismatch), 0);
	}
	ck_assert_uint_ne(ut_parity_mismatch(r, 1, img), 0);
	ff_raid_close(r);
	free(img);
	free(ut_shadow);
	ut_remove_members(cfg[_i].n);
}
END_TEST

/*
 * Fault: role 1 missing at assembly, then a new member added for it and
 * rebuilt.  A rows write to the last stripe lands while the rebuild is
 * still far from it (its rate is held low until then; the status proves
 * it): the new member gets those rows, but the stripe must not count as
 * rebuilt, or the rebuild would skip it and leave the rest of its chunk
 * empty.  After the rebuild every byte reads back, healthy and with
 * another member (role 0) left out.  _i 0: RAID5 on 4, 1: RAID6 on 5.
 */
START_TEST(rows_write_during_rebuild_leaves_the_stripe_to_it)
{
	unsigned level = _i == 0 ? 5 : 6, n = _i == 0 ? 4 : 5;
	struct ff_raid_create_params p = { .level = level, .chunk_bytes = 64u << 10,
					   .meta_member_bytes = 1u << 20 };
	struct ff_raid_rebuild_status rs;
	struct ff_err err = { "" };
	struct ff_raid *r;
	const struct ff_geom *g;
	char np[300];
	uint64_t last;
	uint32_t a, len;
	uint8_t *img;
	int fd;

	ut_rng = 5000 + (uint64_t)_i;
	ut_make_members(n, ROWS_MEMBER_MB);
	ck_assert_msg(ff_raid_create(ut_pp, n, &p, &err) == 0, "create: %s", err.msg);
	r = ut_assemble(ut_pp, n);
	ut_write_all(r);
	ff_raid_close(r);
	r = ut_assemble_without(n, 1u << 1);
	g = ff_raid_geom(r);
	last = g->nstripes - 1;
	snprintf(np, sizeof(np), "%s/new1.img", ut_dir);
	fd = open(np, O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)ROWS_MEMBER_MB << 20), 0);
	close(fd);
	/* 2 MiB/s: the data phase reaches the last stripe after seconds */
	ff_raid_set_rebuild_rate(r, 2u << 20, 2u << 20);
	ck_assert_msg(ff_raid_add(r, np, false, &err) == 0, "add: %s", err.msg);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_REBUILDING);
	img = ff_alloc_aligned(g->stripe_bytes);
	row_range(g->chunk_bytes, 2, &a, &len);
	rows_image(g, last, a, len, img);
	ck_assert_int_eq(rows_write(r, last, a, len, img), 0);
	ff_raid_rebuild_status(r, &rs);
	ck_assert_msg(rs.active && rs.units_rebuilt < last / 2,
		      "the rebuild was too far (%llu units) for the test to mean anything",
		      (unsigned long long)rs.units_rebuilt);
	ff_raid_set_rebuild_rate(r, 0, 0);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	ut_verify_all(r, "rebuilt after a rows write");
	ff_raid_close(r);
	ck_assert_int_eq(unlink(ut_paths[1]), 0);
	ck_assert_int_eq(rename(np, ut_paths[1]), 0);
	ut_assemble_ro = true;
	r = ut_assemble_without(n, 1u << 0); /* the rebuilt chunks and parity are right */
	ut_assemble_ro = false;
	ut_verify_all(r, "rebuilt after a rows write, role 0 left out");
	ff_raid_close(r);
	free(img);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, rows_write_changes_only_its_rows, 0, NCFG);
	tcase_add_loop_test(tc, rows_write_reads_no_member, 0, NCFG);
	tcase_add_loop_test(tc, rows_write_degraded_reads_back_through_parity, 0, NCFG);
	tcase_add_test(tc, rows_request_malformed_is_einval);
	tcase_add_loop_test(tc, rows_check_compares_only_its_rows, 0, NCFG);
	tcase_add_loop_test(tc, rows_write_during_rebuild_leaves_the_stripe_to_it, 0, 2);
}

int main(void)
{
	return ut_run("raid_rows", add_tests);
}
