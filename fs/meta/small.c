/* SPDX-License-Identifier: MIT */
/*
 * The small-data class (format version 3): a regular file whose bytes all
 * lie below the volume's small_max keeps them in pool blocks of the
 * mirrored META space instead of a data stripe.
 *
 * Why mirrored pool blocks and not small stripes packed with many files:
 * a 4 KiB `._` AppleDouble file or an .xml sidecar beside every frame must
 * not cost a stripe (1.5 MiB on RAID5 x 4), and whatever holds it must keep
 * the write hole closed without a read-modify-write of parity.  META is
 * mirrored (two copies on RAID5, three on RAID6) and written through the
 * journal, so a small file costs its size times the copies, and its bytes
 * change in the same transaction as its inode: a crash leaves the old
 * content or the new, never a mix, with nothing new to prove.  Packing
 * files into shared stripes would need a copy-on-write of the whole pack on
 * every change and a relocation map; a pool block has neither cost.  The
 * price is that small data goes through the journal (written twice) and
 * takes pool room: mkfs sizes the pool for it (ffs.h), and when the pool is
 * down to its reserve for trees and xattrs, small files take stripes as
 * before (counted in small_nospc) instead of failing.
 *
 * The blocks carry no header, so a 4096-byte file is one block: each is
 * checked against its entry in the pcsum table (owner inode and
 * ffs_sdata_crc), which scrub and fsck read as well.
 *
 * The data path (wbuf.c, data.c) decides when a file is small: a write
 * buffer for file stripe 0 that is written out while everything the file
 * holds lies below small_max goes here instead of to a stripe; a file that
 * grows past it moves to stripes once, when its stripe 0 is written whole
 * (stripe_done releases the blocks in the transaction that maps it).
 *
 * fs->lock is held by every function here.
 */
#include <errno.h>
#include <string.h>

#include "fs/meta/meta.h"

bool ffs_is_small(const struct finode *fi)
{
	return (ff_le32(fi->d.flags) & FFS_I_SMALL) != 0;
}

/*
 * Every write past stripe 0 asks whether its file is still small (data.c
 * promote_small).  Under fs->lock that question queued each such write
 * behind commits and completions: 1,086 waits a second of 115 us on
 * average, on libfuse's queue threads, in 4 KiB random writes to 4 files
 * of 64 MiB with fsync every 64 (RAID5 x 4).  Without it the answer is still exact enough, because the
 * writer holds dlock with beyond_small raised:
 * - nothing can set the flag: only small_writeout does (wbuf.c), under
 *   dlock and only with beyond_small 0;
 * - stripe_done may clear it (ffs_small_release, under fs->lock), and then
 *   takes dlock to let the buffer go and wake dcond.  A writer that read
 *   the flag still set finds stripe 0's buffer being written and waits on
 *   dcond for that wake; one that took dlock after it sees the flag clear
 *   (the mutexes order the store before the load).
 * The locked read was no better: a snapshot, stale the moment fs->lock was
 * let go (a truncate clears the flag under fs->lock alone, either way).
 * Every change of d.flags is an atomic store (ffs_iflags_change), so this
 * load races with nothing; the inode's load and its freeing write d whole,
 * before any writer has the inode and after the last has let it go.
 */
bool ffs_is_small_unlocked(const struct finode *fi)
{
	return (ff_le32(__atomic_load_n(&fi->d.flags, __ATOMIC_ACQUIRE)) & FFS_I_SMALL) != 0;
}

uint32_t ffs_small_max(const struct ffs *fs)
{
	return ff_le32(fs->sb->small_max);
}

/* The pcsum entry of pool block `no`, its table block pinned in *mb (and
 * joined to the transaction when `write`). */
static int pcsum_entry(struct ffs *fs, uint64_t no, bool write, struct mbuf **mb,
		       struct ffs_pcsum_entry **e)
{
	uint64_t i = no - ff_le64(fs->sb->pool_start);
	int rc;

