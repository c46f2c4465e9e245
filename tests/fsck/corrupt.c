/* SPDX-License-Identifier: MIT */
/*
 * ffsck-corrupt: damage one thing in a corpus volume (see image.c).
 *
 *   ffsck-corrupt ACTION [ARG...] -- MEMBER...
 *
 * Most damage is written through the library itself (consistent blocks
 * with inconsistent contents, committed through the journal as any change
 * is); checksum damage is written raw, to every mirror copy of a block or,
 * straight to one member, to one copy or one data chunk (garbage, or a few
 * bytes flipped).  Paths name files of the corpus tree; I is the index of a
 * block in a small file's list.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/volume/check.h"

struct tool {
	struct ffs *fs;
	bool finish;             /* write the superblock (journal tail) at the end */
	/* raw damage to one member, applied after the array is closed */
	char member[FF_MEMBERS_MAX][PATH_MAX];
	uint64_t member_off[FF_MEMBERS_MAX];
	unsigned nraw;
	bool raw_zero;           /* zeros instead of garbage */
	bool raw_flip;           /* a few bytes flipped instead of garbage */
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "ffsck-corrupt: %s: %s\n", what, rc ? strerror(rc < 0 ? -rc : rc) : "failed");
	exit(2);
}

static void garbage(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		((uint8_t *)buf)[i] = (uint8_t)x;
	}
}

static void tool_open(struct tool *t, const char *const *paths, unsigned n)
{
	struct ffs_super *sb = ff_alloc_aligned(FFS_SB_COPIES * FFS_BLOCK);
	struct ff_err err = { "" };
	int best = -1;
	bool pending;
	int rc = ffs_check_open(paths, n, false, 0, &t->fs, &err);

	if (rc < 0) {
		fprintf(stderr, "ffsck-corrupt: %s\n", err.msg);
		exit(2);
	}
	for (unsigned i = 0; i < FFS_SB_COPIES; i++)
		if (ffs_meta_read_check(t->fs, ffs_sb_block[i], FFS_B_SUPER, &sb[i], true) == 0 &&
		    !ffs_check_super_problem(t->fs, &sb[i]) &&
		    (best < 0 || ff_le64(sb[i].generation) > ff_le64(sb[best].generation)))
			best = (int)i;
	if (best < 0)
		die("no valid superblock", -EINVAL);
	if ((rc = ffs_check_start(t->fs, &sb[best], !(best % 2))) < 0 ||
	    (rc = ffs_check_journal_pending(t->fs, &pending)) < 0 ||
	    (rc = ffs_check_load_bitmaps(t->fs)) < 0)
		die("open", rc);
	free(sb);
	t->finish = true;
}

static uint64_t lookup(struct tool *t, const char *path)
{
	char buf[PATH_MAX], *save = NULL;
	uint64_t ino = FFS_ROOT_INO;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strtok_r(buf, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		struct finode *dir;
		uint8_t type;
		int rc = ffs_iget(t->fs, ino, &dir);

		if (rc == 0)
			rc = ffs_dir_lookup(t->fs, dir, p, &ino, &type);
		if (rc < 0)
			die(path, rc);
		ffs_iput(t->fs, dir);
	}
	return ino;
}

static struct finode *inode(struct tool *t, const char *path)
{
	struct finode *fi;
	int rc = ffs_iget(t->fs, lookup(t, path), &fi);

	if (rc < 0)
		die(path, rc);
	ffs_tools_ikeep(t->fs, fi); /* never freed by ffs_iput here */
	return fi;
}

static void commit(struct tool *t, struct finode *fi)
{
	int rc = fi ? ffs_istore(t->fs, fi) : 0;

	if (rc == 0)
		rc = ffs_journal_commit(t->fs);
	if (rc < 0)
		die("commit", rc);
}

/* A free inode number well above every used one. */
static uint64_t free_ino(struct tool *t)
{
	uint64_t end = ffs_tools_inodes_end(t->fs);

	return (end ? end - 1 : 0) + 10;
}

static le32 first_extent_flags(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);

	if (ff_le32(fi->d.flags) & (FFS_I_BTREE | FFS_I_SMALL) || !fi->d.nextents)
		die("not a file with an inline extent map", -EINVAL);
	return fi->d.u.extents[0].flags;
}

static uint64_t first_stripe(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);

	if (ff_le32(fi->d.flags) & (FFS_I_BTREE | FFS_I_SMALL) || !fi->d.nextents)
		die("not a file with an inline extent map", -EINVAL);
	return ff_le64(fi->d.u.extents[0].pstripe);
}

/* Write a garbage image (zeros with seed 0) over every copy of block no. */
static void raw_all(struct tool *t, uint64_t no, uint64_t seed)
{
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	int rc;

	if (seed)
		garbage(buf, FFS_BLOCK, seed);
	else
		memset(buf, 0, FFS_BLOCK);
	rc = ffs_meta_write_raw(t->fs, no, buf, 1);
	if (rc == 0)
		rc = ff_raid_flush(ffs_raid(t->fs));
	free(buf);
	if (rc < 0)
		die("raw write", rc);
}

/* Where copy `copy` (0-based) of META block no lives — the mapping of
 * raid/meta.c's meta_member(), checked against a read of that copy. */
static void raw_one_copy(struct tool *t, uint64_t no, unsigned copy)
{
	const struct ff_geom *g = ffs_tools_geom(t->fs);
	uint64_t chunk = no * FFS_BLOCK / FF_META_CHUNK, idx = chunk * g->meta_copies + copy;
	uint64_t off = g->meta_offset + idx / g->nmembers * FF_META_CHUNK + no * FFS_BLOCK % FF_META_CHUNK;
	struct ff_member *m = ff_raid_member(ffs_raid(t->fs), (unsigned)(idx % g->nmembers));
	uint8_t *want = ff_alloc_aligned(FFS_BLOCK), *have = ff_alloc_aligned(FFS_BLOCK);

	if (!m || ffs_check_read_copy(t->fs, no, copy + 1, want) < 0 ||
	    ff_member_pread(m, have, FFS_BLOCK, off) < 0 || memcmp(want, have, FFS_BLOCK) != 0)
		die("the META mirror layout is not what this tool assumes", -EINVAL);
	snprintf(t->member[t->nraw], sizeof(t->member[0]), "%s", m->path);
	t->member_off[t->nraw++] = off;
	free(want);
	free(have);
}

