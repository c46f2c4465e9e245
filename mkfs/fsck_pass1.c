/* SPDX-License-Identifier: MIT */
/*
 * Pass 1: the two superblock copies and the journal.
 *
 * Each copy is read (any good mirror copy of its block: a bad mirror copy
 * is pass 5's business) and checked against the array: magic, version,
 * uuid, geometry, and a layout equal to what mkfs computes for this array
 * with the copy's own inode and journal sizes.  The newest valid copy, by
 * generation, is the superblock; an invalid copy is rewritten from it.
 * Then, as e2fsck does, committed journal transactions are replayed before
 * anything else is looked at.
 */
#include <errno.h>
#include <string.h>

#include "mkfs/fsck.h"

static const uint64_t sb_block[2] = { FFS_SB_BLOCK_A, FFS_SB_BLOCK_B };

static const char *read_copy(struct fsck *c, unsigned i, struct ffs_super *sb)
{
	int rc = meta_read_check(c->fs, sb_block[i], FFS_B_SUPER, sb, true);

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

static int choose_super(struct fsck *c, struct ffs_super *copy[2])
{
	const char *why[2];
	unsigned best;
	int rc;

	why[0] = read_copy(c, 0, copy[0]);
	why[1] = read_copy(c, 1, copy[1]);
	if (why[0] && why[1]) {
		fix_problem(c, PR_1_NO_SUPER, &(struct pctx){ .str = why[0], .str2 = why[1] });
		fsck_operr(c, -EUCLEAN, "no valid framefs superblock on this array");
		return -EUCLEAN;
	}
	best = why[0] || (!why[1] && ff_le64(copy[1]->generation) > ff_le64(copy[0]->generation));
	set_label(c, copy[best]);
	/* the older copy is the one the next superblock write replaces */
	rc = ffs_check_start(c->fs, copy[best], !best);
	if (rc < 0) {
		fsck_operr(c, rc, "cannot set up the metadata cache");
		return rc;
	}
	c->sb = c->fs->sb;
	if (why[!best] && fix_problem(c, PR_1_SB_COPY_BAD,
				      &(struct pctx){ .str = best ? "A" : "B", .blk = sb_block[!best],
						      .str2 = why[!best] })) {
		c->fs->sb_next_copy = !best;
		rc = super_write(c->fs);
		if (rc < 0)
			fsck_operr(c, rc, "cannot rewrite the superblock");
	}
	return rc;
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
	if (!pending || !fix_problem(c, PR_1_JOURNAL_PENDING, &(struct pctx){ 0 }))
		return 0;
	rc = ffs_check_journal_replay(c->fs, &replayed);
	if (rc == -EUCLEAN || rc == -EBADMSG) {
		if (!fix_problem(c, PR_1_JOURNAL_BAD, &(struct pctx){ .str = strerror(-rc) }))
			return 0;
		rc = ffs_check_journal_discard(c->fs);
	}
	if (rc < 0)
		fsck_operr(c, rc, "cannot replay the journal");
	return rc;
}

int fsck_pass1(struct fsck *c)
{
	struct ffs_super *copy[2] = { ff_alloc_aligned(FFS_BLOCK), ff_alloc_aligned(FFS_BLOCK) };
	int rc = copy[0] && copy[1] ? 0 : -ENOMEM;

	fsck_pass_start(c, 1, "Checking superblocks and the journal");
	if (rc == 0)
		rc = choose_super(c, copy);
	free(copy[0]);
	free(copy[1]);
	if (rc == 0)
		rc = journal(c);
	if (rc == 0 && (rc = ffs_check_load_bitmaps(c->fs)) < 0)
		fsck_operr(c, rc, "cannot load the allocation bitmaps");
	if (rc == 0 && (rc = fsck_state_alloc(c)) < 0)
		fsck_operr(c, rc, "out of memory for the checker's maps");
	return rc;
}
