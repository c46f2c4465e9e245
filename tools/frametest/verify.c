/* SPDX-License-Identifier: MIT */
#include "verify.h"

#include <errno.h>
#include <inttypes.h>
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tag fields (little-endian), at the start of every sector. */
#define TAG_FRAME 0
#define TAG_STREAM 8
#define TAG_SECTOR 12
#define TAG_RUN 16
#define TAG_CRC 20
/* Header fields, after the tag of sector 0. */
#define HDR_OFF FT_TAG_BYTES
#define HDR_MAGIC 0
#define HDR_VERSION 8
#define HDR_CHUNK 12
#define HDR_FRAME_BYTES 16
#define HDR_FRAME 24
#define HDR_STREAM 32
#define HDR_RUN 36
#define HDR_SEED 40
#define HDR_FRAME_CRC 48
#define HDR_NCHUNKS 52
#define HDR_VARY_MIN 56	/* version 2 only */
#define HDR_VARY_MAX 64
#define HDR_VARY_SEED 72
_Static_assert(HDR_NCHUNKS + 4 == FT_HDR_BYTES, "header layout");
_Static_assert(HDR_VARY_SEED + 8 == FT_HDR2_BYTES, "version 2 header layout");
_Static_assert(TAG_CRC + 4 == FT_TAG_BYTES, "tag layout");

static const char hdr_magic[8] = { 'F', 'F', 'T', 'F', 'R', 'A', 'M', 'E' };
#define HDR_VERSION_1 1u
#define HDR_VERSION_2 2u
#define CRC_INIT 0xffffffffu
#define SECTOR_TAIL (FT_SECTOR_BYTES - FT_TAG_BYTES)

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ISA-L's crc32_iscsi is a raw crc (no inversion), which the combining relies on. */
static uint32_t crc_raw(uint32_t crc, const void *p, uint64_t len)
{
	const unsigned char *b = p;

	while (len > 0) {
		int n = len > (1u << 30) ? (1 << 30) : (int)len;

		crc = crc32_iscsi((unsigned char *)(uintptr_t)b, n, crc);
		b += n;
		len -= (uint64_t)n;
	}
	return crc;
}

