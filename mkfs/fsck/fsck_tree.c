/* SPDX-License-Identifier: MIT */
/*
 * Walking a B+tree the way fsck must: every node inside the pool, owned by
 * the tree's inode, used once, at the level its parent expects, sane
 * counts and record bounds, keys ascending and inside the range its parent
 * routes to it.  A node that fails is skipped with its subtree and the walk
 * goes on, so that what remains readable can be salvaged; the first failure
 * is kept for the report.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

#define DEPTH_MAX 16 /* as btree.c */

struct span {
	uint64_t lo, hi; /* keys in [lo, hi); hi == UINT64_MAX: unbounded */
};

static void damage(struct fsck_tree_walk *w, uint64_t blk, const char *why, uint64_t other)
{
	if (w->damaged)
		return;
	w->damaged = true;
	w->bad_blk = blk;
	w->why = why;
	w->why_ino = other;
}

static bool in_span(uint64_t key, struct span s)
{
	return key >= s.lo && (s.hi == UINT64_MAX || key < s.hi);
}

static const char *leaf_problem(const struct ffs_bt_node *n, struct span s)
{
	const struct ffs_bt_slot *sl = (const struct ffs_bt_slot *)(n + 1);
	unsigned cnt = ff_le16(n->count), start = ff_le16(n->data_start);

	if (cnt == 0)
		return "is an empty leaf";
	if (sizeof(*n) + cnt * sizeof(*sl) > start || start > FFS_BLOCK)
		return "has a corrupt record count";
	for (unsigned i = 0; i < cnt; i++) {
		unsigned off = ff_le16(sl[i].off), len = ff_le16(sl[i].len);

		if (off < start || off + len > FFS_BLOCK || len > FFS_BT_RECORD_MAX)
			return "has a record outside the block";
		if (!in_span(ff_le64(sl[i].key), s) ||
		    (i && ff_le64(sl[i].key) <= ff_le64(sl[i - 1].key)))
			return "has keys out of order";
	}
	return NULL;
}

static const char *inner_problem(const struct ffs_bt_node *n, struct span s)
{
	const struct ffs_bt_ptr *p = (const struct ffs_bt_ptr *)(n + 1);
	unsigned cnt = ff_le16(n->count);

	if (cnt == 0 || cnt > FFS_BT_PTRS_MAX)
		return "has a corrupt child count";
	for (unsigned i = 1; i < cnt; i++) /* separator 0 stands for minus infinity */
		if (!in_span(ff_le64(p[i].key), s) ||
		    (i > 1 && ff_le64(p[i].key) <= ff_le64(p[i - 1].key)))
			return "has keys out of order";
	return NULL;
}

static int walk_node(struct fsck_tree_walk *w, uint64_t blk, unsigned depth, int level, struct span s);

static int walk_children(struct fsck_tree_walk *w, const struct ffs_bt_node *n, unsigned depth,
			 struct span s)
{
	const struct ffs_bt_ptr *p = (const struct ffs_bt_ptr *)(n + 1);
	unsigned cnt = ff_le16(n->count), level = ff_le16(n->level);
	int rc = 0;

	for (unsigned i = 0; i < cnt && rc == 0; i++) {
		struct span cs = { i ? ff_le64(p[i].key) : s.lo, i + 1 < cnt ? ff_le64(p[i + 1].key) : s.hi };

		rc = walk_node(w, ff_le64(p[i].child), depth + 1, (int)level - 1, cs);
	}
	return rc;
}

static int walk_leaf(struct fsck_tree_walk *w, const struct ffs_bt_node *n)
{
	const struct ffs_bt_slot *sl = (const struct ffs_bt_slot *)(n + 1);
	int rc = 0;

	for (unsigned i = 0; i < ff_le16(n->count) && rc == 0 && w->rec; i++)
		rc = w->rec(w, ff_le64(sl[i].key), (const uint8_t *)n + ff_le16(sl[i].off),
			    ff_le16(sl[i].len));
	return rc;
}

static uint8_t tree_type(const struct fsck_tree_walk *w)
{
	return w->pool_type ? w->pool_type : POOL_BTREE;
}

