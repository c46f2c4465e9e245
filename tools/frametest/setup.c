/* SPDX-License-Identifier: MIT */
/*
 * Before the clock starts: directories, the frame size of a read test, the
 * O_DIRECT decision, and every buffer and record array the run will use.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "dio.h"
#include "engine.h"

#define PROBE_NAME ".framefs-frametest-probe"
#define BUF_ALIGN 4096u
#define ROUND_UP(n, a) (((n) + (a) - 1) / (a) * (a))

uint64_t ft_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * FT_NS_PER_S + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 4, 5))) static int errf(char *err, size_t len, int rc,
						      const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

/* mkdir -p: a write test may name a directory that does not exist yet. */
static int make_path(const char *dir)
{
	char path[4096];
	size_t n = strlen(dir);

	if (n >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST)
			return -errno;
		path[i] = i < n ? '/' : '\0';
	}
	return 0;
}

static int open_top(struct ft_run *run, char *err, size_t len)
{
	const char *dir = run->cfg->dir;
	int rc = run->write ? make_path(dir) : 0;

	if (rc)
		return errf(err, len, rc, "cannot create %s: %s", dir, strerror(-rc));
	run->topfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (run->topfd < 0)
		return errf(err, len, -errno, "cannot open directory %s: %s", dir, strerror(errno));
	return 0;
}

static int make_subdirs(struct ft_run *run, struct ft_stream *st, char *err, size_t len)
{
	uint32_t per = run->cfg->files_per_dir;
	char name[64];

	if (!run->write || !per || run->cfg->single_file)
		return 0;
	for (uint64_t f = 0; f < run->cfg->frames; f += per) {
		ft_subdir_path(per, f, name, sizeof(name));
		if (mkdirat(st->dirfd, name, 0755) != 0 && errno != EEXIST)
			return errf(err, len, -errno, "cannot create %s/%s: %s", run->cfg->dir, name,
				    strerror(errno));
	}
	return 0;
}

static int open_stream_dir(struct ft_run *run, struct ft_stream *st, char *err, size_t len)
{
	char name[64];

	ft_stream_dir(run->own_dirs, st->id, name, sizeof(name));
	if (run->write && run->own_dirs && mkdirat(run->topfd, name, 0755) != 0 && errno != EEXIST)
		return errf(err, len, -errno, "cannot create %s/%s: %s", run->cfg->dir, name,
			    strerror(errno));
	st->dirfd = openat(run->topfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (st->dirfd < 0 && errno == ENOENT && !run->write)
		return errf(err, len, -ENOENT, "%s/%s does not exist: write %u stream(s) first",
			    run->cfg->dir, name, run->nstreams);
	if (st->dirfd < 0)
		return errf(err, len, -errno, "cannot open %s/%s: %s", run->cfg->dir, name,
			    strerror(errno));
	return make_subdirs(run, st, err, len);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int alloc_stream(struct ft_run *run, struct ft_stream *st, uint32_t id)
{
	const struct ft_config *c = run->cfg;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)id << 32 | 1);

	st->id = id;
	st->dirfd = -1;
	st->filefd = -1;
	if (pthread_mutex_init(&st->lock, NULL) != 0)
		return -ENOMEM;
	run->streams_ready++;
	st->recs = calloc(run->positions, sizeof(*st->recs));
	if (!st->recs)
		return -ENOMEM;
	ft_sched_init(&st->sched, &run->pace, run->write, run->positions, c->queue_max);
	if (c->order != FT_ORDER_RANDOM)
		return 0;
	st->perm = malloc(c->frames * sizeof(*st->perm));
	if (!st->perm)
		return -ENOMEM;
	for (uint64_t i = 0; i < c->frames; i++)
		st->perm[i] = (uint32_t)i;
	for (uint64_t i = c->frames - 1; i > 0; i--) {	/* Fisher-Yates */
		uint64_t j = xorshift(&seed) % (i + 1);
		uint32_t t = st->perm[i];

		st->perm[i] = st->perm[j];
		st->perm[j] = t;
	}
	return 0;
}

/* The first sector of the first frame (or stream file): n bytes read, or -1. */
static ssize_t read_sector0(int fd, uint8_t **sec)
{
	*sec = aligned_alloc(BUF_ALIGN, FT_SECTOR_BYTES);
	return fd >= 0 && *sec ? pread(fd, *sec, FT_SECTOR_BYTES, 0) : -1;
}

/*
 * A read test without a size takes it from the first frame: a --vary header
 * gives every frame's size; else a stream file's stamp, or a frame file's size.
 */
