/* SPDX-License-Identifier: MIT */
/*
 * A B+tree of variable-length records keyed by unique 64-bit keys, in pool
 * blocks: directories (key = name hash) and large extent maps (key = file
 * stripe).
 *
 * Internal nodes route key k to the child with the largest separator <= k;
 * the first separator acts as minus infinity, so deleting a leftmost child
 * never needs a separator fix-up.  A leaf is rewritten whole on every change
 * (read its records out, write them back packed): 4 KiB of copying buys
 * code with no fragmentation bookkeeping.  Leaves split in half by bytes;
 * empty nodes are unlinked and freed; a root with one child collapses.
 */
#include <errno.h>
#include <string.h>

#include "fs/meta/meta.h"

#define DEPTH_MAX 16

struct rec {
	uint64_t key;
	uint16_t len;
	const uint8_t *val;
};

struct path {
	struct mbuf *mb[DEPTH_MAX];
	unsigned idx[DEPTH_MAX];
	unsigned depth; /* mb[0] is the root, mb[depth-1] the leaf */
};

static struct ffs_bt_node *node(struct mbuf *mb) { return (struct ffs_bt_node *)mb->data; }
static struct ffs_bt_ptr *ptrs(struct ffs_bt_node *n) { return (struct ffs_bt_ptr *)(n + 1); }
static struct ffs_bt_slot *slots(struct ffs_bt_node *n) { return (struct ffs_bt_slot *)(n + 1); }
static unsigned count(struct ffs_bt_node *n) { return ff_le16(n->count); }

static void path_release(struct ffs *fs, struct path *p)
{
	for (unsigned i = 0; i < p->depth; i++)
		if (p->mb[i])
			ffs_mb_put(fs, p->mb[i]);
	p->depth = 0;
}

/* Sanity of a node just read: a corrupt count must not walk off the block. */
static int node_check(struct ffs_bt_node *n, unsigned depth_left)
{
	unsigned c = count(n), level = ff_le16(n->level);

	if (level >= DEPTH_MAX || level > depth_left)
		return -EUCLEAN;
	if (level ? c > FFS_BT_PTRS_MAX || c == 0
		  : (sizeof(*n) + c * sizeof(struct ffs_bt_slot) > ff_le16(n->data_start) ||
		     ff_le16(n->data_start) > FFS_BLOCK))
		return -EUCLEAN;
	if (!level)
		for (unsigned i = 0; i < c; i++) {
			struct ffs_bt_slot *s = &slots(n)[i];

			/* no record is longer than ffs_bt_insert takes: callers size buffers so */
			if (ff_le16(s->off) < ff_le16(n->data_start) ||
			    ff_le16(s->off) + ff_le16(s->len) > FFS_BLOCK ||
			    ff_le16(s->len) > FFS_BT_RECORD_MAX)
				return -EUCLEAN;
		}
	return 0;
}

