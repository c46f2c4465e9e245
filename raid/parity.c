/* SPDX-License-Identifier: MIT */
/*
 * Parity through ISA-L.  xor_gen/pq_gen generate; recovery of one data slot
 * with P present is a plain XOR; every other pattern (a data slot with P,
 * two data slots) inverts the surviving rows of the generator matrix and
 * decodes with ec_encode_data.  gf_gen_rs_matrix's rows k and k+1 are
 * exactly P (all ones) and Q (2^j), so the matrix and pq_gen agree.
 */
#include <errno.h>
#include <stdbool.h>
#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>
#include <string.h>

#include "io/ff_common.h"
#include "raid/parity.h"

void ff_gf_ctx_init(struct ff_gf_ctx *g, unsigned ndata)
{
	FF_ASSERT(ndata >= 2 && ndata <= FF_MEMBERS_MAX);
	memset(g, 0, sizeof(*g));
	g->ndata = ndata;
	gf_gen_rs_matrix(g->enc_matrix, (int)ndata + 2, (int)ndata);
	/* rows ndata (P) and ndata+1 (Q), used by update and Q regeneration */
	ec_init_tables((int)ndata, 2, &g->enc_matrix[ndata * ndata], g->upd_tbls);
	ec_init_tables((int)ndata, 1, &g->enc_matrix[(ndata + 1) * ndata], g->q_tbls);
}

static void xor_into(unsigned nsrc, uint32_t len, void **src, void *dst)
{
	void *v[FF_MEMBERS_MAX + 1];

	FF_ASSERT(nsrc >= 1 && nsrc <= FF_MEMBERS_MAX);
	if (nsrc == 1) {
		memcpy(dst, src[0], len);
		return;
	}
	memcpy(v, src, nsrc * sizeof(void *));
	v[nsrc] = dst;
	xor_gen((int)nsrc + 1, (int)len, v);
}

/* dst = XOR of slots 0..nslots-1 except skip */
static void xor_except(unsigned nslots, uint32_t len, void **slots, unsigned skip, void *dst)
{
	void *src[FF_MEMBERS_MAX + 1];
	unsigned n = 0;

	for (unsigned i = 0; i < nslots; i++)
		if (i != skip)
			src[n++] = slots[i];
	xor_into(n, len, src, dst);
}

static void regen_q(struct ff_gf_ctx *g, uint32_t len, void **slots)
{
	unsigned char *out[1] = { slots[g->ndata + 1] };

	ec_encode_data((int)len, (int)g->ndata, 1, g->q_tbls, (unsigned char **)slots, out);
}

static void r5_gen(struct ff_gf_ctx *g, uint32_t len, void **slots)
{
	FF_ASSERT(len % 64 == 0);
	xor_gen((int)g->ndata + 1, (int)len, slots);
}

static int r5_recover(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
		      unsigned nlost)
{
	if (nlost == 0)
		return 0;
	if (nlost != 1 || lost[0] > g->ndata)
		return -EINVAL;
	xor_except(g->ndata + 1, len, slots, lost[0], slots[lost[0]]);
	return 0;
}

static void r5_update(struct ff_gf_ctx *g, uint32_t len, unsigned i, void *src, void **parity)
{
	void *v[3] = { parity[0], src, parity[0] }; /* dst aliasing src[0] is safe */

	FF_ASSERT(i < g->ndata);
	xor_gen(3, (int)len, v);
}

static void r6_gen(struct ff_gf_ctx *g, uint32_t len, void **slots)
{
	FF_ASSERT(len % 64 == 0);
	pq_gen((int)g->ndata + 2, (int)len, slots);
}

/*
 * Decode lost data slots with the inverse of k surviving generator rows.
 * The tables depend only on which slots are lost, so the last pattern is
 * cached: a degraded sequential read with a fixed lost member cycles
 * through at most `members` patterns.
 */
static int r6_decode_data(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
			  unsigned nlost)
{
	unsigned k = g->ndata;
	unsigned char *src[FF_MEMBERS_MAX], *dst[FF_PARITY_MAX];
	unsigned nd = 0;

	if (g->dec_nlost != nlost || memcmp(g->dec_lost, lost, nlost * sizeof(*lost)) != 0) {
		unsigned char b[FF_MEMBERS_MAX * FF_MEMBERS_MAX], inv[FF_MEMBERS_MAX * FF_MEMBERS_MAX];
		unsigned char dec[FF_PARITY_MAX * FF_MEMBERS_MAX];
		unsigned ns = 0, li = 0;

		for (unsigned r = 0; r < k + 2 && ns < k; r++) {
			if (li < nlost && lost[li] == r) {
				li++;
				continue;
			}
			memcpy(&b[ns * k], &g->enc_matrix[r * k], k);
			g->dec_src[ns++] = r;
		}
		if (ns < k || gf_invert_matrix(b, inv, (int)k) < 0)
			return -EINVAL;
		g->dec_nsrc_data = 0;
		for (unsigned i = 0; i < nlost; i++)
			if (lost[i] < k)
				memcpy(&dec[g->dec_nsrc_data++ * k], &inv[lost[i] * k], k);
		ec_init_tables((int)k, (int)g->dec_nsrc_data, dec, g->dec_tbls);
		memcpy(g->dec_lost, lost, nlost * sizeof(*lost));
		g->dec_nlost = nlost;
	}
	for (unsigned i = 0; i < k; i++)
		src[i] = slots[g->dec_src[i]];
	for (unsigned i = 0; i < nlost; i++)
		if (lost[i] < k)
			dst[nd++] = slots[lost[i]];
	ec_encode_data((int)len, (int)k, (int)nd, g->dec_tbls, src, dst);
	return 0;
}

static int r6_recover(struct ff_gf_ctx *g, uint32_t len, void **slots, const unsigned *lost,
		      unsigned nlost)
{
	unsigned k = g->ndata, P = k, Q = k + 1;
	bool p_lost, q_lost;

	if (nlost > 2 || (nlost == 2 && lost[0] >= lost[1]) || (nlost && lost[nlost - 1] > Q))
		return -EINVAL;
	if (nlost == 0)
		return 0;
	p_lost = lost[0] == P || (nlost == 2 && lost[1] == P);
	q_lost = lost[nlost - 1] == Q;
	if (p_lost && q_lost) {
		r6_gen(g, len, slots);
		return 0;
	}
	if (lost[0] < k && !p_lost && (nlost == 1 || q_lost)) {
		xor_except(k + 1, len, slots, lost[0], slots[lost[0]]); /* fast: XOR with P */
	} else if (lost[0] < k) {
		int rc = r6_decode_data(g, len, slots, lost, nlost);

		if (rc < 0)
			return rc;
	}
	if (p_lost)
		xor_except(k, len, slots, ~0u, slots[P]);
	if (q_lost)
		regen_q(g, len, slots);
	return 0;
}

static void r6_update(struct ff_gf_ctx *g, uint32_t len, unsigned i, void *src, void **parity)
{
	FF_ASSERT(i < g->ndata);
	ec_encode_data_update((int)len, (int)g->ndata, 2, (int)i, g->upd_tbls, src,
			      (unsigned char **)parity);
}

const struct ff_parity_ops ff_parity_raid5 = {
	.name = "raid5-isal", .nparity = 1,
	.gen = r5_gen, .recover = r5_recover, .update = r5_update,
};

const struct ff_parity_ops ff_parity_raid6 = {
	.name = "raid6-isal", .nparity = 2,
	.gen = r6_gen, .recover = r6_recover, .update = r6_update,
};
