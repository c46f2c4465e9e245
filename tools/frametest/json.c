/* SPDX-License-Identifier: MIT */
/*
 * --json: the run's summary as one JSON object.  Schema (all times in ms,
 * rates in MB/s with 1 MB = 10^6 bytes unless the key says MiB):
 *   tool, version, verdict (the PASS|FAIL line), pass,
 *   test {mode, directory, preset, frame_bytes, io_bytes, frames, loops, threads,
 *         streams, fps (number|null), fps_num, fps_den, queue, prebuffer, order,
 *         single_file, empty, direct_io, verify, ios_per_frame, files_per_dir,
 *         io_size (bytes per I/O call, 0 = not given),
 *         vary (null | {min_bytes, max_bytes, seed})},
 *         (frame_bytes and io_bytes are 0 when frames vary in size),
 *   duration_s, bytes (moved),
 *   bytes_per_frame {min, max, mean} (moved, over the transferred frames),
 *   frames {total, transferred, dropped, late, skipped, queue_full, errors,
 *           not_run, verified, verify_failed},
 *   lateness_max_ms, longest_drop_run, lowest_fps_1s (number|null),
 *   throughput {MB_s, MiB_s, fps}, fastest_frame_ms, slowest_frame_ms,
 *   windows [{window, seconds, frames, open_ms, io_ms, frame_ms, MB_s, MiB_s, fps}],
 *   times_ms {frame|open|io|close: {min, avg, p50, p90, p99, p99_9, max}},
 *   histogram {labels_ms, upper_edges_ms, counts, window_s (number|null)},
 *   streams [{id, pass, transferred, dropped, late, skipped, queue_full, errors,
 *             verified, verify_failed, lateness_max_ms, longest_drop_run,
 *             lowest_fps_1s, MB_s, fps, error (string|null)}],
 *   max_streams (null | {limit, found, trials [{streams, pass, dropped,
 *                verify_failed, MB_s, lowest_fps_1s}]})
 */
#include <inttypes.h>
#include <math.h>

#include "report.h"

void ft_json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* JSON has no NaN or infinity; "not measured" (negative by convention) is null. */
static void num(FILE *out, double v)
{
	if (!isfinite(v) || v < 0)
		fputs("null", out);
	else
		fprintf(out, "%.6g", v);
}

static void key(FILE *out, const char *k)
{
	ft_json_str(out, k);
	fputc(':', out);
}

static void kv_u64(FILE *out, const char *k, uint64_t v, bool comma)
{
	key(out, k);
	fprintf(out, "%" PRIu64 "%s", v, comma ? "," : "");
}

static void kv_num(FILE *out, const char *k, double v, bool comma)
{
	key(out, k);
	num(out, v);
	fputs(comma ? "," : "", out);
}

static void kv_bool(FILE *out, const char *k, bool v, bool comma)
{
	key(out, k);
	fprintf(out, "%s%s", v ? "true" : "false", comma ? "," : "");
}

static void kv_str(FILE *out, const char *k, const char *v, bool comma)
{
	key(out, k);
	if (v)
		ft_json_str(out, v);
	else
		fputs("null", out);
	fputs(comma ? "," : "", out);
}

static void json_test(FILE *out, const struct ft_report *r)
{
	const struct ft_config *c = r->cfg;
	static const char *const order[] = { "forward", "reverse", "random" };
	bool vary = ft_vary_on(&r->vary);

	key(out, "test");
	fputc('{', out);
	kv_str(out, "mode", r->write ? "write" : "read", true);
	kv_str(out, "directory", c->dir, true);
	kv_str(out, "preset", r->size_label, true);
	kv_u64(out, "frame_bytes", vary ? 0 : r->frame_bytes, true);
	kv_u64(out, "io_bytes", vary ? 0 : r->io_bytes, true);
	kv_u64(out, "frames", c->frames, true);
	kv_u64(out, "loops", c->loops, true);
	kv_u64(out, "threads", c->threads, true);
	kv_u64(out, "streams", r->sum->nstreams, true);
	kv_num(out, "fps", c->fps_num ? (double)c->fps_num / (double)c->fps_den : -1, true);
	kv_u64(out, "fps_num", c->fps_num, true);
	kv_u64(out, "fps_den", c->fps_den, true);
	kv_u64(out, "queue", c->queue_max, true);
	kv_u64(out, "prebuffer", c->prebuffer, true);
	kv_str(out, "order", order[c->order], true);
	kv_bool(out, "single_file", c->single_file, true);
	kv_bool(out, "empty", c->empty, true);
	kv_bool(out, "direct_io", r->direct, true);
	kv_bool(out, "verify", r->verify, true);
	kv_u64(out, "ios_per_frame", c->ios_per_frame, true);
	kv_u64(out, "files_per_dir", c->files_per_dir, true);
	kv_u64(out, "io_size", c->io_size, true);
	key(out, "vary");
	if (vary) {
		fputc('{', out);
		kv_u64(out, "min_bytes", r->vary.min, true);
		kv_u64(out, "max_bytes", r->vary.max, true);
		kv_u64(out, "seed", r->vary.seed, false);
		fputc('}', out);
	} else {
		fputs("null", out);
	}
	fputs("},", out);
}

