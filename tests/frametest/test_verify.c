/* SPDX-License-Identifier: MIT */
/*
 * Stamping and verification.  The fast stamp (pattern crc combined with tag
 * crcs) is checked against a plain bitwise crc32c written here, over frame
 * sizes that hit every path; then single corrupted bytes, misplaced frames
 * and stale data must all be caught.
 */
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "verify.h"

/* Reference: bitwise reflected crc32c, raw (no inversions), like ISA-L's crc32_iscsi. */
static uint32_t crc32c_ref(uint32_t crc, const uint8_t *p, uint64_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return crc;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static const uint64_t sizes[] = {
	1024, 4096, 5120, 65536, 65536 + 4096, 1 << 20, (1 << 20) + 1024, 3 * (1 << 20) + 12288,
};

static uint8_t *stamped(struct ft_stamp *st, uint64_t bytes, uint64_t seed, uint64_t frame,
			uint32_t stream)
{
	uint8_t *b = malloc(bytes);

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(ft_stamp_init(st, bytes, seed), 0);
	ft_pattern_fill(st, b);
	ft_stamp_frame(st, b, frame, stream);
	return b;
}

START_TEST(fast_stamp_matches_reference_crc)
{
	uint64_t bytes = sizes[_i];
	struct ft_stamp st;
	uint8_t *b = stamped(&st, bytes, 12345, 7, 3);
	struct ft_check chk;

	for (uint64_t off = 0; off < bytes; off += FT_CHUNK_BYTES) {
		uint64_t len = bytes - off < FT_CHUNK_BYTES ? bytes - off : FT_CHUNK_BYTES;
		uint32_t stored = get32(b + off + 20);
		uint8_t *copy = malloc(len);

		memcpy(copy, b + off, len);
		memset(copy + 20, 0, 4);	/* the crc field counts as zero */
		ck_assert_uint_eq(crc32c_ref(0xffffffffu, copy, len), stored);
		free(copy);
	}
	ck_assert_int_eq(ft_verify(b, bytes, 0, bytes, 7, 3, &chk), 0);
	ck_assert_uint_eq(ft_stamped_frame_bytes(b, bytes), bytes);
	/* Restamping the same buffer as other frames leaves no trace of the old one. */
	for (uint64_t f = 100; f < 103; f++) {
		ft_stamp_frame(&st, b, f, 3);
		ck_assert_int_eq(ft_verify(b, bytes, 0, bytes, f, 3, &chk), 0);
	}
	ft_stamp_fini(&st);
	free(b);
}
END_TEST

START_TEST(one_corrupted_byte_is_caught_and_located)
{
	uint64_t bytes = 3 * (1 << 20) + 12288;
	/* header, a tag, pattern in chunk 0, a middle chunk, the last byte */
	static const uint64_t where[] = { 30, 4096 * 5 + 3, 5000, 2000000, 3 * (1 << 20) + 12287 };
	struct ft_stamp st;
	uint8_t *b = stamped(&st, bytes, 99, 17, 0);
	struct ft_check chk;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		b[where[i]] ^= 0x01;
		ck_assert_msg(ft_verify(b, bytes, 0, bytes, 17, 0, &chk) != 0, "missed byte %llu",
			      (unsigned long long)where[i]);
		ck_assert(chk.why[0] != '\0');
		b[where[i]] ^= 0x01;
		ck_assert_int_eq(ft_verify(b, bytes, 0, bytes, 17, 0, &chk), 0);
	}
	b[2000000] ^= 0x40;
	ft_verify(b, bytes, 0, bytes, 17, 0, &chk);
	ck_assert_uint_eq(chk.bad_offset, 2000000);
	ck_assert_ptr_nonnull(strstr(chk.why, "first wrong byte at 2000000"));
	ft_stamp_fini(&st);
	free(b);
}
END_TEST

