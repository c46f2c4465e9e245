/* SPDX-License-Identifier: MIT */
/*
 * Directories: a B+tree of entries keyed by a 63-bit hash of the name, so
 * lookup and insert cost a root-to-leaf walk whatever the directory size
 * (a frame sequence is one directory of 100,000 files).  Two names whose
 * hashes meet are placed at the next free key (linear probing over at most
 * PROBE_MAX keys).  The key is also the readdir position, so a listing
 * resumes exactly where it stopped, whatever was added or removed since.
 */
#include <errno.h>
#include <string.h>

#include "fs/meta/meta.h"

#define PROBE_MAX 64

static struct bt_root dir_root(struct finode *dir)
{
	return (struct bt_root){ ff_le64(dir->d.root), dir->ino };
}

static void dir_set_root(struct finode *dir, const struct bt_root *t)
{
	dir->d.root = ff_cpu_to_le64(t->root);
}

/* Find name: its key, or the first free key of its probe window. */
static int dir_find(struct ffs *fs, struct finode *dir, const char *name, size_t nlen,
		    uint64_t *key, uint64_t *ino, uint8_t *type, uint64_t *free_key)
{
	uint8_t rec[FFS_BT_RECORD_MAX]; /* a corrupt record may be longer than an entry */
	struct bt_root t = dir_root(dir);
	uint64_t h = ffs_name_hash(name, nlen), k = h;

	*free_key = UINT64_MAX;
	while (k < h + PROBE_MAX) {
		const struct ffs_dirent *de = (const struct ffs_dirent *)rec;
		uint64_t found;
		uint16_t len;
		int rc = ffs_bt_find_ge(fs, &t, k, &found, rec, &len);

		if (rc == -ENOENT || (rc == 0 && found >= h + PROBE_MAX)) {
			if (*free_key == UINT64_MAX)
				*free_key = k;
			return -ENOENT;
		}
		if (rc < 0)
			return rc;
		if (len < sizeof(*de) || len != sizeof(*de) + de->name_len)
			return -EUCLEAN;
		if (found > k && *free_key == UINT64_MAX)
			*free_key = k; /* a gap before the next taken key */
		if (de->name_len == nlen && memcmp(de->name, name, nlen) == 0) {
			*key = found;
			*ino = ff_le64(de->ino);
			*type = de->type;
			return 0;
		}
		k = found + 1;
	}
	return -ENOENT;
}

int ffs_dir_lookup(struct ffs *fs, struct finode *dir, const char *name, uint64_t *ino, uint8_t *type)
{
	uint64_t key, free_key;

	return dir_find(fs, dir, name, strlen(name), &key, ino, type, &free_key);
}

int ffs_dir_add(struct ffs *fs, struct finode *dir, const char *name, uint64_t ino, uint8_t type)
{
	uint8_t rec[sizeof(struct ffs_dirent) + FFS_NAME_MAX];
	struct ffs_dirent *de = (struct ffs_dirent *)rec;
	size_t nlen = strlen(name);
	uint64_t key, oino, free_key;
	struct bt_root t;
	uint8_t otype;
	int rc;

	if (nlen == 0 || nlen > FFS_NAME_MAX)
		return -ENAMETOOLONG;
	rc = dir_find(fs, dir, name, nlen, &key, &oino, &otype, &free_key);
	if (rc == 0)
		return -EEXIST;
	if (rc != -ENOENT)
		return rc;
	if (free_key == UINT64_MAX)
		return -ENOSPC; /* PROBE_MAX names share one hash neighbourhood */
	de->ino = ff_cpu_to_le64(ino);
	de->type = type;
	de->name_len = (uint8_t)nlen;
	memcpy(de->name, name, nlen);
	t = dir_root(dir);
	rc = ffs_bt_insert(fs, &t, free_key, rec, (uint16_t)(sizeof(*de) + nlen));
	dir_set_root(dir, &t);
	if (rc < 0)
		return rc;
	dir->d.size = ff_cpu_to_le64(ff_le64(dir->d.size) + 1);
	ffs_inode_touch(dir, true, true);
	return ffs_istore(fs, dir);
}

int ffs_dir_remove(struct ffs *fs, struct finode *dir, const char *name)
{
	uint64_t key, ino, free_key;
	struct bt_root t;
	uint8_t type;
	int rc = dir_find(fs, dir, name, strlen(name), &key, &ino, &type, &free_key);

	if (rc < 0)
		return rc;
	t = dir_root(dir);
	rc = ffs_bt_delete(fs, &t, key);
	dir_set_root(dir, &t);
	if (rc < 0)
		return rc;
	if (ff_le64(dir->d.size))
		dir->d.size = ff_cpu_to_le64(ff_le64(dir->d.size) - 1);
	ffs_inode_touch(dir, true, true);
	return ffs_istore(fs, dir);
}

int ffs_dir_retarget(struct ffs *fs, struct finode *dir, const char *name, uint64_t ino, uint8_t type)
{
	uint8_t rec[sizeof(struct ffs_dirent) + FFS_NAME_MAX];
	struct ffs_dirent *de = (struct ffs_dirent *)rec;
	size_t nlen = strlen(name);
	uint64_t key, oino, free_key;
	struct bt_root t;
	uint8_t otype;
	int rc = dir_find(fs, dir, name, nlen, &key, &oino, &otype, &free_key);

	if (rc < 0)
		return rc;
	de->ino = ff_cpu_to_le64(ino);
	de->type = type;
	de->name_len = (uint8_t)nlen;
	memcpy(de->name, name, nlen);
	t = dir_root(dir);
	rc = ffs_bt_update(fs, &t, key, rec, (uint16_t)(sizeof(*de) + nlen));
	dir_set_root(dir, &t);
	if (rc < 0)
		return rc;
	ffs_inode_touch(dir, true, true);
	return ffs_istore(fs, dir);
}

int ffs_dir_next(struct ffs *fs, struct finode *dir, uint64_t pos, char *name, uint64_t *ino,
	     uint8_t *type, uint64_t *next_pos)
{
	uint8_t rec[FFS_BT_RECORD_MAX]; /* a corrupt record may be longer than an entry */
	const struct ffs_dirent *de = (const struct ffs_dirent *)rec;
	struct bt_root t = dir_root(dir);
	uint64_t key;
	uint16_t len;
	int rc = ffs_bt_find_ge(fs, &t, FF_MAX(pos, FFS_DIR_KEY_MIN), &key, rec, &len);

	if (rc < 0)
		return rc;
	if (len < sizeof(*de) || len != sizeof(*de) + de->name_len || de->name_len == 0)
		return -EUCLEAN;
	memcpy(name, de->name, de->name_len);
	name[de->name_len] = '\0';
	*ino = ff_le64(de->ino);
	*type = de->type;
	*next_pos = key + 1;
	return 0;
}

bool ffs_dir_is_empty(struct ffs *fs, struct finode *dir)
{
	(void)fs;
	return dir->d.root == 0;
}
