/* SPDX-License-Identifier: MIT */
/*
 * The control socket and the admin requests behind it (protocol and JSON
 * schema in ctl.h).  Requests map one to one onto the raid/ and fs/ APIs;
 * the same code answers the daemon's socket and framefs-admin's offline
 * mode, so both print the same thing.
 *
 * One request per connection, served by one thread in turn: every request
 * is short (a superblock write at most), and a client that stalls is cut
 * off by socket timeouts, so one thread is enough and requests never race
 * each other on the array's member list.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs/daemon/ctl.h"
#include "io/fault.h"
#include "raid/sb.h"

#define CTL_WORDS_MAX 16
#define CTL_IO_TIMEOUT_S 5

struct ffs_ctl {
	struct ffs *fs;           /* NULL: an array without its filesystem */
	struct ff_raid *r;
	char source[16];          /* "daemon" or "offline" */
	char *mountpoint;         /* daemon only */
	uint64_t rebuild_min_bps, rebuild_max_bps, scrub_min_bps, scrub_max_bps;
	/* the socket (daemon only) */
	int lfd;
	int stop_pipe[2];
	pthread_t thread;
	bool thread_started;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t sock_dev;
	ino_t sock_ino;
};

/* ---- naming and escaping --------------------------------------------------- */

static bool plain_byte(unsigned char c)
{
	return isalnum(c) || c == '.' || c == '-';
}

int ffs_ctl_sock_path(const char *mnt_real, char *buf, size_t len)
{
	char name[PATH_MAX * 3 + 8];
	size_t n = 0;
	const char *p = mnt_real;
	int w;

	while (*p == '/')
		p++;
	if (!*p)
		name[n++] = '_';
	for (; *p && n + 4 < sizeof(name); p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '/')
			name[n++] = '_';
		else if (plain_byte(c))
			name[n++] = (char)c;
		else
			n += (size_t)snprintf(name + n, sizeof(name) - n, "%%%02x", c);
	}
	name[n] = '\0';
	w = snprintf(buf, len, "%s/%s.sock", FFS_CTL_DIR, name);
	if (w < 0 || (size_t)w >= len || (size_t)w >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */

		for (p = mnt_real; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		w = snprintf(buf, len, "%s/h-%016llx.sock", FFS_CTL_DIR, (unsigned long long)h);
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
	}
	return 0;
}

int ffs_ctl_escape(const char *word, char *buf, size_t len)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)word; *p; p++) {
		if (n + 4 >= len)
			return -ENAMETOOLONG;
		if (*p <= 0x20 || *p == '%' || *p >= 0x7f)
			n += (size_t)snprintf(buf + n, len - n, "%%%02x", *p);
		else
			buf[n++] = (char)*p;
	}
	if (n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Split a request line into unescaped words, in place. */
static int split_words(char *line, char **w, unsigned *nw)
{
	char *save = NULL;

	*nw = 0;
	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *o = t;

		if (*nw == CTL_WORDS_MAX)
			return -E2BIG;
		for (char *i = t; *i; i++) {
			if (*i == '%') {
				int hi = hexval(i[1]), lo = hi < 0 ? -1 : hexval(i[2]);

				if (hi < 0 || lo < 0)
					return -EINVAL;
				*o++ = (char)(hi * 16 + lo);
				i += 2;
			} else {
				*o++ = *i;
			}
		}
		*o = '\0';
		w[(*nw)++] = t;
	}
	return 0;
}

/* ---- JSON helpers ------------------------------------------------------------ */

static json_object *ctl_jdbl(double v, const char *fmt)
{
	char s[64];

	if (v != v || v > 1e18 || v < -1e18)
		v = 0;
	snprintf(s, sizeof(s), fmt, v);
	return json_object_new_double_s(v, s);
}

static void ctl_jadd_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void ctl_jadd_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

