/* SPDX-License-Identifier: MIT */
/*
 * Private to the file data path (fs/data/), shared by its seven files:
 * data.c (the API: ffs_data_read/write/flush/truncate/fallocate), wbuf.c
 * (write buffers: stripe assembly, the pool, the completion thread),
 * rcache.c (the stripe read cache and read-ahead), tail.c (packed tails),
 * patch.c (patches), merge.c (background merges) and pcache.c (the patch
 * cache); tests/unit/test_fs.c includes it too.  What the rooms above call
 * of the data path is in fs/data/data.h.
 *
 * Locking, in order: a file's dlock (its buffers), then fs->lock
 * (metadata), then the pool's lock or the read cache's lock (leaves).
 * Nobody waits for a pool buffer or a cache entry while holding a dlock or
 * fs->lock (see the comments at struct wpool and rc_get).
 */
#ifndef FFS_DATA_I_H
#define FFS_DATA_I_H

#include "fs/data/data.h"

#define WB_IVALS 16
#define WB_PATCHES 32 /* patch records one buffer may make (patch.c) */
#define WB_PER_INODE 64 /* bounds the linear ffs_wb_find, not the pool's use */
#define WB_NO_STRIPE UINT64_MAX /* pstripe of a stripe-0 buffer made when none was free */

/* A stripe-sized write buffer (wbuf.c); its owner's dlock guards it. */
struct wbuf {
	struct wbuf *next;          /* the owner's list, or the free list */
	struct wbuf *pprev, *pnext; /* the pool's partial list while partial */
	uint64_t fstripe;
	uint8_t *data;
	unsigned nival;
	struct { uint64_t a, b; } ival[WB_IVALS]; /* filled byte ranges, sorted, disjoint */
	bool writing;
	bool force_stripe;          /* to a stripe of its own: neither small nor a tail (moving to stripes) */
	bool background;            /* the merge thread's: no user data, the stripe's patches
				     * laid over it and written whole (merge.c) */
	uint64_t hi;                /* end of the highest byte a write put here (not a fill) */
	uint64_t born_ns;
	uint64_t writing_ns;        /* when it was marked writing, and when the engine was */
	uint64_t written_ns;        /* done with it: the times of "framefs-admin times" */
	struct finode *fi;          /* owner, from attach until the buffer is free again */
	/* while writing */
	struct ffs *fs;
	uint64_t pstripe;
	bool in_place;
	int tslot;                  /* a tail (tail.c): its slot, rows [trow0, trow0 + trows); -1: a stripe */
	uint32_t trow0, trows;
	uint64_t tretired;          /* the tail stripe its slot held before (ffs_patch_submit) */
	unsigned npatch;            /* > 0: the buffer goes as these patches (patch.c), not a tail */
	struct { uint16_t b0, n, slot0; } patch[WB_PATCHES];
	struct wbuf *gnext;         /* patches: the file's other buffers sent in the same rows */
	uint32_t crc[FF_MEMBERS_MAX];
	struct ff_raid_io io;
	struct wbuf *done_next;
};

/* A read-cache entry (rcache.c): data is valid while a reference is held. */
struct rentry {
	uint64_t pstripe;
	uint8_t *data;
	int state;
	int err;
	uint32_t bad_chunks;       /* chunks that failed their checksum */
	unsigned refs;
	struct rentry *hnext;
	struct ff_lru_node lru;    /* on the cache's LRU list, always */
	struct ff_raid_io io;
	struct ffs *fs;
	uint32_t crc[FF_MEMBERS_MAX];
	uint32_t vlen;             /* bytes of each chunk crc covers (ffs_csum_vlen) */
	bool verify;
	bool ahead;                /* loaded by a read-ahead and not read since: a read-ahead
				    * never evicts it (rc_victim) */
	bool stale;                /* invalidated while loading: discard on arrival */
	bool superseded;           /* the stripe changed while this copy was held or loading:
				    * good for its holders, never written back (rc_repair) */
};

/* How rc_get waits. */
enum {
	RC_AHEAD,      /* start a read-ahead, never wait: NULL */
	RC_WAIT,       /* wait for a free entry and for the load */
	RC_WAIT_LOAD,  /* wait for the load, not for a free entry (NULL if none) */
};

