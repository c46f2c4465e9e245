/* SPDX-License-Identifier: MIT */
/*
 * The RAID engine end to end on real files: create, assemble, full-stripe
 * and partial writes against a shadow copy, every single (RAID5) and every
 * pair (RAID6) of missing members at every stripe rotation, injected
 * member faults, and bad input that must be refused without writing.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid.h"
#include "raid/sb.h"

#define MEMBER_MB 48
#define CHUNK (64 * 1024)

static char dir[256];
static char paths[FF_MEMBERS_MAX][300];
static const char *pp[FF_MEMBERS_MAX];
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(void *b, size_t len)
{
	uint64_t *p = b;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = rnd();
}

static unsigned member_mb;

static void make_members(unsigned n, unsigned mb)
{
	const char *base = getenv("FF_TEST_DIR") ? getenv("FF_TEST_DIR") : "/dev/shm";

	member_mb = mb;
	snprintf(dir, sizeof(dir), "%s/ffraid.XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (unsigned i = 0; i < n; i++) {
		int fd;

		snprintf(paths[i], sizeof(paths[i]), "%s/m%u.img", dir, i);
		fd = open(paths[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, (off_t)mb << 20), 0);
		close(fd);
		pp[i] = paths[i];
	}
}

/* Removes every file in the scratch directory (members, spares and
 * replacements a test added), then the directory; fails the test if
 * anything is left behind. */
static void remove_members(unsigned n)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	(void)n;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char p[sizeof(dir) + 256];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		ck_assert_int_eq(unlink(p), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(dir), 0);
}

static void create(unsigned level, unsigned n)
{
	struct ff_raid_create_params p = { .level = level, .chunk_bytes = CHUNK };
	struct ff_err err = { "" };

	ck_assert_msg(ff_raid_create(pp, n, &p, &err) == 0, "create: %s", err.msg);
}

static bool assemble_ro;

static struct ff_raid *assemble(const char *const *list, unsigned n)
{
	struct ff_raid_opts o = { .workers = 2, .read_only = assemble_ro };
	struct ff_err err = { "" };
	struct ff_raid *r = NULL;

	ck_assert_msg(ff_raid_assemble(list, n, &o, &r, &err) == 0, "assemble: %s", err.msg);
	return r;
}

/* Assemble with the members in skip_mask left out (read-only when only
 * reading, so that the left-out members do not become stale). */
static struct ff_raid *assemble_without(unsigned n, uint32_t skip_mask)
{
	const char *list[FF_MEMBERS_MAX];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (!(skip_mask & (1u << i)))
			list[k++] = pp[i];
	return assemble(list, k);
}

static uint8_t *shadow;

static void write_all(struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);

	shadow = ff_alloc_aligned(g->data_bytes);
	ck_assert_ptr_nonnull(shadow);
	fill(shadow, g->data_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, shadow, g->data_bytes), 0);
}

static void verify_all(struct ff_raid *r, const char *what)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t *buf = ff_alloc_aligned(g->data_bytes);

	memset(buf, 0xee, g->data_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, 0, buf, g->data_bytes), 0);
	for (uint64_t s = 0; s < g->nstripes; s++)
		ck_assert_msg(memcmp(buf + s * g->stripe_bytes, shadow + s * g->stripe_bytes,
				     g->stripe_bytes) == 0, "%s: stripe %llu differs", what,
			      (unsigned long long)s);
	free(buf);
}

/* An asynchronous write whose completion counts *left down. */
struct async_write {
	struct ff_raid_io io;
	_Atomic unsigned *left;
};

static void async_write_done(struct ff_raid_io *io)
{
	struct async_write *a = (struct async_write *)io;

	atomic_fetch_sub(a->left, 1);
}

/* n fresh members of mb MiB, a RAID of level over them, assembled, filled
 * with seeded data (kept in shadow). */
static struct ff_raid *written_array(unsigned level, unsigned n, unsigned mb)
{
	struct ff_raid *r;

	make_members(n, mb);
	create(level, n);
	r = assemble(pp, n);
	write_all(r);
	return r;
}

START_TEST(full_stripe_write_reads_back)
{
	static const unsigned cfg[][2] = { { 5, 3 }, { 5, 4 }, { 5, 8 }, { 6, 4 }, { 6, 6 } };
	struct ff_raid *r;

	rng = 42 + (uint64_t)_i;
	make_members(cfg[_i][1], MEMBER_MB);
	create(cfg[_i][0], cfg[_i][1]);
	r = assemble(pp, cfg[_i][1]);
	write_all(r);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->rmw_segments), 0);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->full_stripe_writes), 0);
	verify_all(r, "healthy");
	ck_assert_int_eq(ff_raid_close(r), 0);
	/* and after reassembly in reverse order */
	{
		const char *rev[FF_MEMBERS_MAX];

		for (unsigned i = 0; i < cfg[_i][1]; i++)
			rev[i] = pp[cfg[_i][1] - 1 - i];
		r = assemble(rev, cfg[_i][1]);
	}
	verify_all(r, "reassembled");
	ff_raid_close(r);
	free(shadow);
	remove_members(cfg[_i][1]);
}
END_TEST

