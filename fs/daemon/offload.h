/* SPDX-License-Identifier: MIT */
/*
 * Requests that may wait, answered from the daemon's own threads when they
 * come over io_uring.
 *
 * libfuse 3.18 runs a handler on its CPU's one queue thread: a handler that
 * waits holds up every other request of that CPU.  The handlers that wait
 * for a commit or for a file's buffers to reach the members (fsync, flush,
 * release, fsyncdir, setattr: a truncation, fallocate) fill a job and hand
 * it to ffs_job_run(): over io_uring, on a libfuse that allows replies from
 * any thread (setup.sh's patch, FUSE_URING_REPLY_FROM_ANY_THREAD), a worker
 * of this pool runs it and replies; otherwise (/dev/fuse, whose libfuse
 * threads may wait, or a libfuse without the patch) it runs at once on the
 * calling thread.
 *
 * Reads and writes stay on the queue thread: their waits are short (a
 * member read, a stripe buffer coming free) and, handed to a worker, they
 * were slower (bench/frames.sh ONLY=ff5uring, 3 interleaved rounds,
 * 2026-12-04: O_DIRECT read 3274 MB/s offloaded against 4078 not, buffered
 * read 1444 against 2259; O_DIRECT write 2876 against 3384 with writes
 * inline too): the reply's copy then runs away from the queue's CPU.  A
 * buffered read's reads into its reply buffer do not wait on the queue
 * thread either: the engine's last completion replies (fuse_ops.c,
 * read_into_reply), and hands a read the members could not serve to this
 * pool with ffs_job_queue, which never runs the job on the calling thread.
 */
#ifndef FFS_OFFLOAD_H
#define FFS_OFFLOAD_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>

struct ffs_job {
	void (*run)(struct ffs_job *j); /* ends in the request's one reply */
	fuse_req_t req;
	fuse_ino_t ino;
	struct fuse_file_info fi;
	off_t off, len;  /* fallocate's range */
	int flag;        /* datasync, fallocate's mode, setattr's to_set */
	struct stat attr;
	uint64_t queued_ns; /* set by ffs_job_queue: its wait for a worker is timed */
};

/* Run the job: on a worker when its request came over io_uring and the
 * pool runs, else here.  j is copied. */
void ffs_job_run(const struct ffs_job *j);

/* Queue the job for a worker, never running it here (for a thread that
 * must not wait, an engine thread): false when it cannot (not over
 * io_uring, the pool not running, or no free slot), and nothing ran. */
bool ffs_job_queue(const struct ffs_job *j);

/* Start the pool for io_uring requests: one slot for each request the
 * kernel may hand over unanswered (queues x depth) and up to
 * FFS_OFFLOAD_WORKERS_MAX workers.  0, or -errno (the daemon then answers
 * on the queue threads, as without the patch). */
int ffs_offload_start(unsigned queues, unsigned depth);

/* After the FUSE session ended (libfuse has waited for every reply): let
 * the workers finish and join them.  Safe when never started. */
void ffs_offload_stop(void);

/* Whether io_uring requests go to the pool, and how many it ran. */
bool ffs_offload_active(void);
uint64_t ffs_offload_jobs(void);
/* Requests that found no free slot and ran on their queue thread: 0 while
 * the bound the pool is sized by holds. */
uint64_t ffs_offload_no_slot(void);

#define FFS_OFFLOAD_WORKERS_MAX 32u

#endif
