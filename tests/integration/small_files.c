/* SPDX-License-Identifier: MIT */
/*
 * Proves: small files cost their size in the mirrored pool, not a stripe
 * each (fs/meta/small.c).  N files of 4 KiB, the size of the `._` AppleDouble
 * file a macOS client writes beside every frame, are created by four
 * processes, with an .xml sidecar of a seeded size up to 64 KiB every 100
 * files; every create and write succeeds (on a RAID5 x 4 of 1 GiB members
 * 100,000 of them would need about 150 GB as stripes), the stripes they
 * take are under 1% of what a stripe each would take, and after a remount
 * every byte reads back.
 *
 *   small_files MNT run N STRIPE_BYTES
 *   small_files MNT verify N STRIPE_BYTES
 */
#define IT_OWN_MAIN
#include <stdbool.h>
#include <sys/wait.h>

#include "it.h"

#define NPROC 4
#define SIDECAR 4096
#define XML_EVERY 100

static size_t xml_size(unsigned i)
{
	return 200 + (size_t)(it_byte(i, 7) * 251u + it_byte(i, 11)) % (64 * 1024 - 200);
}

static const char *name(unsigned i, bool xml)
{
	return xml ? P("sidecars/reel%05u.xml", i / XML_EVERY) : P("sidecars/._frame%07u.dpx", i);
}

/* Files i with i % NPROC == k, created and written whole. */
static int make_files(unsigned n, unsigned k)
{
	for (unsigned i = k; i < n; i += NPROC) {
		if (it_make_file(name(i, false), SIDECAR, i) < 0) {
			fprintf(stderr, "FAIL create %s: %s\n", name(i, false), strerror(errno));
			return 1;
		}
		if (i % XML_EVERY == 0 && it_make_file(name(i, true), xml_size(i), i + 1) < 0) {
			fprintf(stderr, "FAIL create %s: %s\n", name(i, true), strerror(errno));
			return 1;
		}
	}
	return 0;
}

static void run(unsigned n, double stripe_bytes)
{
	struct statvfs v0, v1;
	pid_t pids[NPROC];
	double stripes_used, as_stripes;

	IT_MUST(mkdir(P("sidecars"), 0755));
	IT_MUST(statvfs(it_mnt, &v0));
	for (unsigned k = 0; k < NPROC; k++) {
		pids[k] = fork();
		IT_MUST(pids[k]);
		if (pids[k] == 0)
			_exit(make_files(n, k));
	}
	for (unsigned k = 0; k < NPROC; k++) {
		int status;

		IT_MUST(waitpid(pids[k], &status, 0));
		it_checks++;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			IT_FAIL("creator %u failed (status %d)", k, status);
	}
	sync();
	IT_MUST(statvfs(it_mnt, &v1));
	/* f_bfree counts the free stripes' bytes (in f_frsize units) */
	stripes_used = (double)(v0.f_bfree - v1.f_bfree) * (double)v0.f_frsize;
	as_stripes = (double)n * stripe_bytes;
	printf("%u files of %u bytes and %u sidecars: %.1f MiB of stripes taken (%.4f%% of a "
	       "stripe each); %llu inodes free\n", n, SIDECAR, (n + XML_EVERY - 1) / XML_EVERY,
	       stripes_used / 1048576.0, 100.0 * stripes_used / as_stripes,
	       (unsigned long long)v1.f_ffree);
	it_checks++;
	if (stripes_used > as_stripes / 100)
		IT_FAIL("the small files took %.0f bytes of stripes, over 1%% of a stripe each",
			stripes_used);
}

static void verify(unsigned n)
{
	unsigned bad0 = (unsigned)it_failures;

	for (unsigned i = 0; i < n && (unsigned)it_failures < bad0 + 10; i++) {
		it_check_file(name(i, false), SIDECAR, i);
		if (i % XML_EVERY == 0)
			it_check_file(name(i, true), xml_size(i), i + 1);
	}
	printf("%u files checked\n", n);
}

int main(int argc, char **argv)
{
	unsigned n;

	if (argc != 5) {
		fprintf(stderr, "usage: %s MNT run|verify N STRIPE_BYTES\n", argv[0]);
		return 2;
	}
	it_mnt = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	n = (unsigned)strtoul(argv[3], NULL, 10);
	if (!strcmp(argv[2], "run"))
		run(n, strtod(argv[4], NULL));
	else
		verify(n);
	printf("%d checks, %d failures\n", it_checks, it_failures);
	return it_failures ? 1 : 0;
}
