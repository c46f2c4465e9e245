/* SPDX-License-Identifier: MIT */
/*
 * The "status" answer of the control socket: the array, its members and
 * spares, rebuild and scrub progress, requests in flight and the
 * filesystem's statistics, as one JSON object (schema 1, key by key in
 * ctl.h).
 */
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/daemon/ctl_i.h"
#include "raid/sb.h"

const char *ctl_member_state_name(enum ff_member_state s)
{
	switch (s) {
	case FF_MEMBER_ACTIVE: return "active";
	case FF_MEMBER_FAILED: return "failed";
	case FF_MEMBER_REBUILDING: return "rebuilding";
	default: return "missing";
	}
}

static void member_fields(json_object *o, const struct ff_member *m)
{
	ctl_jadd_str(o, "path", m ? m->path : NULL);
	json_object_object_add(o, "size_bytes", m ? json_object_new_uint64(m->size_bytes) : NULL);
	ctl_jadd_str(o, "kind", m ? (m->is_bdev ? "block" : "file") : NULL);
	if (m && m->nvme.is_nvme) {
		json_object *n = json_object_new_object();

		ctl_jadd_str(n, "model", m->nvme.model);
		ctl_jadd_str(n, "serial", m->nvme.serial);
		ctl_jadd_str(n, "firmware", m->nvme.firmware);
		ctl_jadd_u64(n, "nsid", m->nvme.nsid);
		ctl_jadd_u64(n, "lba_bytes", m->nvme.lba_bytes);
		json_object_object_add(o, "nvme", n);
	} else {
		json_object_object_add(o, "nvme", NULL);
	}
}

/* The role's error counts (raid/health.c) and when it was failed. */
static void member_health_json(json_object *o, const struct ff_raid_member_info *mi)
{
	ctl_jadd_u64(o, "read_errors", mi->read_errors);
	ctl_jadd_u64(o, "write_errors", mi->write_errors);
	ctl_jadd_u64(o, "cksum_errors", mi->cksum_errors);
	ctl_jadd_u64(o, "healed", mi->healed);
	if (mi->failed_s)
		ctl_jadd_u64(o, "failed_at", mi->failed_s);
	else
		json_object_object_add(o, "failed_at", NULL);
}

/* The member the superblocks name for the role as it was last seen
 * holding it (raid/roster.c): how to find a missing one. */
static void member_last_json(json_object *o, const struct ff_raid_member_info *mi)
{
	json_object *l;

	if (!mi->last_known) {
		json_object_object_add(o, "last_seen", NULL);
		return;
	}
	l = json_object_new_object();
	ctl_jadd_str(l, "path", mi->last_path);
	ctl_jadd_str(l, "kind", mi->last_kind);
	ctl_jadd_str(l, "model", mi->last_model[0] ? mi->last_model : NULL);
	ctl_jadd_str(l, "serial", mi->last_serial[0] ? mi->last_serial : NULL);
	ctl_jadd_str(l, "firmware", mi->last_firmware[0] ? mi->last_firmware : NULL);
	ctl_jadd_u64(l, "size_bytes", mi->last_size_bytes);
	ctl_jadd_u64(l, "seen_at", mi->last_seen_s);
	json_object_object_add(o, "last_seen", l);
}

/*
 * One role: its state ("stale": missing, and the member given for it at
 * assembly was left out because its event counter is behind), its member,
 * and what status says beyond that: why it failed or was left out
 * (reason), a warning that fails nothing (note), what to do (hint), and a
 * left-out member's event counter (member_events).
 */
