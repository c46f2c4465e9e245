/* SPDX-License-Identifier: MIT */
/*
 * The FUSE low-level glue: each handler translates one request into one
 * ffs_* call and ends in exactly one reply.
 */
#include <alloca.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fs/ffs.h"
#include "fs/daemon/fuse_ops.h"
#include "fs/daemon/offload.h"
#include "fs/daemon/transport.h"

#define TIMEOUT_S 60.0   /* every change goes through this daemon: long caches are safe */

/* The largest request: settled at INIT (transport.c), before any handler
 * that uses it runs; 1 MiB is what the kernel's default
 * fs.fuse.max_pages_limit (256 pages) allows. */
static unsigned io_max = 1u << 20;

unsigned ffs_fuse_readahead_bytes;

static struct ffs *FS(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* Each handler marks its request in flight (fs/base/watch.c) until it returns,
 * after its one reply. */
static void track_end(struct ffs_req_slot **s)
{
	ffs_req_end(*s);
}

/*
 * No handler may be cancelled half-way.  libfuse ends its threads with
 * pthread_cancel: its /dev/fuse workers allow that only while they read a
 * request, but libfuse 3.18's io_uring queue threads run the handlers with
 * cancellation on, and fuse_uring_stop() cancels them at the end of the
 * session.  A handler cancelled in a pthread_cond_wait or a pread leaves
 * the filesystem's mutexes held by a dead thread (ffs_unmount then waited
 * for them for ever: SIGTERM hung the daemon) and its update half done.
 * So each handler turns cancellation off until it has returned; a cancel
 * that arrives meanwhile stays pending, and the queue thread leaves on its
 * own (the eventfd libfuse writes before cancelling, or the session's exit
 * flag): its loop has no cancellation point outside the handlers.
 */
static int cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static void cancel_restore(int *old)
{
	pthread_setcancelstate(*old, NULL);
}

#define TRACK(req, op, ino) \
	int cancel_ __attribute__((cleanup(cancel_restore))) = cancel_off(); \
	ffs_transport_count(req); \
	struct ffs_req_slot *track_ __attribute__((cleanup(track_end))) = \
		ffs_req_begin(FS(req), op, ino)

/* One aligned I/O buffer per worker thread, made on its first use and
 * freed when libfuse ends the thread (the key's destructor). */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;

static void buf_key_make(void)
{
	pthread_key_create(&buf_key, free);
}

static void *thread_buf(void)
{
	void *b;

	pthread_once(&buf_once, buf_key_make);
	b = pthread_getspecific(buf_key);
	if (!b) {
		b = ff_alloc_aligned(io_max + 4096);
		if (b && pthread_setspecific(buf_key, b) != 0) {
			free(b);
			b = NULL;
		}
	}
	return b;
}

static void reply_entry(fuse_req_t req, int rc, const struct stat *st)
{
	struct fuse_entry_param e;
	uint32_t gen;

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = st->st_ino;
	/* The entry's lookup count pins the inode until the kernel forgets it,
	 * so the number cannot be reused between the operation and this. */
	rc = ffs_generation(FS(req), st->st_ino, &gen);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.generation = gen;
	e.attr = *st;
	e.attr_timeout = TIMEOUT_S;
	e.entry_timeout = TIMEOUT_S;
	fuse_reply_entry(req, &e);
}

/* Say once how requests will come: the transport asked for and why, and
 * their size.  Whether the ring really started shows in the status's
 * request counts (libfuse logs a ring that fails). */
static void log_transport(struct fuse_conn_info *conn)
{
	const struct ffs_transport *t = &ffs_transport;
	bool offered = false;

#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
	offered = conn->capable_ext & FUSE_CAP_OVER_IO_URING;
#endif
	if (t->uring_asked && offered)
		ff_log(FF_LOG_INFO, "FUSE over io_uring (libfuse %s, queue depth %u per CPU), "
		       "requests up to %u KiB (fs.fuse.max_pages_limit=%u pages)", t->libfuse,
		       t->depth, io_max / 1024, t->pages_limit);
	else
		ff_log(FF_LOG_INFO, "FUSE over /dev/fuse (libfuse %s): %s; requests up to %u KiB "
		       "(fs.fuse.max_pages_limit=%u pages)", t->libfuse,
		       t->uring_asked ? "the kernel did not offer io_uring" : t->why_dev,
		       io_max / 1024, t->pages_limit);
}

/*
 * FUSE's killpriv_v2 (libfuse 3.18's FUSE_CAP_HANDLE_KILLPRIV_V2): the
 * filesystem drops set-user-ID, set-group-ID and file capabilities on
 * write, truncate and chown, so the kernel need not ask.  Without it the
 * kernel sends a GETXATTR of security.capability before every write of a
 * file (file_remove_privs): one round trip more for each 4 KiB a database
 * writes.  With it the kernel marks the superblock SB_NOSEC and asks once
 * per inode.  (libfuse 3.14 cannot negotiate it: the kernel does the work.)
 * The one thing it costs: a chown naming neither id (-1, -1) reaches us as
 * a SETATTR with nothing in it, the same request a write by root to a
 * file with a capability sends (where the bits must stay), so such a chown
 * leaves set-ID bits Linux would take (attr-diff-tmpfs lists it).
 */
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
static bool killpriv;
#define KILL_SUIDGID(fi) (killpriv && (fi)->kill_suidgid)
#else
static const bool killpriv = false;
#define KILL_SUIDGID(fi) ((void)(fi), false)
#endif

/*
 * The caller of a request as struct ffs_caller: whether it is in a group
 * (its fsgid or a supplementary group) or has CAP_FSETID.  The kernel
 * hands FUSE the caller's ids, not its groups or capabilities: those come
 * from /proc/PID/status, read only for a file with set-group-ID and no
 * group execute.  A caller gone by then: root is taken to have CAP_FSETID,
 * anyone else to be in its own group alone.
 */
struct req_caller {
	struct ffs_caller c;
	fuse_req_t req;
};

#define CAP_FSETID_BIT 4 /* linux/capability.h's CAP_FSETID */

static bool req_in_group_or_capable(const struct ffs_caller *c, gid_t gid)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(((const struct req_caller *)c)->req);
	bool in_group = ctx->gid == gid, capable = ctx->uid == 0;
	char path[48], *line = NULL;
	size_t cap = 0;
	FILE *f;

	if (in_group)
		return true;
	snprintf(path, sizeof(path), "/proc/%ld/status", (long)ctx->pid);
	f = fopen(path, "re");
	if (!f)
		return capable;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "Groups:", 7) == 0) {
			char *p = line + 7, *end;

			for (unsigned long g;; p = end) {
				g = strtoul(p, &end, 10);
				if (end == p)
					break;
				in_group |= g == (unsigned long)gid;
			}
		} else if (strncmp(line, "CapEff:", 7) == 0) {
			capable = (strtoull(line + 7, NULL, 16) >> CAP_FSETID_BIT) & 1;
		}
	}
	free(line);
	fclose(f);
	return in_group || capable;
}

