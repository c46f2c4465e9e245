/* SPDX-License-Identifier: MIT */
/*
 * Human-readable output of framefs-admin, drawn from the JSON answers
 * (schema in fs/daemon/ctl.h), so that the text and --json always agree.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/base/format.h"
#include "tools/admin/admin.h"

#define BAR_WIDTH 30

/* ---- JSON access ----------------------------------------------------------- */

json_object *jget(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

const char *jstr(json_object *o, const char *key, const char *dflt)
{
	json_object *v = jget(o, key);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

double jnum(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v ? json_object_get_double(v) : 0;
}

bool jbool(json_object *o, const char *key)
{
	json_object *v = jget(o, key);

	return v && json_object_get_boolean(v);
}

void print_json(json_object *o, FILE *f)
{
	fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_SPACED |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
}

int report_answer(json_object *o, bool json, bool quiet)
{
	if (json) {
		print_json(o, stdout);
	} else if (!jbool(o, "ok")) {
		fprintf(stderr, "framefs-admin: %s\n", jstr(o, "error", "request failed"));
	} else if (!quiet && jstr(o, "message", NULL)) {
		printf("%s\n", jstr(o, "message", ""));
		if (jstr(o, "note", NULL))
			printf("note: %s\n", jstr(o, "note", ""));
	}
	return jbool(o, "ok") ? EX_OK : EX_FAILED;
}

/* ---- small formats ----------------------------------------------------------- */

static const char *fmt_bytes(double b, char *buf, size_t len)
{
	return ff_fmt_bytes(b > 0 ? (uint64_t)b : 0, buf, len);
}

static const char *fmt_duration(double s, char *buf, size_t len)
{
	unsigned long t = s > 0 && s < 1e9 ? (unsigned long)llround(s) : 0;

	snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	return buf;
}

static const char *fmt_rate(double bps, char *buf, size_t len)
{
	char b[32];

	if (bps <= 0)
		return snprintf(buf, len, "no limit"), buf;
	snprintf(buf, len, "%s/s", fmt_bytes(bps, b, sizeof(b)));
	return buf;
}

static const char *phase_name(const char *p)
{
	if (!strcmp(p, "metadata"))
		return "metadata";
	if (!strcmp(p, "allocated"))
		return "allocated stripes";
	if (!strcmp(p, "rest"))
		return "unallocated stripes";
	return p;
}

void render_progress(const char *what, json_object *prog, char *buf, size_t len)
{
	double frac = jnum(prog, "fraction");
	char bar[BAR_WIDTH + 1], eta[32];
	unsigned fill = (unsigned)(frac * BAR_WIDTH + 0.5);
	const char *phase = jstr(prog, "phase", NULL);

	if (frac > 1)
		frac = 1;
	if (fill > BAR_WIDTH)
		fill = BAR_WIDTH;
	memset(bar, '#', fill);
	memset(bar + fill, '.', BAR_WIDTH - fill);
	bar[BAR_WIDTH] = '\0';
	/* MiB/s, the unit the rates are set and shown in (the JSON's mb_per_s is
	 * 10^6 bytes per second, kept for scripts that read it) */
	snprintf(buf, len, "%-8s [%s] %5.1f%%  %s%s%.1f MiB/s  ETA %s", what, bar, frac * 100,
		 phase ? phase_name(phase) : "", phase ? "  " : "", jnum(prog, "mb_per_s") * 1e6 / FF_MiB,
		 jnum(prog, "eta_s") > 0 ? fmt_duration(jnum(prog, "eta_s"), eta, sizeof(eta)) : "-");
}

/* ---- status ------------------------------------------------------------------- */

/* A count column as zpool status has them: "-" for a spare (no role). */
static const char *fmt_count(json_object *m, const char *key, char *buf, size_t len)
{
	if (!jget(m, key))
		return "-";
	snprintf(buf, len, "%.0f", jnum(m, key));
	return buf;
}

/* "(failed 2026-12-01 09:41:02)" in local time, "" if it was not. */
static const char *fmt_failed_at(json_object *m, char *buf, size_t len)
{
	time_t t = (time_t)jnum(m, "failed_at");
	struct tm tm;
	char when[32];

	if (!jget(m, "failed_at") || !localtime_r(&t, &tm) ||
	    !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm))
		return "";
	snprintf(buf, len, " (failed %s)", when);
	return buf;
}

/* For a role whose member is not here: what last held it (the roster),
 * "last held by /dev/nvme3n1 (NVMe MODEL S/N X FW Y, 3.49 TiB), seen
 * 2026-12-01 09:41:02". */
static void last_seen_line(json_object *m, FILE *f)
{
	json_object *l = jget(m, "last_seen");
	const char *state = jstr(m, "state", "");
	char size[32], ident[200], when[32] = "?";
	time_t t;
	struct tm tm;

	if (!l || (strcmp(state, "missing") && strcmp(state, "stale") && strcmp(state, "failed")))
		return;
	t = (time_t)jnum(l, "seen_at");
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	fmt_bytes(jnum(l, "size_bytes"), size, sizeof(size));
	if (jstr(l, "serial", NULL))
		snprintf(ident, sizeof(ident), "NVMe %s S/N %s FW %s", jstr(l, "model", "?"),
			 jstr(l, "serial", "?"), jstr(l, "firmware", "?"));
	else
		snprintf(ident, sizeof(ident), "%s", jstr(l, "kind", "?"));
	fprintf(f, "        last held by %s (%s, %s), seen %s\n", jstr(l, "path", "?"), ident, size,
		when);
}

static void member_line(json_object *m, const char *role, FILE *f)
{
	json_object *nvme = jget(m, "nvme");
	char size[32], ident[200], rd[24], wr[24], ck[24], he[24], when[64];

	if (jget(m, "size_bytes"))
		fmt_bytes(jnum(m, "size_bytes"), size, sizeof(size));
	else
		snprintf(size, sizeof(size), "-");
	if (nvme)
		snprintf(ident, sizeof(ident), "NVMe %s S/N %s FW %s", jstr(nvme, "model", "?"),
			 jstr(nvme, "serial", "?"), jstr(nvme, "firmware", "?"));
	else
		snprintf(ident, sizeof(ident), "%s", jstr(m, "kind", "-"));
	fprintf(f, "  %-5s %-11s %-11s %5s %5s %5s %6s  %-36s %s\n", role, jstr(m, "state", "spare"),
		size, fmt_count(m, "read_errors", rd, sizeof(rd)),
		fmt_count(m, "write_errors", wr, sizeof(wr)), fmt_count(m, "cksum_errors", ck, sizeof(ck)),
		fmt_count(m, "healed", he, sizeof(he)), jstr(m, "path", "(no member)"), ident);
	/* why it failed or was left out, a warning, what to do: one line each */
	if (jstr(m, "reason", NULL))
		fprintf(f, "        %s%s\n", jstr(m, "reason", ""), fmt_failed_at(m, when, sizeof(when)));
	if (jstr(m, "note", NULL))
		fprintf(f, "        warning: %s\n", jstr(m, "note", ""));
	if (jstr(m, "hint", NULL))
		fprintf(f, "        hint: %s\n", jstr(m, "hint", ""));
	last_seen_line(m, f);
}

/* "2026-12-01 09:41:02" in local time, "?" when out of range. */
static const char *fmt_when(double secs, char *buf, size_t len)
{
	time_t t = (time_t)secs;
	struct tm tm;

	if (secs <= 0 || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "?");
	return buf;
}

static void scrub_counts(json_object *sc, FILE *f, const char *indent)
{
	fprintf(f, "%s         data chunks bad %.0f, repaired %.0f", indent, jnum(sc, "chunks_bad"),
		jnum(sc, "chunks_repaired"));
	if (jnum(sc, "chunks_unrepairable") > 0)
		fprintf(f, ", NOT repairable %.0f", jnum(sc, "chunks_unrepairable"));
	fprintf(f, "; parity bad %.0f, repaired %.0f; metadata bad %.0f, repaired %.0f; "
		"unreadable stripes %.0f\n", jnum(sc, "parity_bad"), jnum(sc, "parity_repaired"),
		jnum(sc, "meta_bad"), jnum(sc, "meta_repaired"), jnum(sc, "unreadable"));
}

/* One scrub of the history: when, how long, what it did and how it ended. */
static void scrub_past_line(json_object *h, FILE *f, const char *indent, const char *what)
{
	char a[32], b[32], d[32], by[32];

	fprintf(f, "%s%-8s %s to %s (%s), %s, %s: %.0f stripes, %s checked\n", indent, what,
		fmt_when(jnum(h, "start_s"), a, sizeof(a)), fmt_when(jnum(h, "end_s"), b, sizeof(b)),
		fmt_duration(jnum(h, "end_s") - jnum(h, "start_s"), d, sizeof(d)),
		jbool(h, "repair") ? "repair" : "check only", jstr(h, "result", "?"),
		jnum(h, "stripes_checked"), fmt_bytes(jnum(h, "bytes_checked"), by, sizeof(by)));
	scrub_counts(h, f, indent);
}

void render_scrub(json_object *sc, FILE *f, const char *indent)
{
	json_object *files = jget(sc, "files"), *hist = jget(sc, "history");
	json_object *last = hist && json_object_array_length(hist) ? json_object_array_get_idx(hist, 0)
								    : NULL;
	char line[256];

	if (!sc) {
		fprintf(f, "%sscrub    (no filesystem)\n", indent);
		return;
	}
	if (jbool(sc, "active")) {
		render_progress("scrub", sc, line, sizeof(line));
		fprintf(f, "%s%s\n", indent, line);
		scrub_counts(sc, f, indent);
		if (last) /* the one before: when the volume was last checked whole */
			scrub_past_line(last, f, indent, "last");
	} else if (last) { /* this mount's last scrub, or one before the mount */
		scrub_past_line(last, f, indent, "scrub");
	} else if (jnum(sc, "stripes_checked") > 0 || jstr(sc, "error", NULL)) {
		fprintf(f, "%sscrub    %s: %.0f stripes checked (%.1f%%)%s%s\n", indent,
			jnum(sc, "fraction") >= 1 ? "done" : "stopped", jnum(sc, "stripes_checked"),
			jnum(sc, "percent"), jstr(sc, "error", NULL) ? ", error: " : "",
			jstr(sc, "error", ""));
		scrub_counts(sc, f, indent);
	} else {
		fprintf(f, "%sscrub    idle (no scrub recorded)\n", indent);
		return;
	}
	if (jstr(sc, "error", NULL) && !jbool(sc, "active") && last)
		fprintf(f, "%s         error: %s\n", indent, jstr(sc, "error", ""));
	for (size_t i = 0; files && i < json_object_array_length(files); i++) {
		json_object *fl = json_object_array_get_idx(files, i);

		fprintf(f, "%s         damaged file %s (stripe %.0f of the file): %s\n", indent,
			jstr(fl, "path", "(no name)"), jnum(fl, "stripe"),
			jbool(fl, "repaired") ? "repaired" : "NOT repaired");
	}
}

/* A grow's restripe, when the volume has one: progress while it moves,
 * and the capacity it ends at. */
void render_grow(json_object *gr, FILE *f, const char *indent)
{
	const char *state = jstr(gr, "state", "none");
	char line[256], a[32], b[32], m[32];

	if (!gr || !strcmp(state, "none"))
		return;
	if (jbool(gr, "active")) {
		render_progress("grow", gr, line, sizeof(line));
		fprintf(f, "%s%s\n", indent, line);
		if (jstr(gr, "paused_reason", NULL))
			fprintf(f, "%s         paused: %s\n", indent, jstr(gr, "paused_reason", ""));
	} else {
		fprintf(f, "%sgrow     %s%s%s\n", indent, state, jstr(gr, "error", NULL) ? ": " : "",
			jstr(gr, "error", ""));
	}
	fprintf(f, "%s         %.0f to %.0f members: %s to %s; %.0f files (%s) moved, %.0f rows "
		"left in the old width\n", indent, jnum(gr, "old_members"), jnum(gr, "new_members"),
		fmt_bytes(jnum(gr, "capacity_before"), a, sizeof(a)),
		fmt_bytes(jnum(gr, "capacity_after"), b, sizeof(b)), jnum(gr, "files_moved"),
		fmt_bytes(jnum(gr, "bytes_moved"), m, sizeof(m)), jnum(gr, "rows_left"));
}

void render_scrub_history(json_object *sc, FILE *f)
{
	json_object *hist = jget(sc, "history");
	size_t n = hist ? json_object_array_length(hist) : 0;

	if (!n)
		return;
	fprintf(f, "\nhistory: %zu scrub(s), newest first (the superblock keeps the last %u)\n", n,
		FFS_SCRUB_HISTORY_MAX);
	for (size_t i = 0; i < n; i++) {
		char what[16];

		snprintf(what, sizeof(what), "#%.0f", jnum(json_object_array_get_idx(hist, i), "seq"));
		scrub_past_line(json_object_array_get_idx(hist, i), f, "", what);
	}
}

/* A label as found on disk: anything unprintable escaped as \xNN, so that
 * the status stays one line per field and sends no control sequences. */
static const char *label_escaped(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; *in && n + 5 < len; in++) {
		unsigned char ch = (unsigned char)*in;

		if (ch < 0x20 || ch == 0x7f || ch == '\\')
			n += (size_t)snprintf(out + n, len - n, "\\x%02x", ch);
		else
			out[n++] = (char)ch;
	}
	out[n] = '\0';
	return out;
}

