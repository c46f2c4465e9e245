/* SPDX-License-Identifier: MIT */
/*
 * Pass 3, first half: the entries of every directory.  An entry must be
 * well formed, carry a valid name stored at a key its name hashes to (the
 * hash, or one of the probe keys after it), name an inode in use and say
 * its type; two entries may not share a name.  Counted here: each inode's
 * references and the entries that name directories (connectivity is
 * fsck_connect.c's).  A directory whose tree pass 2 found damaged is
 * rebuilt from the entries still readable.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

#define PROBE_MAX 64 /* as dir.c: a name lives at its hash or one of the next 63 keys */

enum act { ACT_REMOVE, ACT_MOVE, ACT_RETYPE };

struct dent {
	uint64_t key, ino;
	uint8_t type, act;
	uint8_t len;
	char name[FFS_NAME_MAX + 1];
};

struct dwalk {
	struct fsck *c;
	uint64_t dir;
	uint64_t live;            /* entries that stay */
	uint64_t removed;         /* entries that go */
	struct dent recent[PROBE_MAX]; /* last entries at their proper keys: duplicate names */
	unsigned nrecent;
	struct dent *list;        /* actions, or (salvage) every entry that stays */
	size_t n, cap;
	bool salvage;
};

static int push(struct dwalk *w, const struct dent *e)
{
	void *grown = fsck_grow(w->list, &w->cap, w->n, sizeof(*w->list), 16);

	if (!grown)
		return -ENOMEM;
	w->list = grown;
	w->list[w->n++] = *e;
	return 0;
}

static bool name_valid(const struct dent *e)
{
	if (memchr(e->name, '/', e->len) || memchr(e->name, '\0', e->len))
		return false;
	return strcmp(e->name, ".") != 0 && strcmp(e->name, "..") != 0;
}

static bool seen_name(struct dwalk *w, const struct dent *e, uint64_t hash)
{
	for (unsigned i = 0; i < FF_MIN(w->nrecent, PROBE_MAX); i++) {
		const struct dent *r = &w->recent[i];

		if (r->key >= hash && r->len == e->len && memcmp(r->name, e->name, e->len) == 0)
			return true;
	}
	w->recent[w->nrecent++ % PROBE_MAX] = *e;
	return false;
}

/* The problem with entry e, if any, as the problem code to report. */
static int entry_problem(struct dwalk *w, struct dent *e, bool *move)
{
	struct fsck *c = w->c;
	uint64_t h = ffs_name_hash(e->name, e->len);

	*move = false;
	if (!name_valid(e))
		return PR_3_ENTRY_NAME;
	if (e->ino == 0 || e->ino >= c->ninodes || !(c->ino[e->ino].flags & IS_USED))
		return PR_3_ENTRY_FREE;
	if (e->key < h || e->key - h >= PROBE_MAX)
		*move = true;
	else if (seen_name(w, e, h))
		return PR_3_ENTRY_DUP;
	return -1;
}

static int keep(struct dwalk *w, struct dent *e)
{
	struct fsck *c = w->c;
	struct ino_info *t = &c->ino[e->ino];
	int rc = 0;

	w->live++;
	t->refs++;
	if (t->dtype == DT_DIR)
		rc = fsck_edge_add(c, w->dir, e->ino, e->name);
	if (rc == 0 && (w->salvage || e->act != 0xff))
		rc = push(w, e);
	return rc;
}

