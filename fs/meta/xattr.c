/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: one xattr block of entries per inode, allocated on
 * the first set and freed with the inode (ffs_xattr_drop).  A value of up
 * to FFS_XATTR_INLINE_MAX bytes sits in its entry while the block has room
 * for it (then in a chain like the others); a larger one (up to
 * 65536 bytes, Linux's XATTR_SIZE_MAX: Samba keeps each SMB alternate data
 * stream in one) in a chain of value blocks that the entry names
 * (fs/base/format.h).  Chains rather than a bigger entry area: a set writes
 * only the new value's blocks and the entry block, however many other
 * values the inode holds, so a transaction stays small (a 64 KiB value:
 * 17 blocks, the entry block, the inode's and a few bitmap blocks: well
 * within the smallest journal mkfs makes, 64 blocks).
 *
 * Locking: the caller holds fs->lock; a change joins the running
 * transaction.  The lock is held from the first block changed to the last
 * and transactions close only between operations, so the new chain, the
 * entry that names it and the old chain freed commit together: after a
 * crash the old value or the new one, never half of either.
 *
 * A set checks everything first (limits, room in the entry block, free
 * pool blocks), then writes the new chain, then switches the entry, then
 * frees the old chain: a refusal leaves no trace, and a failure writing
 * the chain gives back what it took.
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/meta/meta.h"

static struct ffs_xattr_block *xa_of(struct mbuf *mb)
{
	return (struct ffs_xattr_block *)mb->data;
}

/* The entry named name: its offset in xb->data, or -ENODATA; -EUCLEAN if
 * an entry before it is malformed (stop rather than run off). */
static int xa_find(const struct ffs_xattr_block *xb, const char *name, struct ffs_xattr_ent *e)
{
	size_t nlen = strlen(name), used = ff_le32(xb->used), pos = 0;

	while (pos < used) {
		if (ffs_xattr_parse(xb->data, used, pos, e) < 0)
			return -EUCLEAN;
		if (e->name_len == nlen && memcmp(e->name, name, nlen) == 0)
			return (int)pos;
		pos += e->size;
	}
	return -ENODATA;
}

