/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#define MIB 1048576.0
#define HIST_ROWS 10

const char *ft_status_name(enum ft_status st)
{
	switch (st) {
	case FT_ST_PENDING: return "pending";
	case FT_ST_OK: return "ok";
	case FT_ST_LATE: return "late";
	case FT_ST_SKIPPED: return "skipped";
	case FT_ST_QFULL: return "queue-full";
	case FT_ST_ERROR: return "error";
	case FT_ST_NOT_RUN: return "not-run";
	}
	return "?";
}

static double rate_mib(uint64_t bytes, double ms)
{
	return ms > 0 ? (double)bytes / MIB / (ms / 1e3) : 0;
}

static uint64_t frames_read(const struct ft_report *r)
{
	return r->write || r->cfg->empty ? 0 : r->sum->drops.transferred;
}

void ft_verdict(const struct ft_report *r, char *buf, size_t len)
{
	const struct ft_summary *s = r->sum;
	const struct ft_config *c = r->cfg;
	uint32_t streams = c->max_streams ? (r->max_found ? r->max_found : 1) : s->nstreams;
	char fps[32];

	if (c->fps_num)
		ft_format_fps(c->fps_num, c->fps_den, fps, sizeof(fps));
	else	/* unpaced: the rate achieved */
		snprintf(fps, sizeof(fps), "%.2f", s->nstreams ? s->fps / s->nstreams : 0);
	snprintf(buf, len, "%s: %u stream(s) of %s at %s fps: dropped %" PRIu64
		 ", verified %" PRIu64 "/%" PRIu64 " frames",
		 s->pass && (!c->max_streams || r->max_found) ? "PASS" : "FAIL", streams,
		 r->size_label, fps, s->drops.dropped, frames_read(r) ? s->drops.verified : 0,
		 frames_read(r));
}

static void text_header(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;
	const struct ft_drops *d = &s->drops;
	char fps[32];

	fprintf(out, "Test parameters:    %s\n", r->cfg->params);
	fprintf(out, "Test directory:     %s (%u stream(s) x %u thread(s), %s)\n", r->cfg->dir,
		s->nstreams, r->cfg->threads, r->cfg->empty ? "no data" :
		r->direct ? "direct I/O" : "buffered I/O");
	if (ft_vary_on(&r->vary))
		fprintf(out, "Frame size:         %" PRIu64 "-%" PRIu64 " bytes, each frame its own "
			"(--vary %s, seed %" PRIu64 ")", r->vary.min, r->vary.max, r->size_label,
			r->vary.seed);
	else
		fprintf(out, "Frame size:         %" PRIu64 " bytes (%s)", r->frame_bytes,
			r->size_label);
	if (ft_vary_on(&r->vary) && r->cfg->crop_pct < 100)
		fprintf(out, ", the middle %u%% of each read (-c)", r->cfg->crop_pct);
	else if (r->io_bytes != r->frame_bytes && !r->cfg->empty)
		fprintf(out, ", %" PRIu64 " bytes read per frame (-c)", r->io_bytes);
	if (ft_vary_on(&r->vary))
		fprintf(out, "\nBytes per frame:    min %" PRIu64 ", max %" PRIu64 ", mean %.0f "
			"(moved, over %" PRIu64 " frames)", s->frame_bytes_min, s->frame_bytes_max,
			s->frame_bytes_mean, d->transferred);
	if (r->cfg->fps_num && r->write)
		fprintf(out, "\nFrame rate:         %s fps, due %u frame(s) after arrival, queue of %u\n",
			ft_format_fps(r->cfg->fps_num, r->cfg->fps_den, fps, sizeof(fps)),
			r->cfg->prebuffer, r->cfg->queue_max);
	else if (r->cfg->fps_num)
		fprintf(out, "\nFrame rate:         %s fps, %u frame(s) buffered ahead\n",
			ft_format_fps(r->cfg->fps_num, r->cfg->fps_den, fps, sizeof(fps)),
			r->cfg->prebuffer);
	else
		fprintf(out, "\nFrame rate:         unpaced (as fast as possible)\n");
	fprintf(out, "Test duration:      %.2f secs\n", s->duration_s);
	fprintf(out, "Frames transferred: %" PRIu64 " (%.3f MiB, %.3f MB)\n", d->transferred,
		(double)s->bytes / MIB, (double)s->bytes / 1e6);
	fprintf(out, "Frames dropped:     %" PRIu64 " of %" PRIu64 "\n", d->dropped, d->total);
	fprintf(out, "  late %" PRIu64 ", skipped %" PRIu64 ", queue full %" PRIu64
		", I/O errors %" PRIu64 ", not run %" PRIu64 "\n",
		d->late, d->skipped, d->qfull, d->errors, d->not_run);
	fprintf(out, "  worst lateness %.3f ms, longest run of dropped frames %" PRIu64,
		(double)d->lateness_max_ns / 1e6, d->longest_drop_run);
	if (s->lowest_fps >= 0)
		fprintf(out, ", lowest fps in any 1 s window %.0f\n", s->lowest_fps);
	else
		fprintf(out, ", lowest fps in any 1 s window: n/a (run shorter than 1 s)\n");
	fprintf(out, "Fastest frame:      %.3f ms (%.2f MiB/s)\n", s->fastest_ms,
		rate_mib(s->fastest_bytes, s->fastest_ms));
	fprintf(out, "Slowest frame:      %.3f ms (%.2f MiB/s)\n\n", s->slowest_ms,
		rate_mib(s->slowest_bytes, s->slowest_ms));
}

