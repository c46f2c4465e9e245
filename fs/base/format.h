/* SPDX-License-Identifier: MIT */
/*
 * framefs on-disk format, versions 1 to 5 (FFS_VERSION_MIN to
 * FFS_VERSION_MAX below; mkfs makes FFS_VERSION, 5).  One library (fs/) reads and writes it for the daemon, mkfs, fsck and the
 * admin tool.
 *
 * The filesystem lives on the RAID engine's two address spaces:
 *
 *  META (mirrored), in 4 KiB blocks:
 *    0                  superblock copy A
 *    8                  superblock copy D
 *    16                 superblock copy B
 *    24                 orphan block: head of the list of unlinked-but-open inodes
 *    28                 superblock copy C
 *    journal_start      journal: journal_blocks, circular
 *    itable_start       inode table: 15 inodes per block (initialised up to itable_hwm)
 *    ibitmap_start      inode allocation bitmap
 *    sbitmap_start      data-stripe allocation bitmap
 *    pcsum_start        small-data checksum table (version 3): per pool block, owner
 *                       and crc32c of the small-file data it holds
 *    mbitmap_start      pool-block allocation bitmap
 *    csum_start         data checksum table: per data stripe, owner and crc32c of each chunk
 *    pool_start..       B+tree nodes (directories, extent maps), xattr, xattr value and
 *                       symlink blocks, and small-file data blocks (version 3)
 *
 *  DATA (RAID5/6): file data, allocated in whole stripes.  A file stripe is
 *    written as a full stripe to a stripe that holds no live data
 *    (copy-on-write); a file's last, partial stripe (a packed tail, version
 *    4) and the blocks of a small overwrite (a patch, version 5) are written
 *    as whole rows, with their parity, appended past the hwm of a shared
 *    tail stripe whose lower rows hold live data (below).  A row's parity
 *    depends on that row alone, so either way a crash can never tear parity
 *    under data that is in use.
 *
 * Small files (version 3): a regular file whose bytes all lie below the
 * volume's small_max keeps them in pool blocks instead of a stripe (the
 * small-data class, fs/meta/small.c says why): mirrored like all of META, so a
 * 4 KiB sidecar costs two (RAID6: three) 4 KiB blocks, not a stripe.
 *
 * Every metadata block starts with ffs_bhdr: its type, its crc32c (over the
 * whole block, crc field zero) and its own block number, so a block read
 * from the wrong place is caught as surely as a corrupt one.  Inode-table
 * blocks carry the header too; inodes are verified with their block.
 *
 * All fields are little-endian; every structure's size is asserted.
 */
#ifndef FFS_FORMAT_H
#define FFS_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "io/ff_common.h"

#define FFS_BLOCK 4096u
/*
 * Versions: mkfs writes FFS_VERSION.  A volume is raised to
 * FFS_VERSION_XVALUE the first time an xattr value is stored in its own
 * blocks (xattr.c): code that knows version 1 only refuses it then, rather
 * than misreading an entry it cannot parse (and its fsck dropping the
 * attributes).  A version 1 volume is a valid version 2 one.
 * FFS_VERSION_SMALL adds the small-data class: the checksum table
 * pcsum_start.. between the data checksum table and the pool bitmap, and
 * small_max.  Volumes of versions 1 and 2 (no table, small_max 0) mount
 * and work as before with the class off: every file takes stripes, as it
 * always did there; framefs-admin status says so.  FFS_VERSION_TAILS adds
 * packed tails (FFS_X_TAIL extents and tail stripes, below; fs/data/tail.c says
 * why); older volumes mount with tails off, and never hold such an extent.
 */
#define FFS_VERSION_MIN 1u
#define FFS_VERSION_XVALUE 2u
#define FFS_VERSION_SMALL 3u
#define FFS_VERSION_TAILS 4u
/* FFS_VERSION_PATCH adds patches (FFS_PATCH_KEY below, fs/data/patch.c says
 * why): a regular file's rdev field is the root of its patch tree.  The
 * layout is version 4's; older volumes mount with patches off.  mkfs makes
 * FFS_VERSION unless told otherwise. */
#define FFS_VERSION_PATCH 5u
#define FFS_VERSION FFS_VERSION_PATCH
/* FFS_VERSION_GROWN: a volume whose array grew under it (struct
 * ffs_grow_rec): the pool gave its last blocks to the grow's records.  A
 * framefs that knows only version 5 refuses it. */
