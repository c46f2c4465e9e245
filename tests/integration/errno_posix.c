/* SPDX-License-Identifier: MIT */
/*
 * Proves: every failing operation returns the POSIX error a user expects
 * (ENOENT, EEXIST, ENOTEMPTY, ENOTDIR, EISDIR, ENAMETOOLONG, EINVAL, ELOOP),
 * and a refused operation changes nothing (checked again after a remount).
 */
#include <dirent.h>
#include <sys/xattr.h>

#include "it.h"

static char long_name[300];

static void names(void)
{
	memset(long_name, 'n', sizeof(long_name) - 1);
	long_name[255] = '\0'; /* NAME_MAX bytes: allowed */
}

static void setup(void)
{
	IT_MUST(mkdir(P("d"), 0755));
	IT_MUST(mkdir(P("d/sub"), 0755));
	IT_MUST(it_make_file(P("d/sub/f"), 100, 1));
	IT_MUST(it_make_file(P("file"), 1000, 2));
	IT_MUST(mkdir(P("empty"), 0755));
	IT_MUST(symlink("file", P("link")));
	IT_MUST(symlink("loop2", P("loop1")));
	IT_MUST(symlink("loop1", P("loop2")));
}

static void enoent(void)
{
	struct stat st;
	char buf[64];

	EXPECT_ERR(stat(P("missing"), &st), ENOENT);
	EXPECT_ERR(open(P("missing"), O_RDONLY), ENOENT);
	EXPECT_ERR(open(P("nodir/x"), O_CREAT | O_WRONLY, 0644), ENOENT);
	EXPECT_ERR(unlink(P("missing")), ENOENT);
	EXPECT_ERR(rmdir(P("missing")), ENOENT);
	EXPECT_ERR(rename(P("missing"), P("other")), ENOENT);
	EXPECT_ERR(link(P("missing"), P("other")), ENOENT);
	EXPECT_ERR(readlink(P("missing"), buf, sizeof(buf)), ENOENT);
	EXPECT_ERR(mkdir(P("nodir/sub"), 0755), ENOENT);
	EXPECT_ERR(chmod(P("missing"), 0600), ENOENT);
	EXPECT_ERR(truncate(P("missing"), 0), ENOENT);
	EXPECT_ERR(getxattr(P("missing"), "user.x", buf, sizeof(buf)), ENOENT);
	EXPECT_ERR(opendir(P("missing")) ? 0 : -1, ENOENT);
	EXPECT_ERR(symlink("x", P("nodir/l")), ENOENT);
	EXPECT_ERR(mknod(P("nodir/fifo"), S_IFIFO | 0644, 0), ENOENT);
	/* a dangling symlink */
	IT_MUST(symlink("nowhere", P("dangling")));
	EXPECT_ERR(open(P("dangling"), O_RDONLY), ENOENT);
	EXPECT_OK(lstat(P("dangling"), &st));
	/* a file that was there and is not any more */
	IT_MUST(it_make_file(P("gone"), 10, 3));
	EXPECT_OK(unlink(P("gone")));
	EXPECT_ERR(stat(P("gone"), &st), ENOENT);
	EXPECT_ERR(unlink(P("gone")), ENOENT);
	/* creating in a directory that was removed while we held it */
	{
		int dfd;

		IT_MUST(mkdir(P("doomed"), 0755));
		IT_MUST(dfd = open(P("doomed"), O_RDONLY | O_DIRECTORY));
		EXPECT_OK(rmdir(P("doomed")));
		EXPECT_ERR(openat(dfd, "x", O_CREAT | O_WRONLY, 0644), ENOENT);
		EXPECT_ERR(mkdirat(dfd, "y", 0755), ENOENT);
		close(dfd);
	}
}

