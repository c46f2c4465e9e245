/* SPDX-License-Identifier: MIT */
/*
 * Growing a volume: the filesystem's side of adding members to its array
 * (raid.h, "growing"; the records: format.h, struct ffs_grow_rec).
 *
 * ffs_grow, on unmounted members, goes in three steps, each leaving a
 * volume that mounts:
 *   1. prepare, mounted on the old array: the pool gives its last blocks
 *      to the grow's records (the checksum extension for data chunks past
 *      the checksum table's width, and the old-rows bitmap), written and
 *      flushed before the superblock names them (PREPARED).  The volume
 *      works as before.  A volume grown before: the new extension holds
 *      every row's checksums from the one in use, and the earlier records
 *      stay cut from the pool, retired (format.h).
 *   2. the array grows (ff_raid_grow: member superblocks only).
 *   3. adopt, at the next read-write mount (ffs_grow_mount): every row in
 *      use is marked old (the stripes bitmap, copied and flushed), then
 *      the superblock takes the new geometry (GROWING).
 * Rows leave the old geometry as they are freed (alloc.c), and free rows
 * are written in the new one at once: new files get the new width.  Files
 * not moved yet are read in their rows' geometry (fs_i.h, struct ffs_geo)
 * and moved ahead of any change to them (restripe.c, ffs_grow_move_now).
 */
#include <errno.h>
#include <string.h>

#include "fs/grow/grow.h"
#include "io/bitmap.h"

bool ffs_grow_layout_ok(const struct ffs_super *sb, uint32_t xw, uint64_t meta_blocks)
{
	const struct ffs_grow_rec *gr = &sb->grow;
	uint64_t end = ff_le64(sb->pool_start) + ff_le64(sb->pool_blocks), n = ff_le64(sb->nstripes);
	uint32_t per = ff_le32(gr->ext_per_block), w = ff_le32(gr->ext_width);

	if (!ff_le64(gr->pool_cut)) /* no records: no grow prepared on this volume */
		return xw == 0 && ff_le32(gr->state) == FFS_GROW_NONE;
	return w >= xw && w > 0 && per > 0 &&
	       (uint64_t)per * 4 * w <= FFS_BLOCK - sizeof(struct ffs_bhdr) &&
	       ff_le64(gr->ext_start) == end && ff_le64(gr->ext_blocks) * per >= n &&
	       ff_le64(gr->orows_start) == end + ff_le64(gr->ext_blocks) &&
	       ff_le64(gr->orows_blocks) * FFS_BITS_PER_BLOCK >= n &&
	       /* more when the volume grew before: the earlier records, retired */
	       ff_le64(gr->pool_cut) >= ff_le64(gr->ext_blocks) + ff_le64(gr->orows_blocks) &&
	       end + ff_le64(gr->pool_cut) <= meta_blocks;
}

bool ffs_grow_ended(const struct ffs_super *sb, const struct ff_geom *g)
{
	return ff_le32(sb->version) >= FFS_VERSION_GROWN && ff_le64(sb->grow.pool_cut) &&
	       ff_le32(sb->grow.state) == FFS_GROW_NONE && ff_le32(sb->nmembers) == g->nmembers &&
	       ff_le32(sb->ndata) == g->ndata;
}

/* The engine's row hook (raid.h): the filesystem's map, read unlocked. */
static bool row_old(void *arg, uint64_t row)
{
	const struct ffs *fs = arg;

	return ffs_row_geo(fs, row) != &fs->geo[0];
}

/* Fills block b's payload (FFS_BLOCK less its header, zeroed on entry). */
typedef int (*fill_fn)(struct ffs *fs, uint64_t b, uint8_t *payload, void *arg);

/* nblocks blocks from META block start, sealed as type, each filled by
 * fill (or zeros), written around the journal and flushed: blocks nothing
 * names yet, so no crash can tear what is. */
static int write_blocks(struct ffs *fs, uint64_t start, uint64_t nblocks, uint32_t type,
			fill_fn fill, void *arg)
{
	uint8_t *blk = ff_alloc_aligned(FFS_BLOCK);
	int rc = 0;

	if (!blk)
		return -ENOMEM;
	for (uint64_t b = 0; b < nblocks && rc == 0; b++) {
		memset(blk, 0, FFS_BLOCK);
		if (fill)
			rc = fill(fs, b, blk + sizeof(struct ffs_bhdr), arg);
		if (rc == 0) {
			ffs_block_seal(blk, type, start + b);
			rc = ffs_meta_write_raw(fs, start + b, blk, 1);
		}
	}
	free(blk);
	return rc < 0 ? rc : ff_raid_flush(fs->raid);
}

