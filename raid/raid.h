/* SPDX-License-Identifier: MIT */
/*
 * The RAID engine: an array of members with two logical address spaces.
 *
 *   DATA  RAID5 (left-symmetric) or RAID6 (rotating P+Q, md-compatible Q),
 *         addressed in bytes; a stripe is ndata chunks of data.  Full-stripe
 *         writes compute parity and go straight out, and so do rows writes
 *         (FF_RAID_IO_ROWS: some rows of every chunk); partial writes choose
 *         read-modify-write or reconstruct-write, whichever reads less.
 *   META  a mirrored area (2 copies on RAID5, 3 on RAID6, so it survives
 *         what the parity survives) for the filesystem's small metadata
 *         writes, which therefore never update parity in place.
 *
 * Member layout (byte offsets on every member):
 *   [0, 4K)                      member superblock, copy A
 *   [4K, 1M)                     reserved (write-intent records)
 *   [meta_offset, +meta_member)  mirrored metadata area
 *   [data_offset, +nstripes*chunk) data chunks, stripe s at data_offset + s*chunk
 *   [member_bytes - 1M, +32K)    the roster, two copies (sb.h: who held each role)
 *   [member_bytes - 4K, member_bytes)  member superblock, copy B
 *
 * I/O is asynchronous: ff_raid_submit() takes a caller-owned request and
 * completes it by calling its done callback from an engine thread.  Stripes
 * are partitioned over the engine's worker threads (stripe % workers), each
 * with its own io_uring ring, stripe-op pool and stripe locks, so many
 * stripes are in flight from many submitting threads without a shared lock
 * on the data path.
 */
#ifndef FF_RAID_H
#define FF_RAID_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/member.h"
#include "raid/parity.h"

#define FF_RAID_WORKERS_MAX 8
/* room for the engine's per-request state (raid_i.h asserts it fits) */
#define FF_RAID_IO_PRIV_BYTES (8 + FF_RAID_WORKERS_MAX * 20)
#define FF_CHUNK_MIN (16u * 1024)
#define FF_CHUNK_MAX (1024u * 1024)
#define FF_META_CHUNK (64u * 1024)
#define FF_META_COPIES_MAX 3 /* nparity + 1, RAID6 */
#define FF_MEMBER_SB_BYTES 4096u
#define FF_MEMBER_RESERVED (1024u * 1024) /* head area before the metadata */

enum ff_raid_space { FF_SPACE_DATA = 0, FF_SPACE_META = 1 };
enum ff_raid_op {
	FF_RAID_READ = 1,
	FF_RAID_WRITE = 2,
	FF_RAID_FLUSH = 3,
	FF_RAID_REBUILD = 4, /* internal: reconstruct rebuild_members' part of one stripe or META row */
	FF_RAID_CHECK = 5,   /* read one whole stripe into buf and compare its parity with its data */
};

/* A write that cannot tear live data (it goes where nothing points yet):
 * no write-intent record is needed for it. */
#define FF_RAID_IO_NO_INTENT 1u
/* FF_RAID_REBUILD: write the rebuilt chunk to the replacement member. */
#define FF_RAID_IO_TO_SHADOW 2u
/* Background work (rebuild, scrub): a worker starts it only when no
 * foreground request waits for an op, and runs one at a time while
 * foreground ops are in progress (worker.c: issue_ops). */
