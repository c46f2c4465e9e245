/* SPDX-License-Identifier: MIT */
/*
 * The playback / capture model, as pure functions of time so that tests can
 * drive it with a simulated clock.
 *
 * Position k (0-based, in play order, loops included) becomes available at
 * gate(k) = k/fps and is due at deadline(k) = (prebuffer + k)/fps, both
 * measured from t0, the start of the run.
 *
 *   read:  a frame may be started at gate(k) at the earliest (the player has
 *          prebuffer buffers, so it can read that far ahead of the playhead);
 *          a frame whose deadline passes before it could start is skipped;
 *          a frame completed after its deadline is late, and a late frame is
 *          a dropped frame (the player showed something else).
 *   write: frame k arrives from the camera at gate(k) and waits in a queue of
 *          at most queue_max frames; a frame arriving to a full queue is
 *          dropped.  A write completed after deadline(k) is late, not dropped.
 *
 * Unpaced runs (fps 0) hand out every frame at once and drop nothing.
 */
#ifndef FT_PACING_H
#define FT_PACING_H

#include <stdbool.h>
#include <stdint.h>

#define FT_QUEUE_MAX 4096u	/* -q limit; the write queue is a fixed ring */
#define FT_NS_PER_S 1000000000ull

struct ft_pace {
	uint64_t fps_num;	/* frames per second = fps_num / fps_den; 0 = unpaced */
	uint64_t fps_den;
	uint32_t prebuffer;	/* -b, frames */
};

static inline bool ft_paced(const struct ft_pace *p) { return p->fps_num != 0; }
/* The time taken by `frames` frames at the target rate, in ns. */
uint64_t ft_pace_span_ns(const struct ft_pace *p, uint64_t frames);
uint64_t ft_pace_gate_ns(const struct ft_pace *p, uint64_t pos);
uint64_t ft_pace_deadline_ns(const struct ft_pace *p, uint64_t pos);

/* What happened to one position; one record per position, written once. */
enum ft_status {
	FT_ST_PENDING = 0,	/* not handed out yet (at the end: never run) */
	FT_ST_OK,		/* transferred in time (or unpaced) */
	FT_ST_LATE,		/* transferred after its deadline */
	FT_ST_SKIPPED,		/* read: deadline passed before it could start */
	FT_ST_QFULL,		/* write: arrived to a full queue */
	FT_ST_ERROR,		/* the I/O failed */
	FT_ST_NOT_RUN,		/* the stream stopped (after an error) first */
};

enum ft_vstate { FT_V_NONE = 0, FT_V_OK, FT_V_BAD };

struct ft_rec {
	uint64_t frame;		/* file index (play order maps positions to files) */
	uint64_t start_ns;	/* from t0; for drops, when the drop was decided */
	uint64_t done_ns;
	uint64_t open_ns;	/* durations */
	uint64_t io_ns;
	uint64_t close_ns;
	uint64_t bytes;		/* moved by a transferred frame (each its own with --vary, -c) */
	uint8_t status;		/* enum ft_status */
	uint8_t verify;		/* enum ft_vstate */
};

bool ft_status_transferred(enum ft_status st);
bool ft_status_dropped(enum ft_status st, bool write);

/* The scheduler of one stream; the caller serializes calls. */
struct ft_sched {
	struct ft_pace pace;
	bool write;
	bool stopped;
	uint64_t total;		/* positions: frames * loops */
	uint32_t queue_max;
	uint64_t next;		/* read: next to hand out; write: next not yet arrived */
	uint32_t q_head, q_len;	/* write: arrived frames waiting, oldest first */
	uint64_t q[FT_QUEUE_MAX];
};

enum ft_pick_kind { FT_PICK_FRAME, FT_PICK_WAIT, FT_PICK_DONE };

struct ft_pick {
	enum ft_pick_kind kind;
	uint64_t pos;		/* FT_PICK_FRAME */
	uint64_t until_ns;	/* FT_PICK_WAIT: ask again at this time (from t0) */
};

/* Called for each position the scheduler drops, with the time it decided. */
typedef void (*ft_drop_fn)(void *ctx, uint64_t pos, uint64_t at_ns, enum ft_status why);

void ft_sched_init(struct ft_sched *s, const struct ft_pace *pace, bool write, uint64_t total,
		   uint32_t queue_max);
/* What a free worker does at now_ns: take a frame, wait, or stop. */
struct ft_pick ft_sched_next(struct ft_sched *s, uint64_t now_ns, ft_drop_fn drop, void *ctx);
/* Status of a transfer that finished at done_ns. */
enum ft_status ft_sched_judge(const struct ft_pace *p, uint64_t pos, uint64_t done_ns);

/* Drop and lateness accounting over one stream's records (play order). */
struct ft_drops {
	uint64_t total;
	uint64_t transferred;
	uint64_t dropped;
	uint64_t late;
	uint64_t skipped;
	uint64_t qfull;
	uint64_t errors;
	uint64_t not_run;
	uint64_t longest_drop_run;
	uint64_t lateness_max_ns;
	uint64_t verified;
	uint64_t verify_failed;
};

void ft_account(const struct ft_rec *r, uint64_t n, bool write, const struct ft_pace *p,
		struct ft_drops *out);

/*
 * Lowest count of events in any window [x, x + 1 s) with x in
 * [from_ns, to_ns - 1 s], stepping x by 1 ms.  events must be sorted.
 * Returns -1 when the span is shorter than one second.
 */
double ft_lowest_fps(const uint64_t *events, uint64_t n, uint64_t from_ns, uint64_t to_ns);

/*
 * Fill events with the times that count as "a frame shown" for the lowest-fps
 * figure: for paced runs the deadline of every frame not dropped (span:
 * deadline(0) .. deadline(total)); for unpaced runs the completion time of
 * every transferred frame (span: 0 .. last completion).  Returns the count;
 * events needs room for n entries.
 */
uint64_t ft_shown_events(const struct ft_rec *r, uint64_t n, bool write, const struct ft_pace *p,
			 uint64_t *events, uint64_t *from_ns, uint64_t *to_ns);

#endif
