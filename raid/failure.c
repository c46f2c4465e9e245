/* SPDX-License-Identifier: MIT */
/*
 * Member failure: a role whose member stops being read or written, why,
 * and what status says about each role.
 *
 * Three things fail a role: an engine thread whose request to the member
 * failed or timed out (ff_raid_member_failed, from health.c and worker.c),
 * the administrator (ff_raid_fail_member), and the presence check, which
 * finds a member that vanished (ff_raid_check_presence, run by the
 * superblock thread about once a second).  The failure is recorded at once
 * (state, masks, reason, event) and nothing is written to a member: the
 * superblock thread persists it (sb_update.c: ff_raid_sb_write_soon_locked).
 * Only ff_raid_fail_member writes the superblocks itself, and waits for
 * them.
 *
 * Calls: worker.c, health.c and members.c call in; from here calls go to
 * health.c (the failed role's record), event.c, roster.c (member info),
 * io/ (the presence check) and sb_update.c (the superblocks written).
 * health.c and this file call each other: health.c fails a role here, and
 * failing a role records when in health.c (the reason stays here).
 */
#include <stdlib.h>
#include <string.h>

#include "raid/raid_i.h"

/* The role stops being read or written; true when this call failed it. */
static bool mark_failed(struct ff_raid *r, unsigned role, const char *cause)
{
	uint8_t expected = FF_MEMBER_ACTIVE;
	char ident[160];

	if (!atomic_compare_exchange_strong(&r->state[role], &expected, FF_MEMBER_FAILED)) {
		expected = FF_MEMBER_REBUILDING; /* the new member died during its rebuild */
		if (!atomic_compare_exchange_strong(&r->state[role], &expected, FF_MEMBER_FAILED))
			return false;
	}
	atomic_fetch_or(&r->dead_mask, 1u << role);
	atomic_fetch_and(&r->rebuild_mask, ~(1u << role));
	atomic_fetch_and(&r->meta_stale_mask, ~(1u << role));
	ff_log(FF_LOG_ERR, "member %s (role %u, %s) failed: %s; array continues %s", r->mem[role].path,
	       role, ff_member_describe(&r->mem[role], ident, sizeof(ident)), cause,
	       ff_raid_failed_count(r) <= r->g.nparity ? "degraded" : "WITHOUT REDUNDANCY: I/O fails");
	return true;
}

/* Caller holds sb_lock, and failed the role: status says why, the
 * superblock thread persists it. */
static void failed_locked(struct ff_raid *r, unsigned role, const char *cause)
{
	snprintf(r->fail_reason[role], sizeof(r->fail_reason[role]), "%s", cause);
	ff_raid_health_failed_locked(r, role);
	ff_raid_sb_write_soon_locked(r);
}

/* cause, or, when the role's block device is gone, the presence check's
 * answer before it.  A pulled NVMe drive's writes fail with ENOSPC (the
 * kernel set the deleted disk's capacity to 0) and its reads end at once:
 * status must say "vanished: the device was removed", not "No space left".
 * Run only on the way to failing a role that is up, so once per failure,
 * and only for block devices: their check is sysfs, an ioctl and a stat of
 * the node, none of which waits for the device, while a file member's
 * stat could wait for a hung filesystem and this runs on an engine thread.
 * The member is read without sb_lock, as mark_failed reads it. */
static void failure_cause(struct ff_raid *r, unsigned role, const char *cause, char *out,
			  size_t len)
{
	uint8_t st = atomic_load(&r->state[role]);
	char why[FF_RAID_REASON_MAX];

	snprintf(out, len, "%s", cause);
	if ((st != FF_MEMBER_ACTIVE && st != FF_MEMBER_REBUILDING) || r->mem[role].fd < 0 ||
	    !r->mem[role].is_bdev || strncmp(cause, "vanished:", 9) == 0)
		return;
	if (ff_member_presence(&r->mem[role], why, sizeof(why)) == FF_MEMBER_VANISHED) {
		size_t n = strlen(why);

		FF_ASSERT(len == sizeof(why)); /* why fits; the I/O error is cut if need be */
		memcpy(out, why, n + 1);
		snprintf(out + n, len - n, "; %s", cause);
	}
}

