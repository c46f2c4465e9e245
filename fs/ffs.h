/* SPDX-License-Identifier: MIT */
/*
 * The framefs filesystem library: mkfs, mount, and POSIX operations by
 * inode number.  The FUSE daemon is a thin layer over this; mkfs, fsck and
 * the tests use it directly.  Every function returns 0 (or a count) or
 * -errno.
 */
#ifndef FFS_H
#define FFS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "io/ff_common.h"

struct ffs;

struct ff_event; /* raid/raid.h */

struct ffs_opts {
	bool ro;
	bool force_clean;
	unsigned raid_workers;        /* default 2 */
	unsigned raid_write_window;   /* 0: the engine's default (struct ff_raid_opts) */
	size_t meta_cache_bytes;      /* default 32 MiB */
	size_t write_buffer_bytes;    /* stripe-assembly buffers, default 160 MiB */
	size_t read_cache_bytes;      /* whole-stripe read cache, default 128 MiB */
	size_t patch_cache_bytes;     /* the newest patched blocks (fs/data/pcache.c), default 128 MiB;
	                               * FFS_PATCH_CACHE_OFF: none */
	unsigned commit_interval_ms;  /* background commit, default 5000 */
	unsigned readahead_stripes;   /* default 4 */
	unsigned stuck_request_ms;    /* a request in flight longer is logged, default 10000 */
	unsigned max_read_errors;     /* struct ff_raid_opts: 0 = the engine's default */
	/* Tests only (io/fault.h): fault rules for the members and the power-loss
	 * undo log's directory, NULL for none.  The daemon takes them from the
	 * environment (FRAMEFS_FAULT, FRAMEFS_UNDO_DIR); the library reads none. */
	const char *fault_spec;
	const char *undo_dir;
	/* Events (raid/raid.h: member failures, rebuild, scrub findings) go to
	 * event_fn, which must not block: it queues them (fs/daemon/events.c). */
	void (*event_fn)(void *ctx, const struct ff_event *ev);
	void *event_ctx;
};

#define FFS_PATCH_CACHE_OFF SIZE_MAX

struct ffs_stats {
	_Atomic uint64_t user_bytes;       /* bytes of the read and write requests users made:
					    * a grow's restripe takes a change as files in use */
	_Atomic uint64_t stripe_writes;    /* full stripes written */
	_Atomic uint64_t stripe_fills;     /* partial stripes completed from the array first */
	_Atomic uint64_t stripe_reads;
	_Atomic uint64_t readahead;
	_Atomic uint64_t rcache_hits;
	_Atomic uint64_t reads_again;      /* reads redone: the file's map moved under them (data.c) */
	_Atomic uint64_t direct_reads;     /* reads into a request's own buffer, one per run of stripes (data.c) */
	_Atomic uint64_t direct_reads_unwaited; /* of those, runs of reads no thread waited for (async) */
	_Atomic uint64_t crc_errors;       /* data chunks that failed their checksum */
	_Atomic uint64_t crc_repaired;
	_Atomic uint64_t meta_repaired;    /* metadata copies rewritten after a bad read */
	_Atomic uint64_t commits;
	/* write-buffer waits, by reason (fs/data/wbuf.c, the pool's comment) */
	_Atomic uint64_t wbuf_wait_pool;    /* the pool was empty */
	_Atomic uint64_t wbuf_wait_inode;   /* the file had its most buffers, all in flight */
	_Atomic uint64_t wbuf_wait_rewrite; /* the stripe was still being written */
	_Atomic uint64_t wbuf_evictions;    /* partial stripes sent out early to free a buffer */
	/* the small-data class (fs/meta/small.c) */
	_Atomic uint64_t small_stores;      /* small files written to pool blocks */
	_Atomic uint64_t small_promotions;  /* small files moved to stripes */
	_Atomic uint64_t small_nospc;       /* small files sent to a stripe: the pool was at its reserve */
	/* packed tails (fs/data/tail.c) */
	_Atomic uint64_t tail_writes;       /* tails sent to a tail stripe */
	_Atomic uint64_t tail_packed;       /* tails written and mapped */
	_Atomic uint64_t tail_stripes;      /* tail stripes opened */
	_Atomic uint64_t tail_busy;         /* tails sent to a stripe of their own: every tail stripe busy */
	_Atomic uint64_t patch_writes;      /* small overwrites sent as patches (patch.c) */
	_Atomic uint64_t patch_blocks;      /* 4 KiB blocks they held */
	_Atomic uint64_t patch_merges;      /* patched stripes rewritten whole */
	_Atomic uint64_t merges_background; /* of those, merged by the merge thread in a buffer of its own */
	_Atomic uint64_t patch_reads;       /* patched blocks read from the members (patch.c) */
	_Atomic uint64_t patch_cache_hits;  /* patched blocks found in the patch cache instead (pcache.c) */
};