	if (!fs->sb->pcsum_blocks || no < ff_le64(fs->sb->pool_start) ||
	    i >= ff_le64(fs->sb->pool_blocks))
		return -EUCLEAN;
	rc = ffs_mb_get(fs, ff_le64(fs->sb->pcsum_start) + i / FFS_PCSUM_PER_BLOCK, FFS_B_PCSUM, mb);
	if (rc < 0)
		return rc;
	*e = &((struct ffs_pcsum_block *)(*mb)->data)->e[i % FFS_PCSUM_PER_BLOCK];
	if (write)
		ffs_mb_dirty(fs, *mb);
	return 0;
}

int ffs_pcsum_get(struct ffs *fs, uint64_t no, uint32_t *ino, uint32_t *crc)
{
	struct ffs_pcsum_entry *e;
	struct mbuf *mb;
	int rc = pcsum_entry(fs, no, false, &mb, &e);

	if (rc < 0)
		return rc;
	*ino = ff_le32(e->ino);
	*crc = ff_le32(e->crc);
	ffs_mb_put(fs, mb);
	return 0;
}

int ffs_pcsum_set(struct ffs *fs, uint64_t no, uint32_t ino, uint32_t crc)
{
	struct ffs_pcsum_entry *e;
	struct mbuf *mb;
	int rc = pcsum_entry(fs, no, true, &mb, &e);

	if (rc < 0)
		return rc;
	e->ino = ff_cpu_to_le32(ino);
	e->crc = ff_cpu_to_le32(crc);
	ffs_mb_put(fs, mb);
	return 0;
}

/* Pool blocks small data may not take: the reserve for directory trees,
 * extent trees, xattrs and symlinks (a sixteenth of the pool). */
static uint64_t pool_reserve(const struct ffs *fs)
{
	return ff_le64(fs->sb->pool_blocks) / 16;
}

static uint64_t block_no(const struct ffs *fs, const struct finode *fi, uint32_t i)
{
	return ff_le64(fs->sb->pool_start) + ff_le32(fi->d.u.small.block[i]);
}

int ffs_small_read(struct ffs *fs, struct finode *fi, uint64_t off, size_t n, uint8_t *dst)
{
	uint32_t count = ff_le32(fi->d.u.small.count);

	while (n) {
		uint64_t b = off / FFS_BLOCK, o = off % FFS_BLOCK;
		size_t m = (size_t)FF_MIN((uint64_t)n, FFS_BLOCK - o);

		if (b >= count) {
			memset(dst, 0, m); /* past the blocks: the rest of stripe 0 is a hole */
		} else {
			uint64_t no = block_no(fs, fi, (uint32_t)b);
			uint32_t owner, crc;
			int rc = ffs_pcsum_get(fs, no, &owner, &crc);

			if (rc == 0 && owner != (uint32_t)fi->ino) {
				ff_log(FF_LOG_ERR, "inode %llu: small-data block %llu belongs to inode %u; "
				       "run fsck.framefs", (unsigned long long)fi->ino,
				       (unsigned long long)no, owner);
				rc = -EUCLEAN;
			}
			if (rc == 0)
				rc = ffs_meta_read_sdata(fs, no, crc, fs->small_buf);
			if (rc < 0)
				return rc == -EBADMSG ? -EIO : rc;
			memcpy(dst, fs->small_buf + o, m);
		}
		off += m;
		dst += m;
		n -= m;
	}
	return 0;
}

/* Give back fi's blocks (their entries cleared in the same transaction). */
static int free_blocks(struct ffs *fs, struct finode *fi)
{
	uint32_t count = ff_le32(fi->d.u.small.count);
	int rc = 0;

	for (uint32_t i = 0; i < count && rc == 0; i++) {
		uint64_t no = block_no(fs, fi, i);

		rc = ffs_pcsum_set(fs, no, 0, 0);
		if (rc == 0)
			rc = ffs_free_mblock(fs, no);
	}
	return rc;
}

