/* SPDX-License-Identifier: MIT */
/*
 * Proves: small in-place writes into large files — what project databases
 * and caches of editing applications do — read back exactly what an
 * in-memory copy of each file says, through the page cache (its pages
 * dropped first, so the daemon answers) and with O_DIRECT, now and after a
 * remount (verify replays the same seeded steps into the copies alone):
 *   (a) a 24 MiB file written sequentially, then 2000 4 KiB writes at random
 *       4 KiB-aligned offsets, fsync after every 64;
 *   (b) 1,500 unaligned writes of 1 to 9,000 bytes at random offsets of a
 *       12 MiB file, and one across every 256 KiB boundary (so across every
 *       stripe boundary, whatever the chunk size and width: stripes are
 *       whole chunks of at least 256 KiB), read back at once now and then;
 *   (c) four threads doing (a) at once, each on its own file, two of them
 *       writing with O_DIRECT;
 *   (d) one 4 KiB block written 500 times (buffered, with some writes of a
 *       few bytes inside it, then with O_DIRECT), read back with O_DIRECT
 *       every 25 writes and fsync or fdatasync every 125: only that block
 *       changed;
 *   (e) a file overwritten 300 times, truncated to an offset inside a
 *       stripe, with and without an fsync first, extended again (ftruncate,
 *       or a write at the old end): past the truncation point zeros, then
 *       written over again;
 *   (f) a hole punched (FALLOC_FL_PUNCH_HOLE, unaligned ends) over a range
 *       written 300 times, with and without an fsync first: zeros in the
 *       hole, every byte around it kept; then written into again;
 *   (g) after each of 300 small buffered writes an O_DIRECT read of the
 *       blocks it touched returns the new bytes, with and without an fsync
 *       in between;
 *   (h) four threads writing 4 KiB blocks of one file with O_DIRECT at once
 *       (each its own blocks, fdatasync now and then).
 * The files stay for the verify pass; run_c.sh runs fsck.framefs -n -c after
 * each unmount.  IT_SEED changes the random offsets (default 1).
 */
#include <linux/falloc.h>
#include <pthread.h>
#include <stdbool.h>

#include "it.h"

#define KiB 1024u
#define MiB (1024u * 1024u)
#define BLK 4096u
#define BIG_LEN (24 * MiB)
#define MID_LEN (12 * MiB)
#define EDGE (256 * KiB) /* every stripe boundary is a multiple of it */
#define MAX_IO (64 * KiB + 2 * BLK)
#define NTHREADS 4

static uint64_t base_seed = 1;

/* splitmix64: the same seed, the same offsets in run and verify */
struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t x = (r->s += 0x9E3779B97F4A7C15ull);

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static size_t below(struct rng *r, size_t n)
{
	return (size_t)(rnd(r) % n);
}

static struct rng rng_for(uint64_t what)
{
	return (struct rng){ base_seed * 1000003u + what };
}

/*
 * A file and the bytes it must hold.  Every step changes the copy; with
 * io set it also does the system call (verify: io off, the copy rebuilt).
 * The first failed call is kept (err, err_what), for the thread that owns
 * the file to report: threads do not touch the check counters.
 */
struct img {
	char name[64];
	bool io;
	int fd;      /* buffered, O_RDWR */
	int dfd;     /* O_DIRECT, O_RDWR */
	uint8_t *b;  /* the copy */
	size_t len, cap;
	uint64_t seed, wseq; /* each write its own bytes: pattern seed + wseq */
	uint8_t *buf;        /* aligned, MAX_IO */
	int err;
	char err_what[96];
};

static void img_error(struct img *m, const char *what, size_t off, size_t n)
{
	if (m->err)
		return;
	m->err = errno ? errno : EIO;
	snprintf(m->err_what, sizeof(m->err_what), "%s at %zu len %zu", what, off, n);
}

static void img_open(struct img *m, const char *name, size_t cap, uint64_t seed, bool io)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->io = io;
	m->cap = cap;
	m->seed = seed;
	m->fd = m->dfd = -1;
	m->b = calloc(1, cap);
	IT_MUST(m->b ? 0 : -1);
	IT_MUST(posix_memalign((void **)&m->buf, BLK, MAX_IO) == 0 ? 0 : -1);
	if (!io)
		return;
	IT_MUST(m->fd = open(P("%s", name), O_CREAT | O_TRUNC | O_RDWR, 0644));
	IT_MUST(m->dfd = open(P("%s", name), O_RDWR | O_DIRECT));
}