START_TEST(misplaced_and_stale_frames_are_caught)
{
	uint64_t bytes = 1 << 20;
	struct ft_stamp st, other;
	uint8_t *b = stamped(&st, bytes, 5, 4, 1), *old = stamped(&other, bytes, 6, 4, 1);
	struct ft_check chk;

	ck_assert_int_ne(ft_verify(b, bytes, 0, bytes, 5, 1, &chk), 0);	/* wrong frame */
	ck_assert_ptr_nonnull(strstr(chk.why, "frame 4"));
	ck_assert_int_ne(ft_verify(b, bytes, 0, bytes, 4, 2, &chk), 0);	/* wrong stream */
	/* One chunk left over from an earlier run: valid crc, wrong run id. */
	memcpy(b + 5 * FT_CHUNK_BYTES, old + 5 * FT_CHUNK_BYTES, FT_CHUNK_BYTES);
	ck_assert_int_ne(ft_verify(b, bytes, 0, bytes, 4, 1, &chk), 0);
	ck_assert_ptr_nonnull(strstr(chk.why, "run"));
	/* Two chunks of one frame swapped: tags name the wrong sector. */
	ft_stamp_frame(&st, b, 4, 1);
	memcpy(old, b + 2 * FT_CHUNK_BYTES, FT_CHUNK_BYTES);
	memcpy(b + 2 * FT_CHUNK_BYTES, b + 3 * FT_CHUNK_BYTES, FT_CHUNK_BYTES);
	memcpy(b + 3 * FT_CHUNK_BYTES, old, FT_CHUNK_BYTES);
	ck_assert_int_ne(ft_verify(b, bytes, 0, bytes, 4, 1, &chk), 0);
	ft_stamp_fini(&st);
	ft_stamp_fini(&other);
	free(b);
	free(old);
}
END_TEST

START_TEST(part_of_a_frame_is_checked_on_its_own)
{
	uint64_t bytes = 1 << 20, off = 4 * FT_CHUNK_BYTES, len = 6 * FT_CHUNK_BYTES;
	struct ft_stamp st;
	uint8_t *b = stamped(&st, bytes, 77, 9, 0);
	struct ft_check chk;

	ck_assert_int_eq(ft_verify(b + off, bytes, off, len, 9, 0, &chk), 0);
	b[10] ^= 1;	/* outside the part read */
	ck_assert_int_eq(ft_verify(b + off, bytes, off, len, 9, 0, &chk), 0);
	b[off + 3 * FT_CHUNK_BYTES + 100] ^= 1;
	ck_assert_int_ne(ft_verify(b + off, bytes, off, len, 9, 0, &chk), 0);
	ck_assert_int_ne(ft_verify(b, bytes, 100, len, 9, 0, &chk), 0);	/* unaligned part */
	ft_stamp_fini(&st);
	free(b);
}
END_TEST

START_TEST(unstamped_data_is_not_taken_for_a_frame)
{
	uint8_t *z = calloc(1, 65536);
	struct ft_stamp st;
	struct ft_check chk;

	ck_assert_int_ne(ft_verify(z, 65536, 0, 65536, 0, 0, &chk), 0);
	ck_assert_ptr_nonnull(strstr(chk.why, "no framefs-frametest header"));
	ck_assert_uint_eq(ft_stamped_frame_bytes(z, 65536), 0);
	ck_assert_int_ne(ft_verify(z, 1000, 0, 1000, 0, 0, &chk), 0);	/* not whole KiB */
	ck_assert_int_ne(ft_stamp_init(&st, 1000, 1), 0);
	ck_assert_int_ne(ft_stamp_init(&st, 512, 1), 0);
	free(z);
}
END_TEST

/*
 * --vary: one buffer laid for the largest frame stamps frames of every size,
 * in any order (a large frame's tags are left beyond a small one's end), and
 * each checks at its own size; the header says version 2 and carries the run.
 */
