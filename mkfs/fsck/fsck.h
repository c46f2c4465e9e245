/* SPDX-License-Identifier: MIT */
/*
 * fsck.framefs: the checker's context, its problem table and its passes.
 *
 *   Pass 1  superblocks and the journal              fsck_pass1.c, fs/volume/check.c
 *   Pass 2  inodes, extent maps, B+trees, checksum   fsck_pass2.c, fsck_extent.c,
 *           table owners, small files, packed tails, fsck_tree.c, fsck_small.c,
 *           patches                                  fsck_tail.c, fsck_patch.c
 *   Pass 3  directories and connectivity             fsck_pass3.c, fsck_connect.c
 *   Pass 4  link counts, orphan list, bitmaps        fsck_pass4.c
 *   Pass 5  metadata copies and data checksums       fsck_pass5.c
 *
 * Passes 2 and 3 count what the metadata uses (inodes, data stripes, pool
 * blocks, directory entries); pass 4 compares the counts with the link
 * counts and bitmaps.  When a repair in passes 1-3 changed the metadata,
 * passes 2 and 3 run again without reporting (the census) so that pass 4
 * compares with what is on disk now; a problem the census still finds is
 * one a repair did not fix, and the run ends with exit code 4.
 *
 * Repairs go through the library's metadata cache and journal (ffs_mb_dirty,
 * ffs_journal_commit): an interrupted fsck leaves a consistent journal.  Space
 * is never freed during passes 2-3; what a repair orphans (old B+tree
 * nodes, stripes of a cleared inode) is freed in pass 4 by the bitmap
 * rewrite, and allocations in passes 2-3 only happen after pass 2 has
 * marked everything the metadata uses as taken.
 */
#ifndef FSCK_H
#define FSCK_H

#include <stdbool.h>
#include <stdint.h>

#include "fs/volume/check.h"
#include "io/bitmap.h"

#define FSCK_NAME "fsck.framefs"

/* fsck(8) exit codes */
enum {
	FSCK_EXIT_CLEAN = 0,
	FSCK_EXIT_FIXED = 1,
	FSCK_EXIT_UNFIXED = 4,
	FSCK_EXIT_OPERROR = 8,
	FSCK_EXIT_USAGE = 16,
};

enum fsck_mode { FSCK_ASK, FSCK_NO, FSCK_YES, FSCK_PREEN };

/* ---- the problem table (fsck_problem.c) --------------------------------- */

enum problem {
	PR_1_SB_COPY_BAD,
	PR_1_SB_COPY_OLD,
	PR_1_NO_SUPER,
	PR_1_SB_REBUILD,
	PR_1_JOURNAL_PENDING,
	PR_1_JOURNAL_BAD,
	PR_1_SCRUB_RECORD,
	PR_1_PATCH_PENDING,
	PR_2_HWM,
	PR_2_ITABLE_BAD,
	PR_2_SLOT_INO,
	PR_2_ROOT_NOT_DIR,
	PR_2_BAD_MODE,
	PR_2_BAD_FLAGS,
	PR_2_FIELD,
	PR_2_EXTENT_BAD,
	PR_2_EXTENTS_MANY,
	PR_2_TREE_BAD,
	PR_2_XATTR_BAD,
	PR_2_SYMLINK_BAD,
	PR_2_DUP_STRIPES,
	PR_2_CSUM_OWNER,
	PR_2_CSUM_BLOCK,
	PR_2_VERSION,
	PR_2_SMALL_TREE,
	PR_2_SMALL_BLOCK,
	PR_2_SMALL_COUNT,
	PR_2_PCSUM_OWNER,
	PR_2_PCSUM_BLOCK,
	PR_2_PCSUM_STRAY,
	PR_2_TAIL_BAD,
	PR_2_TAIL_DUP,
	PR_2_TAIL_STRIPE,
	PR_2_TAIL_CSUM,
	PR_2_TAIL_LIVE,
	PR_2_TAIL_LEAKED,
	PR_2_PATCH_BAD,
	PR_2_PATCH_DUP,
	PR_2_PATCH_ROOT,
	PR_2_GEO_MIXED,
	PR_3_ROOT_BAD,
	PR_3_ENTRY_BAD,
	PR_3_ENTRY_NAME,
	PR_3_ENTRY_HASH,
	PR_3_ENTRY_DUP,
	PR_3_ENTRY_FREE,
	PR_3_ENTRY_TYPE,
	PR_3_DIR_LINK,
	PR_3_UNREACHABLE,
	PR_3_NO_LPF,
	PR_3_UNATTACHED,
	PR_3_UNLINKED,
	PR_3_DOTDOT,
	PR_3_DIR_SIZE,
	PR_4_NLINK,
	PR_4_ORPHANS,
	PR_4_BITMAP_BLOCK,
	PR_4_BITMAP_DIFF,
	PR_4_OLD_ROWS_BLOCK,
	PR_4_LEFT,
	PR_5_COPY_BAD,
	PR_5_DATA_BAD,
	PR_5_DATA_LOST,
	PR_5_CSUM_WRONG,
	PR_COUNT
};

