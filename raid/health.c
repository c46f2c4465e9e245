/* SPDX-License-Identifier: MIT */
/*
 * Per-member health: read, write and checksum errors, ranges healed, and
 * when and why a member was failed — what zpool status shows per drive.
 *
 * A read that fails with a medium error (EIO, or ENODATA: the block
 * layer's BLK_STS_MEDIUM) does not fail the member, as md and xiRAID do
 * not: the stripe op reads around it (stripe.c: op->heal joins the slots
 * it treats as unavailable, the same re-plan as a slow member's hedge),
 * recovers the range from the others and parity, serves it and writes it
 * back to that member, where the drive remaps the bad sectors.  More than
 * read_errors_max such errors within FF_RAID_READ_ERROR_WINDOW_S fail it
 * (raid.h says why 20).  Any other read error (the device gone, a
 * transport error), a timeout, a write error and a flush error fail it at
 * once.  The same holds for the reads of writes (read-modify-write,
 * reconstruct-write: the range goes out with the stripe) and of a rebuild.
 * A META read error is read from the next copy and counted, not rewritten:
 * META reads take no lock that would keep a concurrent write of the chunk
 * from being undone by the older copy (the scrub repairs copies that
 * differ).  A read-only array serves the range and rewrites nothing.
 *
 * The counts live in atomics on the data path and reach the member
 * superblocks (struct ff_sb_health) by the superblock thread, which sees
 * health_dirty within a second: an engine thread never waits for sb_lock
 * (held while superblocks are written) to count an error.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "raid/raid_i.h"

void ff_raid_health_init(struct ff_raid *r)
{
	unsigned max = r->opts.max_read_errors;

	pthread_mutex_init(&r->health_lock, NULL);
	r->read_errors_max = max == 0 ? FF_RAID_MAX_READ_ERRORS : max == FF_RAID_READ_ERRORS_NONE ? 0 : max;
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		const struct ff_sb_health *h = &r->sb->health[i];

		atomic_store(&r->health[i].read_errors, ff_le32(h->read_errors));
		atomic_store(&r->health[i].write_errors, ff_le32(h->write_errors));
		atomic_store(&r->health[i].cksum_errors, ff_le32(h->cksum_errors));
		atomic_store(&r->health[i].healed, ff_le32(h->healed));
		r->health[i].failed_s = ff_le64(h->failed_s);
		if (r->health[i].failed_s) /* why the array marks the role failed */
			snprintf(r->fail_reason[i], sizeof(r->fail_reason[i]), "%.*s",
				 (int)sizeof(h->fail_reason), h->fail_reason);
	}
}

static bool medium_error(int err)
{
	return err == -EIO || err == -ENODATA;
}

/* One more read error in role's window; true when it passes the threshold. */
static bool read_errors_over(struct ff_raid *r, unsigned role, unsigned *n)
{
	struct raid_health *h = &r->health[role];
	uint64_t now = ff_mono_ns(), window = FF_RAID_READ_ERROR_WINDOW_S * 1000000000ull;

	pthread_mutex_lock(&r->health_lock);
	if (h->window_errors == 0 || now - h->window_start_ns >= window) {
		h->window_start_ns = now;
		h->window_errors = 0;
	}
	*n = ++h->window_errors;
	pthread_mutex_unlock(&r->health_lock);
	return *n > r->read_errors_max;
}

bool ff_raid_member_error(struct ff_raid *r, unsigned role, unsigned io_op, int err)
{
	char cause[FF_RAID_REASON_MAX];
	unsigned n;

	FF_ASSERT(role < r->g.nmembers && err < 0);
	if (err == -ECANCELED) { /* cancelled by us at the member timeout, which failed it */
		ff_raid_member_failed(r, role, "request cancelled");
		return false;
	}
	atomic_store(&r->health_dirty, true);
	if (io_op == FF_IO_READ) {
		atomic_fetch_add(&r->health[role].read_errors, 1);
		if (!medium_error(err))
			snprintf(cause, sizeof(cause), "read error: %s", strerror(-err));
		else if (!read_errors_over(r, role, &n))
			return true;
		else
			snprintf(cause, sizeof(cause), "%u read errors within %u s (more than %u)", n,
				 FF_RAID_READ_ERROR_WINDOW_S, r->read_errors_max);
	} else if (io_op == FF_IO_WRITE) {
		atomic_fetch_add(&r->health[role].write_errors, 1);
		snprintf(cause, sizeof(cause), "write error: %s", strerror(-err));
	} else {
		snprintf(cause, sizeof(cause), "flush error: %s", strerror(-err));
	}
	ff_raid_member_failed(r, role, cause);
	return false;
}

void ff_raid_healed(struct ff_raid *r, unsigned role)
{
	atomic_fetch_add(&r->health[role].healed, 1);
	atomic_store(&r->health_dirty, true);
}

void ff_raid_note_cksum_errors(struct ff_raid *r, uint64_t stripe, uint32_t slots)
{
	uint8_t map[FF_MEMBERS_MAX];
	const struct ff_raid_level *lv;
	const struct ff_geom *g = raid_row_geom(r, stripe, &lv);

	FF_ASSERT(slots < (1ull << g->nmembers));
	lv->map(g->nmembers, stripe, map);
	for (unsigned s = 0; s < g->nmembers; s++)
		if (slots & (1u << s))
			atomic_fetch_add(&r->health[map[s]].cksum_errors, 1);
	if (slots)
		atomic_store(&r->health_dirty, true);
}

void ff_raid_health_failed_locked(struct ff_raid *r, unsigned role)
{
	r->health[role].failed_s = (uint64_t)time(NULL);
	atomic_store(&r->health_dirty, true);
}

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void ff_raid_health_to_sb_locked(struct ff_raid *r)
{
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		struct ff_sb_health *h = &r->sb->health[i];

		h->read_errors = ff_cpu_to_le32(sat32(atomic_load(&r->health[i].read_errors)));
		h->write_errors = ff_cpu_to_le32(sat32(atomic_load(&r->health[i].write_errors)));
		h->cksum_errors = ff_cpu_to_le32(sat32(atomic_load(&r->health[i].cksum_errors)));
		h->healed = ff_cpu_to_le32(sat32(atomic_load(&r->health[i].healed)));
		h->failed_s = ff_cpu_to_le64(r->health[i].failed_s);
		memset(h->fail_reason, 0, sizeof(h->fail_reason));
		if (r->health[i].failed_s)
			snprintf(h->fail_reason, sizeof(h->fail_reason), "%s", r->fail_reason[i]);
	}
}

void ff_raid_health_reset_locked(struct ff_raid *r, unsigned role)
{
	struct raid_health *h = &r->health[role];

	atomic_store(&h->read_errors, 0);
	atomic_store(&h->write_errors, 0);
	atomic_store(&h->cksum_errors, 0);
	atomic_store(&h->healed, 0);
	h->failed_s = 0;
	pthread_mutex_lock(&r->health_lock);
	h->window_errors = 0;
	pthread_mutex_unlock(&r->health_lock);
	atomic_store(&r->health_dirty, true);
}
