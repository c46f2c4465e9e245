/* SPDX-License-Identifier: MIT */
/*
 * Write intent: after a crash only the regions that had writes in flight
 * are resynced, not the whole array.
 *
 * The data space is cut into regions of region_stripes stripes; one bit
 * per region lives in the reserved area of every member (4 KiB blocks at
 * offset 4096, each with a magic, a crc32c and its index).  Before a write
 * reaches a region whose bit is clear, the bit is set and the block written
 * with RWF_DSYNC to every live member.  Every few seconds the superblock
 * thread flushes the members and clears the bits of regions that have had
 * no write since the previous pass and none in flight.  At assembly after
 * an unclean shutdown, the union of the members' bitmaps says which regions
 * to resync: every stripe there has its parity checked against its data
 * and rewritten where they differ.
 *
 * Writes that cannot tear live data skip the intent (FF_RAID_IO_NO_INTENT):
 * the filesystem's copy-on-write full-stripe writes go to stripes nothing
 * points at until a later commit.
 *
 * Setting a bit races with clearing it; both sides use sequentially
 * consistent atomics in opposite order (writer: count in flight, then look
 * at the bit; cleaner: clear the bit, then look at the count again), so one
 * of them always sees the other.
 *
 * The block writer here (ff_raid_bitmap_write) writes degraded.c's bitmap
 * too, under one rule for both, stated above it.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "io/bitmap.h"
#include "raid/raid_i.h"

#define INTENT_OFFSET 4096u
#define INTENT_MAGIC 0x544e4946u /* "FINT" */
#define INTENT_HDR 16u
#define BITS_PER_BLOCK ((FF_MEMBER_SB_BYTES - INTENT_HDR) * 8)
/* the lower half of the reserved area; the upper half holds the
 * written-while-degraded bitmap (degraded.c) */
#define INTENT_BLOCKS_MAX ((FF_MEMBER_RESERVED / 2 - INTENT_OFFSET) / FF_MEMBER_SB_BYTES)
#define REGION_STRIPES_MIN 256

struct raid_intent {
	uint64_t region_stripes;
	uint64_t nregions;
	unsigned nblocks;
	uint8_t *img;               /* nblocks blocks, as on disk */
	_Atomic uint32_t *inflight; /* per region */
	_Atomic uint8_t *touched;   /* per region: written since the last clean pass */
	pthread_mutex_t lock;
	_Atomic uint64_t marks;
	uint64_t resynced_stripes;
};

/* Region's bit lives in block region / BITS_PER_BLOCK, after its header. */
static _Atomic uint8_t *block_bits(struct raid_intent *in, uint64_t region)
{
	uint64_t b = region / BITS_PER_BLOCK;

	return (_Atomic uint8_t *)(in->img + b * FF_MEMBER_SB_BYTES + INTENT_HDR);
}

static bool bit_get(struct raid_intent *in, uint64_t region)
{
	return ff_bit8_test_atomic(block_bits(in, region), region % BITS_PER_BLOCK);
}

static void bit_put(struct raid_intent *in, uint64_t region, bool v)
{
	if (v)
		ff_bit8_set_atomic(block_bits(in, region), region % BITS_PER_BLOCK);
	else
		ff_bit8_clear_atomic(block_bits(in, region), region % BITS_PER_BLOCK);
}

/*
 * The block writer of both bitmaps, this one and degraded.c's: blk sealed
 * (magic, index idx, crc32c) and written at byte off of every live member
 * with RWF_DSYNC, durable before the writes it announces.
 *
 * The rule: 0 when every live member took it, else -EIO (those that could
 * took it).  A bit is only worth something if the next assembly finds it,
 * and no member short of all is sure to be read then: ff_raid_intent_recover
 * ORs the bitmaps of the members assembly adopts, and assembly goes on with
 * members missing (up to nparity roles); degraded.c's load ORs only the
 * members that carry its freshest header, so a member that missed one
 * header drops out of the union with every bit it holds.  A caller told
 * -EIO knows a later assembly may miss the bit: the degraded bitmap then
 * proves nothing (re-add refused, a full rebuild instead), the write-intent
 * one logs it, and assembly stops when it cannot start them clean.
 *
 * Caller holds the bitmap's lock: a member's fd is read unlocked here (see
 * ff_raid_intent_member_close).
 */
