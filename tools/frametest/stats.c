/* SPDX-License-Identifier: MIT */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const double ft_hist_edges_ms[FT_HIST_BUCKETS - 1] = { 0.1, 0.2, 0.5, 1,   2,   5,  10,
						       20,  50,  100, 200, 500, 1000 };
const char *const ft_hist_labels[FT_HIST_BUCKETS] = { "<0.1", ".2",  ".5",  "1",  "2",
						      "5",    "10",  "20",  "50", "100",
						      "200",  "500", "1s", ">1s" };

#define NS_PER_MS 1e6
#define MB 1e6
#define MIB 1048576.0

int ft_hist_bucket(double ms)
{
	for (int i = 0; i < FT_HIST_BUCKETS - 1; i++)
		if (ms < ft_hist_edges_ms[i])
			return i;
	return FT_HIST_BUCKETS - 1;
}

double ft_percentile(const double *sorted, uint64_t n, double pct)
{
	uint64_t rank;

	if (n == 0)
		return 0;
	/* The epsilon keeps 99.9% of 1000 at rank 999 despite binary fractions. */
	rank = (uint64_t)ceil(pct * (double)n / 100.0 - 1e-9);
	if (rank < 1)
		rank = 1;
	return sorted[(rank > n ? n : rank) - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pctl_of(double *v, uint64_t n, struct ft_pctl *p)
{
	double sum = 0;

	memset(p, 0, sizeof(*p));
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	for (uint64_t i = 0; i < n; i++)
		sum += v[i];
	p->min = v[0];
	p->avg = sum / (double)n;
	p->p50 = ft_percentile(v, n, 50);
	p->p90 = ft_percentile(v, n, 90);
	p->p99 = ft_percentile(v, n, 99);
	p->p999 = ft_percentile(v, n, 99.9);
	p->max = v[n - 1];
}

static double frame_ms(const struct ft_rec *r)
{
	return (double)(r->open_ns + r->io_ns + r->close_ns) / NS_PER_MS;
}

/* Each transferred frame, across streams, in record order. */
#define FOR_EACH_TRANSFERRED(in, r)                                                     \
	for (uint32_t s_ = 0; s_ < (in)->nstreams; s_++)                                  \
		for (uint64_t k_ = 0; k_ < (in)->positions; k_++)                         \
			if ((r = &(in)->recs[s_][k_]) &&                                  \
			    ft_status_transferred((enum ft_status)r->status))

static int percentiles(const struct ft_stats_in *in, uint64_t n, struct ft_summary *out)
{
	double *f = malloc((n ? n : 1) * 4 * sizeof(double)), *o = f + n, *io = o + n, *c = io + n;
	const struct ft_rec *r;
	uint64_t i = 0, fastest = 0, slowest = 0;

	if (!f)
		return -ENOMEM;
	FOR_EACH_TRANSFERRED(in, r) {
		f[i] = frame_ms(r);
		o[i] = (double)r->open_ns / NS_PER_MS;
		io[i] = (double)r->io_ns / NS_PER_MS;
		c[i] = (double)r->close_ns / NS_PER_MS;
		/* The sorts below lose which frame was fastest: note what it moved now. */
		if (i == 0 || f[i] < f[fastest]) {
			fastest = i;
			out->fastest_bytes = r->bytes;
		}
		if (i == 0 || f[i] > f[slowest]) {
			slowest = i;
			out->slowest_bytes = r->bytes;
		}
		i++;
	}
	pctl_of(f, n, &out->frame);
	pctl_of(o, n, &out->open);
	pctl_of(io, n, &out->io);
	pctl_of(c, n, &out->close);
	out->fastest_ms = out->frame.min;
	out->slowest_ms = out->frame.max;
	free(f);
	return 0;
}

static void window(const struct ft_stats_in *in, const char *label, double secs,
		   struct ft_window *w)
{
	uint64_t dur = in->duration_ns, span = (uint64_t)(secs * 1e9), from;
	double open = 0, io = 0, bytes = 0;
	const struct ft_rec *r;

	if (secs <= 0 || span > dur)
		span = dur;	/* a short run's windows are the whole run, as in frametest */
	from = dur - span;
	memset(w, 0, sizeof(*w));
	w->label = label;
	w->secs = (double)span / 1e9;
	FOR_EACH_TRANSFERRED(in, r) {
		if (r->done_ns < from)
			continue;
		w->frames++;
		open += (double)r->open_ns;
		io += (double)r->io_ns;
		bytes += (double)r->bytes;
	}
	if (!w->frames || w->secs <= 0)
		return;
	w->open_ms = open / (double)w->frames / NS_PER_MS;
	w->io_ms = io / (double)w->frames / NS_PER_MS;
	w->frame_ms = w->secs * 1e3 / (double)w->frames;
	w->fps = (double)w->frames / w->secs;
	w->mb_s = bytes / w->secs / MB;
	w->mib_s = bytes / w->secs / MIB;
}

static void histogram(const struct ft_stats_in *in, struct ft_summary *out)
{
	uint64_t dur = in->duration_ns, span = (uint64_t)(in->hist_window_s * 1e9);
	uint64_t from = in->hist_window_s > 0 && span < dur ? dur - span : 0;
	const struct ft_rec *r;

	FOR_EACH_TRANSFERRED(in, r) {
		if (r->done_ns < from)
			continue;
		out->hist[ft_hist_bucket(frame_ms(r))]++;
		out->hist_frames++;
	}
}

static void add_drops(struct ft_drops *sum, const struct ft_drops *d)
{
	sum->total += d->total;
	sum->transferred += d->transferred;
	sum->dropped += d->dropped;
	sum->late += d->late;
	sum->skipped += d->skipped;
	sum->qfull += d->qfull;
	sum->errors += d->errors;
	sum->not_run += d->not_run;
	sum->verified += d->verified;
	sum->verify_failed += d->verify_failed;
	if (d->longest_drop_run > sum->longest_drop_run)
		sum->longest_drop_run = d->longest_drop_run;
	if (d->lateness_max_ns > sum->lateness_max_ns)
		sum->lateness_max_ns = d->lateness_max_ns;
}

static bool stream_passes(const struct ft_stats_in *in, const struct ft_drops *d)
{
	if (d->dropped || d->errors || d->verify_failed || d->transferred != d->total)
		return false;
	return !in->verify || d->verified == d->transferred;
}

static uint64_t stream_bytes(const struct ft_rec *r, uint64_t n)
{
	uint64_t b = 0;

	for (uint64_t k = 0; k < n; k++)
		if (ft_status_transferred((enum ft_status)r[k].status))
			b += r[k].bytes;
	return b;
}

/* Bytes moved: in all, and the smallest, largest and mean per transferred frame. */
static void frame_bytes(const struct ft_stats_in *in, struct ft_summary *out)
{
	const struct ft_rec *r;
	uint64_t n = 0;

	FOR_EACH_TRANSFERRED(in, r) {
		if (n == 0 || r->bytes < out->frame_bytes_min)
			out->frame_bytes_min = r->bytes;
		if (r->bytes > out->frame_bytes_max)
			out->frame_bytes_max = r->bytes;
		out->bytes += r->bytes;
		n++;
	}
	out->frame_bytes_mean = n ? (double)out->bytes / (double)n : 0;
}

static int per_stream(const struct ft_stats_in *in, struct ft_summary *out)
{
	uint64_t *ev = malloc((in->positions ? in->positions : 1) * sizeof(*ev));
	double secs = (double)in->duration_ns / 1e9;

	out->streams = calloc(in->nstreams, sizeof(*out->streams));
	if (!ev || !out->streams) {
		free(ev);
		return -ENOMEM;
	}
	out->lowest_fps = -1;
	for (uint32_t s = 0; s < in->nstreams; s++) {
		struct ft_stream_sum *ss = &out->streams[s];
		uint64_t from, to, n;

		ft_account(in->recs[s], in->positions, in->write, &in->pace, &ss->drops);
		n = ft_shown_events(in->recs[s], in->positions, in->write, &in->pace, ev, &from,
				    &to);
		ss->lowest_fps = ft_lowest_fps(ev, n, from, to);
		if (ss->lowest_fps >= 0 && (out->lowest_fps < 0 || ss->lowest_fps < out->lowest_fps))
			out->lowest_fps = ss->lowest_fps;
		ss->fps = secs > 0 ? (double)ss->drops.transferred / secs : 0;
		ss->mb_s = secs > 0 ? (double)stream_bytes(in->recs[s], in->positions) / secs / MB : 0;
		ss->pass = stream_passes(in, &ss->drops);
		out->streams_passed += ss->pass;
		add_drops(&out->drops, &ss->drops);
	}
	free(ev);
	return 0;
}

int ft_summarize(const struct ft_stats_in *in, struct ft_summary *out)
{
	static const struct { const char *label; double secs; } wins[FT_WINDOWS] = {
		{ "1s", 1 }, { "5s", 5 }, { "30s", 30 }, { "overall", 0 },
	};
	int rc;

	memset(out, 0, sizeof(*out));
	out->nstreams = in->nstreams;
	out->duration_s = (double)in->duration_ns / 1e9;
	rc = per_stream(in, out);
	if (!rc)
		rc = percentiles(in, out->drops.transferred, out);
	if (rc) {
		ft_summary_free(out);
		return rc;
	}
	for (int i = 0; i < FT_WINDOWS; i++)
		window(in, wins[i].label, wins[i].secs, &out->win[i]);
	histogram(in, out);
	frame_bytes(in, out);
	out->fps = out->duration_s > 0 ? (double)out->drops.transferred / out->duration_s : 0;
	out->mb_s = out->duration_s > 0 ? (double)out->bytes / out->duration_s / MB : 0;
	out->mib_s = out->duration_s > 0 ? (double)out->bytes / out->duration_s / MIB : 0;
	out->pass = out->streams_passed == in->nstreams && in->nstreams > 0;
	return 0;
}

void ft_summary_free(struct ft_summary *s)
{
	free(s->streams);
	s->streams = NULL;
}