/* Every loss pattern the level survives, at every stripe rotation: the
 * whole data space (nstripes >> members) is read back byte for byte. */
START_TEST(degraded_read_every_loss_pattern)
{
	static const unsigned cfg[][2] = { { 5, 4 }, { 5, 5 }, { 6, 5 }, { 6, 6 } };
	unsigned level = cfg[_i][0], n = cfg[_i][1];
	struct ff_raid *r;
	unsigned patterns = 0;

	rng = 7 + (uint64_t)_i;
	r = written_array(level, n, MEMBER_MB);
	ck_assert_uint_ge(ff_raid_geom(r)->nstripes, 4 * n);
	ff_raid_close(r);
	for (unsigned x = 0; x < n; x++) {
		for (unsigned y = x; y < n; y++) {
			uint32_t mask = (1u << x) | (1u << y);
			char what[64];

			if (level == 5 && y != x)
				continue;
			assemble_ro = true;
			r = assemble_without(n, mask);
			assemble_ro = false;
			ck_assert_uint_eq(ff_raid_failed_count(r), (unsigned)__builtin_popcount(mask));
			snprintf(what, sizeof(what), "RAID%u without %u,%u", level, x, y);
			verify_all(r, what);
			ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->degraded_segments), 0);
			ff_raid_close(r);
			patterns++;
		}
	}
	ck_assert_uint_eq(patterns, level == 5 ? n : n * (n + 1) / 2);
	free(shadow);
	remove_members(n);
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

	rng = 99 + (uint64_t)_i;
	make_members(n, MEMBER_MB);
	create(level, n);
	r = assemble(pp, n);
	g = ff_raid_geom(r);
	write_all(r);
	buf = ff_alloc_aligned(4 * g->stripe_bytes);
	for (int k = 0; k < 300; k++) {
		uint64_t len = (1 + rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
		uint64_t off = (rnd() % ((g->data_bytes - len) / 4096)) * 4096;

		fill(buf, len);
		memcpy(shadow + off, buf, len);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf, len), 0);
	}
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	if (n >= 8)
		ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rmw_segments), 0);
	verify_all(r, "after partial writes");
	ff_raid_close(r);
	/* parity is right too: every single member can be lost */
	assemble_ro = true;
	for (unsigned x = 0; x < n; x++) {
		r = assemble_without(n, 1u << x);
		verify_all(r, "partial writes, then degraded");
		ff_raid_close(r);
	}
	assemble_ro = false;
	free(buf);
	free(shadow);
	remove_members(n);
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

	rng = 5 + (uint64_t)_i;
	make_members(n, MEMBER_MB);
	create(level, n);
	r = assemble_without(n, lost);
	g = ff_raid_geom(r);
	write_all(r);
	buf = ff_alloc_aligned(2 * g->stripe_bytes);
	for (int k = 0; k < 200; k++) {
		uint64_t len = (1 + rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
		uint64_t off = (rnd() % ((g->data_bytes - len) / 4096)) * 4096;

		fill(buf, len);
		memcpy(shadow + off, buf, len);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf, len), 0);
	}
	verify_all(r, "degraded writes");
	ff_raid_close(r);
	r = assemble_without(n, lost);
	verify_all(r, "degraded writes, reassembled");
	ff_raid_close(r);
	free(buf);
	free(shadow);
	remove_members(n);
}
END_TEST

/* Injected read errors on one member: reads still return the data, and
 * the member is marked failed in the others' superblocks. */
START_TEST(read_error_fails_member_and_reads_on)
{
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_raid *r;
	unsigned n = 4;

	rng = 11;
	r = written_array(5, n, MEMBER_MB);
	/* fault: every read of member role 1 fails with EIO after 3 reads */
	ck_assert_int_eq(ff_fault_parse("op=r,err=EIO,after=3", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 1), &rule), 0);
	verify_all(r, "member 1 failing reads");
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_FAILED);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->member_errors), 0);
	ff_raid_close(r);
	/* reassembled with all four: member 1 is known failed, array is degraded */
	r = assemble(pp, n);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_MISSING);
	verify_all(r, "after failure persisted");
	ff_raid_close(r);
	free(shadow);
	remove_members(n);
}
END_TEST

