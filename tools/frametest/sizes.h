/* SPDX-License-Identifier: MIT */
/*
 * Frame sizes beyond one fixed number: byte counts with unit suffixes, the
 * variable-size mode (--vary=MIN:MAX[,SEED], frames like compressed EXR, each
 * of its own size), the part of a frame a read moves (-c), and how one
 * frame's transfer is cut into I/O calls (-i NUM, --io-size=SIZE).  Pure
 * functions.
 *
 * A varying frame's size is a pure function of (seed, stream id, frame
 * number): one of MIN, MIN + 4 KiB, ..., MAX, uniformly, from a splitmix64
 * hash.  The write test stamps MIN, MAX and SEED into every frame's header
 * (besides the frame's own size), so a read test recomputes every frame's
 * size, and with -s every frame's offset in the stream file, from the first
 * frame alone.  The function must never change: frames written earlier would
 * no longer be read at their size (test_sizes.c pins its values).
 */
#ifndef FT_SIZES_H
#define FT_SIZES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FT_VARY_ALIGN 4096u		/* every varying size is whole 4 KiB, for O_DIRECT */
#define FT_VARY_SEED_DEFAULT 1ull
#define FT_SIZE_BYTES_MAX (4ull << 30)	/* the largest frame or I/O size: 4 GiB, as -z */

/* --vary; min 0 = off (every frame has the run's one size). */
struct ft_vary {
	uint64_t min, max;	/* bytes, whole FT_VARY_ALIGN, min <= max */
	uint64_t seed;
};

static inline bool ft_vary_on(const struct ft_vary *v) { return v->min != 0; }

/*
 * A byte count: a number with a unit, B, K / KiB, M / MiB or G / GiB (any
 * case), or a bare number of KiB as -w and -z take.  0 < result <=
 * FT_SIZE_BYTES_MAX.  0, -EINVAL (not a size) or -ERANGE.
 */
int ft_parse_bytes(const char *s, uint64_t *out);
/* Exact, in the largest unit that divides: "3MiB", "4100KiB", "12345B". */
const char *ft_format_bytes(uint64_t bytes, char *buf, size_t len);

/* "MIN:MAX[,SEED]" (sizes as ft_parse_bytes).  0 or -EINVAL with a one-line why. */
int ft_vary_parse(const char *s, struct ft_vary *v, char *err, size_t errlen);
/* The size of frame `frame` of stream `stream`. */
uint64_t ft_vary_bytes(const struct ft_vary *v, uint32_t stream, uint64_t frame);
/* What the PASS line calls the size: "3MiB-60MiB". */
void ft_vary_label(const struct ft_vary *v, char *buf, size_t len);

/*
 * -c: the middle pct % of a frame, widened to whole 64 KiB chunks (so that
 * it can be checked) and cut at the frame's end.  pct >= 100: all of it.
 */
void ft_crop_range(uint64_t frame_bytes, uint32_t pct, uint64_t *off, uint64_t *len);
/*
 * Bytes per I/O call moving len bytes: io_size when given (--io-size), else
 * len cut into `pieces` (-i) rounded up to align.  Never 0 for len > 0.
 */
uint64_t ft_piece_bytes(uint64_t len, uint32_t pieces, uint64_t io_size, uint64_t align);

#endif
