/* SPDX-License-Identifier: MIT */
/*
 * Inodes: the in-memory cache (ffs_iget/iput), the inode table
 * (ffs_istore, ffs_inode_new, ffs_inode_maybe_free) and the orphan list.
 * A file's extent map is in extent.c, its extended attributes in xattr.c.
 *
 * Locking: everything here runs under fs->lock, which guards the cache,
 * each finode's on-disk part (d, nlookup, nopen, refs) and the table
 * blocks.  A finode's data-path fields are the data path's (dlock).
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs/meta/meta.h"
#include "io/hash.h"

/* ---- cache --------------------------------------------------------------- */

static unsigned ihash(const struct ffs *fs, uint64_t ino)
{
	return ff_hash_bucket(ino, fs->ihash_size - 1);
}

int ffs_icache_init(struct ffs *fs)
{
	fs->ihash_size = 1u << 16;
	fs->ihash = calloc(fs->ihash_size, sizeof(*fs->ihash));
	fs->reclaim_reservations = ffs_icache_unreserve_all;
	return fs->ihash ? 0 : -ENOMEM;
}

static void finode_free(struct finode *fi)
{
	pthread_mutex_destroy(&fi->dlock);
	pthread_cond_destroy(&fi->dcond);
	free(fi);
}

void ffs_icache_free(struct ffs *fs)
{
	if (!fs->ihash)
		return;
	for (unsigned i = 0; i < fs->ihash_size; i++)
		while (fs->ihash[i]) {
			struct finode *fi = fs->ihash[i];

			fs->ihash[i] = fi->hnext;
			finode_free(fi);
		}
	free(fs->ihash);
	fs->ihash = NULL;
	fs->reclaim_reservations = NULL;
}

void ffs_icache_unreserve_all(struct ffs *fs)
{
	for (unsigned h = 0; h < fs->ihash_size; h++)
		for (struct finode *f = fs->ihash[h]; f; f = f->hnext)
			if (f->reserve_count) {
				ffs_unreserve_stripes(fs, f->reserve_first, f->reserve_count);
				f->reserve_count = 0;
			}
}

static void icache_remove(struct ffs *fs, struct finode *fi)
{
	struct finode **pp = &fs->ihash[ihash(fs, fi->ino)];

	while (*pp != fi)
		pp = &(*pp)->hnext;
	*pp = fi->hnext;
	fs->ninodes_cached--;
}

static int itable_slot(struct ffs *fs, uint64_t ino, bool fresh, struct mbuf **mb,
		       struct ffs_inode **slot)
{
	uint64_t blk = ino / FFS_INODES_PER_BLOCK;
	int rc;

	if (ino == 0 || ino >= ff_le64(fs->sb->ninodes))
		return -EUCLEAN;
	if (fresh)
		rc = ffs_mb_new(fs, ff_le64(fs->sb->itable_start) + blk, FFS_B_ITABLE, mb);
	else
		rc = ffs_mb_get(fs, ff_le64(fs->sb->itable_start) + blk, FFS_B_ITABLE, mb);
	if (rc < 0)
		return rc;
	*slot = &((struct ffs_itable_block *)(*mb)->data)->inodes[ino % FFS_INODES_PER_BLOCK];
	return 0;
}

static struct finode *finode_alloc(uint64_t ino)
{
	struct finode *fi = calloc(1, sizeof(*fi));

	if (!fi)
		return NULL;
	fi->ino = ino;
	pthread_mutex_init(&fi->dlock, NULL);
	pthread_cond_init(&fi->dcond, NULL);
	return fi;
}

static void icache_insert(struct ffs *fs, struct finode *fi)
{
	unsigned h = ihash(fs, fi->ino);

	fi->hnext = fs->ihash[h];
	fs->ihash[h] = fi;
	fs->ninodes_cached++;
}