/* Write errors on one member: writes succeed degraded and read back. */
START_TEST(write_error_fails_member_and_writes_on)
{
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_raid *r;
	unsigned n = 6;

	rng = 12;
	make_members(n, MEMBER_MB);
	create(6, n);
	r = assemble(pp, n);
	/* fault: writes to role 3 fail with EIO after 10 writes */
	ck_assert_int_eq(ff_fault_parse("op=w,err=EIO,after=10", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 3), &rule), 0);
	write_all(r);
	ck_assert_int_eq(ff_raid_member_state(r, 3), FF_MEMBER_FAILED);
	verify_all(r, "after write errors");
	ff_raid_close(r);
	free(shadow);
	remove_members(n);
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

	rng = 13;
	make_members(n, MEMBER_MB);
	create(5, n);
	r = assemble(pp, n);
	g = ff_raid_geom(r);
	write_all(r);
	/* fault: every read of role 0 returns 8 flipped bits */
	ck_assert_int_eq(ff_fault_parse("op=r,flip=8", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 0), &rule), 0);
	buf = ff_alloc_aligned(g->stripe_bytes * n);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, 0, buf, g->stripe_bytes * n), 0);
	ck_assert_int_ne(memcmp(buf, shadow, g->stripe_bytes * n), 0);
	{
		struct ff_raid_io rio = { .op = FF_RAID_READ, .space = FF_SPACE_DATA, .off = 0,
					  .len = g->stripe_bytes * n, .buf = buf, .avoid_members = 1u };

		ck_assert_int_eq(ff_raid_submit_wait(r, &rio), 0);
	}
	ck_assert_int_eq(memcmp(buf, shadow, g->stripe_bytes * n), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 0), FF_MEMBER_ACTIVE);
	ff_raid_close(r);
	free(buf);
	free(shadow);
	remove_members(n);
}
END_TEST

/* The mirrored metadata space: written on every copy, read from any. */
START_TEST(meta_space_mirrors)
{
	unsigned level = _i == 0 ? 5 : 6, n = _i == 0 ? 4 : 6;
	struct ff_raid *r;
	const struct ff_geom *g;
	uint8_t *a, *b;
	uint64_t len = 4 * FF_MiB;

	rng = 21;
	make_members(n, MEMBER_MB);
	create(level, n);
	r = assemble(pp, n);
	g = ff_raid_geom(r);
	ck_assert_uint_ge(g->meta_bytes, len);
	a = ff_alloc_aligned(len);
	b = ff_alloc_aligned(len);
	fill(a, len);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, 0, a, len), 0);
	for (unsigned c = 1; c <= g->meta_copies; c++) {
		struct ff_raid_io io = { .op = FF_RAID_READ, .space = FF_SPACE_META, .off = 0,
					 .len = len, .buf = b, .meta_copy = (uint8_t)c };

		memset(b, 0, len);
		ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
		ck_assert_msg(memcmp(a, b, len) == 0, "meta copy %u differs", c);
	}
	ff_raid_close(r);
	/* any nparity members lost: metadata still reads */
	assemble_ro = true;
	r = assemble_without(n, level == 5 ? 1u << 1 : (1u << 0) | (1u << 1));
	memset(b, 0, len);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_META, 0, b, len), 0);
	ck_assert_int_eq(memcmp(a, b, len), 0);
	ff_raid_close(r);
	assemble_ro = false;
	free(a);
	free(b);
	remove_members(n);
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

	make_members(6, MEMBER_MB);
	/* wrong member counts */
	expect_create_fails(pp, 2, 5, CHUNK, "RAID5 needs 3 to 32 members, 2 given");
	expect_create_fails(pp, 3, 6, CHUNK, "RAID6 needs 4 to 32 members, 3 given");
	expect_create_fails(pp, 4, 5, 3000, "chunk size 3000");
	expect_create_fails(pp, 4, 7, CHUNK, "RAID level 7");
	/* duplicates, named */
	dup[0] = pp[0]; dup[1] = pp[1]; dup[2] = pp[2]; dup[3] = pp[1];
	expect_create_fails(dup, 4, 5, CHUNK, "are the same member");
	/* too small, named */
	snprintf(small, sizeof(small), "%s/small.img", dir);
	{
		int fd = open(small, O_CREAT | O_RDWR, 0600);

		ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
		close(fd);
	}
	{
		const char *l[4] = { pp[0], pp[1], small, pp[2] };

		expect_create_fails(l, 4, 5, CHUNK, small);
	}
	/* a member carrying a signature is refused without -f */
	create(5, 4);
	expect_create_fails(pp, 4, 5, CHUNK, "carries a framefs member signature");
	/* a file that is no member */
	{
		const char *l[4] = { pp[0], pp[1], pp[2], pp[4] };

		ck_assert_int_lt(ff_raid_assemble(l, 4, &o, &r, &err), 0);
		ck_assert_msg(strstr(err.msg, "not a framefs member") && strstr(err.msg, pp[4]),
			      "%s", err.msg);
	}
	/* a member of another array */
	for (int i = 0; i < 5; i++) {
		int fd;

		snprintf(other[i], sizeof(other[i]), "%s/o%d.img", dir, i);
		fd = open(other[i], O_CREAT | O_RDWR, 0600);
		ck_assert_int_eq(ftruncate(fd, (off_t)MEMBER_MB << 20), 0);
		close(fd);
		otherp[i] = other[i];
	}
	{
		struct ff_raid_create_params p = { .level = 5, .chunk_bytes = CHUNK };

		ck_assert_int_eq(ff_raid_create(otherp, 3, &p, &err), 0);
	}
	mixed[0] = pp[0]; mixed[1] = pp[1]; mixed[2] = other[0]; mixed[3] = pp[3];
	ck_assert_int_lt(ff_raid_assemble(mixed, 4, &o, &r, &err), 0);
	ck_assert_msg(strstr(err.msg, "belongs to another array") && strstr(err.msg, other[0]),
		      "%s", err.msg);
	/* too many missing */
	ck_assert_int_lt(ff_raid_assemble(pp, 2, &o, &r, &err), 0);
	ck_assert_msg(strstr(err.msg, "cannot assemble RAID5: 2 of 4 members missing"), "%s", err.msg);
	/* unaligned and out-of-range requests */
	r = assemble(pp, 4);
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
	remove_members(6);
}
END_TEST