static void img_close(struct img *m)
{
	if (m->fd >= 0 && close(m->fd) < 0)
		img_error(m, "close", 0, 0);
	if (m->dfd >= 0 && close(m->dfd) < 0)
		img_error(m, "close O_DIRECT", 0, 0);
	m->fd = m->dfd = -1;
	free(m->b);
	free(m->buf);
	m->b = m->buf = NULL;
}

/* n bytes at off, of pattern `seed`, through fd (buffered or O_DIRECT). */
static void img_put(struct img *m, int fd, size_t off, size_t n, uint64_t seed)
{
	uint8_t *buf = fd == m->dfd ? m->buf : m->b + off;

	if (off + n > m->cap) {
		errno = EFBIG;
		img_error(m, "write past the test's buffer", off, n);
		return;
	}
	if (off > m->len)
		memset(m->b + m->len, 0, off - m->len);
	it_fill(m->b + off, n, seed, off);
	if (off + n > m->len)
		m->len = off + n;
	if (!m->io)
		return;
	if (fd == m->dfd)
		memcpy(buf, m->b + off, n);
	if (it_write_all(fd, buf, n, (off_t)off) < 0)
		img_error(m, fd == m->dfd ? "O_DIRECT pwrite" : "pwrite", off, n);
}

static void img_write(struct img *m, size_t off, size_t n, bool direct)
{
	img_put(m, direct ? m->dfd : m->fd, off, n, (m->seed << 24) + ++m->wseq);
}

/* The whole file written from the start in 1 MiB writes. */
static void img_fill(struct img *m, size_t len)
{
	for (size_t off = 0; off < len; off += MiB)
		img_write(m, off, len - off < MiB ? len - off : MiB, false);
}

static void img_sync(struct img *m, bool datasync)
{
	if (m->io && (datasync ? fdatasync(m->fd) : fsync(m->fd)) < 0)
		img_error(m, datasync ? "fdatasync" : "fsync", 0, 0);
}

static void img_truncate(struct img *m, size_t len)
{
	if (len > m->len)
		memset(m->b + m->len, 0, len - m->len);
	m->len = len;
	if (m->io && ftruncate(m->fd, (off_t)len) < 0)
		img_error(m, "ftruncate", len, 0);
}

static void img_punch(struct img *m, size_t off, size_t n)
{
	size_t end = off + n < m->len ? off + n : m->len;

	if (off < end)
		memset(m->b + off, 0, end - off);
	if (m->io && fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)n) < 0)
		img_error(m, "punch", off, n);
}

/* got (n bytes, a read of req bytes at off) against the copy; says where
 * they part. */
static void expect_same(const struct img *m, const uint8_t *got, size_t n, size_t req, size_t off,
			const char *how)
{
	size_t want_n = off < m->len ? (m->len - off < req ? m->len - off : req) : 0;
	size_t i = 0;

	it_checks++;
	if (n == want_n && memcmp(got, m->b + off, n) == 0)
		return;
	while (i < n && i < want_n && got[i] == m->b[off + i])
		i++;
	if (i < n && i < want_n)
		IT_FAIL("%s: %s at %zu+%zu: byte %zu (block %zu) is 0x%02x, expected 0x%02x", m->name, how, off,
			n, off + i, (off + i) / BLK, got[i], m->b[off + i]);
	else
		IT_FAIL("%s: %s at %zu: %zu bytes read, expected %zu", m->name, how, off, n, want_n);
}

/* The file, opened anew, holds the copy: its size, a buffered read once
 * its cached pages are dropped (so the daemon answers), an O_DIRECT read. */
static void img_check(struct img *m, const char *when)
{
	size_t cap = (m->len + 2 * BLK) & ~(size_t)(BLK - 1);
	uint8_t *buf;
	char how[96];
	struct stat st;
	ssize_t n;
	int fd;

	EXPECT(m->err == 0, "%s: %s: %s (%s)", m->name, when, m->err_what, strerror(m->err));
	IT_MUST(posix_memalign((void **)&buf, BLK, cap) == 0 ? 0 : -1);
	IT_MUST(fd = open(P("%s", m->name), O_RDONLY));
	EXPECT_OK(fstat(fd, &st));
	EXPECT(st.st_size == (off_t)m->len, "%s: %s: size %lld, expected %zu", m->name, when,
	       (long long)st.st_size, m->len);
	EXPECT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	n = it_read_all(fd, buf, cap, 0);
	snprintf(how, sizeof(how), "%s, buffered read", when);
	expect_same(m, buf, n < 0 ? 0 : (size_t)n, cap, 0, how);
	close(fd);
	memset(buf, 0xA5, cap);
	IT_MUST(fd = open(P("%s", m->name), O_RDONLY | O_DIRECT));
	n = it_read_all(fd, buf, cap, 0);
	snprintf(how, sizeof(how), "%s, O_DIRECT read", when);
	expect_same(m, buf, n < 0 ? 0 : (size_t)n, cap, 0, how);
	close(fd);
	free(buf);
}

