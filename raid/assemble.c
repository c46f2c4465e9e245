/* SPDX-License-Identifier: MIT */
/*
 * Array creation (ff_raid_create), assembly (ff_raid_assemble), closing
 * (ff_raid_close) and the accessors of an assembled array.
 *
 * Every check runs before the first write: a wrong member, a duplicate, a
 * member of another array or a member too small stops creation with a
 * one-line message naming it, and nothing on any member has changed.
 *
 * Calls go one way, down: assembly starts and close stops what the other
 * files own, the workers (worker.c), the superblock thread and the first
 * and last superblock writes (sb_update.c), the write-intent and degraded
 * bitmaps (intent.c, degraded.c), health counts (health.c), the roster
 * (roster.c) and the rebuild (rebuild.c).  The rest of raid/ calls into
 * this file only for its accessors (ff_raid_failed_count, ...).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/fault.h"
#include "raid/raid_i.h"

void ff_raid_close_members(struct ff_member *m, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		ff_member_close(&m[i]);
		ff_fault_free(&m[i]);
	}
}

/* Open every path and refuse duplicates, naming both. */
int ff_raid_open_members(const char *const *paths, unsigned n, bool ro, const char *undo_dir,
			struct ff_member *m, struct ff_err *err)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = ff_member_open(&m[i], paths[i], ro, err);

		if (rc == 0) {
			rc = ff_undo_open(&m[i], undo_dir, err);
			if (rc < 0)
				ff_raid_close_members(&m[i], 1);
		}

		if (rc < 0) {
			ff_raid_close_members(m, i);
			return rc;
		}
		for (unsigned j = 0; j < i; j++) {
			if (ff_member_same(&m[i], &m[j])) {
				ff_err_set(err, "%s and %s are the same member (given twice)", paths[j],
					   paths[i]);
				ff_raid_close_members(m, i + 1);
				return -EINVAL;
			}
		}
		rc = ff_member_lock(&m[i], err);
		if (rc < 0) {
			ff_raid_close_members(m, i + 1);
			return rc;
		}
	}
	return 0;
}

static uint32_t max_lbs(const struct ff_member *m, unsigned n)
{
	uint32_t a = 512;

	for (unsigned i = 0; i < n; i++)
		if (m[i].fd >= 0)
			a = FF_MAX(a, FF_MAX(m[i].lbs, FF_MAX(m[i].dio_off_align, m[i].dio_mem_align)));
	return a;
}

static void sb_fill_geometry(struct ff_member_sb *sb, const struct ff_geom *g)
{
	sb->level = ff_cpu_to_le32(g->level);
	sb->nmembers = ff_cpu_to_le32(g->nmembers);
	sb->chunk_bytes = ff_cpu_to_le32(g->chunk_bytes);
	sb->meta_copies = ff_cpu_to_le32(g->meta_copies);
	sb->member_bytes = ff_cpu_to_le64(g->member_bytes);
	sb->data_offset = ff_cpu_to_le64(g->data_offset);
	sb->nstripes = ff_cpu_to_le64(g->nstripes);
	sb->meta_offset = ff_cpu_to_le64(g->meta_offset);
	sb->meta_member_bytes = ff_cpu_to_le64(g->meta_member_bytes);
}

/* mkfs: the first roster (roster.c), generation 1, on every member. */
static int create_roster(struct ff_member *m, unsigned n, const struct ff_member_sb *sb,
			 const char *const *paths, struct ff_err *err)
{
	struct ff_roster *ro = ff_alloc_aligned(sizeof(*ro));
	uint64_t now = (uint64_t)time(NULL);
	int rc = 0;

	if (!ro)
		return -ENOMEM;
	ff_roster_init(ro, sb->array_uuid, n);
	ro->generation = ff_cpu_to_le64(1);
	for (unsigned i = 0; i < n; i++)
		ff_roster_entry_fill(&ro->role[i], &m[i], sb->roles[i].member_uuid, now);
	for (unsigned i = 0; i < n && rc == 0; i++) {
		rc = ff_roster_write(&m[i], ro, ff_le64(sb->member_bytes));
		if (rc == 0)
			rc = ff_member_flush(&m[i]);
		if (rc < 0)
			ff_err_set(err, "%s: cannot write the roster: %s", paths[i], strerror(-rc));
	}
	free(ro);
	return rc;
}

