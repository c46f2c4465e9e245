/* SPDX-License-Identifier: MIT */
/*
 * framefs-admin metrics: the daemon's status answer (schema in fs/daemon/ctl.h)
 * in the Prometheus text exposition format (version 0.0.4), for node_exporter's
 * textfile collector or any scraper that runs a command.
 *
 * Every series carries the volume's uuid, label and mountpoint.  Member series
 * add role, path, kind and serial (the NVMe serial; "" for files and other
 * block devices).  States are one 0/1 series per possible state (the
 * Prometheus way to export an enum), so that `== 1` selects the current one.
 * Counters the daemon keeps since its start end in _total; progress and the
 * results of the last scrub, which restart with every run, are gauges; so
 * are the framefs_scrub_last_ families, read from the scrub history the
 * superblock keeps (the last scrub that ended, before this mount too).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/admin/admin.h"

#define LBL_MAX (PATH_MAX + 1024)

struct mx {
	FILE *f;
	char vol[LBL_MAX]; /* uuid="...",label="...",mountpoint="..." */
};

/* A label value: backslash, double quote and newline escaped. */
static void esc(const char *in, char *out, size_t len)
{
	size_t n = 0;

	for (; in && *in && n + 3 < len; in++) {
		if (*in == '\\' || *in == '"') {
			out[n++] = '\\';
			out[n++] = *in;
		} else if (*in == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *in;
		}
	}
	out[n] = '\0';
}

static void family(struct mx *m, const char *name, const char *type, const char *help)
{
	fprintf(m->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One sample; extra is "" or more labels ("role=\"0\",..."). */
static void sample_num(struct mx *m, const char *name, const char *extra, double v)
{
	fprintf(m->f, "%s{%s%s%s} %.17g\n", name, m->vol, extra[0] ? "," : "", extra, v);
}

/* A JSON number as it is: integers exactly (counters go past 2^53 in time). */
static void sample_json(struct mx *m, const char *name, const char *extra, json_object *v)
{
	if (v && json_object_is_type(v, json_type_int)) {
		fprintf(m->f, "%s{%s%s%s} %" PRIu64 "\n", name, m->vol, extra[0] ? "," : "", extra,
			json_object_get_uint64(v));
		return;
	}
	sample_num(m, name, extra, v ? json_object_get_double(v) : 0);
}

/* A family with one sample straight from a JSON key. */
static void one(struct mx *m, json_object *o, const char *key, const char *name, const char *type,
		const char *help)
{
	family(m, name, type, help);
	sample_json(m, name, "", jget(o, key));
}

static void one_num(struct mx *m, const char *name, const char *type, const char *help, double v)
{
	family(m, name, type, help);
	sample_num(m, name, "", v);
}

/* ---- members -------------------------------------------------------------------- */

static const char *const member_states[] = { "active", "rebuilding", "failed", "missing", "stale" };

static void member_labels(json_object *mem, const char *role, char *out, size_t len)
{
	char path[PATH_MAX], serial[256], kind[32];
	json_object *nvme = jget(mem, "nvme");

	esc(jstr(mem, "path", ""), path, sizeof(path));
	esc(nvme ? jstr(nvme, "serial", "") : "", serial, sizeof(serial));
	esc(jstr(mem, "kind", ""), kind, sizeof(kind));
	snprintf(out, len, "role=\"%s\",path=\"%s\",kind=\"%s\",serial=\"%s\"", role, path, kind,
		 serial);
}

/* Per-member error counts (zpool status' READ WRITE CKSUM, and ranges
 * healed), kept across remounts: counters. */
static const struct {
	const char *key, *name, *help;
} member_counters[] = {
	{ "read_errors", "framefs_member_read_errors_total",
	  "Read errors of the member in this role (each healed from parity while under the threshold)" },
	{ "write_errors", "framefs_member_write_errors_total", "Write errors of the member in this role" },
	{ "cksum_errors", "framefs_member_checksum_errors_total",
	  "Chunks of the member in this role that failed their checksum (reads, scrub)" },
	{ "healed", "framefs_member_healed_total",
	  "Ranges of the member in this role rewritten from parity after a read error" },
	{ "failed_at", "framefs_member_failed_timestamp_seconds",
	  "When the member in this role was failed (absent when it was not)" },
};

static void member_counts(struct mx *m, json_object *mem, size_t n)
{
	char l[LBL_MAX], role[16];

	for (size_t k = 0; k < FF_ARRAY_SIZE(member_counters); k++) {
		bool gauge = !strcmp(member_counters[k].key, "failed_at");

		family(m, member_counters[k].name, gauge ? "gauge" : "counter", member_counters[k].help);
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(mem, i);

			if (!jget(e, member_counters[k].key))
				continue;
			snprintf(role, sizeof(role), "%.0f", jnum(e, "role"));
			member_labels(e, role, l, sizeof(l));
			sample_json(m, member_counters[k].name, l, jget(e, member_counters[k].key));
		}
	}
}

static void members(struct mx *m, json_object *st)
{
	json_object *mem = jget(st, "members"), *spares = jget(st, "spares");
	size_t n = mem ? json_object_array_length(mem) : 0;
	size_t ns = spares ? json_object_array_length(spares) : 0;
	char l[LBL_MAX], ls[LBL_MAX + 64], role[16];

	family(m, "framefs_member_state", "gauge",
	       "1 for the state the member in this role is in, 0 for the others "
	       "(stale: left out at assembly, its event counter is behind)");
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(mem, i);
		const char *s = jstr(e, "state", "missing");

		snprintf(role, sizeof(role), "%.0f", jnum(e, "role"));
		member_labels(e, role, l, sizeof(l));
		for (size_t k = 0; k < FF_ARRAY_SIZE(member_states); k++) {
			snprintf(ls, sizeof(ls), "%s,state=\"%s\"", l, member_states[k]);
			sample_num(m, "framefs_member_state", ls, !strcmp(s, member_states[k]));
		}
	}
	family(m, "framefs_member_size_bytes", "gauge",
	       "Size of the member in this role (absent when no member is open for it)");
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(mem, i);

		if (!jget(e, "size_bytes"))
			continue;
		snprintf(role, sizeof(role), "%.0f", jnum(e, "role"));
		member_labels(e, role, l, sizeof(l));
		sample_json(m, "framefs_member_size_bytes", l, jget(e, "size_bytes"));
	}
	member_counts(m, mem, n);
	family(m, "framefs_spare_size_bytes", "gauge", "Size of each hot spare");
	for (size_t i = 0; i < ns; i++) {
		json_object *e = json_object_array_get_idx(spares, i);

		member_labels(e, "spare", l, sizeof(l));
		sample_json(m, "framefs_spare_size_bytes", l, jget(e, "size_bytes"));
	}
	one_num(m, "framefs_spares", "gauge", "Hot spares waiting for a failure", (double)ns);
}