static void json_frames(FILE *out, const struct ft_drops *d, bool comma)
{
	key(out, "frames");
	fputc('{', out);
	kv_u64(out, "total", d->total, true);
	kv_u64(out, "transferred", d->transferred, true);
	kv_u64(out, "dropped", d->dropped, true);
	kv_u64(out, "late", d->late, true);
	kv_u64(out, "skipped", d->skipped, true);
	kv_u64(out, "queue_full", d->qfull, true);
	kv_u64(out, "errors", d->errors, true);
	kv_u64(out, "not_run", d->not_run, true);
	kv_u64(out, "verified", d->verified, true);
	kv_u64(out, "verify_failed", d->verify_failed, false);
	fputs(comma ? "}," : "}", out);
}

static void json_windows(FILE *out, const struct ft_summary *s)
{
	key(out, "windows");
	fputc('[', out);
	for (int i = 0; i < FT_WINDOWS; i++) {
		const struct ft_window *w = &s->win[i];

		fputc('{', out);
		kv_str(out, "window", w->label, true);
		kv_num(out, "seconds", w->secs, true);
		kv_u64(out, "frames", w->frames, true);
		kv_num(out, "open_ms", w->open_ms, true);
		kv_num(out, "io_ms", w->io_ms, true);
		kv_num(out, "frame_ms", w->frame_ms, true);
		kv_num(out, "MB_s", w->mb_s, true);
		kv_num(out, "MiB_s", w->mib_s, true);
		kv_num(out, "fps", w->fps, false);
		fputs(i < FT_WINDOWS - 1 ? "}," : "}", out);
	}
	fputs("],", out);
}

static void json_pctl(FILE *out, const char *k, const struct ft_pctl *p, bool comma)
{
	key(out, k);
	fputc('{', out);
	kv_num(out, "min", p->min, true);
	kv_num(out, "avg", p->avg, true);
	kv_num(out, "p50", p->p50, true);
	kv_num(out, "p90", p->p90, true);
	kv_num(out, "p99", p->p99, true);
	kv_num(out, "p99_9", p->p999, true);
	kv_num(out, "max", p->max, false);
	fputs(comma ? "}," : "}", out);
}

static void json_histogram(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;

	key(out, "histogram");
	fputc('{', out);
	key(out, "labels_ms");
	fputc('[', out);
	for (int b = 0; b < FT_HIST_BUCKETS; b++) {
		ft_json_str(out, ft_hist_labels[b]);
		fputs(b < FT_HIST_BUCKETS - 1 ? "," : "],", out);
	}
	key(out, "upper_edges_ms");
	fputc('[', out);
	for (int b = 0; b < FT_HIST_BUCKETS - 1; b++)
		fprintf(out, "%g,", ft_hist_edges_ms[b]);
	fputs("null],", out);
	key(out, "counts");
	fputc('[', out);
	for (int b = 0; b < FT_HIST_BUCKETS; b++)
		fprintf(out, "%" PRIu64 "%s", s->hist[b], b < FT_HIST_BUCKETS - 1 ? "," : "],");
	kv_num(out, "window_s", r->cfg->hist_window_s > 0 ? r->cfg->hist_window_s : -1, false);
	fputs("},", out);
}

