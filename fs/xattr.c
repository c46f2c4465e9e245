/* SPDX-License-Identifier: MIT */
/*
 * Extended attributes: one pool block per inode, allocated on the first
 * set and freed with the inode (ffs_xattr_drop).
 *
 * Locking: the caller holds fs->lock; a change joins the running
 * transaction.
 */
#include <errno.h>
#include <string.h>
#include <sys/xattr.h>

#include "fs/fs_i.h"

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
