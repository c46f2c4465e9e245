/* SPDX-License-Identifier: MIT */
/*
 * Pass 2: every inode-table slot up to the high-water mark (and beyond it
 * where the bitmap claims inodes): slot number, file type, flags, and what
 * each type points at — extent maps (fsck_extent.c), directory trees (their
 * shape here, their entries in pass 3), symlink and xattr blocks.  A slot is
 * in use when it holds its own number and a mode; the inode bitmap is only
 * compared with that in pass 4.  A regular file's patch tree is checked
 * against its extents (fsck_patch.c).  Ends with the orphan list as found,
 * the stripes claimed twice, the tail stripes with their tails and patches
 * (fsck_tail.c), the checksum table's owners, the small files' blocks
 * (fsck_small.c), and the rebuilds of extent maps and patch trees.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

enum verdict { KEEP, CLEARED };

static int field(struct fsck *c, uint64_t ino, const char *what, uint64_t have, uint64_t want)
{
	return fsck_fix_problem(c, PR_2_FIELD, &(struct pctx){ .ino = ino, .str = fsck_type_name(
								  c->ino[ino].dtype),
							  .str2 = what, .num = have, .num2 = want });
}

/* One value's chain (fs/base/format.h): every block in the pool, claimed once,
 * this inode's, in order, its lengths adding up to the value's. */
static const char *xvalue_problem(struct fsck *c, uint64_t ino, const struct ffs_xattr_ent *e)
{
	uint64_t no = e->first, other, done = 0;

	for (uint32_t seq = 0; no && seq < FFS_XVALUE_BLOCKS_MAX; seq++) {
		const struct ffs_xvalue_block *xv;
		const char *why = NULL;
		struct mbuf *mb;
		uint32_t len;

		if (!fsck_pool_contains(c, no))
			return "names a value block outside the metadata pool";
		if (!fsck_pool_claim(c, no, ino, POOL_XVALUE, &other))
			return "names a value block that is used twice";
		if (ffs_mb_get(c->fs, no, FFS_B_XVALUE, &mb) < 0)
			return "names a value block with no readable copy";
		xv = (const struct ffs_xvalue_block *)mb->data;
		len = ff_le32(xv->len);
		if (ff_le64(xv->owner) != ino || ff_le32(xv->seq) != seq || len == 0 ||
		    len > FFS_XVALUE_BYTES || done + len > e->value_len)
			why = "has a broken value chain";
		done += len;
		no = ff_le64(xv->next);
		ffs_mb_put(c->fs, mb);
		if (why)
			return why;
	}
	return no || done != e->value_len ? "has a broken value chain" : NULL;
}

static const char *xattr_problem(struct fsck *c, uint64_t ino, uint64_t blk)
{
	const struct ffs_xattr_block *xb;
	const char *why = NULL;
	uint64_t other, used, count = 0, pos = 0, total = 0;
	struct ffs_xattr_ent e;
	struct mbuf *mb;

	if (!fsck_pool_contains(c, blk))
		return "is outside the metadata pool";
	if (!fsck_pool_claim(c, blk, ino, POOL_XATTR, &other))
		return "is also used by another inode";
	if (ffs_mb_get(c->fs, blk, FFS_B_XATTR, &mb) < 0)
		return "has no readable copy";
	xb = (const struct ffs_xattr_block *)mb->data;
	used = ff_le32(xb->used);
	if (ff_le64(xb->owner) != ino)
		why = "belongs to another inode";
	else if (used > sizeof(xb->data))
		why = "is corrupt";
	while (!why && pos < used) { /* u8 name_len, le16 value_len, name, value or chain */
		if (ffs_xattr_parse(xb->data, used, pos, &e) < 0) {
			why = "is corrupt";
			break;
		}
		if (e.first) {
			c->xvalue_seen = true;
			why = xvalue_problem(c, ino, &e);
		}
		total += e.value_len;
		pos += e.size;
		count++;
	}
	if (!why && (pos != used || count != ff_le32(xb->count)))
		why = "is corrupt";
	if (!why && total > FFS_XATTR_TOTAL_MAX)
		why = "holds more value bytes than an inode may";
	ffs_mb_put(c->fs, mb);
	return why;
}

