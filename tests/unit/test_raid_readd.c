/* SPDX-License-Identifier: MIT */
/*
 * Re-add (raid/degraded.c, ff_raid_readd): a member away for a while comes
 * back and only the regions written without it are rebuilt — full-stripe
 * copy-on-write writes, partial writes and mirrored metadata alike — on
 * RAID5 and RAID6 at widths 3..10; every byte checked against a shadow
 * copy, parity consistent, the re-added member's chunks read with others
 * left out.  A process killed between a bit and its write (the write held
 * by a fault rule: latency) still re-adds right.  Re-add is refused when
 * the bitmap cannot prove what the member missed: an older copy of it
 * (events behind), a damaged bitmap block, a member missing at a mount
 * after a crash.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid.h"
#include "tests/unit/helpers.h"

#define MEMBER_MB 48
#define REGION_STRIPES 2
#define WWD_OFFSET (FF_MEMBER_RESERVED / 2) /* raid/degraded.c: where its blocks are */

static uint8_t *meta_shadow;
static uint64_t stripe_bytes; /* of the array the test makes: regions of REGION_STRIPES */

static void make(unsigned level, unsigned n)
{
	ut_make_members(n, MEMBER_MB);
	ut_create(level, n);
	stripe_bytes = (uint64_t)(n - (level == 6 ? 2 : 1)) * UT_CHUNK;
}

static struct ff_raid *assemble_list(const char *const *list, unsigned n, bool ro)
{
	struct ff_raid_opts o = { .workers = 2, .read_only = ro,
				  .readd_region_bytes = REGION_STRIPES * stripe_bytes };
	struct ff_err err = { "" };
	struct ff_raid *r = NULL;

	ck_assert_msg(ff_raid_assemble(list, n, &o, &r, &err) == 0, "assemble: %s", err.msg);
	ck_assert_uint_eq(ff_raid_geom(r)->stripe_bytes, stripe_bytes);
	return r;
}

static struct ff_raid *assemble_without(unsigned n, uint32_t skip, bool ro)
{
	const char *list[FF_MEMBERS_MAX];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (!(skip & (1u << i)))
			list[k++] = ut_pp[i];
	return assemble_list(list, k, ro);
}

/* Read-only, without `nout` members that are not in `keep`. */
static struct ff_raid *assemble_others_out(unsigned n, uint32_t keep, unsigned nout)
{
	uint32_t skip = 0;

	for (unsigned m = 0; m < n && nout; m++)
		if (!(keep & (1u << m))) {
			skip |= 1u << m;
			nout--;
		}
	return assemble_without(n, skip, true);
}

static void write_meta_all(struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);

	meta_shadow = ff_alloc_aligned(g->meta_bytes);
	ck_assert_ptr_nonnull(meta_shadow);
	ut_fill(meta_shadow, g->meta_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, 0, meta_shadow, g->meta_bytes), 0);
}

/* Every copy of every metadata chunk, one copy at a time. */
static void verify_meta(struct ff_raid *r, const char *what)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t *buf = ff_alloc_aligned(FF_META_CHUNK);

	for (unsigned k = 1; k <= g->meta_copies; k++)
		for (uint64_t c = 0; c < g->meta_bytes / FF_META_CHUNK; c++) {
			struct ff_raid_io io = { .op = FF_RAID_READ, .space = FF_SPACE_META,
						 .meta_copy = (uint8_t)k, .off = c * FF_META_CHUNK,
						 .len = FF_META_CHUNK, .buf = buf };
			int rc = ff_raid_submit_wait(r, &io);

			if (rc == -EIO) /* that copy is on a member left out */
				continue;
			ck_assert_int_eq(rc, 0);
			ck_assert_msg(memcmp(buf, meta_shadow + c * FF_META_CHUNK, FF_META_CHUNK) == 0,
				      "%s: metadata chunk %llu copy %u differs", what,
				      (unsigned long long)c, k);
		}
	free(buf);
}

static void verify_parity(struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t *buf = ff_alloc_aligned(g->stripe_bytes);

	for (uint64_t s = 0; s < g->nstripes; s++)
		ck_assert_msg(ut_parity_mismatch(r, s, buf) == 0, "stripe %llu: parity differs",
			      (unsigned long long)s);
	free(buf);
}

/* What the re-add must resync: data regions, metadata row groups. */
struct expect {
	uint8_t region[4096];
	uint8_t group[4096];
};