static void raw_data_chunk(struct tool *t, uint64_t p, unsigned chunk)
{
	const struct ff_geom *g = ffs_tools_geom(t->fs);
	unsigned role = ff_raid_chunk_member(ffs_raid(t->fs), p, chunk);

	snprintf(t->member[t->nraw], sizeof(t->member[0]), "%s",
		 ff_raid_member(ffs_raid(t->fs), role)->path);
	t->member_off[t->nraw++] = g->data_offset + p * g->chunk_bytes;
}

/* After close: garbage straight onto the member (4 KiB at each offset), or
 * in each 4 KiB there a few bytes flipped, other bytes at each offset. */
static void raw_apply(struct tool *t)
{
	uint8_t buf[FFS_BLOCK];

	for (unsigned i = 0; i < t->nraw; i++) {
		off_t off = (off_t)t->member_off[i];
		int fd = open(t->member[i], O_RDWR);

		if (t->raw_zero)
			memset(buf, 0, sizeof(buf));
		else if (!t->raw_flip)
			garbage(buf, sizeof(buf), 77 + i);
		else if (fd < 0 || pread(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
			die(t->member[i], errno);
		for (unsigned k = 0; t->raw_flip && k < 3; k++)
			buf[(100 + 37 * i + 1000 * k) % sizeof(buf)] ^= 0xa5;
		if (fd < 0 || pwrite(fd, buf, sizeof(buf), off) != (ssize_t)sizeof(buf))
			die(t->member[i], errno);
		close(fd);
	}
}

/* ---- the damage ------------------------------------------------------------ */

static void dir_entry_add(struct tool *t, const char *dir, const char *name, uint64_t ino,
			  uint8_t type)
{
	struct finode *d = inode(t, dir);
	int rc = ffs_dir_add(t->fs, d, name, ino, type);

	if (rc < 0)
		die("ffs_dir_add", rc);
	commit(t, NULL);
}

static void root_unlink(struct tool *t, const char *name)
{
	struct finode *root = inode(t, "/");
	int rc = ffs_dir_remove(t->fs, root, name);

	if (rc < 0)
		die("ffs_dir_remove", rc);
	root->d.nlink = ff_cpu_to_le32(ff_le32(root->d.nlink) - 1); /* stays consistent */
	commit(t, root);
}

/* The second child of the root of dir's tree: a leaf of a two-level tree. */
static uint64_t second_leaf(struct tool *t, const char *dir)
{
	struct finode *fi = inode(t, dir);
	struct mbuf *mb;
	uint64_t child;
	int rc = ffs_mb_get(t->fs, ff_le64(fi->d.root), FFS_B_BTREE, &mb);

	if (rc < 0 || ff_le16(((struct ffs_bt_node *)mb->data)->level) != 1)
		die("the directory tree is not two levels deep", rc);
	child = ff_le64(((struct ffs_bt_ptr *)(mb->data + sizeof(struct ffs_bt_node)))[1].child);
	ffs_mb_put(t->fs, mb);
	return child;
}

static uint64_t itable_block(struct tool *t, uint64_t ino)
{
	return ff_le64(ffs_tools_super(t->fs)->itable_start) + ino / FFS_INODES_PER_BLOCK;
}

static void journal_pending(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);
	uint64_t home = itable_block(t, fi->ino);
	uint8_t *old = ff_alloc_aligned(FFS_BLOCK);
	int rc = ffs_meta_read_check(t->fs, home, FFS_B_ITABLE, old, true);

	if (rc < 0)
		die("read", rc);
	fi->d.nlink = ff_cpu_to_le32(7);
	commit(t, fi);
	/* the transaction is committed, but its home block is as before a crash */
	rc = ffs_meta_write_raw(t->fs, home, old, 1);
	free(old);
	if (rc < 0)
		die("write", rc);
	t->finish = false;
}

static void orphan_valid(struct tool *t)
{
	struct stat st;
	uint64_t fh;
	int rc = ffs_create(t->fs, FFS_ROOT_INO, "tmpfile", 0644, 0, 0, O_RDWR, &st, &fh);

	if (rc == 0)
		rc = ffs_unlink(t->fs, FFS_ROOT_INO, "tmpfile"); /* open: it becomes an orphan */
	if (rc < 0)
		die("orphan", rc);
	commit(t, NULL);
}

static void orphan_linked(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);
	struct mbuf *mb;
	int rc = ffs_mb_get(t->fs, FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, &mb);

	if (rc < 0)
		die("orphan block", rc);
	((struct ffs_orphan_block *)mb->data)->head = ff_cpu_to_le64(fi->ino);
	((struct ffs_orphan_block *)mb->data)->count = ff_cpu_to_le64(1);
	ffs_mb_dirty(t->fs, mb);
	ffs_mb_put(t->fs, mb);
	fi->d.flags = ff_cpu_to_le32(ff_le32(fi->d.flags) | FFS_I_ORPHAN);
	commit(t, fi);
}

static void xattr_bad(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);
	struct mbuf *mb;
	int rc = ffs_mb_get(t->fs, ff_le64(fi->d.xattr_block), FFS_B_XATTR, &mb);

	if (rc < 0)
		die("xattr block", rc);
	((struct ffs_xattr_block *)mb->data)->used = ff_cpu_to_le32(5000);
	ffs_mb_dirty(t->fs, mb);
	ffs_mb_put(t->fs, mb);
	commit(t, NULL);
}

