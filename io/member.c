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
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
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

/*
 * A busy member is waited for in a blocking flock(2): the kernel grants it
 * the moment the holder's lock goes, whichever way it goes (the holder's
 * unlock, its close, or the kernel's release of a dead process's open
 * file).  Nothing else reports that moment: inotify's report of a close
 * comes before the kernel drops the closed file's locks (__fput), so a
 * waiter it wakes can find the lock still held, and no report follows.
 * CI's xattr-crash waited out 60 s so after a kill -9.
 *
 * A timer of the waiting thread bounds the sleep: its signal, whose
 * handler does nothing, ends the flock with EINTR at the deadline.  It
 * fires again every LOCK_TICK_MS after that, so a signal that lands before
 * the thread is inside flock (the handler runs, the flock then sleeps)
 * delays the end by one tick, never for good.
 */
#define LOCK_TICK_MS 10

static void lock_alarm(int sig)
{
	(void)sig; /* its only work is to interrupt the flock */
}

static int lock_signal;

static void lock_signal_install(void)
{
	struct sigaction sa = { .sa_handler = lock_alarm }; /* no SA_RESTART: flock returns */

	lock_signal = SIGRTMIN + 3;
	sigemptyset(&sa.sa_mask);
	sigaction(lock_signal, &sa, NULL);
}

/* Take the flock op (without LOCK_NB) on fd, sleeping until it is granted
 * or deadline_ns: 0, EINTR (the deadline, or another signal), or the errno
 * of a timer that cannot be set up (then no wait happened). */
static int flock_until(int fd, int op, uint64_t deadline_ns)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID };
	struct itimerspec its = { .it_interval = { 0, LOCK_TICK_MS * 1000000L } };
	uint64_t now = ff_mono_ns(), left = deadline_ns > now ? deadline_ns - now : 1;
	sigset_t set, old;
	timer_t timer;
	int e;

	pthread_once(&once, lock_signal_install);
	sev.sigev_signo = lock_signal;
	sev._sigev_un._tid = gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) < 0)
		return errno;
	its.it_value.tv_sec = (time_t)(left / 1000000000u);
	its.it_value.tv_nsec = (long)(left % 1000000000u);
	sigemptyset(&set);
	sigaddset(&set, lock_signal);
	pthread_sigmask(SIG_UNBLOCK, &set, &old);
	if (timer_settime(timer, 0, &its, NULL) < 0)
		e = errno;
	else
		e = flock(fd, op & ~LOCK_NB) == 0 ? 0 : errno;
	timer_delete(timer); /* takes a signal still pending with it */
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

/* ---- who holds a busy member: the mounted daemon's notes -------------------- */

/*
 * A daemon whose volume is mounted leaves two notes on every member it has
 * locked: OFD read locks on one byte each, far beyond the end of any member
 * (no I/O goes there, no other lock is taken there), at NOTE_PID + its pid
 * and at NOTE_DEV + the device number of its FUSE mount.  A lock waiter
 * reads them back with F_OFD_GETLK.  They are kernel state of the holder's
 * open file, like the flock itself: they go with it, a crash leaves none
 * behind, and no file needs writing or cleaning up.
 */
#define NOTE_PID (1ll << 62)
#define NOTE_SPAN (1ll << 32) /* pids are < 2^22; (major << 20 | minor) < 2^32 */
#define NOTE_DEV (NOTE_PID + NOTE_SPAN)
_Static_assert(NOTE_DEV + NOTE_SPAN > NOTE_DEV && NOTE_DEV + NOTE_SPAN < INT64_MAX,
	       "note ranges fit an off_t");

/* Members this process has locked: the notes go on them when it mounts.
 * A process holds one array's members and spares; one beyond this many is
 * locked all the same, without notes (a second user then waits, as for an
 * exiting daemon). */
#define LOCKED_MAX 256
static pthread_mutex_t locked_lock = PTHREAD_MUTEX_INITIALIZER;
static int locked_fd[LOCKED_MAX];
static unsigned nlocked;
static uint64_t mounted_dev_note; /* locked_lock; 0 = not mounted */

static int note_set(int fd, int64_t at, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = at, .l_len = 1 };

	return fcntl(fd, F_OFD_SETLK, &fl) < 0 ? -errno : 0;
}

/* The first note another open file holds in [base, base + NOTE_SPAN), or -1. */
static int64_t note_get(int fd, int64_t base)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = base,
			    .l_len = NOTE_SPAN };

	if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK || fl.l_start < base ||
	    fl.l_start >= base + NOTE_SPAN)
		return -1;
	return fl.l_start - base;
}

