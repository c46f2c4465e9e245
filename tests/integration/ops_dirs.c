/* SPDX-License-Identifier: MIT */
/*
 * Proves: directory operations — mkdir/rmdir with link counts, '.' and
 * '..', readdir (getdents) and readdirplus listing every entry exactly once
 * with the right d_type and inode, listings that resume across many
 * getdents calls and after telldir/seekdir, opendir/releasedir, fsyncdir —
 * and that the tree is identical after a remount.
 */
#include <dirent.h>
#include <sys/syscall.h>

#include "it.h"

#define NFILES 2000

struct seen {
	unsigned char *hit;
	unsigned n, dups, bad_type;
};

/* Count the entries of a directory with raw getdents64 in small buffers
 * (many round trips: the resume offsets are exercised). */
static int list_raw(const char *path, size_t bufsize, struct seen *s, unsigned *dots)
{
	char *buf = malloc(bufsize);
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	long n;

	if (fd < 0 || !buf)
		return -1;
	*dots = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, bufsize)) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			unsigned idx;

			off += de->d_reclen;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) {
				(*dots)++;
				continue;
			}
			s->n++;
			if (sscanf(de->d_name, "f%u", &idx) == 1 && idx < NFILES) {
				if (s->hit[idx]++)
					s->dups++;
				if (de->d_type != DT_REG)
					s->bad_type++;
			} else if (sscanf(de->d_name, "sub%u", &idx) == 1) {
				if (de->d_type != DT_DIR)
					s->bad_type++;
			}
		}
	}
	close(fd);
	free(buf);
	return n < 0 ? -1 : 0;
}

static void check_listing(const char *what, size_t bufsize)
{
	struct seen s = { calloc(NFILES, 1), 0, 0, 0 };
	unsigned dots = 0, missing = 0;

	EXPECT_OK(list_raw(P("big"), bufsize, &s, &dots));
	for (unsigned i = 0; i < NFILES; i++)
		missing += !s.hit[i];
	EXPECT(dots == 2, "%s: '.' and '..' listed once each (%u)", what, dots);
	EXPECT(s.n == NFILES + 5, "%s: %u entries listed, expected %u", what, s.n, NFILES + 5);
	EXPECT(s.dups == 0, "%s: %u duplicate entries", what, s.dups);
	EXPECT(missing == 0, "%s: %u entries missing", what, missing);
	EXPECT(s.bad_type == 0, "%s: %u entries with a wrong d_type", what, s.bad_type);
	free(s.hit);
}

static void make_tree(void)
{
	struct stat st, st2;

	EXPECT_OK(mkdir(P("big"), 0755));
	for (unsigned i = 0; i < NFILES; i++)
		IT_MUST(mknod(P("big/f%u", i), S_IFREG | 0644, 0));
	for (unsigned i = 0; i < 5; i++)
		EXPECT_OK(mkdir(P("big/sub%u", i), 0700));
	EXPECT_OK(stat(P("big"), &st));
	EXPECT_EQ(st.st_nlink, 2 + 5);
	EXPECT_OK(stat(P("big/sub3"), &st));
	EXPECT_EQ(st.st_mode, S_IFDIR | 0700);
	EXPECT_EQ(st.st_nlink, 2);
	/* '..' of a subdirectory is its parent */
	EXPECT_OK(stat(P("big/sub3/.."), &st2));
	EXPECT_OK(stat(P("big"), &st));
	EXPECT_EQ(st2.st_ino, st.st_ino);
	EXPECT_OK(stat(P("big/sub3/."), &st2));
	EXPECT_OK(stat(P("big/sub3"), &st));
	EXPECT_EQ(st2.st_ino, st.st_ino);
	/* a deep chain */
	{
		char rel[2048] = "deep";

		EXPECT_OK(mkdir(P("%s", rel), 0755));
		for (int i = 0; i < 40; i++) {
			strcat(rel, "/d");
			EXPECT_OK(mkdir(P("%s", rel), 0755));
		}
		strcat(rel, "/leaf");
		EXPECT_OK(it_make_file(P("%s", rel), 4321, 60));
	}
	/* rmdir removes a link from the parent */
	EXPECT_OK(mkdir(P("big/gone"), 0755));
	EXPECT_OK(stat(P("big"), &st));
	EXPECT_EQ(st.st_nlink, 2 + 6);
	EXPECT_OK(rmdir(P("big/gone")));
	EXPECT_OK(stat(P("big"), &st));
	EXPECT_EQ(st.st_nlink, 2 + 5);
	EXPECT_ERR(stat(P("big/gone"), &st), ENOENT);
}