int ffs_iget(struct ffs *fs, uint64_t ino, struct finode **out)
{
	struct finode *fi;
	struct ffs_inode *slot;
	struct mbuf *mb;
	int rc;

	for (fi = fs->ihash[ihash(fs, ino)]; fi; fi = fi->hnext)
		if (fi->ino == ino && !fi->deleted) {
			fi->refs++;
			*out = fi;
			return 0;
		}
	if (!ffs_inode_bit_used(fs, ino))
		return -ENOENT;
	rc = itable_slot(fs, ino, false, &mb, &slot);
	if (rc < 0)
		return rc;
	if (ff_le64(slot->ino) != ino || ff_le32(slot->mode) == 0) {
		ffs_mb_put(fs, mb);
		ff_log(FF_LOG_ERR, "inode %llu is allocated but its table slot is not",
		       (unsigned long long)ino);
		return -EUCLEAN;
	}
	/* the inline map is indexed by this count: a corrupt one must not reach it */
	if (ff_le32(slot->nextents) > FFS_INLINE_EXTENTS) {
		ffs_mb_put(fs, mb);
		ff_log(FF_LOG_ERR, "inode %llu: corrupt extent count; run fsck.framefs",
		       (unsigned long long)ino);
		return -EUCLEAN;
	}
	if (ffs_small_problem(fs, slot)) {
		ff_log(FF_LOG_ERR, "inode %llu %s; run fsck.framefs", (unsigned long long)ino,
		       ffs_small_problem(fs, slot));
		ffs_mb_put(fs, mb);
		return -EUCLEAN;
	}
	fi = finode_alloc(ino);
	if (!fi) {
		ffs_mb_put(fs, mb);
		return -ENOMEM;
	}
	fi->d = *slot;
	ffs_mb_put(fs, mb);
	fi->refs = 1;
	fi->tx_seq = fs->evicted_tx_seq; /* it may have changed before it was evicted */
	icache_insert(fs, fi);
	if (fs->orows) /* a grown volume: which geometry its stripes are in (stat uses it) */
		(void)ffs_file_geo(fs, fi);
	*out = fi;
	return 0;
}

/*
 * The last pin of an inode no name reaches: with nothing open it frees the
 * file's bytes, and once the kernel has forgotten it too, the inode.  The
 * two come apart because the kernel may hold an inode long after unlink
 * returned (an O_PATH descriptor, its own cache), and over FUSE io_uring
 * its FORGET comes on /dev/fuse, after statfs requests sent later on the
 * ring; a user who deletes frames to make room must see the room at once.
 */
void ffs_iput(struct ffs *fs, struct finode *fi)
{
	FF_ASSERT(fi->refs > 0);
	if (--fi->refs || fi->nopen || fi->wbufs)
		return;
	if (!fi->deleted && ff_le32(fi->d.nlink) == 0 && !fs->ro) {
		int rc;

		fi->refs++;
		rc = fi->nlookup ? ffs_inode_drop_data(fs, fi) : ffs_inode_maybe_free(fs, fi);
		fi->refs--;
		if (rc < 0)
			ff_log(FF_LOG_ERR, "cannot free deleted inode %llu: %s (it stays on the "
			       "orphan list; the next mount frees it)", (unsigned long long)fi->ino, strerror(-rc));
	}
	if (fi->nlookup)
		return;
	icache_remove(fs, fi);
	fs->evicted_tx_seq = FF_MAX(fs->evicted_tx_seq, fi->tx_seq);
	finode_free(fi);
}

void ffs_iflags_change(struct finode *fi, uint32_t set, uint32_t clear)
{
	uint32_t f = (ff_le32(fi->d.flags) | set) & ~clear;

	__atomic_store_n(&fi->d.flags, ff_cpu_to_le32(f), __ATOMIC_RELEASE);
}

int ffs_istore(struct ffs *fs, struct finode *fi)
{
	struct ffs_inode *slot;
	struct mbuf *mb;
	int rc = itable_slot(fs, fi->ino, false, &mb, &slot);

	if (rc < 0)
		return rc;
	*slot = fi->d;
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	fi->tx_seq = fs->j_seq;
	return 0;
}

void ffs_inode_touch(struct finode *fi, bool mtime, bool ctime)
{
	uint64_t now = ff_wall_ns();

	if (mtime)
		fi->d.mtime_ns = ff_cpu_to_le64(now);
	if (ctime)
		fi->d.ctime_ns = ff_cpu_to_le64(now);
}

int ffs_inode_new(struct ffs *fs, uint32_t mode, uint32_t uid, uint32_t gid, uint64_t parent,
	      struct finode **out)
{
	uint64_t ino, now = ff_wall_ns(), hwm = ff_le64(fs->sb->itable_hwm);
	struct ffs_inode *slot;
	struct finode *fi;
	struct mbuf *mb;
	uint32_t gen;
	int rc = ffs_alloc_inode(fs, &ino);