/* The file's first value chain cut after its first block (next = 0). */
static void xvalue_bad(struct tool *t, const char *path)
{
	struct finode *fi = inode(t, path);
	const struct ffs_xattr_block *xb;
	struct ffs_xattr_ent e = { 0 };
	struct mbuf *mb;
	size_t pos = 0;
	int rc = ffs_mb_get(t->fs, ff_le64(fi->d.xattr_block), FFS_B_XATTR, &mb);

	if (rc < 0)
		die("xattr block", rc);
	xb = (const struct ffs_xattr_block *)mb->data;
	while (pos < ff_le32(xb->used) && ffs_xattr_parse(xb->data, ff_le32(xb->used), pos, &e) == 0 &&
	       !e.first)
		pos += e.size;
	ffs_mb_put(t->fs, mb);
	if (!e.first)
		die("no xattr value chain", -ENOENT);
	rc = ffs_mb_get(t->fs, e.first, FFS_B_XVALUE, &mb);
	if (rc < 0)
		die("xattr value block", rc);
	((struct ffs_xvalue_block *)mb->data)->next = 0;
	ffs_mb_dirty(t->fs, mb);
	ffs_mb_put(t->fs, mb);
	commit(t, NULL);
}

static void csum_owner(struct tool *t, const char *path)
{
	uint64_t p = first_stripe(t, path);
	uint32_t crc[FF_MEMBERS_MAX], ino, f;
	int rc = ffs_csum_get(t->fs, p, &ino, &f, crc);

	if (rc == 0)
		rc = ffs_csum_set(t->fs, p, ino + 1, f + 5, crc);
	if (rc < 0)
		die("csum", rc);
	commit(t, NULL);
}

static void sb_torn(struct tool *t)
{
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	int rc = ffs_meta_read_check(t->fs, FFS_SB_BLOCK_A, FFS_B_SUPER, buf, true);

	memset(buf + FFS_BLOCK / 2, 0xee, FFS_BLOCK / 2); /* the second half never arrived */
	if (rc == 0)
		rc = ffs_meta_write_raw(t->fs, FFS_SB_BLOCK_A, buf, 1);
	free(buf);
	if (rc < 0)
		die("superblock", rc);
}

/* Superblock copy i as it is now, to change and reseal. */
static struct ffs_super *sb_copy(struct tool *t, unsigned i)
{
	struct ffs_super *sb = ff_alloc_aligned(FFS_BLOCK);
	int rc = ffs_meta_read_check(t->fs, ffs_sb_block[i], FFS_B_SUPER, sb, true);

	if (rc < 0)
		die("superblock copy", rc);
	return sb;
}

static void sb_put(struct tool *t, unsigned i, struct ffs_super *sb)
{
	int rc;

	ffs_block_seal(sb, FFS_B_SUPER, ffs_sb_block[i]);
	rc = ffs_meta_write_raw(t->fs, ffs_sb_block[i], sb, 1);
	if (rc == 0)
		rc = ff_raid_flush(ffs_raid(t->fs));
	free(sb);
	if (rc < 0)
		die("superblock write", rc);
}

/*
 * Copies that disagree, each passing its checksum: D is the newest valid
 * one (its label says so: fsck prints it), A is newer still but made for
 * another array, B is ten writes behind D and C two (the other group is
 * normally one behind).  Fixed generations: the output does not depend on
 * how many superblock writes building the volume took.
 */
static void sb_disagree(struct tool *t)
{
	static const uint64_t gen[FFS_SB_COPIES] = { 2000, 990, 998, 1000 };

	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		struct ffs_super *sb = sb_copy(t, i);

		sb->generation = ff_cpu_to_le64(gen[i]);
		if (i == 0)
			sb->uuid[0] ^= 0xff;
		if (i == 3)
			snprintf(sb->label, sizeof(sb->label), "newest");
		sb_put(t, i, sb);
	}
}

/* A volume made before copies C and D: no C or D, and A and B without the
 * flag that says all four are kept. */
static void sb_legacy(struct tool *t)
{
	for (unsigned i = 0; i < 2; i++) {
		struct ffs_super *sb = sb_copy(t, i);

		sb->flags = ff_cpu_to_le32(ff_le32(sb->flags) & ~(uint32_t)FFS_F_SB_COPIES4);
		sb_put(t, i, sb);
	}
	raw_all(t, FFS_SB_BLOCK_C, 0);
	raw_all(t, FFS_SB_BLOCK_D, 0);
}

/* Every copy whole but for another geometry (as if the member superblocks
 * had changed under the filesystem): no rebuild from the array. */
static void sb_geometry(struct tool *t)
{
	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		struct ffs_super *sb = sb_copy(t, i);

		sb->nstripes = ff_cpu_to_le64(ff_le64(sb->nstripes) + 1);
		sb_put(t, i, sb);
	}
}

/* The damage that took every copy before C and D: 4 KiB zeroed at copy
 * A's member offset, on every member (on RAID5 x 4 copy B sits at the same
 * offset). */
static void sb_offset(struct tool *t)
{
	const struct ff_geom *g = ffs_tools_geom(t->fs);
	uint64_t off = g->meta_offset + FFS_SB_BLOCK_A * FFS_BLOCK; /* chunk 0, row 0 */

	for (unsigned i = 0; i < g->nmembers; i++) {
		struct ff_member *m = ff_raid_member(ffs_raid(t->fs), i);

		if (!m)
			die("a member is missing", -ENODEV);
		snprintf(t->member[t->nraw], sizeof(t->member[0]), "%s", m->path);
		t->member_off[t->nraw++] = off;
	}
	t->raw_zero = true;
}

/*
 * The superblock's scrub history (fs/base/format.h): one sane record (seq 1,
 * kept) and one of each kind of nonsense fsck clears — a record that ends
 * before it starts, repairs by a check-only scrub, more stripes checked
 * than the volume has, a number in another record's slot, repairs whose
 * sum wraps around to fit the damage found, and data in an empty slot.  Written with the superblock at the end.
 */
