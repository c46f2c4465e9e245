/* SPDX-License-Identifier: MIT */
/*
 * Pass 5: checksums.  Every metadata block in use is read once per mirror
 * copy; a block with a bad copy beside a good one gets the good image on
 * every copy (earlier passes read around bad copies without rewriting
 * them: see check.h).  A small file's data block has no header: its copies
 * are judged by the checksum its entry in the small-data checksum table
 * gives.  A block with no good copy was already reported by the pass that
 * needed it.  With -c, every data chunk of every written stripe is checked
 * against the checksum table, through the RAID layer, and a stripe with
 * bad ones is rebuilt from parity and written back whole (fs/base/repair.c), as
 * the read path and scrub do.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mkfs/fsck/fsck.h"

struct region {
	const char *name;
	uint32_t type;
	uint64_t start, count;
};

/* Is buf a good copy of block no: its header, or for small-file data the
 * checksum crc its entry gives? */
static bool copy_good(const void *buf, uint64_t no, uint32_t type, uint32_t crc)
{
	if (type == FFS_B_SDATA)
		return ffs_sdata_crc(no, buf) == crc;
	return ffs_block_check(buf, type, no) == 0;
}

/* Small-file data block no: every copy gets the image of a good one,
 * written through the journal as the library writes small data. */
static int sdata_rewrite(struct fsck *c, uint64_t no, uint32_t crc)
{
	struct mbuf *mb;
	int rc = ffs_meta_read_sdata(c->fs, no, crc, c->buf);

	if (rc == 0)
		rc = ffs_mb_new(c->fs, no, FFS_B_SDATA, &mb);
	if (rc < 0)
		return rc;
	memcpy(mb->data, c->buf, FFS_BLOCK);
	ffs_mb_dirty(c->fs, mb);
	ffs_mb_put(c->fs, mb);
	return fsck_commit(c, false);
}

static void copies_check(struct fsck *c, uint64_t no, uint32_t type, const char *name)
{
	struct ffs *fs = c->fs;
	unsigned copies = ffs_tools_geom(fs)->meta_copies, good = 0, bad = 0;
	bool degraded = ff_raid_failed_count(ffs_raid(fs)) > 0;
	uint32_t owner, crc = 0;
	struct mbuf *mb;

	if (type == FFS_B_SDATA && ffs_pcsum_get(fs, no, &owner, &crc) < 0)
		return; /* no checksum to judge the copies by: pass 2 reported its table block */
	for (unsigned k = 1; k <= copies; k++) {
		int rc = ffs_check_run_read(fs, &c->runs, no, k, c->buf);

		if (rc < 0 && degraded)
			continue; /* a missing member is not a bad copy */
		if (rc == 0 && copy_good(c->buf, no, type, crc))
			good++;
		else
			bad++;
	}
	if (!bad || !good ||
	    !fsck_fix_problem(c, PR_5_COPY_BAD, &(struct pctx){ .blk = no, .str = name, .num = bad,
							   .num2 = copies }))
		return;
	if (type == FFS_B_SUPER) { /* never journaled: written in place */
		if (ffs_meta_read_check(fs, no, type, c->buf, true) == 0 &&
		    ffs_meta_write_raw(fs, no, c->buf, 1) == 0)
			return;
		fsck_operr(c, -EIO, "cannot rewrite a superblock copy");
		return;
	}
	if (type == FFS_B_SDATA) {
		if (sdata_rewrite(c, no, crc) < 0)
			fsck_operr(c, -EIO, "cannot rewrite a small file's data block");
		return;
	}
	if (ffs_mb_get(fs, no, type, &mb) < 0) {
		fsck_operr(c, -EIO, "cannot reread a metadata block");
		return;
	}
	ffs_mb_dirty(fs, mb); /* the commit writes the good image to every copy */
	ffs_mb_put(fs, mb);
	fsck_commit(c, false);
}

static const char *pool_name(uint8_t t, uint32_t *type)
{
	static const struct { uint32_t type; const char *name; } k[] = {
		[POOL_BTREE] = { FFS_B_BTREE, "B+tree node" },
		[POOL_PTREE] = { FFS_B_BTREE, "patch tree node" },
		[POOL_XATTR] = { FFS_B_XATTR, "extended attributes" },
		[POOL_SYMLINK] = { FFS_B_SYMLINK, "symbolic link target" },
		[POOL_XVALUE] = { FFS_B_XVALUE, "extended attribute value" },
		[POOL_SDATA] = { FFS_B_SDATA, "small-file data" },
	};

	*type = k[t].type;
	return k[t].name;
}

