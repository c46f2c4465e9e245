/* SPDX-License-Identifier: MIT */
/*
 * Member management: adding a member (it takes a dead role and is rebuilt,
 * or waits as a hot spare), removing one, hot spares taking over a failed
 * role, and replacing a live member by copying it onto its successor (the
 * shadow slot) while the array runs.  The rebuild itself is in rebuild.c.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/fault.h"
#include "raid/raid_i.h"
#include "raid/rebuild_i.h"

/* ---- members: add, remove, hot spares ------------------------------------------ */

/* Point every engine ring's member slot `slot` (a role, or nmembers: the
 * shadow) at fd (-1: none).  Fails only when io_uring does; says so. */
static int rings_update(struct ff_raid *r, unsigned slot, int fd)
{
	int rc = 0;

	for (unsigned i = 0; i < r->nworkers && rc == 0; i++)
		rc = ff_ring_update_member(&r->worker[i].ring, slot, fd);
	if (rc < 0)
		ff_log(FF_LOG_ERR, "cannot point the engine's rings at member slot %u: %s", slot,
		       strerror(-rc));
	return rc;
}

/* Caller holds sb_lock: role's member is being let go; keep its fault
 * rules (tests only) until the array closes. */
static void fault_retire(struct ff_raid *r, unsigned role)
{
	struct ff_fault *f = ff_fault_detach(&r->mem[role]);

	if (!f)
		return;
	f->retired_next = r->faults_retired;
	r->faults_retired = f;
}

/* Caller holds sb_lock: m (open) replaces whatever held dead role `role`,
 * from its first byte (rebuild_pos 0); the engine threads' rings get its fd.
 * What it is then (rebuilt in full, or re-added) is the caller's. */
static int role_take(struct ff_raid *r, struct ff_member *m, unsigned role)
{
	if (r->mem[role].fd >= 0)
		ff_raid_intent_member_close(r, &r->mem[role]);
	fault_retire(r, role);
	atomic_fetch_add(&r->role_epoch[role], 1);
	r->mem[role] = *m;
	ff_raid_role_reset_info(r, role);
	r->sb->roles[role].rebuild_pos = 0;
	return rings_update(r, role, r->mem[role].fd);
}

/* Member m (open) takes over dead role `role` and starts its rebuild. */
static int promote(struct ff_raid *r, struct ff_member *m, unsigned role)
{
	int rc;

	pthread_mutex_lock(&r->sb_lock);
	if (!(atomic_load(&r->dead_mask) & (1u << role))) {
		pthread_mutex_unlock(&r->sb_lock);
		return -EBUSY;
	}
	ff_uuid_generate(r->sb->roles[role].member_uuid);
	ff_raid_wwd_role_back(r, role);
	atomic_fetch_and(&r->readd_mask, ~(1u << role)); /* a new member: rebuilt in full */
	rc = role_take(r, m, role);
	if (rc == 0) {
		/* readable nowhere yet, written everywhere from now on */
		atomic_store(&r->state[role], FF_MEMBER_REBUILDING);
		atomic_fetch_or(&r->rebuild_mask, 1u << role);
		atomic_fetch_or(&r->meta_stale_mask, 1u << role);
		if (r->rebuilt) /* a rebuild in progress knew nothing of this member */
			memset(r->rebuilt, 0, (FF_DIV_ROUND_UP(r->g.nstripes, 64) + 1) * sizeof(uint64_t));
		atomic_fetch_and(&r->dead_mask, ~(1u << role));
		rc = ff_raid_sb_write_locked(r, FF_ARRAY_DIRTY);
	}
	pthread_mutex_unlock(&r->sb_lock);
	if (rc < 0)
		return rc;
	ff_log(FF_LOG_INFO, "member %s takes role %u; rebuilding", m->path, role);
	ff_raid_rebuild_stop(r); /* restart with every rebuilding member */
	return ff_raid_rebuild_start(r);
}

/* ---- re-add: a member back from a short absence ------------------------------- */

/* Which role the member at path held, checked against the array; 0 or
 * -errno with err set.  sb is the member's superblock. */