/* An image of consecutive payloads (arg), block b's from b * payload bytes. */
static int fill_image(struct ffs *fs, uint64_t b, uint8_t *payload, void *arg)
{
	size_t room = FFS_BLOCK - sizeof(struct ffs_bhdr);

	(void)fs;
	memcpy(payload, (const uint8_t *)arg + b * room, room);
	return 0;
}

/* A new checksum extension: nrows entries, width checksums each, per a block. */
struct ext_copy {
	uint64_t nrows;
	uint32_t width, per;
};

/* Block b of a new extension (arg, struct ext_copy): each row's checksums
 * in the extension in use (fs->csumx; none before a first grow), read
 * through the metadata cache, at the entry's start; the rest zero (no row
 * has data chunks there yet). */
static int fill_ext(struct ffs *fs, uint64_t b, uint8_t *payload, void *arg)
{
	const struct ext_copy *x = arg;
	uint64_t first = b * x->per, last = FF_MIN(first + x->per, x->nrows), held = UINT64_MAX;
	uint32_t ow = fs->csumx.width, oper = fs->csumx.per_block;
	struct mbuf *mb = NULL;
	int rc = 0;

	FF_ASSERT(ow <= x->width);
	for (uint64_t s = first; s < last && ow && rc == 0; s++) {
		if (s / oper != held) {
			if (mb)
				ffs_mb_put(fs, mb);
			mb = NULL;
			held = s / oper;
			rc = ffs_mb_get(fs, fs->csumx.start + held, FFS_B_CSUMX, &mb);
			if (rc < 0)
				break;
		}
		memcpy(payload + (s - first) * 4 * x->width,
		       mb->data + sizeof(struct ffs_bhdr) + (s % oper) * 4 * ow, 4 * (size_t)ow);
	}
	if (mb)
		ffs_mb_put(fs, mb);
	return rc;
}

void ffs_grow_records_use(struct ffs *fs)
{
	const struct ffs_grow_rec *gr = &fs->sb->grow;

	fs->csumx.start = ff_le64(gr->ext_start);
	fs->csumx.width = ff_le32(gr->ext_width);
	fs->csumx.per_block = ff_le32(gr->ext_per_block);
}

/* The stripes bitmap as on-disk bitmap blocks' payload (bit i of byte
 * i / 8, FFS_BITS_PER_BLOCK a block): the old-rows map at adoption. */
static uint8_t *orows_image(struct ffs *fs, uint64_t nblocks)
{
	uint64_t n = ff_le64(fs->sb->nstripes);
	uint8_t *img = calloc(nblocks, FFS_BLOCK - sizeof(struct ffs_bhdr));

	if (!img)
		return NULL;
	for (uint64_t s = 0; s < n; s++)
		if (ff_bit_test(fs->sbits, s))
			img[s / 8] |= (uint8_t)(1u << (s % 8));
	return img;
}

/* PREPARED on a grown array, mounted read-write: every row in use is old,
 * on disk before the superblock says GROWING (a stop between leaves it
 * PREPARED: the next mount adopts again). */
static int adopt(struct ffs *fs, struct ff_err *err)
{
	struct ffs_grow_rec *gr = &fs->sb->grow;
	const struct ff_geom *g = fs->g;
	uint8_t *img = orows_image(fs, ff_le64(gr->orows_blocks));
	int rc;

	if (!img)
		return -ENOMEM;
	rc = write_blocks(fs, ff_le64(gr->orows_start), ff_le64(gr->orows_blocks), FFS_B_BITMAP,
			  fill_image, img);
	free(img);
	if (rc < 0) {
		ff_err_set(err, "cannot write the grow's old-rows map: %s", strerror(-rc));
		return rc;
	}
	gr->state = ff_cpu_to_le32(FFS_GROW_GROWING);
	fs->sb->level = ff_cpu_to_le32(g->level);
	fs->sb->nmembers = ff_cpu_to_le32(g->nmembers);
	fs->sb->ndata = ff_cpu_to_le32(g->ndata);
	fs->sb->stripe_bytes = ff_cpu_to_le64(g->stripe_bytes);
	rc = ffs_super_write(fs);
	if (rc < 0)
		ff_err_set(err, "cannot write the superblock taking the grow on: %s", strerror(-rc));
	else
		ff_log(FF_LOG_INFO, "grow taken on: %u to %u members; the rows in use stay in the old "
		       "geometry until moved", ff_le32(gr->old_nmembers), g->nmembers);
	return rc;
}