static void metadata_copies(struct fsck *c)
{
	const struct ffs_super *sb = ffs_tools_super(c->fs);
	const struct region r[] = {
		{ "superblock", FFS_B_SUPER, FFS_SB_BLOCK_A, 1 },
		{ "superblock", FFS_B_SUPER, FFS_SB_BLOCK_B, 1 },
		{ "superblock", FFS_B_SUPER, FFS_SB_BLOCK_C, 1 }, /* none on volumes made before C, D */
		{ "superblock", FFS_B_SUPER, FFS_SB_BLOCK_D, 1 },
		{ "orphan block", FFS_B_ORPHAN, FFS_ORPHAN_BLOCK, 1 },
		{ "inode table", FFS_B_ITABLE, ff_le64(sb->itable_start),
		  FF_MIN(ff_le64(sb->itable_hwm), ff_le64(sb->itable_blocks)) },
		{ "inode bitmap", FFS_B_BITMAP, ff_le64(sb->ibitmap_start), ff_le64(sb->ibitmap_blocks) },
		{ "stripe bitmap", FFS_B_BITMAP, ff_le64(sb->sbitmap_start), ff_le64(sb->sbitmap_blocks) },
		{ "checksum table", FFS_B_CSUM, ff_le64(sb->csum_start), ff_le64(sb->csum_blocks) },
		{ "small-data checksum table", FFS_B_PCSUM, ff_le64(sb->pcsum_start),
		  ff_le64(sb->pcsum_blocks) }, /* none before version 3 */
		{ "pool bitmap", FFS_B_BITMAP, ff_le64(sb->mbitmap_start), ff_le64(sb->mbitmap_blocks) },
	};

	for (unsigned i = 0; i < FF_ARRAY_SIZE(r); i++)
		for (uint64_t b = 0; b < r[i].count && !c->operr && !c->stop; b++)
			copies_check(c, r[i].start + b, r[i].type, r[i].name);
	if (ff_le32(sb->version) >= FFS_VERSION_GROWN && ff_le64(sb->grow.pool_cut)) {
		/* a grow's records, after the pool (format.h): its checksum
		 * extension and old-rows map, kept after the grow ends too */
		const struct region g[] = {
			{ "checksum extension", FFS_B_CSUMX, ff_le64(sb->grow.ext_start),
			  ff_le64(sb->grow.ext_blocks) },
			{ "old-rows bitmap", FFS_B_BITMAP, ff_le64(sb->grow.orows_start),
			  ff_le64(sb->grow.orows_blocks) },
		};

		for (unsigned i = 0; i < FF_ARRAY_SIZE(g); i++)
			for (uint64_t b = 0; b < g[i].count && !c->operr && !c->stop; b++)
				copies_check(c, g[i].start + b, g[i].type, g[i].name);
	}
	for (uint64_t b = 0; b < c->pool_blocks && !c->operr && !c->stop; b++) {
		uint32_t type;
		const char *name;

		if (!c->pool_owner[b])
			continue;
		name = pool_name(c->pool_type[b], &type);
		copies_check(c, c->pool_start + b, type, name);
	}
}

/* Chunk i's checksum over the bytes its entry's crc covers (c->vlen: a tail
 * stripe's rows written, else the whole chunk).  A grow keeps the chunk
 * size: rows of either geometry have chunks of the array's. */
static uint32_t chunk_crc(const struct fsck *c, const void *stripe, uint32_t i)
{
	uint32_t cb = ffs_tools_geom(c->fs)->chunk_bytes;

	return ff_crc32c(0, (const uint8_t *)stripe + (size_t)i * cb, c->vlen);
}

/* Stripe p again, chunk i rebuilt from the other members and parity. */
static bool read_around(struct fsck *c, uint64_t p, uint32_t i)
{
	uint32_t avoid = 1u << ff_raid_chunk_member(ffs_raid(c->fs), p, i);

	return ffs_repair_read_around(c->fs, p, avoid, c->rbuf) == 0;
}

enum verdict { REBUILT, CSUM_WRONG, LOST };

/*
 * A chunk that fails its checksum, judged alone: rebuilt from parity it
 * may pass (the data was bad), or come out the same as read (data and
 * parity agree: the checksum is what is wrong), or neither (more damage
 * than parity covers).  A rebuilt chunk goes into sbuf.  Only the bytes the
 * checksum covers are compared: a tail stripe's rows past its hwm hold no
 * data.
 */
static enum verdict judge_chunk(struct fsck *c, uint64_t p, uint32_t i, uint32_t crc)
{
	uint32_t cb = ffs_tools_geom(c->fs)->chunk_bytes;
	uint8_t *got = (uint8_t *)c->rbuf + (size_t)i * cb;
	uint8_t *disk = (uint8_t *)c->sbuf + (size_t)i * cb;

	if (!read_around(c, p, i))
		return LOST;
	if (chunk_crc(c, c->rbuf, i) == crc) {
		memcpy(disk, got, cb);
		return REBUILT;
	}
	return memcmp(got, disk, c->vlen) == 0 ? CSUM_WRONG : LOST;
}

/*
 * Verdicts for the bad chunks of stripe p.  All of them are rebuilt at
 * once first (around every member that holds one, and around P or Q when
 * that is what it takes): two bad chunks on RAID6 need that.  Failing
 * that, each is judged alone, which tells a wrong checksum apart.
 */
