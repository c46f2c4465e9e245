/* SPDX-License-Identifier: MIT */
/*
 * Growing an array (raid.h, "growing"): members added to a closed array
 * whose every stripe is written; the rows stay readable in the old
 * geometry, rows the test (standing in for the filesystem) moves are
 * written and read in the new one, and both survive the loss of members
 * the levels allow, a rebuild, and a grow stopped between superblocks.
 * The refusals say why.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/bitmap.h"
#include "raid/raid.h"
#include "raid/sb.h"
#include "tests/unit/helpers.h"

/* The cases: level, members before, members added. */
static const struct {
	unsigned level, n, k;
} cases[] = {
	{ 5, 3, 1 },
	{ 5, 4, 2 },
	{ 6, 5, 2 },
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* The filesystem's part, kept by the test: which rows are still old. */
static uint64_t *rows_old;

static bool row_old(void *arg, uint64_t row)
{
	(void)arg;
	return ff_bit_test(rows_old, row);
}

/* The new geometry's data, for the rows moved (row * new stripe_bytes). */
static uint8_t *shadow_new;

/* Read every row in its geometry and compare it with what was written. */
static void verify_rows(struct ff_raid *r, const char *what)
{
	const struct ff_geom *g = ff_raid_geom(r), *go = ff_raid_geom_old(r);
	uint8_t *buf = ff_alloc_aligned(g->stripe_bytes);

	ck_assert_ptr_nonnull(go);
	for (uint64_t s = 0; s < g->nstripes; s++) {
		struct ff_raid_io io = { .op = FF_RAID_READ, .space = FF_SPACE_DATA, .buf = buf };
		bool old = row_old(NULL, s);
		const struct ff_geom *rg = old ? go : g;

		io.flags = old ? FF_RAID_IO_OLD_GEOM : 0;
		io.off = s * rg->stripe_bytes;
		io.len = rg->stripe_bytes;
		memset(buf, 0xee, g->stripe_bytes);
		ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
		ck_assert_msg(memcmp(buf, old ? ut_shadow + s * go->stripe_bytes
					  : shadow_new + s * g->stripe_bytes, rg->stripe_bytes) == 0,
			      "%s: row %llu (%s geometry) differs", what, (unsigned long long)s,
			      old ? "old" : "new");
	}
	free(buf);
}

/* Move rows [0, nstripes / 2) to the new geometry: full-stripe writes,
 * then partial writes into some of them (read-modify-write). */
static void move_half(struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint64_t half = g->nstripes / 2;

	shadow_new = ff_alloc_aligned(g->data_bytes);
	ck_assert_ptr_nonnull(shadow_new);
	ut_fill(shadow_new, g->data_bytes);
	for (uint64_t s = 0; s < half; s++)
		ff_bit_clear(rows_old, s);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, shadow_new,
				    half * g->stripe_bytes), 0);
	for (int k = 0; k < 16; k++) {
		uint64_t len = (1 + ut_rnd() % (g->chunk_bytes / 4096)) * 4096;
		uint64_t off = (ut_rnd() % ((half * g->stripe_bytes - len) / 4096)) * 4096;

		ut_fill(shadow_new + off, len);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, shadow_new + off,
					    len), 0);
	}
}

/* Fill member file i with random bytes, as a drive that was used before:
 * a row read in the wrong geometry then shows, RAID5's too (whose
 * reconstruction from zeros would not). */
static void fill_used(unsigned i)
{
	size_t len = (size_t)UT_MEMBER_MB << 20;
	uint8_t *buf = malloc(len);
	int fd = open(ut_pp[i], O_WRONLY);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_ge(fd, 0);
	ut_fill(buf, len);
	ck_assert_int_eq(pwrite(fd, buf, len, 0), (ssize_t)len);
	close(fd);
	free(buf);
}

