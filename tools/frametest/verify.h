/* SPDX-License-Identifier: MIT */
/*
 * What every written frame carries, and the check of every frame read.
 *
 * A frame is a run of 4 KiB sectors grouped in 64 KiB chunks.  Each sector
 * starts with a 24-byte tag (frame number, stream id, sector index, run id,
 * and in a chunk's first sector the chunk's crc32c); sector 0 holds the
 * frame header after its tag (sizes, the run's pattern seed, and a crc32c
 * over the crcs of chunks 1..n-1).  The rest is a pseudo-random pattern that
 * depends only on the run seed and the byte offset.  A frame of a --vary run
 * has a version 2 header: the same fields, then the run's MIN, MAX and SEED,
 * so that a read can tell every frame's size from any one of them.
 *
 * Writing must not cost the CPU a pass over the data (that would slow the
 * very thing being measured), so the pattern is laid into each worker's
 * buffer once, and stamping a frame rewrites only the tags: a chunk's crc is
 * the precomputed crc of its pattern (tags zeroed) combined, by crc
 * linearity, with the crc of its tags.  The pattern of a byte does not depend
 * on the frame's size, so one buffer laid for the largest frame serves frames
 * of every size up to it.  Reading checks every byte.
 */
#ifndef FT_VERIFY_H
#define FT_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "sizes.h"

#define FT_SECTOR_BYTES 4096u
#define FT_CHUNK_BYTES (64u * 1024)
#define FT_TAG_BYTES 24u
#define FT_HDR_BYTES 56u	/* version 1: a frame of the run's one size */
#define FT_HDR2_BYTES 80u	/* version 2: + --vary MIN, MAX, SEED */
#define FT_STAMP_MIN_BYTES 1024u	/* frames are whole KiB; smaller ones are not stamped */

_Static_assert(FT_CHUNK_BYTES % FT_SECTOR_BYTES == 0, "chunks are whole sectors");
_Static_assert(FT_TAG_BYTES + FT_HDR2_BYTES <= FT_STAMP_MIN_BYTES, "header fits the smallest frame");
_Static_assert(FT_STAMP_MIN_BYTES % 8 == 0, "the pattern is written in 64-bit words");

/* Read-only after ft_stamp_init; shared by all workers of a run. */
struct ft_stamp {
	uint64_t frame_bytes;	/* the largest frame stamped (the buffer's size) */
	uint64_t seed;
	struct ft_vary vary;	/* on: version 2 headers */
	uint32_t run_id;
	uint32_t nchunks;
	uint32_t *pat_crc;	/* per chunk: crc of the pattern with its tags zeroed */
	uint32_t shift[4][256];	/* crc state advanced over the zero bytes after a tag */
};

bool ft_stampable(uint64_t frame_bytes);
/* 0, -EINVAL (size not stampable) or -ENOMEM. */
int ft_stamp_init(struct ft_stamp *st, uint64_t frame_bytes, uint64_t seed);
/* For --vary: frames of every size in [v->min, v->max]; headers carry v. */
int ft_stamp_init_vary(struct ft_stamp *st, const struct ft_vary *v, uint64_t seed);
void ft_stamp_fini(struct ft_stamp *st);
/* Lay the pattern into a frame buffer; once per buffer, at start. */
void ft_pattern_fill(const struct ft_stamp *st, void *buf);
/* Write tags, header and checksums for one frame into a pattern-filled buffer. */
void ft_stamp_frame(const struct ft_stamp *st, void *buf, uint64_t frame_no, uint32_t stream_id);
/* The same for a frame of frame_bytes (stampable, at most st->frame_bytes). */
void ft_stamp_frame_sized(const struct ft_stamp *st, void *buf, uint64_t frame_bytes,
			  uint64_t frame_no, uint32_t stream_id);

struct ft_check {
	uint64_t bad_offset;	/* first bad byte in the frame, or UINT64_MAX if not located */
	char why[200];
};

/*
 * Check bytes [off, off + len) of frame frame_no of stream stream_id, read
 * into buf (buf[0] is frame byte off).  off must be a multiple of
 * FT_CHUNK_BYTES and len must end on a chunk boundary or at the frame's end.
 * 0 or -EBADMSG with chk->why saying what is wrong and where.
 */
int ft_verify(const void *buf, uint64_t frame_bytes, uint64_t off, uint64_t len,
	      uint64_t frame_no, uint32_t stream_id, struct ft_check *chk);

/* Frame size recorded in a stamped header (sector 0), or 0 if none. */
uint64_t ft_stamped_frame_bytes(const void *sector0, uint64_t len);
/* A version 2 header (a --vary frame): true with its MIN, MAX and SEED in v. */
bool ft_stamped_vary(const void *sector0, uint64_t len, struct ft_vary *v);

#endif