static void scrub_nonsense(struct tool *t)
{
	const struct ffs_super *sb = ffs_tools_super(t->fs);
	struct ffs_scrub_record r;

	for (unsigned i = 0; i < FFS_SB_SCRUB_RECORDS; i++) {
		memset(&r, 0, sizeof(r));
		r.seq = ff_cpu_to_le64(i + 1);
		r.start_s = ff_cpu_to_le64(1764000000ull + 100 * i);
		r.end_s = ff_cpu_to_le64(1764000000ull + 100 * i + 5);
		r.result = ff_cpu_to_le32(FFS_SCRUB_DONE);
		r.flags = ff_cpu_to_le32(FFS_SCRUB_F_REPAIR);
		r.stripes_checked = ff_cpu_to_le64(1);
		r.bytes_checked = sb->stripe_bytes;
		switch (i) {
		case 0: break;
		case 1: r.end_s = ff_cpu_to_le64(1764000000ull + 50); break;
		case 2:
			r.flags = 0;
			r.chunks_bad = r.chunks_repaired = ff_cpu_to_le64(1);
			break;
		case 3: r.stripes_checked = ff_cpu_to_le64(ff_le64(sb->nstripes) + 1); break;
		case 4: r.seq = ff_cpu_to_le64(2); break;
		case 6: /* repaired + unrepairable wraps to 0 in 64 bits */
			r.chunks_repaired = r.chunks_unrepairable = ff_cpu_to_le64(1ull << 63);
			break;
		case 7:
			memset(&r, 0, sizeof(r));
			r.start_s = ff_cpu_to_le64(1764000000ull);
			break;
		default: continue; /* slot 5 stays empty */
		}
		ffs_tools_set_scrub_record(t->fs, i, &r);
	}
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

/* ---- small files (format version 3) and their checksum table ------------------ */

static uint64_t pool_start(struct tool *t)
{
	return ff_le64(ffs_tools_super(t->fs)->pool_start);
}

/* Small file path, with at least i + 1 blocks. */
static struct finode *small_file(struct tool *t, const char *path, uint64_t i)
{
	struct finode *fi = inode(t, path);

	if (!(ff_le32(fi->d.flags) & FFS_I_SMALL) || i >= ff_le32(fi->d.u.small.count))
		die("not a small file with that many blocks", -EINVAL);
	return fi;
}

/* The metadata block that holds block I of small file PATH's data. */
static uint64_t small_block(struct tool *t, const char *path, const char *i)
{
	struct finode *fi = small_file(t, path, num(i));

	return pool_start(t) + ff_le32(fi->d.u.small.block[num(i)]);
}

/* small-dup A B I: block I of small file B is block 0 of small file A. */
static void do_small_dup(struct tool *t, char **arg)
{
	struct finode *fi = small_file(t, arg[1], num(arg[2]));

	fi->d.u.small.block[num(arg[2])] = small_file(t, arg[0], 0)->d.u.small.block[0];
	commit(t, fi);
}

/* small-range PATH I: block I lies past the end of the pool. */
static void do_small_range(struct tool *t, char **arg)
{
	struct finode *fi = small_file(t, arg[0], num(arg[1]));
	uint64_t past = ff_le64(ffs_tools_super(t->fs)->pool_blocks) + 5;

	fi->d.u.small.block[num(arg[1])] = ff_cpu_to_le32((uint32_t)past);
	commit(t, fi);
}

/* small-tree PATH I DIR: block I is the root node of directory DIR's tree. */
static void do_small_tree(struct tool *t, char **arg)
{
	struct finode *fi = small_file(t, arg[0], num(arg[1]));
	uint64_t root = ff_le64(inode(t, arg[2])->d.root);

	if (!root)
		die("the directory has no tree", -EINVAL);
	fi->d.u.small.block[num(arg[1])] = ff_cpu_to_le32((uint32_t)(root - pool_start(t)));
	commit(t, fi);
}

/* small-flag PATH: the small-file flag on anything (a directory). */
static void do_small_flag(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);

	fi->d.flags = ff_cpu_to_le32(ff_le32(fi->d.flags) | FFS_I_SMALL);
	commit(t, fi);
}

/* unlinked DIR NAME: the entry goes and the file's link count with it, but
 * the file is not put on the orphan list. */
static void do_unlinked(struct tool *t, char **arg)
{
	struct finode *dir = inode(t, arg[0]), *fi;
	uint64_t ino;
	uint8_t type;
	int rc = ffs_dir_lookup(t->fs, dir, arg[1], &ino, &type);

	if (rc == 0)
		rc = ffs_iget(t->fs, ino, &fi);
	if (rc == 0)
		rc = ffs_dir_remove(t->fs, dir, arg[1]);
	if (rc < 0)
		die(arg[1], rc);
	ffs_tools_ikeep(t->fs, fi);
	fi->d.nlink = 0;
	commit(t, fi);
}

/* pcsum-owner PATH I: the checksum entry of block I names the next inode,
 * its checksum left as it is. */
static void do_pcsum_owner(struct tool *t, char **arg)
{
	uint64_t no = small_block(t, arg[0], arg[1]);
	uint32_t ino, crc;
	int rc = ffs_pcsum_get(t->fs, no, &ino, &crc);

	if (rc == 0)
		rc = ffs_pcsum_set(t->fs, no, ino + 1, crc);
	if (rc < 0)
		die("pcsum", rc);
	commit(t, NULL);
}

/* pcsum-stray PATH: the entry of the last pool block, which is free, names
 * PATH's inode. */
static void do_pcsum_stray(struct tool *t, char **arg)
{
	uint64_t last = ff_le64(ffs_tools_super(t->fs)->pool_blocks) - 1;
	int rc;

	if (ffs_tools_bit(t->fs, FFS_TOOLS_POOL, last))
		die("the last pool block is in use", -EBUSY);
	rc = ffs_pcsum_set(t->fs, pool_start(t) + last, (uint32_t)lookup(t, arg[0]), 0x12345678);
	if (rc < 0)
		die("pcsum", rc);
	commit(t, NULL);
}

