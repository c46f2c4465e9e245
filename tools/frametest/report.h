/* SPDX-License-Identifier: MIT */
/*
 * Output: frametest's report layout, then what it lacks (percentiles, MB and
 * MiB, per-stream drop accounting), the --json summary, the -x per-frame CSV,
 * the live progress line and the closing PASS|FAIL line.
 */
#ifndef FT_REPORT_H
#define FT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "args.h"
#include "engine.h"
#include "stats.h"

/* One --max-streams attempt. */
struct ft_trial {
	uint32_t streams;
	bool pass;
	uint64_t dropped;
	uint64_t verify_failed;
	double mb_s;
	double lowest_fps;
};

struct ft_report {
	const struct ft_config *cfg;
	const struct ft_summary *sum;
	const struct ft_stream *streams;	/* sum->nstreams; errors and messages */
	uint64_t frame_bytes;		/* --vary: the largest */
	uint64_t io_bytes;		/* moved per frame (-c reads less) */
	struct ft_vary vary;		/* on: every frame its own size */
	const char *size_label;
	bool write;
	bool direct;
	bool verify;
	const char *dio_note;
	bool interrupted;
	const struct ft_trial *trials;	/* --max-streams */
	uint32_t ntrials;
	uint32_t max_found;
};

void ft_report_text(FILE *out, const struct ft_report *r);
void ft_report_json(FILE *out, const struct ft_report *r);
/* "PASS: 1 stream(s) of 4k at 24 fps: dropped 0, verified 1800/1800 frames" */
void ft_verdict(const struct ft_report *r, char *buf, size_t len);
const char *ft_status_name(enum ft_status st);
/* -x: one line per frame position and stream.  0 or -errno. */
int ft_write_csv(FILE *out, const struct ft_run *run);
/* The live line: rewritten in place on a terminal, one line each time when piped. */
void ft_progress(FILE *out, bool tty, double secs, uint64_t done, uint64_t total, double fps,
		 double mb_s, uint64_t dropped, uint64_t vfail);
/* Print a string as a JSON string literal. */
void ft_json_str(FILE *out, const char *s);

#endif
