/* SPDX-License-Identifier: MIT */
/*
 * The admin requests (protocol and JSON schema in ctl.h): a request line
 * split into %XX-unescaped words, handed to ctl_cmd.c, and its JSON answer;
 * the JSON helpers every part answers with; a request context.  The same
 * code answers the daemon's socket (ctl_sock.c) and framefs-admin's
 * offline mode, so both print the same thing.
 *
 * The other parts: ctl_status.c (the status answer), ctl_cmd.c (the
 * requests that change something), ctl_sock.c (the socket).
 */
#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/daemon/ctl_i.h"

#define CTL_WORDS_MAX 16

/* ---- request words ------------------------------------------------------- */

int ffs_ctl_escape(const char *word, char *buf, size_t len)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)word; *p; p++) {
		if (n + 4 >= len)
			return -ENAMETOOLONG;
		if (*p <= 0x20 || *p == '%' || *p >= 0x7f)
			n += (size_t)snprintf(buf + n, len - n, "%%%02x", *p);
		else
			buf[n++] = (char)*p;
	}
	if (n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Split a request line into unescaped words, in place. */
static int split_words(char *line, char **w, unsigned *nw)
{
	char *save = NULL;

	*nw = 0;
	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *o = t;

		if (*nw == CTL_WORDS_MAX)
			return -E2BIG;
		for (char *i = t; *i; i++) {
			if (*i == '%') {
				int hi = hexval(i[1]), lo = hi < 0 ? -1 : hexval(i[2]);

				if (hi < 0 || lo < 0)
					return -EINVAL;
				*o++ = (char)(hi * 16 + lo);
				i += 2;
			} else {
				*o++ = *i;
			}
		}
		*o = '\0';
		w[(*nw)++] = t;
	}
	return 0;
}

/* ---- JSON helpers ------------------------------------------------------------ */

json_object *ctl_jdbl(double v, const char *fmt)
{
	char s[64];

	if (v != v || v > 1e18 || v < -1e18)
		v = 0;
	snprintf(s, sizeof(s), fmt, v);
	return json_object_new_double_s(v, s);
}

void ctl_jadd_u64(json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

void ctl_jadd_str(json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

void ctl_jadd_bool(json_object *o, const char *k, bool v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

int ctl_reply_error(json_object **out, int err, const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctl_jadd_bool(o, "ok", false);
	ctl_jadd_str(o, "error", msg);
	json_object_object_add(o, "errno", json_object_new_int(err < 0 ? -err : err));
	*out = o;
	return err < 0 ? err : -err;
}

json_object *ctl_reply_ok(const char *message)
{
	json_object *o = json_object_new_object();

	ctl_jadd_bool(o, "ok", true);
	if (message)
		ctl_jadd_str(o, "message", message);
	return o;
}

int ffs_ctl_exec(struct ffs_ctl *c, const char *line, char **reply)
{
	char *buf = strdup(line), *w[CTL_WORDS_MAX];
	json_object *out = NULL;
	unsigned nw;
	int rc;

	*reply = NULL;
	if (!buf)
		return -ENOMEM;
	buf[strcspn(buf, "\r\n")] = '\0';
	rc = split_words(buf, w, &nw);
	if (rc < 0)
		rc = ctl_reply_error(&out, rc, "malformed request (bad %%XX escape or too many words)");
	else
		rc = ctl_dispatch(c, w, nw, &out);
	*reply = strdup(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
	free(buf);
	if (!*reply)
		return -ENOMEM;
	return rc;
}

/* ---- contexts ------------------------------------------------------------------------ */

struct ffs_ctl *ffs_ctl_new(struct ffs *fs, struct ff_raid *r, const char *source)
{
	struct ffs_ctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->fs = fs;
	c->r = r ? r : ffs_raid(fs);
	snprintf(c->source, sizeof(c->source), "%s", source);
	c->rebuild_min_bps = FFS_CTL_REBUILD_MIN_BPS;
	c->rebuild_max_bps = FFS_CTL_REBUILD_MAX_BPS;
	c->scrub_min_bps = FFS_SCRUB_MIN_BPS_DEFAULT;
	c->scrub_max_bps = FFS_SCRUB_MAX_BPS_DEFAULT;
	c->lfd = -1;
	c->stop_pipe[0] = c->stop_pipe[1] = -1;
	ctl_apply_rates(c);
	return c;
}

void ffs_ctl_free(struct ffs_ctl *c)
{
	if (!c)
		return;
	free(c->mountpoint);
	free(c);
}