/* The mirrored metadata pool (trees, xattrs, symlinks, small-file data) and
 * the small-data class: its threshold, or why it is off, and what it did
 * since the mount (stats.fs). */
static void render_small(json_object *fs, json_object *fst, FILE *f)
{
	double blocks = jnum(fs, "pool_blocks"), used = blocks - jnum(fs, "pool_free_blocks");
	char a[32], b[32];

	if (!fs)
		return;
	fprintf(f, "  pool     %.0f of %.0f metadata blocks used (%s of %s, mirrored)\n", used, blocks,
		fmt_bytes(used * FFS_BLOCK, a, sizeof(a)), fmt_bytes(blocks * FFS_BLOCK, b, sizeof(b)));
	if (jnum(fs, "version") < FFS_VERSION_SMALL)
		fprintf(f, "  small files  off (format version %.0f volume)\n", jnum(fs, "version"));
	else if (jnum(fs, "small_max") <= 0)
		fprintf(f, "  small files  off (mkfs -S 0)\n");
	else
		fprintf(f, "  small files  up to %s in the mirrored pool; %.0f stored, %.0f moved to "
			"stripes, %.0f sent to stripes (pool at its reserve) since the mount\n",
			fmt_bytes(jnum(fs, "small_max"), a, sizeof(a)), jnum(fst, "small_stores"),
			jnum(fst, "small_promotions"), jnum(fst, "small_nospc"));
	if (jnum(fs, "version") < FFS_VERSION_TAILS)
		fprintf(f, "  tails    each in a stripe of its own (format version %.0f volume)\n",
			jnum(fs, "version"));
	else
		fprintf(f, "  tails    packed in shared tail stripes: %.0f written, %.0f tail stripes "
			"opened, %.0f to stripes of their own (tail stripes busy) since the mount\n",
			jnum(fst, "tail_packed"), jnum(fst, "tail_stripes"), jnum(fst, "tail_busy"));
	if (jnum(fs, "version") < FFS_VERSION_PATCH)
		fprintf(f, "  overwrites  a small one rewrites its stripe (format version %.0f volume)\n",
			jnum(fs, "version"));
	else
		fprintf(f, "  overwrites  small ones go as patches: %.0f written (%.0f blocks), %.0f "
			"patched stripes rewritten whole (%.0f by the merge thread, %.0f waiting for it), "
			"%.0f patched blocks read from the patch cache and %.0f from the members "
			"since the mount\n",
			jnum(fst, "patch_writes"), jnum(fst, "patch_blocks"), jnum(fst, "patch_merges"),
			jnum(fst, "merges_background"), jnum(fs, "merges_pending"),
			jnum(fst, "patch_cache_hits"), jnum(fst, "patch_reads"));
}

