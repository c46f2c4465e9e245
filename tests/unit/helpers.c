/* SPDX-License-Identifier: MIT */
/* What the unit tests share (tests/unit/helpers.h). */
#include "tests/unit/helpers.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t ut_rng;
char ut_dir[256];
char ut_paths[FF_MEMBERS_MAX][300];
const char *ut_pp[FF_MEMBERS_MAX];
unsigned ut_member_mb;
bool ut_assemble_ro;
uint8_t *ut_shadow;

uint64_t ut_rnd(void)
{
	/* xorshift stays at 0 from 0: a test that did not seed would fill its
	 * buffers with zeros, which a lost write reads back as (a grow test
	 * passed that way while the move left every stripe a hole) */
	if (!ut_rng)
		ut_rng = 0x9e3779b97f4a7c15ull;
	ut_rng ^= ut_rng << 13;
	ut_rng ^= ut_rng >> 7;
	ut_rng ^= ut_rng << 17;
	return ut_rng;
}

void ut_fill(void *b, size_t len)
{
	uint64_t *p = b;

	for (size_t i = 0; i < len / 8; i++)
		p[i] = ut_rnd();
}

void ut_sized_file(const char *path, unsigned mb)
{
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)mb << 20), 0);
	close(fd);
}

/* The process that runs the tests (ut_run): Check forks each test from it,
 * and the scratch directories carry its pid, so that ut_sweep finds the
 * ones a failed test left (a failed assertion ends the test before its
 * ut_remove_members). */
static pid_t runner_pid;

static const char *scratch_base(void)
{
	return getenv("FF_TEST_DIR") ? getenv("FF_TEST_DIR") : "/dev/shm";
}

void ut_make_members(unsigned n, unsigned mb)
{
	ut_member_mb = mb;
	snprintf(ut_dir, sizeof(ut_dir), "%s/ffraid.%ld.XXXXXX", scratch_base(),
		 (long)(runner_pid ? runner_pid : getpid()));
	ck_assert_ptr_nonnull(mkdtemp(ut_dir));
	for (unsigned i = 0; i < n; i++) {
		snprintf(ut_paths[i], sizeof(ut_paths[i]), "%s/m%u.img", ut_dir, i);
		ut_sized_file(ut_paths[i], mb);
		ut_pp[i] = ut_paths[i];
	}
}

/* Removes every file in the scratch directory (members, spares and
 * replacements a test added), then the directory; fails the test if
 * anything is left behind. */
void ut_remove_members(unsigned n)
{
	DIR *d = opendir(ut_dir);
	struct dirent *e;

	(void)n;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		char p[sizeof(ut_dir) + 256];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", ut_dir, e->d_name);
		ck_assert_int_eq(unlink(p), 0);
	}
	closedir(d);
	ck_assert_int_eq(rmdir(ut_dir), 0);
}

void ut_create(unsigned level, unsigned n)
{
	struct ff_raid_create_params p = { .level = level, .chunk_bytes = UT_CHUNK };
	struct ff_err err = { "" };

	ck_assert_msg(ff_raid_create(ut_pp, n, &p, &err) == 0, "create: %s", err.msg);
}

struct ff_raid *ut_assemble(const char *const *list, unsigned n)
{
	struct ff_raid_opts o = { .workers = 2, .read_only = ut_assemble_ro };
	struct ff_err err = { "" };
	struct ff_raid *r = NULL;

	ck_assert_msg(ff_raid_assemble(list, n, &o, &r, &err) == 0, "assemble: %s", err.msg);
	return r;
}

/* Assemble with the members in skip_mask left out (read-only when only
 * reading, so that the left-out members do not become stale). */
struct ff_raid *ut_assemble_without(unsigned n, uint32_t skip_mask)
{
	const char *list[FF_MEMBERS_MAX];
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (!(skip_mask & (1u << i)))
			list[k++] = ut_pp[i];
	return ut_assemble(list, k);
}

void ut_write_all(struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);

	ut_shadow = ff_alloc_aligned(g->data_bytes);
	ck_assert_ptr_nonnull(ut_shadow);
	ut_fill(ut_shadow, g->data_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_DATA, 0, ut_shadow, g->data_bytes), 0);
}