/* Take the node for this walk: false when it must be skipped. */
static bool take(struct fsck_tree_walk *w, uint64_t blk, unsigned depth)
{
	struct fsck *c = w->c;
	uint64_t other = 0;

	if (!fsck_pool_contains(c, blk)) {
		damage(w, blk, "is outside the metadata pool", 0);
		return false;
	}
	if (depth >= DEPTH_MAX) {
		damage(w, blk, "is too deep (a loop?)", 0);
		return false;
	}
	if (w->peek) { /* names for a message: read what is there, claim nothing */
		if (!w->budget)
			return false;
		w->budget--;
		return true;
	}
	if (!w->claim) /* a later walk: only what the counting walk gave this tree */
		return c->pool_owner[blk - c->pool_start] == w->ino &&
		       c->pool_type[blk - c->pool_start] == tree_type(w);
	if (!fsck_pool_claim(c, blk, w->ino, tree_type(w), &other)) {
		damage(w, blk, other == w->ino ? "is used twice in the tree" : "is also used by inode",
		       other == w->ino ? 0 : other);
		return false;
	}
	return true;
}

static int walk_node(struct fsck_tree_walk *w, uint64_t blk, unsigned depth, int level, struct span s)
{
	struct ffs *fs = w->c->fs;
	const struct ffs_bt_node *n;
	const char *why;
	struct mbuf *mb;
	int rc;

	if (!take(w, blk, depth))
		return 0;
	rc = ffs_mb_get(fs, blk, FFS_B_BTREE, &mb);
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		damage(w, blk, "has no readable copy", 0);
		return 0;
	}
	n = (const struct ffs_bt_node *)mb->data;
	if (ff_le64(n->owner) != w->ino)
		why = "belongs to inode";
	else if ((level >= 0 && ff_le16(n->level) != level) || ff_le16(n->level) + depth >= DEPTH_MAX)
		why = "is at the wrong level";
	else
		why = ff_le16(n->level) ? inner_problem(n, s) : leaf_problem(n, s);
	if (why) {
		damage(w, blk, why, ff_le64(n->owner) != w->ino ? ff_le64(n->owner) : 0);
		ffs_mb_put(fs, mb);
		return 0;
	}
	rc = ff_le16(n->level) ? walk_children(w, n, depth, s) : walk_leaf(w, n);
	ffs_mb_put(fs, mb);
	if (rc == 0 && w->node)
		rc = w->node(w, blk);
	return rc;
}

int fsck_tree_walk(struct fsck_tree_walk *w)
{
	w->damaged = false;
	w->why = NULL;
	return w->root ? walk_node(w, w->root, 0, -1, (struct span){ 0, UINT64_MAX }) : 0;
}

void fsck_tree_why(const struct fsck_tree_walk *w, char *buf, size_t len)
{
	if (w->why_ino)
		snprintf(buf, len, "%s %llu", w->why, (unsigned long long)w->why_ino);
	else
		snprintf(buf, len, "%s", w->why);
}

struct old_nodes {
	uint64_t *blk;
	size_t n, cap;
};

static int collect(struct fsck_tree_walk *w, uint64_t blk)
{
	struct old_nodes *o = w->arg;
	void *grown = fsck_grow(o->blk, &o->cap, o->n, sizeof(*o->blk), 16);

	if (!grown)
		return -ENOMEM;
	o->blk = grown;
	o->blk[o->n++] = blk;
	return 0;
}

int fsck_tree_free_old(struct fsck *c, uint64_t ino, uint64_t root, uint8_t pool_type)
{
	struct old_nodes o = { NULL, 0, 0 };
	struct fsck_tree_walk w = { .c = c, .ino = ino, .root = root, .pool_type = pool_type,
				    .node = collect, .arg = &o };
	int rc = fsck_tree_walk(&w);

	for (size_t i = 0; i < o.n && rc == 0; i++) {
		rc = ffs_free_mblock(c->fs, o.blk[i]);
		c->pool_owner[o.blk[i] - c->pool_start] = 0;
		c->pool_type[o.blk[i] - c->pool_start] = 0;
	}
	free(o.blk);
	if (rc < 0)
		fsck_operr(c, rc, "cannot free the nodes of a rebuilt tree");
	return rc;
}
