/* SPDX-License-Identifier: MIT */
#include "io/uring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "io/backend.h"

#define RETRIES_MAX 1000
#define ERRORS_LOGGED_MAX 32

/* user_data tags: requests are at least 8-byte aligned, so the low bit marks
 * a completion of a held request's timer rather than of the op. */
#define TAG_DELAY 1ul

/* The ring's own fd for member m (fd: its fd, -1 if missing) when its
 * requests run on the ring's thread (sync_io), else -1.  A failed dup
 * (EMFILE) sends them through io_uring instead. */
static int sync_dup(const struct ff_member *m, int fd)
{
	return fd >= 0 && m->sync_io ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
}

int ff_ring_init(struct ff_ring *r, struct ff_member *const *members, unsigned nmembers,
		 unsigned depth)
{
	struct io_uring_params p;
	int fds[256];
	int rc;

	FF_ASSERT(depth > 0 && depth <= 4096);
	FF_ASSERT(nmembers <= FF_RING_MEMBERS_MAX);
	memset(r, 0, sizeof(*r));
	r->members = members;
	r->nmembers = nmembers;
	r->depth = depth;
	r->wake_fd = -1;
	for (unsigned i = 0; i < FF_RING_MEMBERS_MAX; i++) {
		r->sync_fd[i] = -1;
		atomic_init(&r->sync_next[i], FF_RING_NO_UPDATE);
	}
	memset(&p, 0, sizeof(p));
	/* CQ twice the SQ so that completions of a full SQ plus delay timers
	 * can never overflow. */
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_COOP_TASKRUN;
	p.cq_entries = depth * 2 + 2;
	rc = io_uring_queue_init_params(depth + 1, &r->ring, &p);
	if (rc == -EINVAL) {
		p.flags = IORING_SETUP_CQSIZE;
		rc = io_uring_queue_init_params(depth + 1, &r->ring, &p);
	}
	if (rc < 0)
		return rc;
	for (unsigned i = 0; i < nmembers; i++) {
		fds[i] = members[i]->fd; /* -1 for a missing member: an empty slot */
		r->sync_fd[i] = sync_dup(members[i], fds[i]);
	}
	if (nmembers) {
		rc = io_uring_register_files(&r->ring, fds, nmembers);
		if (rc < 0) {
			ff_ring_exit(r);
			return rc;
		}
	}
	return 0;
}

/* On the ring's thread, before it runs requests: take the dups member
 * updates handed over, closing the ones they replace (no request of this
 * thread is inside a pread/pwrite on them now). */
static void take_updates(struct ff_ring *r)
{
	if (!atomic_exchange(&r->sync_updated, false))
		return;
	for (unsigned i = 0; i < r->nmembers; i++) {
		int fd = atomic_exchange(&r->sync_next[i], FF_RING_NO_UPDATE);

		if (fd == FF_RING_NO_UPDATE)
			continue;
		if (r->sync_fd[i] >= 0)
			close(r->sync_fd[i]);
		r->sync_fd[i] = fd;
	}
}

void ff_ring_exit(struct ff_ring *r)
{
	FF_ASSERT(!r->inflight || r->wake_fd >= 0);
	io_uring_queue_exit(&r->ring);
	take_updates(r);
	for (unsigned i = 0; i < r->nmembers; i++)
		if (r->sync_fd[i] >= 0)
			close(r->sync_fd[i]);
}

int ff_ring_update_member(struct ff_ring *r, unsigned index, int fd)
{
	int rc, dup, old;

	FF_ASSERT(index < r->nmembers);
	rc = io_uring_register_files_update(&r->ring, index, &fd, 1);
	if (rc < 0)
		return rc;
	dup = sync_dup(r->members[index], fd);
	/* an update the ring's thread has not taken yet was never used: ours to close */
	old = atomic_exchange(&r->sync_next[index], dup);
	if (old >= 0)
		close(old);
	atomic_store(&r->sync_updated, true);
	return 0;
}

int ff_ring_register_buffers(struct ff_ring *r, const struct iovec *iov, unsigned n)
{
	int rc;

	if (n > FF_RING_REGBUF_MAX)
		return -E2BIG;
	if (r->nregbuf)
		io_uring_unregister_buffers(&r->ring);
	r->nregbuf = 0;
	rc = io_uring_register_buffers(&r->ring, iov, n);
	if (rc < 0)
		return rc;
	memcpy(r->regbuf, iov, n * sizeof(*iov));
	r->nregbuf = n;
	return 0;
}

