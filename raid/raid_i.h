/* SPDX-License-Identifier: MIT */
/* Private to raid/: the array and its worker threads. */
#ifndef FF_RAID_I_H
#define FF_RAID_I_H

#include <pthread.h>

#include "io/uring.h"
#include "raid/raid.h"
#include "raid/sb.h"

#define SCRATCH_SETS 2
#define SEGS_MAX 3

struct raid_worker;
struct stripe_op;

/*
 * The engine's state of one request (struct ff_raid_io.engine_priv): a
 * request is cut into units dealt round-robin to the workers; each worker
 * keeps its own place in it (wpos), its ops in flight (wops) and its inbox
 * link (wnext); parts counts the workers not finished with it, and error
 * keeps the first error.
 */
struct raid_io_priv {
	_Atomic unsigned parts;
	_Atomic int error;
	struct ff_raid_io *wnext[FF_RAID_WORKERS_MAX];
	uint64_t wpos[FF_RAID_WORKERS_MAX];
	uint32_t wops[FF_RAID_WORKERS_MAX];
};
_Static_assert(sizeof(struct raid_io_priv) <= FF_RAID_IO_PRIV_BYTES,
	       "struct ff_raid_io.engine_priv is too small for struct raid_io_priv");
_Static_assert(_Alignof(struct raid_io_priv) <= 8, "engine_priv is 8-byte aligned");

static inline struct raid_io_priv *raid_iop(struct ff_raid_io *io)
{
	return (struct raid_io_priv *)(void *)io->engine_priv;
}

/* Ops waiting for a worker resource, first come first served. */
struct op_fifo {
	struct stripe_op *head, *tail;
};

/* A row segment: rows [a, b) of every chunk in the stripe, in which the
 * same set of data slots (wmask) is read or written by the request. */
struct seg {
	uint32_t a, b;
	uint32_t wmask;
};

enum op_mode { MODE_DIRECT, MODE_FULL, MODE_RMW, MODE_RCW, MODE_DEGRADED, MODE_REBUILD, MODE_CHECK };

/* One stripe's (or one metadata chunk's) share of a request. */
struct stripe_op {
	struct raid_worker *w;
	struct ff_raid_io *io;   /* NULL while the op is free */
	uint64_t stripe;         /* DATA: stripe; META: metadata chunk */
	uint64_t lo, hi;         /* byte range within the stripe / chunk (a rows write: the
				  * whole stripe, its rows are in seg[0]) */
	/* DATA: the geometry of the op's row (raid_io_geom), its level and
	 * that level's parity tables */
	const struct ff_geom *g;
	const struct ff_raid_level *lv;
	struct ff_gf_ctx *gf;
	char *buf;               /* caller's buffer at lo */
	uint8_t map[FF_MEMBERS_MAX];
	struct seg seg[SEGS_MAX];
	unsigned nseg, cur;
	uint32_t seg_end;        /* rows of seg[cur] end here; seg[cur] is the piece at hand */
	unsigned piece;          /* which piece of seg[cur] (see ff_raid.piece_bytes) */
	uint32_t rb_start;       /* rebuild_mask when the op was planned */
	uint32_t dead_seen;      /* slots left unwritten by any piece so far */
	uint8_t err_seen;        /* a piece so far had a member error */
	uint8_t mode;
	uint8_t writing;         /* segment is in its write phase */
	uint8_t locked;          /* holds the stripe lock */
	uint8_t background;      /* serves an FF_RAID_IO_BACKGROUND request */
	uint8_t meta_copy;       /* META: copy being read */
	int scratch;             /* scratch set held, -1 if none */
	uint8_t in_window;       /* DATA write: holds one of the worker's write-window places */
	uint32_t unavail;        /* slots that cannot be read: dead, not rebuilt yet, or avoided */
	uint32_t dead;           /* slots that cannot be written either */
	uint32_t hedge;          /* members this read goes around: they were too slow */
	uint32_t read_slots;     /* slots read in this segment */
	uint32_t heal;           /* members whose read of this segment failed: read around
				  * (like hedge), then rewritten from parity (health.c) */
	unsigned pending;
	int err;
	void *pbuf[FF_PARITY_MAX];
	void *slot[FF_MEMBERS_MAX + 1];
	struct ff_io_req req[FF_MEMBERS_MAX + 1]; /* + the replacement of one member */
	struct stripe_op *next;       /* free list or locked list */
	struct stripe_op *wait_next;  /* queued for a scratch set or a write-window place */
	struct stripe_op *lock_wait;  /* next op queued on the same stripe */
};