/* readdir through libc, with telldir/seekdir back to a middle position:
 * the same entries come again, in the same order. */
static void seek_resume(void)
{
	DIR *d = opendir(P("big"));
	struct dirent *de;
	char names[20][256];
	long pos = -1;
	int i = 0, k = 0;

	IT_MUST(d ? 0 : -1);
	while ((de = readdir(d)) && i < 1000) {
		if (i == 500)
			pos = telldir(d);
		if (i > 500 && k < 20)
			snprintf(names[k++], sizeof(names[0]), "%s", de->d_name);
		i++;
	}
	EXPECT(pos >= 0 && k == 20, "read past the middle");
	seekdir(d, pos);
	for (int j = 0; j < k; j++) {
		de = readdir(d);
		EXPECT(de && strcmp(de->d_name, names[j]) == 0, "entry %d after seekdir: %s, expected %s",
		       j, de ? de->d_name : "(end)", names[j]);
	}
	rewinddir(d);
	i = 0;
	while ((de = readdir(d)))
		i++;
	EXPECT_EQ(i, NFILES + 5 + 2);
	EXPECT_OK(closedir(d));
}

/* readdirplus: the stat attributes the kernel gets with the listing are right. */
static void listing_stats(void)
{
	DIR *d = opendir(P("big"));
	struct dirent *de;
	unsigned checked = 0;

	IT_MUST(d ? 0 : -1);
	IT_MUST(it_make_file(P("big/f7"), 777, 61)); /* a file with a size */
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			IT_FAIL("stat %s: %s", de->d_name, strerror(errno));
			continue;
		}
		checked++;
		EXPECT(st.st_ino == de->d_ino, "%s: readdir ino %llu, stat ino %llu", de->d_name,
		       (unsigned long long)de->d_ino, (unsigned long long)st.st_ino);
		if (!strcmp(de->d_name, "f7"))
			EXPECT_EQ(st.st_size, 777);
		else if (de->d_name[0] == 'f')
			EXPECT(st.st_size == 0 && S_ISREG(st.st_mode), "%s is an empty file", de->d_name);
	}
	closedir(d);
	EXPECT_EQ(checked, NFILES + 5);
}

static void fsyncdir_empty(void)
{
	int fd;
	DIR *d;
	struct dirent *de;
	int n = 0;

	EXPECT_OK(mkdir(P("empty"), 0755));
	IT_MUST(fd = open(P("empty"), O_RDONLY | O_DIRECTORY));
	EXPECT_OK(fsync(fd));
	EXPECT_OK(fdatasync(fd));
	close(fd);
	d = opendir(P("empty"));
	IT_MUST(d ? 0 : -1);
	while ((de = readdir(d)))
		n++;
	closedir(d);
	EXPECT_EQ(n, 2);
}

static void it_run(void)
{
	make_tree();
	check_listing("getdents 1 KiB", 1024);
	check_listing("getdents 32 KiB", 32768);
	seek_resume();
	listing_stats();
	fsyncdir_empty();
}

static void it_verify(void)
{
	struct stat st;
	char rel[2048] = "deep";

	check_listing("after remount", 4096);
	EXPECT_OK(stat(P("big"), &st));
	EXPECT_EQ(st.st_nlink, 2 + 5);
	EXPECT_OK(stat(P("big/sub2"), &st));
	EXPECT_EQ(st.st_mode, S_IFDIR | 0700);
	it_check_file(P("big/f7"), 777, 61);
	for (int i = 0; i < 40; i++)
		strcat(rel, "/d");
	strcat(rel, "/leaf");
	it_check_file(P("%s", rel), 4321, 60);
	/* take the tree down: every directory empties and goes */
	for (unsigned i = 0; i < NFILES; i++)
		EXPECT_OK(unlink(P("big/f%u", i)));
	for (unsigned i = 0; i < 5; i++)
		EXPECT_OK(rmdir(P("big/sub%u", i)));
	EXPECT_OK(rmdir(P("big")));
	EXPECT_OK(rmdir(P("empty")));
	EXPECT_OK(stat(it_mnt, &st));
	EXPECT_EQ(st.st_nlink, 3); /* ., .., deep */
}
