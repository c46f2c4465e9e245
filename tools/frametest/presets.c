/* SPDX-License-Identifier: MIT */
/*
 * Preset sizes.  frametest's presets are a picture of w*h 4-byte pixels plus
 * a 64 KiB header, rounded up to 4 KiB so that O_DIRECT can move whole
 * frames: 2k = 2048*1556*4 + 65536 = 12,812,288 bytes, 4k = 4096*3112*4 +
 * 65536 = 51,052,544 bytes.  The named formats use each format's real
 * layout:
 *
 *   DPX 10-bit (method A packing, 3 x 10 bits in one 32-bit word):
 *       w*h*4 bytes of pixels after an 8 KiB header (the usual image offset).
 *   OpenEXR, half-float RGBA, uncompressed scanline file:
 *       w*h*8 pixel bytes; per scanline an 8-byte offset-table entry and an
 *       8-byte chunk prefix (int32 y, int32 data size); ~350 bytes of header
 *       attributes (channels, compression, windows, ...).
 *   v210 (10-bit 4:2:2, 6 pixels in 16 bytes, rows in 48-pixel groups):
 *       ceil(w/48)*128 bytes per row, h rows, no header.
 *
 * Every result is rounded up to 4 KiB: a frame file that ends off a 4 KiB
 * boundary cannot be written with O_DIRECT in one piece.
 */
#include "presets.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FT_ALIGN 4096ull
#define ROUND_UP(n, a) (((n) + (a) - 1) / (a) * (a))

#define DPX_HEADER_BYTES 8192ull
#define EXR_HEADER_BYTES 350ull
#define EXR_LINE_TABLE_BYTES 8ull	/* one uint64 offset per scanline chunk */
#define EXR_CHUNK_PREFIX_BYTES 8ull	/* int32 y + int32 byte count per chunk */
#define V210_GROUP_PIXELS 48ull
#define V210_GROUP_BYTES 128ull

static const struct ft_preset presets[] = {
	{ "sd", "frametest SD 720x480", 720, 480, FT_RULE_FRAMETEST },
	{ "hd", "frametest HD 1920x1080", 1920, 1080, FT_RULE_FRAMETEST },
	{ "2k", "frametest 2K full aperture 2048x1556", 2048, 1556, FT_RULE_FRAMETEST },
	{ "4k", "frametest 4K full aperture 4096x3112", 4096, 3112, FT_RULE_FRAMETEST },
	{ "8k", "frametest rule at 8K 8192x4320", 8192, 4320, FT_RULE_FRAMETEST },
	{ "dpx-uhd", "DPX 10-bit RGB UHD 3840x2160", 3840, 2160, FT_RULE_DPX10 },
	{ "dpx-4k", "DPX 10-bit RGB 4K DCI 4096x2160", 4096, 2160, FT_RULE_DPX10 },
	{ "dpx-8k", "DPX 10-bit RGB 8K 7680x4320", 7680, 4320, FT_RULE_DPX10 },
	{ "exr-4k", "OpenEXR half RGBA uncompressed 4K DCI 4096x2160", 4096, 2160,
	  FT_RULE_EXR_HALF_RGBA },
	{ "v210-uhd", "v210 10-bit 4:2:2 UHD 3840x2160", 3840, 2160, FT_RULE_V210 },
};

size_t ft_preset_count(void) { return sizeof(presets) / sizeof(presets[0]); }

const struct ft_preset *ft_preset_at(size_t i)
{
	return i < ft_preset_count() ? &presets[i] : NULL;
}

const struct ft_preset *ft_preset_find(const char *name)
{
	for (size_t i = 0; i < ft_preset_count(); i++)
		if (strcasecmp(presets[i].name, name) == 0)
			return &presets[i];
	return NULL;
}