static void times_line(json_object *r, const char *label, FILE *f)
{
	fprintf(f, "%-46.46s %9.0f %9.3f %9.3f %9.3f %9.3f %9.3f\n", label, jnum(r, "count"),
		jnum(r, "avg_ms"), jnum(r, "p50_ms"), jnum(r, "p90_ms"), jnum(r, "p99_ms"),
		jnum(r, "max_ms"));
}

void render_times(json_object *t, FILE *f)
{
	json_object *rows = jget(t, "rows");
	size_t n = rows ? json_object_array_length(rows) : 0;
	char label[160];

	fprintf(f, "%-46s %9s %9s %9s %9s %9s %9s\n", "request / what it waited for (ms)", "count",
		"avg", "p50", "p90", "p99", "max");
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(rows, i);
		const char *op = jstr(r, "op", "?");

		if (jstr(r, "wait", NULL))
			continue;
		times_line(r, op, f);
		for (size_t j = 0; j < n; j++) {
			json_object *x = json_object_array_get_idx(rows, j);

			if (jstr(x, "wait", NULL) && !strcmp(jstr(x, "op", ""), op)) {
				snprintf(label, sizeof(label), "  %s", jstr(x, "wait", ""));
				times_line(x, label, f);
			}
		}
	}
	/* waits of requests still in flight, whose own time is not in yet */
	for (size_t j = 0; j < n; j++) {
		json_object *x = json_object_array_get_idx(rows, j);
		bool has_op = false;

		if (!jstr(x, "wait", NULL))
			continue;
		for (size_t i = 0; i < n && !has_op; i++) {
			json_object *r = json_object_array_get_idx(rows, i);

			has_op = !jstr(r, "wait", NULL) && !strcmp(jstr(r, "op", ""), jstr(x, "op", ""));
		}
		if (!has_op) {
			snprintf(label, sizeof(label), "%s: %s", jstr(x, "op", "?"), jstr(x, "wait", ""));
			times_line(x, label, f);
		}
	}
	if (jnum(t, "dropped") > 0)
		fprintf(f, "(%.0f times of pairs beyond the table's rows were not kept)\n",
			jnum(t, "dropped"));
}

