/* SPDX-License-Identifier: MIT */
/*
 * Proves: a directory of 100,000 entries (a frame sequence) stays fast and
 * exact.  Creating them from several processes works; a full listing
 * returns every name exactly once; lookups (of present names after the
 * kernel's caches are dropped, so every one reaches the daemon, and of
 * absent names) cost per operation no more than 5x what they cost in a
 * 1,000-entry directory, and so does listing per entry — an indexed
 * directory, not a linear scan; listings taken while another process keeps
 * creating files never repeat a name and never miss one that existed before.
 *
 *   bigdir MNT run N     (N entries, default 100000)
 *   bigdir MNT verify N  (after a remount: the listing is exact again)
 */
#define IT_OWN_MAIN
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>

#include "it.h"

#define SMALL 1000
#define NEW 5000
#define RATIO_MAX 5.0
#define NPROC 4

static unsigned n_big;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);

	IT_MUST(fd);
	IT_MUST(write(fd, "2", 1));
	close(fd);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Create dir/frame%07u for every i < n with i % nproc == k, in nproc processes. */
static void create_parallel(const char *dir, unsigned first, unsigned n, unsigned nproc)
{
	pid_t pids[16];

	for (unsigned k = 0; k < nproc; k++) {
		pids[k] = fork();
		IT_MUST(pids[k]);
		if (pids[k] == 0) {
			for (unsigned i = first + k; i < first + n; i += nproc) {
				int fd = open(P("%s/frame%07u.dpx", dir, i), O_CREAT | O_EXCL | O_WRONLY, 0644);

				if (fd < 0) {
					fprintf(stderr, "create %s/frame%07u.dpx: %s\n", dir, i, strerror(errno));
					_exit(1);
				}
				close(fd);
			}
			_exit(0);
		}
	}
	for (unsigned k = 0; k < nproc; k++) {
		int st;

		IT_MUST(waitpid(pids[k], &st, 0));
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "creator %u failed", k);
	}
}

struct listing {
	unsigned total, dups, bad_names, found_old, found_new;
	double secs;
};

/* One full listing with getdents64; seen[] counts each frame number. */
static void list_dir(const char *dir, unsigned max_index, struct listing *l, unsigned old_count)
{
	static char buf[32768];
	unsigned char *seen = calloc(max_index, 1);
	double t0 = now_s();
	int fd = open(P("%s", dir), O_RDONLY | O_DIRECTORY);
	long n;

	IT_MUST(seen ? 0 : -1);
	IT_MUST(fd);
	memset(l, 0, sizeof(*l));
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			unsigned idx;

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			l->total++;
			if (sscanf(de->d_name, "frame%7u.dpx", &idx) != 1 || idx >= max_index) {
				l->bad_names++;
				continue;
			}
			if (seen[idx]++)
				l->dups++;
			else if (idx < old_count)
				l->found_old++;
			else
				l->found_new++;
		}
	}
	EXPECT(n == 0, "getdents64 on %s: %s", dir, strerror(errno));
	close(fd);
	l->secs = now_s() - t0;
	free(seen);
}

/* Seconds per lookup of `count` random names in dir (present or absent). */
static double lookups(const char *dir, unsigned nentries, unsigned count, int present)
{
	uint64_t s = 0x1234567 + nentries + (uint64_t)present;
	struct stat st;
	unsigned bad = 0;
	double t0;

	if (present)
		drop_caches();
	t0 = now_s();
	for (unsigned k = 0; k < count; k++) {
		unsigned i = (unsigned)(rnd(&s) % nentries);
		int rc = present ? stat(P("%s/frame%07u.dpx", dir, i), &st)
				 : stat(P("%s/absent%07u.dpx", dir, i), &st);

		if (present ? rc != 0 : (rc == 0 || errno != ENOENT))
			bad++;
	}
	t0 = (now_s() - t0) / count;
	EXPECT(bad == 0, "%s: %u of %u %s lookups wrong", dir, bad, count, present ? "present" : "absent");
	return t0;
}

static double best_of3(const char *dir, unsigned n, unsigned count, int present)
{
	double best = 1e9;

	for (int r = 0; r < 3; r++) {
		double t = lookups(dir, n, count, present);

		best = t < best ? t : best;
	}
	return best;
}

static void compare(const char *what, double small, double big)
{
	printf("%-28s %8.2f us (1,000 entries) %8.2f us (%u entries) ratio %.2f\n", what, small * 1e6,
	       big * 1e6, n_big, big / small);
	EXPECT(big <= RATIO_MAX * small, "%s: %.2f us per op at %u entries vs %.2f us at %u (> %.0fx)",
	       what, big * 1e6, n_big, small * 1e6, SMALL, RATIO_MAX);
}