/* Index of the child for key in an internal node. */
static unsigned route(struct ffs_bt_node *n, uint64_t key)
{
	unsigned lo = 1, hi = count(n); /* separator 0 is minus infinity */

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (ff_le64(ptrs(n)[mid].key) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - 1;
}

/* First slot with key >= key in a leaf. */
static unsigned leaf_ge(struct ffs_bt_node *n, uint64_t key)
{
	unsigned lo = 0, hi = count(n);

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (ff_le64(slots(n)[mid].key) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Descend from the root to the leaf for key, recording the path. */
static int descend(struct ffs *fs, struct bt_root *t, uint64_t key, struct path *p)
{
	uint64_t block = t->root;
	int rc;

	p->depth = 0;
	for (;;) {
		struct mbuf *mb;
		struct ffs_bt_node *n;

		if (p->depth == DEPTH_MAX)
			return -EUCLEAN;
		rc = ffs_mb_get(fs, block, FFS_B_BTREE, &mb);
		if (rc < 0)
			return rc;
		n = node(mb);
		p->mb[p->depth] = mb;
		rc = node_check(n, DEPTH_MAX - p->depth - 1);
		if (rc == 0 && ff_le64(n->owner) != t->owner)
			rc = -EUCLEAN;
		if (rc < 0) {
			p->depth++;
			return rc;
		}
		if (ff_le16(n->level) == 0) {
			p->idx[p->depth++] = leaf_ge(n, key);
			return 0;
		}
		p->idx[p->depth] = route(n, key);
		block = ff_le64(ptrs(n)[p->idx[p->depth]].child);
		p->depth++;
	}
}

/* Descend to the leftmost (first) or rightmost (!first) leaf under child i
 * of path level lvl, replacing the path below lvl. */
static int descend_edge(struct ffs *fs, struct bt_root *t, struct path *p, unsigned lvl, bool first)
{
	while (p->depth > lvl + 1)
		ffs_mb_put(fs, p->mb[--p->depth]);
	for (;;) {
		struct ffs_bt_node *n = node(p->mb[p->depth - 1]);
		struct mbuf *mb;
		int rc;

		if (ff_le16(n->level) == 0) {
			p->idx[p->depth - 1] = first ? 0 : count(n) - 1;
			return 0;
		}
		if (p->depth == DEPTH_MAX)
			return -EUCLEAN;
		rc = ffs_mb_get(fs, ff_le64(ptrs(n)[p->idx[p->depth - 1]].child), FFS_B_BTREE, &mb);
		if (rc < 0)
			return rc;
		p->mb[p->depth] = mb;
		p->depth++;
		rc = node_check(node(mb), DEPTH_MAX - p->depth);
		if (rc == 0 && ff_le64(node(mb)->owner) != t->owner)
			rc = -EUCLEAN;
		if (rc < 0)
			return rc;
		if (ff_le16(node(mb)->level))
			p->idx[p->depth - 1] = first ? 0 : count(node(mb)) - 1;
	}
}

static void copy_out(struct ffs_bt_node *n, unsigned i, uint64_t *key, void *val, uint16_t *len)
{
	struct ffs_bt_slot *s = &slots(n)[i];

	*key = ff_le64(s->key);
	if (len)
		*len = ff_le16(s->len);
	if (val)
		memcpy(val, (uint8_t *)n + ff_le16(s->off), ff_le16(s->len));
}

int ffs_bt_find_ge(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found, void *val,
	       uint16_t *len)
{
	struct path p;
	int rc;

	if (!t->root)
		return -ENOENT;
	rc = descend(fs, t, key, &p);
	while (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);
		int lvl;

		if (p.idx[p.depth - 1] < count(leaf)) {
			copy_out(leaf, p.idx[p.depth - 1], found, val, len);
			/* keys out of order: callers that step on from *found would loop */
			if (*found < key)
				rc = -EUCLEAN;
			break;
		}
		/* past this leaf: the next child of the nearest ancestor that has one */
		for (lvl = (int)p.depth - 2; lvl >= 0; lvl--)
			if (p.idx[lvl] + 1 < count(node(p.mb[lvl])))
				break;
		if (lvl < 0) {
			rc = -ENOENT;
			break;
		}
		p.idx[lvl]++;
		rc = descend_edge(fs, t, &p, (unsigned)lvl, true);
	}
	path_release(fs, &p);
	return rc;
}

/*
 * The records with keys in [lo, hi], in key order, from one descent: a
 * range read by find_ge steps descends (and checks every node on the way)
 * once per record.  cb sees each value in place, valid during the call;
 * 0 goes on, > 0 stops (the scan returns 0), < 0 stops with that error.
 */
int ffs_bt_scan(struct ffs *fs, struct bt_root *t, uint64_t lo, uint64_t hi,
		int (*cb)(void *arg, uint64_t key, const void *val, uint16_t len), void *arg)
{
	struct path p;
	uint64_t prev = lo;
	bool first = true;
	int rc;

	if (!t->root || lo > hi)
		return 0;
	rc = descend(fs, t, lo, &p);
	while (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);
		unsigned *i = &p.idx[p.depth - 1];
		int lvl;

		for (; *i < count(leaf); (*i)++) {
			const struct ffs_bt_slot *sl = &slots(leaf)[*i];
			uint64_t key = ff_le64(sl->key);

			if (key < prev || (key == prev && !first)) {
				rc = -EUCLEAN; /* keys out of order */
				goto out;
			}
			if (key > hi)
				goto out;
			prev = key;
			first = false;
			rc = cb(arg, key, (const uint8_t *)leaf + ff_le16(sl->off), ff_le16(sl->len));
			if (rc != 0) {
				rc = rc > 0 ? 0 : rc;
				goto out;
			}
		}
		/* past this leaf: the next child of the nearest ancestor that has one */
		for (lvl = (int)p.depth - 2; lvl >= 0; lvl--)
			if (p.idx[lvl] + 1 < count(node(p.mb[lvl])))
				break;
		if (lvl < 0)
			break;
		p.idx[lvl]++;
		rc = descend_edge(fs, t, &p, (unsigned)lvl, true);
	}
out:
	path_release(fs, &p);
	return rc;
}

int ffs_bt_find_le(struct ffs *fs, struct bt_root *t, uint64_t key, uint64_t *found, void *val,
	       uint16_t *len)
{
	struct path p;
	int rc;

	if (!t->root)
		return -ENOENT;
	rc = descend(fs, t, key, &p);
	while (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);
		unsigned i = p.idx[p.depth - 1];
		int lvl;

		if (i < count(leaf) && ff_le64(slots(leaf)[i].key) == key) {
			copy_out(leaf, i, found, val, len);
			break;
		}
		if (i > 0) {
			copy_out(leaf, i - 1, found, val, len);
			if (*found > key) /* keys out of order */
				rc = -EUCLEAN;
			break;
		}
		for (lvl = (int)p.depth - 2; lvl >= 0; lvl--)
			if (p.idx[lvl] > 0)
				break;
		if (lvl < 0) {
			rc = -ENOENT;
			break;
		}
		p.idx[lvl]--;
		rc = descend_edge(fs, t, &p, (unsigned)lvl, false);
		if (rc == 0) /* rightmost slot of that leaf, +1 so the loop takes i-1 */
			p.idx[p.depth - 1] = count(node(p.mb[p.depth - 1]));
		if (rc == 0 && count(node(p.mb[p.depth - 1])) == 0)
			rc = -EUCLEAN;
	}
	path_release(fs, &p);
	return rc;
}

