/* SPDX-License-Identifier: MIT */
/*
 * The FUSE transport (transport.h).
 *
 * FUSE over io_uring is the default where it can serve, and
 * -o transport=dev asks for /dev/fuse.  Measured on this 2-core machine
 * (libfuse 3.18.3 with setup.sh's patch, kernel 6.18, RAID5 x 4 on tmpfs,
 * 2026-12-05): the whole integration, failure, stream,
 * sharing and frametest suites pass over it (IT_TRANSPORT=io_uring); frames
 * move at least as fast (2026-12-04, frames.sh RUNS=3: O_DIRECT write 3208
 * against 3221 MB/s, read 3997 against 3441); 4 KiB random writes with
 * fsync=64 alike (81.0 and 75.1 against 82.8 and 70.8 MB/s).  Empty-file
 * creates are 15-20 % slower (framefs-createrate -t 4: 5052-6383 against
 * 6767-7275 a second): each create is three round trips, and each costs
 * more over the ring here; that is still ten times what eight 60 fps
 * streams create.  An O_DIRECT read over io_uring costs one copy more
 * (from the stripe cache into the ring's buffer, where /dev/fuse's writev
 * copies straight from the cache); a buffered reader's request is read
 * from the members straight into the ring's buffer instead (fuse_ops.c,
 * read_into_reply).  libfuse serves each CPU's queue from one thread that
 * runs the handler; the handlers that wait for a commit or for a file's
 * buffers run on offload.c's workers instead, so they do not hold up their
 * CPU's queue.
 *
 * SIGTERM with requests in flight used to hang the daemon over io_uring
 * (sigterm-busy-clean: 7 times in 10, and 3 more left leaked stripes that
 * fsck found): libfuse ends its queue threads with pthread_cancel, and they
 * run the handlers with cancellation on, so a handler died in a
 * pthread_cond_wait holding framefs's mutexes.  Handlers now run with
 * cancellation off (fuse_ops.c, cancel_off); sigterm-busy-clean-uring
 * checks it (20 of 20 runs clean on 2026-12-01).
 *
 * io_uring needs three things, checked
 * here in the order a user can fix them: libfuse >= 3.18 in the build, the
 * kernel's fuse.enable_uring parameter on, and io_uring open to this user
 * (kernel.io_uring_disabled).  A ring that still fails to start is reported
 * by libfuse itself (main.c routes its log to ours), and the request
 * counters then show /dev/fuse.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "fs/daemon/offload.h"
#include "fs/daemon/transport.h"
#include "io/ff_common.h"

struct ffs_transport ffs_transport;

/* The first character of a one-line /sys or /proc file, or 0. */
static int read_flag(const char *path)
{
	char c = 0;
	FILE *f = fopen(path, "r");

	if (!f)
		return 0;
	if (fread(&c, 1, 1, f) != 1)
		c = 0;
	fclose(f);
	return c;
}

