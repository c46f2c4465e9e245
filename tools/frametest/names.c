/* SPDX-License-Identifier: MIT */
#include "names.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH_MAX 18u	/* digits that fit a uint64 comfortably */

static int set_parts(struct ft_names *n, const char *pat, size_t pre_len, const char *rest)
{
	if (pre_len >= sizeof(n->prefix) || strlen(rest) >= sizeof(n->suffix))
		return -EINVAL;
	memcpy(n->prefix, pat, pre_len);
	n->prefix[pre_len] = '\0';
	snprintf(n->suffix, sizeof(n->suffix), "%s", rest);
	return 0;
}

/* "%d", "%u", "%06d": one conversion, nothing else after a '%'. */
static int parse_printf(const char *pat, const char *pct, struct ft_names *n)
{
	const char *p = pct + 1;
	unsigned width = 0;

	while (isdigit((unsigned char)*p) && width <= WIDTH_MAX)
		width = width * 10 + (unsigned)(*p++ - '0');
	if ((*p != 'd' && *p != 'u') || width > WIDTH_MAX || strchr(p + 1, '%'))
		return -EINVAL;
	n->width = width ? width : 1;
	n->first = 0;
	return set_parts(n, pat, (size_t)(pct - pat), p + 1);
}

static int parse_hashes(const char *pat, const char *h, struct ft_names *n)
{
	size_t run = strspn(h, "#");

	if (run > WIDTH_MAX || strchr(h + run, '#'))
		return -EINVAL;
	n->width = (uint32_t)run;
	n->first = 0;
	return set_parts(n, pat, (size_t)(h - pat), h + run);
}

static int parse_digits(const char *pat, struct ft_names *n)
{
	const char *end = NULL, *start;

	for (const char *p = pat; *p; p++)
		if (isdigit((unsigned char)*p))
			end = p + 1;
	if (!end)
		return -EINVAL;
	start = end;
	while (start > pat && isdigit((unsigned char)start[-1]))
		start--;
	if ((size_t)(end - start) > WIDTH_MAX)
		return -EINVAL;
	n->width = (uint32_t)(end - start);
	n->first = strtoull(start, NULL, 10);
	return set_parts(n, pat, (size_t)(start - pat), end);
}

int ft_names_parse(const char *pattern, struct ft_names *n)
{
	const char *pct, *hash;

	memset(n, 0, sizeof(*n));
	if (!pattern || !*pattern || strchr(pattern, '/'))
		return -EINVAL;
	pct = strchr(pattern, '%');
	if (pct)
		return parse_printf(pattern, pct, n);
	hash = strchr(pattern, '#');
	if (hash)
		return parse_hashes(pattern, hash, n);
	return parse_digits(pattern, n);
}

int ft_subdir_path(uint32_t files_per_dir, uint64_t frame, char *buf, size_t len)
{
	int w;

	if (files_per_dir == 0)
		w = snprintf(buf, len, ".");
	else
		w = snprintf(buf, len, "d%05llu", (unsigned long long)(frame / files_per_dir));
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int ft_frame_path(const struct ft_names *n, uint32_t files_per_dir, uint64_t frame, char *buf,
		  size_t len)
{
	unsigned long long num = (unsigned long long)(n->first + frame);
	int w;

	if (files_per_dir == 0)
		w = snprintf(buf, len, "%s%0*llu%s", n->prefix, (int)n->width, num, n->suffix);
	else
		w = snprintf(buf, len, "d%05llu/%s%0*llu%s",
			     (unsigned long long)(frame / files_per_dir), n->prefix, (int)n->width,
			     num, n->suffix);
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int ft_stream_dir(int own_dirs, uint32_t stream, char *buf, size_t len)
{
	int w = own_dirs ? snprintf(buf, len, "stream%02u", stream) : snprintf(buf, len, ".");

	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}