	if (rc < 0)
		return rc;
	/* a block past the old high-water mark was never written: start it fresh */
	rc = itable_slot(fs, ino, ino / FFS_INODES_PER_BLOCK >= hwm, &mb, &slot);
	if (rc < 0) {
		ffs_free_inode_bit(fs, ino);
		return rc;
	}
	gen = ff_le32(slot->generation) + 1;
	fi = finode_alloc(ino);
	if (!fi) {
		ffs_mb_put(fs, mb);
		ffs_free_inode_bit(fs, ino);
		return -ENOMEM;
	}
	fi->d.ino = ff_cpu_to_le64(ino);
	fi->d.mode = ff_cpu_to_le32(mode);
	fi->d.nlink = ff_cpu_to_le32(S_ISDIR(mode) ? 2 : 1);
	fi->d.uid = ff_cpu_to_le32(uid);
	fi->d.gid = ff_cpu_to_le32(gid);
	fi->d.generation = ff_cpu_to_le32(gen);
	fi->d.atime_ns = fi->d.mtime_ns = fi->d.ctime_ns = fi->d.btime_ns = ff_cpu_to_le64(now);
	fi->d.parent = ff_cpu_to_le64(parent);
	*slot = fi->d;
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	fi->refs = 1;
	fi->tx_seq = fs->j_seq;
	icache_insert(fs, fi);
	*out = fi;
	return 0;
}

void ffs_inode_stat(const struct ffs *fs, const struct finode *fi, struct stat *st)
{
	const struct ffs_inode *d = &fi->d;

	memset(st, 0, sizeof(*st));
	st->st_ino = fi->ino;
	st->st_mode = ff_le32(d->mode);
	st->st_nlink = ff_le32(d->nlink);
	st->st_uid = ff_le32(d->uid);
	st->st_gid = ff_le32(d->gid);
	st->st_rdev = S_ISCHR(ff_le32(d->mode)) || S_ISBLK(ff_le32(d->mode)) ? ff_le64(d->u2.rdev) : 0;
	st->st_size = (off_t)ff_le64(d->size);
	uint64_t S = fi->geo ? fi->geo->g->stripe_bytes : fs->stripe_bytes; /* ffs_file_geo */

	st->st_blksize = (blksize_t)FF_MIN(S, 1ull << 20);
	st->st_blocks = (blkcnt_t)(ff_le64(d->nstripes) * (S / 512) +
				   (uint64_t)ff_le32(d->tail_blocks) * (FFS_TAIL_ROW / 512));
	if (ff_le32(d->flags) & FFS_I_SMALL) /* one copy's blocks, as for a stripe's data */
		st->st_blocks = (blkcnt_t)ff_le32(d->u.small.count) * (FFS_BLOCK / 512);
	st->st_atim.tv_sec = (time_t)(ff_le64(d->atime_ns) / 1000000000ull);
	st->st_atim.tv_nsec = (long)(ff_le64(d->atime_ns) % 1000000000ull);
	st->st_mtim.tv_sec = (time_t)(ff_le64(d->mtime_ns) / 1000000000ull);
	st->st_mtim.tv_nsec = (long)(ff_le64(d->mtime_ns) % 1000000000ull);
	st->st_ctim.tv_sec = (time_t)(ff_le64(d->ctime_ns) / 1000000000ull);
	st->st_ctim.tv_nsec = (long)(ff_le64(d->ctime_ns) % 1000000000ull);
}

/* ---- orphans ------------------------------------------------------------- */

static int orphan_block(struct ffs *fs, struct mbuf **mb)
{
	return ffs_mb_get(fs, FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, mb);
}

int ffs_orphan_add(struct ffs *fs, struct finode *fi)
{
	struct ffs_orphan_block *ob;
	struct mbuf *mb;
	int rc;

	if (ff_le32(fi->d.flags) & FFS_I_ORPHAN)
		return 0;
	rc = orphan_block(fs, &mb);
	if (rc < 0)
		return rc;
	ob = (struct ffs_orphan_block *)mb->data;
	fi->d.orphan_next = ob->head;
	ffs_iflags_change(fi, FFS_I_ORPHAN, 0);
	ob->head = ff_cpu_to_le64(fi->ino);
	ob->count = ff_cpu_to_le64(ff_le64(ob->count) + 1);
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	return ffs_istore(fs, fi);
}