static void ctl_jadd_bool(json_object *o, const char *k, bool v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

static int ctl_reply_error(json_object **out, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int ctl_reply_error(json_object **out, int err, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_jadd_bool(o, "ok", false);
	ctl_jadd_str(o, "error", msg);
	json_object_object_add(o, "errno", json_object_new_int(err < 0 ? -err : err));
	*out = o;
	return err < 0 ? err : -err;
}

static json_object *ctl_reply_ok(const char *message)
{
	json_object *o = json_object_new_object();

	ctl_jadd_bool(o, "ok", true);
	if (message)
		ctl_jadd_str(o, "message", message);
	return o;
}

/* ---- status ------------------------------------------------------------------ */

static const char *ctl_member_state_name(enum ff_member_state s)
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
		snprintf(hint, sizeof(hint), "re-add it with framefs-admin add --force %s %s (it is "
			 "rebuilt from parity), or put a new member in its place with framefs-admin "
			 "add %s NEW", vol, mi->left_path, vol);
		ctl_jadd_u64(o, "member_events", mi->left_events);
	} else {
		ctl_jadd_str(o, "state", state);
		member_fields(o, ff_raid_member(c->r, role));
		if (mi->state == FF_MEMBER_FAILED)
			snprintf(reason, sizeof(reason), "%s", mi->reason[0] ? mi->reason : "failed");
		if (mi->state == FF_MEMBER_FAILED || mi->state == FF_MEMBER_MISSING)
			snprintf(hint, sizeof(hint), "framefs-admin add %s NEW puts a new member in "
				 "role %u (rebuilt from parity)", vol, role);
		json_object_object_add(o, "member_events", NULL);
	}
	ctl_jadd_str(o, "reason", reason[0] ? reason : NULL);
	ctl_jadd_str(o, "note", mi->note[0] ? mi->note : NULL);
	ctl_jadd_str(o, "hint", hint[0] ? hint : NULL);
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

static json_object *ctl_rebuild_json(struct ff_raid *r)
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
	return o;
}

static json_object *ctl_scrub_json(struct ffs *fs)
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
	free(st);
	return o;
}

/* FUSE requests in flight and the oldest of them (fs/watch.c). */
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
	ctl_jadd_u64(r, "rmw_segments", atomic_load(&rs->rmw_segments));
	ctl_jadd_u64(r, "rcw_segments", atomic_load(&rs->rcw_segments));
	ctl_jadd_u64(r, "degraded_segments", atomic_load(&rs->degraded_segments));
	ctl_jadd_u64(r, "member_reads", atomic_load(&rs->member_reads));
	ctl_jadd_u64(r, "member_writes", atomic_load(&rs->member_writes));
	ctl_jadd_u64(r, "read_bytes", atomic_load(&rs->read_bytes));
	ctl_jadd_u64(r, "write_bytes", atomic_load(&rs->write_bytes));
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
		ctl_jadd_u64(f, "crc_errors", atomic_load(&fst->crc_errors));
		ctl_jadd_u64(f, "crc_repaired", atomic_load(&fst->crc_repaired));
		ctl_jadd_u64(f, "meta_repaired", atomic_load(&fst->meta_repaired));
		ctl_jadd_u64(f, "commits", atomic_load(&fst->commits));
		ctl_jadd_u64(f, "wbuf_wait_pool", atomic_load(&fst->wbuf_wait_pool));
		ctl_jadd_u64(f, "wbuf_wait_inode", atomic_load(&fst->wbuf_wait_inode));
		ctl_jadd_u64(f, "wbuf_wait_rewrite", atomic_load(&fst->wbuf_wait_rewrite));
		ctl_jadd_u64(f, "wbuf_evictions", atomic_load(&fst->wbuf_evictions));
		json_object_object_add(o, "fs", f);
	} else {
		json_object_object_add(o, "fs", NULL);
	}
	return o;
}

/* Members that cannot be read right now: failed, missing or not rebuilt. */
static unsigned ctl_unreadable_roles(struct ff_raid *r, unsigned *rebuilding)
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

static json_object *ctl_status_json(struct ffs_ctl *c)
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
		ctl_jadd_u64(f, "ninodes", info.ninodes);
		ctl_jadd_u64(f, "free_inodes", info.free_inodes);
		ctl_jadd_u64(f, "commits", info.commits);
		ctl_jadd_bool(f, "read_only", info.ro);
		json_object_object_add(o, "fs", f);
		json_object_object_add(o, "requests", requests_json(c->fs));
	} else {
		ctl_jadd_bool(o, "read_only", true); /* offline, array only: assembled read-only */
		json_object_object_add(o, "fs", NULL);
		json_object_object_add(o, "requests", NULL);
	}
	json_object_object_add(o, "stats", stats_json(c));
	return o;
}