/* The daemon's requests in flight: the oldest, and how many went stuck. */
static void render_requests(json_object *rq, FILE *f)
{
	if (!rq)
		return;
	if (jnum(rq, "in_flight") > 0)
		fprintf(f, "  requests %.0f in flight, oldest %s %.1f s (inode %.0f)%s%s", jnum(rq, "in_flight"),
			jstr(rq, "oldest_op", "?"), jnum(rq, "oldest_age_ms") / 1000.0,
			jnum(rq, "oldest_ino"), jstr(rq, "oldest_wait", NULL) ? ", waiting for " : "",
			jstr(rq, "oldest_wait", ""));
	else
		fprintf(f, "  requests none in flight");
	fprintf(f, "; %.0f stuck over %.0f s since mount\n", jnum(rq, "stuck_seen"),
		jnum(rq, "stuck_ms") / 1000.0);
}

/* The daemon's FUSE side: libfuse, transport, request size and counts. */
static void render_fuse(json_object *fu, FILE *f)
{
	char a[32];

	if (!fu)
		return;
	fprintf(f, "  fuse     libfuse %s over %s", jstr(fu, "libfuse", "?"), jstr(fu, "transport", "?"));
	if (jget(fu, "uring_depth"))
		fprintf(f, " (queue depth %.0f per CPU)", jnum(fu, "uring_depth"));
	fprintf(f, ", requests up to %s; %.0f requests over io_uring, %.0f over /dev/fuse\n",
		fmt_bytes(jnum(fu, "request_bytes"), a, sizeof(a)), jnum(fu, "uring_requests"),
		jnum(fu, "dev_requests"));
	if (jstr(fu, "why_dev_fuse", NULL))
		fprintf(f, "           not io_uring: %s\n", jstr(fu, "why_dev_fuse", ""));
}