/* A torn head copy of the member superblock falls back to the tail copy;
 * a member left out while the array was written is stale afterwards. */
START_TEST(superblock_copies_and_stale_members)
{
	struct ff_raid *r;
	int fd;
	char junk[4096];

	rng = 31;
	make_members(4, MEMBER_MB);
	create(5, 4);
	memset(junk, 0x5a, sizeof(junk));
	fd = open(pp[2], O_WRONLY);
	ck_assert_int_eq(pwrite(fd, junk, 100, 200), 100); /* tear copy A */
	close(fd);
	r = assemble(pp, 4);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ff_raid_close(r);
	/* member 3 misses writes */
	r = assemble_without(4, 1u << 3);
	write_all(r);
	ff_raid_close(r);
	r = assemble(pp, 4);
	ck_assert_int_eq(ff_raid_member_state(r, 3), FF_MEMBER_MISSING);
	verify_all(r, "stale member ignored");
	ff_raid_close(r);
	free(shadow);
	remove_members(4);
}
END_TEST

static const char *new_member_path(unsigned idx)
{
	static char p[300];

	snprintf(p, sizeof(p), "%s/new%u.img", dir, idx);
	return p;
}

/* A fresh file that will replace a lost member. */
static const char *new_member(unsigned idx)
{
	static char p[FF_MEMBERS_MAX][300];
	int fd;

	snprintf(p[idx], sizeof(p[idx]), "%s/new%u.img", dir, idx);
	fd = open(p[idx], O_CREAT | O_RDWR | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)member_mb << 20), 0);
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

	rng = 77 + (uint64_t)_i;
	make_members(n, MEMBER_MB);
	create(level, n);
	{
		struct ff_raid *r = assemble(pp, n);

		write_all(r);
		ff_raid_close(r);
	}
	for (unsigned x = 0; x < n; x++) {
		for (unsigned y = x + (level == 6); y < (level == 5 ? x + 1 : n); y++) {
			uint32_t lost = (1u << x) | (1u << y);
			const struct ff_geom *g;
			struct ff_raid *r = assemble_without(n, lost);
			uint8_t *buf;

			g = ff_raid_geom(r);
			buf = ff_alloc_aligned(2 * g->stripe_bytes);
			for (int k = 0; k < 20; k++) { /* degraded writes, full and partial */
				uint64_t len = (1 + rnd() % (2 * g->stripe_bytes / 4096)) * 4096;
				uint64_t off = (rnd() % ((g->data_bytes - len) / 4096)) * 4096;

				fill(buf, len);
				memcpy(shadow + off, buf, len);
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
			verify_all(r, "rebuilt, same session");
			ff_raid_close(r);
			/* the new members now hold the lost roles: give them the old names */
			for (unsigned m = 0; m < n; m++) {
				char np[300];

				if (!(lost & (1u << m)))
					continue;
				snprintf(np, sizeof(np), "%s/new%u.img", dir, m);
				ck_assert_int_eq(unlink(paths[m]), 0);
				ck_assert_int_eq(rename(np, paths[m]), 0);
			}
			r = assemble(pp, n);
			ck_assert_uint_eq(ff_raid_failed_count(r), 0);
			verify_all(r, "rebuilt, reassembled");
			ff_raid_close(r);
			assemble_ro = true;
			r = assemble_without(n, 1u << ((x + 1) % n));
			verify_all(r, "rebuilt, then another member left out");
			ff_raid_close(r);
			assemble_ro = false;
			cycles++;
		}
	}
	ck_assert_uint_eq(cycles, level == 5 ? n : n * (n - 1) / 2);
	free(shadow);
	remove_members(n);
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
	for (int t = 0; t < ms / 10 && !role_rebuild_started(r, role); t++)
		usleep(10000);
	ck_assert_uint_eq(ff_raid_spare_count(r), 0);
}

/* The rebuild of `role` ends well, the role is active, every byte reads
 * back; then the array is closed and its n members removed. */