#define REQ_CALLER(req) ((struct req_caller){ { req_in_group_or_capable }, (req) })

/* A truncating open: the kernel leaves the truncation to us (libfuse's
 * atomic O_TRUNC) and with it what the truncation takes, on every libfuse.
 * With killpriv_v2 it says whether the caller lacks CAP_FSETID; without,
 * nothing does, and root is taken to have it (permissions-nonroot: a
 * non-root owner's O_TRUNC open clears set-user-ID, as on ext4). */
static bool open_kills(fuse_req_t req, const struct fuse_file_info *fi)
{
	if (!(fi->flags & O_TRUNC))
		return false;
	return killpriv ? KILL_SUIDGID(fi) : fuse_req_ctx(req)->uid != 0;
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct ffs_info info;

	ffs_info(userdata, &info);
	io_max = ffs_transport_req_bytes(info.stripe_bytes);
	/* O_DIRECT writers: many requests of one file in flight at once */
	if (conn->capable & FUSE_CAP_ASYNC_DIO)
		conn->want |= FUSE_CAP_ASYNC_DIO;
	if (conn->capable & FUSE_CAP_PARALLEL_DIROPS)
		conn->want |= FUSE_CAP_PARALLEL_DIROPS;
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
	killpriv = conn->capable & FUSE_CAP_HANDLE_KILLPRIV_V2;
	if (killpriv)
		conn->want |= FUSE_CAP_HANDLE_KILLPRIV_V2;
#endif
	/* Stay write-through. A FUSE bdi's 1% dirty limit throttles writeback caching,
	 * and with it on, 4 KiB random writes with fsync every 64 ran no faster (87.7 and
	 * 89.3 MB/s against 87.3 and 82.6; each fsync waited twice as long, 11.4 ms against
	 * 5.3): framefs's intake of small writes sets their pace, not the round trip */
	conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
	/* Requests are read into memory, not spliced through a pipe: parity
	 * and checksums need the bytes in user memory anyway (op_write_buf
	 * takes an in-memory payload as it is).  And libfuse (3.18.3 seen)
	 * pays for splice on every request where the pipe cannot grow to the
	 * request size (F_SETPIPE_SZ beyond pipe-max-size without
	 * CAP_SYS_RESOURCE): it makes a pipe, tries to grow it, reads
	 * /proc/sys/fs/pipe-max-size, frees the pipe and reads without splice,
	 * seven system calls more per request. */
	conn->want &= ~FUSE_CAP_SPLICE_READ;
	/* a full-stripe write arrives as one request when the kernel allows it */
	conn->max_write = io_max;
	/* the kernel keeps the smaller of this and the bdi's read_ahead_kb,
	 * which main() raised to the same value before mounting */
	conn->max_readahead = ffs_fuse_readahead_bytes ? ffs_fuse_readahead_bytes : io_max;
	conn->max_background = 64;
	conn->congestion_threshold = 48;
	conn->time_gran = 1;
	log_transport(conn);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	TRACK(req, "lookup", parent);
	struct stat st;

	reply_entry(req, ffs_lookup(FS(req), parent, name, &st), &st);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	TRACK(req, "forget", ino);
	ffs_forget(FS(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *f)
{
	TRACK(req, "forget", 0);
	for (size_t i = 0; i < count; i++)
		ffs_forget(FS(req), f[i].ino, f[i].nlookup);
	fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TRACK(req, "getattr", ino);
	struct stat st;
	int rc = ffs_getattr(FS(req), ino, &st);

	(void)fi;
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, TIMEOUT_S);
}

/* setattr's to_set bit (none of libfuse's) for a request that named an
 * open file: an ftruncate, not a truncate(2) */
#define SETATTR_FILE (1 << 30)

/* A truncation may wait for the file's buffers: offload.h */
static void job_setattr(struct ffs_job *j)
{
	fuse_req_t req = j->req;
	fuse_ino_t ino = j->ino;
	struct stat *attr = &j->attr;
	int to_set = j->flag;

	TRACK(req, "setattr", ino);
	static const struct { int fuse, ffs; } map[] = {
		{ FUSE_SET_ATTR_MODE, FFS_SET_MODE }, { FUSE_SET_ATTR_UID, FFS_SET_UID },
		{ FUSE_SET_ATTR_GID, FFS_SET_GID }, { FUSE_SET_ATTR_SIZE, FFS_SET_SIZE },
		{ FUSE_SET_ATTR_ATIME, FFS_SET_ATIME }, { FUSE_SET_ATTR_MTIME, FFS_SET_MTIME },
		{ FUSE_SET_ATTR_ATIME_NOW, FFS_SET_ATIME_NOW },
		{ FUSE_SET_ATTR_MTIME_NOW, FFS_SET_MTIME_NOW }, { FUSE_SET_ATTR_CTIME, FFS_SET_CTIME },
	};
	struct stat st;
	int set = 0, rc;

	for (size_t i = 0; i < FF_ARRAY_SIZE(map); i++)
		if (to_set & map[i].fuse)
			set |= map[i].ffs;
#ifdef FUSE_CAP_HANDLE_KILLPRIV_V2
	/* a truncate by a caller without CAP_FSETID (the kernel's
	 * FATTR_KILL_SUIDGID), and any chown, as the kernel would do itself
	 * (ffs_setattr_as leaves directories alone) */
	if (killpriv && (to_set & (FUSE_SET_ATTR_KILL_SUID | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)))
		set |= FFS_SET_KILL_PRIV;
#endif
	/* an ftruncate stamps mtime and ctime even at the same size (Linux's
	 * do_truncate asks for both); the kernel sends no time with it */
	if ((to_set & SETATTR_FILE) && (to_set & FUSE_SET_ATTR_SIZE) &&
	    !(to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)))
		set |= FFS_SET_MTIME_NOW;
	struct req_caller who = REQ_CALLER(req);

	rc = ffs_setattr_as(FS(req), ino, attr, set, &who.c, &st);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, TIMEOUT_S);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_setattr, .req = req, .ino = ino, .attr = *attr,
			     .flag = to_set | (fi ? SETATTR_FILE : 0) };

	ffs_job_run(&j);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	TRACK(req, "mknod", parent);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;

	reply_entry(req, ffs_mknod(FS(req), parent, name, mode & ~c->umask, rdev, c->uid, c->gid, &st),
		    &st);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	TRACK(req, "mkdir", parent);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;

	reply_entry(req, ffs_mkdir(FS(req), parent, name, mode & ~c->umask, c->uid, c->gid, &st), &st);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	TRACK(req, "symlink", parent);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;

	reply_entry(req, ffs_symlink(FS(req), parent, name, link, c->uid, c->gid, &st), &st);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	TRACK(req, "readlink", ino);
	char buf[FFS_READLINK_MAX + 1];
	int rc = ffs_readlink(FS(req), ino, buf, sizeof(buf));

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_readlink(req, buf);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	TRACK(req, "link", ino);
	struct stat st;

	reply_entry(req, ffs_link(FS(req), ino, newparent, newname, &st), &st);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	TRACK(req, "unlink", parent);
	fuse_reply_err(req, -ffs_unlink(FS(req), parent, name));
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	TRACK(req, "rmdir", parent);
	fuse_reply_err(req, -ffs_rmdir(FS(req), parent, name));
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	TRACK(req, "rename", parent);
	unsigned f = 0;

	if (flags & RENAME_NOREPLACE)
		f |= FFS_RENAME_NOREPLACE;
	if (flags & RENAME_EXCHANGE)
		f |= FFS_RENAME_EXCHANGE;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE)) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -ffs_rename(FS(req), parent, name, newparent, newname, f));
}