void ut_verify_all(struct ff_raid *r, const char *what)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint8_t *buf = ff_alloc_aligned(g->data_bytes);

	memset(buf, 0xee, g->data_bytes);
	ck_assert_int_eq(ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, 0, buf, g->data_bytes), 0);
	for (uint64_t s = 0; s < g->nstripes; s++)
		ck_assert_msg(memcmp(buf + s * g->stripe_bytes, ut_shadow + s * g->stripe_bytes,
				     g->stripe_bytes) == 0, "%s: stripe %llu differs", what,
			      (unsigned long long)s);
	free(buf);
}

void ut_async_write_done(struct ff_raid_io *io)
{
	struct ut_async_write *a = (struct ut_async_write *)io;

	ut_count_done(a->left);
}

/* n fresh members of mb MiB, a RAID of level over them, assembled, filled
 * with seeded data (kept in shadow). */
struct ff_raid *ut_written_array(unsigned level, unsigned n, unsigned mb)
{
	struct ff_raid *r;

	ut_make_members(n, mb);
	ut_create(level, n);
	r = ut_assemble(ut_pp, n);
	ut_write_all(r);
	return r;
}

uint32_t ut_parity_mismatch(struct ff_raid *r, uint64_t stripe, void *buf)
{
	struct ff_raid_io io = { .op = FF_RAID_CHECK, .space = FF_SPACE_DATA,
				 .off = stripe * ff_raid_geom(r)->stripe_bytes,
				 .len = ff_raid_geom(r)->stripe_bytes, .buf = buf };

	ck_assert_int_eq(ff_raid_submit_wait(r, &io), 0);
	return atomic_load(&io.check_mismatch);
}

void ut_count_init(struct ut_count *c, unsigned n)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&c->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&c->cond, &ca);
	pthread_condattr_destroy(&ca);
	c->left = n;
}

void ut_count_done(struct ut_count *c)
{
	pthread_mutex_lock(&c->lock);
	ck_assert_uint_gt(c->left, 0);
	if (--c->left == 0)
		pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

unsigned ut_count_left(struct ut_count *c)
{
	unsigned n;

	pthread_mutex_lock(&c->lock);
	n = c->left;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int ut_count_wait(struct ut_count *c, uint64_t timeout_ms)
{
	uint64_t end_ns = ff_mono_ns() + timeout_ms * 1000000ull;
	struct timespec ts = { (time_t)(end_ns / 1000000000ull), (long)(end_ns % 1000000000ull) };
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	/* ends: every completion signals, and the deadline ends the wait */
	while (c->left && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&c->cond, &c->lock, &ts);
	rc = c->left ? -ETIMEDOUT : 0;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void ut_sweep(void)
{
	char prefix[64];
	DIR *d = opendir(scratch_base());
	struct dirent *e;

	if (!d || getenv("FF_TEST_KEEP"))
		goto out;
	snprintf(prefix, sizeof(prefix), "ffraid.%ld.", (long)(runner_pid ? runner_pid : getpid()));
	while ((e = readdir(d)) != NULL) {
		char dir[512];
		DIR *sub;
		struct dirent *f;

		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", scratch_base(), e->d_name);
		if (!(sub = opendir(dir)))
			continue;
		while ((f = readdir(sub)) != NULL) {
			char p[sizeof(dir) + 256];

			if (f->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, f->d_name);
			unlink(p);
		}
		closedir(sub);
		if (rmdir(dir) == 0)
			fprintf(stderr, "removed %s: left by a test that failed (FF_TEST_KEEP=1 keeps it)\n", dir);
	}
out:
	if (d)
		closedir(d);
}

void ut_runner_begin(void)
{
	runner_pid = getpid();
}

int ut_run(const char *name, void (*add)(TCase *tc))
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	SRunner *sr;
	int failed;

	ff_log_set_level(getenv("FRAMEFS_LOG") ? FF_LOG_DEBUG : FF_LOG_ERR);
	tcase_set_timeout(tc, 600);
	add(tc);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	ut_runner_begin();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	ut_sweep();
	return failed ? 1 : 0;
}

void ut_junk_at(const char *path, uint64_t off)
{
	char junk[4096];
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	memset(junk, 0x3c, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)off), (ssize_t)sizeof(junk));
	close(fd);
}