/* Called from engine threads: record the failure at once, persist later. */
void ff_raid_member_failed(struct ff_raid *r, unsigned role, const char *io_cause)
{
	char cause[FF_RAID_REASON_MAX];
	unsigned nfailed;

	failure_cause(r, role, io_cause, cause, sizeof(cause));
	if (!mark_failed(r, role, cause))
		return;
	nfailed = ff_raid_failed_count(r);
	pthread_mutex_lock(&r->sb_lock);
	failed_locked(r, role, cause);
	/* under sb_lock: a replace cannot swap the member's path meanwhile */
	ff_raid_event(r, FF_EVENT_MEMBER_FAILED, (int)role, "%s", cause);
	ff_raid_event(r, FF_EVENT_DEGRADED, -1, "%u of %u members failed; %s", nfailed, r->g.nmembers,
		      nfailed <= r->g.nparity ? "the array continues degraded"
					      : "WITHOUT REDUNDANCY: I/O fails");
	pthread_mutex_unlock(&r->sb_lock);
}

void ff_raid_role_reset_info(struct ff_raid *r, unsigned role)
{
	r->fail_reason[role][0] = '\0';
	r->note[role][0] = '\0';
	r->left_out[role].path[0] = '\0';
	r->left_out[role].events = 0;
	r->left_out[role].stale = false;
	r->left_out[role].marked_failed = false;
	r->vanishing[role] = 0;
	ff_raid_health_reset_locked(r, role);
}

void ff_raid_member_info(struct ff_raid *r, unsigned role, struct ff_raid_member_info *out)
{
	memset(out, 0, sizeof(*out));
	if (role >= r->g.nmembers)
		return;
	pthread_mutex_lock(&r->sb_lock);
	out->state = (enum ff_member_state)atomic_load(&r->state[role]);
	/* a role failed before this mount shows as missing, with why it failed */
	if (out->state == FF_MEMBER_FAILED || (out->state == FF_MEMBER_MISSING && r->health[role].failed_s))
		snprintf(out->reason, sizeof(out->reason), "%s", r->fail_reason[role]);
	out->read_errors = atomic_load(&r->health[role].read_errors);
	out->write_errors = atomic_load(&r->health[role].write_errors);
	out->cksum_errors = atomic_load(&r->health[role].cksum_errors);
	out->healed = atomic_load(&r->health[role].healed);
	out->failed_s = r->health[role].failed_s;
	if (out->state == FF_MEMBER_ACTIVE || out->state == FF_MEMBER_REBUILDING)
		snprintf(out->note, sizeof(out->note), "%s", r->note[role]);
	if (out->state == FF_MEMBER_MISSING && r->mem[role].fd < 0 && r->left_out[role].path[0]) {
		snprintf(out->left_path, sizeof(out->left_path), "%s", r->left_out[role].path);
		out->left_stale = r->left_out[role].stale;
		out->left_failed = r->left_out[role].marked_failed;
		out->left_events = r->left_out[role].events;
	}
	ff_raid_roster_info_locked(r, role, out);
	pthread_mutex_unlock(&r->sb_lock);
}

/* ---- presence: members that vanish ------------------------------------------ */

/* A role's member, checked on a copy taken under sb_lock (the check itself
 * runs without it: a stat may block).  True when it failed the role. */