int ff_raid_bitmap_write(struct ff_raid *r, uint8_t *blk, uint32_t magic, uint64_t idx,
			 uint64_t off)
{
	le32 mg = ff_cpu_to_le32(magic);
	le64 ix = ff_cpu_to_le64(idx);
	int first = 0;

	memcpy(blk, &mg, 4);
	memcpy(blk + 8, &ix, 8);
	ff_csum_set(blk, FF_MEMBER_SB_BYTES, 4);
	for (unsigned m = 0; m < r->g.nmembers; m++) {
		struct iovec iov = { blk, FF_MEMBER_SB_BYTES };

		if ((atomic_load(&r->dead_mask) & (1u << m)) || r->mem[m].fd < 0)
			continue;
		if (pwritev2(r->mem[m].fd, &iov, 1, (off_t)off, RWF_DSYNC) != FF_MEMBER_SB_BYTES &&
		    !first)
			first = -EIO;
	}
	return first;
}

/* Is blk what ff_raid_bitmap_write sealed as block idx with magic? */
bool ff_raid_bitmap_block_ok(const uint8_t *blk, uint32_t magic, uint64_t idx)
{
	le32 mg;
	le64 ix;

	memcpy(&mg, blk, 4);
	memcpy(&ix, blk + 8, 8);
	return ff_le32(mg) == magic && ff_le64(ix) == idx &&
	       ff_csum_verify(blk, FF_MEMBER_SB_BYTES, 4) == 0;
}

/* Block b to every live member (ff_raid_bitmap_write). */
static int write_block(struct ff_raid *r, unsigned b)
{
	return ff_raid_bitmap_write(r, r->intent->img + (size_t)b * FF_MEMBER_SB_BYTES, INTENT_MAGIC,
				    b, INTENT_OFFSET + (uint64_t)b * FF_MEMBER_SB_BYTES);
}

int ff_raid_intent_init(struct ff_raid *r)
{
	struct raid_intent *in = calloc(1, sizeof(*in));
	uint64_t cap = (uint64_t)INTENT_BLOCKS_MAX * BITS_PER_BLOCK;

	if (!in)
		return -ENOMEM;
	in->region_stripes = FF_MAX((uint64_t)REGION_STRIPES_MIN, FF_DIV_ROUND_UP(r->g.nstripes, cap));
	in->nregions = FF_DIV_ROUND_UP(r->g.nstripes, in->region_stripes);
	in->nblocks = (unsigned)FF_DIV_ROUND_UP(in->nregions, BITS_PER_BLOCK);
	in->img = ff_alloc_aligned((size_t)in->nblocks * FF_MEMBER_SB_BYTES);
	in->inflight = calloc(in->nregions, sizeof(*in->inflight));
	in->touched = calloc(in->nregions, sizeof(*in->touched));
	if (!in->img || !in->inflight || !in->touched) {
		free(in->img);
		free((void *)in->inflight);
		free((void *)in->touched);
		free(in);
		return -ENOMEM;
	}
	memset(in->img, 0, (size_t)in->nblocks * FF_MEMBER_SB_BYTES);
	pthread_mutex_init(&in->lock, NULL);
	r->intent = in;
	return 0;
}

void ff_raid_intent_free(struct ff_raid *r)
{
	struct raid_intent *in = r->intent;

	if (!in)
		return;
	pthread_mutex_destroy(&in->lock);
	free(in->img);
	free((void *)in->inflight);
	free((void *)in->touched);
	free(in);
	r->intent = NULL;
}

static bool wants_intent(const struct ff_raid *r, const struct ff_raid_io *io)
{
	return r->intent && !r->read_only && io->op == FF_RAID_WRITE && io->space == FF_SPACE_DATA &&
	       !(io->flags & FF_RAID_IO_NO_INTENT);
}