#define FFS_VERSION_GROWN 6u
#define FFS_VERSION_MAX FFS_VERSION_GROWN
#define FFS_SB_MAGIC 0x3153465a454d4152ull /* "RAMEZFS1" */
/*
 * Superblock copies.  META is mirrored in 64 KiB chunks (16 blocks), chunk c
 * copy k on member (c * copies + k) % nmembers, row (c * copies + k) /
 * nmembers (raid/meta.c), so a block's member offset is its row and its
 * place in the chunk.  A and B start chunks 0 and 1: on RAID5 x 4 both sit
 * at the first offset of the metadata area on every member, and 4 KiB
 * zeroed there on each member took every copy a volume had before copies C
 * and D.  C (chunk 1, 48 KiB in) and D (chunk 0, 32 KiB in) are at other
 * offsets, on the other chunk's members: the copies are written in two
 * groups, A+C and B+D (one group per superblock write, in turn, flushed:
 * a torn write leaves the other group one generation older), and each
 * group spans both chunks' members at two member offsets.  The newest copy
 * that is valid wins.
 *
 * Volumes made before C and D have A and B only (blocks 8 and 28 were never
 * used): they mount as before, and the superblock writes add C and D.
 * FFS_F_SB_COPIES4 in a copy says that all four were written; fsck reports
 * a missing C or D only then.
 */
#define FFS_SB_BLOCK_A 0ull
#define FFS_SB_BLOCK_B 16ull
#define FFS_SB_BLOCK_C 28ull
#define FFS_SB_BLOCK_D 8ull
#define FFS_SB_COPIES 4u
/* Copy i (0 = A .. 3 = D) is at ffs_sb_block[i], in write group i % 2. */
extern const uint64_t ffs_sb_block[FFS_SB_COPIES];
extern const char ffs_sb_name[FFS_SB_COPIES + 1]; /* "ABCD" */
/* Is META block no one of the superblock copies? */
bool ffs_is_sb_block(uint64_t no);

enum ffs_sb_flags {
	FFS_F_SB_COPIES4 = 1u << 0, /* all four superblock copies are kept (C and D too) */
};
#define FFS_ORPHAN_BLOCK 24ull /* journaled: head of the orphan list */
#define FFS_JOURNAL_START 32ull
#define FFS_ROOT_INO 1ull
#define FFS_NAME_MAX 255u
#define FFS_SYMLINK_MAX 4095u /* PATH_MAX - 1: a block's 4064 bytes, the rest inline */
#define FFS_XATTR_BYTES_MAX (FFS_BLOCK - 32u) /* entries in one xattr block */

enum ffs_btype {
	FFS_B_SUPER = 0x42535346,   /* "FSSB" */
	FFS_B_JDESC = 0x4453464a,   /* "JFSD" */
	FFS_B_JCOMMIT = 0x4353464a, /* "JFSC" */
	FFS_B_ITABLE = 0x54494646,  /* "FFIT" */
	FFS_B_BITMAP = 0x504d4246,  /* "FBMP" */
	FFS_B_CSUM = 0x4d534346,    /* "FCSM" */
	FFS_B_BTREE = 0x45525446,   /* "FTRE" */
	FFS_B_XATTR = 0x52545846,   /* "FXTR" */
	FFS_B_SYMLINK = 0x4b4e4c46, /* "FLNK" */
	FFS_B_ORPHAN = 0x4e524f46,  /* "FORN" */
	FFS_B_XVALUE = 0x4c565846,  /* "FXVL" */
	FFS_B_PCSUM = 0x53435046,   /* "FPCS" */
	/* Small-file data: 4096 bytes of the file, no header (a 4 KiB file is
	 * one block); checked against its entry in the pcsum table instead. */
	FFS_B_SDATA = 0x41445346,   /* "FSDA" */
	FFS_B_PBATCH = 0x54425046,  /* "FPBT": a patch batch's header (version 5) */
	FFS_B_CSUMX = 0x58534346,   /* "FCSX": checksum extension (version 6, a grow) */
};

struct ffs_bhdr {
	le32 type;
	le32 crc;
	le64 blockno;
};
_Static_assert(sizeof(struct ffs_bhdr) == 16, "block header");

#define FFS_BITS_PER_BLOCK ((FFS_BLOCK - sizeof(struct ffs_bhdr)) * 8)

enum ffs_state { FFS_CLEAN = 1, FFS_DIRTY = 2 };

/*
 * Scrub history (fs/volume/scrub.c): one record per scrub that ended, the last
 * FFS_SB_SCRUB_RECORDS of them, in the superblock, so that they survive a
 * remount and go wherever the superblock goes.  Record seq (1, 2, ... on
 * this volume) lives in slot (seq - 1) % FFS_SB_SCRUB_RECORDS: the ring
 * needs no head pointer, the newest is the highest seq, and a slot can
 * only ever hold its own records.  seq 0 is an empty slot (all zeros).
 * Written with the superblock (ffs_super_write: a torn write leaves the
 * other group, one record older).  ffs_scrub_record_problem says what
 * makes a record nonsense; nothing reads such a record but fsck, which
 * clears it.
 */
