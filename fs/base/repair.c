/* SPDX-License-Identifier: MIT */
/*
 * Repair of data stripes whose chunks fail their checksums: the one way
 * the read path, scrub and fsck -c rewrite a damaged stripe.
 *
 * A repair never trusts the bytes it repairs.  The stripe is rebuilt in
 * memory around every member that holds a bad chunk, every data chunk is
 * checked against the checksum table, and the verified stripe is written
 * back whole: a full-stripe write, whose P and Q the engine computes from
 * that buffer alone.  Rewriting just the bad chunk is not safe: on wider
 * arrays (RAID5 x 5 and up, RAID6 x 7 and up) the engine serves a one-chunk
 * write by read-modify-write, which reads the bad chunk still on disk and
 * folds it into P and Q — the file reads right, and the next member lost
 * takes the stripe with it.  After the write the stripe is read back with
 * a parity check, so that a repair that did not hold is reported, not
 * counted.
 *
 * Rewriting the good chunks too costs a stripe's worth of writes, once per
 * damaged stripe; the bytes are those already on disk, so a crash half-way
 * leaves them as they were (the write-intent record covers the parity).
 *
 * A tail stripe (tail.c) is checked over the rows its entry says are
 * written (vlen); the daemon appends to it, so a repair while mounted
 * holds it first (ffs_tail_hold): no rows are written to it after that,
 * and the whole-stripe write is as safe as for any other stripe.
 */
#include <errno.h>
#include <string.h>

#include "fs/fs_i.h"

uint32_t ffs_repair_bad_chunks(struct ffs *fs, uint64_t p, const void *buf, const uint32_t *crc,
			       uint32_t vlen)
{
	const struct ff_geom *g = ffs_row_geo(fs, p)->g;
	uint32_t C = g->chunk_bytes, bad = 0;

	for (uint32_t i = 0; i < g->ndata; i++)
		if (ff_crc32c(0, (const uint8_t *)buf + (size_t)i * C, vlen) != crc[i])
			bad |= 1u << i;
	return bad;
}

/* Stripe p through io: op (a read or a parity-checking read) into buf,
 * with the members in avoid treated as missing. */
static void stripe_io_prep(struct ffs *fs, struct ff_raid_io *io, int op, uint64_t p,
			   uint32_t avoid, void *buf)
{
	const struct ffs_geo *geo = ffs_row_geo(fs, p);

	memset(io, 0, sizeof(*io));
	io->op = (uint8_t)op;
	io->space = FF_SPACE_DATA;
	io->flags = geo->raid_flags;
	io->off = p * geo->g->stripe_bytes;
	io->len = geo->g->stripe_bytes;
	io->buf = buf;
	io->avoid_members = avoid;
}

static int stripe_io(struct ffs *fs, struct ff_raid_io *io, int op, uint64_t p, uint32_t avoid,
		     void *buf)
{
	stripe_io_prep(fs, io, op, p, avoid, buf);
	return ff_raid_submit_wait(fs->raid, io);
}

int ffs_repair_read_around(struct ffs *fs, uint64_t p, uint32_t avoid, void *buf)
{
	struct ff_raid_io io;

	return stripe_io(fs, &io, FF_RAID_READ, p, avoid, buf);
}

int ffs_repair_read_bytes_around(struct ffs *fs, uint64_t p, uint64_t off, uint32_t len,
				 uint32_t avoid, void *buf)
{
	struct ff_raid_io io;

	stripe_io_prep(fs, &io, FF_RAID_READ, p, avoid, buf);
	io.off += off;
	io.len = len;
	return ff_raid_submit_wait(fs->raid, &io);
}

static bool rebuilt_around(struct ffs *fs, uint64_t p, uint32_t avoid, const uint32_t *crc,
			   uint32_t vlen, void *buf)
{
	return (unsigned)__builtin_popcount(avoid) <= ffs_row_geo(fs, p)->g->nparity &&
	       ffs_repair_read_around(fs, p, avoid, buf) == 0 &&
	       ffs_repair_bad_chunks(fs, p, buf, crc, vlen) == 0;
}

int ffs_repair_reconstruct(struct ffs *fs, uint64_t p, uint32_t bad, const uint32_t *crc,
			   uint32_t vlen, void *buf)
{
	const struct ff_geom *g = ffs_row_geo(fs, p)->g;
	uint32_t avoid = 0, parity = (uint32_t)((1ull << g->nmembers) - 1); /* up to 32 */

	for (uint32_t i = 0; i < g->ndata; i++) {
		uint32_t m = 1u << ff_raid_chunk_member(fs->raid, p, i);

		parity &= ~m; /* what no data chunk of p is on: its P (and Q) */
		if (bad & (1u << i))
			avoid |= m;
	}
	if (rebuilt_around(fs, p, avoid, crc, vlen, buf))
		return 0;
	/*
	 * The rebuilt chunks are still wrong: on RAID6 a parity chunk may be
	 * damaged too (one lost data chunk is rebuilt from P alone).  Leave
	 * each parity member out in turn while the budget allows.
	 */
	for (uint32_t m = 0; m < g->nmembers; m++)
		if ((parity & (1u << m)) && rebuilt_around(fs, p, avoid | 1u << m, crc, vlen, buf))
			return 0;
	return -EIO;
}

/* Stripe p into buf, its parity compared with its data: -EIO if it differs. */
static int read_checked(struct ffs *fs, uint64_t p, void *buf)
{
	struct ff_raid_io io;
	int rc = stripe_io(fs, &io, FF_RAID_CHECK, p, 0, buf);

	if (rc == -EAGAIN) /* degraded: a read rebuilds what is missing from the parity written */
		return ffs_repair_read_around(fs, p, 0, buf);
	if (rc == 0 && atomic_load(&io.check_mismatch))
		return -EIO;
	return rc;
}

static void log_failure(struct ffs *fs, uint64_t p, uint32_t bad, const char *what, int rc)
{
	ff_log(FF_LOG_ERR, "data stripe %llu (bad chunks 0x%x): repair %s: %s",
	       (unsigned long long)p, bad, what, strerror(-rc));
}

int ffs_repair_rewrite(struct ffs *fs, uint64_t p, const void *buf, uint32_t bad)
{
	const struct ffs_geo *geo = ffs_row_geo(fs, p);
	uint64_t S = geo->g->stripe_bytes;
	struct ff_raid_io io = { .op = FF_RAID_WRITE, .space = FF_SPACE_DATA,
				 .flags = geo->raid_flags, .off = p * S, .len = S, .buf = (void *)buf };
	uint8_t *back;
	int rc;

	/* the whole stripe: the engine computes parity from buf, reads nothing */
	rc = ff_raid_submit_wait(fs->raid, &io);
	if (rc < 0) {
		log_failure(fs, p, bad, "could not write the stripe", rc);
		return rc;
	}
	back = ff_alloc_aligned(S); /* a repair is rare: no pool for it */
	if (!back)
		return -ENOMEM;
	rc = read_checked(fs, p, back);
	if (rc == 0 && memcmp(back, buf, S) != 0)
		rc = -EIO;
	free(back);
	if (rc < 0)
		log_failure(fs, p, bad, "written, but parity or data do not read back", rc);
	return rc;
}
