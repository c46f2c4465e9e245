/* SPDX-License-Identifier: MIT */
/*
 * Pass 1: the superblock copies and the journal.
 *
 * Each of the four copies (A, B, C, D: fs/base/format.h) is read (any good
 * mirror copy of its block: a bad mirror copy is pass 5's business) and
 * checked against the array: magic, version, uuid, geometry, and a layout
 * equal to what mkfs computes for this array with the copy's own inode and
 * journal sizes.  The newest valid copy, by generation, is the superblock;
 * a damaged copy, or one more than a write behind the newest (the groups
 * A+C and B+D take turns, so the other group is normally one generation
 * older), is rewritten from it.  A volume made before copies C and D
 * (no FFS_F_SB_COPIES4) is not faulted for lacking them.
 *
 * When no copy is valid, the superblock is rebuilt from what it describes:
 * the array (member superblocks: geometry, uuid, label), mkfs's layout
 * function with the sizes the metadata on disk shows, and the journal's
 * own records for its tail (fs/volume/check.c).  That is a major repair: -p
 * stops, -n goes on checking with the rebuilt superblock in memory.  Not
 * when a copy is whole but made for another array, version, geometry or
 * grow: then the array may be what is wrong, and the check stops.  Nor on
 * a volume in the middle of a grow (a copy says so, or the array is grown):
 * the grow's records live in the superblock alone, and one rebuilt from
 * the array would lose them with the rows still in the old geometry.  A
 * volume grown since mkfs, its grow ended, is rebuilt at the width it was
 * made at with the records of its last grow found on disk, or not at all
 * when they cannot be told from an earlier grow's (check.c, grown_records).
 *
 * A grow under way is no problem in itself: the superblock describes the
 * old geometry (PREPARED) or the new one (GROWING), with the grow's
 * records, and the checks that follow read each data row in its own
 * geometry (fs/volume/check.h).
 *
 * Then, as e2fsck does, committed journal transactions are replayed before
 * anything else is looked at, and after them (format version 5) the patch
 * batches fsync wrote after the last commit (patches() below).
 *
 * Last, the scrub history the superblock keeps (fs/base/format.h): a record with
 * impossible times or counts is cleared.  It never makes a copy invalid —
 * the history describes the volume, the volume does not depend on it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

static const char *read_copy(struct fsck *c, unsigned i, struct ffs_super *sb)
{
	int rc = ffs_meta_read_check(c->fs, ffs_sb_block[i], FFS_B_SUPER, sb, true);

	if (rc == -EBADMSG)
		return "no mirror copy passes its checksum";
	if (rc < 0)
		return "cannot be read";
	return ffs_check_super_problem(c->fs, sb);
}

/* The label prefixes every line: spaces left out, anything unprintable
 * escaped as \xNN (mkfs refuses such labels; an old or damaged one may
 * still carry them). */
static void set_label(struct fsck *c, const struct ffs_super *sb)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(sb->label) && sb->label[i] && n + 5 < sizeof(c->label); i++) {
		unsigned char ch = (unsigned char)sb->label[i];

		if (ch > 0x20 && ch < 0x7f && ch != '\\')
			c->label[n++] = (char)ch;
		else if (ch != ' ')
			n += (size_t)snprintf(c->label + n, sizeof(c->label) - n, "\\x%02x", ch);
	}
	c->label[n] = '\0';
	if (!n)
		snprintf(c->label, sizeof(c->label), "framefs");
}

/* Write both groups of copies (the other group than the newest first). */
static int rewrite_copies(struct fsck *c)
{
	int rc = ffs_super_write(c->fs);

	if (rc == 0)
		rc = ffs_super_write(c->fs);
	if (rc < 0)
		fsck_operr(c, rc, "cannot rewrite the superblock");
	return rc;
}