static int regbuf_index(const struct ff_ring *r, const void *buf, uint32_t len)
{
	for (unsigned i = 0; i < r->nregbuf; i++) {
		const char *base = r->regbuf[i].iov_base;

		if ((const char *)buf >= base &&
		    (const char *)buf + len <= base + r->regbuf[i].iov_len)
			return (int)i;
	}
	return -1;
}

static void push_done(struct ff_ring *r, struct ff_io_req *req)
{
	req->next = NULL;
	if (r->done_tail)
		r->done_tail->next = req;
	else
		r->done_head = req;
	r->done_tail = req;
}

static void push_backlog_front(struct ff_ring *r, struct ff_io_req *req)
{
	req->next = r->backlog_head;
	r->backlog_head = req;
	if (!r->backlog_tail)
		r->backlog_tail = req;
}

/* The io_uring op for the rest of req: what the bdev, file and ram backends
 * issue (and the fault backend, for the one it wraps). */
void ff_uring_prep(struct io_uring_sqe *sqe, struct ff_io_req *req, void *buf, uint32_t len,
		   uint64_t off, int regbuf)
{
	switch (req->op) {
	case FF_IO_READ:
		if (regbuf >= 0)
			io_uring_prep_read_fixed(sqe, req->member, buf, len, off, regbuf);
		else
			io_uring_prep_read(sqe, req->member, buf, len, off);
		break;
	case FF_IO_WRITE:
		if (regbuf >= 0)
			io_uring_prep_write_fixed(sqe, req->member, buf, len, off, regbuf);
		else
			io_uring_prep_write(sqe, req->member, buf, len, off);
		break;
	case FF_IO_FSYNC:
		io_uring_prep_fsync(sqe, req->member, IORING_FSYNC_DATASYNC);
		break;
	default:
		FF_ASSERT(!"unknown op");
	}
	sqe->flags |= IOSQE_FIXED_FILE;
}

/* Prepare one SQE for req; the caller has checked space and the depth cap. */
static void prep_op(struct ff_ring *r, struct io_uring_sqe *sqe, struct ff_io_req *req)
{
	char *buf = (char *)req->buf + req->done;
	uint32_t len = req->len - req->done;
	int bi = req->op == FF_IO_FSYNC ? -1 : regbuf_index(r, buf, len);

	ff_member_backend(r->members[req->member])->prep(sqe, req, buf, len, req->off + req->done,
							 bi);
	io_uring_sqe_set_data(sqe, req);
}

/* First dispatch of a request: its backend may fail it now (false: it is
 * done) or hold it on a timer first. */
static bool backend_start(struct ff_ring *r, struct ff_io_req *req)
{
	struct ff_member *m = r->members[req->member];
	const struct ff_backend *b = ff_member_backend(m);
	struct ff_io_hold hold = { 0, 0 };

	if (req->started || req->done || !b->start)
		return true;
	req->started = b;
	b->start(m, req, &hold);
	if (hold.error && !hold.delay_us) {
		req->result = -hold.error;
		push_done(r, req);
		return false;
	}
	if (hold.delay_us) { /* an error too: it comes when the hold ends */
		req->late_error = (uint16_t)hold.error;
		req->delay.tv_sec = hold.delay_us / 1000000;
		req->delay.tv_nsec = (long long)(hold.delay_us % 1000000) * 1000;
		req->delayed = 1;
	}
	return true;
}

static void handle_cqe(struct ff_ring *r, struct ff_io_req *req, int res, bool delay_done);

/* A request to a sync_io member, run here; it completes like a CQE would. */
static void run_sync(struct ff_ring *r, struct ff_io_req *req, int fd)
{
	char *buf = (char *)req->buf + req->done;
	size_t len = req->len - req->done;
	off_t off = (off_t)(req->off + req->done);
	ssize_t n;

	if (!req->submit_ns)
		req->submit_ns = ff_mono_ns();
	switch (req->op) {
	case FF_IO_READ: n = pread(fd, buf, len, off); break;
	case FF_IO_WRITE: n = pwrite(fd, buf, len, off); break;
	default: n = fdatasync(fd); break;
	}
	r->sync_done++;
	handle_cqe(r, req, n < 0 ? -errno : (int)n, false);
}

/* Move backlog requests into SQEs while space and the depth cap allow
 * (requests to sync_io members run at once instead). */
