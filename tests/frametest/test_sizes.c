/* SPDX-License-Identifier: MIT */
/*
 * Sizes: byte counts with units, --vary's MIN:MAX[,SEED], the size of a
 * varying frame (pinned: frames on disk are read back at the sizes this
 * function gives, so it must never change), -c's part of a frame and the
 * bytes per I/O call of -i and --io-size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "sizes.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

START_TEST(byte_sizes_take_units)
{
	static const struct { const char *s; uint64_t v; } good[] = {
		{ "3M", 3 * MIB }, { "3MiB", 3 * MIB }, { "3m", 3 * MIB }, { "512K", 512 * KIB },
		{ "512kib", 512 * KIB }, { "65536B", 65536 }, { "1G", 1024 * MIB },
		{ "4GiB", 4096 * MIB }, { "100", 100 * KIB }, { "1", KIB },
	};
	static const char *const bad[] = { "", "M", "-1", "1.5M", "3MB", "3 M", "3Mi", "x3",
					   "3MiBs" };
	static const char *const range[] = { "0", "0M", "5G", "4194305", "99999999999999999999" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ck_assert_msg(ft_parse_bytes(good[i].s, &v) == 0, "refused %s", good[i].s);
		ck_assert_uint_eq(v, good[i].v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(ft_parse_bytes(bad[i], &v) == -EINVAL, "accepted '%s'", bad[i]);
	for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++)
		ck_assert_msg(ft_parse_bytes(range[i], &v) == -ERANGE, "in range: '%s'", range[i]);
}
END_TEST

START_TEST(byte_sizes_print_exactly)
{
	char b[32];

	ck_assert_str_eq(ft_format_bytes(3 * MIB, b, sizeof(b)), "3MiB");
	ck_assert_str_eq(ft_format_bytes(4100 * KIB, b, sizeof(b)), "4100KiB");
	ck_assert_str_eq(ft_format_bytes(12345, b, sizeof(b)), "12345B");
	ck_assert_str_eq(ft_format_bytes(2048 * MIB, b, sizeof(b)), "2GiB");
	ck_assert_str_eq(ft_format_bytes(0, b, sizeof(b)), "0B");
}
END_TEST

START_TEST(vary_parses_min_max_seed)
{
	static const char *const bad[] = {
		"3M", "60M:3M", "3M:60M,", "3M:60M,x", "3M:60M,-1", "5000B:60M", "3M:61441K",
		":60M", "3M:", "3M,5:60M", "3M:60M:9", "0:60M", "3M:5G", "",
	};
	struct ft_vary v;
	char err[256], label[48];

	ck_assert_int_eq(ft_vary_parse("3M:60M", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v.min, 3 * MIB);
	ck_assert_uint_eq(v.max, 60 * MIB);
	ck_assert_uint_eq(v.seed, FT_VARY_SEED_DEFAULT);
	ck_assert(ft_vary_on(&v));
	ft_vary_label(&v, label, sizeof(label));
	ck_assert_str_eq(label, "3MiB-60MiB");
	ck_assert_int_eq(ft_vary_parse("256K:4100K,42", &v, err, sizeof(err)), 0);
	ck_assert_uint_eq(v.min, 256 * KIB);
	ck_assert_uint_eq(v.max, 4100 * KIB);
	ck_assert_uint_eq(v.seed, 42);
	ck_assert_int_eq(ft_vary_parse("1M:1M,0", &v, err, sizeof(err)), 0);	/* one size: allowed */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(ft_vary_parse(bad[i], &v, err, sizeof(err)) == -EINVAL, "accepted '%s'",
			      bad[i]);
		ck_assert_msg(strncmp(err, "--vary: ", 8) == 0 && !strchr(err, '\n'),
			      "'%s': message '%s'", bad[i], err);
	}
}
END_TEST