/* ---- array ---------------------------------------------------------------------- */

static const char *const array_states[] = { "clean", "degraded", "rebuilding", "failed" };

static void array(struct mx *m, json_object *st)
{
	json_object *g = jget(st, "geometry");
	const char *s = jstr(st, "state", "");
	char l[256], src[64];

	esc(jstr(st, "source", ""), src, sizeof(src));
	snprintf(l, sizeof(l), "level=\"%.0f\",source=\"%s\"", jnum(st, "level"), src);
	family(m, "framefs_volume_info", "gauge", "Always 1: the RAID level and who answered");
	sample_num(m, "framefs_volume_info", l, 1);
	one(m, st, "nmembers", "framefs_members", "gauge", "Member roles of the array");
	one(m, st, "ndata", "framefs_data_members", "gauge", "Data members per stripe");
	one(m, st, "nparity", "framefs_parity_members", "gauge", "Parity members per stripe");
	one(m, st, "chunk_bytes", "framefs_chunk_bytes", "gauge", "Bytes per member per stripe");
	one(m, g, "stripe_bytes", "framefs_stripe_bytes", "gauge",
	    "Data bytes per stripe; a file occupies whole stripes");
	family(m, "framefs_array_state", "gauge",
	       "1 for the array's state, 0 for the others (failed: more members lost than the "
	       "parity covers, I/O fails)");
	for (size_t k = 0; k < FF_ARRAY_SIZE(array_states); k++) {
		snprintf(l, sizeof(l), "state=\"%s\"", array_states[k]);
		sample_num(m, "framefs_array_state", l, !strcmp(s, array_states[k]));
	}
	one(m, st, "failed_members", "framefs_failed_members", "gauge",
	    "Members failed or missing");
	one(m, st, "redundancy_left", "framefs_redundancy_left", "gauge",
	    "Members that may still be lost without losing data (negative: data is lost)");
	one_num(m, "framefs_read_only", "gauge", "1 when the volume is read-only",
		jbool(st, "read_only"));
	one(m, st, "events", "framefs_superblock_events", "gauge",
	    "The array's superblock event counter");
	one_num(m, "framefs_replacing", "gauge", "1 while a member is being copied onto its "
		"replacement (framefs-admin replace)", jget(st, "replacing_role") != NULL);
}

