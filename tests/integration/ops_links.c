/* SPDX-License-Identifier: MIT */
/*
 * Proves: hard links (link counts, one inode under two names, data shared),
 * symlinks (short targets kept in the inode, long ones up to PATH_MAX - 1 =
 * 4095 bytes in their own block, the last 31 inline; readlink exact), and unlink of an open file: the data
 * stays readable and writable through the descriptor until the last close,
 * then its space comes back — also after a remount.
 */
#include <sys/statvfs.h>

#include "it.h"

#define MiB (1024 * 1024)

static char target_long[4001], target_max[4097], target_4095[4096], target_4065[4066];

static void targets(void)
{
	for (int i = 0; i < 4000; i++)
		target_long[i] = (char)('a' + i % 26);
	target_long[4000] = '\0';
	for (int i = 0; i < 4096; i++)
		target_max[i] = (char)('A' + i % 26);
	target_max[4096] = '\0';
	memcpy(target_4095, target_max, 4095); /* PATH_MAX - 1: the longest target there is */
	target_4095[4094] = 'Z';
	target_4095[4095] = '\0';
	memcpy(target_4065, target_max, 4065); /* the block's 4064 bytes and one inline */
	target_4065[4064] = 'Y';
	target_4065[4065] = '\0';
}

static void check_link(const char *rel, const char *target)
{
	char buf[8192];
	ssize_t n = readlink(P("%s", rel), buf, sizeof(buf));

	EXPECT(n == (ssize_t)strlen(target), "readlink %s: %zd bytes, expected %zu", rel, n,
	       strlen(target));
	EXPECT(n >= 0 && memcmp(buf, target, (size_t)n) == 0, "readlink %s: target text", rel);
}