int ffs_grow_mount(struct ffs *fs, struct ff_err *err)
{
	const struct ff_geom *old = ff_raid_geom_old(fs->raid);
	uint32_t state = ff_le32(fs->sb->version) >= FFS_VERSION_GROWN ? ff_le32(fs->sb->grow.state)
								       : FFS_GROW_NONE;
	uint64_t nfree;
	int rc = 0;

	if (ff_le32(fs->sb->version) >= FFS_VERSION_GROWN && ff_le64(fs->sb->grow.pool_cut))
		ffs_grow_records_use(fs);
	if (!old)
		return 0; /* PREPARED on the old array works as before; NONE: no grow */
	if (ffs_grow_ended(fs->sb, fs->g)) /* every row at the new width: the array ends it too */
		return fs->ro ? 0 : ff_raid_grow_finish(fs->raid);
	if (state == FFS_GROW_PREPARED && !fs->ro)
		rc = adopt(fs, err);
	if (rc == 0 && ff_le32(fs->sb->grow.state) == FFS_GROW_GROWING) {
		fs->orows_start = ff_le64(fs->sb->grow.orows_start);
		rc = ffs_alloc_load_bitmap(fs, fs->orows_start, ff_le64(fs->sb->grow.orows_blocks),
					   ff_le64(fs->sb->nstripes), &fs->orows, &nfree);
		if (rc == 0 && !fs->ro)
			fs->old_file_move = ffs_grow_move_now;
		if (rc < 0)
			ff_err_set(err, "cannot read the grow's old-rows map: %s", strerror(-rc));
		else if (ff_le64(fs->sb->nstripes) - nfree)
			ff_log(FF_LOG_INFO, "a grow to %u members is under way: %llu data stripes are "
			       "still laid over %u; the files in them read as before and are moved "
			       "ahead of a change to them (the daemon moves them all in the background; "
			       "framefs-admin grow MOUNTPOINT shows how far)",
			       fs->g->nmembers, (unsigned long long)(ff_le64(fs->sb->nstripes) - nfree),
			       old->nmembers);
	} else if (rc == 0) {
		/* read-only (check_super): nothing written since the array grew,
		 * so every row in use is old and every free row new */
		size_t words = FF_BITMAP_WORDS(ff_le64(fs->sb->nstripes));

		fs->orows = calloc(words + 1, sizeof(uint64_t));
		if (!fs->orows)
			return -ENOMEM;
		memcpy(fs->orows, fs->sbits, words * sizeof(uint64_t));
	}
	return rc < 0 ? rc : ff_raid_set_row_geom(fs->raid, row_old, fs);
}

int ffs_grow_check_load(struct ffs *fs)
{
	const struct ff_geom *old = ff_raid_geom_old(fs->raid);
	uint64_t n = ff_le64(fs->sb->nstripes), nfree;
	bool v6 = ff_le32(fs->sb->version) >= FFS_VERSION_GROWN;
	int rc;

	if (!old)
		return 0; /* no grow, or PREPARED on the old array: one geometry */
	if (v6 && ff_le32(fs->sb->grow.state) == FFS_GROW_GROWING) {
		fs->orows_start = ff_le64(fs->sb->grow.orows_start);
		/* checking: a block that cannot be read comes back all old */
		rc = ffs_alloc_load_bitmap(fs, fs->orows_start, ff_le64(fs->sb->grow.orows_blocks), n,
					   &fs->orows, &nfree);
		if (rc < 0)
			return rc;
	} else if (v6 && ff_le32(fs->sb->grow.state) == FFS_GROW_PREPARED) {
		/* nothing was written since the array grew (a read-write mount
		 * takes the grow on first): whatever a row holds is laid out in
		 * the old geometry, whatever the stripe bitmap says of it */
		fs->orows = calloc(FF_BITMAP_WORDS(n) + 1, sizeof(uint64_t));
		if (!fs->orows)
			return -ENOMEM;
		for (uint64_t s = 0; s < n; s++)
			ff_bit_set(fs->orows, s);
	} /* else ended (ffs_grow_ended): every row new, the array's end left to a mount */
	return ff_raid_set_row_geom(fs->raid, row_old, fs);
}

/* The data chunks the checksum table's entries hold: the volume's width
 * when it was made (a grow adds an extension; the table stays). */
static uint32_t table_width(const struct ffs_super *sb)
{
	return (ff_le32(sb->csum_entry_bytes) - (uint32_t)sizeof(struct ffs_csum_entry)) / 4;
}

void ffs_grow_rec_place(struct ffs_grow_rec *rec, uint64_t nstripes, uint32_t xw, uint64_t start)
{
	uint64_t per = (FFS_BLOCK - sizeof(struct ffs_bhdr)) / (4 * (uint64_t)xw);
	uint64_t ext = FF_DIV_ROUND_UP(nstripes, per);

	rec->ext_start = ff_cpu_to_le64(start);
	rec->ext_blocks = ff_cpu_to_le64(ext);
	rec->ext_width = ff_cpu_to_le32(xw);
	rec->ext_per_block = ff_cpu_to_le32((uint32_t)per);
	rec->orows_start = ff_cpu_to_le64(start + ext);
	rec->orows_blocks = ff_cpu_to_le64(FF_DIV_ROUND_UP(nstripes, FFS_BITS_PER_BLOCK));
}