void render_status(json_object *st, FILE *f)
{
	json_object *g = jget(st, "geometry"), *fs = jget(st, "fs"), *rates = jget(st, "rates");
	json_object *mem = jget(st, "members"), *spares = jget(st, "spares");
	json_object *rb = jget(st, "rebuild");
	const char *mnt = jstr(st, "mountpoint", NULL);
	char a[32], b[32], c[32], d[32], line[256], label[256];

	label_escaped(jstr(st, "label", ""), label, sizeof(label));

	fprintf(f, "%s%s (%s)%s%s%s  uuid %s\n", mnt ? mnt : "framefs volume",
		mnt ? "" : "", jstr(st, "source", "?"), label[0] ? "  label \"" : "", label,
		label[0] ? "\"" : "", jstr(st, "uuid", "?"));
	fprintf(f, "  RAID%.0f, %.0f members (%.0f data + %.0f parity), chunk %s, stripe %s\n",
		jnum(st, "level"), jnum(st, "nmembers"), jnum(st, "ndata"), jnum(st, "nparity"),
		fmt_bytes(jnum(st, "chunk_bytes"), a, sizeof(a)),
		fmt_bytes(jnum(g, "stripe_bytes"), b, sizeof(b)));
	fprintf(f, "  state    %s%s%s%s\n", jstr(st, "state", "?"),
		jstr(st, "state_reason", "")[0] ? ": " : "", jstr(st, "state_reason", ""),
		jbool(st, "read_only") ? " (read-only)" : "");
	if (fs)
		fprintf(f, "  size     %s usable, %s free (%s of it kept for overwrites); %.0f of "
			"%.0f inodes free; events %.0f\n",
			fmt_bytes(jnum(fs, "nstripes") * jnum(fs, "stripe_bytes"), a, sizeof(a)),
			fmt_bytes(jnum(fs, "free_stripes") * jnum(fs, "stripe_bytes"), b, sizeof(b)),
			fmt_bytes(fmin(jnum(fs, "reserve_stripes"), jnum(fs, "free_stripes")) *
				  jnum(fs, "stripe_bytes"), c, sizeof(c)),
			jnum(fs, "free_inodes"), jnum(fs, "ninodes"), jnum(st, "events"));
	else
		fprintf(f, "  size     %s usable; events %.0f\n",
			fmt_bytes(jnum(g, "data_bytes"), a, sizeof(a)), jnum(st, "events"));
	render_small(fs, jget(jget(st, "stats"), "fs"), f);
	if (json_object_object_get_ex(st, "footage", NULL)) /* status --footage */
		render_footage(jget(st, "footage"), f);
	render_requests(jget(st, "requests"), f);
	render_fuse(jget(st, "fuse"), f);
	fprintf(f, "  rates    rebuild %s min, %s max; scrub %s min, %s max\n",
		fmt_rate(jnum(rates, "rebuild_min_bps"), a, sizeof(a)),
		fmt_rate(jnum(rates, "rebuild_max_bps"), b, sizeof(b)),
		fmt_rate(jnum(rates, "scrub_min_bps"), c, sizeof(c)),
		fmt_rate(jnum(rates, "scrub_max_bps"), d, sizeof(d)));
	/* READ WRITE CKSUM as zpool status; HEALED: read errors rewritten from parity */
	fprintf(f, "\n  %-5s %-11s %-11s %5s %5s %5s %6s  %-36s %s\n", "ROLE", "STATE", "SIZE", "READ",
		"WRITE", "CKSUM", "HEALED", "PATH", "DEVICE");
	for (size_t i = 0; mem && i < json_object_array_length(mem); i++) {
		json_object *m = json_object_array_get_idx(mem, i);
		char role[16];

		snprintf(role, sizeof(role), "%.0f", jnum(m, "role"));
		member_line(m, role, f);
	}
	for (size_t i = 0; spares && i < json_object_array_length(spares); i++)
		member_line(json_object_array_get_idx(spares, i), "spare", f);
	fprintf(f, "\n");
	if (jget(st, "replacing_role"))
		fprintf(f, "  replace  role %.0f is being copied onto its replacement; the old member "
			"serves until the copy is done\n", jnum(st, "replacing_role"));
	if (jbool(rb, "active") || jstr(rb, "error", NULL) ||
	    strcmp(jstr(rb, "phase", "none"), "none") != 0) {
		bool readd = jbool(rb, "readd");

		render_progress(readd ? "re-add" : "rebuild", rb, line, sizeof(line));
		if (!jbool(rb, "active") && !strcmp(jstr(rb, "phase", ""), "done"))
			fprintf(f, "  %s  done (%s written)\n", readd ? "re-add " : "rebuild",
				fmt_bytes(jnum(rb, "bytes_done"), a, sizeof(a)));
		else
			fprintf(f, "  %s%s%s%s\n", line, jbool(rb, "active") ? "" : "  (not running)",
				jstr(rb, "error", NULL) ? "  error: " : "", jstr(rb, "error", ""));
		if (readd) /* what it resyncs: only what was written while the member was away */
			fprintf(f, "           resyncs %.0f region(s) of %s and %.0f metadata row "
				"group(s) written without the member; %.0f stripes and rows so far\n",
				jnum(rb, "readd_regions"),
				fmt_bytes(jnum(rb, "readd_region_bytes"), a, sizeof(a)),
				jnum(rb, "readd_meta_groups"), jnum(rb, "units_rebuilt"));
	} else {
		fprintf(f, "  rebuild  none\n");
	}
	render_scrub(jget(st, "scrub"), f, "  ");
	render_grow(jget(st, "grow"), f, "  ");
}
