/* SPDX-License-Identifier: MIT */
/*
 * The block-device backend: size and logical block size from ioctls, the
 * disk's identity (diskseq, loop state, NVMe identify), and presence from
 * sysfs and the device's capacity: a removed disk, a detached loop device,
 * a node that moved.
 */
#include "io/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
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

static int bdev_probe(struct ff_member *m, const struct statx *stx, struct ff_err *err)
{
	uint64_t bytes = 0;
	int lbs = 0;

	m->is_bdev = true;
	if (ioctl(m->fd, BLKGETSIZE64, &bytes) < 0 || ioctl(m->fd, BLKSSZGET, &lbs) < 0) {
		int e = errno;
		ff_err_set(err, "%s: cannot read device size: %s", m->path, strerror(e));
		return -e;
	}
	(void)stx;
	m->size_bytes = bytes;
	m->lbs = (uint32_t)lbs;
	bdev_identity(m);
	ff_nvme_identify(m);
	return 0;
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
	uint64_t seq, bytes = 0;
	struct stat st;
	int n;

	snprintf(sys, sizeof(sys), SYS_BLOCK_FMT, maj, min);
	if (access(sys, F_OK) < 0 && errno == ENOENT) {
		snprintf(why, len, "vanished: the device was removed (%s is gone)", sys);
		return FF_MEMBER_VANISHED;
	}
	/* A removed disk (an NVMe drive pulled, its controller gone) has its
	 * capacity set to 0 by the kernel before its sysfs entry goes: from
	 * then on every write to it fails with ENOSPC and every read ends at
	 * once, which alone would read as a full or short device. */
	if (ioctl(m->fd, BLKGETSIZE64, &bytes) == 0 && bytes < m->size_bytes) {
		if (bytes == 0)
			snprintf(why, len, "vanished: the device was removed (the kernel set its "
				 "capacity to 0)");
		else
			snprintf(why, len, "vanished: the device shrank to %llu bytes, below the "
				 "member's %llu", (unsigned long long)bytes,
				 (unsigned long long)m->size_bytes);
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

static const char *bdev_describe(const struct ff_member *m, char *buf, size_t len)
{
	if (m->nvme.is_nvme)
		snprintf(buf, len, "%s S/N %s FW %s nsid %u LBA %u", m->nvme.model, m->nvme.serial,
			 m->nvme.firmware, m->nvme.nsid, m->nvme.lba_bytes);
	else
		snprintf(buf, len, "not NVMe (block device)");
	return buf;
}

/* The kernel turns BLKDISCARD into the device's deallocate (NVMe Dataset
 * Management, ATA TRIM, a loop device's hole in its backing file), split
 * to the queue's discard_max_bytes; a device without one fails it with
 * EOPNOTSUPP. */
static int bdev_discard(struct ff_member *m, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };

	return ioctl(m->fd, BLKDISCARD, range) < 0 ? -errno : 0;
}

const struct ff_backend ff_backend_bdev = {
	.name = "bdev",
	.probe = bdev_probe,
	.presence = bdev_presence,
	.describe = bdev_describe,
	.pread = ff_fd_pread,
	.pwrite = ff_fd_pwrite,
	.flush = ff_fd_flush,
	.discard = bdev_discard,
	.prep = ff_uring_prep,
};
