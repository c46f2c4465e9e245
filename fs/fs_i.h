/* SPDX-License-Identifier: MIT */
/*
 * Private to the filesystem library (the .c files in fs/, not fs/daemon/):
 * the mounted filesystem (struct ffs) and the bottom floor, fs/base/.
 * Each floor above has its own private header, which includes the one
 * below: fs/space/space.h, fs/meta/meta.h, fs/data/data.h (and the data
 * path's own fs/data/data_i.h), fs/volume/volume.h; a file includes its
 * floor's.  What the offline tools may use is in fs/ffs_tools.h, which
 * this includes.
 *
 * Floors.  The library's files stand on seven floors, one folder each,
 * bottom first, and every call goes down or stays on its floor
 * (tests/layers/fs_floors.py holds the same table and fails on a call up,
 * or on a file in another floor's folder):
 *   fs/base/    format, meta (the metadata block cache), watch (requests
 *               in flight), repair (damaged data stripes); format, watch
 *               and repair call nothing else in the library
 *   fs/space/   alloc: the allocators, over bitmaps in cached blocks
 *   fs/meta/    super, journal, btree, inode, extent, dir, xattr, small
 *   fs/data/    data, wbuf, rcache, tail, patch, pcache, merge
 *   fs/grow/    grow: an array grown under the volume (its records, at mount)
 *   fs/volume/  mount, check, scrub, tools
 *   fs/         ops: the POSIX operations the daemon calls (API: ffs.h)
 * A floor tells one above it something through a hook the higher one
 * registers (the function pointers in struct ffs: stripes_freed,
 * reclaim_spares, reclaim_reservations, tails_listing, patches_drop,
 * tail_release, old_file_move), and every floor reads what the mount decided from
 * fs->features.  small.c is in fs/meta/: a small file's bytes are metadata
 * pool blocks its inode names, and the inode and extent code call it.
 * watch.c and repair.c are in fs/base/: the journal and the data path call
 * them.
 *
 * Locking.  One mutex, fs->lock, guards all metadata: the block cache, the
 * running transaction, the allocators, the inode cache and every on-disk
 * structure reached through them.  File data has its own locks: each
 * inode's dlock guards its stripe-assembly buffers, and the read cache has
 * its own.  Order: inode dlock, then fs->lock, then the read-cache lock.
 * Nothing blocks on member I/O while holding fs->lock except metadata reads
 * and commits, which are short and bounded.
 */
#ifndef FFS_FS_I_H
#define FFS_FS_I_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "fs/ffs.h"
#include "fs/ffs_tools.h" /* the part of this API the offline tools use */
#include "fs/base/format.h"
#include "raid/raid.h"

/* ---- metadata block cache (meta.c) ------------------------------------ */

/* struct mbuf, ffs_mb_get/new/put/dirty, ffs_meta_read_*, ffs_meta_write_raw: ffs_tools.h */
int ffs_meta_cache_init(struct ffs *fs, size_t max_bytes);
void ffs_meta_cache_free(struct ffs *fs);
void ffs_meta_cache_drop_clean(struct ffs *fs);
/* The cache holds an image of block no newer than its home copies: in the
 * running transaction, or committed and not yet checkpointed. */
bool ffs_meta_home_stale(struct ffs *fs, uint64_t no);

/* ---- repair of damaged data stripes (repair.c): ffs_tools.h ---------------- */

/* ---- the mounted filesystem ------------------------------------------------- */

/* What a mount does (fs->features), decided once at mount from the
 * superblock and the mount options (mount.c): modules read the bits
 * instead of asking the modules that own the features. */
#define FFS_FEAT_TAILS   (1u << 0) /* packed tails (tail.c): version 4 and later, read-write */
#define FFS_FEAT_PATCHES (1u << 1) /* small overwrites as patches (patch.c): with tails, version 5
				    * and later, slot numbers within 16 bits (format.h) */

/*
 * How a data row is laid out, as the filesystem addresses it: its stripe's
 * bytes and data chunks, and the flag its requests carry.  A volume has
 * one; on an array grown under it (raid.h, "growing") the rows its data
 * lived in before the grow keep the old one (fs->geo[1]) until that data
 * is moved, and fs->orows says which rows those are.  Everything keyed by
 * a data stripe (the read cache, tails, patch batches, checksums, repair)
 * asks ffs_row_geo; a file's offsets map to file stripes of its rows'
 * geometry (ffs_file_geo): a file's stripes are all in one.
 */