static int readd_role(struct ff_raid *r, struct ff_member *m, struct ff_member_sb *sb,
		      unsigned *role, struct ff_err *err)
{
	char why[256];
	int rc = ff_sb_read(m, sb);

	if (rc < 0) {
		ff_err_set(err, "cannot re-add %s: %s; framefs-admin add takes it as a new member",
			   m->path, rc == -ENOENT ? "it is not a framefs member" : "its superblock is corrupt");
		return -EINVAL;
	}
	if (memcmp(sb->array_uuid, r->uuid, 16) != 0) {
		ff_err_set(err, "cannot re-add %s: it belongs to another array", m->path);
		return -EINVAL;
	}
	*role = ff_le32(sb->role);
	if (*role >= r->g.nmembers) {
		ff_err_set(err, "cannot re-add %s: it was a spare of this array, not a role's member; "
			   "framefs-admin add --force takes it back", m->path);
		return -EINVAL;
	}
	if (!(atomic_load(&r->dead_mask) & (1u << *role))) {
		ff_err_set(err, "cannot re-add %s: role %u has a member (%s)", m->path, *role,
			   r->mem[*role].fd >= 0 ? r->mem[*role].path : "rebuilding");
		return -EEXIST;
	}
	pthread_mutex_lock(&r->sb_lock);
	rc = memcmp(sb->member_uuid, r->sb->roles[*role].member_uuid, 16) != 0;
	pthread_mutex_unlock(&r->sb_lock);
	if (rc) {
		ff_err_set(err, "cannot re-add %s: role %u was given to another member since it left; "
			   "framefs-admin add --force or replace rebuilds it in full", m->path, *role);
		return -EINVAL;
	}
	if (ff_raid_wwd_readd_check(r, *role, ff_le64(sb->events), why, sizeof(why)) < 0) {
		ff_err_set(err, "cannot re-add %s (role %u): %s; use framefs-admin add --force or "
			   "replace (a full rebuild)", m->path, *role, why);
		return -EINVAL;
	}
	return 0;
}

/* Caller holds sb_lock: m takes back its role, readable at once wherever the
 * degraded bitmap marks nothing, rebuilt where it does. */
static int readd_locked(struct ff_raid *r, struct ff_member *m, unsigned role)
{
	size_t words = FF_DIV_ROUND_UP(r->g.nstripes, 64) + 1;

	if (!r->rebuilt && !(r->rebuilt = calloc(words, sizeof(uint64_t))))
		return -ENOMEM;
	memset(r->rebuilt, 0, words * sizeof(uint64_t));
	for (uint64_t s = 0; s < r->g.nstripes; s++)
		if (!ff_raid_wwd_stripe_marked(r, s))
			raid_mark_rebuilt(r, s);
	if (role_take(r, m, role) < 0)
		return -EIO;
	/* written everywhere from now on, read where nothing was written without it */
	atomic_store(&r->state[role], FF_MEMBER_REBUILDING);
	atomic_fetch_or(&r->readd_mask, 1u << role);
	atomic_fetch_or(&r->rebuild_mask, 1u << role);
	atomic_fetch_or(&r->meta_stale_mask, 1u << role);
	atomic_fetch_and(&r->dead_mask, ~(1u << role));
	ff_raid_wwd_role_back(r, role);
	return ff_raid_sb_write_locked(r, FF_ARRAY_DIRTY);
}

int ff_raid_readd(struct ff_raid *r, const char *path, struct ff_err *err)
{
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_member m;
	unsigned role = 0;
	int rc;

	if (!sb)
		return -ENOMEM;
	if (atomic_load(&r->shadow_role) >= 0 || atomic_load(&r->rebuild_mask) ||
	    (r->rb && r->rb->running)) {
		ff_err_set(err, "a rebuild or replace is running: re-add %s when it is done", path);
		free(sb);
		return -EBUSY;
	}
	/* a member failed during this mount is still open (and locked): let it
	 * go, its superblock stays for the checks below */
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		if (!(atomic_load(&r->dead_mask) & (1u << i)) || r->mem[i].fd < 0 ||
		    strcmp(r->mem[i].path, path) != 0)
			continue;
		pthread_mutex_lock(&r->sb_lock);
		ff_raid_intent_member_close(r, &r->mem[i]);
		rings_update(r, i, -1);
		atomic_store(&r->state[i], FF_MEMBER_MISSING);
		pthread_mutex_unlock(&r->sb_lock);
	}
	rc = ff_raid_add_check(r, path, true, &m, err);
	if (rc == 0 && (rc = readd_role(r, &m, sb, &role, err)) < 0)
		ff_member_close(&m);
	free(sb);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&r->sb_lock);
	rc = readd_locked(r, &m, role);
	pthread_mutex_unlock(&r->sb_lock);
	if (rc < 0) {
		ff_err_set(err, "cannot re-add %s: %s", path, strerror(-rc));
		return rc;
	}
	ff_log(FF_LOG_INFO, "member %s re-added to role %u; resyncing what was written without it",
	       path, role);
	ff_raid_rebuild_stop(r);
	return ff_raid_rebuild_start(r);
}