#define FFS_SB_SCRUB_RECORDS 8u
enum ffs_scrub_rflags {
	FFS_SCRUB_F_REPAIR = 1u << 0, /* repaired what it found (else it only counted) */
};
struct ffs_scrub_record {
	le64 seq;               /* 0 = empty slot */
	le64 start_s;           /* wall clock, seconds since the epoch */
	le64 end_s;
	le32 result;            /* enum ffs_scrub_result (fs/ffs.h): done, stopped, failed */
	le32 flags;             /* enum ffs_scrub_rflags */
	/* the counts of struct ffs_scrub_status (fs/ffs.h), named the same */
	le64 bytes_checked;     /* data stripes and metadata copies read */
	le64 stripes_checked;
	le64 meta_chunks_checked;
	le64 chunks_bad;
	le64 chunks_repaired;
	le64 chunks_unrepairable;
	le64 parity_bad;
	le64 parity_repaired;
	le64 meta_bad;
	le64 meta_repaired;
	le64 unreadable;
	uint8_t reserved[24];
};
_Static_assert(sizeof(struct ffs_scrub_record) == 144, "scrub record");
struct ffs_scrub_history {
	struct ffs_scrub_record rec[FFS_SB_SCRUB_RECORDS];
};
_Static_assert(sizeof(struct ffs_scrub_history) == 1152, "scrub history");

/*
 * Version 5: the tail stripes patch batches may be appended to after a
 * commit (fs/data/patch.c), and the sequence number the first such batch takes:
 * in every commit block, and in the superblock for a journal with no
 * transaction after its tail.  Replay looks for batches there only.  A
 * stripe listed here may be free in the commit: a slot's spare, which the
 * next opening takes (fs/data/tail.c), so that its batch is replayable at once.
 * Up to two stripes for each of the daemon's 8 slots; the last 8 entries
 * were reserved (zero) in the first version-5 volumes, read as unused.
 */
#define FFS_PATCH_OPEN_MAX 16u
struct ffs_patch_open {
	le64 next_seq;          /* batches with a lower seq were written before */
	le32 count;             /* stripes in use below */
	le32 reserved;
	le64 stripe[FFS_PATCH_OPEN_MAX];
};
_Static_assert(sizeof(struct ffs_patch_open) == 144, "open patch stripes");

/*
 * A grow (version 6; raid.h, "growing").  The pool's last pool_cut blocks
 * hold its records, right after the pool's new end:
 *   - the checksum extension (ext_start, ext_blocks): for each data
 *     stripe, the checksums of its data chunks past the checksum table's
 *     width, the width the volume was made at (ext_width of them: the new
 *     width's data chunks less the table's; ext_per_block entries a block);
 *   - the old-rows bitmap (orows_start, orows_blocks; one bit a data
 *     stripe): the rows still in the old geometry.
 * PREPARED: the records are made, the array not grown yet: the volume
 * works as before (every row in the old geometry, which is still the
 * array's).  GROWING: the array is grown; the superblock's level, member
 * count, ndata and stripe bytes are the new geometry's, old_* the old
 * one's.  A row leaves the old-rows bitmap when it is freed and never
 * enters it again: the grow ends when the bitmap is empty (state NONE,
 * the records kept: the extension holds the new rows' checksums).
 * A volume grown before grows again from NONE: the new records are cut
 * below the ones in use, the new extension filled with every row's
 * checksums from the old one, and the superblock then names the new
 * records, pool_cut counting both: the earlier records' blocks, between
 * the new records' end and the META end, stay cut from the pool, retired
 * (nothing reads them).  So pool_cut >= ext_blocks + orows_blocks.
 */
enum ffs_grow_state { FFS_GROW_NONE = 0, FFS_GROW_PREPARED = 1, FFS_GROW_GROWING = 2 };
struct ffs_grow_rec {
	le32 state;             /* enum ffs_grow_state */
	le32 old_level;
	le32 old_nmembers;
	le32 old_ndata;
	le64 old_stripe_bytes;
	le32 new_level;         /* the geometry the array grows to */
	le32 new_nmembers;
	le64 pool_cut;          /* blocks the pool gave: ext, orows, earlier grows' */
	le64 ext_start;
	le64 ext_blocks;
	le32 ext_width;         /* checksums an extension entry holds */
	le32 ext_per_block;
	le64 orows_start;
	le64 orows_blocks;
};
_Static_assert(sizeof(struct ffs_grow_rec) == 80, "grow record");