static bool presence_role(struct ff_raid *r, unsigned role, struct ff_member *m)
{
	uint8_t st = atomic_load(&r->state[role]);
	char why[FF_RAID_REASON_MAX];
	enum ff_member_presence p;
	uint32_t epoch;
	bool failed = false;

	if (st != FF_MEMBER_ACTIVE && st != FF_MEMBER_REBUILDING)
		return false;
	pthread_mutex_lock(&r->sb_lock);
	epoch = atomic_load(&r->role_epoch[role]);
	*m = r->mem[role];
	pthread_mutex_unlock(&r->sb_lock);
	if (m->fd < 0)
		return false;
	p = ff_member_presence(m, why, sizeof(why));
	pthread_mutex_lock(&r->sb_lock);
	if (atomic_load(&r->role_epoch[role]) != epoch) { /* another member took the role */
		pthread_mutex_unlock(&r->sb_lock);
		return false;
	}
	if (p == FF_MEMBER_VANISHING && r->vanishing[role]++ == 0)
		ff_log(FF_LOG_WARN, "member %s (role %u): %s; failed if the next check still finds "
		       "it so", m->path, role, why);
	else if (p != FF_MEMBER_VANISHING)
		r->vanishing[role] = 0;
	if (p == FF_MEMBER_VANISHED || (p == FF_MEMBER_VANISHING && r->vanishing[role] >= 2)) {
		failed = mark_failed(r, role, why);
		if (failed)
			failed_locked(r, role, why);
	} else if (p == FF_MEMBER_MOVED && strcmp(r->note[role], why) != 0) {
		snprintf(r->note[role], sizeof(r->note[role]), "%s", why);
		ff_log(FF_LOG_WARN, "member %s (role %u): %s", m->path, role, why);
	} else if (p == FF_MEMBER_PRESENT && r->note[role][0]) {
		r->note[role][0] = '\0';
		ff_log(FF_LOG_INFO, "member %s (role %u) is back at its path", m->path, role);
	}
	pthread_mutex_unlock(&r->sb_lock);
	return failed;
}

/* The replacement of a role being copied: if it vanishes the replace stops
 * (as when it returns an I/O error, stripe.c), the role is intact. */
static void presence_shadow(struct ff_raid *r, struct ff_member *m)
{
	char why[FF_RAID_REASON_MAX];
	uint32_t epoch;
	int role;

	pthread_mutex_lock(&r->sb_lock);
	role = atomic_load(&r->shadow_role);
	epoch = atomic_load(&r->role_epoch[r->g.nmembers]);
	*m = r->shadow;
	pthread_mutex_unlock(&r->sb_lock);
	if (role < 0 || m->fd < 0)
		return;
	if (ff_member_presence(m, why, sizeof(why)) != FF_MEMBER_VANISHED)
		return;
	pthread_mutex_lock(&r->sb_lock);
	if (atomic_load(&r->role_epoch[r->g.nmembers]) == epoch &&
	    atomic_load(&r->shadow_role) == role) {
		ff_log(FF_LOG_ERR, "replacement member %s (for role %d) %s; replace abandoned", m->path,
		       role, why);
		atomic_store(&r->shadow_role, -1);
	}
	pthread_mutex_unlock(&r->sb_lock);
}

/* Hot spares: one that vanished is dropped, before it takes over a role. */
static void presence_spares(struct ff_raid *r, struct ff_member *m)
{
	char why[FF_RAID_REASON_MAX];

	for (unsigned i = 0;; i++) {
		pthread_mutex_lock(&r->spare_lock);
		if (i >= r->nspares) {
			pthread_mutex_unlock(&r->spare_lock);
			return;
		}
		*m = r->spare[i];
		pthread_mutex_unlock(&r->spare_lock);
		if (ff_member_presence(m, why, sizeof(why)) != FF_MEMBER_VANISHED)
			continue;
		pthread_mutex_lock(&r->spare_lock);
		for (unsigned k = 0; k < r->nspares; k++) {
			if (r->spare[k].fd != m->fd || !ff_member_same(&r->spare[k], m))
				continue;
			ff_log(FF_LOG_WARN, "hot spare %s %s; dropped from the spares", m->path, why);
			*m = r->spare[k];
			r->spare[k] = r->spare[--r->nspares];
			pthread_mutex_unlock(&r->spare_lock);
			ff_member_close(m);
			i = k - 1; /* the one moved into place k is checked next */
			goto next;
		}
		pthread_mutex_unlock(&r->spare_lock);
next:;
	}
}

unsigned ff_raid_check_presence(struct ff_raid *r)
{
	struct ff_member *m = malloc(sizeof(*m));
	unsigned failed = 0;

	if (!m)
		return 0;
	for (unsigned role = 0; role < r->g.nmembers; role++)
		failed += presence_role(r, role, m);
	presence_shadow(r, m);
	presence_spares(r, m);
	free(m);
	return failed;
}

int ff_raid_fail_member(struct ff_raid *r, unsigned role, const char *cause)
{
	if (role >= r->g.nmembers)
		return -EINVAL;
	ff_raid_member_failed(r, role, cause);
	return ff_raid_sb_write_all(r, FF_ARRAY_DIRTY);
}