static int lowest_dead_role(struct ff_raid *r)
{
	uint32_t dead = atomic_load(&r->dead_mask);

	return dead ? __builtin_ctz(dead) : -1;
}

void ff_raid_spares_takeover(struct ff_raid *r)
{
	int role;

	for (;;) {
		struct ff_member m;

		pthread_mutex_lock(&r->spare_lock);
		role = lowest_dead_role(r);
		if (role < 0 || !r->nspares) {
			pthread_mutex_unlock(&r->spare_lock);
			break;
		}
		m = r->spare[--r->nspares];
		pthread_mutex_unlock(&r->spare_lock);

		if (promote(r, &m, (unsigned)role) < 0) {
			ff_log(FF_LOG_ERR, "hot spare %s could not take role %d", m.path, role);
			ff_member_close(&m);
			break;
		}
	}
}

static int write_spare_sb(struct ff_raid *r, struct ff_member *m)
{
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	int rc;

	if (!sb)
		return -ENOMEM;
	pthread_mutex_lock(&r->sb_lock);
	memcpy(sb, r->sb, sizeof(*sb));
	pthread_mutex_unlock(&r->sb_lock);
	sb->role = ff_cpu_to_le32(FF_ROLE_SPARE);
	ff_uuid_generate(sb->member_uuid);
	rc = ff_sb_write(m, sb);
	free(sb);
	return rc;
}

/* A member of this array that was left out (stale, failed or replaced) or a
 * spare of it: say so, and that --force takes it back (rebuilt in full). */
static bool stale_member_hint(struct ff_raid *r, struct ff_member *m, const char *path,
			      struct ff_err *err)
{
	struct ff_member_sb sb;
	uint32_t role;

	if (ff_sb_read(m, &sb) != 0 || memcmp(sb.array_uuid, r->uuid, 16) != 0)
		return false;
	role = ff_le32(sb.role);
	if (role < r->g.nmembers)
		ff_err_set(err, "%s is a stale member of this array (role %u, events %llu; the array "
			   "is at %llu); framefs-admin add --force takes it back, rebuilt from parity",
			   path, role, (unsigned long long)ff_le64(sb.events),
			   (unsigned long long)r->events);
	else
		ff_err_set(err, "%s was a spare of this array (events %llu; the array is at %llu); "
			   "framefs-admin add --force takes it back", path,
			   (unsigned long long)ff_le64(sb.events), (unsigned long long)r->events);
	return true;
}

/* Open a member that is to join: not already in, big enough, no signature. */
int ff_raid_add_check(struct ff_raid *r, const char *path, bool force, struct ff_member *out,
		      struct ff_err *err)
{
	if (r->read_only) {
		ff_err_set(err, "array is read-only");
		return -EROFS;
	}
	return ff_raid_new_member_check(r, path, force, out, err);
}

int ff_raid_new_member_check(struct ff_raid *r, const char *path, bool force,
			     struct ff_member *out, struct ff_err *err)
{
	struct ff_member m;
	const char *sig;
	int rc;

	rc = ff_member_open(&m, path, false, err);
	if (rc == 0 && (rc = ff_undo_open(&m, r->opts.undo_dir, err)) < 0)
		ff_member_close(&m);
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < r->g.nmembers + r->nspares + 1; i++) {
		const struct ff_member *o = i < r->g.nmembers ? &r->mem[i]
					    : i < r->g.nmembers + r->nspares ? &r->spare[i - r->g.nmembers]
									: &r->shadow;

		if (o->fd >= 0 && ff_member_same(&m, o)) {
			ff_err_set(err, "%s is already part of this array", path);
			ff_member_close(&m);
			return -EEXIST;
		}
	}
	rc = ff_member_lock(&m, err);
	if (rc < 0) {
		ff_member_close(&m);
		return rc;
	}
	if (m.size_bytes < r->g.member_bytes) {
		ff_err_set(err, "%s is too small: %llu bytes, the array needs %llu", path,
			   (unsigned long long)m.size_bytes, (unsigned long long)r->g.member_bytes);
		ff_member_close(&m);
		return -ENOSPC;
	}
	if (!force && stale_member_hint(r, &m, path, err)) {
		ff_member_close(&m);
		return -EEXIST;
	}
	sig = force ? NULL : ff_probe_signature(&m);
	if (sig) {
		ff_err_set(err, "%s carries a %s signature; force to overwrite it", path, sig);
		ff_member_close(&m);
		return -EEXIST;
	}
	*out = m;
	return 0;
}

