/* SPDX-License-Identifier: MIT */
/*
 * Differential tests: every ISA-L parity routine against its plain-C
 * reference on seeded random data, across data-slot counts, lengths and
 * every loss pattern the level survives.
 */
#include <check.h>
#include <isa-l/erasure_code.h>
#include <stdlib.h>
#include <string.h>

#include "io/ff_common.h"
#include "raid/parity.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
}

struct slots {
	unsigned n;
	void *s[FF_MEMBERS_MAX + 2];
};

static void slots_alloc(struct slots *sl, unsigned n, uint32_t len)
{
	sl->n = n;
	for (unsigned i = 0; i < n; i++) {
		sl->s[i] = ff_alloc_aligned(len);
		ck_assert_ptr_nonnull(sl->s[i]);
	}
}

static void slots_free(struct slots *sl)
{
	for (unsigned i = 0; i < sl->n; i++)
		free(sl->s[i]);
}

static const uint32_t lens[] = { 64, 192, 4096, 65536 + 64 };

static void check_gen(const struct ff_parity_ops *fast, const struct ff_parity_ops *ref,
		      unsigned k, uint32_t len)
{
	unsigned n = k + fast->nparity;
	struct ff_gf_ctx g;
	struct slots a, b;

	ff_gf_ctx_init(&g, k);
	slots_alloc(&a, n, len);
	slots_alloc(&b, n, len);
	for (unsigned i = 0; i < k; i++) {
		fill_random(a.s[i], len);
		memcpy(b.s[i], a.s[i], len);
	}
	fast->gen(&g, len, a.s);
	ref->gen(&g, len, b.s);
	for (unsigned i = k; i < n; i++)
		ck_assert_msg(memcmp(a.s[i], b.s[i], len) == 0, "%s gen: slot %u differs (k=%u len=%u)",
			      fast->name, i, k, len);
	slots_free(&a);
	slots_free(&b);
}

/* Erase the lost slots with garbage, recover with ops, compare to orig. */
static void check_recover_one(const struct ff_parity_ops *ops, struct ff_gf_ctx *g,
			      struct slots *orig, struct slots *work, uint32_t len,
			      const unsigned *lost, unsigned nlost)
{
	for (unsigned i = 0; i < orig->n; i++)
		memcpy(work->s[i], orig->s[i], len);
	for (unsigned i = 0; i < nlost; i++)
		fill_random(work->s[lost[i]], len);
	ck_assert_int_eq(ops->recover(g, len, work->s, lost, nlost), 0);
	for (unsigned i = 0; i < orig->n; i++)
		ck_assert_msg(memcmp(work->s[i], orig->s[i], len) == 0,
			      "%s: lost {%u,%u} (n=%u) slot %u wrong after recovery", ops->name,
			      lost[0], nlost > 1 ? lost[1] : lost[0], nlost, i);
}

static void check_recover(const struct ff_parity_ops *fast, const struct ff_parity_ops *ref,
			  unsigned k, uint32_t len)
{
	unsigned n = k + fast->nparity;
	struct ff_gf_ctx g;
	struct slots orig, work;

	ff_gf_ctx_init(&g, k);
	slots_alloc(&orig, n, len);
	slots_alloc(&work, n, len);
	for (unsigned i = 0; i < k; i++)
		fill_random(orig.s[i], len);
	ref->gen(&g, len, orig.s);
	for (unsigned x = 0; x < n; x++) {
		unsigned lost1[1] = { x };

		check_recover_one(fast, &g, &orig, &work, len, lost1, 1);
		check_recover_one(ref, &g, &orig, &work, len, lost1, 1);
		for (unsigned y = x + 1; y < n && fast->nparity == 2; y++) {
			unsigned lost2[2] = { x, y };

			check_recover_one(fast, &g, &orig, &work, len, lost2, 2);
			check_recover_one(ref, &g, &orig, &work, len, lost2, 2);
		}
	}
	slots_free(&orig);
	slots_free(&work);
}

