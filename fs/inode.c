/* SPDX-License-Identifier: MIT */
/*
 * Inodes: the in-memory cache, the inode table, the orphan list, extent
 * maps, extended attributes and long symlink targets.
 *
 * An extent map lists runs of whole stripes.  Up to FFS_INLINE_EXTENTS
 * runs live in the inode itself (a frame is one run); beyond that the map
 * moves to a B+tree keyed by file stripe.  Both forms sit behind the same
 * four primitives (find the run at or before a stripe, find the next,
 * remove, add), and the mapping logic above them is written once.
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>

#include "fs/fs_i.h"

/* ---- cache --------------------------------------------------------------- */

static unsigned ihash(const struct ffs *fs, uint64_t ino)
{
	return (unsigned)((ino * 0x9E3779B97F4A7C15ull) >> 32) & (fs->ihash_size - 1);
}

int ffs_icache_init(struct ffs *fs)
{
	fs->ihash_size = 1u << 16;
	fs->ihash = calloc(fs->ihash_size, sizeof(*fs->ihash));
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
	*out = fi;
	return 0;
}

void ffs_iput(struct ffs *fs, struct finode *fi)
{
	FF_ASSERT(fi->refs > 0);
	if (--fi->refs || fi->nlookup || fi->nopen || fi->wbufs)
		return;
	if (!fi->deleted && ff_le32(fi->d.nlink) == 0 && !fs->ro) {
		fi->refs++;
		ffs_inode_maybe_free(fs, fi);
		fi->refs--;
	}
	icache_remove(fs, fi);
	fs->evicted_tx_seq = FF_MAX(fs->evicted_tx_seq, fi->tx_seq);
	finode_free(fi);
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
	st->st_rdev = ff_le64(d->rdev);
	st->st_size = (off_t)ff_le64(d->size);
	st->st_blksize = (blksize_t)FF_MIN(fs->stripe_bytes, 1ull << 20);
	st->st_blocks = (blkcnt_t)(ff_le64(d->nstripes) * (fs->stripe_bytes / 512));
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
	fi->d.flags = ff_cpu_to_le32(ff_le32(fi->d.flags) | FFS_I_ORPHAN);
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
	fi->d.flags = ff_cpu_to_le32(ff_le32(fi->d.flags) & ~FFS_I_ORPHAN);
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

/* ---- extent maps --------------------------------------------------------- */

struct xrec { /* B+tree value; the key is the file stripe */
	le64 pstripe;
	le32 count;
	le32 flags;
};

static bool is_tree(const struct finode *fi)
{
	return ff_le32(fi->d.flags) & FFS_I_BTREE;
}

typedef int (*bt_find_fn)(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found,
			  void *val, uint16_t *len);

/* The B+tree form: the record found by `find` as an extent. */
static int tree_find(struct ffs *fs, struct finode *fi, uint64_t f, bt_find_fn find,
		     struct ffs_extent *x)
{
	struct bt_root t = { ff_le64(fi->d.root), fi->ino };
	uint8_t rec[FFS_BT_RECORD_MAX]; /* a corrupt record may be longer than an extent */
	struct xrec r;
	uint64_t key;
	uint16_t len;
	int rc = find(fs, &t, f, &key, rec, &len);

	if (rc < 0)
		return rc;
	if (len != sizeof(r))
		return -EUCLEAN;
	memcpy(&r, rec, sizeof(r));
	x->fstripe = ff_cpu_to_le64(key);
	x->pstripe = r.pstripe;
	x->count = r.count;
	x->flags = r.flags;
	return 0;
}

/* The run starting at or before f, if any. */
static int ext_find_le(struct ffs *fs, struct finode *fi, uint64_t f, struct ffs_extent *x)
{
	if (is_tree(fi))
		return tree_find(fs, fi, f, ffs_bt_find_le, x);
	for (int i = (int)ff_le32(fi->d.nextents) - 1; i >= 0; i--)
		if (ff_le64(fi->d.u.extents[i].fstripe) <= f) {
			*x = fi->d.u.extents[i];
			return 0;
		}
	return -ENOENT;
}

/* The first run starting at or after f. */
static int ext_find_ge(struct ffs *fs, struct finode *fi, uint64_t f, struct ffs_extent *x)
{
	if (is_tree(fi))
		return tree_find(fs, fi, f, ffs_bt_find_ge, x);
	for (unsigned i = 0; i < ff_le32(fi->d.nextents); i++)
		if (ff_le64(fi->d.u.extents[i].fstripe) >= f) {
			*x = fi->d.u.extents[i];
			return 0;
		}
	return -ENOENT;
}

static int ext_remove(struct ffs *fs, struct finode *fi, uint64_t f)
{
	unsigned n = ff_le32(fi->d.nextents);

	if (is_tree(fi)) {
		struct bt_root t = { ff_le64(fi->d.root), fi->ino };
		int rc = ffs_bt_delete(fs, &t, f);

		fi->d.root = ff_cpu_to_le64(t.root);
		return rc;
	}
	for (unsigned i = 0; i < n; i++)
		if (ff_le64(fi->d.u.extents[i].fstripe) == f) {
			memmove(&fi->d.u.extents[i], &fi->d.u.extents[i + 1],
				(n - i - 1) * sizeof(struct ffs_extent));
			fi->d.nextents = ff_cpu_to_le32(n - 1);
			return 0;
		}
	return -ENOENT;
}

static int tree_add(struct ffs *fs, struct finode *fi, const struct ffs_extent *x)
{
	struct bt_root t = { ff_le64(fi->d.root), fi->ino };
	struct xrec r = { x->pstripe, x->count, x->flags };
	int rc = ffs_bt_insert(fs, &t, ff_le64(x->fstripe), &r, sizeof(r));

	fi->d.root = ff_cpu_to_le64(t.root);
	return rc;
}

/* Move a full inline map into a B+tree. */
static int ext_to_tree(struct ffs *fs, struct finode *fi)
{
	struct ffs_extent saved[FFS_INLINE_EXTENTS];
	unsigned n = ff_le32(fi->d.nextents);
	int rc = 0;

	memcpy(saved, fi->d.u.extents, sizeof(saved));
	memset(&fi->d.u, 0, sizeof(fi->d.u));
	fi->d.nextents = 0;
	fi->d.root = 0;
	fi->d.flags = ff_cpu_to_le32(ff_le32(fi->d.flags) | FFS_I_BTREE);
	for (unsigned i = 0; i < n && rc == 0; i++)
		rc = tree_add(fs, fi, &saved[i]);
	return rc;
}

static int ext_add(struct ffs *fs, struct finode *fi, const struct ffs_extent *x)
{
	unsigned n = ff_le32(fi->d.nextents), i;

	if (is_tree(fi))
		return tree_add(fs, fi, x);
	if (n == FFS_INLINE_EXTENTS) {
		int rc = ext_to_tree(fs, fi);

		return rc < 0 ? rc : tree_add(fs, fi, x);
	}
	for (i = 0; i < n && ff_le64(fi->d.u.extents[i].fstripe) < ff_le64(x->fstripe); i++)
		;
	memmove(&fi->d.u.extents[i + 1], &fi->d.u.extents[i], (n - i) * sizeof(*x));
	fi->d.u.extents[i] = *x;
	fi->d.nextents = ff_cpu_to_le32(n + 1);
	return 0;
}

static struct ffs_extent mkext(uint64_t f, uint64_t p, uint64_t n, uint32_t flags)
{
	return (struct ffs_extent){ ff_cpu_to_le64(f), ff_cpu_to_le64(p),
				    ff_cpu_to_le32((uint32_t)n), ff_cpu_to_le32(flags) };
}

/*
 * Remove file stripes [f, end) from the map.  Physical stripes inside
 * [keep, keep+nkeep) are the ones about to be mapped again (a preallocated
 * run written in place) and are not freed.
 */
static int punch(struct ffs *fs, struct finode *fi, uint64_t f, uint64_t end, uint64_t keep,
		 uint64_t nkeep)
{
	for (;;) {
		struct ffs_extent x;
		uint64_t xf, xp, xn, a, b;
		int rc = ext_find_le(fs, fi, end - 1, &x);

		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
		xf = ff_le64(x.fstripe);
		xp = ff_le64(x.pstripe);
		xn = ff_le32(x.count);
		if (xf + xn <= f)
			return 0; /* the nearest run ends before the hole */
		a = FF_MAX(f, xf);
		b = FF_MIN(end, xf + xn);
		rc = ext_remove(fs, fi, xf);
		if (rc == 0 && a > xf) {
			struct ffs_extent l = mkext(xf, xp, a - xf, ff_le32(x.flags));

			rc = ext_add(fs, fi, &l);
		}
		if (rc == 0 && xf + xn > b) {
			struct ffs_extent r = mkext(b, xp + (b - xf), xf + xn - b, ff_le32(x.flags));

			rc = ext_add(fs, fi, &r);
		}
		for (uint64_t s = a; rc == 0 && s < b; s++) {
			uint64_t ps = xp + (s - xf);

			if (ps >= keep && ps < keep + nkeep)
				continue;
			rc = ffs_free_stripes(fs, ps, 1);
			fi->d.nstripes = ff_cpu_to_le64(ff_le64(fi->d.nstripes) - 1);
		}
		if (rc < 0)
			return rc;
		if (a == 0 || a <= f)
			return 0;
		end = a;
	}
}

int ffs_extent_lookup(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t *pstripe,
		  uint64_t *run, uint32_t *flags)
{
	struct ffs_extent x;
	int rc = ext_find_le(fs, fi, fstripe, &x);

	if (rc == 0 && ff_le64(x.fstripe) + ff_le32(x.count) > fstripe) {
		*pstripe = ff_le64(x.pstripe) + (fstripe - ff_le64(x.fstripe));
		*run = ff_le64(x.fstripe) + ff_le32(x.count) - fstripe;
		*flags = ff_le32(x.flags);
		return 0;
	}
	if (rc < 0 && rc != -ENOENT)
		return rc;
	/* a hole: how far it reaches */
	rc = ext_find_ge(fs, fi, fstripe, &x);
	*run = rc == 0 ? ff_le64(x.fstripe) - fstripe : UINT64_MAX;
	return rc == 0 || rc == -ENOENT ? -ENOENT : rc;
}

int ffs_extent_map(struct ffs *fs, struct finode *fi, uint64_t fstripe, uint64_t pstripe,
	       uint64_t count, uint32_t flags)
{
	struct ffs_extent left, right, x = mkext(fstripe, pstripe, count, flags);
	uint64_t kept = 0;
	int rc;

	FF_ASSERT(count > 0 && count <= UINT32_MAX);
	/* stripes already mapped here in place (preallocated) stay counted */
	for (uint64_t s = 0; s < count; s++) {
		uint64_t p, run;
		uint32_t fl;

		if (ffs_extent_lookup(fs, fi, fstripe + s, &p, &run, &fl) == 0 && p == pstripe + s)
			kept++;
	}
	rc = punch(fs, fi, fstripe, fstripe + count, pstripe, count);
	if (rc < 0)
		return rc;
	/* merge with the run that ends right here, and the one that starts right after */
	if (fstripe > 0 && ext_find_le(fs, fi, fstripe - 1, &left) == 0 &&
	    ff_le64(left.fstripe) + ff_le32(left.count) == fstripe &&
	    ff_le64(left.pstripe) + ff_le32(left.count) == pstripe && ff_le32(left.flags) == flags &&
	    ff_le32(left.count) + count <= UINT32_MAX) {
		rc = ext_remove(fs, fi, ff_le64(left.fstripe));
		x = mkext(ff_le64(left.fstripe), ff_le64(left.pstripe), ff_le32(left.count) + count,
			  flags);
	}
	if (rc == 0 && ext_find_ge(fs, fi, fstripe + count, &right) == 0 &&
	    ff_le64(right.fstripe) == fstripe + count && ff_le64(right.pstripe) == pstripe + count &&
	    ff_le32(right.flags) == flags && ff_le32(x.count) + ff_le32(right.count) <= UINT32_MAX) {
		rc = ext_remove(fs, fi, ff_le64(right.fstripe));
		x.count = ff_cpu_to_le32(ff_le32(x.count) + ff_le32(right.count));
	}
	if (rc == 0)
		rc = ext_add(fs, fi, &x);
	if (rc == 0) {
		fi->d.nstripes = ff_cpu_to_le64(ff_le64(fi->d.nstripes) + count - kept);
		rc = ffs_istore(fs, fi);
	}
	return rc;
}

int ffs_extent_truncate(struct ffs *fs, struct finode *fi, uint64_t fstripe)
{
	int rc = punch(fs, fi, fstripe, UINT64_MAX, 0, 0);

	return rc < 0 ? rc : ffs_istore(fs, fi);
}

int ffs_extent_iterate(struct ffs *fs, struct finode *fi,
		   int (*cb)(void *arg, const struct ffs_extent *x), void *arg)
{
	uint64_t f = 0;

	for (;;) {
		struct ffs_extent x;
		int rc = ext_find_ge(fs, fi, f, &x);

		if (rc == -ENOENT)
			return 0;
		if (rc < 0)
			return rc;
		rc = cb(arg, &x);
		if (rc < 0)
			return rc;
		f = ff_le64(x.fstripe) + FF_MAX(1u, ff_le32(x.count));
	}
}

/* ---- extended attributes --------------------------------------------------- */

/* Entries: u8 name_len, le16 value_len, name, value. */
static uint8_t *xa_find(struct ffs_xattr_block *xb, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name), used = ff_le32(xb->used);
	uint8_t *p = xb->data;

	while (p + 3 <= xb->data + used) {
		size_t n = p[0], v = (size_t)p[1] | ((size_t)p[2] << 8);

		if (p + 3 + n + v > xb->data + used)
			return NULL; /* corrupt length: stop rather than run off */
		if (n == nlen && memcmp(p + 3, name, n) == 0) {
			*vlen = v;
			return p;
		}
		p += 3 + n + v;
	}
	return NULL;
}