static int xa_block(struct ffs *fs, struct finode *fi, bool create, struct mbuf **mb)
{
	uint64_t no = ff_le64(fi->d.xattr_block);
	int rc;

	if (no) {
		rc = ffs_mb_get(fs, no, FFS_B_XATTR, mb);
		if (rc == 0 && (ff_le64(xa_of(*mb)->owner) != fi->ino ||
				ff_le32(xa_of(*mb)->used) > FFS_XATTR_BYTES_MAX)) {
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
	xa_of(*mb)->owner = ff_cpu_to_le64(fi->ino);
	ffs_mb_dirty(fs, *mb);
	fi->d.xattr_block = ff_cpu_to_le64(no);
	return ffs_istore(fs, fi);
}

/* ---- value chains ------------------------------------------------------------ */

static uint32_t xv_nblocks(size_t len)
{
	return (uint32_t)((len + FFS_XVALUE_BYTES - 1) / FFS_XVALUE_BYTES);
}

/* Value block seq of inode ino's chain, verified: -EUCLEAN if it is not. */
static int xv_get(struct ffs *fs, uint64_t ino, uint64_t no, uint32_t seq, struct mbuf **mb)
{
	const struct ffs_xvalue_block *xv;
	int rc = ffs_mb_get(fs, no, FFS_B_XVALUE, mb);

	if (rc < 0)
		return rc;
	xv = (const struct ffs_xvalue_block *)(*mb)->data;
	if (ff_le64(xv->owner) != ino || ff_le32(xv->seq) != seq || ff_le32(xv->len) == 0 ||
	    ff_le32(xv->len) > FFS_XVALUE_BYTES) {
		ffs_mb_put(fs, *mb);
		ff_log(FF_LOG_ERR, "inode %llu: xattr value block %llu is not part %u of its value; "
		       "run fsck.framefs", (unsigned long long)ino, (unsigned long long)no, seq);
		return -EUCLEAN;
	}
	return 0;
}

/* Copy the chain of e into val (e->value_len bytes, or just check it). */
static int xv_read(struct ffs *fs, uint64_t ino, const struct ffs_xattr_ent *e, uint8_t *val)
{
	uint64_t no = e->first;
	size_t done = 0;

	for (uint32_t seq = 0; seq < xv_nblocks(e->value_len); seq++) {
		const struct ffs_xvalue_block *xv;
		struct mbuf *mb;
		int rc = no ? xv_get(fs, ino, no, seq, &mb) : -EUCLEAN;

		if (rc < 0)
			return rc;
		xv = (const struct ffs_xvalue_block *)mb->data;
		if (done + ff_le32(xv->len) > e->value_len) {
			ffs_mb_put(fs, mb);
			return -EUCLEAN;
		}
		if (val)
			memcpy(val + done, xv->data, ff_le32(xv->len));
		done += ff_le32(xv->len);
		no = ff_le64(xv->next);
		ffs_mb_put(fs, mb);
	}
	return done == e->value_len && no == 0 ? 0 : -EUCLEAN;
}

/* Free the chain starting at first (its blocks read for their links).  A
 * broken link leaves the rest allocated for fsck to find: the entry is
 * already gone, so the caller's change stands. */
static void xv_free(struct ffs *fs, uint64_t ino, uint64_t first)
{
	uint64_t no = first;

	for (uint32_t seq = 0; no && seq < FFS_XVALUE_BLOCKS_MAX; seq++) {
		struct mbuf *mb;
		uint64_t next;

		if (xv_get(fs, ino, no, seq, &mb) < 0)
			return;
		next = ff_le64(((const struct ffs_xvalue_block *)mb->data)->next);
		ffs_mb_put(fs, mb);
		if (ffs_free_mblock(fs, no) < 0)
			return;
		no = next;
	}
}

/* Write val (size > 0) to a new chain; *first names it.  On failure every
 * block taken is given back. */
static int xv_write(struct ffs *fs, uint64_t ino, const uint8_t *val, size_t size, uint64_t *first)
{
	uint64_t no[FFS_XVALUE_BLOCKS_MAX];
	uint32_t n = xv_nblocks(size), i;
	int rc = 0;

	FF_ASSERT(size > 0 && n <= FFS_XVALUE_BLOCKS_MAX);
	for (i = 0; i < n && rc == 0; i++)
		rc = ffs_alloc_mblock(fs, &no[i]);
	if (rc < 0)
		n = i - 1; /* the ones taken */
	for (i = 0; i < n && rc == 0; i++) {
		size_t off = (size_t)i * FFS_XVALUE_BYTES, len = FF_MIN(size - off, FFS_XVALUE_BYTES);
		struct ffs_xvalue_block *xv;
		struct mbuf *mb;

		rc = ffs_mb_new(fs, no[i], FFS_B_XVALUE, &mb);
		if (rc < 0)
			break;
		xv = (struct ffs_xvalue_block *)mb->data;
		xv->owner = ff_cpu_to_le64(ino);
		xv->next = ff_cpu_to_le64(i + 1 < n ? no[i + 1] : 0);
		xv->len = ff_cpu_to_le32((uint32_t)len);
		xv->seq = ff_cpu_to_le32(i);
		memcpy(xv->data, val + off, len);
		ffs_mb_dirty(fs, mb);
		ffs_mb_put(fs, mb);
	}
	if (rc < 0) { /* blocks written so far stay in the transaction, unreferenced and free */
		for (i = 0; i < n; i++)
			ffs_free_mblock(fs, no[i]);
		return rc;
	}
	*first = no[0];
	return 0;
}

/* The first chain on a volume raises it to FFS_VERSION_XVALUE (format.h),
 * on both superblock groups, before any chain can be committed: code that
 * reads version 1 only then refuses the volume instead of misreading it. */
static int xv_feature(struct ffs *fs)
{
	uint32_t was = ff_le32(fs->sb->version);
	int rc;

	if (was >= FFS_VERSION_XVALUE)
		return 0;
	fs->sb->version = ff_cpu_to_le32(FFS_VERSION_XVALUE);
	rc = ffs_super_write(fs);
	if (rc == 0)
		rc = ffs_super_write(fs);
	if (rc < 0)
		fs->sb->version = ff_cpu_to_le32(was);
	else
		ff_log(FF_LOG_INFO, "filesystem raised to version %u: xattr values over %u bytes",
		       FFS_VERSION_XVALUE, FFS_XATTR_INLINE_MAX);
	return rc;
}

/* ---- the operations ------------------------------------------------------------ */

int ffs_xattr_get(struct ffs *fs, struct finode *fi, const char *name, void *val, size_t size)
{
	struct ffs_xattr_ent e;
	struct mbuf *mb;
	int rc = xa_block(fs, fi, false, &mb);

	if (rc < 0)
		return rc;
	rc = xa_find(xa_of(mb), name, &e);
	if (rc >= 0) {
		if (size == 0)
			rc = (int)e.value_len;
		else if (size < e.value_len)
			rc = -ERANGE;
		else if (e.value)
			rc = (memcpy(val, e.value, e.value_len), (int)e.value_len);
		else if ((rc = xv_read(fs, fi->ino, &e, val)) == 0)
			rc = (int)e.value_len;
	}
	ffs_mb_put(fs, mb);
	return rc;
}

static void xa_cut(struct ffs_xattr_block *xb, size_t pos, size_t len)
{
	size_t used = ff_le32(xb->used);

	FF_ASSERT(pos + len <= used);
	memmove(xb->data + pos, xb->data + pos + len, used - pos - len);
	xb->used = ff_cpu_to_le32((uint32_t)(used - len));
	xb->count = ff_cpu_to_le32(ff_le32(xb->count) - 1);
}

static void xa_append(struct ffs_xattr_block *xb, const char *name, const void *val, size_t size,
		      uint64_t first)
{
	size_t nlen = strlen(name), used = ff_le32(xb->used);
	size_t vlen = first ? FFS_XATTR_VLEN_EXT : size;
	uint8_t *p = xb->data + used;

	p[0] = (uint8_t)nlen;
	p[1] = (uint8_t)(vlen & 0xff);
	p[2] = (uint8_t)(vlen >> 8);
	memcpy(p + 3, name, nlen);
	if (first) {
		struct ffs_xattr_ext x = { ff_cpu_to_le32((uint32_t)size), ff_cpu_to_le64(first) };

		memcpy(p + 3 + nlen, &x, sizeof(x));
		used += 3 + nlen + sizeof(x);
	} else {
		memcpy(p + 3 + nlen, val, size);
		used += 3 + nlen + size;
	}
	FF_ASSERT(used <= FFS_XATTR_BYTES_MAX);
	xb->used = ff_cpu_to_le32((uint32_t)used);
	xb->count = ff_cpu_to_le32(ff_le32(xb->count) + 1);
}

/* Value bytes of every entry, and -EUCLEAN for a malformed block. */
static int xa_total(const struct ffs_xattr_block *xb, size_t *total)
{
	size_t used = ff_le32(xb->used), pos = 0;
	struct ffs_xattr_ent e;

	*total = 0;
	while (pos < used) {
		if (ffs_xattr_parse(xb->data, used, pos, &e) < 0)
			return -EUCLEAN;
		*total += e.value_len;
		pos += e.size;
	}
	return 0;
}

/* May name get a value of size bytes (replacing old, if found), and where:
 * inline when it is small and its entry fits, else in a chain (*ext), so a
 * block filled by inline values still takes more names.  0 or why not. */
static int xa_room(struct ffs *fs, const struct ffs_xattr_block *xb, const struct ffs_xattr_ent *old,
		   size_t nlen, size_t size, bool *ext)
{
	size_t total, room = FFS_XATTR_BYTES_MAX - (ff_le32(xb->used) - (old ? old->size : 0));
	int rc = xa_total(xb, &total);

	if (rc < 0)
		return rc;
	if (old)
		total -= old->value_len;
	if (total + size > FFS_XATTR_TOTAL_MAX)
		return -ENOSPC;
	*ext = size > FFS_XATTR_INLINE_MAX || 3 + nlen + size > room;
	if (3 + nlen + (*ext ? sizeof(struct ffs_xattr_ext) : size) > room)
		return -ENOSPC; /* not even as a chain: the block is full */
	if (*ext && fs->free_mblocks < xv_nblocks(size))
		return -ENOSPC;
	return 0;
}

int ffs_xattr_set(struct ffs *fs, struct finode *fi, const char *name, const void *val, size_t size,
		  int flags)
{
	size_t nlen = strlen(name);
	struct ffs_xattr_ent e;
	struct ffs_xattr_block *xb;
	uint64_t first = 0, old_first = 0;
	struct mbuf *mb;
	bool ext = false;
	int rc, pos;

	if (nlen == 0 || nlen > FFS_XATTR_NAME_MAX)
		return -ERANGE;
	if (size > FFS_XATTR_VALUE_MAX)
		return -E2BIG;
	rc = xa_block(fs, fi, true, &mb);
	if (rc < 0)
		return rc;
	xb = xa_of(mb);
	pos = xa_find(xb, name, &e);
	if (pos == -EUCLEAN)
		rc = pos;
	else if ((flags & XATTR_CREATE) && pos >= 0)
		rc = -EEXIST;
	else if ((flags & XATTR_REPLACE) && pos < 0)
		rc = -ENODATA;
	else
		rc = xa_room(fs, xb, pos >= 0 ? &e : NULL, nlen, size, &ext);
	if (rc == 0 && ext && (rc = xv_feature(fs)) == 0)
		rc = xv_write(fs, fi->ino, val, size, &first);
	if (rc == 0) {
		if (pos >= 0) {
			old_first = e.first;
			xa_cut(xb, (size_t)pos, e.size);
		}
		xa_append(xb, name, val, size, first);
		ffs_mb_dirty(fs, mb);
		if (old_first)
			xv_free(fs, fi->ino, old_first);
	}
	ffs_mb_put(fs, mb);
	return rc;
}

int ffs_xattr_list(struct ffs *fs, struct finode *fi, char *list, size_t size)
{
	struct ffs_xattr_block *xb;
	struct ffs_xattr_ent e;
	struct mbuf *mb;
	size_t need = 0, used, pos = 0;
	int rc = xa_block(fs, fi, false, &mb);

	if (rc == -ENODATA)
		return 0;
	if (rc < 0)
		return rc;
	xb = xa_of(mb);
	used = ff_le32(xb->used);
	while (rc == 0 && pos < used && ffs_xattr_parse(xb->data, used, pos, &e) == 0) {
		if (size && need + e.name_len + 1 > size) {
			rc = -ERANGE;
			break;
		}
		if (size) {
			memcpy(list + need, e.name, e.name_len);
			list[need + e.name_len] = '\0';
		}
		need += e.name_len + 1;
		pos += e.size;
	}
	ffs_mb_put(fs, mb);
	return rc < 0 ? rc : (int)need;
}

int ffs_xattr_remove(struct ffs *fs, struct finode *fi, const char *name)
{
	struct ffs_xattr_ent e;
	struct mbuf *mb;
	int rc = xa_block(fs, fi, false, &mb), pos;

	if (rc < 0)
		return rc;
	pos = xa_find(xa_of(mb), name, &e);
	if (pos >= 0) {
		xa_cut(xa_of(mb), (size_t)pos, e.size);
		ffs_mb_dirty(fs, mb);
		if (e.first)
			xv_free(fs, fi->ino, e.first);
	}
	ffs_mb_put(fs, mb);
	return pos < 0 ? pos : 0;
}

/* Free the xattr block and every value chain it names.  An unreadable
 * block leaves its chains allocated for fsck to reclaim: the inode goes
 * regardless. */
int ffs_xattr_drop(struct ffs *fs, struct finode *fi)
{
	uint64_t no = ff_le64(fi->d.xattr_block);
	struct ffs_xattr_ent e;
	struct mbuf *mb;
	int rc;

	if (!no)
		return 0;
	if (xa_block(fs, fi, false, &mb) == 0) {
		const struct ffs_xattr_block *xb = xa_of(mb);
		size_t used = ff_le32(xb->used);

		for (size_t pos = 0; pos < used && ffs_xattr_parse(xb->data, used, pos, &e) == 0;
		     pos += e.size)
			if (e.first)
				xv_free(fs, fi->ino, e.first);
		ffs_mb_put(fs, mb);
	}
	rc = ffs_free_mblock(fs, no);
	fi->d.xattr_block = 0;
	return rc;
}
