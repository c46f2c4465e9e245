/* SPDX-License-Identifier: MIT */
/*
 * fsck.framefs: check (and repair) a framefs volume.
 *
 *   fsck.framefs [-n|-y|-p] [-c] [-f] [--members=GLOB] MEMBER...|MEMBER,MEMBER...|UUID=U|LABEL=L
 *
 * fsck(8) passes an fstab line's first field as one word: a comma list of
 * members, or UUID=/LABEL=, resolved as the daemon does (raid.h).
 *
 * Exit codes as fsck(8), or-ed: 0 no problem, 1 problems fixed, 4 problems
 * left uncorrected, 8 operational error; 16 usage error.  Problems go to
 * standard output one per line (see fsck_problem.c); what stops the run
 * goes to standard error as one line.  The passes are described in fsck.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs/fsck/fsck.h"
#include "raid/raid.h"

static const char *fsck_members_glob; /* --members= */

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-n|-y|-p] [-c] [-f] [--members=GLOB] MEMBER...\n"
		   "       MEMBER... may be one MEMBER,MEMBER,... word (as in /etc/fstab), or\n"
		   "       UUID=UUID or LABEL=LABEL (any case): found by reading the superblock of every\n"
		   "       block device, of the files matching --members=GLOB[:GLOB] and of the globs\n"
		   "       in " FF_MEMBERS_CONF "\n\n"
		   "  -n   check only: open read-only, answer no to every repair\n"
		   "  -y   repair everything that can be repaired\n"
		   "  -p   repair what is safe without asking (preen); stop on anything else\n"
		   "  -a   the same as -p (fsck(8) passes it)\n"
		   "  -c   also verify every data chunk against its checksum\n"
		   "  -f   check even if the volume seems clean (always done; for fsck(8))\n"
		   "  --members=GLOB[:GLOB]  where UUID=/LABEL= also look for members that are files\n"
		   "  -h, --help  this help\n",
		FSCK_NAME);
}