static void rebuilt_then_closed(struct ff_raid *r, unsigned role, unsigned n, const char *what)
{
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, role), FF_MEMBER_ACTIVE);
	verify_all(r, what);
	ff_raid_close(r);
	free(shadow);
	remove_members(n);
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

	rng = 88;
	r = written_array(5, n, MEMBER_MB);
	ck_assert_int_eq(ff_raid_add(r, new_member(0), false, &err), 0);
	ck_assert_uint_eq(ff_raid_spare_count(r), 1);
	if (_i == 0) {
		ck_assert_int_eq(ff_raid_fail_member(r, 2, "test: failed on purpose"), 0);
	} else {
		ck_assert_int_eq(ff_fault_parse("op=w,err=EIO,after=10", &rule, &err), 0);
		ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
		free(shadow);
		write_all(r);
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
	struct async_write a;
	_Atomic unsigned left = 1;
	struct ff_raid *r;
	const struct ff_geom *g;
	uint64_t w0;
	uint8_t *buf;
	unsigned n = 4;

	rng = 91;
	r = written_array(5, n, MEMBER_MB);
	g = ff_raid_geom(r);
	ck_assert_int_eq(ff_raid_add(r, new_member(0), false, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=w,lat_ms=1500,err=EIO", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
	buf = ff_alloc_aligned(g->stripe_bytes);
	fill(buf, g->stripe_bytes);
	memset(&a, 0, sizeof(a));
	a.io = (struct ff_raid_io){ .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
				    .off = 3 * g->stripe_bytes, .len = g->stripe_bytes, .buf = buf,
				    .done = async_write_done };
	a.left = &left;
	memcpy(shadow + a.io.off, buf, a.io.len);
	w0 = atomic_load(&ff_raid_stats(r)->member_writes);
	ck_assert_int_eq(ff_raid_submit(r, &a.io), 0);
	for (int t = 0; t < 500 && atomic_load(&ff_raid_stats(r)->member_writes) < w0 + n; t++)
		usleep(1000); /* the stripe's writes went out, role 2's to hang */
	ck_assert_uint_ge(atomic_load(&ff_raid_stats(r)->member_writes), w0 + n);
	ck_assert_int_eq(ff_raid_fail_member(r, 2, "test: failed while a write to it hangs"), 0);
	spare_took_role(r, 2, 1000);
	ck_assert_msg(atomic_load(&left) == 1, "the spare took the role only after the hung write ended");
	while (atomic_load(&left))
		usleep(1000);
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

	rng = 99;
	r = written_array(5, n, 64);
	ff_raid_close(r);
	r = assemble_without(n, 1u << 1);
	ff_raid_set_rebuild_rate(r, 16 << 20, 16 << 20); /* slow, so that it stops mid-way */
	ck_assert_int_eq(ff_raid_add(r, new_member(1), false, &err), 0);
	usleep(2500 * 1000);
	ff_raid_rebuild_status(r, &st);
	ck_assert(st.active);
	ck_assert_msg(st.phase >= 1 && st.fraction < 1.0, "phase %u fraction %f", st.phase,
		      st.fraction);
	first = st.fraction;
	ff_raid_close(r); /* stops the rebuild and checkpoints it */
	ck_assert_int_eq(unlink(paths[1]), 0);
	ck_assert_int_eq(rename(new_member_path(1), paths[1]), 0);
	r = assemble(pp, n);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_REBUILDING);
	verify_all(r, "while the rebuild waits"); /* served around the rebuilding member */
	ck_assert_int_eq(ff_raid_rebuild_start(r), 0);
	ff_raid_rebuild_status(r, &st);
	ck_assert_msg(st.phase >= 1, "resumed at phase %u", st.phase);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	verify_all(r, "resumed rebuild");
	ff_raid_close(r);
	assemble_ro = true;
	r = assemble_without(n, 1u << 2); /* the rebuilt member's chunks are right */
	verify_all(r, "resumed rebuild, member 2 left out");
	ff_raid_close(r);
	assemble_ro = false;
	ck_assert(first > 0.0);
	free(shadow);
	remove_members(n);
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

	rng = 98;
	r = written_array(5, n, MEMBER_MB);
	ff_raid_close(r);
	r = assemble_without(n, 1u << 1);
	verify_all(r, "degraded, before the rebuild"); /* foreground I/O just before */
	ff_raid_set_rebuild_rate(r, 64 << 10, 0);      /* busy: 64 KiB/s; idle: no limit */
	ck_assert_int_eq(ff_raid_add(r, new_member(1), false, &err), 0);
	usleep(300 * 1000);
	ff_raid_rebuild_status(r, &st);
	ck_assert_msg(!st.active || st.bytes_done > (4u << 20),
		      "after 300 ms of an idle rebuild only %llu bytes were rebuilt (busy rate)",
		      (unsigned long long)st.bytes_done);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	verify_all(r, "rebuilt");
	ff_raid_close(r);
	free(shadow);
	remove_members(n);
}
END_TEST

static uint32_t parity_mismatch(struct ff_raid *r, uint64_t stripe, void *buf)
{
	struct ff_raid_io io = { .op = FF_RAID_CHECK, .space = FF_SPACE_DATA,
				 .off = stripe * ff_raid_geom(r)->stripe_bytes,
				 .len = ff_raid_geom(r)->stripe_bytes, .buf = buf };

	ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
	return atomic_load(&io.check_mismatch);
}

/* The member holding stripe s's parity. */
static unsigned parity_member(struct ff_raid *r, uint64_t s)
{
	uint32_t used = 0;

	for (unsigned i = 0; i < ff_raid_geom(r)->ndata; i++)
		used |= 1u << ff_raid_chunk_member(r, s, i);
	return (unsigned)__builtin_ctz(~used);
}

static void junk_at(const char *path, uint64_t off)
{
	char junk[4096];
	int fd = open(path, O_WRONLY);

	memset(junk, 0x3c, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)off), (ssize_t)sizeof(junk));
	close(fd);
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

	rng = 123;
	make_members(4, 256);
	create(5, 4);
	r = assemble(pp, 4);
	gg = *ff_raid_geom(r);
	buf = ff_alloc_aligned(g->stripe_bytes);
	ck_assert_uint_ge(g->nstripes, 600); /* two write-intent regions at least */
	s_hot = 10;
	s_cold = g->nstripes - 10;
	pm_hot = parity_member(r, s_hot);
	pm_cold = parity_member(r, s_cold);
	fill(buf, g->stripe_bytes);
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

		if (ff_raid_assemble(pp, 4, &o, &c, &err) < 0)
			_exit(2);
		fill(buf, g->stripe_bytes);
		if (ff_raid_rw(c, FF_RAID_WRITE, FF_SPACE_DATA, s_hot * g->stripe_bytes + 4096, buf,
			       8192) < 0)
			_exit(3);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* fault: the torn write (junk over hot parity) and old damage in the cold region */
	junk_at(paths[pm_hot], g->data_offset + s_hot * g->chunk_bytes + 8192);
	junk_at(paths[pm_cold], g->data_offset + s_cold * g->chunk_bytes + 8192);
	r = assemble(pp, 4);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 1);
	ck_assert_uint_eq(parity_mismatch(r, s_hot, buf), 0);
	ck_assert_uint_ne(parity_mismatch(r, s_cold, buf), 0);
	ff_raid_close(r);
	/* a clean shutdown resyncs nothing */
	r = assemble(pp, 4);
	ck_assert_uint_eq(ff_raid_resync_regions(r), 0);
	ff_raid_close(r);
	free(buf);
	remove_members(4);
}
END_TEST