static unsigned read_uint(const char *path, unsigned dflt)
{
	unsigned v;
	FILE *f = fopen(path, "r");

	if (!f)
		return dflt;
	if (fscanf(f, "%u", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/* Why io_uring cannot serve this mount, or NULL when it can. */
static const char *uring_blocker(void)
{
	int disabled = read_flag("/proc/sys/kernel/io_uring_disabled");

	if (FUSE_VERSION < FUSE_MAKE_VERSION(3, 18))
		return "this framefs is built on a libfuse older than 3.18, which has no FUSE over "
		       "io_uring (./setup.sh builds libfuse 3.18)";
	if (read_flag("/sys/module/fuse/parameters/enable_uring") != 'Y')
		return "the kernel's fuse.enable_uring is off (as root: echo 1 > "
		       "/sys/module/fuse/parameters/enable_uring, or boot with fuse.enable_uring=1)";
	if (disabled == '2' || (disabled == '1' && geteuid() != 0))
		return "io_uring is closed to this user (sysctl kernel.io_uring_disabled)";
	return NULL;
}

int ffs_transport_choose(struct fuse_args *args, const char *want, unsigned depth)
{
	struct ffs_transport *t = &ffs_transport;
	const char *blocker;

	snprintf(t->libfuse, sizeof(t->libfuse), "%s", fuse_pkgversion());
	t->pages_limit = read_uint("/proc/sys/fs/fuse/max_pages_limit", 256);
	if (want && strcmp(want, "io_uring") != 0 && strcmp(want, "dev") != 0) {
		fprintf(stderr, "framefs: transport=%s: give transport=io_uring or transport=dev\n", want);
		return -EINVAL;
	}
	if (depth > FFS_URING_DEPTH_MAX) {
		fprintf(stderr, "framefs: uring_depth=%u: give 1 to %u\n", depth, FFS_URING_DEPTH_MAX);
		return -EINVAL;
	}
	if (want && strcmp(want, "dev") == 0) {
		snprintf(t->why_dev, sizeof(t->why_dev), "transport=dev was asked for");
		return 0;
	}
	blocker = uring_blocker();
	if (blocker) {
		snprintf(t->why_dev, sizeof(t->why_dev), "%s", blocker);
		return 0;
	}
	t->depth = depth ? depth : FFS_URING_DEPTH_DEFAULT;
	char opt[64];

	snprintf(opt, sizeof(opt), "-oio_uring,io_uring_q_depth=%u", t->depth);
	if (fuse_opt_add_arg(args, opt) != 0)
		return -ENOMEM;
	t->uring_asked = true;
	return 0;
}

unsigned ffs_transport_req_bytes(uint64_t stripe_bytes)
{
	uint64_t limit = (uint64_t)ffs_transport.pages_limit * 4096;
	uint64_t b = stripe_bytes;

#if FUSE_VERSION < FUSE_MAKE_VERSION(3, 18)
	/* older libfuse reads every request into a buffer of 256 pages and
	 * lowers max_write to fit */
	limit = FF_MIN(limit, 256u * 4096);
#endif
	if (b > limit) {
		for (b = 4096; b * 2 <= limit; b *= 2)
			;
	} else if (b > 0) {
		b = limit / b * b; /* whole stripes: each request fills some */
	}
	ffs_transport.req_bytes = (unsigned)b;
	return (unsigned)b;
}

void ffs_transport_offload_start(void)
{
	const struct ffs_transport *t = &ffs_transport;
	/* libfuse makes one queue per configured CPU (get_nprocs_conf) */
	unsigned queues = (unsigned)get_nprocs_conf();
	int rc;

	if (!t->uring_asked)
		return;
	rc = ffs_offload_start(queues, t->depth);
	if (rc == -ENOTSUP)
		ff_log(FF_LOG_INFO, "libfuse %s lacks setup.sh's patch (fs/daemon/fuse3-uring-any-"
		       "thread.patch): requests that wait hold up their CPU's io_uring queue",
		       t->libfuse);
	else if (rc < 0)
		ff_log(FF_LOG_ERR, "cannot start the io_uring worker threads (%s): requests that "
		       "wait hold up their CPU's queue", strerror(-rc));
	else
		ff_log(FF_LOG_DEBUG, "io_uring: requests that may wait go to %u worker threads "
		       "(%u queues x depth %u)", FF_MIN(queues * t->depth, FFS_OFFLOAD_WORKERS_MAX),
		       queues, t->depth);
}

const char *ffs_transport_name(const struct ffs_transport *t)
{
	uint64_t u = atomic_load_explicit(&t->uring_reqs, memory_order_relaxed);
	uint64_t d = atomic_load_explicit(&t->dev_reqs, memory_order_relaxed);

	if (u > 0)
		return "io_uring";
	/* the first requests come over /dev/fuse even when the ring serves the
	 * rest: they may arrive before every queue is registered */
	return t->uring_asked && d <= 8 ? "io_uring (starting)" : "/dev/fuse";
}

json_object *ffs_transport_json(void)
{
	const struct ffs_transport *t = &ffs_transport;
	json_object *o = json_object_new_object();
	bool uring = strncmp(ffs_transport_name(t), "io_uring", 8) == 0;

	json_object_object_add(o, "libfuse", json_object_new_string(t->libfuse));
	json_object_object_add(o, "transport", json_object_new_string(ffs_transport_name(t)));
	json_object_object_add(o, "why_dev_fuse", uring ? NULL : json_object_new_string(
		t->uring_asked ? "io_uring was asked for but the kernel or the ring refused it "
		"(see the daemon's log)" : t->why_dev));
	json_object_object_add(o, "uring_depth", t->uring_asked ? json_object_new_uint64(t->depth) : NULL);
	json_object_object_add(o, "request_bytes", json_object_new_uint64(t->req_bytes));
	json_object_object_add(o, "max_pages_limit", json_object_new_uint64(t->pages_limit));
	json_object_object_add(o, "uring_requests", json_object_new_uint64(
		atomic_load_explicit(&t->uring_reqs, memory_order_relaxed)));
	json_object_object_add(o, "offloaded_requests", ffs_offload_active() ?
		json_object_new_uint64(ffs_offload_jobs()) : NULL);
	json_object_object_add(o, "offload_no_slot", ffs_offload_active() ?
		json_object_new_uint64(ffs_offload_no_slot()) : NULL);
	json_object_object_add(o, "dev_requests", json_object_new_uint64(
		atomic_load_explicit(&t->dev_reqs, memory_order_relaxed)));
	return o;
}
