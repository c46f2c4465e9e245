/* SPDX-License-Identifier: MIT */
/*
 * Proves: rename(2) and renameat2(2) with RENAME_NOREPLACE and
 * RENAME_EXCHANGE — replacing files and empty directories, refusing the
 * wrong kinds (EISDIR, ENOTDIR, ENOTEMPTY, EINVAL, EEXIST, ENOENT),
 * exchanging files, directories and a file with a directory across
 * directories with '..' and link counts kept right, renames within and
 * across directories of a 1,000-entry directory — and that the resulting
 * tree, and only it, is there after a remount.
 */
#include <dirent.h>
#include <linux/fs.h>
#include <sys/syscall.h>

#include "it.h"

static int rn2(const char *a, const char *b, unsigned flags)
{
	return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, flags);
}

static ino_t ino(const char *rel)
{
	struct stat st;

	if (lstat(P("%s", rel), &st) < 0)
		return 0;
	return st.st_ino;
}

static nlink_t links(const char *rel)
{
	struct stat st;

	if (lstat(P("%s", rel), &st) < 0)
		return 0;
	return st.st_nlink;
}

static void plain(void)
{
	ino_t i;

	IT_MUST(it_make_file(P("a"), 1000, 90));
	IT_MUST(it_make_file(P("b"), 2000, 91));
	i = ino("a");
	EXPECT_OK(rename(P("a"), P("b")));        /* replaces b */
	EXPECT_EQ(ino("b"), i);
	EXPECT_EQ(ino("a"), 0);
	it_check_file(P("b"), 1000, 90);
	EXPECT_OK(rename(P("b"), P("b")));        /* same name: nothing */
	it_check_file(P("b"), 1000, 90);
	EXPECT_OK(link(P("b"), P("b2")));
	EXPECT_OK(rename(P("b"), P("b2")));       /* two links of one inode: nothing happens */
	EXPECT(ino("b") == i && ino("b2") == i, "rename between hard links of one inode is a no-op");
	EXPECT_OK(unlink(P("b2")));

	IT_MUST(mkdir(P("d1"), 0755));
	IT_MUST(mkdir(P("d2"), 0755));
	IT_MUST(mkdir(P("d2/full"), 0755));
	IT_MUST(it_make_file(P("d2/full/x"), 1, 92));
	IT_MUST(mkdir(P("emptydir"), 0755));
	EXPECT_ERR(rename(P("b"), P("emptydir")), EISDIR);
	EXPECT_ERR(rename(P("emptydir"), P("b")), ENOTDIR);
	EXPECT_ERR(rename(P("emptydir"), P("d2/full")), ENOTEMPTY);
	EXPECT_ERR(rename(P("d1"), P("d1/inside")), EINVAL);
	EXPECT_ERR(rename(P("missing"), P("x")), ENOENT);
	/* a directory over an empty directory, across parents: '..' and nlink follow */
	EXPECT_OK(mkdir(P("d1/mover"), 0755));
	EXPECT_OK(it_make_file(P("d1/mover/content"), 500, 93));
	EXPECT_EQ(links("d1"), 3);
	EXPECT_OK(mkdir(P("d2/target"), 0755));
	EXPECT_EQ(links("d2"), 4);
	EXPECT_OK(rename(P("d1/mover"), P("d2/target")));
	EXPECT_EQ(links("d1"), 2);
	EXPECT_EQ(links("d2"), 4);
	EXPECT_EQ(ino("d2/target/.."), ino("d2"));
	it_check_file(P("d2/target/content"), 500, 93);
	/* a directory to a new name in another directory */
	EXPECT_OK(rename(P("d2/target"), P("d1/moved")));
	EXPECT_EQ(links("d1"), 3);
	EXPECT_EQ(links("d2"), 3);
	EXPECT_EQ(ino("d1/moved/.."), ino("d1"));
}