/* Requests in flight (fs/base/watch.c).  The daemon brackets each request it
 * serves; at most FFS_REQ_SLOTS threads are tracked. */
#define FFS_REQ_SLOTS 64
struct ffs_req_slot;
struct ffs_req_slot *ffs_req_begin(struct ffs *fs, const char *op, uint64_t ino);
void ffs_req_end(struct ffs_req_slot *s);

struct ffs_req_info {
	unsigned in_flight;
	uint64_t oldest_age_ns;       /* 0 with nothing in flight */
	const char *oldest_op;
	uint64_t oldest_ino;
	const char *oldest_wait;      /* what it waits for; NULL: running */
	uint64_t stuck_ns;            /* the watchdog's threshold */
	uint64_t stuck;               /* requests logged as stuck since mount */
	uint64_t untracked;           /* requests served by threads beyond the table */
};
void ffs_req_info(struct ffs *fs, struct ffs_req_info *out);

/* Request times since mount or the last reset (fs/base/watch.c): per op
 * (wait NULL), and per (op, what it waited for) for the waits the data path
 * and the journal name.  Percentiles are upper bounds within 19%. */
struct ffs_req_time {
	const char *op, *wait;
	uint64_t count, sum_ns, max_ns, p50_ns, p90_ns, p99_ns;
};
/* Up to max rows into out, in the order first seen; *dropped: times of
 * pairs the table had no room for. */
unsigned ffs_req_times(struct ffs *fs, struct ffs_req_time *out, unsigned max, uint64_t *dropped);
void ffs_req_times_reset(struct ffs *fs);
/* A time measured outside a request's own thread (the commit thread's
 * phases, a job's wait for a worker) into the table, under op (literals;
 * what NULL: the whole). */
void ffs_times_add(struct ffs *fs, const char *op, const char *what, uint64_t ns);
#define FFS_REQ_TIME_ROWS 96

struct ff_raid_discard; /* raid/raid.h */

/* What ffs_mkfs laid out, for its summary. */
struct ffs_mkfs_layout {
	uint32_t small_max;           /* bytes (capped to the stripe width), 0: the class is off */
	uint64_t pool_blocks;         /* 4 KiB blocks of the mirrored pool */
	uint32_t version;             /* the format version made */
};

struct ffs_mkfs_params {
	uint32_t level;               /* 5 or 6 */
	uint32_t chunk_bytes;         /* default 512 KiB */
	uint64_t ninodes;             /* 0 = default */
	uint64_t journal_blocks;      /* 0 = default */
	uint32_t small_max;           /* small-file threshold: 0 = FFS_SMALL_DEFAULT, FFS_SMALL_OFF */
	uint32_t version;             /* 0 = FFS_VERSION; tests make older volumes (FFS_VERSION_MIN..) */
	char label[64];
	bool force;
	bool quiet;
	bool discard;                 /* deallocate the data area (ff_raid_create_params) */
	struct ff_raid_discard *discard_out; /* NULL, or one entry per member */
	struct ffs_mkfs_layout *layout_out;  /* NULL, or filled when the volume is made */
};

/*
 * The small-file threshold mkfs sets by default: files up to 64 KiB live in
 * the mirrored pool (fs/meta/small.c says why).  FFS_SMALL_OFF turns the class
 * off.  The metadata area grows to hold the pool they need: 2.5 KiB for
 * each inode asked for with -N (half of them 4 KiB sidecars, and room for
 * an .xml every hundred), or by default 1/512 of the data capacity; the
 * room takes at most a third of each member (small files past it take
 * stripes).
 */
#define FFS_SMALL_DEFAULT (64u * 1024u)
#define FFS_SMALL_OFF UINT32_MAX
#define FFS_SMALL_PER_INODE 2560u
#define FFS_SMALL_DEFAULT_SHARE 512u