int ffs_orphan_remove(struct ffs *fs, struct finode *fi)
{
	struct ffs_orphan_block *ob;
	struct mbuf *mb;
	uint64_t cur, limit;
	int rc;

	if (!(ff_le32(fi->d.flags) & FFS_I_ORPHAN))
		return 0;
	rc = orphan_block(fs, &mb);
	if (rc < 0)
		return rc;
	ob = (struct ffs_orphan_block *)mb->data;
	limit = ff_le64(ob->count) + 1;
	if (ff_le64(ob->head) == fi->ino) {
		ob->head = fi->d.orphan_next;
	} else {
		for (cur = ff_le64(ob->head); cur && limit--;) {
			struct finode *prev;

			rc = ffs_iget(fs, cur, &prev);
			if (rc < 0)
				break;
			cur = ff_le64(prev->d.orphan_next);
			if (cur == fi->ino) {
				prev->d.orphan_next = fi->d.orphan_next;
				rc = ffs_istore(fs, prev);
				ffs_iput(fs, prev);
				break;
			}
			ffs_iput(fs, prev);
		}
	}
	if (ff_le64(ob->count))
		ob->count = ff_cpu_to_le64(ff_le64(ob->count) - 1);
	ffs_mb_dirty(fs, mb);
	ffs_mb_put(fs, mb);
	fi->d.orphan_next = 0;
	ffs_iflags_change(fi, 0, FFS_I_ORPHAN);
	return rc < 0 ? rc : ffs_istore(fs, fi);
}

/* At mount: every inode left on the orphan list was unlinked while open. */
int ffs_orphans_process(struct ffs *fs, unsigned *freed)
{
	struct mbuf *mb;
	uint64_t head;
	unsigned n = 0;
	int rc;

	for (;;) {
		struct finode *fi;

		rc = orphan_block(fs, &mb);
		if (rc < 0)
			return rc;
		head = ff_le64(((struct ffs_orphan_block *)mb->data)->head);
		ffs_mb_put(fs, mb);
		if (!head || n > ff_le64(fs->sb->ninodes))
			break;
		rc = ffs_iget(fs, head, &fi);
		if (rc < 0)
			return rc;
		fi->d.nlink = 0;
		rc = ffs_inode_maybe_free(fs, fi);
		ffs_iput(fs, fi);
		if (rc < 0)
			return rc;
		n++;
		if (ffs_journal_tx_full(fs) && (rc = ffs_journal_commit(fs)) < 0)
			return rc;
	}
	*freed = n;
	return 0;
}

int ffs_inode_drop_data(struct ffs *fs, struct finode *fi)
{
	int rc;

	if (fi->data_dropped || fi->deleted || !S_ISREG(ff_le32(fi->d.mode)) ||
	    ff_le32(fi->d.nlink) || fi->nopen || fi->wbufs)
		return 0;
	rc = ffs_extent_truncate(fs, fi, 0);
	if (rc == 0)
		fi->data_dropped = true;
	return rc;
}

int ffs_inode_maybe_free(struct ffs *fs, struct finode *fi)
{
	struct bt_root t = { ff_le64(fi->d.root), fi->ino };
	uint32_t mode = ff_le32(fi->d.mode);
	int rc = 0;

	if (fi->deleted || ff_le32(fi->d.nlink) || fi->nopen || fi->nlookup)
		return 0;
	if (S_ISREG(mode)) {
		rc = ffs_extent_truncate(fs, fi, 0);
		if (rc == 0 && (ff_le32(fi->d.flags) & FFS_I_BTREE) && fi->d.root) {
			t.root = ff_le64(fi->d.root);
			rc = ffs_bt_destroy(fs, &t);
		}
	} else if (S_ISDIR(mode) || (S_ISLNK(mode) && fi->d.root)) {
		if (fi->d.root)
			rc = S_ISDIR(mode) ? ffs_bt_destroy(fs, &t) : ffs_free_mblock(fs, ff_le64(fi->d.root));
	}
	if (rc == 0)
		rc = ffs_xattr_drop(fs, fi);
	if (rc == 0)
		rc = ffs_orphan_remove(fs, fi);
	if (rc < 0)
		return rc;
	{
		uint32_t gen = ff_le32(fi->d.generation);

		memset(&fi->d, 0, sizeof(fi->d));
		fi->d.generation = ff_cpu_to_le32(gen);
	}
	rc = ffs_istore(fs, fi);
	if (rc == 0)
		rc = ffs_free_inode_bit(fs, fi->ino);
	fi->deleted = true;
	return rc;
}
