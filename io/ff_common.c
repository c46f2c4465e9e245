/* SPDX-License-Identifier: MIT */
#include "io/ff_common.h"

#include <ctype.h>
#include <errno.h>
#include <isa-l/crc.h>
#include <string.h>
#include <sys/mman.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

void ff_assert_fail(const char *expr, const char *file, int line, const char *func)
{
	fprintf(stderr, "framefs: assertion failed: %s (%s:%d, %s)\n", expr, file, line, func);
	fflush(stderr);
	abort();
}

uint32_t ff_crc32c(uint32_t seed, const void *buf, size_t len)
{
	/* ISA-L's crc32_iscsi neither pre- nor post-inverts; the standard
	 * crc32c does both, which also makes seeds chain naturally. */
	uint32_t crc = ~seed;
	const unsigned char *p = buf;

	while (len > 0) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;

		crc = crc32_iscsi((unsigned char *)p, n, crc);
		p += n;
		len -= (size_t)n;
	}
	return ~crc;
}

void ff_csum_set(void *block, size_t len, size_t crc_off)
{
	FF_ASSERT(crc_off + 4 <= len);
	memset((char *)block + crc_off, 0, 4);
	le32 crc = ff_cpu_to_le32(ff_crc32c(0, block, len));
	memcpy((char *)block + crc_off, &crc, 4);
}

int ff_csum_verify(const void *block, size_t len, size_t crc_off)
{
	static const uint8_t zero[4];
	le32 stored;
	uint32_t crc;

	FF_ASSERT(crc_off + 4 <= len);
	memcpy(&stored, (const char *)block + crc_off, 4);
	crc = ff_crc32c(0, block, crc_off);
	crc = ff_crc32c(crc, zero, 4);
	crc = ff_crc32c(crc, (const char *)block + crc_off + 4, len - crc_off - 4);
	return crc == ff_le32(stored) ? 0 : -EBADMSG;
}

/* MADV_DONTFORK (or back, MADV_DOFORK) on the whole pages inside
 * [p, p + len).  Advice only: a kernel that refuses it costs the faults. */
static void fork_advice(void *p, size_t len, int advice)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = FF_ROUND_UP((uintptr_t)p, page), hi = ((uintptr_t)p + len) / page * page;

	if (hi > lo && madvise((void *)lo, hi - lo, advice) != 0)
		ff_log(FF_LOG_DEBUG, "madvise(%d) on a pool: %s", advice, strerror(errno));
}

void *ff_alloc_pool_buf(size_t len)
{
	void *p = ff_alloc_aligned(len);

	if (p) {
		fork_advice(p, len, MADV_DONTFORK);
		memset(p, 0, len);
	}
	return p;
}

void ff_free_pool_buf(void *p, size_t len)
{
	if (p) {
		fork_advice(p, len, MADV_DOFORK);
		free(p);
	}
}

void *ff_alloc_aligned(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, FF_BUF_ALIGN, FF_ROUND_UP(len, FF_BUF_ALIGN)) != 0)
		return NULL;
	return p;
}

void *ff_alloc_arena(size_t len)
{
	void *p = mmap(NULL, FF_ROUND_UP(len, FF_BUF_ALIGN), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	fork_advice(p, len, MADV_DONTFORK); /* unmapped whole: no advice to undo */
	return p;
}

void ff_free_arena(void *p, size_t len)
{
	if (p)
		munmap(p, FF_ROUND_UP(len, FF_BUF_ALIGN));
}

int ff_parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;
	uint64_t mult = 1;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': mult = FF_KiB; end++; break;
	case 'M': mult = FF_MiB; end++; break;
	case 'G': mult = FF_GiB; end++; break;
	case 'T': mult = FF_GiB * 1024; end++; break;
	default: return -EINVAL;
	}
	if (*end == 'i' || *end == 'I')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*bytes = v * mult;
	return 0;
}

const char *ff_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024.0 && u + 1 < FF_ARRAY_SIZE(unit)) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t ff_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t ff_wall_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void ff_err_set(struct ff_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

static enum ff_log_level log_level = FF_LOG_INFO;
static int log_syslog;

void ff_log_set_level(enum ff_log_level lvl) { log_level = lvl; }
void ff_log_use_syslog(int on) { log_syslog = on; }

void ff_log(enum ff_log_level lvl, const char *fmt, ...)
{
	static const char *name[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char line[1024];
	va_list ap;

	if (lvl > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_syslog)
		syslog(prio[lvl], "%s", line);
	else
		fprintf(stderr, "framefs: %s: %s\n", name[lvl], line);
}
