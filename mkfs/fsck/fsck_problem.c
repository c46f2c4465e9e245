/* SPDX-License-Identifier: MIT */
/*
 * The problem table: every inconsistency fsck.framefs knows, with its
 * message, the repair it offers and how serious that repair is.  Every pass
 * reports through fsck_fix_problem(), so the wording, the answer (-n, -y, -p or
 * asked) and the exit code are decided in one place.  Messages name inodes
 * by number, with the path beside it where fsck_path finds one, and blocks
 * by number — no pointers or times — so that the test corpus can compare
 * output exactly.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mkfs/fsck/fsck.h"

#define P(c, n, s, m, f) [c] = { c, n, s, m, f }

const struct problem_def fsck_problems[PR_COUNT] = {
	P(PR_1_SB_COPY_BAD, 0x101, SEV_MINOR, "Superblock copy {str} (block {blk}) is damaged: {str2}",
	  "Rewrite it from the newest valid copy"),
	P(PR_1_SB_COPY_OLD, 0x105, SEV_MINOR,
	  "Superblock copy {str} (block {blk}) is out of date: generation {num}, the newest is {num2}",
	  "Rewrite it from the newest valid copy"),
	P(PR_1_NO_SUPER, 0x102, SEV_FATAL, "No valid superblock ({str})", NULL),
	P(PR_1_SB_REBUILD, 0x106, SEV_MAJOR,
	  "No valid superblock ({str}); the member superblocks and the metadata on disk give its "
	  "layout ({str2})", "Rebuild the superblock"),
	P(PR_1_JOURNAL_PENDING, 0x103, SEV_MINOR,
	  "The journal holds committed transactions that are not yet in place", "Replay the journal"),
	P(PR_1_JOURNAL_BAD, 0x104, SEV_MAJOR, "The journal cannot be replayed ({str})",
	  "Discard the journal"),
	P(PR_1_PATCH_PENDING, 0x108, SEV_MINOR,
	  "{num} patch batch(es) written after the last commit are not yet laid over their files "
	  "(a mount lays them over)", "Lay them over now"),
	P(PR_1_SCRUB_RECORD, 0x107, SEV_MINOR,
	  "Scrub history record {num} (superblock slot {num2}) is nonsense: {str}", "Clear it"),
	P(PR_2_HWM, 0x201, SEV_MINOR, "The inode table high-water mark is {num}, should be {num2}",
	  "Fix it"),
	P(PR_2_ITABLE_BAD, 0x202, SEV_MAJOR,
	  "Inode table block {blk} (inodes {num}-{num2}) has no readable copy", "Reinitialise it"),
	P(PR_2_SLOT_INO, 0x203, SEV_MAJOR, "The table slot of inode {ino} holds inode number {num}",
	  "Clear the slot"),
	P(PR_2_ROOT_NOT_DIR, 0x20f, SEV_MAJOR, "The root inode is a {str}, not a directory",
	  "Clear it"),
	P(PR_2_BAD_MODE, 0x204, SEV_MAJOR, "Inode {ino} has an invalid file type (mode {onum})",
	  "Clear the inode"),
	P(PR_2_BAD_FLAGS, 0x205, SEV_MINOR, "Inode {ino} ({str}) has invalid flags {xnum}",
	  "Clear the invalid flags"),
	P(PR_2_FIELD, 0x206, SEV_MINOR, "Inode {ino} ({str}) has {str2} {num}, should be {num2}",
	  "Fix it"),
	P(PR_2_EXTENT_BAD, 0x207, SEV_MAJOR,
	  "Inode {ino}: the extent at file stripe {num} (data stripe {blk}, {num2} stripes) {str}",
	  "Remove it"),
	P(PR_2_EXTENTS_MANY, 0x208, SEV_MAJOR, "Inode {ino} has too many bad extents",
	  "Clear the inode"),
	P(PR_2_TREE_BAD, 0x209, SEV_MAJOR, "Inode {ino} ({str}): B+tree node {blk} {str2}",
	  "Rebuild the tree from its readable nodes"),
	P(PR_2_XATTR_BAD, 0x20a, SEV_MAJOR, "Inode {ino}: extended attribute block {blk} {str}",
	  "Drop the extended attributes"),
	P(PR_2_SYMLINK_BAD, 0x20b, SEV_MAJOR, "Symbolic link inode {ino}: {str}", "Clear the inode"),
	P(PR_2_DUP_STRIPES, 0x20c, SEV_MAJOR,
	  "Inode {ino} maps {num} data stripe(s) that belong to other files (data stripe {blk} "
	  "belongs to inode {ino2})", "Unmap them"),
	P(PR_2_CSUM_OWNER, 0x20d, SEV_MAJOR,
	  "The checksum entry of data stripe {blk} names inode {num} file stripe {num2}{str}, but "
	  "the stripe holds file stripe {num3}{str2} of inode {ino}", "Fix the entry"),
	P(PR_2_CSUM_BLOCK, 0x20e, SEV_MAJOR, "Checksum table block {blk} has no readable copy",
	  "Rebuild it from the extent maps and the data"),
	P(PR_2_VERSION, 0x210, SEV_MINOR,
	  "The volume keeps xattr values in value blocks but says version {num}, should be {num2}",
	  "Fix it"),
	P(PR_2_SMALL_TREE, 0x211, SEV_MAJOR,
	  "Inode {ino} is marked as a small file ({num} data blocks) and as mapped by a B+tree "
	  "(root {blk})", "Drop the small-file blocks and keep the B+tree"),
	P(PR_2_SMALL_BLOCK, 0x212, SEV_MAJOR,
	  "Small file {ino} ({num3} bytes): data block {num} (metadata block {blk}) {str}; the "
	  "blocks before it hold {num2} bytes", "Truncate the file to them"),
	P(PR_2_SMALL_COUNT, 0x213, SEV_MAJOR,
	  "Small file {ino} ({num3} bytes) lists {num} data blocks, more than the {num2} a small "
	  "file holds on this volume", "Truncate the file to that many"),
	P(PR_2_PCSUM_OWNER, 0x214, SEV_MAJOR,
	  "The small-data checksum entry of metadata block {blk} names inode {num}, but small file "
	  "{ino} holds the block and its data matches the entry's checksum", "Fix the entry"),
	P(PR_2_PCSUM_BLOCK, 0x215, SEV_MAJOR,
	  "Small-data checksum table block {blk} has no readable copy",
	  "Rebuild it from the small files and their data"),
	P(PR_2_PCSUM_STRAY, 0x216, SEV_MINOR,
	  "The small-data checksum table names an owner for {num} block(s) no small file holds "
	  "(metadata block {blk}: inode {num2})", "Clear those entries"),
	P(PR_2_TAIL_BAD, 0x217, SEV_MAJOR,
	  "Inode {ino}: the tail at file stripe {num} (data stripe {blk}, {num2} rows from row "
	  "{num3}) {str}", "Remove it"),
	P(PR_2_TAIL_DUP, 0x218, SEV_MAJOR,
	  "Inode {ino}: the tail at file stripe {num} ({num2} rows from row {num3} of data stripe "
	  "{blk}) {str} inode {ino2}", "Unmap it"),
	P(PR_2_TAIL_STRIPE, 0x219, SEV_MAJOR,
	  "Inode {ino} maps data stripe {blk} whole (file stripe {num}), but it is a tail stripe "
	  "holding {num2} tail(s) and patch(es) of files, one of inode {ino2}", "Unmap it"),
	P(PR_2_TAIL_CSUM, 0x21a, SEV_MAJOR,
	  "The checksum entry of data stripe {blk} {str}, but {num} tail(s) and patch(es) of "
	  "files lie there, one of inode {ino}", "Rebuild the entry from the tails and the data"),
	P(PR_2_TAIL_LIVE, 0x21b, SEV_MINOR,
	  "The checksum entry of tail stripe {blk} counts {num} tail(s) and patch(es) in it, {num2} "
	  "point there",
	  "Fix the count"),
	P(PR_2_TAIL_LEAKED, 0x21c, SEV_MINOR,
	  "Tail stripe {blk} ({num} rows written) holds no tail or patch any more: the daemon keeps an "
	  "emptied tail stripe while it may append to it, so this is the normal aftermath of a "
	  "crash", "Free it"),
	P(PR_2_PATCH_BAD, 0x21d, SEV_MAJOR,
	  "Inode {ino}: the patch of {num2} block(s) from block {num3} of file stripe {num} (tail "
	  "stripe {blk}) {str}", "Remove it"),
	P(PR_2_PATCH_DUP, 0x21e, SEV_MAJOR,
	  "Inode {ino}: the patch of {num2} block(s) from block {num3} of file stripe {num} (tail "
	  "stripe {blk}) {str} inode {ino2}", "Remove it"),
	P(PR_2_PATCH_ROOT, 0x21f, SEV_MAJOR, "Inode {ino} ({str}) has a patch tree root of {blk}, {str2}",
	  "Drop the patch tree"),
	P(PR_2_GEO_MIXED, 0x220, SEV_MAJOR,
	  "Inode {ino} maps {num} data stripe(s) in another geometry than its first stripe's (its "
	  "file is laid over {num2} members, data stripe {blk} over {num3}): those read wrong, and "
	  "no repair can place their bytes; left as they are", NULL),
	P(PR_3_ROOT_BAD, 0x301, SEV_MAJOR, "The root inode {str}", "Recreate the root directory"),
	P(PR_3_ENTRY_BAD, 0x302, SEV_MAJOR, "Directory {ino} has a malformed entry at position {num}",
	  "Remove it"),
	P(PR_3_ENTRY_NAME, 0x303, SEV_MAJOR, "Entry '{str}' in directory {ino} has an invalid name",
	  "Remove it"),
	P(PR_3_ENTRY_HASH, 0x304, SEV_MINOR,
	  "Entry '{str}' in directory {ino} is stored at the wrong position", "Move it"),
	P(PR_3_ENTRY_DUP, 0x305, SEV_MAJOR, "Directory {ino} has a second entry named '{str}'",
	  "Remove it"),
	P(PR_3_ENTRY_FREE, 0x306, SEV_MAJOR,
	  "Entry '{str}' in directory {ino} names inode {ino2}, which is not in use", "Remove it"),
	P(PR_3_ENTRY_TYPE, 0x307, SEV_MINOR,
	  "Entry '{str}' in directory {ino} has type {str2}, but inode {ino2} is a {str3}",
	  "Fix the type"),
	P(PR_3_DIR_LINK, 0x308, SEV_MAJOR,
	  "Entry '{str}' in directory {ino} is a second link to directory {ino2}", "Remove it"),
	P(PR_3_UNREACHABLE, 0x309, SEV_MAJOR, "Directory {ino} is not connected to the root ({str})",
	  "Reconnect it to /lost+found"),
	P(PR_3_NO_LPF, 0x30a, SEV_MAJOR, "There is no /lost+found directory", "Create it"),
	P(PR_3_UNATTACHED, 0x30b, SEV_MAJOR, "Inode {ino} ({str}, {num} bytes) is in no directory",
	  "Reconnect it to /lost+found"),
	P(PR_3_UNLINKED, 0x30c, SEV_MAJOR,
	  "Inode {ino} ({str}) has no links and is not on the orphan list", "Clear the inode"),
	P(PR_3_DOTDOT, 0x30d, SEV_MINOR, "'..' of directory {ino} is {num}, should be {num2}",
	  "Fix it"),
	P(PR_3_DIR_SIZE, 0x30e, SEV_MINOR, "Directory {ino} counts {num} entries, it has {num2}",
	  "Fix the count"),
	P(PR_4_NLINK, 0x401, SEV_MINOR, "Inode {ino} ({str}) has link count {num}, should be {num2}",
	  "Fix it"),
	P(PR_4_ORPHANS, 0x402, SEV_MINOR, "The orphan list is wrong: {str}", "Rebuild it"),
	P(PR_4_BITMAP_BLOCK, 0x403, SEV_MINOR, "{str} bitmap block {blk} has no readable copy",
	  "Rewrite it"),
	P(PR_4_BITMAP_DIFF, 0x404, SEV_MINOR, "{str} bitmap differences: {str2}", "Fix them"),
	P(PR_4_OLD_ROWS_BLOCK, 0x406, SEV_MAJOR,
	  "Old-rows bitmap block {blk} (a grow under way) has no readable copy: nothing says which of "
	  "its rows are still in the old geometry", NULL),
	P(PR_4_LEFT, 0x405, SEV_MAJOR, "{num} problem(s) remain after the repairs", NULL),
	P(PR_5_COPY_BAD, 0x501, SEV_MINOR,
	  "Metadata block {blk} ({str}): {num} of {num2} copies fail their checksum",
	  "Rewrite them from a good copy"),
	P(PR_5_DATA_BAD, 0x502, SEV_MINOR,
	  "Data stripe {blk} chunk {num} (inode {ino}, file stripe {num2}{str}) fails its checksum",
	  "Rebuild it from parity"),
	P(PR_5_DATA_LOST, 0x503, SEV_MAJOR,
	  "Data stripe {blk} chunk {num} (inode {ino}, file stripe {num2}{str}) fails its checksum "
	  "and cannot be rebuilt from parity", NULL),
	P(PR_5_CSUM_WRONG, 0x504, SEV_MAJOR,
	  "Data stripe {blk} chunk {num} (inode {ino}, file stripe {num2}{str}) agrees with parity "
	  "but not with its checksum", "Fix the checksum"),
};

/* Names print with anything unprintable escaped, so output stays one line. */
static void put_str(const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x20 || ch >= 0x7f || ch == '\\')
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
}