struct ffs_super {
	struct ffs_bhdr h;
	le64 magic;
	le32 version;
	le32 block_bytes;
	le64 generation;        /* every write bumps it; the newest valid copy wins */
	uint8_t uuid[16];       /* the RAID array's uuid */
	char label[64];
	/* the array this filesystem was made for (checked at mount) */
	le32 level;
	le32 nmembers;
	le32 chunk_bytes;
	le32 ndata;
	le64 stripe_bytes;
	le64 nstripes;
	/* layout of the META space, in blocks */
	le64 meta_blocks;
	le64 journal_start;
	le64 journal_blocks;
	le64 itable_start;
	le64 itable_blocks;
	le64 ninodes;
	le64 itable_hwm;        /* itable blocks initialised; beyond are all free */
	le64 ibitmap_start;
	le64 ibitmap_blocks;
	le64 sbitmap_start;
	le64 sbitmap_blocks;
	le64 mbitmap_start;
	le64 mbitmap_blocks;
	le64 csum_start;
	le64 csum_blocks;
	le32 csum_entry_bytes;
	le32 csum_per_block;
	le64 pool_start;
	le64 pool_blocks;
	/* journal: replay starts at tail_pos with transaction tail_seq */
	le64 journal_tail_seq;
	le64 journal_tail_pos;
	le64 reserved_orphan;   /* (the orphan list head is in the orphan block) */
	le32 state;             /* enum ffs_state */
	le32 flags;             /* enum ffs_sb_flags */
	le64 mkfs_time;
	le64 mount_time;
	le64 write_time;
	le64 mount_count;
	/* Was reserved (zero) before the scrub history: a volume made before it
	 * reads as no history, and a binary from before it carries the records
	 * through when it copies the block. */
	struct ffs_scrub_history scrub_history;
	/* Version 3: the small-data class (0 in older volumes: off).  A file
	 * whose bytes lie below small_max lives in pool blocks. */
	le32 small_max;         /* bytes, 0 = off; at most FFS_SMALL_BYTES_MAX */
	le32 small_reserved;
	le64 pcsum_start;       /* small-data checksum table: one entry per pool block */
	le64 pcsum_blocks;
	struct ffs_patch_open popen; /* version 5 (journal: which commit's list counts) */
	struct ffs_grow_rec grow;    /* version 6 (zero before: no grow) */
	uint8_t reserved[2336];
};
_Static_assert(sizeof(struct ffs_super) == FFS_BLOCK, "superblock is one block");
_Static_assert(offsetof(struct ffs_super, small_max) == 1512, "small-data fields where reserved began");
_Static_assert(offsetof(struct ffs_super, scrub_history) == 360, "history where reserved began");

/* ---- journal --------------------------------------------------------- */


#define FFS_JDESC_MAX ((FFS_BLOCK - 48) / 8)
#define FFS_JDESC_MORE 1u /* another descriptor follows in this transaction */

struct ffs_jdesc {
	struct ffs_bhdr h;      /* h.blockno: position in the journal */
	uint8_t uuid[16];       /* the filesystem's: a leftover record of an older mkfs never replays */
	le64 seq;
	le32 count;             /* block images following this descriptor */
	le32 flags;
	le64 blocks[FFS_JDESC_MAX]; /* home block of each image */
};
_Static_assert(sizeof(struct ffs_jdesc) == FFS_BLOCK, "journal descriptor is one block");

struct ffs_jcommit {
	struct ffs_bhdr h;
	uint8_t uuid[16];
	le64 seq;
	le32 nblocks;           /* images in the whole transaction */
	le32 images_crc;        /* crc32c chained over every image, in order */
	le64 commit_time_ns;
	/* version 5: where patch batches written after this commit may lie
	 * (fs/data/patch.c: replayed at mount); zeros before */
	struct ffs_patch_open popen;
	uint8_t reserved[FFS_BLOCK - 56 - sizeof(struct ffs_patch_open)];
};
_Static_assert(sizeof(struct ffs_jcommit) == FFS_BLOCK, "journal commit is one block");

/* ---- inodes ---------------------------------------------------------- */

#define FFS_INLINE_EXTENTS 6
#define FFS_INODES_PER_BLOCK 15u

enum ffs_iflags {
	FFS_I_BTREE = 1u << 0,  /* extents live in a B+tree rooted at `root` */
	FFS_I_ORPHAN = 1u << 1, /* unlinked, on the orphan list */
	FFS_I_SMALL = 1u << 2,  /* data in pool blocks (u.small), no extents, no stripes */
};

enum ffs_xflags {
	FFS_X_UNWRITTEN = 1u << 0, /* preallocated: reads as zeros, may be written in place */
	FFS_X_TAIL = 1u << 1,      /* version 4: one file stripe packed in a tail stripe */
};

/* A run of whole stripes: file stripes [fstripe, fstripe+count) are at
 * data stripes [pstripe, pstripe+count). */
struct ffs_extent {
	le64 fstripe;
	le64 pstripe;
	le32 count;
	le32 flags;             /* enum ffs_xflags */
};
_Static_assert(sizeof(struct ffs_extent) == 24, "extent");

/*
 * Packed tails (version 4).  A file's last, partial stripe need not take a
 * stripe of its own: it may sit in rows of a shared tail stripe.  Row r of
 * a stripe is bytes [r * FFS_TAIL_ROW, (r + 1) * FFS_TAIL_ROW) of every
 * chunk, data and parity: the parity of a row depends on that row alone,
 * so rows written once, whole, to a stripe whose other rows hold live
 * data never tear them (no write hole), as a full-stripe write never
 * tears another stripe.
 *
 * An FFS_X_TAIL extent maps exactly one file stripe (count's place holds
 * row0 and rows instead): its bytes [0, rows * ndata * FFS_TAIL_ROW) are
 * data chunk i's rows [row0, row0 + rows) for i = 0..ndata-1, in order,
 * each chunk's part rows * FFS_TAIL_ROW bytes long; the file stripe's
 * bytes past them read as zeros.  Such an extent never merges with
 * another; it does not count in the inode's nstripes.
 *
 * A tail stripe's checksum entry has ino FFS_CSUM_TAILS and in fstripe
 * FFS_CSUM_TAIL_PACK(hwm, live): rows [0, hwm) of every chunk are written
 * (tails are appended in row order), crc[i] is the crc32c of chunk i's
 * rows [0, hwm) (so appending rows continues the crc), and live is the
 * number of FFS_X_TAIL extents and patches (below) pointing into it.  A
 * tail stripe is freed when live drops to 0 (and the daemon no longer
 * appends to it).
 */
