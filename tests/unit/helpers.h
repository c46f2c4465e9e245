/* SPDX-License-Identifier: MIT */
/*
 * What the unit tests share: seeded random buffers, scratch member files,
 * creating and assembling an array over them with a shadow copy of what
 * was written, and a completion counter to wait on (with a deadline) in
 * place of a sleep.  Every helper fails the running Check test on error.
 *
 * Scratch files go in $FF_TEST_DIR, else /dev/shm (members in RAM).
 */
#ifndef FF_TESTS_UNIT_HELPERS_H
#define FF_TESTS_UNIT_HELPERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raid/raid.h"

#define UT_MEMBER_MB 48          /* default member size of the RAID tests */
#define UT_CHUNK (64 * 1024)     /* chunk of the arrays ut_create makes */

/* ---- random buffers: xorshift64, seeded by assigning ut_rng ---- */
extern uint64_t ut_rng;
uint64_t ut_rnd(void);
void ut_fill(void *buf, size_t len); /* len: a multiple of 8 */

/* ---- scratch files ---- */
/* A file of mb MiB at path (created or truncated). */
void ut_sized_file(const char *path, unsigned mb);
/* A fresh scratch directory ut_dir with n members ut_paths[i] of mb MiB
 * each (ut_pp[i] points at them); ut_member_mb remembers mb. */
extern char ut_dir[256];
extern char ut_paths[FF_MEMBERS_MAX][300];
extern const char *ut_pp[FF_MEMBERS_MAX];
extern unsigned ut_member_mb;
void ut_make_members(unsigned n, unsigned mb);
/* Remove every file in ut_dir, then ut_dir; fails if anything is left. */
void ut_remove_members(unsigned n);
/* A test runner (ut_run does both): ut_runner_begin before the tests run,
 * ut_sweep after them removes the scratch directories failed tests left
 * (unless FF_TEST_KEEP is set). */
void ut_runner_begin(void);
void ut_sweep(void);

/* ---- arrays ---- */
void ut_create(unsigned level, unsigned n);           /* over ut_pp[0..n), UT_CHUNK */
extern bool ut_assemble_ro;                           /* ut_assemble: read-only */
struct ff_raid *ut_assemble(const char *const *list, unsigned n);
struct ff_raid *ut_assemble_without(unsigned n, uint32_t skip_mask);
/* The whole data space written with ut_fill data, kept in ut_shadow
 * (ut_free'd by the caller with free()); ut_verify_all reads it back. */
extern uint8_t *ut_shadow;
void ut_write_all(struct ff_raid *r);
void ut_verify_all(struct ff_raid *r, const char *what);
/* n fresh members of mb MiB, RAID level over them, assembled and written. */
struct ff_raid *ut_written_array(unsigned level, unsigned n, unsigned mb);
/* 4 KiB of junk (0x3c) at byte off of the file at path: a torn or
 * damaged member write, as the tests inject it. */
void ut_junk_at(const char *path, uint64_t off);
/* FF_RAID_CHECK of one stripe: the parity mismatch bits. */
uint32_t ut_parity_mismatch(struct ff_raid *r, uint64_t stripe, void *buf);

/* ---- waiting for completions ---- */
struct ut_count {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned left;
};
void ut_count_init(struct ut_count *c, unsigned n);
void ut_count_done(struct ut_count *c);       /* one completion: left - 1 */
unsigned ut_count_left(struct ut_count *c);
/* Until left is 0: 0, or -ETIMEDOUT after timeout_ms. */
int ut_count_wait(struct ut_count *c, uint64_t timeout_ms);

/* An asynchronous request whose completion counts *left down. */
struct ut_async_write {
	struct ff_raid_io io;
	struct ut_count *left;
};
void ut_async_write_done(struct ff_raid_io *io);

/* A Check program's main: suite `name`, one test case with a 600 s timeout
 * to which add() adds the tests, log level error (debug with FRAMEFS_LOG
 * set); the exit status is 1 when a test failed. */
struct TCase;
int ut_run(const char *name, void (*add)(struct TCase *tc));

#endif