/* ---- member lookup ------------------------------------------------------------- */

static bool same_object(const struct ff_member *m, const struct stat *st)
{
	if (S_ISBLK(st->st_mode))
		return m->is_bdev && m->st_rdev == st->st_rdev;
	return !m->is_bdev && m->st_dev == st->st_dev && m->st_ino == st->st_ino;
}

static bool names(const struct ff_member *m, const char *word, const struct stat *st, bool have_st)
{
	const char *base;

	if (!m || m->fd < 0)
		return false;
	base = strrchr(m->path, '/');
	return strcmp(m->path, word) == 0 || (base && strcmp(base + 1, word) == 0) ||
	       (have_st && same_object(m, st));
}

/* Role named by word (number, path, basename, same file), or -ENOENT. */
static int find_role(struct ff_raid *r, const char *word)
{
	const struct ff_geom *g = ff_raid_geom(r);
	struct stat st;
	bool have_st = stat(word, &st) == 0;
	char *end;
	unsigned long v = strtoul(word, &end, 10);

	if (*word && !*end)
		return v < g->nmembers ? (int)v : -ENOENT;
	for (unsigned i = 0; i < g->nmembers; i++) {
		const struct ff_member *m = ff_raid_member(r, i);

		if (m && names(m, word, &st, have_st))
			return (int)i;
	}
	return -ENOENT;
}

static int find_spare(struct ff_raid *r, const char *word)
{
	struct stat st;
	bool have_st = stat(word, &st) == 0;

	for (unsigned i = 0; i < ff_raid_spare_count(r); i++)
		if (names(ff_raid_spare(r, i), word, &st, have_st))
			return (int)i;
	return -ENOENT;
}

/* ---- requests --------------------------------------------------------------------- */

static bool has_word(char **w, unsigned nw, unsigned from, const char *word)
{
	for (unsigned i = from; i < nw; i++)
		if (strcmp(w[i], word) == 0)
			return true;
	return false;
}

static int need_rw(struct ffs_ctl *c, json_object **out)
{
	if (c->fs) {
		struct ffs_info info;

		ffs_info(c->fs, &info);
		if (info.ro)
			return ctl_reply_error(out, -EROFS, "the volume is mounted read-only");
	}
	return 0;
}

static int cmd_fail(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	const struct ff_geom *g = ff_raid_geom(c->r);
	unsigned rebuilding, down = ctl_unreadable_roles(c->r, &rebuilding);
	char msg[PATH_MAX + 100];
	int role, rc;

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: fail MEMBER [force]");
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	role = find_role(c->r, w[1]);
	if (role < 0)
		return ctl_reply_error(out, -ENOENT, "%s is not a member of this array", w[1]);
	if (ff_raid_member_state(c->r, (unsigned)role) != FF_MEMBER_ACTIVE &&
	    ff_raid_member_state(c->r, (unsigned)role) != FF_MEMBER_REBUILDING)
		return ctl_reply_error(out, -EALREADY, "role %d is already %s", role,
				   ctl_member_state_name(ff_raid_member_state(c->r, (unsigned)role)));
	if (ff_raid_member_state(c->r, (unsigned)role) == FF_MEMBER_ACTIVE && down >= g->nparity &&
	    !has_word(w, nw, 2, "force"))
		return ctl_reply_error(out, -EBUSY, "failing role %d would leave RAID%u with %u of %u "
				   "members readable and lose data; refused (force to do it anyway)",
				   role, g->level, g->nmembers - down - 1, g->nmembers);
	snprintf(msg, sizeof(msg), "%s", ff_raid_member(c->r, (unsigned)role)
		 ? ff_raid_member(c->r, (unsigned)role)->path : "(missing)");
	rc = ff_raid_fail_member(c->r, (unsigned)role, "failed by the administrator");
	if (rc < 0)
		return ctl_reply_error(out, rc, "role %d failed, but the superblocks could not all be "
				   "written: %s", role, strerror(-rc));
	*out = ctl_reply_ok(NULL);
	{
		char m2[PATH_MAX + 160];

		snprintf(m2, sizeof(m2), "member %s (role %d) marked failed", msg, role);
		ctl_jadd_str(*out, "message", m2);
	}
	return 0;
}