static void open_flags(struct fuse_file_info *fi)
{
	fi->keep_cache = 1; /* nothing changes the file behind the kernel's back */
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 15)
	/* O_DIRECT writers inside the file's size (a presized frame, an
	 * overwrite) may have several requests in flight at once: the data
	 * path assembles stripes under its own lock.  The kernel still
	 * serialises writes that extend the file. */
	if (fi->flags & O_DIRECT)
		fi->parallel_direct_writes = 1;
#endif
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TRACK(req, "open", ino);
	uint64_t fh;
	int rc = ffs_open(FS(req), ino, fi->flags, &fh);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	struct req_caller who = REQ_CALLER(req);

	if (open_kills(req, fi) && (rc = ffs_kill_priv(FS(req), fh, &who.c)) < 0) {
		ffs_release(FS(req), fh);
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = fh;
	open_flags(fi);
	/* A read-only open writes nothing, so its close has nothing to write
	 * out or acknowledge (ffs_flush): the kernel skips FLUSH (5.16+).
	 * NFS-Ganesha's VFS FSAL opens and closes a regular file O_RDONLY for
	 * every attribute refresh, two or three per entry of an NFS listing
	 * when its attribute cache is off; FLUSH was a third of the requests
	 * such a listing sent.  A truncating open changed the file and keeps
	 * its FLUSH; create always does (the new name must be durable). */
	if ((fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC))
		fi->noflush = 1;
	if (fuse_reply_open(req, fi) == -ENOENT) /* the opener was interrupted */
		ffs_release(FS(req), fh);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	TRACK(req, "create", parent);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fuse_entry_param e;
	uint64_t fh;
	uint32_t gen;
	int rc;

	memset(&e, 0, sizeof(e));
	rc = ffs_create(FS(req), parent, name, mode & ~c->umask, c->uid, c->gid, fi->flags, &e.attr,
			&fh);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	e.ino = e.attr.st_ino;
	rc = ffs_generation(FS(req), e.ino, &gen); /* pinned: see reply_entry */
	if (rc < 0) {
		ffs_release(FS(req), fh);
		fuse_reply_err(req, -rc);
		return;
	}
	e.generation = gen;
	e.attr_timeout = e.entry_timeout = TIMEOUT_S;
	fi->fh = fh;
	open_flags(fi);
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		ffs_release(FS(req), fh);
}

