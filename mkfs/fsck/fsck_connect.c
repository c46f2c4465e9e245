/* SPDX-License-Identifier: MIT */
/*
 * Pass 3, second half: connectivity.  Directories are reached from the root
 * along the entries that name them, breadth first; a second entry naming a
 * directory already reached (a hard link to a directory, or a link to the
 * root) is removed.  A directory still unreached is followed up through the
 * entries naming it to the top of its detached subtree — or to where it
 * loops back on itself — and that top is reconnected to /lost+found as
 * "#<inode>" (the loop is cut at its entry), with everything below it.
 * Files in no directory go to /lost+found too, unless they have no links
 * at all: those were being deleted and are cleared.  Valid orphans
 * (unlinked while open, on the orphan list) are left for the next mount to
 * free.  Last, each directory's parent field ('..') must name the
 * directory that holds it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

struct bfs {
	uint64_t *queue;
	size_t head, tail;
	size_t *first_in;       /* per directory: first live edge naming it, SIZE_MAX = none */
	size_t *by_parent;      /* edge indexes sorted by parent */
	size_t nsorted;         /* edges when sorted (reconnections add more) */
};

/* First position in by_parent of an edge from dir. */
static size_t first_from(const struct fsck *c, const struct bfs *b, uint64_t dir)
{
	size_t lo = 0, hi = b->nsorted;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->edges[b->by_parent[mid]].parent < dir)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int remove_edge(struct fsck *c, struct edge *e)
{
	struct finode *dir;
	int rc = fsck_finode(c, e->parent, &dir);

	if (rc < 0)
		return rc;
	rc = ffs_dir_remove(c->fs, dir, e->name);
	fsck_finode_put(c, dir);
	if (rc < 0 && rc != -ENOENT)
		fsck_operr(c, rc, "cannot remove a directory entry");
	e->dead = true;
	c->ino[e->child].refs--;
	return rc == -ENOENT ? 0 : (rc < 0 ? rc : fsck_commit(c, false));
}

/* Reach everything below dir, breadth first. */
static int reach_from(struct fsck *c, struct bfs *b, uint64_t dir)
{
	int rc = 0;

	b->head = b->tail = 0;
	b->queue[b->tail++] = dir;
	c->ino[dir].flags |= IS_REACHED;
	while (b->head < b->tail && rc == 0 && !c->operr) {
		uint64_t d = b->queue[b->head++];

		for (size_t k = first_from(c, b, d); k < b->nsorted && rc == 0; k++) {
			struct edge *e = &c->edges[b->by_parent[k]];
			struct ino_info *x = &c->ino[e->child];

			if (e->parent != d)
				break;
			if (e->dead)
				continue;
			if (e->child == FFS_ROOT_INO || (x->flags & IS_REACHED)) {
				if (fsck_fix_problem(c, PR_3_DIR_LINK, &(struct pctx){ .ino = d, .str = e->name,
									  .ino2 = e->child }))
					rc = remove_edge(c, e);
				continue;
			}
			x->flags |= IS_REACHED;
			x->tree_parent = d;
			b->queue[b->tail++] = e->child;
		}
	}
	return rc;
}

static int lpf_create(struct fsck *c)
{
	struct finode *root, *fi;
	int rc = fsck_finode(c, FFS_ROOT_INO, &root);

	if (rc < 0)
		return rc;
	rc = ffs_inode_new(c->fs, S_IFDIR | 0700, 0, 0, FFS_ROOT_INO, &fi);
	if (rc == 0) {
		ffs_tools_ikeep(c->fs, fi); /* pinned, as fsck_finode does */
		c->fin[fi->ino] = fi;
		c->lpf = fi->ino;
		c->ino[fi->ino] = (struct ino_info){ .nlink = 2, .refs = 1, .flags = IS_USED | IS_REACHED,
						     .dtype = DT_DIR, .parent = FFS_ROOT_INO,
						     .tree_parent = FFS_ROOT_INO };
		rc = ffs_dir_add(c->fs, root, "lost+found", fi->ino, DT_DIR);
		if (rc == 0)
			rc = fsck_edge_add(c, FFS_ROOT_INO, fi->ino, "lost+found");
		root->d.nlink = ff_cpu_to_le32(ff_le32(root->d.nlink) + 1);
		if (rc == 0)
			rc = ffs_istore(c->fs, root);
		fsck_finode_put(c, fi);
	}
	fsck_finode_put(c, root);
	if (rc < 0)
		fsck_operr(c, rc, "cannot create /lost+found");
	return rc;
}