static int cmd_remove(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	struct ff_err err = { "" };
	char path[PATH_MAX];
	int i, rc;

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: remove MEMBER");
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	i = find_spare(c->r, w[1]);
	if (i >= 0) {
		snprintf(path, sizeof(path), "%s", ff_raid_spare(c->r, (unsigned)i)->path);
	} else {
		i = find_role(c->r, w[1]);
		if (i < 0 || !ff_raid_member(c->r, (unsigned)i))
			return ctl_reply_error(out, -ENOENT, "%s is not a member or spare of this array",
					   w[1]);
		snprintf(path, sizeof(path), "%s", ff_raid_member(c->r, (unsigned)i)->path);
	}
	rc = ff_raid_remove(c->r, path, &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "%s", err.msg[0] ? err.msg : strerror(-rc));
	{
		char msg[PATH_MAX + 16];

		snprintf(msg, sizeof(msg), "%s removed", path);
		*out = ctl_reply_ok(msg);
	}
	return 0;
}

/* Where did path end up: "role N" or "spare". */
static void placed(struct ff_raid *r, const char *path, char *buf, size_t len)
{
	int role = find_role(r, path);

	if (role >= 0)
		snprintf(buf, len, "%s takes over role %d and is being rebuilt", path, role);
	else
		snprintf(buf, len, "%s added as a hot spare", path);
}

static int cmd_add(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	struct ff_err err = { "" };
	char msg[PATH_MAX + 100];
	int rc;

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: add PATH [force]");
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	if (w[1][0] != '/')
		return ctl_reply_error(out, -EINVAL, "%s: give an absolute path", w[1]);
	rc = ff_raid_add(c->r, w[1], has_word(w, nw, 2, "force"), &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "%s", err.msg[0] ? err.msg : strerror(-rc));
	placed(c->r, w[1], msg, sizeof(msg));
	*out = ctl_reply_ok(msg);
	return 0;
}

/*
 * replace OLD NEW: NEW receives every write to OLD's role and a copy of
 * OLD's contents while OLD keeps serving; NEW takes the role when the copy
 * is done (`rebuild wait` waits for it).  If OLD fails meanwhile, NEW is
 * rebuilt from parity instead.
 */
static int cmd_replace(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	struct ff_err err = { "" };
	unsigned rebuilding, down = ctl_unreadable_roles(c->r, &rebuilding);
	char msg[2 * PATH_MAX + 100];
	int role, rc;

	if (nw < 3)
		return ctl_reply_error(out, -EINVAL, "usage: replace OLD NEW [force]");
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	if (w[2][0] != '/')
		return ctl_reply_error(out, -EINVAL, "%s: give an absolute path", w[2]);
	role = find_role(c->r, w[1]);
	if (role < 0 || !ff_raid_member(c->r, (unsigned)role))
		return ctl_reply_error(out, -ENOENT, "%s is not a member of this array", w[1]);
	if (ff_raid_member_state(c->r, (unsigned)role) != FF_MEMBER_ACTIVE)
		return ctl_reply_error(out, -EBUSY, "role %d is %s: use add to replace a failed member",
				   role, ctl_member_state_name(ff_raid_member_state(c->r, (unsigned)role)));
	if (down)
		return ctl_reply_error(out, -EBUSY, "the array is not clean (%u member(s) failed, missing "
				   "or rebuilding): finish that first, or fail %s and add %s", down,
				   w[1], w[2]);
	rc = ff_raid_replace(c->r, (unsigned)role, w[2], has_word(w, nw, 3, "force"), &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "%s", err.msg[0] ? err.msg : strerror(-rc));
	snprintf(msg, sizeof(msg), "copying %s onto %s (role %d); the old member serves until "
		 "the copy is done", w[1], w[2], role);
	*out = ctl_reply_ok(msg);
	return 0;
}

