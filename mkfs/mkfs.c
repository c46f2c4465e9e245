/* SPDX-License-Identifier: MIT */
/*
 * mkfs.framefs: create the RAID array and the filesystem on it.
 *
 *   mkfs.framefs [-l 5|6] [-c CHUNK] [-L LABEL] [-N INODES] [-J JOURNAL] [-S BYTES]
 *                [-s SPARE]... [-K] [-f] [-q] MEMBER...
 *
 * The data area of every block-device member is deallocated first (as md,
 * mkfs.xfs and mke2fs do; -K, as theirs, turns it off): one line per
 * member says what came of it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs/ffs.h"
#include "fs/base/format.h"
#include "raid/raid.h"
#include "raid/label.h"
#include "raid/sb.h"

#define SPARES_MAX FF_SPARES_MAX

static void usage(FILE *f)
{
	fprintf(f, "usage: mkfs.framefs [-l 5|6] [-c CHUNK] [-L LABEL] [-N INODES] [-J BLOCKS]\n"
		   "                    [-S BYTES] [-s SPARE]... [-K] [-f] [-q] MEMBER...\n\n"
		   "  -l LEVEL    RAID level, 5 (default) or 6\n"
		   "  -c CHUNK    chunk size per member, power of two 16K..1M (default 512K)\n"
		   "  -L LABEL    volume label\n"
		   "  -N INODES   number of inodes (default: one per 256 KiB of capacity, at least\n"
		   "              %u, as many as a quarter of the metadata area holds); the metadata\n"
		   "              area is sized for them: with -N it keeps 2.5 KiB of small-file\n"
		   "              room for each inode, up to a third of each member\n"
		   "  -J BLOCKS   journal size in 4 KiB blocks (default: 1/16 of the metadata area,\n"
		   "              1024 to 65536)\n"
		   "  -S BYTES    small-file threshold (default 64K; 0 = off; at most %uK and the\n"
		   "              stripe width): a file no larger lives in the mirrored metadata pool,\n"
		   "              so that a 4 KiB sidecar does not take a whole stripe\n"
		   "  -s SPARE    a hot spare (repeatable): it takes over a failed member's role and\n"
		   "              is rebuilt at once; at least as large as the smallest member\n"
		   "  -K, --no-discard\n"
		   "              do not deallocate (discard, TRIM) the data area of the block-device\n"
		   "              members; by default it is, so that an SSD has its whole spare area\n"
		   "              for sustained writes (files are never punched)\n"
		   "  -f          overwrite members that carry a filesystem or framefs signature\n"
		   "  -q          quiet\n"
		   "  -h, --help  this help\n", FFS_INODES_MIN, FFS_SMALL_BYTES_MAX / 1024);
}

/*
 * Spares are checked before anything is written (each one opens, is large
 * enough, is not a member, carries no signature unless -f), and added
 * through the array's own ff_raid_add once the volume exists.
 */
static int check_spares(const char *const *paths, unsigned n, const char *const *spares,
			unsigned nspares, bool force)
{
	uint64_t smallest = UINT64_MAX;
	struct ff_err err = { "" };
	struct ff_member m, o;
	int rc = 0;

	for (unsigned i = 0; i < n && rc == 0; i++) {
		if ((rc = ff_member_open(&o, paths[i], true, &err)) < 0)
			break;
		smallest = FF_MIN(smallest, o.size_bytes);
		ff_member_close(&o);
	}
	for (unsigned s = 0; s < nspares && rc == 0; s++) {
		const char *sig;

		if ((rc = ff_member_open(&m, spares[s], true, &err)) < 0)
			break;
		sig = force ? NULL : ff_probe_signature(&m);
		if (sig) {
			ff_err_set(&err, "%s: carries a %s signature; use -f to overwrite it", spares[s], sig);
			rc = -EEXIST;
		} else if (m.size_bytes < smallest) {
			ff_err_set(&err, "spare %s is smaller (%llu bytes) than the smallest member "
				   "(%llu bytes)", spares[s], (unsigned long long)m.size_bytes,
				   (unsigned long long)smallest);
			rc = -ENOSPC;
		}
		for (unsigned i = 0; i < n + s && rc == 0; i++) {
			const char *p = i < n ? paths[i] : spares[i - n];

			if (ff_member_open(&o, p, true, &err) < 0)
				continue;
			if (ff_member_same(&m, &o)) {
				ff_err_set(&err, "%s is given twice (as a member or spare)", spares[s]);
				rc = -EINVAL;
			}
			ff_member_close(&o);
		}
		ff_member_close(&m);
	}
	if (rc < 0)
		fprintf(stderr, "mkfs.framefs: %s\n", err.msg[0] ? err.msg : strerror(-rc));
	return rc;
}