static void notes_put(int fd, uint64_t dev_note)
{
	/* read locks: a read-only member (mounted -o ro) holds them too */
	int rc = note_set(fd, NOTE_PID + getpid(), F_RDLCK);

	if (rc == 0)
		rc = note_set(fd, NOTE_DEV + (int64_t)dev_note, F_RDLCK);
	if (rc < 0) /* a second user then waits for this member, as for an exiting daemon */
		ff_log(FF_LOG_DEBUG, "member fd %d: cannot leave the mount notes: %s", fd,
		       strerror(-rc));
}

static void locked_add(int fd)
{
	pthread_mutex_lock(&locked_lock);
	if (nlocked < LOCKED_MAX)
		locked_fd[nlocked++] = fd;
	if (mounted_dev_note)
		notes_put(fd, mounted_dev_note); /* added, or a spare, after the mount */
	pthread_mutex_unlock(&locked_lock);
}

static void locked_remove(int fd)
{
	struct flock fl = { .l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = NOTE_PID,
			    .l_len = 2 * NOTE_SPAN };

	fcntl(fd, F_OFD_SETLK, &fl); /* as the flock: a ring may keep the file open */
	pthread_mutex_lock(&locked_lock);
	for (unsigned i = 0; i < nlocked; i++)
		if (locked_fd[i] == fd) {
			locked_fd[i] = locked_fd[--nlocked];
			break;
		}
	pthread_mutex_unlock(&locked_lock);
}

/* Undo /proc/self/mountinfo's octal escapes (\040 for a space). */
static void unescape_octal(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

bool ff_framefs_mount_find(const char *want_mnt, uint64_t dev_note, char *mnt, size_t len,
			   uint64_t *dev_out)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], mp[4096], fstype[256];
	unsigned maj, min;
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		uint64_t d;

		if (!sep || sscanf(line, "%*u %*u %u:%u %*s %4095s", &maj, &min, mp) != 3 ||
		    sscanf(sep + 3, "%255s", fstype) != 1 || strcmp(fstype, "fuse.framefs") != 0)
			continue;
		unescape_octal(mp);
		d = (uint64_t)maj << 20 | min;
		if (want_mnt ? strcmp(mp, want_mnt) != 0 : d != dev_note)
			continue;
		found = true; /* on want_mnt: go on, the last one is the newest */
		snprintf(mnt, len, "%s", mp);
		*dev_out = d;
		if (!want_mnt)
			break;
	}
	fclose(f);
	return found;
}

int ff_member_notes_leave(uint64_t dev_note)
{
	if (dev_note == 0 || dev_note >= NOTE_SPAN)
		return -EINVAL;
	pthread_mutex_lock(&locked_lock);
	mounted_dev_note = dev_note;
	for (unsigned i = 0; i < nlocked; i++)
		notes_put(locked_fd[i], dev_note);
	pthread_mutex_unlock(&locked_lock);
	return 0;
}

int ff_member_note_mounted(const char *mnt_real)
{
	char mnt[PATH_MAX];
	uint64_t dev = 0;

	if (!ff_framefs_mount_find(mnt_real, 0, mnt, sizeof(mnt), &dev))
		return -ENOENT;
	return ff_member_notes_leave(dev) < 0 ? -ENOENT : 0;
}

/*
 * Is the holder of m's lock a daemon whose volume is still mounted?  Then
 * its pid and mountpoint, else false (the holder is mkfs, fsck, an offline
 * framefs-admin, or a daemon that is exiting).
 *
 * Exiting and live are told apart by the kernel's mount table, not by
 * anything the daemon does: umount(2) takes the mount out of the table
 * before it returns, and only then does the daemon learn of it and start
 * writing out its last commit, lock still held.  So a waiter that looks
 * after umount returned never finds the mount and waits for the close, as
 * for any holder; one that looks before finds it, and "in use" was true
 * when it looked.  A FUSE device number freed by the umount may be taken
 * by a new framefs mount while the old daemon is still exiting: the member
 * is then reported busy at once, with that mount's mountpoint, instead of
 * waited for.
 */
static bool holder_live(const struct ff_member *m, int64_t *pid, char *mnt, size_t len)
{
	int64_t dev = note_get(m->fd, NOTE_DEV);
	uint64_t found_dev;

	*pid = note_get(m->fd, NOTE_PID);
	return dev > 0 && ff_framefs_mount_find(NULL, (uint64_t)dev, mnt, len, &found_dev);
}

/* Whether the process a pid note names has exited (pid reuse makes it
 * look alive: the shorter wait then). */
