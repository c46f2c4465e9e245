/* SPDX-License-Identifier: MIT */
/*
 * What every member has, whatever its backend (io/backend.h): opening it
 * and picking the backend from what the path is, the one-writer lock,
 * closing, identity comparison, and the synchronous I/O helpers, which go
 * through the backend.
 */
#include "io/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>


/* The backend for what m->fd is; the O_DIRECT alignment comes from
 * STATX_DIOALIGN when the kernel knows it (6.1+), else from the logical
 * block size. */
static int member_probe(struct ff_member *m, struct ff_err *err)
{
	struct statx stx;
	int rc;

	if (statx(m->fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_DIOALIGN, &stx) < 0) {
		int e = errno;
		ff_err_set(err, "%s: cannot stat: %s", m->path, strerror(e));
		return -e;
	}
	m->st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	m->st_ino = stx.stx_ino;
	m->st_rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
	if (S_ISBLK(stx.stx_mode)) {
		m->backend = &ff_backend_bdev;
	} else if (S_ISREG(stx.stx_mode)) {
		m->backend = ff_file_in_memory(m->fd) ? &ff_backend_ram : &ff_backend_file;
	} else {
		ff_err_set(err, "%s: not a block device or regular file", m->path);
		return -EINVAL;
	}
	rc = m->backend->probe(m, &stx, err);
	if (rc < 0)
		return rc;
	if ((stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align) {
		m->dio_mem_align = stx.stx_dio_mem_align;
		m->dio_off_align = stx.stx_dio_offset_align;
		if (!m->is_bdev)
			m->lbs = FF_MAX(m->lbs, m->dio_off_align);
	} else {
		m->dio_mem_align = m->lbs;
		m->dio_off_align = m->lbs;
	}
	if (!FF_IS_POW2(m->lbs) || m->lbs > FF_BUF_ALIGN || m->dio_mem_align > FF_BUF_ALIGN ||
	    m->dio_off_align > FF_BUF_ALIGN) {
		ff_err_set(err, "%s: unsupported block size %u (dio alignment %u/%u)", m->path, m->lbs,
			   m->dio_mem_align, m->dio_off_align);
		return -EINVAL;
	}
	return 0;
}

/* An inotify descriptor that reports every close of the member's file (or
 * device node), or -1. */
static int watch_closes(const struct ff_member *m)
{
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd >= 0 && inotify_add_watch(fd, m->abs_path, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Sleep until the watched file is closed by someone or deadline_ns passes;
 * drain what inotify reported. */
static void wait_close(int wfd, uint64_t deadline_ns)
{
	uint64_t now = ff_mono_ns();
	struct pollfd p = { .fd = wfd, .events = POLLIN };
	char ev[4096];

	if (now < deadline_ns &&
	    poll(&p, 1, (int)((deadline_ns - now + 999999) / 1000000)) > 0)
		while (read(wfd, ev, sizeof(ev)) > 0)
			;
}

/*
 * A busy lock is most often a framefs that was just unmounted: umount
 * returns before the daemon has written out its last commit and closed its
 * members.  So a busy lock is waited for, up to FF_MEMBER_LOCK_WAIT_MS, and
 * without polling: inotify reports each close of the member (which is when
 * a holder lets go), and each report is one more try.  The wait ends at the
 * holder's close or at the deadline, whichever comes first.  The try right
 * after the watch is set catches a close that came before it.
 */
int ff_member_lock(struct ff_member *m, struct ff_err *err)
{
	int op = (m->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB;
	uint64_t deadline = ff_mono_ns() + FF_MEMBER_LOCK_WAIT_MS * 1000000ull;
	int wfd = -1, e = 0;

	while (flock(m->fd, op) < 0) {
		e = errno;
		if (e != EWOULDBLOCK)
			break;
		if (wfd < 0) {
			wfd = watch_closes(m);
			if (wfd < 0)
				break; /* cannot watch: answer busy now rather than poll */
			ff_log(FF_LOG_INFO, "%s: in use by another process (a framefs just unmounted "
			       "may still be writing out), waiting up to %u ms", m->path,
			       FF_MEMBER_LOCK_WAIT_MS);
			continue;
		}
		if (ff_mono_ns() >= deadline)
			break;
		wait_close(wfd, deadline);
		e = 0;
	}
	if (wfd >= 0)
		close(wfd);
	if (e == 0)
		return 0;
	if (e != EWOULDBLOCK) {
		ff_err_set(err, "%s: cannot lock: %s", m->path, strerror(e));
		return -e;
	}
	ff_err_set(err, "%s: in use by another process (a mounted framefs, mkfs or fsck)", m->path);
	return -EBUSY;
}

int ff_member_open(struct ff_member *m, const char *path, bool read_only, struct ff_err *err)
{
	int flags = (read_only ? O_RDONLY : O_RDWR) | O_DIRECT | O_CLOEXEC;
	int rc;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (strlen(path) >= sizeof(m->path)) {
		ff_err_set(err, "%.64s...: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(m->path, path);
	if (path[0] == '/' || !getcwd(m->abs_path, sizeof(m->abs_path)) ||
	    strlen(m->abs_path) + 1 + strlen(path) >= sizeof(m->abs_path))
		strcpy(m->abs_path, path);
	else
		strcat(strcat(m->abs_path, "/"), path);
	m->read_only = read_only;
	m->fd = open(path, flags);
	if (m->fd < 0) {
		int e = errno;
		struct stat st;

		if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
			ff_err_set(err, "%s: is %s, not a block device or a file; give the device or "
				   "file that holds the member", path,
				   S_ISDIR(st.st_mode) ? "a directory" : "a special file");
			return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		}
		if (e == EINVAL)
			ff_err_set(err, "%s: cannot open with O_DIRECT (filesystem does not support it)",
				   path);
		else
			ff_err_set(err, "%s: cannot open: %s", path, strerror(e));
		return -e;
	}
	rc = member_probe(m, err);
	if (rc < 0) {
		ff_member_close(m);
		return rc;
	}
	return 0;
}

void ff_member_close(struct ff_member *m)
{
	if (m->fd >= 0) { /* what the backend keeps goes with the fd: a struct whose fd moved on
			   * keeps nothing of it */
		const struct ff_backend *b = ff_member_backend(m);

		if (b && b->close)
			b->close(m);
		/* The lock belongs to the open file, which an io_uring ring that had
		 * the fd registered (or a dup of it) may hold for a while after the
		 * close, even after the process has exited: the ring's teardown runs
		 * later in a kernel worker.  The next mkfs, fsck or daemon would
		 * then wait for it.  Unlock explicitly; a no-op when not locked. */
		flock(m->fd, LOCK_UN);
		close(m->fd);
	}
	m->fd = -1;
}

enum ff_member_presence ff_member_presence(const struct ff_member *m, char *why, size_t len)
{
	why[0] = '\0';
	if (m->fd < 0)
		return FF_MEMBER_PRESENT;
	return ff_member_backend(m)->presence(m, why, len);
}

bool ff_member_same(const struct ff_member *m, const struct ff_member *other)
{
	if (m->is_bdev && other->is_bdev)
		return m->st_rdev == other->st_rdev;
	return m->st_dev == other->st_dev && m->st_ino == other->st_ino;
}

const char *ff_member_describe(const struct ff_member *m, char *buf, size_t len)
{
	return ff_member_backend(m)->describe(m, buf, len);
}

int ff_member_pread(struct ff_member *m, void *buf, size_t len, uint64_t off)
{
	FF_ASSERT(((uintptr_t)buf % m->dio_mem_align) == 0);
	return ff_member_backend(m)->pread(m, buf, len, off);
}

int ff_member_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off)
{
	FF_ASSERT(((uintptr_t)buf % m->dio_mem_align) == 0);
	if (m->read_only)
		return -EROFS;
	return ff_member_backend(m)->pwrite(m, buf, len, off);
}

int ff_member_flush(struct ff_member *m)
{
	return ff_member_backend(m)->flush(m);
}

/* ---- the plain-fd I/O the bdev, file and ram backends share ----------------- */

int ff_fd_pread(struct ff_member *m, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(m->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* beyond the end: the member shrank or the request is wrong */
		done += (size_t)n;
	}
	return 0;
}

int ff_fd_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(m->fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		done += (size_t)n;
	}
	return 0;
}

int ff_fd_flush(struct ff_member *m)
{
	return fdatasync(m->fd) < 0 ? -errno : 0;
}
