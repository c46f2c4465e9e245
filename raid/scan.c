/* SPDX-License-Identifier: MIT */
/*
 * Member specs: what an fstab line, fsck.framefs and framefs-admin name a
 * volume by.  A comma-separated list of paths is taken as it is; UUID= and
 * LABEL= are resolved by reading the member superblock of every candidate
 * (read-only, without the member lock, closed again at once):
 *
 *   1. the files matching the caller's globs (-o members=, --members=),
 *   2. the files matching the globs in FF_MEMBERS_CONF, one per line,
 *   3. every block device in /sys/class/block (as /dev/NAME).
 *
 * Every member of the wanted array that is present goes to assembly, which
 * decides as always which of them are stale or replaced; only the same
 * member seen twice (a file and a loop device over it) is passed once.
 */
#include "raid/sb.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_FOUND_MAX 128  /* members of any array remembered in one scan */
#define SCAN_SEEN_MAX 4096  /* candidates looked at in one scan */

struct found {
	char *path;
	uint8_t array_uuid[16];
	uint8_t member_uuid[16];
	uint64_t events;
	char label[64];
};

struct scan {
	const char *tag;  /* "UUID" or "LABEL" */
	const char *want; /* its value */
	unsigned nfiles, nbdevs;
	unsigned nseen;
	dev_t seen_dev[SCAN_SEEN_MAX];
	ino_t seen_ino[SCAN_SEEN_MAX];
	unsigned nfound;
	struct found found[SCAN_FOUND_MAX];
};

static bool scan_matches(const struct scan *s, const struct ff_member_sb *sb)
{
	char u[37];

	if (strcasecmp(s->tag, "UUID") == 0) {
		ff_uuid_format(sb->array_uuid, u);
		return strcasecmp(u, s->want) == 0;
	}
	return strncmp(sb->label, s->want, sizeof(sb->label)) == 0 && s->want[0];
}

/* Same file or device seen before (a glob given twice, a symlink)? */
static bool scan_seen(struct scan *s, const struct stat *st)
{
	dev_t d = S_ISBLK(st->st_mode) ? st->st_rdev : st->st_dev;
	ino_t i = S_ISBLK(st->st_mode) ? 0 : st->st_ino;

	for (unsigned k = 0; k < s->nseen; k++)
		if (s->seen_dev[k] == d && s->seen_ino[k] == i)
			return true;
	if (s->nseen < SCAN_SEEN_MAX) {
		s->seen_dev[s->nseen] = d;
		s->seen_ino[s->nseen++] = i;
	}
	return false;
}

static void scan_keep(struct scan *s, const char *path, const struct ff_member_sb *sb)
{
	struct found *f;

	for (unsigned k = 0; k < s->nfound; k++) {
		f = &s->found[k];
		if (memcmp(f->member_uuid, sb->member_uuid, 16) || memcmp(f->array_uuid, sb->array_uuid, 16))
			continue;
		/* one member under two names: the newer copy, else the first found */
		if (ff_le64(sb->events) > f->events) {
			char *p = strdup(path);

			if (p) {
				free(f->path);
				f->path = p;
				f->events = ff_le64(sb->events);
			}
		}
		return;
	}
	if (s->nfound == SCAN_FOUND_MAX)
		return;
	f = &s->found[s->nfound];
	f->path = strdup(path);
	if (!f->path)
		return;
	memcpy(f->array_uuid, sb->array_uuid, 16);
	memcpy(f->member_uuid, sb->member_uuid, 16);
	f->events = ff_le64(sb->events);
	memcpy(f->label, sb->label, sizeof(f->label));
	f->label[sizeof(f->label) - 1] = '\0';
	s->nfound++;
}

/* Read path's superblock if it is a regular file or block device. */
static void scan_one(struct scan *s, const char *path, bool bdev_only)
{
	struct ff_member_sb *sb;
	struct ff_member m;
	struct ff_err e = { "" };
	struct stat st;

	/* stat first: opening a FIFO would block, a directory is no member */
	if (stat(path, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) ||
	    (bdev_only && !S_ISBLK(st.st_mode)) || scan_seen(s, &st))
		return;
	if (S_ISBLK(st.st_mode))
		s->nbdevs++;
	else
		s->nfiles++;
	if (ff_member_open(&m, path, true, &e) < 0)
		return;
	sb = ff_alloc_aligned(sizeof(*sb));
	if (sb && ff_sb_read(&m, sb) == 0 && ff_sb_validate(sb, &e, path) == 0 &&
	    scan_matches(s, sb))
		scan_keep(s, path, sb);
	free(sb);
	ff_member_close(&m);
}

static void scan_glob(struct scan *s, const char *pattern)
{
	glob_t g;

	if (glob(pattern, GLOB_NOSORT, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		scan_one(s, g.gl_pathv[i], false);
	globfree(&g);
}

/* GLOB[:GLOB...] */
static void scan_globs(struct scan *s, const char *globs)
{
	char *copy = globs ? strdup(globs) : NULL, *save = NULL;

	if (!copy)
		return;
	for (char *t = strtok_r(copy, ":", &save); t; t = strtok_r(NULL, ":", &save))
		scan_glob(s, t);
	free(copy);
}

static void scan_conf(struct scan *s, const char *conf)
{
	FILE *f = fopen(conf, "re");
	char line[4096];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (isspace((unsigned char)*p))
			p++;
		end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*p && *p != '#')
			scan_glob(s, p);
	}
	fclose(f);
}