/* MINOR: the repair loses nothing (fsck -p makes it); MAJOR: it may lose
 * data or names, so -p stops; FATAL: the check cannot go on. */
enum severity { SEV_MINOR, SEV_MAJOR, SEV_FATAL };

struct problem_def {
	enum problem code;
	uint16_t id;            /* stable number: pass * 0x100 + n */
	enum severity sev;
	const char *msg;        /* {ino} {ino2} {blk} {num} {num2} {num3} {onum} {xnum} {str} {str2} {str3} */
	const char *fix;        /* the question; NULL when it cannot be repaired */
};

extern const struct problem_def fsck_problems[PR_COUNT];

/* Values a message refers to. */
struct pctx {
	uint64_t ino, ino2, blk, num, num2, num3;
	const char *str, *str2, *str3;
};

struct fsck;

/* Report a problem; true when it is to be repaired now. */
bool fsck_fix_problem(struct fsck *c, enum problem code, const struct pctx *p);
/* An operational error (I/O, memory): the run stops, exit code 8. */
void fsck_operr(struct fsck *c, int rc, const char *what);
void fsck_pass_start(struct fsck *c, int pass, const char *title);

/* ---- state ---------------------------------------------------------------- */

enum ino_flags {
	IS_USED = 1u << 0,        /* a valid table slot */
	IS_CLEARED = 1u << 1,     /* cleared by this run */
	IS_REBUILD = 1u << 2,     /* files: map to rebuild; directories: entries to salvage */
	IS_ON_ORPHANS = 1u << 3,  /* on the orphan list as found */
	IS_REACHED = 1u << 4,     /* directories: connected to the root */
	IS_NOCOUNT = 1u << 6,     /* a repair was declined: skip its link count */
	IS_ORPHAN_OK = 1u << 7,   /* a valid orphan: unlinked, waiting for the next mount */
	IS_TREE_BAD = 1u << 8,    /* damaged B+tree, rebuild declined */
	IS_VISIT = 1u << 9,       /* scratch mark while following entries upwards */
	IS_PREBUILD = 1u << 10,   /* regular files: patch tree to rebuild (fsck_patch.c) */
};

struct ino_info {
	uint32_t nlink;           /* as on disk */
	uint32_t refs;            /* directory entries naming it */
	uint32_t subdirs;         /* directories: child directories */
	uint16_t flags;
	uint8_t dtype;            /* DT_* of its mode; 0 when not in use */
	uint8_t diskflags;        /* enum ffs_iflags, as on disk */
	uint64_t parent;          /* as on disk */
	uint64_t tree_parent;     /* directories: the directory that holds its entry */
	uint64_t size;
};

struct stripe_claim {
	uint32_t ino;             /* 0 = not mapped by any file */
	uint32_t fstripe;
};

/* A claim on part of tail stripe p (fsck_tail.c): a tail extent's rows
 * [row0, row0 + rows), or a patch's slots [slot0, slot0 + nslots) (format.h:
 * slot s is row s / ndata of chunk s % ndata; a tail's slots are its rows').
 * A tail stripe has many, so they are kept apart from c->stripe, which
 * marks the stripe FFS_CSUM_TAILS once they are settled. */
