/* SPDX-License-Identifier: MIT */
/* framefs-admin: private header shared by its files. */
#ifndef FF_ADMIN_H
#define FF_ADMIN_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "fs/daemon/ctl.h"

/* exit statuses */
enum { EX_OK = 0, EX_FAILED = 1, EX_USAGE = 2, EX_UNREACHABLE = 3 };

#define ADMIN_PATHS_MAX 64

enum vol_mode {
	VOL_STATUS, /* read-only: filesystem if it mounts, else the array alone */
	VOL_RW,     /* read-write: the filesystem (the array alone if that fails) */
};

/* A volume: a running daemon's control socket, or members opened here. */
struct vol {
	bool online;
	char sock[108];
	char mnt[PATH_MAX];
	/* offline */
	char *paths[ADMIN_PATHS_MAX];
	unsigned npaths;
	struct ffs *fs;
	struct ff_raid *r;
	struct ffs_ctl *ctl;
};

/* volume.c */
/* Decide what the operands name: a mountpoint (one operand) or members
 * (one comma list, UUID=, LABEL= (raid.h: ff_members_resolve), or several paths).  EX_* on failure, message printed. */
int vol_resolve(struct vol *v, char *const *operands, unsigned n, const char *sock_override);
/* --members=GLOB[:GLOB]: where a UUID=/LABEL= operand also looks for file members */
extern const char *vol_members_glob;
/* Offline: refuse members a running daemon serves; assemble. */
int vol_open(struct vol *v, enum vol_mode mode, bool json);
void vol_close(struct vol *v);
/* One request; *reply is the daemon's (or in-process) JSON answer. */
int vol_request(struct vol *v, const char *const *words, unsigned n, json_object **reply);
/* A member path as the daemon must see it: absolute, symlinks resolved. */
int abs_path(const char *in, char *out, size_t len);

/* render.c */
void render_status(json_object *st, FILE *f);
void render_scrub(json_object *sc, FILE *f, const char *indent);
/* scrub status: every scrub the superblock recorded, newest first. */
void render_scrub_history(json_object *sc, FILE *f);
void render_grow(json_object *gr, FILE *f, const char *indent);
/* The answer of "times": one line per request and per wait inside it. */
void render_times(json_object *t, FILE *f);
/* One progress line: "[#####.....]  45.2%  phase  774.8 MiB/s  ETA 0:01:23". */
void render_progress(const char *what, json_object *prog, char *buf, size_t len);
const char *jstr(json_object *o, const char *key, const char *dflt);
double jnum(json_object *o, const char *key);
bool jbool(json_object *o, const char *key);
json_object *jget(json_object *o, const char *key);
void print_json(json_object *o, FILE *f);
/* Print the answer's error (ok false) on stderr, or its message on stdout. */
int report_answer(json_object *o, bool json, bool quiet);

/* metrics.c: the status in the Prometheus text format; -1 on a write error. */
int render_metrics(json_object *st, FILE *f);

/* footage.c: status --footage FORMAT@FPS */
struct footage {
	bool set;
	char format[64];      /* preset name, or "40000KiB" */
	uint64_t frame_bytes;
	double fps;
};
/* EX_OK, or EX_USAGE with the message printed. */
int footage_parse(const char *spec, struct footage *fo);
/* The status's "footage" object, or NULL when the status has no filesystem. */
json_object *footage_json(const struct footage *fo, json_object *st);
void render_footage(json_object *fj, FILE *f);

#endif