#define FF_RAID_IO_BACKGROUND 4u
/*
 * A rows write: rows [a, a + len) of every chunk of one stripe (row r being
 * bytes [r*4096, (r+1)*4096) of each chunk), data and parity together.  The
 * parity of a row depends on that row alone, so the stripe's other rows —
 * other files' live data — are neither read nor torn: the primitive behind
 * tail stripes shared by many files.
 *   - op FF_RAID_WRITE, space FF_SPACE_DATA only;
 *   - stripe s = off / stripe_bytes, a = off % stripe_bytes; len is the
 *     rows' length in EACH chunk; a + len <= chunk_bytes, len > 0; off and
 *     len multiples of io_align, like every request;
 *   - buf is a whole-stripe image (stripe_bytes, data chunk i at
 *     buf + i * chunk_bytes): data chunk i's rows get buf[i*C + a, i*C + a + len),
 *     P (and Q) those rows' parity computed from those bytes alone;
 *   - nothing is read from the members, degraded too: a dead member's slot
 *     is not written, as in a full-stripe write;
 *   - op FF_RAID_CHECK with this flag: the same rows read into buf (data
 *     chunk i's at buf[i*C + a, ...)) and their parity compared, the other
 *     rows neither read nor compared (a tail stripe's rows not written yet
 *     hold whatever the stripe held before: scrub checks those written);
 *   - anything else with this flag: -EINVAL from ff_raid_submit.
 * Like any write it holds the stripe lock and takes a write-intent record
 * unless FF_RAID_IO_NO_INTENT is also set; it never counts as a write of the
 * whole stripe (a rebuilding member's other rows stay to be rebuilt).
 */
#define FF_RAID_IO_ROWS 8u
/*
 * A DATA request in the old geometry of a grown array (see "Growing"
 * below): off = row * old stripe_bytes + x, the row's chunks laid out as
 * they were before the grow (the old level over roles 0..old nmembers-1).
 * -EINVAL on an array that is not grown, or in the META space.
 */
#define FF_RAID_IO_OLD_GEOM 16u

enum ff_member_state {
	FF_MEMBER_ACTIVE = 1,
	FF_MEMBER_FAILED = 2,
	FF_MEMBER_MISSING = 3, /* never assembled, or stale */
	FF_MEMBER_REBUILDING = 4,
};

struct ff_geom {
	uint32_t level;
	uint32_t nmembers;
	uint32_t nparity;
	uint32_t ndata;
	uint32_t chunk_bytes;
	uint32_t io_align;          /* every request offset and length: max member block size */
	uint64_t stripe_bytes;      /* data bytes per stripe: ndata * chunk */
	uint64_t nstripes;
	uint64_t data_offset;
	uint64_t meta_offset;
	uint64_t meta_member_bytes; /* per member */
	uint32_t meta_copies;
	uint64_t meta_bytes;        /* logical size of the META space */
	uint64_t data_bytes;        /* logical size of the DATA space */
	uint64_t member_bytes;      /* bytes used on each member (the smallest sets it) */
	uint32_t meta_members;      /* roles the META space is laid over: 0..meta_members-1
				     * (nmembers, or the width before a grow) */
};

/* One table of functions per RAID level; the engine never switches on the
 * level in the hot path. */
struct ff_raid_level {
	uint32_t level;
	uint32_t nparity;
	uint32_t min_members;
	const struct ff_parity_ops *parity;
	/* slot_member[slot] = member holding logical slot of stripe s
	 * (slots: data 0..ndata-1, then P, then Q) */
	void (*map)(uint32_t nmembers, uint64_t stripe, uint8_t *slot_member);
};

const struct ff_raid_level *ff_raid_level_get(uint32_t level);

/* Geometry from creation parameters and the smallest member's size. */
int ff_geom_compute(struct ff_geom *g, uint32_t level, uint32_t nmembers, uint32_t chunk_bytes,
		    uint64_t smallest_member_bytes, uint64_t meta_member_bytes, uint32_t io_align,
		    struct ff_err *err);

struct ff_raid_io {
	/* set by the caller */
	uint8_t op;             /* enum ff_raid_op */
	uint8_t space;          /* enum ff_raid_space */
	uint8_t meta_copy;      /* META reads: 0 = any live copy, k = copy k-1 only */
	uint8_t flags;          /* FF_RAID_IO_* */
	uint32_t avoid_members; /* DATA reads: treat these members as missing (bad checksum) */
	uint32_t rebuild_members; /* FF_RAID_REBUILD: members to write */
	_Atomic uint32_t check_mismatch; /* FF_RAID_CHECK result: bit p set when parity p differs */
	uint64_t off;
	uint64_t len;
	void *buf;              /* FF_BUF_ALIGN-aligned */
	void (*done)(struct ff_raid_io *io);
	void *priv;
	/* result: 0 or -errno */
	int result;
	/* The engine's own while the request is in flight (struct raid_io_priv,
	 * raid/raid_i.h): callers neither set nor read it.  Kept here so that a
	 * request needs no allocation. */
	_Alignas(8) unsigned char engine_priv[FF_RAID_IO_PRIV_BYTES];
};