struct tail_claim {
	uint64_t p;
	uint32_t ino, fstripe;
	uint16_t row0, rows;      /* a patch: the rows its slots are in */
	uint32_t slot0, nslots;
	bool dead;                /* lost (overlap, rows never written) or its inode cleared */
	bool patch;               /* patch (fsck_patch.c) of blocks [b0, b0 + nslots) of fstripe */
	bool mtail;               /* a patch whose file stripe is a tail in data stripe mp; */
	uint16_t b0;
	uint64_t mp;              /* else mapped to data stripe mp whole */
	uint32_t crcsum;          /* a patch: crc32c over its blocks' checksums (in the record) */
};

struct dup {
	uint64_t pstripe;
	uint32_t ino, fstripe;
	bool unwritten;           /* the claimant maps it preallocated */
};

/* An entry that names a directory (connectivity is decided on these). */
struct edge {
	uint64_t parent, child;
	char *name;
	bool dead;                /* removed */
};

struct fsck {
	struct ffs *fs;
	const struct ffs_super *sb;
	enum fsck_mode mode;
	bool verify_data;         /* -c */
	bool quiet;               /* census: count, report nothing */
	bool stop;                /* -p met a problem it may not fix */
	bool sb_rebuilt;          /* no copy of the superblock was valid: pass 1 made one */
	char label[72];
	int pass;
	/* outcome */
	unsigned fixed, unfixed, census_left;
	bool changed;             /* passes 1-3 changed the metadata */
	bool written;             /* anything was written */
	int operr;
	/* what the metadata uses */
	uint64_t ninodes, nstripes, pool_start, pool_blocks;
	struct ino_info *ino;
	struct finode **fin;      /* inodes pinned in the library's cache, by number */
	struct stripe_claim *stripe;
	uint64_t *unwritten;      /* bitmap over stripes: preallocated */
	uint32_t *pool_owner;     /* inode owning each pool block, 0 = none */
	uint8_t *pool_type;       /* POOL_* of each used pool block */
	struct dup *dups;
	size_t ndups, cap_dups;
	struct tail_claim *tails; /* sorted by stripe, then row, once settled */
	size_t ntails, cap_tails;
	bool tails_settled;       /* the tail stripes' entries were checked: a claim lost now
				   * takes its count off the entry (fsck_tail_forget) */
	struct edge *edges;
	size_t nedges, cap_edges;
	uint64_t lpf;             /* /lost+found, 0 = none (yet) */
	bool lpf_asked;
	uint64_t itable_scan;     /* inode table blocks pass 2 read */
	bool xvalue_seen;         /* pass 2 met an xattr value chain (FFS_VERSION_XVALUE) */
	/* the orphan list as found */
	bool orphan_block_bad;
	uint64_t orphan_count;    /* the block's count field */
	uint64_t *orphans;
	size_t norphans;
	const char *orphan_break; /* why the chain stopped early, or NULL */
	uint64_t orphan_break_ino;
	void *buf;                /* one aligned block */
	void *sbuf;               /* one aligned data stripe */
	void *rbuf;               /* another: the stripe rebuilt from parity */
	struct ffs_check_runs runs; /* META read a chunk at a time (passes 2 and 5) */
	uint32_t vlen;            /* bytes of each chunk the stripe's crcs cover (ffs_csum_vlen) */
	struct path_cache *paths; /* directories' entries kept for fsck_path */
};

/* POOL_SDATA: a small file's data (fsck_small.c), claimed after every other kind;
 * POOL_PTREE: a node of a patch tree (fsck_patch.c), kept apart from the
 * extent map's nodes of the same inode */
enum { POOL_BTREE = 1, POOL_XATTR = 2, POOL_SYMLINK = 3, POOL_XVALUE = 4, POOL_SDATA = 5,
       POOL_PTREE = 6 };

/* ---- passes ---------------------------------------------------------------- */

int fsck_pass1(struct fsck *c);
int fsck_pass2(struct fsck *c);
int fsck_pass3(struct fsck *c);
int fsck_pass4(struct fsck *c);
int fsck_pass5(struct fsck *c);

