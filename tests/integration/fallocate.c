/* SPDX-License-Identifier: MIT */
/*
 * Proves: fallocate(2) preallocates whole stripes — mode 0 extends the size,
 * FALLOC_FL_KEEP_SIZE does not; preallocated space reads as zeros, is
 * counted in st_blocks and statfs, and takes partial and full-stripe writes
 * (which read back, with zeros around them, also after a remount); data
 * already in the range is untouched; more than the free space fails with
 * ENOSPC and leaves the volume usable; a punched hole reads as zeros with
 * the bytes around it kept and frees the whole stripes inside it (a large
 * file with a packed tail, and a small file); a zeroed range
 * (FALLOC_FL_ZERO_RANGE) reads as zeros with the bytes around it kept, its
 * space preallocated, the size kept with KEEP_SIZE and extended without;
 * modes framefs does not implement (collapse, insert) fail with EOPNOTSUPP.
 */
#include <linux/falloc.h>
#include <sys/statvfs.h>

#include "it.h"

#define MiB (1024 * 1024)

static int all_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* File path of len bytes (pattern seed) reads as zeros in [a, b), as the
 * pattern elsewhere. */
static void check_punched(const char *path, size_t len, uint64_t seed, size_t a, size_t b)
{
	uint8_t *buf = malloc(len + 1);
	int fd = open(path, O_RDONLY);

	IT_MUST(fd);
	EXPECT_EQ(it_read_all(fd, buf, len + 1, 0), (ssize_t)len);
	EXPECT(it_mismatch(buf, a, seed, 0) < 0, "%s: the bytes before the hole", path);
	EXPECT(all_zero(buf + a, b - a), "%s: the hole reads as zeros", path);
	EXPECT(it_mismatch(buf + b, len - b, seed, b) < 0, "%s: the bytes after the hole", path);
	close(fd);
	free(buf);
}

/* FALLOC_FL_ZERO_RANGE: across stripes of a 5 MiB + 777 file with KEEP_SIZE
 * (its size kept; the stripes inside it preallocated again, so st_blocks
 * does not fall below what whole stripes take), then without KEEP_SIZE
 * from inside the file to past its end (the size extended, the new space
 * counted); zeros where zeroed, the pattern elsewhere; again after the
 * remount (it_verify). */
static void zero_ranges(void)
{
	const size_t len = 5 * MiB + 777, a = MiB / 2 + 5, b = 4 * MiB + 99;
	struct stat st0, st1;
	int fd;

	IT_MUST(it_make_file(P("zeroed"), len, 140));
	IT_MUST(fd = open(P("zeroed"), O_RDWR));
	EXPECT_OK(fstat(fd, &st0));
	EXPECT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)(b - a)));
	EXPECT_OK(fstat(fd, &st1));
	EXPECT_EQ(st1.st_size, (off_t)len);
	EXPECT(st1.st_blocks >= st0.st_blocks, "zero range keeps its space allocated (%lld < %lld blocks)",
	       (long long)st1.st_blocks, (long long)st0.st_blocks);
	close(fd);
	check_punched(P("zeroed"), len, 140, a, b);

	IT_MUST(it_make_file(P("zeroed2"), 2 * MiB, 141));
	IT_MUST(fd = open(P("zeroed2"), O_RDWR));
	EXPECT_OK(fallocate(fd, FALLOC_FL_ZERO_RANGE, MiB, 3 * MiB));
	EXPECT_OK(fstat(fd, &st1));
	EXPECT_EQ(st1.st_size, 4 * MiB);
	EXPECT((uint64_t)st1.st_blocks * 512 >= 4 * MiB, "zero range past the end: its space counted");
	close(fd);
	check_punched(P("zeroed2"), 4 * MiB, 141, MiB, 4 * MiB);
}

/* Holes punched (FALLOC_FL_PUNCH_HOLE | KEEP_SIZE): in a file of 8 MiB and
 * 1000 bytes (several stripes and a tail) across stripes, its size kept and
 * its whole stripes freed; in its tail; in a small file; past the end. */