#define FFS_TAIL_ROW 4096u
struct ffs_tail_extent { /* the view of a struct ffs_extent with FFS_X_TAIL */
	le64 fstripe;
	le64 pstripe;
	le16 row0;
	le16 rows;              /* >= 1; row0 + rows <= chunk_bytes / FFS_TAIL_ROW */
	le32 flags;             /* FFS_X_TAIL */
};
_Static_assert(sizeof(struct ffs_tail_extent) == sizeof(struct ffs_extent), "tail extent");
_Static_assert(offsetof(struct ffs_tail_extent, row0) == offsetof(struct ffs_extent, count),
	       "row0 and rows take count's place");
/* A tail extent's rows, and one made (memcpy: no aliasing of the views). */
static inline void ffs_tail_rows_of(const struct ffs_extent *x, uint32_t *row0, uint32_t *rows)
{
	struct ffs_tail_extent t;

	memcpy(&t, x, sizeof(t));
	*row0 = ff_le16(t.row0);
	*rows = ff_le16(t.rows);
}
static inline struct ffs_extent ffs_tail_extent_make(uint64_t fstripe, uint64_t p, uint32_t row0,
						     uint32_t rows)
{
	struct ffs_tail_extent t = { ff_cpu_to_le64(fstripe), ff_cpu_to_le64(p),
				     ff_cpu_to_le16((uint16_t)row0), ff_cpu_to_le16((uint16_t)rows),
				     ff_cpu_to_le32(FFS_X_TAIL) };
	struct ffs_extent x;

	memcpy(&x, &t, sizeof(x));
	return x;
}
/*
 * Patches (version 5).  A small overwrite of a file stripe that is mapped
 * to a stripe of its own is not a copy-on-write of the whole stripe: the
 * 4 KiB blocks it changes are appended to rows of a tail stripe (as tails
 * are, above, so no live row is ever rewritten) and a patch record says
 * where they are.  Block b of file stripe f (bytes [b * 4 KiB, (b + 1) *
 * 4 KiB) of it) reads from a patch when one covers it, else from the
 * stripe its extent maps.
 *
 * A tail stripe's blocks are numbered row by row: slot s is row s / ndata
 * of data chunk s % ndata.  A patch covers blocks [b0, b0 + nblocks) of one
 * file stripe, held in slots [slot0, slot0 + nblocks) of tail stripe
 * pstripe, all in rows below that stripe's hwm, each with its checksum.  Patches of a file do not
 * overlap, cover only file stripes mapped by an extent that is not
 * preallocated (a plain one, or a tail: past the tail's rows the file
 * stripe reads zeros, and a patch may cover those blocks too), and live in the file's patch tree (the inode's
 * patch_root; node owner: the inode), keyed FFS_PATCH_KEY(f, b0).  Each
 * patch counts as one in its tail stripe's live count, as a tail extent
 * does.  Rewriting, punching or truncating a file stripe drops its patches.
 */
#define FFS_BT_RECORD_MAX_FOR_PATCH 400u /* FFS_BT_RECORD_MAX, defined below */
#define FFS_PATCH_KEY(f, b) (((uint64_t)(f) << 16) | (uint64_t)(b))
#define FFS_PATCH_KEY_STRIPE(k) ((k) >> 16)
#define FFS_PATCH_KEY_BLOCK(k) ((uint32_t)((k) & 0xffffu))
#define FFS_PATCH_BLOCKS_MAX 64u /* blocks one patch record covers */
struct ffs_patch {
	le64 pstripe;           /* the tail stripe */
	le16 slot0;
	le16 nblocks;           /* 1..FFS_PATCH_BLOCKS_MAX; the record is 16 + 4 * nblocks bytes */
	le32 reserved;          /* 0 */
	le32 crc[];             /* ffs_patch_crc of each block */
};
_Static_assert(sizeof(struct ffs_patch) == 16, "patch record head");
_Static_assert(sizeof(struct ffs_patch) + 4 * FFS_PATCH_BLOCKS_MAX <= FFS_BT_RECORD_MAX_FOR_PATCH,
	       "the largest patch record fits a B+tree record");
/* The checksum of the block in slot `slot` of tail stripe p: crc32c seeded
 * with where it is, so a block read from the wrong place fails too.  A
 * patched block is read alone and checked against it (the tail stripe's
 * chunk checksums cover whole chunks). */
uint32_t ffs_patch_crc(uint64_t p, uint32_t slot, const void *data);

/*
 * A patch batch: the patches one write put in rows of a tail stripe, and
 * this block first, in the first slot of its first row.  It makes the
 * batch replayable (fs/data/patch.c): an fsync that wrote only patches to
 * tail stripes the last commit listed (struct ffs_patch_open) waits for
 * the rows, not for a commit; mount lays such batches, past their stripe's
 * hwm, over the files again.  data: nrec records, then the ffs_patch_crc
 * of each patched block, records in order; the blocks follow this one,
 * slot after slot.
 */
