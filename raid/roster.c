/* SPDX-License-Identifier: MIT */
/*
 * The roster (raid/sb.h): which member held each role, by path and NVMe
 * identity, so that a missing member can be named by what it was — the
 * superblock of a drive that died or was pulled is gone with it, and the
 * role records in the others' superblocks carry only its uuid.
 *
 * mkfs writes the first one.  Assembly reads both copies on every member
 * it adopts and keeps the newest valid one (r->roster).  Whenever the
 * superblocks are written (assembly, a member taking a role, a failure,
 * unmount), the entries of the roles whose member is open are brought up
 * to date; the roster goes to every live member only when an entry
 * changed, or once per mount to stamp when each member was last seen.
 * It is information, not state: a member that cannot take it is logged
 * and nothing else, and nothing reads it to decide anything.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "raid/raid_i.h"
#include "raid/sb.h"

static bool roster_valid(const struct ff_roster *ro, const uint8_t array_uuid[16])
{
	return ff_le64(ro->magic) == FF_ROSTER_MAGIC && ff_le32(ro->bytes) == FF_ROSTER_BYTES &&
	       ff_le32(ro->nroles) <= FF_MEMBERS_MAX && memcmp(ro->array_uuid, array_uuid, 16) == 0 &&
	       ff_csum_verify(ro, sizeof(*ro), offsetof(struct ff_roster, crc)) == 0;
}

void ff_roster_init(struct ff_roster *ro, const uint8_t array_uuid[16], unsigned nroles)
{
	memset(ro, 0, sizeof(*ro));
	ro->magic = ff_cpu_to_le64(FF_ROSTER_MAGIC);
	ro->bytes = ff_cpu_to_le32(FF_ROSTER_BYTES);
	ro->nroles = ff_cpu_to_le32(nroles);
	memcpy(ro->array_uuid, array_uuid, 16);
}

int ff_roster_read(struct ff_member *m, uint64_t geom_member_bytes, const uint8_t array_uuid[16],
		   struct ff_roster *best)
{
	struct ff_roster *tmp = ff_alloc_aligned(sizeof(*tmp));
	int found = 0;

	if (!tmp)
		return -ENOMEM;
	for (unsigned copy = 0; copy < 2; copy++) {
		if (ff_member_pread(m, tmp, sizeof(*tmp), ff_roster_offset(copy, geom_member_bytes)) < 0 ||
		    !roster_valid(tmp, array_uuid))
			continue;
		found = 1;
		if (!roster_valid(best, array_uuid) ||
		    ff_le64(tmp->generation) > ff_le64(best->generation))
			memcpy(best, tmp, sizeof(*tmp));
	}
	free(tmp);
	return found;
}

int ff_roster_write(struct ff_member *m, struct ff_roster *ro, uint64_t geom_member_bytes)
{
	unsigned copy = (unsigned)(ff_le64(ro->generation) & 1);

	ff_csum_set(ro, sizeof(*ro), offsetof(struct ff_roster, crc));
	return ff_member_pwrite(m, ro, sizeof(*ro), ff_roster_offset(copy, geom_member_bytes));
}

void ff_roster_entry_fill(struct ff_roster_entry *e, const struct ff_member *m,
			  const uint8_t member_uuid[16], uint64_t seen_s)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->member_uuid, member_uuid, 16);
	e->seen_s = ff_cpu_to_le64(seen_s);
	e->size_bytes = ff_cpu_to_le64(m->size_bytes);
	snprintf(e->kind, sizeof(e->kind), "%s", m->nvme.is_nvme ? "nvme" : m->is_bdev ? "bdev" : "file");
	if (m->nvme.is_nvme) {
		snprintf(e->model, sizeof(e->model), "%s", m->nvme.model);
		snprintf(e->serial, sizeof(e->serial), "%s", m->nvme.serial);
		snprintf(e->firmware, sizeof(e->firmware), "%s", m->nvme.firmware);
	}
	snprintf(e->path, sizeof(e->path), "%.*s", (int)sizeof(e->path) - 1,
		 m->abs_path[0] ? m->abs_path : m->path);
}

/* Whether two entries name different members (when they were seen aside). */
static bool entry_differs(const struct ff_roster_entry *a, const struct ff_roster_entry *b)
{
	return memcmp(a, b, offsetof(struct ff_roster_entry, seen_s)) != 0 ||
	       memcmp(&a->size_bytes, &b->size_bytes,
		      sizeof(*a) - offsetof(struct ff_roster_entry, size_bytes)) != 0;
}