/*
 * The metadata area mkfs makes (fs/volume/mount.c meta_member_bytes): what the
 * layout needs, and at least 1/512 of each member.  What it needs: the
 * inode table (-N, or by default FFS_INODES_MIN inodes: the layout gives
 * more, one per 256 KiB of data, where a quarter of the area holds them),
 * FFS_TREES_PER_INODE bytes of pool for each of those inodes' directory
 * entries, extent trees and xattr blocks, the small-file room, and the
 * journal.  On small members this is what decides the area (16 MiB a
 * member at 4 x 1 GiB instead of the engine's 32 MiB default: 2,012 data
 * stripes instead of 1,980, 97.6 % of RAID5's raw capacity left for files
 * instead of 95.9 %); above about 8 GiB a member the 1/512 floor does.
 */
#define FFS_INODES_MIN 16384u
#define FFS_TREES_PER_INODE 1024u

int ffs_mkfs(const char *const *paths, unsigned n, const struct ffs_mkfs_params *p,
	     struct ff_err *err);
int ffs_mount(const char *const *paths, unsigned n, const struct ffs_opts *o, struct ffs **out,
	      struct ff_err *err);
/* Write everything out, mark clean, release.  Returns the first error. */
int ffs_unmount(struct ffs *fs);
/*
 * Grow the volume on members `paths` (unmounted) by the members `add`
 * (fs/grow/grow.c), run to the end: every check first (raid.h
 * ff_raid_grow), then the filesystem's records, the array's superblocks,
 * the records taken on, and every file moved to the new width
 * (ffs_grow_resume; restripe false: left to the next mount, whose daemon
 * moves them in the background, ffs_grow_start).  err says why a refusal
 * refused.
 */
int ffs_grow(const char *const *paths, unsigned n, const char *const *add, unsigned nadd,
	     bool force, bool restripe, struct ff_err *err);
/* Mount paths (a grown array), move what is left in the old geometry,
 * unmount: a grow stopped anywhere goes on to its end. */
int ffs_grow_resume(const char *const *paths, unsigned n, struct ff_err *err);
/* What a restripe did (ffs_grow_run). */
struct ffs_grow_progress {
	uint64_t files_moved, bytes_moved;
	uint64_t rows_before, rows_left; /* rows in the old geometry, before and after */
};
/*
 * Move every file still in the old geometry of a grow taken on (fs/grow/):
 * each copied to free rows at the new width, its old map replaced in one
 * transaction.  When no row is left in the old geometry the grow ends
 * (the superblock, then the array).  0 at once when no grow is under way.
 * Nothing else may write the volume meanwhile (offline: ffs_grow).
 */
int ffs_grow_run(struct ffs *fs, struct ffs_grow_progress *pr);
/*
 * Mounted (the daemon, after ffs_mount): the same restripe in a thread of
 * its own, yielding to streams as a rebuild does (ffs_grow_set_rate: min
 * while files are read or written, max when idle, 0 no limit); events
 * grow-started, grow-finished, grow-failed.  0 at once when no grow is
 * under way.  ffs_unmount stops it between two stripes (ffs_grow_stop):
 * the next mount goes on.
 */
int ffs_grow_start(struct ffs *fs);
void ffs_grow_stop(struct ffs *fs);
struct ffs_grow_status {
	bool active;                 /* the thread is moving files */
	bool done;                   /* it ended with every row at the new width */
	int error;                   /* -errno: it stopped on this (the next mount goes on) */
	uint32_t old_nmembers, new_nmembers;
	uint64_t capacity_before, capacity_after; /* data bytes of the rows at each width */
	uint64_t rows_before, rows_left;          /* rows in the old geometry: at start, now */
	uint64_t files_moved, bytes_moved;
	double fraction, mb_per_s, eta_s;         /* of rows_before; since it started */
	bool paused;                 /* active, waiting: the array has no redundancy left */
	char paused_reason[160];     /* why, "" when not paused */
};
void ffs_grow_status(struct ffs *fs, struct ffs_grow_status *st);
#define FFS_GROW_MIN_BPS_DEFAULT (64 * FF_MiB)
#define FFS_GROW_MAX_BPS_DEFAULT 0ull
void ffs_grow_set_rate(struct ffs *fs, uint64_t min_bps, uint64_t max_bps);
/* Write all buffered data and commit (unmount). */
int ffs_sync(struct ffs *fs);
/*
 * framefs-admin sync: ffs_sync, and the background merges queued by then
 * finished (fs/data/merge.c), so that the free space statfs answers moves only
 * with new writes and deletions.  syncfs(2) never reaches a FUSE daemon
 * (fs/ops.c flush_file).  Bounded while files are being written: each
 * inode is written out once, and only the merges queued before the wait
 * are waited for.
 */