/* n members made, written whole, closed; then grown by k used drives. */
static void make_grown(unsigned level, unsigned n, unsigned k)
{
	struct ff_err err = { "" };
	struct ff_raid *r;

	ut_make_members(n + k, UT_MEMBER_MB);
	ut_create(level, n);
	r = ut_assemble(ut_pp, n);
	ut_write_all(r);
	ff_raid_close(r);
	for (unsigned i = n; i < n + k; i++)
		fill_used(i);
	ck_assert_msg(ff_raid_grow(ut_pp, n, ut_pp + n, k, false, &err) == 0, "grow: %s", err.msg);
}

static struct ff_raid *assemble_grown(const char *const *list, unsigned count)
{
	struct ff_raid *r = ut_assemble(list, count);

	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	return r;
}

/*
 * Every row reads back in the old geometry after the grow; half the rows
 * are then written in the new one, and every row reads back: with every
 * member, without each single member (and, for RAID6, each pair of an old
 * and a new member), and after a member is replaced and rebuilt.
 */
START_TEST(grown_rows_read_in_both_geometries)
{
	unsigned level = cases[_i].level, n = cases[_i].n, k = cases[_i].k, total = n + k;
	const struct ff_geom *g, *go;
	struct ff_err err = { "" };
	struct ff_raid *r;

	ut_rng = 4500 + (uint64_t)_i;
	make_grown(level, n, k);
	r = ut_assemble(ut_pp, total);
	g = ff_raid_geom(r);
	go = ff_raid_geom_old(r);
	ck_assert_ptr_nonnull(go);
	ck_assert_uint_eq(g->nmembers, total);
	ck_assert_uint_eq(go->nmembers, n);
	ck_assert_uint_eq(g->ndata, total - g->nparity);
	ck_assert_uint_eq(g->meta_members, n);
	ck_assert_uint_eq(g->data_bytes / g->stripe_bytes, go->data_bytes / go->stripe_bytes);
	rows_old = calloc(FF_BITMAP_WORDS(g->nstripes) + 1, sizeof(uint64_t));
	for (uint64_t s = 0; s < g->nstripes; s++)
		ff_bit_set(rows_old, s);
	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	shadow_new = ff_alloc_aligned(g->stripe_bytes); /* no row moved yet */
	verify_rows(r, "grown, nothing moved");
	free(shadow_new);
	move_half(r);
	verify_rows(r, "half moved");
	ff_raid_close(r);

	ut_assemble_ro = true;
	for (unsigned x = 0; x < total; x++) {
		uint32_t lost = 1u << x;

		if (level == 6)
			lost |= 1u << (x < n ? n + (x % k) : x % n); /* an old and a new member */
		r = ut_assemble_without(total, lost);
		ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
		verify_rows(r, "members left out");
		ff_raid_close(r);
	}
	ut_assemble_ro = false;

	/* an old member and a new one lost in turn, each replaced and rebuilt */
	for (unsigned x = 0; x < 2; x++) {
		unsigned role = x == 0 ? 1 : total - 1;
		char np[300];

		r = ut_assemble_without(total, 1u << role);
		ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
		snprintf(np, sizeof(np), "%s/new%u.img", ut_dir, role);
		ut_sized_file(np, UT_MEMBER_MB);
		ck_assert_msg(ff_raid_add(r, np, false, &err) == 0, "add: %s", err.msg);
		ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
		ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
		verify_rows(r, "rebuilt");
		ff_raid_close(r);
		ck_assert_int_eq(unlink(ut_paths[role]), 0);
		ck_assert_int_eq(rename(np, ut_paths[role]), 0);
		/* the rebuilt chunks and parity are right: read with another member out */
		ut_assemble_ro = true;
		r = ut_assemble_without(total, 1u << ((role + 1) % total));
		ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
		verify_rows(r, "rebuilt, another member left out");
		ff_raid_close(r);
		ut_assemble_ro = false;
	}
	free(rows_old);
	free(shadow_new);
	free(ut_shadow);
	ut_remove_members(total + 0);
}
END_TEST