static int entry(struct fsck_tree_walk *tw, uint64_t key, const uint8_t *val, uint16_t len)
{
	struct dwalk *w = tw->arg;
	struct fsck *c = w->c;
	const struct ffs_dirent *de = (const struct ffs_dirent *)val;
	struct dent e = { .key = key, .act = 0xff };
	struct pctx p = { .ino = w->dir, .num = key };
	bool move;
	int pr;

	if (len < sizeof(*de) || len != sizeof(*de) + de->name_len || de->name_len == 0) {
		w->removed++;
		if (fsck_fix_problem(c, PR_3_ENTRY_BAD, &p) && !w->salvage)
			return push(w, &(struct dent){ .key = key, .act = ACT_REMOVE });
		return 0;
	}
	e.ino = ff_le64(de->ino);
	e.type = de->type;
	e.len = de->name_len;
	memcpy(e.name, de->name, e.len);
	p.str = e.name;
	p.ino2 = e.ino;
	pr = entry_problem(w, &e, &move);
	if (pr >= 0) {
		w->removed++;
		if (fsck_fix_problem(c, (enum problem)pr, &p) && !w->salvage)
			return push(w, &(struct dent){ .key = key, .act = ACT_REMOVE });
		return 0;
	}
	if (move && fsck_fix_problem(c, PR_3_ENTRY_HASH, &p))
		e.act = ACT_MOVE;
	if (e.type != c->ino[e.ino].dtype) {
		p.str2 = fsck_type_name(e.type);
		p.str3 = fsck_type_name(c->ino[e.ino].dtype);
		if (fsck_fix_problem(c, PR_3_ENTRY_TYPE, &p) && e.act != ACT_MOVE)
			e.act = ACT_RETYPE;
		e.type = c->ino[e.ino].dtype;
	}
	return keep(w, &e);
}

static void dirent_rec(const struct dent *e, uint8_t *rec, uint16_t *len)
{
	struct ffs_dirent *de = (struct ffs_dirent *)rec;

	de->ino = ff_cpu_to_le64(e->ino);
	de->type = e->type;
	de->name_len = e->len;
	memcpy(de->name, e->name, e->len);
	*len = (uint16_t)(sizeof(*de) + e->len);
}

/* Re-add by name: the library puts it where its hash says. */
static int add_again(struct dwalk *w, struct finode *fi, const struct dent *e)
{
	int rc = ffs_dir_add(w->c->fs, fi, e->name, e->ino, e->type);

	if (rc == -EEXIST) { /* a twin was kept: this one goes */
		w->live--;
		w->c->ino[e->ino].refs--;
		rc = 0;
	}
	return rc < 0 ? rc : fsck_commit(w->c, false);
}

/* Entry repairs in a sound tree: removals and retypes in place, moves. */
static int apply(struct dwalk *w, struct finode *fi)
{
	struct bt_root t = { ff_le64(fi->d.root), w->dir };
	uint8_t rec[sizeof(struct ffs_dirent) + FFS_NAME_MAX];
	uint16_t len;
	int rc = 0;

	for (size_t i = 0; i < w->n && rc == 0; i++) {
		const struct dent *e = &w->list[i];

		if (e->act == ACT_RETYPE) {
			dirent_rec(e, rec, &len);
			rc = ffs_bt_update(w->c->fs, &t, e->key, rec, len);
		} else if (e->act == ACT_REMOVE || e->act == ACT_MOVE) {
			rc = ffs_bt_delete(w->c->fs, &t, e->key);
		}
	}
	fi->d.root = ff_cpu_to_le64(t.root);
	for (size_t i = 0; i < w->n && rc == 0; i++)
		if (w->list[i].act == ACT_MOVE)
			rc = add_again(w, fi, &w->list[i]);
	return rc;
}

/* A damaged tree: a new one from every entry that was readable. */
static int rebuild(struct dwalk *w, struct finode *fi)
{
	uint64_t old_root = ff_le64(fi->d.root);
	int rc = 0;

	fi->d.root = 0;
	fi->d.size = 0;
	for (size_t i = 0; i < w->n && rc == 0; i++)
		rc = add_again(w, fi, &w->list[i]);
	if (rc == 0 && old_root)
		rc = fsck_tree_free_old(w->c, w->dir, old_root, POOL_BTREE);
	return rc;
}

