/* SPDX-License-Identifier: MIT */
/*
 * POSIX operations by inode number.  Each one takes fs->lock, checks
 * everything it can before changing anything (so a refused operation leaves
 * no trace in the running transaction), and returns 0 or -errno.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "fs/volume/volume.h"

/* Pool blocks an operation may need in the worst case (B+tree splits up
 * to the root, an xattr block): refuse up front rather than half-way. */
#define META_RESERVE 64

static int check_space(struct ffs *fs)
{
	if (fs->ro)
		return -EROFS;
	return fs->free_mblocks < META_RESERVE ? -ENOSPC : 0;
}

static int check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || strchr(name, '/'))
		return -EINVAL;
	if (n > FFS_NAME_MAX)
		return -ENAMETOOLONG;
	return 0;
}

static int get_dir(struct ffs *fs, uint64_t ino, struct finode **out)
{
	int rc = ffs_iget(fs, ino, out);

	if (rc < 0)
		return rc == -ENOENT ? -ESTALE : rc;
	if (!S_ISDIR(ff_le32((*out)->d.mode))) {
		ffs_iput(fs, *out);
		return -ENOTDIR;
	}
	return 0;
}

/* Commit when the transaction has grown large; the op itself succeeded. */
static void maybe_commit(struct ffs *fs)
{
	if (ffs_journal_tx_full(fs)) {
		int rc = ffs_journal_commit(fs);

		if (rc < 0)
			ff_log(FF_LOG_ERR, "commit failed: %s", strerror(-rc));
	}
}

