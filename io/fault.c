/* SPDX-License-Identifier: MIT */
#include "io/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_errno(const char *v)
{
	static const struct { const char *name; int value; } names[] = {
		{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "ENODEV", ENODEV },
		{ "ETIMEDOUT", ETIMEDOUT }, { "EILSEQ", EILSEQ }, { "ENXIO", ENXIO },
	};
	char *end;
	long n;

	for (size_t i = 0; i < FF_ARRAY_SIZE(names); i++)
		if (strcmp(v, names[i].name) == 0)
			return names[i].value;
	n = strtol(v, &end, 10);
	return (*end == '\0' && n > 0 && n < 4096) ? (int)n : -1;
}

static int parse_u64(const char *v, uint64_t *out)
{
	return ff_parse_size(v, out);
}

static int parse_pair(const char *key, const char *val, struct ff_fault_rule *r)
{
	uint64_t n;

	if (strcmp(key, "op") == 0) {
		if (strcmp(val, "r") == 0) r->ops = FF_FAULT_READ;
		else if (strcmp(val, "w") == 0) r->ops = FF_FAULT_WRITE;
		else if (strcmp(val, "rw") == 0) r->ops = FF_FAULT_READ | FF_FAULT_WRITE;
		else if (strcmp(val, "f") == 0) r->ops = FF_FAULT_FLUSH;
		else return -EINVAL;
		return 0;
	}
	if (strcmp(key, "err") == 0) {
		r->error = parse_errno(val);
		return r->error > 0 ? 0 : -EINVAL;
	}
	if (parse_u64(val, &n) < 0)
		return -EINVAL;
	if (strcmp(key, "after") == 0) r->after_ops = n;
	else if (strcmp(key, "from") == 0) r->off_start = n;
	else if (strcmp(key, "to") == 0) r->off_end = n;
	else if (strcmp(key, "lat_us") == 0 && n <= UINT32_MAX) r->latency_us = (uint32_t)n;
	else if (strcmp(key, "lat_ms") == 0 && n <= UINT32_MAX / 1000) r->latency_us = (uint32_t)n * 1000;
	else if (strcmp(key, "flip") == 0 && n <= 4096) r->flip_bits = (uint32_t)n;
	else return -EINVAL;
	return 0;
}

int ff_fault_parse(const char *spec, struct ff_fault_rule *rule, struct ff_err *err)
{
	char buf[256];
	char *save = NULL;

	memset(rule, 0, sizeof(*rule));
	rule->ops = FF_FAULT_READ | FF_FAULT_WRITE;
	if (strlen(spec) >= sizeof(buf)) {
		ff_err_set(err, "fault rule too long: %.40s...", spec);
		return -EINVAL;
	}
	strcpy(buf, spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || (*eq = '\0', parse_pair(tok, eq + 1, rule) < 0)) {
			ff_err_set(err, "bad fault rule item '%s%s%s'", tok, eq ? "=" : "",
				   eq ? eq + 1 : "");
			return -EINVAL;
		}
	}
	if (rule->off_end && rule->off_end <= rule->off_start) {
		ff_err_set(err, "fault rule range is empty: %s", spec);
		return -EINVAL;
	}
	if (!rule->error && !rule->latency_us && !rule->flip_bits) {
		ff_err_set(err, "fault rule does nothing (give err=, lat_us= or flip=): %s", spec);
		return -EINVAL;
	}
	return 0;
}

int ff_fault_add(struct ff_member *m, const struct ff_fault_rule *rule)
{
	struct ff_fault *f = m->fault;
	unsigned n;

	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		m->fault = f;
	}
	n = atomic_load(&f->nrules);
	if (n >= FF_FAULT_RULES_MAX)
		return -ENOSPC;
	f->rule[n] = *rule;
	atomic_store(&f->seen[n], 0);
	atomic_store(&f->nrules, n + 1); /* publishes the rule filled in above */
	return 0;
}

void ff_fault_clear(struct ff_member *m)
{
	if (m->fault)
		atomic_store(&m->fault->nrules, 0);
}

static struct ff_member *find_member(struct ff_member *const *members, unsigned n, const char *sel)
{
	for (unsigned i = 0; i < n; i++) {
		const char *base = strrchr(members[i]->path, '/');

		if (strcmp(members[i]->path, sel) == 0 || (base && strcmp(base + 1, sel) == 0))
			return members[i];
	}
	return NULL;
}

int ff_fault_apply_text(struct ff_member *const *members, unsigned n, const char *text,
			struct ff_err *err)
{
	char buf[1024];
	char *save = NULL;

	if (strlen(text) >= sizeof(buf)) {
		ff_err_set(err, "fault text too long");
		return -EINVAL;
	}
	strcpy(buf, text);
	for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char *at = strrchr(tok, '@');
		struct ff_fault_rule rule;
		struct ff_member *m;
		int rc;