static uint64_t pattern_word(uint64_t seed, uint64_t word_index)
{
	uint64_t z = seed + word_index * 0x9e3779b97f4a7c15ull;	/* splitmix64 */

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void pattern_range(uint64_t seed, uint8_t *dst, uint64_t off, uint64_t len)
{
	for (uint64_t o = 0; o < len; o += 8)
		put64(dst + o, pattern_word(seed, (off + o) / 8));
}

bool ft_stampable(uint64_t frame_bytes)
{
	return frame_bytes >= FT_STAMP_MIN_BYTES && frame_bytes % FT_STAMP_MIN_BYTES == 0;
}

static uint32_t nchunks_of(uint64_t frame_bytes)
{
	return (uint32_t)((frame_bytes + FT_CHUNK_BYTES - 1) / FT_CHUNK_BYTES);
}

/* crc_raw(x, zeros) is linear in x: tabulate it per byte of x. */
static void build_shift(struct ft_stamp *st)
{
	static const uint8_t zeros[SECTOR_TAIL];
	uint32_t col[32];

	for (int b = 0; b < 32; b++)
		col[b] = crc_raw(1u << b, zeros, sizeof(zeros));
	for (int i = 0; i < 4; i++) {
		for (int v = 0; v < 256; v++) {
			uint32_t x = 0;

			for (int j = 0; j < 8; j++)
				if (v & (1 << j))
					x ^= col[8 * i + j];
			st->shift[i][v] = x;
		}
	}
}

static uint32_t shift_tail(const struct ft_stamp *st, uint32_t x)
{
	return st->shift[0][x & 0xff] ^ st->shift[1][(x >> 8) & 0xff] ^
	       st->shift[2][(x >> 16) & 0xff] ^ st->shift[3][x >> 24];
}

int ft_stamp_init(struct ft_stamp *st, uint64_t frame_bytes, uint64_t seed)
{
	uint8_t *chunk;

	memset(st, 0, sizeof(*st));
	if (!ft_stampable(frame_bytes))
		return -EINVAL;
	st->frame_bytes = frame_bytes;
	st->seed = seed;
	st->run_id = (uint32_t)(pattern_word(seed, UINT64_MAX) | 1);
	st->nchunks = nchunks_of(frame_bytes);
	st->pat_crc = calloc(st->nchunks, sizeof(*st->pat_crc));
	chunk = malloc(FT_CHUNK_BYTES);
	if (!st->pat_crc || !chunk) {
		free(chunk);
		ft_stamp_fini(st);
		return -ENOMEM;
	}
	build_shift(st);
	/* Only full chunks after the header chunk take the fast path. */
	for (uint32_t c = 1; c < st->nchunks; c++) {
		uint64_t off = (uint64_t)c * FT_CHUNK_BYTES;

		if (frame_bytes - off < FT_CHUNK_BYTES)
			break;
		pattern_range(seed, chunk, off, FT_CHUNK_BYTES);
		for (uint32_t s = 0; s < FT_CHUNK_BYTES; s += FT_SECTOR_BYTES)
			memset(chunk + s, 0, FT_TAG_BYTES);
		st->pat_crc[c] = crc_raw(CRC_INIT, chunk, FT_CHUNK_BYTES);
	}
	free(chunk);
	return 0;
}

int ft_stamp_init_vary(struct ft_stamp *st, const struct ft_vary *v, uint64_t seed)
{
	int rc;

	if (!ft_vary_on(v) || !ft_stampable(v->min) || !ft_stampable(v->max) || v->min > v->max)
		return -EINVAL;
	rc = ft_stamp_init(st, v->max, seed);
	if (!rc)
		st->vary = *v;
	return rc;
}

void ft_stamp_fini(struct ft_stamp *st)
{
	free(st->pat_crc);
	st->pat_crc = NULL;
}

void ft_pattern_fill(const struct ft_stamp *st, void *buf)
{
	pattern_range(st->seed, buf, 0, st->frame_bytes);
}

static void write_tags(const struct ft_stamp *st, uint8_t *b, uint64_t frame_bytes,
		       uint64_t frame_no, uint32_t stream)
{
	for (uint64_t off = 0, s = 0; off < frame_bytes; off += FT_SECTOR_BYTES, s++) {
		uint8_t *t = b + off;

		put64(t + TAG_FRAME, frame_no);
		put32(t + TAG_STREAM, stream);
		put32(t + TAG_SECTOR, (uint32_t)s);
		put32(t + TAG_RUN, st->run_id);
		put32(t + TAG_CRC, 0);
	}
}

static void write_header(const struct ft_stamp *st, uint8_t *b, uint64_t frame_bytes,
			 uint64_t frame_no, uint32_t stream)
{
	uint8_t *h = b + HDR_OFF;
	bool vary = ft_vary_on(&st->vary);

	memcpy(h + HDR_MAGIC, hdr_magic, sizeof(hdr_magic));
	put32(h + HDR_VERSION, vary ? HDR_VERSION_2 : HDR_VERSION_1);
	put32(h + HDR_CHUNK, FT_CHUNK_BYTES);
	put64(h + HDR_FRAME_BYTES, frame_bytes);
	put64(h + HDR_FRAME, frame_no);
	put32(h + HDR_STREAM, stream);
	put32(h + HDR_RUN, st->run_id);
	put64(h + HDR_SEED, st->seed);
	put32(h + HDR_FRAME_CRC, 0);
	put32(h + HDR_NCHUNKS, nchunks_of(frame_bytes));
	if (!vary)
		return;
	put64(h + HDR_VARY_MIN, st->vary.min);
	put64(h + HDR_VARY_MAX, st->vary.max);
	put64(h + HDR_VARY_SEED, st->vary.seed);
}

/* crc of a full chunk whose tags were rewritten: pattern part xor tag part. */
static uint32_t chunk_crc_fast(const struct ft_stamp *st, const uint8_t *chunk, uint32_t c)
{
	uint32_t x = 0;

	for (uint32_t s = 0; s < FT_CHUNK_BYTES; s += FT_SECTOR_BYTES)
		x = shift_tail(st, crc_raw(x, chunk + s, FT_TAG_BYTES));
	return st->pat_crc[c] ^ x;
}

/*
 * A smaller frame than the buffer's uses the same pattern and the same
 * precomputed crcs: chunk c's bytes do not depend on where the frame ends,
 * and only its last, partial chunk takes the slow path.
 */
void ft_stamp_frame_sized(const struct ft_stamp *st, void *buf, uint64_t frame_bytes,
			  uint64_t frame_no, uint32_t stream_id)
{
	uint8_t *b = buf, le[4];
	uint32_t fcrc = CRC_INIT, nchunks = nchunks_of(frame_bytes);

	write_tags(st, b, frame_bytes, frame_no, stream_id);
	write_header(st, b, frame_bytes, frame_no, stream_id);
	for (uint32_t c = 1; c < nchunks; c++) {
		uint64_t off = (uint64_t)c * FT_CHUNK_BYTES;
		uint64_t len = frame_bytes - off < FT_CHUNK_BYTES ? frame_bytes - off
								  : FT_CHUNK_BYTES;
		uint32_t crc = len == FT_CHUNK_BYTES ? chunk_crc_fast(st, b + off, c)
						     : crc_raw(CRC_INIT, b + off, len);

		put32(b + off + TAG_CRC, crc);
		put32(le, crc);
		fcrc = crc_raw(fcrc, le, 4);
	}
	put32(b + HDR_OFF + HDR_FRAME_CRC, fcrc);
	put32(b + TAG_CRC, crc_raw(CRC_INIT, b, nchunks > 1 ? FT_CHUNK_BYTES : frame_bytes));
}

void ft_stamp_frame(const struct ft_stamp *st, void *buf, uint64_t frame_no, uint32_t stream_id)
{
	ft_stamp_frame_sized(st, buf, st->frame_bytes, frame_no, stream_id);
}

uint64_t ft_stamped_frame_bytes(const void *sector0, uint64_t len)
{
	const uint8_t *h = (const uint8_t *)sector0 + HDR_OFF;

	if (len < FT_TAG_BYTES + FT_HDR_BYTES || memcmp(h, hdr_magic, sizeof(hdr_magic)) != 0)
		return 0;
	return get64(h + HDR_FRAME_BYTES);
}

bool ft_stamped_vary(const void *sector0, uint64_t len, struct ft_vary *v)
{
	const uint8_t *h = (const uint8_t *)sector0 + HDR_OFF;

	if (len < FT_TAG_BYTES + FT_HDR2_BYTES || memcmp(h, hdr_magic, sizeof(hdr_magic)) != 0 ||
	    get32(h + HDR_VERSION) != HDR_VERSION_2)
		return false;
	v->min = get64(h + HDR_VARY_MIN);
	v->max = get64(h + HDR_VARY_MAX);
	v->seed = get64(h + HDR_VARY_SEED);
	return ft_vary_on(v) && v->min <= v->max && v->min % FT_VARY_ALIGN == 0 &&
	       v->max % FT_VARY_ALIGN == 0;
}

/* What the run says about itself: from the header when read, else the first tag. */
struct run_info {
	uint32_t hdr_bytes;	/* after the tag of sector 0: by version */
	uint32_t run_id;
	bool have_seed;
	uint64_t seed;
	uint32_t frame_crc;
};

static int check_header(const uint8_t *b, uint64_t frame_bytes, uint64_t frame_no,
			uint32_t stream, struct run_info *ri, struct ft_check *chk)
{
	const uint8_t *h = b + HDR_OFF;

	if (memcmp(h + HDR_MAGIC, hdr_magic, sizeof(hdr_magic)) != 0) {
		snprintf(chk->why, sizeof(chk->why),
			 "no framefs-frametest header (not written by -w, or header overwritten)");
		chk->bad_offset = HDR_OFF;
		return -EBADMSG;
	}
	uint32_t version = get32(h + HDR_VERSION);

	if ((version != HDR_VERSION_1 && version != HDR_VERSION_2) ||
	    get32(h + HDR_CHUNK) != FT_CHUNK_BYTES || get64(h + HDR_FRAME_BYTES) != frame_bytes) {
		snprintf(chk->why, sizeof(chk->why),
			 "header says version %" PRIu32 ", %" PRIu64 "-byte frames; expected %" PRIu64,
			 get32(h + HDR_VERSION), get64(h + HDR_FRAME_BYTES), frame_bytes);
		chk->bad_offset = HDR_OFF;
		return -EBADMSG;
	}
	if (get64(h + HDR_FRAME) != frame_no || get32(h + HDR_STREAM) != stream) {
		snprintf(chk->why, sizeof(chk->why),
			 "header names frame %" PRIu64 " of stream %" PRIu32 " (misplaced frame)",
			 get64(h + HDR_FRAME), get32(h + HDR_STREAM));
		chk->bad_offset = HDR_OFF;
		return -EBADMSG;
	}
	ri->hdr_bytes = version == HDR_VERSION_2 ? FT_HDR2_BYTES : FT_HDR_BYTES;
	ri->run_id = get32(h + HDR_RUN);
	ri->have_seed = true;
	ri->seed = get64(h + HDR_SEED);
	ri->frame_crc = get32(h + HDR_FRAME_CRC);
	return 0;
}

static int check_tags(const uint8_t *chunk, uint64_t chunk_off, uint64_t clen, uint64_t frame_no,
		      uint32_t stream, uint32_t run_id, struct ft_check *chk)
{
	for (uint64_t s = 0; s < clen; s += FT_SECTOR_BYTES) {
		const uint8_t *t = chunk + s;
		uint64_t sector = (chunk_off + s) / FT_SECTOR_BYTES;

		if (get64(t + TAG_FRAME) == frame_no && get32(t + TAG_STREAM) == stream &&
		    get32(t + TAG_SECTOR) == sector && get32(t + TAG_RUN) == run_id)
			continue;
		chk->bad_offset = chunk_off + s;
		snprintf(chk->why, sizeof(chk->why),
			 "sector at byte %" PRIu64 " is tagged frame %" PRIu64 " stream %" PRIu32
			 " sector %" PRIu32 " run %08" PRIx32 " (expected run %08" PRIx32 ")",
			 chunk_off + s, get64(t + TAG_FRAME), get32(t + TAG_STREAM),
			 get32(t + TAG_SECTOR), get32(t + TAG_RUN), run_id);
		return -EBADMSG;
	}
	return 0;
}

/* Is frame byte o pattern, rather than a sector tag or the header? */
static bool is_pattern_byte(uint64_t o, uint32_t hdr_bytes)
{
	if (o % FT_SECTOR_BYTES < FT_TAG_BYTES)
		return false;
	return !(o >= HDR_OFF && o < HDR_OFF + hdr_bytes);
}

/* Slow path, only after a crc mismatch: find the first byte that differs from the pattern. */
static uint64_t locate(const uint8_t *chunk, uint64_t chunk_off, uint64_t clen, uint64_t seed,
		       uint32_t hdr_bytes)
{
	for (uint64_t i = 0; i < clen; i += 8) {
		uint8_t want[8];

		put64(want, pattern_word(seed, (chunk_off + i) / 8));
		for (uint64_t j = 0; j < 8; j++)
			if (is_pattern_byte(chunk_off + i + j, hdr_bytes) && chunk[i + j] != want[j])
				return chunk_off + i + j;
	}
	return UINT64_MAX;
}

static uint32_t chunk_crc_read(const uint8_t *chunk, uint64_t clen)
{
	static const uint8_t zero4[4];
	uint32_t crc = crc_raw(CRC_INIT, chunk, TAG_CRC);

	crc = crc_raw(crc, zero4, 4);
	return crc_raw(crc, chunk + FT_TAG_BYTES, clen - FT_TAG_BYTES);
}

static int check_chunk(const uint8_t *chunk, uint64_t chunk_off, uint64_t clen,
		       const struct run_info *ri, uint32_t *crc_out, struct ft_check *chk)
{
	uint32_t stored = get32(chunk + TAG_CRC);
	uint32_t crc = chunk_crc_read(chunk, clen);

	*crc_out = stored;
	if (crc == stored)
		return 0;
	chk->bad_offset = ri->have_seed ? locate(chunk, chunk_off, clen, ri->seed, ri->hdr_bytes)
					: UINT64_MAX;
	if (chk->bad_offset != UINT64_MAX)
		snprintf(chk->why, sizeof(chk->why),
			 "checksum mismatch in bytes %" PRIu64 "-%" PRIu64
			 ", first wrong byte at %" PRIu64,
			 chunk_off, chunk_off + clen - 1, chk->bad_offset);
	else
		snprintf(chk->why, sizeof(chk->why),
			 "checksum mismatch in bytes %" PRIu64 "-%" PRIu64, chunk_off,
			 chunk_off + clen - 1);
	return -EBADMSG;
}

int ft_verify(const void *buf, uint64_t frame_bytes, uint64_t off, uint64_t len,
	      uint64_t frame_no, uint32_t stream_id, struct ft_check *chk)
{
	const uint8_t *b = buf;
	struct run_info ri = { .hdr_bytes = FT_HDR_BYTES };
	uint32_t fcrc = CRC_INIT;
	int rc;

	chk->bad_offset = UINT64_MAX;
	chk->why[0] = '\0';
	if (!ft_stampable(frame_bytes) || off % FT_CHUNK_BYTES != 0 || off + len > frame_bytes ||
	    len < FT_TAG_BYTES) {
		snprintf(chk->why, sizeof(chk->why), "cannot check a %" PRIu64 "-byte frame",
			 frame_bytes);
		return -EBADMSG;
	}
	if (off == 0) {
		rc = check_header(b, frame_bytes, frame_no, stream_id, &ri, chk);
		if (rc)
			return rc;
	} else {
		ri.run_id = get32(b + TAG_RUN);
	}
	for (uint64_t o = 0; o < len; o += FT_CHUNK_BYTES) {
		uint64_t clen = len - o < FT_CHUNK_BYTES ? len - o : FT_CHUNK_BYTES;
		uint32_t crc;
		uint8_t le[4];

		rc = check_tags(b + o, off + o, clen, frame_no, stream_id, ri.run_id, chk);
		if (!rc)
			rc = check_chunk(b + o, off + o, clen, &ri, &crc, chk);
		if (rc)
			return rc;
		put32(le, crc);
		if (off + o > 0)
			fcrc = crc_raw(fcrc, le, 4);
	}
	if (off == 0 && len == frame_bytes && fcrc != ri.frame_crc) {
		snprintf(chk->why, sizeof(chk->why), "frame checksum over chunk checksums differs");
		return -EBADMSG;
	}
	return 0;
}