/* ff_raid_create_params.discard: each member's data area, nothing else. */
static void discard_data(struct ff_member *m, unsigned n, const struct ff_geom *g,
			 struct ff_raid_discard *out)
{
	uint64_t len = g->nstripes * g->chunk_bytes;

	/* ff_geom_compute keeps the last MiB (superblock copy B, the roster)
	 * after the data area; checked here too, as a deallocate cannot be
	 * taken back */
	FF_ASSERT(g->data_offset >= g->meta_offset + g->meta_member_bytes);
	FF_ASSERT(g->data_offset + len <= g->member_bytes - FF_MiB);
	for (unsigned i = 0; i < n; i++) {
		struct ff_raid_discard d = { .is_bdev = m[i].is_bdev, .want = len };

		d.rc = ff_member_discard(&m[i], g->data_offset, len, &d.bytes);
		if (d.rc < 0 && d.rc != -EOPNOTSUPP)
			ff_log(FF_LOG_WARN, "%s: deallocating the data area failed after %llu bytes: %s",
			       m[i].path, (unsigned long long)d.bytes, strerror(-d.rc));
		if (out)
			out[i] = d;
	}
}

int ff_raid_create(const char *const *paths, unsigned n, const struct ff_raid_create_params *p,
		   struct ff_err *err)
{
	struct ff_member *m = calloc(FF_MEMBERS_MAX, sizeof(*m));
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_geom g;
	unsigned smallest = 0;
	int rc;

	if (!m || !sb) {
		free(m);
		free(sb);
		return -ENOMEM;
	}
	if (n > FF_MEMBERS_MAX) {
		ff_err_set(err, "%u members given, at most %u supported", n, FF_MEMBERS_MAX);
		rc = -EINVAL;
		goto out_free;
	}
	rc = ff_raid_open_members(paths, n, false, NULL, m, err);
	if (rc < 0)
		goto out_free;
	for (unsigned i = 0; i < n; i++) {
		const char *sig = p->force ? NULL : ff_probe_signature(&m[i]);

		if (sig) {
			ff_err_set(err, "%s: carries a %s signature; use -f to overwrite it", paths[i], sig);
			rc = -EEXIST;
			goto out_close;
		}
		if (m[i].size_bytes < m[smallest].size_bytes)
			smallest = i;
	}
	rc = ff_geom_compute(&g, p->level, n, p->chunk_bytes, n ? m[smallest].size_bytes : 0,
			     p->meta_member_bytes, max_lbs(m, n), err);
	if (rc < 0) {
		if (rc == -ENOSPC) {
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			ff_err_set(err, "%s: %s", paths[smallest], msg);
		}
		goto out_close;
	}
	if (p->discard)
		discard_data(m, n, &g, p->discard_out);
	memset(sb, 0, sizeof(*sb));
	sb->magic = ff_cpu_to_le64(FF_MEMBER_SB_MAGIC);
	sb->version = ff_cpu_to_le32(FF_MEMBER_SB_VERSION);
	sb->sb_bytes = ff_cpu_to_le32(FF_MEMBER_SB_BYTES);
	ff_uuid_generate(sb->array_uuid);
	sb->events = ff_cpu_to_le64(1);
	sb->ctime_s = sb->utime_s = ff_cpu_to_le64((uint64_t)time(NULL));
	sb->array_state = ff_cpu_to_le32(FF_ARRAY_CLEAN);
	sb_fill_geometry(sb, &g);
	snprintf(sb->label, sizeof(sb->label), "%s", p->label);
	for (unsigned i = 0; i < n; i++) {
		ff_uuid_generate(sb->roles[i].member_uuid);
		sb->roles[i].state = ff_cpu_to_le32(FF_MEMBER_ACTIVE);
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		sb->role = ff_cpu_to_le32(i);
		memcpy(sb->member_uuid, sb->roles[i].member_uuid, 16);
		rc = ff_sb_write(&m[i], sb);
		if (rc < 0)
			ff_err_set(err, "%s: cannot write member superblock: %s", paths[i], strerror(-rc));
	}
	if (rc == 0)
		rc = create_roster(m, n, sb, paths, err);
out_close:
	ff_raid_close_members(m, n);
out_free:
	free(m);
	free(sb);
	return rc;
}