static int detect_size(struct ft_run *run, char *err, size_t len)
{
	struct ft_stream *st = &run->streams[0];
	bool one = run->cfg->single_file;
	char path[4096];
	struct stat sb;
	uint8_t *sec;
	ssize_t n;
	int fd, rc = 0;

	if (run->frame_bytes || run->write || run->cfg->empty)
		return 0;
	if (one)
		snprintf(path, sizeof(path), "%s", FT_STREAM_FILE);
	else
		ft_frame_path(&run->names, run->cfg->files_per_dir, 0, path, sizeof(path));
	fd = openat(st->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && !one)
		return errf(err, len, -errno, "cannot read the first frame %s: %s", path,
			    strerror(errno));
	n = read_sector0(fd, &sec);
	if (n > 0 && ft_stamped_vary(sec, (uint64_t)n, &run->vary)) {
		run->frame_bytes = run->vary.max;
		run->vary_detected = true;
	} else if (one) {
		run->frame_bytes = n > 0 ? ft_stamped_frame_bytes(sec, (uint64_t)n) : 0;
		if (!run->frame_bytes)
			rc = errf(err, len, -EINVAL, "%s/%s: no stamped frame to take the size "
				  "from; give -r SIZE", run->cfg->dir, FT_STREAM_FILE);
	} else if (fstat(fd, &sb) != 0) {
		rc = errf(err, len, -errno, "cannot read the first frame %s: %s", path,
			  strerror(errno));
	} else if (sb.st_size <= 0) {
		rc = errf(err, len, -EINVAL, "the first frame %s is empty; give -r SIZE or -e", path);
	} else {
		run->frame_bytes = (uint64_t)sb.st_size;
	}
	if (fd >= 0)
		close(fd);
	free(sec);
	run->size_detected = !rc;
	return rc;
}

/*
 * Each stream's bytes (-n frames once each), and with -s and --vary where
 * every frame starts in the stream file: frame sizes differ per stream.
 */
static int stream_sizes(struct ft_run *run)
{
	uint64_t frames = run->cfg->frames;
	bool vary = ft_vary_on(&run->vary);

	for (uint32_t s = 0; s < run->nstreams; s++) {
		struct ft_stream *st = &run->streams[s];
		uint64_t off = 0;

		if (!vary) {
			st->total_bytes = frames * run->frame_bytes;
			continue;
		}
		if (run->cfg->single_file) {
			st->offsets = malloc((frames + 1) * sizeof(*st->offsets));
			if (!st->offsets)
				return -ENOMEM;
		}
		for (uint64_t i = 0; i < frames; i++) {
			if (st->offsets)
				st->offsets[i] = off;
			off += ft_vary_bytes(&run->vary, st->id, i);
		}
		if (st->offsets)
			st->offsets[frames] = off;
		st->total_bytes = off;
	}
	return 0;
}

/* -c: the middle PERC%, widened to whole 64 KiB chunks so that it can be checked. */
static void io_range(struct ft_run *run)
{
	run->io_off = 0;
	run->io_len = run->frame_bytes;
	if (!run->cfg->empty)
		ft_crop_range(run->frame_bytes, run->cfg->crop_pct, &run->io_off, &run->io_len);
}