static void eexist(void)
{
	EXPECT_ERR(mkdir(P("d"), 0755), EEXIST);
	EXPECT_ERR(mkdir(P("file"), 0755), EEXIST);
	EXPECT_ERR(open(P("file"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	EXPECT_ERR(open(P("d"), O_CREAT | O_EXCL | O_WRONLY, 0644), EEXIST);
	EXPECT_ERR(link(P("file"), P("d/sub/f")), EEXIST);
	EXPECT_ERR(symlink("x", P("file")), EEXIST);
	EXPECT_ERR(mknod(P("file"), S_IFIFO | 0644, 0), EEXIST);
	EXPECT_ERR(mkdir(P("link"), 0755), EEXIST);
	EXPECT_ERR(mkdir(P("dangling"), 0755), EEXIST);
	/* the refused calls left the file as it was */
	it_check_file(P("file"), 1000, 2);
}

static void enotempty(void)
{
	EXPECT_ERR(rmdir(P("d")), ENOTEMPTY);
	EXPECT_ERR(rmdir(P("d/sub")), ENOTEMPTY);
	EXPECT_ERR(rename(P("empty"), P("d")), ENOTEMPTY);
	/* emptied, it goes */
	IT_MUST(mkdir(P("e2"), 0755));
	IT_MUST(it_make_file(P("e2/x"), 1, 4));
	EXPECT_ERR(rmdir(P("e2")), ENOTEMPTY);
	EXPECT_OK(unlink(P("e2/x")));
	EXPECT_OK(rmdir(P("e2")));
	/* a directory that had many entries, all removed, is empty again */
	IT_MUST(mkdir(P("e3"), 0755));
	for (int i = 0; i < 300; i++)
		IT_MUST(mknod(P("e3/entry-%d", i), S_IFREG | 0644, 0));
	EXPECT_ERR(rmdir(P("e3")), ENOTEMPTY);
	for (int i = 0; i < 300; i++)
		EXPECT_OK(unlink(P("e3/entry-%d", i)));
	EXPECT_OK(rmdir(P("e3")));
}

static void enotdir(void)
{
	struct stat st;

	EXPECT_ERR(open(P("file/x"), O_RDONLY), ENOTDIR);
	EXPECT_ERR(open(P("file/x"), O_CREAT | O_WRONLY, 0644), ENOTDIR);
	EXPECT_ERR(mkdir(P("file/x"), 0755), ENOTDIR);
	EXPECT_ERR(stat(P("file/"), &st), ENOTDIR);
	EXPECT_ERR(rmdir(P("file")), ENOTDIR);
	EXPECT_ERR(rmdir(P("link")), ENOTDIR);
	EXPECT_ERR(open(P("file"), O_RDONLY | O_DIRECTORY), ENOTDIR);
	EXPECT_ERR(opendir(P("file")) ? 0 : -1, ENOTDIR);
	EXPECT_ERR(rename(P("empty"), P("file")), ENOTDIR);
	EXPECT_ERR(rename(P("file"), P("empty/")), ENOTDIR);
}

static void eisdir(void)
{
	char buf[16];
	int fd;

	EXPECT_ERR(open(P("d"), O_WRONLY), EISDIR);
	EXPECT_ERR(open(P("d"), O_RDWR), EISDIR);
	EXPECT_ERR(unlink(P("d")), EISDIR);
	EXPECT_ERR(unlink(P("empty")), EISDIR);
	EXPECT_ERR(rename(P("file"), P("empty")), EISDIR);
	EXPECT_ERR(truncate(P("d"), 0), EISDIR);
	IT_MUST(fd = open(P("d"), O_RDONLY));
	EXPECT_ERR(read(fd, buf, sizeof(buf)), EISDIR);
	close(fd);
}

static void enametoolong(void)
{
	char name[1200], rel[1300];
	struct stat st;
	int fd;

	/* 255 bytes is a legal name: create, find, list, rename */
	EXPECT_OK(fd = open(P("%s", long_name), O_CREAT | O_WRONLY, 0644));
	if (fd >= 0)
		close(fd);
	EXPECT_OK(stat(P("%s", long_name), &st));
	snprintf(rel, sizeof(rel), "d/%s", long_name);
	EXPECT_OK(mkdir(P("%s", rel), 0755));
	/* 256 bytes, and far beyond (the kernel's own limit is 1024 for FUSE) */
	for (int len = 256; len <= 1100; len += 844) {
		memset(name, 'x', (size_t)len);
		name[len] = '\0';
		EXPECT_ERR(open(P("%s", name), O_CREAT | O_WRONLY, 0644), ENAMETOOLONG);
		EXPECT_ERR(mkdir(P("%s", name), 0755), ENAMETOOLONG);
		EXPECT_ERR(stat(P("%s", name), &st), ENAMETOOLONG);
		EXPECT_ERR(symlink("file", P("%s", name)), ENAMETOOLONG);
		EXPECT_ERR(link(P("file"), P("%s", name)), ENAMETOOLONG);
		EXPECT_ERR(rename(P("file"), P("%s", name)), ENAMETOOLONG);
		EXPECT_ERR(mknod(P("%s", name), S_IFIFO | 0644, 0), ENAMETOOLONG);
		EXPECT_ERR(unlink(P("%s", name)), ENAMETOOLONG);
	}
	/* nothing of the refused names was made */
	{
		DIR *dir = opendir(it_mnt);
		struct dirent *de;
		int longest = 0;

		IT_MUST(dir ? 0 : -1);
		while ((de = readdir(dir)))
			if ((int)strlen(de->d_name) > longest)
				longest = (int)strlen(de->d_name);
		closedir(dir);
		EXPECT_EQ(longest, 255);
	}
}

static void einval_eloop(void)
{
	EXPECT_ERR(rename(P("d"), P("d/sub/inside")), EINVAL);
	EXPECT_ERR(rename(P("d"), P("d/sub")), EINVAL);
	EXPECT_ERR(rmdir(P("d/.")), EINVAL);
	EXPECT_ERR(open(P("loop1"), O_RDONLY), ELOOP);
	EXPECT_ERR(open(P("link"), O_RDONLY | O_NOFOLLOW), ELOOP);
	EXPECT_ERR(symlink("", P("emptytarget")), ENOENT);
}

static void it_run(void)
{
	names();
	setup();
	enoent();
	eexist();
	enotempty();
	enotdir();
	eisdir();
	enametoolong();
	einval_eloop();
}

static void it_verify(void)
{
	struct stat st;

	names();
	/* what the refused operations were aimed at is intact */
	it_check_file(P("file"), 1000, 2);
	it_check_file(P("d/sub/f"), 100, 1);
	EXPECT_OK(stat(P("%s", long_name), &st));
	EXPECT_OK(stat(P("d/%s", long_name), &st));
	EXPECT(S_ISDIR(st.st_mode), "d/<255 bytes> is a directory");
	EXPECT_ERR(stat(P("d/sub/inside"), &st), ENOENT);
	EXPECT_ERR(stat(P("e2"), &st), ENOENT);
	EXPECT_ERR(stat(P("e3"), &st), ENOENT);
	EXPECT_ERR(stat(P("doomed"), &st), ENOENT);
	EXPECT_ERR(rmdir(P("d")), ENOTEMPTY);
	EXPECT_OK(rmdir(P("empty")));
}
