/* SPDX-License-Identifier: MIT */
/*
 * The filesystem library without FUSE: mkfs, mount, the POSIX operations,
 * remount persistence, and a seeded random-operation run against an
 * in-memory model of every file.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ffs.h"
#include "fs/format.h"

#define NM 4
static char dir[256], paths[NM][300];
static const char *pp[NM];

static void make_members(unsigned mb)
{
	snprintf(dir, sizeof(dir), "/dev/shm/fftest.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (unsigned i = 0; i < NM; i++) {
		int fd;

		snprintf(paths[i], sizeof(paths[i]), "%s/m%u", dir, i);
		fd = open(paths[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, (off_t)mb << 20), 0);
		close(fd);
		pp[i] = paths[i];
	}
}

static void remove_members(void)
{
	for (unsigned i = 0; i < NM; i++)
		unlink(paths[i]);
	rmdir(dir);
}

static struct ffs *mkfs_mount(unsigned mb, uint32_t chunk)
{
	struct ffs_mkfs_params p = { .level = 5, .chunk_bytes = chunk, .quiet = true };
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20 };
	struct ff_err err = { "" };
	struct ffs *fs;

	make_members(mb);
	ck_assert_msg(ffs_mkfs(pp, NM, &p, &err) == 0, "mkfs: %s", err.msg);
	ck_assert_msg(ffs_mount(pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

static struct ffs *remount(struct ffs *fs)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20 };
	struct ff_err err = { "" };

	if (fs)
		ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

static uint64_t create(struct ffs *fs, uint64_t parent, const char *name, uint64_t *fh)
{
	struct stat st;

	ck_assert_int_eq(ffs_create(fs, parent, name, 0644, 0, 0, O_RDWR, &st, fh), 0);
	return st.st_ino;
}

START_TEST(small_file_round_trip)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	char buf[100];
	struct stat st;
	uint64_t fh, ino;

	ino = create(fs, FFS_ROOT_INO, "a.txt", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, "hello\n", 6, 0), 6);
	ck_assert_int_eq(ffs_read(fs, fh, buf, sizeof(buf), 0), 6);
	ck_assert_int_eq(memcmp(buf, "hello\n", 6), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "a.txt", &st), 0);
	ck_assert_uint_eq(st.st_ino, ino);
	ck_assert_int_eq(st.st_size, 6);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(ffs_read(fs, fh, buf, sizeof(buf), 0), 6);
	ck_assert_int_eq(memcmp(buf, "hello\n", 6), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	remove_members();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs");
	TCase *tc = tcase_create("library");
	SRunner *sr;
	int failed;

	ff_log_set_level(FF_LOG_WARN);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, small_file_round_trip);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