static void noreplace(void)
{
	IT_MUST(it_make_file(P("n1"), 10, 94));
	IT_MUST(it_make_file(P("n2"), 20, 95));
	EXPECT_ERR(rn2(P("n1"), P("n2"), RENAME_NOREPLACE), EEXIST);
	it_check_file(P("n1"), 10, 94);
	it_check_file(P("n2"), 20, 95);
	EXPECT_ERR(rn2(P("n1"), P("emptydir"), RENAME_NOREPLACE), EEXIST);
	EXPECT_OK(rn2(P("n1"), P("n3"), RENAME_NOREPLACE));
	EXPECT_EQ(ino("n1"), 0);
	it_check_file(P("n3"), 10, 94);
	EXPECT_OK(rn2(P("n3"), P("d1/n3"), RENAME_NOREPLACE));
	EXPECT_ERR(rn2(P("missing"), P("n9"), RENAME_NOREPLACE), ENOENT);
	EXPECT_ERR(rn2(P("n2"), P("n4"), RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
}

static void exchange(void)
{
	ino_t x, y;

	/* two files */
	IT_MUST(it_make_file(P("x1"), 111, 96));
	IT_MUST(it_make_file(P("d2/y1"), 222, 97));
	x = ino("x1");
	y = ino("d2/y1");
	EXPECT_OK(rn2(P("x1"), P("d2/y1"), RENAME_EXCHANGE));
	EXPECT(ino("x1") == y && ino("d2/y1") == x, "files exchanged");
	it_check_file(P("x1"), 222, 97);
	it_check_file(P("d2/y1"), 111, 96);
	/* a file and a directory, across directories */
	IT_MUST(mkdir(P("xd"), 0755));
	IT_MUST(it_make_file(P("xd/inner"), 33, 98));
	EXPECT_EQ(links("d2"), 3);
	EXPECT_OK(rn2(P("xd"), P("d2/y1"), RENAME_EXCHANGE));
	EXPECT(S_ISDIR(0040000) && links("d2") == 4, "d2 gained the directory's '..' link (%u)",
	       (unsigned)links("d2"));
	EXPECT_EQ(ino("d2/y1/.."), ino("d2"));
	it_check_file(P("d2/y1/inner"), 33, 98);
	it_check_file(P("xd"), 111, 96);
	/* two directories in different parents */
	IT_MUST(mkdir(P("d1/e1"), 0755));
	IT_MUST(it_make_file(P("d1/e1/f"), 44, 99));
	EXPECT_OK(rn2(P("d1/e1"), P("d2/y1"), RENAME_EXCHANGE));
	EXPECT_EQ(ino("d1/e1/.."), ino("d1"));
	EXPECT_EQ(ino("d2/y1/.."), ino("d2"));
	it_check_file(P("d1/e1/inner"), 33, 98);
	it_check_file(P("d2/y1/f"), 44, 99);
	/* errors */
	EXPECT_ERR(rn2(P("xd"), P("nothing"), RENAME_EXCHANGE), ENOENT);
	EXPECT_ERR(rn2(P("nothing"), P("xd"), RENAME_EXCHANGE), ENOENT);
	EXPECT_ERR(rn2(P("d1"), P("d1/e1"), RENAME_EXCHANGE), EINVAL);
	EXPECT_ERR(rn2(P("d1/e1"), P("d1"), RENAME_EXCHANGE), EINVAL);
	/* exchange with itself */
	EXPECT_OK(rn2(P("xd"), P("xd"), RENAME_EXCHANGE));
	it_check_file(P("xd"), 111, 96);
}

/* Renames inside and out of a directory of 1000 entries: every name is
 * found afterwards exactly where it should be.  Every file with data takes
 * at least one whole stripe, so only one in ten has any. */
static size_t fsize(int i)
{
	return i % 10 == 3 || i % 10 == 4 ? (size_t)i * 10 + 1 : 0;
}

static void many(void)
{
	IT_MUST(mkdir(P("seq"), 0755));
	IT_MUST(mkdir(P("seq2"), 0755));
	for (int i = 0; i < 1000; i++)
		IT_MUST(it_make_file(P("seq/frame%05d", i), fsize(i), 1000 + (uint64_t)i));
	for (int i = 0; i < 1000; i += 2)
		EXPECT_OK(rename(P("seq/frame%05d", i), P("seq/renamed%05d", i)));
	for (int i = 1; i < 1000; i += 4)
		EXPECT_OK(rename(P("seq/frame%05d", i), P("seq2/frame%05d", i)));
	for (int i = 3; i < 1000; i += 8)
		EXPECT_OK(rename(P("seq/frame%05d", i), P("seq/renamed%05d", i - 3)));
}

static void check_many(void)
{
	DIR *d;
	struct dirent *de;
	int n = 0;

	for (int i = 0; i < 1000; i++) {
		struct stat st;

		if (i % 8 == 0) /* replaced by frame i+3 */
			it_check_file(P("seq/renamed%05d", i), fsize(i + 3), 1000 + (uint64_t)i + 3);
		else if (i % 2 == 0)
			it_check_file(P("seq/renamed%05d", i), fsize(i), 1000 + (uint64_t)i);
		else if (i % 4 == 1)
			it_check_file(P("seq2/frame%05d", i), fsize(i), 1000 + (uint64_t)i);
		else if (i % 8 == 3)
			EXPECT_ERR(stat(P("seq/frame%05d", i), &st), ENOENT);
		else
			it_check_file(P("seq/frame%05d", i), fsize(i), 1000 + (uint64_t)i);
	}
	d = opendir(P("seq"));
	IT_MUST(d ? 0 : -1);
	while ((de = readdir(d)))
		n++;
	closedir(d);
	EXPECT_EQ(n, 2 + 500 + 125);
}

static void it_run(void)
{
	plain();
	noreplace();
	exchange();
	many();
	check_many();
}

static void it_verify(void)
{
	it_check_file(P("b"), 1000, 90);
	it_check_file(P("n2"), 20, 95);
	it_check_file(P("d1/n3"), 10, 94);
	it_check_file(P("d1/moved/content"), 500, 93);
	it_check_file(P("x1"), 222, 97);
	it_check_file(P("xd"), 111, 96);
	it_check_file(P("d1/e1/inner"), 33, 98);
	it_check_file(P("d2/y1/f"), 44, 99);
	EXPECT_EQ(ino("d1/e1/.."), ino("d1"));
	EXPECT_EQ(ino("d2/y1/.."), ino("d2"));
	EXPECT_EQ(ino("d1/moved/.."), ino("d1"));
	EXPECT_EQ(links("d1"), 4); /* ., moved, e1 */
	EXPECT_EQ(links("d2"), 4); /* ., full, y1 */
	EXPECT_EQ(ino("a"), 0);
	EXPECT_EQ(ino("n1"), 0);
	check_many();
	/* the exchanged directories can be emptied and removed */
	EXPECT_OK(unlink(P("d1/e1/inner")));
	EXPECT_OK(rmdir(P("d1/e1")));
	EXPECT_EQ(links("d1"), 3);
}
