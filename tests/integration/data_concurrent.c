/* SPDX-License-Identifier: MIT */
/*
 * Proves: frame data written the ways media applications write it reads
 * back byte-identical, now and after a remount: one 48 MiB O_DIRECT write
 * (the kernel sends its 1 MiB requests concurrently and out of order), four
 * streams writing frame sequences (12,812,288-byte 2K frames, O_DIRECT,
 * 1 MiB requests) at once, four threads interleaving 1 MiB buffered writes
 * into one file, and odd-sized writes straddling chunk and stripe edges
 * from several threads.
 */
#include <pthread.h>

#include "it.h"

#define MiB (1024 * 1024)
#define FRAME 12812288u
#define NSTREAMS 4
#define NFRAMES 5
#define SHARED_LEN (40 * MiB)

static int odirect_write_file(const char *path, size_t len, uint64_t seed, size_t io)
{
	uint8_t *buf;
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_DIRECT, 0644), rc = 0;

	if (fd < 0)
		return -1;
	if (posix_memalign((void **)&buf, 4096, io) != 0) {
		close(fd);
		return -1;
	}
	for (size_t off = 0; off < len && rc == 0; off += io) {
		size_t n = len - off < io ? len - off : io;
		size_t an = (n + 4095) & ~(size_t)4095;

		it_fill(buf, an, seed, off);
		if (pwrite(fd, buf, an, (off_t)off) != (ssize_t)an)
			rc = -1;
	}
	free(buf);
	if (rc == 0 && len % 4096)
		rc = ftruncate(fd, (off_t)len); /* the tail past the frame */
	if (close(fd) < 0)
		rc = -1;
	return rc;
}

static void one_big_odirect(void)
{
	const size_t len = 48 * MiB;
	uint8_t *buf;
	int fd;

	IT_MUST(posix_memalign((void **)&buf, 4096, len) == 0 ? 0 : -1);
	it_fill(buf, len, 130, 0);
	IT_MUST(fd = open(P("big-odirect"), O_CREAT | O_WRONLY | O_DIRECT, 0644));
	EXPECT_EQ(write(fd, buf, len), (ssize_t)len);
	EXPECT_OK(close(fd));
	memset(buf, 0, len);
	IT_MUST(fd = open(P("big-odirect"), O_RDONLY | O_DIRECT));
	EXPECT_EQ(read(fd, buf, len), (ssize_t)len);
	EXPECT(it_mismatch(buf, len, 130, 0) < 0, "48 MiB O_DIRECT write reads back (O_DIRECT read)");
	close(fd);
	free(buf);
	it_check_file(P("big-odirect"), len, 130);
}

static void *stream_main(void *arg)
{
	int s = (int)(intptr_t)arg;

	for (int f = 0; f < NFRAMES; f++)
		if (odirect_write_file(P("seq%d/frame%06d.dpx", s, f), FRAME, 200 + (uint64_t)s * 100 + (uint64_t)f,
				       MiB) < 0)
			return (void *)(intptr_t)errno;
	return NULL;
}

static void check_streams(void)
{
	for (int s = 0; s < NSTREAMS; s++)
		for (int f = 0; f < NFRAMES; f++)
			it_check_file(P("seq%d/frame%06d.dpx", s, f), FRAME, 200 + (uint64_t)s * 100 + (uint64_t)f);
}

static void streams(void)
{
	pthread_t t[NSTREAMS];

	for (int s = 0; s < NSTREAMS; s++) {
		IT_MUST(mkdir(P("seq%d", s), 0755));
		IT_MUST(-pthread_create(&t[s], NULL, stream_main, (void *)(intptr_t)s));
	}
	for (int s = 0; s < NSTREAMS; s++) {
		void *r;

		pthread_join(t[s], &r);
		EXPECT(r == NULL, "stream %d: %s", s, strerror((int)(intptr_t)r));
	}
	check_streams();
}

struct shared_arg {
	int fd, t, nthreads;
	size_t block;
	uint64_t seed;
	int err;
};

static void *shared_main(void *arg)
{
	struct shared_arg *a = arg;
	uint8_t *buf = malloc(a->block);

	for (size_t off = (size_t)a->t * a->block; off < SHARED_LEN && !a->err;
	     off += (size_t)a->nthreads * a->block) {
		size_t n = SHARED_LEN - off < a->block ? SHARED_LEN - off : a->block;

		it_fill(buf, n, a->seed, off);
		if (it_write_all(a->fd, buf, n, (off_t)off) < 0)
			a->err = errno;
	}
	free(buf);
	return NULL;
}

/* nthreads write one file, each every nthreads-th block of `block` bytes */
static void shared_file(const char *name, size_t block, uint64_t seed)
{
	struct shared_arg a[4];
	pthread_t t[4];
	int fd;

	IT_MUST(fd = open(P("%s", name), O_CREAT | O_RDWR, 0644));
	for (int i = 0; i < 4; i++) {
		a[i] = (struct shared_arg){ fd, i, 4, block, seed, 0 };
		IT_MUST(-pthread_create(&t[i], NULL, shared_main, &a[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT(a[i].err == 0, "%s thread %d: %s", name, i, strerror(a[i].err));
	}
	EXPECT_OK(fsync(fd));
	EXPECT_OK(close(fd));
	it_check_file(P("%s", name), SHARED_LEN, seed);
}

static void it_run(void)
{
	one_big_odirect();
	streams();
	shared_file("shared-1m", MiB, 140);
	shared_file("shared-odd", 777777, 141); /* straddles chunk and stripe edges */
	shared_file("shared-small", 65536 + 3, 142);
}

static void it_verify(void)
{
	it_check_file(P("big-odirect"), 48 * MiB, 130);
	check_streams();
	it_check_file(P("shared-1m"), SHARED_LEN, 140);
	it_check_file(P("shared-odd"), SHARED_LEN, 141);
	it_check_file(P("shared-small"), SHARED_LEN, 142);
}
