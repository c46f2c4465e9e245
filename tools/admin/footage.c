/* SPDX-License-Identifier: MIT */
/*
 * status --footage PRESET@FPS: the free space as running time of one
 * uncompressed format.  Frame sizes come from framefs-frametest's preset
 * table (tools/frametest/presets.c, compiled in here), so both tools agree.
 *
 * What one frame costs on this volume: a file occupies whole stripes, so a
 * frame takes ceil(frame bytes / stripe bytes) stripes, and one inode.  The
 * free frames are the smaller of free stripes / stripes per frame and free
 * inodes; the time is frames / fps.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/admin/admin.h"
#include "tools/frametest/presets.h"

#define FPS_MAX 1000.0

static void accepted_formats(char *out, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < ft_preset_count() && n < len; i++)
		n += (size_t)snprintf(out + n, len - n, "%s%s", i ? ", " : "", ft_preset_at(i)->name);
}

int footage_parse(const char *spec, struct footage *fo)
{
	char fmt[64], names[512], *end;
	const char *at = strrchr(spec, '@');
	size_t flen;
	int rc;

	memset(fo, 0, sizeof(*fo));
	accepted_formats(names, sizeof(names));
	if (!at || at == spec || !at[1]) {
		fprintf(stderr, "framefs-admin: --footage wants FORMAT@FPS, such as 4k@24 or "
			"dpx-uhd@23.976 (got '%s'); FORMAT is one of %s, or a frame size in KiB\n",
			spec, names);
		return EX_USAGE;
	}
	flen = (size_t)(at - spec);
	if (flen >= sizeof(fmt))
		flen = sizeof(fmt) - 1;
	memcpy(fmt, spec, flen);
	fmt[flen] = '\0';
	rc = ft_parse_frame_size(fmt, FT_HEADER_KIB_DEFAULT, &fo->frame_bytes, fo->format,
				 sizeof(fo->format));
	if (rc < 0) {
		fprintf(stderr, "framefs-admin: --footage: unknown frame format '%s': use one of "
			"%s (framefs-frametest --list shows their sizes), or a frame size in KiB "
			"from 1 to 4194304\n", fmt, names);
		return EX_USAGE;
	}
	errno = 0;
	fo->fps = strtod(at + 1, &end);
	if (errno || *end || end == at + 1 || !(fo->fps > 0) || fo->fps > FPS_MAX) {
		fprintf(stderr, "framefs-admin: --footage: bad frame rate '%s': use frames per "
			"second, a number above 0 and at most %.0f (24, 25, 29.97, 60)\n", at + 1,
			FPS_MAX);
		return EX_USAGE;
	}
	fo->set = true;
	return EX_OK;
}

json_object *footage_json(const struct footage *fo, json_object *st)
{
	json_object *fs = jget(st, "fs"), *o;
	uint64_t sb, free_stripes, reserve, free_inodes, per, by_space, frames;
	char fps[32], sec[48];
	double secs;

	if (!fs || !json_object_is_type(fs, json_type_object) || jnum(fs, "stripe_bytes") <= 0)
		return NULL;
	sb = json_object_get_uint64(jget(fs, "stripe_bytes"));
	free_stripes = json_object_get_uint64(jget(fs, "free_stripes"));
	reserve = json_object_get_uint64(jget(fs, "reserve_stripes")); /* overwrites only */
	free_stripes -= free_stripes < reserve ? free_stripes : reserve;
	free_inodes = json_object_get_uint64(jget(fs, "free_inodes"));
	per = (fo->frame_bytes + sb - 1) / sb;
	by_space = free_stripes / per;
	frames = by_space < free_inodes ? by_space : free_inodes;
	secs = (double)frames / fo->fps;
	o = json_object_new_object();
	json_object_object_add(o, "format", json_object_new_string(fo->format));
	snprintf(fps, sizeof(fps), "%.6g", fo->fps);
	json_object_object_add(o, "fps", json_object_new_double_s(fo->fps, fps));
	json_object_object_add(o, "frame_bytes", json_object_new_uint64(fo->frame_bytes));
	json_object_object_add(o, "stripes_per_frame", json_object_new_uint64(per));
	json_object_object_add(o, "frame_footprint_bytes", json_object_new_uint64(per * sb));
	json_object_object_add(o, "frames", json_object_new_uint64(frames));
	json_object_object_add(o, "limited_by", json_object_new_string(
					by_space <= free_inodes ? "space" : "inodes"));
	snprintf(sec, sizeof(sec), "%.3f", floor(secs * 1000) / 1000);
	json_object_object_add(o, "seconds", json_object_new_double_s(floor(secs * 1000) / 1000, sec));
	json_object_object_add(o, "minutes", json_object_new_uint64((uint64_t)floor(secs / 60)));
	return o;
}

/* The line of status; fj is the "footage" object of the status (NULL: no filesystem). */
void render_footage(json_object *fj, FILE *f)
{
	char a[32], b[32];
	uint64_t min;

	if (!fj) {
		fprintf(f, "  footage  unknown: the filesystem is not mounted\n");
		return;
	}
	min = json_object_get_uint64(jget(fj, "minutes"));
	fprintf(f, "  footage  %s at %g fps: %llu:%02llu (h:mm) in the free space, %.0f frame%s; "
		"a %s frame takes %.0f stripe%s (%s)%s\n", jstr(fj, "format", "?"), jnum(fj, "fps"),
		(unsigned long long)(min / 60), (unsigned long long)(min % 60), jnum(fj, "frames"), jnum(fj, "frames") == 1 ? "" : "s",
		ff_fmt_bytes(json_object_get_uint64(jget(fj, "frame_bytes")), a, sizeof(a)),
		jnum(fj, "stripes_per_frame"), jnum(fj, "stripes_per_frame") == 1 ? "" : "s",
		ff_fmt_bytes(json_object_get_uint64(jget(fj, "frame_footprint_bytes")), b, sizeof(b)),
		strcmp(jstr(fj, "limited_by", ""), "inodes") ? "" : "; limited by free inodes");
}