static int open_probe(struct ft_run *run, char *path, size_t len)
{
	struct ft_stream *st = &run->streams[0];
	int flags = O_DIRECT | O_CLOEXEC;

	if (run->write)
		return openat(st->dirfd, PROBE_NAME, flags | O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (run->cfg->single_file)
		snprintf(path, len, "%s", FT_STREAM_FILE);
	else
		ft_frame_path(&run->names, run->cfg->files_per_dir, 0, path, len);
	return openat(st->dirfd, path, flags | O_RDONLY);
}

/* With --vary every size, part (-c) and offset is whole 4 KiB: the alignment must divide it. */
static bool dio_fits(const struct ft_run *run)
{
	uint64_t a = run->align;

	if (ft_vary_on(&run->vary))
		return FT_VARY_ALIGN % a == 0;
	if (run->io_off % a || run->io_len % a)
		return false;
	return !run->cfg->single_file || run->frame_bytes % a == 0;
}

static int probe_direct(struct ft_run *run, char *err, size_t len)
{
	char path[4096] = PROBE_NAME;
	uint32_t oa = 0, ma = 0;
	bool told;
	int fd;

	run->align = BUF_ALIGN;
	if (run->cfg->empty)
		return 0;
	if (run->cfg->buffered) {
		snprintf(run->dio_note, sizeof(run->dio_note),
			 "direct I/O: off (--buffered); data goes through the page cache");
		return 0;
	}
	fd = open_probe(run, path, sizeof(path));
	if (fd < 0 && errno == EINVAL) {
		snprintf(run->dio_note, sizeof(run->dio_note),
			 "direct I/O: %s does not support O_DIRECT; falling back to buffered I/O "
			 "(figures include the page cache)", run->cfg->dir);
		return 0;
	}
	if (fd < 0)
		return errf(err, len, -errno, "cannot open %s/%s: %s", run->cfg->dir, path,
			    strerror(errno));
	told = ft_dio_align(fd, &oa, &ma) == 0;
	close(fd);
	if (run->write)
		unlinkat(run->streams[0].dirfd, PROBE_NAME, 0);
	if (told && ma > BUF_ALIGN)
		return errf(err, len, -EINVAL, "%s wants %u-byte aligned memory for O_DIRECT; "
			    "use --buffered", run->cfg->dir, ma);
	if (told)
		run->align = oa;
	if (run->cfg->io_size % run->align) {
		snprintf(run->dio_note, sizeof(run->dio_note),
			 "direct I/O: --io-size=%" PRIu64 " is not a multiple of the %" PRIu64
			 "-byte O_DIRECT alignment; falling back to buffered I/O", run->cfg->io_size,
			 run->align);
		return 0;
	}
	if (!dio_fits(run)) {
		snprintf(run->dio_note, sizeof(run->dio_note),
			 "direct I/O: %" PRIu64 "-byte frames are not a multiple of the %" PRIu64
			 "-byte O_DIRECT alignment; falling back to buffered I/O", run->io_len,
			 run->align);
		return 0;
	}
	run->direct = true;
	snprintf(run->dio_note, sizeof(run->dio_note),
		 "direct I/O: on (O_DIRECT, %" PRIu64 "-byte alignment %s, 4 KiB-aligned buffers)",
		 run->align, told ? "from statx" : "assumed");
	return 0;
}

static int open_stream_files(struct ft_run *run, char *err, size_t len)
{
	int flags = O_CLOEXEC | (run->direct ? O_DIRECT : 0);
	struct stat sb;

	if (!run->cfg->single_file)
		return 0;
	flags |= run->write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
	for (uint32_t s = 0; s < run->nstreams; s++) {
		struct ft_stream *st = &run->streams[s];

		st->filefd = openat(st->dirfd, FT_STREAM_FILE, flags, 0644);
		if (st->filefd < 0)
			return errf(err, len, -errno, "cannot open stream %u's %s: %s", s,
				    FT_STREAM_FILE, strerror(errno));
		if (run->write || fstat(st->filefd, &sb) != 0 ||
		    (uint64_t)sb.st_size >= st->total_bytes)
			continue;
		if (ft_vary_on(&run->vary))
			return errf(err, len, -EINVAL, "stream %u's %s is %" PRIu64 " bytes; -n %"
				    PRIu64 " frames of its --vary sizes need %" PRIu64, s,
				    FT_STREAM_FILE, (uint64_t)sb.st_size, run->cfg->frames,
				    st->total_bytes);
		return errf(err, len, -EINVAL, "stream %u's %s holds %" PRIu64
			    " frames; -n asks for %" PRIu64, s, FT_STREAM_FILE,
			    (uint64_t)sb.st_size / run->frame_bytes, run->cfg->frames);
	}
	return 0;
}

static int alloc_workers(struct ft_run *run)
{
	const struct ft_config *c = run->cfg;
	bool whole = run->write || ft_vary_on(&run->vary);	/* --vary: the largest frame */
	uint64_t buf_len = c->empty ? 0 : ROUND_UP(whole ? run->frame_bytes : run->io_len,
						   BUF_ALIGN);

	run->nworkers = run->nstreams * c->threads;
	run->workers = calloc(run->nworkers, sizeof(*run->workers));
	if (!run->workers)
		return -ENOMEM;
	for (uint32_t i = 0; i < run->nworkers; i++) {
		struct ft_worker *w = &run->workers[i];

		w->run = run;
		w->st = &run->streams[i / c->threads];
		if (!buf_len)
			continue;
		w->buf = aligned_alloc(BUF_ALIGN, buf_len);
		if (!w->buf)
			return -ENOMEM;
		/* Touch every page now, so that page faults stay out of the timed I/O. */
		if (run->write)
			ft_pattern_fill(&run->stamp, w->buf);
		else
			memset(w->buf, 0, buf_len);
	}
	return 0;
}

static void space_check(struct ft_run *run)
{
	struct statvfs sv;
	uint64_t need = 0, avail;

	if (!run->write || fstatvfs(run->topfd, &sv) != 0)
		return;
	for (uint32_t s = 0; s < run->nstreams; s++)
		need += run->streams[s].total_bytes;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail < need)
		snprintf(run->space_note, sizeof(run->space_note),
			 "warning: %s has %" PRIu64 " MiB free and the frames need %" PRIu64
			 " MiB (frames already there are overwritten)",
			 run->cfg->dir, avail >> 20, need >> 20);
}