_Static_assert(offsetof(struct ff_roster_entry, seen_s) == 16 &&
	       offsetof(struct ff_roster_entry, size_bytes) == 24, "entry_differs skips seen_s only");

/* Assembly: the newest roster on the adopted members, or a new empty one. */
void ff_raid_roster_load(struct ff_raid *r)
{
	uint64_t mb = ff_le64(r->sb->member_bytes);
	int rc;

	r->roster = ff_alloc_aligned(sizeof(*r->roster));
	if (!r->roster)
		return; /* status then names no missing member; nothing else needs it */
	memset(r->roster, 0, sizeof(*r->roster));
	for (unsigned i = 0; i < r->g.nmembers; i++)
		if (r->mem[i].fd >= 0 && (rc = ff_roster_read(&r->mem[i], mb, r->uuid, r->roster)) < 0)
			ff_log(FF_LOG_DEBUG, "%s: cannot read the roster: %s", r->mem[i].path,
			       strerror(-rc));
	if (!roster_valid(r->roster, r->uuid))
		ff_roster_init(r->roster, r->uuid, r->g.nmembers);
}

/* Caller holds sb_lock: the entries of the roles whose member is open, and
 * the roster to every one of them when that changed anything. */
void ff_raid_roster_sync_locked(struct ff_raid *r)
{
	uint64_t now = (uint64_t)time(NULL), mb = ff_le64(r->sb->member_bytes);
	struct ff_roster_entry e;
	bool changed = !r->roster_stamped;

	if (!r->roster || r->read_only)
		return;
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		uint8_t st = atomic_load(&r->state[i]);

		if ((st != FF_MEMBER_ACTIVE && st != FF_MEMBER_REBUILDING) || r->mem[i].fd < 0)
			continue;
		ff_roster_entry_fill(&e, &r->mem[i], r->sb->roles[i].member_uuid, now);
		if (!r->roster_stamped || entry_differs(&r->roster->role[i], &e)) {
			r->roster->role[i] = e;
			changed = true;
		}
	}
	if (!changed)
		return;
	r->roster_stamped = true;
	r->roster->generation = ff_cpu_to_le64(ff_le64(r->roster->generation) + 1);
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		uint8_t st = atomic_load(&r->state[i]);
		int rc;

		if ((st != FF_MEMBER_ACTIVE && st != FF_MEMBER_REBUILDING) || r->mem[i].fd < 0)
			continue;
		rc = ff_roster_write(&r->mem[i], r->roster, mb);
		if (rc < 0)
			ff_log(FF_LOG_WARN, "%s: cannot write the roster (who held each role): %s",
			       r->mem[i].path, strerror(-rc));
	}
}

/* Caller holds sb_lock: what the roster knows of the member that last held
 * role, when that is the member the superblocks name for it. */
void ff_raid_roster_info_locked(struct ff_raid *r, unsigned role, struct ff_raid_member_info *out)
{
	const struct ff_roster_entry *e;

	if (!r->roster || role >= FF_MEMBERS_MAX)
		return;
	e = &r->roster->role[role];
	if (!ff_le64(e->seen_s) || memcmp(e->member_uuid, r->sb->roles[role].member_uuid, 16) != 0)
		return;
	out->last_known = true;
	out->last_seen_s = ff_le64(e->seen_s);
	out->last_size_bytes = ff_le64(e->size_bytes);
	snprintf(out->last_kind, sizeof(out->last_kind), "%.*s", (int)sizeof(e->kind) - 1, e->kind);
	snprintf(out->last_model, sizeof(out->last_model), "%.*s", (int)sizeof(e->model) - 1, e->model);
	snprintf(out->last_serial, sizeof(out->last_serial), "%.*s", (int)sizeof(e->serial) - 1, e->serial);
	snprintf(out->last_firmware, sizeof(out->last_firmware), "%.*s", (int)sizeof(e->firmware) - 1,
		 e->firmware);
	snprintf(out->last_path, sizeof(out->last_path), "%.*s", (int)sizeof(e->path) - 1, e->path);
}