int ff_raid_add(struct ff_raid *r, const char *path, bool force, struct ff_err *err)
{
	struct ff_member m;
	int role, rc;

	rc = ff_raid_add_check(r, path, force, &m, err);
	if (rc < 0)
		return rc;
	role = lowest_dead_role(r);
	if (role >= 0)
		return promote(r, &m, (unsigned)role);
	rc = write_spare_sb(r, &m);
	if (rc < 0) {
		ff_err_set(err, "%s: cannot write its superblock: %s", path, strerror(-rc));
		ff_member_close(&m);
		return rc;
	}
	pthread_mutex_lock(&r->spare_lock);
	if (r->nspares == FF_SPARES_MAX) {
		pthread_mutex_unlock(&r->spare_lock);
		ff_err_set(err, "the array already has %u spares", FF_SPARES_MAX);
		ff_sb_erase(&m);
		ff_member_close(&m);
		return -ENOSPC;
	}
	r->spare[r->nspares++] = m;
	pthread_mutex_unlock(&r->spare_lock);
	ff_log(FF_LOG_INFO, "%s added as a hot spare", path);
	return 0;
}

int ff_raid_remove(struct ff_raid *r, const char *path, struct ff_err *err)
{
	pthread_mutex_lock(&r->spare_lock);
	for (unsigned i = 0; i < r->nspares; i++) {
		struct ff_member m = r->spare[i];

		if (strcmp(m.path, path) != 0)
			continue;
		r->spare[i] = r->spare[--r->nspares];
		pthread_mutex_unlock(&r->spare_lock);
		ff_sb_erase(&m);
		ff_member_close(&m);
		return 0;
	}
	pthread_mutex_unlock(&r->spare_lock);
	for (unsigned role = 0; role < r->g.nmembers; role++) {
		uint8_t st = atomic_load(&r->state[role]);

		if (r->mem[role].fd < 0 || strcmp(r->mem[role].path, path) != 0)
			continue;
		if (st == FF_MEMBER_ACTIVE || st == FF_MEMBER_REBUILDING) {
			ff_err_set(err, "%s (role %u) is in use: fail it first", path, role);
			return -EBUSY;
		}
		ff_sb_erase(&r->mem[role]); /* best effort: the member may be dead */
		ff_raid_intent_member_close(r, &r->mem[role]);
		rings_update(r, role, -1);
		atomic_store(&r->state[role], FF_MEMBER_MISSING);
		return 0;
	}
	ff_err_set(err, "%s is not a member or spare of this array", path);
	return -ENOENT;
}

unsigned ff_raid_spare_count(const struct ff_raid *r)
{
	return r->nspares;
}

const struct ff_member *ff_raid_spare(const struct ff_raid *r, unsigned i)
{
	return i < r->nspares ? &r->spare[i] : NULL;
}

/* ---- replace: copy a live member onto its successor ---------------------------- */

static void shadow_detach(struct ff_raid *r)
{
	atomic_store(&r->shadow_role, -1);
	rings_update(r, r->g.nmembers, -1);
}

/* The copy is complete: NEW takes OLD's role, OLD is let go. */
void ff_replace_finish(struct ff_raid *r, struct raid_rebuild *rb)
{
	unsigned role = rb->replace_role;
	struct ff_member old;

	pthread_mutex_lock(&r->sb_lock);
	fault_retire(r, role);
	old = r->mem[role];
	atomic_fetch_add(&r->role_epoch[role], 1);
	r->mem[role] = r->shadow;
	ff_raid_role_reset_info(r, role);
	r->shadow.fd = -1;
	rings_update(r, role, r->mem[role].fd);
	shadow_detach(r);
	memcpy(r->sb->roles[role].member_uuid, rb->replace_uuid, 16);
	ff_raid_sb_write_locked(r, FF_ARRAY_DIRTY);
	pthread_mutex_unlock(&r->sb_lock);
	ff_sb_erase(&old); /* it would look like a stale member otherwise */
	ff_log(FF_LOG_INFO, "member %s replaced by %s (role %u): %.1f s", old.path, r->mem[role].path,
	       role, (double)(ff_mono_ns() - rb->start_ns) / 1e9);
	ff_raid_event(r, FF_EVENT_REBUILD_FINISHED, (int)role, "replaced %s in %.1f s", old.path,
		      (double)(ff_mono_ns() - rb->start_ns) / 1e9);
	ff_raid_intent_member_close(r, &old);
}

/* OLD failed during the copy (or the copy failed): NEW becomes a hot spare,
 * which takes the role at once if OLD is dead, and is rebuilt from parity. */