static void fill_sq(struct ff_ring *r)
{
	take_updates(r);
	while (r->backlog_head && r->inflight + r->queued < r->depth) {
		struct ff_io_req *req = r->backlog_head;
		struct io_uring_sqe *sqe;
		int sfd;

		r->backlog_head = req->next;
		if (!r->backlog_head)
			r->backlog_tail = NULL;
		if (!backend_start(r, req))
			continue;
		sfd = r->sync_fd[req->member];
		if (sfd >= 0 && req->delayed != 1) {
			run_sync(r, req, sfd);
			continue;
		}
		sqe = io_uring_get_sqe(&r->ring);
		FF_ASSERT(sqe != NULL); /* SQ has depth + 1 entries */
		req->in_kernel = 1;
		if (!req->submit_ns)
			req->submit_ns = ff_mono_ns();
		if (req->delayed == 1) {
			io_uring_prep_timeout(sqe, &req->delay, 0, 0);
			io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)req | TAG_DELAY);
			req->delayed = 2;
		} else {
			prep_op(r, sqe, req);
		}
		r->queued++;
	}
}

void ff_ring_queue(struct ff_ring *r, struct ff_io_req *req)
{
	FF_ASSERT(req->member < r->nmembers);
	FF_ASSERT(req->op == FF_IO_FSYNC || (req->len > 0 && req->buf));
	FF_ASSERT(((uintptr_t)req & TAG_DELAY) == 0);
	req->done = 0;
	req->retries = 0;
	req->delayed = 0;
	req->late_error = 0;
	req->started = NULL;
	req->result = 0;
	req->next = NULL;
	req->submit_ns = 0;
	req->in_kernel = 0;
	req->cancelled = 0;
	if (r->backlog_tail)
		r->backlog_tail->next = req;
	else
		r->backlog_head = req;
	r->backlog_tail = req;
}

int ff_ring_submit(struct ff_ring *r)
{
	int rc;

	fill_sq(r);
	if (!r->queued)
		return 0;
	do {
		rc = io_uring_submit(&r->ring);
	} while (rc == -EINTR || rc == -EAGAIN);
	if (rc < 0)
		return rc;
	r->inflight += (unsigned)rc;
	r->queued -= (unsigned)rc;
	return 0;
}

static void log_error(struct ff_ring *r, const struct ff_io_req *req)
{
	static const char *opname[] = { "?", "read", "write", "flush" };

	if (r->errors_logged++ < ERRORS_LOGGED_MAX)
		ff_log(FF_LOG_ERR, "member %s: %s of %u bytes at %llu failed: %s",
		       r->members[req->member]->path, opname[req->op], req->len,
		       (unsigned long long)req->off, strerror(-req->result));
}

/* One CQE for req: finish it, or put its remainder back on the backlog. */
static void handle_cqe(struct ff_ring *r, struct ff_io_req *req, int res, bool delay_done)
{
	req->in_kernel = 0;
	if (req->cancelled) { /* cancelled, or ran before the cancel reached it */
		if (res == -ECANCELED || (delay_done && res == -ETIME) || delay_done) {
			req->result = -ECANCELED;
			push_done(r, req);
			return;
		}
	}
	if (delay_done && req->late_error) { /* the backend's error, late */
		res = -req->late_error;
	} else if (delay_done) {
		req->delayed = 3; /* timer fired: issue the op itself */
		push_backlog_front(r, req);
		return;
	}
	if ((res == -EAGAIN || res == -EINTR) && req->retries++ < RETRIES_MAX) {
		push_backlog_front(r, req);
		return;
	}
	if (res > 0 && req->op != FF_IO_FSYNC) {
		req->done += (uint32_t)res;
		if (req->done < req->len) { /* short transfer: continue from there */
			push_backlog_front(r, req);
			return;
		}
		req->result = (int)req->len;
	} else if (res == 0 && req->op != FF_IO_FSYNC) {
		req->result = -EIO; /* end of member: it shrank under us */
	} else {
		req->result = res;
	}
	push_done(r, req);
}

static void rearm_wake(struct ff_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	FF_ASSERT(sqe != NULL);
	io_uring_prep_read(sqe, r->wake_fd, &r->wake_val, sizeof(r->wake_val), 0);
	io_uring_sqe_set_data(sqe, &r->wake_req);
	r->queued++;
}

