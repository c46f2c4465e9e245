/* SPDX-License-Identifier: MIT */
/*
 * Plain-C reference for every parity routine: byte loops and log/exp
 * tables, written for clarity, not speed.  The two-data recovery follows
 * the algebra directly:
 *     Pxy = P + sum(D_i, i != x,y) = Dx + Dy
 *     Qxy = Q + sum(g^i D_i, i != x,y) = g^x Dx + g^y Dy
 * so  Dx = (Qxy + g^y Pxy) / (g^x + g^y)  and  Dy = Pxy + Dx.
 */
#include <errno.h>
#include <string.h>

#include "io/ff_common.h"
#include "raid/parity.h"

static uint8_t gf_exp[512];
static uint8_t gf_log[256];
static int gf_ready;

static void gf_init(void)
{
	unsigned x = 1;

	if (__atomic_load_n(&gf_ready, __ATOMIC_ACQUIRE))
		return;
	for (unsigned i = 0; i < 255; i++) {
		gf_exp[i] = (uint8_t)x;
		gf_exp[i + 255] = (uint8_t)x;
		gf_log[x] = (uint8_t)i;
		x <<= 1;
		if (x & 0x100)
			x ^= 0x11d;
	}
	gf_exp[510] = gf_exp[0];
	gf_exp[511] = gf_exp[1];
	__atomic_store_n(&gf_ready, 1, __ATOMIC_RELEASE);
}

uint8_t ff_gf_ref_mul(uint8_t a, uint8_t b)
{
	gf_init();
	if (a == 0 || b == 0)
		return 0;
	return gf_exp[gf_log[a] + gf_log[b]];
}

static uint8_t gf_div(uint8_t a, uint8_t b)
{
	FF_ASSERT(b != 0);
	if (a == 0)
		return 0;
	return gf_exp[(gf_log[a] + 255 - gf_log[b]) % 255];
}

uint8_t ff_gf_ref_pow2(unsigned e)
{
	gf_init();
	return gf_exp[e % 255];
}

static void ref_p(unsigned k, uint32_t len, void **slots, unsigned skip, uint8_t *out)
{
	for (uint32_t b = 0; b < len; b++) {
		uint8_t p = 0;

		for (unsigned i = 0; i < k; i++)
			if (i != skip)
				p ^= ((uint8_t *)slots[i])[b];
		out[b] = p;
	}
}

static void ref_q(unsigned k, uint32_t len, void **slots, unsigned skip1, unsigned skip2,
		  uint8_t *out)
{
	gf_init();
	for (uint32_t b = 0; b < len; b++) {
		uint8_t q = 0;

		for (unsigned i = 0; i < k; i++)
			if (i != skip1 && i != skip2)
				q ^= ff_gf_ref_mul(ff_gf_ref_pow2(i), ((uint8_t *)slots[i])[b]);
		out[b] = q;
	}
}

static void ref_r5_gen(struct ff_gf_ctx *g, uint32_t len, void **slots)
{
	ref_p(g->ndata, len, slots, ~0u, slots[g->ndata]);
}

static int ref_r5_recover(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
		      unsigned nlost)
{
	unsigned k = g->ndata;
	uint8_t *out;

	if (nlost == 0)
		return 0;
	if (nlost != 1 || lost[0] > k)
		return -EINVAL;
	out = slots[lost[0]];
	for (uint32_t b = 0; b < len; b++) {
		uint8_t p = 0;

		for (unsigned i = 0; i <= k; i++)
			if (i != lost[0])
				p ^= ((uint8_t *)slots[i])[b];
		out[b] = p;
	}
	return 0;
}

static void ref_r5_update(struct ff_gf_ctx *g, uint32_t len, unsigned i, void *src, void **parity)
{
	uint8_t *p = parity[0];
	const uint8_t *s = src;

	FF_ASSERT(i < g->ndata);
	for (uint32_t b = 0; b < len; b++)
		p[b] ^= s[b];
}

