/* SPDX-License-Identifier: MIT */
/*
 * framefs-raidbench: the RAID layer against the raw members, in one run.
 *
 * 1. raw: every member written, then read, sequentially, chunk-sized I/Os
 *    through the same io_uring engine, the same threads and queue depth
 *    the RAID engine uses, from and into a buffer as large as the RAID
 *    phases' (--buffer);
 * 2. RAID: the whole data space written with full-stripe requests, read
 *    back, then read again with one member missing (a different one each
 *    run); the first run also verifies every byte it read, untimed.
 * A run goes raw write, RAID write, raw read, RAID read, degraded read: each
 * RAID phase right after the raw one its ratio divides by.
 *
 *   write_eff = raid write / ((members - parity) / members * raw write)
 *   read_eff  = raid read / raw read
 *   degraded_read_ratio = degraded read / healthy raid read
 *
 * Members are files in --dir (default /dev/shm, i.e. RAM), pre-touched so
 * that page allocation is not measured.  Each figure is the median of
 * --runs runs after one warm-up run; min and max are printed beside it.
 * A ratio is the median of the run-by-run ratios (each run's RAID figure
 * over the raw one measured just before it), so that a drift of the
 * machine's copy rate between runs does not enter it.  Beside each rate:
 * the CPU cores the phase kept busy (this process's threads, io_uring
 * workers included; a loop device's kernel thread is not).
 *
 * On members in RAM every transfer is a CPU copy between the page cache and
 * the caller's buffer, and its rate depends on how much of that buffer the
 * caches hold (L3 here: 32 MiB).  When the raw threads cycled 32 MiB each,
 * a RAID5 x 8 read into 28 MiB went 1.08 and 1.23 x as fast as the raw read,
 * one into 448 MiB 0.91 and 0.99 x.  So every phase, raw
 * and RAID, cycles through buffers of one size, --buffer, by default 64 of
 * the RAID's requests (2 stripes each): 192 MiB for RAID5 x 4.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/uring.h"
#include "raid/raid.h"

struct cfg {
	const char *dir;
	unsigned level, members, workers, depth, runs, inflight, window, ops;
	uint32_t chunk, piece;
	uint64_t member_bytes;
	uint64_t buffer; /* bytes every phase moves its data from or into (0: the default) */
	bool keep;
	bool ring_only; /* members in RAM through io_uring too (raw and RAID): see io/uring.h */
	char *use;  /* comma-separated existing members (e.g. loop devices) */
};

static char paths[FF_MEMBERS_MAX][512];
static const char *pp[FF_MEMBERS_MAX];

