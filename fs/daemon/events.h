/* SPDX-License-Identifier: MIT */
/*
 * The event hook (-o event_cmd=PROGRAM): events from the engine and the
 * library (raid/raid.h, struct ff_event) go into a bounded queue; one
 * thread runs PROGRAM for each, as PROGRAM EVENT VOLUME [MEMBER].
 */
#ifndef FF_DAEMON_EVENTS_H
#define FF_DAEMON_EVENTS_H

#include "fs/ffs.h"

struct ffs_events;

/* Start the queue and its thread; program may be NULL (events are then
 * only logged, by raid/event.c).  volume is the mountpoint; a hook still
 * running timeout_s seconds after it started is killed (0 = 30).  Call after
 * the daemon went to the background: the thread would not survive fork.
 * A program that cannot be run is logged, and does not stop the mount. */
int ffs_events_start(const char *program, const char *volume, unsigned timeout_s,
		     struct ffs_events **out);
/* What ffs_opts.event_fn / event_ctx get. */
void ffs_events_post(void *ctx, const struct ff_event *ev);
/* The volume is mounted: hooks run from now on, with its uuid and label. */
void ffs_events_ready(struct ffs_events *e, const uint8_t uuid[16], const char *label);
/* Stop the thread; events still queued are logged as not run.  NULL is a no-op. */
void ffs_events_stop(struct ffs_events *e);

#endif
