/* SPDX-License-Identifier: MIT */
/*
 * The fault-injecting member: the one fake the project allows.  Rules
 * attached to a real member make matching I/Os fail with an errno, arrive
 * late, or return flipped bits, so that tests can say exactly which fault
 * they inject.  Rules may be added while I/O runs (append-only, published
 * by an atomic count); ff_fault_clear() disarms them all.
 *
 * Text form (FRAMEFS_FAULT, framefs-admin, tests), rules separated by ';':
 *     SELECTOR@op=r|w|rw|f,err=EIO,after=N,from=SIZE,to=SIZE,lat_us=N,flip=N
 * SELECTOR is a member path as given, or its basename.  Omitted keys mean:
 * reads and writes, no error, no delay, the whole member, from the first op.
 * op=f selects flushes (fdatasync) alone; from/to do not apply to them.
 * An op that draws both an error and a latency (from one rule or several)
 * fails when the delay ends (a member that hangs, then errors); an error
 * alone fails it at once.
 */
#ifndef FF_FAULT_H
#define FF_FAULT_H

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
	int error;           /* positive errno, 0 = do not fail */
	uint32_t latency_us; /* added before the op is issued (or fails, with error) */
	uint32_t flip_bits;  /* bits flipped in the data of each matching read */
};

struct ff_fault_action {
	int error;
	uint32_t latency_us;
	uint32_t flip_bits;
};

struct ff_fault {
	struct ff_fault_rule rule[FF_FAULT_RULES_MAX];
	_Atomic uint64_t seen[FF_FAULT_RULES_MAX]; /* matching ops per rule */
	_Atomic unsigned nrules;
	_Atomic uint64_t fired;                   /* ops a rule acted on */
	_Atomic uint64_t flip_seq;                /* makes flipped positions repeatable */
	struct ff_fault *retired_next;            /* for an owner that frees it later */
};

/* Parse one rule's key=value list (the part after '@'). */
int ff_fault_parse(const char *spec, struct ff_fault_rule *rule, struct ff_err *err);

/* Arm a rule on member m (allocates the fault block on first use). */
int ff_fault_add(struct ff_member *m, const struct ff_fault_rule *rule);
void ff_fault_clear(struct ff_member *m);

/* Apply a whole FRAMEFS_FAULT-style text to the members it names. */
int ff_fault_apply_text(struct ff_member *const *members, unsigned n, const char *text,
			struct ff_err *err);

/* Decide what happens to one I/O; act is zeroed when nothing fires. */
void ff_fault_check(struct ff_fault *f, unsigned op, uint64_t off, uint32_t len,
		    struct ff_fault_action *act);

/* Flip nbits bits of buf at positions derived from a sequence number. */
void ff_fault_flip(struct ff_fault *f, void *buf, uint32_t len, uint32_t nbits);

/*
 * Power-loss simulation (tests only).  With FRAMEFS_UNDO_DIR set in the
 * environment, a member opened read-write keeps an undo log,
 * DIR/<basename of the member>.undo: before each write the bytes it will
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

int ff_undo_open(struct ff_member *m);   /* 0, also when FRAMEFS_UNDO_DIR is unset */
void ff_undo_close(struct ff_member *m);
void ff_undo_write(struct ff_member *m, uint64_t off, uint64_t len);
uint64_t ff_undo_seq(struct ff_member *m);           /* before a flush is issued */
void ff_undo_flushed(struct ff_member *m, uint64_t seq); /* after it completed */

#endif