static void hard_links(void)
{
	struct stat a, b;
	int fd;

	IT_MUST(it_make_file(P("orig"), 2 * MiB + 5, 70));
	EXPECT_OK(link(P("orig"), P("second")));
	EXPECT_OK(mkdir(P("dir"), 0755));
	EXPECT_OK(link(P("orig"), P("dir/third")));
	EXPECT_OK(stat(P("orig"), &a));
	EXPECT_OK(stat(P("dir/third"), &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_nlink, 3);
	/* a write through one name is read through the other */
	IT_MUST(fd = open(P("second"), O_WRONLY));
	{
		char buf[1000];

		it_fill(buf, sizeof(buf), 70, 4096);
		memset(buf, 0x5a, 10);
		EXPECT_EQ(pwrite(fd, buf, 10, 4096), 10);
	}
	close(fd);
	{
		char buf[10];

		IT_MUST(fd = open(P("dir/third"), O_RDONLY));
		EXPECT_EQ(pread(fd, buf, 10, 4096), 10);
		EXPECT(buf[0] == 0x5a && buf[9] == 0x5a, "write through one link seen through another");
		close(fd);
	}
	EXPECT_OK(unlink(P("orig")));
	EXPECT_OK(stat(P("second"), &a));
	EXPECT_EQ(a.st_nlink, 2);
	/* a directory cannot be hard-linked */
	EXPECT_ERR(link(P("dir"), P("dirlink")), EPERM);
	/* linking keeps the content */
	EXPECT_OK(link(P("second"), P("fourth")));
	EXPECT_OK(unlink(P("second")));
}

static void symlinks(void)
{
	struct stat st;

	EXPECT_OK(symlink("dir/third", P("short")));
	EXPECT_OK(symlink(target_long, P("long")));
	EXPECT_OK(symlink("x", P("one")));
	{
		/* exactly at the inline limit (144 bytes) and one past it */
		char t[146];

		memset(t, 'q', 145);
		t[144] = '\0';
		EXPECT_OK(symlink(t, P("inline144")));
		t[144] = 'r';
		t[145] = '\0';
		EXPECT_OK(symlink(t, P("block145")));
	}
	check_link("short", "dir/third");
	check_link("long", target_long);
	check_link("one", "x");
	EXPECT_OK(lstat(P("long"), &st));
	EXPECT(S_ISLNK(st.st_mode), "long is a symlink");
	EXPECT_EQ(st.st_size, 4000);
	EXPECT_OK(stat(P("short"), &st)); /* followed */
	EXPECT(S_ISREG(st.st_mode) && st.st_size == 2 * MiB + 5, "symlink followed to the file");
	/* PATH_MAX - 1 bytes, the kernel's limit for a target, is made and read back;
	 * one byte more never reaches the daemon (ENAMETOOLONG from the kernel) */
	EXPECT_OK(symlink(target_4095, P("max4095")));
	check_link("max4095", target_4095);
	EXPECT_OK(lstat(P("max4095"), &st));
	EXPECT_EQ(st.st_size, 4095);
	EXPECT_OK(symlink(target_4065, P("tail4065")));
	check_link("tail4065", target_4065);
	EXPECT_OK(symlink(target_4095, P("max-removed")));
	check_link("max-removed", target_4095);
	EXPECT_OK(unlink(P("max-removed")));
	EXPECT_ERR(lstat(P("max-removed"), &st), ENOENT);
	{
		int rc = symlink(target_max, P("toolong"));

		EXPECT(rc < 0 && errno == ENAMETOOLONG, "a 4096-byte target is refused with ENAMETOOLONG");
	}
	/* symlink removal frees its block; a hard link to a symlink is a symlink */
	EXPECT_OK(link(P("long"), P("long2")));
	check_link("long2", target_long);
	EXPECT_OK(unlink(P("long")));
	check_link("long2", target_long);
}

static void unlink_open(void)
{
	struct statvfs before, during, after;
	const size_t len = 30 * MiB;
	char buf[4096];
	int fd, fd2;

	sync();
	EXPECT_OK(statvfs(it_mnt, &before));
	IT_MUST(it_make_file(P("open-unlinked"), len, 71));
	IT_MUST(fd = open(P("open-unlinked"), O_RDWR));
	EXPECT_OK(unlink(P("open-unlinked")));
	EXPECT_ERR(open(P("open-unlinked"), O_RDONLY), ENOENT);
	sync();
	/* the data is still there and still writable */
	EXPECT_EQ(pread(fd, buf, sizeof(buf), 20 * MiB), sizeof(buf));
	EXPECT(it_mismatch(buf, sizeof(buf), 71, 20 * MiB) < 0, "unlinked file still readable");
	memset(buf, 0x33, sizeof(buf));
	EXPECT_EQ(pwrite(fd, buf, sizeof(buf), len), sizeof(buf));
	EXPECT_OK(fsync(fd));
	EXPECT_EQ(pread(fd, buf, sizeof(buf), len), sizeof(buf));
	EXPECT(buf[0] == 0x33 && buf[4095] == 0x33, "write to the unlinked file reads back");
	{
		struct stat st;

		EXPECT_OK(fstat(fd, &st));
		EXPECT_EQ(st.st_nlink, 0);
		EXPECT_EQ(st.st_size, len + 4096);
	}
	EXPECT_OK(statvfs(it_mnt, &during));
	EXPECT(before.f_bfree - during.f_bfree >= len / during.f_frsize, "space still in use while open");
	/* a second descriptor through /proc keeps it too */
	{
		char proc[64];

		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		IT_MUST(fd2 = open(proc, O_RDONLY));
	}
	close(fd);
	EXPECT_EQ(pread(fd2, buf, 100, 0), 100);
	EXPECT(it_mismatch(buf, 100, 71, 0) < 0, "still readable through the second descriptor");
	close(fd2);
	/* the last close frees it: its bytes at the RELEASE, its inode at the
	 * FORGET, both sent after close returned */
	EXPECT_OK(it_statvfs_freed(&after, before.f_bfree, before.f_ffree));
	EXPECT_EQ(after.f_bfree, before.f_bfree);
	EXPECT_EQ(after.f_ffree, before.f_ffree);
}

/* Open, unlink, and leave it open across the unmount: the daemon must still
 * free it (at unmount, or as an orphan at the next mount). */
static void unlink_kept_open(void)
{
	static int fd = -1;

	IT_MUST(it_make_file(P("orphan"), 9 * MiB, 72));
	IT_MUST(fd = open(P("orphan"), O_RDONLY));
	EXPECT_OK(unlink(P("orphan")));
	/* fd is deliberately not closed: the process exit closes it */
}

static void it_run(void)
{
	targets();
	hard_links();
	symlinks();
	unlink_open();
	unlink_kept_open();
	sync();
	{
		struct statvfs v;
		FILE *f = fopen(P("../free-before-orphan"), "w");

		/* record the free counts (with the orphan gone) for verify: outside the mount */
		IT_MUST(statvfs(it_mnt, &v));
		if (f) {
			fprintf(f, "%llu %llu\n", (unsigned long long)(v.f_bfree + 9 * MiB / v.f_frsize),
				(unsigned long long)(v.f_ffree + 1));
			fclose(f);
		}
	}
}

static void it_verify(void)
{
	struct stat a, b;
	struct statvfs v;
	unsigned long long bfree = 0, ffree = 0;
	FILE *f = fopen(P("../free-before-orphan"), "r");

	targets();
	EXPECT_OK(stat(P("fourth"), &a));
	EXPECT_OK(stat(P("dir/third"), &b));
	EXPECT_EQ(a.st_ino, b.st_ino);
	EXPECT_EQ(a.st_nlink, 2);
	EXPECT_EQ(a.st_size, 2 * MiB + 5);
	check_link("short", "dir/third");
	check_link("long2", target_long);
	check_link("one", "x");
	check_link("max4095", target_4095);
	check_link("tail4065", target_4065);
	{
		char t[146];

		memset(t, 'q', 145);
		t[144] = '\0';
		check_link("inline144", t);
		t[144] = 'r';
		t[145] = '\0';
		check_link("block145", t);
	}
	EXPECT_ERR(lstat(P("long"), &a), ENOENT);
	EXPECT_ERR(lstat(P("orphan"), &a), ENOENT);
	/* the file unlinked while open is gone and its space with it (allowing
	 * for the 3 stripes of the 9 MiB file to be freed by rounding) */
	IT_MUST(f ? 0 : -1);
	IT_MUST(fscanf(f, "%llu %llu", &bfree, &ffree) == 2 ? 0 : -1);
	fclose(f);
	EXPECT_OK(statvfs(it_mnt, &v));
	EXPECT(v.f_bfree >= bfree, "orphan's space returned: %llu free blocks, expected >= %llu",
	       (unsigned long long)v.f_bfree, bfree);
	EXPECT_EQ(v.f_ffree, ffree);
}