static void write_data(struct ff_raid *r, struct expect *e, uint64_t off, uint64_t len, bool cow)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t *buf = ff_alloc_aligned(len);
	struct ff_raid_io io = { .op = FF_RAID_WRITE, .space = FF_SPACE_DATA, .off = off, .len = len,
				 .buf = buf, .flags = cow ? FF_RAID_IO_NO_INTENT : 0 };

	ut_fill(buf, len);
	memcpy(ut_shadow + off, buf, len);
	ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
	for (uint64_t s = off / g->stripe_bytes; s <= (off + len - 1) / g->stripe_bytes; s++)
		e->region[s / REGION_STRIPES] = 1;
	free(buf);
}

static void write_meta(struct ff_raid *r, struct expect *e, uint64_t chunk, unsigned nchunks)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint64_t len = (uint64_t)nchunks * FF_META_CHUNK;

	ut_fill(meta_shadow + chunk * FF_META_CHUNK, len);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, chunk * FF_META_CHUNK,
				    meta_shadow + chunk * FF_META_CHUNK, len), 0);
	/* meta.c: copy k of chunk c is in row (c * copies + k) / nmembers */
	for (uint64_t c = chunk; c < chunk + nchunks; c++)
		for (unsigned k = 0; k < g->meta_copies; k++)
			e->group[(c * g->meta_copies + k) / g->nmembers / 16] = 1;
}

/* Stripes and metadata rows the marked regions cover: the units rebuilt. */
static uint64_t expected_units(const struct ff_raid *r, const struct expect *e, uint64_t *regions,
			       uint64_t *groups)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint64_t units = 0, rows = g->meta_member_bytes / FF_META_CHUNK;

	*regions = *groups = 0;
	for (uint64_t s = 0; s < g->nstripes; s++)
		units += e->region[s / REGION_STRIPES];
	for (uint64_t w = 0; w < rows; w++)
		units += e->group[w / 16];
	for (unsigned i = 0; i < 4096; i++) {
		*regions += e->region[i];
		*groups += e->group[i];
	}
	return units;
}

static void readd_and_count(struct ff_raid *r, unsigned role, const struct expect *e)
{
	struct ff_raid_rebuild_status st;
	struct ff_err err = { "" };
	uint64_t regions, groups, units = expected_units(r, e, &regions, &groups);

	ck_assert_msg(ff_raid_readd(r, ut_pp[role], &err) == 0, "re-add role %u: %s", role, err.msg);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_REBUILDING);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
	ff_raid_rebuild_status(r, &st);
	ck_assert(st.readd);
	ck_assert_uint_eq(st.readd_regions, regions);
	ck_assert_uint_eq(st.readd_meta_groups, groups);
	ck_assert_uint_eq(st.units_rebuilt, units);
	/* a full rebuild writes every stripe and every metadata row */
	ck_assert_uint_lt(st.units_rebuilt * 3, ff_raid_geom(r)->nstripes +
			  ff_raid_geom(r)->meta_member_bytes / FF_META_CHUNK);
}

static const unsigned configs[][2] = { { 5, 3 }, { 5, 4 }, { 5, 7 }, { 5, 10 },
				       { 6, 4 }, { 6, 6 }, { 6, 10 } };

/* Roles away (one on RAID5, two on RAID6), full-stripe copy-on-write
 * writes, partial writes and metadata writes meanwhile, then each re-added:
 * exactly the marked stripes and rows rebuilt, every byte right. */
