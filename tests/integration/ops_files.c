/* SPDX-License-Identifier: MIT */
/*
 * Proves: the file operations behave as on a local filesystem and survive
 * a remount: create/mknod (modes, umask, rdev), open/read/write at every
 * size and alignment around chunk and stripe boundaries, holes, O_APPEND,
 * O_TRUNC, flush/fsync/fdatasync, truncate down and up (the cut-off tail
 * reads back as zeros), setattr (chmod, chown, utimens), statfs, access.
 */
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "it.h"

#define MiB (1024 * 1024)

/* Sizes around 4 KiB, the 512 KiB chunk, the stripe (3 or more chunks),
 * and FUSE's 1 MiB request. */
static const size_t sizes[] = {
	0, 1, 17, 4095, 4096, 4097, 65536, 512 * 1024 - 1, 512 * 1024, 512 * 1024 + 1,
	MiB - 1, MiB, MiB + 1, 3 * 512 * 1024 - 1, 3 * 512 * 1024, 3 * 512 * 1024 + 1,
	5 * MiB + 12345, 12812288,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void create_modes(void)
{
	struct stat st;
	int fd;

	umask(022);
	IT_MUST(fd = open(P("m666"), O_CREAT | O_EXCL | O_WRONLY, 0666));
	close(fd);
	EXPECT_OK(stat(P("m666"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0644);
	EXPECT_EQ(st.st_size, 0);
	EXPECT_EQ(st.st_nlink, 1);
	IT_MUST(fd = creat(P("m600"), 0600));
	close(fd);
	EXPECT_OK(stat(P("m600"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0600);
	umask(0);
	EXPECT_OK(mknod(P("reg"), S_IFREG | 0640, 0));
	EXPECT_OK(mknod(P("fifo"), S_IFIFO | 0604, 0));
	EXPECT_OK(mknod(P("chr"), S_IFCHR | 0600, makedev(1, 3)));
	EXPECT_OK(mknod(P("blk"), S_IFBLK | 0600, makedev(7, 200)));
	EXPECT_OK(mknod(P("sock"), S_IFSOCK | 0600, 0));
	umask(022);
	EXPECT_OK(stat(P("reg"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0640);
	EXPECT_OK(stat(P("fifo"), &st));
	EXPECT_EQ(st.st_mode, S_IFIFO | 0604);
	EXPECT_OK(stat(P("chr"), &st));
	EXPECT_EQ(st.st_mode, S_IFCHR | 0600);
	EXPECT_EQ(st.st_rdev, makedev(1, 3));
	EXPECT_OK(stat(P("blk"), &st));
	EXPECT_EQ(st.st_rdev, makedev(7, 200));
	EXPECT_OK(stat(P("sock"), &st));
	EXPECT(S_ISSOCK(st.st_mode), "sock is a socket node");
}

static void sizes_roundtrip(void)
{
	for (size_t i = 0; i < NSIZES; i++)
		EXPECT_OK(it_make_file(P("size-%zu", sizes[i]), sizes[i], 100 + i));
	for (size_t i = 0; i < NSIZES; i++)
		it_check_file(P("size-%zu", sizes[i]), sizes[i], 100 + i);
}

static size_t gcd(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* Writes of odd sizes at odd offsets, in a scrambled order, then every
 * byte compared; a read of any span agrees. */
static void scattered_writes(void)
{
	const size_t len = 7 * MiB + 333;
	char *buf = malloc(len), *rd = malloc(len);
	size_t piece = 100003, npieces = (len + piece - 1) / piece, mul = 37;
	int fd;

	while (gcd(mul, npieces) != 1)
		mul += 2;

	IT_MUST(buf && rd ? 0 : -1);
	it_fill(buf, len, 7, 0);
	IT_MUST(fd = open(P("scattered"), O_CREAT | O_RDWR, 0644));
	for (size_t k = 0; k < npieces; k++) {
		size_t i = (k * mul) % npieces; /* mul is coprime with npieces: each piece once */
		size_t off = i * piece, n = off + piece > len ? len - off : piece;

		EXPECT_OK(it_write_all(fd, buf + off, n, (off_t)off));
	}
	EXPECT_EQ(it_read_all(fd, rd, len, 0), len);
	EXPECT(memcmp(buf, rd, len) == 0, "scattered writes read back (before close)");
	for (size_t off = 1; off < len; off = off * 3 + 4097) {
		size_t n = len - off < 1500000 ? len - off : 1500000;

		EXPECT_EQ(it_read_all(fd, rd, n, (off_t)off), n);
		EXPECT(memcmp(buf + off, rd, n) == 0, "span at %zu reads back", off);
	}
	EXPECT_EQ(pread(fd, rd, 100, (off_t)len), 0);
	EXPECT_EQ(pread(fd, rd, 100, (off_t)len + 5 * MiB), 0);
	EXPECT_OK(fsync(fd));
	EXPECT_OK(close(fd));
	free(buf);
	free(rd);
}

static void holes_append_trunc(void)
{
	char buf[8192], z[8192];
	struct stat st;
	int fd;

	memset(z, 0, sizeof(z));
	/* a hole before data, inside a stripe and across stripes */
	IT_MUST(fd = open(P("sparse"), O_CREAT | O_RDWR, 0644));
	it_fill(buf, 4096, 9, 0);
	EXPECT_EQ(pwrite(fd, buf, 4096, 10 * MiB), 4096);
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 10 * MiB + 4096);
	EXPECT_EQ(pread(fd, buf, 8192, 5 * MiB), 8192);
	EXPECT(memcmp(buf, z, 8192) == 0, "hole reads as zeros");
	EXPECT_EQ(pread(fd, buf, 8192, 10 * MiB - 4096), 8192);
	EXPECT(memcmp(buf, z, 4096) == 0, "hole right before data reads as zeros");
	EXPECT(it_mismatch(buf + 4096, 4096, 9, 0) < 0, "data after the hole");
	EXPECT_OK(fdatasync(fd));
	close(fd);

	/* O_APPEND */
	IT_MUST(fd = open(P("append"), O_CREAT | O_WRONLY | O_APPEND, 0644));
	for (int i = 0; i < 50; i++) {
		it_fill(buf, 1000, 11, (uint64_t)i * 1000);
		EXPECT_EQ(write(fd, buf, 1000), 1000);
	}
	/* pwrite on O_APPEND appends too on Linux */
	close(fd);
	it_check_file(P("append"), 50000, 11);

	/* O_TRUNC */
	IT_MUST(it_make_file(P("otrunc"), 3 * MiB, 12));
	IT_MUST(fd = open(P("otrunc"), O_WRONLY | O_TRUNC));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 0);
	it_fill(buf, 100, 13, 0);
	EXPECT_EQ(write(fd, buf, 100), 100);
	close(fd);
	it_check_file(P("otrunc"), 100, 13);

	/* truncate down mid-stripe, then up: the old bytes past the cut are zeros */
	IT_MUST(it_make_file(P("trunc"), 4 * MiB, 14));
	EXPECT_OK(truncate(P("trunc"), MiB + 100));
	EXPECT_OK(stat(P("trunc"), &st));
	EXPECT_EQ(st.st_size, MiB + 100);
	EXPECT_OK(truncate(P("trunc"), 3 * MiB));
	IT_MUST(fd = open(P("trunc"), O_RDWR));
	EXPECT_EQ(pread(fd, buf, 200, MiB), 200);
	EXPECT(it_mismatch(buf, 100, 14, MiB) < 0, "bytes before the cut kept");
	EXPECT(memcmp(buf + 100, z, 100) == 0, "bytes after the cut are zeros after growing");
	EXPECT_EQ(pread(fd, buf, 8192, 2 * MiB), 8192);
	EXPECT(memcmp(buf, z, 8192) == 0, "grown region reads as zeros");
	/* ftruncate while open, with data still buffered in the daemon */
	it_fill(buf, 5000, 15, 0);
	EXPECT_EQ(pwrite(fd, buf, 5000, 2 * MiB), 5000);
	EXPECT_OK(ftruncate(fd, 2 * MiB + 1000));
	EXPECT_OK(ftruncate(fd, 2 * MiB + 3000));
	EXPECT_EQ(pread(fd, buf, 3000, 2 * MiB), 3000);
	EXPECT(it_mismatch(buf, 1000, 15, 0) < 0, "kept part of a buffered write");
	EXPECT(memcmp(buf + 1000, z, 2000) == 0, "cut part of a buffered write is zeros");
	EXPECT_OK(ftruncate(fd, 0));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 0);
	EXPECT_EQ(st.st_blocks, 0);
	EXPECT_EQ(pread(fd, buf, 10, 0), 0);
	close(fd);
	/* the final state for verify: 2 MiB + 10 of pattern 16 */
	IT_MUST(it_make_file(P("trunc"), 2 * MiB + 10, 16));
}

/* Offsets past 4 GiB and far out (1 TiB): 32-bit stripe and size
 * arithmetic would show here.  The file stays sparse: two stripes used. */
#define OFF_4G (4ull << 30)
#define OFF_1T (1ull << 40)

static void check_far(const char *what)
{
	char buf[8192];
	struct stat st;
	int fd = open(P("far"), O_RDONLY);

	IT_MUST(fd);
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, OFF_1T + 12345 + 5000);
	EXPECT((uint64_t)st.st_blocks * 512 < 64ull * MiB, "%s: a sparse file takes little space", what);
	EXPECT_EQ(pread(fd, buf, 8192, (off_t)(OFF_4G - 4096)), 8192);
	EXPECT(it_mismatch(buf, 8192, 17, OFF_4G - 4096) < 0, "%s: data across the 4 GiB line", what);
	EXPECT_EQ(pread(fd, buf, 5000, (off_t)(OFF_1T + 12345)), 5000);
	EXPECT(it_mismatch(buf, 5000, 18, 0) < 0, "%s: data at 1 TiB", what);
	EXPECT_EQ(pread(fd, buf, 8192, (off_t)(OFF_4G * 3)), 8192);
	for (int i = 0; i < 8192; i++)
		if (buf[i]) {
			IT_FAIL("%s: hole at 12 GiB is not zero", what);
			break;
		}
	close(fd);
}

static void far_offsets(void)
{
	char buf[8192];
	int fd;

	IT_MUST(fd = open(P("far"), O_CREAT | O_RDWR, 0644));
	it_fill(buf, 8192, 17, OFF_4G - 4096);
	EXPECT_EQ(pwrite(fd, buf, 8192, (off_t)(OFF_4G - 4096)), 8192);
	it_fill(buf, 5000, 18, 0);
	EXPECT_EQ(pwrite(fd, buf, 5000, (off_t)(OFF_1T + 12345)), 5000);
	EXPECT_OK(fsync(fd));
	close(fd);
	check_far("before remount");
	/* truncating a far file back frees it all */
	IT_MUST(fd = open(P("far2"), O_CREAT | O_RDWR, 0644));
	EXPECT_EQ(pwrite(fd, buf, 100, (off_t)(OFF_1T * 2)), 100);
	EXPECT_OK(ftruncate(fd, 10));
	{
		struct stat st;

		EXPECT_OK(fstat(fd, &st));
		EXPECT_EQ(st.st_size, 10);
		EXPECT_EQ(st.st_blocks, 0);
	}
	close(fd);
	EXPECT_OK(unlink(P("far2")));
}

static void setattr_ops(void)
{
	struct timespec ts[2];
	struct stat st, st2;
	int fd;

	IT_MUST(it_make_file(P("attrs"), 10, 20));
	EXPECT_OK(chmod(P("attrs"), 04751));
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 04751);
	IT_MUST(fd = open(P("attrs"), O_RDONLY));
	EXPECT_OK(fchmod(fd, 0640));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0640);
	EXPECT_OK(fchown(fd, 1234, 5678));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_uid, 1234);
	EXPECT_EQ(st.st_gid, 5678);
	EXPECT_OK(chown(P("attrs"), -1, 42));
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT_EQ(st.st_uid, 1234);
	EXPECT_EQ(st.st_gid, 42);
	/* explicit times, to the nanosecond */
	ts[0].tv_sec = 1000000000;
	ts[0].tv_nsec = 123456789;
	ts[1].tv_sec = 1234567890;
	ts[1].tv_nsec = 987654321;
	EXPECT_OK(utimensat(AT_FDCWD, P("attrs"), ts, 0));
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT_EQ(st.st_atim.tv_sec, 1000000000);
	EXPECT_EQ(st.st_atim.tv_nsec, 123456789);
	EXPECT_EQ(st.st_mtim.tv_sec, 1234567890);
	EXPECT_EQ(st.st_mtim.tv_nsec, 987654321);
	/* UTIME_OMIT keeps, UTIME_NOW sets now */
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_nsec = UTIME_NOW;
	EXPECT_OK(futimens(fd, ts));
	EXPECT_OK(fstat(fd, &st2));
	EXPECT_EQ(st2.st_atim.tv_sec, 1000000000);
	EXPECT_EQ(st2.st_atim.tv_nsec, 123456789);
	EXPECT(st2.st_mtim.tv_sec >= time(NULL) - 60, "UTIME_NOW set mtime to now");
	close(fd);
	/* chmod changes ctime, not mtime; a write changes both */
	ts[0].tv_sec = ts[1].tv_sec = 1500000000;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	EXPECT_OK(utimensat(AT_FDCWD, P("attrs"), ts, 0));
	EXPECT_OK(chmod(P("attrs"), 0644));
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT_EQ(st.st_mtim.tv_sec, 1500000000);
	EXPECT(st.st_ctim.tv_sec >= time(NULL) - 60, "chmod set ctime");
	IT_MUST(fd = open(P("attrs"), O_WRONLY));
	EXPECT_EQ(pwrite(fd, "x", 1, 0), 1);
	close(fd);
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT(st.st_mtim.tv_sec >= time(NULL) - 60, "write set mtime");
	/* open(O_TRUNC) of an existing file changes mtime and ctime, even of an empty one */
	for (int len = 0; len <= 10; len += 10) {
		IT_MUST(it_make_file(P("trunc%d", len), (size_t)len, 21));
		ts[0].tv_sec = ts[1].tv_sec = 1500000000;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		EXPECT_OK(utimensat(AT_FDCWD, P("trunc%d", len), ts, 0));
		EXPECT_OK(stat(P("trunc%d", len), &st));
		EXPECT_EQ(st.st_mtim.tv_sec, 1500000000);
		IT_MUST(fd = open(P("trunc%d", len), O_WRONLY | O_TRUNC));
		close(fd);
		EXPECT_OK(stat(P("trunc%d", len), &st));
		EXPECT_EQ(st.st_size, 0);
		EXPECT(st.st_mtim.tv_sec >= time(NULL) - 60, "open(O_TRUNC) of a %d-byte file set mtime",
		       len);
		EXPECT(st.st_ctim.tv_sec >= time(NULL) - 60, "open(O_TRUNC) of a %d-byte file set ctime",
		       len);
	}
	/* final state for verify */
	ts[0].tv_sec = 1111111111;
	ts[0].tv_nsec = 1;
	ts[1].tv_sec = 1222222222;
	ts[1].tv_nsec = 999999999;
	EXPECT_OK(utimensat(AT_FDCWD, P("attrs"), ts, 0));
	EXPECT_OK(chmod(P("attrs"), 0755));
	/* a symlink's owner */
	IT_MUST(symlink("attrs", P("attrs-link")));
	EXPECT_OK(lchown(P("attrs-link"), 77, 88));
	EXPECT_OK(lstat(P("attrs-link"), &st));
	EXPECT_EQ(st.st_uid, 77);
	EXPECT_OK(stat(P("attrs-link"), &st));
	EXPECT_EQ(st.st_uid, 1234);
}

static void statfs_space(void)
{
	struct statvfs a, b, c;
	const size_t len = 24 * MiB;

	EXPECT_OK(statvfs(it_mnt, &a));
	EXPECT(a.f_blocks > 0 && a.f_bfree <= a.f_blocks && a.f_bavail <= a.f_blocks,
	       "statfs counts are sane");
	EXPECT(a.f_files > 0 && a.f_ffree < a.f_files, "statfs inode counts are sane");
	EXPECT_EQ(a.f_namemax, 255);
	IT_MUST(it_make_file(P("space"), len, 30));
	sync();
	EXPECT_OK(statvfs(it_mnt, &b));
	EXPECT((a.f_bfree - b.f_bfree) * b.f_frsize >= len, "writing %zu bytes used space", len);
	EXPECT((a.f_bfree - b.f_bfree) * b.f_frsize < len + 8 * MiB, "and not much more");
	EXPECT_EQ(a.f_ffree - b.f_ffree, 1);
	EXPECT_OK(unlink(P("space")));
	EXPECT_OK(it_statvfs_freed(&c, a.f_bfree, a.f_ffree));
	EXPECT_EQ(c.f_bfree, a.f_bfree);
	EXPECT_EQ(c.f_ffree, a.f_ffree);
}

/*
 * A deleted file's space is free when unlink (or the rename over it)
 * returns, however long the kernel keeps its inode: here an O_PATH
 * descriptor holds it, so no FORGET comes until it is closed (over FUSE
 * io_uring a FORGET travels on /dev/fuse, apart from the statfs that
 * follows the unlink, and came 27 to 52 deletes late).  The inode number
 * stays taken until then; the held inode can be looked at but not opened
 * again (ESTALE/ENOENT: its bytes are gone).  A file still open keeps its
 * bytes until its last close, and frees them then, held or not.
 */
static void unlinked_space_returns_at_once(void)
{
	struct statvfs base, a, b;
	struct stat st;
	char proc[64], buf[4096];
	int held, fd;

	IT_MUST(it_make_file(P("deleted-held"), 24 * MiB, 31));
	IT_MUST(it_make_file(P("replaced-held"), 24 * MiB, 32));
	IT_MUST(it_make_file(P("replacement"), 4000, 33));
	sync();
	EXPECT_OK(statvfs(it_mnt, &a));

	/* unlink: bytes back at once, the inode only when the kernel lets go */
	held = open(P("deleted-held"), O_PATH);
	IT_MUST(held);
	EXPECT_OK(unlink(P("deleted-held")));
	EXPECT_OK(statvfs(it_mnt, &b));
	EXPECT((b.f_bfree - a.f_bfree) * b.f_frsize >= 20 * MiB,
	       "unlink returned and %llu KiB of a 24 MiB file are free",
	       (unsigned long long)((b.f_bfree - a.f_bfree) * b.f_frsize / 1024));
	EXPECT_EQ(b.f_ffree, a.f_ffree);
	EXPECT_OK(fstat(held, &st));
	EXPECT_EQ(st.st_nlink, 0);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", held);
	fd = open(proc, O_RDONLY);
	EXPECT(fd < 0 && (errno == ESTALE || errno == ENOENT),
	       "reopening a deleted file nothing had open: expected ESTALE, got %s",
	       fd < 0 ? strerrorname_np(errno) : "a file");
	if (fd >= 0)
		close(fd);
	close(held);

	/* a rename over a file frees the file it replaced the same way */
	EXPECT_OK(statvfs(it_mnt, &a));
	held = open(P("replaced-held"), O_PATH);
	IT_MUST(held);
	EXPECT_OK(rename(P("replacement"), P("replaced-held")));
	EXPECT_OK(statvfs(it_mnt, &b));
	EXPECT((b.f_bfree - a.f_bfree) * b.f_frsize >= 20 * MiB,
	       "rename over a file returned and %llu KiB of its 24 MiB are free",
	       (unsigned long long)((b.f_bfree - a.f_bfree) * b.f_frsize / 1024));
	close(held);
	EXPECT_EQ(it_check_file(P("replaced-held"), 4000, 33), 0);

	/* open when unlinked: readable until its last close, which frees it
	 * (when the RELEASE comes: the kernel sends it after close returned) */
	sync();
	EXPECT_OK(statvfs(it_mnt, &base));
	IT_MUST(it_make_file(P("deleted-open"), 24 * MiB, 34));
	sync();
	EXPECT_OK(statvfs(it_mnt, &a));
	fd = open(P("deleted-open"), O_RDONLY);
	IT_MUST(fd);
	held = open(P("deleted-open"), O_PATH);
	IT_MUST(held);
	EXPECT_OK(unlink(P("deleted-open")));
	EXPECT_OK(statvfs(it_mnt, &b));
	EXPECT(b.f_bfree * b.f_frsize < a.f_bfree * a.f_frsize + 4 * MiB,
	       "an open file's bytes stay when it is unlinked");
	EXPECT_EQ(it_read_all(fd, buf, sizeof(buf), 20 * MiB), (ssize_t)sizeof(buf));
	EXPECT(it_mismatch(buf, sizeof(buf), 34, 20 * MiB) < 0, "the unlinked open file reads its bytes");
	close(fd);
	EXPECT_OK(it_statvfs_freed(&b, base.f_bfree, base.f_ffree - 1));
	EXPECT_EQ(b.f_bfree, base.f_bfree); /* while the O_PATH descriptor holds the inode */
	close(held);
}

static void access_ops(void)
{
	IT_MUST(it_make_file(P("acc"), 1, 40));
	IT_MUST(chmod(P("acc"), 0644));
	EXPECT_OK(access(P("acc"), F_OK));
	EXPECT_OK(access(P("acc"), R_OK | W_OK));
	EXPECT_ERR(access(P("acc"), X_OK), EACCES);
	EXPECT_OK(chmod(P("acc"), 0100));
	EXPECT_OK(access(P("acc"), X_OK));
	EXPECT_OK(access(it_mnt, R_OK | W_OK | X_OK));
	EXPECT_ERR(access(P("nothing"), F_OK), ENOENT);
}

static void fsync_ops(void)
{
	int fd, dfd;

	IT_MUST(fd = open(P("synced"), O_CREAT | O_WRONLY, 0644));
	{
		char buf[4096];

		for (int i = 0; i < 700; i++) {
			it_fill(buf, sizeof(buf), 50, (uint64_t)i * sizeof(buf));
			EXPECT_EQ(write(fd, buf, sizeof(buf)), sizeof(buf));
			if (i % 100 == 99) {
				EXPECT_OK(fsync(fd));
				EXPECT_OK(fdatasync(fd));
			}
		}
	}
	EXPECT_OK(close(fd));
	IT_MUST(dfd = open(it_mnt, O_RDONLY | O_DIRECTORY));
	EXPECT_OK(fsync(dfd));
	EXPECT_OK(syncfs(dfd));
	close(dfd);
}

static void it_run(void)
{
	create_modes();
	sizes_roundtrip();
	scattered_writes();
	holes_append_trunc();
	far_offsets();
	setattr_ops();
	statfs_space();
	unlinked_space_returns_at_once();
	access_ops();
	fsync_ops();
}

static void it_verify(void)
{
	struct stat st;
	char buf[8192];
	int fd;

	for (size_t i = 0; i < NSIZES; i++)
		it_check_file(P("size-%zu", sizes[i]), sizes[i], 100 + i);
	{
		const size_t len = 7 * MiB + 333;

		it_check_file(P("scattered"), len, 7);
	}
	EXPECT_OK(stat(P("m600"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0600);
	EXPECT_OK(stat(P("fifo"), &st));
	EXPECT_EQ(st.st_mode, S_IFIFO | 0604);
	EXPECT_OK(stat(P("chr"), &st));
	EXPECT_EQ(st.st_rdev, makedev(1, 3));
	EXPECT_OK(stat(P("blk"), &st));
	EXPECT(S_ISBLK(st.st_mode) && st.st_rdev == makedev(7, 200), "block node kept");
	IT_MUST(fd = open(P("sparse"), O_RDONLY));
	EXPECT_OK(fstat(fd, &st));
	EXPECT_EQ(st.st_size, 10 * MiB + 4096);
	EXPECT_EQ(pread(fd, buf, 4096, 10 * MiB), 4096);
	EXPECT(it_mismatch(buf, 4096, 9, 0) < 0, "sparse file data");
	EXPECT_EQ(pread(fd, buf, 4096, 3 * MiB), 4096);
	for (int i = 0; i < 4096; i++)
		if (buf[i]) {
			IT_FAIL("hole not zero after remount");
			break;
		}
	close(fd);
	it_check_file(P("append"), 50000, 11);
	it_check_file(P("otrunc"), 100, 13);
	it_check_file(P("trunc"), 2 * MiB + 10, 16);
	EXPECT_OK(stat(P("attrs"), &st));
	EXPECT_EQ(st.st_mode, S_IFREG | 0755);
	EXPECT_EQ(st.st_uid, 1234);
	EXPECT_EQ(st.st_gid, 42);
	EXPECT_EQ(st.st_atim.tv_sec, 1111111111);
	EXPECT_EQ(st.st_atim.tv_nsec, 1);
	EXPECT_EQ(st.st_mtim.tv_sec, 1222222222);
	EXPECT_EQ(st.st_mtim.tv_nsec, 999999999);
	EXPECT_OK(lstat(P("attrs-link"), &st));
	EXPECT_EQ(st.st_uid, 77);
	EXPECT_EQ(st.st_gid, 88);
	it_check_file(P("synced"), 700 * 4096, 50);
	EXPECT_ERR(stat(P("space"), &st), ENOENT);
	check_far("after remount");
}
