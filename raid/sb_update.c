/* SPDX-License-Identifier: MIT */
/*
 * The array's superblock update, and the superblock thread that runs it
 * off the data path.
 *
 * One member's superblock (its layout, its two copies read, written and
 * erased) is raid/sb.c, which knows nothing of an assembled array.  Here
 * the array writes its state to every member: ff_raid_sb_write_locked
 * bumps the event count, brings the role states, the health counts
 * (health.c) and the roster (roster.c) into the template r->sb, writes it
 * to each active or rebuilding member and lets the degraded bitmap note
 * the new count (degraded.c).
 *
 * The superblock thread writes it when asked (ff_raid_sb_write_soon_locked:
 * a failure, failure.c; rebuild progress, rebuild.c; a spare, members.c)
 * or when the health counts changed (health_dirty, health.c), and on its
 * timers clears quiet write-intent and degraded-bitmap regions (intent.c,
 * degraded.c), runs the presence check (failure.c) and hands hot spares to
 * failed roles (members.c).
 *
 * Calls: assemble.c, members.c, label.c, rebuild.c and failure.c call in,
 * with sb_lock held or taking it; from the write, calls go down to
 * health.c, roster.c and degraded.c under sb_lock.  The thread holds
 * sb_lock only around the write: it drops it to call out.
 */
#include <string.h>
#include <time.h>

#include "raid/raid_i.h"

#define INTENT_CLEAN_NS (5 * 1000000000ull)

/* Caller holds sb_lock. */
int ff_raid_sb_write_locked(struct ff_raid *r, uint32_t array_state)
{
	struct ff_member_sb *sb = r->sb;
	int first_err = 0;

	r->events++;
	sb->events = ff_cpu_to_le64(r->events);
	sb->utime_s = ff_cpu_to_le64((uint64_t)time(NULL));
	sb->array_state = ff_cpu_to_le32(array_state);
	ff_raid_health_to_sb_locked(r);
	ff_raid_roster_sync_locked(r); /* flushed with the superblocks below */
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		uint8_t st = atomic_load(&r->state[i]);

		sb->roles[i].state = ff_cpu_to_le32(st == FF_MEMBER_ACTIVE || st == FF_MEMBER_REBUILDING
						    ? st : FF_MEMBER_FAILED);
	}
	for (unsigned i = 0; i < r->g.nmembers; i++) {
		uint8_t st = atomic_load(&r->state[i]);
		int rc;

		if (st != FF_MEMBER_ACTIVE && st != FF_MEMBER_REBUILDING)
			continue;
		sb->role = ff_cpu_to_le32(i);
		memcpy(sb->member_uuid, sb->roles[i].member_uuid, 16);
		rc = ff_sb_write(&r->mem[i], sb);
		if (rc < 0) {
			ff_log(FF_LOG_ERR, "%s: cannot write member superblock: %s", r->mem[i].path,
			       strerror(-rc));
			if (!first_err)
				first_err = rc;
		} else {
			atomic_store(&r->sb_events_last[i], r->events);
		}
	}
	ff_raid_wwd_sb_written(r);
	return first_err;
}

/* Caller holds sb_lock: the superblock thread writes them soon. */
void ff_raid_sb_write_soon_locked(struct ff_raid *r)
{
	r->sb_pending = true;
	pthread_cond_signal(&r->sb_cond);
}

int ff_raid_sb_write_all(struct ff_raid *r, uint32_t array_state)
{
	int rc;

	pthread_mutex_lock(&r->sb_lock);
	rc = ff_raid_sb_write_locked(r, array_state);
	pthread_mutex_unlock(&r->sb_lock);
	return rc;
}

/* Persists member failures noticed on the data path, off the data path. */
static void *sb_thread_main(void *arg)
{
	struct ff_raid *r = arg;

	uint64_t next_clean = ff_mono_ns() + INTENT_CLEAN_NS;

	pthread_mutex_lock(&r->sb_lock);
	r->presence_next_ns = ff_mono_ns() + FF_RAID_PRESENCE_INTERVAL_NS;
	while (!r->sb_stop) {
		if (ff_mono_ns() >= next_clean) { /* quiet write-intent regions are cleared */
			pthread_mutex_unlock(&r->sb_lock);
			ff_raid_intent_clean(r);
			ff_raid_wwd_clean(r);
			pthread_mutex_lock(&r->sb_lock);
			next_clean = ff_mono_ns() + INTENT_CLEAN_NS;
		}
		if (ff_mono_ns() >= r->presence_next_ns) { /* members that vanished are failed */
			pthread_mutex_unlock(&r->sb_lock);
			ff_raid_check_presence(r);
			pthread_mutex_lock(&r->sb_lock);
			r->presence_next_ns = ff_mono_ns() + FF_RAID_PRESENCE_INTERVAL_NS;
		}
		if (atomic_exchange(&r->health_dirty, false)) /* error counts: persisted now */
			r->sb_pending = true;
		if (!r->sb_pending) {
			struct timespec ts;

			uint64_t now = ff_mono_ns(), wait_ns = 1000000000ull;

			if (r->presence_next_ns > now && r->presence_next_ns - now < wait_ns)
				wait_ns = r->presence_next_ns - now;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(wait_ns / 1000000000ull);
			ts.tv_nsec += (long)(wait_ns % 1000000000ull);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&r->sb_cond, &r->sb_lock, &ts);
			continue;
		}
		r->sb_pending = false;
		if (!r->read_only)
			ff_raid_sb_write_locked(r, FF_ARRAY_DIRTY);
		if (r->nspares && atomic_load(&r->dead_mask) && !r->read_only) {
			pthread_mutex_unlock(&r->sb_lock);
			ff_raid_spares_takeover(r);
			pthread_mutex_lock(&r->sb_lock);
		}
	}
	pthread_mutex_unlock(&r->sb_lock);
	return NULL;
}

int ff_raid_sb_thread_start(struct ff_raid *r)
{
	int rc = pthread_create(&r->sb_thread, NULL, sb_thread_main, r);

	r->sb_thread_started = rc == 0;
	return -rc;
}

void ff_raid_sb_thread_stop(struct ff_raid *r)
{
	if (!r->sb_thread_started)
		return;
	pthread_mutex_lock(&r->sb_lock);
	r->sb_stop = true;
	pthread_cond_signal(&r->sb_cond);
	pthread_mutex_unlock(&r->sb_lock);
	pthread_join(r->sb_thread, NULL);
	r->sb_thread_started = false;
}