static bool holder_gone(int64_t pid)
{
	return pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

/*
 * A busy lock held by a daemon whose volume is mounted is answered at
 * once (holder_live).  Any other busy lock is most often a framefs that
 * was just unmounted: umount returns before the daemon has written out its
 * last commit and closed its members.  So it is waited for, up to
 * FF_MEMBER_LOCK_WAIT_MS, in flock_until: the wait ends when the holder
 * lets go or at the deadline, whichever comes first.
 *
 * A holder whose pid note names a process that has exited (a daemon killed
 * with SIGKILL) is no process at all: its members' files are kept open by
 * the kernel's teardown of its io_uring rings, which runs in a kernel
 * worker after the process is reaped and ends when the last of its member
 * I/Os completes: 10-60 ms after kill -9 on RAM-backed members here, but as
 * long as a drive takes to answer or time out (NVMe's I/O timeout is 30 s)
 * when one does not.  It is waited for up to FF_MEMBER_LOCK_DEAD_WAIT_MS,
 * the same way.  A holder that dies while it is waited for is seen at the
 * shorter deadline, which then moves to the longer one.
 */
int ff_member_lock(struct ff_member *m, struct ff_err *err)
{
	int op = (m->read_only ? LOCK_SH : LOCK_EX) | LOCK_NB;
	uint64_t t0 = ff_mono_ns(), deadline = t0 + FF_MEMBER_LOCK_WAIT_MS * 1000000ull;
	char mnt[PATH_MAX];
	int64_t pid = -1;
	bool gone = false, told = false;
	int e;

	for (;;) {
		/* e is the last try's answer: 0 once it has the lock */
		e = flock(m->fd, op) == 0 ? 0 : errno;
		if (e != EWOULDBLOCK)
			break;
		if (holder_live(m, &pid, mnt, sizeof(mnt))) {
			ff_err_set(err, "%s: in use by another process: the framefs (pid %lld) of the "
				   "volume mounted on %s; unmount it first", m->path, (long long)pid,
				   mnt);
			return -EBUSY;
		}
		if (!gone && holder_gone(pid)) {
			gone = told = true;
			deadline = t0 + FF_MEMBER_LOCK_DEAD_WAIT_MS * 1000000ull;
			ff_log(FF_LOG_INFO, "%s: held by the open file of framefs pid %lld, which has "
			       "exited: waiting up to %u ms for the kernel to release it", m->path,
			       (long long)pid, FF_MEMBER_LOCK_DEAD_WAIT_MS);
		}
		if (!told) { /* most often a framefs just unmounted: nothing to act on */
			told = true;
			ff_log(FF_LOG_DEBUG, "%s: in use by another process (a framefs just "
			       "unmounted may still be writing out), waiting up to %u ms",
			       m->path, FF_MEMBER_LOCK_WAIT_MS);
		}
		if (ff_mono_ns() >= deadline)
			break;
		e = flock_until(m->fd, op, deadline);
		if (e == 0)
			break;
		if (e != EINTR) { /* no timer: answer busy now rather than poll */
			ff_log(FF_LOG_WARN, "%s: busy, and a wait for it cannot be timed (%s): not "
			       "waiting", m->path, strerror(e));
			e = EWOULDBLOCK;
			break;
		}
	}
	if (e == 0) {
		locked_add(m->fd);
		return 0;
	}
	if (e != EWOULDBLOCK) {
		ff_err_set(err, "%s: cannot lock: %s", m->path, strerror(e));
		return -e;
	}
	if (gone)
		ff_err_set(err, "%s: still held %u ms after framefs pid %lld exited (the kernel has "
			   "not released its open file); try again, or see what holds it with "
			   "fuser -v %s", m->path, FF_MEMBER_LOCK_DEAD_WAIT_MS, (long long)pid,
			   m->path);
	else if (pid > 0)
		ff_err_set(err, "%s: in use by another process (pid %lld: a framefs that has not let "
			   "go %u ms after its unmount)", m->path, (long long)pid,
			   FF_MEMBER_LOCK_WAIT_MS);
	else
		ff_err_set(err, "%s: in use by another process (a mounted framefs, mkfs or fsck)",
			   m->path);
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
		locked_remove(m->fd);
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

int ff_member_discard(struct ff_member *m, uint64_t off, uint64_t len, uint64_t *done)
{
	const struct ff_backend *b = ff_member_backend(m);
	uint64_t pieces = (len + FF_DISCARD_PIECE - 1) / FF_DISCARD_PIECE;
	int rc = 0;

	*done = 0;
	if (m->read_only)
		return -EROFS;
	if (!b->discard)
		return -EOPNOTSUPP;
	if (off % m->lbs || len % m->lbs || off > m->size_bytes || len > m->size_bytes - off)
		return -EINVAL;
	for (uint64_t i = 0; i < pieces && rc == 0; i++) {
		uint64_t n = FF_MIN(len - *done, FF_DISCARD_PIECE);

		rc = b->discard(m, off + *done, n);
		if (rc == 0)
			*done += n;
	}
	return rc;
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
