/* SPDX-License-Identifier: MIT */
/*
 * Parity arithmetic for one row segment of a stripe, independent of where
 * the slots live on the members.
 *
 * Slots are numbered logically: 0..ndata-1 are data, ndata is P, and for
 * RAID6 ndata+1 is Q.  P = D_0 ^ ... ^ D_{k-1}; Q = sum of 2^i * D_i over
 * GF(2^8) with polynomial 0x11d, the same as Linux md raid6, so md's
 * recovery formulas hold and md-written stripes verify.
 *
 * Preconditions (ISA-L's): every pointer 64-byte aligned (AVX-512), len a
 * positive multiple of 64, ndata >= 2.  Each fast routine (ISA-L) has a
 * plain-C reference of the same signature in parity_ref.c; tests compare
 * them on seeded random data.
 */
#ifndef FF_PARITY_H
#define FF_PARITY_H

#include <stdint.h>

#define FF_MEMBERS_MAX 32
#define FF_PARITY_MAX 2

/* Scratch that the ISA-L routines need: GF tables for the parity-update
 * matrix and for the last decode pattern.  One per thread. */
struct ff_gf_ctx {
	unsigned ndata;
	unsigned char enc_matrix[(FF_MEMBERS_MAX + FF_PARITY_MAX) * FF_MEMBERS_MAX];
	unsigned char upd_tbls[32 * FF_MEMBERS_MAX * FF_PARITY_MAX]; /* P and Q rows */
	unsigned char q_tbls[32 * FF_MEMBERS_MAX];                   /* Q row alone */
	/* cache of the last two-slot decode, keyed by the lost slots */
	unsigned dec_lost[FF_PARITY_MAX];
	unsigned dec_nlost;
	unsigned dec_src[FF_MEMBERS_MAX];
	unsigned dec_nsrc_data; /* lost data slots the tables produce */
	unsigned char dec_tbls[32 * FF_MEMBERS_MAX * FF_PARITY_MAX];
};

void ff_gf_ctx_init(struct ff_gf_ctx *g, unsigned ndata);

struct ff_parity_ops {
	const char *name;
	unsigned nparity;
	/* Compute the parity slots from the data slots. */
	void (*gen)(struct ff_gf_ctx *g, uint32_t len, void **slots);
	/* Rebuild the nlost slots listed in lost[] (sorted, distinct, at most
	 * nparity) from all the others, in place.  Returns 0 or -EINVAL. */
	int (*recover)(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
		       unsigned nlost);
	/* parity[] ^= the contribution of src as data slot i.  A read-modify-write
	 * calls it with the old data, then with the new. */
	void (*update)(struct ff_gf_ctx *g, uint32_t len, unsigned i, void *src, void **parity);
};

extern const struct ff_parity_ops ff_parity_raid5;     /* ISA-L */
extern const struct ff_parity_ops ff_parity_raid6;     /* ISA-L */
extern const struct ff_parity_ops ff_parity_raid5_ref; /* plain C */
extern const struct ff_parity_ops ff_parity_raid6_ref; /* plain C */

/* GF(2^8) helpers of the reference, exposed for tests. */
uint8_t ff_gf_ref_mul(uint8_t a, uint8_t b);
uint8_t ff_gf_ref_pow2(unsigned e);

#endif