struct ffs_pbatch_rec {
	le64 fstripe;
	le16 b0;
	le16 nblocks;
	le32 reserved;
};
_Static_assert(sizeof(struct ffs_pbatch_rec) == 16, "batch record");
struct ffs_pbatch {
	struct ffs_bhdr h;      /* h.blockno: FFS_PBATCH_BLOCKNO(stripe, slot) */
	uint8_t uuid[16];       /* the filesystem's */
	le64 seq;               /* the volume's batches in the order they were written */
	le64 ino;
	le32 igen;              /* the inode's generation */
	le32 nrec;
	le32 slot0;             /* this block's slot: row0 * ndata */
	le32 rows;              /* rows the batch takes, this block's included */
	le64 mtime_ns;          /* the file's times when it was written */
	le64 ctime_ns;
	uint8_t data[FFS_BLOCK - 80];
};
_Static_assert(sizeof(struct ffs_pbatch) == FFS_BLOCK, "patch batch header is one block");
#define FFS_PBATCH_BLOCKNO(p, slot) (((uint64_t)(p) << 16) | (uint64_t)(slot))
/* Whether nrec records holding nblocks blocks fit one header. */
#define FFS_PBATCH_FITS(nrec, nblocks) \
	((size_t)(nrec) * sizeof(struct ffs_pbatch_rec) + (size_t)(nblocks) * 4u <= FFS_BLOCK - 80u)
#define FFS_CSUM_TAILS 0xffffffffu
#define FFS_CSUM_TAIL_PACK(hwm, live) (((uint32_t)(hwm) << 16) | (uint32_t)(live))
#define FFS_CSUM_TAIL_HWM(f) (((f) >> 16) & 0x7fffu)
#define FFS_CSUM_TAIL_LIVE(f) ((f) & 0xffffu)

/*
 * A small file's data (FFS_I_SMALL): bytes [4096 i, 4096 (i + 1)) of the
 * file are in pool block pool_start + block[i], for i < count; count is the
 * file's size in blocks (bytes past the size in the last block are zero).
 * nextents is 0 and nstripes 0: nothing else maps the file.
 */
#define FFS_SMALL_BLOCKS_MAX 34u
#define FFS_SMALL_BYTES_MAX (FFS_SMALL_BLOCKS_MAX * FFS_BLOCK)
struct ffs_small {
	le32 count;
	le32 reserved;
	le32 block[FFS_SMALL_BLOCKS_MAX]; /* index into the pool */
};
_Static_assert(sizeof(struct ffs_small) == FFS_INLINE_EXTENTS * sizeof(struct ffs_extent),
	       "the block list fills the inline extent area");

struct ffs_inode {
	le64 ino;               /* 0 = free slot */
	le32 mode;
	le32 flags;             /* enum ffs_iflags */
	le32 nlink;
	le32 uid;
	le32 gid;
	le32 generation;
	le64 size;
	le64 atime_ns;
	le64 mtime_ns;
	le64 ctime_ns;
	le64 btime_ns;
	le64 nstripes;          /* data stripes allocated */
	le64 xattr_block;       /* pool block, 0 = none */
	le64 parent;            /* directory it was created in (allocation locality; '..' for dirs) */
	le64 orphan_next;
	union {
		le64 rdev;      /* character and block devices */
		le64 patch_root; /* regular files, version 5: patch tree root block, 0 = none */
	} u2;
	le64 root;              /* B+tree root block: directory entries, or extents with FFS_I_BTREE */
	le32 nextents;          /* inline extents in use */
	le32 tail_blocks;       /* version 4: 4 KiB blocks of its tails (FFS_X_TAIL rows * ndata) */
	union {
		struct ffs_extent extents[FFS_INLINE_EXTENTS];
		char symlink[FFS_INLINE_EXTENTS * sizeof(struct ffs_extent)]; /* short targets */
		struct ffs_small small; /* FFS_I_SMALL: where the bytes are */
	} u;
};
_Static_assert(sizeof(struct ffs_inode) == 272, "inode");
_Static_assert(sizeof(struct ffs_bhdr) + FFS_INODES_PER_BLOCK * sizeof(struct ffs_inode) == FFS_BLOCK,
	       "inode-table block");

struct ffs_itable_block {
	struct ffs_bhdr h;
	struct ffs_inode inodes[FFS_INODES_PER_BLOCK];
};

/* ---- bitmaps and the checksum table ---------------------------------- */

struct ffs_bitmap_block {
	struct ffs_bhdr h;
	uint8_t bits[FFS_BLOCK - sizeof(struct ffs_bhdr)];
};
_Static_assert(sizeof(struct ffs_bitmap_block) == FFS_BLOCK, "bitmap block");

/* Entry for one data stripe: the file stripe it holds and one crc32c per
 * data chunk (ndata of them) — lets scrub name the file of a bad chunk.
 * A preallocated stripe not written yet has FFS_CSUM_UNWRITTEN in fstripe
 * and no checksums. */
