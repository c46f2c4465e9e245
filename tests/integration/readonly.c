/* SPDX-License-Identifier: MIT */
/*
 * Proves: on a read-only mount (-o ro) every change fails with EROFS and
 * every read works.  "run" (read-write mount) makes the tree; "verify"
 * (mounted -o ro by readonly.sh) checks it.
 */
#include <dirent.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>

#include "it.h"

#define MiB (1024 * 1024)

static void it_run(void)
{
	IT_MUST(mkdir(P("dir"), 0755));
	IT_MUST(it_make_file(P("dir/file"), 3 * MiB + 7, 160));
	IT_MUST(mkdir(P("empty"), 0755));
	IT_MUST(symlink("dir/file", P("link")));
	IT_MUST(setxattr(P("dir/file"), "user.k", "v", 1, 0));
}

static void it_verify(void)
{
	struct timespec ts[2] = { { 1, 0 }, { 1, 0 } };
	struct statvfs v;
	char buf[64];
	DIR *d;
	int fd, n = 0;

	/* reads */
	it_check_file(P("dir/file"), 3 * MiB + 7, 160);
	it_check_file(P("link"), 3 * MiB + 7, 160);
	EXPECT_EQ(readlink(P("link"), buf, sizeof(buf)), 8);
	EXPECT_EQ(getxattr(P("dir/file"), "user.k", buf, sizeof(buf)), 1);
	EXPECT(listxattr(P("dir/file"), buf, sizeof(buf)) > 0, "listxattr works");
	EXPECT_OK(statvfs(it_mnt, &v));
	EXPECT(v.f_flag & ST_RDONLY, "statvfs says read-only");
	d = opendir(P("dir"));
	EXPECT(d != NULL, "opendir on a read-only mount");
	if (d) {
		while (readdir(d))
			n++;
		closedir(d);
	}
	EXPECT_EQ(n, 3);
	IT_MUST(fd = open(P("dir/file"), O_RDONLY));
	{
		uint8_t *m = mmap(NULL, MiB, PROT_READ, MAP_SHARED, fd, 0);

		EXPECT(m != MAP_FAILED && it_mismatch(m, MiB, 160, 0) < 0, "read-only mapping works");
		if (m != MAP_FAILED)
			munmap(m, MiB);
		EXPECT(mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED &&
		       errno == EACCES, "a writable shared mapping of a read-only fd is refused");
	}
	EXPECT_OK(fsync(fd)); /* nothing to write: fine */
	close(fd);
	/* every change: EROFS */
	EXPECT_ERR(open(P("dir/new"), O_CREAT | O_WRONLY, 0644), EROFS);
	EXPECT_ERR(open(P("dir/file"), O_WRONLY), EROFS);
	EXPECT_ERR(open(P("dir/file"), O_RDWR), EROFS);
	EXPECT_ERR(open(P("dir/file"), O_RDONLY | O_TRUNC), EROFS);
	EXPECT_ERR(mkdir(P("dir/sub"), 0755), EROFS);
	EXPECT_ERR(mknod(P("dir/fifo"), S_IFIFO | 0644, 0), EROFS);
	EXPECT_ERR(symlink("x", P("dir/l2")), EROFS);
	EXPECT_ERR(link(P("dir/file"), P("dir/hard")), EROFS);
	EXPECT_ERR(unlink(P("dir/file")), EROFS);
	EXPECT_ERR(rmdir(P("empty")), EROFS);
	EXPECT_ERR(rename(P("dir/file"), P("dir/moved")), EROFS);
	EXPECT_ERR(truncate(P("dir/file"), 0), EROFS);
	EXPECT_ERR(chmod(P("dir/file"), 0600), EROFS);
	EXPECT_ERR(chown(P("dir/file"), 1, 1), EROFS);
	EXPECT_ERR(utimensat(AT_FDCWD, P("dir/file"), ts, 0), EROFS);
	EXPECT_ERR(setxattr(P("dir/file"), "user.k2", "v", 1, 0), EROFS);
	EXPECT_ERR(removexattr(P("dir/file"), "user.k"), EROFS);
	EXPECT_ERR(access(P("dir/file"), W_OK), EROFS);
	/* and nothing changed */
	it_check_file(P("dir/file"), 3 * MiB + 7, 160);
	EXPECT_EQ(getxattr(P("dir/file"), "user.k", buf, sizeof(buf)), 1);
}
