/* SPDX-License-Identifier: MIT */
/*
 * A deliberately slow filesystem for the frametest integration tests: a FUSE
 * passthrough to a backing directory that sleeps DELAY_MS in every read and
 * write request.  Mounted with -s (one daemon thread) the requests queue
 * behind each other, which gives the directory a fixed capacity in frames
 * per second; without -s each request is slow but they overlap.
 *
 *   ft-slowfs [--no-direct] [--log=FILE] BACKING_DIR DELAY_MS MOUNTPOINT [fuse options]
 *
 * Every file is opened direct_io so that reads reach the daemon (and its
 * delay) instead of the page cache.  --no-direct refuses O_DIRECT opens with
 * EINVAL, as filesystems without direct I/O do.  --log=FILE appends a line
 * "read|write PATH SIZE OFFSET" per request, so that a test can see how the
 * I/O calls of a program reach a FUSE filesystem.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static int backfd = -1;
static long delay_ms;
static int refuse_direct;
static int logfd = -1;

static const char *rel(const char *path)
{
	return path[1] ? path + 1 : ".";
}

static void slow_down(void)
{
	struct timespec ts = { delay_ms / 1000, (delay_ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* One write(2) per line on an O_APPEND file: lines of concurrent requests do not mix. */
static void log_request(const char *op, const char *path, size_t size, off_t off)
{
	char line[4200];
	int n;

	if (logfd < 0)
		return;
	n = snprintf(line, sizeof(line), "%s %s %zu %lld\n", op, path, size, (long long)off);
	if (n > 0 && (size_t)n < sizeof(line) && write(logfd, line, (size_t)n) != n)
		fprintf(stderr, "ft-slowfs: a log line was lost\n");
}

static int sfs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	int rc = fi ? fstat((int)fi->fh, st) : fstatat(backfd, rel(path), st, AT_SYMLINK_NOFOLLOW);

	return rc ? -errno : 0;
}

static int sfs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int fd = openat(backfd, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((e = readdir(d)) != NULL)
		if (fill(buf, e->d_name, NULL, 0, 0))
			break;
	closedir(d);
	return 0;
}

static int sfs_mkdir(const char *path, mode_t mode)
{
	return mkdirat(backfd, rel(path), mode) ? -errno : 0;
}

static int sfs_rmdir(const char *path)
{
	return unlinkat(backfd, rel(path), AT_REMOVEDIR) ? -errno : 0;
}

static int sfs_unlink(const char *path)
{
	return unlinkat(backfd, rel(path), 0) ? -errno : 0;
}

static int sfs_rename(const char *from, const char *to, unsigned int flags)
{
	if (flags)
		return -EINVAL;
	return renameat(backfd, rel(from), backfd, rel(to)) ? -errno : 0;
}

static int sfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	int fd = fi ? (int)fi->fh : openat(backfd, rel(path), O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = ftruncate(fd, size) ? -errno : 0;
	if (!fi)
		close(fd);
	return rc;
}

static int sfs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
	int rc = fi ? futimens((int)fi->fh, tv) : utimensat(backfd, rel(path), tv, 0);

	return rc ? -errno : 0;
}

/* The backing file is opened without O_DIRECT: FUSE's buffers are not aligned for it. */
static int open_backing(const char *path, struct fuse_file_info *fi, int extra, mode_t mode)
{
	int fd;

	if (refuse_direct && (fi->flags & O_DIRECT))
		return -EINVAL;
	fd = openat(backfd, rel(path), (fi->flags & ~O_DIRECT) | extra | O_CLOEXEC, mode);

	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->direct_io = 1;
	return 0;
}

static int sfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return open_backing(path, fi, O_CREAT, mode);
}

static int sfs_open(const char *path, struct fuse_file_info *fi)
{
	return open_backing(path, fi, 0, 0);
}

static int sfs_read(const char *path, char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	ssize_t n = pread((int)fi->fh, buf, size, off);

	log_request("read", path, size, off);
	slow_down();
	return n < 0 ? -errno : (int)n;
}

static int sfs_write(const char *path, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	ssize_t n = pwrite((int)fi->fh, buf, size, off);

	log_request("write", path, size, off);
	slow_down();
	return n < 0 ? -errno : (int)n;
}

static int sfs_release(const char *path, struct fuse_file_info *fi)
{
	close((int)fi->fh);
	return 0;
}

static int sfs_statfs(const char *path, struct statvfs *sv)
{
	return fstatvfs(backfd, sv) ? -errno : 0;
}

static const struct fuse_operations sfs_ops = {
	.getattr = sfs_getattr,
	.readdir = sfs_readdir,
	.mkdir = sfs_mkdir,
	.rmdir = sfs_rmdir,
	.unlink = sfs_unlink,
	.rename = sfs_rename,
	.truncate = sfs_truncate,
	.utimens = sfs_utimens,
	.create = sfs_create,
	.open = sfs_open,
	.read = sfs_read,
	.write = sfs_write,
	.release = sfs_release,
	.statfs = sfs_statfs,
};

int main(int argc, char **argv)
{
	char *end;

	while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
		if (strcmp(argv[1], "--no-direct") == 0) {
			refuse_direct = 1;
		} else if (strncmp(argv[1], "--log=", 6) == 0) {
			logfd = open(argv[1] + 6, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (logfd < 0) {
				fprintf(stderr, "%s: cannot open %s: %s\n", argv[0], argv[1] + 6,
					strerror(errno));
				return 2;
			}
		} else {
			break;
		}
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	if (argc < 4) {
		fprintf(stderr, "usage: %s [--no-direct] [--log=FILE] BACKING_DIR DELAY_MS MOUNTPOINT "
			"[fuse options]\n", argv[0]);
		return 2;
	}
	backfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	delay_ms = strtol(argv[2], &end, 10);
	if (backfd < 0 || *end || delay_ms < 0 || delay_ms > 60000) {
		fprintf(stderr, "%s: bad backing directory or delay\n", argv[0]);
		return 2;
	}
	/* fuse_main sees: prog MOUNTPOINT [options]. */
	argv[2] = argv[0];
	return fuse_main(argc - 2, argv + 2, &sfs_ops, NULL);
}
