/* SPDX-License-Identifier: MIT */
/*
 * The filesystem library's API for the offline tools: fsck.framefs
 * (mkfs/fsck/, through fs/volume/check.h, which includes this), mkfs.framefs
 * (mkfs/mkfs.c: fs/ffs.h is enough for it today) and the fsck corpus's
 * tools in tests/fsck/ (ffsck-corrupt, ffsck-fuzz, ffsck-image).  The
 * daemon (fs/daemon/) uses fs/ffs.h only.
 *
 * A tool may:
 *  - open a volume step by step and close it (fs/volume/check.h), and read its
 *    superblock, geometry and array through the accessors below;
 *  - read and write metadata blocks through the library's cache (ffs_mb_*)
 *    or raw (ffs_meta_*), and commit what it dirtied through the journal;
 *  - change inodes, directories, extent maps, B+tree records, the checksum
 *    table and the allocators through the functions declared here, which
 *    keep the library's in-memory state in step with the disk;
 *  - change the on-disk image `d` of a struct finode it holds (then
 *    ffs_istore), and read its other fields;
 *  - repair data stripes (ffs_repair_*).
 *
 * A tool must not:
 *  - include fs/fs_i.h or look inside struct ffs: they are the library's
 *    own (the .c files in fs/; and the library's unit test,
 *    tests/unit/test_fs.c, should it ever need internals);
 *  - write the allocators' bitmaps or free counts, the superblock image or
 *    a cache's bookkeeping itself (fields of struct finode other than `d`,
 *    of struct mbuf other than the block in `data`): each change a tool
 *    needs there is one named function below (ffs_tools_*), so the
 *    library's invariants stay in the library.
 *
 * The tools are single-threaded and start none of the daemon's threads:
 * they call these functions without holding fs->lock (the daemon's code
 * holds it around most of them; ffs_journal_commit takes it itself).
 */
#ifndef FFS_TOOLS_H
#define FFS_TOOLS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/ffs.h"
#include "fs/base/format.h"
#include "io/lru.h"
#include "raid/raid.h"

/* ---- the volume (tools.c) -------------------------------------------------- */

/* The superblock in use: NULL before one is adopted (ffs_check_start). */
const struct ffs_super *ffs_tools_super(const struct ffs *fs);
const struct ff_geom *ffs_tools_geom(const struct ffs *fs);
bool ffs_tools_read_only(const struct ffs *fs);
/* The geometry data stripe p is laid out in: on an array grown under the
 * volume, the old one for a row still in it (fs_i.h, struct ffs_geo), else
 * the array's.  The library's data-stripe functions (ffs_repair_*,
 * ffs_csum_*) address each row in its own; a tool that does the same
 * arithmetic asks here. */
const struct ff_geom *ffs_tools_row_geom(const struct ffs *fs, uint64_t p);
/* The largest data stripe of any row (a buffer for one). */
uint64_t ffs_tools_stripe_bytes_max(const struct ffs *fs);
/* META block where the on-disk old-rows map starts (a grow taken on,
 * format.h); 0 when there is none. */
uint64_t ffs_tools_old_rows_start(const struct ffs *fs);
/* Set the inode table's high-water mark (in blocks); the next
 * ffs_super_write stores it. */
void ffs_tools_set_itable_hwm(struct ffs *fs, uint64_t blocks);
/* Set the format version (format.h), stored by the next ffs_super_write. */
void ffs_tools_set_version(struct ffs *fs, uint32_t version);
/* Put r (NULL: zeros, an empty slot) in slot `slot` of the superblock's
 * scrub history (format.h), stored by the next ffs_super_write. */
void ffs_tools_set_scrub_record(struct ffs *fs, unsigned slot, const struct ffs_scrub_record *r);

/* ---- the allocators' in-memory view (tools.c) --------------------------------- */

/* FFS_TOOLS_OLD_ROWS: the rows in the old geometry of a grown array (one
 * bit a data stripe, as loaded: ffs_check_load_bitmaps); no free count, and
 * every bit clear on a volume with one geometry. */
enum ffs_tools_map { FFS_TOOLS_INODES, FFS_TOOLS_STRIPES, FFS_TOOLS_POOL, FFS_TOOLS_OLD_ROWS };

