/* SPDX-License-Identifier: MIT */
/*
 * Private to the filesystem library (the .c files in fs/, not fs/daemon/):
 * the mounted filesystem and its modules.  What the offline tools may use
 * is in fs/ffs_tools.h, which this includes.
 *
 * Floors.  The library's files stand on six floors, bottom first, and
 * every call goes down or stays on its floor (tests/layers/fs_floors.py
 * holds the same table and fails on a call up):
 *   base    format, watch, repair: they call nothing else in the library
 *   cache   meta: the metadata block cache
 *   space   alloc: the allocators, over bitmaps in cached blocks
 *   meta    super, journal, btree, inode, extent, dir, xattr, small
 *   data    data, wbuf, rcache, tail, patch, pcache, merge
 *   volume  ops, mount, check, scrub, tools
 * A floor tells one above it something through a hook the higher one
 * registers (the function pointers in struct ffs: stripes_freed,
 * reclaim_spares, reclaim_reservations, tails_listing, patches_drop,
 * tail_release), and every floor reads what the mount does from
 * fs->features.  small.c is on the meta floor: a small file's bytes are
 * metadata pool blocks its inode names, and the inode and extent code call
 * it.  watch.c and repair.c are on the lowest floor: the journal and the
 * data path call them.  format.c and meta.c are below the allocator, which
 * keeps its bitmaps in cached blocks.
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
#include "fs/format.h"
#include "raid/raid.h"

/* ---- metadata block cache (meta.c) ------------------------------------ */

/* struct mbuf, ffs_mb_get/new/put/dirty, ffs_meta_read_*, ffs_meta_write_raw: ffs_tools.h */
int ffs_meta_cache_init(struct ffs *fs, size_t max_bytes);
void ffs_meta_cache_free(struct ffs *fs);
void ffs_meta_cache_drop_clean(struct ffs *fs);

/* ---- the superblock and batched META writes (super.c) ------------------- */

/* ffs_super_write: ffs_tools.h */
/* META writes submitted together and waited for together. */
struct ffs_batch {
	struct ff_raid_io *io;
	unsigned n, cap;
	unsigned pending;
	int err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};
/* Room for cap requests. */
int ffs_batch_init(struct ffs_batch *b, unsigned cap);
/* Submit the write of nblocks META blocks from block on: the first error is kept. */
int ffs_batch_add_range(struct ffs *fs, struct ffs_batch *b, uint64_t block, void *buf,
			uint64_t nblocks);
/* Wait for every request submitted; the first error, 0 if none.  Frees the
 * requests; the lock and cond are the caller's to destroy. */
int ffs_batch_wait(struct ffs_batch *b);

/* ---- journal (journal.c) ------------------------------------------------ */

/* ffs_journal_commit, ffs_journal_tx_full: ffs_tools.h */
/* The same, but fs->lock (held on entry and on return) is let go while
 * the records are written: for the group-commit thread. */
int ffs_journal_commit_unlocked(struct ffs *fs);
/* Transactions with a sequence below this are durable (fs->lock). */
uint64_t ffs_journal_durable_seq(const struct ffs *fs);
/* The staging buffer and the flight (teardown). */
void ffs_journal_free(struct ffs *fs);
/* Replay committed transactions after the tail; called at mount. */
int ffs_journal_replay(struct ffs *fs, unsigned *replayed);
/* Everything is checkpointed: move the tail to the head (writes the sb). */
int ffs_journal_reset_tail(struct ffs *fs);
/* Write every committed block home, then move the tail (commits first if
 * the running transaction is not empty).  fs->lock held. */
int ffs_journal_checkpoint(struct ffs *fs);
/* A journal tail for a superblock rebuilt without one (fsck): where a
 * replay must start, and how many transactions it will apply. */
int ffs_journal_find_tail(struct ffs *fs, uint64_t *tail_pos, uint64_t *tail_seq, unsigned *ntx);
/* Group commit: make transaction `seq` (and those before it) durable,
 * together with every other flusher's that arrives meanwhile.  fs->lock
 * held (let go while waiting). */
int ffs_commit_wait(struct ffs *fs, uint64_t seq);
/* The group-commit thread (read-write mounts): start, and stop (unmount). */
int ffs_journal_thread_start(struct ffs *fs);
void ffs_journal_thread_stop(struct ffs *fs);

/* ---- allocators (alloc.c) ---------------------------------------------- */

/*
 * Load the three allocation bitmaps (inodes, stripes, pool blocks) into
 * memory with their free counts, for the mount and for fsck
 * (ffs_check_load_bitmaps).  One rule for a bitmap block that no copy of
 * verifies: none of its bits is ever taken as free.  Mounting, the load
 * fails with the read's error and nothing is allocated from a guess;
 * checking (fs->checking), its bits all count as in use and the load goes
 * on, since fsck rewrites every bitmap from what it counts.  -ENOMEM fails
 * it either way.  What was loaded before a failure stays for
 * ffs_alloc_free_all.
 */
