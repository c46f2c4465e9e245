/* SPDX-License-Identifier: MIT */
/*
 * One run: N streams, each with its own scheduler, records and T worker
 * threads doing blocking open / pread|pwrite / close per frame.  Everything
 * (frame buffers, records, the write queue) is allocated by ft_run_prepare;
 * the frame loop does not allocate.
 */
#ifndef FT_ENGINE_H
#define FT_ENGINE_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "names.h"
#include "pacing.h"
#include "verify.h"

#define FT_VMSG_MAX 8	/* verification failures kept word for word, per stream */

struct ft_run;

struct ft_stream {
	uint32_t id;
	int dirfd;		/* the stream's directory */
	int filefd;		/* -s: the stream's one file, else -1 */
	uint64_t *offsets;	/* -s with --vary: frame i at offsets[i]; [frames] = file size */
	uint64_t total_bytes;	/* all its frames (-n), once each */
	struct ft_rec *recs;	/* one per position, play order */
	uint32_t *perm;		/* -m: position -> file index */
	pthread_mutex_t lock;	/* guards sched, error and vmsg */
	struct ft_sched sched;
	_Atomic uint64_t done;	/* transferred frames */
	_Atomic uint64_t bytes;
	_Atomic uint64_t dropped;
	_Atomic uint64_t vfail;
	char error[320];	/* the first I/O error, which stops the stream */
	uint32_t nvmsg;
	char vmsg[FT_VMSG_MAX][280];
};

struct ft_worker {
	struct ft_run *run;
	struct ft_stream *st;
	pthread_t tid;
	bool started;
	void *buf;		/* one frame, aligned for O_DIRECT */
	char path[4096];
};

struct ft_run {
	const struct ft_config *cfg;
	uint32_t nstreams;
	bool own_dirs;		/* streams in DIR/streamNN */
	bool write;
	struct ft_pace pace;
	uint64_t positions;	/* per stream: frames * loops */
	uint64_t frame_bytes;	/* with --vary: the largest frame (the buffers' size) */
	struct ft_vary vary;	/* --vary, or found in a read test's first frame */
	bool vary_detected;
	uint64_t io_off, io_len;	/* the part of each frame moved (-c); --vary: per frame */
	uint64_t align;		/* O_DIRECT offset/length alignment */
	bool direct;
	bool verify;
	bool size_detected;
	struct ft_names names;
	struct ft_stamp stamp;
	bool stamp_ready;
	int topfd;
	struct ft_stream *streams;
	uint32_t streams_ready;	/* streams whose lock was initialized */
	struct ft_worker *workers;
	uint32_t nworkers;
	pthread_mutex_t gate_lock;	/* workers wait here until t0 is set */
	pthread_cond_t gate_cond;
	bool gate_ready;
	bool go;
	uint64_t t0;		/* CLOCK_MONOTONIC ns */
	uint64_t duration_ns;
	_Atomic uint32_t running;
	bool interrupted;	/* stopped early by SIGINT / SIGTERM */
	char dio_note[400];	/* what happened to O_DIRECT, for the user */
	char space_note[200];
};

uint64_t ft_now_ns(void);
/* Set from a signal handler: the run stops handing out frames and reports. */
extern volatile sig_atomic_t ft_interrupt;
/* 0, or -errno with a one-line reason in err. */
int ft_run_prepare(struct ft_run *run, const struct ft_config *cfg, uint32_t nstreams,
		   bool own_dirs, char *err, size_t errlen);
/* Runs the workers; calls tick about every update_s seconds from this thread. */
typedef void (*ft_tick_fn)(void *ctx, const struct ft_run *run, uint64_t now_rel_ns);
int ft_run_execute(struct ft_run *run, ft_tick_fn tick, void *ctx, char *err, size_t errlen);
void ft_run_free(struct ft_run *run);

#endif