static void punch_holes(void)
{
	const size_t big = 8 * MiB + 1000, a = MiB + 123, b = 6 * MiB + 4567;
	struct stat st0, st1;
	int fd;

	IT_MUST(it_make_file(P("holes"), big, 130));
	IT_MUST(fd = open(P("holes"), O_RDWR));
	EXPECT_OK(fstat(fd, &st0));
	EXPECT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)a, (off_t)(b - a)));
	EXPECT_OK(fstat(fd, &st1));
	EXPECT_EQ(st1.st_size, (off_t)big);
	/* 5 MiB punched holds at least two whole stripes of at most 1.5 MiB */
	EXPECT((uint64_t)(st0.st_blocks - st1.st_blocks) * 512 >= 2 * (uint64_t)st0.st_blksize,
	       "the whole stripes of the hole are freed (%lld -> %lld blocks)",
	       (long long)st0.st_blocks, (long long)st1.st_blocks);
	EXPECT_OK(fsync(fd));
	close(fd);
	check_punched(P("holes"), big, 130, a, b);
	/* the last 1000 bytes, the file's tail, punched but for 10 */
	IT_MUST(fd = open(P("holes"), O_RDWR));
	EXPECT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 8 * MiB, 990));
	/* past the end: nothing to punch, the size stays */
	EXPECT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)big, MiB));
	EXPECT_OK(fstat(fd, &st1));
	EXPECT_EQ(st1.st_size, (off_t)big);
	close(fd);
	{
		uint8_t *buf = malloc(big);

		IT_MUST(fd = open(P("holes"), O_RDONLY));
		EXPECT_EQ(it_read_all(fd, buf, big, 0), (ssize_t)big);
		EXPECT(all_zero(buf + 8 * MiB, 990), "the tail's hole reads as zeros");
		EXPECT(it_mismatch(buf + 8 * MiB + 990, 10, 130, 8 * MiB + 990) < 0,
		       "the tail's last bytes are kept");
		EXPECT(all_zero(buf + a, b - a), "the first hole still reads as zeros");
		close(fd);
		free(buf);
	}
	/* a small file (pool blocks) */
	IT_MUST(it_make_file(P("small-holes"), 10000, 131));
	IT_MUST(fd = open(P("small-holes"), O_RDWR));
	EXPECT_OK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 4900));
	close(fd);
	check_punched(P("small-holes"), 10000, 131, 100, 5000);
}

/* the final content of "pre": zeros, with two written regions */
static void check_pre(const char *what)
{
	uint8_t *b = malloc(10 * MiB + 1);
	int fd = open(P("pre"), O_RDONLY);

	IT_MUST(fd);
	EXPECT_EQ(it_read_all(fd, b, 10 * MiB + 1, 0), 10 * MiB);
	EXPECT(all_zero(b, 1000), "%s: zeros before the first write", what);
	EXPECT(it_mismatch(b + 1000, 3000, 120, 1000) < 0, "%s: partial write", what);
	EXPECT(all_zero(b + 4000, 3 * MiB - 4000), "%s: zeros between", what);
	EXPECT(it_mismatch(b + 3 * MiB, 3 * MiB, 121, 0) < 0, "%s: full-stripe writes", what);
	EXPECT(all_zero(b + 6 * MiB, 4 * MiB), "%s: zeros after", what);
	close(fd);
	free(b);
}