static void member_json(struct ffs_ctl *c, json_object *o, unsigned role)
{
	struct ff_raid_member_info *mi = malloc(sizeof(*mi));
	const char *vol = c->mountpoint ? c->mountpoint : "VOLUME";
	char reason[FF_RAID_REASON_MAX + 128] = "", hint[PATH_MAX + 256] = "";
	const char *state;

	if (!mi) {
		ctl_jadd_u64(o, "role", role);
		ctl_jadd_str(o, "state", ctl_member_state_name(ff_raid_member_state(c->r, role)));
		member_fields(o, ff_raid_member(c->r, role));
		return;
	}
	ff_raid_member_info(c->r, role, mi);
	state = ctl_member_state_name(mi->state);
	ctl_jadd_u64(o, "role", role);
	if (mi->state == FF_MEMBER_MISSING && mi->left_path[0]) {
		state = mi->left_stale ? "stale" : "missing";
		ctl_jadd_str(o, "state", state);
		ctl_jadd_str(o, "path", mi->left_path);
		json_object_object_add(o, "size_bytes", NULL);
		ctl_jadd_str(o, "kind", NULL);
		json_object_object_add(o, "nvme", NULL);
		if (mi->left_stale)
			snprintf(reason, sizeof(reason), "stale: its event counter %llu is behind the "
				 "array's %llu %s", (unsigned long long)mi->left_events,
				 (unsigned long long)ff_raid_events(c->r), mi->left_failed ?
				 "and the array marks it failed (the array was assembled without it, "
				 "or it failed)" : "(the array was written without it)");
		else
			snprintf(reason, sizeof(reason), "marked failed in the array's superblocks "
				 "(its event counter %llu): left out at assembly",
				 (unsigned long long)mi->left_events);
		if (mi->reason[0]) /* why, when it failed before this mount */
			snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
				 "; failed: %s", mi->reason);
		snprintf(hint, sizeof(hint), "re-add it with framefs-admin add --force %s %s (it is "
			 "rebuilt from parity), or put a new member in its place with framefs-admin "
			 "add %s NEW (re-add in place of add --force rebuilds only what was "
			 "written without it, when the array recorded that)", vol, mi->left_path, vol);
		ctl_jadd_u64(o, "member_events", mi->left_events);
	} else {
		ctl_jadd_str(o, "state", state);
		member_fields(o, ff_raid_member(c->r, role));
		if (mi->state == FF_MEMBER_FAILED)
			snprintf(reason, sizeof(reason), "%s", mi->reason[0] ? mi->reason : "failed");
		else if (mi->reason[0]) /* failed before this mount */
			snprintf(reason, sizeof(reason), "failed: %s", mi->reason);
		if (mi->state == FF_MEMBER_FAILED || mi->state == FF_MEMBER_MISSING)
			snprintf(hint, sizeof(hint), "framefs-admin add %s NEW puts a new member in "
				 "role %u (rebuilt from parity)", vol, role);
		json_object_object_add(o, "member_events", NULL);
	}
	ctl_jadd_str(o, "reason", reason[0] ? reason : NULL);
	ctl_jadd_str(o, "note", mi->note[0] ? mi->note : NULL);
	ctl_jadd_str(o, "hint", hint[0] ? hint : NULL);
	member_health_json(o, mi);
	member_last_json(o, mi);
	free(mi);
}

static json_object *geometry_json(const struct ff_geom *g)
{
	json_object *o = json_object_new_object();

	ctl_jadd_u64(o, "stripe_bytes", g->stripe_bytes);
	ctl_jadd_u64(o, "nstripes", g->nstripes);
	ctl_jadd_u64(o, "data_offset", g->data_offset);
	ctl_jadd_u64(o, "meta_offset", g->meta_offset);
	ctl_jadd_u64(o, "meta_member_bytes", g->meta_member_bytes);
	ctl_jadd_u64(o, "meta_copies", g->meta_copies);
	ctl_jadd_u64(o, "member_bytes", g->member_bytes);
	ctl_jadd_u64(o, "data_bytes", g->data_bytes);
	ctl_jadd_u64(o, "meta_bytes", g->meta_bytes);
	ctl_jadd_u64(o, "io_align", g->io_align);
	return o;
}