/* pcsum-bad PATH: garbage over every copy of the table block with the entry
 * of PATH's first block. */
static void do_pcsum_bad(struct tool *t, char **arg)
{
	uint64_t i = small_block(t, arg[0], "0") - pool_start(t);

	raw_all(t, ff_le64(ffs_tools_super(t->fs)->pcsum_start) + i / FFS_PCSUM_PER_BLOCK, 4);
}

/* sdata-copy PATH I: bytes flipped in one mirror copy of block I. */
static void do_sdata_copy(struct tool *t, char **arg)
{
	raw_one_copy(t, small_block(t, arg[0], arg[1]), 1);
	t->raw_flip = true;
}

/* sdata-lost PATH I: bytes flipped in every copy of block I, other bytes in each. */
static void do_sdata_lost(struct tool *t, char **arg)
{
	uint64_t no = small_block(t, arg[0], arg[1]);

	for (unsigned k = 0; k < ffs_tools_geom(t->fs)->meta_copies; k++)
		raw_one_copy(t, no, k);
	t->raw_flip = true;
}

/* ---- packed tails (format version 4) ---------------------------------------- */

/* File fi's tail extent (in its inline map). */
static struct ffs_extent *tail_of(struct finode *fi)
{
	if (ff_le32(fi->d.flags) & (FFS_I_BTREE | FFS_I_SMALL))
		die("not a file with an inline extent map", -EINVAL);
	for (unsigned i = 0; i < FF_MIN(ff_le32(fi->d.nextents), FFS_INLINE_EXTENTS); i++)
		if (ff_le32(fi->d.u.extents[i].flags) & FFS_X_TAIL)
			return &fi->d.u.extents[i];
	die("the file has no tail", -ENOENT);
	return NULL;
}

static uint64_t tail_stripe(struct tool *t, const char *path)
{
	return ff_le64(tail_of(inode(t, path))->pstripe);
}

/* tail-rows PATH N, tail-row0 PATH N: the tail's row count or first row. */
static void tail_field(struct tool *t, char **arg, bool first)
{
	struct finode *fi = inode(t, arg[0]);
	struct ffs_extent *x = tail_of(fi);
	uint32_t row0, rows;

	ffs_tail_rows_of(x, &row0, &rows);
	*x = ffs_tail_extent_make(ff_le64(x->fstripe), ff_le64(x->pstripe),
				  first ? (uint32_t)num(arg[1]) : row0, first ? rows : (uint32_t)num(arg[1]));
	commit(t, fi);
}

static void do_tail_rows(struct tool *t, char **arg) { tail_field(t, arg, false); }
static void do_tail_row0(struct tool *t, char **arg) { tail_field(t, arg, true); }

/* tail-blocks PATH N: the inode's count of tail blocks (st_blocks) set to N. */
static void do_tail_blocks(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);

	fi->d.tail_blocks = ff_cpu_to_le32((uint32_t)num(arg[1]));
	commit(t, fi);
}

/* tail-flags PATH: the tail marked preallocated as well. */
static void do_tail_flags(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);
	struct ffs_extent *x = tail_of(fi);

	x->flags = ff_cpu_to_le32(FFS_X_TAIL | FFS_X_UNWRITTEN);
	commit(t, fi);
}

/* The checksum entry of PATH's tail stripe: live + dlive, hwm (if not 0),
 * ino (if not 0) changed.  A new hwm gets crcs over its rows, read from the
 * stripe (a consistent entry that says fewer rows were written); else the
 * crcs stay as they are. */
static void tail_entry(struct tool *t, const char *path, uint32_t dlive, uint32_t hwm, uint32_t ino2)
{
	uint64_t p = tail_stripe(t, path);
	uint32_t crc[FF_MEMBERS_MAX], ino, f;
	int rc = ffs_csum_get(t->fs, p, &ino, &f, crc);

	if (rc == 0 && ino != FFS_CSUM_TAILS)
		rc = -EINVAL;
	f = FFS_CSUM_TAIL_PACK(hwm ? hwm : FFS_CSUM_TAIL_HWM(f), FFS_CSUM_TAIL_LIVE(f) + dlive);
	if (rc == 0 && hwm) {
		const struct ff_geom *g = ffs_tools_geom(t->fs);
		uint8_t *s = ff_alloc_aligned(g->stripe_bytes);

		rc = s ? ff_raid_rw(ffs_raid(t->fs), FF_RAID_READ, FF_SPACE_DATA, p * g->stripe_bytes, s,
				    g->stripe_bytes) : -ENOMEM;
		for (uint32_t i = 0; i < g->ndata && rc == 0; i++)
			crc[i] = ff_crc32c(0, s + (size_t)i * g->chunk_bytes, (size_t)hwm * FFS_TAIL_ROW);
		free(s);
	}
	if (rc == 0)
		rc = ffs_csum_set(t->fs, p, ino2 ? ino2 : ino, f, crc);
	if (rc < 0)
		die("tail stripe entry", rc);
	commit(t, NULL);
}

static void do_tail_live(struct tool *t, char **arg) { tail_entry(t, arg[0], (uint32_t)num(arg[1]), 0, 0); }
static void do_tail_hwm(struct tool *t, char **arg) { tail_entry(t, arg[0], 0, (uint32_t)num(arg[1]), 0); }

/* tail-csum-ino PATH: the entry names PATH's inode instead of the tails. */
static void do_tail_csum_ino(struct tool *t, char **arg)
{
	tail_entry(t, arg[0], 0, 0, (uint32_t)lookup(t, arg[0]));
}

/* tail-whole A B: A's first extent (one stripe) points at B's tail stripe. */
static void do_tail_whole(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);

	if (ff_le32(first_extent_flags(t, arg[0])) || ff_le32(fi->d.u.extents[0].count) != 1)
		die("the first extent is not one written stripe", -EINVAL);
	fi->d.u.extents[0].pstripe = ff_cpu_to_le64(tail_stripe(t, arg[1]));
	commit(t, fi);
}