/* A read through the stripe cache, which reads ahead (ahead 0) or not,
 * rebuilds and repairs; it may wait for the members. */
static void read_cached(fuse_req_t req, uint64_t fh, size_t size, off_t off, unsigned ahead)
{
	struct ffs *fs = FS(req); /* the request is gone once replied to */
	struct ffs_rref ref;
	void *buf;
	ssize_t n;

	/* straight from the stripe cache to the kernel: one copy fewer.  An
	 * iovec reply is one writev however many pieces; fuse_reply_data would
	 * allocate and copy a read that spans two stripes. */
	n = ffs_read_ref(fs, fh, size, (uint64_t)off, ahead, &ref);
	if (n >= 0) {
		fuse_reply_iov(req, ref.iov, (int)ref.n);
		ffs_read_unref(fs, &ref);
		return;
	}
	if (n != -EAGAIN) {
		fuse_reply_err(req, (int)-n);
		return;
	}
	buf = thread_buf();
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = ffs_read(fs, fh, buf, size, (uint64_t)off, ahead);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
static void job_read_cached(struct ffs_job *j)
{
	TRACK(j->req, "read", j->ino);
	read_cached(j->req, j->fi.fh, (size_t)j->len, j->off, (unsigned)j->flag);
}

/* The reads into the reply buffer are in (read_into_reply): the reply,
 * here on an engine thread; or, when the reads could not serve it, the
 * request to a worker, which reads through the cache (an engine thread
 * must not wait for the engine). */
static void read_into_done(void *priv, ssize_t n, uint64_t fh, size_t size, uint64_t off)
{
	fuse_req_t req = priv;
	char *payload;
	size_t cap;

	if (n < 0) { /* -EAGAIN, the only error a completion brings (ffs.h) */
		struct ffs_job j = { .run = job_read_cached, .req = req, .off = (off_t)off,
				     .len = (off_t)size, .flag = FFS_READ_KERNEL_AHEAD };

		j.fi.fh = fh;
		if (!ffs_job_queue(&j))
			fuse_reply_err(req, EIO); /* offload.h: cannot happen while its bound holds */
		return;
	}
	if (fuse_req_get_payload(req, &payload, &cap, NULL) != 0)
		fuse_reply_err(req, EIO); /* it had one when the read began */
	else
		fuse_reply_buf(req, payload, (size_t)n); /* libfuse copies nothing: it is the payload */
}
#endif

/*
 * A buffered reader's request over io_uring read from the members straight
 * into the reply buffer the ring gave it (ffs_read_into): true when it was
 * answered so, or will be.  Only for buffered readers, whose read-ahead the
 * kernel does (op_read); an O_DIRECT reader (a player) has only the stripe
 * cache's read-ahead, so it stays with the cache (read straight, O_DIRECT
 * frame reads were slower: 2923-3307 MB/s against 3872-4261 through the
 * cache, and 484-538 ms of CPU per GB against 438-467; with the completion
 * replying, still slower in 2 of 3 rounds).  /dev/fuse has no such buffer.
 *
 * Where replies may come from any thread (offload.h), the queue thread does
 * not wait for the members: the reads are submitted and the last one's
 * completion replies (read_into_done), so the kernel's read-ahead requests
 * of one CPU's queue are read in parallel.  Otherwise it waits.
 */
static bool read_into_reply(fuse_req_t req, struct ffs *fs, uint64_t fh, size_t size, off_t off)
{
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
	char *payload;
	size_t cap;
	ssize_t n;

	if (fuse_req_get_payload(req, &payload, &cap, NULL) != 0)
		return false;
	if (ffs_offload_active()) {
		int rc = ffs_read_into_async(fs, fh, payload, cap, size, (uint64_t)off, read_into_done, req);

		if (rc == 0)
			return true; /* read_into_done replies */
		if (rc == -EAGAIN)
			return false;
		if (rc != -EBUSY) {
			fuse_reply_err(req, -rc);
			return true;
		}
		/* every read of the pool in flight: this one waits */
	}
	n = ffs_read_into(fs, fh, payload, cap, size, (uint64_t)off);
	if (n == -EAGAIN)
		return false;
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, payload, (size_t)n); /* libfuse copies nothing: it is the payload */
	return true;
#else
	(void)req, (void)fs, (void)fh, (void)size, (void)off;
	return false;
#endif
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	TRACK(req, "read", ino);
	/* the kernel reads ahead for a buffered reader, not for an O_DIRECT one */
	unsigned ahead = (fi->flags & O_DIRECT) ? 0 : FFS_READ_KERNEL_AHEAD;

	(void)ino;
	size = FF_MIN(size, (size_t)io_max);
	if (ahead && read_into_reply(req, FS(req), fi->fh, size, off))
		return;
	read_cached(req, fi->fh, size, off, ahead);
}