struct candidate {
	struct ff_member_sb *sb;
	bool usable;
};

/* The array is the uuid most members carry; anything else is foreign. */
static int pick_array(struct ff_member *m, struct candidate *c, unsigned n, unsigned *best,
		      struct ff_err *err)
{
	unsigned votes_best = 0;

	*best = n;
	for (unsigned i = 0; i < n; i++) {
		unsigned votes = 0;

		for (unsigned j = 0; j < n; j++)
			votes += memcmp(c[i].sb->array_uuid, c[j].sb->array_uuid, 16) == 0;
		if (votes > votes_best ||
		    (votes == votes_best && ff_le64(c[i].sb->events) > ff_le64(c[*best].sb->events))) {
			votes_best = votes;
			*best = i;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		char u[37], v[37];

		if (memcmp(c[i].sb->array_uuid, c[*best].sb->array_uuid, 16) == 0)
			continue;
		ff_uuid_format(c[i].sb->array_uuid, u);
		ff_uuid_format(c[*best].sb->array_uuid, v);
		ff_err_set(err, "%s belongs to another array (%s), not to %s", m[i].path, u, v);
		return -EINVAL;
	}
	/* the freshest superblock of the array describes it */
	for (unsigned i = 0; i < n; i++)
		if (ff_le64(c[i].sb->events) > ff_le64(c[*best].sb->events))
			*best = i;
	return 0;
}

/*
 * A member that missed the grow (ff_raid_grow stopped between the
 * superblocks): one event behind the grown ones, at exactly the geometry
 * they call old.  It holds its role: the grow changed nothing on it but
 * the superblock.
 */
static bool missed_the_grow(const struct ff_member_sb *sb, const struct ff_member_sb *ref)
{
	return ff_le32(ref->old_nmembers) && ff_le64(sb->events) + 1 == ff_le64(ref->events) &&
	       !sb->old_nmembers && sb->level == ref->old_level &&
	       sb->nmembers == ref->old_nmembers && ff_le32(sb->role) < ff_le32(ref->old_nmembers);
}

static int check_member_fits(const struct ff_member *m, const struct ff_member_sb *sb,
			     const struct ff_member_sb *ref, struct ff_err *err)
{
	bool missed = missed_the_grow(sb, ref);

	if ((!missed && (sb->level != ref->level || sb->nmembers != ref->nmembers)) ||
	    sb->chunk_bytes != ref->chunk_bytes || sb->data_offset != ref->data_offset ||
	    sb->nstripes != ref->nstripes || sb->meta_offset != ref->meta_offset ||
	    sb->meta_member_bytes != ref->meta_member_bytes) {
		ff_err_set(err, "%s: geometry differs from the other members of its array", m->path);
		return -EINVAL;
	}
	if (m->size_bytes < ff_le64(ref->member_bytes)) {
		ff_err_set(err, "%s: member is smaller (%llu bytes) than the array needs (%llu)",
			   m->path, (unsigned long long)m->size_bytes,
			   (unsigned long long)ff_le64(ref->member_bytes));
		return -EINVAL;
	}
	return 0;
}

static void geom_from_sb(struct ff_geom *g, const struct ff_member_sb *sb, uint32_t io_align)
{
	const struct ff_raid_level *lv = ff_raid_level_get(ff_le32(sb->level));

	memset(g, 0, sizeof(*g));
	g->level = lv->level;
	g->nmembers = ff_le32(sb->nmembers);
	g->nparity = lv->nparity;
	g->ndata = g->nmembers - g->nparity;
	g->chunk_bytes = ff_le32(sb->chunk_bytes);
	g->io_align = io_align;
	g->stripe_bytes = (uint64_t)g->ndata * g->chunk_bytes;
	g->nstripes = ff_le64(sb->nstripes);
	g->data_offset = ff_le64(sb->data_offset);
	g->meta_offset = ff_le64(sb->meta_offset);
	g->meta_member_bytes = ff_le64(sb->meta_member_bytes);
	g->meta_copies = ff_le32(sb->meta_copies);
	g->meta_members = ff_le32(sb->meta_members) ? ff_le32(sb->meta_members) : g->nmembers;
	g->meta_bytes = g->meta_member_bytes / FF_META_CHUNK * g->meta_members / g->meta_copies *
			FF_META_CHUNK;
	g->data_bytes = g->nstripes * g->stripe_bytes;
	g->member_bytes = ff_le64(sb->member_bytes);
}

/* A grown array's old geometry: the array's, at the old level and width. */
static void geom_old_from(struct ff_geom *old, const struct ff_geom *g, const struct ff_member_sb *sb)
{
	const struct ff_raid_level *lv = ff_raid_level_get(ff_le32(sb->old_level));

	*old = *g;
	old->level = lv->level;
	old->nmembers = ff_le32(sb->old_nmembers);
	old->nparity = lv->nparity;
	old->ndata = old->nmembers - old->nparity;
	old->stripe_bytes = (uint64_t)old->ndata * old->chunk_bytes;
	old->data_bytes = old->nstripes * old->stripe_bytes;
}


/* A member given for a role but left out: status shows it (the freshest
 * such member when there are several). */
static void note_left_out(struct ff_raid *r, unsigned role, const struct ff_member *m,
			  const struct ff_member_sb *sb, const struct ff_member_sb *fresh,
			  bool marked_failed)
{
	if (role >= FF_MEMBERS_MAX || (r->left_out[role].path[0] &&
				       r->left_out[role].events >= ff_le64(sb->events)))
		return;
	snprintf(r->left_out[role].path, sizeof(r->left_out[role].path), "%s", m->path);
	r->left_out[role].events = ff_le64(sb->events);
	r->left_out[role].stale = ff_le64(sb->events) < ff_le64(fresh->events);
	r->left_out[role].marked_failed = marked_failed;
}

/* Decide, for each role, which given member (if any) holds it. */
static void assign_roles(struct ff_raid *r, struct ff_member *m, struct candidate *c, unsigned n,
			 const struct ff_member_sb *fresh, int *holder)
{
	uint64_t events = ff_le64(fresh->events);

	for (unsigned i = 0; i < FF_MEMBERS_MAX; i++)
		holder[i] = -1;
	for (unsigned i = 0; i < n; i++) {
		uint32_t role = ff_le32(c[i].sb->role);

		if (role == FF_ROLE_SPARE) {
			if (r->nspares < FF_SPARES_MAX) {
				ff_log(FF_LOG_INFO, "%s is a hot spare", m[i].path);
				r->spare[r->nspares++] = m[i];
				m[i].fd = -1; /* the array keeps it open */
				m[i].fault = NULL;
			}
			continue;
		}
		if (memcmp(fresh->roles[role].member_uuid, c[i].sb->member_uuid, 16) != 0) {
			ff_log(FF_LOG_WARN, "%s held role %u but was replaced; ignoring it", m[i].path, role);
			continue;
		}
		if (ff_le32(fresh->roles[role].state) != FF_MEMBER_ACTIVE &&
		    ff_le32(fresh->roles[role].state) != FF_MEMBER_REBUILDING) {
			ff_log(FF_LOG_WARN, "%s (role %u) is marked failed in the array; ignoring it",
			       m[i].path, role);
			note_left_out(r, role, &m[i], c[i].sb, fresh, true);
			continue;
		}
		/* One behind, with the freshest superblock still counting it in:
		 * the array stopped (a crash, a power cut) while it wrote a
		 * superblock update member after member (sb_update.c), and this
		 * one had not got it yet.  A member that really missed writes
		 * is marked failed in that update (above); so is one the array
		 * assembled without.  mdadm allows the same margin of one. */
		if (ff_le64(c[i].sb->events) + 1 == events) {
			ff_log(FF_LOG_INFO, "%s (role %u) missed the last superblock update (events "
			       "%llu, the array's %llu: the array stopped while writing it); using it",
			       m[i].path, role, (unsigned long long)ff_le64(c[i].sb->events),
			       (unsigned long long)events);
		} else if (ff_le64(c[i].sb->events) < events) {
			ff_log(FF_LOG_WARN, "%s (role %u) is stale: events %llu < %llu; ignoring it",
			       m[i].path, role, (unsigned long long)ff_le64(c[i].sb->events),
			       (unsigned long long)events);
			note_left_out(r, role, &m[i], c[i].sb, fresh, false);
			continue;
		}
		holder[role] = (int)i;
		c[i].usable = true;
	}
	(void)r;
}

/*
 * A member that cannot be used stops the assembly, so that a mistyped path
 * never mounts degraded behind the user's back; the message says what
 * leaving it out would do.  ref is the superblock of a member that can be
 * used (NULL: none), nbad how many given members cannot, then what to do
 * once it is mounted.
 */
static void hint_leave_out(struct ff_err *err, unsigned n, unsigned nbad,
			   const struct ff_member_sb *ref, const char *what)
{
	const struct ff_raid_level *lv = ref ? ff_raid_level_get(ff_le32(ref->level)) : NULL;
	char msg[sizeof(err->msg) + 32];
	unsigned nmembers, out;

	if (!lv)
		return;
	if (nbad > 1)
		snprintf(msg, sizeof(msg), "%s (and %u more member%s)", err->msg, nbad - 1,
			 nbad > 2 ? "s" : "");
	else
		snprintf(msg, sizeof(msg), "%s", err->msg);
	nmembers = ff_le32(ref->nmembers);
	out = (n < nmembers ? nmembers - n : 0) + nbad; /* not given, plus not usable */
	if (out <= lv->nparity)
		ff_err_set(err, "%s; leave %s out to mount the array degraded (RAID%u survives %u "
			   "missing member%s), then %s", msg,
			   nbad > 1 ? "them" : "it", lv->level, lv->nparity, lv->nparity > 1 ? "s" : "",
			   what);
	else
		ff_err_set(err, "%s; without %s the array misses %u of %u members, more than RAID%u "
			   "survives (%u)", msg, nbad > 1 ? "them" : "it", out, nmembers, lv->level,
			   lv->nparity);
}

static int read_candidates(struct ff_member *m, struct candidate *c, unsigned n, struct ff_err *err)
{
	const struct ff_member_sb *ref = NULL;
	struct ff_err first = { "" };
	unsigned nbad = 0;
	int bad_rc = 0;

	for (unsigned i = 0; i < n; i++) {
		struct ff_err e = { "" };
		int rc;

		c[i].sb = ff_alloc_aligned(sizeof(struct ff_member_sb));
		if (!c[i].sb)
			return -ENOMEM;
		rc = ff_sb_read(&m[i], c[i].sb);
		if (rc == -ENOENT) {
			ff_err_set(&e, "%s: not a framefs member (no member superblock)", m[i].path);
			rc = -EINVAL;
		} else if (rc == -EBADMSG) {
			ff_err_set(&e, "%s: member superblock is corrupt (both copies fail their checksum)",
				   m[i].path);
			rc = -EINVAL;
		} else if (rc < 0) {
			ff_err_set(&e, "%s: cannot read member superblock: %s", m[i].path, strerror(-rc));
		} else {
			rc = ff_sb_validate(c[i].sb, &e, m[i].path);
			if (rc == 0 && !ref)
				ref = c[i].sb;
		}
		if (rc < 0 && nbad++ == 0) {
			first = e;
			bad_rc = rc;
		}
	}
	if (nbad) {
		*err = first;
		hint_leave_out(err, n, nbad, ref, nbad > 1 ?
			       "add them (or replacements) back with framefs-admin add" :
			       "add it (or a replacement) back with framefs-admin add");
	}
	return bad_rc;
}

static int adopt_members(struct ff_raid *r, struct ff_member *m, struct candidate *c, unsigned n,
			 const int *holder, struct ff_err *err)
{
	char missing[256] = "";
	unsigned nmissing = 0;

	for (unsigned role = 0; role < r->g.nmembers; role++) {
		int h = holder[role];

		if (h < 0) {
			size_t len = strlen(missing);

			snprintf(missing + len, sizeof(missing) - len, "%s%u", nmissing ? ", " : "", role);
			nmissing++;
			r->mem[role].fd = -1;
			atomic_store(&r->state[role], FF_MEMBER_MISSING);
			r->dead_mask |= 1u << role;
			continue;
		}
		r->mem[role] = m[h];
		m[h].fd = -1; /* ownership moves to the array */
		m[h].fault = NULL;
		if (ff_le32(r->sb->roles[role].state) == FF_MEMBER_REBUILDING) {
			/* resumes when ff_raid_rebuild_start() is called */
			atomic_store(&r->state[role], FF_MEMBER_REBUILDING);
			r->rebuild_mask |= 1u << role;
			r->meta_stale_mask |= 1u << role;
			nmissing++; /* not readable yet: counts against parity */
			ff_log(FF_LOG_WARN, "%s (role %u) was being rebuilt", r->mem[role].path, role);
			continue;
		}
		atomic_store(&r->state[role], FF_MEMBER_ACTIVE);
	}
	if (nmissing > r->g.nparity) {
		ff_err_set(err, "cannot assemble RAID%u: %u of %u members missing or stale (roles %s); "
			   "RAID%u survives %u", r->g.level, nmissing, r->g.nmembers, missing,
			   r->g.level, r->g.nparity);
		return -EIO;
	}
	if (nmissing)
		ff_log(FF_LOG_WARN, "array assembled degraded: role(s) %s missing", missing);
	(void)c;
	(void)n;
	return 0;
}

int ff_raid_assemble(const char *const *paths, unsigned n, const struct ff_raid_opts *opts,
		     struct ff_raid **out, struct ff_err *err)
{
	struct ff_member *m = calloc(FF_MEMBERS_MAX, sizeof(*m));
	struct candidate c[FF_MEMBERS_MAX];
	struct ff_raid *r = calloc(1, sizeof(*r));
	int holder[FF_MEMBERS_MAX];
	const char *faults = opts->fault_spec;
	unsigned best;
	uint64_t events_before;
	bool unclean;
	int rc;