int ffs_lookup(struct ffs *fs, uint64_t parent, const char *name, struct stat *st)
{
	struct finode *dir = NULL, *fi;
	uint64_t ino;
	uint8_t type;
	int rc = check_name(name);

	if (rc < 0)
		return rc == -EINVAL ? -ENOENT : rc;
	pthread_mutex_lock(&fs->lock);
	/* "." is asked of any inode, a file too: the kernel resolves a file
	 * handle whose inode it no longer caches by looking up "." in it. */
	rc = strcmp(name, ".") == 0 ? 0 : get_dir(fs, parent, &dir);
	if (rc == 0 && !dir) {
		ino = parent;
	} else if (rc == 0) {
		if (strcmp(name, "..") == 0)
			ino = dir->d.parent ? ff_le64(dir->d.parent) : parent, rc = 0;
		else
			rc = ffs_dir_lookup(fs, dir, name, &ino, &type);
		ffs_iput(fs, dir);
	}
	if (rc == 0 && (rc = ffs_iget(fs, ino, &fi)) == 0) {
		fi->nlookup++;
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_generation(struct ffs *fs, uint64_t ino, uint32_t *gen)
{
	struct finode *fi;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		*gen = ff_le32(fi->d.generation);
		ffs_iput(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

void ffs_forget(struct ffs *fs, uint64_t ino, uint64_t nlookup)
{
	struct finode *fi;

	pthread_mutex_lock(&fs->lock);
	if (ffs_iget(fs, ino, &fi) == 0) {
		fi->nlookup -= FF_MIN(nlookup, fi->nlookup);
		ffs_iput(fs, fi);
		maybe_commit(fs);
	}
	pthread_mutex_unlock(&fs->lock);
}

int ffs_getattr(struct ffs *fs, uint64_t ino, struct stat *st)
{
	struct finode *fi;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc == -ENOENT ? -ESTALE : rc;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/*
 * What writing, truncating or chowning takes from a file that is not a
 * directory, as the kernel's setattr_should_drop_suidgid and chown_common
 * do: set-user-ID always; set-group-ID when the group may execute, and
 * without group execute (a mandatory-locking mark) only when drop_sgid
 * (the caller is neither in the file's group nor has CAP_FSETID); and file
 * capabilities.  Directories keep all of it.  Whether a writer or truncater
 * is exempt (CAP_FSETID) the kernel decided.  fs->lock held.
 */
static int kill_priv(struct ffs *fs, struct finode *fi, bool drop_sgid, bool *changed)
{
	uint32_t mode = ff_le32(fi->d.mode), keep = mode & ~(uint32_t)S_ISUID;
	int rc = 0;

	*changed = false;
	if (S_ISDIR(mode))
		return 0;
	if ((mode & S_IXGRP) || drop_sgid)
		keep &= ~(uint32_t)S_ISGID;
	if (keep != mode) {
		fi->d.mode = ff_cpu_to_le32(keep);
		*changed = true;
	}
	if (fi->d.xattr_block) {
		rc = ffs_xattr_remove(fs, fi, "security.capability");
		*changed |= rc == 0;
		rc = rc == -ENODATA ? 0 : rc;
	}
	return rc;
}

/* kill_priv's drop_sgid for a file of this mode and group: asked of the
 * caller (without fs->lock) only where the answer matters */
static bool drop_sgid_for(const struct ffs_caller *caller, uint32_t mode, gid_t gid)
{
	if (!caller || S_ISDIR(mode) || (mode & (S_ISGID | S_IXGRP)) != S_ISGID)
		return false;
	return !caller->in_group_or_capable(caller, gid);
}

int ffs_setattr(struct ffs *fs, uint64_t ino, const struct stat *a, int to_set, struct stat *st)
{
	return ffs_setattr_as(fs, ino, a, to_set, NULL, st);
}

int ffs_setattr_as(struct ffs *fs, uint64_t ino, const struct stat *a, int to_set,
		   const struct ffs_caller *caller, struct stat *st)
{
	struct finode *fi;
	uint64_t old_size = 0;
	uint32_t mode = 0;
	gid_t gid = 0;
	bool drop_sgid = false;
	int rc;

	if (fs->ro)
		return -EROFS;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		old_size = ff_le64(fi->d.size);
		mode = ff_le32(fi->d.mode);
		gid = ff_le32(fi->d.gid);
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)
		return rc == -ENOENT ? -ESTALE : rc;
	/* decided on the group the file has before a chown changes it, as
	 * the kernel does */
	if (to_set & FFS_SET_KILL_PRIV)
		drop_sgid = drop_sgid_for(caller, mode, gid);
	if (to_set & FFS_SET_SIZE) {
		if (S_ISDIR(mode))
			rc = -EISDIR;
		else if (!S_ISREG(mode))
			rc = -EINVAL;
		else
			rc = ffs_data_truncate(fs, fi, (uint64_t)a->st_size);
	}
	pthread_mutex_lock(&fs->lock);
	if (rc == 0) {
		uint64_t now = ff_wall_ns();
		/* a truncate(2) to the size the file has changes no time, even
		 * where it takes set-ID bits, as on Linux (tmpfs, ext4); anything
		 * else given stamps ctime */
		bool resized = (to_set & FFS_SET_SIZE) && (uint64_t)a->st_size != old_size;
		bool stamp = resized || (to_set & ~(FFS_SET_SIZE | FFS_SET_KILL_PRIV)) ||
			     !(to_set & FFS_SET_SIZE);

		if (to_set & FFS_SET_MODE)
			fi->d.mode = ff_cpu_to_le32((ff_le32(fi->d.mode) & S_IFMT) | (a->st_mode & 07777));
		if (to_set & FFS_SET_UID)
			fi->d.uid = ff_cpu_to_le32(a->st_uid);
		if (to_set & FFS_SET_GID)
			fi->d.gid = ff_cpu_to_le32(a->st_gid);
		if (to_set & FFS_SET_ATIME)
			fi->d.atime_ns = ff_cpu_to_le64(ts_ns(&a->st_atim));
		if (to_set & FFS_SET_ATIME_NOW)
			fi->d.atime_ns = ff_cpu_to_le64(now);
		if (to_set & FFS_SET_MTIME)
			fi->d.mtime_ns = ff_cpu_to_le64(ts_ns(&a->st_mtim));
		if (to_set & FFS_SET_MTIME_NOW)
			fi->d.mtime_ns = ff_cpu_to_le64(now);
		if (resized && !(to_set & (FFS_SET_MTIME | FFS_SET_MTIME_NOW)))
			fi->d.mtime_ns = ff_cpu_to_le64(now);
		if (to_set & FFS_SET_CTIME)
			fi->d.ctime_ns = ff_cpu_to_le64(ts_ns(&a->st_ctim));
		else if (stamp)
			fi->d.ctime_ns = ff_cpu_to_le64(now);
		if (to_set & FFS_SET_KILL_PRIV) {
			bool changed;
			uint32_t given = ff_le32(fi->d.mode);

			rc = kill_priv(fs, fi, drop_sgid, &changed);
			if (to_set & FFS_SET_MODE) /* a mode given with it stands */
				fi->d.mode = ff_cpu_to_le32(given);
		}
		if (rc == 0)
			rc = ffs_istore(fs, fi);
		ffs_inode_stat(fs, fi, st);
	}
	ffs_iput(fs, fi);
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Create an inode of mode under parent/name; returns it pinned. fs->lock held. */
static int make_node(struct ffs *fs, uint64_t parent, const char *name, uint32_t mode, uid_t uid,
		     gid_t gid, struct finode **out)
{
	struct finode *dir, *fi;
	uint64_t ino;
	uint8_t type;
	int rc = check_name(name);

	if (rc == 0)
		rc = check_space(fs);
	if (rc < 0)
		return rc;
	rc = get_dir(fs, parent, &dir);
	if (rc < 0)
		return rc;
	if (ff_le32(dir->d.nlink) == 0)
		rc = -ENOENT; /* the directory was removed */
	else if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		 (rc = ffs_dir_lookup(fs, dir, name, &ino, &type)) == 0)
		rc = -EEXIST;
	else if (rc == -ENOENT)
		rc = fs->free_inodes ? 0 : -ENOSPC;
	/* a set-group-ID directory gives what is made in it its group, and a
	 * directory its set-group-ID bit too (the kernel's inode_init_owner;
	 * the VFS already took the bit from a file the caller may not have it
	 * on) */
	if (ff_le32(dir->d.mode) & S_ISGID) {
		gid = ff_le32(dir->d.gid);
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	if (rc == 0)
		rc = ffs_inode_new(fs, mode, uid, gid, parent, &fi);
	if (rc == 0) {
		rc = ffs_dir_add(fs, dir, name, fi->ino, ffs_dtype(mode));
		if (rc < 0) { /* undo: the inode goes back */
			fi->d.nlink = 0;
			ffs_inode_maybe_free(fs, fi);
			ffs_iput(fs, fi);
		} else if (S_ISDIR(mode)) {
			dir->d.nlink = ff_cpu_to_le32(ff_le32(dir->d.nlink) + 1);
			rc = ffs_istore(fs, dir);
		}
	}
	ffs_iput(fs, dir);
	if (rc == 0) {
		fi->nlookup++;
		*out = fi;
	}
	return rc;
}

int ffs_mknod(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, dev_t rdev, uid_t uid,
	      gid_t gid, struct stat *st)
{
	struct finode *fi;
	int rc;

	if (!S_ISREG(mode) && !S_ISCHR(mode) && !S_ISBLK(mode) && !S_ISFIFO(mode) && !S_ISSOCK(mode))
		return -EINVAL;
	pthread_mutex_lock(&fs->lock);
	rc = make_node(fs, parent, name, mode, uid, gid, &fi);
	if (rc == 0) {
		/* a regular file's field is its patch root (format.h): only
		 * devices keep the number mknod(2) was given */
		if (S_ISCHR(mode) || S_ISBLK(mode))
			fi->d.u2.rdev = ff_cpu_to_le64(rdev);
		rc = ffs_istore(fs, fi);
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_mkdir(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, uid_t uid, gid_t gid,
	      struct stat *st)
{
	struct finode *fi;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = make_node(fs, parent, name, S_IFDIR | (mode & 07777), uid, gid, &fi);
	if (rc == 0) {
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/*
 * A long target (PATH_MAX - 1 bytes at most) lives in a symlink block, and
 * what does not fit there runs on in the inode's inline area, which a long
 * target does not otherwise use.
 */
static void symlink_split(struct finode *fi, struct ffs_symlink_block *sl, const char *target,
			  size_t len)
{
	size_t head = FF_MIN(len, sizeof(sl->target));

	memcpy(sl->target, target, head);
	memcpy(fi->d.u.symlink, target + head, len - head);
}

/* The target of a long symlink into buf (at most max bytes): its length. */
static size_t symlink_join(const struct finode *fi, const struct ffs_symlink_block *sl, char *buf,
			   size_t max)
{
	size_t len = FF_MIN((size_t)ff_le32(sl->len), (size_t)FFS_SYMLINK_MAX), head;

	len = FF_MIN(len, max);
	head = FF_MIN(len, sizeof(sl->target));
	memcpy(buf, sl->target, head);
	memcpy(buf + head, fi->d.u.symlink, len - head);
	return len;
}

int ffs_symlink(struct ffs *fs, uint64_t parent, const char *name, const char *target, uid_t uid,
		gid_t gid, struct stat *st)
{
	size_t len = strlen(target);
	struct finode *fi;
	int rc;

	if (len == 0 || len > FFS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	pthread_mutex_lock(&fs->lock);
	rc = make_node(fs, parent, name, S_IFLNK | 0777, uid, gid, &fi);
	if (rc == 0) {
		if (len <= sizeof(fi->d.u.symlink)) {
			memcpy(fi->d.u.symlink, target, len);
		} else {
			uint64_t no;
			struct mbuf *mb;

			rc = ffs_alloc_mblock(fs, &no);
			if (rc == 0 && (rc = ffs_mb_new(fs, no, FFS_B_SYMLINK, &mb)) == 0) {
				struct ffs_symlink_block *sl = (struct ffs_symlink_block *)mb->data;

				sl->owner = ff_cpu_to_le64(fi->ino);
				sl->len = ff_cpu_to_le32((uint32_t)len);
				symlink_split(fi, sl, target, len);
				ffs_mb_dirty(fs, mb);
				ffs_mb_put(fs, mb);
				fi->d.root = ff_cpu_to_le64(no);
			}
		}
		fi->d.size = ff_cpu_to_le64(len);
		if (rc == 0)
			rc = ffs_istore(fs, fi);
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_readlink(struct ffs *fs, uint64_t ino, char *buf, size_t size)
{
	struct finode *fi;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		size_t len = ff_le64(fi->d.size);

		if (!S_ISLNK(ff_le32(fi->d.mode))) {
			rc = -EINVAL;
		} else if (!fi->d.root) {
			len = FF_MIN(len, sizeof(fi->d.u.symlink));
			memcpy(buf, fi->d.u.symlink, FF_MIN(len, size - 1));
			buf[FF_MIN(len, size - 1)] = '\0';
		} else {
			struct mbuf *mb;

			rc = ffs_mb_get(fs, ff_le64(fi->d.root), FFS_B_SYMLINK, &mb);
			if (rc == 0) {
				struct ffs_symlink_block *sl = (struct ffs_symlink_block *)mb->data;

				len = symlink_join(fi, sl, buf, size - 1);
				buf[len] = '\0';
				ffs_mb_put(fs, mb);
			}
		}
		ffs_iput(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_link(struct ffs *fs, uint64_t ino, uint64_t newparent, const char *newname,
	     struct stat *st)
{
	struct finode *fi, *dir;
	int rc = check_name(newname);

	if (rc == 0)
		rc = check_space(fs);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc < 0)
		goto out;
	if (S_ISDIR(ff_le32(fi->d.mode)))
		rc = -EPERM;
	else if (ff_le32(fi->d.nlink) >= 65000)
		rc = -EMLINK;
	else if ((rc = get_dir(fs, newparent, &dir)) == 0) {
		rc = ffs_dir_add(fs, dir, newname, ino, ffs_dtype(ff_le32(fi->d.mode)));
		ffs_iput(fs, dir);
		if (rc == 0) {
			fi->d.nlink = ff_cpu_to_le32(ff_le32(fi->d.nlink) + 1);
			if (ff_le32(fi->d.flags) & FFS_I_ORPHAN)
				rc = ffs_orphan_remove(fs, fi);
			ffs_inode_touch(fi, false, true);
			if (rc == 0)
				rc = ffs_istore(fs, fi);
			fi->nlookup++;
			ffs_inode_stat(fs, fi, st);
		}
	}
	ffs_iput(fs, fi);
out:
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* Drop one link of fi (its entry is already gone); free or orphan it. */
static int drop_link(struct ffs *fs, struct finode *fi)
{
	uint32_t nlink = ff_le32(fi->d.nlink);
	int rc;

	if (S_ISDIR(ff_le32(fi->d.mode)))
		nlink = 0;
	else if (nlink)
		nlink--;
	fi->d.nlink = ff_cpu_to_le32(nlink);
	ffs_inode_touch(fi, false, true);
	rc = ffs_istore(fs, fi);
	if (rc == 0 && nlink == 0) {
		if (fi->nopen || fi->nlookup)
			rc = ffs_orphan_add(fs, fi);
		else
			rc = ffs_inode_maybe_free(fs, fi);
	}
	return rc;
}

static int remove_entry(struct ffs *fs, uint64_t parent, const char *name, bool want_dir)
{
	struct finode *dir, *fi;
	uint64_t ino;
	uint8_t type;
	int rc = check_name(name);

	if (rc == 0 && fs->ro)
		rc = -EROFS;
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = get_dir(fs, parent, &dir);
	if (rc < 0)
		goto out;
	rc = ffs_dir_lookup(fs, dir, name, &ino, &type);
	if (rc == 0 && (rc = ffs_iget(fs, ino, &fi)) == 0) {
		bool is_dir = S_ISDIR(ff_le32(fi->d.mode));

		if (want_dir && !is_dir)
			rc = -ENOTDIR;
		else if (!want_dir && is_dir)
			rc = -EISDIR;
		else if (is_dir && !ffs_dir_is_empty(fs, fi))
			rc = -ENOTEMPTY;
		if (rc == 0)
			rc = ffs_dir_remove(fs, dir, name);
		if (rc == 0 && is_dir) {
			dir->d.nlink = ff_cpu_to_le32(ff_le32(dir->d.nlink) - 1);
			rc = ffs_istore(fs, dir);
		}
		if (rc == 0)
			rc = drop_link(fs, fi);
		ffs_iput(fs, fi);
	}
	ffs_iput(fs, dir);
out:
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_unlink(struct ffs *fs, uint64_t parent, const char *name)
{
	return remove_entry(fs, parent, name, false);
}

int ffs_rmdir(struct ffs *fs, uint64_t parent, const char *name)
{
	if (strcmp(name, ".") == 0)
		return -EINVAL;
	if (strcmp(name, "..") == 0)
		return -ENOTEMPTY;
	return remove_entry(fs, parent, name, true);
}

/* Is `dir` equal to or below `ancestor`?  Walks parent links. */
static int is_within(struct ffs *fs, uint64_t dir, uint64_t ancestor)
{
	for (unsigned depth = 0; depth < 4096; depth++) {
		struct finode *fi;
		uint64_t up;

		if (dir == ancestor)
			return 1;
		if (dir == FFS_ROOT_INO)
			return 0;
		if (ffs_iget(fs, dir, &fi) < 0)
			return -EUCLEAN;
		up = ff_le64(fi->d.parent);
		ffs_iput(fs, fi);
		if (up == dir)
			return 0;
		dir = up;
	}
	return -ELOOP;
}

/* A directory moves from one parent to another: '..' and link counts. */
static int reparent(struct ffs *fs, struct finode *fi, struct finode *from, struct finode *to)
{
	int rc;

	if (!S_ISDIR(ff_le32(fi->d.mode)) || from == to)
		return 0;
	fi->d.parent = ff_cpu_to_le64(to->ino);
	from->d.nlink = ff_cpu_to_le32(ff_le32(from->d.nlink) - 1);
	to->d.nlink = ff_cpu_to_le32(ff_le32(to->d.nlink) + 1);
	rc = ffs_istore(fs, fi);
	if (rc == 0)
		rc = ffs_istore(fs, from);
	return rc == 0 ? ffs_istore(fs, to) : rc;
}

static int do_rename(struct ffs *fs, struct finode *sd, const char *name, struct finode *dd,
		     const char *newname, unsigned flags)
{
	struct finode *src, *dst = NULL;
	uint64_t sino, dino;
	uint8_t stype, dtype_;
	int rc = ffs_dir_lookup(fs, sd, name, &sino, &stype);

	if (rc < 0)
		return rc;
	rc = ffs_dir_lookup(fs, dd, newname, &dino, &dtype_);
	if (rc < 0 && rc != -ENOENT)
		return rc;
	if (rc == -ENOENT && (flags & FFS_RENAME_EXCHANGE))
		return -ENOENT;
	if (rc == 0 && (flags & FFS_RENAME_NOREPLACE))
		return -EEXIST;
	if (rc == 0 && dino == sino)
		return 0; /* two names of one inode: nothing to do */
	if ((rc = ffs_iget(fs, sino, &src)) < 0)
		return rc;
	if (dino && rc == 0 && (rc = ffs_dir_lookup(fs, dd, newname, &dino, &dtype_)) == 0)
		rc = ffs_iget(fs, dino, &dst);
	else if (rc == -ENOENT)
		rc = 0, dino = 0;
	if (rc < 0)
		goto out;
	/* a directory cannot move below itself */
	if (S_ISDIR(ff_le32(src->d.mode)) && (rc = is_within(fs, dd->ino, sino)) != 0) {
		rc = rc > 0 ? -EINVAL : rc;
		goto out;
	}
	if (dst && S_ISDIR(ff_le32(dst->d.mode)) && !(flags & FFS_RENAME_EXCHANGE) &&
	    (rc = is_within(fs, sd->ino, dino)) != 0) {
		rc = rc > 0 ? -ENOTEMPTY : rc;
		goto out;
	}
	if (flags & FFS_RENAME_EXCHANGE) {
		if (S_ISDIR(ff_le32(dst->d.mode)) && (rc = is_within(fs, sd->ino, dino)) != 0) {
			rc = rc > 0 ? -EINVAL : rc;
			goto out;
		}
		rc = ffs_dir_retarget(fs, sd, name, dino, ffs_dtype(ff_le32(dst->d.mode)));
		if (rc == 0)
			rc = ffs_dir_retarget(fs, dd, newname, sino, ffs_dtype(ff_le32(src->d.mode)));
		if (rc == 0)
			rc = reparent(fs, src, sd, dd);
		if (rc == 0)
			rc = reparent(fs, dst, dd, sd);
		goto out;
	}
	if (dst) {
		bool sdir = S_ISDIR(ff_le32(src->d.mode)), ddir = S_ISDIR(ff_le32(dst->d.mode));

		if (sdir && !ddir)
			rc = -ENOTDIR;
		else if (!sdir && ddir)
			rc = -EISDIR;
		else if (ddir && !ffs_dir_is_empty(fs, dst))
			rc = -ENOTEMPTY;
		if (rc == 0)
			rc = ffs_dir_retarget(fs, dd, newname, sino, stype);
		if (rc == 0 && ddir) {
			dd->d.nlink = ff_cpu_to_le32(ff_le32(dd->d.nlink) - 1);
			rc = ffs_istore(fs, dd);
		}
		if (rc == 0)
			rc = drop_link(fs, dst);
	} else {
		rc = ffs_dir_add(fs, dd, newname, sino, stype);
	}
	if (rc == 0)
		rc = ffs_dir_remove(fs, sd, name);
	if (rc == 0)
		rc = reparent(fs, src, sd, dd);
	if (rc == 0) {
		/* files too remember their directory: scrub names them by it */
		src->d.parent = ff_cpu_to_le64(dd->ino);
		ffs_inode_touch(src, false, true);
		rc = ffs_istore(fs, src);
	}
out:
	if (dst)
		ffs_iput(fs, dst);
	ffs_iput(fs, src);
	return rc;
}

int ffs_rename(struct ffs *fs, uint64_t parent, const char *name, uint64_t newparent,
	       const char *newname, unsigned flags)
{
	struct finode *sd, *dd;
	int rc = check_name(name);

	if (rc == 0)
		rc = check_name(newname);
	if (rc == 0)
		rc = check_space(fs);
	if (rc == 0 && (flags & ~(FFS_RENAME_NOREPLACE | FFS_RENAME_EXCHANGE)))
		rc = -EINVAL;
	if (rc == 0 && (flags & FFS_RENAME_NOREPLACE) && (flags & FFS_RENAME_EXCHANGE))
		rc = -EINVAL;
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = get_dir(fs, parent, &sd);
	if (rc == 0) {
		rc = get_dir(fs, newparent, &dd);
		if (rc == 0) {
			rc = do_rename(fs, sd, name, dd, newname, flags);
			ffs_iput(fs, dd);
		}
		ffs_iput(fs, sd);
	}
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

/* ---- open files ------------------------------------------------------------ */

/*
 * An open's handle is its inode, with bit 0 set when it was opened for
 * reading only (finodes are 8-byte aligned).  A read-only handle's close
 * neither writes the file's buffered stripes out nor takes its write
 * error: those belong to the writers.  Before, a player closing a frame
 * that a capture was still writing sent the capture's partial stripe out
 * early and, when that failed, took the error, so that the writer's own
 * close answered 0 for data that never reached the members.
 */
#define FH_RDONLY 1u
_Static_assert(_Alignof(struct finode) > FH_RDONLY, "the handle's flag bit is free");

static struct finode *fh_inode(uint64_t fh)
{
	struct finode *fi = (struct finode *)(uintptr_t)(fh & ~(uint64_t)FH_RDONLY);

	FF_ASSERT(fi && fi->nopen > 0);
	return fi;
}

static bool fh_rdonly(uint64_t fh)
{
	return (fh & FH_RDONLY) != 0;
}

int ffs_open(struct ffs *fs, uint64_t ino, int flags, uint64_t *fh)
{
	struct finode *fi;
	int rc;

	if (fs->ro && (flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		if (S_ISDIR(ff_le32(fi->d.mode)) && (flags & O_ACCMODE) != O_RDONLY)
			rc = -EISDIR;
		else if (fi->data_dropped) /* deleted and closed: its bytes are gone (inode.c) */
			rc = -ESTALE;
		else
			fi->nopen++;
		*fh = (uint64_t)(uintptr_t)fi | ((flags & O_ACCMODE) == O_RDONLY ? FH_RDONLY : 0);
		ffs_iput(fs, fi); /* the open count keeps it cached */
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0 && (flags & O_TRUNC) && S_ISREG(ff_le32(fi->d.mode))) {
		rc = ffs_data_truncate(fs, fi, 0);
		if (rc == 0) { /* an open that truncates changes the file, empty or not */
			pthread_mutex_lock(&fs->lock);
			ffs_inode_touch(fi, true, true);
			rc = ffs_istore(fs, fi);
			pthread_mutex_unlock(&fs->lock);
		}
		if (rc < 0)
			ffs_release(fs, *fh);
	}
	return rc == -ENOENT ? -ESTALE : rc;
}

int ffs_create(struct ffs *fs, uint64_t parent, const char *name, mode_t mode, uid_t uid, gid_t gid,
	       int flags, struct stat *st, uint64_t *fh)
{
	struct finode *fi;
	int rc;

	(void)flags;
	pthread_mutex_lock(&fs->lock);
	rc = make_node(fs, parent, name, S_IFREG | (mode & 07777), uid, gid, &fi);
	if (rc == 0) {
		fi->nopen++;
		*fh = (uint64_t)(uintptr_t)fi;
		ffs_inode_stat(fs, fi, st);
		ffs_iput(fs, fi);
	}
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_release(struct ffs *fs, uint64_t fh)
{
	struct finode *fi = fh_inode(fh);
	int rc = S_ISREG(ff_le32(fi->d.mode)) && !fh_rdonly(fh) ? ffs_data_flush(fs, fi) : 0;

	pthread_mutex_lock(&fs->lock);
	fi->refs++;
	fi->nopen--;
	ffs_iput(fs, fi);
	maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t ffs_read(struct ffs *fs, uint64_t fh, void *buf, size_t size, uint64_t off, unsigned flags)
{
	struct finode *fi = fh_inode(fh);

	if (S_ISDIR(ff_le32(fi->d.mode)))
		return -EISDIR;
	atomic_fetch_add(&fs->stats.user_bytes, size);
	return ffs_data_read(fs, fi, buf, size, off, flags);
}

ssize_t ffs_read_ref(struct ffs *fs, uint64_t fh, size_t size, uint64_t off, unsigned flags,
		     struct ffs_rref *ref)
{
	struct finode *fi = fh_inode(fh);

	if (S_ISDIR(ff_le32(fi->d.mode)))
		return -EISDIR;
	atomic_fetch_add(&fs->stats.user_bytes, size);
	return ffs_data_read_ref(fs, fi, size, off, flags, ref);
}

ssize_t ffs_read_into(struct ffs *fs, uint64_t fh, void *buf, size_t cap, size_t size, uint64_t off)
{
	struct finode *fi = fh_inode(fh);

	if (S_ISDIR(ff_le32(fi->d.mode)))
		return -EISDIR;
	atomic_fetch_add(&fs->stats.user_bytes, size);
	return ffs_data_read_into(fs, fi, buf, cap, size, off);
}

int ffs_read_into_async(struct ffs *fs, uint64_t fh, void *buf, size_t cap, size_t size, uint64_t off,
			ffs_read_done_fn done, void *priv)
{
	struct finode *fi = fh_inode(fh);

	if (S_ISDIR(ff_le32(fi->d.mode)))
		return -EISDIR;
	atomic_fetch_add(&fs->stats.user_bytes, size);
	return ffs_data_read_into_async(fs, fi, fh, buf, cap, size, off, done, priv);
}

void ffs_read_unref(struct ffs *fs, struct ffs_rref *ref)
{
	ffs_data_read_unref(fs, ref);
}

int ffs_kill_priv(struct ffs *fs, uint64_t fh, const struct ffs_caller *caller)
{
	struct finode *fi = fh_inode(fh);
	bool changed, drop_sgid;
	uint32_t mode;
	gid_t gid;
	int rc;

	if (fs->ro)
		return 0; /* nothing is written either */
	pthread_mutex_lock(&fs->lock);
	mode = ff_le32(fi->d.mode);
	gid = ff_le32(fi->d.gid);
	/* the caller is asked without the lock, and only about such a file */
	drop_sgid = false;
	if (caller && (mode & (S_ISGID | S_IXGRP)) == S_ISGID) {
		pthread_mutex_unlock(&fs->lock);
		drop_sgid = drop_sgid_for(caller, mode, gid);
		pthread_mutex_lock(&fs->lock);
	}
	rc = kill_priv(fs, fi, drop_sgid, &changed);
	if (rc == 0 && changed) {
		fi->d.ctime_ns = ff_cpu_to_le64(ff_wall_ns());
		rc = ffs_istore(fs, fi);
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

ssize_t ffs_write(struct ffs *fs, uint64_t fh, const void *buf, size_t size, uint64_t off)
{
	struct finode *fi = fh_inode(fh);

	if (fs->ro)
		return -EROFS;
	if (off + size < off || off + size > (uint64_t)INT64_MAX)
		return -EFBIG;
	if (fs->free_mblocks < META_RESERVE)
		return -ENOSPC;
	atomic_fetch_add(&fs->stats.user_bytes, size);
	return ffs_data_write(fs, fi, buf, size, off);
}

/*
 * close(2) waits for FLUSH; RELEASE comes later, and syncfs(2) never
 * reaches a FUSE daemon (the kernel sends FUSE_SYNCFS to virtiofs only).
 * So FLUSH is the last moment before close returns: it writes the file's
 * partial stripes and commits the running transaction, and a close that
 * returned 0 (followed by syncfs, which can add nothing) is an
 * acknowledgement — the file, its data and its name survive a crash.
 * A file the running transaction has not touched (a frame opened for
 * playback) commits nothing and does not wait.
 */
/* The file's buffered stripes out, and the commit that maps them. */
static int flush_file(struct ffs *fs, struct finode *fi)
{
	int rc = 0, rc2 = 0;

	if (fs->ro)
		return 0;
	if (S_ISREG(ff_le32(fi->d.mode)))
		rc = ffs_data_flush(fs, fi);
	pthread_mutex_lock(&fs->lock);
	rc2 = ffs_commit_wait(fs, fi->tx_seq);
	/* patch batches that no commit of its own needs (patch.c): their rows */
	if (rc2 == 0 && fi->patch_unflushed) {
		const char *prev = ffs_watch_wait_begin("a member flush for patch rows");

		fi->patch_unflushed = false;
		rc2 = ff_raid_flush(fs->raid);
		ffs_watch_wait_end(prev);
		if (rc2 < 0)
			fi->patch_unflushed = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : rc2;
}

/* close(2): a read-only handle has nothing of its own to write out (see
 * FH_RDONLY); the kernel skips it anyway when the open said noflush. */
int ffs_flush(struct ffs *fs, uint64_t fh)
{
	struct finode *fi = fh_inode(fh);

	return fh_rdonly(fh) ? 0 : flush_file(fs, fi);
}

/* fsync(2) makes the file durable whoever asks, as on any filesystem:
 * through a read-only handle too. */
int ffs_fsync(struct ffs *fs, uint64_t fh, bool datasync)
{
	int rc = flush_file(fs, fh_inode(fh));
	int rc2;

	(void)datasync;
	if (fs->ro)
		return rc;
	pthread_mutex_lock(&fs->lock);
	/* ffs_flush committed; the data of stripes written since needs a flush.
	 * With patches (version 5) what the file needs is what flush_file
	 * made durable: its own transactions and its batches' rows */
	if (fs->features & FFS_FEAT_PATCHES)
		rc2 = 0;
	else
		rc2 = fs->tx_count ? ffs_commit_wait(fs, fs->j_seq) : ff_raid_flush(fs->raid);
	pthread_mutex_unlock(&fs->lock);
	return rc < 0 ? rc : rc2;
}

int ffs_fsyncdir(struct ffs *fs)
{
	int rc;

	if (fs->ro)
		return 0;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_journal_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_fallocate(struct ffs *fs, uint64_t fh, int mode, uint64_t off, uint64_t len)
{
	struct finode *fi = fh_inode(fh);

	if (fs->ro)
		return -EROFS;
	if (!S_ISREG(ff_le32(fi->d.mode)))
		return -ENODEV;
	if (off + len < off || off + len > (uint64_t)INT64_MAX)
		return -EFBIG;
	return ffs_data_fallocate(fs, fi, mode, off, len);
}

/* ---- directories, statfs, xattrs ------------------------------------------ */

int ffs_readdir(struct ffs *fs, uint64_t ino, uint64_t pos, bool plus, ffs_fill_fn fill, void *arg)
{
	char name[FFS_NAME_MAX + 1];
	struct finode *dir = NULL;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = get_dir(fs, ino, &dir);
	if (rc < 0)
		dir = NULL;
	while (rc == 0) {
		struct stat st;
		uint64_t child, next;
		uint8_t type;

		memset(&st, 0, sizeof(st));
		if (pos < 2) {
			st.st_ino = pos == 0 ? ino : (dir->d.parent ? ff_le64(dir->d.parent) : ino);
			st.st_mode = S_IFDIR;
			if (fill(arg, pos == 0 ? "." : "..", &st, 0, pos + 1))
				break;
			pos++;
			continue;
		}
		rc = ffs_dir_next(fs, dir, pos, name, &child, &type, &next);
		if (rc < 0)
			break;
		if (plus) {
			struct finode *fi;

			rc = ffs_iget(fs, child, &fi);
			if (rc < 0)
				break;
			ffs_inode_stat(fs, fi, &st);
			if (fill(arg, name, &st, ff_le32(fi->d.generation), next) == 0)
				fi->nlookup++; /* the kernel holds what readdirplus returned */
			else
				next = 0;
			ffs_iput(fs, fi);
			if (!next)
				break;
		} else {
			st.st_ino = child;
			st.st_mode = (mode_t)type << 12;
			if (fill(arg, name, &st, 0, next))
				break;
		}
		pos = next;
	}
	if (rc == 0 || rc == -ENOENT)
		rc = 0;
	if (dir)
		ffs_iput(fs, dir);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_statfs(struct ffs *fs, struct statvfs *st)
{
	pthread_mutex_lock(&fs->lock);
	memset(st, 0, sizeof(*st));
	st->f_bsize = 4096;
	st->f_frsize = 4096;
	st->f_blocks = ff_le64(fs->sb->nstripes) * (fs->stripe_bytes / 4096);
	/* stripes freed in the running transaction are free in a moment, and
	 * those reserved ahead by files being written but not used yet are
	 * handed back to whoever needs them, as are the tail slots' spares */
	{
		uint64_t free = fs->free_stripes + fs->npending + ffs_tails_spare_count(fs);

		for (unsigned h = 0; h < fs->ihash_size; h++)
			for (struct finode *f = fs->ihash[h]; f; f = f->hnext)
				free += f->reserve_count;
		st->f_bfree = free * (fs->stripe_bytes / 4096);
		/* the overwrite reserve (alloc.c) is free, but not for new data */
		free -= FF_MIN(free, ffs_overwrite_reserve(fs));
		st->f_bavail = free * (fs->stripe_bytes / 4096);
	}
	st->f_files = ff_le64(fs->sb->ninodes) - 1;
	st->f_ffree = fs->free_inodes;
	st->f_favail = fs->free_inodes;
	st->f_namemax = FFS_NAME_MAX;
	st->f_fsid = ff_le64(fs->sb->generation) ^ *(uint64_t *)fs->sb->uuid;
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

static int with_inode(struct ffs *fs, uint64_t ino, bool modify, int (*fn)(struct ffs *, struct finode *, void *),
		      void *arg)
{
	struct finode *fi;
	int rc = modify ? check_space(fs) : 0;

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	if (rc == 0) {
		rc = fn(fs, fi, arg);
		if (rc >= 0 && modify) {
			ffs_inode_touch(fi, false, true);
			int r2 = ffs_istore(fs, fi);

			rc = r2 < 0 ? r2 : rc;
		}
		ffs_iput(fs, fi);
	}
	if (modify)
		maybe_commit(fs);
	pthread_mutex_unlock(&fs->lock);
	return rc == -ENOENT ? -ESTALE : rc;
}

struct xa_args {
	const char *name;
	void *val;
	const void *cval;
	size_t size;
	int flags;
};

static int xa_get(struct ffs *fs, struct finode *fi, void *arg)
{
	struct xa_args *a = arg;

	return ffs_xattr_get(fs, fi, a->name, a->val, a->size);
}

static int xa_set(struct ffs *fs, struct finode *fi, void *arg)
{
	struct xa_args *a = arg;

	return ffs_xattr_set(fs, fi, a->name, a->cval, a->size, a->flags);
}

static int xa_list(struct ffs *fs, struct finode *fi, void *arg)
{
	struct xa_args *a = arg;

	return ffs_xattr_list(fs, fi, a->val, a->size);
}

static int xa_remove(struct ffs *fs, struct finode *fi, void *arg)
{
	struct xa_args *a = arg;

	return ffs_xattr_remove(fs, fi, a->name);
}

int ffs_getxattr(struct ffs *fs, uint64_t ino, const char *name, void *val, size_t size)
{
	struct xa_args a = { .name = name, .val = val, .size = size };

	return with_inode(fs, ino, false, xa_get, &a);
}

int ffs_setxattr(struct ffs *fs, uint64_t ino, const char *name, const void *val, size_t size,
		 int flags)
{
	struct xa_args a = { .name = name, .cval = val, .size = size, .flags = flags };

	return with_inode(fs, ino, true, xa_set, &a);
}

int ffs_listxattr(struct ffs *fs, uint64_t ino, char *list, size_t size)
{
	struct xa_args a = { .val = list, .size = size };

	return with_inode(fs, ino, false, xa_list, &a);
}

int ffs_removexattr(struct ffs *fs, uint64_t ino, const char *name)
{
	struct xa_args a = { .name = name };

	return with_inode(fs, ino, true, xa_remove, &a);
}

struct ffs_stats *ffs_stats(struct ffs *fs)
{
	return &fs->stats;
}

struct ff_raid *ffs_raid(struct ffs *fs)
{
	return fs->raid;
}
