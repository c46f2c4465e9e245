/* SPDX-License-Identifier: MIT */
/*
 * Paths for the messages: an inode's path is found by following each
 * inode's parent field (the directory it was created in or last moved to)
 * up to the root, looking its name up in each directory.  Best effort and
 * read-only: a step that fails (a slot that does not hold the inode, a
 * parent that does not name it, a damaged tree, a loop) gives no path, and
 * the message names the inode by number alone.  Nothing here claims or
 * counts anything: the directory trees are read with a peek walk.
 *
 * The entries of the last few directories looked in are kept, sorted by
 * inode, until the next pass: a repair within a pass may leave them stale
 * (an entry just removed, /lost+found just made), which at worst prints a
 * name the entry had when the pass began, or no path.  Dropping them at
 * every repair would read a 100,000-entry directory again for each of its
 * damaged entries.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mkfs/fsck/fsck.h"

#define DEPTH_MAX 64         /* directories above an inode, at most */
#define DIRS_KEPT 8          /* directories whose entries are kept */
#define PEEK_NODES 65536u    /* tree nodes one look at a directory reads, at most */

struct pname {
	uint64_t ino;
	char *name;
};

struct pdir {
	uint64_t dir;            /* 0 = unused */
	struct pname *v;
	size_t n, cap;
};

struct path_cache {
	struct pdir d[DIRS_KEPT];
	unsigned next;           /* the slot to reuse */
	int pass;                /* c->pass when the entries were read */
};

static void pdir_clear(struct pdir *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

void fsck_path_free(struct fsck *c)
{
	if (!c->paths)
		return;
	for (unsigned i = 0; i < DIRS_KEPT; i++)
		pdir_clear(&c->paths->d[i]);
	free(c->paths);
	c->paths = NULL;
}

static int collect(struct fsck_tree_walk *w, uint64_t key, const uint8_t *val, uint16_t len)
{
	const struct ffs_dirent *de = (const struct ffs_dirent *)val;
	struct pdir *d = w->arg;
	char *name;
	void *grown;

	(void)key;
	if (len < sizeof(*de) || len != sizeof(*de) + de->name_len || de->name_len == 0)
		return 0;
	grown = fsck_grow(d->v, &d->cap, d->n, sizeof(*d->v), 32);
	if (!grown)
		return -ENOMEM;
	d->v = grown;
	name = strndup(de->name, de->name_len);
	if (!name)
		return -ENOMEM;
	d->v[d->n++] = (struct pname){ ff_le64(de->ino), name };
	return 0;
}

static int by_ino(const void *a, const void *b)
{
	const struct pname *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* The entries of directory dir, read now or kept from before; NULL when it
 * cannot be read as a directory. */
static struct pdir *dir_entries(struct fsck *c, uint64_t dir)
{
	struct path_cache *pc = c->paths;
	struct ffs_inode d;
	struct pdir *e;
	struct fsck_tree_walk w;

	if (!pc && !(pc = c->paths = calloc(1, sizeof(*pc))))
		return NULL;
	if (pc->pass != c->pass) { /* the last pass's repairs may have changed any directory */
		for (unsigned i = 0; i < DIRS_KEPT; i++)
			pdir_clear(&pc->d[i]);
		pc->pass = c->pass;
	}
	for (unsigned i = 0; i < DIRS_KEPT; i++)
		if (pc->d[i].dir == dir)
			return &pc->d[i];
	if (fsck_slot_read(c, dir, &d) < 0 || ff_le64(d.ino) != dir || !S_ISDIR(ff_le32(d.mode)) ||
	    !d.root)
		return NULL;
	e = &pc->d[pc->next];
	pc->next = (pc->next + 1) % DIRS_KEPT;
	pdir_clear(e);
	w = (struct fsck_tree_walk){ .c = c, .ino = dir, .root = ff_le64(d.root), .rec = collect,
				.arg = e, .peek = true, .budget = PEEK_NODES };
	if (fsck_tree_walk(&w) < 0) {
		pdir_clear(e);
		return NULL;
	}
	if (e->n)
		qsort(e->v, e->n, sizeof(*e->v), by_ino);
	e->dir = dir;
	return e;
}

static const char *name_in(struct fsck *c, uint64_t dir, uint64_t ino)
{
	struct pdir *d = dir_entries(c, dir);
	struct pname key = { ino, NULL }, *hit;

	if (!d || !d->n)
		return NULL;
	hit = bsearch(&key, d->v, d->n, sizeof(*d->v), by_ino);
	return hit ? hit->name : NULL;
}

const char *fsck_path(struct fsck *c, uint64_t ino, char *buf, size_t len)
{
	size_t pos = len - 1;

	if (!c->sb || !c->ino || ino == 0 || ino >= c->ninodes || len < 2)
		return NULL;
	buf[pos] = '\0';
	if (ino == FFS_ROOT_INO) {
		buf[--pos] = '/';
		return buf + pos;
	}
	for (unsigned depth = 0; ino != FFS_ROOT_INO; depth++) {
		struct ffs_inode d;
		const char *name;
		uint64_t parent;
		size_t n;

		if (depth == DEPTH_MAX || fsck_slot_read(c, ino, &d) < 0 || ff_le64(d.ino) != ino)
			return NULL;
		parent = ff_le64(d.parent);
		if (parent == 0 || parent >= c->ninodes || parent == ino ||
		    !(name = name_in(c, parent, ino)))
			return NULL;
		n = strlen(name);
		if (n + 1 > pos)
			return NULL;
		pos -= n;
		memcpy(buf + pos, name, n);
		buf[--pos] = '/';
		ino = parent;
	}
	return buf + pos;
}