#define FFS_CSUM_UNWRITTEN 0x80000000u
struct ffs_csum_entry {
	le32 ino;               /* 0 = free */
	le32 fstripe;           /* file stripe, | FFS_CSUM_UNWRITTEN */
	le32 crc[];             /* ndata */
};
_Static_assert(sizeof(struct ffs_csum_entry) == 8, "csum entry head");

/* Small-data checksum table (version 3): entry i describes pool block
 * pool_start + i.  ino 0: the block holds no small-file data (free, or
 * metadata that carries its own header).  crc: ffs_sdata_crc of the block. */
struct ffs_pcsum_entry {
	le32 ino;
	le32 crc;
};
_Static_assert(sizeof(struct ffs_pcsum_entry) == 8, "pcsum entry");
#define FFS_PCSUM_PER_BLOCK ((FFS_BLOCK - (uint32_t)sizeof(struct ffs_bhdr)) / 8u)
struct ffs_pcsum_block {
	struct ffs_bhdr h;
	struct ffs_pcsum_entry e[FFS_PCSUM_PER_BLOCK];
};
_Static_assert(sizeof(struct ffs_pcsum_block) == FFS_BLOCK, "pcsum block");
/* The checksum of small-data block `no` (META block number): crc32c seeded
 * with the block number, so a block read from the wrong place fails too. */
uint32_t ffs_sdata_crc(uint64_t no, const void *data);

/* ---- B+tree nodes ---------------------------------------------------- */

/*
 * Internal nodes hold (key, child) pairs sorted by key; child i covers keys
 * >= key i.  Leaves hold a slot array (key, offset, length) sorted by key,
 * growing up from the header, and record bytes packed down from the end.
 */
struct ffs_bt_node {
	struct ffs_bhdr h;
	le64 owner;             /* inode the tree belongs to */
	le16 level;             /* 0 = leaf */
	le16 count;
	le16 data_start;        /* leaves: lowest byte used by records */
	le16 reserved;
	le32 reserved2;
	le32 reserved3;
};
_Static_assert(sizeof(struct ffs_bt_node) == 40, "btree node header");

struct ffs_bt_ptr {
	le64 key;
	le64 child;
};
_Static_assert(sizeof(struct ffs_bt_ptr) == 16, "btree pointer");

struct ffs_bt_slot {
	le64 key;
	le16 off;
	le16 len;
	le32 reserved;
};
_Static_assert(sizeof(struct ffs_bt_slot) == 16, "btree slot");

#define FFS_BT_PTRS_MAX ((FFS_BLOCK - sizeof(struct ffs_bt_node)) / sizeof(struct ffs_bt_ptr))
#define FFS_BT_RECORD_MAX 400u
_Static_assert(FFS_BT_RECORD_MAX == FFS_BT_RECORD_MAX_FOR_PATCH, "one record limit");

/* Directory entry record (key = name hash); records are byte-packed. */
struct __attribute__((packed)) ffs_dirent {
	le64 ino;
	uint8_t type;           /* DT_* */
	uint8_t name_len;
	char name[];
};
_Static_assert(sizeof(struct ffs_dirent) == 10, "dirent head");

struct ffs_orphan_block {
	struct ffs_bhdr h;
	le64 head;              /* first orphan inode, 0 = none; linked by orphan_next */
	le64 count;
	uint8_t reserved[FFS_BLOCK - 32];
};
_Static_assert(sizeof(struct ffs_orphan_block) == FFS_BLOCK, "orphan block");

/* ---- xattr and symlink blocks ---------------------------------------- */

/*
 * An inode's xattrs: one xattr block of entries (the inode's xattr_block),
 * each u8 name_len, le16 value_len, name, then either the value (inline)
 * or, when value_len is FFS_XATTR_VLEN_EXT, a struct ffs_xattr_ext naming
 * a chain of value blocks that holds it.  Linux allows values of up to
 * 65536 bytes (XATTR_SIZE_MAX) and Samba's vfs_streams_xattr stores every
 * SMB alternate data stream as one; a value that lives in its own blocks
 * is replaced by writing a new chain and switching the entry in the same
 * transaction, so a crash leaves the old value or the new one.
 * Version 1 volumes have inline entries only (FFS_VERSION_XVALUE above).
 */
#define FFS_XATTR_NAME_MAX 255u
#define FFS_XATTR_VALUE_MAX 65536u      /* XATTR_SIZE_MAX */
#define FFS_XATTR_VLEN_EXT 0xffffu      /* value_len of an entry whose value is in a chain */
/* Values up to this many bytes are kept inline (Samba's DOSATTRIB, the
 * Finder's AfpInfo, most ACLs) while the xattr block has room, larger ones
 * (and small ones that no longer fit) in a chain: one large value cannot
 * use up the block that holds every name. */
#define FFS_XATTR_INLINE_MAX 1024u
/* Value bytes one inode may hold, inline and in chains: sixteen values of
 * the largest size.  Beyond it, and when the xattr block has no room for
 * another entry, a set answers ENOSPC. */