/* ---- rebuild, scrub, rates --------------------------------------------------------- */

static void rebuild(struct mx *m, json_object *st)
{
	json_object *rb = jget(st, "rebuild");

	one_num(m, "framefs_rebuild_active", "gauge", "1 while a rebuild runs",
		jbool(rb, "active"));
	one_num(m, "framefs_rebuild_roles", "gauge", "Roles left to rebuild (running or pending)",
		(double)(jget(rb, "roles") ? json_object_array_length(jget(rb, "roles")) : 0));
	one(m, rb, "fraction", "framefs_rebuild_progress_ratio", "gauge",
	    "Progress of the current or last rebuild, 0 to 1");
	one(m, rb, "bytes_done", "framefs_rebuild_written_bytes", "gauge",
	    "Bytes written by the current or last rebuild");
	one_num(m, "framefs_rebuild_rate_bytes_per_second", "gauge",
		"Average rate of the current or last rebuild", jnum(rb, "mb_per_s") * 1e6);
	one(m, rb, "eta_s", "framefs_rebuild_eta_seconds", "gauge",
	    "Estimated seconds left (0 when not running)");
	one_num(m, "framefs_rebuild_error", "gauge", "1 when the rebuild stopped on an error",
		jstr(rb, "error", NULL) != NULL);
}

/* data chunks, parity, metadata copies: KEY_bad or KEY_repaired */
static void scrub_damage(struct mx *m, json_object *sc, const char *name, const char *suffix)
{
	static const char *const kinds[][2] = { { "data", "chunks" }, { "parity", "parity" },
						{ "metadata", "meta" } };
	char key[32], l[64];

	for (size_t k = 0; k < FF_ARRAY_SIZE(kinds); k++) {
		snprintf(key, sizeof(key), "%s_%s", kinds[k][1], suffix);
		snprintf(l, sizeof(l), "kind=\"%s\"", kinds[k][0]);
		sample_json(m, name, l, jget(sc, key));
	}
}

static const char *const scrub_results[] = { "done", "stopped", "failed" };

/* The last scrub that ended, from the superblock's history (kept across
 * remounts): absent until a scrub has ended on the volume. */
static void scrub_last(struct mx *m, json_object *sc)
{
	json_object *hist = jget(sc, "history");
	json_object *h = hist && json_object_array_length(hist) ? json_object_array_get_idx(hist, 0)
								 : NULL;
	double found = jnum(h, "chunks_bad") + jnum(h, "parity_bad") + jnum(h, "meta_bad") +
		       jnum(h, "unreadable");
	double left = found - jnum(h, "chunks_repaired") - jnum(h, "parity_repaired") -
		      jnum(h, "meta_repaired");
	char l[64];

	family(m, "framefs_scrub_last_start_timestamp_seconds", "gauge",
	       "When the last scrub that ended started (kept across remounts; absent before the first)");
	if (h)
		sample_json(m, "framefs_scrub_last_start_timestamp_seconds", "", jget(h, "start_s"));
	family(m, "framefs_scrub_last_end_timestamp_seconds", "gauge",
	       "When the last scrub that ended ended (kept across remounts; absent before the first)");
	if (h)
		sample_json(m, "framefs_scrub_last_end_timestamp_seconds", "", jget(h, "end_s"));
	family(m, "framefs_scrub_last_errors_found", "gauge",
	       "Damage the last scrub that ended found: bad data chunks, parity mismatches, bad "
	       "metadata blocks and unreadable stripes together");
	if (h)
		sample_num(m, "framefs_scrub_last_errors_found", "", found);
	family(m, "framefs_scrub_last_errors_unrepaired", "gauge",
	       "Damage the last scrub that ended found and did not repair (all of it for a "
	       "check-only scrub)");
	if (h)
		sample_num(m, "framefs_scrub_last_errors_unrepaired", "", left);
	family(m, "framefs_scrub_last_result", "gauge",
	       "1 for how the last scrub that ended ended, 0 for the others (stopped: by scrub stop "
	       "or unmount; failed: the array failed under it)");
	for (size_t k = 0; h && k < FF_ARRAY_SIZE(scrub_results); k++) {
		snprintf(l, sizeof(l), "result=\"%s\"", scrub_results[k]);
		sample_num(m, "framefs_scrub_last_result", l,
			   !strcmp(jstr(h, "result", ""), scrub_results[k]));
	}
	one_num(m, "framefs_scrub_history_records", "gauge",
		"Scrubs recorded in the superblock's history (the last 8 are kept)",
		(double)(hist ? json_object_array_length(hist) : 0));
}