struct ff_raid_stats {
	_Atomic uint64_t fg_bytes;        /* member bytes moved for foreground requests: neither
					   * rebuild nor FF_RAID_IO_BACKGROUND (scrub, restripe) */
	_Atomic uint64_t full_stripe_writes;
	_Atomic uint64_t rows_writes;     /* FF_RAID_IO_ROWS writes (not in full_stripe_writes) */
	_Atomic uint64_t rmw_segments;
	_Atomic uint64_t rcw_segments;
	_Atomic uint64_t degraded_segments;
	_Atomic uint64_t member_reads;
	_Atomic uint64_t member_writes;
	_Atomic uint64_t read_bytes;
	_Atomic uint64_t write_bytes;      /* bytes written to members through the rings: data,
					    * parity, META copies, rebuild (not the superblocks,
					    * roster and bitmaps, written with pwrite) */
	_Atomic uint64_t meta_write_bytes; /* the META-space part of write_bytes (every copy) */
	_Atomic uint64_t member_errors;
	_Atomic uint64_t member_timeouts;
	_Atomic uint64_t hedged_reads;   /* reads served around a slow member */
	_Atomic uint64_t window_waits;   /* DATA writes that waited for a write-window place */
	_Atomic uint64_t pieces;         /* row pieces past a segment's first (members in RAM) */
	_Atomic uint64_t data_writes_done;    /* DATA-space writes completed ... */
	_Atomic uint64_t data_writes_flushed; /* ... and how many of them a flush covered */
};

/*
 * Events for a caller's hook (the daemon's -o event_cmd): posted where the
 * state changes, from engine, rebuild and scrub threads, so the callback must
 * not block, allocate or fork — it copies the event into a bounded queue and
 * returns (fs/daemon/events.c).  The event is on the poster's stack.
 */
enum ff_event_kind {
	FF_EVENT_MEMBER_FAILED,     /* detail: the reason */
	FF_EVENT_DEGRADED,          /* detail: how many roles failed, redundancy left */
	FF_EVENT_REBUILD_STARTED,   /* one per member being rebuilt (or copied onto by replace) */
	FF_EVENT_REBUILD_FINISHED,
	FF_EVENT_REBUILD_FAILED,    /* detail: why */
	FF_EVENT_SCRUB_FOUND_ERRORS, /* detail: what was found and repaired (fs/volume/scrub.c) */
	FF_EVENT_SCRUB_FINISHED,
	FF_EVENT_EVENTS_DROPPED,    /* the queue was full: detail says how many were lost */
	FF_EVENT_LABEL_CHANGED,     /* detail: the new label (raid/label.h) */
	FF_EVENT_GROW_STARTED,      /* a restripe began or went on (fs/grow/restripe.c): detail, what is left */
	FF_EVENT_GROW_FINISHED,     /* every row at the new width */
	FF_EVENT_GROW_FAILED,       /* detail: why; the next mount goes on */
	FF_EVENT_KINDS
};

struct ff_event {
	enum ff_event_kind kind;
	int role;                   /* -1: the array as a whole */
	char member[PATH_MAX];      /* the member's path, "" for the array */
	char serial[32];            /* NVMe serial, "" if none */
	char detail[256];
};

typedef void ff_event_fn(void *ctx, const struct ff_event *ev);

/* "member-failed", "degraded", ... (the hook's first argument). */
const char *ff_event_name(enum ff_event_kind kind);