static const char *symlink_problem(struct fsck *c, uint64_t ino, struct ffs_inode *d, bool *dirty)
{
	const struct ffs_symlink_block *sl;
	uint64_t size = ff_le64(d->size), blk = ff_le64(d->root), other, len;
	struct mbuf *mb;

	if (size == 0 || size > FFS_SYMLINK_MAX)
		return "its length is out of range";
	if (!blk)
		return size > sizeof(d->u.symlink) ? "its target is stored nowhere" : NULL;
	if (!fsck_pool_contains(c, blk))
		return "its target block is outside the metadata pool";
	if (!fsck_pool_claim(c, blk, ino, POOL_SYMLINK, &other))
		return "its target block is also used by another inode";
	if (ffs_mb_get(c->fs, blk, FFS_B_SYMLINK, &mb) < 0)
		return "its target block has no readable copy";
	sl = (const struct ffs_symlink_block *)mb->data;
	len = ff_le32(sl->len);
	other = ff_le64(sl->owner);
	ffs_mb_put(c->fs, mb);
	if (other != ino)
		return "its target block belongs to another inode";
	if (len == 0 || len > FFS_SYMLINK_MAX) /* past the block's bytes: the inode's inline area */
		return "its target block is corrupt";
	if (len != size && field(c, ino, "a length of", size, len)) {
		d->size = ff_cpu_to_le64(len);
		*dirty = true;
	}
	return NULL;
}

static void dir_shape(struct fsck *c, uint64_t ino, const struct ffs_inode *d)
{
	struct fsck_tree_walk w = { .c = c, .ino = ino, .root = ff_le64(d->root), .claim = true };
	int rc = fsck_tree_walk(&w);
	char why[96];

	if (rc < 0) {
		fsck_operr(c, rc, "cannot walk a directory");
		return;
	}
	if (!w.damaged)
		return;
	fsck_tree_why(&w, why, sizeof(why));
	if (fsck_fix_problem(c, PR_2_TREE_BAD, &(struct pctx){ .ino = ino, .str = "directory",
						     .blk = w.bad_blk, .str2 = why }))
		c->ino[ino].flags |= IS_REBUILD;
	else
		c->ino[ino].flags |= IS_TREE_BAD;
}

/* What the inode points at, by type; d may be corrected in place. */
static enum verdict contents(struct fsck *c, uint64_t ino, struct ffs_inode *d, bool *dirty)
{
	uint8_t t = c->ino[ino].dtype;
	uint64_t nstripes = 0, tail_blocks = 0;
	const char *why;

	if (t == DT_REG && (ff_le32(d->flags) & FFS_I_SMALL)) {
		/* no extents: its blocks are checked after the scan (fsck_small.c) */
		fsck_patch_check(c, ino, d, &(struct fsck_map){ NULL, 0, NULL }, dirty);
	} else if (t == DT_REG) {
		struct fsck_map map;
		int rc = fsck_extent_check(c, ino, d, &nstripes, &tail_blocks, &map);

		if (rc == 0 && (c->ino[ino].flags & IS_USED))
			fsck_patch_check(c, ino, d, &map, dirty);
		free(map.runs);
		if (rc < 0 || !(c->ino[ino].flags & IS_USED))
			return CLEARED;
	} else if (t == DT_DIR) {
		dir_shape(c, ino, d);
	} else if (t == DT_LNK) {
		why = symlink_problem(c, ino, d, dirty);
		if (why && fsck_fix_problem(c, PR_2_SYMLINK_BAD, &(struct pctx){ .ino = ino, .str = why })) {
			fsck_inode_clear(c, ino);
			return CLEARED;
		}
	} else if (d->root && field(c, ino, "a B+tree root of", ff_le64(d->root), 0)) {
		d->root = 0;
		*dirty = true;
	}
	if (t == DT_REG && !(ff_le32(d->flags) & FFS_I_BTREE) && d->root &&
	    field(c, ino, "a B+tree root of", ff_le64(d->root), 0)) {
		d->root = 0;
		*dirty = true;
	}
	if (!(c->ino[ino].flags & IS_REBUILD) && ff_le64(d->nstripes) != nstripes &&
	    field(c, ino, "a stripe count of", ff_le64(d->nstripes), nstripes)) {
		d->nstripes = ff_cpu_to_le64(nstripes);
		*dirty = true;
	}
	/* its tails' blocks (version 4; 0 on older volumes and for small files) */
	if (!(c->ino[ino].flags & IS_REBUILD) && ff_le32(d->tail_blocks) != tail_blocks &&
	    field(c, ino, "a tail block count of", ff_le32(d->tail_blocks), tail_blocks)) {
		d->tail_blocks = ff_cpu_to_le32((uint32_t)tail_blocks);
		*dirty = true;
	}
	return KEEP;
}