/* The values frames already on disk were written at: never to change. */
START_TEST(vary_sizes_are_pinned)
{
	struct ft_vary v = { 3 * MIB, 60 * MIB, 1 }, v2 = { 3 * MIB, 60 * MIB, 2 };
	struct ft_vary small = { 64 * KIB, MIB, 11 };
	static const uint64_t s0[5] = { 38346752, 47718400, 56238080, 56897536, 62259200 };
	static const uint64_t s_small[6] = { 888832, 876544, 929792, 770048, 610304, 860160 };

	for (uint64_t i = 0; i < 5; i++)
		ck_assert_uint_eq(ft_vary_bytes(&v, 0, i), s0[i]);
	for (uint64_t i = 0; i < 6; i++)
		ck_assert_uint_eq(ft_vary_bytes(&small, 0, i), s_small[i]);
	ck_assert_uint_eq(ft_vary_bytes(&v, 1, 0), 35950592);
	ck_assert_uint_eq(ft_vary_bytes(&v2, 0, 0), 33226752);
	ck_assert_uint_eq(ft_vary_bytes(&v, 0, 1ull << 40), 6393856);
}
END_TEST

START_TEST(vary_sizes_cover_the_range_in_4k_steps)
{
	struct ft_vary v = { 3 * MIB, 60 * MIB, 7 }, one = { MIB, MIB, 7 };
	uint64_t n = 20000, lo = UINT64_MAX, hi = 0, same_other_stream = 0, same_other_seed = 0;
	double sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t b = ft_vary_bytes(&v, 3, i);
		struct ft_vary w = { v.min, v.max, 8 };

		ck_assert_uint_eq(b % FT_VARY_ALIGN, 0);
		ck_assert(b >= v.min && b <= v.max);
		ck_assert_uint_eq(ft_vary_bytes(&v, 3, i), b);	/* pure */
		same_other_stream += ft_vary_bytes(&v, 4, i) == b;
		same_other_seed += ft_vary_bytes(&w, 3, i) == b;
		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
		sum += (double)b;
	}
	/* 14593 sizes to choose from: the ends are reached, the mean is the middle. */
	ck_assert_uint_le(lo, v.min + 64 * KIB);
	ck_assert_uint_ge(hi, v.max - 64 * KIB);
	ck_assert(sum / (double)n > (double)(v.min + v.max) / 2 * 0.98);
	ck_assert(sum / (double)n < (double)(v.min + v.max) / 2 * 1.02);
	/* Another stream or seed draws other sizes (equal by chance about 1 in 14593). */
	ck_assert_uint_lt(same_other_stream, 10);
	ck_assert_uint_lt(same_other_seed, 10);
	ck_assert_uint_eq(ft_vary_bytes(&one, 0, 5), MIB);
}
END_TEST

START_TEST(crop_keeps_whole_chunks)
{
	uint64_t off, len;

	ft_crop_range(MIB, 30, &off, &len);	/* bytes 327680..655359 of 1 MiB */
	ck_assert_uint_eq(off, 327680);
	ck_assert_uint_eq(len, 327680);
	ft_crop_range(MIB, 100, &off, &len);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, MIB);
	ft_crop_range(100 * KIB, 1, &off, &len);	/* a frame ending inside a chunk */
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 64 * KIB);
	ft_crop_range(4 * KIB, 50, &off, &len);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(len, 4 * KIB);
}
END_TEST

START_TEST(pieces_per_io_call)
{
	ck_assert_uint_eq(ft_piece_bytes(4 * MIB + 256 * KIB, 1, MIB, 4096), MIB);
	ck_assert_uint_eq(ft_piece_bytes(4 * MIB, 1, 0, 4096), 4 * MIB);
	ck_assert_uint_eq(ft_piece_bytes(MIB, 4, 0, 4096), 256 * KIB);
	ck_assert_uint_eq(ft_piece_bytes(MIB, 3, 0, 4096), 352256);	/* 349526 up to 4 KiB */
	ck_assert_uint_eq(ft_piece_bytes(1000, 3, 0, 1), 334);
	ck_assert_uint_ge(ft_piece_bytes(0, 1, 0, 1), 1);
}
END_TEST

static Suite *sizes_suite(void)
{
	Suite *s = suite_create("sizes");
	TCase *tc = tcase_create("sizes");

	tcase_add_test(tc, byte_sizes_take_units);
	tcase_add_test(tc, byte_sizes_print_exactly);
	tcase_add_test(tc, vary_parses_min_max_seed);
	tcase_add_test(tc, vary_sizes_are_pinned);
	tcase_add_test(tc, vary_sizes_cover_the_range_in_4k_steps);
	tcase_add_test(tc, crop_keeps_whole_chunks);
	tcase_add_test(tc, pieces_per_io_call);
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(sizes_suite)