static void scrub(struct mx *m, json_object *st)
{
	json_object *sc = jget(st, "scrub"), *fs = jget(st, "fs");
	double space = jnum(fs, "nstripes") * jnum(fs, "stripe_bytes");

	if (!sc)
		return;
	one_num(m, "framefs_scrub_active", "gauge", "1 while a scrub runs", jbool(sc, "active"));
	one_num(m, "framefs_scrub_repair", "gauge", "1 when the scrub repairs what it finds",
		jbool(sc, "repair"));
	one(m, sc, "fraction", "framefs_scrub_progress_ratio", "gauge",
	    "Part of the data space the current or last scrub walked, 0 to 1");
	one_num(m, "framefs_scrub_walked_bytes", "gauge",
		"Data space walked by the current or last scrub (progress ratio x data space)",
		jnum(sc, "fraction") * space);
	one_num(m, "framefs_scrub_space_bytes", "gauge",
		"Data space a scrub walks (it reads only the allocated stripes)", space);
	one_num(m, "framefs_scrub_checked_bytes", "gauge",
		"Bytes of allocated stripes the current or last scrub checked",
		jnum(sc, "stripes_checked") * jnum(fs, "stripe_bytes"));
	one_num(m, "framefs_scrub_rate_bytes_per_second", "gauge",
		"Average rate of the current or last scrub", jnum(sc, "mb_per_s") * 1e6);
	one(m, sc, "eta_s", "framefs_scrub_eta_seconds", "gauge",
	    "Estimated seconds left (0 when not running)");
	family(m, "framefs_scrub_bad", "gauge",
	       "Damage the current or last scrub found: data chunks failing their checksum, "
	       "stripes whose parity did not match their data, metadata copies");
	scrub_damage(m, sc, "framefs_scrub_bad", "bad");
	family(m, "framefs_scrub_repaired", "gauge", "Damage the current or last scrub repaired");
	scrub_damage(m, sc, "framefs_scrub_repaired", "repaired");
	one(m, sc, "unreadable", "framefs_scrub_unreadable_stripes", "gauge",
	    "Stripes the current or last scrub could neither read nor rebuild");
	one_num(m, "framefs_scrub_error", "gauge", "1 when the scrub stopped on an error",
		jstr(sc, "error", NULL) != NULL);
	scrub_last(m, sc);
}

/* A grow's restripe (absent without a filesystem; zeros when no grow ran
 * since the mount). */
static void grow(struct mx *m, json_object *st)
{
	json_object *gr = jget(st, "grow");

	if (!gr)
		return;
	one_num(m, "framefs_grow_active", "gauge", "1 while a grow's restripe moves files",
		jbool(gr, "active"));
	one(m, gr, "fraction", "framefs_grow_progress_ratio", "gauge",
	    "Part of the rows at the old width the current or last restripe moved, 0 to 1");
	one(m, gr, "rows_left", "framefs_grow_old_rows", "gauge",
	    "Data rows still at the old width");
	one(m, gr, "bytes_moved", "framefs_grow_moved_bytes", "gauge",
	    "File bytes the current or last restripe moved since the mount");
	one_num(m, "framefs_grow_rate_bytes_per_second", "gauge",
		"Average rate of the current or last restripe", jnum(gr, "mb_per_s") * 1e6);
	one(m, gr, "eta_s", "framefs_grow_eta_seconds", "gauge",
	    "Estimated seconds left (0 when not running)");
	one(m, gr, "capacity_before", "framefs_grow_capacity_before_bytes", "gauge",
	    "Data capacity at the old width (0 when no grow ran since the mount)");
	one(m, gr, "capacity_after", "framefs_grow_capacity_after_bytes", "gauge",
	    "Data capacity at the new width (0 when no grow ran since the mount)");
	one_num(m, "framefs_grow_error", "gauge", "1 when the restripe stopped on an error",
		jstr(gr, "error", NULL) != NULL);
}