int ffs_alloc_load(struct ffs *fs);
void ffs_alloc_free_all(struct ffs *fs);
/* ffs_alloc_inode, ffs_free_inode_bit, ffs_free_mblock, ffs_take_stripes,
 * ffs_csum_set/get: ffs_tools.h */
int ffs_alloc_mblock(struct ffs *fs, uint64_t *no);
/* Reserve (in memory only) `want` contiguous stripes near `hint`, fewer
 * if only shorter runs exist, at least 1, leaving `keep` free (new data
 * keeps ffs_overwrite_reserve, an overwrite 0); *got is the count
 * reserved. */
int ffs_reserve_stripes(struct ffs *fs, uint64_t hint, uint64_t want, uint64_t keep,
			uint64_t *first, uint64_t *got);
/* The stripes new data leaves free for overwrites (alloc.c). */
uint64_t ffs_overwrite_reserve(const struct ffs *fs);
void ffs_unreserve_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Reserved stripes that are now mapped: mark them on disk. */
int ffs_commit_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Free on disk now; reusable only after the transaction commits. */
int ffs_free_stripes(struct ffs *fs, uint64_t first, uint64_t count);
void ffs_alloc_tx_committed(struct ffs *fs, size_t n);
/* Stripe p was freed in the running transaction: clear on disk, still
 * taken in memory until the commit (fs->lock held). */
bool ffs_stripe_freed_in_tx(struct ffs *fs, uint64_t p);
/* Hold off the reuse of freed stripes, and let go (fs->lock held): see alloc.c. */
void ffs_alloc_reuse_hold(struct ffs *fs);
void ffs_alloc_reuse_release(struct ffs *fs);
uint64_t ffs_alloc_free_stripe_count(const struct ffs *fs);
/* Data stripe p is taken (mapped, reserved, or freed by a transaction not
 * yet durable); for readers without fs->lock: the answer may be a moment
 * old.  Every such test calls this one. */
bool ffs_stripe_in_use(const struct ffs *fs, uint64_t p);
/* Inode number ino is allocated (fs->lock held). */
bool ffs_inode_bit_used(const struct ffs *fs, uint64_t ino);
/* META block no is a pool block no one holds (fs->lock held). */
bool ffs_pool_block_free(const struct ffs *fs, uint64_t no);

/* ---- B+tree (btree.c) ---------------------------------------------------- */

/* struct bt_root, ffs_bt_find_ge, ffs_bt_insert, ffs_bt_delete, ffs_bt_update: ffs_tools.h */

/* Largest key <= key. */
int ffs_bt_find_le(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found,
	       void *val, uint16_t *len);
/* Free every node. */
int ffs_bt_destroy(struct ffs *fs, struct bt_root *t);
/* Visit every node block (fsck, statistics): cb returns <0 to stop. */
int ffs_bt_walk(struct ffs *fs, struct bt_root *t, int (*cb)(void *arg, uint64_t block, int level),
	    void *arg);

/* ---- inodes (inode.c, extent.c, xattr.c) ---------------------------------- */

/* struct finode, ffs_iget, ffs_iput, ffs_istore, ffs_inode_new,
 * ffs_extent_map: ffs_tools.h */

int ffs_icache_init(struct ffs *fs);
void ffs_icache_free(struct ffs *fs);
/* Every cached inode gives back the stripes it reserved ahead (fs->lock
 * held): the allocator's fs->reclaim_reservations. */
void ffs_icache_unreserve_all(struct ffs *fs);
/* Free blocks and the inode once it has no links, lookups or opens. */
int ffs_inode_maybe_free(struct ffs *fs, struct finode *fi);
/* Free a regular file's blocks once it has no links or opens (lookups may
 * remain: the inode stays, on the orphan list, and cannot be opened). */
int ffs_inode_drop_data(struct ffs *fs, struct finode *fi);
void ffs_inode_touch(struct finode *fi, bool mtime, bool ctime);
void ffs_inode_stat(const struct ffs *fs, const struct finode *fi, struct stat *st);
int ffs_orphan_add(struct ffs *fs, struct finode *fi);
int ffs_orphan_remove(struct ffs *fs, struct finode *fi);
int ffs_orphans_process(struct ffs *fs, unsigned *freed);

/* Extent map of a regular file, in whole stripes. */
int ffs_extent_lookup(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *pstripe,
		  uint64_t *run, uint32_t *flags);