/* /lost+found, found or made: 0 when there is none to use. */
static uint64_t lpf_get(struct fsck *c)
{
	if (c->lpf)
		return c->lpf;
	for (size_t k = 0; k < c->nedges; k++) {
		const struct edge *e = &c->edges[k];

		if (e->parent == FFS_ROOT_INO && !e->dead && strcmp(e->name, "lost+found") == 0 &&
		    (c->ino[e->child].flags & IS_REACHED))
			return c->lpf = e->child;
	}
	if (c->lpf_asked)
		return 0;
	c->lpf_asked = true;
	if (fsck_fix_problem(c, PR_3_NO_LPF, &(struct pctx){ 0 }))
		lpf_create(c);
	return c->lpf;
}

/* Give ino the entry "#<ino>" in /lost+found (a directory also its '..'). */
static int lpf_link(struct fsck *c, uint64_t ino, uint8_t dtype)
{
	uint64_t lpf = lpf_get(c);
	struct finode *dir;
	char name[48];
	int rc;

	if (!lpf || ffs_tools_read_only(c->fs))
		return 0;
	rc = fsck_finode(c, lpf, &dir);
	if (rc < 0)
		return rc;
	for (unsigned n = 0; n < 100; n++) {
		snprintf(name, sizeof(name), n ? "#%llu.%u" : "#%llu", (unsigned long long)ino, n);
		rc = ffs_dir_add(c->fs, dir, name, ino, dtype);
		if (rc != -EEXIST)
			break;
	}
	if (rc == 0 && dtype == DT_DIR) {
		dir->d.nlink = ff_cpu_to_le32(ff_le32(dir->d.nlink) + 1);
		rc = ffs_istore(c->fs, dir);
		if (rc == 0)
			rc = fsck_edge_add(c, lpf, ino, name);
	}
	fsck_finode_put(c, dir);
	if (rc == 0 && dtype == DT_DIR) {
		struct ffs_inode d;

		rc = fsck_slot_read(c, ino, &d);
		d.parent = ff_cpu_to_le64(lpf);
		if (rc == 0)
			rc = fsck_slot_write(c, ino, &d);
		c->ino[ino].parent = lpf;
	}
	c->ino[ino].refs++;
	if (rc == 0)
		rc = fsck_commit(c, false);
	if (rc < 0)
		fsck_operr(c, rc, "cannot reconnect to /lost+found");
	return rc;
}

/* Up from dir through the entries naming it: the top of its detached
 * subtree, and whether the way up loops. */
static uint64_t detached_top(struct fsck *c, struct bfs *b, uint64_t dir, bool *loop)
{
	uint64_t x = dir, steps = 0;

	*loop = false;
	b->tail = 0;
	b->queue[b->tail++] = dir;
	c->ino[dir].flags |= IS_VISIT;
	while (b->first_in[x] != SIZE_MAX && !c->edges[b->first_in[x]].dead && steps++ < c->ninodes) {
		uint64_t p = c->edges[b->first_in[x]].parent;

		if (c->ino[p].flags & IS_VISIT) {
			*loop = true;
			break;
		}
		c->ino[p].flags |= IS_VISIT;
		b->queue[b->tail++] = p;
		x = p;
	}
	for (size_t i = 0; i < b->tail; i++)
		c->ino[b->queue[i]].flags &= (uint16_t)~IS_VISIT;
	return x;
}

static int unreachable(struct fsck *c, struct bfs *b, uint64_t dir)
{
	bool loop;
	uint64_t top = detached_top(c, b, dir, &loop);
	size_t in = b->first_in[top];
	int rc = 0;

	if (fsck_fix_problem(c, PR_3_UNREACHABLE, &(struct pctx){ .ino = top, .str = loop
				? "it is in a loop of directories" : "no directory names it" })) {
		if (loop && in != SIZE_MAX)
			rc = remove_edge(c, &c->edges[in]);
		if (rc == 0)
			rc = lpf_link(c, top, DT_DIR);
		c->ino[top].tree_parent = c->lpf ? c->lpf : c->ino[top].parent;
	} else {
		c->ino[top].tree_parent = c->ino[top].parent; /* leave its '..' alone */
		if (loop && in != SIZE_MAX)
			c->edges[in].dead = true; /* as if cut: its subtree is looked at once */
	}
	return rc == 0 ? reach_from(c, b, top) : rc;
}