/* The blocks [off, off + n) touches, read with O_DIRECT through dfd. */
static void img_check_direct(struct img *m, size_t off, size_t n, const char *how)
{
	size_t a = off & ~(size_t)(BLK - 1), e = (off + n + BLK - 1) & ~(size_t)(BLK - 1);
	ssize_t got;

	if (e - a > MAX_IO)
		e = a + MAX_IO;
	got = pread(m->dfd, m->buf, e - a, (off_t)a);
	EXPECT(got >= 0, "%s: O_DIRECT pread at %zu: %s", m->name, a, strerror(errno));
	expect_same(m, m->buf, got < 0 ? 0 : (size_t)got, e - a, a, how);
}

/* The bytes [off, off + n) read back at once through the buffered fd. */
static void img_check_buffered(struct img *m, size_t off, size_t n, const char *how)
{
	uint8_t tmp[9000 + 16];
	ssize_t got = it_read_all(m->fd, tmp, n, (off_t)off);

	EXPECT(got >= 0, "%s: pread at %zu: %s", m->name, off, strerror(errno));
	expect_same(m, tmp, got < 0 ? 0 : (size_t)got, n, off, how);
}

/* A write of n bytes across the boundary at `edge`, 2 <= n, inside the file. */
static void across(struct img *m, struct rng *r, size_t edge, size_t n)
{
	size_t off = edge - 1 - below(r, n - 1);

	if (off + n > m->len)
		n = m->len - off;
	img_write(m, off, n, false);
}

/* One small buffered write in [lo, hi): 4 KiB aligned, 64 KiB aligned,
 * 1..9000 bytes anywhere, across a 4 KiB boundary, across a 256 KiB one. */
static void small_write(struct img *m, struct rng *r, size_t lo, size_t hi, size_t *off_out, size_t *n_out)
{
	size_t p = below(r, 100), off, n;

	if (p < 40 || (p < 55 && hi - lo < 2 * 64 * KiB)) {
		n = BLK;
		off = lo + below(r, (hi - lo) / BLK) * BLK;
	} else if (p < 55) {
		n = 64 * KiB;
		off = lo + below(r, (hi - lo - n) / BLK + 1) * BLK;
	} else if (p < 75) {
		n = 1 + below(r, 9000);
		off = lo + below(r, hi - lo - n + 1);
	} else {
		/* the boundaries k * unit with lo < k * unit < hi: k0..k1 (the
		 * ranges the steps use hold several of either unit) */
		size_t unit = p < 90 ? BLK : EDGE, k0 = lo / unit + 1, k1 = (hi - 1) / unit;
		size_t edge = (k0 + below(r, k1 - k0 + 1)) * unit;

		n = 2 + below(r, p < 90 ? 8191 : 8999);
		off = edge - 1 - below(r, n - 1);
		if (off < lo)
			off = lo;
		if (off + n > hi)
			n = hi - off;
	}
	img_write(m, off, n, false);
	*off_out = off;
	*n_out = n;
}

/* (a): nwrites 4 KiB writes at random aligned offsets, fsync every 64th. */
static void random_4k(struct img *m, struct rng *r, int nwrites, bool direct)
{
	for (int i = 1; i <= nwrites; i++) {
		img_write(m, below(r, m->len / BLK) * BLK, BLK, direct);
		if (i % 64 == 0)
			img_sync(m, false);
	}
	img_sync(m, false);
}

static void step_a(struct img *m, bool io)
{
	struct rng r = rng_for('a');

	img_open(m, "a-random-4k", BIG_LEN, 1, io);
	img_fill(m, BIG_LEN);
	random_4k(m, &r, 2000, false);
}