static void rates(struct mx *m, json_object *st)
{
	static const char *const keys[][3] = {
		{ "rebuild_min_bps", "rebuild", "min" }, { "rebuild_max_bps", "rebuild", "max" },
		{ "scrub_min_bps", "scrub", "min" },     { "scrub_max_bps", "scrub", "max" },
	};
	json_object *r = jget(st, "rates");
	char l[64];

	family(m, "framefs_rate_limit_bytes_per_second", "gauge",
	       "Rate limits of rebuild and scrub: min while files are read or written, max when "
	       "idle (0: no limit)");
	for (size_t k = 0; k < FF_ARRAY_SIZE(keys); k++) {
		snprintf(l, sizeof(l), "task=\"%s\",bound=\"%s\"", keys[k][1], keys[k][2]);
		sample_json(m, "framefs_rate_limit_bytes_per_second", l, jget(r, keys[k][0]));
	}
}

/* ---- space, requests, counters ----------------------------------------------------- */

static void space(struct mx *m, json_object *st)
{
	json_object *fs = jget(st, "fs");

	if (!fs)
		return;
	one_num(m, "framefs_filesystem_size_bytes", "gauge", "Data space of the filesystem",
		jnum(fs, "nstripes") * jnum(fs, "stripe_bytes"));
	one_num(m, "framefs_filesystem_free_bytes", "gauge",
		"Free data space (whole free stripes)",
		jnum(fs, "free_stripes") * jnum(fs, "stripe_bytes"));
	one(m, fs, "nstripes", "framefs_filesystem_stripes", "gauge", "Data stripes");
	one(m, fs, "free_stripes", "framefs_filesystem_free_stripes", "gauge", "Free data stripes");
	one(m, fs, "reserve_stripes", "framefs_filesystem_reserve_stripes", "gauge",
	    "Free data stripes kept for overwrites of existing files (not for new data)");
	one(m, fs, "ninodes", "framefs_filesystem_files", "gauge", "Inodes");
	one(m, fs, "free_inodes", "framefs_filesystem_files_free", "gauge", "Free inodes");
	one(m, fs, "pool_blocks", "framefs_metadata_pool_blocks", "gauge",
	    "4 KiB blocks of the mirrored metadata pool (trees, xattrs, symlinks, small-file data)");
	one(m, fs, "pool_free_blocks", "framefs_metadata_pool_free_blocks", "gauge",
	    "Free blocks of the metadata pool");
	one(m, fs, "merges_pending", "framefs_merges_pending", "gauge",
	    "Patched stripes queued for, or being rewritten by, the background merge thread");
	one(m, fs, "small_max", "framefs_small_file_max_bytes", "gauge",
	    "Files whose bytes all lie below this live in the metadata pool (0: the small-data "
	    "class is off)");
}

static void requests(struct mx *m, json_object *st)
{
	json_object *rq = jget(st, "requests");

	if (!rq)
		return;
	one(m, rq, "in_flight", "framefs_requests_in_flight", "gauge",
	    "FUSE requests being served");
	one_num(m, "framefs_oldest_request_age_seconds", "gauge",
		"Age of the oldest FUSE request in flight (0 with none)",
		jnum(rq, "oldest_age_ms") / 1000.0);
	one_num(m, "framefs_request_stuck_threshold_seconds", "gauge",
		"Age past which the daemon logs a request as stuck", jnum(rq, "stuck_ms") / 1000.0);
	one(m, rq, "stuck_seen", "framefs_requests_stuck_total", "counter",
	    "Requests logged as stuck since the mount");
	one(m, rq, "untracked", "framefs_requests_untracked_total", "counter",
	    "Requests served by threads beyond the in-flight table");
}

struct counter {
	const char *key, *name, *help;
};

static const struct counter raid_counters[] = {
	{ "read_bytes", "framefs_read_bytes_total", "Bytes read through the array" },
	{ "write_bytes", "framefs_written_bytes_total", "Bytes written through the array" },
	{ "fg_bytes", "framefs_member_foreground_bytes_total",
	  "Member bytes moved for foreground requests (not rebuild, scrub or a grow's restripe)" },
	{ "member_reads", "framefs_member_reads_total", "Reads issued to members (all members)" },
	{ "member_writes", "framefs_member_writes_total", "Writes issued to members (all members)" },
	{ "member_errors", "framefs_member_errors_total",
	  "I/O errors returned by members (all members together)" },
	{ "meta_write_bytes", "framefs_meta_written_bytes_total",
	  "Of the bytes written through the array, the mirrored metadata's (every copy)" },
	{ "full_stripe_writes", "framefs_full_stripe_writes_total",
	  "Writes of whole stripes (parity from the data alone)" },
	{ "rows_writes", "framefs_rows_writes_total",
	  "Writes of a stripe's rows alone (packed tails; parity from those rows)" },
	{ "rmw_segments", "framefs_rmw_segments_total", "Read-modify-write segments" },
	{ "rcw_segments", "framefs_rcw_segments_total", "Reconstruct-write segments" },
	{ "degraded_segments", "framefs_degraded_segments_total",
	  "Segments served around a missing member" },
};