struct ff_raid_opts {
	unsigned workers;        /* engine threads, default 2 */
	unsigned ops_per_worker; /* stripe ops in flight per worker, default 16 */
	unsigned write_window;   /* of those, DATA writes past planning: default 1 when every
				  * member is a file in RAM (tmpfs), else ops_per_worker (see
				  * raid_i.h, worker.c) */
	unsigned ring_depth;     /* member I/Os in flight per worker, default 128 */
	uint32_t piece_bytes;    /* when every member is in RAM, write segments go in row pieces
				  * of this size (a power of two, rounded down, >= 4 KiB):
				  * 0 = the default (worker.c), >= chunk = never cut */
	bool ring_only;          /* members in RAM too go through io_uring (their requests
				  * run on the engine thread otherwise: io/uring.h) */
	bool read_only;
	bool force_clean;        /* assemble: ignore the dirty flag */
	unsigned member_timeout_ms; /* a member request older than this fails the member (5000) */
	unsigned read_slow_ms;      /* a data read slower than this is read around via parity (200, 0 = never) */
	/* A read error is healed from parity (health.c); a member is failed
	 * at more than this many within FF_RAID_READ_ERROR_WINDOW_S.  0 = the
	 * default, FF_RAID_MAX_READ_ERRORS; FF_RAID_READ_ERRORS_NONE = at the
	 * first. */
	unsigned max_read_errors;
	/* Data bytes per region of the written-while-degraded bitmap that
	 * re-add resyncs by (degraded.c); 0 = 64 MiB, md's bitmap chunk.
	 * Grown when the bitmap would not fit; a bitmap already recording
	 * keeps the size it was made with. */
	uint64_t readd_region_bytes;
	/* Tests only; NULL or "" = none.  Both must stay valid until ff_raid_close.
	 * The daemon passes its FRAMEFS_FAULT and FRAMEFS_UNDO_DIR. */
	const char *fault_spec;  /* fault rules armed on the members at assembly (io/fault.h) */
	const char *undo_dir;    /* members opened read-write keep undo logs there (io/fault.h) */
	ff_event_fn *event_fn;   /* NULL = events are only logged */
	void *event_ctx;
};

/*
 * md's default (max_read_errors, 20 corrected read errors): a drive with a
 * scratched area gives a few errors per bad region, each healed, and is
 * kept; a dying drive errs on most reads and, at stream rates (hundreds of
 * member reads a second), passes 20 within a second, so it is failed before
 * every read pays for a reconstruction and a rewrite.  xiRAID's 3 would
 * fail a drive for one bad region that a frame read crosses several times.
 * The count restarts at the first error more than a window after the
 * window began, so errors healed hours apart never add up to a failure.
 */
#define FF_RAID_MAX_READ_ERRORS 20u
#define FF_RAID_READ_ERROR_WINDOW_S 60u
#define FF_RAID_READ_ERRORS_NONE 0xffffffffu

struct ff_raid;

/* What deallocating one member's data area did (ff_raid_create_params). */
struct ff_raid_discard {
	int rc;          /* 0; -EOPNOTSUPP: the device cannot (or a file: is_bdev false) */
	bool is_bdev;
	uint64_t bytes;  /* deallocated (on an error: before it) */
	uint64_t want;   /* the data area: nstripes * chunk */
};

struct ff_raid_create_params {
	uint32_t level;
	uint32_t chunk_bytes;
	uint64_t meta_member_bytes; /* 0 = default */
	char label[64];
	bool force;                 /* overwrite members that carry a signature */
	/* Deallocate every block-device member's data area, and only that
	 * ([data_offset, data_offset + nstripes * chunk): never a superblock,
	 * the reserved or metadata area, or the roster in the last MiB), once
	 * every check has passed and before anything is written: an SSD that
	 * knows the whole area free keeps its whole spare area for garbage
	 * collection, and with it its sustained write speed.  Nothing relies
	 * on what a deallocated block reads back: data stripes are only ever
	 * written whole, and read only once mapped.  A member that cannot is
	 * no error: discard_out (NULL, or one entry per member) says why. */
	bool discard;
	struct ff_raid_discard *discard_out;
};

/* Write fresh member superblocks; nothing is written unless every check
 * passes.  err names the culprit. */
int ff_raid_create(const char *const *paths, unsigned n, const struct ff_raid_create_params *p,
		   struct ff_err *err);