		if (!at) {
			ff_err_set(err, "fault rule '%s' lacks MEMBER@", tok);
			return -EINVAL;
		}
		*at = '\0';
		m = find_member(members, n, tok);
		if (!m) {
			ff_err_set(err, "fault rule names '%s', which is not a member", tok);
			return -ENOENT;
		}
		rc = ff_fault_parse(at + 1, &rule, err);
		if (rc < 0)
			return rc;
		rc = ff_fault_add(m, &rule);
		if (rc < 0) {
			ff_err_set(err, "%s: cannot add fault rule: %s", m->path, strerror(-rc));
			return rc;
		}
		ff_log(FF_LOG_WARN, "fault injection armed on %s: %s", m->path, at + 1);
	}
	return 0;
}

void ff_fault_check(struct ff_fault *f, unsigned op, uint64_t off, uint32_t len,
		    struct ff_fault_action *act)
{
	unsigned n = atomic_load(&f->nrules);

	memset(act, 0, sizeof(*act));
	for (unsigned i = 0; i < n; i++) {
		const struct ff_fault_rule *r = &f->rule[i];

		if (!(r->ops & op))
			continue;
		if (op != FF_FAULT_FLUSH &&
		    (off + len <= r->off_start || (r->off_end && off >= r->off_end)))
			continue;
		if (atomic_fetch_add(&f->seen[i], 1) < r->after_ops)
			continue;
		if (r->error && !act->error)
			act->error = r->error;
		act->latency_us = FF_MAX(act->latency_us, r->latency_us);
		if (op == FF_FAULT_READ)
			act->flip_bits += r->flip_bits;
	}
	if (act->error || act->latency_us || act->flip_bits)
		atomic_fetch_add(&f->fired, 1);
}

void ff_fault_flip(struct ff_fault *f, void *buf, uint32_t len, uint32_t nbits)
{
	uint64_t x = atomic_fetch_add(&f->flip_seq, 1) * 0x9E3779B97F4A7C15ull + 1;
	uint8_t *p = buf;

	for (uint32_t i = 0; i < nbits && len > 0; i++) {
		/* xorshift: repeatable positions, spread over the buffer */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		p[(x >> 3) % len] ^= (uint8_t)(1u << (x & 7));
	}
}

/* ---- power-loss simulation: the undo log ------------------------------------ */

struct ff_undo {
	pthread_mutex_t lock;
	int fd;
	uint64_t seq;  /* records written */
	uint64_t pos;  /* end of the log */
	void *buf;     /* old bytes, O_DIRECT-aligned */
	uint64_t cap;
};

int ff_undo_open(struct ff_member *m)
{
	const char *dir = getenv("FRAMEFS_UNDO_DIR");
	const char *base = strrchr(m->path, '/');
	char path[PATH_MAX + 64];
	struct ff_undo *u;

	if (!dir || !*dir || m->read_only)
		return 0;
	snprintf(path, sizeof(path), "%s/%s.undo", dir, base ? base + 1 : m->path);
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (u->fd < 0) {
		int e = errno;

		free(u);
		return -e;
	}
	pthread_mutex_init(&u->lock, NULL);
	m->undo = u;
	ff_log(FF_LOG_WARN, "%s: FRAMEFS_UNDO_DIR is set: logging what every write overwrites to %s "
	       "(power-loss tests only; slow)", m->path, path);
	return 0;
}

void ff_undo_close(struct ff_member *m)
{
	struct ff_undo *u = m->undo;

	if (!u)
		return;
	close(u->fd);
	pthread_mutex_destroy(&u->lock);
	free(u->buf);
	free(u);
	m->undo = NULL;
}

static void undo_append(struct ff_undo *u, const void *p, uint64_t len)
{
	if (pwrite(u->fd, p, len, (off_t)u->pos) == (ssize_t)len)
		u->pos += len;
	else
		abort(); /* a simulation that silently lost its log would prove nothing */
}

void ff_undo_write(struct ff_member *m, uint64_t off, uint64_t len)
{
	struct ff_undo *u = m->undo;
	struct ff_undo_rec rec = { FF_UNDO_WRITE, 0, off, len };
	ssize_t n;

	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	if (len > u->cap) {
		free(u->buf);
		u->buf = ff_alloc_aligned(len);
		if (!u->buf)
			abort();
		u->cap = len;
	}
	n = pread(m->fd, u->buf, len, (off_t)off);
	n = FF_MAX(n, (ssize_t)0); /* past the end (or unreadable): zeros */
	memset((char *)u->buf + n, 0, len - (uint64_t)n);
	rec.seq = ++u->seq;
	undo_append(u, &rec, sizeof(rec));
	undo_append(u, u->buf, len);
	pthread_mutex_unlock(&u->lock);
}

uint64_t ff_undo_seq(struct ff_member *m)
{
	uint64_t s;

	if (!m->undo)
		return 0;
	pthread_mutex_lock(&m->undo->lock);
	s = m->undo->seq;
	pthread_mutex_unlock(&m->undo->lock);
	return s;
}

void ff_undo_flushed(struct ff_member *m, uint64_t seq)
{
	struct ff_undo *u = m->undo;
	struct ff_undo_rec rec = { FF_UNDO_FLUSHED, seq, 0, 0 };

	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	if (seq == u->seq) { /* everything logged is durable now */
		if (ftruncate(u->fd, 0) < 0)
			abort();
		u->pos = 0;
	} else {
		undo_append(u, &rec, sizeof(rec));
	}
	pthread_mutex_unlock(&u->lock);
}