static int xa_block(struct ffs *fs, struct finode *fi, bool create, struct mbuf **mb)
{
	uint64_t no = ff_le64(fi->d.xattr_block);
	int rc;

	if (no) {
		rc = ffs_mb_get(fs, no, FFS_B_XATTR, mb);
		if (rc == 0 && ff_le64(((struct ffs_xattr_block *)(*mb)->data)->owner) != fi->ino) {
			ffs_mb_put(fs, *mb);
			rc = -EUCLEAN;
		}
		return rc;
	}
	if (!create)
		return -ENODATA;
	rc = ffs_alloc_mblock(fs, &no);
	if (rc < 0)
		return rc;
	rc = ffs_mb_new(fs, no, FFS_B_XATTR, mb);
	if (rc < 0) {
		ffs_free_mblock(fs, no);
		return rc;
	}
	((struct ffs_xattr_block *)(*mb)->data)->owner = ff_cpu_to_le64(fi->ino);
	ffs_mb_dirty(fs, *mb);
	fi->d.xattr_block = ff_cpu_to_le64(no);
	return ffs_istore(fs, fi);
}

int ffs_xattr_get(struct ffs *fs, struct finode *fi, const char *name, void *val, size_t size)
{
	struct mbuf *mb;
	size_t vlen;
	uint8_t *e;
	int rc = xa_block(fs, fi, false, &mb);

	if (rc < 0)
		return rc;
	e = xa_find((struct ffs_xattr_block *)mb->data, name, &vlen);
	if (!e)
		rc = -ENODATA;
	else if (size == 0)
		rc = (int)vlen;
	else if (size < vlen)
		rc = -ERANGE;
	else {
		memcpy(val, e + 3 + e[0], vlen);
		rc = (int)vlen;
	}
	ffs_mb_put(fs, mb);
	return rc;
}

