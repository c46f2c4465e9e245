/* SPDX-License-Identifier: MIT */
/*
 * The control requests that change something: fail, remove, add, re-add,
 * replace, rebuild, scrub, set (label, rates), fault and sync; the member a
 * request names; and the dispatch of a split request line to them (status
 * is answered by ctl_status.c).  Requests map one to one onto the raid/ and
 * fs/ APIs.
 */
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/daemon/ctl_i.h"
#include "io/fault.h"
#include "raid/label.h"

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
 * re-add PATH: a member back from a short absence takes its role again and
 * only the regions written without it are rebuilt (raid/degraded.c); when
 * the array cannot prove what it missed, the answer says to use add --force
 * or replace.
 */
static int cmd_readd(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	struct ff_raid_rebuild_status st;
	struct ff_err err = { "" };
	char msg[PATH_MAX + 300];
	int rc;

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: re-add PATH");
	if ((rc = need_rw(c, out)) < 0)
		return rc;
	if (w[1][0] != '/')
		return ctl_reply_error(out, -EINVAL, "%s: give an absolute path", w[1]);
	rc = ff_raid_readd(c->r, w[1], &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "%s", err.msg[0] ? err.msg : strerror(-rc));
	ff_raid_rebuild_status(c->r, &st);
	snprintf(msg, sizeof(msg), "%s re-added to role %d; resyncing %llu region(s) of %llu MiB "
		 "and %llu metadata row group(s) written without it", w[1], find_role(c->r, w[1]),
		 (unsigned long long)st.readd_regions,
		 (unsigned long long)(st.readd_region_bytes >> 20),
		 (unsigned long long)st.readd_meta_groups);
	*out = ctl_reply_ok(msg);
	json_object_object_add(*out, "rebuild", ctl_rebuild_json(c->r));
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

/* grow status: where a grow's restripe stands (framefs-admin grow
 * MOUNTPOINT; --wait asks again until it ends). */
static int cmd_grow(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	if (!c->fs)
		return ctl_reply_error(out, -ENOTSUP, "grow needs the filesystem");
	if (nw != 2 || strcmp(w[1], "status"))
		return ctl_reply_error(out, -EINVAL, "usage: grow status (members are added to an "
				       "unmounted volume: framefs-admin grow --no-restripe MEMBERS NEW...)");
	*out = ctl_reply_ok(NULL);
	json_object_object_add(*out, "grow", ctl_grow_json(c->fs));
	return 0;
}

void ctl_apply_rates(struct ffs_ctl *c)
{
	ff_raid_set_rebuild_rate(c->r, c->rebuild_min_bps, c->rebuild_max_bps);
	if (c->fs) {
		ffs_scrub_set_rate(c->fs, c->scrub_min_bps, c->scrub_max_bps);
		ffs_grow_set_rate(c->fs, c->rebuild_min_bps, c->rebuild_max_bps); /* as a rebuild */
	}
}

#define SET_KEYS "label, rebuild_min, rebuild_max, scrub_min, scrub_max"

/* label=NAME (raid/label.h says what it may be): the filesystem's when it
 * is mounted, else the array's alone. */
static int set_label(struct ffs_ctl *c, const char *label, json_object **out)
{
	struct ff_err err = { "" };
	int rc = need_rw(c, out);

	if (rc < 0)
		return rc;
	rc = c->fs ? ffs_set_label(c->fs, label, &err) : ff_raid_set_label(c->r, label, &err);
	if (rc < 0)
		return ctl_reply_error(out, rc, "label=%s: %s", label, err.msg[0] ? err.msg
										   : strerror(-rc));
	return 0;
}

static int cmd_set(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	uint64_t v[4] = { c->rebuild_min_bps, c->rebuild_max_bps, c->scrub_min_bps, c->scrub_max_bps };
	static const char *keys[4] = { "rebuild_min", "rebuild_max", "scrub_min", "scrub_max" };
	const char *label = NULL;
	bool rates = false;
	char msg[128];
	int rc;

	if (nw < 2)
		return ctl_reply_error(out, -EINVAL, "usage: set KEY=VALUE... (keys: " SET_KEYS ")");
	for (unsigned i = 1; i < nw; i++) {
		char *eq = strchr(w[i], '=');
		unsigned k;

		if (strncmp(w[i], "label=", 6) == 0) {
			label = w[i] + 6;
			continue;
		}
		for (k = 0; k < 4; k++)
			if (eq && (size_t)(eq - w[i]) == strlen(keys[k]) &&
			    strncmp(w[i], keys[k], strlen(keys[k])) == 0)
				break;
		if (k == 4)
			return ctl_reply_error(out, -EINVAL, "unknown setting '%s' (keys: " SET_KEYS ")",
					   w[i]);
		if (ff_parse_size(eq + 1, &v[k]) < 0)
			return ctl_reply_error(out, -EINVAL, "bad rate '%s' (bytes per second, K/M/G)", eq + 1);
		rates = true;
	}
	if ((v[0] && v[1] && v[0] > v[1]) || (v[2] && v[3] && v[2] > v[3]))
		return ctl_reply_error(out, -EINVAL, "a minimum rate is above its maximum");
	/* everything is checked before anything changes: a bad rate leaves the label */
	if (label && (rc = set_label(c, label, out)) < 0)
		return rc;
	if (rates) {
		c->rebuild_min_bps = v[0];
		c->rebuild_max_bps = v[1];
		c->scrub_min_bps = v[2];
		c->scrub_max_bps = v[3];
		ctl_apply_rates(c);
	}
	snprintf(msg, sizeof(msg), "%s%s%s", label ? "label set" : "", label && rates ? ", " : "",
		 rates ? "rates set" : "");
	*out = ctl_reply_ok(msg);
	if (label)
		ctl_jadd_str(*out, "label", ff_raid_label(c->r));
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

/* Everything written out and committed, and the background merges queued by
 * then finished (ffs_settle): the free space moves no more until the next
 * write or deletion.  Runs on the control thread, which answers no other
 * request meanwhile; ffs_settle says why it ends while files are written. */
static int cmd_sync(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	struct ffs_info info;
	uint64_t merges;
	char msg[160];
	int rc;

	(void)w;
	if (nw != 1)
		return ctl_reply_error(out, -EINVAL, "usage: sync");
	if (!c->fs)
		return ctl_reply_error(out, -EINVAL, "sync: the volume is not mounted: nothing is "
				       "buffered or merging");
	ffs_info(c->fs, &info);
	if (info.ro) {
		*out = ctl_reply_ok("mounted read-only: nothing is buffered or merging");
		ctl_jadd_u64(*out, "merges", 0);
		return 0;
	}
	merges = atomic_load(&ffs_stats(c->fs)->merges_background);
	rc = ffs_settle(c->fs);
	if (rc < 0)
		return ctl_reply_error(out, rc, "sync: a write failed: %s (the file's own fsync or "
				       "close reports it too; status shows the members' state)",
				       strerror(-rc));
	merges = atomic_load(&ffs_stats(c->fs)->merges_background) - merges;
	snprintf(msg, sizeof(msg), "everything written out and committed; %llu background "
		 "merge(s) finished", (unsigned long long)merges);
	*out = ctl_reply_ok(msg);
	ctl_jadd_u64(*out, "merges", merges);
	return 0;
}

static json_object *ms(uint64_t ns)
{
	return json_object_new_double((double)(ns / 1000) / 1000.0); /* to the microsecond */
}

/* Where the requests spent their time (fs/base/watch.c): a frame's open,
 * writes and close, and what each waited for. */
static int cmd_times(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	static struct ffs_req_time t[FFS_REQ_TIME_ROWS]; /* the control thread is the only caller */
	json_object *o, *rows;
	uint64_t dropped;
	unsigned n;

	if (nw > 2 || (nw == 2 && strcmp(w[1], "reset") != 0))
		return ctl_reply_error(out, -EINVAL, "usage: times [reset]");
	if (!c->fs)
		return ctl_reply_error(out, -EINVAL, "times: the volume is not mounted: no request "
				       "was served");
	n = ffs_req_times(c->fs, t, FFS_REQ_TIME_ROWS, &dropped);
	if (nw == 2)
		ffs_req_times_reset(c->fs);
	*out = ctl_reply_ok(nw == 2 ? "request times reset" : "request times");
	o = json_object_new_object();
	rows = json_object_new_array();
	ctl_jadd_u64(o, "dropped", dropped);
	for (unsigned i = 0; i < n; i++) {
		json_object *r = json_object_new_object();

		ctl_jadd_str(r, "op", t[i].op);
		ctl_jadd_str(r, "wait", t[i].wait);
		ctl_jadd_u64(r, "count", t[i].count);
		json_object_object_add(r, "avg_ms", ms(t[i].sum_ns / t[i].count));
		json_object_object_add(r, "p50_ms", ms(t[i].p50_ns));
		json_object_object_add(r, "p90_ms", ms(t[i].p90_ns));
		json_object_object_add(r, "p99_ms", ms(t[i].p99_ns));
		json_object_object_add(r, "max_ms", ms(t[i].max_ns));
		json_object_array_add(rows, r);
	}
	json_object_object_add(o, "rows", rows);
	json_object_object_add(*out, "times", o);
	return 0;
}

int ctl_dispatch(struct ffs_ctl *c, char **w, unsigned nw, json_object **out)
{
	static const struct {
		const char *name;
		int (*fn)(struct ffs_ctl *c, char **w, unsigned nw, json_object **out);
	} cmds[] = {
		{ "fail", cmd_fail },       { "remove", cmd_remove }, { "add", cmd_add },
		{ "replace", cmd_replace }, { "rebuild", cmd_rebuild }, { "scrub", cmd_scrub },
		{ "set", cmd_set },         { "fault", cmd_fault },     { "re-add", cmd_readd },
		{ "sync", cmd_sync },       { "times", cmd_times },     { "grow", cmd_grow },
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