static void text_windows(FILE *out, const struct ft_summary *s)
{
	fprintf(out, "Averaged details:\n");
	fprintf(out, "               Open        I/O       Frame         Data rate"
		"                     Frame rate\n");
	for (int i = 0; i < FT_WINDOWS; i++) {
		const struct ft_window *w = &s->win[i];
		char label[16];

		snprintf(label, sizeof(label), "%s%s:", i < FT_WINDOWS - 1 ? "Last " : "",
			 i < FT_WINDOWS - 1 ? w->label : "Overall");
		fprintf(out, "  %-10s %8.3f ms %8.2f ms %8.2f ms %10.2f MiB/s %10.2f MB/s %8.1f fps\n",
			label, w->open_ms, w->io_ms, w->frame_ms, w->mib_s, w->mb_s, w->fps);
	}
	fprintf(out, "\n");
}

/* A 5-column histogram cell with text centred under the bar's '*'. */
static void cell(FILE *out, const char *text)
{
	int len = (int)strlen(text), left = len >= 5 ? 0 : (5 - len) / 2;

	fprintf(out, "%*s%-*s", left, "", 5 - left, text);
}

static void text_histogram(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;
	int height[FT_HIST_BUCKETS];

	if (r->cfg->hist_window_s > 0)
		fprintf(out, "Histogram of frame completion times (last %.1f s, %" PRIu64 " frames):\n",
			r->cfg->hist_window_s, s->hist_frames);
	else
		fprintf(out, "Histogram of frame completion times (%" PRIu64 " frames):\n",
			s->hist_frames);
	for (int b = 0; b < FT_HIST_BUCKETS; b++)
		height[b] = s->hist_frames ? (int)lround(100.0 * (double)s->hist[b] /
							 (double)s->hist_frames / 10.0) : 0;
	for (int row = HIST_ROWS; row >= 1; row--) {
		fprintf(out, "  %3d%% |", row * 10);
		for (int b = 0; b < FT_HIST_BUCKETS; b++)
			fprintf(out, "  %s  ", height[b] >= row ? "*" : " ");
		fprintf(out, "\n");
	}
	fprintf(out, "       +");
	for (int b = 0; b < FT_HIST_BUCKETS; b++)
		fprintf(out, "-----");
	fprintf(out, "\n    ms  ");
	for (int b = 0; b < FT_HIST_BUCKETS; b++)
		cell(out, ft_hist_labels[b]);
	fprintf(out, "\nframes  ");
	for (int b = 0; b < FT_HIST_BUCKETS; b++) {
		char n[24];

		snprintf(n, sizeof(n), "%" PRIu64, s->hist[b]);
		cell(out, n);
	}
	fprintf(out, "\n\n");
}

static void text_pctl_row(FILE *out, const char *name, const struct ft_pctl *p)
{
	fprintf(out, "  %-6s %10.3f %10.3f %10.3f %10.3f %10.3f %10.3f\n", name, p->avg, p->p50,
		p->p90, p->p99, p->p999, p->max);
}

static void text_tail(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;

	fprintf(out, "Times (ms)    average        p50        p90        p99      p99.9        max\n");
	text_pctl_row(out, "frame", &s->frame);
	text_pctl_row(out, "open", &s->open);
	text_pctl_row(out, "I/O", &s->io);
	text_pctl_row(out, "close", &s->close);
	fprintf(out, "\nThroughput:         %.2f MB/s (1 MB = 10^6 bytes) = %.2f MiB/s, %.2f fps\n",
		s->mb_s, s->mib_s, s->fps);
	if (r->write)
		fprintf(out, "Verification:       frames written with frame number, stream id and "
			"checksums; read them back with -r to check\n");
	else if (!r->verify)
		fprintf(out, "Verification:       off (%s)\n", r->cfg->empty ? "-e" : "--no-verify");
	else
		fprintf(out, "Verification:       %" PRIu64 " of %" PRIu64 " frames read checked "
			"correct, %" PRIu64 " mismatched\n", s->drops.verified,
			s->drops.transferred, s->drops.verify_failed);
}

