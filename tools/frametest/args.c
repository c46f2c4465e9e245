/* SPDX-License-Identifier: MIT */
#include "args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "pacing.h"
#include "presets.h"

enum argkind { ARG_NONE, ARG_REQ, ARG_OPT };

struct parse_state {
	struct ft_config *c;
	int argc;
	char **argv;
	int i;			/* argument being read */
	const char *size_arg;	/* -w SIZE / -r SIZE */
	const char *z_arg;	/* -z KB */
	bool mode_w, mode_r, streams_given;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct parse_state *ps, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void ft_config_defaults(struct ft_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = FT_MODE_READ;
	c->frames = 1800;
	c->loops = 1;
	c->threads = 1;
	c->queue_max = 5;
	c->prebuffer = 5;
	c->ios_per_frame = 1;
	c->crop_pct = 100;
	c->header_kib = FT_HEADER_KIB_DEFAULT;
	c->streams = 1;
	c->fps_den = 1;
	c->update_s = 1.0;
	c->order = FT_ORDER_FORWARD;
	c->name_pattern = FT_NAME_DEFAULT;
}

static int num_u64(struct parse_state *ps, const char *opt, const char *s, uint64_t min,
		   uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return fail(ps, "%s: '%s' is not a whole number", opt, s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0')
		return fail(ps, "%s: '%s' is not a whole number", opt, s);
	if (v < min || v > max)
		return fail(ps, "%s: %llu is out of range (%llu..%llu)", opt, v,
			    (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

static int num_u32(struct parse_state *ps, const char *opt, const char *s, uint32_t min,
		   uint32_t max, uint32_t *out)
{
	uint64_t v;
	int rc = num_u64(ps, opt, s, min, max, &v);

	if (!rc)
		*out = (uint32_t)v;
	return rc;
}

#define SECS_MAX 86400.0

static int num_secs(struct parse_state *ps, const char *opt, const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end != '\0' || !isfinite(v) || v < 0 || v > SECS_MAX)
		return fail(ps, "%s: '%s' is not a number of seconds (0..%.0f)", opt, s, SECS_MAX);
	*out = v;
	return 0;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

#define FPS_MAX 10000ull
#define FPS_DEN_MAX 1000000000ull
#define FPS_FRAC_DIGITS 6

int ft_parse_fps(const char *s, uint64_t *num, uint64_t *den)
{
	unsigned long long a, b = 1;
	const char *slash = strchr(s, '/'), *dot = strchr(s, '.');
	char *end;
	uint64_t g;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	a = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	if (slash && end == slash) {
		if (!isdigit((unsigned char)slash[1]))
			return -EINVAL;
		b = strtoull(slash + 1, &end, 10);
	} else if (dot && end == dot) {
		const char *f = dot + 1;
		int digits = 0;

		for (; isdigit((unsigned char)*f) && digits < FPS_FRAC_DIGITS; f++, digits++) {
			a = a * 10 + (unsigned long long)(*f - '0');
			b *= 10;
		}
		end = (char *)(uintptr_t)f;
	}
	if (errno || *end != '\0' || a == 0 || b == 0 || b > FPS_DEN_MAX || a > FPS_MAX * b)
		return -EINVAL;
	g = gcd_u64(a, b);
	*num = a / g;
	*den = b / g;
	return 0;
}

const char *ft_format_fps(uint64_t num, uint64_t den, char *buf, size_t len)
{
	size_t n;

	if (den == 1) {
		snprintf(buf, len, "%llu", (unsigned long long)num);
		return buf;
	}
	snprintf(buf, len, "%.3f", (double)num / (double)den);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

static bool looks_like_size(const char *s)
{
	if (ft_preset_find(s))
		return true;
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static int apply_short(struct parse_state *ps, char o, const char *v)
{
	struct ft_config *c = ps->c;
	char opt[3] = { '-', o, '\0' };

	switch (o) {
	case 'w': ps->mode_w = true; if (v) ps->size_arg = v; return 0;
	case 'r': ps->mode_r = true; if (v) ps->size_arg = v; return 0;
	case 'e': c->empty = true; return 0;
	case 's': c->single_file = true; return 0;
	case 'z': ps->z_arg = v; return 0;
	case 'v': c->order = FT_ORDER_REVERSE; return 0;
	case 'm': c->order = FT_ORDER_RANDOM; return 0;
	case 'n': return num_u64(ps, opt, v, 1, FT_RECORDS_MAX, &c->frames);
	case 't': return num_u32(ps, opt, v, 1, FT_THREADS_MAX, &c->threads);
	case 'q': return num_u32(ps, opt, v, 1, FT_QUEUE_MAX, &c->queue_max);
	case 'b': return num_u32(ps, opt, v, 1, 100000, &c->prebuffer);
	case 'l': return num_u64(ps, opt, v, 1, FT_RECORDS_MAX, &c->loops);
	case 'i': return num_u32(ps, opt, v, 1, FT_IOS_MAX, &c->ios_per_frame);
	case 'd': return num_u32(ps, opt, v, 0, 100000000, &c->files_per_dir);
	case 'c': return num_u32(ps, opt, v, 1, 100, &c->crop_pct);
	case 'p': return num_secs(ps, opt, v, &c->pause_s);
	case 'u': return num_secs(ps, opt, v, &c->update_s);
	case 'h': return num_secs(ps, opt, v, &c->hist_window_s);
	case 'x': c->csv_path = v; return 0;
	case 'f':
		if (ft_parse_fps(v, &c->fps_num, &c->fps_den))
			return fail(ps, "-f: '%s' is not a frame rate (24, 23.976, 24000/1001; up to %llu)",
				    v, FPS_MAX);
		return 0;
	}
	return fail(ps, "unknown option -%c (try --help)", o);
}

static enum argkind short_kind(char o)
{
	if (strchr("esvm", o))
		return ARG_NONE;
	if (o == 'r' || o == 'w')	/* -e and -z make the size optional */
		return ARG_OPT;
	if (strchr("zntfqblidpcuhx", o))
		return ARG_REQ;
	return (enum argkind)-1;
}

/* Is there a non-option argument (the directory) after index i? */
static bool positional_after(const struct parse_state *ps, int i)
{
	for (int j = i + 1; j < ps->argc; j++)
		if (ps->argv[j][0] != '-')
			return true;
	return false;
}

static int parse_short(struct parse_state *ps)
{
	const char *a = ps->argv[ps->i];
	enum argkind k = short_kind(a[1]);
	const char *v = a[2] ? a + 2 : NULL;

	if ((int)k == -1)
		return fail(ps, "unknown option %s (try --help)", a);
	if (k == ARG_NONE) {
		/* Flags may be bundled: -vs. */
		for (const char *p = a + 1; *p; p++) {
			if (short_kind(*p) != ARG_NONE)
				return fail(ps, "option -%c cannot be bundled in %s", *p, a);
			apply_short(ps, *p, NULL);
		}
		return 0;
	}
	if (k == ARG_OPT && !v && ps->i + 1 < ps->argc && looks_like_size(ps->argv[ps->i + 1]) &&
	    positional_after(ps, ps->i + 1))
		v = ps->argv[++ps->i];
	if (k == ARG_REQ && !v) {
		if (ps->i + 1 >= ps->argc)
			return fail(ps, "option -%c needs a value", a[1]);
		v = ps->argv[++ps->i];
	}
	return apply_short(ps, a[1], v);
}

static int long_value(struct parse_state *ps, const char *name, const char *eq, const char **v)
{
	if (eq) {
		*v = eq + 1;
		return 0;
	}
	if (ps->i + 1 >= ps->argc)
		return fail(ps, "option --%s needs a value", name);
	*v = ps->argv[++ps->i];
	return 0;
}

static int parse_long(struct parse_state *ps)
{
	struct ft_config *c = ps->c;
	const char *a = ps->argv[ps->i] + 2, *eq = strchr(a, '='), *v = NULL;
	size_t n = eq ? (size_t)(eq - a) : strlen(a);
	char name[32];

	if (n >= sizeof(name))
		return fail(ps, "unknown option --%s (try --help)", a);
	memcpy(name, a, n);
	name[n] = '\0';
	if (!strcmp(name, "header")) {
		if (long_value(ps, name, eq, &v))
			return -EINVAL;
		return num_u32(ps, "--header", v, 0, FT_HEADER_KIB_MAX, &c->header_kib);
	}
	if (!strcmp(name, "name"))
		return long_value(ps, name, eq, &c->name_pattern);
	if (!strcmp(name, "vary")) {
		if (long_value(ps, name, eq, &v))
			return -EINVAL;
		return ft_vary_parse(v, &c->vary, ps->err, ps->errlen);
	}
	if (!strcmp(name, "io-size")) {
		int rc;

		if (long_value(ps, name, eq, &v))
			return -EINVAL;
		rc = ft_parse_bytes(v, &c->io_size);
		if (rc == -ERANGE)
			return fail(ps, "--io-size: '%s' is out of range (4K..4G)", v);
		if (rc)
			return fail(ps, "--io-size: '%s' is not a size (1M, 256K, 65536B; a bare "
				    "number is KiB)", v);
		if (c->io_size % FT_VARY_ALIGN)
			return fail(ps, "--io-size: '%s' is not a whole number of 4 KiB (the O_DIRECT "
				    "alignment)", v);
		return 0;
	}
	if (!strcmp(name, "streams")) {
		ps->streams_given = true;
		if (long_value(ps, name, eq, &v))
			return -EINVAL;
		return num_u32(ps, "--streams", v, 1, FT_STREAMS_MAX, &c->streams);
	}
	if (!strcmp(name, "max-streams")) {
		c->max_streams = 32;
		return eq ? num_u32(ps, "--max-streams", eq + 1, 1, FT_STREAMS_MAX,
				    &c->max_streams) : 0;
	}
	if (!strcmp(name, "json")) {
		c->json |= !eq;
		if (eq)
			c->json_path = eq + 1;
		if (eq && !eq[1])
			return fail(ps, "--json=FILE needs a file name");
		return 0;
	}
	if (eq)
		return fail(ps, "option --%s takes no value", name);
	if (!strcmp(name, "list")) c->list = true;
	else if (!strcmp(name, "help")) c->help = true;
	else if (!strcmp(name, "version")) c->version = true;
	else if (!strcmp(name, "buffered")) c->buffered = true;
	else if (!strcmp(name, "no-verify")) c->no_verify = true;
	else return fail(ps, "unknown option --%s (try --help)", name);
	return 0;
}

static int resolve_size(struct parse_state *ps)
{
	struct ft_config *c = ps->c;
	uint64_t kib;
	int rc;

	if (ft_vary_on(&c->vary)) {
		if (ps->size_arg || ps->z_arg)
			return fail(ps, "--vary gives the frame sizes: no size after %s, and no -z",
				    ps->mode_w ? "-w" : "-r");
		if (c->empty)
			return fail(ps, "--vary has no meaning with -e (empty frames)");
		ft_vary_label(&c->vary, c->size_label, sizeof(c->size_label));
		return 0;
	}
	if (ps->size_arg) {
		rc = ft_parse_frame_size(ps->size_arg, c->header_kib, &c->frame_bytes,
					 c->size_label, sizeof(c->size_label));
		if (rc)
			return fail(ps, "%s: '%s' is not a frame size (a preset from --list, or KiB)",
				    ps->mode_w ? "-w" : "-r", ps->size_arg);
	}
	if (ps->z_arg) {
		if (num_u64(ps, "-z", ps->z_arg, 1, 4ull * 1024 * 1024, &kib))
			return -EINVAL;
		c->frame_bytes = kib * 1024;
		snprintf(c->size_label, sizeof(c->size_label), "%lluKiB", (unsigned long long)kib);
	}
	if (c->empty)
		snprintf(c->size_label, sizeof(c->size_label), "empty");
	else if (c->mode == FT_MODE_WRITE && c->frame_bytes == 0 && looks_like_size(c->dir))
		return fail(ps, "missing the test directory after -w %s", c->dir);
	else if (c->mode == FT_MODE_WRITE && c->frame_bytes == 0)
		return fail(ps, "-w needs a frame size: a preset (see --list), a size in KiB, "
			    "or --vary=MIN:MAX");
	return 0;
}

static int check_combinations(struct parse_state *ps)
{
	struct ft_config *c = ps->c;
	uint64_t streams = c->max_streams ? c->max_streams : c->streams;

	if (c->max_streams && ps->streams_given)
		return fail(ps, "--streams and --max-streams cannot be combined");
	if (c->max_streams && c->fps_num == 0)
		return fail(ps, "--max-streams needs a frame rate (-f FPS) to judge a stream by");
	if (c->single_file && c->files_per_dir)
		return fail(ps, "-d (files per directory) has no meaning with -s (one file)");
	if (c->single_file && c->empty)
		return fail(ps, "-e (empty frames) has no meaning with -s (one file)");
	if (c->mode == FT_MODE_WRITE && c->crop_pct != 100)
		return fail(ps, "-c (read part of each frame) applies to read tests only");
	if (c->threads * streams > FT_WORKERS_MAX)
		return fail(ps, "%llu streams x %u threads is more than %u workers",
			    (unsigned long long)streams, c->threads, FT_WORKERS_MAX);
	if (c->frames > FT_RECORDS_MAX / c->loops / streams)
		return fail(ps, "-n x -l x streams is more than %llu frames", FT_RECORDS_MAX);
	if (c->json && c->json_path)
		return fail(ps, "give --json or --json=FILE, not both");
	if (c->io_size && c->ios_per_frame > 1)
		return fail(ps, "give -i NUM (I/Os per frame) or --io-size=SIZE (bytes per I/O), "
			    "not both");
	if (c->io_size && c->empty)
		return fail(ps, "--io-size has no meaning with -e (empty frames)");
	return 0;
}

static void build_params(struct ft_config *c)
{
	char fps[32], a[32], b[32];
	size_t n = 0, len = sizeof(c->params);

#define ADD(...) (n += (size_t)snprintf(c->params + n, n < len ? len - n : 0, __VA_ARGS__))
	if (c->empty)
		ADD("-e ");
	if (c->mode == FT_MODE_WRITE && ft_vary_on(&c->vary))
		ADD("-w");
	else if (c->mode == FT_MODE_WRITE)
		ADD("-w%llu", (unsigned long long)(c->frame_bytes / 1024));
	else if (c->frame_bytes)
		ADD("-r%llu", (unsigned long long)(c->frame_bytes / 1024));
	else
		ADD("-r");
	ADD(" -n%llu -t%u", (unsigned long long)c->frames, c->threads);
	if (c->fps_num)
		ADD(" -f%s -q%u -b%u", ft_format_fps(c->fps_num, c->fps_den, fps, sizeof(fps)),
		    c->queue_max, c->prebuffer);
	if (c->single_file)
		ADD(" -s");
	if (c->order != FT_ORDER_FORWARD)
		ADD(c->order == FT_ORDER_REVERSE ? " -v" : " -m");
	if (c->loops > 1)
		ADD(" -l%llu", (unsigned long long)c->loops);
	if (c->ios_per_frame > 1)
		ADD(" -i%u", c->ios_per_frame);
	if (c->io_size)
		ADD(" --io-size=%s", ft_format_bytes(c->io_size, a, sizeof(a)));
	if (ft_vary_on(&c->vary))
		ADD(" --vary=%s:%s,%llu", ft_format_bytes(c->vary.min, a, sizeof(a)),
		    ft_format_bytes(c->vary.max, b, sizeof(b)), (unsigned long long)c->vary.seed);
	if (c->files_per_dir)
		ADD(" -d%u", c->files_per_dir);
	if (c->crop_pct != 100)
		ADD(" -c%u", c->crop_pct);
	if (c->streams > 1)
		ADD(" --streams=%u", c->streams);
	if (c->max_streams)
		ADD(" --max-streams=%u", c->max_streams);
#undef ADD
}

static int finish(struct parse_state *ps)
{
	struct ft_config *c = ps->c;
	struct ft_names names;

	if (c->help || c->version || c->list)
		return 0;
	if (ps->mode_w && ps->mode_r)
		return fail(ps, "-w and -r cannot be combined: write first, then read");
	c->mode = ps->mode_w ? FT_MODE_WRITE : FT_MODE_READ;
	if (!c->dir)
		return fail(ps, "missing the test directory (try --help)");
	if (ft_names_parse(c->name_pattern, &names))
		return fail(ps, "--name: '%s' has no frame number (use %%06d, ###### or digits, no '/')",
			    c->name_pattern);
	if (resolve_size(ps) || check_combinations(ps))
		return -EINVAL;
	build_params(c);
	return 0;
}

int ft_args_parse(int argc, char **argv, struct ft_config *c, char *err, size_t errlen)
{
	struct parse_state ps = { .c = c, .argc = argc, .argv = argv, .err = err,
				  .errlen = errlen };
	bool only_positional = false;
	int rc = 0;

	ft_config_defaults(c);
	err[0] = '\0';
	if (argc <= 1) {
		c->help = true;
		return 0;
	}
	for (ps.i = 1; ps.i < argc && !rc; ps.i++) {
		const char *a = argv[ps.i];

		if (!only_positional && !strcmp(a, "--"))
			only_positional = true;
		else if (!only_positional && a[0] == '-' && a[1] == '-')
			rc = parse_long(&ps);
		else if (!only_positional && a[0] == '-' && a[1])
			rc = parse_short(&ps);
		else if (!strcmp(a, "-") || !a[0])
			rc = fail(&ps, "'%s' is not a directory name", a);
		else if (c->dir)
			rc = fail(&ps, "one test directory only ('%s' and '%s')", c->dir, a);
		else
			c->dir = a;
	}
	return rc ? rc : finish(&ps);
}

void ft_usage(FILE *out)
{
	fputs(
"usage: framefs-frametest [options] DIRECTORY\n"
"A frametest-compatible stream validator: writes or reads a sequence of\n"
"uncompressed frames at a frame rate and says whether the stream held it.\n"
"\n"
"  -w SIZE     write test; SIZE in KiB or a preset (--list): -w 4k, -w 12512\n"
"  -r [SIZE]   read test (the default); without SIZE, the size of the files\n"
"              (of each frame, from its header, after a --vary write)\n"
"  -e          empty frames: open and close only\n"
"  -s          stream to (or from) a single file instead of a file per frame\n"
"  -z KB       custom frame size in KiB (-w 1 -z 40000)\n"
"  -n NUM      frames (default 1800)\n"
"  -t NUM      threads per stream (default 1)\n"
"  -f FPS      frame rate limit: 24, 23.976, 24000/1001 (default: as fast as possible)\n"
"  -q NUM      write: frames that may wait in the queue before one is dropped (5)\n"
"  -b NUM      frames buffered ahead of the playhead (default 5)\n"
"  -v / -m     reverse / random frame order\n"
"  -l NUM      loop over the frames NUM times\n"
"  -i NUM      I/Os per frame (default 1)\n"
"  -d NUM      files per subdirectory (default: all in DIRECTORY)\n"
"  -p SECS     pause before starting\n"
"  -c PERC     read only the middle PERC% of each frame\n"
"  -u SECS     progress update interval (default 1; 0 = none)\n"
"  -h SECS     histogram of the last SECS seconds only\n"
"  -x FILE     per-frame CSV\n"
"  --header=KB header size in frametest presets (default 64)\n"
"  --name=PATTERN  frame file names: frame%06d.tst (default), shot.######.dpx,\n"
"              or shot.000100.dpx (numbered from 100)\n"
"\n"
"Beyond frametest:\n"
"  --list      presets with their sizes and the MB/s they need at 24/25/30/60 fps\n"
"  --streams N N independent streams (DIRECTORY/streamNN), each judged on its own\n"
"  --max-streams[=LIMIT]  find the most streams sustained with no dropped frame\n"
"              (needs -f; tries 1, 2, ... up to LIMIT, default 32)\n"
"  --json      JSON summary on stdout instead of the report; --json=FILE: to FILE\n"
"  --vary=MIN:MAX[,SEED]  every frame its own size, like compressed EXR: frame i\n"
"              of stream s is MIN..MAX in 4 KiB steps, a pure function of\n"
"              (SEED, s, i); SEED defaults to 1.  Sizes: 3M, 512K, 65536B, 1G (a\n"
"              bare number is KiB).  -w needs no size then; -r without a size\n"
"              reads each frame at its own size from the frames' headers\n"
"  --io-size=SIZE  move each frame in I/O calls of SIZE bytes (whole 4 KiB;\n"
"              1M, 256K) instead of one call per frame (or -i NUM calls)\n"
"  --buffered  never use O_DIRECT\n"
"  --no-verify read without checking the frames' checksums\n"
"  --help, --version\n"
"\n"
"Every written frame carries its frame number, stream id and checksums; a read\n"
"test checks every byte it reads.  With -f, frame i is due at start + (b + i)/fps:\n"
"a read completed later is dropped; a write arriving to a full queue (-q) is.\n"
"The last line is PASS or FAIL; the exit status is 0 for PASS, 1 for FAIL,\n"
"2 for bad usage or a test that could not run.\n", out);
}