/* An inode: its number, and its path in quotes where one is found. */
static void put_ino(struct fsck *c, uint64_t ino)
{
	char buf[4096];
	const char *path = fsck_path(c, ino, buf, sizeof(buf));

	printf("%" PRIu64, ino);
	if (path) {
		printf(" '");
		put_str(path);
		putchar('\'');
	}
}

static bool put_token(struct fsck *c, const char *tok, size_t len, const struct pctx *p)
{
	static const struct { const char *name; size_t off; } nums[] = {
		{ "ino", offsetof(struct pctx, ino) },   { "ino2", offsetof(struct pctx, ino2) },
		{ "blk", offsetof(struct pctx, blk) },   { "num", offsetof(struct pctx, num) },
		{ "num2", offsetof(struct pctx, num2) }, { "num3", offsetof(struct pctx, num3) },
	};

	for (size_t i = 0; i < FF_ARRAY_SIZE(nums); i++)
		if (strlen(nums[i].name) == len && memcmp(tok, nums[i].name, len) == 0) {
			uint64_t v;

			memcpy(&v, (const char *)p + nums[i].off, sizeof(v));
			if (nums[i].name[0] == 'i') /* ino, ino2 */
				put_ino(c, v);
			else
				printf("%" PRIu64, v);
			return true;
		}
	if (len == 4 && memcmp(tok, "onum", 4) == 0)
		printf("0%" PRIo64, p->num);
	else if (len == 4 && memcmp(tok, "xnum", 4) == 0)
		printf("0x%" PRIx64, p->num);
	else if (len == 3 && memcmp(tok, "str", 3) == 0)
		put_str(p->str);
	else if (len == 4 && memcmp(tok, "str2", 4) == 0)
		put_str(p->str2);
	else if (len == 4 && memcmp(tok, "str3", 4) == 0)
		put_str(p->str3);
	else
		return false;
	return true;
}