struct raid_worker {
	struct ff_raid *r;
	unsigned id;
	pthread_t thread;
	struct ff_ring ring;
	int efd;
	pthread_mutex_t inbox_lock;
	struct ff_raid_io *inbox_head, *inbox_tail;
	bool stop;
	/* worker-local from here */
	struct ff_raid_io *pend_head, *pend_tail;
	struct ff_raid_io *bg_head, *bg_tail; /* FF_RAID_IO_BACKGROUND requests */
	unsigned bg_running;                   /* ops serving them */
	struct stripe_op *ops;
	struct stripe_op *free_ops;
	unsigned nfree;
	struct stripe_op *locked;
	struct op_fifo scratch_wait;
	uint32_t scratch_free;
	/*
	 * The write window: at most opts.write_window DATA writes per worker
	 * past planning (parity computed, member writes queued or running).
	 * A stripe's parity is computed just before its member writes are
	 * queued, so with a small window its data is still in the CPU cache
	 * when the members copy it (files in RAM: the kernel's page-cache
	 * copy), and the request's data is read from memory once, not twice.
	 */
	unsigned window_free;
	struct op_fifo window_wait;
	void *scratch[SCRATCH_SETS][FF_MEMBERS_MAX];
	void *slab;
	size_t slab_bytes;
	struct ff_gf_ctx gf;
	struct ff_gf_ctx gf_old;     /* the old geometry's, on a grown array */
	uint64_t last_scan_ns;
};

/* Error counts of one role's member (health.c). */
struct raid_health {
	_Atomic uint64_t read_errors, write_errors, cksum_errors, healed;
	uint64_t window_start_ns; /* health_lock: the read-error window */
	unsigned window_errors;   /* health_lock */
	uint64_t failed_s;        /* sb_lock */
};