static void xa_cut(struct ffs_xattr_block *xb, uint8_t *e, size_t vlen)
{
	size_t len = 3 + e[0] + vlen, used = ff_le32(xb->used);
	size_t tail = used - (size_t)(e - xb->data) - len;

	memmove(e, e + len, tail);
	xb->used = ff_cpu_to_le32((uint32_t)(used - len));
	xb->count = ff_cpu_to_le32(ff_le32(xb->count) - 1);
}

int ffs_xattr_set(struct ffs *fs, struct finode *fi, const char *name, const void *val, size_t size,
	      int flags)
{
	size_t nlen = strlen(name), vlen, used;
	struct ffs_xattr_block *xb;
	struct mbuf *mb;
	uint8_t *e;
	int rc;

	if (nlen == 0 || nlen > 255)
		return -ERANGE;
	if (size > 65535 || 3 + nlen + size > sizeof(xb->data))
		return -E2BIG;
	rc = xa_block(fs, fi, true, &mb);
	if (rc < 0)
		return rc;
	xb = (struct ffs_xattr_block *)mb->data;
	e = xa_find(xb, name, &vlen);
	if ((flags & XATTR_CREATE) && e)
		rc = -EEXIST;
	else if ((flags & XATTR_REPLACE) && !e)
		rc = -ENODATA;
	else if (ff_le32(xb->used) - (e ? 3 + nlen + vlen : 0) + 3 + nlen + size > sizeof(xb->data))
		rc = -ENOSPC;
	if (rc == 0) {
		if (e)
			xa_cut(xb, e, vlen);
		used = ff_le32(xb->used);
		e = xb->data + used;
		e[0] = (uint8_t)nlen;
		e[1] = (uint8_t)(size & 0xff);
		e[2] = (uint8_t)(size >> 8);
		memcpy(e + 3, name, nlen);
		memcpy(e + 3 + nlen, val, size);
		xb->used = ff_cpu_to_le32((uint32_t)(used + 3 + nlen + size));
		xb->count = ff_cpu_to_le32(ff_le32(xb->count) + 1);
		ffs_mb_dirty(fs, mb);
	}
	ffs_mb_put(fs, mb);
	return rc;
}