/*
 * A grow stopped between superblocks: the added members and old member 0
 * got the grown superblock, the others still hold the old one (one event
 * behind).  The array assembles grown with every member active, and its
 * next superblock write brings them all up to date.
 */
START_TEST(grow_stopped_between_superblocks_assembles)
{
	unsigned n = 4, k = 1, total = n + k;
	struct ff_member_sb *before[FF_MEMBERS_MAX];
	struct ff_member m;
	struct ff_err err = { "" };
	struct ff_raid *r;

	ut_rng = 4600;
	ut_make_members(total, UT_MEMBER_MB);
	ut_create(5, n);
	r = ut_assemble(ut_pp, n);
	ut_write_all(r);
	ff_raid_close(r);
	for (unsigned i = 0; i < n; i++) {
		before[i] = ff_alloc_aligned(sizeof(struct ff_member_sb));
		ck_assert_int_eq(ff_member_open(&m, ut_pp[i], true, &err), 0);
		ck_assert_int_eq(ff_sb_read(&m, before[i]), 0);
		ff_member_close(&m);
	}
	ck_assert_msg(ff_raid_grow(ut_pp, n, ut_pp + n, k, false, &err) == 0, "grow: %s", err.msg);
	for (unsigned i = 1; i < n; i++) { /* the stop: members 1.. keep the old superblock */
		ck_assert_int_eq(ff_member_open(&m, ut_pp[i], false, &err), 0);
		ck_assert_int_eq(ff_sb_write(&m, before[i]), 0);
		ff_member_close(&m);
		free(before[i]);
	}
	free(before[0]);
	rows_old = calloc(FF_BITMAP_WORDS(UT_MEMBER_MB * 16ull) + 1, sizeof(uint64_t));
	memset(rows_old, 0xff, (FF_BITMAP_WORDS(UT_MEMBER_MB * 16ull) + 1) * sizeof(uint64_t));
	r = assemble_grown(ut_pp, total);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ck_assert_uint_eq(ff_raid_geom(r)->nmembers, total);
	shadow_new = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);
	verify_rows(r, "assembled after a grow stopped half way");
	ff_raid_close(r);
	for (unsigned i = 0; i < total; i++) { /* every member now carries the grown superblock */
		struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));

		ck_assert_int_eq(ff_member_open(&m, ut_pp[i], true, &err), 0);
		ck_assert_int_eq(ff_sb_read(&m, sb), 0);
		ck_assert_uint_eq(ff_le32(sb->nmembers), total);
		ck_assert_uint_eq(ff_le32(sb->old_nmembers), n);
		ff_member_close(&m);
		free(sb);
	}
	r = ut_assemble(ut_pp, total);
	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	verify_rows(r, "reassembled");
	ck_assert_int_eq(ff_raid_grow_finish(r), 0);
	ck_assert_ptr_null(ff_raid_geom_old(r));
	ff_raid_close(r);
	r = ut_assemble(ut_pp, total);
	ck_assert_ptr_null(ff_raid_geom_old(r));
	ck_assert_uint_eq(ff_raid_geom(r)->meta_members, n);
	ff_raid_close(r);
	free(rows_old);
	free(shadow_new);
	free(ut_shadow);
	ut_remove_members(total);
}
END_TEST

/* The member holding row s's parity, in the row's geometry (the hook's). */
static unsigned parity_member(struct ff_raid *r, uint64_t s)
{
	const struct ff_geom *g = row_old(NULL, s) ? ff_raid_geom_old(r) : ff_raid_geom(r);
	uint32_t used = 0;

	for (unsigned i = 0; i < g->ndata; i++)
		used |= 1u << ff_raid_chunk_member(r, s, i);
	return (unsigned)__builtin_ctz(~used);
}