/*
 * Every member is used up to the size of the smallest one (the array's
 * geometry is the same on each): say how much a larger member leaves
 * unused, when that is more than 1 % of it.
 */
static void warn_unused(const char *const *paths, unsigned n)
{
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_err err = { "" };
	struct ff_member m;
	uint64_t used = 0;

	if (!sb)
		return;
	for (unsigned i = 0; i < n && !used; i++) {
		if (ff_member_open(&m, paths[i], true, &err) < 0)
			continue;
		if (ff_sb_read(&m, sb) == 0)
			used = ff_le64(sb->member_bytes);
		ff_member_close(&m);
	}
	for (unsigned i = 0; i < n && used; i++) {
		char a[32], b[32], c[32];
		uint64_t unused;

		if (ff_member_open(&m, paths[i], true, &err) < 0)
			continue;
		unused = m.size_bytes > used ? m.size_bytes - used : 0;
		if (unused > m.size_bytes / 100)
			fprintf(stderr, "mkfs.framefs: warning: %s: %s of its %s left unused (every member "
				"is used only up to the smallest one's %s); use members of equal size\n",
				paths[i], ff_fmt_bytes(unused, a, sizeof(a)),
				ff_fmt_bytes(m.size_bytes, b, sizeof(b)), ff_fmt_bytes(used, c, sizeof(c)));
		ff_member_close(&m);
	}
	free(sb);
}

static int add_spares(const char *const *paths, unsigned n, const char *const *spares,
		      unsigned nspares)
{
	struct ff_raid_opts o = { .workers = 1 };
	struct ff_err err = { "" };
	struct ff_raid *r;
	int rc = 0;

	if (nspares == 0)
		return 0;
	if (ff_raid_assemble(paths, n, &o, &r, &err) < 0) {
		fprintf(stderr, "mkfs.framefs: %s\n", err.msg);
		return -EIO;
	}
	for (unsigned s = 0; s < nspares && rc == 0; s++) {
		rc = ff_raid_add(r, spares[s], true, &err); /* checked above: force is safe */
		if (rc < 0)
			fprintf(stderr, "mkfs.framefs: spare %s: %s\n", spares[s], err.msg);
	}
	if (ff_raid_close(r) < 0 && rc == 0)
		rc = -EIO;
	return rc;
}

/* One line per member: what deallocating its data area did. */
static void print_discard(const char *const *paths, unsigned n, const struct ff_raid_discard *d)
{
	for (unsigned i = 0; i < n; i++) {
		char a[32], b[32];

		if (d[i].rc == 0)
			printf("%s: deallocated %s, the data area (%llu bytes)\n", paths[i],
			       ff_fmt_bytes(d[i].bytes, a, sizeof(a)), (unsigned long long)d[i].bytes);
		else if (!d[i].is_bdev)
			printf("%s: not deallocated: a file (its blocks stay allocated in the host "
			       "filesystem)\n", paths[i]);
		else if (d[i].rc == -EOPNOTSUPP)
			printf("%s: not deallocated: not supported by the device\n", paths[i]);
		else
			printf("%s: deallocated only %s of the data area's %s: %s\n", paths[i],
			       ff_fmt_bytes(d[i].bytes, a, sizeof(a)),
			       ff_fmt_bytes(d[i].want, b, sizeof(b)), strerror(-d[i].rc));
	}
}

