/* SPDX-License-Identifier: MIT */
/*
 * framefs-frametest: parse, run (once, or once per stream count for
 * --max-streams), report.  Exit 0 PASS, 1 FAIL, 2 bad usage or no test.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "engine.h"
#include "presets.h"
#include "report.h"
#include "stats.h"

#define EXIT_FAIL 1
#define EXIT_USAGE 2

struct outputs {
	FILE *csv;
	FILE *json;
};

struct progress {
	bool tty;
	bool printed;
	uint64_t last_ns, last_done, last_bytes;
};

static void tick(void *ctx, const struct ft_run *run, uint64_t now_ns)
{
	struct progress *p = ctx;
	uint64_t done = 0, bytes = 0, dropped = 0, vfail = 0;
	double dt = (double)(now_ns - p->last_ns) / 1e9;

	for (uint32_t s = 0; s < run->nstreams; s++) {
		done += atomic_load(&run->streams[s].done);
		bytes += atomic_load(&run->streams[s].bytes);
		dropped += atomic_load(&run->streams[s].dropped);
		vfail += atomic_load(&run->streams[s].vfail);
	}
	ft_progress(stderr, p->tty, (double)now_ns / 1e9, done, run->positions * run->nstreams,
		    dt > 0 ? (double)(done - p->last_done) / dt : 0,
		    dt > 0 ? (double)(bytes - p->last_bytes) / dt / 1e6 : 0, dropped, vfail);
	p->printed = true;
	p->last_ns = now_ns;
	p->last_done = done;
	p->last_bytes = bytes;
}

/* The name the PASS line gives a size read from the files. */
static void label_detected(const struct ft_config *c, uint64_t bytes, char *buf, size_t len)
{
	for (size_t i = 0; i < ft_preset_count(); i++) {
		if (ft_preset_bytes(ft_preset_at(i), c->header_kib) == bytes) {
			snprintf(buf, len, "%s", ft_preset_at(i)->name);
			return;
		}
	}
	if (bytes % 1024 == 0)
		snprintf(buf, len, "%" PRIu64 "KiB", bytes / 1024);
	else
		snprintf(buf, len, "%" PRIu64 "B", bytes);
}

/* Prepare and execute one run; on error, a one-line message and -errno. */
static int run_one(struct ft_run *run, const struct ft_config *c, uint32_t streams, bool own_dirs,
		   struct ft_summary *sum)
{
	struct progress prog = { .tty = isatty(STDERR_FILENO) == 1 };
	const struct ft_rec **recs = NULL;
	char err[512] = "";
	int rc = ft_run_prepare(run, c, streams, own_dirs, err, sizeof(err));

	if (!rc) {
		if (run->dio_note[0])
			fprintf(stderr, "framefs-frametest: %s\n", run->dio_note);
		if (run->space_note[0])
			fprintf(stderr, "framefs-frametest: %s\n", run->space_note);
		rc = ft_run_execute(run, tick, &prog, err, sizeof(err));
		if (prog.printed && prog.tty)
			fputc('\n', stderr);
	}
	if (!rc) {
		recs = malloc(streams * sizeof(*recs));
		rc = recs ? 0 : -ENOMEM;
		snprintf(err, sizeof(err), "out of memory for the summary");
	}
	if (!rc) {
		struct ft_stats_in in = {
			.recs = recs, .nstreams = streams, .positions = run->positions,
			.write = run->write, .verify = run->verify, .pace = run->pace,
			.duration_ns = run->duration_ns, .hist_window_s = c->hist_window_s,
		};

		for (uint32_t s = 0; s < streams; s++)
			recs[s] = run->streams[s].recs;
		rc = ft_summarize(&in, sum);
	}
	free(recs);
	if (rc)
		fprintf(stderr, "framefs-frametest: %s\n", err);
	return rc;
}

static void make_report(struct ft_report *r, const struct ft_config *c, const struct ft_run *run,
			const struct ft_summary *sum, char *label, size_t label_len)
{
	if (run->vary_detected)
		ft_vary_label(&run->vary, label, label_len);
	else if (run->size_detected)
		label_detected(c, run->frame_bytes, label, label_len);
	else
		snprintf(label, label_len, "%s", c->size_label);
	*r = (struct ft_report){
		.cfg = c, .sum = sum, .streams = run->streams, .frame_bytes = run->frame_bytes,
		.io_bytes = c->empty ? 0 : run->io_len, .vary = run->vary, .size_label = label,
		.write = run->write,
		.direct = run->direct, .verify = run->verify, .dio_note = run->dio_note,
		.interrupted = run->interrupted,
	};
}

static int emit(const struct ft_report *r, const struct ft_run *run, struct outputs *o)
{
	if (r->cfg->json)
		ft_report_json(stdout, r);
	else
		ft_report_text(stdout, r);
	if (o->json)
		ft_report_json(o->json, r);
	if (o->csv && ft_write_csv(o->csv, run) != 0)
		fprintf(stderr, "framefs-frametest: cannot write %s\n", r->cfg->csv_path);
	fflush(stdout);
	return r->sum->pass && (!r->cfg->max_streams || r->max_found) ? 0 : EXIT_FAIL;
}

