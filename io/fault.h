/* SPDX-License-Identifier: MIT */
/*
 * The fault-injecting backend: the one fake the project allows.  It wraps
 * a member's own backend (io/backend.h); rules attached to it make matching
 * I/Os fail with an errno, arrive late, or return flipped bits, so that
 * tests can say exactly which fault they inject.  Rules may be added while
 * I/O runs (append-only, published by an atomic count); ff_fault_clear()
 * disarms them all.  Nothing outside this backend looks at a rule.
 *
 * Text form (FRAMEFS_FAULT, framefs-admin, tests), rules separated by ';':
 *     SELECTOR@op=r|w|rw|f,err=EIO,after=N,count=N,from=SIZE,to=SIZE,lat_us=N,flip=N
 * SELECTOR is a member path as given, or its basename.  Omitted keys mean:
 * reads and writes, no error, no delay, the whole member, from the first op,
 * on every op after that (count=N: on N ops, then no more — a bad sector
 * that the drive remaps when it is rewritten).
 * op=f selects flushes (fdatasync) alone; from/to do not apply to them.
 * An op that draws both an error and a latency (from one rule or several)
 * fails when the delay ends (a member that hangs, then errors); an error
 * alone fails it at once.
 */
#ifndef FF_FAULT_H
#define FF_FAULT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "io/member.h"

enum { FF_FAULT_READ = 1u, FF_FAULT_WRITE = 2u, FF_FAULT_FLUSH = 4u };
#define FF_FAULT_RULES_MAX 8

struct ff_fault_rule {
	unsigned ops;        /* FF_FAULT_READ | FF_FAULT_WRITE, or FF_FAULT_FLUSH */
	uint64_t off_start;  /* member byte range [off_start, off_end) */
	uint64_t off_end;    /* 0 = to the end of the member */
	uint64_t after_ops;  /* this many matching ops pass before the rule fires */
	uint64_t count_ops;  /* then it fires on this many, 0 = on all */
	int error;           /* positive errno, 0 = do not fail */
	uint32_t latency_us; /* added before the op is issued (or fails, with error) */
	uint32_t flip_bits;  /* bits flipped in the data of each matching read */
};

struct ff_undo;

struct ff_fault {
	const struct ff_backend *inner;           /* the backend it wraps */
	struct ff_fault_rule rule[FF_FAULT_RULES_MAX];
	_Atomic uint64_t seen[FF_FAULT_RULES_MAX]; /* matching ops per rule */
	_Atomic unsigned nrules;
	_Atomic uint64_t fired;                   /* ops a rule acted on */
	_Atomic uint64_t flip_seq;                /* makes flipped positions repeatable */
	struct ff_undo *undo;                     /* power-loss log, NULL if none */
	/* requests each rule's delay holds now; held_lock/held_cond let a test
	 * wait for them (ff_fault_wait_held) */
	unsigned held[FF_FAULT_RULES_MAX];
	pthread_mutex_t held_lock;
	pthread_cond_t held_cond;
	struct ff_fault *retired_next;            /* for an owner that frees it later */
};

/* Parse one rule's key=value list (the part after '@'). */
int ff_fault_parse(const char *spec, struct ff_fault_rule *rule, struct ff_err *err);

/* Arm a rule on member m (puts the fault backend in front of m's own on
 * first use).  Rules are numbered from 0 in the order added since the last
 * ff_fault_clear(): that number names the rule to ff_fault_held(). */
int ff_fault_add(struct ff_member *m, const struct ff_fault_rule *rule);
void ff_fault_clear(struct ff_member *m);

/*
 * Take the fault backend off m (its own backend takes over) and hand back
 * its state, for an owner that frees it once no request can still use it
 * (NULL if m had none).  ff_fault_free() takes it off and frees it at once:
 * only when no ring can be issuing to m.  An undo log still open is closed
 * when the state is freed (ff_member_close closes it otherwise).
 */
struct ff_fault *ff_fault_detach(struct ff_member *m);
void ff_fault_destroy(struct ff_fault *f);
void ff_fault_free(struct ff_member *m);

/* Apply a whole FRAMEFS_FAULT-style text to the members it names. */
int ff_fault_apply_text(struct ff_member *const *members, unsigned n, const char *text,
			struct ff_err *err);

/*
 * The hold handshake, so a test need not sleep to let a delayed request
 * arrive: a request a rule with a latency (lat_us/lat_ms) acted on is held
 * from its first dispatch until it completes (its delay, then the op or
 * the rule's error; a cancel ends it too).  ff_fault_held() counts the
 * requests rule `rule` holds now (FF_FAULT_ANY: all rules of m), and
 * ff_fault_wait_held() waits until at least n are held: 0, or -ETIMEDOUT
 * when timeout_ms passed first.  A request several rules act on is held by
 * the one with the longest latency.
 */
#define FF_FAULT_ANY (-1)
unsigned ff_fault_held(struct ff_member *m, int rule);
int ff_fault_wait_held(struct ff_member *m, int rule, unsigned n, uint64_t timeout_ms);

/*
 * Power-loss simulation (tests only).  After ff_undo_open(m, DIR) (the
 * daemon passes FRAMEFS_UNDO_DIR: struct ff_raid_opts.undo_dir), a member
 * opened read-write keeps an undo log, DIR/<basename of the member>.undo: before each write the bytes it will
 * overwrite are appended (a record: kind 1, sequence, offset, length, then
 * the old bytes), and when a flush that was issued after record S completes,
 * a mark (kind 2, S) follows — or the log is emptied when nothing was written
 * since.  Writes after the newest mark are what a drive with a volatile
 * cache may lose at a power cut; tests/integration/crash_kill9.py
 * --powerloss rolls a random part of them back after killing the daemon.
 */
enum { FF_UNDO_WRITE = 1, FF_UNDO_FLUSHED = 2 };
struct ff_undo_rec {
	uint64_t kind, seq, off, len;
};
_Static_assert(sizeof(struct ff_undo_rec) == 32, "undo record header: 32 bytes");

/* 0 and nothing done for a NULL or empty dir or a read-only member; the
 * log closes with the member (ff_member_close). */
int ff_undo_open(struct ff_member *m, const char *dir, struct ff_err *err);

#endif