	memset(c, 0, sizeof(c));
	*out = NULL;
	if (!m || !r) {
		rc = -ENOMEM;
		goto fail;
	}
	if (n == 0 || n > FF_MEMBERS_MAX) {
		ff_err_set(err, "%u members given: need 1 to %u", n, FF_MEMBERS_MAX);
		rc = -EINVAL;
		goto fail;
	}
	for (unsigned i = 0; i < FF_MEMBERS_MAX; i++)
		r->mem[i].fd = -1;
	pthread_mutex_init(&r->spare_lock, NULL);
	r->opts = *opts;
	r->read_only = opts->read_only;
	rc = ff_raid_open_members(paths, n, opts->read_only, opts->undo_dir, m, err);
	if (rc < 0)
		goto fail_nomembers;
	rc = read_candidates(m, c, n, err);
	if (rc == 0)
		rc = pick_array(m, c, n, &best, err);
	if (rc == 0) {
		struct ff_err first = { "" };
		unsigned nbad = 0;

		for (unsigned i = 0; i < n; i++)
			if (check_member_fits(&m[i], c[i].sb, c[best].sb, nbad ? &(struct ff_err){ "" } :
					      &first) < 0)
				nbad++;
		if (nbad) {
			*err = first;
			hint_leave_out(err, n, nbad, c[best].sb, nbad > 1 ?
				       "add replacements with framefs-admin add" :
				       "add a replacement with framefs-admin add");
			rc = -EINVAL;
		}
	}
	if (rc < 0)
		goto fail;
	r->sb = ff_alloc_aligned(sizeof(*r->sb));
	if (!r->sb) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(r->sb, c[best].sb, sizeof(*r->sb));
	r->lv = ff_raid_level_get(ff_le32(r->sb->level));
	geom_from_sb(&r->g, r->sb, max_lbs(m, n));
	if (ff_le32(r->sb->old_nmembers)) {
		r->lv_old = ff_raid_level_get(ff_le32(r->sb->old_level));
		geom_old_from(&r->g_old, &r->g, r->sb);
	}
	memcpy(r->uuid, r->sb->array_uuid, 16);
	memcpy(r->label, r->sb->label, sizeof(r->label));
	r->label[sizeof(r->label) - 1] = '\0';
	r->events = ff_le64(r->sb->events);
	ff_raid_health_init(r);
	assign_roles(r, m, c, n, r->sb, holder);
	rc = adopt_members(r, m, c, n, holder, err);
	if (rc < 0)
		goto fail;
	ff_raid_roster_load(r);
	for (unsigned i = 0; i < r->g.nmembers; i++)
		r->memp[i] = &r->mem[i];
	r->shadow.fd = -1;
	r->memp[r->g.nmembers] = &r->shadow;
	atomic_store(&r->shadow_role, -1);
	if (faults && *faults) {
		rc = ff_fault_apply_text(r->memp, r->g.nmembers, faults, err);
		if (rc < 0)
			goto fail;
	}
	if (ff_le32(r->sb->array_state) == FF_ARRAY_DIRTY && !opts->force_clean)
		ff_log(FF_LOG_INFO, "array was not shut down cleanly");
	pthread_mutex_init(&r->sb_lock, NULL);
	pthread_cond_init(&r->sb_cond, NULL);
	unclean = ff_le32(r->sb->array_state) == FF_ARRAY_DIRTY && !opts->force_clean;
	events_before = r->events;
	rc = ff_raid_engine_start(r);
	if (rc == 0 && (rc = ff_raid_sb_thread_start(r)) < 0)
		ff_raid_engine_stop(r);
	if (rc < 0) {
		ff_err_set(err, "cannot start the RAID engine: %s", strerror(-rc));
		goto fail;
	}
	if (!r->read_only && (rc = ff_raid_sb_write_all(r, FF_ARRAY_DIRTY)) < 0) {
		ff_err_set(err, "cannot write member superblocks: %s", strerror(-rc));
		ff_raid_close(r);
		r = NULL;
		goto fail;
	}
	if (!r->read_only && (rc = ff_raid_wwd_init(r, events_before, unclean)) < 0) {
		ff_err_set(err, "cannot write the written-while-degraded records: %s", strerror(-rc));
		ff_raid_close(r);
		r = NULL;
		goto fail;
	}
	if (!r->read_only && ((rc = ff_raid_intent_init(r)) < 0 ||
			      (rc = ff_raid_intent_recover(r, unclean)) < 0)) {
		ff_err_set(err, "cannot recover the write-intent records: %s", strerror(-rc));
		ff_raid_close(r);
		r = NULL;
		goto fail;
	}
	for (unsigned i = 0; i < n; i++)
		free(c[i].sb);
	ff_raid_close_members(m, n);
	free(m);
	if (ff_raid_failed_count(r))
		ff_raid_event(r, FF_EVENT_DEGRADED, -1, "assembled with %u of %u members missing or failed",
			      ff_raid_failed_count(r), r->g.nmembers);
	*out = r;
	return 0;
fail:
	ff_raid_close_members(m, n);
fail_nomembers:
	for (unsigned i = 0; i < n; i++)
		free(c[i].sb);
	if (r) {
		for (unsigned i = 0; i < FF_MEMBERS_MAX; i++)
			if (r->mem[i].fd >= 0)
				ff_member_close(&r->mem[i]);
		free(r->roster);
		free(r->sb);
	}
	free(r);
	free(m);
	return rc;
}

int ff_raid_close(struct ff_raid *r)
{
	int rc;

	ff_raid_rebuild_stop(r);
	ff_raid_engine_stop(r);
	ff_raid_sb_thread_stop(r);
	ff_raid_intent_free(r);
	/* a resync still held back for the row hook (intent.c) is owed at the
	 * next assembly: the array stays unclean */
	rc = r->read_only ? 0 : ff_raid_sb_write_all(r, r->resync_waiting ? FF_ARRAY_DIRTY
								       : FF_ARRAY_CLEAN);
	ff_raid_wwd_free(r); /* after the last superblock write: its header follows it */
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		if (r->mem[i].fd >= 0)
			ff_member_close(&r->mem[i]);
		ff_fault_free(&r->mem[i]);
	}
	while (r->faults_retired) {
		struct ff_fault *f = r->faults_retired;

		r->faults_retired = f->retired_next;
		ff_fault_destroy(f);
	}
	for (unsigned i = 0; i < r->nspares; i++)
		ff_member_close(&r->spare[i]);
	if (r->shadow.fd >= 0)
		ff_member_close(&r->shadow);
	ff_raid_rebuild_free(r);
	pthread_mutex_destroy(&r->spare_lock);
	pthread_mutex_destroy(&r->sb_lock);
	pthread_cond_destroy(&r->sb_cond);
	pthread_mutex_destroy(&r->health_lock);
	free(r->roster);
	free(r->sb);
	free(r);
	return rc;
}