void ff_raid_intent_begin(struct ff_raid *r, struct ff_raid_io *io)
{
	struct raid_intent *in = r->intent;
	uint64_t first, last;

	if (!wants_intent(r, io))
		return;
	first = io->off / raid_io_geom(r, io)->stripe_bytes / in->region_stripes;
	last = (io->off + io->len - 1) / raid_io_geom(r, io)->stripe_bytes / in->region_stripes;
	for (uint64_t g = first; g <= last; g++) {
		atomic_fetch_add(&in->inflight[g], 1);
		atomic_store(&in->touched[g], 1);
		if (bit_get(in, g))
			continue;
		pthread_mutex_lock(&in->lock);
		if (!bit_get(in, g)) {
			bit_put(in, g, true);
			if (write_block(r, (unsigned)(g / BITS_PER_BLOCK)) < 0)
				ff_log(FF_LOG_ERR, "write-intent record could not be written");
			atomic_fetch_add(&in->marks, 1);
		}
		pthread_mutex_unlock(&in->lock);
	}
}

void ff_raid_intent_end(struct ff_raid *r, struct ff_raid_io *io)
{
	struct raid_intent *in = r->intent;
	uint64_t first, last;

	if (!wants_intent(r, io))
		return;
	first = io->off / raid_io_geom(r, io)->stripe_bytes / in->region_stripes;
	last = (io->off + io->len - 1) / raid_io_geom(r, io)->stripe_bytes / in->region_stripes;
	for (uint64_t g = first; g <= last; g++)
		atomic_fetch_sub(&in->inflight[g], 1);
}

/* Superblock thread, every few seconds: clear what has been quiet. */
void ff_raid_intent_clean(struct ff_raid *r)
{
	struct raid_intent *in = r->intent;
	bool dirty_block[INTENT_BLOCKS_MAX] = { false }, any = false;

	/* a resync held back for the row hook keeps its regions set */
	if (!in || r->read_only || __atomic_load_n(&r->resync_waiting, __ATOMIC_ACQUIRE))
		return;
	for (uint64_t g = 0; g < in->nregions; g++)
		any |= bit_get(in, g);
	if (!any)
		return;
	/* what was written before this point must be durable before its bit goes */
	for (unsigned m = 0; m < r->g.nmembers; m++)
		if (!(atomic_load(&r->dead_mask) & (1u << m)) && r->mem[m].fd >= 0)
			ff_member_flush(&r->mem[m]);
	pthread_mutex_lock(&in->lock);
	for (uint64_t g = 0; g < in->nregions; g++) {
		if (!bit_get(in, g))
			continue;
		if (atomic_exchange(&in->touched[g], 0) || atomic_load(&in->inflight[g]))
			continue;
		bit_put(in, g, false);
		if (atomic_load(&in->inflight[g]) || atomic_load(&in->touched[g]))
			bit_put(in, g, true); /* a writer arrived meanwhile */
		else
			dirty_block[g / BITS_PER_BLOCK] = true;
	}
	for (unsigned b = 0; b < in->nblocks; b++)
		if (dirty_block[b])
			write_block(r, b);
	pthread_mutex_unlock(&in->lock);
}

/* Resync one stripe, in its row's geometry: parity recomputed where it
 * differs from the data. */
static int resync_stripe(struct ff_raid *r, uint64_t s, void *buf)
{
	struct ff_raid_io io;
	int rc;

	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_CHECK;
	io.space = FF_SPACE_DATA;
	io.flags = raid_row_old(r, s) ? FF_RAID_IO_OLD_GEOM : 0;
	io.off = s * raid_io_geom(r, &io)->stripe_bytes;
	io.len = raid_io_geom(r, &io)->stripe_bytes;
	io.buf = buf;
	rc = ff_raid_submit_wait(r, &io);
	if (rc < 0 || !atomic_load(&io.check_mismatch))
		return rc == -EAGAIN ? 0 : rc;
	r->intent->resynced_stripes++;
	io.op = FF_RAID_WRITE;
	return ff_raid_submit_wait(r, &io);
}

/*
 * Resync the regions set in the image, then start clean: the image and
 * every member's blocks cleared.
 */