/* Is bit i of the in-memory bitmap `map` set (i within the map)? */
bool ffs_tools_bit(const struct ffs *fs, enum ffs_tools_map map, uint64_t i);
/* One past the highest inode the in-memory inode bitmap marks in use;
 * 0 when none is. */
uint64_t ffs_tools_inodes_end(const struct ffs *fs);
/* Mark inode ino in use in memory if it is not (a free count less): the
 * library then loads it (ffs_iget trusts the bitmap, fsck does not). */
void ffs_tools_take_inode(struct ffs *fs, uint64_t ino);
/* Rebuild the in-memory bitmap `map` and its free count from used(arg, i)
 * over every index the superblock gives it: what is allocated afterwards
 * avoids exactly what the tool counted, whatever the disk says. */
void ffs_tools_alloc_from(struct ffs *fs, enum ffs_tools_map map,
			  bool (*used)(const void *arg, uint64_t i), const void *arg);

/* ---- metadata block cache (meta.c) ------------------------------------ */

struct mbuf {
	uint64_t blockno;
	uint8_t *data;          /* FFS_BLOCK bytes, aligned */
	uint32_t type;          /* block type it was read or created as */
	bool dirty;             /* part of the running transaction */
	bool ckpt;              /* committed, its home block not written yet */
	unsigned pins;
	struct mbuf *hnext;
	struct ff_lru_node lru;  /* on fs->lru while cached */
	struct mbuf *tx_next;
	struct mbuf *ckpt_next;
};

/* Get block `no` of `type`, reading and verifying it if not cached.  A
 * copy that fails its checksum is read from the other mirror copies and
 * repaired.  Returned pinned; release with ffs_mb_put. */
int ffs_mb_get(struct ffs *fs, uint64_t no, uint32_t type, struct mbuf **out);
/* A block about to be overwritten entirely: no read, zero-filled. */
int ffs_mb_new(struct ffs *fs, uint64_t no, uint32_t type, struct mbuf **out);
void ffs_mb_put(struct ffs *fs, struct mbuf *mb);
/* Join the running transaction; the block is sealed at commit. */
void ffs_mb_dirty(struct ffs *fs, struct mbuf *mb);
/* Read a block straight from the array (no cache), verifying it. */
int ffs_meta_read_verified(struct ffs *fs, uint64_t no, uint32_t type, void *buf);
/* The same, without a log line when no copy is good (journal scanning). */
int ffs_meta_read_check(struct ffs *fs, uint64_t no, uint32_t type, void *buf, bool quiet);
int ffs_meta_write_raw(struct ffs *fs, uint64_t no, const void *buf, uint64_t nblocks);

/* ---- journal (journal.c) ------------------------------------------------ */

/* Commit the running transaction (journal it and flush; a checkpoint when
 * due) after the commit in flight, if any.  Holds fs->lock throughout. */
int ffs_journal_commit(struct ffs *fs);
/* Should the running transaction be committed now (size)? */
bool ffs_journal_tx_full(const struct ffs *fs);

/* ---- superblock (super.c) ------------------------------------------------ */

/* Write the superblock (next group of copies, generation + 1). */
int ffs_super_write(struct ffs *fs);

/* ---- allocators (alloc.c) ---------------------------------------------- */

int ffs_alloc_inode(struct ffs *fs, uint64_t *ino);
int ffs_free_inode_bit(struct ffs *fs, uint64_t ino);
int ffs_free_mblock(struct ffs *fs, uint64_t no);
/* Reserve and commit a run at a given place. */
int ffs_take_stripes(struct ffs *fs, uint64_t first, uint64_t count);
/* Checksum table entry of a data stripe. */
int ffs_csum_set(struct ffs *fs, uint64_t pstripe, uint32_t ino, uint32_t fstripe, const uint32_t *crc);
int ffs_csum_get(struct ffs *fs, uint64_t pstripe, uint32_t *ino, uint32_t *fstripe, uint32_t *crc);
/* Bytes of each chunk an entry's crcs cover: the chunk, or a tail
 * stripe's rows written (format.h). */