static void put_msg(struct fsck *c, const char *m, const struct pctx *p)
{
	while (*m) {
		const char *end = *m == '{' ? strchr(m, '}') : NULL;

		if (end && put_token(c, m + 1, (size_t)(end - m - 1), p)) {
			m = end + 1;
			continue;
		}
		putchar(*m++);
	}
}

static bool ask(void)
{
	char line[32];

	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return false;
	return line[0] == 'y' || line[0] == 'Y';
}

bool fsck_fix_problem(struct fsck *c, enum problem code, const struct pctx *p)
{
	const struct problem_def *d = &fsck_problems[code];
	bool yes = false;

	FF_ASSERT(code < PR_COUNT && d->code == code);
	if (c->quiet) {
		c->census_left++;
		return false;
	}
	if (c->stop)
		return false;
	if (c->mode == FSCK_PREEN) {
		printf("%s: ", c->label);
		put_msg(c, d->msg, p);
		if (d->sev == SEV_MINOR && d->fix) {
			printf(".  FIXED.\n");
			yes = true;
		} else {
			printf(".\n\n%s: UNEXPECTED INCONSISTENCY; RUN %s MANUALLY.\n\t(i.e., without -p)\n",
			       c->label, FSCK_NAME);
			c->stop = true;
		}
	} else {
		put_msg(c, d->msg, p);
		if (!d->fix || d->sev == SEV_FATAL) {
			printf(".\n");
		} else {
			printf(".  %s? ", d->fix);
			if (c->mode == FSCK_ASK)
				yes = ask();
			else
				yes = c->mode == FSCK_YES;
			if (c->mode != FSCK_ASK)
				printf("%s\n", yes ? "yes" : "no");
		}
	}
	if (yes) {
		c->fixed++;
		c->written = true;
		if (c->pass <= 3)
			c->changed = true;
	} else {
		c->unfixed++;
	}
	return yes;
}

void fsck_operr(struct fsck *c, int rc, const char *what)
{
	if (!c->operr) {
		c->operr = rc < 0 ? rc : -EIO;
		fflush(stdout);
		if (rc == -EUCLEAN) /* damage the check cannot get past: the message says it all */
			fprintf(stderr, "%s: %s\n", FSCK_NAME, what);
		else
			fprintf(stderr, "%s: %s: %s\n", FSCK_NAME, what, strerror(rc < 0 ? -rc : EIO));
	}
}

void fsck_pass_start(struct fsck *c, int pass, const char *title)
{
	c->pass = pass;
	if (!c->quiet && c->mode != FSCK_PREEN && !c->stop)
		printf("Pass %d: %s\n", pass, title);
}