static void op_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
			 struct fuse_file_info *fi)
{
	TRACK(req, "write", ino);
	size_t size = fuse_buf_size(bufv);
	const void *src;
	ssize_t n;

	(void)ino;
	if (bufv->count == 1 && !(bufv->buf[0].flags & FUSE_BUF_IS_FD)) {
		src = (const char *)bufv->buf[0].mem + bufv->off;
	} else {
		struct fuse_bufvec dst = FUSE_BUFVEC_INIT(FF_MIN(size, (size_t)io_max));

		dst.buf[0].mem = thread_buf();
		if (!dst.buf[0].mem) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
		n = fuse_buf_copy(&dst, bufv, 0);
		if (n < 0) {
			fuse_reply_err(req, (int)-n);
			return;
		}
		size = (size_t)n;
		src = dst.buf[0].mem;
	}
	struct req_caller who = REQ_CALLER(req);

	n = KILL_SUIDGID(fi) ? ffs_kill_priv(FS(req), fi->fh, &who.c) : 0;
	if (n == 0)
		n = ffs_write(FS(req), fi->fh, src, size, (uint64_t)off);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* Flush, release and fsync write out the file's buffers and may wait for
 * a commit: offload.h */
static void job_flush(struct ffs_job *j)
{
	TRACK(j->req, "flush", j->ino);
	fuse_reply_err(j->req, -ffs_flush(FS(j->req), j->fi.fh));
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_flush, .req = req, .ino = ino, .fi = *fi };