static void check_update(const struct ff_parity_ops *ops, unsigned k, uint32_t len)
{
	unsigned n = k + ops->nparity;
	struct ff_gf_ctx g;
	struct slots s, fresh;
	void *newd = ff_alloc_aligned(len);

	ff_gf_ctx_init(&g, k);
	slots_alloc(&s, n, len);
	slots_alloc(&fresh, n, len);
	for (unsigned i = 0; i < k; i++)
		fill_random(s.s[i], len);
	ops->gen(&g, len, s.s);
	for (unsigned i = 0; i < k; i++) {
		fill_random(newd, len);
		/* read-modify-write: parity ^= f(old) ^ f(new) */
		ops->update(&g, len, i, s.s[i], &s.s[k]);
		ops->update(&g, len, i, newd, &s.s[k]);
		memcpy(s.s[i], newd, len);
		for (unsigned j = 0; j < k; j++)
			memcpy(fresh.s[j], s.s[j], len);
		ops->gen(&g, len, fresh.s);
		for (unsigned p = k; p < n; p++)
			ck_assert_msg(memcmp(fresh.s[p], s.s[p], len) == 0,
				      "%s update of slot %u: parity %u differs", ops->name, i, p);
	}
	free(newd);
	slots_free(&s);
	slots_free(&fresh);
}

START_TEST(gen_matches_reference)
{
	rng_state = 0x1234567 + (uint64_t)_i;
	for (unsigned k = 2; k <= FF_MEMBERS_MAX - 2; k++)
		for (unsigned l = 0; l < FF_ARRAY_SIZE(lens); l++) {
			check_gen(&ff_parity_raid5, &ff_parity_raid5_ref, k, lens[l]);
			check_gen(&ff_parity_raid6, &ff_parity_raid6_ref, k, lens[l]);
		}
}
END_TEST

START_TEST(recover_every_single_and_pair)
{
	static const unsigned ks[] = { 2, 3, 4, 5, 7, 14, 30 };

	rng_state = 0xabcdef + (uint64_t)_i;
	for (unsigned ki = 0; ki < FF_ARRAY_SIZE(ks); ki++)
		for (unsigned l = 0; l < 3; l++) {
			check_recover(&ff_parity_raid5, &ff_parity_raid5_ref, ks[ki], lens[l]);
			check_recover(&ff_parity_raid6, &ff_parity_raid6_ref, ks[ki], lens[l]);
		}
}
END_TEST

START_TEST(update_equals_regeneration)
{
	static const unsigned ks[] = { 2, 3, 6, 30 };

	rng_state = 0x5eed + (uint64_t)_i;
	for (unsigned ki = 0; ki < FF_ARRAY_SIZE(ks); ki++) {
		check_update(&ff_parity_raid5, ks[ki], 4096);
		check_update(&ff_parity_raid5_ref, ks[ki], 4096);
		check_update(&ff_parity_raid6, ks[ki], 4096);
		check_update(&ff_parity_raid6_ref, ks[ki], 4096);
	}
}
END_TEST

/* Q must be md's: Q = sum 2^i D_i over GF(2^8)/0x11d.  Known values. */
START_TEST(q_is_md_compatible)
{
	ck_assert_uint_eq(ff_gf_ref_pow2(8), 0x1d);
	ck_assert_uint_eq(ff_gf_ref_mul(0x80, 2), 0x1d);
	for (unsigned a = 0; a < 256; a++) /* ISA-L's field is md's field */
		for (unsigned b = 0; b < 256; b++)
			ck_assert_uint_eq(ff_gf_ref_mul((uint8_t)a, (uint8_t)b),
					  gf_mul((unsigned char)a, (unsigned char)b));
	{
		struct ff_gf_ctx g;
		struct slots s;
		uint8_t *q;

		ff_gf_ctx_init(&g, 3);
		slots_alloc(&s, 5, 64);
		memset(s.s[0], 0x01, 64);
		memset(s.s[1], 0x01, 64);
		memset(s.s[2], 0x80, 64);
		ff_parity_raid6.gen(&g, 64, s.s);
		q = s.s[4];
		/* 1*1 ^ 2*1 ^ 4*0x80 = 1 ^ 2 ^ 0x3a = 0x39 */
		ck_assert_uint_eq(q[0], 0x39);
		ck_assert_uint_eq(((uint8_t *)s.s[3])[0], 0x80);
		slots_free(&s);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("parity");
	TCase *tc = tcase_create("differential");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, gen_matches_reference, 0, 2);
	tcase_add_loop_test(tc, recover_every_single_and_pair, 0, 2);
	tcase_add_loop_test(tc, update_equals_regeneration, 0, 2);
	tcase_add_test(tc, q_is_md_compatible);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
