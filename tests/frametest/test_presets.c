/* SPDX-License-Identifier: MIT */
/* Preset sizes are exact bytes; the trade compares them to frametest's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "presets.h"

static uint64_t bytes_of(const char *name, uint32_t header_kib)
{
	const struct ft_preset *p = ft_preset_find(name);

	ck_assert_msg(p != NULL, "preset %s missing", name);
	return ft_preset_bytes(p, header_kib);
}

START_TEST(frametest_presets_are_frametests_bytes)
{
	ck_assert_uint_eq(bytes_of("2k", 64), 12812288);	/* 2048*1556*4 + 64 KiB */
	ck_assert_uint_eq(bytes_of("4k", 64), 51052544);	/* 4096*3112*4 + 64 KiB */
	ck_assert_uint_eq(bytes_of("hd", 64), 8359936);	/* 1920*1080*4 + 64 KiB */
	ck_assert_uint_eq(bytes_of("sd", 64), 1449984);	/* 720*480*4 + 64 KiB, up to 4 KiB */
	ck_assert_uint_eq(bytes_of("8k", 64), 141623296);	/* 8192*4320*4 + 64 KiB */
}
END_TEST

START_TEST(format_presets_have_their_real_sizes)
{
	ck_assert_uint_eq(bytes_of("dpx-uhd", 64), 3840ull * 2160 * 4 + 8192);
	ck_assert_uint_eq(bytes_of("dpx-4k", 64), 4096ull * 2160 * 4 + 8192);
	ck_assert_uint_eq(bytes_of("dpx-8k", 64), 7680ull * 4320 * 4 + 8192);
	/* 70,778,880 pixels + 2160*16 line tables + 350 header = 70,813,790 -> 4 KiB */
	ck_assert_uint_eq(bytes_of("exr-4k", 64), 70815744);
	/* 3840/48 = 80 groups of 128 bytes per row */
	ck_assert_uint_eq(bytes_of("v210-uhd", 64), 80ull * 128 * 2160);
}
END_TEST

START_TEST(every_preset_is_4k_aligned)
{
	for (size_t i = 0; i < ft_preset_count(); i++)
		ck_assert_uint_eq(ft_preset_bytes(ft_preset_at(i), 64) % 4096, 0);
	ck_assert_ptr_null(ft_preset_at(ft_preset_count()));
}
END_TEST

START_TEST(header_option_changes_frametest_presets_only)
{
	ck_assert_uint_eq(bytes_of("4k", 32), 4096ull * 3112 * 4 + 32768);
	ck_assert_uint_eq(bytes_of("4k", 0), 4096ull * 3112 * 4);
	ck_assert_uint_eq(bytes_of("dpx-4k", 32), bytes_of("dpx-4k", 64));
}
END_TEST

START_TEST(sizes_parse_as_presets_or_kib)
{
	char label[48];
	uint64_t b = 0;

	ck_assert_int_eq(ft_parse_frame_size("4K", 64, &b, label, sizeof(label)), 0);
	ck_assert_uint_eq(b, 51052544);
	ck_assert_str_eq(label, "4k");
	ck_assert_int_eq(ft_parse_frame_size("12512", 64, &b, label, sizeof(label)), 0);
	ck_assert_uint_eq(b, 12812288);
	ck_assert_str_eq(label, "12512KiB");
	ck_assert_int_eq(ft_parse_frame_size("0", 64, &b, label, sizeof(label)), -ERANGE);
	ck_assert_int_eq(ft_parse_frame_size("4k2", 64, &b, label, sizeof(label)), -EINVAL);
	ck_assert_int_eq(ft_parse_frame_size("", 64, &b, label, sizeof(label)), -EINVAL);
	ck_assert_int_eq(ft_parse_frame_size("-5", 64, &b, label, sizeof(label)), -EINVAL);
	ck_assert_int_eq(ft_parse_frame_size("99999999999999999999", 64, &b, label,
					     sizeof(label)), -EINVAL);
}
END_TEST

START_TEST(list_shows_bytes_rates_and_formulas)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ft_presets_list(f, 64);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "51052544"));
	ck_assert_ptr_nonnull(strstr(text, "1225.3"));	/* 4k at 24 fps, MB/s */
	ck_assert_ptr_nonnull(strstr(text, "3063.2"));	/* 4k at 60 fps */
	ck_assert_ptr_nonnull(strstr(text, "ceil(w/48)*128"));
	ck_assert_ptr_nonnull(strstr(text, "8 KiB header"));
	free(text);
}
END_TEST

static Suite *presets_suite(void)
{
	Suite *s = suite_create("presets");
	TCase *tc = tcase_create("sizes");

	tcase_add_test(tc, frametest_presets_are_frametests_bytes);
	tcase_add_test(tc, format_presets_have_their_real_sizes);
	tcase_add_test(tc, every_preset_is_4k_aligned);
	tcase_add_test(tc, header_option_changes_frametest_presets_only);
	tcase_add_test(tc, sizes_parse_as_presets_or_kib);
	tcase_add_test(tc, list_shows_bytes_rates_and_formulas);
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(presets_suite)