START_TEST(varying_frames_share_one_buffer)
{
	static const uint64_t order[] = { 1 << 20, 4096, 65536, 200 * 1024, (1 << 20) - 4096,
					  65536 + 4096, 12288, 1 << 20 };
	struct ft_vary v = { 4096, 1 << 20, 99 }, got;
	struct ft_stamp st;
	struct ft_check chk;
	uint8_t *b = malloc(1 << 20);

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(ft_stamp_init_vary(&st, &v, 4242), 0);
	ck_assert_uint_eq(st.frame_bytes, 1 << 20);
	ft_pattern_fill(&st, b);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		uint64_t bytes = order[i];

		ft_stamp_frame_sized(&st, b, bytes, 30 + i, 2);
		for (uint64_t off = 0; off < bytes; off += FT_CHUNK_BYTES) {
			uint64_t len = bytes - off < FT_CHUNK_BYTES ? bytes - off : FT_CHUNK_BYTES;
			uint8_t *copy = malloc(len);

			memcpy(copy, b + off, len);
			memset(copy + 20, 0, 4);
			ck_assert_uint_eq(crc32c_ref(0xffffffffu, copy, len), get32(b + off + 20));
			free(copy);
		}
		ck_assert_int_eq(ft_verify(b, bytes, 0, bytes, 30 + i, 2, &chk), 0);
		ck_assert_uint_eq(ft_stamped_frame_bytes(b, bytes), bytes);
		ck_assert(ft_stamped_vary(b, bytes, &got));
		ck_assert(got.min == v.min && got.max == v.max && got.seed == v.seed);
		/* Read at another frame's size, the frame is refused by its header. */
		if (bytes != order[0]) {
			ck_assert_int_ne(ft_verify(b, order[0], 0, order[0], 30 + i, 2, &chk), 0);
			ck_assert_ptr_nonnull(strstr(chk.why, "header says version 2"));
		}
	}
	/* A flipped byte in the version 2 fields, and just after them, is caught. */
	ft_stamp_frame_sized(&st, b, 200 * 1024, 5, 2);
	b[FT_TAG_BYTES + 70] ^= 0x10;	/* in the seed of --vary */
	ck_assert_int_ne(ft_verify(b, 200 * 1024, 0, 200 * 1024, 5, 2, &chk), 0);
	b[FT_TAG_BYTES + 70] ^= 0x10;
	b[FT_TAG_BYTES + FT_HDR2_BYTES + 3] ^= 0x01;
	ck_assert_int_ne(ft_verify(b, 200 * 1024, 0, 200 * 1024, 5, 2, &chk), 0);
	ck_assert_uint_eq(chk.bad_offset, FT_TAG_BYTES + FT_HDR2_BYTES + 3);
	ft_stamp_fini(&st);
	/* A fixed-size run's frames keep the version 1 header. */
	ck_assert_int_eq(ft_stamp_init(&st, 65536, 1), 0);
	ft_pattern_fill(&st, b);
	ft_stamp_frame(&st, b, 0, 0);
	ck_assert(!ft_stamped_vary(b, 65536, &got));
	ck_assert_uint_eq(ft_stamped_frame_bytes(b, 65536), 65536);
	ck_assert_int_eq(ft_verify(b, 65536, 0, 65536, 0, 0, &chk), 0);
	ft_stamp_fini(&st);
	ck_assert_int_ne(ft_stamp_init_vary(&st, &(struct ft_vary){ 1000, 4096, 1 }, 1), 0);
	ck_assert_int_ne(ft_stamp_init_vary(&st, &(struct ft_vary){ 0 }, 1), 0);
	free(b);
}
END_TEST

static Suite *verify_suite(void)
{
	Suite *s = suite_create("verify");
	TCase *tc = tcase_create("stamp");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, fast_stamp_matches_reference_crc, 0,
			    (int)(sizeof(sizes) / sizeof(sizes[0])));
	tcase_add_test(tc, one_corrupted_byte_is_caught_and_located);
	tcase_add_test(tc, misplaced_and_stale_frames_are_caught);
	tcase_add_test(tc, part_of_a_frame_is_checked_on_its_own);
	tcase_add_test(tc, unstamped_data_is_not_taken_for_a_frame);
	tcase_add_test(tc, varying_frames_share_one_buffer);
	suite_add_tcase(s, tc);
	return s;
}

FT_CHECK_MAIN(verify_suite)
