/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the integration test programs: each one runs against a
 * mounted framefs (argv: MOUNTPOINT PHASE) and does real syscalls, so the
 * exact errno the kernel hands back is what is checked.  Nothing but libc.
 *
 * Phases: "run" exercises the behaviour; "verify" runs after the runner
 * unmounted (the daemon wrote everything out) and mounted again, and checks
 * that what "run" left behind survived.
 */
#ifndef IT_H
#define IT_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int it_failures, it_checks;
static const char *it_mnt;

#define IT_FAIL(...) do { \
	it_failures++; \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); \
} while (0)

/* A setup step that must work: stop here if it does not. */
#define IT_MUST(expr) do { \
	errno = 0; \
	if ((long)(expr) < 0) { \
		fprintf(stderr, "FATAL %s:%d: %s: %s\n", __FILE__, __LINE__, #expr, strerror(errno)); \
		exit(1); \
	} \
} while (0)

/* The call succeeds (returns >= 0). */
#define EXPECT_OK(expr) do { \
	long it_r_; \
	errno = 0; \
	it_r_ = (long)(expr); \
	it_checks++; \
	if (it_r_ < 0) \
		IT_FAIL("%s: expected success, got %s", #expr, strerror(errno)); \
} while (0)

/* The call fails with exactly this errno. */
#define EXPECT_ERR(expr, err) do { \
	long it_r_; \
	errno = 0; \
	it_r_ = (long)(expr); \
	it_checks++; \
	if (it_r_ >= 0) \
		IT_FAIL("%s: expected %s, it succeeded (%ld)", #expr, strerrorname_np(err), it_r_); \
	else if (errno != (err)) \
		IT_FAIL("%s: expected %s, got %s", #expr, strerrorname_np(err), \
			strerrorname_np(errno) ? strerrorname_np(errno) : "?"); \
} while (0)

#define EXPECT(cond, ...) do { \
	it_checks++; \
	if (!(cond)) \
		IT_FAIL(__VA_ARGS__); \
} while (0)

#define EXPECT_EQ(a, b) do { \
	long long it_a_ = (long long)(a), it_b_ = (long long)(b); \
	it_checks++; \
	if (it_a_ != it_b_) \
		IT_FAIL("%s == %lld, expected %s == %lld", #a, it_a_, #b, it_b_); \
} while (0)

/* Path under the mountpoint (static rotating buffers: up to 8 alive). */
static inline const char *P(const char *fmt, ...)
{
	static char bufs[8][4096];
	static unsigned next;
	char *b = bufs[next++ % 8], rel[3072];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(b, 4096, "%s/%s", it_mnt, rel);
	return b;
}

/* Deterministic bytes: the same (seed, offset) always gives the same byte. */
static inline uint8_t it_byte(uint64_t seed, uint64_t off)
{
	uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + (off >> 3) * 0xBF58476D1CE4E5B9ull;

	x ^= x >> 31;
	x *= 0x94D049BB133111EBull;
	x ^= x >> 29;
	return (uint8_t)(x >> ((off & 7) * 8));
}

static inline void it_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = it_byte(seed, off + i);
}

/* First offset where buf differs from the pattern, or -1. */
static inline long long it_mismatch(const void *buf, size_t len, uint64_t seed, uint64_t off)
{
	const uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		if (b[i] != it_byte(seed, off + i))
			return (long long)i;
	return -1;
}

static inline int it_write_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static inline ssize_t it_read_all(int fd, void *buf, size_t len, off_t off)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, p + done, len - done, off + (off_t)done);

		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* Write a whole file with the pattern of seed. */
static inline int it_make_file(const char *path, size_t len, uint64_t seed)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char *buf;
	int rc;

	if (fd < 0)
		return -1;
	buf = malloc(len ? len : 1);
	if (!buf) {
		close(fd);
		return -1;
	}
	it_fill(buf, len, seed, 0);
	rc = it_write_all(fd, buf, len, 0);
	free(buf);
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

/*
 * statvfs of the mount once its free blocks and inodes are back to bfree and
 * ffree after deletes, or as it is after 2 s.  The daemon frees a deleted
 * file's bytes at its unlink or, if it was open, at its RELEASE (which the
 * kernel sends after close returned), and its inode when FUSE sends the
 * FORGET, also after unlink returned.
 */
static inline int it_statvfs_freed(struct statvfs *v, fsblkcnt_t bfree, fsfilcnt_t ffree)
{
	for (int i = 0; i < 200; i++) {
		sync();
		if (statvfs(it_mnt, v) < 0)
			return -1;
		if (v->f_bfree == bfree && v->f_ffree == ffree)
			break;
		usleep(10000);
	}
	return 0;
}

/* The file holds exactly len bytes of the pattern of seed. */
static inline int it_check_file(const char *path, size_t len, uint64_t seed)
{
	struct stat st;
	char *buf;
	long long bad;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	it_checks++;
	if (fd < 0) {
		IT_FAIL("open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0 || (size_t)st.st_size != len) {
		IT_FAIL("%s: size %lld, expected %zu", path, (long long)st.st_size, len);
		close(fd);
		return -1;
	}
	buf = malloc(len + 1);
	n = it_read_all(fd, buf, len + 1, 0);
	close(fd);
	if (n != (ssize_t)len) {
		IT_FAIL("%s: read %zd bytes, expected %zu", path, n, len);
		free(buf);
		return -1;
	}
	bad = it_mismatch(buf, len, seed, 0);
	free(buf);
	if (bad >= 0) {
		IT_FAIL("%s: content differs at byte %lld", path, bad);
		return -1;
	}
	return 0;
}

#ifndef IT_OWN_MAIN
static void it_run(void);
static void it_verify(void);

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "run") && strcmp(argv[2], "verify"))) {
		fprintf(stderr, "usage: %s MOUNTPOINT run|verify\n", argv[0]);
		return 2;
	}
	it_mnt = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	umask(022);
	if (strcmp(argv[2], "run") == 0)
		it_run();
	else
		it_verify();
	printf("%s %s: %d checks, %d failed\n", argv[0], argv[2], it_checks, it_failures);
	return it_failures ? 1 : 0;
}
#endif

#endif