/* A member that answers slowly is read around (parity) instead of waited
 * for; one that stops answering is failed after the member timeout.
 * fault: every read of role 1 is delayed 1 s (then role 2 by 10 s). */
START_TEST(slow_member_is_read_around_and_dead_one_failed)
{
	struct ff_raid_opts o = { .workers = 2, .read_slow_ms = 40, .member_timeout_ms = 20000 };
	struct ff_fault_rule rule;
	struct ff_err err = { "" };
	struct ff_raid *r;
	uint64_t t0;

	rng = 55;
	make_members(4, MEMBER_MB);
	create(5, 4);
	r = assemble(pp, 4);
	write_all(r);
	ff_raid_close(r);
	ck_assert_int_eq(ff_raid_assemble(pp, 4, &o, &r, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=1000", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 1), &rule), 0);
	t0 = ff_mono_ns();
	verify_all(r, "slow member 1");
	ck_assert_msg(ff_mono_ns() - t0 < 900000000ull, "reading took %.2f s: waited for the slow member",
		      (double)(ff_mono_ns() - t0) / 1e9);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->hedged_reads), 0);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE);
	ff_raid_close(r);
	/* a member that does not answer at all within the timeout is failed */
	o.read_slow_ms = 1000000; /* no reading around: the timeout must act */
	o.member_timeout_ms = 300;
	ck_assert_int_eq(ff_raid_assemble(pp, 4, &o, &r, &err), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=10000", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 2), &rule), 0);
	t0 = ff_mono_ns();
	verify_all(r, "member 2 stops answering");
	ck_assert_msg(ff_mono_ns() - t0 < 5000000000ull, "reading took %.2f s",
		      (double)(ff_mono_ns() - t0) / 1e9);
	ck_assert_int_eq(ff_raid_member_state(r, 2), FF_MEMBER_FAILED);
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->member_timeouts), 0);
	ff_raid_close(r);
	free(shadow);
	remove_members(4);
}
END_TEST

/* Submit at once: stripes 0..nfull-1 whole, then npart partial writes of
 * 8..72 KiB into those same stripes; wait for all, check each succeeded,
 * keep shadow in submission order.  Returns the time it took, in ns. */
static uint64_t write_batch(struct ff_raid *r, uint8_t *buf, unsigned nfull, unsigned npart)
{
	const struct ff_geom *g = ff_raid_geom(r);
	struct async_write req[32];
	_Atomic unsigned left = nfull + npart;
	uint64_t t0;

	ck_assert_uint_le(nfull + npart, 32);
	fill(buf, (nfull + npart) * g->stripe_bytes);
	t0 = ff_mono_ns();
	for (unsigned k = 0; k < nfull + npart; k++) {
		struct async_write *a = &req[k];

		memset(&a->io, 0, sizeof(a->io));
		a->io.op = FF_RAID_WRITE;
		a->io.space = FF_SPACE_DATA;
		if (k < nfull) {
			a->io.off = (uint64_t)k * g->stripe_bytes;
			a->io.len = g->stripe_bytes;
		} else {
			a->io.len = (2 + rnd() % 17) * 4096;
			a->io.off = (uint64_t)(k % nfull) * g->stripe_bytes +
				    (rnd() % ((g->stripe_bytes - a->io.len) / 4096)) * 4096;
		}
		a->io.buf = buf + (uint64_t)k * g->stripe_bytes;
		a->io.done = async_write_done;
		a->left = &left;
		memcpy(shadow + a->io.off, a->io.buf, a->io.len);
		ck_assert_int_eq(ff_raid_submit(r, &a->io), 0);
	}
	while (atomic_load(&left))
		usleep(1000);
	for (unsigned k = 0; k < nfull + npart; k++)
		ck_assert_int_eq(req[k].io.result, 0);
	return ff_mono_ns() - t0;
}