static void ref_r6_gen(struct ff_gf_ctx *g, uint32_t len, void **slots)
{
	ref_p(g->ndata, len, slots, ~0u, slots[g->ndata]);
	ref_q(g->ndata, len, slots, ~0u, ~0u, slots[g->ndata + 1]);
}

/* One data slot x lost with Q present and P lost (or unusable). */
static void ref_r6_data_from_q(unsigned k, uint32_t len, void **slots, unsigned x)
{
	uint8_t *dx = slots[x];
	const uint8_t *q = slots[k + 1];
	uint8_t gx = ff_gf_ref_pow2(x);

	ref_q(k, len, slots, x, ~0u, dx); /* dx = sum of the others' Q terms */
	for (uint32_t b = 0; b < len; b++)
		dx[b] = gf_div((uint8_t)(q[b] ^ dx[b]), gx);
}

static void ref_r6_two_data(unsigned k, uint32_t len, void **slots, unsigned x, unsigned y)
{
	uint8_t *dx = slots[x], *dy = slots[y];
	const uint8_t *p = slots[k], *q = slots[k + 1];
	uint8_t gx = ff_gf_ref_pow2(x), gy = ff_gf_ref_pow2(y);
	uint8_t denom = gx ^ gy;

	for (uint32_t b = 0; b < len; b++) {
		uint8_t pxy = p[b], qxy = q[b];

		for (unsigned i = 0; i < k; i++) {
			uint8_t d;

			if (i == x || i == y)
				continue;
			d = ((uint8_t *)slots[i])[b];
			pxy ^= d;
			qxy ^= ff_gf_ref_mul(ff_gf_ref_pow2(i), d);
		}
		dx[b] = gf_div((uint8_t)(qxy ^ ff_gf_ref_mul(gy, pxy)), denom);
		dy[b] = pxy ^ dx[b];
	}
}

static int ref_r6_recover(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
		      unsigned nlost)
{
	unsigned k = g->ndata, P = k, Q = k + 1;

	gf_init();
	if (nlost > 2 || (nlost == 2 && lost[0] >= lost[1]) || (nlost && lost[nlost - 1] > Q))
		return -EINVAL;
	if (nlost == 0)
		return 0;
	if (nlost == 1 || lost[1] == Q) { /* at most one data slot, P present */
		if (lost[0] < k)
			ref_p(k + 1, len, slots, lost[0], slots[lost[0]]);
		else if (lost[0] == P)
			ref_p(k, len, slots, ~0u, slots[P]);
		if (lost[nlost - 1] == Q)
			ref_q(k, len, slots, ~0u, ~0u, slots[Q]);
		return 0;
	}
	if (lost[1] == P) { /* one data slot and P */
		ref_r6_data_from_q(k, len, slots, lost[0]);
		ref_p(k, len, slots, ~0u, slots[P]);
		return 0;
	}
	ref_r6_two_data(k, len, slots, lost[0], lost[1]);
	return 0;
}

static void ref_r6_update(struct ff_gf_ctx *g, uint32_t len, unsigned i, void *src, void **parity)
{
	uint8_t *p = parity[0], *q = parity[1];
	const uint8_t *s = src;
	uint8_t gi = ff_gf_ref_pow2(i);

	FF_ASSERT(i < g->ndata);
	for (uint32_t b = 0; b < len; b++) {
		p[b] ^= s[b];
		q[b] ^= ff_gf_ref_mul(gi, s[b]);
	}
}

const struct ff_parity_ops ff_parity_raid5_ref = {
	.name = "raid5-ref", .nparity = 1,
	.gen = ref_r5_gen, .recover = ref_r5_recover, .update = ref_r5_update,
};

const struct ff_parity_ops ff_parity_raid6_ref = {
	.name = "raid6-ref", .nparity = 2,
	.gen = ref_r6_gen, .recover = ref_r6_recover, .update = ref_r6_update,
};