uint64_t ft_preset_bytes(const struct ft_preset *p, uint32_t header_kib)
{
	uint64_t w = p->width, h = p->height, raw = 0;

	switch (p->rule) {
	case FT_RULE_FRAMETEST:
		raw = w * h * 4 + (uint64_t)header_kib * 1024;
		break;
	case FT_RULE_DPX10:
		raw = w * h * 4 + DPX_HEADER_BYTES;
		break;
	case FT_RULE_EXR_HALF_RGBA:
		raw = w * h * 8 + h * (EXR_LINE_TABLE_BYTES + EXR_CHUNK_PREFIX_BYTES) +
		      EXR_HEADER_BYTES;
		break;
	case FT_RULE_V210:
		raw = (w + V210_GROUP_PIXELS - 1) / V210_GROUP_PIXELS * V210_GROUP_BYTES * h;
		break;
	}
	return ROUND_UP(raw, FT_ALIGN);
}

const char *ft_preset_formula(const struct ft_preset *p)
{
	switch (p->rule) {
	case FT_RULE_FRAMETEST: return "w*h*4 + header(--header, 64 KiB), up to 4 KiB";
	case FT_RULE_DPX10: return "w*h*4 + 8 KiB header, up to 4 KiB";
	case FT_RULE_EXR_HALF_RGBA: return "w*h*8 + h*(8 table + 8 chunk) + 350 header, up to 4 KiB";
	case FT_RULE_V210: return "ceil(w/48)*128 * h, up to 4 KiB";
	}
	return "?";
}

/* Largest frame accepted: 4 GiB keeps every count in range and is 30x an 8K frame. */
#define FT_FRAME_KIB_MAX (4ull * 1024 * 1024)

int ft_parse_frame_size(const char *s, uint32_t header_kib, uint64_t *bytes, char *label,
			size_t label_len)
{
	const struct ft_preset *p;
	unsigned long long kib;
	char *end;

	if (!s || !*s)
		return -EINVAL;
	p = ft_preset_find(s);
	if (p) {
		*bytes = ft_preset_bytes(p, header_kib);
		snprintf(label, label_len, "%s", p->name);
		return 0;
	}
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	kib = strtoull(s, &end, 10);
	if (errno || *end != '\0')
		return -EINVAL;
	if (kib == 0 || kib > FT_FRAME_KIB_MAX)
		return -ERANGE;
	*bytes = kib * 1024;
	snprintf(label, label_len, "%lluKiB", kib);
	return 0;
}

void ft_presets_list(FILE *out, uint32_t header_kib)
{
	static const unsigned rates[] = { 24, 25, 30, 60 };

	fprintf(out, "%-9s %-11s %13s %10s  %s\n", "preset", "picture", "bytes/frame",
		"KiB", "MB/s needed (1 MB = 10^6 bytes) at");
	fprintf(out, "%-9s %-11s %13s %10s  %9s %9s %9s %9s\n", "", "", "", "", "24 fps",
		"25 fps", "30 fps", "60 fps");
	for (size_t i = 0; i < ft_preset_count(); i++) {
		const struct ft_preset *p = &presets[i];
		uint64_t b = ft_preset_bytes(p, header_kib);
		char pic[32];

		snprintf(pic, sizeof(pic), "%ux%u", p->width, p->height);
		fprintf(out, "%-9s %-11s %13llu %10llu ", p->name, pic, (unsigned long long)b,
			(unsigned long long)(b / 1024));
		for (size_t r = 0; r < sizeof(rates) / sizeof(rates[0]); r++)
			fprintf(out, " %9.1f", (double)b * rates[r] / 1e6);
		fprintf(out, "\n");
	}
	fprintf(out, "\nHow each size is computed (w, h in pixels):\n");
	for (size_t i = 0; i < ft_preset_count(); i++)
		fprintf(out, "  %-9s %s: %s\n", presets[i].name, presets[i].what,
			ft_preset_formula(&presets[i]));
	fprintf(out, "A number instead of a preset is a frame size in KiB (-w 40000).\n");
}