static bool type_valid(uint32_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: case S_IFDIR: case S_IFLNK: case S_IFCHR: case S_IFBLK: case S_IFIFO:
	case S_IFSOCK:
		return true;
	default:
		return false;
	}
}

static void check_inode(struct fsck *c, uint64_t ino, struct ffs_inode *d)
{
	uint32_t mode = ff_le32(d->mode), allowed = FFS_I_ORPHAN;
	struct ino_info *in = &c->ino[ino];
	bool dirty = false;
	const char *why;

	if (!type_valid(mode)) {
		if (fsck_fix_problem(c, PR_2_BAD_MODE, &(struct pctx){ .ino = ino, .num = mode }))
			fsck_inode_clear(c, ino);
		return;
	}
	if (ino == FFS_ROOT_INO && !S_ISDIR(mode) &&
	    fsck_fix_problem(c, PR_2_ROOT_NOT_DIR, &(struct pctx){ .str = fsck_type_name(ffs_dtype(mode)) })) {
		fsck_inode_clear(c, ino); /* pass 3 makes a new root */
		return;
	}
	in->flags |= IS_USED;
	in->dtype = ffs_dtype(mode);
	in->nlink = ff_le32(d->nlink);
	in->parent = ff_le64(d->parent);
	in->size = ff_le64(d->size);
	if (in->dtype == DT_REG)
		allowed |= FFS_I_BTREE | (fsck_small_allowed(c) ? FFS_I_SMALL : 0);
	if ((ff_le32(d->flags) & ~allowed) &&
	    fsck_fix_problem(c, PR_2_BAD_FLAGS, &(struct pctx){ .ino = ino, .num = ff_le32(d->flags),
							   .str = fsck_type_name(in->dtype) })) {
		d->flags = ff_cpu_to_le32(ff_le32(d->flags) & allowed);
		dirty = true;
	}
	fsck_small_inode(c, ino, d, &dirty);
	in->diskflags = (uint8_t)ff_le32(d->flags);
	/* only an inline map has a count (fsck_extent.c checks it); a small
	 * file's inline area is its block list */
	if ((in->dtype != DT_REG || (ff_le32(d->flags) & (FFS_I_BTREE | FFS_I_SMALL))) &&
	    d->nextents && field(c, ino, "an inline extent count of", ff_le32(d->nextents), 0)) {
		d->nextents = 0;
		dirty = true;
	}
	if (contents(c, ino, d, &dirty) == CLEARED)
		return;
	why = d->xattr_block ? xattr_problem(c, ino, ff_le64(d->xattr_block)) : NULL;
	if (why && fsck_fix_problem(c, PR_2_XATTR_BAD, &(struct pctx){ .ino = ino, .str = why,
								  .blk = ff_le64(d->xattr_block) })) {
		d->xattr_block = 0;
		dirty = true;
	}
	if (dirty)
		fsck_slot_write(c, ino, d);
}

static void scan_block(struct fsck *c, uint64_t b, bool initialised, uint64_t *hi)
{
	uint64_t no = ff_le64(c->sb->itable_start) + b, first = b * FFS_INODES_PER_BLOCK;
	struct ffs_inode d[FFS_INODES_PER_BLOCK];
	struct mbuf *mb;
	int rc = ffs_mb_get(c->fs, no, FFS_B_ITABLE, &mb);

	if (rc == -ENOMEM) {
		fsck_operr(c, rc, "out of memory");
		return;
	}
	if (rc < 0) {
		if (initialised &&
		    fsck_fix_problem(c, PR_2_ITABLE_BAD, &(struct pctx){ .blk = no, .num = first,
							       .num2 = first + FFS_INODES_PER_BLOCK - 1 }) &&
		    ffs_mb_new(c->fs, no, FFS_B_ITABLE, &mb) == 0) {
			ffs_mb_dirty(c->fs, mb);
			ffs_mb_put(c->fs, mb);
			fsck_commit(c, false);
		}
		return;
	}
	memcpy(d, ((struct ffs_itable_block *)mb->data)->inodes, sizeof(d));
	ffs_mb_put(c->fs, mb);
	for (unsigned i = 0; i < FFS_INODES_PER_BLOCK && !c->operr && !c->stop; i++) {
		uint64_t ino = first + i;

		if (ino == 0 || ino >= c->ninodes || !d[i].ino)
			continue;
		if (ff_le64(d[i].ino) != ino) {
			if (fsck_fix_problem(c, PR_2_SLOT_INO, &(struct pctx){ .ino = ino,
									  .num = ff_le64(d[i].ino) }))
				fsck_inode_clear(c, ino);
			continue;
		}
		check_inode(c, ino, &d[i]);
		if (c->ino[ino].flags & IS_USED)
			*hi = b + 1;
	}
}