static int print_geometry(const char *const *paths, unsigned n, const struct ffs_mkfs_params *p,
			  const struct ffs_mkfs_layout *lay)
{
	const char *label = p->label;
	uint32_t asked = p->small_max ? p->small_max : FFS_SMALL_DEFAULT;
	struct ff_raid_opts o = { .read_only = true, .workers = 1 };
	struct ff_err err = { "" };
	const struct ff_geom *g;
	struct ff_raid *r;
	char a[32], b[32], c[32], u[37];

	if (ff_raid_assemble(paths, n, &o, &r, &err) < 0) {
		fprintf(stderr, "mkfs.framefs: %s\n", err.msg);
		return 1;
	}
	g = ff_raid_geom(r);
	ff_uuid_format(ff_raid_uuid(r), u);
	printf("framefs volume%s%s%s created\n", label[0] ? " \"" : "", label, label[0] ? "\"" : "");
	printf("  uuid         %s\n", u);
	printf("  level        RAID%u, %u members (%u data + %u parity per stripe)\n", g->level,
	       g->nmembers, g->ndata, g->nparity);
	printf("  chunk        %s; stripe width %s\n", ff_fmt_bytes(g->chunk_bytes, a, sizeof(a)),
	       ff_fmt_bytes(g->stripe_bytes, b, sizeof(b)));
	printf("  usable size  %s (%llu stripes); %s per member used\n",
	       ff_fmt_bytes(g->data_bytes, c, sizeof(c)), (unsigned long long)g->nstripes,
	       ff_fmt_bytes(g->member_bytes, a, sizeof(a)));
	printf("  metadata     %s mirrored (%u copies); its pool %s (trees, xattrs%s)\n",
	       ff_fmt_bytes(g->meta_bytes, b, sizeof(b)), g->meta_copies,
	       ff_fmt_bytes(lay->pool_blocks * FFS_BLOCK, c, sizeof(c)),
	       lay->small_max ? ", small files" : "");
	if (lay->small_max)
		printf("  small files  up to %s in the mirrored metadata pool%s\n",
		       ff_fmt_bytes(lay->small_max, a, sizeof(a)),
		       lay->small_max < asked ? " (capped to the stripe width)" : "");
	else
		printf("  small files  off (-S 0): every file takes stripes\n");
	if (lay->version >= FFS_VERSION_TAILS)
		printf("  tails        a frame's last partial stripe packed in rows of a shared tail "
		       "stripe (%s a row: 4 KiB of each data chunk)\n",
		       ff_fmt_bytes((uint64_t)g->ndata * FFS_TAIL_ROW, a, sizeof(a)));
	for (unsigned i = 0; i < g->nmembers; i++) {
		struct ff_member *m = ff_raid_member(r, i);
		char id[160];

		if (m)
			printf("  member %-2u    %s (%s)\n", i, m->path, ff_member_describe(m, id, sizeof(id)));
	}
	for (unsigned i = 0; i < ff_raid_spare_count(r); i++) {
		const struct ff_member *m = ff_raid_spare(r, i);
		char id[160];

		printf("  hot spare    %s (%s)\n", m->path, ff_member_describe(m, id, sizeof(id)));
	}
	ff_raid_close(r);
	return 0;
}

