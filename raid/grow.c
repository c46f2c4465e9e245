/* SPDX-License-Identifier: MIT */
/*
 * Growing an array (raid.h, "growing"): members added to a closed array,
 * the row hook that says which rows are still in the old geometry, and the
 * end of a grow.
 *
 * A grow writes superblocks only.  The added members' go first, then the
 * old members', then the spares'; each new superblock has the event count
 * one past the old ones and names the old geometry, so a stop at any
 * point leaves either the old array (no grown superblock anywhere: the new
 * members were not written, or were written with a superblock no old
 * member names) or the grown one with some old members one event behind,
 * which assembly takes as current (assemble.c, missed_the_grow).  Nothing
 * else on an old member changes: every row stays where it is, in the old
 * geometry, until the filesystem moves what lives in it.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "raid/raid_i.h"

/* What ff_raid_grow checks on the assembled array before it writes. */
static int grow_check_array(struct ff_raid *r, unsigned nadd, struct ff_err *err)
{
	if (raid_grown(r)) {
		ff_err_set(err, "the array is still growing from %u to %u members: mount it and let "
			   "the restripe finish before growing it again", r->g_old.nmembers,
			   r->g.nmembers);
		return -EBUSY;
	}
	if (ff_raid_failed_count(r) || atomic_load(&r->rebuild_mask)) {
		ff_err_set(err, "%u of %u members are missing, failed or being rebuilt: a grow needs "
			   "every member healthy (mount it, let the rebuild finish, then grow)",
			   ff_raid_failed_count(r) + (unsigned)__builtin_popcount(
				   atomic_load(&r->rebuild_mask)), r->g.nmembers);
		return -EIO;
	}
	if (r->g.nmembers + nadd > FF_MEMBERS_MAX) {
		ff_err_set(err, "%u members and %u more make %u: at most %u are supported",
			   r->g.nmembers, nadd, r->g.nmembers + nadd, FF_MEMBERS_MAX);
		return -EINVAL;
	}
	return 0;
}

/* The same member given twice among the added ones (before any is locked:
 * the second lock would fail first, and say less). */
static int grow_check_twice(const char *const *add, unsigned nadd, struct ff_err *err)
{
	struct ff_member a, b;
	int rc = 0;

	for (unsigned i = 0; i < nadd && rc == 0; i++) {
		if (ff_member_open(&a, add[i], true, err) < 0)
			return -ENOENT;
		for (unsigned j = i + 1; j < nadd && rc == 0; j++) {
			if (ff_member_open(&b, add[j], true, err) < 0) {
				rc = -ENOENT;
				break;
			}
			if (ff_member_same(&a, &b)) {
				ff_err_set(err, "%s and %s are the same member (given twice)", add[i],
					   add[j]);
				rc = -EINVAL;
			}
			ff_member_close(&b);
		}
		ff_member_close(&a);
	}
	return rc;
}

/* The added members, opened and checked by the assembled array. */
static int grow_check_added(struct ff_raid *r, const char *const *add, unsigned nadd, bool force,
			    struct ff_member *nm, struct ff_err *err)
{
	int rc = grow_check_twice(add, nadd, err);

	for (unsigned i = 0; i < nadd && rc == 0; i++) {
		rc = ff_raid_new_member_check(r, add[i], force, &nm[i], err);
		if (rc < 0)
			ff_raid_close_members(nm, i);
	}
	return rc;
}

/* Zero the head area after the superblock (write-intent and degraded
 * bitmaps) on an added member: what a used drive held there is no record. */
static int clear_head(struct ff_member *m)
{
	size_t len = FF_MEMBER_RESERVED - FF_MEMBER_SB_BYTES;
	void *z = ff_alloc_aligned(len);
	int rc;

	if (!z)
		return -ENOMEM;
	memset(z, 0, len);
	rc = ff_member_pwrite(m, z, len, FF_MEMBER_SB_BYTES);
	free(z);
	return rc;
}

/* The grown superblock from the array's, for a role (or a spare). */
static void grown_sb(struct ff_member_sb *sb, uint32_t role, const uint8_t *uuid)
{
	sb->role = ff_cpu_to_le32(role);
	memcpy(sb->member_uuid, uuid, 16);
}