static int test_once(const struct ft_config *c, struct outputs *o)
{
	struct ft_run run;
	struct ft_summary sum;
	struct ft_report r;
	char label[64];
	int rc = run_one(&run, c, c->streams, c->streams > 1, &sum);

	if (rc) {
		ft_run_free(&run);
		return EXIT_USAGE;
	}
	make_report(&r, c, &run, &sum, label, sizeof(label));
	rc = emit(&r, &run, o);
	ft_summary_free(&sum);
	ft_run_free(&run);
	return rc;
}

static void free_best(struct ft_run *run, struct ft_summary *sum, bool *have)
{
	if (!*have)
		return;
	ft_summary_free(sum);
	ft_run_free(run);
	*have = false;
}

/* Keep a trial's run if it is the one to report: the last that held, else the first. */
static void keep_trial(struct ft_run *best, struct ft_summary *best_sum, bool *have,
		       struct ft_run *cur, struct ft_summary *cur_sum)
{
	if (cur_sum->pass || !*have) {
		free_best(best, best_sum, have);
		*best = *cur;
		*best_sum = *cur_sum;
		*have = true;
		return;
	}
	ft_summary_free(cur_sum);
	ft_run_free(cur);
}

/* Try 1, 2, ... streams until one drops a frame; report the last that held. */
static int test_max_streams(const struct ft_config *c, struct outputs *o)
{
	static struct ft_trial trials[FT_STREAMS_MAX];
	struct ft_run best = { 0 }, cur;
	struct ft_summary best_sum = { 0 }, cur_sum;
	uint32_t ntrials = 0, found = 0;
	bool have = false;
	struct ft_report r;
	char label[64];
	int rc;

	while (ntrials < c->max_streams && !ft_interrupt) {
		uint32_t n = ntrials + 1;

		fprintf(stderr, "framefs-frametest: trying %u stream(s)\n", n);
		if (run_one(&cur, c, n, true, &cur_sum)) {
			ft_run_free(&cur);
			free_best(&best, &best_sum, &have);
			return EXIT_USAGE;
		}
		trials[ntrials++] = (struct ft_trial){ n, cur_sum.pass, cur_sum.drops.dropped,
						       cur_sum.drops.verify_failed, cur_sum.mb_s,
						       cur_sum.lowest_fps };
		found = cur_sum.pass ? n : found;
		keep_trial(&best, &best_sum, &have, &cur, &cur_sum);
		if (!trials[ntrials - 1].pass)
			break;
	}
	if (!have) {
		fprintf(stderr, "framefs-frametest: interrupted before the first trial\n");
		return EXIT_FAIL;
	}
	make_report(&r, c, &best, &best_sum, label, sizeof(label));
	r.trials = trials;
	r.ntrials = ntrials;
	r.max_found = found;
	rc = emit(&r, &best, o);
	free_best(&best, &best_sum, &have);
	return rc;
}

static int open_outputs(const struct ft_config *c, struct outputs *o)
{
	if (c->csv_path && !(o->csv = fopen(c->csv_path, "w"))) {
		fprintf(stderr, "framefs-frametest: -x: cannot create %s: %s\n", c->csv_path,
			strerror(errno));
		return -1;
	}
	if (c->json_path && !(o->json = fopen(c->json_path, "w"))) {
		fprintf(stderr, "framefs-frametest: --json: cannot create %s: %s\n", c->json_path,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int close_outputs(struct outputs *o)
{
	int bad = 0;

	if (o->csv && fclose(o->csv) != 0)
		bad = 1;
	if (o->json && fclose(o->json) != 0)
		bad = 1;
	if (bad)
		fprintf(stderr, "framefs-frametest: cannot finish writing an output file\n");
	return bad;
}

static void on_signal(int sig)
{
	(void)sig;
	ft_interrupt = 1;
}

/* Ctrl-C stops the test and still reports what happened (as a FAIL). */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

int main(int argc, char **argv)
{
	struct ft_config cfg;
	struct outputs o = { 0 };
	char err[512];
	int rc;

	if (ft_args_parse(argc, argv, &cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "framefs-frametest: %s\n", err);
		return EXIT_USAGE;
	}
	if (cfg.help) {
		ft_usage(stdout);
		return 0;
	}
	if (cfg.version) {
		printf("framefs-frametest %s\n", FT_VERSION);
		return 0;
	}
	if (cfg.list) {
		ft_presets_list(stdout, cfg.header_kib);
		return 0;
	}
	if (open_outputs(&cfg, &o) != 0) {
		close_outputs(&o);
		return EXIT_USAGE;
	}
	catch_signals();
	rc = cfg.max_streams ? test_max_streams(&cfg, &o) : test_once(&cfg, &o);
	if (close_outputs(&o) && rc == 0)
		rc = EXIT_USAGE;
	return rc;
}