/* fsck_state.c */
int fsck_state_alloc(struct fsck *c);
void fsck_state_reset(struct fsck *c);
void fsck_state_free(struct fsck *c);
bool fsck_pool_claim(struct fsck *c, uint64_t blk, uint64_t ino, uint8_t type, uint64_t *other);
bool fsck_pool_contains(const struct fsck *c, uint64_t blk);
int fsck_dup_add(struct fsck *c, uint64_t pstripe, uint64_t ino, uint64_t fstripe, bool unwritten);
int fsck_edge_add(struct fsck *c, uint64_t parent, uint64_t child, const char *name);
/* Array v (elements of elem bytes, *cap of them) with room for element n:
 * v itself, or moved, doubled (from first elements); NULL when out of
 * memory, v untouched. */
void *fsck_grow(void *v, size_t *cap, size_t n, size_t elem, size_t first);
/* Make everything counted so far taken in the library's allocators. */
void fsck_reserve_counted(struct fsck *c);
const char *fsck_type_name(uint8_t dtype);

/* fsck_inode.c: reading and writing inodes */
int fsck_slot_read(struct fsck *c, uint64_t ino, struct ffs_inode *d);
int fsck_slot_write(struct fsck *c, uint64_t ino, const struct ffs_inode *d);
int fsck_finode(struct fsck *c, uint64_t ino, struct finode **out);
void fsck_finode_put(struct fsck *c, struct finode *fi);
int fsck_inode_clear(struct fsck *c, uint64_t ino);
/* Commit the running transaction when it has grown large (always: force). */
int fsck_commit(struct fsck *c, bool force);

/* fsck_tree.c: walk a B+tree, checking its shape */
struct fsck_tree_walk {
	struct fsck *c;
	uint64_t ino, root;
	bool claim;               /* take each node in the pool map (else: only nodes it owns) */
	uint8_t pool_type;        /* the nodes' POOL_* (0: POOL_BTREE) */
	bool peek;                /* neither: read any node inside the pool that names ino as
				   * owner, at most budget of them (fsck_path.c) */
	unsigned budget;
	/* every record of every readable leaf, in key order; <0 stops */
	int (*rec)(struct fsck_tree_walk *w, uint64_t key, const uint8_t *val, uint16_t len);
	/* every node accepted (after rec for its records); <0 stops */
	int (*node)(struct fsck_tree_walk *w, uint64_t blk);
	void *arg;
	/* result */
	bool damaged;
	uint64_t bad_blk;
	const char *why;
	uint64_t why_ino;
};
int fsck_tree_walk(struct fsck_tree_walk *w);
/* What the walk found wrong, in words (for PR_2_TREE_BAD). */
void fsck_tree_why(const struct fsck_tree_walk *w, char *buf, size_t len);
/* Give back the nodes of ino's tree at root that it owns (after a rebuild). */
int fsck_tree_free_old(struct fsck *c, uint64_t ino, uint64_t root, uint8_t pool_type);

/* fsck_extent.c: regular files' extent maps */
/* A run of a file's valid extents: file stripes [f, f + n) at data stripes
 * [p, p + n), or (FFS_X_TAIL; n is 1) a tail's rows in tail stripe p. */
struct fsck_run {
	uint64_t f, p, n;
	uint32_t flags;
	uint32_t row0, rows;
};
struct fsck_map {           /* in file order; the caller frees runs */
	struct fsck_run *runs;
	size_t n;
	const struct ff_geom *g;  /* the file's geometry (fsck_extent.c); NULL: the array's */
};
int fsck_extent_check(struct fsck *c, uint64_t ino, const struct ffs_inode *d, uint64_t *nstripes,
		      uint64_t *tail_blocks, struct fsck_map *map);
/* The run that maps file stripe f, or NULL. */
const struct fsck_run *fsck_map_find(const struct fsck_map *m, uint64_t f);
int fsck_extent_dups_resolve(struct fsck *c);
int fsck_extent_csum_check(struct fsck *c);
int fsck_extent_rebuild_all(struct fsck *c);
/* rebuild(c, ino) for every regular file in use whose flags hold flag, then a commit. */
int fsck_rebuild_files(struct fsck *c, uint16_t flag, int (*rebuild)(struct fsck *c, uint64_t ino));