/* The extent covering fstripe (0), or -ENOENT. */
int ffs_extent_find(struct ffs *fs, struct finode *fi, uint64_t fstripe, struct ffs_extent *x);
/* ffs_extent_map_tail: ffs_tools.h */
/* Unmap and free file stripes [fstripe, end) (a hole punched). */
int ffs_extent_punch(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t end);
/* Unmap and free every stripe at or after fstripe. */
int ffs_extent_truncate(struct ffs *fs, struct finode *fi, uint64_t fstripe);
/* Iterate extents in order: cb returns <0 to stop. */
int ffs_extent_iterate(struct ffs *fs, struct finode *fi,
		   int (*cb)(void *arg, const struct ffs_extent *x), void *arg);

/* xattrs (one block per inode) and long symlinks */
int ffs_xattr_get(struct ffs *fs, struct finode *fi, const char *name, void *val, size_t size);
int ffs_xattr_set(struct ffs *fs, struct finode *fi, const char *name, const void *val, size_t size,
	      int flags);
int ffs_xattr_list(struct ffs *fs, struct finode *fi, char *list, size_t size);
int ffs_xattr_remove(struct ffs *fs, struct finode *fi, const char *name);
int ffs_xattr_drop(struct ffs *fs, struct finode *fi);

/* ---- directories (dir.c) ------------------------------------------------- */

/* ffs_dir_lookup, ffs_dir_add, ffs_dir_remove, ffs_dir_retarget: ffs_tools.h */
/* Next entry with key >= pos: fills name (NUL-terminated), ino, type and
 * the position after it.  -ENOENT at the end. */
int ffs_dir_next(struct ffs *fs, struct finode *dir, uint64_t pos, char *name, uint64_t *ino,
	     uint8_t *type, uint64_t *next_pos);
bool ffs_dir_is_empty(struct ffs *fs, struct finode *dir);

/* ---- file data (data.c, wbuf.c, rcache.c: see data_i.h) -------------------- */

int ffs_data_init(struct ffs *fs);
void ffs_data_free(struct ffs *fs);
/* Write bytes into the file's stripe buffers; full stripes go to the array. */
ssize_t ffs_data_write(struct ffs *fs, struct finode *fi, const void *buf, size_t len, uint64_t off);
ssize_t ffs_data_read(struct ffs *fs, struct finode *fi, void *buf, size_t len, uint64_t off,
		      unsigned flags);
ssize_t ffs_data_read_ref(struct ffs *fs, struct finode *fi, size_t len, uint64_t off,
			  unsigned flags, struct ffs_rref *ref);
void ffs_data_read_unref(struct ffs *fs, struct ffs_rref *ref);
ssize_t ffs_data_read_into(struct ffs *fs, struct finode *fi, void *buf, size_t cap, size_t len,
			   uint64_t off);
int ffs_data_read_into_async(struct ffs *fs, struct finode *fi, uint64_t fh, void *buf, size_t cap,
			     size_t len, uint64_t off, ffs_read_done_fn done_fn, void *priv);
/* Write out every partial stripe of the file (fsync, close). */
int ffs_data_flush(struct ffs *fs, struct finode *fi);
/* The same, and wait for its background merges in flight (merge.c): when
 * it returns the file has no buffer left unless a writer made one
 * meanwhile (unmount and framefs-admin sync: mount.c flush_all).  The
 * file's first write error is returned.  keep: the file stays as its
 * writers left it, its write error for its own fsync or close and its
 * stripes reserved ahead for its next writes (framefs-admin sync, while
 * files are being written). */
int ffs_data_flush_all(struct ffs *fs, struct finode *fi, bool keep);
/* Drop buffered data beyond size and zero the tail of the EOF stripe. */
int ffs_data_truncate(struct ffs *fs, struct finode *fi, uint64_t size);
int ffs_data_fallocate(struct ffs *fs, struct finode *fi, int mode, uint64_t off, uint64_t len);
/* Forget cached stripes (they were freed). */
void ffs_rcache_invalidate(struct ffs *fs, uint64_t pstripe, uint64_t count);
/* Rows were added to tail stripe p and the rows already there are as they
 * were (fs/tail.c; fs->lock held, as for the map and checksum change). */
void ffs_rcache_extended(struct ffs *fs, uint64_t p);
/* Blocks the patch cache holds, and at most (pcache.c). */
void ffs_pcache_usage(struct ffs *fs, uint64_t *blocks, uint64_t *cap);

/* ---- the small-data class (small.c; fs->lock held) -------------------------- */

bool ffs_is_small(const struct finode *fi);
/* The same without fs->lock, for a writer holding fi->dlock with
 * fi->beyond_small raised: see small.c for why it may. */
bool ffs_is_small_unlocked(const struct finode *fi);
uint32_t ffs_small_max(const struct ffs *fs);  /* bytes; 0: the class is off */
/* Bytes [off, off + n) of a small file's stripe 0 (zeros past its blocks). */
int ffs_small_read(struct ffs *fs, struct finode *fi, uint64_t off, size_t n, uint8_t *dst);
/* Make fi small with these len bytes (len <= small_max), in the running
 * transaction, its old blocks (if any) given back.  -ENOSPC: the pool is
 * down to its reserve; the caller writes a stripe instead. */
