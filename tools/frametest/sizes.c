/* SPDX-License-Identifier: MIT */
#include "sizes.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "verify.h"

#define KIB 1024ull
#define ROUND_UP(n, a) (((n) + (a) - 1) / (a) * (a))
#define ROUND_DOWN(n, a) ((n) / (a) * (a))

static const struct {
	const char *name;
	uint64_t mult;
} units[] = {
	{ "", KIB }, { "b", 1 }, { "k", KIB }, { "kib", KIB }, { "m", KIB * KIB },
	{ "mib", KIB * KIB }, { "g", KIB * KIB * KIB }, { "gib", KIB * KIB * KIB },
};

int ft_parse_bytes(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(end, units[i].name) != 0)
			continue;
		if (v == 0 || v > FT_SIZE_BYTES_MAX / units[i].mult)
			return -ERANGE;
		*out = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

const char *ft_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	if (bytes && bytes % (KIB * KIB * KIB) == 0)
		snprintf(buf, len, "%lluGiB", (unsigned long long)(bytes / (KIB * KIB * KIB)));
	else if (bytes && bytes % (KIB * KIB) == 0)
		snprintf(buf, len, "%lluMiB", (unsigned long long)(bytes / (KIB * KIB)));
	else if (bytes && bytes % KIB == 0)
		snprintf(buf, len, "%lluKiB", (unsigned long long)(bytes / KIB));
	else
		snprintf(buf, len, "%lluB", (unsigned long long)bytes);
	return buf;
}

/* One size of "MIN:MAX": copied out of s (len bytes) and parsed. */
static int vary_size(const char *s, size_t len, const char *what, uint64_t *out, char *err,
		     size_t errlen)
{
	char tok[32];
	int rc;

	if (len == 0 || len >= sizeof(tok)) {
		snprintf(err, errlen, "--vary: %s size '%.*s' is not a size (3M, 512K, 65536B)", what,
			 (int)(len < sizeof(tok) ? len : sizeof(tok)), s);
		return -EINVAL;
	}
	memcpy(tok, s, len);
	tok[len] = '\0';
	rc = ft_parse_bytes(tok, out);
	if (rc == -ERANGE)
		snprintf(err, errlen, "--vary: %s size '%s' is out of range (4K..4G)", what, tok);
	else if (rc)
		snprintf(err, errlen, "--vary: %s size '%s' is not a size (3M, 512K, 65536B)", what,
			 tok);
	else if (*out % FT_VARY_ALIGN)
		snprintf(err, errlen, "--vary: %s size '%s' is not a whole number of 4 KiB "
			 "(the O_DIRECT alignment frames keep)", what, tok);
	return rc ? -EINVAL : *out % FT_VARY_ALIGN ? -EINVAL : 0;
}

int ft_vary_parse(const char *s, struct ft_vary *v, char *err, size_t errlen)
{
	const char *colon = strchr(s, ':'), *comma = strchr(s, ','), *max_end;
	unsigned long long seed = FT_VARY_SEED_DEFAULT;
	char *end;

	memset(v, 0, sizeof(*v));
	if (!colon || (comma && comma < colon)) {
		snprintf(err, errlen, "--vary: '%s' is not MIN:MAX[,SEED] (e.g. 3M:60M)", s);
		return -EINVAL;
	}
	max_end = comma ? comma : s + strlen(s);
	if (vary_size(s, (size_t)(colon - s), "smallest", &v->min, err, errlen) ||
	    vary_size(colon + 1, (size_t)(max_end - colon - 1), "largest", &v->max, err, errlen))
		return -EINVAL;
	if (comma) {
		errno = 0;
		seed = strtoull(comma + 1, &end, 10);
		if (!isdigit((unsigned char)comma[1]) || errno || *end != '\0') {
			snprintf(err, errlen, "--vary: seed '%s' is not a whole number", comma + 1);
			return -EINVAL;
		}
	}
	if (v->min > v->max) {
		snprintf(err, errlen, "--vary: the smallest size is larger than the largest ('%s')", s);
		return -EINVAL;
	}
	v->seed = seed;
	return 0;
}

static uint64_t mix64(uint64_t z)	/* splitmix64's finalizer */
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define GOLDEN 0x9e3779b97f4a7c15ull

uint64_t ft_vary_bytes(const struct ft_vary *v, uint32_t stream, uint64_t frame)
{
	uint64_t steps, h;

	if (!ft_vary_on(v) || v->max <= v->min)
		return v->min;
	steps = (v->max - v->min) / FT_VARY_ALIGN + 1;
	h = mix64(v->seed + GOLDEN);
	h = mix64(h ^ ((uint64_t)stream + 1) * GOLDEN);
	h = mix64(h + (frame + 1) * GOLDEN);
	return v->min + h % steps * FT_VARY_ALIGN;	/* bias < steps / 2^64: none to see */
}

void ft_vary_label(const struct ft_vary *v, char *buf, size_t len)
{
	char a[32], b[32];

	snprintf(buf, len, "%s-%s", ft_format_bytes(v->min, a, sizeof(a)),
		 ft_format_bytes(v->max, b, sizeof(b)));
}

void ft_crop_range(uint64_t frame_bytes, uint32_t pct, uint64_t *off, uint64_t *len)
{
	uint64_t fb = frame_bytes, want, end;

	*off = 0;
	*len = fb;
	if (pct >= 100)
		return;
	want = fb * pct / 100;
	*off = ROUND_DOWN((fb - want) / 2, FT_CHUNK_BYTES);
	end = ROUND_UP(*off + want, FT_CHUNK_BYTES);
	if (end > fb)
		end = fb;
	*len = end - *off;
	if (*len == 0)
		*len = fb - *off;
}

uint64_t ft_piece_bytes(uint64_t len, uint32_t pieces, uint64_t io_size, uint64_t align)
{
	uint64_t piece;

	if (io_size)
		return io_size;
	if (pieces < 1)
		pieces = 1;
	piece = (len + pieces - 1) / pieces;
	if (align > 1)
		piece = ROUND_UP(piece, align);
	return piece ? piece : 1;
}
