/* SPDX-License-Identifier: MIT */
/*
 * From per-frame records to the figures of the report: frametest's (windows,
 * fastest/slowest frame, histogram) and what it lacks (percentiles, both MB
 * units, per-stream drop accounting, the lowest 1-second frame rate).
 * Pure: records in, numbers out.
 */
#ifndef FT_STATS_H
#define FT_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "pacing.h"

#define FT_HIST_BUCKETS 14
#define FT_WINDOWS 4

/* Upper edges (ms) of frametest's buckets <0.1 ms ... 1 s; the last is > 1 s. */
extern const double ft_hist_edges_ms[FT_HIST_BUCKETS - 1];
extern const char *const ft_hist_labels[FT_HIST_BUCKETS];

struct ft_pctl {	/* milliseconds */
	double min, avg, p50, p90, p99, p999, max;
};

struct ft_window {
	const char *label;	/* "1s", "5s", "30s", "overall" */
	double secs;		/* the span actually covered */
	uint64_t frames;
	double open_ms, io_ms;	/* averages over the window's frames */
	double frame_ms;	/* window / frames: time per delivered frame */
	double mb_s, mib_s, fps;
};

struct ft_stream_sum {
	struct ft_drops drops;
	double lowest_fps;	/* -1: run shorter than 1 s */
	double mb_s, fps;
	bool pass;
};

struct ft_stats_in {
	const struct ft_rec *const *recs;	/* per stream, play order */
	uint32_t nstreams;
	uint64_t positions;	/* records per stream */
	bool write;
	bool verify;		/* frames read are checked: pass needs all verified */
	struct ft_pace pace;
	uint64_t duration_ns;
	double hist_window_s;	/* 0 = whole run */
};

struct ft_summary {
	double duration_s;
	struct ft_drops drops;	/* summed over streams */
	uint64_t bytes;		/* moved: the sum of the records' bytes */
	uint64_t frame_bytes_min, frame_bytes_max;	/* moved per transferred frame */
	double frame_bytes_mean;
	double lowest_fps;	/* the worst stream's; -1 if not measured */
	double fastest_ms, slowest_ms;
	uint64_t fastest_bytes, slowest_bytes;	/* what those two frames moved */
	struct ft_window win[FT_WINDOWS];
	struct ft_pctl frame, open, io, close;
	uint64_t hist[FT_HIST_BUCKETS];
	uint64_t hist_frames;
	double mb_s, mib_s, fps;
	uint32_t nstreams;
	struct ft_stream_sum *streams;
	uint32_t streams_passed;
	bool pass;
};

/* 0 or -ENOMEM; the summary owns memory until ft_summary_free. */
int ft_summarize(const struct ft_stats_in *in, struct ft_summary *out);
void ft_summary_free(struct ft_summary *s);

/* Nearest-rank percentile of sorted values (ms); 0 when n is 0. */
double ft_percentile(const double *sorted, uint64_t n, double pct);
/* Bucket index of a frame time. */
int ft_hist_bucket(double ms);

#endif