static void it_run(void)
{
	struct statvfs v0, v1, v2;
	struct stat st;
	uint8_t *b = malloc(3 * MiB);
	int fd;

	IT_MUST(b ? 0 : -1);
	sync();
	EXPECT_OK(statvfs(it_mnt, &v0));
	/* mode 0: size follows */
	IT_MUST(fd = open(P("pre"), O_CREAT | O_RDWR, 0644));
	EXPECT_OK(fallocate(fd, 0, 0, 10 * MiB));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 10 * MiB);
	EXPECT((uint64_t)st.st_blocks * 512 >= 10 * MiB, "st_blocks counts the preallocation");
	EXPECT_OK(statvfs(it_mnt, &v1));
	EXPECT((v0.f_bfree - v1.f_bfree) * v1.f_frsize >= 10 * MiB, "statfs counts the preallocation");
	EXPECT_EQ(pread(fd, b, MiB, 4 * MiB), MiB);
	EXPECT(all_zero(b, MiB), "preallocated space reads as zeros");
	/* a partial write and two full stripes' worth into it */
	it_fill(b, 3000, 120, 1000);
	EXPECT_EQ(pwrite(fd, b, 3000, 1000), 3000);
	it_fill(b, 3 * MiB, 121, 0);
	EXPECT_OK(it_write_all(fd, b, 3 * MiB, 3 * MiB));
	EXPECT_OK(fsync(fd));
	/* the writes went in place: no more space used */
	EXPECT_OK(statvfs(it_mnt, &v2));
	EXPECT(v2.f_bfree >= v1.f_bfree, "writes into preallocated stripes took no new space (%llu < %llu)",
	       (unsigned long long)v2.f_bfree, (unsigned long long)v1.f_bfree);
	close(fd);
	check_pre("before remount");

	/* KEEP_SIZE past the end of data that is already there */
	IT_MUST(it_make_file(P("keep"), 2 * MiB, 122));
	IT_MUST(fd = open(P("keep"), O_RDWR));
	EXPECT_OK(fallocate(fd, FALLOC_FL_KEEP_SIZE, MiB, 8 * MiB));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 2 * MiB);
	EXPECT((uint64_t)st.st_blocks * 512 >= 9 * MiB, "KEEP_SIZE space counted in st_blocks");
	EXPECT_EQ(pread(fd, b, 10, 2 * MiB), 0);
	it_fill(b, 4096, 123, 0);
	EXPECT_EQ(pwrite(fd, b, 4096, 7 * MiB), 4096);
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 7 * MiB + 4096);
	close(fd);

	punch_holes();
	zero_ranges();
	/* modes that are not implemented */
	IT_MUST(fd = open(P("keep"), O_RDWR));
	EXPECT_ERR(fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 3 * MiB), EOPNOTSUPP);
	EXPECT_ERR(fallocate(fd, FALLOC_FL_INSERT_RANGE, 0, 3 * MiB), EOPNOTSUPP);
	EXPECT_ERR(fallocate(fd, 0, 0, 0), EINVAL);
	close(fd);
	/* posix_fallocate goes through fallocate */
	IT_MUST(fd = open(P("posix"), O_CREAT | O_RDWR, 0644));
	EXPECT_EQ(posix_fallocate(fd, 0, 5 * MiB), 0);
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 5 * MiB);
	close(fd);

	/* more than is free: ENOSPC, nothing half-done visible, the volume still works */
	EXPECT_OK(statvfs(it_mnt, &v1));
	IT_MUST(fd = open(P("huge"), O_CREAT | O_RDWR, 0644));
	EXPECT_ERR(fallocate(fd, 0, 0, (off_t)(v1.f_blocks * v1.f_frsize * 2)), ENOSPC);
	close(fd);
	EXPECT_OK(unlink(P("huge")));
	/* the kernel sends RELEASE after close(2) returns, and the space comes
	 * back with it: poll (bounded) for what statvfs said before */
	EXPECT_OK(it_statvfs_freed(&v2, v1.f_bfree, v1.f_ffree));
	EXPECT(v2.f_bfree >= v1.f_bfree, "a failed fallocate leaves no space taken (%llu < %llu)",
	       (unsigned long long)v2.f_bfree, (unsigned long long)v1.f_bfree);
	EXPECT_OK(it_make_file(P("after"), 2 * MiB, 124));
	it_check_file(P("after"), 2 * MiB, 124);
	free(b);
}

static void it_verify(void)
{
	uint8_t b[4096];
	struct stat st;
	int fd;

	check_pre("after remount");
	IT_MUST(fd = open(P("keep"), O_RDONLY));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 7 * MiB + 4096);
	EXPECT_EQ(pread(fd, b, 4096, 7 * MiB), 4096);
	EXPECT(it_mismatch(b, 4096, 123, 0) < 0, "KEEP_SIZE region write after remount");
	EXPECT_EQ(pread(fd, b, 4096, 4 * MiB), 4096);
	EXPECT(all_zero(b, 4096), "KEEP_SIZE region zeros after remount");
	EXPECT_EQ(pread(fd, b, 4096, 0), 4096);
	EXPECT(it_mismatch(b, 4096, 122, 0) < 0, "data before the preallocation kept");
	close(fd);
	it_check_file(P("after"), 2 * MiB, 124);
	check_punched(P("small-holes"), 10000, 131, 100, 5000);
	check_punched(P("zeroed"), 5 * MiB + 777, 140, MiB / 2 + 5, 4 * MiB + 99);
	check_punched(P("zeroed2"), 4 * MiB, 141, MiB, 4 * MiB);
	{
		const size_t big = 8 * MiB + 1000;
		uint8_t *buf = malloc(big);

		IT_MUST(fd = open(P("holes"), O_RDONLY));
		EXPECT_EQ(it_read_all(fd, buf, big, 0), (ssize_t)big);
		EXPECT(it_mismatch(buf, MiB + 123, 130, 0) < 0, "holes: before the hole after remount");
		EXPECT(all_zero(buf + MiB + 123, 5 * MiB + 4444), "holes: the hole after remount");
		EXPECT(it_mismatch(buf + 6 * MiB + 4567, 2 * MiB - 4567, 130, 6 * MiB + 4567) < 0,
		       "holes: after the hole after remount");
		EXPECT(all_zero(buf + 8 * MiB, 990), "holes: the tail's hole after remount");
		close(fd);
		free(buf);
	}
}
