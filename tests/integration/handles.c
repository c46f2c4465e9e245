/* SPDX-License-Identifier: MIT */
/*
 * Proves: file handles (name_to_handle_at / open_by_handle_at, what an NFS
 * server hands its clients) name one file for as long as it exists and no
 * other file after it is gone:
 *   - a handle opens its file, by handle, with the file's bytes;
 *   - after the file is unlinked and a new file reuses its inode number,
 *     the old handle answers ESTALE (the daemon gives every inode a
 *     generation that grows each time its number is reused);
 *   - after an unmount and a mount, the handles of a file and of a
 *     directory still open them (the kernel looks the inode up by number
 *     with the name "."), the stale handle still answers ESTALE, and inode
 *     numbers are the same as before.
 * open_by_handle_at needs CAP_DAC_READ_SEARCH: the suite runs as root.
 */
#include <sys/statvfs.h>

#include "it.h"

#define HMAX 128

struct saved {
	struct { unsigned int bytes; int type; unsigned char f[HMAX]; } file, dir, stale;
	ino_t file_ino, dir_ino;
};

static struct file_handle *handle_of(const char *path, void *space)
{
	struct file_handle *h = space;
	int mount_id;

	h->handle_bytes = HMAX;
	IT_MUST(name_to_handle_at(AT_FDCWD, path, h, &mount_id, 0));
	return h;
}

static void save(void *dst, const struct file_handle *h)
{
	memcpy(dst, h, sizeof(*h) + h->handle_bytes);
}

static int by_handle(void *saved, int flags)
{
	int mfd = open(it_mnt, O_RDONLY | O_DIRECTORY);
	int fd;

	IT_MUST(mfd);
	fd = open_by_handle_at(mfd, saved, flags);
	close(mfd);
	return fd;
}

/* The file opened by handle holds the pattern of seed (len bytes). */
static void expect_bytes(void *saved, size_t len, uint64_t seed)
{
	char buf[8192];
	int fd = by_handle(saved, O_RDONLY);

	EXPECT(fd >= 0, "open_by_handle_at: %s", strerror(errno));
	if (fd < 0)
		return;
	EXPECT_EQ(it_read_all(fd, buf, sizeof(buf), 0), (ssize_t)len);
	EXPECT(it_mismatch(buf, len, seed, 0) < 0, "the handle opened a file with other bytes");
	close(fd);
}

static void expect_stale(void *saved)
{
	int fd = by_handle(saved, O_RDONLY);

	EXPECT(fd < 0 && errno == ESTALE, "the handle of a deleted file: expected ESTALE, got %s",
	       fd < 0 ? strerrorname_np(errno) : "a file");
	if (fd >= 0)
		close(fd);
}

static void it_run(void)
{
	unsigned char hs[sizeof(struct file_handle) + HMAX];
	struct saved s = { 0 };
	struct statvfs before, v;
	struct stat a, b;
	int fd;

	IT_MUST(mkdir(P("dir"), 0755));
	IT_MUST(it_make_file(P("dir/keep"), 5000, 3));
	IT_MUST(statvfs(it_mnt, &before));
	IT_MUST(it_make_file(P("dir/a"), 4000, 1));
	IT_MUST(stat(P("dir/a"), &a));
	save(&s.stale, handle_of(P("dir/a"), hs));
	expect_bytes(&s.stale, 4000, 1);

	/* The daemon frees a's inode when the kernel forgets it, after unlink
	 * returned: wait (bounded) until the free count says it is free, so
	 * that the next create takes the lowest free number, a's. */
	IT_MUST(unlink(P("dir/a")));
	IT_MUST(it_statvfs_freed(&v, before.f_bfree, before.f_ffree));
	EXPECT_EQ(v.f_ffree, before.f_ffree);
	IT_MUST(it_make_file(P("dir/b"), 6000, 2));
	IT_MUST(stat(P("dir/b"), &b));
	EXPECT_EQ(b.st_ino, a.st_ino); /* the number is reused: the case that matters */
	expect_stale(&s.stale);
	save(&s.file, handle_of(P("dir/b"), hs));
	expect_bytes(&s.file, 6000, 2);
	save(&s.dir, handle_of(P("dir"), hs));
	s.file_ino = b.st_ino;
	IT_MUST(stat(P("dir"), &b));
	s.dir_ino = b.st_ino;

	fd = open(P("handles"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	IT_MUST(fd);
	IT_MUST(it_write_all(fd, &s, sizeof(s), 0));
	IT_MUST(close(fd));
}

static void it_verify(void)
{
	struct saved s;
	struct stat st;
	int fd = open(P("handles"), O_RDONLY), dfd, kfd;

	IT_MUST(fd);
	IT_MUST(it_read_all(fd, &s, sizeof(s), 0) == (ssize_t)sizeof(s) ? 0 : -1);
	close(fd);
	IT_MUST(stat(P("dir/b"), &st));
	EXPECT_EQ(st.st_ino, s.file_ino);
	IT_MUST(stat(P("dir"), &st));
	EXPECT_EQ(st.st_ino, s.dir_ino);

	/* A fresh mount: the kernel has none of these inodes and asks the
	 * daemon by number.  The lookups above brought some back into its
	 * cache; drop them so that the handles go to the daemon. */
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	IT_MUST(fd);
	IT_MUST(write(fd, "2", 1));
	close(fd);
	expect_bytes(&s.file, 6000, 2);
	expect_stale(&s.stale);
	dfd = by_handle(&s.dir, O_RDONLY | O_DIRECTORY);
	EXPECT(dfd >= 0, "open_by_handle_at(directory): %s", strerror(errno));
	if (dfd >= 0) {
		kfd = openat(dfd, "keep", O_RDONLY);
		EXPECT(kfd >= 0, "openat(dir by handle, keep): %s", strerror(errno));
		if (kfd >= 0)
			close(kfd);
		close(dfd);
	}
	it_check_file(P("dir/keep"), 5000, 3);
}