int ffs_grow_records_write(struct ffs *fs, uint32_t new_nmembers, struct ffs_grow_rec *rec,
			   struct ff_err *err)
{
	struct ffs_super *sb = fs->sb;
	const struct ff_geom *g = fs->g;
	uint64_t n = ff_le64(sb->nstripes), pool = ff_le64(sb->pool_blocks), ext, orows, cut, end;
	uint32_t xw = new_nmembers - g->nparity - table_width(sb);
	struct ext_copy x;
	int rc;

	FF_ASSERT(new_nmembers > g->nmembers && xw > fs->csumx.width);
	/* every committed block home, the journal empty: no replay after a
	 * crash writes an image of a block the pool gave lately over the
	 * records, and the extension in use is current where it lies */
	rc = ffs_journal_checkpoint(fs);
	if (rc < 0) {
		ff_err_set(err, "cannot checkpoint the journal before the grow: %s", strerror(-rc));
		return rc;
	}
	memset(rec, 0, sizeof(*rec));
	ffs_grow_rec_place(rec, n, xw, 0); /* the sizes first: where, from them */
	ext = ff_le64(rec->ext_blocks);
	orows = ff_le64(rec->orows_blocks);
	cut = ext + orows;
	for (uint64_t i = pool > cut ? pool - cut : 0; i < pool; i++)
		if (cut >= pool || ff_bit_test(fs->mbits, i)) {
			ff_err_set(err, "the grow needs the metadata pool's last %llu blocks (of %llu) for "
				   "its records, and they are in use: a volume this full of metadata "
				   "cannot grow yet", (unsigned long long)cut, (unsigned long long)pool);
			return -ENOSPC;
		}
	end = ff_le64(sb->pool_start) + pool - cut;
	x = (struct ext_copy){ .nrows = n, .width = xw, .per = ff_le32(rec->ext_per_block) };
	rc = write_blocks(fs, end, ext, FFS_B_CSUMX, fill_ext, &x);
	if (rc == 0)
		rc = write_blocks(fs, end + ext, orows, FFS_B_BITMAP, NULL, NULL);
	if (rc < 0) {
		ff_err_set(err, "cannot write the grow's records: %s", strerror(-rc));
		return rc;
	}
	rec->state = ff_cpu_to_le32(FFS_GROW_PREPARED);
	rec->old_level = ff_cpu_to_le32(g->level);
	rec->old_nmembers = ff_cpu_to_le32(g->nmembers);
	rec->old_ndata = ff_cpu_to_le32(g->ndata);
	rec->old_stripe_bytes = ff_cpu_to_le64(g->stripe_bytes);
	rec->new_level = ff_cpu_to_le32(g->level);
	rec->new_nmembers = ff_cpu_to_le32(new_nmembers);
	rec->pool_cut = ff_cpu_to_le64(cut);
	ffs_grow_rec_place(rec, n, xw, end);
	return 0;
}

int ffs_grow_prepare(struct ffs *fs, uint32_t new_nmembers, struct ff_err *err)
{
	struct ffs_super *sb = fs->sb;
	struct ffs_grow_rec *gr = &sb->grow, rec;
	bool v6 = ff_le32(sb->version) >= FFS_VERSION_GROWN;
	/* a volume grown before: its records stay cut from the pool, retired */
	uint64_t retired = v6 ? ff_le64(gr->pool_cut) : 0, cut;
	int rc;

	if (v6 && ff_le32(gr->state) != FFS_GROW_NONE) {
		if (ff_le32(gr->state) == FFS_GROW_PREPARED && ff_le32(gr->new_nmembers) == new_nmembers)
			return 0; /* a grow stopped after this step: it goes on */
		ff_err_set(err, "the filesystem is already %s to %u members: finish that first",
			   ff_le32(gr->state) == FFS_GROW_PREPARED ? "prepared to grow" : "growing",
			   ff_le32(gr->new_nmembers));
		return -EBUSY;
	}
	rc = ffs_grow_records_write(fs, new_nmembers, &rec, err);
	if (rc < 0)
		return rc;
	cut = ff_le64(rec.pool_cut);
	*gr = rec;
	gr->pool_cut = ff_cpu_to_le64(retired + cut);
	sb->pool_blocks = ff_cpu_to_le64(ff_le64(sb->pool_blocks) - cut);
	sb->version = ff_cpu_to_le32(FFS_VERSION_GROWN);
	fs->free_mblocks -= cut;
	rc = ffs_super_write(fs);
	if (rc < 0)
		ff_err_set(err, "cannot write the superblock: %s", strerror(-rc));
	return rc;
}