struct ff_raid {
	struct ff_geom g;
	const struct ff_raid_level *lv;
	/*
	 * A grown array (raid.h, "growing"): the old geometry (nmembers 0 when
	 * the array is not grown), the filesystem's row hook, and the resync
	 * an unclean shutdown left waiting for it (intent.c).
	 */
	struct ff_geom g_old;
	const struct ff_raid_level *lv_old;
	bool (*row_old)(void *arg, uint64_t row);
	void *row_old_arg;
	bool resync_waiting;
	/*
	 * Write segments go in row pieces of this many bytes, 0 = whole.  Set
	 * when every member runs its I/O on the engine thread (sync_io: files
	 * in RAM): each piece's parity, then its member copies, while its rows
	 * are still in the core's cache (worker.c, piece_bytes_for()).
	 */
	uint32_t piece_bytes;
	struct ff_member mem[FF_MEMBERS_MAX]; /* by role; fd < 0 when missing */
	struct ff_member *memp[FF_MEMBERS_MAX + 1]; /* [nmembers]: the replacement slot */
	/*
	 * Replacement (`replace OLD NEW`): NEW sits in ring slot nmembers and
	 * receives every write to OLD's role while the copy runs; OLD keeps
	 * serving.  At the end NEW takes OLD's place.
	 */
	struct ff_member shadow;
	_Atomic int shadow_role;              /* -1: no replacement running */
	/* bumped when a role (or the replacement slot) gets another member: a
	 * request sent to the one before fails that one, not its successor */
	_Atomic uint32_t role_epoch[FF_MEMBERS_MAX + 1];
	/* fault rules of members let go (promote, replace), freed at close: a
	 * ring's thread may still be checking a request against them (sb_lock) */
	struct ff_fault *faults_retired;
	_Atomic uint8_t state[FF_MEMBERS_MAX];
	/*
	 * What status says about each role (under sb_lock): why it failed
	 * ("" while it has not), a warning about its member that fails nothing
	 * (ff_member_presence: FF_MEMBER_MOVED), and the member given at
	 * assembly but left out, stale or marked failed (path "" if none).
	 */
	char fail_reason[FF_MEMBERS_MAX][FF_RAID_REASON_MAX];
	char note[FF_MEMBERS_MAX][FF_RAID_REASON_MAX];
	struct {
		char path[PATH_MAX];
		uint64_t events;
		bool stale;          /* its event counter is behind the array's */
		bool marked_failed;  /* the array marks its role failed */
	} left_out[FF_MEMBERS_MAX];
	/* the presence check (failure.c, superblock thread): when it runs
	 * next, and how many checks in a row saw each role VANISHING */
	uint64_t presence_next_ns;
	uint8_t vanishing[FF_MEMBERS_MAX + 1];
	/*
	 * Member masks.  dead: failed or missing, neither read nor written.
	 * rebuild: being rebuilt — written, but read only for stripes already
	 * rebuilt (bit set in `rebuilt`).  meta_stale: its mirrored metadata
	 * copies are not rebuilt yet, so metadata is read from the others.
	 */
	_Atomic uint32_t dead_mask;
	_Atomic uint32_t rebuild_mask;
	_Atomic uint32_t meta_stale_mask;
	uint64_t *rebuilt;                    /* one bit per stripe, while rebuilding */
	struct raid_rebuild *rb;
	bool (*alloc_query)(void *arg, uint64_t stripe);
	void *alloc_arg;
	uint64_t rebuild_min_bps, rebuild_max_bps;
	pthread_mutex_t spare_lock;           /* the spare list: admin and superblock threads */
	struct ff_member spare[FF_SPARES_MAX];
	unsigned nspares;
	struct raid_intent *intent;
	struct raid_wwd *wwd;                 /* written while degraded (degraded.c) */
	struct ff_roster *roster;             /* sb_lock: who held each role (roster.c); may be NULL */
	bool roster_stamped;                  /* sb_lock: written once this mount */
	/* the event count of the last superblock write each role's member took */
	_Atomic uint64_t sb_events_last[FF_MEMBERS_MAX];
	_Atomic uint32_t readd_mask;          /* roles being re-added: resync marked regions only */
	uint64_t stats_resync_regions;
	uint8_t uuid[16];
	char label[64];
	bool read_only;
	struct ff_member_sb *sb;              /* template, freshest copy */
	uint64_t events;
	pthread_mutex_t sb_lock;
	pthread_cond_t sb_cond;
	bool sb_pending;
	bool sb_stop;
	pthread_t sb_thread;
	bool sb_thread_started;
	unsigned nworkers;
	struct raid_worker worker[FF_RAID_WORKERS_MAX];
	_Atomic unsigned rr;
	struct ff_raid_opts opts;
	struct ff_raid_stats stats;
	struct raid_health health[FF_MEMBERS_MAX];
	pthread_mutex_t health_lock;
	unsigned read_errors_max;       /* opts.max_read_errors resolved */
	_Atomic bool health_dirty;      /* counts changed: the sb thread persists them */
};

/* assemble.c: open the members at paths (each locked, an undo log kept when
 * undo_dir is set), refusing duplicates; and close them. */
int ff_raid_open_members(const char *const *paths, unsigned n, bool ro, const char *undo_dir,
			 struct ff_member *m, struct ff_err *err);
void ff_raid_close_members(struct ff_member *m, unsigned n);

/* failure.c: member failure, and what status says about each role */
/* Engine threads: the role fails now; the superblock thread persists it. */
void ff_raid_member_failed(struct ff_raid *r, unsigned role, const char *cause);
/* A role gets another member: forget what was said about the one before
 * (fail reason, note, left-out member).  Caller holds sb_lock. */
void ff_raid_role_reset_info(struct ff_raid *r, unsigned role);

/* sb_update.c: the array's state to every member's superblock */
/* Caller holds sb_lock: events + 1, written to every active or rebuilding
 * member; 0, or the first member's error. */
int ff_raid_sb_write_locked(struct ff_raid *r, uint32_t array_state);
int ff_raid_sb_write_all(struct ff_raid *r, uint32_t array_state);
/* Caller holds sb_lock: the superblock thread writes them soon (engine
 * threads and others that must not wait for the members' writes). */
