/* SPDX-License-Identifier: MIT */
/*
 * One io_uring ring per thread, over a fixed table of members.
 *
 * The caller owns every ff_io_req; the ring never allocates.  Requests are
 * queued, submitted in batches, and completed by calling req->complete on
 * the ring's thread from ff_ring_reap().  The ring finishes short transfers,
 * retries -EAGAIN/-EINTR, and reports a final error once with the member's
 * path.  What differs between members is asked of the member's backend
 * (io/backend.h): it prepares each op, and may hold a request for a while
 * or fail it before it is issued (the fault backend, tests only).  At most `depth` requests are in
 * the kernel at once; the rest wait in a backlog (a full queue waits, it
 * never grows the kernel rings).
 *
 * Members are registered files; buffers inside regions given to
 * ff_ring_register_buffers() go out as READ_FIXED/WRITE_FIXED.
 *
 * A member with sync_io set (a file in RAM) has no device to wait for, and
 * io_uring would hand each of its buffered writes to one of the task's
 * worker threads anyway (tmpfs takes no non-blocking writes).  Its requests
 * run on the ring's own thread when they are submitted, with pread/pwrite/
 * fdatasync on the ring's duplicate of the member's fd, and complete through
 * the same path as a CQE: backend hooks, short transfers, retries and error
 * reports are the same.  A held request still waits on a kernel timer.
 */
#ifndef FF_URING_H
#define FF_URING_H

#include <liburing.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/member.h"

struct ff_backend;

enum ff_io_op { FF_IO_READ = 1, FF_IO_WRITE = 2, FF_IO_FSYNC = 3 };

struct ff_io_req {
	/* set by the caller */
	uint8_t op;
	uint16_t member;   /* index into the ring's member table */
	uint32_t len;
	uint64_t off;      /* member byte offset */
	void *buf;
	void (*complete)(struct ff_io_req *req);
	void *priv;
	uint32_t tag;      /* the caller's too: the ring leaves it alone */
	/* result: len on success, else -errno */
	int result;
	/* private to the ring */
	uint64_t submit_ns;   /* when it (or its delay timer) went to the kernel */
	uint8_t in_kernel;    /* an SQE of it is in flight */
	uint8_t cancelled;
	uint32_t done;
	uint16_t retries;
	const struct ff_backend *started; /* whose start hook ran: its end hook runs, NULL if none */
	uint8_t delayed;      /* 1: to hold, 2: held on a timer, 3: held, now issued */
	uint16_t late_error;  /* the backend's errno, returned when the hold ends */
	struct {              /* the member backend's, for this request (io/fault.c) */
		void *ctx;
		uint64_t seq;
		uint32_t bits;
		int32_t rule;
	} backend;
	struct __kernel_timespec delay;
	struct ff_io_req *next;
};

#define FF_RING_REGBUF_MAX 64
#define FF_RING_MEMBERS_MAX 256
#define FF_RING_NO_UPDATE (-2) /* sync_next: no member update waiting */

struct ff_ring {
	struct io_uring ring;
	struct ff_member *const *members;
	unsigned nmembers;
	unsigned depth;
	unsigned inflight;      /* SQEs the kernel owns (ops and delay timers) */
	struct ff_io_req *backlog_head, *backlog_tail;
	struct ff_io_req *done_head, *done_tail; /* completed without the kernel */
	unsigned nregbuf;
	struct iovec regbuf[FF_RING_REGBUF_MAX];
	int wake_fd;            /* eventfd that interrupts ff_ring_reap, -1 if none */
	uint64_t wake_val;
	struct ff_io_req wake_req;
	bool woken;
	struct ff_io_req tick_req;  /* periodic timer, when set */
	struct __kernel_timespec tick;
	bool ticking;
	struct ff_io_req cancel_req[16]; /* async-cancel SQEs (their CQEs carry no request) */
	unsigned ncancel;
	unsigned queued;        /* SQEs prepared but not yet submitted */
	uint64_t errors_logged;
	uint64_t sync_done;     /* requests run on the ring's thread (sync_io members) */
	/* dup of a sync_io member's fd, else -1: the ring's thread's own (it
	 * may be inside a pread/pwrite on one when an update comes) */
	int sync_fd[FF_RING_MEMBERS_MAX];
	/* what a member update hands over: the new dup (-1: none), taken, and
	 * the old one closed, by the ring's thread before it runs requests */
	_Atomic int sync_next[FF_RING_MEMBERS_MAX];
	_Atomic bool sync_updated;
};

/* depth: maximum requests in the kernel at once (<= 4096). */
int ff_ring_init(struct ff_ring *r, struct ff_member *const *members, unsigned nmembers,
		 unsigned depth);
void ff_ring_exit(struct ff_ring *r);

/* Point member slot `index` at a new fd (a member added or replaced); the
 * ring's members[index] already describes it.  Any thread may call it;
 * requests the ring runs after it returns go to the new fd.  Fails only
 * when io_uring does (the slot is then unchanged). */
int ff_ring_update_member(struct ff_ring *r, unsigned index, int fd);

/* Register buffer regions (start-up only; replaces earlier ones). */
int ff_ring_register_buffers(struct ff_ring *r, const struct iovec *iov, unsigned n);

/* An eventfd whose signal makes a blocking ff_ring_reap() return. */
int ff_ring_set_wake_fd(struct ff_ring *r, int efd);

/* Also wake ff_ring_reap every tick_ns (deadline checks). */
int ff_ring_set_tick(struct ff_ring *r, uint64_t tick_ns);

/* Ask the kernel to cancel req; it then completes with -ECANCELED unless it
 * already ran.  Returns 0 if a cancel went out. */
int ff_ring_cancel(struct ff_ring *r, struct ff_io_req *req);

/* Queue one request; it reaches the kernel on the next submit or reap. */
void ff_ring_queue(struct ff_ring *r, struct ff_io_req *req);

/* Push queued work to the kernel; returns 0 or -errno. */
int ff_ring_submit(struct ff_ring *r);

/* Submit, then complete what has finished.  With wait true, block until at
 * least one request completes or the wake fd fires (returns at once if
 * nothing is in flight).  Returns the number of requests completed. */
int ff_ring_reap(struct ff_ring *r, bool wait);

/* Requests queued, in flight or awaiting their callback. */
static inline bool ff_ring_busy(const struct ff_ring *r)
{
	return r->inflight || r->backlog_head || r->done_head || r->queued;
}

/* Run reqs (an array) to completion and return the first error, 0 if none.
 * Convenience for start-up and tests; complete callbacks must be NULL. */
int ff_ring_run(struct ff_ring *r, struct ff_io_req *reqs, unsigned n);

#endif