struct ffs_geo {
	const struct ff_geom *g;
	uint8_t raid_flags;        /* FF_RAID_IO_OLD_GEOM for the old geometry */
};

struct rcache;
struct pcache;
struct wpool;
struct scrub;
struct restripe;
struct merges;
struct tails;

struct ffs {
	struct ff_raid *raid;
	const struct ff_geom *g;
	struct ffs_super *sb;       /* in memory, aligned */
	unsigned sb_next_copy;      /* superblock group written next: 0 = A+C, 1 = B+D */
	unsigned sb_groups_written; /* bit g: this process wrote group g (format.h) */
	bool ro;
	bool checking;              /* fsck.framefs owns repairs: see meta.c, alloc.c */
	unsigned features;          /* FFS_FEAT_*: set once at mount (mount.c), 0 for fsck */
	pthread_mutex_t lock;
	struct ffs_opts opts;
	uint64_t stripe_bytes;
	struct ffs_geo geo[2];      /* [0] the array's; [1] the old one, on a grown array */
	uint64_t *orows;            /* rows still in geo[1] (one bit a data stripe); NULL: none */
	uint64_t orows_start;       /* its on-disk copy (a grow's record, format.h), 0: none;
				     * a row freed leaves it in the freeing transaction (alloc.c) */
	/* the checksums of data chunks past the checksum table's entry width
	 * (a grow's extension, format.h): width 0 when there is none */
	struct {
		uint64_t start;
		uint32_t width, per_block;
	} csumx;
	/* meta cache */
	struct mbuf **mhash;
	unsigned mhash_size;
	struct mbuf *mslab;         /* max_mbufs buffers made at mount */
	uint8_t *mslab_data;
	struct mbuf *mfree;
	unsigned nmbufs, max_mbufs;
	struct ff_lru lru;          /* the cached blocks, evicted oldest first */
	struct mbuf *tx_head;
	unsigned tx_count;
	struct mbuf *ckpt_head;     /* committed blocks whose home write is pending */
	unsigned nckpt;
	uint64_t tx_stripes_freed;
	/* journal */
	uint64_t j_seq;             /* sequence of the next transaction */
	_Atomic uint64_t pbatch_seq; /* the next patch batch's seq (tail.c, patch.c) */
	uint64_t evicted_tx_seq;    /* newest transaction that changed an inode since evicted */
	uint64_t j_head;            /* next journal block to write (relative) */
	uint64_t j_used;            /* journal blocks since the tail */
	uint8_t *jstage;            /* a transaction laid out in journal order */
	struct mbuf **jlist;        /* its blocks, for the commit in flight */
	struct journal_flight *jflight; /* the commit in flight (journal.c) */
	/* Called by each commit (fs->lock held) to list the open tail stripes
	 * in its record: ffs_tails_listing, which tail.c registers while tails
	 * are on.  A hook, because the journal sits below the tails.  NULL:
	 * the record's list stays zeros. */
	void (*tails_listing)(struct ffs *fs, uint64_t seq, struct ffs_patch_open *po);
	uint64_t jstage_blocks;     /* what jstage and jlist hold: the journal's size */
	uint64_t commits;
	/* reads into a caller's buffer that no thread waits for (data.c) */
	struct direct_read *aread, *aread_free;
	pthread_mutex_t aread_lock;
	/* allocators */
	uint64_t *ibits, *sbits, *mbits;
	uint64_t free_inodes, free_stripes, free_mblocks;
	uint64_t *pending_free;     /* stripes freed in the running transaction */
	size_t npending, cap_pending;
	size_t npending_durable;    /* of them, the first ones a commit made durable, held back
				     * from reuse while reuse_holds > 0 */
	uint64_t pending_reused;    /* entries taken off pending_free's front since mount: a
				     * commit names its frees by mark (ffs_alloc_pending_mark) */
	unsigned reuse_holds;       /* readers holding reuse off (ffs_alloc_reuse_hold) */
	uint64_t stripe_cursor;
	/* Called by ffs_free_stripes (fs->lock held) for each run it frees:
	 * the read cache (rcache.c) registers it to drop its copies.  A hook,
	 * because the allocator sits below the read cache.  NULL: no cache. */
	void (*stripes_freed)(struct ffs *fs, uint64_t first, uint64_t count);
	/* Called by the allocator when every free stripe is reserved ahead
	 * (fs->lock held), in this order: the tail slots give back their
	 * spares (tail.c registers it), then the cached inodes the unused
	 * part of their reservations (inode.c).  Hooks, because the allocator
	 * sits below both.  NULL: nothing to give back. */
	void (*reclaim_spares)(struct ffs *fs);
	void (*reclaim_reservations)(struct ffs *fs);
	/* Called by the extent map (extent.c: fs->lock held, in the running
	 * transaction) as file stripes leave it: the patches of file stripes
	 * [f0, f1) go (patch.c ffs_patch_drop), and a tail extent's rows in
	 * tail stripe p go back (tail.c ffs_tail_release).  Hooks, because the
	 * extent map sits below both; whoever makes a struct ffs registers
	 * them (ffs_hooks_init: mount.c, check.c). */
	int (*patches_drop)(struct ffs *fs, struct finode *fi, uint64_t f0, uint64_t f1);
	int (*tail_release)(struct ffs *fs, uint64_t p);
	/* Called by the data path (data.c, no lock held) before it changes a
	 * file whose stripes are in the old geometry of an array grown under
	 * the volume: the file moved to the array's geometry first
	 * (fs/grow/restripe.c ffs_grow_move_now, which ffs_grow_mount registers
	 * on a read-write mount with old rows).  A hook, because the data path
	 * sits below the grow.  NULL: such a file refuses changes (-EROFS). */
	int (*old_file_move)(struct ffs *fs, struct finode *fi);
	/* inode cache */
	struct finode **ihash;
	unsigned ihash_size;
	uint64_t flush_pass;        /* flush_all passes so far (mount.c) */
	unsigned ninodes_cached;
	/* data path */
	struct wpool *wpool;
	struct rcache *rcache;
	struct pcache *pcache;      /* the newest patched blocks (pcache.c); NULL: none */
	struct scrub *scrub;
	struct restripe *restripe;  /* a grow's restripe (fs/grow/restripe.c); NULL: none */
	struct merges *merges;      /* merges in the background (merge.c) */
	struct watch *watch;        /* requests in flight (watch.c) */
	uint8_t *small_buf;         /* one block for small-data reads (fs->lock) */
	struct tails *tails;        /* open tail stripes (tail.c); NULL: tails off */
	/* background commit */
	pthread_t commit_thread;
	bool commit_thread_started;
	bool stopping;
	pthread_cond_t commit_cond;
	pthread_cond_t committed_cond;  /* a commit finished (group commit) */
	uint64_t commit_want;           /* highest transaction a flusher waits for */
	uint64_t commit_asked_ns;       /* when a flusher first asked since the last commit began (commit_start) */
	int commit_err;                 /* of the last commit */
	uint64_t commit_failures;       /* commits the commit thread saw fail */
	uint64_t last_commit_ns;
	/* statistics */
	struct ffs_stats stats;
};

