/* SPDX-License-Identifier: MIT */
/*
 * The fault-injecting backend (io/fault.h): rule parsing, the backend's
 * hooks (rules decide at a request's start, flipped bits and the undo log's
 * flush marks at its end), the hold handshake, and the power-loss undo log.
 */
#include "io/fault.h"
#include "io/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
	else if (strcmp(key, "count") == 0) r->count_ops = n;
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

static void undo_close(struct ff_fault *f);

/* Put the fault backend in front of m's own (once). */
static int fault_wrap(struct ff_member *m)
{
	struct ff_fault *f;
	pthread_condattr_t ca;

	if (m->fault)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->inner = m->backend;
	pthread_mutex_init(&f->held_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadlines are ff_mono_ns */
	pthread_cond_init(&f->held_cond, &ca);
	pthread_condattr_destroy(&ca);
	/* the state before the backend that uses it: a ring on another thread
	 * that sees the fault backend finds its state */
	__atomic_store_n(&m->fault, f, __ATOMIC_RELEASE);
	__atomic_store_n(&m->backend, &ff_backend_fault, __ATOMIC_RELEASE);
	return 0;
}

struct ff_fault *ff_fault_detach(struct ff_member *m)
{
	struct ff_fault *f = m->fault;

	if (!f)
		return NULL;
	__atomic_store_n(&m->backend, f->inner, __ATOMIC_RELEASE);
	__atomic_store_n(&m->fault, NULL, __ATOMIC_RELEASE);
	return f;
}

void ff_fault_destroy(struct ff_fault *f)
{
	if (!f)
		return;
	undo_close(f); /* a member let go with its log open: requests may have used it until now */
	pthread_mutex_destroy(&f->held_lock);
	pthread_cond_destroy(&f->held_cond);
	free(f);
}

void ff_fault_free(struct ff_member *m)
{
	ff_fault_destroy(ff_fault_detach(m));
}

int ff_fault_add(struct ff_member *m, const struct ff_fault_rule *rule)
{
	struct ff_fault *f;
	unsigned n;
	int rc = fault_wrap(m);

	if (rc < 0)
		return rc;
	f = m->fault;
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

/* What the rules do to one request: fail it, hold it, flip its bits. */
struct fault_action {
	int error;
	uint32_t latency_us;
	uint32_t flip_bits;
	int rule; /* the rule whose latency holds it, -1 if none */
};

static void fault_check(struct ff_fault *f, unsigned op, uint64_t off, uint32_t len,
			struct fault_action *act)
{
	unsigned n = atomic_load(&f->nrules);

	memset(act, 0, sizeof(*act));
	act->rule = -1;
	for (unsigned i = 0; i < n; i++) {
		const struct ff_fault_rule *r = &f->rule[i];

		if (!(r->ops & op))
			continue;
		if (op != FF_FAULT_FLUSH &&
		    (off + len <= r->off_start || (r->off_end && off >= r->off_end)))
			continue;
		uint64_t seen = atomic_fetch_add(&f->seen[i], 1);

		if (seen < r->after_ops || (r->count_ops && seen - r->after_ops >= r->count_ops))
			continue;
		if (r->error && !act->error)
			act->error = r->error;
		if (r->latency_us > act->latency_us) {
			act->latency_us = r->latency_us;
			act->rule = (int)i;
		}
		if (op == FF_FAULT_READ)
			act->flip_bits += r->flip_bits;
	}
	if (act->error || act->latency_us || act->flip_bits)
		atomic_fetch_add(&f->fired, 1);
}

/* Flip nbits bits of buf at positions derived from a sequence number. */
static void fault_flip(struct ff_fault *f, void *buf, uint32_t len, uint32_t nbits)
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

/* ---- the hold handshake ------------------------------------------------------ */

static void held_add(struct ff_fault *f, int rule, int d)
{
	FF_ASSERT(rule >= 0 && rule < FF_FAULT_RULES_MAX);
	pthread_mutex_lock(&f->held_lock);
	FF_ASSERT(d > 0 || f->held[rule] > 0);
	f->held[rule] += (unsigned)d;
	pthread_cond_broadcast(&f->held_cond);
	pthread_mutex_unlock(&f->held_lock);
}

static unsigned held_locked(const struct ff_fault *f, int rule)
{
	unsigned n = 0;

	for (int i = 0; i < FF_FAULT_RULES_MAX; i++)
		if (rule == FF_FAULT_ANY || rule == i)
			n += f->held[i];
	return n;
}

unsigned ff_fault_held(struct ff_member *m, int rule)
{
	struct ff_fault *f = m->fault;
	unsigned n;

	if (!f)
		return 0;
	pthread_mutex_lock(&f->held_lock);
	n = held_locked(f, rule);
	pthread_mutex_unlock(&f->held_lock);
	return n;
}

int ff_fault_wait_held(struct ff_member *m, int rule, unsigned n, uint64_t timeout_ms)
{
	uint64_t deadline_ns = ff_mono_ns() + timeout_ms * 1000000ull;
	struct timespec ts = { (time_t)(deadline_ns / 1000000000ull),
			       (long)(deadline_ns % 1000000000ull) };
	struct ff_fault *f = m->fault;
	int rc = 0;

	FF_ASSERT(rule == FF_FAULT_ANY || (rule >= 0 && rule < FF_FAULT_RULES_MAX));
	if (!f)
		return n ? -ETIMEDOUT : 0; /* no rules: nothing is ever held */
	pthread_mutex_lock(&f->held_lock);
	/* ends: each wake re-checks the count, and the deadline ends the wait */
	while (held_locked(f, rule) < n && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&f->held_cond, &f->held_lock, &ts);
	rc = held_locked(f, rule) >= n ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&f->held_lock);
	return rc;
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

int ff_undo_open(struct ff_member *m, const char *dir, struct ff_err *err)
{
	const char *base = strrchr(m->path, '/');
	char path[PATH_MAX + 64];
	struct ff_undo *u;
	int rc;

	if (!dir || !*dir || m->read_only)
		return 0;
	rc = fault_wrap(m);
	if (rc < 0)
		goto fail;
	FF_ASSERT(!m->fault->undo);
	snprintf(path, sizeof(path), "%s/%s.undo", dir, base ? base + 1 : m->path);
	u = calloc(1, sizeof(*u));
	if (!u) {
		rc = -ENOMEM;
		goto fail;
	}
	u->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (u->fd < 0) {
		rc = -errno;
		free(u);
		goto fail;
	}
	pthread_mutex_init(&u->lock, NULL);
	m->fault->undo = u;
	ff_log(FF_LOG_WARN, "%s: logging what every write overwrites to %s "
	       "(power-loss tests only; slow)", m->path, path);
	return 0;
fail:
	ff_err_set(err, "%s: cannot open its undo log in %s: %s", m->path, dir, strerror(-rc));
	return rc;
}

static void undo_close(struct ff_fault *f)
{
	struct ff_undo *u = f->undo;

	if (!u)
		return;
	close(u->fd);
	pthread_mutex_destroy(&u->lock);
	free(u->buf);
	free(u);
	f->undo = NULL;
}

static void undo_append(struct ff_undo *u, const void *p, uint64_t len)
{
	if (pwrite(u->fd, p, len, (off_t)u->pos) == (ssize_t)len)
		u->pos += len;
	else
		abort(); /* a simulation that silently lost its log would prove nothing */
}

/* Before a write: log the bytes it will overwrite. */
static void undo_write(struct ff_undo *u, int fd, uint64_t off, uint64_t len)
{
	struct ff_undo_rec rec = { FF_UNDO_WRITE, 0, off, len };
	ssize_t n;

	pthread_mutex_lock(&u->lock);
	if (len > u->cap) { /* start-up and test sizes only: the log is for tests */
		free(u->buf);
		u->buf = ff_alloc_aligned(len);
		if (!u->buf)
			abort();
		u->cap = len;
	}
	n = pread(fd, u->buf, len, (off_t)off);
	n = FF_MAX(n, (ssize_t)0); /* past the end (or unreadable): zeros */
	memset((char *)u->buf + n, 0, len - (uint64_t)n);
	rec.seq = ++u->seq;
	undo_append(u, &rec, sizeof(rec));
	undo_append(u, u->buf, len);
	pthread_mutex_unlock(&u->lock);
}

/* Before a flush is issued: the log length it will cover. */
static uint64_t undo_seq(struct ff_undo *u)
{
	uint64_t s;

	pthread_mutex_lock(&u->lock);
	s = u->seq;
	pthread_mutex_unlock(&u->lock);
	return s;
}

/* After a flush issued at log length seq completed. */
static void undo_flushed(struct ff_undo *u, uint64_t seq)
{
	struct ff_undo_rec rec = { FF_UNDO_FLUSHED, seq, 0, 0 };

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

/* ---- the backend ------------------------------------------------------------- */

/*
 * The backend m wraps.  ff_fault_detach() puts it back while a ring may be
 * between reading m->backend and m->fault: with the state gone, every
 * backend below does what it would.
 */
static const struct ff_backend *inner_of(const struct ff_member *m, struct ff_fault **fp)
{
	struct ff_fault *f = __atomic_load_n(&m->fault, __ATOMIC_ACQUIRE);

	*fp = f;
	if (f)
		return f->inner;
	return m->is_bdev ? &ff_backend_bdev : m->in_memory ? &ff_backend_ram : &ff_backend_file;
}

static int fault_probe(struct ff_member *m, const struct statx *stx, struct ff_err *err)
{
	struct ff_fault *f;

	return inner_of(m, &f)->probe(m, stx, err);
}

static void fault_close(struct ff_member *m)
{
	struct ff_fault *f;
	const struct ff_backend *in = inner_of(m, &f);

	if (f)
		undo_close(f);
	if (in->close)
		in->close(m);
}

static enum ff_member_presence fault_presence(const struct ff_member *m, char *why, size_t len)
{
	struct ff_fault *f;

	return inner_of(m, &f)->presence(m, why, len);
}

static const char *fault_describe(const struct ff_member *m, char *buf, size_t len)
{
	struct ff_fault *f;

	return inner_of(m, &f)->describe(m, buf, len);
}

static int fault_pread(struct ff_member *m, void *buf, size_t len, uint64_t off)
{
	struct ff_fault *f;

	return inner_of(m, &f)->pread(m, buf, len, off);
}

static int fault_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off)
{
	struct ff_fault *f;
	const struct ff_backend *in = inner_of(m, &f);

	if (f && f->undo)
		undo_write(f->undo, m->fd, off, len);
	return in->pwrite(m, buf, len, off);
}

static int fault_flush(struct ff_member *m)
{
	struct ff_fault *f;
	const struct ff_backend *in = inner_of(m, &f);
	uint64_t seq = f && f->undo ? undo_seq(f->undo) : 0;
	int rc = in->flush(m);

	if (rc == 0 && f && f->undo)
		undo_flushed(f->undo, seq);
	return rc;
}

/*
 * Passed through to the inner backend, no rule applies to it.  With the
 * power-loss undo log on, refused: the log keeps the old contents of what
 * is written so a power cut can roll it back, and a deallocated range of a
 * GiB is not something it could keep.
 */
static int fault_discard(struct ff_member *m, uint64_t off, uint64_t len)
{
	struct ff_fault *f;
	const struct ff_backend *in = inner_of(m, &f);

	if (f && f->undo)
		return -EOPNOTSUPP;
	return in->discard ? in->discard(m, off, len) : -EOPNOTSUPP;
}

static void fault_prep(struct io_uring_sqe *sqe, struct ff_io_req *req, void *buf, uint32_t len,
		       uint64_t off, int regbuf)
{
	ff_uring_prep(sqe, req, buf, len, off, regbuf); /* every inner backend's */
}

/* A request's first dispatch: log for the undo, then ask the rules. */
static void fault_start(struct ff_member *m, struct ff_io_req *req, struct ff_io_hold *hold)
{
	struct ff_fault *f;
	struct fault_action act;

	inner_of(m, &f);
	req->backend.ctx = f; /* kept alive by its owner while requests may use it */
	req->backend.rule = -1;
	req->backend.bits = 0;
	if (!f)
		return;
	if (f->undo && req->op == FF_IO_WRITE)
		undo_write(f->undo, m->fd, req->off, req->len);
	else if (f->undo && req->op == FF_IO_FSYNC)
		req->backend.seq = undo_seq(f->undo);
	fault_check(f, req->op == FF_IO_READ    ? FF_FAULT_READ
		       : req->op == FF_IO_FSYNC ? FF_FAULT_FLUSH
						: FF_FAULT_WRITE,
		    req->off, req->len, &act);
	req->backend.bits = act.flip_bits;
	hold->error = act.error;
	hold->delay_us = act.latency_us;
	if (act.latency_us) {
		req->backend.rule = act.rule;
		held_add(f, act.rule, 1);
	}
}

/* Its result is final: flip what a rule said to, mark the undo log, let go. */
static void fault_end(struct ff_member *m, struct ff_io_req *req)
{
	struct ff_fault *f = req->backend.ctx;

	(void)m;
	if (!f)
		return;
	if (req->result > 0 && req->backend.bits)
		fault_flip(f, req->buf, req->len, req->backend.bits);
	if (req->op == FF_IO_FSYNC && req->result == 0 && f->undo)
		undo_flushed(f->undo, req->backend.seq);
	if (req->backend.rule >= 0)
		held_add(f, req->backend.rule, -1);
}

const struct ff_backend ff_backend_fault = {
	.name = "fault",
	.probe = fault_probe,
	.close = fault_close,
	.presence = fault_presence,
	.describe = fault_describe,
	.pread = fault_pread,
	.pwrite = fault_pwrite,
	.flush = fault_flush,
	.discard = fault_discard,
	.prep = fault_prep,
	.start = fault_start,
	.end = fault_end,
};