/* Assemble from member paths in any order.  Missing, stale or failed
 * members leave the array degraded when parity allows; otherwise -EIO
 * with a message naming what is missing. */
int ff_raid_assemble(const char *const *paths, unsigned n, const struct ff_raid_opts *opts,
		     struct ff_raid **out, struct ff_err *err);

/*
 * Member specs (raid/scan.c), as fstab, fsck.framefs and framefs-admin take
 * them: "PATH[,PATH...]" is split; "UUID=<array uuid>" and "LABEL=<label>"
 * (tag names in any case, value optionally in double quotes) are resolved
 * by reading the member superblock of the files matching globs
 * ("GLOB[:GLOB...]", may be NULL), of those matching the globs in conf (one
 * per line, '#' comments; NULL = none) and of every block device,
 * read-only and without the member lock.  Every member of that array found
 * is returned (assembly decides which are stale); several arrays with the
 * label are -ENOTUNIQ, none -ENOENT, each with a message saying what was
 * looked at.  out is freed with ff_member_set_free.
 */
#define FF_MEMBER_SET_MAX 64
#define FF_MEMBERS_CONF "/etc/framefs/members.conf"
struct ff_member_set {
	unsigned n;
	char *path[FF_MEMBER_SET_MAX];
};
int ff_members_resolve(const char *spec, const char *globs, const char *conf,
		       struct ff_member_set *out, struct ff_err *err);
int ff_member_set_add(struct ff_member_set *set, const char *path);
void ff_member_set_free(struct ff_member_set *set);

/* Flush, mark clean (unless read-only) and release. */
int ff_raid_close(struct ff_raid *r);

const struct ff_geom *ff_raid_geom(const struct ff_raid *r);
const char *ff_raid_label(const struct ff_raid *r);
const uint8_t *ff_raid_uuid(const struct ff_raid *r);

/* Log an event and hand it to opts.event_fn (event.c); role -1 = the array.
 * Callers above raid/ post theirs here too (fs/volume/scrub.c). */