void ff_raid_sb_write_soon_locked(struct ff_raid *r);
/* The superblock thread (assemble.c starts it and stops it at close). */
int ff_raid_sb_thread_start(struct ff_raid *r);
void ff_raid_sb_thread_stop(struct ff_raid *r);

/* health.c */
void ff_raid_health_init(struct ff_raid *r);
/* A member request failed (engine threads): counted; true when the range
 * is to be read around and rewritten, false when the member was failed. */
bool ff_raid_member_error(struct ff_raid *r, unsigned role, unsigned io_op, int err);
void ff_raid_healed(struct ff_raid *r, unsigned role);
/* Caller holds sb_lock: the role failed now / its counts to the superblock. */
void ff_raid_health_failed_locked(struct ff_raid *r, unsigned role);
void ff_raid_health_to_sb_locked(struct ff_raid *r);
void ff_raid_health_reset_locked(struct ff_raid *r, unsigned role);

/* rebuild.c */
void ff_raid_rebuild_stop(struct ff_raid *r);
void ff_raid_rebuild_free(struct ff_raid *r);
/* A spare takes over a failed role if there is one of each (sb thread). */
void ff_raid_spares_takeover(struct ff_raid *r);
int ff_raid_add_check(struct ff_raid *r, const char *path, bool force, struct ff_member *out,
		      struct ff_err *err);
/* The same checks of a member to add, on an array assembled read-only too
 * (a grow checks before it writes anything): opened, locked, in *out. */
int ff_raid_new_member_check(struct ff_raid *r, const char *path, bool force,
			     struct ff_member *out, struct ff_err *err);

/* roster.c: who held each role (raid/sb.h) */
struct ff_raid_member_info;
void ff_raid_roster_load(struct ff_raid *r);
void ff_raid_roster_sync_locked(struct ff_raid *r);
void ff_raid_roster_info_locked(struct ff_raid *r, unsigned role, struct ff_raid_member_info *out);
/* Has the rebuilding member(s) valid data for this stripe? */
static inline bool raid_stripe_rebuilt(const struct ff_raid *r, uint64_t stripe)
{
	return r->rebuilt && ((__atomic_load_n(&r->rebuilt[stripe / 64], __ATOMIC_RELAXED) >> (stripe % 64)) & 1);
}
static inline void raid_mark_rebuilt(struct ff_raid *r, uint64_t stripe)
{
	if (r->rebuilt)
		__atomic_fetch_or(&r->rebuilt[stripe / 64], 1ull << (stripe % 64), __ATOMIC_RELAXED);
}

/* intent.c */
int ff_raid_intent_init(struct ff_raid *r);
void ff_raid_intent_free(struct ff_raid *r);
int ff_raid_intent_recover(struct ff_raid *r, bool unclean);
/* The resync a grown array held back for its row hook (intent.c). */
int ff_raid_intent_resync_waiting(struct ff_raid *r);
void ff_raid_intent_begin(struct ff_raid *r, struct ff_raid_io *io);
void ff_raid_intent_end(struct ff_raid *r, struct ff_raid_io *io);
void ff_raid_intent_clean(struct ff_raid *r);
void ff_raid_intent_member_close(struct ff_raid *r, struct ff_member *m);
/* Both bitmaps' block writer (this one's and degraded.c's): blk sealed and
 * written at off of every live member, durable; 0 only when every live
 * member took it (intent.c says why), else -EIO.  Caller holds the
 * bitmap's lock. */
int ff_raid_bitmap_write(struct ff_raid *r, uint8_t *blk, uint32_t magic, uint64_t idx,
			 uint64_t off);
/* Is blk what ff_raid_bitmap_write sealed as block idx with magic? */
bool ff_raid_bitmap_block_ok(const uint8_t *blk, uint32_t magic, uint64_t idx);

