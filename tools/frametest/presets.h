/* SPDX-License-Identifier: MIT */
/*
 * Frame-size presets: frametest's own (sd, hd, 2k, 4k) plus 8k and the real
 * sizes of the uncompressed formats that media people actually store.
 */
#ifndef FT_PRESETS_H
#define FT_PRESETS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* How a preset's byte count follows from its picture size. */
enum ft_rule {
	FT_RULE_FRAMETEST,	/* w*h*4 + --header KiB, rounded up to 4 KiB */
	FT_RULE_DPX10,		/* w*h*4 (10-bit packed) + 8 KiB DPX header, rounded up to 4 KiB */
	FT_RULE_EXR_HALF_RGBA,	/* w*h*8 + per-line tables + header, rounded up to 4 KiB */
	FT_RULE_V210,		/* ceil(w/48)*128 bytes per row * h, rounded up to 4 KiB */
};

struct ft_preset {
	const char *name;	/* as typed after -w / -r, case-insensitive */
	const char *what;	/* the format it models, for --list */
	uint32_t width;
	uint32_t height;
	enum ft_rule rule;
};

#define FT_HEADER_KIB_DEFAULT 64u
#define FT_HEADER_KIB_MAX (64u * 1024)

const struct ft_preset *ft_preset_find(const char *name);
/* The frame size in bytes; header_kib only matters for frametest's rule. */
uint64_t ft_preset_bytes(const struct ft_preset *p, uint32_t header_kib);
/* The formula behind a preset, in words, for --list and error messages. */
const char *ft_preset_formula(const struct ft_preset *p);
size_t ft_preset_count(void);
const struct ft_preset *ft_preset_at(size_t i);

/*
 * Parse a frame size as frametest does: a preset name or a number of KiB.
 * label receives what the PASS line calls it ("4k", "40000KiB").
 * 0 or -EINVAL / -ERANGE.
 */
int ft_parse_frame_size(const char *s, uint32_t header_kib, uint64_t *bytes, char *label,
			size_t label_len);

/* --list: every preset with its bytes and the MB/s (10^6) it needs at 24/25/30/60 fps. */
void ft_presets_list(FILE *out, uint32_t header_kib);

#endif