void ff_raid_event(struct ff_raid *r, enum ff_event_kind kind, int role, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same about member m, which holds no role yet (a replace's new member). */
void ff_raid_event_member(struct ff_raid *r, enum ff_event_kind kind, int role,
			  const struct ff_member *m, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Member by role (0..nmembers-1); NULL when missing. */
struct ff_member *ff_raid_member(struct ff_raid *r, unsigned role);
enum ff_member_state ff_raid_member_state(const struct ff_raid *r, unsigned role);
unsigned ff_raid_failed_count(const struct ff_raid *r);

#define FF_RAID_REASON_MAX 256
/* What status shows of a role beyond its state. */
struct ff_raid_member_info {
	enum ff_member_state state;
	char reason[FF_RAID_REASON_MAX]; /* failed: why ("vanished: the file was unlinked",
					  * "write error", ...); "" otherwise */
	char note[FF_RAID_REASON_MAX];   /* a warning about its member that fails nothing
					  * (renamed away, loop device detached); "" if none */
	/* missing: the member given at assembly but left out ("" if none):
	 * stale when its event counter is behind the array's (the array was
	 * assembled without it: the array then marks its role failed, as it
	 * does for a member that failed) */
	char left_path[PATH_MAX];
	bool left_stale;
	bool left_failed;   /* the array marks the role failed */
	uint64_t left_events;
	/* the member holding the role (health.c), kept across remounts in the
	 * member superblocks; reset when another member takes the role */
	uint64_t read_errors;
	uint64_t write_errors;
	uint64_t cksum_errors; /* chunks that failed their checksum (reads, scrub) */
	uint64_t healed;       /* ranges rewritten from parity after a read error */
	uint64_t failed_s;     /* wall-clock time it was failed (reason says why), 0 = not */
	/* the member the superblocks name for the role, as last seen holding
	 * it (roster.c): how to find a missing one */
	bool last_known;
	uint64_t last_seen_s, last_size_bytes;
	char last_kind[8], last_model[48], last_serial[24], last_firmware[16];
	char last_path[128];
};
void ff_raid_member_info(struct ff_raid *r, unsigned role, struct ff_raid_member_info *out);

/*
 * The presence check, run about once a second by the array's superblock
 * thread (and on demand here): a member that vanished (ff_member_presence:
 * a file unlinked or replaced, a block device removed) is failed like one
 * that returns I/O errors, with the reason in the log and the status; a
 * block device whose path no longer names it is failed when the next check
 * still says so; a member that was only moved gets a warning (note).
 * Roles being rebuilt, spares and a replacement in progress are checked
 * too.  Returns how many members it failed.
 */
unsigned ff_raid_check_presence(struct ff_raid *r);
#define FF_RAID_PRESENCE_INTERVAL_NS 1000000000ull
uint64_t ff_raid_events(const struct ff_raid *r);
struct ff_raid_stats *ff_raid_stats(struct ff_raid *r);

/* Member holding data chunk `index` of `stripe`. */
unsigned ff_raid_chunk_member(const struct ff_raid *r, uint64_t stripe, unsigned index);

/* Chunks of stripe that failed their checksum, as a mask of logical slots
 * (data 0..ndata-1, then P, Q): counted against the members holding them. */
void ff_raid_note_cksum_errors(struct ff_raid *r, uint64_t stripe, uint32_t slots);

/* Mark a member failed (persisted in the others' superblocks). */
int ff_raid_fail_member(struct ff_raid *r, unsigned role, const char *cause);

/* Write-intent records set so far, and regions resynced at assembly. */
uint64_t ff_raid_intent_marks(const struct ff_raid *r);
uint64_t ff_raid_resync_regions(const struct ff_raid *r);

/*
 * ---- growing (grow.c) ----
 *
 * A grown array lays its DATA rows out in one of two geometries: the old
 * one (the level and width it had before the grow, over roles
 * 0..old nmembers-1) or the new one (over every role).  A row's chunks sit
 * at the same member offsets in both, so a row nothing lives in may be
 * written in the new geometry at once, and a row keeps the old one until
 * the filesystem has moved what lives in it.  Which geometry each row is
 * in is the filesystem's to know: it says so in every request
 * (FF_RAID_IO_OLD_GEOM) and, for the engine's own walks over the rows
 * (rebuild, the resync after an unclean shutdown), through the row hook.
 * Until the hook is set, a grown array rebuilds nothing and holds the
 * resync back; setting it runs that resync before it returns.
 *
 * The META space keeps the layout it was made with (meta_members): its
 * mirror copies survive what the old level survives.
 */
/* The old geometry, NULL when the array is not grown. */
const struct ff_geom *ff_raid_geom_old(const struct ff_raid *r);
/* row_old(arg, row): row is laid out in the old geometry.  Set once the
 * filesystem knows (it answers from its own records, without blocking);
 * 0, or the deferred resync's error. */
int ff_raid_set_row_geom(struct ff_raid *r, bool (*row_old)(void *arg, uint64_t row), void *arg);
/*
 * Grow a closed array: add the members `add` (nadd >= 1) to the array whose
 * members are `paths`, which must all be present and healthy.  Every check
 * runs before the first write (a member too small, one that carries a
 * signature without force, one of this or another array, too many
 * members, an array grown already and not finished) and err says which
 * and what to do.  The new members' superblocks are written first, then
 * the old members'; a stop in between leaves old members one event behind
 * with the geometry the grown superblocks call old, which assembly takes
 * as current.  Afterwards every row is old until the filesystem says
 * otherwise.
 */
int ff_raid_grow(const char *const *paths, unsigned n, const char *const *add, unsigned nadd,
		 bool force, struct ff_err *err);
/* Did a grow write `added` into the array of paths already (a grow that
 * stopped after the superblocks: 1), or not (0)?  -errno if unreadable. */
int ff_raid_grow_written(const char *const *paths, unsigned n, const char *added);
/* ff_raid_grow's checks alone: 0 when it would grow, nothing written. */
int ff_raid_grow_check(const char *const *paths, unsigned n, const char *const *add,
		       unsigned nadd, bool force, struct ff_err *err);
/* Every row is in the new geometry now: forget the old one (superblocks). */
int ff_raid_grow_finish(struct ff_raid *r);

/* ---- spares, replacement, rebuild (rebuild.c) ---- */

#define FF_SPARES_MAX 8

/* Add a member: it takes over a failed role at once (and is rebuilt), or
 * waits as a hot spare for the next failure. */
int ff_raid_add(struct ff_raid *r, const char *path, bool force, struct ff_err *err);
/*
 * Re-add a member that was missing briefly (md's --re-add): its superblock
 * must name this array, a role that is dead now and that no other member
 * has taken since, and exactly the event count the array last wrote to it
 * while the written-while-degraded bitmap records the role (degraded.c).
 * Then only the regions written without it are rebuilt; the member serves
 * reads everywhere else at once.  Refused (-EINVAL, err says why and that
 * add --force or replace rebuilds it in full) when the bitmap cannot prove
 * what it missed; -EBUSY while a rebuild or replace runs.
 */
int ff_raid_readd(struct ff_raid *r, const char *path, struct ff_err *err);
/* Copy role OLD's contents onto NEW while OLD keeps serving; NEW takes the
 * role when the copy is done (ff_raid_rebuild_wait waits for it).  If OLD
 * fails meanwhile, NEW is rebuilt from parity instead. */
int ff_raid_replace(struct ff_raid *r, unsigned role, const char *path, bool force,
		    struct ff_err *err);
/* Role being replaced, or -1. */
int ff_raid_replacing(const struct ff_raid *r);

/* Take a failed (or missing) role's member out, or a spare by path. */
int ff_raid_remove(struct ff_raid *r, const char *path, struct ff_err *err);
unsigned ff_raid_spare_count(const struct ff_raid *r);
const struct ff_member *ff_raid_spare(const struct ff_raid *r, unsigned i);
/* Which stripes the filesystem uses: those are rebuilt first. */
void ff_raid_set_alloc_query(struct ff_raid *r, bool (*fn)(void *arg, uint64_t stripe), void *arg);
/* Bytes per second while foreground I/O runs (min) and when idle (max, 0 = no limit). */
void ff_raid_set_rebuild_rate(struct ff_raid *r, uint64_t min_bps, uint64_t max_bps);
/* Start (or resume from its checkpoint) the rebuild of REBUILDING members. */
int ff_raid_rebuild_start(struct ff_raid *r);
int ff_raid_rebuild_wait(struct ff_raid *r);

struct ff_raid_rebuild_status {
	bool active;
	uint32_t members;    /* being rebuilt */
	unsigned phase;      /* 0 metadata, 1 allocated stripes, 2 the rest, 3 done */
	double fraction;     /* 0..1 */
	double mb_per_s;
	double eta_s;
	uint64_t bytes_done;
	int error;
	/* a re-add: only the regions written while the member was away */
	bool readd;
	uint64_t readd_regions;      /* data regions to resync ... */
	uint64_t readd_meta_groups;  /* ... and metadata row groups */
	uint64_t readd_region_bytes; /* data bytes per region */
	uint64_t units_rebuilt;      /* stripes and metadata rows written (any rebuild) */
};
void ff_raid_rebuild_status(struct ff_raid *r, struct ff_raid_rebuild_status *st);

/* Asynchronous I/O. 0 when accepted (done will be called), else -errno
 * (done is not called).  Unaligned or out-of-range requests: -EINVAL. */
int ff_raid_submit(struct ff_raid *r, struct ff_raid_io *io);

/* Synchronous helpers: submit and wait (done and priv are set here). */
int ff_raid_submit_wait(struct ff_raid *r, struct ff_raid_io *io);
int ff_raid_rw(struct ff_raid *r, int op, int space, uint64_t off, void *buf, uint64_t len);
int ff_raid_flush(struct ff_raid *r);
/* True when a DATA-space write completed after the last flush was issued:
 * a caller about to make such writes reachable (a journal commit) needs a
 * flush first.  Writes are counted before their done callback runs. */
bool ff_raid_data_unflushed(struct ff_raid *r);

#endif