/* tail-leaked: the last stripe taken as a tail stripe whose tails are all
 * gone (2 rows written, live 0), as a crash leaves one the daemon kept open. */
static void do_tail_leaked(struct tool *t, char **arg)
{
	const struct ff_geom *g = ffs_tools_geom(t->fs);
	uint64_t p = ff_le64(ffs_tools_super(t->fs)->nstripes) - 1;
	uint32_t crc[FF_MEMBERS_MAX];
	uint8_t *zero = calloc(1, 2 * FFS_TAIL_ROW);
	int rc = zero ? ffs_take_stripes(t->fs, p, 1) : -ENOMEM;

	(void)arg;
	for (uint32_t i = 0; i < g->ndata && zero; i++)
		crc[i] = ff_crc32c(0, zero, 2 * FFS_TAIL_ROW); /* the members are sparse: zeros */
	if (rc == 0)
		rc = ffs_csum_set(t->fs, p, FFS_CSUM_TAILS, FFS_CSUM_TAIL_PACK(2, 0), crc);
	free(zero);
	if (rc < 0)
		die("tail-leaked", rc);
	commit(t, NULL);
}

/* tail-data PATH: garbage over the first 4 KiB (row 0) of chunk 0 of PATH's tail stripe. */
static void do_tail_data(struct tool *t, char **arg) { raw_data_chunk(t, tail_stripe(t, arg[0]), 0); }

/* ---- patches (format version 5) ------------------------------------------------ */

/* patch-field PATH N FIELD VALUE: record N (in key order) of PATH's patch
 * tree gets VALUE in FIELD: slot0, nblocks, pstripe or reserved (the
 * record's length stays), or fstripe (its key: the record moves). */
static void do_patch_field(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);
	struct bt_root r = { ff_le64(fi->d.u2.patch_root), fi->ino };
	uint8_t rec[FFS_BT_RECORD_MAX];
	uint64_t key = 0, v = num(arg[3]);
	struct ffs_patch x;
	uint16_t len = 0;
	int rc = 0;

	for (uint64_t i = 0, at = 0; i <= num(arg[1]) && rc == 0; i++, at = key + 1)
		rc = ffs_bt_find_ge(t->fs, &r, at, &key, rec, &len);
	if (rc < 0)
		die("no such patch record", rc);
	memcpy(&x, rec, sizeof(x));
	if (!strcmp(arg[2], "slot0"))
		x.slot0 = ff_cpu_to_le16((uint16_t)v);
	else if (!strcmp(arg[2], "nblocks"))
		x.nblocks = ff_cpu_to_le16((uint16_t)v);
	else if (!strcmp(arg[2], "pstripe"))
		x.pstripe = ff_cpu_to_le64(v);
	else if (!strcmp(arg[2], "reserved"))
		x.reserved = ff_cpu_to_le32((uint32_t)v);
	else if (strcmp(arg[2], "fstripe"))
		die(arg[2], -EINVAL);
	memcpy(rec, &x, sizeof(x));
	if (!strcmp(arg[2], "fstripe")) {
		rc = ffs_bt_delete(t->fs, &r, key);
		if (rc == 0)
			rc = ffs_bt_insert(t->fs, &r, FFS_PATCH_KEY(v, FFS_PATCH_KEY_BLOCK(key)), rec, len);
	} else {
		rc = ffs_bt_update(t->fs, &r, key, rec, len);
	}
	if (rc < 0)
		die("patch record", rc);
	fi->d.u2.patch_root = ff_cpu_to_le64(r.root);
	commit(t, fi);
}

/* patch-root PATH V: PATH's patch tree root block set to V. */
static void do_patch_root(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);

	fi->d.u2.patch_root = ff_cpu_to_le64(num(arg[1]));
	commit(t, fi);
}

/* version N: the superblock says format version N (written at the end). */
static void do_version(struct tool *t, char **arg)
{
	ffs_tools_set_version(t->fs, (uint32_t)num(arg[0]));
}

static void do_ibit_clear(struct tool *t, char **arg)
{
	int rc = ffs_free_inode_bit(t->fs, lookup(t, arg[0]));

	if (rc < 0)
		die("ffs_free_inode_bit", rc);
	commit(t, NULL);
}

static void do_ibit_set(struct tool *t, char **arg)
{
	uint64_t ino;
	int rc = ffs_alloc_inode(t->fs, &ino);

	(void)arg;
	if (rc < 0)
		die("ffs_alloc_inode", rc);
	commit(t, NULL);
}

static void do_dangling(struct tool *t, char **arg)
{
	dir_entry_add(t, arg[0], arg[1], free_ino(t), DT_REG);
}

static void do_entry_type(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);
	uint64_t ino;
	uint8_t type;
	int rc = ffs_dir_lookup(t->fs, fi, arg[1], &ino, &type);

	if (rc == 0)
		rc = ffs_dir_retarget(t->fs, fi, arg[1], ino, DT_CHR);
	if (rc < 0)
		die("ffs_dir_retarget", rc);
	commit(t, NULL);
}

/* nlink, dotdot, dir-size, mode, slot-ino PATH VALUE: one inode field */
static void do_field(struct tool *t, char **arg, const char *which)
{
	struct finode *fi = inode(t, arg[0]);
	uint64_t v = num(arg[1]);

	if (!strcmp(which, "nlink"))
		fi->d.nlink = ff_cpu_to_le32((uint32_t)v);
	else if (!strcmp(which, "dotdot"))
		fi->d.parent = ff_cpu_to_le64(v);
	else if (!strcmp(which, "dir-size"))
		fi->d.size = ff_cpu_to_le64(v);
	else if (!strcmp(which, "mode"))
		fi->d.mode = ff_cpu_to_le32((uint32_t)v);
	else
		fi->d.ino = ff_cpu_to_le64(v);
	commit(t, fi);
}