/* ---- leaves: read out, rewrite packed ----------------------------------- */

static unsigned leaf_records(struct ffs_bt_node *n, struct rec *r)
{
	unsigned c = count(n);

	for (unsigned i = 0; i < c; i++) {
		r[i].key = ff_le64(slots(n)[i].key);
		r[i].len = ff_le16(slots(n)[i].len);
		r[i].val = (const uint8_t *)n + ff_le16(slots(n)[i].off);
	}
	return c;
}

static size_t recs_bytes(const struct rec *r, unsigned n)
{
	size_t b = 0;

	for (unsigned i = 0; i < n; i++)
		b += sizeof(struct ffs_bt_slot) + r[i].len;
	return b;
}

#define LEAF_ROOM (FFS_BLOCK - sizeof(struct ffs_bt_node))
#define LEAF_RECS_MAX (LEAF_ROOM / sizeof(struct ffs_bt_slot) + 2)

/* Write records into the node (values may point into the node itself, so
 * they are staged first). */
static void leaf_write(struct ffs_bt_node *n, const struct rec *r, unsigned cnt, uint64_t owner)
{
	uint8_t stage[FFS_BLOCK];
	size_t used = 0, off = FFS_BLOCK;

	for (unsigned i = 0; i < cnt; i++) {
		memcpy(stage + used, r[i].val, r[i].len);
		used += r[i].len;
	}
	memset(n, 0, FFS_BLOCK);
	n->owner = ff_cpu_to_le64(owner);
	n->count = ff_cpu_to_le16((uint16_t)cnt);
	used = 0;
	for (unsigned i = 0; i < cnt; i++) {
		off -= r[i].len;
		memcpy((uint8_t *)n + off, stage + used, r[i].len);
		used += r[i].len;
		slots(n)[i].key = ff_cpu_to_le64(r[i].key);
		slots(n)[i].off = ff_cpu_to_le16((uint16_t)off);
		slots(n)[i].len = ff_cpu_to_le16(r[i].len);
	}
	n->data_start = ff_cpu_to_le16((uint16_t)off);
}