/* A file in no directory: to /lost+found, or cleared if it has no links. */
static int unattached(struct fsck *c, uint64_t ino)
{
	struct ino_info *in = &c->ino[ino];
	struct pctx p = { .ino = ino, .str = fsck_type_name(in->dtype), .num = in->size };

	if (in->nlink == 0) {
		if (fsck_fix_problem(c, PR_3_UNLINKED, &p))
			return fsck_inode_clear(c, ino);
	} else if (fsck_fix_problem(c, PR_3_UNATTACHED, &p)) {
		return lpf_link(c, ino, in->dtype);
	}
	in->flags |= IS_NOCOUNT;
	return 0;
}

static void dotdot(struct fsck *c)
{
	for (uint64_t ino = 1; ino < c->ninodes && !c->operr; ino++) {
		struct ino_info *in = &c->ino[ino];
		struct ffs_inode d;

		if (!(in->flags & IS_REACHED) || !in->tree_parent || in->parent == in->tree_parent)
			continue;
		if (fsck_fix_problem(c, PR_3_DOTDOT, &(struct pctx){ .ino = ino, .num = in->parent,
								.num2 = in->tree_parent }) &&
		    fsck_slot_read(c, ino, &d) == 0) {
			d.parent = ff_cpu_to_le64(in->tree_parent);
			in->parent = in->tree_parent;
			fsck_slot_write(c, ino, &d);
		}
	}
}

static int by_parent(const void *a, const void *b, void *arg)
{
	const struct edge *e = arg;
	const size_t *x = a, *y = b;

	if (e[*x].parent != e[*y].parent)
		return e[*x].parent < e[*y].parent ? -1 : 1;
	return *x < *y ? -1 : *x > *y;
}

static int bfs_init(struct fsck *c, struct bfs *b)
{
	b->queue = calloc(c->ninodes + 1, sizeof(*b->queue));
	b->first_in = malloc(c->ninodes * sizeof(*b->first_in));
	b->by_parent = malloc((c->nedges + 1) * sizeof(*b->by_parent));
	if (!b->queue || !b->first_in || !b->by_parent)
		return -ENOMEM;
	for (uint64_t i = 0; i < c->ninodes; i++)
		b->first_in[i] = SIZE_MAX;
	for (size_t k = 0; k < c->nedges; k++) {
		b->by_parent[k] = k;
		if (b->first_in[c->edges[k].child] == SIZE_MAX)
			b->first_in[c->edges[k].child] = k;
	}
	b->nsorted = c->nedges;
	qsort_r(b->by_parent, c->nedges, sizeof(size_t), by_parent, c->edges);
	return 0;
}

static void orphans_valid(struct fsck *c)
{
	for (size_t i = 0; i < c->norphans; i++) {
		struct ino_info *in = &c->ino[c->orphans[i]];

		if ((in->flags & IS_USED) && in->nlink == 0 && in->refs == 0)
			in->flags |= IS_ORPHAN_OK;
	}
}

int fsck_connect_check(struct fsck *c)
{
	struct bfs b = { 0 };
	int rc = bfs_init(c, &b);

	orphans_valid(c);
	c->ino[FFS_ROOT_INO].tree_parent = FFS_ROOT_INO;
	if (rc == 0)
		rc = reach_from(c, &b, FFS_ROOT_INO);
	for (uint64_t ino = 1; ino < c->ninodes && rc == 0 && !c->operr && !c->stop; ino++) {
		const struct ino_info *in = &c->ino[ino];

		if (!(in->flags & IS_USED) || (in->flags & (IS_REACHED | IS_ORPHAN_OK)))
			continue;
		rc = in->dtype == DT_DIR ? unreachable(c, &b, ino)
					 : (in->refs ? 0 : unattached(c, ino));
	}
	if (rc == 0 && !c->operr && !c->stop)
		dotdot(c);
	free(b.queue);
	free(b.first_in);
	free(b.by_parent);
	if (rc == -ENOMEM)
		fsck_operr(c, rc, "out of memory");
	return rc;
}