int ffs_settle(struct ffs *fs);

/* setattr bits */
enum {
	FFS_SET_MODE = 1 << 0,
	FFS_SET_UID = 1 << 1,
	FFS_SET_GID = 1 << 2,
	FFS_SET_SIZE = 1 << 3,
	FFS_SET_ATIME = 1 << 4,
	FFS_SET_MTIME = 1 << 5,
	FFS_SET_ATIME_NOW = 1 << 7,
	FFS_SET_MTIME_NOW = 1 << 8,
	FFS_SET_CTIME = 1 << 10,
	/* what a write, truncate or chown takes from a file (ffs_kill_priv) */
	FFS_SET_KILL_PRIV = 1 << 11,
};

/*
 * Who asks for FFS_SET_KILL_PRIV or ffs_kill_priv, for the one case where
 * the caller matters: a set-group-ID bit without group execute (a
 * mandatory-locking mark) is taken only from a caller who is neither in
 * the file's group nor has CAP_FSETID (the kernel's
 * setattr_should_drop_sgid).  in_group_or_capable is asked only for such a
 * file, without fs->lock held.  A NULL caller keeps such a bit.
 */
struct ffs_caller {
	bool (*in_group_or_capable)(const struct ffs_caller *c, gid_t gid);
};

/* rename flags (as renameat2) */
enum { FFS_RENAME_NOREPLACE = 1, FFS_RENAME_EXCHANGE = 2 };

int ffs_lookup(struct ffs *fs, uint64_t parent, const char *name, struct stat *st);
/* The generation of inode ino.  It grows each time an inode number is
 * reused, so (ino, generation) names one file for ever: what the kernel puts
 * in a file handle, and what it compares to answer ESTALE for the handle of
 * a deleted file whose number now belongs to another.  -ENOENT if ino is
 * free. */
int ffs_generation(struct ffs *fs, uint64_t ino, uint32_t *gen);
void ffs_forget(struct ffs *fs, uint64_t ino, uint64_t nlookup);
int ffs_getattr(struct ffs *fs, uint64_t ino, struct stat *st);
/* A truncation (FFS_SET_SIZE) stamps mtime and ctime only when the size
 * changes, as truncate(2) does on Linux; an ftruncate or O_TRUNC stamps them
 * always, which the caller asks for with FFS_SET_MTIME_NOW. */
int ffs_setattr(struct ffs *fs, uint64_t ino, const struct stat *attr, int to_set,
		struct stat *st);
/* The same, FFS_SET_KILL_PRIV asked for by caller (NULL: see ffs_caller) */
int ffs_setattr_as(struct ffs *fs, uint64_t ino, const struct stat *attr, int to_set,
		   const struct ffs_caller *caller, struct stat *st);
int ffs_mknod(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev,
	      uid_t uid, gid_t gid, struct stat *st);
int ffs_mkdir(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, uid_t uid,
	      gid_t gid, struct stat *st);
int ffs_symlink(struct ffs *fs, uint64_t parent, const char *name, const char *target, uid_t uid,
		gid_t gid, struct stat *st);
int ffs_readlink(struct ffs *fs, uint64_t ino, char *buf, size_t size);
int ffs_link(struct ffs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	     struct stat *st);
int ffs_unlink(struct ffs *fs, uint64_t parent, const char *name);
int ffs_rmdir(struct ffs *fs, uint64_t parent, const char *name);
int ffs_rename(struct ffs *fs, uint64_t parent, const char *name, uint64_t newparent,
	       const char *newname, unsigned flags);
/* Open files are used through a handle (fh); the open count keeps an
 * unlinked file alive; release writes its partial stripes out. */
int ffs_open(struct ffs *fs, uint64_t ino, int flags, uint64_t *fh);
/* Create and open a regular file in one step. */
int ffs_create(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, uid_t uid,
	       gid_t gid, int flags, struct stat *st, uint64_t *fh);
int ffs_release(struct ffs *fs, uint64_t fh);
/* How a read is served: FFS_READ_KERNEL_AHEAD, the kernel reads ahead for
 * this reader (a buffered one): no stripes are read ahead for it. */
#define FFS_READ_KERNEL_AHEAD 1u
ssize_t ffs_read(struct ffs *fs, uint64_t fh, void *buf, size_t size, uint64_t off, unsigned flags);

/* Zero-copy read: pieces of the stripe cache, pinned until ffs_read_unref.
 * -EAGAIN when the range is not all plain stripe data: use ffs_read. */