static int cmd_rebuild(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	int rc;

	(void)w;
	(void)nw;
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	rc = ff_raid_rebuild_start(c->r);
	if (rc < 0 && rc != -EBUSY)
		return ctl_reply_error(out, rc, "cannot start the rebuild: %s", strerror(-rc));
	*out = ctl_reply_ok(rc == -EBUSY ? "the rebuild is running" : "rebuild started (or nothing to rebuild)");
	json_object_object_add(*out, "rebuild", ctl_rebuild_json(c->r));
	return 0;
}

static int cmd_scrub(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	int rc = 0;

	if (!c->fs)
		return ctl_reply_error(out, -ENOTSUP, "scrub needs the filesystem");
	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: scrub start [norepair] | stop | status");
	if (strcmp(w[1], "start") == 0) {
		bool repair = !has_word(w, nw, 2, "norepair");

		if (repair && (rc = need_rw(c, out)) < 0)
			return rc;
		rc = ffs_scrub_start(c->fs, repair);
		if (rc == -EBUSY)
			return ctl_reply_error(out, rc, "a scrub is running already");
	} else if (strcmp(w[1], "stop") == 0) {
		rc = ffs_scrub_stop(c->fs);
	} else if (strcmp(w[1], "status") != 0) {
		return ctl_reply_error(out, -EINVAL, "usage: scrub start [norepair] | stop | status");
	}
	if (rc < 0)
		return ctl_reply_error(out, rc, "scrub %s: %s", w[1], strerror(-rc));
	*out = ctl_reply_ok(NULL);
	json_object_object_add(*out, "scrub", ctl_scrub_json(c->fs));
	return 0;
}

static void ctl_apply_rates(struct ffs_ctl *c)
{
	ff_raid_set_rebuild_rate(c->r, c->rebuild_min_bps, c->rebuild_max_bps);
	if (c->fs)
		ffs_scrub_set_rate(c->fs, c->scrub_min_bps, c->scrub_max_bps);
}

static int cmd_set(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	uint64_t v[4] = { c->rebuild_min_bps, c->rebuild_max_bps, c->scrub_min_bps, c->scrub_max_bps };
	static const char *keys[4] = { "rebuild_min", "rebuild_max", "scrub_min", "scrub_max" };

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: set KEY=BYTES_PER_S... (keys: rebuild_min, "
				   "rebuild_max, scrub_min, scrub_max)");
	for (unsigned i = 1; i < nw; i++) {
		char *eq = strchr(w[i], '=');
		unsigned k;

		for (k = 0; k < 4; k++)
			if (eq && (size_t)(eq - w[i]) == strlen(keys[k]) &&
			    strncmp(w[i], keys[k], strlen(keys[k])) == 0)
				break;
		if (k == 4)
			return ctl_reply_error(out, -EINVAL, "unknown setting '%s' (keys: rebuild_min, "
					   "rebuild_max, scrub_min, scrub_max)", w[i]);
		if (ff_parse_size(eq + 1, &v[k]) < 0)
			return ctl_reply_error(out, -EINVAL, "bad rate '%s' (bytes per second, K/M/G)", eq + 1);
	}
	if ((v[0] && v[1] && v[0] > v[1]) || (v[2] && v[3] && v[2] > v[3]))
		return ctl_reply_error(out, -EINVAL, "a minimum rate is above its maximum");
	c->rebuild_min_bps = v[0];
	c->rebuild_max_bps = v[1];
	c->scrub_min_bps = v[2];
	c->scrub_max_bps = v[3];
	ctl_apply_rates(c);
	*out = ctl_reply_ok("rates set");
	return 0;
}

static int cmd_fault(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	const struct ff_geom *g = ff_raid_geom(c->r);
	struct ff_member *mem[FF_MEMBERS_MAX];
	struct ff_err err = { "" };
	unsigned n = 0;
	int rc;

	if (nw != 2)
		return ctl_reply_error(out, -EINVAL, "usage: fault RULES | fault clear");
	for (unsigned i = 0; i < g->nmembers; i++)
		if (ff_raid_member(c->r, i))
			mem[n++] = ff_raid_member(c->r, i);
	if (strcmp(w[1], "clear") == 0) {
		for (unsigned i = 0; i < n; i++)
			ff_fault_clear(mem[i]);
		*out = ctl_reply_ok("fault rules cleared");
		return 0;
	}
	rc = ff_fault_apply_text(mem, n, w[1], &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "%s", err.msg[0] ? err.msg : strerror(-rc));
	*out = ctl_reply_ok("fault rules armed");
	return 0;
}

