/* SPDX-License-Identifier: MIT */
/* Private to raid/rebuild.c and raid/members.c: the rebuild's state. */
#ifndef FF_RAID_REBUILD_I_H
#define FF_RAID_REBUILD_I_H

#include "raid/raid_i.h"

#define RB_INFLIGHT 8
#define RB_CHECKPOINT_NS 1000000000ull
#define RB_PHASE_SHIFT 56

enum { PH_META, PH_ALLOCATED, PH_REST, PH_DONE };

struct raid_rebuild {
	pthread_t thread;
	bool running;
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint32_t targets;
	unsigned phase;
	uint64_t pos;            /* next unit to issue in this phase */
	uint64_t bytes_done;     /* bytes written to the new member(s) */
	uint64_t progress_bytes; /* of progress_total: written, or current already */
	uint64_t progress_total;
	uint64_t fg_last;        /* foreground byte count last seen, and when it moved */
	uint64_t fg_moved_ns;
	double tokens;           /* rate limit: bytes that may be issued now */
	uint64_t tokens_ns;
	uint64_t start_ns;
	uint64_t inflight;
	uint64_t lowest_inflight[RB_INFLIGHT];
	int err;
	bool filter;             /* a re-add: only units the degraded bitmap marks */
	uint64_t readd_regions, readd_meta_groups; /* marked when it started */
	uint64_t units_done;     /* stripes and metadata rows written */
	bool replace;            /* copying a role onto its replacement (r->shadow) */
	unsigned replace_role;
	uint8_t replace_uuid[16];
	struct ff_raid_io io[RB_INFLIGHT];
	bool busy[RB_INFLIGHT];
};

/* rebuild.c */
uint64_t ff_rebuild_meta_rows(const struct ff_raid *r);
void ff_rebuild_rate_reset(struct ff_raid *r, struct raid_rebuild *rb);
void *ff_rebuild_main(void *arg);

/* members.c: the end of a replace, called by the rebuild thread */
void ff_replace_finish(struct ff_raid *r, struct raid_rebuild *rb);
void ff_replace_abandon(struct ff_raid *r, struct raid_rebuild *rb);

#endif