static void step_b(struct img *m, bool io)
{
	struct rng r = rng_for('b');
	size_t off, n;

	img_open(m, "b-unaligned", MID_LEN, 2, io);
	img_fill(m, MID_LEN);
	for (int i = 1; i <= 1500; i++) {
		n = 1 + below(&r, 9000);
		off = below(&r, MID_LEN - n + 1);
		img_write(m, off, n, false);
		if (io && i % 7 == 0)
			img_check_buffered(m, off, n, "read back at once");
		if (i % 100 == 0)
			img_sync(m, i % 200 == 0);
		if (i % 30 == 0 && (size_t)(i / 30) * EDGE < MID_LEN) /* the 256 KiB boundaries, in turn */
			across(m, &r, (size_t)(i / 30) * EDGE, 2 + below(&r, 8999));
	}
	img_sync(m, false);
}

struct thread_arg {
	struct img m;
	int t;
	bool io;
};

static void *step_c_thread(void *arg)
{
	struct thread_arg *a = arg;
	struct rng r = rng_for('c' * 16 + (uint64_t)a->t);
	char name[32];

	snprintf(name, sizeof(name), "c-thread%d", a->t);
	img_open(&a->m, name, BIG_LEN, 10 + (uint64_t)a->t, a->io);
	img_fill(&a->m, BIG_LEN);
	random_4k(&a->m, &r, 2000, a->t % 2 == 1);
	return NULL;
}

static void step_c(bool io)
{
	struct thread_arg a[NTHREADS];
	pthread_t t[NTHREADS];

	for (int i = 0; i < NTHREADS; i++) {
		a[i].t = i;
		a[i].io = io;
		if (io)
			IT_MUST(-pthread_create(&t[i], NULL, step_c_thread, &a[i]));
		else
			step_c_thread(&a[i]);
	}
	for (int i = 0; i < NTHREADS; i++) {
		if (io)
			pthread_join(t[i], NULL);
		img_check(&a[i].m, io ? "after 4 threads' random 4 KiB writes" : "after the remount");
		img_close(&a[i].m);
	}
}

static void step_d(struct img *m, bool io)
{
	const size_t blk = 5 * MiB + 3 * BLK;
	struct rng r = rng_for('d');

	img_open(m, "d-same-block", MID_LEN, 3, io);
	img_fill(m, MID_LEN);
	for (int i = 1; i <= 500; i++) {
		bool direct = i > 250;

		if (!direct && i % 10 == 5) {
			size_t n = 1 + below(&r, 100);

			img_write(m, blk + below(&r, BLK - n + 1), n, false);
		} else {
			img_write(m, blk, BLK, direct);
		}
		if (i % 125 == 0) /* then the reads after it find the block on the members */
			img_sync(m, i == 250);
		if (io && i % 25 == 0)
			img_check_direct(m, blk, BLK, "the block rewritten, read with O_DIRECT");
	}
}

/* (e): overwritten, truncated inside a stripe, extended, written again. */
static void step_e(struct img *m, int variant, bool io)
{
	const size_t cut = 7 * MiB + 123457;
	struct rng r = rng_for('e' * 16 + (uint64_t)variant);
	size_t off, n;

	img_open(m, variant ? "e-truncate-synced" : "e-truncate", MID_LEN, 4 + (uint64_t)variant, io);
	img_fill(m, MID_LEN);
	for (int i = 0; i < 300; i++)
		small_write(m, &r, 0, MID_LEN, &off, &n);
	if (variant)
		img_sync(m, false);
	img_truncate(m, cut);
	if (io)
		img_check(m, "truncated inside a stripe");
	if (variant) /* extended by a write at the old end */
		img_write(m, MID_LEN - 1, 1, false);
	else
		img_truncate(m, MID_LEN);
	if (io)
		img_check(m, "extended again: zeros past the truncation point");
	for (int i = 0; i < 60; i++)
		small_write(m, &r, cut - 20000, MID_LEN, &off, &n);
	img_sync(m, false);
}

/* (f): a hole punched over a range written 300 times, written into again. */
static void step_f(struct img *m, int variant, bool io)
{
	const size_t a = 3 * MiB + 1000, b = 6 * MiB + 333;
	struct rng r = rng_for('f' * 16 + (uint64_t)variant);
	size_t off, n;

	img_open(m, variant ? "f-punch-synced" : "f-punch", MID_LEN, 6 + (uint64_t)variant, io);
	img_fill(m, MID_LEN);
	for (int i = 0; i < 300; i++)
		small_write(m, &r, 2 * MiB, 7 * MiB, &off, &n);
	if (variant)
		img_sync(m, false);
	img_punch(m, a, b - a);
	if (io)
		img_check(m, "hole punched over overwritten blocks");
	for (int i = 0; i < 40; i++)
		small_write(m, &r, a, b, &off, &n);
	img_sync(m, false);
}

