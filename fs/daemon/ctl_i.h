/* SPDX-License-Identifier: MIT */
/*
 * Private to fs/daemon/ctl*.c: the request context and the helpers the
 * parts of the control code share (ctl.c: request words, JSON replies,
 * contexts; ctl_status.c: the status answer; ctl_cmd.c: the requests;
 * ctl_sock.c: the socket).
 */
#ifndef FFS_CTL_I_H
#define FFS_CTL_I_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "fs/daemon/ctl.h"

struct ffs_ctl {
	struct ffs *fs;           /* NULL: an array without its filesystem */
	struct ff_raid *r;
	char source[16];          /* "daemon" or "offline" */
	char *mountpoint;         /* daemon only */
	json_object *(*fuse_json)(void); /* daemon only: the FUSE transport (transport.c) */
	uint64_t rebuild_min_bps, rebuild_max_bps, scrub_min_bps, scrub_max_bps;
	/* the socket (daemon only) */
	int lfd;
	int stop_pipe[2];
	pthread_t thread;
	bool thread_started;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	dev_t sock_dev;
	ino_t sock_ino;
};

/* ---- JSON replies (ctl.c) ------------------------------------------------ */

json_object *ctl_jdbl(double v, const char *fmt);
void ctl_jadd_u64(json_object *o, const char *k, uint64_t v);
void ctl_jadd_str(json_object *o, const char *k, const char *v);
void ctl_jadd_bool(json_object *o, const char *k, bool v);
/* {"ok": false, "error": ..., "errno": ...} into *out; returns -|err|. */
int ctl_reply_error(json_object **out, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
json_object *ctl_reply_ok(const char *message);

/* ---- the status answer (ctl_status.c) ------------------------------------ */

const char *ctl_member_state_name(enum ff_member_state s);
json_object *ctl_rebuild_json(struct ff_raid *r);
json_object *ctl_scrub_json(struct ffs *fs);
json_object *ctl_grow_json(struct ffs *fs);
/* Members that cannot be read right now: failed, missing or not rebuilt. */
unsigned ctl_unreadable_roles(struct ff_raid *r, unsigned *rebuilding);
json_object *ctl_status_json(struct ffs_ctl *c);

/* ---- requests (ctl_cmd.c) ------------------------------------------------ */

/* Answer the request words w[0..nw) into *out: 0 or -errno. */
int ctl_dispatch(struct ffs_ctl *c, char **w, unsigned nw, json_object **out);
/* Hand the context's rates to the array and the scrub. */
void ctl_apply_rates(struct ffs_ctl *c);

#endif