static void text_streams(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;

	if (s->nstreams > 1) {
		fprintf(out, "\nstream  transferred  dropped     late  lowest-fps      MB/s   verified"
			"  result\n");
		for (uint32_t i = 0; i < s->nstreams; i++) {
			const struct ft_stream_sum *ss = &s->streams[i];

			char low[16] = "n/a";

			if (ss->lowest_fps >= 0)
				snprintf(low, sizeof(low), "%.0f", ss->lowest_fps);
			fprintf(out, "%6u %12" PRIu64 " %8" PRIu64 " %8" PRIu64 " %11s %9.1f %10"
				PRIu64 "  %s\n", i, ss->drops.transferred, ss->drops.dropped,
				ss->drops.late, low, ss->mb_s, ss->drops.verified,
				ss->pass ? "PASS" : "FAIL");
		}
	}
	if (r->interrupted)
		fprintf(out, "Interrupted: frames not handed out by then count as not run\n");
	for (uint32_t i = 0; r->streams && i < s->nstreams; i++) {
		if (r->streams[i].error[0])
			fprintf(out, "I/O error: %s\n", r->streams[i].error);
		for (uint32_t m = 0; m < r->streams[i].nvmsg; m++)
			fprintf(out, "Verification failed: %s\n", r->streams[i].vmsg[m]);
	}
}

static void text_trials(FILE *out, const struct ft_report *r)
{
	if (!r->ntrials)
		return;
	fprintf(out, "\nMax streams search (each stream paced on its own):\n");
	for (uint32_t i = 0; i < r->ntrials; i++) {
		const struct ft_trial *t = &r->trials[i];

		fprintf(out, "  %3u stream(s): %s, dropped %" PRIu64 ", %.1f MB/s", t->streams,
			t->pass ? "PASS" : "FAIL", t->dropped, t->mb_s);
		if (t->lowest_fps >= 0)
			fprintf(out, ", lowest fps in any 1 s %.0f", t->lowest_fps);
		fputc('\n', out);
	}
	fprintf(out, "Max streams sustained with no dropped frame: %u\n", r->max_found);
}

void ft_report_text(FILE *out, const struct ft_report *r)
{
	char verdict[256];

	text_header(out, r);
	text_windows(out, r->sum);
	text_histogram(out, r);
	text_tail(out, r);
	text_streams(out, r);
	text_trials(out, r);
	ft_verdict(r, verdict, sizeof(verdict));
	fprintf(out, "%s\n", verdict);
}

int ft_write_csv(FILE *out, const struct ft_run *run)
{
	fprintf(out, "stream,position,frame,status,start_ms,open_ms,io_ms,close_ms,frame_ms,"
		"done_ms,deadline_ms,lateness_ms,verify,bytes\n");
	for (uint32_t s = 0; s < run->nstreams; s++) {
		for (uint64_t k = 0; k < run->positions; k++) {
			const struct ft_rec *r = &run->streams[s].recs[k];
			double dl = ft_paced(&run->pace) ?
				    (double)ft_pace_deadline_ns(&run->pace, k) / 1e6 : NAN;
			double done = (double)r->done_ns / 1e6;

			fprintf(out, "%u,%" PRIu64 ",%" PRIu64 ",%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,",
				s, k, r->frame, ft_status_name((enum ft_status)r->status),
				(double)r->start_ns / 1e6, (double)r->open_ns / 1e6,
				(double)r->io_ns / 1e6, (double)r->close_ns / 1e6,
				(double)(r->open_ns + r->io_ns + r->close_ns) / 1e6, done);
			if (isnan(dl))
				fprintf(out, ",,");
			else
				fprintf(out, "%.3f,%.3f,", dl, done > dl ? done - dl : 0.0);
			fprintf(out, "%s,%" PRIu64 "\n", r->verify == FT_V_OK ? "ok" :
				r->verify == FT_V_BAD ? "bad" : "", r->bytes);
		}
	}
	return ferror(out) ? -EIO : 0;
}

void ft_progress(FILE *out, bool tty, double secs, uint64_t done, uint64_t total, double fps,
		 double mb_s, uint64_t dropped, uint64_t vfail)
{
	fprintf(out, "%s%8.1f s  frames %" PRIu64 "/%" PRIu64 "  %8.1f fps  %9.1f MB/s  "
		"dropped %" PRIu64 "%s", tty ? "\r" : "", secs, done, total, fps, mb_s, dropped,
		vfail ? "  VERIFY FAILURES" : "");
	fprintf(out, tty ? "\033[K" : "\n");
	fflush(out);
}