/* A condition wait that names what it waits for in the request's slot (watch.c). */
static inline void wait_noted(pthread_cond_t *cond, pthread_mutex_t *lock, const char *what)
{
	const char *prev = ffs_watch_wait_begin(what);

	pthread_cond_wait(cond, lock);
	ffs_watch_wait_end(prev);
}

/* ---- write buffers (wbuf.c) ---------------------------------------------- */

/* The pool and its completion thread (mount), and their teardown. */
int ffs_wpool_init(struct ffs *fs);
int ffs_wpool_start(struct ffs *fs);
void ffs_wpool_free(struct ffs *fs);
/* The buffer for file stripe k, attached to fi (dlock held, dropped while
 * waiting); NULL with *err on error. */
struct wbuf *ffs_wb_for(struct ffs *fs, struct finode *fi, uint64_t k, int *err);
struct wbuf *ffs_wb_find(struct finode *fi, uint64_t fstripe);
void ffs_ival_add(struct wbuf *wb, uint64_t a, uint64_t b);
bool ffs_ival_covers(const struct wbuf *wb, uint64_t a, uint64_t b);
int ffs_wb_fill(struct ffs *fs, struct finode *fi, struct wbuf *wb);
void ffs_wb_drop(struct ffs *fs, struct finode *fi, struct wbuf *wb, int err);
int ffs_wb_writeout(struct ffs *fs, struct finode *fi, struct wbuf *wb);
/* The same for fsync and close: buffers that go as patches take the file's
 * other partial buffers that can along, in the same rows (ffs_patch_gather). */
int ffs_wb_writeout_flush(struct ffs *fs, struct finode *fi, struct wbuf *wb);
uint64_t ffs_reserve_want(struct ffs *fs, struct finode *fi, uint64_t *hint);
int ffs_wb_reserve_stripes(struct ffs *fs, struct finode *fi, uint64_t hint, uint64_t want,
		    bool overwrite, uint64_t *first, uint64_t *got);
void ffs_release_reservation(struct ffs *fs, struct finode *fi);


/* ---- packed tails (tail.c) ---------------------------------------------------- */

int ffs_tails_init(struct ffs *fs);
void ffs_tails_free(struct ffs *fs);
/* Rows buffer wb takes as a tail, 0: a stripe of its own (dlock held). */
uint32_t ffs_tail_rows(struct ffs *fs, struct finode *fi, struct wbuf *wb);
/* Send it (marked writing, no lock held): 0 sent, 1 no tail stripe free.
 * done: the engine's completion of the write (the write buffers'). */
int ffs_tail_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb, uint32_t rows,
		void (*done)(struct ff_raid_io *io));
/* A slot of an open tail stripe taken for a patch batch (ffs_tail_batch_take:
 * waits for one when every slot is busy, no lock held): the stripe's image
 * the batch is laid in, the stripe, the batch's seq and its first row. */
struct tslot;
struct tail_batch {
	struct tslot *slot;
	uint8_t *img;
	uint64_t p, seq;
	uint32_t row0;
};
void ffs_tail_batch_take(struct ffs *fs, struct wbuf *wb, uint32_t rows, struct tail_batch *tb);
/* Write the batch's rows [row0, row0 + rows), laid in the image, as a tail
 * is written (done: as ffs_tail_submit's). */
void ffs_tail_batch_send(struct ffs *fs, struct finode *fi, struct wbuf *wb, const struct tail_batch *tb,
		     uint32_t rows, void (*done)(struct ff_raid_io *io));
/* Map a tail written (completion thread, fs->lock held). */
int ffs_tail_done(struct ffs *fs, struct finode *fi, struct wbuf *wb);
/* A tail stripe no longer open: freed if its entry says nothing points
 * into it.  p must be allocated (its entry is its own).  fs->lock held. */
int ffs_tail_closed(struct ffs *fs, uint64_t p);
/* Bytes [o, o+n) of a file stripe held as a tail at rows [row0, row0+rows) of p. */
int ffs_tail_read(struct ffs *fs, uint64_t p, uint32_t row0, uint32_t rows, uint64_t o, size_t n,
	      uint8_t *dst);

/* ---- merges in the background (merge.c) -------------------------------------- */