static int resync_marked(struct ff_raid *r)
{
	struct raid_intent *in = r->intent;
	uint8_t *buf = ff_alloc_aligned(r->g.stripe_bytes);
	uint64_t regions = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t g = 0; g < in->nregions && rc == 0; g++) {
		if (!bit_get(in, g))
			continue;
		regions++;
		for (uint64_t s = g * in->region_stripes;
		     s < FF_MIN(r->g.nstripes, (g + 1) * in->region_stripes) && rc == 0; s++)
			rc = resync_stripe(r, s, buf);
	}
	ff_log(FF_LOG_INFO, "unclean shutdown: %llu write-intent region(s) of %llu stripes "
	       "resynced, %llu stripe(s) had stale parity", (unsigned long long)regions,
	       (unsigned long long)in->region_stripes, (unsigned long long)in->resynced_stripes);
	if (rc == 0) {
		memset(in->img, 0, (size_t)in->nblocks * FF_MEMBER_SB_BYTES);
		for (unsigned b = 0; b < in->nblocks && rc == 0; b++)
			rc = write_block(r, b);
	}
	r->stats_resync_regions = regions;
	free(buf);
	return rc;
}

/*
 * At assembly: read every member's bitmap (a block that fails its check
 * counts as all set), and, after an unclean shutdown, resync the regions
 * set anywhere; then start clean.  A grown array cannot tell a row's
 * geometry before the filesystem sets its row hook: the regions then stay
 * set, on the members too (a crash before the hook loses none), until
 * ff_raid_intent_resync_waiting runs.
 */
int ff_raid_intent_recover(struct ff_raid *r, bool unclean)
{
	struct raid_intent *in = r->intent;
	size_t bytes = (size_t)in->nblocks * FF_MEMBER_SB_BYTES;
	uint8_t *mb = ff_alloc_aligned(bytes);
	int rc = 0;

	if (!mb)
		return -ENOMEM;
	for (unsigned m = 0; m < r->g.nmembers && unclean; m++) {
		if ((atomic_load(&r->dead_mask) & (1u << m)) || r->mem[m].fd < 0 ||
		    ff_member_pread(&r->mem[m], mb, bytes, INTENT_OFFSET) < 0)
			continue;
		for (unsigned b = 0; b < in->nblocks; b++) {
			uint8_t *blk = mb + (size_t)b * FF_MEMBER_SB_BYTES;

			if (!ff_raid_bitmap_block_ok(blk, INTENT_MAGIC, b))
				memset(blk + INTENT_HDR, 0xff, FF_MEMBER_SB_BYTES - INTENT_HDR);
			for (size_t i = INTENT_HDR; i < FF_MEMBER_SB_BYTES; i++)
				in->img[(size_t)b * FF_MEMBER_SB_BYTES + i] |= blk[i];
		}
	}
	free(mb);
	if (unclean && raid_grown(r) && !r->row_old) {
		/* the merged image to every member, so that each holds it all */
		for (unsigned b = 0; b < in->nblocks && rc == 0 && !r->read_only; b++)
			rc = write_block(r, b);
		r->resync_waiting = true;
		ff_log(FF_LOG_INFO, "unclean shutdown of a grown array: the resync waits for the "
		       "filesystem to say which rows are in which geometry");
		return rc;
	}
	if (unclean)
		return resync_marked(r);
	memset(in->img, 0, bytes);
	for (unsigned b = 0; b < in->nblocks && rc == 0 && !r->read_only; b++)
		rc = write_block(r, b);
	return rc;
}

int ff_raid_intent_resync_waiting(struct ff_raid *r)
{
	int rc;

	if (!r->resync_waiting)
		return 0;
	rc = resync_marked(r);
	if (rc == 0) /* the superblock thread's clean pass may clear regions again */
		__atomic_store_n(&r->resync_waiting, false, __ATOMIC_RELEASE);
	return rc;
}

/* Close a member a role is letting go (promote, remove, replace) once no
 * intent record is being written through its fd: write_block reads the
 * role's fd unlocked, under in->lock, and a closed fd's number may be
 * reused by the next open. */
void ff_raid_intent_member_close(struct ff_raid *r, struct ff_member *m)
{
	if (r->intent)
		pthread_mutex_lock(&r->intent->lock);
	ff_raid_wwd_lock(r); /* the same for the degraded bitmap's records */
	ff_member_close(m);
	ff_raid_wwd_unlock(r);
	if (r->intent)
		pthread_mutex_unlock(&r->intent->lock);
}

uint64_t ff_raid_intent_marks(const struct ff_raid *r)
{
	return r->intent ? atomic_load(&r->intent->marks) : 0;
}