static void die(const char *what, int rc)
{
	fprintf(stderr, "framefs-raidbench: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

/* Create (or take --use devices) and pre-touch every member with a full
 * O_DIRECT write of zeros. */
static void make_members(struct cfg *c)
{
	void *z = ff_alloc_aligned(FF_MiB);
	char *save = NULL, *tok = c->use ? strtok_r(c->use, ",", &save) : NULL;

	memset(z, 0, FF_MiB);
	if (!c->use && mkdir(c->dir, 0700) < 0 && errno != EEXIST)
		die(c->dir, errno);
	for (unsigned i = 0; i < c->members; i++) {
		int fd;

		if (c->use) {
			if (!tok)
				die("--use lists fewer paths than --members", EINVAL);
			snprintf(paths[i], sizeof(paths[i]), "%s", tok);
			tok = strtok_r(NULL, ",", &save);
		} else {
			snprintf(paths[i], sizeof(paths[i]), "%s/member%u.img", c->dir, i);
		}
		pp[i] = paths[i];
		fd = open(paths[i], O_RDWR | O_DIRECT | (c->use ? 0 : O_CREAT | O_TRUNC), 0600);
		if (fd < 0)
			die(paths[i], errno);
		if (c->use) {
			off_t end = lseek(fd, 0, SEEK_END);

			if (end > 0 && (uint64_t)end < c->member_bytes)
				c->member_bytes = (uint64_t)end;
		}
		for (uint64_t off = 0; off < c->member_bytes; off += FF_MiB)
			if (pwrite(fd, z, FF_MiB, (off_t)off) != (ssize_t)FF_MiB)
				die(paths[i], errno);
		close(fd);
	}
	free(z);
}

/* ---- raw: members through bare rings ---------------------------------- */

struct raw_thread {
	const struct cfg *c;
	struct ff_member **m;
	unsigned first, count; /* members this thread drives */
	int op;
	uint64_t bytes;        /* per member */
	char *buf;             /* this thread's slice of the buffer */
	uint64_t slice;        /* its size, whole chunks, >= depth chunks */
	pthread_t t;
	int rc;
};

static void raw_done(struct ff_io_req *req)
{
	unsigned *inflight = req->priv;

	if (req->result < 0)
		die("raw I/O", req->result);
	(*inflight)--;
	req->priv = NULL; /* slot free again */
}

/* Keep `depth` chunk-sized requests in flight, round-robin over this
 * thread's members, until each has moved t->bytes. */
static void *raw_main(void *arg)
{
	struct raw_thread *t = arg;
	const struct cfg *c = t->c;
	struct ff_io_req *reqs = calloc(c->depth, sizeof(*reqs));
	uint64_t next[FF_MEMBERS_MAX] = { 0 }, total = 0, want = t->bytes * t->count, cursor = 0;
	unsigned inflight = 0, rr = 0;
	struct ff_ring ring;
	int rc;

	rc = ff_ring_init(&ring, t->m + t->first, t->count, c->depth);
	if (rc < 0)
		die("ring", rc);
	while (total < want || inflight) {
		for (unsigned i = 0; i < c->depth && total < want; i++) {
			struct ff_io_req *q = &reqs[i];
			unsigned k = rr++ % t->count;

			if (q->priv)
				continue;
			while (next[k] >= t->bytes)
				k = rr++ % t->count;
			memset(q, 0, sizeof(*q));
			q->op = (uint8_t)t->op;
			q->member = (uint16_t)k;
			q->off = next[k];
			q->len = c->chunk;
			/* the slice cycles; at most depth of its chunks are in flight */
			q->buf = t->buf + cursor % t->slice;
			cursor += c->chunk;
			q->priv = &inflight;
			q->complete = raw_done;
			next[k] += c->chunk;
			total += c->chunk;
			inflight++;
			ff_ring_queue(&ring, q);
		}
		rc = ff_ring_reap(&ring, true);
		if (rc < 0)
			die("ring", rc);
	}
	ff_ring_exit(&ring);
	free(reqs);
	return NULL;
}

/* MB/s over all members (10^6 bytes), or dies.  The threads share buf
 * (c->buffer bytes, touched before) in equal slices. */
static double raw_run(const struct cfg *c, struct ff_member **m, int op, uint64_t bytes, char *buf)
{
	struct raw_thread t[FF_RAID_WORKERS_MAX];
	unsigned nt = FF_MIN(c->workers, c->members);
	uint64_t slice = c->buffer / nt / c->chunk * c->chunk;
	uint64_t t0 = ff_mono_ns(), dt;

	for (unsigned i = 0; i < nt; i++) {
		t[i] = (struct raw_thread){ .c = c, .m = m, .op = op, .bytes = bytes,
					    .buf = buf + slice * i, .slice = slice };
		t[i].first = c->members * i / nt;
		t[i].count = c->members * (i + 1) / nt - t[i].first;
		pthread_create(&t[i].t, NULL, raw_main, &t[i]);
	}
	for (unsigned i = 0; i < nt; i++) {
		pthread_join(t[i].t, NULL);
		if (t[i].rc < 0)
			die("raw I/O", t[i].rc);
	}
	dt = ff_mono_ns() - t0;
	return (double)bytes * c->members / ((double)dt / 1e9) / 1e6;
}

/* ---- RAID ------------------------------------------------------------- */

struct raid_run {
	struct ff_raid *r;
	int op;
	uint64_t req_bytes, next, end, buffer;
	unsigned inflight;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int err;
	char *buf;
};

static void raid_done(struct ff_raid_io *io);

/* Caller holds rr->lock. */
static void raid_issue(struct raid_run *rr, struct ff_raid_io *io)
{
	uint64_t len = FF_MIN(rr->req_bytes, rr->end - rr->next);
	int rc;

	memset(io, 0, offsetof(struct ff_raid_io, result));
	io->op = (uint8_t)rr->op;
	io->space = FF_SPACE_DATA;
	io->off = rr->next;
	io->len = len;
	io->buf = rr->buf + rr->next % rr->buffer;
	io->done = raid_done;
	io->priv = rr;
	rr->next += len;
	rr->inflight++;
	rc = ff_raid_submit(rr->r, io);
	if (rc < 0)
		die("submit", rc);
}

static void raid_done(struct ff_raid_io *io)
{
	struct raid_run *rr = io->priv;

	pthread_mutex_lock(&rr->lock);
	rr->inflight--;
	if (io->result < 0)
		rr->err = io->result;
	if (rr->next < rr->end && !rr->err)
		raid_issue(rr, io);
	if (!rr->inflight)
		pthread_cond_signal(&rr->cond);
	pthread_mutex_unlock(&rr->lock);
}

static double raid_run(const struct cfg *c, struct ff_raid *r, int op, char *buf)
{
	const struct ff_geom *g = ff_raid_geom(r);
	struct raid_run rr = { .r = r, .op = op, .end = g->data_bytes, .buf = buf, .buffer = c->buffer };
	struct ff_raid_io *ios = calloc(c->inflight, sizeof(*ios));
	uint64_t t0 = ff_mono_ns(), dt;

	rr.req_bytes = g->stripe_bytes * 2;
	pthread_mutex_init(&rr.lock, NULL);
	pthread_cond_init(&rr.cond, NULL);
	pthread_mutex_lock(&rr.lock);
	for (unsigned i = 0; i < c->inflight && rr.next < rr.end; i++)
		raid_issue(&rr, &ios[i]);
	while (rr.inflight)
		pthread_cond_wait(&rr.cond, &rr.lock);
	pthread_mutex_unlock(&rr.lock);
	dt = ff_mono_ns() - t0;
	if (rr.err)
		die("raid I/O", rr.err);
	free(ios);
	return (double)g->data_bytes / ((double)dt / 1e9) / 1e6;
}

/* Untimed: every byte of the data space reads back as written (degraded). */
static void verify(struct ff_raid *r, const char *pattern, uint64_t window, char *tmp)
{
	const struct ff_geom *g = ff_raid_geom(r);
	uint64_t req = g->stripe_bytes * 2;

	for (uint64_t off = 0; off < g->data_bytes; off += req) {
		uint64_t len = FF_MIN(req, g->data_bytes - off);
		int rc = ff_raid_rw(r, FF_RAID_READ, FF_SPACE_DATA, off, tmp, len);

		if (rc < 0)
			die("verify read", rc);
		if (memcmp(tmp, pattern + off % window, len) != 0) {
			fprintf(stderr, "framefs-raidbench: data at %llu does not read back\n",
				(unsigned long long)off);
			exit(1);
		}
	}
}

/* ---- driver ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct series {
	const char *name;
	double v[32];
	double cores[32]; /* CPU time of the process (io_uring workers included) / wall time */
	unsigned n;
};

static double cpu_seconds(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
	       u.ru_stime.tv_usec / 1e6;
}

/* Start of one timed phase: its CPU and wall clocks. */
struct phase {
	double cpu;
	uint64_t t0;
};

static struct phase phase_start(void)
{
	return (struct phase){ cpu_seconds(), ff_mono_ns() };
}

/* Record a phase's rate (MB/s) and the cores it kept busy. */
static void phase_end(struct series *s, struct phase p, double mbs)
{
	double wall = (double)(ff_mono_ns() - p.t0) / 1e9;

	s->cores[s->n] = wall > 0 ? (cpu_seconds() - p.cpu) / wall : 0;
	if (getenv("RAIDBENCH_PHASES")) /* for perf report --time (perf record -k CLOCK_MONOTONIC) */
		fprintf(stderr, "phase %s %.6f,%.6f\n", s->name, (double)p.t0 / 1e9,
			(double)ff_mono_ns() / 1e9);
	s->v[s->n++] = mbs;
}

static double median_of(const double *v, unsigned n)
{
	double t[32];

	memcpy(t, v, n * sizeof(double));
	qsort(t, n, sizeof(double), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static double median(const struct series *s)
{
	return median_of(s->v, s->n);
}

static void range_of(const double *v, unsigned n, double *lo, double *hi)
{
	*lo = *hi = v[0];
	for (unsigned i = 1; i < n; i++) {
		*lo = FF_MIN(*lo, v[i]);
		*hi = FF_MAX(*hi, v[i]);
	}
}

/* Median rate, its spread, and the CPU cores the phase kept busy (median):
 * on RAM-backed members the members' transfers are CPU copies, so cores
 * busy tells a CPU-bound phase from a waiting one. */
static void print_series(const struct series *s)
{
	double lo, hi;

	range_of(s->v, s->n, &lo, &hi);
	printf("  %-28s %8.0f MB/s   (min %.0f, max %.0f, %u runs; %.2f cores busy)\n", s->name,
	       median(s), lo, hi, s->n, median_of(s->cores, s->n));
}

/* Median over runs of num[i] / (scale x den[i]), printed with its spread. */
static double paired_ratio(const char *name, const struct series *num, const struct series *den,
			   double scale)
{
	double q[32] = { 0 }, lo, hi;

	for (unsigned i = 0; i < num->n; i++)
		q[i] = num->v[i] / (scale * den->v[i]);
	range_of(q, num->n, &lo, &hi);
	printf("  %-28s %8.3f        (min %.3f, max %.3f, run by run)\n", name,
	       median_of(q, num->n), lo, hi);
	return median_of(q, num->n);
}

/* One timed raw phase on freshly opened members (raw covers the member bytes
 * the data space does: `bytes` of each). */
static void raw_phase(const struct cfg *c, struct series *s, int op, uint64_t bytes, char *buf)
{
	struct ff_member *m[FF_MEMBERS_MAX];
	struct phase ph;

	for (unsigned i = 0; i < c->members; i++) {
		struct ff_err e = { "" };

		m[i] = calloc(1, sizeof(struct ff_member));
		if (!m[i] || ff_member_open(m[i], pp[i], false, &e) < 0)
			die(m[i] ? e.msg : "member", m[i] ? EIO : ENOMEM);
		if (c->ring_only)
			m[i]->sync_io = false;
	}
	ph = phase_start();
	phase_end(s, ph, raw_run(c, m, op, bytes, buf));
	for (unsigned i = 0; i < c->members; i++) {
		ff_member_close(m[i]);
		free(m[i]);
	}
}

static struct ff_raid *assemble(const struct cfg *c, unsigned skip)
{
	struct ff_raid_opts o = { .workers = c->workers, .ring_depth = c->depth, .write_window = c->window,
				  .ops_per_worker = c->ops, .piece_bytes = c->piece, .ring_only = c->ring_only,
				  .read_only = skip < c->members };
	const char *list[FF_MEMBERS_MAX];
	struct ff_err err = { "" };
	struct ff_raid *r;
	unsigned k = 0;

	for (unsigned i = 0; i < c->members; i++)
		if (i != skip)
			list[k++] = pp[i];
	if (ff_raid_assemble(list, k, &o, &r, &err) < 0) {
		fprintf(stderr, "framefs-raidbench: %s\n", err.msg);
		exit(1);
	}
	return r;
}

/*
 * Parity alone, on one core: what a stripe costs the CPU when the members'
 * own transfers are DMA (NVMe) rather than memory copies (tmpfs here).
 * MB/s of data protected, over stripe-sized calls on fresh buffers.
 */
static double parity_rate(const struct ff_geom *g)
{
	const struct ff_raid_level *lv = ff_raid_level_get(g->level);
	size_t span = (size_t)g->stripe_bytes + (size_t)g->nparity * g->chunk_bytes;
	unsigned nstripes = (unsigned)FF_MAX(8ull, (256ull << 20) / span);
	uint8_t *mem = ff_alloc_aligned(span * nstripes);
	struct ff_gf_ctx gf;
	uint64_t t0, dt;

	if (!mem)
		return 0;
	memset(mem, 0x5a, span * nstripes);
	ff_gf_ctx_init(&gf, g->ndata);
	t0 = ff_mono_ns();
	for (unsigned k = 0; k < nstripes; k++) {
		void *slots[FF_MEMBERS_MAX];

		for (unsigned s = 0; s < g->nmembers; s++)
			slots[s] = mem + span * k + (size_t)s * g->chunk_bytes;
		lv->parity->gen(&gf, g->chunk_bytes, slots);
	}
	dt = ff_mono_ns() - t0; /* not counting the free(), which unmaps 256 MiB */
	free(mem);
	return (double)g->stripe_bytes * nstripes / ((double)dt / 1e9) / 1e6;
}

static void usage(void)
{
	printf("usage: framefs-raidbench [--dir DIR] [--level 5|6] [--members N] [--chunk SIZE]\n"
	       "                         [--size SIZE per member] [--workers N] [--depth N]\n"
	       "                         [--inflight N requests] [--window N stripes] [--ops N per worker]\n"
	       "                         [--piece SIZE of write rows on files in RAM] [--ring-only]\n"
	       "                         [--buffer SIZE every phase cycles through] [--runs N] [--keep]\n"
	       "                         [--use DEV,DEV,... existing members instead of files]\n");
}

static void parse(int argc, char **argv, struct cfg *c)
{
	static const struct option opts[] = {
		{ "dir", 1, 0, 'd' }, { "level", 1, 0, 'l' }, { "members", 1, 0, 'n' },
		{ "chunk", 1, 0, 'c' }, { "size", 1, 0, 's' }, { "workers", 1, 0, 'w' },
		{ "depth", 1, 0, 'q' }, { "runs", 1, 0, 'r' }, { "inflight", 1, 0, 'i' }, { "window", 1, 0, 'W' },
		{ "ops", 1, 0, 'o' }, { "piece", 1, 0, 'p' }, { "ring-only", 0, 0, 'R' },
		{ "keep", 0, 0, 'k' }, { "help", 0, 0, 'h' }, { "use", 1, 0, 'u' }, { "buffer", 1, 0, 'b' },
		{ 0, 0, 0, 0 },
	};
	uint64_t v;
	int o;

	while ((o = getopt_long(argc, argv, "d:l:n:c:s:w:q:r:i:W:o:p:Rkhu:b:", opts, NULL)) != -1) {
		switch (o) {
		case 'd': c->dir = optarg; break;
		case 'l': c->level = (unsigned)atoi(optarg); break;
		case 'n': c->members = (unsigned)atoi(optarg); break;
		case 'c':
			if (ff_parse_size(optarg, &v) < 0 || v > FF_CHUNK_MAX)
				die("--chunk", EINVAL);
			c->chunk = (uint32_t)v;
			break;
		case 's':
			if (ff_parse_size(optarg, &v) < 0)
				die("--size", EINVAL);
			c->member_bytes = v;
			break;
		case 'w': c->workers = (unsigned)atoi(optarg); break;
		case 'q': c->depth = (unsigned)atoi(optarg); break;
		case 'r': c->runs = (unsigned)FF_MIN(32, atoi(optarg)); break;
		case 'i': c->inflight = (unsigned)atoi(optarg); break;
		case 'W': c->window = (unsigned)atoi(optarg); break;
		case 'o': c->ops = (unsigned)atoi(optarg); break;
		case 'p':
			if (ff_parse_size(optarg, &v) < 0 || v < 4096 || (v & (v - 1)) || v > FF_CHUNK_MAX)
				die("--piece (a power of two, 4 KiB to the largest chunk)", EINVAL);
			c->piece = (uint32_t)v;
			break;
		case 'R': c->ring_only = true; break;
		case 'k': c->keep = true; break;
		case 'u': c->use = optarg; break;
		case 'b':
			if (ff_parse_size(optarg, &v) < 0 || v == 0)
				die("--buffer", EINVAL);
			c->buffer = v;
			break;
		case 'h': usage(); exit(0);
		default: usage(); exit(2);
		}
	}
	if (c->members < 3 || c->members > FF_MEMBERS_MAX || c->runs == 0 || c->workers == 0 ||
	    c->workers > FF_RAID_WORKERS_MAX || c->depth == 0 || c->inflight == 0) {
		usage();
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct cfg c = { .dir = "/dev/shm/framefs-raidbench", .level = 5, .members = 4, .workers = 2,
			 .depth = 64, .runs = 3, .inflight = 16, .chunk = 512 * 1024,
			 .member_bytes = 1024 * FF_MiB };
	struct series rw = { .name = "raw write" }, rrd = { .name = "raw read" }, w = { .name = "raid write" },
		      rd = { .name = "raid read" }, dg = { .name = "raid degraded read" };
	struct ff_raid_create_params p;
	struct ff_err err = { "" };
	struct ff_geom geom;          /* a copy: the array it came from is closed and reopened */
	const struct ff_geom *g = &geom;
	struct ff_raid *r;
	char *buf, *chk;
	uint64_t span;
	char sz[32], win[48];
	double we, re, dr;

	parse(argc, argv, &c);
	ff_log_set_level(FF_LOG_WARN);
	make_members(&c);
	memset(&p, 0, sizeof(p));
	p.level = c.level;
	p.chunk_bytes = c.chunk;
	p.force = true;
	snprintf(p.label, sizeof(p.label), "raidbench");
	if (ff_raid_create(pp, c.members, &p, &err) < 0) {
		fprintf(stderr, "framefs-raidbench: %s\n", err.msg);
		return 1;
	}
	r = assemble(&c, ~0u);
	geom = *ff_raid_geom(r);
	span = g->nstripes * g->chunk_bytes; /* bytes of each member the data space covers */
	/* whole RAID requests; the RAID writes need a slot per request in flight,
	 * the raw threads depth chunks each */
	if (!c.buffer)
		c.buffer = 64 * 2 * g->stripe_bytes;
	c.buffer = FF_ROUND_UP(c.buffer, 2 * g->stripe_bytes);
	if (c.buffer < (uint64_t)c.inflight * 2 * g->stripe_bytes ||
	    c.buffer / FF_MIN(c.workers, c.members) < (uint64_t)c.depth * c.chunk) {
		fprintf(stderr, "framefs-raidbench: --buffer must hold --inflight requests (%llu KiB each) "
			"and --depth chunks per thread\n", (unsigned long long)(2 * g->stripe_bytes / 1024));
		return 2;
	}
	snprintf(win, sizeof(win), c.window ? "%u stripes per worker" : "the engine's default", c.window);
	printf("framefs-raidbench: RAID%u, %u members of %s in %s, chunk %u KiB, %u workers, "
	       "queue depth %u, %u requests of %llu KiB in flight, write window %s\n", g->level,
	       g->nmembers, ff_fmt_bytes(c.member_bytes, sz, sizeof(sz)), c.use ? "given devices" : c.dir,
	       g->chunk_bytes / 1024, c.workers, c.depth, c.inflight,
	       (unsigned long long)(2 * g->stripe_bytes / 1024), win);
	printf("  member I/O on files in RAM: %s; write pieces: %s; ",
	       c.ring_only ? "through io_uring (--ring-only)" : "on the calling thread (io/uring.h)",
	       c.piece ? ff_fmt_bytes(c.piece, sz, sizeof(sz)) : "the engine's default");
	printf("every phase's buffer %s\n", ff_fmt_bytes(c.buffer, sz, sizeof(sz)));
	/* buf: the pattern the RAID writes; chk: what the RAID reads into, and
	 * the raw phases' buffer; both touched here, outside the timed runs */
	buf = ff_alloc_aligned(c.buffer);
	chk = ff_alloc_aligned(c.buffer);
	if (!buf || !chk)
		die("buffers", ENOMEM);
	for (size_t i = 0; i < c.buffer / 8; i++)
		((uint64_t *)buf)[i] = i * 0x9E3779B97F4A7C15ull;
	memset(chk, 0x5a, c.buffer);
	ff_raid_close(r);
	/* run 0 warms up (first touches of the members' pages by each path)
	 * and is not counted */
	for (unsigned run = 0; run <= c.runs; run++) {
		struct phase ph;

		if (run == 1)
			rw.n = rrd.n = w.n = rd.n = dg.n = 0;
		/* each RAID phase right after its raw one: the pair a ratio is
		 * made of, seconds apart at most */
		raw_phase(&c, &rw, FF_IO_WRITE, span, chk);
		r = assemble(&c, ~0u);
		ph = phase_start();
		phase_end(&w, ph, raid_run(&c, r, FF_RAID_WRITE, buf));
		if (atomic_load(&ff_raid_stats(r)->rmw_segments) ||
		    atomic_load(&ff_raid_stats(r)->rcw_segments))
			die("full-stripe writes read from members", EIO);
		ff_raid_close(r);
		raw_phase(&c, &rrd, FF_IO_READ, span, chk);
		r = assemble(&c, ~0u);
		ph = phase_start();
		phase_end(&rd, ph, raid_run(&c, r, FF_RAID_READ, chk));
		ff_raid_close(r);
		r = assemble(&c, run % c.members);
		ph = phase_start();
		phase_end(&dg, ph, raid_run(&c, r, FF_RAID_READ, chk));
		if (run == 0)
			verify(r, buf, c.buffer, chk);
		ff_raid_close(r);
	}
	print_series(&rw);
	print_series(&rrd);
	print_series(&w);
	print_series(&rd);
	print_series(&dg);
	printf("  %-28s %8.0f MB/s   (one core, data protected per second)\n", "parity alone", parity_rate(g));
	/* each ratio pairs the runs made one after the other (the machine's
	 * copy rate drifts over seconds), then takes the median */
	we = paired_ratio("write_eff", &w, &rw, (double)g->ndata / g->nmembers);
	re = paired_ratio("read_eff", &rd, &rrd, 1);
	dr = paired_ratio("degraded_read_ratio", &dg, &rd, 1);
	printf("RESULT level=%u members=%u write_eff=%.3f read_eff=%.3f degraded_read_ratio=%.3f "
	       "raw_write_mbs=%.0f raw_read_mbs=%.0f raid_write_mbs=%.0f raid_read_mbs=%.0f "
	       "degraded_read_mbs=%.0f\n", g->level, g->nmembers, we, re, dr, median(&rw),
	       median(&rrd), median(&w), median(&rd), median(&dg));
	if (!c.keep && !c.use) {
		for (unsigned i = 0; i < c.members; i++)
			unlink(pp[i]);
		rmdir(c.dir);
	}
	free(buf);
	free(chk);
	return 0;
}
