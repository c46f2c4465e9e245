/* SPDX-License-Identifier: MIT */
/*
 * frametest's command line, so that existing scripts work: single-letter
 * options with the value attached (-n1800) or separate (-n 1800), -r with
 * an optional size, plus long options for what frametest lacks.
 */
#ifndef FT_ARGS_H
#define FT_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sizes.h"

enum ft_mode { FT_MODE_READ, FT_MODE_WRITE };
enum ft_order { FT_ORDER_FORWARD, FT_ORDER_REVERSE, FT_ORDER_RANDOM };

/* Caps that keep every buffer and record array bounded and allocated at start. */
#define FT_THREADS_MAX 256u
#define FT_STREAMS_MAX 256u
#define FT_WORKERS_MAX 1024u	/* streams * threads */
#define FT_RECORDS_MAX 20000000ull	/* frames * loops * streams, ~1.3 GB of records */
#define FT_IOS_MAX 1024u

struct ft_config {
	enum ft_mode mode;
	bool empty;		/* -e */
	bool single_file;	/* -s */
	bool buffered;		/* --buffered: never O_DIRECT */
	bool no_verify;		/* --no-verify */
	bool list, help, version;
	bool json;		/* --json: JSON instead of the text report on stdout */
	const char *json_path;	/* --json=FILE: text report on stdout, JSON to FILE */
	uint64_t frame_bytes;	/* 0 in a read test without a size: taken from the files */
	char size_label[48];	/* "4k", "40000KiB", "empty", "3MiB-60MiB" */
	struct ft_vary vary;	/* --vary=MIN:MAX[,SEED]: every frame its own size */
	uint64_t io_size;	/* --io-size: bytes per I/O call, 0 = one call (or -i) */
	uint64_t frames;	/* -n */
	uint64_t loops;		/* -l */
	uint32_t threads;	/* -t, per stream */
	uint32_t queue_max;	/* -q */
	uint32_t prebuffer;	/* -b */
	uint32_t ios_per_frame;	/* -i */
	uint32_t files_per_dir;	/* -d, 0 = all in one directory */
	uint32_t crop_pct;	/* -c, 100 = whole frame */
	uint32_t header_kib;	/* --header */
	uint32_t streams;	/* --streams */
	uint32_t max_streams;	/* --max-streams[=LIMIT]; 0 = off */
	uint64_t fps_num, fps_den;	/* -f; num 0 = unpaced */
	enum ft_order order;	/* -v, -m */
	double pause_s;		/* -p */
	double update_s;	/* -u, 0 = no progress line */
	double hist_window_s;	/* -h, 0 = whole run */
	const char *csv_path;	/* -x */
	const char *name_pattern;	/* --name */
	const char *dir;
	char params[256];	/* "Test parameters:" echo, frametest style */
};

void ft_config_defaults(struct ft_config *c);
/* 0, or -EINVAL with a one-line message in err. */
int ft_args_parse(int argc, char **argv, struct ft_config *c, char *err, size_t errlen);
/* "24", "23.976", "24000/1001" -> num/den.  0 or -EINVAL. */
int ft_parse_fps(const char *s, uint64_t *num, uint64_t *den);
/* "24", "23.976", "29.97" for the report; buf gets at most len bytes. */
const char *ft_format_fps(uint64_t num, uint64_t den, char *buf, size_t len);
void ft_usage(FILE *out);

#endif