static const struct counter fs_counters[] = {
	{ "commits", "framefs_commits_total", "Metadata commits" },
	{ "stripe_writes", "framefs_stripe_writes_total", "Data stripes written" },
	{ "stripe_reads", "framefs_stripe_reads_total", "Data stripes read" },
	{ "stripe_fills", "framefs_stripe_fills_total",
	  "Partly written stripes completed from what was on disk" },
	{ "readahead", "framefs_readahead_total", "Stripes read ahead" },
	{ "rcache_hits", "framefs_read_cache_hits_total", "Reads served from the stripe cache" },
	{ "reads_again", "framefs_reads_again_total",
	  "Reads redone because the file was rewritten under them" },
	{ "direct_reads", "framefs_direct_reads_total",
	  "Reads from the members straight into a reply buffer" },
	{ "direct_reads_unwaited", "framefs_direct_reads_unwaited_total",
	  "Of those, reads no thread waited for (the engine's completion replied)" },
	{ "crc_errors", "framefs_crc_errors_total", "Data chunks that failed their checksum" },
	{ "crc_repaired", "framefs_crc_repaired_total", "Data chunks repaired from parity" },
	{ "meta_repaired", "framefs_meta_repaired_total", "Metadata copies repaired" },
	{ "wbuf_evictions", "framefs_write_buffer_evictions_total",
	  "Partial stripes sent out early to free a write buffer" },
	{ "small_stores", "framefs_small_stores_total", "Small files written to metadata pool blocks" },
	{ "small_promotions", "framefs_small_promotions_total",
	  "Small files moved to stripes (grown past the small-file threshold)" },
	{ "small_nospc", "framefs_small_nospc_total",
	  "Small files sent to a stripe because the metadata pool was at its reserve" },
	{ "tail_packed", "framefs_tail_packed_total", "File tails written into shared tail stripes" },
	{ "tail_stripes", "framefs_tail_stripes_total", "Tail stripes opened" },
	{ "tail_busy", "framefs_tail_busy_total",
	  "File tails sent to a stripe of their own because every tail stripe was busy" },
	{ "patch_writes", "framefs_patch_writes_total",
	  "Small overwrites written as patches instead of a rewrite of their stripe" },
	{ "patch_blocks", "framefs_patch_blocks_total", "4 KiB blocks written as patches" },
	{ "patch_merges", "framefs_patch_merges_total",
	  "Patched stripes rewritten whole (their patches had grown past half the stripe)" },
	{ "merges_background", "framefs_merges_background_total",
	  "Of those, merged by the background merge thread in a buffer of its own" },
	{ "patch_reads", "framefs_patch_reads_total", "Patched 4 KiB blocks read from the members" },
	{ "patch_cache_hits", "framefs_patch_cache_hits_total",
	  "Patched 4 KiB blocks found in the patch cache instead of read from the members" },
};

static void counters(struct mx *m, json_object *stats, const struct counter *c, size_t n)
{
	if (!stats)
		return;
	for (size_t i = 0; i < n; i++)
		if (jget(stats, c[i].key))
			one(m, stats, c[i].key, c[i].name, "counter", c[i].help);
}

int render_metrics(json_object *st, FILE *f)
{
	struct mx m = { .f = f };
	char uuid[64], label[512], mnt[PATH_MAX - 256];
	json_object *stats = jget(st, "stats");

	esc(jstr(st, "uuid", ""), uuid, sizeof(uuid));
	esc(jstr(st, "label", ""), label, sizeof(label));
	esc(jstr(st, "mountpoint", ""), mnt, sizeof(mnt));
	snprintf(m.vol, sizeof(m.vol), "uuid=\"%s\",label=\"%s\",mountpoint=\"%s\"", uuid, label,
		 mnt);
	array(&m, st);
	members(&m, st);
	space(&m, st);
	rebuild(&m, st);
	scrub(&m, st);
	grow(&m, st);
	rates(&m, st);
	requests(&m, st);
	counters(&m, jget(stats, "raid"), raid_counters, FF_ARRAY_SIZE(raid_counters));
	counters(&m, jget(stats, "fs"), fs_counters, FF_ARRAY_SIZE(fs_counters));
	return ferror(f) ? -1 : 0;
}