static int grow(const char *const *paths, unsigned n, const char *const *add, unsigned nadd,
		bool force, bool write, struct ff_err *err)
{
	struct ff_member *nm = calloc(FF_MEMBERS_MAX, sizeof(*nm));
	struct ff_member *om = calloc(FF_MEMBERS_MAX, sizeof(*om));
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_member_sb *cur = ff_alloc_aligned(sizeof(*cur));
	/* read-only: a refusal leaves every member as it was */
	struct ff_raid_opts o = { .read_only = true };
	struct ff_raid *r = NULL;
	unsigned n_old = 0, added = 0;
	uint64_t events;
	int rc;

	if (!nm || !om || !sb || !cur) {
		rc = -ENOMEM;
		goto out;
	}
	if (nadd == 0) {
		ff_err_set(err, "no member to add given");
		rc = -EINVAL;
		goto out;
	}
	rc = ff_raid_assemble(paths, n, &o, &r, err);
	if (rc < 0)
		goto out;
	rc = grow_check_array(r, nadd, err);
	if (rc == 0)
		rc = grow_check_added(r, add, nadd, force, nm, err);
	if (rc < 0) {
		ff_raid_close(r);
		goto out;
	}
	added = nadd;
	n_old = r->g.nmembers;
	memcpy(sb, r->sb, sizeof(*sb));
	ff_raid_close(r); /* read-only: writes nothing */
	if (!write)
		goto out;
	/* every check passed: from here on, writes (the old members reopened).
	 * The array state stays as it was: after an unclean stop the grown
	 * array resyncs the regions the old members' write-intent records
	 * name, in each row's geometry (intent.c). */
	rc = ff_raid_open_members(paths, n, false, NULL, om, err);
	if (rc < 0)
		goto out;
	events = 0;
	for (unsigned i = 0; i < n; i++)
		if (ff_sb_read(&om[i], cur) == 0 && memcmp(cur->array_uuid, sb->array_uuid, 16) == 0 &&
		    ff_le64(cur->events) > events) {
			events = ff_le64(cur->events);
			memcpy(sb, cur, sizeof(*sb));
		}
	sb->version = ff_cpu_to_le32(FF_MEMBER_SB_VERSION_GROWN);
	sb->old_level = sb->level;
	sb->old_nmembers = sb->nmembers;
	if (!sb->meta_members) /* the META space stays where it was made */
		sb->meta_members = sb->nmembers;
	sb->nmembers = ff_cpu_to_le32(n_old + nadd);
	sb->events = ff_cpu_to_le64(events + 1);
	sb->utime_s = ff_cpu_to_le64((uint64_t)time(NULL));
	for (unsigned i = 0; i < nadd; i++) {
		struct ff_sb_role *ro = &sb->roles[n_old + i];

		memset(ro, 0, sizeof(*ro));
		ff_uuid_generate(ro->member_uuid);
		ro->state = ff_cpu_to_le32(FF_MEMBER_ACTIVE);
		memset(&sb->health[n_old + i], 0, sizeof(sb->health[0]));
	}
	/* the added members first: until an old member carries the grown
	 * superblock, nothing names them */
	for (unsigned i = 0; i < nadd && rc == 0; i++) {
		grown_sb(sb, n_old + i, sb->roles[n_old + i].member_uuid);
		rc = clear_head(&nm[i]);
		if (rc == 0)
			rc = ff_sb_write(&nm[i], sb);
		if (rc < 0)
			ff_err_set(err, "%s: cannot write its member superblock: %s", add[i],
				   strerror(-rc));
	}
	for (unsigned i = 0; i < n && rc == 0; i++) {
		if (ff_sb_read(&om[i], cur) < 0 || memcmp(cur->array_uuid, sb->array_uuid, 16) != 0)
			continue;
		grown_sb(sb, ff_le32(cur->role), cur->member_uuid);
		rc = ff_sb_write(&om[i], sb);
		if (rc < 0)
			ff_err_set(err, "%s: cannot write its member superblock: %s (the grow is "
				   "half written: assembling the array finishes it)", paths[i],
				   strerror(-rc));
	}
	if (rc == 0)
		ff_log(FF_LOG_INFO, "array grown from %u to %u members; its rows stay in the old "
		       "geometry until the filesystem moves their data", n_old, n_old + nadd);
	ff_raid_close_members(om, n);
out:
	ff_raid_close_members(nm, added);
	free(nm);
	free(om);
	free(sb);
	free(cur);
	return rc;
}

int ff_raid_set_row_geom(struct ff_raid *r, bool (*row_old)(void *arg, uint64_t row), void *arg)
{
	r->row_old_arg = arg;
	r->row_old = row_old;
	return ff_raid_intent_resync_waiting(r);
}

int ff_raid_grow_finish(struct ff_raid *r)
{
	int rc;

	if (!raid_grown(r))
		return 0;
	pthread_mutex_lock(&r->sb_lock);
	r->sb->old_level = 0;
	r->sb->old_nmembers = 0;
	if (r->g.meta_members == r->g.nmembers) {
		r->sb->meta_members = 0;
		r->sb->version = ff_cpu_to_le32(FF_MEMBER_SB_VERSION);
	}
	/* no request of the old geometry is in flight: the caller moved every row */
	r->g_old.nmembers = 0;
	rc = ff_raid_sb_write_locked(r, FF_ARRAY_DIRTY);
	pthread_mutex_unlock(&r->sb_lock);
	if (rc == 0)
		ff_log(FF_LOG_INFO, "grow finished: every row is laid over %u members", r->g.nmembers);
	return rc;
}

int ff_raid_grow(const char *const *paths, unsigned n, const char *const *add, unsigned nadd,
		 bool force, struct ff_err *err)
{
	return grow(paths, n, add, nadd, force, true, err);
}

int ff_raid_grow_check(const char *const *paths, unsigned n, const char *const *add,
		       unsigned nadd, bool force, struct ff_err *err)
{
	return grow(paths, n, add, nadd, force, false, err);
}

int ff_raid_grow_written(const char *const *paths, unsigned n, const char *added)
{
	struct ff_member_sb *a = ff_alloc_aligned(sizeof(*a)), *b = ff_alloc_aligned(sizeof(*b));
	struct ff_member m;
	struct ff_err err = { "" };
	int rc = -ENOMEM, found = 0;

	if (!a || !b)
		goto out;
	rc = ff_member_open(&m, added, true, &err);
	if (rc < 0)
		goto out;
	rc = ff_sb_read(&m, a);
	ff_member_close(&m);
	if (rc < 0) { /* no superblock there: the grow did not write it */
		rc = 0;
		goto out;
	}
	for (unsigned i = 0; i < n && !found; i++) {
		if (ff_member_open(&m, paths[i], true, &err) < 0)
			continue;
		/* the same array, which is wider than the members given, and
		 * `added` holds a role of it: the grow wrote it (finished or not) */
		found = ff_sb_read(&m, b) == 0 && memcmp(a->array_uuid, b->array_uuid, 16) == 0 &&
			ff_le32(b->nmembers) > n && ff_le32(a->role) != FF_ROLE_SPARE &&
			ff_le32(a->role) < ff_le32(b->nmembers);
		ff_member_close(&m);
	}
	rc = found;
out:
	free(a);
	free(b);
	return rc;
}