	ffs_job_run(&j);
}

static void job_release(struct ffs_job *j)
{
	TRACK(j->req, "release", j->ino);
	fuse_reply_err(j->req, -ffs_release(FS(j->req), j->fi.fh));
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_release, .req = req, .ino = ino, .fi = *fi };

	ffs_job_run(&j);
}

static void job_fsync(struct ffs_job *j)
{
	TRACK(j->req, "fsync", j->ino);
	fuse_reply_err(j->req, -ffs_fsync(FS(j->req), j->fi.fh, j->flag != 0));
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_fsync, .req = req, .ino = ino, .fi = *fi, .flag = datasync };

	ffs_job_run(&j);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TRACK(req, "opendir", ino);
	struct stat st;
	int rc = ffs_getattr(FS(req), ino, &st);

	if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = -ENOTDIR;
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = 0;
	fuse_reply_open(req, fi);
}

struct dir_fill {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	bool plus;
};

static int dir_fill_cb(void *arg, const char *name, const struct stat *st, uint32_t gen,
		       uint64_t next)
{
	struct dir_fill *d = arg;
	size_t n;

	if (d->plus) {
		struct fuse_entry_param e;

		memset(&e, 0, sizeof(e));
		e.ino = st->st_ino;
		e.generation = gen;
		e.attr = *st;
		e.attr_timeout = e.entry_timeout = TIMEOUT_S;
		n = fuse_add_direntry_plus(d->req, d->buf + d->used, d->size - d->used, name, &e,
					   (off_t)next);
	} else {
		n = fuse_add_direntry(d->req, d->buf + d->used, d->size - d->used, name, st,
				      (off_t)next);
	}
	if (n > d->size - d->used)
		return 1; /* does not fit: stop, the entry is not returned */
	d->used += n;
	return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	struct dir_fill d = { req, thread_buf(), FF_MIN(size, (size_t)io_max), 0, plus };
	int rc;

	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = ffs_readdir(FS(req), ino, (uint64_t)off, plus, dir_fill_cb, &d);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, d.buf, d.used);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	TRACK(req, "readdir", ino);
	(void)fi;
	readdir_common(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	TRACK(req, "readdirplus", ino);
	(void)fi;
	readdir_common(req, ino, size, off, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	TRACK(req, "releasedir", ino);
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

static void job_fsyncdir(struct ffs_job *j)
{
	TRACK(j->req, "fsyncdir", j->ino);
	fuse_reply_err(j->req, -ffs_fsyncdir(FS(j->req)));
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_fsyncdir, .req = req, .ino = ino };

	(void)datasync;
	(void)fi;
	ffs_job_run(&j);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	TRACK(req, "statfs", ino);
	struct statvfs st;

	(void)ino;
	ffs_statfs(FS(req), &st);
	fuse_reply_statfs(req, &st);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	TRACK(req, "setxattr", ino);
	fuse_reply_err(req, -ffs_setxattr(FS(req), ino, name, value, size, flags));
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	TRACK(req, "getxattr", ino);
	char *buf = size ? thread_buf() : NULL;
	int rc;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = ffs_getxattr(FS(req), ino, name, buf, FF_MIN(size, (size_t)io_max));
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)rc);
	else
		fuse_reply_buf(req, buf, (size_t)rc);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	TRACK(req, "listxattr", ino);
	char *buf = size ? thread_buf() : NULL;
	int rc;

	if (size && !buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = ffs_listxattr(FS(req), ino, buf, FF_MIN(size, (size_t)io_max));
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)rc);
	else
		fuse_reply_buf(req, buf, (size_t)rc);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	TRACK(req, "removexattr", ino);
	fuse_reply_err(req, -ffs_removexattr(FS(req), ino, name));
}