static int new_node(struct ffs *fs, struct bt_root *t, unsigned level, struct mbuf **out)
{
	uint64_t no;
	int rc = ffs_alloc_mblock(fs, &no);

	if (rc < 0)
		return rc;
	rc = ffs_mb_new(fs, no, FFS_B_BTREE, out);
	if (rc < 0) {
		ffs_free_mblock(fs, no);
		return rc;
	}
	node(*out)->owner = ff_cpu_to_le64(t->owner);
	node(*out)->level = ff_cpu_to_le16((uint16_t)level);
	node(*out)->data_start = ff_cpu_to_le16(FFS_BLOCK);
	ffs_mb_dirty(fs, *out);
	return 0;
}

/* Insert (key, child) at position pos of internal node at path level lvl,
 * splitting upwards as needed. */
static int parent_insert(struct ffs *fs, struct bt_root *t, struct path *p, int lvl, unsigned pos,
			 uint64_t key, uint64_t child, uint64_t left_key, uint64_t left_child)
{
	struct ffs_bt_ptr tmp[FFS_BT_PTRS_MAX + 1];
	struct mbuf *right;
	struct ffs_bt_node *n;
	unsigned c, half;
	int rc;

	if (lvl < 0) { /* the root split: grow the tree by one level */
		struct mbuf *root;

		rc = new_node(fs, t, ff_le16(node(p->mb[0])->level) + 1, &root);
		if (rc < 0)
			return rc;
		n = node(root);
		ptrs(n)[0] = (struct ffs_bt_ptr){ ff_cpu_to_le64(left_key), ff_cpu_to_le64(left_child) };
		ptrs(n)[1] = (struct ffs_bt_ptr){ ff_cpu_to_le64(key), ff_cpu_to_le64(child) };
		n->count = ff_cpu_to_le16(2);
		t->root = root->blockno;
		ffs_mb_put(fs, root);
		return 0;
	}
	n = node(p->mb[lvl]);
	c = count(n);
	memcpy(tmp, ptrs(n), pos * sizeof(*tmp));
	tmp[pos] = (struct ffs_bt_ptr){ ff_cpu_to_le64(key), ff_cpu_to_le64(child) };
	memcpy(tmp + pos + 1, ptrs(n) + pos, (c - pos) * sizeof(*tmp));
	c++;
	ffs_mb_dirty(fs, p->mb[lvl]);
	if (c <= FFS_BT_PTRS_MAX) {
		memcpy(ptrs(n), tmp, c * sizeof(*tmp));
		n->count = ff_cpu_to_le16((uint16_t)c);
		return 0;
	}
	half = c / 2;
	rc = new_node(fs, t, ff_le16(n->level), &right);
	if (rc < 0)
		return rc;
	memcpy(ptrs(n), tmp, half * sizeof(*tmp));
	n->count = ff_cpu_to_le16((uint16_t)half);
	memcpy(ptrs(node(right)), tmp + half, (c - half) * sizeof(*tmp));
	node(right)->count = ff_cpu_to_le16((uint16_t)(c - half));
	rc = parent_insert(fs, t, p, lvl - 1, lvl ? p->idx[lvl - 1] + 1 : 0,
			   ff_le64(tmp[half].key), right->blockno, ff_le64(tmp[0].key),
			   p->mb[lvl]->blockno);
	ffs_mb_put(fs, right);
	return rc;
}