static int prepare_data(struct ft_run *run, char *err, size_t len)
{
	int rc = detect_size(run, err, len);

	if (rc)
		return rc;
	if (stream_sizes(run))
		return errf(err, len, -ENOMEM, "out of memory for %" PRIu64 " frame offsets",
			    run->cfg->frames * run->nstreams);
	io_range(run);
	rc = probe_direct(run, err, len);
	if (!rc)
		rc = open_stream_files(run, err, len);
	if (rc)
		return rc;
	if (run->write && !run->cfg->empty) {
		uint64_t seed = ft_now_ns() ^ (uint64_t)getpid() << 40;

		rc = ft_vary_on(&run->vary) ? ft_stamp_init_vary(&run->stamp, &run->vary, seed)
					    : ft_stamp_init(&run->stamp, run->frame_bytes, seed);
		if (rc)
			return errf(err, len, rc, "cannot stamp %" PRIu64 "-byte frames: %s",
				    run->frame_bytes, strerror(-rc));
		run->stamp_ready = true;
	}
	if (alloc_workers(run))
		return errf(err, len, -ENOMEM, "out of memory for %u frame buffers of %" PRIu64
			    " bytes", run->nstreams * run->cfg->threads, run->frame_bytes);
	return 0;
}

int ft_run_prepare(struct ft_run *run, const struct ft_config *cfg, uint32_t nstreams,
		   bool own_dirs, char *err, size_t len)
{
	int rc;

	memset(run, 0, sizeof(*run));
	run->cfg = cfg;
	run->nstreams = nstreams;
	run->own_dirs = own_dirs;
	run->write = cfg->mode == FT_MODE_WRITE;
	run->pace = (struct ft_pace){ cfg->fps_num, cfg->fps_den, cfg->prebuffer };
	run->positions = cfg->frames * cfg->loops;
	run->vary = cfg->empty ? (struct ft_vary){ 0 } : cfg->vary;
	run->frame_bytes = cfg->empty ? 0 : ft_vary_on(&cfg->vary) ? cfg->vary.max : cfg->frame_bytes;
	run->verify = !run->write && !cfg->empty && !cfg->no_verify;
	run->topfd = -1;
	ft_names_parse(cfg->name_pattern, &run->names);
	rc = open_top(run, err, len);
	if (rc)
		return rc;
	run->streams = calloc(nstreams, sizeof(*run->streams));
	if (!run->streams)
		return errf(err, len, -ENOMEM, "out of memory");
	for (uint32_t s = 0; s < nstreams; s++)
		run->streams[s].dirfd = run->streams[s].filefd = -1;
	for (uint32_t s = 0; s < nstreams; s++) {
		if (alloc_stream(run, &run->streams[s], s))
			return errf(err, len, -ENOMEM, "out of memory for %" PRIu64 " frame records",
				    run->positions * nstreams);
		rc = open_stream_dir(run, &run->streams[s], err, len);
		if (rc)
			return rc;
	}
	rc = prepare_data(run, err, len);
	if (rc)
		return rc;
	space_check(run);
	if (pthread_mutex_init(&run->gate_lock, NULL) != 0)
		return errf(err, len, -ENOMEM, "cannot create the start gate");
	if (pthread_cond_init(&run->gate_cond, NULL) != 0) {
		pthread_mutex_destroy(&run->gate_lock);
		return errf(err, len, -ENOMEM, "cannot create the start gate");
	}
	run->gate_ready = true;
	return 0;
}

void ft_run_free(struct ft_run *run)
{
	for (uint32_t i = 0; run->workers && i < run->nworkers; i++)
		free(run->workers[i].buf);
	free(run->workers);
	for (uint32_t s = 0; run->streams && s < run->nstreams; s++) {
		struct ft_stream *st = &run->streams[s];

		if (st->filefd >= 0)
			close(st->filefd);
		if (st->dirfd >= 0)
			close(st->dirfd);
		free(st->recs);
		free(st->perm);
		free(st->offsets);
		if (s < run->streams_ready)
			pthread_mutex_destroy(&st->lock);
	}
	free(run->streams);
	if (run->stamp_ready)
		ft_stamp_fini(&run->stamp);
	if (run->gate_ready) {
		pthread_cond_destroy(&run->gate_cond);
		pthread_mutex_destroy(&run->gate_lock);
	}
	if (run->topfd >= 0)
		close(run->topfd);
	memset(run, 0, sizeof(*run));
	run->topfd = -1;
}