/* Queue file stripe k of fi for a merge: false when the queue is full or
 * stopped (the caller merges itself).  Any lock may be held. */
bool ffs_merge_defer(struct ffs *fs, struct finode *fi, uint64_t k);
/* Whether file stripe k has patches past their share (fs->lock held). */
bool ffs_patch_past_share(struct ffs *fs, struct finode *fi, uint64_t k);

/* ---- patches (patch.c) ----------------------------------------------------- */
/* Byte offset in a stripe of slot s (format.h: row s / ndata of chunk s % ndata). */
static inline uint64_t patch_slot_offset(const struct ff_geom *g, uint32_t s)
{
	return (uint64_t)(s % g->ndata) * g->chunk_bytes + (uint64_t)(s / g->ndata) * FFS_BLOCK;
}
/* Whether wb goes as patches: plans them in wb->patch (filling the partial
 * blocks at their edges) and says how many, or 0: it is rewritten whole,
 * or PATCH_MERGE: rewritten whole with the stripe's patches laid over
 * (counted where the rewrite is decided, wbuf.c).  dlock held. */
#define PATCH_MERGE (-1)
int ffs_patch_plan(struct ffs *fs, struct finode *fi, struct wbuf *wb);
/* Gather the file's other partial buffers that go as patches behind wb (on
 * wb->gnext), as many as one tail stripe's rows hold.  dlock held. */
void ffs_patch_gather(struct ffs *fs, struct finode *fi, struct wbuf *wb);
/* Rows the patches of wb and its gathered buffers take. */
uint32_t ffs_patch_rows(const struct ffs *fs, const struct wbuf *wb);
/* Send the patches planned in wb and the buffers gathered behind it, all
 * marked writing, no lock held, in the rows of a tail stripe (tail.c):
 * waits for a slot when every one is busy.  done: as ffs_tail_submit's. */
void ffs_patch_submit(struct ffs *fs, struct finode *fi, struct wbuf *wb,
		  void (*done)(struct ff_raid_io *io));
/* Bytes [o, o + n) of file stripe k, read into dst from its base stripe,
 * get what its patches hold instead, but for those `keep` holds (a buffer
 * of k filling its gaps, or NULL).  No lock held; dlock when keep. */
int ffs_patch_overlay(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t o, size_t n, uint8_t *dst,
		  const struct wbuf *keep);
/* Fill the gaps of wb within [a, b) (ffs_wb_fill is the whole stripe). */
int ffs_wb_fill_span(struct ffs *fs, struct finode *fi, struct wbuf *wb, uint64_t a, uint64_t b);

/* ---- the patch cache (pcache.c) -------------------------------------------- */

int ffs_pcache_init(struct ffs *fs);
void ffs_pcache_free(struct ffs *fs);
/* Block `slot` of tail stripe p holds blk now (its batch is being sent). */
void ffs_pcache_put(struct ffs *fs, uint64_t p, uint32_t slot, const void *blk);
/* Copy the cached block into blk: false when it is not cached. */
bool ffs_pcache_get(struct ffs *fs, uint64_t p, uint32_t slot, void *blk);
/* No patch points to slots [slot0, slot0 + n) of p any more. */
void ffs_pcache_forget(struct ffs *fs, uint64_t p, uint32_t slot0, uint32_t n);

/* ---- the stripe read cache (rcache.c) ------------------------------------ */

int ffs_rcache_init(struct ffs *fs);
void ffs_rcache_free(struct ffs *fs);
int ffs_stripe_get(struct ffs *fs, uint64_t p, int mode, struct rentry **out);
void ffs_rc_put(struct ffs *fs, struct rentry *e);
int ffs_read_stripe_bytes(struct ffs *fs, uint64_t p, uint64_t off, size_t len, void *dst);
/* Whether stripe p has an entry in the cache (loading, ready or failed). */
bool ffs_rc_present(struct ffs *fs, uint64_t p);
/* The checksums stripe p is verified by, and the bytes of each chunk they
 * cover (fs->lock not held). */
int ffs_stripe_crcs(struct ffs *fs, uint64_t p, uint32_t *crc, uint32_t *vlen);
void ffs_read_ahead(struct ffs *fs, struct finode *fi, uint64_t k, uint64_t size);

#endif