/* degraded.c: regions written while a role had no member, for re-add */
int ff_raid_wwd_init(struct ff_raid *r, uint64_t events_before, bool unclean);
void ff_raid_wwd_free(struct ff_raid *r);
void ff_raid_wwd_begin(struct ff_raid *r, struct ff_raid_io *io);
void ff_raid_wwd_end(struct ff_raid *r, struct ff_raid_io *io);
void ff_raid_wwd_sb_written(struct ff_raid *r);
void ff_raid_wwd_clean(struct ff_raid *r);
void ff_raid_wwd_role_back(struct ff_raid *r, unsigned role);
/* 0 when the bitmap proves what a member of role with member_events
 * missed; else -EINVAL and why (a phrase). */
int ff_raid_wwd_readd_check(struct ff_raid *r, unsigned role, uint64_t member_events,
			    char *why, size_t why_len);
bool ff_raid_wwd_stripe_marked(struct ff_raid *r, uint64_t stripe);
bool ff_raid_wwd_meta_row_marked(struct ff_raid *r, uint64_t row);
void ff_raid_wwd_counts(struct ff_raid *r, uint64_t *data_regions, uint64_t *meta_groups);
uint64_t ff_raid_wwd_region_stripes(const struct ff_raid *r);
void ff_raid_wwd_lock(struct ff_raid *r);
void ff_raid_wwd_unlock(struct ff_raid *r);

static inline bool raid_grown(const struct ff_raid *r)
{
	return r->g_old.nmembers != 0;
}

/* The geometry a request addresses: the old one with FF_RAID_IO_OLD_GEOM. */
static inline const struct ff_geom *raid_io_geom(const struct ff_raid *r,
						 const struct ff_raid_io *io)
{
	return (io->flags & FF_RAID_IO_OLD_GEOM) ? &r->g_old : &r->g;
}

/* Is DATA row `row` in the old geometry?  Only with the hook set. */
static inline bool raid_row_old(const struct ff_raid *r, uint64_t row)
{
	return raid_grown(r) && r->row_old && r->row_old(r->row_old_arg, row);
}

/* The geometry of DATA row `row` and its level (the row hook decides). */
static inline const struct ff_geom *raid_row_geom(const struct ff_raid *r, uint64_t row,
						  const struct ff_raid_level **lv)
{
	bool old = raid_row_old(r, row);

	*lv = old ? r->lv_old : r->lv;
	return old ? &r->g_old : &r->g;
}

/* Bytes of one unit of work: a stripe (DATA) or a metadata chunk (META). */
static inline uint64_t ff_unit_bytes(const struct ff_raid *r, const struct ff_raid_io *io)
{
	return io->space == FF_SPACE_DATA ? raid_io_geom(r, io)->stripe_bytes : FF_META_CHUNK;
}

/* A rows write (FF_RAID_IO_ROWS): rows of every chunk of one stripe. */
static inline bool ff_io_rows(const struct ff_raid_io *io)
{
	return (io->flags & FF_RAID_IO_ROWS) != 0;
}

/* The request's last unit (a flush has one: 0). */
static inline uint64_t ff_last_unit(const struct ff_raid *r, const struct ff_raid_io *io)
{
	return io->op == FF_RAID_FLUSH ? 0 : (io->off + io->len - 1) / ff_unit_bytes(r, io);
}

/* stripe.c: an op's lifetime, member requests, DATA segments */
void ff_op_issue(struct stripe_op *op, unsigned op_code, unsigned member, uint64_t off, void *buf,
		 uint32_t len);
void ff_op_finish(struct stripe_op *op, int err);
void ff_op_run(struct stripe_op *op);
void ff_op_plan_segments(struct stripe_op *op, uint32_t C);
void ff_op_piece_first(struct stripe_op *op);
void ff_seg_begin(struct stripe_op *op);
bool ff_scratch_get(struct raid_worker *w, struct stripe_op *op);
void ff_scratch_put(struct raid_worker *w, struct stripe_op *op);

/* meta.c: the META space and flushes */
void ff_meta_start(struct stripe_op *op);
void ff_meta_phase_done(struct stripe_op *op);
void ff_meta_rebuild_start(struct stripe_op *op);
void ff_flush_start(struct stripe_op *op);
void ff_flush_done(struct stripe_op *op);

/* worker.c: the worker threads */
int ff_raid_engine_start(struct ff_raid *r);
void ff_raid_engine_stop(struct ff_raid *r);
void ff_worker_wake(struct raid_worker *w);

#endif