/* No copy is valid: rebuild one from the array and the layout. */
static int rebuild(struct fsck *c, const char *const why[FFS_SB_COPIES], uint64_t generation,
		   bool misfit, bool grow)
{
	struct ffs_super *sb = ff_alloc_aligned(FFS_BLOCK);
	struct ffs_check_rebuilt info;
	char copies[512], layout[160];
	size_t n = 0;
	bool yes;
	int rc;

	if (!sb)
		return -ENOMEM;
	/* "copies A, B, C, D: why" — copies with the same reason together */
	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		unsigned k = 0;
		bool done = false;

		for (unsigned j = 0; j < i; j++)
			done |= !strcmp(why[j], why[i]);
		if (done)
			continue;
		for (unsigned j = i; j < FFS_SB_COPIES; j++)
			k += !strcmp(why[j], why[i]);
		n += (size_t)snprintf(copies + n, sizeof(copies) - n, "%s%s", n ? "; " : "",
				      k > 1 ? "copies " : "copy ");
		for (unsigned j = i, m = 0; j < FFS_SB_COPIES; j++)
			if (!strcmp(why[j], why[i]))
				n += (size_t)snprintf(copies + n, sizeof(copies) - n, "%s%c",
						      m++ ? ", " : "", ffs_sb_name[j]);
		n += (size_t)snprintf(copies + n, sizeof(copies) - n, ": %s", why[i]);
	}
	if (misfit) { /* rebuilt from the array, it would follow what may be the array's error */
		fsck_fix_problem(c, PR_1_NO_SUPER, &(struct pctx){ .str = copies });
		fsck_operr(c, -EUCLEAN, "the filesystem superblock does not fit this array: check the "
			   "members given (framefs-admin status); not rebuilding it");
		free(sb);
		return -EUCLEAN;
	}
	if (grow) { /* the grow's records are the superblock's alone: a rebuilt one drops them */
		fsck_fix_problem(c, PR_1_NO_SUPER, &(struct pctx){ .str = copies });
		fsck_operr(c, -EUCLEAN, "the volume is in the middle of a grow (or its array was grown "
			   "under it): a superblock rebuilt from the array would lose the grow and the "
			   "rows still in the old geometry; not rebuilding it");
		free(sb);
		return -EUCLEAN;
	}
	rc = ffs_check_rebuild_super(c->fs, sb, generation, &info);
	if (rc == -ENOENT) {
		char what[256];

		if (info.grown_why)
			snprintf(what, sizeof(what), "no valid framefs superblock on this array, which "
				 "was grown since mkfs, and %s: not rebuilding it (it would pair rows "
				 "with checksums not theirs)", info.grown_why);
		else
			snprintf(what, sizeof(what), "no valid framefs superblock on this array, and no "
				 "framefs metadata layout to rebuild one from");
		fsck_fix_problem(c, PR_1_NO_SUPER, &(struct pctx){ .str = copies });
		fsck_operr(c, -EUCLEAN, what);
		free(sb);
		return -EUCLEAN;
	}
	if (rc < 0) {
		fsck_operr(c, rc, "cannot read the metadata to rebuild the superblock");
		free(sb);
		return rc;
	}
	snprintf(layout, sizeof(layout), "%s: %llu inodes, a %llu-block journal%s",
		 info.default_layout ? "mkfs's default" : "found on disk",
		 (unsigned long long)info.ninodes, (unsigned long long)info.journal_blocks,
		 info.grown ? ", the records of the grow since mkfs" : "");
	set_label(c, sb);
	yes = fsck_fix_problem(c, PR_1_SB_REBUILD, &(struct pctx){ .str = copies, .str2 = layout });
	/* declined (-n, or -p which stops here), the check goes on with it in memory */
	rc = ffs_check_start(c->fs, sb, 0);
	free(sb);
	if (rc < 0) {
		fsck_operr(c, rc, "cannot set up the metadata cache");
		return rc;
	}
	c->sb = ffs_tools_super(c->fs);
	c->sb_rebuilt = true;
	return yes ? rewrite_copies(c) : 0;
}

static int choose_super(struct fsck *c, struct ffs_super *copy)
{
	const char *why[FFS_SB_COPIES];
	uint64_t newest = 0, gen;
	bool rewrite = false, all4, misfit = false, grow = false;
	int best = -1, rc;

	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		why[i] = read_copy(c, i, &copy[i]);
		gen = ff_le64(copy[i].generation);
		if (!why[i] && (best < 0 || gen > ff_le64(copy[best].generation)))
			best = (int)i;
		/* a rebuilt superblock must be newer than any copy that may turn up */
		if (ff_le64(copy[i].magic) == FFS_SB_MAGIC && gen > newest)
			newest = gen;
		/* a whole superblock of another array, version, geometry or grow:
		 * what is wrong may be the array (its member superblocks), not the
		 * copies */
		misfit |= ffs_check_super_misfit(why[i]);
		/* a grow under way: its records (format.h) are the superblock's
		 * alone, and a superblock rebuilt from the array would drop them,
		 * leaving rows in the old geometry that nothing names */
		if (why[i] && ff_le64(copy[i].magic) == FFS_SB_MAGIC &&
		    ff_le32(copy[i].version) >= FFS_VERSION_GROWN &&
		    ff_le32(copy[i].grow.state) != FFS_GROW_NONE && strcmp(why[i], "cannot be read") &&
		    strcmp(why[i], "no mirror copy passes its checksum"))
			grow = true;
	}
	if (best < 0)
		return rebuild(c, why, newest + 1, misfit,
			       grow || ff_raid_geom_old(ffs_raid(c->fs)) != NULL);
	set_label(c, &copy[best]);
	/* the other group is the one the next superblock write replaces */
	rc = ffs_check_start(c->fs, &copy[best], !(best % 2));
	if (rc < 0) {
		fsck_operr(c, rc, "cannot set up the metadata cache");
		return rc;
	}
	c->sb = ffs_tools_super(c->fs);
	all4 = ff_le32(c->sb->flags) & FFS_F_SB_COPIES4;
	gen = ff_le64(copy[best].generation);
	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		uint64_t g = ff_le64(copy[i].generation);

		if ((int)i == best || (i >= 2 && !all4 && why[i]))
			continue; /* made before copies C and D: the next writes add them */
		if (why[i])
			rewrite |= fsck_fix_problem(c, PR_1_SB_COPY_BAD,
					       &(struct pctx){ .str = (char[]){ ffs_sb_name[i], 0 },
							       .blk = ffs_sb_block[i], .str2 = why[i] });
		else if (g + 1 < gen)
			rewrite |= fsck_fix_problem(c, PR_1_SB_COPY_OLD,
					       &(struct pctx){ .str = (char[]){ ffs_sb_name[i], 0 },
							       .blk = ffs_sb_block[i], .num = g, .num2 = gen });
	}
	return rewrite ? rewrite_copies(c) : 0;
}