json_object *ctl_rebuild_json(struct ff_raid *r)
{
	static const char *phase[] = { "metadata", "allocated", "rest", "done" };
	struct ff_raid_rebuild_status st;
	json_object *o = json_object_new_object(), *roles = json_object_new_array();
	bool known;

	ff_raid_rebuild_status(r, &st);
	known = st.active || st.members || st.bytes_done || st.error;
	for (unsigned m = 0; m < 32; m++)
		if (st.members & (1u << m))
			json_object_array_add(roles, json_object_new_int((int)m));
	if (st.phase >= 3 && !st.members)
		st.fraction = 1;
	ctl_jadd_bool(o, "active", st.active);
	json_object_object_add(o, "roles", roles);
	if (!known)
		ctl_jadd_str(o, "phase", "none");
	else if (!st.active && !st.bytes_done && !st.error && st.members)
		ctl_jadd_str(o, "phase", "pending"); /* resumes from its checkpoint when started */
	else
		ctl_jadd_str(o, "phase", st.phase < 4 ? phase[st.phase] : "done");
	json_object_object_add(o, "fraction", ctl_jdbl(st.fraction, "%.6f"));
	json_object_object_add(o, "percent", ctl_jdbl(st.fraction * 100, "%.2f"));
	json_object_object_add(o, "mb_per_s", ctl_jdbl(st.mb_per_s, "%.1f"));
	json_object_object_add(o, "eta_s", ctl_jdbl(st.eta_s, "%.1f"));
	ctl_jadd_u64(o, "bytes_done", st.bytes_done);
	ctl_jadd_str(o, "error", st.error ? strerror(-st.error) : NULL);
	/* a re-add: what it resyncs (regions written while the member was away) */
	ctl_jadd_bool(o, "readd", known && st.readd);
	ctl_jadd_u64(o, "readd_regions", st.readd ? st.readd_regions : 0);
	ctl_jadd_u64(o, "readd_meta_groups", st.readd ? st.readd_meta_groups : 0);
	ctl_jadd_u64(o, "readd_region_bytes", st.readd_region_bytes);
	ctl_jadd_u64(o, "units_rebuilt", st.units_rebuilt);
	return o;
}

/* The scrubs that ended, newest first (fs/volume/scrub.c keeps them in the superblock). */
static json_object *scrub_history_json(struct ffs *fs)
{
	struct ffs_scrub_past past[FFS_SCRUB_HISTORY_MAX];
	json_object *arr = json_object_new_array();
	unsigned n = ffs_scrub_history(fs, past);

	for (unsigned i = 0; i < n; i++) {
		const struct ffs_scrub_past *p = &past[i];
		json_object *o = json_object_new_object();

		ctl_jadd_u64(o, "seq", p->seq);
		ctl_jadd_u64(o, "start_s", p->start_s);
		ctl_jadd_u64(o, "end_s", p->end_s);
		ctl_jadd_bool(o, "repair", p->repair);
		ctl_jadd_str(o, "result", ffs_scrub_result_name(p->result));
		ctl_jadd_u64(o, "bytes_checked", p->bytes_checked);
		ctl_jadd_u64(o, "stripes_checked", p->stripes_checked);
		ctl_jadd_u64(o, "meta_chunks_checked", p->meta_chunks_checked);
		ctl_jadd_u64(o, "chunks_bad", p->chunks_bad);
		ctl_jadd_u64(o, "chunks_repaired", p->chunks_repaired);
		ctl_jadd_u64(o, "chunks_unrepairable", p->chunks_unrepairable);
		ctl_jadd_u64(o, "parity_bad", p->parity_bad);
		ctl_jadd_u64(o, "parity_repaired", p->parity_repaired);
		ctl_jadd_u64(o, "meta_bad", p->meta_bad);
		ctl_jadd_u64(o, "meta_repaired", p->meta_repaired);
		ctl_jadd_u64(o, "unreadable", p->unreadable);
		json_object_array_add(arr, o);
	}
	return arr;
}

/* A grow's restripe (fs/grow/restripe.c): state none, restriping, paused
 * (no redundancy left: paused_reason says so), done, failed or stopped; rows in the old geometry, the rate, the capacity at
 * the old and new widths. */