#define FFS_RREF_MAX 4
struct ffs_rref {
	unsigned n;
	struct iovec iov[FFS_RREF_MAX];
	void *pin[FFS_RREF_MAX];
};
ssize_t ffs_read_ref(struct ffs *fs, uint64_t fh, size_t size, uint64_t off, unsigned flags,
		     struct ffs_rref *ref);
void ffs_read_unref(struct ffs *fs, struct ffs_rref *ref);
/* A read from the members straight into buf (cap bytes of room, which a
 * range's last chunk may need): -EAGAIN when it cannot be done so (not
 * whole chunks of plain stripes, cached, or a checksum or member error):
 * use ffs_read_ref or ffs_read. */
ssize_t ffs_read_into(struct ffs *fs, uint64_t fh, void *buf, size_t cap, size_t size, uint64_t off);
/* The same without waiting: 0 when the reads are submitted, and done(priv,
 * result, fh, size, off) follows once, on an engine thread (or this one),
 * with the bytes read or -EAGAIN (read through ffs_read instead, on a
 * thread that may wait).  At once: -EAGAIN as above, -EBUSY when the reads
 * in flight are at their bound (ffs_read_into then waits), or another
 * -errno. */
typedef void (*ffs_read_done_fn)(void *priv, ssize_t result, uint64_t fh, size_t size, uint64_t off);
int ffs_read_into_async(struct ffs *fs, uint64_t fh, void *buf, size_t cap, size_t size, uint64_t off,
			ffs_read_done_fn done, void *priv);
ssize_t ffs_write(struct ffs *fs, uint64_t fh, const void *buf, size_t size, uint64_t off);
/* Take from handle fh's file what a write by a caller without CAP_FSETID
 * takes (the kernel leaves it to the filesystem with FUSE's killpriv_v2):
 * set-user-ID, set-group-ID when the group may execute or the caller is not
 * in the file's group (struct ffs_caller), and the security.capability
 * xattr.  Cheap when there is none of them. */
int ffs_kill_priv(struct ffs *fs, uint64_t fh, const struct ffs_caller *caller);
int ffs_flush(struct ffs *fs, uint64_t fh);
int ffs_fsync(struct ffs *fs, uint64_t fh, bool datasync);
int ffs_fallocate(struct ffs *fs, uint64_t fh, int mode, uint64_t off, uint64_t len);
/* fsyncdir: commit the metadata */
int ffs_fsyncdir(struct ffs *fs);

/* Directory iteration from pos (0 = start, then the values returned in
 * next_pos); fill returns nonzero to stop (buffer full).  With plus, st is
 * the entry's whole stat and gen its generation (see ffs_generation); else
 * only st_ino and the type bits of st_mode are set and gen is 0. */
typedef int (*ffs_fill_fn)(void *arg, const char *name, const struct stat *st, uint32_t gen,
			   uint64_t next_pos);
int ffs_readdir(struct ffs *fs, uint64_t ino, uint64_t pos, bool plus, ffs_fill_fn fill,
		void *arg);
int ffs_statfs(struct ffs *fs, struct statvfs *st);

int ffs_getxattr(struct ffs *fs, uint64_t ino, const char *name, void *val, size_t size);
int ffs_setxattr(struct ffs *fs, uint64_t ino, const char *name, const void *val, size_t size,
		 int flags);
int ffs_listxattr(struct ffs *fs, uint64_t ino, char *list, size_t size);
int ffs_removexattr(struct ffs *fs, uint64_t ino, const char *name);

/* ---- scrub (scrub.c) ---- */

#define FFS_SCRUB_REPORT_MAX 64
struct ffs_scrub_status {
	bool active;
	bool repair;                 /* repairs what it finds (else only counts) */
	double fraction;             /* 0..1 of the data space walked */
	uint64_t stripes_checked;
	uint64_t chunks_bad;         /* data chunks that failed their crc32c */
	uint64_t chunks_repaired;
	uint64_t parity_bad;         /* stripes whose parity did not match their data */
	uint64_t parity_repaired;
	uint64_t meta_bad;           /* metadata copies that failed or differed */
	uint64_t meta_repaired;
	uint64_t unreadable;         /* stripes that could not be read or rebuilt */
	uint64_t chunks_unrepairable; /* bad data chunks a repair could not rebuild from parity */
	uint64_t bytes_checked;      /* data stripes and metadata copies read */
	uint64_t meta_chunks_checked; /* 64 KiB chunks of metadata, every copy compared */
	uint64_t start_s;            /* wall clock, seconds since the epoch */
	double mb_per_s, eta_s;
	int error;                   /* -errno: the scrub failed (the array lost too many members) */
	unsigned nreport;            /* files with repaired (or bad) data, first FFS_SCRUB_REPORT_MAX */
	struct {
		uint64_t ino;
		uint64_t fstripe;            /* stripe of the file: byte offset = fstripe * stripe_bytes */
		bool repaired;
		char path[256];              /* "" when the inode has no name any more */
	} report[FFS_SCRUB_REPORT_MAX];
};

