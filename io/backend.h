/* SPDX-License-Identifier: MIT */
/*
 * Member backends: what differs between the kinds of member, behind one
 * table of functions (private to io/).
 *
 *   bdev   a block device: size and block size from ioctls, NVMe identity,
 *          presence from sysfs (io/bdev.c)
 *   file   a regular file on a disk filesystem (io/file.c)
 *   ram    a regular file in tmpfs or ramfs: sync_io set, so rings run its
 *          requests on their own thread (io/file.c, io/uring.h)
 *   fault  wraps one of the above; fault rules and the power-loss undo log
 *          live here and nowhere else (io/fault.c, io/fault.h)
 *
 * ff_member_open() picks bdev, file or ram from what the path is; the
 * fault backend is put in front of it by ff_fault_add() or ff_undo_open().
 * Rings and the synchronous helpers only ever call through m->backend.
 */
#ifndef FF_BACKEND_H
#define FF_BACKEND_H

#include <sys/stat.h>

#include "io/member.h"
#include "io/uring.h"

/*
 * What a backend's start hook decides for one request before it is issued:
 * nothing (zeroed), fail it now (error alone), or hold it for delay_us and
 * then issue it (or fail it with error, when both are set).  The ring keeps
 * the held request on a kernel timer, so nothing blocks.
 */
struct ff_io_hold {
	int error;         /* positive errno, 0 = none */
	uint32_t delay_us; /* 0 = none */
};

struct ff_backend {
	const char *name;
	/* m->fd is open and stx describes it: fill size_bytes, lbs, identity
	 * and sync_io.  The O_DIRECT alignment is then filled by the caller. */
	int (*probe)(struct ff_member *m, const struct statx *stx, struct ff_err *err);
	/* Before m's fd closes (NULL: nothing to do). */
	void (*close)(struct ff_member *m);
	enum ff_member_presence (*presence)(const struct ff_member *m, char *why, size_t len);
	const char *(*describe)(const struct ff_member *m, char *buf, size_t len);
	/* Synchronous I/O (start-up paths): whole transfers, 0 or -errno. */
	int (*pread)(struct ff_member *m, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct ff_member *m, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct ff_member *m);
	/* Deallocate [off, off + len), one piece of at most FF_DISCARD_PIECE
	 * (ff_member_discard splits a range and checks it): 0 or -errno.  NULL:
	 * this kind of member does not deallocate (-EOPNOTSUPP). */
	int (*discard)(struct ff_member *m, uint64_t off, uint64_t len);
	/* Ring path: fill sqe for the rest of req (buf, len, off: what is left;
	 * regbuf: registered buffer index or -1); member slot req->member. */
	void (*prep)(struct io_uring_sqe *sqe, struct ff_io_req *req, void *buf, uint32_t len,
		     uint64_t off, int regbuf);
	/* Once per request, before it is first issued (NULL: never hold). */
	void (*start)(struct ff_member *m, struct ff_io_req *req, struct ff_io_hold *hold);
	/* Once per started request, after its result is final and before its
	 * complete callback (NULL: nothing to do). */
	void (*end)(struct ff_member *m, struct ff_io_req *req);
};

extern const struct ff_backend ff_backend_bdev, ff_backend_file, ff_backend_ram,
	ff_backend_fault;

/* A regular file in tmpfs or ramfs (the ram backend), io/file.c. */
bool ff_file_in_memory(int fd);

/* Shared by the backends over a plain fd. */
int ff_fd_pread(struct ff_member *m, void *buf, size_t len, uint64_t off);
int ff_fd_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off);
int ff_fd_flush(struct ff_member *m);
void ff_uring_prep(struct io_uring_sqe *sqe, struct ff_io_req *req, void *buf, uint32_t len,
		   uint64_t off, int regbuf);

/* The backend a request to m goes through (the fault backend is put in
 * front while I/O runs: read it once per use). */
static inline const struct ff_backend *ff_member_backend(const struct ff_member *m)
{
	return __atomic_load_n(&m->backend, __ATOMIC_ACQUIRE);
}

#endif