static int ctl_dispatch(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	static const struct {
		const char *name;
		int (*fn)(struct ffs_ctl *c, char **w, unsigned nw, json_object **out);
	} cmds[] = {
		{ "fail", cmd_fail },       { "remove", cmd_remove }, { "add", cmd_add },
		{ "replace", cmd_replace }, { "rebuild", cmd_rebuild }, { "scrub", cmd_scrub },
		{ "set", cmd_set },         { "fault", cmd_fault },
	};

	if (nw == 0)
		return ctl_reply_error(out, -EINVAL, "empty request");
	if (strcmp(w[0], "status") == 0) {
		*out = ctl_status_json(c);
		return 0;
	}
	for (unsigned i = 0; i < FF_ARRAY_SIZE(cmds); i++)
		if (strcmp(w[0], cmds[i].name) == 0)
			return cmds[i].fn(c, w, nw, out);
	return ctl_reply_error(out, -EINVAL, "unknown request '%s'", w[0]);
}

int ffs_ctl_exec(struct ffs_ctl *c, const char *line, char **reply)
{
	char *buf = strdup(line), *w[CTL_WORDS_MAX];
	json_object *out = NULL;
	unsigned nw;
	int rc;

	*reply = NULL;
	if (!buf)
		return -ENOMEM;
	buf[strcspn(buf, "\r\n")] = '\0';
	rc = split_words(buf, w, &nw);
	if (rc < 0)
		rc = ctl_reply_error(&out, rc, "malformed request (bad %%XX escape or too many words)");
	else
		rc = ctl_dispatch(c, w, nw, &out);
	*reply = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
	free(buf);
	if (!*reply)
		return -ENOMEM;
	return rc;
}

/* ---- contexts ------------------------------------------------------------------------ */

struct ffs_ctl *ffs_ctl_new(struct ffs *fs, struct ff_raid *r, const char *source)
{
	struct ffs_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fs = fs;
	c->r = r ? r : ffs_raid(fs);
	snprintf(c->source, sizeof(c->source), "%s", source);
	c->rebuild_min_bps = FFS_CTL_REBUILD_MIN_BPS;
	c->rebuild_max_bps = FFS_CTL_REBUILD_MAX_BPS;
	c->scrub_min_bps = FFS_SCRUB_MIN_BPS_DEFAULT;
	c->scrub_max_bps = FFS_SCRUB_MAX_BPS_DEFAULT;
	c->lfd = -1;
	c->stop_pipe[0] = c->stop_pipe[1] = -1;
	ctl_apply_rates(c);
	return c;
}

void ffs_ctl_free(struct ffs_ctl *c)
{
	if (!c)
		return;
	free(c->mountpoint);
	free(c);
}

/* ---- the socket ------------------------------------------------------------------------ */

static bool peer_is_root(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0;
}

/* Read one line (up to '\n' or EOF); -errno on timeout or error. */
static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t k = read(fd, buf + n, len - 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
		if (memchr(buf + n - (size_t)k, '\n', (size_t)k))
			break;
	}
	buf[n] = '\0';
	if (!strchr(buf, '\n') && n + 1 >= len)
		return -E2BIG;
	return 0;
}

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t k = send(fd, s, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		len -= (size_t)k;
	}
}

static void serve_one(struct ffs_ctl *c, int fd)
{
	struct timeval tv = { .tv_sec = CTL_IO_TIMEOUT_S };
	char *line = malloc(FFS_CTL_LINE_MAX + 2), *reply = NULL;
	int rc;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!line)
		return;
	/* read the request even from a peer that is refused: closing a Unix
	 * socket with unread data resets it, and the answer would be lost */
	rc = read_line(fd, line, FFS_CTL_LINE_MAX + 2);
	if (!peer_is_root(fd)) {
		static const char deny[] = "{\"ok\":false,\"error\":\"permission denied: the framefs "
					   "control socket serves root only\",\"errno\":1}\n";

		write_all(fd, deny, sizeof(deny) - 1);
		free(line);
		return;
	}
	if (rc < 0) {
		json_object *o;

		ctl_reply_error(&o, rc, "cannot read the request: %s", strerror(-rc));
		reply = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		ffs_ctl_exec(c, line, &reply);
	}
	if (reply) {
		write_all(fd, reply, strlen(reply));
		write_all(fd, "\n", 1);
	}
	free(reply);
	free(line);
}

