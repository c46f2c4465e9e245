/* SPDX-License-Identifier: MIT */
/*
 * framefs-createrate: empty-frame create rate of a directory.
 *
 * THREADS threads create FILES empty files in DIR between them (open
 * O_CREAT|O_EXCL, close; no data), thread t taking frames t, t+THREADS, ...
 * of one sequence named frame%06u.tst, as a frametest run with -t THREADS
 * names them.  The clock runs from the moment every thread is ready until
 * the last one is done; the rate is files created (and closed) per second.
 *
 * Stands alone (libc + pthreads) so that the benchmark scripts can build it
 * with a plain `cc -O2 -pthread` when no framefs build is at hand.
 *
 *   framefs-createrate [-t THREADS] [-n FILES] [-u] [-q] DIR
 *     -u  unlink the files afterwards (untimed)
 *     -q  print only the rate (creates/s), for scripts
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS_MAX 256

struct worker {
	pthread_t t;
	unsigned id;
	int err;           /* errno of the first failure, 0 if none */
	unsigned failed_at; /* frame number that failed */
};

static const char *dir;
static unsigned nthreads = 4, nfiles = 4000;
static pthread_barrier_t start;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void frame_path(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "%s/frame%06u.tst", dir, i);
}

static void *create_main(void *arg)
{
	struct worker *w = arg;
	char path[4096];

	pthread_barrier_wait(&start);
	for (unsigned i = w->id; i < nfiles; i += nthreads) {
		int fd;

		frame_path(path, sizeof(path), i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0 || close(fd) < 0) {
			w->err = errno;
			w->failed_at = i;
			break;
		}
	}
	pthread_barrier_wait(&start);
	return NULL;
}

static unsigned parse_count(const char *opt, const char *s, unsigned max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v == 0 || v > max) {
		fprintf(stderr, "framefs-createrate: %s: '%s' is not a number in 1..%u\n", opt, s, max);
		exit(2);
	}
	return (unsigned)v;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: framefs-createrate [-t THREADS] [-n FILES] [-u] [-q] DIR\n"
		   "Creates FILES empty files (open O_CREAT|O_EXCL, close) in DIR with THREADS\n"
		   "threads (default 4 threads, 4000 files) and prints creates per second.\n"
		   "  -u  unlink the files afterwards (untimed)\n"
		   "  -q  print only the rate\n");
}

int main(int argc, char **argv)
{
	struct worker w[THREADS_MAX];
	bool unlink_after = false, quiet = false;
	double t0, dt;
	int o, rc = 0;

	while ((o = getopt(argc, argv, "t:n:uqh")) != -1) {
		switch (o) {
		case 't': nthreads = parse_count("-t", optarg, THREADS_MAX); break;
		case 'n': nfiles = parse_count("-n", optarg, 100000000); break;
		case 'u': unlink_after = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	dir = argv[optind];
	if (access(dir, W_OK | X_OK) < 0) {
		fprintf(stderr, "framefs-createrate: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	/* one barrier before the clock starts, one when every thread is done */
	pthread_barrier_init(&start, NULL, nthreads + 1);
	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .id = i };
		if (pthread_create(&w[i].t, NULL, create_main, &w[i]) != 0) {
			fprintf(stderr, "framefs-createrate: cannot start thread %u\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	t0 = now();
	pthread_barrier_wait(&start);
	dt = now() - t0;
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].err && !rc) {
			char path[4096];

			frame_path(path, sizeof(path), w[i].failed_at);
			fprintf(stderr, "framefs-createrate: create %s: %s\n", path, strerror(w[i].err));
			rc = 1;
		}
	}
	if (unlink_after) {
		for (unsigned i = 0; i < nfiles; i++) {
			char path[4096];

			frame_path(path, sizeof(path), i);
			if (unlink(path) < 0 && errno != ENOENT && !rc) {
				fprintf(stderr, "framefs-createrate: unlink %s: %s\n", path, strerror(errno));
				rc = 1;
			}
		}
	}
	if (rc)
		return rc;
	if (quiet)
		printf("%.0f\n", nfiles / dt);
	else
		printf("framefs-createrate: %u empty files, %u threads, %.3f s, %.0f creates/s\n",
		       nfiles, nthreads, dt, nfiles / dt);
	return 0;
}
