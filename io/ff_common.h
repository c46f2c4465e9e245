/* SPDX-License-Identifier: MIT */
/*
 * Small helpers every layer uses: assertions that stay on in release builds,
 * explicit little-endian accessors for on-disk structures, crc32c, and
 * one-line error reporting.  Nothing here allocates.
 */
#ifndef FF_COMMON_H
#define FF_COMMON_H

#include <endian.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FF_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FF_DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define FF_ROUND_UP(n, a) (FF_DIV_ROUND_UP((n), (a)) * (a))
#define FF_IS_POW2(x) ((x) != 0 && (((x) & ((x) - 1)) == 0))
#define FF_KiB (1024ULL)
#define FF_MiB (1024ULL * 1024)
#define FF_GiB (1024ULL * 1024 * 1024)

/* Alignment of every buffer that reaches a member: O_DIRECT needs the
 * device's DIO alignment (<= 4096 on every device we know) and ISA-L's
 * AVX-512 routines want 64 bytes. */
#define FF_BUF_ALIGN 4096u

/*
 * Assertions are part of the program, not of debug builds: a broken
 * invariant in a storage engine must stop it before it writes.
 */
#define FF_ASSERT(cond)                                                        \
	do {                                                                   \
		if (__builtin_expect(!(cond), 0))                              \
			ff_assert_fail(#cond, __FILE__, __LINE__, __func__);   \
	} while (0)

__attribute__((noreturn)) void ff_assert_fail(const char *expr, const char *file, int line,
					      const char *func);

/* Little-endian on-disk fields.  Structures keep the raw value; code reads
 * and writes them only through these. */
typedef uint16_t le16;
typedef uint32_t le32;
typedef uint64_t le64;

static inline uint16_t ff_le16(le16 v) { return le16toh(v); }
static inline uint32_t ff_le32(le32 v) { return le32toh(v); }
static inline uint64_t ff_le64(le64 v) { return le64toh(v); }
static inline le16 ff_cpu_to_le16(uint16_t v) { return htole16(v); }
static inline le32 ff_cpu_to_le32(uint32_t v) { return htole32(v); }
static inline le64 ff_cpu_to_le64(uint64_t v) { return htole64(v); }

/* crc32c (Castagnoli, iSCSI) through ISA-L; seed 0 for a fresh sum. */
uint32_t ff_crc32c(uint32_t seed, const void *buf, size_t len);

/*
 * Checksum before write, verify after read, in one helper pair: the
 * crc field at crc_off is taken as zero while summing.
 */
void ff_csum_set(void *block, size_t len, size_t crc_off);
int ff_csum_verify(const void *block, size_t len, size_t crc_off); /* 0 or -EBADMSG */

/* Aligned allocation for member I/O buffers; start-up only. */
void *ff_alloc_aligned(size_t len);

/*
 * A large arena that lives as long as its cache (the metadata cache's
 * blocks, an engine worker's stripe buffers): anonymous pages, zero, taken
 * from the system only as they are first touched, given back whole by
 * ff_free_arena(p, the same len).  Not from malloc, so that a cache sized
 * for the largest volume costs a small one nothing: glibc's MALLOC_PERTURB_
 * (which meson sets for every test) fills every malloc'ed byte, and
 * fsck.framefs's 256 MiB cache took 1.4 s of each run that way.  Only for
 * what was one allocation anyway: AddressSanitizer sees no borders inside
 * an arena (the write buffers and the read cache keep a malloc a stripe,
 * so it sees theirs).  NULL when the system has no room.
 */
void *ff_alloc_arena(size_t len);
void ff_free_arena(void *p, size_t len);

/*
 * A buffer of a pool the data path writes (a write buffer, a read-cache
 * entry): aligned, its pages faulted in now rather than on the data path,
 * and kept out of any child a fork makes (MADV_DONTFORK), so they stay
 * writable.  libfuse forks /bin/mount -f once the volume is mounted, and a
 * fork write-protects every private page of the parent: each page would
 * take a fault the first time a request wrote it (76,000 on a default mount).  The
 * child, a helper that execs, never reads them.  Free with
 * ff_free_pool_buf(p, the same len), which undoes the advice, as malloc
 * hands the pages out again.  ff_alloc_arena does the same for arenas.
 */
void *ff_alloc_pool_buf(size_t len);
void ff_free_pool_buf(void *p, size_t len);

/* Parse "512K", "1M", "4096", "2G" into bytes; -EINVAL on junk. */
int ff_parse_size(const char *s, uint64_t *bytes);

/* Format bytes as "1.50 GiB" into buf. */
const char *ff_fmt_bytes(uint64_t bytes, char *buf, size_t len);

/* The two clocks, in nanoseconds.  ff_mono_ns() measures intervals and
 * deadlines (CLOCK_MONOTONIC: never jumps); ff_wall_ns() stamps what is
 * shown to people or stored on disk (CLOCK_REALTIME: inode times, the
 * superblock's write time). */
uint64_t ff_mono_ns(void);
uint64_t ff_wall_ns(void);

/* Error text for callers that report one line naming the culprit. */
struct ff_err {
	char msg[512];
};
void ff_err_set(struct ff_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log to stderr with a level prefix; the daemon may redirect to syslog. */
enum ff_log_level { FF_LOG_ERR, FF_LOG_WARN, FF_LOG_INFO, FF_LOG_DEBUG };
void ff_log(enum ff_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ff_log_set_level(enum ff_log_level lvl);
void ff_log_use_syslog(int on);

#endif