/* Rewrite the leaf at the end of the path with r[0..cnt), splitting it in
 * two by bytes when the records do not fit. */
static int leaf_rewrite(struct ffs *fs, struct bt_root *t, struct path *p, struct rec *r,
			unsigned cnt)
{
	struct mbuf *leaf = p->mb[p->depth - 1], *right;
	size_t total = recs_bytes(r, cnt), acc = 0;
	unsigned half = 0;
	int rc;

	ffs_mb_dirty(fs, leaf);
	if (total <= LEAF_ROOM) {
		leaf_write(node(leaf), r, cnt, t->owner);
		return 0;
	}
	while (half < cnt && acc + sizeof(struct ffs_bt_slot) + r[half].len <= total / 2) {
		acc += sizeof(struct ffs_bt_slot) + r[half].len;
		half++;
	}
	half = FF_MAX(1u, FF_MIN(half, cnt - 1));
	rc = new_node(fs, t, 0, &right);
	if (rc < 0)
		return rc;
	/* the right half first: its values may live in the left leaf's bytes */
	leaf_write(node(right), r + half, cnt - half, t->owner);
	leaf_write(node(leaf), r, half, t->owner);
	rc = parent_insert(fs, t, p, (int)p->depth - 2,
			   p->depth >= 2 ? p->idx[p->depth - 2] + 1 : 0, r[half].key, right->blockno,
			   r[0].key, leaf->blockno);
	ffs_mb_put(fs, right);
	return rc;
}

int ffs_bt_insert(struct ffs *fs, struct bt_root *t, uint64_t key, const void *val, uint16_t len)
{
	struct rec r[LEAF_RECS_MAX + 1];
	struct path p;
	unsigned cnt, at;
	int rc;

	if (len > FFS_BT_RECORD_MAX)
		return -E2BIG;
	if (!t->root) {
		struct mbuf *leaf;

		rc = new_node(fs, t, 0, &leaf);
		if (rc < 0)
			return rc;
		t->root = leaf->blockno;
		ffs_mb_put(fs, leaf);
	}
	rc = descend(fs, t, key, &p);
	if (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);

		at = p.idx[p.depth - 1];
		if (at < count(leaf) && ff_le64(slots(leaf)[at].key) == key) {
			rc = -EEXIST;
		} else {
			cnt = leaf_records(leaf, r);
			memmove(r + at + 1, r + at, (cnt - at) * sizeof(*r));
			r[at] = (struct rec){ key, len, val };
			rc = leaf_rewrite(fs, t, &p, r, cnt + 1);
		}
	}
	path_release(fs, &p);
	return rc;
}

/* Remove child index idx from internal node at level lvl; free what empties. */
static int unlink_child(struct ffs *fs, struct bt_root *t, struct path *p, int lvl)
{
	while (lvl >= 0) {
		struct ffs_bt_node *n = node(p->mb[lvl]);
		unsigned c = count(n), i = p->idx[lvl];
		uint64_t dead = ff_le64(ptrs(n)[i].child);
		int rc = ffs_free_mblock(fs, dead);

		if (rc < 0)
			return rc;
		memmove(ptrs(n) + i, ptrs(n) + i + 1, (c - i - 1) * sizeof(struct ffs_bt_ptr));
		n->count = ff_cpu_to_le16((uint16_t)(c - 1));
		ffs_mb_dirty(fs, p->mb[lvl]);
		if (c - 1 > 0)
			break;
		lvl--; /* this node emptied too */
		if (lvl < 0) {
			rc = ffs_free_mblock(fs, t->root);
			t->root = 0;
			return rc;
		}
	}
	/* collapse a root with a single child */
	while (t->root) {
		struct mbuf *mb;
		uint64_t only;
		int rc = ffs_mb_get(fs, t->root, FFS_B_BTREE, &mb);

		if (rc < 0)
			return rc;
		if (ff_le16(node(mb)->level) == 0 || count(node(mb)) != 1) {
			ffs_mb_put(fs, mb);
			break;
		}
		only = ff_le64(ptrs(node(mb))[0].child);
		ffs_mb_put(fs, mb);
		rc = ffs_free_mblock(fs, t->root);
		if (rc < 0)
			return rc;
		t->root = only;
	}
	return 0;
}

