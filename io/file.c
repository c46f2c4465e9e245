/* SPDX-License-Identifier: MIT */
/*
 * The file backends: a regular file on a disk filesystem, and a regular
 * file in RAM (tmpfs or ramfs), whose requests rings run on their own
 * thread (sync_io: there is no device to wait for, and io_uring would hand
 * each buffered write to a worker thread anyway).  A file's presence is
 * its link count and what its path names now.
 *
 * Neither deallocates (no discard op: ff_member_discard is -EOPNOTSUPP).
 * Punching holes (FALLOC_FL_PUNCH_HOLE) would give a file member's blocks
 * back to the host filesystem, which may then hand them to someone else:
 * the member, allocated in full when it was made, would later need new
 * blocks in the middle of a capture and could meet ENOSPC there.  An SSD
 * under the host filesystem learns of freed blocks from that filesystem
 * (fstrim, -o discard), not from us.
 */
#include "io/backend.h"

#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

static int file_probe(struct ff_member *m, const struct statx *stx, struct ff_err *err)
{
	(void)err;
	m->is_bdev = false;
	m->size_bytes = stx->stx_size;
	m->lbs = 512;
	m->in_memory = m->backend == &ff_backend_ram;
	m->sync_io = m->in_memory;
	return 0;
}

/* A file in tmpfs or ramfs: every write is a CPU copy into RAM. */
bool ff_file_in_memory(int fd)
{
	struct statfs sf;

	return fstatfs(fd, &sf) == 0 && (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
}

static enum ff_member_presence file_presence(const struct ff_member *m, char *why, size_t len)
{
	struct stat fst, st;
	int prc;

	if (fstat(m->fd, &fst) < 0)
		return FF_MEMBER_PRESENT; /* left to the I/O path */
	prc = stat(m->abs_path, &st);
	if (prc < 0 && errno != ENOENT && errno != ENOTDIR)
		return FF_MEMBER_PRESENT; /* cannot tell */
	if (fst.st_nlink == 0) {
		if (prc == 0)
			snprintf(why, len, "vanished: replaced by another file at its path (the "
				 "member's file was unlinked)");
		else
			snprintf(why, len, "vanished: the file was unlinked");
		return FF_MEMBER_VANISHED;
	}
	if (prc < 0) {
		snprintf(why, len, "the file is no longer at %s (renamed or moved: it still holds the "
			 "member); the next mount must name its new path", m->path);
		return FF_MEMBER_MOVED;
	}
	if (st.st_dev != fst.st_dev || st.st_ino != fst.st_ino) {
		snprintf(why, len, "%s now names another file (the member's file lives on under "
			 "another name); the next mount must name that one", m->path);
		return FF_MEMBER_MOVED;
	}
	return FF_MEMBER_PRESENT;
}

static const char *file_describe(const struct ff_member *m, char *buf, size_t len)
{
	snprintf(buf, len, "not NVMe (file)");
	return buf;
}

const struct ff_backend ff_backend_file = {
	.name = "file",
	.probe = file_probe,
	.presence = file_presence,
	.describe = file_describe,
	.pread = ff_fd_pread,
	.pwrite = ff_fd_pwrite,
	.flush = ff_fd_flush,
	.prep = ff_uring_prep,
};

const struct ff_backend ff_backend_ram = {
	.name = "ram",
	.probe = file_probe,
	.presence = file_presence,
	.describe = file_describe,
	.pread = ff_fd_pread,
	.pwrite = ff_fd_pwrite,
	.flush = ff_fd_flush,
	.prep = ff_uring_prep,
};