/* Every block device with a size; sysfs writes '/' in a name as '!'. */
static void scan_bdevs(struct scan *s)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char p[300], v[32] = "";
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/class/block/%s/size", de->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (!fgets(v, sizeof(v), f))
			v[0] = '\0';
		fclose(f);
		if (strtoull(v, NULL, 10) * 512 < 2 * FF_MEMBER_SB_BYTES)
			continue; /* empty: a detached loop device, a drive without media */
		snprintf(p, sizeof(p), "/dev/%s", de->d_name);
		for (char *c = p + 5; *c; c++)
			if (*c == '!')
				*c = '/';
		scan_one(s, p, true);
	}
	closedir(d);
}

/* TAG=value (value may be quoted); NULL when spec is no tag. */
static const char *spec_tag(const char *spec, const char **tag)
{
	if (strncasecmp(spec, "UUID=", 5) == 0)
		*tag = "UUID";
	else if (strncasecmp(spec, "LABEL=", 6) == 0)
		*tag = "LABEL";
	else
		return NULL;
	return strchr(spec, '=') + 1;
}

int ff_member_set_add(struct ff_member_set *set, const char *path)
{
	if (set->n == FF_MEMBER_SET_MAX)
		return -E2BIG;
	set->path[set->n] = strdup(path);
	if (!set->path[set->n])
		return -ENOMEM;
	set->n++;
	return 0;
}

void ff_member_set_free(struct ff_member_set *set)
{
	for (unsigned i = 0; i < set->n; i++)
		free(set->path[i]);
	set->n = 0;
}

static int split_list(const char *spec, struct ff_member_set *out, struct ff_err *err)
{
	char *copy = strdup(spec), *save = NULL;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ",", &save); t && rc == 0; t = strtok_r(NULL, ",", &save)) {
		const char *tag;

		if (spec_tag(t, &tag)) {
			ff_err_set(err, "%s: a %s= spec stands alone, not in a list of members", t, tag);
			rc = -EINVAL;
		} else if ((rc = ff_member_set_add(out, t)) == -E2BIG) {
			ff_err_set(err, "more than %u members given", FF_MEMBER_SET_MAX);
		}
	}
	free(copy);
	if (rc == 0 && out->n == 0) {
		ff_err_set(err, "no members given");
		rc = -EINVAL;
	}
	return rc;
}

/* Several arrays answer to the label: name them all. */
static int scan_ambiguous(const struct scan *s, struct ff_err *err)
{
	char list[400] = "";
	size_t len = 0;
	unsigned narrays = 0;

	for (unsigned k = 0; k < s->nfound; k++) {
		char u[37];
		bool dup = false;

		for (unsigned j = 0; j < k && !dup; j++)
			dup = memcmp(s->found[j].array_uuid, s->found[k].array_uuid, 16) == 0;
		if (dup)
			continue;
		ff_uuid_format(s->found[k].array_uuid, u);
		if (len < sizeof(list))
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s (%s)",
						narrays ? ", " : "", u, s->found[k].path);
		narrays++;
	}
	if (narrays < 2)
		return 0;
	ff_err_set(err, "LABEL=%s names %u arrays: %s; give UUID= of the one to use", s->want,
		   narrays, list);
	return -ENOTUNIQ;
}

static int scan_resolve(struct scan *s, const char *spec, const char *globs, const char *conf,
			struct ff_member_set *out, struct ff_err *err)
{
	int rc;

	scan_globs(s, globs);
	if (conf)
		scan_conf(s, conf);
	scan_bdevs(s);
	if (s->nfound == 0) {
		bool has_conf = conf && access(conf, R_OK) == 0;

		ff_err_set(err, "%s: no member found (looked at %u block device%s in /sys/class/block "
			   "and %u file%s%s%s%s%s); to find members that are files, give their "
			   "directory: -o members='DIR/*' (fsck.framefs and framefs-admin: "
			   "--members='DIR/*'), or a glob line in %s", spec, s->nbdevs,
			   s->nbdevs == 1 ? "" : "s", s->nfiles, s->nfiles == 1 ? "" : "s",
			   globs && *globs ? " matching members=" : ", no members= glob given",
			   globs && *globs ? globs : "", has_conf ? " and the globs in " : "",
			   has_conf ? conf : "", conf ? conf : FF_MEMBERS_CONF);
		return -ENOENT;
	}
	rc = scan_ambiguous(s, err);
	for (unsigned k = 0; k < s->nfound && rc == 0; k++) {
		rc = ff_member_set_add(out, s->found[k].path);
		if (rc == -E2BIG)
			ff_err_set(err, "%s: more than %u members found", spec, FF_MEMBER_SET_MAX);
	}
	if (rc == 0)
		ff_log(FF_LOG_DEBUG, "%s: %u member%s found", spec, out->n, out->n > 1 ? "s" : "");
	return rc;
}

int ff_members_resolve(const char *spec, const char *globs, const char *conf,
		       struct ff_member_set *out, struct ff_err *err)
{
	struct scan *s;
	const char *tag, *val = spec_tag(spec, &tag);
	char want[80];
	size_t len;
	int rc;

	out->n = 0;
	if (!val)
		return split_list(spec, out, err);
	len = strlen(val);
	if (len >= 2 && val[0] == '"' && val[len - 1] == '"')
		snprintf(want, sizeof(want), "%.*s", (int)(len - 2), val + 1);
	else
		snprintf(want, sizeof(want), "%s", val);
	if (!want[0]) {
		ff_err_set(err, "%s: give a value after %s=", spec, tag);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->tag = tag;
	s->want = want;
	rc = scan_resolve(s, spec, globs, conf, out, err);
	for (unsigned k = 0; k < s->nfound; k++)
		free(s->found[k].path);
	free(s);
	if (rc < 0)
		ff_member_set_free(out);
	return rc;
}