int ffs_small_store(struct ffs *fs, struct finode *fi, const uint8_t *data, uint64_t len);
/* fi is no longer small (its stripe 0 is mapped, or it is truncated to 0). */
int ffs_small_release(struct ffs *fs, struct finode *fi);
/* Why inode d's small-data fields are nonsense, NULL when sane or not small. */
const char *ffs_small_problem(const struct ffs *fs, const struct ffs_inode *d);
/* The pcsum table and small-data blocks: ffs_pcsum_get, ffs_pcsum_set and
 * ffs_meta_read_sdata (ffs_tools.h: fsck checks them too). */
/* The cache holds an image of block no newer than its home copies: in the
 * running transaction, or committed and not yet checkpointed. */
bool ffs_meta_home_stale(struct ffs *fs, uint64_t no);

/* ---- packed tails (tail.c; see data_i.h for the data path's part) ------------ */

bool ffs_tails_on(const struct ffs *fs);
/* An extent into tail stripe p is gone (fs->lock held): freed with its last. */
int ffs_tail_release(struct ffs *fs, uint64_t p);
/* Unmount: the open tail stripes retired (fs->lock held). */
int ffs_tails_retire_all(struct ffs *fs);
/* The slots' spare stripes back to the allocator; how many there are
 * (free space: given back on demand).  fs->lock held. */
void ffs_tails_drop_spares(struct ffs *fs);
unsigned ffs_tails_spare_count(struct ffs *fs);
/* A repair is about to rewrite stripe p: no more tails go to it.  false:
 * a tail write to it is in flight, try again later.  fs->lock held. */
bool ffs_tail_hold(struct ffs *fs, uint64_t p);
/* The open tail stripes a commit of transaction seq lists for patch
 * replay, and the first batch seq it does not hold (fs->lock held). */
void ffs_tails_listing(struct ffs *fs, uint64_t seq, struct ffs_patch_open *po);
/* Mount: lay the patch batches written after the last commit over their
 * files again (apply), or only count them (fs->lock held): how many. */
int ffs_patch_replay(struct ffs *fs, bool apply, unsigned *count);
/* One more tail or patch points into tail stripe p (fs->lock held). */
int ffs_tail_grab(struct ffs *fs, uint64_t p);

/* ---- patches (patch.c; the data path's part in data_i.h) -------------------- */

/* Small overwrites go as patches on this mount: fs->features & FFS_FEAT_PATCHES. */
/* Blocks [b0, b0+n) of file stripe f are in slots [slot0, slot0+n) of tail
 * stripe p (crc: each one's ffs_patch_crc), replacing older patches of them (fs->lock held, in the running
 * transaction; p's live count is the caller's). */
int ffs_patch_add(struct ffs *fs, struct finode *fi, uint64_t f, uint32_t b0, uint32_t n,
		  uint64_t p, uint32_t slot0, const uint32_t *crc);
/* File stripes [f0, f1) lose their patches; [0, UINT64_MAX) the tree too. */
int ffs_patch_drop(struct ffs *fs, struct finode *fi, uint64_t f0, uint64_t f1);
/* Whether the file may have patches (fs->lock held). */
bool ffs_patch_any(const struct ffs *fs, const struct finode *fi);

/* ---- repair of damaged data stripes (repair.c): ffs_tools.h ---------------- */

/* ---- the mounted filesystem ------------------------------------------------- */

/* What a mount does (fs->features), decided once at mount from the
 * superblock and the mount options (mount.c): modules read the bits
 * instead of asking the modules that own the features. */
#define FFS_FEAT_TAILS   (1u << 0) /* packed tails (tail.c): version 4 and later, read-write */
#define FFS_FEAT_PATCHES (1u << 1) /* small overwrites as patches (patch.c): with tails, version 5
				    * and later, slot numbers within 16 bits (format.h) */

struct rcache;
struct pcache;
struct wpool;
struct scrub;
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
	int commit_err;                 /* of the last commit */
	uint64_t commit_failures;       /* commits the commit thread saw fail */
	uint64_t last_commit_ns;
	/* statistics */
	struct ffs_stats stats;
};

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
void ffs_scrub_free(struct ffs *fs);
/* Merges in the background (merge.c): the thread (started with the data
 * path, stopped first at unmount: what is queued is dropped), a wait until
 * it has done what was queued when the wait began (ffs_settle), and the
 * stripes queued or being merged now. */
int ffs_merges_start(struct ffs *fs);
void ffs_merges_stop(struct ffs *fs);
void ffs_merges_free(struct ffs *fs);
void ffs_merges_drain(struct ffs *fs);
unsigned ffs_merges_pending(struct ffs *fs);

#endif