json_object *ctl_grow_json(struct ffs *fs)
{
	struct ffs_grow_status st;
	json_object *o = json_object_new_object();
	const char *state;

	ffs_grow_status(fs, &st);
	state = st.active ? (st.paused ? "paused" : "restriping") : st.done ? "done"
	      : st.error ? "failed" : st.old_nmembers ? "stopped" : "none";
	ctl_jadd_str(o, "state", state);
	ctl_jadd_bool(o, "active", st.active);
	ctl_jadd_u64(o, "old_members", st.old_nmembers);
	ctl_jadd_u64(o, "new_members", st.new_nmembers);
	ctl_jadd_u64(o, "capacity_before", st.capacity_before);
	ctl_jadd_u64(o, "capacity_after", st.capacity_after);
	ctl_jadd_u64(o, "rows_before", st.rows_before);
	ctl_jadd_u64(o, "rows_left", st.rows_left);
	ctl_jadd_u64(o, "files_moved", st.files_moved);
	ctl_jadd_u64(o, "bytes_moved", st.bytes_moved);
	json_object_object_add(o, "fraction", ctl_jdbl(st.fraction, "%.6f"));
	json_object_object_add(o, "percent", ctl_jdbl(st.fraction * 100, "%.2f"));
	json_object_object_add(o, "mb_per_s", ctl_jdbl(st.mb_per_s, "%.1f"));
	json_object_object_add(o, "eta_s", ctl_jdbl(st.eta_s, "%.1f"));
	ctl_jadd_str(o, "error", st.error ? strerror(-st.error) : NULL);
	ctl_jadd_str(o, "paused_reason", st.paused ? st.paused_reason : NULL);
	return o;
}

json_object *ctl_scrub_json(struct ffs *fs)
{
	struct ffs_scrub_status *st = calloc(1, sizeof(*st));
	json_object *o = json_object_new_object(), *files = json_object_new_array();

	if (!st) {
		json_object_put(files);
		return o;
	}
	ffs_scrub_status(fs, st);
	ctl_jadd_bool(o, "active", st->active);
	ctl_jadd_bool(o, "repair", st->repair);
	json_object_object_add(o, "fraction", ctl_jdbl(st->fraction, "%.6f"));
	json_object_object_add(o, "percent", ctl_jdbl(st->fraction * 100, "%.2f"));
	ctl_jadd_u64(o, "stripes_checked", st->stripes_checked);
	ctl_jadd_u64(o, "chunks_bad", st->chunks_bad);
	ctl_jadd_u64(o, "chunks_repaired", st->chunks_repaired);
	ctl_jadd_u64(o, "parity_bad", st->parity_bad);
	ctl_jadd_u64(o, "parity_repaired", st->parity_repaired);
	ctl_jadd_u64(o, "meta_bad", st->meta_bad);
	ctl_jadd_u64(o, "meta_repaired", st->meta_repaired);
	ctl_jadd_u64(o, "unreadable", st->unreadable);
	ctl_jadd_u64(o, "chunks_unrepairable", st->chunks_unrepairable);
	ctl_jadd_u64(o, "bytes_checked", st->bytes_checked);
	ctl_jadd_u64(o, "meta_chunks_checked", st->meta_chunks_checked);
	if (st->start_s)
		ctl_jadd_u64(o, "start_s", st->start_s);
	else
		json_object_object_add(o, "start_s", NULL);
	json_object_object_add(o, "mb_per_s", ctl_jdbl(st->mb_per_s, "%.1f"));
	json_object_object_add(o, "eta_s", ctl_jdbl(st->eta_s, "%.1f"));
	ctl_jadd_str(o, "error", st->error ? strerror(st->error < 0 ? -st->error : st->error) : NULL);
	for (unsigned i = 0; i < st->nreport && i < FFS_SCRUB_REPORT_MAX; i++) {
		json_object *f = json_object_new_object();

		ctl_jadd_u64(f, "ino", st->report[i].ino);
		ctl_jadd_str(f, "path", st->report[i].path[0] ? st->report[i].path : NULL);
		ctl_jadd_u64(f, "stripe", st->report[i].fstripe);
		ctl_jadd_bool(f, "repaired", st->report[i].repaired);
		json_object_array_add(files, f);
	}
	json_object_object_add(o, "files", files);
	json_object_object_add(o, "history", scrub_history_json(fs));
	free(st);
	return o;
}