/* How far to read the table: the high-water mark, or further where the
 * bitmap says inodes are in use. */
static uint64_t scan_limit(struct fsck *c, uint64_t *initialised)
{
	uint64_t blocks = ff_le64(c->sb->itable_blocks), end = ffs_tools_inodes_end(c->fs);

	*initialised = FF_MIN(ff_le64(c->sb->itable_hwm), blocks);
	if (end == 0)
		return *initialised;
	return FF_MAX(*initialised, (end - 1) / FFS_INODES_PER_BLOCK + 1);
}

static void check_hwm(struct fsck *c, uint64_t needed)
{
	uint64_t hwm = ff_le64(c->sb->itable_hwm);

	needed = FF_MAX(needed, 1);
	if ((hwm < needed || hwm > ff_le64(c->sb->itable_blocks)) &&
	    fsck_fix_problem(c, PR_2_HWM, &(struct pctx){ .num = hwm, .num2 = needed }))
		ffs_tools_set_itable_hwm(c->fs, needed);
}

/* A value chain on a volume that says version 1 (a superblock rebuilt by
 * pass 1 says so): code that knows only version 1 must refuse it. */
static void check_version(struct fsck *c)
{
	uint32_t v = ff_le32(c->sb->version);

	if (c->xvalue_seen && v < FFS_VERSION_XVALUE &&
	    fsck_fix_problem(c, PR_2_VERSION, &(struct pctx){ .num = v, .num2 = FFS_VERSION_XVALUE }))
		ffs_tools_set_version(c->fs, FFS_VERSION_XVALUE);
}

/* The orphan list as it is: pass 3 tells the valid orphans, pass 4 fixes it. */
static void orphans_read(struct fsck *c)
{
	struct mbuf *mb;
	uint64_t cur;

	if (ffs_mb_get(c->fs, FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, &mb) < 0) {
		c->orphan_block_bad = true;
		return;
	}
	cur = ff_le64(((struct ffs_orphan_block *)mb->data)->head);
	c->orphan_count = ff_le64(((struct ffs_orphan_block *)mb->data)->count);
	ffs_mb_put(c->fs, mb);
	c->orphans = calloc(c->ninodes, sizeof(*c->orphans));
	while (cur && c->orphans && c->norphans < c->ninodes) {
		struct ffs_inode d;

		if (cur >= c->ninodes || !(c->ino[cur].flags & IS_USED))
			c->orphan_break = "it names an inode that is not in use";
		else if (c->ino[cur].flags & IS_ON_ORPHANS)
			c->orphan_break = "it loops";
		else if (fsck_slot_read(c, cur, &d) < 0)
			c->orphan_break = "it names an unreadable inode";
		if (c->orphan_break) {
			c->orphan_break_ino = cur;
			return;
		}
		c->ino[cur].flags |= IS_ON_ORPHANS;
		c->orphans[c->norphans++] = cur;
		cur = ff_le64(d.orphan_next);
	}
}

int fsck_pass2(struct fsck *c)
{
	uint64_t initialised, limit, hi = 0;

	fsck_pass_start(c, 2, "Checking inodes, extent maps and B+trees");
	limit = scan_limit(c, &initialised);
	for (uint64_t b = 0; b < limit && !c->operr && !c->stop; b++)
		scan_block(c, b, b < initialised, &hi);
	c->itable_scan = limit;
	if (!c->operr && !c->stop)
		check_hwm(c, hi);
	if (!c->operr && !c->stop)
		check_version(c);
	if (!c->operr && !c->stop)
		orphans_read(c);
	if (!c->operr && !c->stop)
		fsck_extent_dups_resolve(c);
	if (!c->operr && !c->stop)
		fsck_tail_resolve(c);
	if (!c->operr && !c->stop)
		fsck_extent_csum_check(c);
	c->tails_settled = true;
	if (!c->operr && !c->stop)
		fsck_small_check(c);
	fsck_reserve_counted(c);
	if (!c->operr && !c->stop)
		fsck_extent_rebuild_all(c);
	if (!c->operr && !c->stop)
		fsck_patch_rebuild_all(c);
	fsck_commit(c, true);
	return c->operr;
}