static void judge_stripe(struct fsck *c, uint64_t p, uint32_t bad, const uint32_t *crc,
			 enum verdict *v)
{
	const struct ff_geom *g = ffs_tools_row_geom(c->fs, p);

	if (ffs_repair_reconstruct(c->fs, p, bad, crc, c->vlen, c->rbuf) == 0) {
		memcpy(c->sbuf, c->rbuf, g->stripe_bytes);
		for (uint32_t i = 0; i < g->ndata; i++)
			v[i] = REBUILT;
		return;
	}
	for (uint32_t i = 0; i < g->ndata; i++)
		if (bad & (1u << i))
			v[i] = judge_chunk(c, p, i, crc[i]);
}

/* Ask about each bad chunk; the chunks whose rebuilt image is to be written. */
static uint32_t ask_chunks(struct fsck *c, uint64_t p, uint32_t bad, uint32_t *crc,
			   const enum verdict *v, bool *crc_changed, bool *left)
{
	uint32_t write = 0, ino = c->stripe[p].ino, f = c->stripe[p].fstripe, ntails;
	char also[64] = "";

	if (ino == FFS_CSUM_TAILS) { /* named by its first tail */
		ntails = fsck_tail_first(c, p, &ino, &f);
		snprintf(also, sizeof(also), ", in a tail stripe holding %u tail(s) and patch(es)", ntails);
	}
	for (uint32_t i = 0; i < ffs_tools_row_geom(c->fs, p)->ndata; i++) {
		struct pctx px = { .blk = p, .num = i, .ino = ino, .num2 = f, .str = also };

		if (!(bad & (1u << i)))
			continue;
		if (v[i] == REBUILT && fsck_fix_problem(c, PR_5_DATA_BAD, &px)) {
			write |= 1u << i;
		} else if (v[i] == CSUM_WRONG && fsck_fix_problem(c, PR_5_CSUM_WRONG, &px)) {
			crc[i] = chunk_crc(c, c->sbuf, i);
			*crc_changed = true;
		} else {
			if (v[i] == LOST)
				fsck_fix_problem(c, PR_5_DATA_LOST, &px);
			*left = true;
		}
	}
	return write;
}

/*
 * The rebuilt chunks go back as the whole stripe, parity computed from it
 * (repair.c), never chunk by chunk: on wider arrays that is a
 * read-modify-write, which folds the bad chunk still on disk into parity.
 * So nothing is written while any chunk stays unverified (lost, or its
 * repair declined): parity is only ever computed from verified data.
 */
static void stripe_rewrite(struct fsck *c, uint64_t p, uint32_t write, bool left)
{
	if (!write)
		return;
	if (left) {
		ff_log(FF_LOG_WARN, "data stripe %llu: not rewritten, some of its chunks stay "
		       "unverified", (unsigned long long)p);
		return;
	}
	if (ffs_repair_rewrite(c->fs, p, c->sbuf, write) < 0)
		fsck_operr(c, -EIO, "cannot rewrite a data stripe");
}

/* Stripe p's chunks against their checksums, the stripe read in its row's
 * geometry (a grown array's old one for a row still in it: the library's
 * stripe functions address it so, ffs_tools_row_geom). */
static void stripe_verify(struct fsck *c, uint64_t p)
{
	uint32_t crc[FF_MEMBERS_MAX], ino, f, bad, write;
	enum verdict v[FF_MEMBERS_MAX];
	bool crc_changed = false, left = false;

	if (ffs_csum_get(c->fs, p, &ino, &f, crc) < 0 ||
	    ffs_repair_read_around(c->fs, p, 0, c->sbuf) < 0)
		return; /* an unreadable table block was pass 2's; an unreadable stripe the array's */
	c->vlen = ffs_csum_vlen(c->fs, ino, f);
	bad = ffs_repair_bad_chunks(c->fs, p, c->sbuf, crc, c->vlen);
	if (!bad)
		return;
	judge_stripe(c, p, bad, crc, v);
	write = ask_chunks(c, p, bad, crc, v, &crc_changed, &left);
	if (crc_changed && (ffs_csum_set(c->fs, p, ino, f & ~FFS_CSUM_UNWRITTEN, crc) < 0 ||
			    fsck_commit(c, false) < 0))
		fsck_operr(c, -EIO, "cannot fix the checksum table");
	else
		stripe_rewrite(c, p, write, left);
}

int fsck_pass5(struct fsck *c)
{
	fsck_pass_start(c, 5, "Checking metadata copies and checksums");
	metadata_copies(c);
	for (uint64_t p = 0; c->verify_data && p < c->nstripes && !c->operr && !c->stop; p++)
		if (c->stripe[p].ino && !ff_bit_test(c->unwritten, p))
			stripe_verify(c, p);
	fsck_commit(c, true);
	return c->operr;
}