#define FFS_XATTR_TOTAL_MAX (16u * FFS_XATTR_VALUE_MAX)

struct ffs_xattr_block {
	struct ffs_bhdr h;
	le64 owner;
	le32 used;              /* bytes of entries */
	le32 count;
	uint8_t data[FFS_BLOCK - 32]; /* entries: u8 name_len, le16 value_len, name, value */
};
_Static_assert(sizeof(struct ffs_xattr_block) == FFS_BLOCK, "xattr block");
_Static_assert(FFS_XATTR_BYTES_MAX == sizeof(((struct ffs_xattr_block *)0)->data), "xattr entries");
_Static_assert(FFS_XATTR_BYTES_MAX < FFS_XATTR_VLEN_EXT, "no inline value has the chain mark's length");

struct __attribute__((packed)) ffs_xattr_ext {
	le32 len;               /* value bytes, 1..FFS_XATTR_VALUE_MAX */
	le64 first;             /* first value block */
};
_Static_assert(sizeof(struct ffs_xattr_ext) == 12, "external value reference");

/* A piece of one value: blocks seq 0, 1, ... linked by next (0 ends it). */
struct ffs_xvalue_block {
	struct ffs_bhdr h;
	le64 owner;             /* inode */
	le64 next;              /* next value block, 0 = last */
	le32 len;               /* value bytes in this block */
	le32 seq;               /* place in the chain: a block linked twice or out of order shows */
	uint8_t data[FFS_BLOCK - 40];
};
_Static_assert(sizeof(struct ffs_xvalue_block) == FFS_BLOCK, "xattr value block");
#define FFS_XVALUE_BYTES ((uint32_t)sizeof(((struct ffs_xvalue_block *)0)->data))
#define FFS_XVALUE_BLOCKS_MAX ((FFS_XATTR_VALUE_MAX + FFS_XVALUE_BYTES - 1) / FFS_XVALUE_BYTES)
_Static_assert(FFS_XVALUE_BLOCKS_MAX == 17, "a 64 KiB value takes 17 value blocks");
_Static_assert(FFS_XATTR_INLINE_MAX + 3 + FFS_XATTR_NAME_MAX <= FFS_XATTR_BYTES_MAX,
	       "an inline value always fits an empty xattr block");

/* One entry of an xattr block, parsed and bounded: data[pos..used). */
struct ffs_xattr_ent {
	const uint8_t *name;
	size_t name_len;
	size_t value_len;
	const uint8_t *value;   /* inline value, or NULL: in the chain at first */
	uint64_t first;
	size_t size;            /* bytes of the entry */
};
/* 0, or -EUCLEAN when the entry at pos does not fit or is malformed. */
int ffs_xattr_parse(const uint8_t *data, size_t used, size_t pos, struct ffs_xattr_ent *e);

struct ffs_symlink_block {
	struct ffs_bhdr h;
	le64 owner;
	le32 len;
	le32 reserved;
	char target[FFS_BLOCK - 32];
};
_Static_assert(sizeof(struct ffs_symlink_block) == FFS_BLOCK, "symlink block");
_Static_assert(FFS_SYMLINK_MAX <= sizeof(((struct ffs_symlink_block *)0)->target) +
	       sizeof(((struct ffs_inode *)0)->u.symlink), "a long target fits block + inline tail");

/* Why scrub history slot `slot` of sb is nonsense (times, counts beyond what
 * the volume holds, a record in the wrong slot or older than the eight
 * newest), NULL when it is sane or empty. */
const char *ffs_scrub_record_problem(const struct ffs_super *sb, unsigned slot);
/* The highest seq in a slot that can hold it (0: no history). */
uint64_t ffs_scrub_history_newest(const struct ffs_super *sb);

/* Checksum before write, verify after read: one helper pair for all blocks. */
void ffs_block_seal(void *block, uint32_t type, uint64_t blockno);
int ffs_block_check(const void *block, uint32_t type, uint64_t blockno); /* 0, -EBADMSG */

/* Name hash for directory keys: 63 bits, never below FFS_DIR_KEY_MIN. */
#define FFS_DIR_KEY_MIN 16ull
uint64_t ffs_name_hash(const char *name, size_t len);
/* A directory entry's type (DT_*) for an inode mode (S_IF*). */
uint8_t ffs_dtype(uint32_t mode);

/* The small-data fields of sb agree with its version and its other regions:
 * version 3 has the pcsum table between the data checksum table and the
 * pool bitmap, covering the pool; older versions have neither it nor a
 * small_max. */
bool ffs_small_layout_ok(const struct ffs_super *sb);

/* Layout computed by mkfs from the array geometry. */
struct ff_geom;
/* Layout of a volume of `version` (FFS_VERSION for mkfs; fsck matches older
 * ones): sets the version and the regions. */
int ffs_layout(struct ffs_super *sb, const struct ff_geom *g, uint64_t ninodes,
	       uint64_t journal_blocks, uint32_t version, uint32_t small_max, struct ff_err *err);

#endif