/* FUSE requests in flight and the oldest of them (fs/base/watch.c). */
static json_object *requests_json(struct ffs *fs)
{
	json_object *o = json_object_new_object();
	struct ffs_req_info ri;

	ffs_req_info(fs, &ri);
	ctl_jadd_u64(o, "in_flight", ri.in_flight);
	ctl_jadd_u64(o, "oldest_age_ms", ri.oldest_age_ns / 1000000);
	ctl_jadd_str(o, "oldest_op", ri.in_flight ? ri.oldest_op : NULL);
	ctl_jadd_u64(o, "oldest_ino", ri.oldest_ino);
	ctl_jadd_str(o, "oldest_wait", ri.in_flight ? ri.oldest_wait : NULL);
	ctl_jadd_u64(o, "stuck_ms", ri.stuck_ns / 1000000);
	ctl_jadd_u64(o, "stuck_seen", ri.stuck);
	ctl_jadd_u64(o, "untracked", ri.untracked);
	return o;
}

static json_object *stats_json(struct ffs_ctl *c)
{
	struct ff_raid_stats *rs = ff_raid_stats(c->r);
	json_object *o = json_object_new_object(), *r = json_object_new_object();

	ctl_jadd_u64(r, "fg_bytes", atomic_load(&rs->fg_bytes));
	ctl_jadd_u64(r, "full_stripe_writes", atomic_load(&rs->full_stripe_writes));
	ctl_jadd_u64(r, "rows_writes", atomic_load(&rs->rows_writes));
	ctl_jadd_u64(r, "rmw_segments", atomic_load(&rs->rmw_segments));
	ctl_jadd_u64(r, "rcw_segments", atomic_load(&rs->rcw_segments));
	ctl_jadd_u64(r, "degraded_segments", atomic_load(&rs->degraded_segments));
	ctl_jadd_u64(r, "member_reads", atomic_load(&rs->member_reads));
	ctl_jadd_u64(r, "member_writes", atomic_load(&rs->member_writes));
	ctl_jadd_u64(r, "read_bytes", atomic_load(&rs->read_bytes));
	ctl_jadd_u64(r, "write_bytes", atomic_load(&rs->write_bytes));
	ctl_jadd_u64(r, "meta_write_bytes", atomic_load(&rs->meta_write_bytes));
	ctl_jadd_u64(r, "member_errors", atomic_load(&rs->member_errors));
	json_object_object_add(o, "raid", r);
	if (c->fs) {
		struct ffs_stats *fst = ffs_stats(c->fs);
		json_object *f = json_object_new_object();

		ctl_jadd_u64(f, "stripe_writes", atomic_load(&fst->stripe_writes));
		ctl_jadd_u64(f, "stripe_fills", atomic_load(&fst->stripe_fills));
		ctl_jadd_u64(f, "stripe_reads", atomic_load(&fst->stripe_reads));
		ctl_jadd_u64(f, "readahead", atomic_load(&fst->readahead));
		ctl_jadd_u64(f, "rcache_hits", atomic_load(&fst->rcache_hits));
		ctl_jadd_u64(f, "reads_again", atomic_load(&fst->reads_again));
		ctl_jadd_u64(f, "direct_reads", atomic_load(&fst->direct_reads));
		ctl_jadd_u64(f, "direct_reads_unwaited", atomic_load(&fst->direct_reads_unwaited));
		ctl_jadd_u64(f, "crc_errors", atomic_load(&fst->crc_errors));
		ctl_jadd_u64(f, "crc_repaired", atomic_load(&fst->crc_repaired));
		ctl_jadd_u64(f, "meta_repaired", atomic_load(&fst->meta_repaired));
		ctl_jadd_u64(f, "commits", atomic_load(&fst->commits));
		ctl_jadd_u64(f, "wbuf_wait_pool", atomic_load(&fst->wbuf_wait_pool));
		ctl_jadd_u64(f, "wbuf_wait_inode", atomic_load(&fst->wbuf_wait_inode));
		ctl_jadd_u64(f, "wbuf_wait_rewrite", atomic_load(&fst->wbuf_wait_rewrite));
		ctl_jadd_u64(f, "wbuf_evictions", atomic_load(&fst->wbuf_evictions));
		ctl_jadd_u64(f, "small_stores", atomic_load(&fst->small_stores));
		ctl_jadd_u64(f, "small_promotions", atomic_load(&fst->small_promotions));
		ctl_jadd_u64(f, "small_nospc", atomic_load(&fst->small_nospc));
		ctl_jadd_u64(f, "tail_writes", atomic_load(&fst->tail_writes));
		ctl_jadd_u64(f, "tail_packed", atomic_load(&fst->tail_packed));
		ctl_jadd_u64(f, "tail_stripes", atomic_load(&fst->tail_stripes));
		ctl_jadd_u64(f, "tail_busy", atomic_load(&fst->tail_busy));
		ctl_jadd_u64(f, "patch_writes", atomic_load(&fst->patch_writes));
		ctl_jadd_u64(f, "patch_blocks", atomic_load(&fst->patch_blocks));
		ctl_jadd_u64(f, "patch_merges", atomic_load(&fst->patch_merges));
		ctl_jadd_u64(f, "merges_background", atomic_load(&fst->merges_background));
		ctl_jadd_u64(f, "patch_reads", atomic_load(&fst->patch_reads));
		ctl_jadd_u64(f, "patch_cache_hits", atomic_load(&fst->patch_cache_hits));
		json_object_object_add(o, "fs", f);
	} else {
		json_object_object_add(o, "fs", NULL);
	}
	return o;
}