static int parse(int argc, char **argv, struct fsck *c)
{
	static const struct option longopts[] = { { "help", no_argument, NULL, 'h' },
						  { "members", required_argument, NULL, 'M' },
						  { 0 } };
	int o, modes = 0;

	c->mode = FSCK_ASK;
	while ((o = getopt_long(argc, argv, "nypacfh", longopts, NULL)) != -1) {
		switch (o) {
		case 'n': c->mode = FSCK_NO; modes++; break;
		case 'y': c->mode = FSCK_YES; modes++; break;
		case 'p': case 'a': c->mode = FSCK_PREEN; modes++; break;
		case 'c': c->verify_data = true; break;
		case 'f': break;
		case 'M': fsck_members_glob = optarg; break;
		case 'h': usage(stdout); exit(FSCK_EXIT_CLEAN);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (modes > 1 || optind >= argc) {
		fprintf(stderr, "%s: %s\n", FSCK_NAME,
			modes > 1 ? "only one of -n, -y and -p" : "no member given");
		usage(stderr);
		return -EINVAL;
	}
	return 0;
}

/* Every operand may be a comma list (fsck(8) passes fstab's first field);
 * UUID= and LABEL= stand alone. */
static int resolve_members(char *const *words, unsigned n, struct ff_member_set *set,
			   struct ff_err *err)
{
	int rc = 0;

	for (unsigned i = 0; i < n && rc == 0; i++) {
		struct ff_member_set one = { 0 };

		rc = ff_members_resolve(words[i], fsck_members_glob, FF_MEMBERS_CONF, &one, err);
		for (unsigned k = 0; k < one.n && rc == 0; k++)
			if ((rc = ff_member_set_add(set, one.path[k])) < 0)
				ff_err_set(err, "more than %u members given", FF_MEMBER_SET_MAX);
		ff_member_set_free(&one);
	}
	return rc;
}

/* A grow under way (format.h, struct ffs_grow_rec) is no problem, but the
 * admin is told where it stands: a mount goes on with it. */
static void grow_summary(struct fsck *c)
{
	const struct ffs_grow_rec *gr = &c->sb->grow;
	uint64_t old = 0;

	if (ff_le32(c->sb->version) < FFS_VERSION_GROWN || ff_le32(gr->state) == FFS_GROW_NONE)
		return;
	for (uint64_t s = 0; s < c->nstripes; s++)
		old += c->stripe[s].ino && ffs_tools_bit(c->fs, FFS_TOOLS_OLD_ROWS, s);
	if (ff_le32(gr->state) == FFS_GROW_PREPARED && !ff_raid_geom_old(ffs_raid(c->fs)))
		printf("%s: a grow from %u to %u members is prepared; the array is not grown yet "
		       "(framefs-admin grow MEMBERS NEW... goes on)\n", c->label,
		       ff_le32(gr->old_nmembers), ff_le32(gr->new_nmembers));
	else
		printf("%s: a grow from %u to %u members is under way (%s): %llu data stripe(s) in use "
		       "still in the old geometry (a read-write mount goes on moving them)\n", c->label,
		       ff_le32(gr->old_nmembers), ff_le32(gr->new_nmembers),
		       ff_le32(gr->state) == FFS_GROW_PREPARED ? "the array grown, not taken on yet"
							       : "restriping",
		       (unsigned long long)old);
}

static void summary(struct fsck *c)
{
	uint64_t inodes = 0, stripes = 0, pool = 0;

	if (!c->ino || (c->stop && c->pass == 1)) /* nothing counted */
		return;
	for (uint64_t i = 1; i < c->ninodes; i++)
		inodes += (c->ino[i].flags & IS_USED) != 0;
	for (uint64_t s = 0; s < c->nstripes; s++)
		stripes += c->stripe[s].ino != 0;
	for (uint64_t b = 0; b < c->pool_blocks; b++)
		pool += c->pool_owner[b] != 0;
	printf("%s: %llu/%llu inodes, %llu/%llu data stripes, %llu/%llu metadata blocks\n", c->label,
	       (unsigned long long)inodes, (unsigned long long)c->ninodes - 1,
	       (unsigned long long)stripes, (unsigned long long)c->nstripes,
	       (unsigned long long)pool, (unsigned long long)c->pool_blocks);
	grow_summary(c);
	if (c->written)
		printf("\n%s: ***** FILE SYSTEM WAS MODIFIED *****\n", c->label);
}

static void run(struct fsck *c)
{
	int (*const pass[])(struct fsck *) = { fsck_pass1, fsck_pass2, fsck_pass3, fsck_pass4,
					      fsck_pass5 };

	for (unsigned i = 0; i < FF_ARRAY_SIZE(pass) && !c->operr && !c->stop; i++)
		if (pass[i](c) < 0 && !c->operr)
			c->operr = -EIO;
	if (ffs_tools_super(c->fs) && c->written && !ffs_tools_read_only(c->fs) && !c->operr) {
		int rc = ffs_check_finish(c->fs);

		if (rc < 0)
			fsck_operr(c, rc, "cannot write the superblock");
	}
}

int main(int argc, char **argv)
{
	struct fsck c = { .mode = FSCK_ASK };
	struct ff_err err = { "" };
	struct ff_member_set set = { 0 };
	int rc, code;

	if (parse(argc, argv, &c) < 0)
		return FSCK_EXIT_USAGE;
	if (c.mode == FSCK_ASK && !isatty(STDIN_FILENO)) {
		fprintf(stderr, "%s: need a terminal for interactive repairs (use -n, -y or -p)\n",
			FSCK_NAME);
		return FSCK_EXIT_OPERROR;
	}
	ff_log_set_level(FF_LOG_WARN);
	rc = resolve_members(argv + optind, (unsigned)(argc - optind), &set, &err);
	if (rc == 0)
		rc = ffs_check_open((const char *const *)set.path, set.n, c.mode == FSCK_NO, 0,
				    &c.fs, &err);
	ff_member_set_free(&set);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", FSCK_NAME, err.msg[0] ? err.msg : strerror(-rc));
		return FSCK_EXIT_OPERROR;
	}
	run(&c);
	if (!c.operr || c.sb)
		summary(&c);
	fflush(stdout);
	if (ffs_check_close(c.fs) < 0)
		fsck_operr(&c, -EIO, "cannot close the array");
	fsck_state_free(&c);
	code = (c.fixed ? FSCK_EXIT_FIXED : 0) | (c.unfixed ? FSCK_EXIT_UNFIXED : 0) |
	       (c.operr ? FSCK_EXIT_OPERROR : 0);
	return c.sb ? code : FSCK_EXIT_OPERROR;
}
