/* SPDX-License-Identifier: MIT */
/*
 * The daemon's control socket: its path under /run/framefs (one per
 * mountpoint), the listening thread, and one request per connection.
 *
 * One request per connection, served by one thread in turn: every request
 * is short (a superblock write at most), and a client that stalls is cut
 * off by socket timeouts, so one thread is enough and requests never race
 * each other on the array's member list.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fs/daemon/ctl_i.h"

#define CTL_IO_TIMEOUT_S 5

/* ---- the socket's name --------------------------------------------------- */

static bool plain_byte(unsigned char c)
{
	return isalnum(c) || c == '.' || c == '-';
}

int ffs_ctl_sock_path(const char *mnt_real, char *buf, size_t len)
{
	char name[PATH_MAX * 3 + 8];
	size_t n = 0;
	const char *p = mnt_real;
	int w;

	while (*p == '/')
		p++;
	if (!*p)
		name[n++] = '_';
	for (; *p && n + 4 < sizeof(name); p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '/')
			name[n++] = '_';
		else if (plain_byte(c))
			name[n++] = (char)c;
		else
			n += (size_t)snprintf(name + n, sizeof(name) - n, "%%%02x", c);
	}
	name[n] = '\0';
	w = snprintf(buf, len, "%s/%s.sock", FFS_CTL_DIR, name);
	if (w < 0 || (size_t)w >= len || (size_t)w >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */

		for (p = mnt_real; *p; p++)
			h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
		w = snprintf(buf, len, "%s/h-%016llx.sock", FFS_CTL_DIR, (unsigned long long)h);
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
	}
	return 0;
}

/* ---- the socket ------------------------------------------------------------------------ */

static bool peer_is_root(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == 0;
}

/* Read one line (up to '\n' or EOF); -errno on timeout or error. */
static int read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len) {
		ssize_t k = read(fd, buf + n, len - 1 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
		if (memchr(buf + n - (size_t)k, '\n', (size_t)k))
			break;
	}
	buf[n] = '\0';
	if (!strchr(buf, '\n') && n + 1 >= len)
		return -E2BIG;
	return 0;
}

static void write_all(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t k = send(fd, s, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		len -= (size_t)k;
	}
}

static void serve_one(struct ffs_ctl *c, int fd)
{
	struct timeval tv = { .tv_sec = CTL_IO_TIMEOUT_S };
	char *line = malloc(FFS_CTL_LINE_MAX + 2), *reply = NULL;
	int rc;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!line)
		return;
	/* read the request even from a peer that is refused: closing a Unix
	 * socket with unread data resets it, and the answer would be lost */
	rc = read_line(fd, line, FFS_CTL_LINE_MAX + 2);
	if (!peer_is_root(fd)) {
		static const char deny[] = "{\"ok\":false,\"error\":\"permission denied: the framefs "
					   "control socket serves root only\",\"errno\":1}\n";

		write_all(fd, deny, sizeof(deny) - 1);
		free(line);
		return;
	}
	if (rc < 0) {
		json_object *o;

		ctl_reply_error(&o, rc, "cannot read the request: %s", strerror(-rc));
		reply = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else {
		ffs_ctl_exec(c, line, &reply);
	}
	if (reply) {
		write_all(fd, reply, strlen(reply));
		write_all(fd, "\n", 1);
	}
	free(reply);
	free(line);
}

static void *ctl_main(void *arg)
{
	struct ffs_ctl *c = arg;

	for (;;) {
		struct pollfd p[2] = { { .fd = c->lfd, .events = POLLIN },
				       { .fd = c->stop_pipe[0], .events = POLLIN } };
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			ff_log(FF_LOG_ERR, "control socket: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(c, fd);
		close(fd);
	}
	return NULL;
}

/* /run/framefs: ours (uid), a directory, no access for anyone else. */
static int ctl_dir(void)
{
	struct stat st;

	if (mkdir(FFS_CTL_DIR, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(FFS_CTL_DIR, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	if ((st.st_mode & 077) && chmod(FFS_CTL_DIR, 0700) < 0)
		return -errno;
	return 0;
}

/* A socket file left at path: another live daemon's (stacked mount) or stale. */
static void clear_old_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		ff_log(FF_LOG_WARN, "control socket %s belongs to another running daemon (a mount "
		       "under this one?); this mount takes it over", path);
	if (fd >= 0)
		close(fd);
	unlink(path);
}

static int ctl_listen(struct ffs_ctl *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int rc = ctl_dir();

	if (rc < 0)
		return rc;
	if (lstat(c->sock_path, &st) == 0)
		clear_old_socket(c->sock_path);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock_path);
	/* the directory is 0700, so the moment before chmod exposes nothing */
	if (bind(c->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(c->sock_path, 0600) < 0 ||
	    listen(c->lfd, 16) < 0 || stat(c->sock_path, &st) < 0)
		return -errno;
	c->sock_dev = st.st_dev;
	c->sock_ino = st.st_ino;
	if (pipe2(c->stop_pipe, O_CLOEXEC) < 0)
		return -errno;
	rc = -pthread_create(&c->thread, NULL, ctl_main, c);
	c->thread_started = rc == 0;
	return rc;
}

static void ctl_close(struct ffs_ctl *c)
{
	struct stat st;

	if (c->thread_started) {
		if (write(c->stop_pipe[1], "x", 1) < 0)
			ff_log(FF_LOG_ERR, "control socket: cannot stop its thread");
		pthread_join(c->thread, NULL);
		c->thread_started = false;
	}
	if (c->lfd >= 0) {
		/* unlink only our own socket: a later mount may have replaced it */
		if (stat(c->sock_path, &st) == 0 && st.st_dev == c->sock_dev && st.st_ino == c->sock_ino)
			unlink(c->sock_path);
		close(c->lfd);
		c->lfd = -1;
	}
	for (unsigned i = 0; i < 2; i++)
		if (c->stop_pipe[i] >= 0)
			close(c->stop_pipe[i]);
	c->stop_pipe[0] = c->stop_pipe[1] = -1;
}

struct ffs_ctl *ffs_ctl_start(struct ffs *fs, const char *mnt_real,
			      json_object *(*fuse_json)(void))
{
	struct ffs_ctl *c;
	int rc;

	if (!fs || !mnt_real) {
		ff_log(FF_LOG_WARN, "no control socket: the mountpoint's real path is unknown");
		return NULL;
	}
	c = ffs_ctl_new(fs, NULL, "daemon");
	if (!c)
		return NULL;
	c->mountpoint = strdup(mnt_real);
	c->fuse_json = fuse_json;
	rc = c->mountpoint ? ffs_ctl_sock_path(mnt_real, c->sock_path, sizeof(c->sock_path))
			   : -ENOMEM;
	if (rc == 0)
		rc = ctl_listen(c);
	/* io/member.h: a second user is told at once; after the socket, which
	 * framefs-admin may look for as soon as the mount is there */
	if (ff_member_note_mounted(mnt_real) < 0)
		ff_log(FF_LOG_WARN, "%s: no framefs mount found there to note on the members", mnt_real);
	if (rc < 0) {
		ff_log(FF_LOG_WARN, "no control socket for %s (%s): framefs-admin can reach this "
		       "volume only when it is unmounted", mnt_real, strerror(-rc));
		ctl_close(c);
		ffs_ctl_free(c);
		return NULL;
	}
	ff_log(FF_LOG_DEBUG, "control socket %s", c->sock_path); /* mount(8) stays quiet */
	return c;
}

void ffs_ctl_stop(struct ffs_ctl *c)
{
	if (!c)
		return;
	ctl_close(c);
	ffs_ctl_free(c);
}