int ffs_xattr_list(struct ffs *fs, struct finode *fi, char *list, size_t size)
{
	struct ffs_xattr_block *xb;
	struct mbuf *mb;
	size_t need = 0, used;
	uint8_t *p;
	int rc = xa_block(fs, fi, false, &mb);

	if (rc == -ENODATA)
		return 0;
	if (rc < 0)
		return rc;
	xb = (struct ffs_xattr_block *)mb->data;
	used = ff_le32(xb->used);
	for (p = xb->data; p + 3 <= xb->data + used;) {
		size_t n = p[0], v = (size_t)p[1] | ((size_t)p[2] << 8);

		if (p + 3 + n + v > xb->data + used)
			break;
		if (size && need + n + 1 > size) {
			ffs_mb_put(fs, mb);
			return -ERANGE;
		}
		if (size) {
			memcpy(list + need, p + 3, n);
			list[need + n] = '\0';
		}
		need += n + 1;
		p += 3 + n + v;
	}
	ffs_mb_put(fs, mb);
	return (int)need;
}

int ffs_xattr_remove(struct ffs *fs, struct finode *fi, const char *name)
{
	struct ffs_xattr_block *xb;
	struct mbuf *mb;
	size_t vlen;
	uint8_t *e;
	int rc = xa_block(fs, fi, false, &mb);

	if (rc < 0)
		return rc;
	xb = (struct ffs_xattr_block *)mb->data;
	e = xa_find(xb, name, &vlen);
	if (!e) {
		rc = -ENODATA;
	} else {
		xa_cut(xb, e, vlen);
		ffs_mb_dirty(fs, mb);
	}
	ffs_mb_put(fs, mb);
	return rc;
}

int ffs_xattr_drop(struct ffs *fs, struct finode *fi)
{
	uint64_t no = ff_le64(fi->d.xattr_block);
	int rc;

	if (!no)
		return 0;
	rc = ffs_free_mblock(fs, no);
	fi->d.xattr_block = 0;
	return rc;
}