static void run(void)
{
	struct listing ls, lb;
	double t0;
	pid_t pid;
	int st, rounds = 0;

	IT_MUST(mkdir(P("small"), 0755));
	IT_MUST(mkdir(P("big"), 0755));
	create_parallel("small", 0, SMALL, 1);
	t0 = now_s();
	create_parallel("big", 0, n_big, NPROC);
	t0 = now_s() - t0;
	printf("created %u entries with %d processes in %.1f s (%.0f/s)\n", n_big, NPROC, t0, n_big / t0);

	/* complete, exact listings */
	list_dir("small", SMALL, &ls, SMALL);
	list_dir("big", n_big, &lb, n_big);
	EXPECT(ls.total == SMALL && ls.dups == 0 && ls.found_old == SMALL, "small listing exact");
	EXPECT(lb.total == n_big && lb.dups == 0 && lb.bad_names == 0 && lb.found_old == n_big,
	       "big listing: %u names, %u duplicates, %u found of %u", lb.total, lb.dups, lb.found_old, n_big);
	{
		struct listing a, b;
		double small = 1e9, big = 1e9;

		for (int r = 0; r < 3; r++) {
			list_dir("small", SMALL, &a, SMALL);
			list_dir("big", n_big, &b, n_big);
			small = a.secs / SMALL < small ? a.secs / SMALL : small;
			big = b.secs / n_big < big ? b.secs / n_big : big;
		}
		compare("readdir per entry", small, big);
	}
	compare("lookup (present, uncached)", best_of3("small", SMALL, SMALL, 1),
		best_of3("big", n_big, 2000, 1));
	compare("lookup (absent)", best_of3("small", SMALL, 5000, 0), best_of3("big", n_big, 5000, 0));

	/* listings while another process creates NEW more */
	pid = fork();
	IT_MUST(pid);
	if (pid == 0) {
		for (unsigned i = n_big; i < n_big + NEW; i++) {
			int fd = open(P("big/frame%07u.dpx", i), O_CREAT | O_EXCL | O_WRONLY, 0644);

			if (fd < 0)
				_exit(1);
			close(fd);
		}
		_exit(0);
	}
	for (;;) {
		int done = waitpid(pid, &st, WNOHANG) == pid;

		list_dir("big", n_big + NEW, &lb, n_big);
		rounds++;
		EXPECT(lb.dups == 0, "listing %d during creates: %u duplicates", rounds, lb.dups);
		EXPECT(lb.found_old == n_big, "listing %d during creates: %u of the %u old names", rounds,
		       lb.found_old, n_big);
		EXPECT(lb.bad_names == 0, "listing %d during creates: %u unknown names", rounds, lb.bad_names);
		if (done)
			break;
	}
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "concurrent creator failed");
	printf("%d listings during %u concurrent creates: no duplicates, no misses\n", rounds, NEW);
	EXPECT(rounds >= 2, "at least one listing overlapped the creates (%d)", rounds);
	list_dir("big", n_big + NEW, &lb, n_big);
	EXPECT(lb.total == n_big + NEW && lb.found_new == NEW && lb.dups == 0,
	       "final listing: %u names, %u new", lb.total, lb.found_new);
}

static void verify(void)
{
	struct listing lb;
	struct stat st;

	list_dir("big", n_big + NEW, &lb, n_big);
	EXPECT(lb.total == n_big + NEW && lb.dups == 0 && lb.found_old == n_big && lb.found_new == NEW,
	       "after remount: %u names, %u duplicates", lb.total, lb.dups);
	printf("listing %u entries after remount (cold): %.2f s\n", lb.total, lb.secs);
	EXPECT_OK(stat(P("big"), &st));
	EXPECT(lookups("big", n_big, 2000, 1) < 1, "lookups after remount");
	/* unlink a third, list again */
	for (unsigned i = 0; i < n_big; i += 3)
		EXPECT_OK(unlink(P("big/frame%07u.dpx", i)));
	list_dir("big", n_big + NEW, &lb, n_big);
	EXPECT(lb.total == n_big + NEW - (n_big + 2) / 3 && lb.dups == 0,
	       "after unlinking a third: %u names", lb.total);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s MNT run|verify N\n", argv[0]);
		return 2;
	}
	it_mnt = argv[1];
	n_big = (unsigned)strtoul(argv[3], NULL, 10);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (n_big < 10 * SMALL || n_big > 9000000)
		return 2;
	if (!strcmp(argv[2], "run"))
		run();
	else
		verify();
	printf("%s %s: %d checks, %d failed\n", argv[0], argv[2], it_checks, it_failures);
	return it_failures ? 1 : 0;
}