int ffs_small_store(struct ffs *fs, struct finode *fi, const uint8_t *data, uint64_t len)
{
	uint32_t n = (uint32_t)FF_DIV_ROUND_UP(len, FFS_BLOCK), got = 0;
	uint32_t blocks[FFS_SMALL_BLOCKS_MAX];
	int rc = 0;

	FF_ASSERT(len <= ffs_small_max(fs) && n <= FFS_SMALL_BLOCKS_MAX);
	if (fs->free_mblocks < (uint64_t)n + pool_reserve(fs)) {
		atomic_fetch_add(&fs->stats.small_nospc, 1);
		return -ENOSPC;
	}
	for (; got < n && rc == 0; got++) {
		size_t piece = (size_t)FF_MIN(len - (uint64_t)got * FFS_BLOCK, FFS_BLOCK);
		struct mbuf *mb;
		uint64_t no;

		rc = ffs_alloc_mblock(fs, &no);
		if (rc < 0)
			break;
		blocks[got] = (uint32_t)(no - ff_le64(fs->sb->pool_start));
		rc = ffs_mb_new(fs, no, FFS_B_SDATA, &mb); /* zero-filled: the tail past len */
		if (rc == 0) {
			memcpy(mb->data, data + (size_t)got * FFS_BLOCK, piece);
			ffs_mb_dirty(fs, mb);
			rc = ffs_pcsum_set(fs, no, (uint32_t)fi->ino, ffs_sdata_crc(no, mb->data));
			ffs_mb_put(fs, mb);
		}
		if (rc < 0) {
			got++; /* this block is taken: give it back below */
			break;
		}
	}
	if (rc < 0) {
		for (uint32_t i = 0; i < got; i++) {
			uint64_t no = ff_le64(fs->sb->pool_start) + blocks[i];

			ffs_pcsum_set(fs, no, 0, 0);
			ffs_free_mblock(fs, no);
		}
		return rc;
	}
	if (ffs_is_small(fi))
		rc = free_blocks(fs, fi);
	if (rc < 0)
		return rc;
	memset(&fi->d.u, 0, sizeof(fi->d.u));
	fi->d.u.small.count = ff_cpu_to_le32(n);
	for (uint32_t i = 0; i < n; i++)
		fi->d.u.small.block[i] = ff_cpu_to_le32(blocks[i]);
	ffs_iflags_change(fi, FFS_I_SMALL, 0);
	atomic_fetch_add(&fs->stats.small_stores, 1);
	return ffs_istore(fs, fi);
}

int ffs_small_release(struct ffs *fs, struct finode *fi)
{
	int rc;

	if (!ffs_is_small(fi))
		return 0;
	rc = free_blocks(fs, fi);
	if (rc < 0)
		return rc;
	memset(&fi->d.u, 0, sizeof(fi->d.u));
	ffs_iflags_change(fi, 0, FFS_I_SMALL);
	return ffs_istore(fs, fi);
}

const char *ffs_small_problem(const struct ffs *fs, const struct ffs_inode *d)
{
	uint32_t count = ff_le32(d->u.small.count);

	if (!(ff_le32(d->flags) & FFS_I_SMALL))
		return NULL;
	if ((ff_le32(d->mode) & S_IFMT) != S_IFREG)
		return "is not a regular file";
	if (!ffs_small_max(fs))
		return "is small on a volume without the small-data class";
	if (count > FFS_SMALL_BLOCKS_MAX)
		return "has more small-data blocks than an inode holds";
	if (ff_le32(d->nextents) || ff_le64(d->nstripes) || (ff_le32(d->flags) & FFS_I_BTREE))
		return "is small and maps stripes too";
	for (uint32_t i = 0; i < count; i++)
		if (ff_le32(d->u.small.block[i]) >= ff_le64(fs->sb->pool_blocks))
			return "names a small-data block outside the pool";
	return NULL;
}