uint32_t ffs_csum_vlen(const struct ffs *fs, uint32_t ino, uint32_t fstripe);

/* ---- the small-data class (small.c, meta.c) ----------------------------------- */

/* The pcsum entry of pool block no (META block number): the inode whose
 * data the block holds (0: none) and ffs_sdata_crc of that data.  -EUCLEAN
 * when no is outside the pool or the volume has no table. */
int ffs_pcsum_get(struct ffs *fs, uint64_t no, uint32_t *ino, uint32_t *crc);
int ffs_pcsum_set(struct ffs *fs, uint64_t no, uint32_t ino, uint32_t crc);
/* Small-data block no: the cached copy if the block is in the cache (it may
 * be newer than its home), else read and checked against crc, a bad copy
 * read from the others and repaired (only read around while checking:
 * check.h).  Not cached: file data must not push metadata out.  -EBADMSG
 * when no copy matches. */
int ffs_meta_read_sdata(struct ffs *fs, uint64_t no, uint32_t crc, void *buf);

/* ---- B+tree records (btree.c) ---------------------------------------------- */

struct bt_root {
	uint64_t root;   /* block, 0 = empty tree */
	uint64_t owner;
};

/* Copy out the record with the smallest key >= key: 0, -ENOENT at end. */
int ffs_bt_find_ge(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found,
	       void *val, uint16_t *len);
/* Each record with a key in [lo, hi], in order, to cb (btree.c says how). */
int ffs_bt_scan(struct ffs *fs, struct bt_root *t, uint64_t lo, uint64_t hi,
		int (*cb)(void *arg, uint64_t key, const void *val, uint16_t len), void *arg);
int ffs_bt_insert(struct ffs *fs, struct bt_root *t, uint64_t key, const void *val, uint16_t len);
int ffs_bt_delete(struct ffs *fs, struct bt_root *t, uint64_t key);
/* Replace a record's value in place (same or any length). */
int ffs_bt_update(struct ffs *fs, struct bt_root *t, uint64_t key, const void *val, uint16_t len);

/* ---- inodes (inode.c) ---------------------------------------------------- */

struct wbuf;
struct ffs_geo;

struct finode {
	uint64_t ino;
	struct ffs_inode d;       /* the on-disk inode, in memory (guarded by fs->lock) */
	uint64_t nlookup;         /* FUSE lookup count */
	unsigned nopen;
	unsigned refs;            /* pins by code */
	bool deleted;             /* freed on disk: ignore */
	bool data_dropped;        /* unlinked and closed: its bytes are freed (inode.c) */
	uint64_t tx_seq;          /* transaction that last changed it (fs->lock) */
	bool patch_unflushed;     /* patch batches written since its last flush (fs->lock) */
	/* bumped (under fs->lock) whenever a stripe, a tail or a patch leaves
	 * its map (not when a hole is filled: a file growing under its reader
	 * moves nothing); a reader that saw it move reads again (data.c) */
	_Atomic uint64_t map_gen;
	struct finode *hnext;
	/* data path (guarded by dlock) */
	pthread_mutex_t dlock;
	pthread_cond_t dcond;
	struct wbuf *wbufs;       /* stripes being assembled */
	int write_error;          /* first failed stripe write, reported on fsync/close */
	uint64_t ra_next;         /* next file stripe a sequential reader will want */
	uint64_t alloc_hint;      /* data stripe after the last one this file got */
	uint64_t reserve_first;   /* stripes reserved for this file, not yet in the map */
	uint64_t reserve_count;
	/* stripes and tails a truncation or a punched hole took from this
	 * file, which its new data may take back from the overwrite reserve
	 * (wbuf.c ffs_wb_reserve_stripes; fs->lock).  Kept while the inode is in
	 * memory: a save with O_TRUNC, or truncate(1) then a write, uses it at
	 * once. */
	uint64_t regrow;
	uint64_t last_file_stripes; /* directories: size of the last file written in it */
	uint64_t flush_pass;      /* the last flush_all pass (mount.c) that took it (fs->lock) */
	unsigned nwbufs;
	/* writes and fallocates past stripe 0 under way: the file may not
	 * become small meanwhile (data.c promote_small, wbuf.c small_writeout) */
	unsigned beyond_small;
	/* the geometry of its stripes (fs_i.h ffs_file_geo), NULL until asked */
	const struct ffs_geo *geo;
};