const struct ff_geom *ff_raid_geom(const struct ff_raid *r) { return &r->g; }
const struct ff_geom *ff_raid_geom_old(const struct ff_raid *r) { return raid_grown(r) ? &r->g_old : NULL; }
const char *ff_raid_label(const struct ff_raid *r) { return r->label; }
const uint8_t *ff_raid_uuid(const struct ff_raid *r) { return r->uuid; }
uint64_t ff_raid_events(const struct ff_raid *r) { return r->events; }
uint64_t ff_raid_resync_regions(const struct ff_raid *r) { return r->stats_resync_regions; }
struct ff_raid_stats *ff_raid_stats(struct ff_raid *r) { return &r->stats; }

struct ff_member *ff_raid_member(struct ff_raid *r, unsigned role)
{
	return role < r->g.nmembers && r->mem[role].fd >= 0 ? &r->mem[role] : NULL;
}

enum ff_member_state ff_raid_member_state(const struct ff_raid *r, unsigned role)
{
	return (enum ff_member_state)atomic_load(&r->state[role]);
}

unsigned ff_raid_failed_count(const struct ff_raid *r)
{
	return (unsigned)__builtin_popcount(atomic_load(&r->dead_mask));
}

unsigned ff_raid_chunk_member(const struct ff_raid *r, uint64_t stripe, unsigned index)
{
	uint8_t map[FF_MEMBERS_MAX];
	const struct ff_raid_level *lv;
	const struct ff_geom *g = raid_row_geom(r, stripe, &lv);

	FF_ASSERT(index < g->ndata);
	lv->map(g->nmembers, stripe, map);
	return map[index];
}