static int repair(struct dwalk *w, bool rebuild_tree, bool fix_size)
{
	struct fsck *c = w->c;
	struct finode *fi;
	le64 mtime, ctime;
	int rc = fsck_finode(c, w->dir, &fi);

	if (rc < 0)
		return rc;
	mtime = fi->d.mtime_ns;
	ctime = fi->d.ctime_ns;
	rc = rebuild_tree ? rebuild(w, fi) : apply(w, fi);
	if (rc == 0) { /* an fsck repair is not a change the user made */
		fi->d.mtime_ns = mtime;
		fi->d.ctime_ns = ctime;
		if (fix_size || rebuild_tree || w->n)
			fi->d.size = ff_cpu_to_le64(w->live);
		rc = ffs_istore(c->fs, fi);
	}
	fsck_finode_put(c, fi);
	if (rc == 0)
		rc = fsck_commit(c, false);
	if (rc < 0)
		fsck_operr(c, rc, "cannot repair a directory");
	return rc;
}

static int dir_entries(struct fsck *c, uint64_t dir)
{
	struct dwalk *w = calloc(1, sizeof(*w));
	struct fsck_tree_walk tw = { .c = c, .ino = dir, .rec = entry, .arg = w };
	bool rebuild_tree = c->ino[dir].flags & IS_REBUILD, fix_size = false;
	struct ffs_inode d;
	int rc = w ? fsck_slot_read(c, dir, &d) : -ENOMEM;

	if (rc == 0) {
		w->c = c;
		w->dir = dir;
		w->salvage = c->ino[dir].flags & (IS_REBUILD | IS_TREE_BAD);
		tw.root = ff_le64(d.root);
		rc = fsck_tree_walk(&tw);
	}
	if (rc == 0 && ff_le64(d.size) != w->live + w->removed)
		fix_size = fsck_fix_problem(c, PR_3_DIR_SIZE, &(struct pctx){ .ino = dir, .num = ff_le64(d.size),
									 .num2 = w->live });
	if (rc == 0 && !ffs_tools_read_only(c->fs) && (rebuild_tree || fix_size || (w->n && !w->salvage)))
		rc = repair(w, rebuild_tree, fix_size);
	if (w)
		free(w->list);
	free(w);
	if (rc == -ENOMEM)
		fsck_operr(c, rc, "out of memory");
	return rc;
}

static void root_check(struct fsck *c)
{
	const struct ino_info *r = &c->ino[FFS_ROOT_INO];
	struct ffs_inode d;
	uint64_t now = ff_wall_ns();

	if ((r->flags & IS_USED) && r->dtype == DT_DIR)
		return;
	if (!fsck_fix_problem(c, PR_3_ROOT_BAD, &(struct pctx){ .str = r->flags & IS_USED
				? "is not a directory" : "is not in use" }))
		return;
	if (fsck_slot_read(c, FFS_ROOT_INO, &d) < 0)
		memset(&d, 0, sizeof(d));
	d = (struct ffs_inode){ .ino = ff_cpu_to_le64(FFS_ROOT_INO),
				.mode = ff_cpu_to_le32(S_IFDIR | 0755), .nlink = ff_cpu_to_le32(2),
				.generation = ff_cpu_to_le32(ff_le32(d.generation) + 1),
				.parent = ff_cpu_to_le64(FFS_ROOT_INO), .atime_ns = ff_cpu_to_le64(now),
				.mtime_ns = ff_cpu_to_le64(now), .ctime_ns = ff_cpu_to_le64(now),
				.btime_ns = ff_cpu_to_le64(now) };
	if (fsck_slot_write(c, FFS_ROOT_INO, &d) == 0)
		c->ino[FFS_ROOT_INO] = (struct ino_info){ .nlink = 2, .flags = IS_USED, .dtype = DT_DIR,
							  .parent = FFS_ROOT_INO };
}

int fsck_pass3(struct fsck *c)
{
	fsck_pass_start(c, 3, "Checking directories and connectivity");
	root_check(c);
	for (uint64_t ino = 1; ino < c->ninodes && !c->operr && !c->stop; ino++)
		if ((c->ino[ino].flags & IS_USED) && c->ino[ino].dtype == DT_DIR)
			dir_entries(c, ino);
	if (!c->operr && !c->stop)
		fsck_connect_check(c);
	fsck_commit(c, true);
	return c->operr;
}