static void do_nlink(struct tool *t, char **arg) { do_field(t, arg, "nlink"); }
static void do_dotdot(struct tool *t, char **arg) { do_field(t, arg, "dotdot"); }
static void do_dir_size(struct tool *t, char **arg) { do_field(t, arg, "dir-size"); }
static void do_mode(struct tool *t, char **arg) { do_field(t, arg, "mode"); }
static void do_slot_ino(struct tool *t, char **arg) { do_field(t, arg, "slot-ino"); }

static void do_leak_stripe(struct tool *t, char **arg)
{
	int rc = ffs_take_stripes(t->fs, ff_le64(ffs_tools_super(t->fs)->nstripes) - 1, 1);

	(void)arg;
	if (rc < 0)
		die("ffs_take_stripes", rc);
	commit(t, NULL);
}

/* A grow under way (GROWING): the old-rows map marks the last free stripe
 * old, which a row never is once freed (fs/space/alloc.c). */
static void do_old_row_free(struct tool *t, char **arg)
{
	uint64_t start = ffs_tools_old_rows_start(t->fs), p = ff_le64(ffs_tools_super(t->fs)->nstripes);
	struct mbuf *mb;
	int rc;

	(void)arg;
	if (!start)
		die("no grow under way (GROWING)", -EINVAL);
	while (p > 0 && ffs_tools_bit(t->fs, FFS_TOOLS_STRIPES, p - 1))
		p--;
	if (p-- == 0)
		die("no free stripe", -ENOSPC);
	rc = ffs_mb_get(t->fs, start + p / FFS_BITS_PER_BLOCK, FFS_B_BITMAP, &mb);
	if (rc < 0)
		die("old-rows map", rc);
	((struct ffs_bitmap_block *)mb->data)->bits[p % FFS_BITS_PER_BLOCK / 8] |=
		(uint8_t)(1u << (p % 8));
	ffs_mb_dirty(t->fs, mb);
	ffs_mb_put(t->fs, mb);
	commit(t, NULL);
}

/* The second file's first extent points at the first file's first stripe. */
static void do_dup_stripe(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[1]);

	first_stripe(t, arg[1]); /* it has one: a small file has no extents */
	fi->d.u.extents[0].pstripe = ff_cpu_to_le64(first_stripe(t, arg[0]));
	commit(t, fi);
}

static void do_extent_range(struct tool *t, char **arg)
{
	struct finode *fi = inode(t, arg[0]);

	fi->d.u.extents[0].pstripe = ff_cpu_to_le64(ff_le64(ffs_tools_super(t->fs)->nstripes) + 10);
	commit(t, fi);
}

static void do_csum_owner(struct tool *t, char **arg) { csum_owner(t, arg[0]); }

/* The first chunk's checksum no longer matches its (intact) data. */
static void do_csum_crc(struct tool *t, char **arg)
{
	uint64_t p = first_stripe(t, arg[0]);
	uint32_t crc[FF_MEMBERS_MAX], ino, f;
	int rc = ffs_csum_get(t->fs, p, &ino, &f, crc);

	crc[0] ^= 0x5a5a5a5a;
	if (rc == 0)
		rc = ffs_csum_set(t->fs, p, ino, f, crc);
	if (rc < 0)
		die("csum", rc);
	commit(t, NULL);
}

/* /b leaves the root and /b/c gets an entry naming /b: a detached loop. */
static void do_dir_loop(struct tool *t, char **arg)
{
	struct finode *c = inode(t, "/b/c");
	uint64_t b = lookup(t, "/b");
	int rc;

	(void)arg;
	root_unlink(t, "b");
	rc = ffs_dir_add(t->fs, c, "back", b, DT_DIR);
	if (rc < 0)
		die("ffs_dir_add", rc);
	commit(t, NULL);
}

static void do_unreachable(struct tool *t, char **arg)
{
	(void)arg;
	root_unlink(t, "b");
}

static void do_orphan_linked(struct tool *t, char **arg) { orphan_linked(t, arg[0]); }

static void do_orphan_valid(struct tool *t, char **arg)
{
	(void)arg;
	orphan_valid(t);
}

static void do_xattr_bad(struct tool *t, char **arg) { xattr_bad(t, arg[0]); }
static void do_xvalue_bad(struct tool *t, char **arg) { xvalue_bad(t, arg[0]); }
static void do_journal_pending(struct tool *t, char **arg) { journal_pending(t, arg[0]); }

/* Written with the superblock at the end. */
static void do_hwm(struct tool *t, char **arg)
{
	ffs_tools_set_itable_hwm(t->fs, num(arg[0]));
}

static void do_scrub_nonsense(struct tool *t, char **arg)
{
	(void)arg;
	scrub_nonsense(t);
}

static void do_leaf_bad(struct tool *t, char **arg) { raw_all(t, second_leaf(t, arg[0]), 1); }

static void do_itable_bad(struct tool *t, char **arg)
{
	raw_all(t, itable_block(t, lookup(t, arg[0])), 2);
}

static void do_sbitmap_bad(struct tool *t, char **arg)
{
	(void)arg;
	raw_all(t, ff_le64(ffs_tools_super(t->fs)->sbitmap_start), 3);
}

/* One mirror copy of the table block holding the inode. */
static void do_copy_bad(struct tool *t, char **arg)
{
	raw_one_copy(t, itable_block(t, lookup(t, arg[0])), 1);
}

static void do_data_bad(struct tool *t, char **arg) { raw_data_chunk(t, first_stripe(t, arg[0]), 0); }

static void do_data_lost(struct tool *t, char **arg)
{
	uint64_t p = first_stripe(t, arg[0]);

	raw_data_chunk(t, p, 0);
	raw_data_chunk(t, p, 1); /* two chunks: more than RAID5's parity rebuilds */
}

/* Superblock damage is done after the superblock is written (see main). */
static void do_nothing(struct tool *t, char **arg)
{
	(void)t;
	(void)arg;
}