/*
 * The write window: with window W, a worker has at most W DATA writes past
 * planning; the others wait their turn, first come first served, behind
 * the stripe lock when they share a stripe.  Fault injected: 30 ms of
 * latency on every write to member 0, so that each full-stripe write takes
 * at least 30 ms.  One worker.  8 full-stripe writes submitted at once take
 * at least 8 x 30 ms with window 1 (one at a time) and well under that
 * with window 16 (all the worker's ops: together).  Then 8 full and 16
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

	rng = 77;
	make_members(4, MEMBER_MB);
	create(5, 4);
	r = assemble(pp, 4);
	write_all(r);
	geom = *ff_raid_geom(r);
	ff_raid_close(r);
	buf = ff_alloc_aligned(32 * geom.stripe_bytes);
	ck_assert_ptr_nonnull(buf);
	for (unsigned wi = 0; wi < 2; wi++) {
		struct ff_raid_opts o = { .workers = 1, .write_window = windows[wi] };
		uint64_t ns, waits;

		ck_assert_int_eq(ff_raid_assemble(pp, 4, &o, &r, &err), 0);
		ck_assert_int_eq(ff_fault_parse("op=w,lat_ms=30", &rule, &err), 0);
		ck_assert_int_eq(ff_fault_add(ff_raid_member(r, 0), &rule), 0);
		ns = write_batch(r, buf, nfull, 0);
		waits = atomic_load(&ff_raid_stats(r)->window_waits);
		if (windows[wi] == 1) {
			ck_assert_msg(ns >= nfull * 30000000ull,
				      "window 1: 8 full-stripe writes took %.0f ms: not one at a time",
				      (double)ns / 1e6);
			ck_assert_uint_eq(waits, nfull - 1);
		} else {
			ck_assert_msg(ns < nfull * 30000000ull / 2,
				      "window 16: 8 full-stripe writes took %.0f ms: not together",
				      (double)ns / 1e6);
			ck_assert_uint_eq(waits, 0);
		}
		write_batch(r, buf, nfull, 16);
		if (windows[wi] == 1)
			ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->window_waits), waits);
		verify_all(r, windows[wi] == 1 ? "window 1" : "window 16");
		ff_raid_close(r);
	}
	free(buf);
	free(shadow);
	remove_members(4);
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
			list[k++] = pp[i];
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

	rng = 88 + (uint64_t)_i;
	make_members(n, MEMBER_MB);
	create(level, n);
	r = assemble_opts(&o, 0, n);
	geom = *ff_raid_geom(r);
	stripes = g->nstripes;
	write_all(r);
	/* 64 KiB rows in 16 KiB pieces: three more per stripe */
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->pieces), 3 * stripes);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->full_stripe_writes), stripes);
	/* partial writes: rows 4K..60K of one chunk (RMW in 4 pieces), and
	 * 40 KiB across a chunk boundary */
	for (uint64_t s = 0; s < stripes; s += 3) {
		uint64_t off = s * g->stripe_bytes + 4096;

		fill(shadow + off, 56 << 10);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, shadow + off, 56 << 10), 0);
		off = s * g->stripe_bytes + CHUNK - (20 << 10);
		fill(shadow + off, 40 << 10);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, shadow + off, 40 << 10), 0);
	}
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->rmw_segments) +
				  atomic_load(&ff_raid_stats(r)->rcw_segments), 0);
	verify_all(r, "pieces");
	buf = ff_alloc_aligned(g->stripe_bytes + (size_t)g->nparity * CHUNK);
	for (uint64_t s = 0; s < stripes; s++)
		ck_assert_msg(parity_mismatch(r, s, buf) == 0, "stripe %llu: parity", (unsigned long long)s);
	ck_assert_int_eq(ff_raid_close(r), 0);

	/* member 1 missing: reads recover rows piece by piece */
	o.read_only = true;
	r = assemble_opts(&o, 1u << 1, n);
	verify_all(r, "degraded, in pieces");
	ck_assert_uint_gt(atomic_load(&ff_raid_stats(r)->pieces), 0);
	ck_assert_int_eq(ff_raid_close(r), 0);

	/* through io_uring: whole segments */
	o.read_only = false;
	o.ring_only = true;
	r = assemble_opts(&o, 0, n);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, shadow, g->data_bytes), 0);
	verify_all(r, "ring only");
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->pieces), 0);
	ck_assert_uint_eq(atomic_load(&ff_raid_stats(r)->full_stripe_writes), stripes);
	ff_raid_close(r);
	free(buf);
	free(shadow);
	remove_members(n);
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

	rng = 66;
	r = written_array(5, n, MEMBER_MB);
	ck_assert_int_eq(ff_raid_fail_member(r, 0, "test: failed on purpose"), 0);
	ck_assert_int_eq(ff_raid_remove(r, paths[0], &err), 0);
	ck_assert_msg(ff_raid_add(r, new_member(0), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	/* same session: the new member keeps its file, under the old name */
	ck_assert_int_eq(unlink(paths[0]), 0);
	ck_assert_int_eq(rename(new_member_path(0), paths[0]), 0);
	ff_raid_set_rebuild_rate(r, 32 << 20, 32 << 20); /* slow enough to read meanwhile */
	ck_assert_msg(ff_raid_replace(r, 1, new_member(1), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_replacing(r), 1);
	ck_assert_int_eq(ff_raid_member_state(r, 1), FF_MEMBER_ACTIVE); /* the old one serves */
	verify_all(r, "during the replace");
	{ /* and takes writes, which reach the new member too */
		uint8_t *buf = ff_alloc_aligned(ff_raid_geom(r)->stripe_bytes);
		uint64_t off = 3 * ff_raid_geom(r)->stripe_bytes;

		fill(buf, ff_raid_geom(r)->stripe_bytes);
		memcpy(shadow + off, buf, ff_raid_geom(r)->stripe_bytes);
		ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, off, buf,
					    ff_raid_geom(r)->stripe_bytes), 0);
		free(buf);
	}
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	ck_assert_int_eq(ff_raid_replacing(r), -1);
	ck_assert_str_eq(ff_raid_member(r, 1)->path, new_member_path(1));
	verify_all(r, "after the replace");
	/* then another member fails and is rebuilt onto a fresh one */
	ck_assert_int_eq(ff_raid_fail_member(r, 3, "test: failed on purpose"), 0);
	ck_assert_int_eq(ff_raid_remove(r, paths[3], &err), 0);
	ck_assert_msg(ff_raid_add(r, new_member(3), false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_raid_rebuild_wait(r), 0);
	verify_all(r, "replace, then a rebuild");
	ff_raid_close(r);
	ck_assert_int_eq(unlink(paths[3]), 0);
	ck_assert_int_eq(rename(new_member_path(3), paths[3]), 0);
	ck_assert_int_eq(unlink(paths[1]), 0);
	ck_assert_int_eq(rename(new_member_path(1), paths[1]), 0);
	r = assemble(pp, n);
	ck_assert_uint_eq(ff_raid_failed_count(r), 0);
	ff_raid_close(r);
	assemble_ro = true;
	r = assemble_without(n, 1u << 2);
	verify_all(r, "replaced member with another left out");
	ff_raid_close(r);
	assemble_ro = false;
	free(shadow);
	remove_members(n);
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

	rng = 91;
	order_next = 0;
	make_members(4, MEMBER_MB);
	create(5, 4);
	ck_assert_int_eq(ff_raid_assemble(pp, 4, &o, &r, &err), 0);
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
	remove_members(4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("raid");
	TCase *tc = tcase_create("engine");
	SRunner *sr;
	int failed;

	ff_log_set_level(getenv("FRAMEFS_LOG") ? FF_LOG_DEBUG : FF_LOG_ERR);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, full_stripe_write_reads_back, 0, 5);
	tcase_add_loop_test(tc, degraded_read_every_loss_pattern, 0, 4);
	tcase_add_loop_test(tc, partial_writes_match_shadow, 0, 3);
	tcase_add_loop_test(tc, degraded_writes_read_back, 0, 2);
	tcase_add_test(tc, read_error_fails_member_and_reads_on);
	tcase_add_test(tc, write_error_fails_member_and_writes_on);
	tcase_add_test(tc, avoid_member_reads_around_corruption);
	tcase_add_loop_test(tc, meta_space_mirrors, 0, 2);
	tcase_add_test(tc, bad_input_is_refused_without_writing);
	tcase_add_test(tc, superblock_copies_and_stale_members);
	tcase_add_test(tc, write_window_bounds_writes_in_flight);
	suite_add_tcase(s, tc);
	tc = tcase_create("rebuild");
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, rebuild_every_loss_pattern, 0, 2);
	tcase_add_loop_test(tc, hot_spare_takes_over, 0, 2);
	tcase_add_test(tc, late_error_of_a_let_go_member_spares_its_successor);
	tcase_add_test(tc, rebuild_resumes_from_checkpoint);
	tcase_add_test(tc, rebuild_starts_at_the_idle_rate);
	tcase_add_test(tc, crash_resyncs_only_regions_in_flight);
	tcase_add_test(tc, slow_member_is_read_around_and_dead_one_failed);
	tcase_add_test(tc, replace_while_old_serves);
	tcase_add_test(tc, background_requests_wait_for_foreground);
	tcase_add_loop_test(tc, pieces_on_members_in_ram, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