/* Without default_permissions the daemon answers access() itself. */
static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	TRACK(req, "access", ino);
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct stat st;
	int rc = ffs_getattr(FS(req), ino, &st), bits;

	if (rc == 0 && mask != F_OK) {
		if (c->uid == 0)
			bits = (st.st_mode & 0111) || S_ISDIR(st.st_mode) ? 7 : 6;
		else if (c->uid == st.st_uid)
			bits = (st.st_mode >> 6) & 7;
		else if (c->gid == st.st_gid)
			bits = (st.st_mode >> 3) & 7;
		else
			bits = st.st_mode & 7;
		if ((mask & R_OK && !(bits & 4)) || (mask & W_OK && !(bits & 2)) ||
		    (mask & X_OK && !(bits & 1)))
			rc = -EACCES;
	}
	fuse_reply_err(req, -rc);
}

static void job_fallocate(struct ffs_job *j)
{
	TRACK(j->req, "fallocate", j->ino);
	if (j->off < 0 || j->len <= 0) {
		fuse_reply_err(j->req, EINVAL);
		return;
	}
	fuse_reply_err(j->req, -ffs_fallocate(FS(j->req), j->fi.fh, j->flag, (uint64_t)j->off,
					      (uint64_t)j->len));
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	struct ffs_job j = { .run = job_fallocate, .req = req, .ino = ino, .fi = *fi, .flag = mode,
			     .off = off, .len = len };

	ffs_job_run(&j);
}

const struct fuse_lowlevel_ops ffs_fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write_buf = op_write_buf,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.access = op_access,
	.create = op_create,
	.fallocate = op_fallocate,
};