START_TEST(readd_resyncs_only_what_changed)
{
	unsigned level = configs[_i][0], n = configs[_i][1];
	unsigned x = _i % n, y = (x + 2) % n;
	uint32_t away = (1u << x) | (level == 6 ? 1u << y : 0);
	struct expect *e = calloc(1, sizeof(*e));
	const struct ff_geom *g;
	struct ff_raid *r;

	ut_rng = 1000 + (uint64_t)_i;
	make(level, n);
	r = assemble_list(ut_pp, n, false);
	g = ff_raid_geom(r);
	ut_write_all(r);
	write_meta_all(r);
	for (unsigned m = 0; m < n; m++)
		if (away & (1u << m))
			ck_assert_int_eq(ff_raid_fail_member(r, m, "test: pulled"), 0);
	for (unsigned k = 0; k < 4; k++) /* full stripes, as the filesystem's copy-on-write */
		write_data(r, e, (ut_rnd() % g->nstripes) * g->stripe_bytes, g->stripe_bytes, true);
	for (unsigned k = 0; k < 4; k++) { /* partial writes, maybe across a stripe boundary */
		uint64_t len = (1 + ut_rnd() % 24) * 4096;
		uint64_t off = (ut_rnd() % ((g->data_bytes - len) / 4096)) * 4096;

		write_data(r, e, off, len, false);
	}
	write_meta(r, e, ut_rnd() % (g->meta_bytes / FF_META_CHUNK - 4), 3);
	write_meta(r, e, 0, 1);
	readd_and_count(r, x, e);
	if (level == 6)
		readd_and_count(r, y, e);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ut_verify_all(r, "re-added");
	verify_meta(r, "re-added");
	verify_parity(r);
	ff_raid_close(r);
	/* the re-added members' chunks and copies, read with others left out */
	r = assemble_others_out(n, away, level == 5 ? 1 : 2);
	ut_verify_all(r, "re-added, others left out");
	verify_meta(r, "re-added, others left out");
	ff_raid_close(r);
	free(e);
	free(meta_shadow);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

/* Missing at a mount (not given), written at two mounts, re-added at the
 * third: the record survives clean unmounts, and a bit block torn on one
 * member (written with RWF_DSYNC to every member: the others have it). */
START_TEST(readd_after_mounts_without_it)
{
	struct expect *e = calloc(1, sizeof(*e));
	const unsigned n = 5;
	struct ff_raid *r;
	uint64_t sb;

	ut_rng = 55;
	make(6, n);
	r = assemble_list(ut_pp, n, false);
	ut_write_all(r);
	write_meta_all(r);
	ff_raid_close(r);
	r = assemble_without(n, 1u << 3, false);
	sb = ff_raid_geom(r)->stripe_bytes;
	write_data(r, e, 7 * sb, sb, true);
	write_meta(r, e, 5, 1);
	ff_raid_close(r);
	{ /* fault: the first bit block torn on one member; the others' copies count */
		uint8_t junk[4096];
		int fd = open(ut_paths[0], O_RDWR);

		memset(junk, 0x5a, sizeof(junk));
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), WWD_OFFSET + 4096), 4096);
		close(fd);
	}
	r = assemble_without(n, 1u << 3, false);
	write_data(r, e, 40 * sb + 8192, 4096, false);
	readd_and_count(r, 3, e);
	ut_verify_all(r, "re-added after mounts");
	verify_meta(r, "re-added after mounts");
	verify_parity(r);
	ff_raid_close(r);
	r = assemble_without(n, (1u << 1) | (1u << 4), true);
	ut_verify_all(r, "re-added after mounts, two others left out");
	ff_raid_close(r);
	free(e);
	free(meta_shadow);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void never_done(struct ff_raid_io *io)
{
	(void)io; /* the process dies first */
}

/*
 * A crash between a bit and its write: a child fails a member, then writes
 * a full stripe whose member writes a fault rule holds (latency: the write
 * never ends), and dies.  The bit is on disk; the stripe is torn.  The
 * parent mounts without the member, reads what the stripe now holds, and
 * re-adds the member: the torn stripe is among the rebuilt, every byte and
 * every parity agree.
 */
START_TEST(crash_between_bit_and_write)
{
	struct expect *e = calloc(1, sizeof(*e));
	const unsigned n = 4, x = 1;
	struct ff_geom g;
	struct ff_raid *r;
	uint64_t s_torn = 30;
	pid_t pid;
	int status;

	ut_rng = 77;
	make(5, n);
	r = assemble_list(ut_pp, n, false);
	g = *ff_raid_geom(r);
	ut_write_all(r);
	write_meta_all(r);
	ff_raid_close(r);
	pid = fork();
	if (pid == 0) {
		struct ff_fault_rule hold = { .ops = FF_FAULT_WRITE, .off_start = g.data_offset,
					      .latency_us = 60u * 1000000u };
		static struct ff_raid_io io;
		uint8_t *buf = ff_alloc_aligned(g.stripe_bytes);
		struct ff_raid *c = assemble_list(ut_pp, n, false);
		unsigned live = (x + 1) % n;

		if (ff_raid_fail_member(c, x, "test: pulled") < 0 ||
		    ff_fault_add(ff_raid_member(c, live), &hold) < 0)
			_exit(2);
		ut_fill(buf, g.stripe_bytes);
		io = (struct ff_raid_io){ .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
					  .off = s_torn * g.stripe_bytes, .len = g.stripe_bytes,
					  .buf = buf, .flags = FF_RAID_IO_NO_INTENT,
					  .done = never_done };
		if (ff_raid_submit(c, &io) < 0)
			_exit(3);
		/* bounded: the held write is issued within 10 s or the test fails */
		if (ff_fault_wait_held(ff_raid_member(c, live), 0, 1, 10000) < 0)
			_exit(4);
		_exit(0); /* the crash: no close, the write still held */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	r = assemble_without(n, 1u << x, false);
	/* the torn stripe holds what it holds now: that is the truth to keep */
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, s_torn * g.stripe_bytes,
				    ut_shadow + s_torn * g.stripe_bytes, g.stripe_bytes), 0);
	e->region[s_torn / REGION_STRIPES] = 1;
	readd_and_count(r, x, e);
	ut_verify_all(r, "re-added after a crash");
	verify_parity(r);
	ff_raid_close(r);
	r = assemble_without(n, 1u << ((x + 1) % n), true);
	ut_verify_all(r, "re-added after a crash, another left out");
	ff_raid_close(r);
	free(e);
	free(meta_shadow);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void copy_file(const char *from, const char *to)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "cp --sparse=always '%s' '%s'", from, to);
	ck_assert_int_eq(system(cmd), 0);
}