static void rearm_tick(struct ff_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->ring);

	FF_ASSERT(sqe != NULL);
	io_uring_prep_timeout(sqe, &r->tick, 0, 0);
	io_uring_sqe_set_data(sqe, &r->tick_req);
	r->queued++;
}

int ff_ring_set_tick(struct ff_ring *r, uint64_t tick_ns)
{
	FF_ASSERT(!r->ticking);
	r->tick.tv_sec = (long long)(tick_ns / 1000000000ull);
	r->tick.tv_nsec = (long long)(tick_ns % 1000000000ull);
	r->ticking = true;
	rearm_tick(r);
	return ff_ring_submit(r);
}

int ff_ring_cancel(struct ff_ring *r, struct ff_io_req *req)
{
	struct io_uring_sqe *sqe;
	uint64_t ud = (uint64_t)(uintptr_t)req | (req->delayed == 2 ? TAG_DELAY : 0);

	if (!req->in_kernel || req->cancelled || r->ncancel == 16)
		return -EAGAIN;
	sqe = io_uring_get_sqe(&r->ring);
	if (!sqe)
		return -EAGAIN;
	io_uring_prep_cancel64(sqe, ud, 0);
	io_uring_sqe_set_data(sqe, &r->cancel_req[r->ncancel++]);
	r->queued++;
	req->cancelled = 1;
	return ff_ring_submit(r);
}

int ff_ring_set_wake_fd(struct ff_ring *r, int efd)
{
	FF_ASSERT(r->wake_fd < 0);
	r->wake_fd = efd;
	rearm_wake(r); /* the wake read stays in flight and counts against depth */
	return ff_ring_submit(r);
}

static void rearm_tick(struct ff_ring *r);

static unsigned drain_cq(struct ff_ring *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;

	io_uring_for_each_cqe(&r->ring, head, cqe) {
		uint64_t ud = io_uring_cqe_get_data64(cqe);
		struct ff_io_req *req = (struct ff_io_req *)(uintptr_t)(ud & ~TAG_DELAY);

		seen++;
		r->inflight--;
		if (req == &r->wake_req) {
			r->woken = true;
			rearm_wake(r);
			continue;
		}
		if (req == &r->tick_req) {
			r->woken = true;
			rearm_tick(r);
			continue;
		}
		if (req >= r->cancel_req && req < r->cancel_req + 16) {
			r->ncancel--;
			continue;
		}
		handle_cqe(r, req, cqe->res, (ud & TAG_DELAY) != 0);
	}
	io_uring_cq_advance(&r->ring, seen);
	return seen;
}

static int run_done(struct ff_ring *r)
{
	int n = 0;

	while (r->done_head) {
		struct ff_io_req *req = r->done_head;

		r->done_head = req->next;
		if (!r->done_head)
			r->done_tail = NULL;
		if (req->started && req->started->end) /* the backend may have changed since */
			req->started->end(r->members[req->member], req);
		if (req->result < 0)
			log_error(r, req);
		n++;
		if (req->complete)
			req->complete(req);
	}
	return n;
}

int ff_ring_reap(struct ff_ring *r, bool wait)
{
	int rc, n = 0;

	r->woken = false;
	for (;;) {
		rc = ff_ring_submit(r);
		if (rc < 0)
			return rc;
		drain_cq(r);
		n += run_done(r);
		/* callbacks may have queued more work: push it before sleeping —
		 * unless the depth cap holds it back, then only a completion helps */
		if (r->queued || (r->backlog_head && r->inflight + r->queued < r->depth))
			continue;
		if (n > 0 || r->woken || !wait || !r->inflight)
			return n;
		rc = io_uring_submit_and_wait(&r->ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -ETIME)
			return rc;
		if (rc > 0) {
			r->inflight += (unsigned)rc;
			r->queued -= (unsigned)rc;
		}
	}
}

int ff_ring_run(struct ff_ring *r, struct ff_io_req *reqs, unsigned n)
{
	unsigned left = n;
	int first_err = 0;

	for (unsigned i = 0; i < n; i++) {
		FF_ASSERT(reqs[i].complete == NULL);
		ff_ring_queue(r, &reqs[i]);
	}
	while (left > 0) {
		int rc = ff_ring_reap(r, true);

		if (rc < 0)
			return rc;
		left -= FF_MIN(left, (unsigned)rc);
	}
	for (unsigned i = 0; i < n; i++)
		if (reqs[i].result < 0 && !first_err)
			first_err = reqs[i].result;
	return first_err;
}
