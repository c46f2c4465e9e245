/* SPDX-License-Identifier: MIT */
/*
 * Proves: a shared writable mmap of a file works and stays coherent with
 * read/write: stores through the mapping are seen by read() at once and by
 * O_DIRECT reads (which go to the daemon) after msync; pwrite()s are seen
 * through the mapping at once; two processes mapping one file see each
 * other's stores; a file grown by ftruncate can be written through the
 * mapping; and everything written through mappings is in the file after a
 * cache drop and after a remount.
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include "it.h"

#define MiB (1024 * 1024)
#define LEN (3 * MiB + 8192) /* more than two 1.5 MiB stripes */

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	sync();
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			IT_FAIL("cannot drop caches: %s", strerror(errno));
		close(fd);
	}
}

/* the final content: pattern 110, then the regions each step changed */
static void expected(uint8_t *e)
{
	it_fill(e, LEN, 110, 0);
	memset(e + 100, 0xAA, 5000);          /* store through the mapping */
	memset(e + 2 * MiB - 10, 0xBB, 20);   /* pwrite across the stripe edge */
	memset(e + MiB, 0xCC, 4096);          /* the child's stores */
	memset(e + 3 * MiB, 0xDD, 8192);      /* the last page */
}

static void odirect_check(const char *what, size_t off, size_t len, const uint8_t *want)
{
	uint8_t *buf;
	int fd = open(P("mapped"), O_RDONLY | O_DIRECT);
	size_t a = off & ~(size_t)4095, n = ((off + len + 4095) & ~(size_t)4095) - a;

	if (fd < 0) {
		IT_FAIL("O_DIRECT open: %s", strerror(errno));
		return;
	}
	IT_MUST(posix_memalign((void **)&buf, 4096, n) == 0 ? 0 : -1);
	EXPECT_EQ(pread(fd, buf, n, (off_t)a), (ssize_t)n);
	EXPECT(memcmp(buf + (off - a), want, len) == 0, "%s: the daemon has the stored bytes", what);
	free(buf);
	close(fd);
}

static void it_run(void)
{
	uint8_t *m, *e = malloc(LEN), buf[8192];
	int fd;
	pid_t pid;
	int st;

	IT_MUST(e ? 0 : -1);
	IT_MUST(it_make_file(P("mapped"), LEN - 8192, 110));
	IT_MUST(fd = open(P("mapped"), O_RDWR));
	/* grow by a page first: that page is written only through the mapping */
	EXPECT_OK(ftruncate(fd, LEN));
	m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	IT_MUST(m == MAP_FAILED ? -1 : 0);
	EXPECT(it_mismatch(m, LEN - 8192, 110, 0) < 0, "mapping shows the file");
	for (int i = 0; i < 8192; i++)
		if (m[LEN - 8192 + i]) {
			IT_FAIL("grown region is not zero in the mapping");
			break;
		}

	/* a store through the mapping: read() sees it at once */
	memset(m + 100, 0xAA, 5000);
	EXPECT_EQ(pread(fd, buf, 5000, 100), 5000);
	EXPECT(buf[0] == 0xAA && buf[4999] == 0xAA, "read() sees a store through the mapping");
	EXPECT_OK(msync(m, LEN, MS_SYNC));
	{
		uint8_t want[5000];

		memset(want, 0xAA, sizeof(want));
		odirect_check("after msync", 100, 5000, want);
	}

	/* a pwrite across a stripe edge: the mapping sees it at once */
	memset(buf, 0xBB, 20);
	EXPECT_EQ(pwrite(fd, buf, 20, 2 * MiB - 10), 20);
	EXPECT(m[2 * MiB - 10] == 0xBB && m[2 * MiB + 9] == 0xBB, "mapping sees a pwrite");

	/* another process maps the file and stores; we see it, and it sees ours */
	pid = fork();
	IT_MUST(pid);
	if (pid == 0) {
		int cfd = open(P("mapped"), O_RDWR);
		uint8_t *cm;

		if (cfd < 0)
			_exit(2);
		cm = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
		if (cm == MAP_FAILED)
			_exit(3);
		if (cm[100] != 0xAA || cm[2 * MiB - 10] != 0xBB)
			_exit(4);
		memset(cm + MiB, 0xCC, 4096);
		if (msync(cm, LEN, MS_SYNC) < 0)
			_exit(5);
		munmap(cm, LEN);
		close(cfd);
		_exit(0);
	}
	EXPECT_EQ(waitpid(pid, &st, 0), pid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child mapping saw our stores (status %d)",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	EXPECT(m[MiB] == 0xCC && m[MiB + 4095] == 0xCC, "we see the child's stores");

	/* the page past the old end, written only through the mapping */
	memset(m + 3 * MiB, 0xDD, 8192);
	EXPECT_OK(msync(m, LEN, MS_SYNC));
	EXPECT_OK(munmap(m, LEN));
	EXPECT_OK(fsync(fd));
	EXPECT_OK(close(fd));

	expected(e);
	odirect_check("whole file after munmap", 0, LEN, e);
	drop_caches();
	{
		uint8_t *r = malloc(LEN);

		IT_MUST(fd = open(P("mapped"), O_RDONLY));
		EXPECT_EQ(it_read_all(fd, r, LEN + 1, 0), LEN);
		EXPECT(memcmp(r, e, LEN) == 0, "file content after a cache drop");
		close(fd);
		free(r);
	}
	free(e);
}

static void it_verify(void)
{
	uint8_t *e = malloc(LEN), *r = malloc(LEN), *m;
	int fd;

	IT_MUST(e && r ? 0 : -1);
	expected(e);
	IT_MUST(fd = open(P("mapped"), O_RDWR));
	EXPECT_EQ(it_read_all(fd, r, LEN + 1, 0), LEN);
	EXPECT(memcmp(r, e, LEN) == 0, "file content after remount");
	m = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	IT_MUST(m == MAP_FAILED ? -1 : 0);
	EXPECT(memcmp(m, e, LEN) == 0, "mapping after remount");
	munmap(m, LEN);
	close(fd);
	free(e);
	free(r);
}