/* nothing: the volume as built, not even the superblock rewritten (finishing
 * would move the journal's tail past transactions a crash left to replay). */
static void do_untouched(struct tool *t, char **arg)
{
	(void)arg;
	t->finish = false;
}

static const struct action {
	const char *name;
	unsigned nargs;
	void (*fn)(struct tool *t, char **arg);
} actions[] = {
	{ "ibit-clear", 1, do_ibit_clear },       { "ibit-set", 0, do_ibit_set },
	{ "dangling", 2, do_dangling },           { "entry-type", 2, do_entry_type },
	{ "nlink", 2, do_nlink },                 { "dotdot", 2, do_dotdot },
	{ "dir-size", 2, do_dir_size },           { "mode", 2, do_mode },
	{ "slot-ino", 2, do_slot_ino },           { "leak-stripe", 0, do_leak_stripe },
	{ "dup-stripe", 2, do_dup_stripe },       { "extent-range", 1, do_extent_range },
	{ "csum-owner", 1, do_csum_owner },       { "csum-crc", 1, do_csum_crc },
	{ "dir-loop", 0, do_dir_loop },
	{ "unreachable", 0, do_unreachable },     { "orphan-linked", 1, do_orphan_linked },
	{ "orphan-valid", 0, do_orphan_valid },   { "xattr-bad", 1, do_xattr_bad },
	{ "journal-pending", 1, do_journal_pending }, { "hwm", 1, do_hwm },
	{ "leaf-bad", 1, do_leaf_bad },           { "itable-bad", 1, do_itable_bad },
	{ "sbitmap-bad", 0, do_sbitmap_bad },     { "copy-bad", 1, do_copy_bad },
	{ "data-bad", 1, do_data_bad },           { "data-lost", 1, do_data_lost },
	{ "old-row-free", 0, do_old_row_free },
	{ "sb-torn", 0, do_nothing },             { "no-super", 0, do_nothing },
	{ "sb-zero-all", 0, do_nothing },         { "sb-offset", 0, do_nothing },
	{ "sb-disagree", 0, do_nothing },         { "sb-legacy", 0, do_nothing },
	{ "sb-geometry", 0, do_nothing },         { "xvalue-bad", 1, do_xvalue_bad },
	{ "journal-pending-no-super", 1, do_journal_pending },
	{ "scrub-nonsense", 0, do_scrub_nonsense },
	{ "small-dup", 3, do_small_dup },         { "small-range", 2, do_small_range },
	{ "small-tree", 3, do_small_tree },       { "small-flag", 1, do_small_flag },
	{ "pcsum-owner", 2, do_pcsum_owner },     { "pcsum-stray", 1, do_pcsum_stray },
	{ "pcsum-bad", 1, do_pcsum_bad },         { "sdata-copy", 2, do_sdata_copy },
	{ "sdata-lost", 2, do_sdata_lost },       { "unlinked", 2, do_unlinked },
	{ "tail-rows", 2, do_tail_rows },         { "tail-row0", 2, do_tail_row0 },
	{ "tail-flags", 1, do_tail_flags },       { "tail-live", 2, do_tail_live },
	{ "tail-blocks", 2, do_tail_blocks },
	{ "tail-hwm", 2, do_tail_hwm },           { "tail-csum-ino", 1, do_tail_csum_ino },
	{ "tail-whole", 2, do_tail_whole },       { "tail-leaked", 0, do_tail_leaked },
	{ "tail-data", 1, do_tail_data },         { "version", 1, do_version },
	{ "patch-field", 4, do_patch_field },     { "patch-root", 2, do_patch_root },
	{ "nothing", 0, do_untouched },
};

static bool act(struct tool *t, const char *a, char **arg, unsigned nargs)
{
	for (size_t i = 0; i < FF_ARRAY_SIZE(actions); i++)
		if (!strcmp(a, actions[i].name)) {
			if (nargs != actions[i].nargs)
				die(a, -EINVAL);
			actions[i].fn(t, arg);
			return true;
		}
	return false;
}

int main(int argc, char **argv)
{
	struct tool t = { 0 };
	int sep;

	for (sep = 1; sep < argc && strcmp(argv[sep], "--"); sep++)
		;
	if (sep < 2 || sep + 1 >= argc) {
		fprintf(stderr, "usage: ffsck-corrupt ACTION [ARG...] -- MEMBER...\n");
		return 2;
	}
	ff_log_set_level(FF_LOG_ERR);
	tool_open(&t, (const char *const *)argv + sep + 1, (unsigned)(argc - sep - 1));
	if (!act(&t, argv[1], argv + 2, (unsigned)(sep - 2)))
		die(argv[1], -EINVAL);
	if (t.finish) {
		int rc = ffs_check_finish(t.fs);

		if (rc < 0)
			die("superblock", rc);
	}
	/* superblock damage goes last: finishing rewrites every copy */
	if (!strcmp(argv[1], "sb-torn"))
		sb_torn(&t);
	if (!strcmp(argv[1], "no-super")) /* garbage over every copy */
		for (unsigned i = 0; i < FFS_SB_COPIES; i++)
			raw_all(&t, ffs_sb_block[i], 5 + i);
	if (!strcmp(argv[1], "sb-zero-all") || !strcmp(argv[1], "journal-pending-no-super"))
		for (unsigned i = 0; i < FFS_SB_COPIES; i++)
			raw_all(&t, ffs_sb_block[i], 0);
	if (!strcmp(argv[1], "sb-offset"))
		sb_offset(&t);
	if (!strcmp(argv[1], "sb-disagree"))
		sb_disagree(&t);
	if (!strcmp(argv[1], "sb-legacy"))
		sb_legacy(&t);
	if (!strcmp(argv[1], "sb-geometry"))
		sb_geometry(&t);
	if (ffs_check_close(t.fs) < 0)
		die("close", -EIO);
	raw_apply(&t);
	return 0;
}