/* FF_RAID_CHECK of row s in its geometry: the parity mismatch bits. */
static uint32_t row_mismatch(struct ff_raid *r, uint64_t s, void *buf)
{
	bool old = row_old(NULL, s);
	const struct ff_geom *g = old ? ff_raid_geom_old(r) : ff_raid_geom(r);
	struct ff_raid_io io = { .op = FF_RAID_CHECK, .space = FF_SPACE_DATA, .buf = buf,
				 .flags = old ? FF_RAID_IO_OLD_GEOM : 0,
				 .off = s * g->stripe_bytes, .len = g->stripe_bytes };

	ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
	return atomic_load(&io.check_mismatch);
}

/*
 * A process dies with partial writes in flight in a row of each geometry;
 * the torn writes are stood for by junk over each row's parity chunk.  The
 * grown array holds the resync back until the row hook is set, then
 * resyncs each row in its own geometry: both parities match their data.
 */
START_TEST(unclean_grown_array_resyncs_each_row_in_its_geometry)
{
	unsigned n = 3, k = 1, total = n + k;
	uint64_t rows[2], nstripes, chunk, data_offset;
	struct ff_raid *r;
	uint8_t *buf;
	pid_t pid;
	int status;

	ut_rng = 4800;
	make_grown(5, n, k);
	r = ut_assemble(ut_pp, total);
	nstripes = ff_raid_geom(r)->nstripes;
	chunk = ff_raid_geom(r)->chunk_bytes;
	data_offset = ff_raid_geom(r)->data_offset;
	rows_old = calloc(FF_BITMAP_WORDS(nstripes) + 1, sizeof(uint64_t));
	for (uint64_t s = 0; s < nstripes; s++)
		ff_bit_set(rows_old, s);
	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	move_half(r);
	ff_raid_close(r);
	rows[0] = 10;            /* new geometry */
	rows[1] = nstripes - 10; /* old geometry */
	ck_assert(!row_old(NULL, rows[0]) && row_old(NULL, rows[1]));
	buf = ff_alloc_aligned((size_t)chunk * total);
	pid = fork();
	if (pid == 0) { /* partial writes into both rows, then dies without closing */
		struct ff_raid_opts o = { .workers = 2 };
		struct ff_err err;
		struct ff_raid *c;

		if (ff_raid_assemble(ut_pp, total, &o, &c, &err) < 0 ||
		    ff_raid_set_row_geom(c, row_old, NULL) < 0)
			_exit(2);
		for (unsigned i = 0; i < 2; i++) {
			bool old = row_old(NULL, rows[i]);
			const struct ff_geom *g = old ? ff_raid_geom_old(c) : ff_raid_geom(c);
			struct ff_raid_io io = { .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
						 .flags = old ? FF_RAID_IO_OLD_GEOM : 0, .buf = buf,
						 .off = rows[i] * g->stripe_bytes + 4096, .len = 8192 };

			ut_fill(buf, 8192);
			if (ff_raid_submit_wait(c, &io) < 0)
				_exit(3);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ut_assemble_ro = true; /* to find the parity members: writes nothing */
	r = ut_assemble(ut_pp, total);
	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	{
		unsigned pm[2] = { parity_member(r, rows[0]), parity_member(r, rows[1]) };

		ff_raid_close(r);
		ut_assemble_ro = false;
		for (unsigned i = 0; i < 2; i++) /* fault: the torn writes */
			ut_junk_at(ut_paths[pm[i]], data_offset + rows[i] * chunk + 8192);
	}
	/* assembled and closed without the hook (a mount that failed): the
	 * resync is still owed at the next assembly */
	r = ut_assemble(ut_pp, total);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 0);
	ff_raid_close(r);
	r = ut_assemble(ut_pp, total);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 0); /* held back: no hook yet */
	ck_assert_int_eq(ff_raid_set_row_geom(r, row_old, NULL), 0);
	ck_assert_uint_ge(ff_raid_resync_regions(r), 1);
	for (unsigned i = 0; i < 2; i++)
		ck_assert_msg(row_mismatch(r, rows[i], buf) == 0, "row %llu: parity still stale",
			      (unsigned long long)rows[i]);
	ff_raid_close(r);
	free(buf);
	free(rows_old);
	free(shadow_new);
	free(ut_shadow);
	ut_remove_members(total);
}
END_TEST