/* fsck_small.c: small files (format version 3) and the small-data checksum table */
/* Does the volume have the small-data class (FFS_I_SMALL a valid flag)? */
bool fsck_small_allowed(const struct fsck *c);
/* The scan meets inode ino, flagged small: its flags (d corrected in place). */
void fsck_small_inode(struct fsck *c, uint64_t ino, struct ffs_inode *d, bool *dirty);
/* After the scan: the small files' blocks and the checksum table. */
int fsck_small_check(struct fsck *c);
/* Inode ino (image d) is being cleared: the blocks it holds go back, their
 * checksum entries cleared. */
void fsck_small_forget(struct fsck *c, uint64_t ino, const struct ffs_inode *d);

/* fsck_tail.c: packed tails (format version 4) and their tail stripes */
/* Does the volume have packed tails (FFS_X_TAIL a valid extent flag)? */
bool fsck_tails_allowed(const struct fsck *c);
/* Rows in a chunk: a tail's rows end at or before this. */
uint32_t fsck_tail_rows_max(const struct fsck *c);
int fsck_tail_claim(struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe, uint32_t row0,
		    uint32_t rows);
/* Does ino still own its tail at fstripe in stripe p (a map rebuild keeps it)? */
bool fsck_tail_owned(const struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe);
/* After the ordinary duplicates: who keeps each tail stripe, which tails. */
int fsck_tail_resolve(struct fsck *c);
/* The checksum entry of stripe p against its tails (c->stripe[p] says it
 * holds some), or an unclaimed stripe's entry that says it holds tails. */
int fsck_tail_entry_check(struct fsck *c, uint64_t p, uint32_t ino, uint32_t f,
			  const uint32_t *crc);
/* The entry a rebuilt checksum-table block gets for tail stripe p. */
void fsck_tail_entry_make(struct fsck *c, uint64_t p, uint32_t *f, uint32_t *crc);
/* The live tails in p: how many, and the first one's owner and file stripe. */
uint32_t fsck_tail_first(const struct fsck *c, uint64_t p, uint32_t *ino, uint32_t *fstripe);
/* Inode ino is being cleared: its tails and patches go, the entries' counts with them. */
void fsck_tail_forget(struct fsck *c, uint64_t ino);
/* A claim for the list (fsck_tail_claim and fsck_patch.c). */
int fsck_tail_claim_add(struct fsck *c, const struct tail_claim *t);

/* fsck_patch.c: patches (format version 5) and the files' patch trees */
bool fsck_patches_allowed(const struct fsck *c);
/* Pass 2: regular file ino's patch tree (d's u2.patch_root, d corrected in
 * place), against the file's valid extents m; each valid patch claimed. */
void fsck_patch_check(struct fsck *c, uint64_t ino, struct ffs_inode *d, const struct fsck_map *m,
		      bool *dirty);
/* Settling a tail stripe without a valid entry: do patch t's blocks match
 * their checksums (false also when they cannot be read)? */
bool fsck_patch_blocks_match(struct fsck *c, const struct tail_claim *t);
/* After the tail stripes are settled: a patch whose file stripe its file no
 * longer maps (a duplicate lost, a tail dropped) goes, its count with it. */
void fsck_patch_unmapped(struct fsck *c);
/* Does ino still own its patch of blocks from b0 of fstripe in stripe p
 * (fsck_tail.c: a rebuilt tree keeps it)? */
bool fsck_patch_owned(const struct fsck *c, uint64_t p, uint64_t ino, uint64_t fstripe, uint32_t b0);
/* Rebuild the patch trees that lost records (IS_PREBUILD). */
int fsck_patch_rebuild_all(struct fsck *c);
/* Chunk checksums of stripe p as on disk, over vlen bytes of each chunk
 * (fsck_stripes.c); false when the data cannot be read. */
bool fsck_data_crcs(struct fsck *c, uint64_t p, uint32_t vlen, uint32_t *crc);

/* fsck_connect.c */
int fsck_connect_check(struct fsck *c);

/* fsck_path.c: the path of inode ino for a message ("/a/b"), in buf, or NULL
 * when it cannot be found; reads only. */
const char *fsck_path(struct fsck *c, uint64_t ino, char *buf, size_t len);
void fsck_path_free(struct fsck *c);

#endif
