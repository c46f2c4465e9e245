/* SPDX-License-Identifier: MIT */
/*
 * Inodes as fsck reads and writes them.  Passes read table slots straight
 * from the (cached) inode-table blocks; the library's operations (extent
 * maps, directories) need its in-memory inodes, which fsck pins for the
 * whole run so that releasing one never frees it (an unlinked inode would
 * be freed by ffs_iput).  A slot fsck rewrites updates the pinned copy too.
 */
#include <errno.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

static int slot_block(struct fsck *c, uint64_t ino, struct mbuf **mb, struct ffs_inode **slot)
{
	struct ffs *fs = c->fs;
	uint64_t itable = ff_le64(ffs_tools_super(fs)->itable_start);
	int rc;

	FF_ASSERT(ino > 0 && ino < c->ninodes);
	rc = ffs_mb_get(fs, itable + ino / FFS_INODES_PER_BLOCK, FFS_B_ITABLE, mb);
	if (rc < 0)
		return rc;
	*slot = &((struct ffs_itable_block *)(*mb)->data)->inodes[ino % FFS_INODES_PER_BLOCK];
	return 0;
}

int fsck_slot_read(struct fsck *c, uint64_t ino, struct ffs_inode *d)
{
	struct ffs_inode *slot;
	struct mbuf *mb;
	int rc = slot_block(c, ino, &mb, &slot);

	if (rc < 0)
		return rc;
	*d = *slot;
	ffs_mb_put(c->fs, mb);
	return 0;
}

int fsck_slot_write(struct fsck *c, uint64_t ino, const struct ffs_inode *d)
{
	struct ffs_inode *slot;
	struct mbuf *mb;
	int rc = slot_block(c, ino, &mb, &slot);

	if (rc < 0) {
		fsck_operr(c, rc, "cannot update an inode");
		return rc;
	}
	*slot = *d;
	ffs_mb_dirty(c->fs, mb);
	ffs_mb_put(c->fs, mb);
	if (c->fin[ino]) {
		c->fin[ino]->d = *d;
		if (!d->ino) { /* cleared: the library must not see it again */
			c->fin[ino]->deleted = true;
			c->fin[ino] = NULL;
		}
	}
	return fsck_commit(c, false);
}

int fsck_finode(struct fsck *c, uint64_t ino, struct finode **out)
{
	struct ffs *fs = c->fs;
	struct finode *fi;
	int rc;

	if (c->fin[ino]) {
		ffs_tools_ihold(c->fs, c->fin[ino]);
		*out = c->fin[ino];
		return 0;
	}
	ffs_tools_take_inode(fs, ino); /* ffs_iget trusts the bitmap, fsck does not */
	rc = ffs_iget(fs, ino, &fi);
	if (rc < 0) {
		fsck_operr(c, rc, "cannot load an inode");
		return rc;
	}
	ffs_tools_ikeep(fs, fi); /* pinned: ffs_iput never frees it behind fsck's back */
	c->fin[ino] = fi;
	*out = fi;
	return 0;
}

void fsck_finode_put(struct fsck *c, struct finode *fi)
{
	ffs_iput(c->fs, fi);
}

int fsck_inode_clear(struct fsck *c, uint64_t ino)
{
	struct ffs_inode d;
	uint32_t gen = 0;

	if (fsck_slot_read(c, ino, &d) == 0) {
		gen = ff_le32(d.generation);
		fsck_small_forget(c, ino, &d);
	}
	fsck_tail_forget(c, ino);
	memset(&d, 0, sizeof(d));
	d.generation = ff_cpu_to_le32(gen);
	c->ino[ino].flags = (uint16_t)((c->ino[ino].flags & ~IS_USED) | IS_CLEARED);
	c->ino[ino].dtype = 0;
	return fsck_slot_write(c, ino, &d);
}

int fsck_commit(struct fsck *c, bool force)
{
	struct ffs *fs = c->fs;
	int rc;

	if (ffs_tools_read_only(fs) || c->operr || (!force && !ffs_journal_tx_full(fs)))
		return c->operr;
	rc = ffs_journal_commit(fs);
	if (rc < 0)
		fsck_operr(c, rc, "cannot commit repairs to the journal");
	return rc;
}