/* Each refusal leaves every member as it was and says why. */
START_TEST(grow_refusals_say_why)
{
	unsigned n = 3;
	struct ff_err err = { "" };
	struct ff_raid *r;
	char small[300], other[2][300];
	const char *add[2], *op[2];
	struct ff_raid_create_params p = { .level = 5, .chunk_bytes = UT_CHUNK };

	ut_rng = 4700;
	ut_make_members(n + 1, UT_MEMBER_MB);
	ut_create(5, n);
	snprintf(small, sizeof(small), "%s/small.img", ut_dir);
	ut_sized_file(small, UT_MEMBER_MB / 2);
	add[0] = small;
	ck_assert_int_eq(ff_raid_grow(ut_pp, n, add, 1, false, &err), -ENOSPC);
	ck_assert_msg(strstr(err.msg, "too small"), "%s", err.msg);

	add[0] = ut_pp[n];
	add[1] = ut_pp[n];
	ck_assert_int_eq(ff_raid_grow(ut_pp, n, add, 2, false, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "given twice"), "%s", err.msg);

	add[0] = ut_pp[1];
	ck_assert_int_eq(ff_raid_grow(ut_pp, n, add, 1, false, &err), -EEXIST);
	ck_assert_msg(strstr(err.msg, "already part of this array"), "%s", err.msg);

	for (unsigned i = 0; i < 2; i++) { /* a member of another array */
		snprintf(other[i], sizeof(other[i]), "%s/other%u.img", ut_dir, i);
		ut_sized_file(other[i], UT_MEMBER_MB);
		op[i] = other[i];
	}
	{
		char third[300];
		const char *o3[3] = { op[0], op[1], third };

		snprintf(third, sizeof(third), "%s/other2.img", ut_dir);
		ut_sized_file(third, UT_MEMBER_MB);
		ck_assert_int_eq(ff_raid_create(o3, 3, &p, &err), 0);
		add[0] = op[0];
		ck_assert_int_ne(ff_raid_grow(ut_pp, n, add, 1, false, &err), 0);
		ck_assert_msg(strstr(err.msg, "signature") || strstr(err.msg, "array"), "%s", err.msg);
		unlink(third);
	}

	/* a member missing: the grow needs them all */
	add[0] = ut_pp[n];
	ck_assert_int_eq(ff_raid_grow(ut_pp, n - 1, add, 1, false, &err), -EIO);
	ck_assert_msg(strstr(err.msg, "every member healthy"), "%s", err.msg);

	/* nothing was written: the array is still 3 members wide, and grows */
	r = ut_assemble(ut_pp, n);
	ck_assert_ptr_null(ff_raid_geom_old(r));
	ck_assert_uint_eq(ff_raid_geom(r)->nmembers, n);
	ff_raid_close(r);
	ck_assert_msg(ff_raid_grow(ut_pp, n, add, 1, false, &err) == 0, "grow: %s", err.msg);
	/* grown, not finished: a second grow waits for the first */
	add[0] = small;
	ck_assert_int_eq(ff_raid_grow(ut_pp, n + 1, add, 1, false, &err), -EBUSY);
	ck_assert_msg(strstr(err.msg, "restripe finish"), "%s", err.msg);
	unlink(small);
	unlink(other[0]);
	unlink(other[1]);
	ut_remove_members(n + 1);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, grown_rows_read_in_both_geometries, 0, (int)NCASES);
	tcase_add_test(tc, grow_stopped_between_superblocks_assembles);
	tcase_add_test(tc, grow_refusals_say_why);
	tcase_add_test(tc, unclean_grown_array_resyncs_each_row_in_its_geometry);
}

int main(void)
{
	return ut_run("raid_grow", add_tests);
}