/* The geometry data stripe p is in (struct ffs_geo); no lock: a row's bit
 * changes only when nothing maps it. */
static inline const struct ffs_geo *ffs_row_geo(const struct ffs *fs, uint64_t p)
{
	/* one bit test on a grown volume, none otherwise */
	return fs->orows && ((__atomic_load_n(&fs->orows[p / 64], __ATOMIC_RELAXED) >> (p % 64)) & 1)
	       ? &fs->geo[1] : &fs->geo[0];
}

/* The geometry of fi's stripes: that of the row its first mapped stripe is
 * in; the array's for a file that maps none (extent.c; fs->lock held). */
const struct ffs_geo *ffs_file_geo(struct ffs *fs, struct finode *fi);

/* Set fs->geo from the array (fs->g, and its old geometry when grown). */
void ffs_geo_init(struct ffs *fs);

/* The hooks of struct ffs that do not depend on the mount's features: set
 * by whoever makes one (mount.c ffs_mount, check.c ffs_check_open). */
void ffs_hooks_init(struct ffs *fs);

/* ---- requests in flight (watch.c) -------------------------------------- */

int ffs_watch_start(struct ffs *fs);
void ffs_watch_stop(struct ffs *fs);
/* Name what this thread's request waits for until ffs_watch_wait_end(the
 * returned value); no-ops on threads that serve no request. */
const char *ffs_watch_wait_begin(const char *what);
void ffs_watch_wait_end(const char *prev);

#endif
