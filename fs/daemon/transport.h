/* SPDX-License-Identifier: MIT */
/*
 * How requests reach the daemon: FUSE over io_uring (libfuse >= 3.18, the
 * kernel's fuse.enable_uring on) or over /dev/fuse, and how large they may
 * be.  main() chooses before the session starts, op_init() settles the
 * request size, every handler counts its request, and the control socket
 * reports the result.
 */
#ifndef FFS_TRANSPORT_H
#define FFS_TRANSPORT_H

#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* libfuse 3.18 serves each CPU's queue from one thread, so the depth is how
 * many requests of that CPU the kernel may hand over before the first is
 * answered.  Depths 2, 8 and 32 measured within the noise of one another
 * (2026-12-01, frametest 4k, 4 threads, RAID5 x 4 on tmpfs, three
 * interleaved rounds: writes 2600-3450, 2780-3900 and 2430-3610 MB/s); 8
 * keeps the ring's buffers (depth x request size per CPU) small. */
#define FFS_URING_DEPTH_DEFAULT 8u
#define FFS_URING_DEPTH_MAX 256u

struct ffs_transport {
	char libfuse[16];        /* fuse_pkgversion() */
	bool uring_asked;        /* -o io_uring given to libfuse */
	unsigned depth;          /* io_uring queue depth, when asked */
	char why_dev[200];       /* why /dev/fuse, when io_uring was not asked */
	unsigned req_bytes;      /* max_write / largest read, settled at INIT */
	unsigned pages_limit;    /* the kernel's fs.fuse.max_pages_limit */
	_Atomic uint64_t uring_reqs, dev_reqs;
};

extern struct ffs_transport ffs_transport;

/*
 * Decide the transport: want is "dev" (/dev/fuse), or NULL or "io_uring"
 * (FUSE over io_uring where it can serve: the default, transport.c says
 * why).  Adds libfuse's io_uring options to args when io_uring is possible;
 * otherwise records why not.  Returns 0, or -EINVAL for a bad
 * want or depth (the message is printed).
 */
int ffs_transport_choose(struct fuse_args *args, const char *want, unsigned depth);

/* The request size for a volume of this stripe size: as many whole stripes
 * as the kernel's max_pages_limit allows, or the largest power of two within
 * it when one stripe does not fit.  Records it in ffs_transport. */
unsigned ffs_transport_req_bytes(uint64_t stripe_bytes);

/* Count one request by the transport it came on. */
static inline void ffs_transport_count(fuse_req_t req)
{
#if FUSE_VERSION >= FUSE_MAKE_VERSION(3, 18)
	if (fuse_req_is_uring(req)) {
		atomic_fetch_add_explicit(&ffs_transport.uring_reqs, 1, memory_order_relaxed);
		return;
	}
#else
	(void)req;
#endif
	atomic_fetch_add_explicit(&ffs_transport.dev_reqs, 1, memory_order_relaxed);
}

/* What the requests so far came on: "io_uring", "/dev/fuse", or "io_uring
 * (starting)" while no request has yet come over the ring it asked for. */
const char *ffs_transport_name(const struct ffs_transport *t);

/* Over io_uring, start the pool that answers requests which may wait
 * (offload.h), and say in the log whether it runs and why not. */
void ffs_transport_offload_start(void);

/* The status's "fuse" object (ffs_ctl_start). */
struct json_object *ffs_transport_json(void);

#endif