int main(int argc, char **argv)
{
	static struct ff_raid_discard discard[FF_MEMBERS_MAX];
	struct ffs_mkfs_layout layout;
	struct ffs_mkfs_params p = { .level = 5, .chunk_bytes = 512 * 1024, .discard = true,
				     .discard_out = discard, .layout_out = &layout };
	struct ff_err err = { "" };
	const char *spares[SPARES_MAX];
	unsigned nspares = 0;
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' },
						  { "no-discard", no_argument, NULL, 'K' },
						  { 0 } };
	uint64_t v;
	int o, rc;

	while ((o = getopt_long(argc, argv, "l:c:L:N:J:S:s:Kfqh", longopts, NULL)) != -1) {
		switch (o) {
		case 'l':
			if (strcmp(optarg, "5") && strcmp(optarg, "6")) {
				fprintf(stderr, "mkfs.framefs: RAID level must be 5 or 6, not '%s'\n", optarg);
				return 1;
			}
			p.level = (uint32_t)atoi(optarg);
			break;
		case 'c':
			if (ff_parse_size(optarg, &v) < 0 || v > UINT32_MAX || v == 0) {
				fprintf(stderr, "mkfs.framefs: bad chunk size '%s': give a power of two "
					"from 16K to 1M (default 512K)\n", optarg);
				return 1;
			}
			p.chunk_bytes = (uint32_t)v;
			break;
		case 'L':
			if (ff_label_check(optarg, &err) < 0) { /* status and fsck print it */
				fprintf(stderr, "mkfs.framefs: %s\n", err.msg);
				return 1;
			}
			_Static_assert(sizeof(p.label) > FF_LABEL_MAX, "a label fits");
			strcpy(p.label, optarg);
			break;
		case 'N':
			if (ff_parse_size(optarg, &p.ninodes) < 0) {
				fprintf(stderr, "mkfs.framefs: bad inode count '%s'\n", optarg);
				return 1;
			}
			break;
		case 'J':
			if (ff_parse_size(optarg, &p.journal_blocks) < 0 || p.journal_blocks < 64) {
				fprintf(stderr, "mkfs.framefs: bad journal size '%s' (at least 64 blocks)\n",
					optarg);
				return 1;
			}
			break;
		case 'S':
			if (ff_parse_size(optarg, &v) < 0 || v > FFS_SMALL_BYTES_MAX) {
				fprintf(stderr, "mkfs.framefs: bad small-file threshold '%s': give 0 (off) "
					"to %uK (default 64K)\n", optarg, FFS_SMALL_BYTES_MAX / 1024);
				return 1;
			}
			p.small_max = v ? (uint32_t)v : FFS_SMALL_OFF;
			break;
		case 's':
			if (nspares == SPARES_MAX) {
				fprintf(stderr, "mkfs.framefs: at most %u spares\n", SPARES_MAX);
				return 1;
			}
			spares[nspares++] = optarg;
			break;
		case 'K': p.discard = false; break;
		case 'f': p.force = true; break;
		case 'q': p.quiet = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 1;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 1;
	}
	ff_log_set_level(FF_LOG_WARN);
	if (check_spares((const char *const *)argv + optind, (unsigned)(argc - optind), spares,
			 nspares, p.force) < 0)
		return 1;
	rc = ffs_mkfs((const char *const *)argv + optind, (unsigned)(argc - optind), &p, &err);
	if (rc < 0) {
		fprintf(stderr, "mkfs.framefs: %s\n", err.msg[0] ? err.msg : strerror(-rc));
		return 1;
	}
	if (!p.quiet && p.discard)
		print_discard((const char *const *)argv + optind, (unsigned)(argc - optind), discard);
	else if (!p.quiet)
		printf("data area not deallocated (-K)\n");
	warn_unused((const char *const *)argv + optind, (unsigned)(argc - optind));
	if (add_spares((const char *const *)argv + optind, (unsigned)(argc - optind), spares,
		       nspares) < 0)
		return 1;
	if (p.quiet)
		return 0;
	{
		const char *all[FF_MEMBERS_MAX + SPARES_MAX];
		unsigned n = 0;

		for (int i = optind; i < argc && n < FF_MEMBERS_MAX; i++)
			all[n++] = argv[i];
		for (unsigned s = 0; s < nspares; s++)
			all[n++] = spares[s];
		return print_geometry(all, n, &p, &layout);
	}
}