static void *ctl_main(void *arg)
{
	struct ffs_ctl *c = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = c->lfd, .events = POLLIN },
				       { .fd = c->stop_pipe[0], .events = POLLIN } };
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			ff_log(FF_LOG_ERR, "control socket: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(c, fd);
		close(fd);
	}
	return NULL;
}

/* /run/framefs: ours (uid), a directory, no access for anyone else. */
static int ctl_dir(void)
{
	struct stat st;

	if (mkdir(FFS_CTL_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(FFS_CTL_DIR, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & 077) && chmod(FFS_CTL_DIR, 0700) < 0)
		return -errno;
	return 0;
}

/* A socket file left at path: another live daemon's (stacked mount) or stale. */
static void clear_old_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		ff_log(FF_LOG_WARN, "control socket %s belongs to another running daemon (a mount "
		       "under this one?); this mount takes it over", path);
	if (fd >= 0)
		close(fd);
	unlink(path);
}

static int ctl_listen(struct ffs_ctl *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int rc = ctl_dir();

	if (rc < 0)
		return rc;
	if (lstat(c->sock_path, &st) == 0)
		clear_old_socket(c->sock_path);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock_path);
	/* the directory is 0700, so the moment before chmod exposes nothing */
	if (bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(c->sock_path, 0600) < 0 ||
	    listen(c->lfd, 16) < 0 || stat(c->sock_path, &st) < 0)
		return -errno;
	c->sock_dev = st.st_dev;
	c->sock_ino = st.st_ino;
	if (pipe2(c->stop_pipe, O_CLOEXEC) < 0)
		return -errno;
	rc = -pthread_create(&c->thread, NULL, ctl_main, c);
	c->thread_started = rc == 0;
	return rc;
}

static void ctl_close(struct ffs_ctl *c)
{
	struct stat st;

	if (c->thread_started) {
		if (write(c->stop_pipe[1], "x", 1) < 0)
			ff_log(FF_LOG_ERR, "control socket: cannot stop its thread");
		pthread_join(c->thread, NULL);
		c->thread_started = false;
	}
	if (c->lfd >= 0) {
		/* unlink only our own socket: a later mount may have replaced it */
		if (stat(c->sock_path, &st) == 0 && st.st_dev == c->sock_dev && st.st_ino == c->sock_ino)
			unlink(c->sock_path);
		close(c->lfd);
		c->lfd = -1;
	}
	for (unsigned i = 0; i < 2; i++)
		if (c->stop_pipe[i] >= 0)
			close(c->stop_pipe[i]);
	c->stop_pipe[0] = c->stop_pipe[1] = -1;
}

struct ffs_ctl *ffs_ctl_start(struct ffs *fs, const char *mnt_real)
{
	struct ffs_ctl *c;
	int rc;

	if (!fs || !mnt_real) {
		ff_log(FF_LOG_WARN, "no control socket: the mountpoint's real path is unknown");
		return NULL;
	}
	c = ffs_ctl_new(fs, NULL, "daemon");
	if (!c)
		return NULL;
	c->mountpoint = strdup(mnt_real);
	rc = c->mountpoint ? ffs_ctl_sock_path(mnt_real, c->sock_path, sizeof(c->sock_path))
			   : -ENOMEM;
	if (rc == 0)
		rc = ctl_listen(c);
	if (rc < 0) {
		ff_log(FF_LOG_WARN, "no control socket for %s (%s): framefs-admin can reach this "
		       "volume only when it is unmounted", mnt_real, strerror(-rc));
		ctl_close(c);
		ffs_ctl_free(c);
		return NULL;
	}
	ff_log(FF_LOG_DEBUG, "control socket %s", c->sock_path); /* mount(8) stays quiet */
	return c;
}

void ffs_ctl_stop(struct ffs_ctl *c)
{
	if (!c)
		return;
	ctl_close(c);
	ffs_ctl_free(c);
}