/* Members that cannot be read right now: failed, missing or not rebuilt. */
unsigned ctl_unreadable_roles(struct ff_raid *r, unsigned *rebuilding)
{
	const struct ff_geom *g = ff_raid_geom(r);
	unsigned n = 0;

	*rebuilding = 0;
	for (unsigned i = 0; i < g->nmembers; i++) {
		enum ff_member_state s = ff_raid_member_state(r, i);

		n += s != FF_MEMBER_ACTIVE;
		*rebuilding += s == FF_MEMBER_REBUILDING;
	}
	return n;
}

static void state_fields(json_object *o, struct ff_raid *r)
{
	const struct ff_geom *g = ff_raid_geom(r);
	unsigned rebuilding, down = ctl_unreadable_roles(r, &rebuilding);
	unsigned failed = ff_raid_failed_count(r);
	char why[200] = "";
	const char *state;

	if (failed > g->nparity) {
		state = "failed";
		snprintf(why, sizeof(why), "%u of %u members lost, RAID%u survives %u: I/O fails "
			 "rather than return wrong data", failed, g->nmembers, g->level, g->nparity);
	} else if (rebuilding) {
		state = "rebuilding";
		snprintf(why, sizeof(why), "%u member(s) being rebuilt, %u failed or missing",
			 rebuilding, failed);
	} else if (failed) {
		state = "degraded";
		snprintf(why, sizeof(why), "%u of %u members failed or missing", failed, g->nmembers);
	} else {
		state = "clean";
	}
	ctl_jadd_str(o, "state", state);
	ctl_jadd_str(o, "state_reason", why);
	ctl_jadd_u64(o, "failed_members", failed);
	json_object_object_add(o, "redundancy_left",
			       json_object_new_int((int)g->nparity - (int)down));
}