/* Get an inode (loaded, pinned): -ENOENT if free. */
int ffs_iget(struct ffs *fs, uint64_t ino, struct finode **out);
void ffs_iput(struct ffs *fs, struct finode *fi);
/* Write the in-memory inode into its table block (joins the transaction). */
int ffs_istore(struct ffs *fs, struct finode *fi);
/* Set and clear bits of fi->d.flags (fs->lock held): one atomic store, so
 * that the data path may read FFS_I_SMALL without fs->lock (small.c). */
void ffs_iflags_change(struct finode *fi, uint32_t set, uint32_t clear);
int ffs_inode_new(struct ffs *fs, uint32_t mode, uint32_t uid, uint32_t gid, uint64_t parent,
	      struct finode **out);
/* Map [fstripe, +count) to [pstripe, +count); replaces what was there
 * (freeing the old stripes after commit). */
int ffs_extent_map(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t pstripe,
	       uint64_t count, uint32_t flags);
/* Map file stripe fstripe to a tail: rows [row0, row0+rows) of tail stripe p
 * (format.h), replacing what was there (a tail replaced gives its rows back,
 * tail.c).  p's checksum entry and live count are the caller's to set; the
 * inode's nstripes does not count tails. */
int ffs_extent_map_tail(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t p,
			uint32_t row0, uint32_t rows);

/* Pin fi once more (tools.c), also one whose pins were all released but
 * that ffs_tools_ikeep keeps cached; ffs_iput releases it. */
void ffs_tools_ihold(struct ffs *fs, struct finode *fi);
/* Keep fi for the rest of the run (tools.c): counted as a lookup, so no
 * ffs_iput frees it even once it has no links. */
void ffs_tools_ikeep(struct ffs *fs, struct finode *fi);

/* ---- directories (dir.c) ------------------------------------------------- */

int ffs_dir_lookup(struct ffs *fs, struct finode *dir, const char *name, uint64_t *ino,
	       uint8_t *type);
int ffs_dir_add(struct ffs *fs, struct finode *dir, const char *name, uint64_t ino, uint8_t type);
int ffs_dir_remove(struct ffs *fs, struct finode *dir, const char *name);
/* Change the inode an existing entry points at. */
int ffs_dir_retarget(struct ffs *fs, struct finode *dir, const char *name, uint64_t ino,
		 uint8_t type);

/* ---- repair of damaged data stripes (repair.c) ------------------------------ */

/* Stripe p into buf with the members in avoid treated as missing (rebuilt
 * from parity): 0 or -errno. */
int ffs_repair_read_around(struct ffs *fs, uint64_t p, uint32_t avoid, void *buf);
/* The same for bytes [off, off + len) of stripe p. */
int ffs_repair_read_bytes_around(struct ffs *fs, uint64_t p, uint64_t off, uint32_t len,
				 uint32_t avoid, void *buf);
/* Data chunks of stripe buffer buf that fail their checksums (a mask); each
 * crc covers the first vlen bytes of its chunk (ffs_csum_vlen). */
uint32_t ffs_repair_bad_chunks(struct ffs *fs, uint64_t p, const void *buf, const uint32_t *crc,
			       uint32_t vlen);
/* Stripe p into buf, rebuilt from parity around every member holding a
 * chunk in bad (and around P or Q as well, when parity allows and that is
 * what it takes): 0 when every data chunk then matches crc, else -EIO. */
int ffs_repair_reconstruct(struct ffs *fs, uint64_t p, uint32_t bad, const uint32_t *crc,
			   uint32_t vlen, void *buf);
/* Write the verified stripe buf over stripe p as one full-stripe write
 * (parity computed from buf, never from the damaged chunks on disk), then
 * read it back with a parity check: 0, or -errno (logged) if the write
 * failed or the stripe does not read back as buf with matching parity.
 * bad names the chunks being repaired (for the log). */
int ffs_repair_rewrite(struct ffs *fs, uint64_t p, const void *buf, uint32_t bad);

#endif