static void json_stream(FILE *out, const struct ft_report *r, uint32_t i)
{
	const struct ft_stream_sum *ss = &r->sum->streams[i];
	const struct ft_drops *d = &ss->drops;
	const char *err = r->streams && r->streams[i].error[0] ? r->streams[i].error : NULL;

	fputc('{', out);
	kv_u64(out, "id", i, true);
	kv_bool(out, "pass", ss->pass, true);
	kv_u64(out, "transferred", d->transferred, true);
	kv_u64(out, "dropped", d->dropped, true);
	kv_u64(out, "late", d->late, true);
	kv_u64(out, "skipped", d->skipped, true);
	kv_u64(out, "queue_full", d->qfull, true);
	kv_u64(out, "errors", d->errors, true);
	kv_u64(out, "verified", d->verified, true);
	kv_u64(out, "verify_failed", d->verify_failed, true);
	kv_num(out, "lateness_max_ms", (double)d->lateness_max_ns / 1e6, true);
	kv_u64(out, "longest_drop_run", d->longest_drop_run, true);
	kv_num(out, "lowest_fps_1s", ss->lowest_fps, true);
	kv_num(out, "MB_s", ss->mb_s, true);
	kv_num(out, "fps", ss->fps, true);
	kv_str(out, "error", err, false);
	fputc('}', out);
}

static void json_max_streams(FILE *out, const struct ft_report *r)
{
	key(out, "max_streams");
	if (!r->cfg->max_streams) {
		fputs("null", out);
		return;
	}
	fputc('{', out);
	kv_u64(out, "limit", r->cfg->max_streams, true);
	kv_u64(out, "found", r->max_found, true);
	key(out, "trials");
	fputc('[', out);
	for (uint32_t i = 0; i < r->ntrials; i++) {
		const struct ft_trial *t = &r->trials[i];

		fputc('{', out);
		kv_u64(out, "streams", t->streams, true);
		kv_bool(out, "pass", t->pass, true);
		kv_u64(out, "dropped", t->dropped, true);
		kv_u64(out, "verify_failed", t->verify_failed, true);
		kv_num(out, "MB_s", t->mb_s, true);
		kv_num(out, "lowest_fps_1s", t->lowest_fps, false);
		fputs(i + 1 < r->ntrials ? "}," : "}", out);
	}
	fputs("]}", out);
}

void ft_report_json(FILE *out, const struct ft_report *r)
{
	const struct ft_summary *s = r->sum;
	char verdict[256];

	ft_verdict(r, verdict, sizeof(verdict));
	fputc('{', out);
	kv_str(out, "tool", "framefs-frametest", true);
	kv_str(out, "version", FT_VERSION, true);
	kv_str(out, "verdict", verdict, true);
	kv_bool(out, "pass", verdict[0] == 'P', true);
	json_test(out, r);
	kv_num(out, "duration_s", s->duration_s, true);
	kv_u64(out, "bytes", s->bytes, true);
	key(out, "bytes_per_frame");
	fputc('{', out);
	kv_u64(out, "min", s->frame_bytes_min, true);
	kv_u64(out, "max", s->frame_bytes_max, true);
	kv_num(out, "mean", s->frame_bytes_mean, false);
	fputs("},", out);
	json_frames(out, &s->drops, true);
	kv_num(out, "lateness_max_ms", (double)s->drops.lateness_max_ns / 1e6, true);
	kv_u64(out, "longest_drop_run", s->drops.longest_drop_run, true);
	kv_num(out, "lowest_fps_1s", s->lowest_fps, true);
	key(out, "throughput");
	fputc('{', out);
	kv_num(out, "MB_s", s->mb_s, true);
	kv_num(out, "MiB_s", s->mib_s, true);
	kv_num(out, "fps", s->fps, false);
	fputs("},", out);
	kv_num(out, "fastest_frame_ms", s->fastest_ms, true);
	kv_num(out, "slowest_frame_ms", s->slowest_ms, true);
	json_windows(out, s);
	key(out, "times_ms");
	fputc('{', out);
	json_pctl(out, "frame", &s->frame, true);
	json_pctl(out, "open", &s->open, true);
	json_pctl(out, "io", &s->io, true);
	json_pctl(out, "close", &s->close, false);
	fputs("},", out);
	json_histogram(out, r);
	key(out, "streams");
	fputc('[', out);
	for (uint32_t i = 0; i < s->nstreams; i++) {
		json_stream(out, r, i);
		fputs(i + 1 < s->nstreams ? "," : "", out);
	}
	fputs("],", out);
	json_max_streams(out, r);
	fputs("}\n", out);
}