json_object *ctl_status_json(struct ffs_ctl *c)
{
	struct ff_raid *r = c->r;
	const struct ff_geom *g = ff_raid_geom(r);
	json_object *o = ctl_reply_ok(NULL), *mem = json_object_new_array();
	json_object *spares = json_object_new_array(), *rates = json_object_new_object();
	char uuid[37];

	json_object_object_add(o, "schema", json_object_new_int(FFS_CTL_SCHEMA));
	ctl_jadd_str(o, "source", c->source);
	ctl_jadd_str(o, "mountpoint", c->mountpoint);
	ctl_jadd_str(o, "label", ff_raid_label(r));
	ff_uuid_format(ff_raid_uuid(r), uuid);
	ctl_jadd_str(o, "uuid", uuid);
	ctl_jadd_u64(o, "level", g->level);
	ctl_jadd_u64(o, "nmembers", g->nmembers);
	ctl_jadd_u64(o, "ndata", g->ndata);
	ctl_jadd_u64(o, "nparity", g->nparity);
	ctl_jadd_u64(o, "chunk_bytes", g->chunk_bytes);
	state_fields(o, r);
	ctl_jadd_u64(o, "events", ff_raid_events(r));
	json_object_object_add(o, "geometry", geometry_json(g));
	for (unsigned i = 0; i < g->nmembers; i++) {
		json_object *m = json_object_new_object();

		member_json(c, m, i);
		json_object_array_add(mem, m);
	}
	json_object_object_add(o, "members", mem);
	for (unsigned i = 0; i < ff_raid_spare_count(r); i++) {
		json_object *s = json_object_new_object();

		member_fields(s, ff_raid_spare(r, i));
		json_object_array_add(spares, s);
	}
	json_object_object_add(o, "spares", spares);
	json_object_object_add(o, "rebuild", ctl_rebuild_json(r));
	json_object_object_add(o, "replacing_role", ff_raid_replacing(r) >= 0
			       ? json_object_new_int(ff_raid_replacing(r)) : NULL);
	json_object_object_add(o, "scrub", c->fs ? ctl_scrub_json(c->fs) : NULL);
	json_object_object_add(o, "grow", c->fs ? ctl_grow_json(c->fs) : NULL);
	ctl_jadd_u64(rates, "rebuild_min_bps", c->rebuild_min_bps);
	ctl_jadd_u64(rates, "rebuild_max_bps", c->rebuild_max_bps);
	ctl_jadd_u64(rates, "scrub_min_bps", c->scrub_min_bps);
	ctl_jadd_u64(rates, "scrub_max_bps", c->scrub_max_bps);
	json_object_object_add(o, "rates", rates);
	if (c->fs) {
		struct ffs_info info;
		json_object *f = json_object_new_object();

		ffs_info(c->fs, &info);
		ctl_jadd_bool(o, "read_only", info.ro);
		ctl_jadd_u64(f, "stripe_bytes", info.stripe_bytes);
		ctl_jadd_u64(f, "nstripes", info.nstripes);
		ctl_jadd_u64(f, "free_stripes", info.free_stripes);
		ctl_jadd_u64(f, "reserve_stripes", info.reserve_stripes);
		ctl_jadd_u64(f, "ninodes", info.ninodes);
		ctl_jadd_u64(f, "free_inodes", info.free_inodes);
		ctl_jadd_u64(f, "commits", info.commits);
		ctl_jadd_bool(f, "read_only", info.ro);
		ctl_jadd_u64(f, "version", info.version);
		ctl_jadd_u64(f, "small_max", info.small_max);
		ctl_jadd_u64(f, "pool_start", info.pool_start);
		ctl_jadd_u64(f, "pool_blocks", info.pool_blocks);
		ctl_jadd_u64(f, "pool_free_blocks", info.free_pool_blocks);
		ctl_jadd_u64(f, "merges_pending", info.merges_pending);
		ctl_jadd_u64(f, "patch_cache_blocks", info.patch_cache_blocks);
		ctl_jadd_u64(f, "patch_cache_capacity", info.patch_cache_capacity);
		json_object_object_add(o, "fs", f);
		json_object_object_add(o, "requests", requests_json(c->fs));
	} else {
		ctl_jadd_bool(o, "read_only", true); /* offline, array only: assembled read-only */
		json_object_object_add(o, "fs", NULL);
		json_object_object_add(o, "requests", NULL);
	}
	json_object_object_add(o, "stats", stats_json(c));
	json_object_object_add(o, "fuse", c->fuse_json ? c->fuse_json() : NULL);
	return o;
}