static int journal(struct fsck *c)
{
	unsigned replayed = 0;
	bool pending;
	int rc = ffs_check_journal_pending(c->fs, &pending);

	if (rc < 0) {
		fsck_operr(c, rc, "cannot read the journal");
		return rc;
	}
	if (!pending || !fsck_fix_problem(c, PR_1_JOURNAL_PENDING, &(struct pctx){ 0 }))
		return 0;
	rc = ffs_check_journal_replay(c->fs, &replayed);
	if (rc == -EUCLEAN || rc == -EBADMSG) {
		if (!fsck_fix_problem(c, PR_1_JOURNAL_BAD, &(struct pctx){ .str = strerror(-rc) }))
			return 0;
		rc = ffs_check_journal_discard(c->fs);
	}
	if (rc < 0)
		fsck_operr(c, rc, "cannot replay the journal");
	return rc;
}

/* Patch batches a commit listed but no commit holds (fs/data/patch.c): laid
 * over their files before anything else is checked, as a mount would, or
 * the next commit (any repair's) would forget them and fsync'd data with
 * them; pass 2 then finds them in the files' patch trees. */
static int patches(struct fsck *c)
{
	unsigned n = 0, replayed = 0;
	int rc = ffs_check_patch_pending(c->fs, &n);

	if (rc < 0) {
		fsck_operr(c, rc, "cannot read the patch batches");
		return rc;
	}
	if (!n || !fsck_fix_problem(c, PR_1_PATCH_PENDING, &(struct pctx){ .num = n }))
		return 0;
	rc = ffs_check_patch_replay(c->fs, &replayed);
	if (rc == 0)
		rc = fsck_commit(c, true);
	if (rc < 0)
		fsck_operr(c, rc, "cannot lay the patch batches over their files");
	return rc;
}

/* Judge every record first, then clear: clearing one changes which are the
 * eight newest, and the second run must find what the first left sane. */
static void scrub_history(struct fsck *c)
{
	const char *why[FFS_SB_SCRUB_RECORDS];

	for (unsigned i = 0; i < FFS_SB_SCRUB_RECORDS; i++)
		why[i] = ffs_scrub_record_problem(c->sb, i);
	for (unsigned i = 0; i < FFS_SB_SCRUB_RECORDS; i++)
		if (why[i] && fsck_fix_problem(c, PR_1_SCRUB_RECORD, &(struct pctx){
				.num = ff_le64(c->sb->scrub_history.rec[i].seq), .num2 = i,
				.str = why[i] }))
			ffs_tools_set_scrub_record(c->fs, i, NULL);
}

int fsck_pass1(struct fsck *c)
{
	struct ffs_super *copy = ff_alloc_aligned(FFS_SB_COPIES * FFS_BLOCK);
	int rc = copy ? 0 : -ENOMEM;

	fsck_pass_start(c, 1, "Checking superblocks and the journal");
	if (rc == 0)
		rc = choose_super(c, copy);
	free(copy);
	if (rc == 0)
		rc = journal(c);
	if (rc == 0)
		scrub_history(c);
	if (rc == 0 && (rc = ffs_check_load_bitmaps(c->fs)) < 0)
		fsck_operr(c, rc, "cannot load the allocation bitmaps");
	if (rc == 0)
		rc = patches(c);
	if (rc == 0 && c->sb_rebuilt) /* the table is initialised at least as far as it is used */
		ffs_check_hwm_from_bitmap(c->fs);
	if (rc == 0 && (rc = fsck_state_alloc(c)) < 0)
		fsck_operr(c, rc, "out of memory for the checker's maps");
	return rc;
}