void ff_replace_abandon(struct ff_raid *r, struct raid_rebuild *rb)
{
	struct ff_member m = r->shadow;

	shadow_detach(r);
	r->shadow.fd = -1;
	if (m.fd < 0)
		return;
	pthread_mutex_lock(&r->spare_lock);
	if (r->nspares < FF_SPARES_MAX) {
		r->spare[r->nspares++] = m;
		ff_log(FF_LOG_WARN, "replace of role %u stopped; %s kept as a spare", rb->replace_role,
		       m.path);
		m.fd = -1;
	}
	pthread_mutex_unlock(&r->spare_lock);
	if (m.fd >= 0)
		ff_member_close(&m);
	pthread_mutex_lock(&r->sb_lock);
	ff_raid_sb_write_soon_locked(r); /* the superblock thread hands a spare to a dead role */
	pthread_mutex_unlock(&r->sb_lock);
}

int ff_raid_replace(struct ff_raid *r, unsigned role, const char *path, bool force,
		    struct ff_err *err)
{
	struct ff_member_sb *sb;
	struct raid_rebuild *rb;
	struct ff_member m;
	int rc;

	if (role >= r->g.nmembers || atomic_load(&r->state[role]) != FF_MEMBER_ACTIVE) {
		ff_err_set(err, "role %u is not an active member: use add to fill a failed role", role);
		return -EINVAL;
	}
	if (atomic_load(&r->shadow_role) >= 0 || (r->rb && r->rb->running)) {
		ff_err_set(err, "a rebuild or replace is already running");
		return -EBUSY;
	}
	rc = ff_raid_add_check(r, path, force, &m, err);
	if (rc < 0)
		return rc;
	sb = ff_alloc_aligned(sizeof(*sb));
	if (!sb) {
		ff_member_close(&m);
		return -ENOMEM;
	}
	pthread_mutex_lock(&r->sb_lock);
	memcpy(sb, r->sb, sizeof(*sb));
	pthread_mutex_unlock(&r->sb_lock);
	sb->role = ff_cpu_to_le32(FF_ROLE_SPARE); /* a spare until the copy is done */
	ff_uuid_generate(sb->member_uuid);
	rc = ff_sb_write(&m, sb);
	if (rc < 0) {
		ff_err_set(err, "%s: cannot write its superblock: %s", path, strerror(-rc));
		ff_member_close(&m);
		free(sb);
		return rc;
	}
	if (!r->rb) {
		r->rb = calloc(1, sizeof(*r->rb));
		if (!r->rb) {
			ff_member_close(&m);
			free(sb);
			return -ENOMEM;
		}
		pthread_mutex_init(&r->rb->lock, NULL);
		pthread_cond_init(&r->rb->cond, NULL);
	}
	rb = r->rb;
	if (rb->thread) {
		pthread_join(rb->thread, NULL);
		rb->thread = 0;
	}
	memcpy(rb->replace_uuid, sb->member_uuid, 16);
	free(sb);
	atomic_fetch_add(&r->role_epoch[r->g.nmembers], 1);
	r->shadow = m;
	rc = rings_update(r, r->g.nmembers, m.fd);
	if (rc < 0) {
		shadow_detach(r);
		r->shadow.fd = -1;
		ff_sb_erase(&m);
		ff_member_close(&m);
		ff_err_set(err, "%s: cannot hand it to the engine: %s", path, strerror(-rc));
		return rc;
	}
	/* from here every write to the role also reaches the new member */
	atomic_store(&r->shadow_role, (int)role);
	rb->replace = true;
	rb->filter = false;
	rb->units_done = 0;
	rb->replace_role = role;
	rb->targets = 1u << role;
	rb->phase = PH_META;
	rb->pos = 0;
	rb->progress_total = ff_rebuild_meta_rows(r) * FF_META_CHUNK + r->g.nstripes * r->g.chunk_bytes;
	rb->progress_bytes = 0;
	rb->bytes_done = 0;
	rb->err = 0;
	rb->stop = false;
	rb->start_ns = ff_mono_ns();
	ff_rebuild_rate_reset(r, rb);
	rb->running = true;
	ff_log(FF_LOG_INFO, "replacing %s (role %u) with %s", r->mem[role].path, role, path);
	ff_raid_event_member(r, FF_EVENT_REBUILD_STARTED, (int)role, &r->shadow, "replacing %s",
			     r->mem[role].path);
	rc = -pthread_create(&rb->thread, NULL, ff_rebuild_main, r);
	if (rc < 0) {
		rb->running = false;
		ff_replace_abandon(r, rb);
	}
	return rc;
}

int ff_raid_replacing(const struct ff_raid *r)
{
	return atomic_load(&r->shadow_role);
}