/*
 * Scrubs that ended, kept in the superblock (fs/base/format.h): the last
 * FFS_SCRUB_HISTORY_MAX, across remounts.  A read-only mount keeps the
 * record of its own (check-only) scrubs in memory only.
 */
#define FFS_SCRUB_HISTORY_MAX 8u
enum ffs_scrub_result {
	FFS_SCRUB_DONE = 1,          /* walked the whole volume */
	FFS_SCRUB_STOPPED = 2,       /* stopped (scrub stop, unmount) */
	FFS_SCRUB_FAILED = 3,        /* the array failed under it: its counts say little */
};
struct ffs_scrub_past {
	uint64_t seq;                /* 1, 2, ...: the scrub's number on this volume */
	uint64_t start_s, end_s;     /* wall clock, seconds since the epoch */
	bool repair;
	enum ffs_scrub_result result;
	uint64_t bytes_checked, stripes_checked, meta_chunks_checked;
	uint64_t chunks_bad, chunks_repaired, chunks_unrepairable;
	uint64_t parity_bad, parity_repaired;
	uint64_t meta_bad, meta_repaired;
	uint64_t unreadable;
};
/* The history, newest first, into out[FFS_SCRUB_HISTORY_MAX];
 * returns how many records there are.  Nonsense records (fsck clears
 * them) are left out. */
unsigned ffs_scrub_history(struct ffs *fs, struct ffs_scrub_past *out);
/* "done", "stopped", "failed". */
const char *ffs_scrub_result_name(enum ffs_scrub_result r);

int ffs_scrub_start(struct ffs *fs, bool repair);
int ffs_scrub_stop(struct ffs *fs);
/* Block until the running scrub ends; its final status in st (may be NULL). */
int ffs_scrub_wait(struct ffs *fs, struct ffs_scrub_status *st);
void ffs_scrub_status(struct ffs *fs, struct ffs_scrub_status *st);
/* Scrub's rate while foreground I/O runs (min) and when idle (max, 0 = none),
 * in bytes per second.  The defaults, for a scrub started through a mount's
 * control socket and for one whose rate nobody set: */
#define FFS_SCRUB_MIN_BPS_DEFAULT (64 * FF_MiB)
#define FFS_SCRUB_MAX_BPS_DEFAULT 0ull
void ffs_scrub_set_rate(struct ffs *fs, uint64_t min_bps, uint64_t max_bps);

/* A path of inode ino (one of them, for hard links), relative to the root. */
int ffs_ino_path(struct ffs *fs, uint64_t ino, char *buf, size_t len);

/* Volume facts for status displays. */
struct ffs_info {
	char label[64];
	uint8_t uuid[16];
	uint64_t stripe_bytes, nstripes, free_stripes;
	uint64_t reserve_stripes;     /* of the free ones, kept for overwrites (alloc.c) */
	uint64_t ninodes, free_inodes;
	uint64_t commits;
	bool ro;
	uint32_t version;             /* on-disk format (fs/base/format.h) */
	uint32_t small_max;           /* small-file threshold in bytes; 0: the class is off */
	uint64_t pool_start;          /* META block number of the pool's first block */
	uint64_t pool_blocks, free_pool_blocks;
	unsigned merges_pending;      /* stripes queued for, or in, a background merge (merge.c) */
	uint64_t patch_cache_blocks, patch_cache_capacity; /* 4 KiB blocks held, at most (pcache.c) */
};
void ffs_info(struct ffs *fs, struct ffs_info *info);

/* A new label (raid/label.h: what it may be), in the member superblocks
 * first, where LABEL= finds it, then in the filesystem's superblock (a copy
 * that mount makes good).  -EROFS on a read-only mount; -errno with err. */
int ffs_set_label(struct ffs *fs, const char *label, struct ff_err *err);

struct ffs_stats *ffs_stats(struct ffs *fs);
struct ff_raid *ffs_raid(struct ffs *fs);

#endif