static void refused(struct ff_raid *r, const char *path, const char *needle)
{
	struct ff_err err = { "" };

	ck_assert_int_eq(ff_raid_readd(r, path, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, needle) && strstr(err.msg, "add --force"),
		      "refusal says '%s' and names the full rebuild: %s", needle, err.msg);
}

/* When the bitmap cannot prove what the member missed, re-add refuses with
 * a line saying why and what rebuilds it in full — and add --force does. */
START_TEST(readd_refused_when_unprovable)
{
	const unsigned n = 4;
	char old[300];
	struct ff_err err = { "" };
	struct ff_raid *r;
	uint8_t *junk = ff_alloc_aligned(4096);
	pid_t pid;
	int status, fd;

	ut_rng = 99;
	make(5, n);
	r = assemble_list(ut_pp, n, false);
	ut_write_all(r);
	ff_raid_close(r);
	/* 1. an older copy of the member: its events are behind */
	snprintf(old, sizeof(old), "%s/old2.img", ut_dir);
	copy_file(ut_paths[2], old);
	r = assemble_list(ut_pp, n, false);
	ff_raid_close(r);
	r = assemble_list(ut_pp, n, false);
	ck_assert_int_eq(ff_raid_fail_member(r, 2, "test: pulled"), 0);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, ut_shadow, 65536), 0);
	ff_raid_close(r);
	ck_assert_int_eq(rename(old, ut_paths[2]), 0);
	r = assemble_without(n, 1u << 2, false);
	refused(r, ut_paths[2], "event count");
	ff_raid_close(r);
	/* 2. a bit block damaged on every member that holds it */
	for (unsigned m = 0; m < n; m++) {
		if (m == 2)
			continue;
		fd = open(ut_paths[m], O_RDWR);
		ck_assert_int_ge(fd, 0);
		memset(junk, 0x5a, 4096);
		ck_assert_int_eq(pwrite(fd, junk, 4096, WWD_OFFSET + 4096), 4096);
		close(fd);
	}
	r = assemble_without(n, 1u << 2, false);
	refused(r, ut_paths[2], "checksum");
	/* the full rebuild the refusals name */
	ck_assert_msg(ff_raid_add(r, ut_paths[2], true, &err) == 0, "add --force: %s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ff_raid_close(r);
	/* 3. present when the array crashed, missing at the next mount: the
	 * writes in flight at the crash were not recorded for it */
	pid = fork();
	if (pid == 0) {
		struct ff_raid_opts o = { .workers = 1 };
		struct ff_raid *c;

		if (ff_raid_assemble(ut_pp, n, &o, &c, &err) < 0)
			_exit(2);
		_exit(0); /* dies without closing: the array stays dirty */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	r = assemble_without(n, 1u << 2, false);
	refused(r, ut_paths[2], "left before");
	ck_assert_msg(ff_raid_add(r, ut_paths[2], true, &err) == 0, "add --force: %s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	verify_parity(r);
	ff_raid_close(r);
	free(junk);
	free(ut_shadow);
	ut_remove_members(n);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_add_loop_test(tc, readd_resyncs_only_what_changed, 0,
			    (int)(sizeof(configs) / sizeof(configs[0])));
	tcase_add_test(tc, readd_after_mounts_without_it);
	tcase_add_test(tc, crash_between_bit_and_write);
	tcase_add_test(tc, readd_refused_when_unprovable);
}

int main(void)
{
	return ut_run("raid_readd", add_tests);
}