/* (g): every small buffered write read back at once with O_DIRECT. */
static void step_g(struct img *m, bool io)
{
	struct rng r = rng_for('g');
	size_t off, n;

	img_open(m, "g-direct-reads", MID_LEN, 8, io);
	img_fill(m, MID_LEN);
	for (int i = 1; i <= 300; i++) {
		small_write(m, &r, 0, MID_LEN, &off, &n);
		if (i % 16 == 0)
			img_sync(m, i % 32 == 0);
		if (io)
			img_check_direct(m, off, n, i % 16 == 0 ? "O_DIRECT read after fsync"
								 : "O_DIRECT read, no fsync");
	}
	img_sync(m, false);
}

/* (h): NTHREADS O_DIRECT writers in one file, thread t on blocks t mod NTHREADS. */
struct h_arg {
	struct img *m;
	int t, fd;
	int err;
};

static void *step_h_thread(void *arg)
{
	struct h_arg *a = arg;
	struct rng r = rng_for('h' * 16 + (uint64_t)a->t);
	size_t nblk = a->m->len / BLK / NTHREADS;
	uint8_t *buf;

	if (posix_memalign((void **)&buf, BLK, BLK) != 0)
		return (void *)(intptr_t)ENOMEM;
	for (int i = 1; i <= 300 && !a->err; i++) {
		size_t off = (below(&r, nblk) * NTHREADS + (size_t)a->t) * BLK;
		uint64_t seed = ((uint64_t)9 << 40) + ((uint64_t)a->t << 32) + (uint64_t)i;

		it_fill(a->m->b + off, BLK, seed, off); /* blocks of its own: no race */
		memcpy(buf, a->m->b + off, BLK);
		if (a->fd >= 0 && (pwrite(a->fd, buf, BLK, (off_t)off) != (ssize_t)BLK ||
				   (i % 50 == 0 && fdatasync(a->fd) < 0)))
			a->err = errno ? errno : EIO;
	}
	free(buf);
	return NULL;
}

static void step_h(struct img *m, bool io)
{
	struct h_arg a[NTHREADS];
	pthread_t t[NTHREADS];

	img_open(m, "h-parallel-direct", MID_LEN, 9, io);
	img_fill(m, MID_LEN);
	img_sync(m, false);
	for (int i = 0; i < NTHREADS; i++) {
		a[i] = (struct h_arg){ m, i, -1, 0 };
		if (!io) {
			step_h_thread(&a[i]);
			continue;
		}
		IT_MUST(a[i].fd = open(P("%s", m->name), O_WRONLY | O_DIRECT));
		IT_MUST(-pthread_create(&t[i], NULL, step_h_thread, &a[i]));
	}
	if (!io)
		return;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		EXPECT(a[i].err == 0, "h: O_DIRECT writer %d: %s", i, strerror(a[i].err));
		EXPECT_OK(fsync(a[i].fd));
		EXPECT_OK(close(a[i].fd));
	}
}

/* Each step builds its file (io) or its copy alone (verify), then checks. */
static void all_steps(bool io)
{
	const char *when = io ? "at the end" : "after the remount";
	struct img m;

	step_a(&m, io);
	img_check(&m, when);
	img_close(&m);
	step_b(&m, io);
	img_check(&m, when);
	img_close(&m);
	step_c(io);
	step_d(&m, io);
	img_check(&m, when);
	img_close(&m);
	for (int v = 0; v < 2; v++) {
		step_e(&m, v, io);
		img_check(&m, when);
		img_close(&m);
		step_f(&m, v, io);
		img_check(&m, when);
		img_close(&m);
	}
	step_g(&m, io);
	img_check(&m, when);
	img_close(&m);
	step_h(&m, io);
	img_check(&m, when);
	img_close(&m);
}

static void seed_from_env(void)
{
	const char *s = getenv("IT_SEED");

	if (s && *s)
		base_seed = strtoull(s, NULL, 10);
	printf("small-overwrites: seed %llu (IT_SEED to change)\n", (unsigned long long)base_seed);
}

static void it_run(void)
{
	seed_from_env();
	all_steps(true);
}

static void it_verify(void)
{
	seed_from_env();
	all_steps(false);
}
