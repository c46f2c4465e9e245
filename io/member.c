/* SPDX-License-Identifier: MIT */
#include "io/member.h"
#include "io/fault.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define SYS_BLOCK_FMT "/sys/dev/block/%u:%u"

/* A small sysfs attribute, its trailing newline dropped: length or -errno. */
static int sys_read(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sys_read(char *buf, size_t len, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	ssize_t n;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	close(fd);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return (int)n;
}

/* What identifies the disk behind a block device: its diskseq (counts up
 * for every disk the kernel creates, loop attaches included), and for a
 * loop device whether it is attached and set to detach on last close. */
static void bdev_identity(struct ff_member *m)
{
	unsigned maj = major(m->st_rdev), min = minor(m->st_rdev);
	uint64_t seq = 0;
	char v[32];

#ifdef BLKGETDISKSEQ
	if (ioctl(m->fd, BLKGETDISKSEQ, &seq) < 0)
		seq = 0;
#endif
	m->diskseq = seq;
	m->is_loop = sys_read(v, sizeof(v), SYS_BLOCK_FMT "/loop/autoclear", maj, min) > 0;
	m->loop_autoclear = m->is_loop && v[0] == '1';
}

/* Block devices answer the size and block-size ioctls; files answer statx.
 * Either way the O_DIRECT alignment comes from STATX_DIOALIGN when the
 * kernel knows it (6.1+), else from the logical block size. */
static int member_probe(struct ff_member *m, struct ff_err *err)
{
	struct statx stx;

	if (statx(m->fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_DIOALIGN, &stx) < 0) {
		int e = errno;
		ff_err_set(err, "%s: cannot stat: %s", m->path, strerror(e));
		return -e;
	}
	m->st_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	m->st_ino = stx.stx_ino;
	m->st_rdev = makedev(stx.stx_rdev_major, stx.stx_rdev_minor);
	if (S_ISBLK(stx.stx_mode)) {
		uint64_t bytes = 0;
		int lbs = 0;

		m->is_bdev = true;
		if (ioctl(m->fd, BLKGETSIZE64, &bytes) < 0 || ioctl(m->fd, BLKSSZGET, &lbs) < 0) {
			int e = errno;
			ff_err_set(err, "%s: cannot read device size: %s", m->path, strerror(e));
			return -e;
		}
		m->size_bytes = bytes;
		m->lbs = (uint32_t)lbs;
		bdev_identity(m);
	} else if (S_ISREG(stx.stx_mode)) {
		struct statfs sf;

		m->is_bdev = false;
		m->size_bytes = stx.stx_size;
		m->lbs = 512;
		m->in_memory = fstatfs(m->fd, &sf) == 0 &&
			       (sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC);
		m->sync_io = m->in_memory;
	} else {
		ff_err_set(err, "%s: not a block device or regular file", m->path);
		return -EINVAL;
	}
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

/* A daemon that was just unmounted still writes its checkpoint for a moment
 * after fusermount returns, so a busy lock is waited for a while. */
int ff_member_lock(struct ff_member *m, struct ff_err *err)
{
	int op = (m->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB;

	for (unsigned waited = 0;; waited += 50) {
		if (flock(m->fd, op) == 0)
			return 0;
		if (errno != EWOULDBLOCK) {
			int e = errno;
			ff_err_set(err, "%s: cannot lock: %s", m->path, strerror(e));
			return -e;
		}
		if (waited >= FF_MEMBER_LOCK_WAIT_MS) {
			ff_err_set(err, "%s: in use by another process (a mounted framefs, mkfs or fsck)",
				   m->path);
			return -EBUSY;
		}
		if (waited == 0)
			ff_log(FF_LOG_INFO, "%s: in use by another process (a framefs just unmounted "
			       "may still be writing out), waiting up to %u ms", m->path,
			       FF_MEMBER_LOCK_WAIT_MS);
		usleep(50 * 1000);
	}
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
	ff_nvme_identify(m);
	rc = ff_undo_open(m);
	if (rc < 0) {
		ff_err_set(err, "%s: cannot open its undo log in FRAMEFS_UNDO_DIR: %s", path,
			   strerror(-rc));
		ff_member_close(m);
		return rc;
	}
	return 0;
}

void ff_member_close(struct ff_member *m)
{
	if (m->fd >= 0) { /* the undo log goes with the fd: a struct whose fd moved on keeps neither */
		ff_undo_close(m);
		/* The lock belongs to the open file, which an io_uring ring that had
		 * the fd registered (or a dup of it) may hold for a while after the
		 * close, even after the process has exited: the ring's teardown runs
		 * later in a kernel worker.  The next mkfs, fsck or daemon would
		 * then wait for it.  Unlock explicitly; a no-op when not locked. */
		flock(m->fd, LOCK_UN);
		close(m->fd);
	}
	m->fd = -1;
	m->undo = NULL;
}

/* The disk's diskseq as sysfs has it now (a partition: its disk's), 0 when unknown. */
static uint64_t sys_diskseq(unsigned maj, unsigned min)
{
	char v[32];

	if (sys_read(v, sizeof(v), SYS_BLOCK_FMT "/diskseq", maj, min) <= 0 &&
	    sys_read(v, sizeof(v), SYS_BLOCK_FMT "/../diskseq", maj, min) <= 0)
		return 0;
	return strtoull(v, NULL, 10);
}

static enum ff_member_presence bdev_presence(const struct ff_member *m, char *why, size_t len)
{
	unsigned maj = major(m->st_rdev), min = minor(m->st_rdev);
	char sys[64], v[PATH_MAX];
	uint64_t seq;
	struct stat st;
	int n;

	snprintf(sys, sizeof(sys), SYS_BLOCK_FMT, maj, min);
	if (access(sys, F_OK) < 0 && errno == ENOENT) {
		snprintf(why, len, "vanished: the device was removed (%s is gone)", sys);
		return FF_MEMBER_VANISHED;
	}
	seq = m->diskseq ? sys_diskseq(maj, min) : 0;
	if (seq && seq != m->diskseq) {
		snprintf(why, len, "vanished: the device was removed (%u:%u is now another disk, "
			 "diskseq %llu, not %llu)", maj, min, (unsigned long long)seq,
			 (unsigned long long)m->diskseq);
		return FF_MEMBER_VANISHED;
	}
	if (m->is_loop) {
		n = sys_read(v, sizeof(v), "%s/loop/backing_file", sys);
		if (n == -ENOENT) {
			snprintf(why, len, "vanished: the loop device was detached");
			return FF_MEMBER_VANISHED;
		}
		if (n > 10 && strcmp(v + n - 10, " (deleted)") == 0) {
			v[n - 10] = '\0';
			snprintf(why, len, "vanished: the loop device's backing file %s was unlinked", v);
			return FF_MEMBER_VANISHED;
		}
	}
	if (stat(m->abs_path, &st) < 0) {
		if (errno != ENOENT && errno != ENOTDIR)
			return FF_MEMBER_PRESENT; /* cannot tell (EACCES, ...): the I/O path will */
		snprintf(why, len, "vanished: the device node %s is gone", m->path);
		return FF_MEMBER_VANISHING;
	}
	if (!S_ISBLK(st.st_mode)) {
		snprintf(why, len, "vanished: %s is no longer a block device", m->path);
		return FF_MEMBER_VANISHING;
	}
	if (st.st_rdev != m->st_rdev) {
		snprintf(why, len, "vanished: %s now names another device (%u:%u, not %u:%u)", m->path,
			 major(st.st_rdev), minor(st.st_rdev), maj, min);
		return FF_MEMBER_VANISHING;
	}
	if (m->is_loop && !m->loop_autoclear &&
	    sys_read(v, sizeof(v), "%s/loop/autoclear", sys) > 0 && v[0] == '1') {
		n = sys_read(v, sizeof(v), "%s/loop/backing_file", sys);
		snprintf(why, len, "loop device detached (losetup -d) while in use: the kernel lets it "
			 "go when the array closes it; its data stays in %s, attach that again "
			 "before the next mount", n > 0 ? v : "its backing file");
		return FF_MEMBER_MOVED;
	}
	return FF_MEMBER_PRESENT;
}

enum ff_member_presence ff_member_presence(const struct ff_member *m, char *why, size_t len)
{
	struct stat fst, st;
	int prc;

	why[0] = '\0';
	if (m->fd < 0 || fstat(m->fd, &fst) < 0)
		return FF_MEMBER_PRESENT;
	if (m->is_bdev)
		return bdev_presence(m, why, len);
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

bool ff_member_same(const struct ff_member *m, const struct ff_member *other)
{
	if (m->is_bdev && other->is_bdev)
		return m->st_rdev == other->st_rdev;
	return m->st_dev == other->st_dev && m->st_ino == other->st_ino;
}

const char *ff_member_describe(const struct ff_member *m, char *buf, size_t len)
{
	if (m->nvme.is_nvme)
		snprintf(buf, len, "%s S/N %s FW %s nsid %u LBA %u", m->nvme.model, m->nvme.serial,
			 m->nvme.firmware, m->nvme.nsid, m->nvme.lba_bytes);
	else
		snprintf(buf, len, "not NVMe (%s)", m->is_bdev ? "block device" : "file");
	return buf;
}

int ff_member_pread(struct ff_member *m, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	FF_ASSERT(((uintptr_t)buf % m->dio_mem_align) == 0);
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

int ff_member_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	FF_ASSERT(((uintptr_t)buf % m->dio_mem_align) == 0);
	if (m->read_only)
		return -EROFS;
	ff_undo_write(m, off, len);
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

int ff_member_flush(struct ff_member *m)
{
	uint64_t seq = ff_undo_seq(m);

	if (fdatasync(m->fd) < 0)
		return -errno;
	ff_undo_flushed(m, seq);
	return 0;
}