int ffs_bt_delete(struct ffs *fs, struct bt_root *t, uint64_t key)
{
	struct rec r[LEAF_RECS_MAX];
	struct path p;
	int rc;

	if (!t->root)
		return -ENOENT;
	rc = descend(fs, t, key, &p);
	if (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);
		unsigned at = p.idx[p.depth - 1], cnt;

		if (at >= count(leaf) || ff_le64(slots(leaf)[at].key) != key) {
			rc = -ENOENT;
		} else {
			cnt = leaf_records(leaf, r);
			memmove(r + at, r + at + 1, (cnt - at - 1) * sizeof(*r));
			cnt--;
			if (cnt > 0 || p.depth == 1) {
				rc = leaf_rewrite(fs, t, &p, r, cnt);
				if (cnt == 0 && rc == 0) { /* the tree is empty */
					rc = ffs_free_mblock(fs, t->root);
					t->root = 0;
				}
			} else {
				rc = unlink_child(fs, t, &p, (int)p.depth - 2);
			}
		}
	}
	path_release(fs, &p);
	return rc;
}

int ffs_bt_update(struct ffs *fs, struct bt_root *t, uint64_t key, const void *val, uint16_t len)
{
	struct rec r[LEAF_RECS_MAX + 1];
	struct path p;
	int rc;

	if (len > FFS_BT_RECORD_MAX)
		return -E2BIG;
	if (!t->root)
		return -ENOENT;
	rc = descend(fs, t, key, &p);
	if (rc == 0) {
		struct ffs_bt_node *leaf = node(p.mb[p.depth - 1]);
		unsigned at = p.idx[p.depth - 1], cnt;

		if (at >= count(leaf) || ff_le64(slots(leaf)[at].key) != key) {
			rc = -ENOENT;
		} else {
			cnt = leaf_records(leaf, r);
			r[at].len = len;
			r[at].val = val;
			rc = leaf_rewrite(fs, t, &p, r, cnt);
		}
	}
	path_release(fs, &p);
	return rc;
}

static int walk(struct ffs *fs, struct bt_root *t, uint64_t block, unsigned depth, bool destroy,
		int (*cb)(void *arg, uint64_t block, int level), void *arg)
{
	struct mbuf *mb;
	int rc, level;

	if (depth >= DEPTH_MAX)
		return -EUCLEAN;
	rc = ffs_mb_get(fs, block, FFS_B_BTREE, &mb);
	if (rc < 0)
		return rc;
	rc = node_check(node(mb), DEPTH_MAX - depth - 1);
	if (rc == 0 && ff_le64(node(mb)->owner) != t->owner)
		rc = -EUCLEAN;
	level = ff_le16(node(mb)->level);
	if (rc == 0 && cb)
		rc = cb(arg, block, level);
	for (unsigned i = 0; rc == 0 && level > 0 && i < count(node(mb)); i++)
		rc = walk(fs, t, ff_le64(ptrs(node(mb))[i].child), depth + 1, destroy, cb, arg);
	ffs_mb_put(fs, mb);
	if (rc == 0 && destroy)
		rc = ffs_free_mblock(fs, block);
	return rc;
}

int ffs_bt_destroy(struct ffs *fs, struct bt_root *t)
{
	int rc = t->root ? walk(fs, t, t->root, 0, true, NULL, NULL) : 0;

	if (rc == 0)
		t->root = 0;
	return rc;
}

int ffs_bt_walk(struct ffs *fs, struct bt_root *t, int (*cb)(void *arg, uint64_t block, int level),
	    void *arg)
{
	return t->root ? walk(fs, t, t->root, 0, false, cb, arg) : 0;
}
