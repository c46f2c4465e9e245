/* SPDX-License-Identifier: MIT */
/*
 * Entry points for fsck.framefs: the mount sequence of mount.c taken apart
 * so that the checker decides at each step (see check.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fs/volume/check.h"
#include "fs/volume/volume.h"
#include "raid/sb.h"

int ffs_check_open(const char *const *paths, unsigned n, bool ro, size_t meta_cache_bytes,
		   struct ffs **out, struct ff_err *err)
{
	struct ff_raid_opts o = { .read_only = ro, .workers = 2 };
	struct ffs *fs = calloc(1, sizeof(*fs));
	int rc;

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	fs->ro = ro;
	fs->checking = true;
	ffs_hooks_init(fs);
	fs->opts.ro = ro;
	fs->opts.meta_cache_bytes = meta_cache_bytes ? meta_cache_bytes : 256 * FF_MiB;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->commit_cond, NULL);
	pthread_cond_init(&fs->committed_cond, NULL);
	rc = ff_raid_assemble(paths, n, &o, &fs->raid, err);
	if (rc < 0) {
		pthread_mutex_destroy(&fs->lock);
		pthread_cond_destroy(&fs->commit_cond);
		pthread_cond_destroy(&fs->committed_cond);
		free(fs);
		return rc;
	}
	fs->g = ff_raid_geom(fs->raid);
	fs->stripe_bytes = fs->g->stripe_bytes;
	ffs_geo_init(fs);
	*out = fs;
	return 0;
}

int ffs_check_close(struct ffs *fs)
{
	int rc;

	ffs_icache_free(fs);
	ffs_meta_cache_free(fs);
	ffs_alloc_free_all(fs);
	ffs_journal_free(fs); /* what mount.c's teardown frees, but for the daemon's parts */
	free(fs->orows);
	free(fs->sb);
	rc = ff_raid_close(fs->raid);
	pthread_mutex_destroy(&fs->lock);
	pthread_cond_destroy(&fs->commit_cond);
	pthread_cond_destroy(&fs->committed_cond);
	free(fs);
	return rc;
}

/* len bytes at off of the META space, from copy `copy` only */
static int read_copy_bytes(struct ffs *fs, uint64_t off, uint32_t len, unsigned copy, void *buf)
{
	struct ff_raid_io io;

	FF_ASSERT(copy >= 1 && copy <= fs->g->meta_copies);
	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_READ;
	io.space = FF_SPACE_META;
	io.meta_copy = (uint8_t)copy;
	io.off = off;
	io.len = len;
	io.buf = buf;
	return ff_raid_submit_wait(fs->raid, &io);
}

int ffs_check_read_copy(struct ffs *fs, uint64_t no, unsigned copy, void *buf)
{
	return read_copy_bytes(fs, no * FFS_BLOCK, FFS_BLOCK, copy, buf);
}

int ffs_check_runs_init(struct ffs *fs, struct ffs_check_runs *runs)
{
	FF_ASSERT(fs->g->meta_copies <= FF_META_COPIES_MAX);
	memset(runs, 0, sizeof(*runs));
	runs->buf = ff_alloc_aligned((size_t)FF_META_COPIES_MAX * FF_META_CHUNK);
	return runs->buf ? 0 : -ENOMEM;
}

void ffs_check_runs_free(struct ffs_check_runs *runs)
{
	free(runs->buf);
	runs->buf = NULL;
}

int ffs_check_run_read(struct ffs *fs, struct ffs_check_runs *runs, uint64_t no, unsigned copy,
		       void *buf)
{
	uint64_t chunk = no / FFS_CHECK_RUN_BLOCKS, gen;
	uint8_t *win = runs->buf + (size_t)(copy - 1) * FF_META_CHUNK;

	FF_ASSERT(copy >= 1 && copy <= fs->g->meta_copies);
	if ((chunk + 1) * FF_META_CHUNK > fs->g->meta_bytes)
		return ffs_check_read_copy(fs, no, copy, buf); /* past the space: its error */
	gen = atomic_load(&ff_raid_stats(fs->raid)->meta_write_bytes);
	if (!runs->w[copy - 1].valid || runs->w[copy - 1].chunk != chunk || runs->w[copy - 1].gen != gen) {
		runs->w[copy - 1].chunk = chunk;
		runs->w[copy - 1].gen = gen;
		runs->w[copy - 1].valid = true;
		runs->w[copy - 1].failed =
			read_copy_bytes(fs, chunk * FF_META_CHUNK, FF_META_CHUNK, copy, win) < 0;
	}
	if (runs->w[copy - 1].failed)
		return ffs_check_read_copy(fs, no, copy, buf);
	memcpy(buf, win + (no % FFS_CHECK_RUN_BLOCKS) * FFS_BLOCK, FFS_BLOCK);
	return 0;
}

int ffs_check_run_read_sdata(struct ffs *fs, struct ffs_check_runs *runs, uint64_t no,
			     uint32_t crc, void *buf)
{
	int rc = -EIO;
	bool read = false;

	if (no >= ff_le64(fs->sb->meta_blocks) || ffs_meta_home_stale(fs, no))
		return ffs_meta_read_sdata(fs, no, crc, buf);
	for (unsigned k = 1; k <= fs->g->meta_copies; k++) {
		rc = ffs_check_run_read(fs, runs, no, k, buf); /* fails at once on a missing member */
		if (rc < 0)
			continue;
		if (ffs_sdata_crc(no, buf) == crc)
			return 0;
		read = true;
	}
	return read ? -EBADMSG : rc;
}

/* The layout mkfs would compute for the geometry the superblock was made
 * at (`made`: the array's, or its old one under a grow not taken on) and
 * its own inode and journal sizes must be exactly the superblock's; a
 * grow's records (version 6) where they belong, their checksum extension
 * xw chunks wide at least. */
static bool layout_matches(const struct ffs *fs, const struct ffs_super *sb,
			   const struct ff_geom *made_at, uint32_t xw)
{
	struct ffs_super *want = calloc(1, sizeof(*want));
	struct ff_err err;
	bool ok;

	bool v6 = ff_le32(sb->version) >= FFS_VERSION_GROWN;
	/* the layout mkfs made: with the checksum table's width (a grow keeps
	 * the table and adds an extension), at the version that made it, and
	 * the pool whole (a grow took its last pool_cut blocks) */
	struct ff_geom made = *made_at;
	uint64_t cut = v6 ? ff_le64(sb->grow.pool_cut) : 0;

	if (!want)
		return false;
	if (ff_le32(sb->csum_entry_bytes) > 8 && ff_le32(sb->csum_entry_bytes) < 8 + 4 * made.ndata) {
		made.ndata = (ff_le32(sb->csum_entry_bytes) - 8) / 4;
		made.stripe_bytes = (uint64_t)made.ndata * made.chunk_bytes;
	}
	ok = ffs_layout(want, &made, ff_le64(sb->ninodes), ff_le64(sb->journal_blocks),
			v6 ? FFS_VERSION_PATCH : ff_le32(sb->version), ff_le32(sb->small_max),
			&err) == 0;
#define SAME(f) (want->f == sb->f)
	ok = ok && SAME(meta_blocks) && SAME(journal_start) && SAME(journal_blocks) &&
	     SAME(itable_start) && SAME(itable_blocks) && SAME(ninodes) && SAME(ibitmap_start) &&
	     SAME(ibitmap_blocks) && SAME(sbitmap_start) && SAME(sbitmap_blocks) &&
	     SAME(mbitmap_start) && SAME(mbitmap_blocks) && SAME(csum_start) && SAME(csum_blocks) &&
	     SAME(csum_entry_bytes) && SAME(csum_per_block) && SAME(pool_start) &&
	     ff_le64(want->pool_blocks) == ff_le64(sb->pool_blocks) + cut &&
	     SAME(pcsum_start) && SAME(pcsum_blocks) && SAME(small_max);
#undef SAME
	ok = ok && (!v6 || ffs_grow_layout_ok(sb, xw, ff_le64(sb->meta_blocks)));
	free(want);
	return ok;
}

/* The data chunks the checksum table's entries hold: the width the volume
 * was made at (each grow's extension holds the rest); 0 for an entry size
 * too small, which the layout's check refuses. */
static uint32_t table_ndata(const struct ffs_super *sb)
{
	uint32_t e = ff_le32(sb->csum_entry_bytes);

	return e > sizeof(struct ffs_csum_entry) ? (e - (uint32_t)sizeof(struct ffs_csum_entry)) / 4 : 0;
}

/*
 * The geometry sb was made at on this array (struct ffs_grow_rec): the
 * array's, or on an array grown under a filesystem that has not taken the
 * grow on (PREPARED, or a grow the filesystem ended whose array has not),
 * the old one; *xw: the data chunks its checksum extension must hold.
 * NULL and *why when the grow it records does not fit the array.
 */
static const struct ff_geom *made_geom(const struct ffs *fs, const struct ffs_super *sb,
				       uint32_t *xw, const char **why)
{
	const struct ff_geom *g = fs->g, *old = ff_raid_geom_old(fs->raid);
	const struct ffs_grow_rec *gr = &sb->grow;
	uint32_t state = ff_le32(sb->version) >= FFS_VERSION_GROWN ? ff_le32(gr->state) : FFS_GROW_NONE;

	*xw = 0;
	*why = FFS_CHECK_GROW_MISFIT;
	switch (state) {
	case FFS_GROW_NONE:
		if (old && !ffs_grow_ended(sb, g)) {
			*why = FFS_CHECK_GROW_NO_RECORDS;
			return NULL;
		}
		/* grown before: the extension holds the chunks past the table's */
		*xw = g->ndata - table_ndata(sb);
		return g;
	case FFS_GROW_PREPARED: {
		/* the records were made on the old array, for new_nmembers */
		const struct ff_geom *at = old ? old : g;

		if (ff_le32(gr->old_level) != at->level || ff_le32(gr->old_nmembers) != at->nmembers ||
		    ff_le32(gr->old_ndata) != at->ndata || ff_le64(gr->old_stripe_bytes) != at->stripe_bytes ||
		    ff_le32(gr->new_level) != at->level || ff_le32(gr->new_nmembers) <= at->nmembers ||
		    (old && (ff_le32(gr->new_nmembers) != g->nmembers || ff_le32(gr->new_level) != g->level)))
			return NULL;
		/* the same level: the new width's data chunks past the table's */
		*xw = ff_le32(gr->new_nmembers) - (at->nmembers - at->ndata) - table_ndata(sb);
		return at;
	}
	case FFS_GROW_GROWING:
		if (!old || ff_le32(gr->old_level) != old->level || ff_le32(gr->old_nmembers) != old->nmembers ||
		    ff_le32(gr->old_ndata) != old->ndata || ff_le64(gr->old_stripe_bytes) != old->stripe_bytes ||
		    ff_le32(gr->new_nmembers) != g->nmembers || ff_le32(gr->new_level) != g->level)
			return NULL;
		*xw = g->ndata - table_ndata(sb);
		return g;
	default:
		*why = "unknown grow state";
		return NULL;
	}
}

const char *ffs_check_super_problem(const struct ffs *fs, const struct ffs_super *sb)
{
	const struct ff_geom *g = fs->g, *made;
	const char *why;
	uint32_t xw;

	if (ff_le64(sb->magic) != FFS_SB_MAGIC)
		return "no framefs magic";
	if (ff_le32(sb->version) < FFS_VERSION_MIN || ff_le32(sb->version) > FFS_VERSION_MAX ||
	    ff_le32(sb->block_bytes) != FFS_BLOCK)
		return "unsupported version or block size";
	if (memcmp(sb->uuid, ff_raid_uuid(fs->raid), 16) != 0)
		return "made for another array";
	made = made_geom(fs, sb, &xw, &why);
	if (!made)
		return why;
	if (ff_le32(sb->level) != made->level || ff_le32(sb->nmembers) != made->nmembers ||
	    ff_le32(sb->chunk_bytes) != g->chunk_bytes || ff_le32(sb->ndata) != made->ndata ||
	    ff_le64(sb->stripe_bytes) != made->stripe_bytes || ff_le64(sb->nstripes) != g->nstripes)
		return "geometry differs from the array";
	/* bound the sizes before computing with them */
	if (ff_le64(sb->meta_blocks) != g->meta_bytes / FFS_BLOCK ||
	    ff_le64(sb->journal_blocks) >= ff_le64(sb->meta_blocks) ||
	    ff_le64(sb->ninodes) / FFS_INODES_PER_BLOCK >= ff_le64(sb->meta_blocks) ||
	    !layout_matches(fs, sb, made, xw))
		return "layout is inconsistent";
	return NULL;
}

bool ffs_check_super_misfit(const char *why)
{
	static const char *const misfit[] = { "made for another array",
					      "unsupported version or block size",
					      "geometry differs from the array", "unknown grow state",
					      FFS_CHECK_GROW_MISFIT, FFS_CHECK_GROW_NO_RECORDS };

	for (unsigned i = 0; why && i < FF_ARRAY_SIZE(misfit); i++)
		if (!strcmp(why, misfit[i]))
			return true;
	return false;
}

int ffs_check_start(struct ffs *fs, const struct ffs_super *sb, unsigned next_copy)
{
	int rc;

	FF_ASSERT(!fs->sb && next_copy < 2);
	fs->sb = ff_alloc_aligned(FFS_BLOCK);
	if (!fs->sb)
		return -ENOMEM;
	memcpy(fs->sb, sb, FFS_BLOCK);
	fs->sb_next_copy = next_copy;
	if (ff_le32(sb->version) >= FFS_VERSION_GROWN && ff_le64(sb->grow.pool_cut))
		ffs_grow_records_use(fs); /* the checksums past the table's width */
	rc = ffs_meta_cache_init(fs, fs->opts.meta_cache_bytes);
	return rc < 0 ? rc : ffs_icache_init(fs);
}

int ffs_check_journal_pending(struct ffs *fs, bool *pending)
{
	bool ro = fs->ro;
	unsigned n = 0;
	int rc;

	/* read-only, ffs_journal_replay stops at the first committed transaction */
	fs->ro = true;
	rc = ffs_journal_replay(fs, &n);
	fs->ro = ro;
	*pending = rc == -EROFS;
	return rc == -EROFS ? 0 : rc;
}

int ffs_check_journal_replay(struct ffs *fs, unsigned *replayed)
{
	int rc;

	FF_ASSERT(!fs->ro);
	rc = ffs_journal_replay(fs, replayed);
	ffs_meta_cache_drop_clean(fs); /* replay wrote home blocks behind the cache */
	return rc;
}

int ffs_check_journal_discard(struct ffs *fs)
{
	FF_ASSERT(!fs->ro);
	/* a sequence number no record in the journal carries: replay stops at once */
	fs->j_head = ff_le64(fs->sb->journal_tail_pos);
	fs->j_seq = ff_le64(fs->sb->journal_tail_seq) + (1ull << 32);
	fs->j_used = 0;
	fs->sb->journal_tail_seq = ff_cpu_to_le64(fs->j_seq);
	ffs_meta_cache_drop_clean(fs);
	return ffs_super_write(fs);
}

int ffs_check_patch_pending(struct ffs *fs, unsigned *count)
{
	return ffs_patch_replay(fs, false, count);
}

int ffs_check_patch_replay(struct ffs *fs, unsigned *replayed)
{
	FF_ASSERT(!fs->ro);
	return ffs_patch_replay(fs, true, replayed);
}

int ffs_check_load_bitmaps(struct ffs *fs)
{
	int rc;

	FF_ASSERT(fs->checking); /* so that an unreadable block counts as in use */
	rc = ffs_alloc_load(fs);
	/* which rows are in which geometry, before anything reads a data row */
	return rc < 0 ? rc : ffs_grow_check_load(fs);
}

int ffs_check_finish(struct ffs *fs)
{
	int rc;

	FF_ASSERT(!fs->ro);
	/* commit and write everything home: nothing in the journal needs replaying */
	rc = ffs_journal_checkpoint(fs);
	if (rc < 0)
		return rc;
	fs->sb->state = ff_cpu_to_le32(FFS_CLEAN);
	rc = ffs_super_write(fs);
	return rc < 0 ? rc : ffs_super_write(fs);
}

/* ---- a superblock rebuilt from the array and the layout -------------------- */

/* The type of META block no by its header, from any mirror copy that
 * passes its checksum at this position; 0 when none does. */
static uint32_t type_at(struct ffs *fs, uint64_t no, void *buf)
{
	if (no >= fs->g->meta_bytes / FFS_BLOCK)
		return 0;
	for (unsigned k = 1; k <= fs->g->meta_copies; k++) {
		const struct ffs_bhdr *h = buf;

		if (ffs_check_read_copy(fs, no, k, buf) == 0 && ff_le64(h->blockno) == no &&
		    ff_csum_verify(buf, FFS_BLOCK, offsetof(struct ffs_bhdr, crc)) == 0)
			return ff_le32(h->type);
	}
	return 0;
}

/* The array's creation time, from any member superblock (0: none read). */
static uint64_t array_ctime(struct ffs *fs)
{
	struct ff_member_sb *msb = ff_alloc_aligned(sizeof(*msb));
	uint64_t t = 0;

	for (unsigned i = 0; msb && i < fs->g->nmembers && !t; i++) {
		struct ff_member *m = ff_raid_member(fs->raid, i);

		if (m && ff_sb_read(m, msb) == 0 && !memcmp(msb->array_uuid, ff_raid_uuid(fs->raid), 16))
			t = ff_le64(msb->ctime_s);
	}
	free(msb);
	return t;
}

/*
 * Is the layout in sb the one on disk?  The regions mkfs writes whole are
 * probed at both ends — the inode bitmap (its first block has inodes 0 and
 * the root taken), the stripe bitmap, the checksum table, the small-data
 * checksum table (versions 3 and later), the pool bitmap — with the first
 * inode-table block (the root directory, made at mkfs,
 * never before the array was created) and the blocks just outside: the
 * last inode-table block and the first pool block are no bitmap or
 * checksum block.  A probe that no copy of passes its checksum proves
 * nothing either way; one sealed as another type refutes the layout.  A
 * layout shifted by any number of blocks puts some probe on a neighbour
 * region's block.  *mkfs_s: the root's birth time.
 */
static bool layout_found(struct ffs *fs, const struct ffs_super *sb, uint64_t ctime_s, uint64_t *mkfs_s)
{
	struct probe {
		uint64_t no;
		uint32_t want;
	} p[] = {
		{ ff_le64(sb->itable_start), FFS_B_ITABLE },
		{ ff_le64(sb->ibitmap_start), FFS_B_BITMAP },
		{ ff_le64(sb->ibitmap_start) + ff_le64(sb->ibitmap_blocks) - 1, FFS_B_BITMAP },
		{ ff_le64(sb->sbitmap_start), FFS_B_BITMAP },
		{ ff_le64(sb->sbitmap_start) + ff_le64(sb->sbitmap_blocks) - 1, FFS_B_BITMAP },
		{ ff_le64(sb->csum_start), FFS_B_CSUM },
		{ ff_le64(sb->csum_start) + ff_le64(sb->csum_blocks) - 1, FFS_B_CSUM },
		{ ff_le64(sb->mbitmap_start), FFS_B_BITMAP },
		{ ff_le64(sb->mbitmap_start) + ff_le64(sb->mbitmap_blocks) - 1, FFS_B_BITMAP },
		{ ff_le64(sb->pcsum_start), FFS_B_PCSUM }, /* the last two: versions 3 and later */
		{ ff_le64(sb->pcsum_start) + ff_le64(sb->pcsum_blocks) - 1, FFS_B_PCSUM },
	};
	uint64_t outside[] = { ff_le64(sb->ibitmap_start) - 1, ff_le64(sb->pool_start) };
	unsigned nprobes = FF_ARRAY_SIZE(p) - (sb->pcsum_blocks ? 0 : 2);
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	unsigned distinct = 0, confirmed = 0;
	bool ok = buf != NULL, root = false, ibits = false;

	*mkfs_s = 0;
	for (unsigned i = 0; i < nprobes && ok; i++) {
		bool seen = false;
		uint32_t t;

		for (unsigned j = 0; j < i; j++)
			seen |= p[j].no == p[i].no;
		if (seen)
			continue;
		distinct++;
		t = type_at(fs, p[i].no, buf);
		if (!t)
			continue;
		if (t != p[i].want) {
			ok = false;
			break;
		}
		if (i == 0) { /* inode-table block 0: slot 1 is the root directory */
			const struct ffs_inode *r = &((const struct ffs_itable_block *)buf)->inodes[FFS_ROOT_INO];
			uint64_t born = ff_le64(r->btime_ns) / 1000000000ull;

			root = ff_le64(r->ino) == FFS_ROOT_INO && S_ISDIR(ff_le32(r->mode));
			/* a filesystem made before this array was created is an older one's */
			if (root && ctime_s && born + 10 < ctime_s)
				ok = false;
			*mkfs_s = born;
		}
		if (i == 1)
			ibits = (((const struct ffs_bitmap_block *)buf)->bits[0] & 3) == 3;
		confirmed++;
	}
	for (unsigned i = 0; i < FF_ARRAY_SIZE(outside) && ok; i++) {
		uint32_t t = type_at(fs, outside[i], buf);

		ok = t != FFS_B_BITMAP && t != FFS_B_CSUM && t != FFS_B_PCSUM &&
		     (i == 0 || t != FFS_B_ITABLE);
	}
	free(buf);
	/* everything but one probe confirmed, and the root or the inode bitmap's head seen */
	return ok && confirmed + 1 >= distinct && confirmed >= 3 && (root || ibits);
}

/* A candidate layout with journal_blocks and itable_blocks; true when found. */
static bool try_layout(struct ffs *fs, const struct ff_geom *made, struct ffs_super *sb,
		       uint64_t itable_blocks, uint64_t journal_blocks, uint64_t ctime_s,
		       uint64_t *mkfs_s)
{
	struct ff_err err;

	/* this version's layout with the default threshold, then the one
	 * older versions had (no small-data table), as version 1: the version
	 * every binary since reads, which fsck raises to 2 when it meets a
	 * value chain (a version 2 volume without one is a version 1 volume) */
	for (unsigned v = 0; v < 2; v++) {
		memset(sb, 0, sizeof(*sb));
		if (ffs_layout(sb, made, itable_blocks * FFS_INODES_PER_BLOCK, journal_blocks,
			       v ? FFS_VERSION_MIN : FFS_VERSION, FFS_SMALL_DEFAULT, &err) == 0 &&
		    ff_le64(sb->journal_blocks) >= 64 && layout_found(fs, sb, ctime_s, mkfs_s))
			return true;
	}
	return false;
}

/* Read META [from, to) in 1 MiB pieces; fn gets each block sealed at its
 * own position (by the copy read), and stops the scan by returning true. */
static int scan_sealed(struct ffs *fs, uint64_t from, uint64_t to,
		       bool (*fn)(void *arg, uint64_t no, const void *blk), void *arg, bool *stopped)
{
	const uint64_t batch = 256;
	uint8_t *buf = ff_alloc_aligned(batch * FFS_BLOCK);

	*stopped = false;
	if (!buf)
		return -ENOMEM;
	for (uint64_t b = from; b < to && !*stopped; b += batch) {
		uint64_t n = FF_MIN(batch, to - b);

		if (ff_raid_rw(fs->raid, FF_RAID_READ, FF_SPACE_META, b * FFS_BLOCK, buf, n * FFS_BLOCK) < 0)
			continue; /* unreadable: nothing found there */
		for (uint64_t i = 0; i < n && !*stopped; i++) {
			const struct ffs_bhdr *h = (const struct ffs_bhdr *)(buf + i * FFS_BLOCK);

			if (ff_le64(h->blockno) == b + i &&
			    ff_csum_verify(h, FFS_BLOCK, offsetof(struct ffs_bhdr, crc)) == 0)
				*stopped = fn(arg, b + i, h);
		}
	}
	free(buf);
	return 0;
}

struct layout_search {
	struct ffs *fs;
	struct ffs_super *sb;
	struct ff_geom made;     /* the geometry mkfs laid it out for (made_width) */
	uint64_t ctime_s, mkfs_s;
	uint64_t itable_start;   /* the candidate being completed */
	uint64_t tried[16];      /* inode-table starts already tried */
	unsigned ntried;
	int err;
};

/* An inode-bitmap head after the candidate table: is the table that long? */
static bool on_bitmap(void *arg, uint64_t no, const void *blk)
{
	struct layout_search *s = arg;
	const struct ffs_bitmap_block *bm = blk;

	if (ff_le32(bm->h.type) != FFS_B_BITMAP || (bm->bits[0] & 3) != 3)
		return false;
	return try_layout(s->fs, &s->made, s->sb, no - s->itable_start,
			  s->itable_start - FFS_JOURNAL_START, s->ctime_s, &s->mkfs_s);
}

/* An inode-table block at its place: table block k holds inodes 15k..15k+14,
 * so it says where the table starts, and so how long the journal is. */
static bool on_itable(void *arg, uint64_t no, const void *blk)
{
	struct layout_search *s = arg;
	const struct ffs_itable_block *it = blk;
	uint64_t k = UINT64_MAX, start;
	bool stopped = false;

	if (ff_le32(it->h.type) != FFS_B_ITABLE)
		return false;
	for (unsigned i = 0; i < FFS_INODES_PER_BLOCK && k == UINT64_MAX; i++) {
		uint64_t ino = ff_le64(it->inodes[i].ino);

		if (ino && ino % FFS_INODES_PER_BLOCK == i)
			k = ino / FFS_INODES_PER_BLOCK;
	}
	if (k == UINT64_MAX || k > no || no - k < FFS_JOURNAL_START + 64)
		return false;
	start = no - k;
	for (unsigned i = 0; i < s->ntried; i++)
		if (s->tried[i] == start)
			return false;
	if (s->ntried == FF_ARRAY_SIZE(s->tried))
		return true; /* give up: too many candidates */
	s->tried[s->ntried++] = start;
	s->itable_start = start;
	s->err = scan_sealed(s->fs, start + k + 1, s->fs->g->meta_bytes / FFS_BLOCK, on_bitmap, s,
			     &stopped);
	return stopped || s->err < 0;
}

/*
 * The geometry mkfs laid the volume out for: the array's, or on an array
 * grown since (and done growing: a grow under way is never rebuilt over,
 * fsck_pass1.c) the width it was made at, which its META space keeps
 * (raid.h, meta_members) and with it the checksum table's entry width.
 */
static struct ff_geom made_width(const struct ff_geom *g)
{
	struct ff_geom m = *g;

	if (g->meta_members && g->meta_members < g->nmembers) {
		m.nmembers = g->meta_members;
		m.ndata = m.nmembers - m.nparity;
		m.stripe_bytes = (uint64_t)m.ndata * m.chunk_bytes;
		m.data_bytes = m.nstripes * m.stripe_bytes; /* mkfs's default inode count */
	}
	return m;
}

/*
 * A superblock rebuilt at the width the volume was made at (sb), for the
 * grown array it lives on: its grow's records found (format.h, struct
 * ffs_grow_rec).  Each grow cut its records from the end of the pool, the
 * newest lowest: a checksum extension (FFS_B_CSUMX blocks), then an
 * old-rows map (FFS_B_BITMAP, the same length for every grow).  Walking
 * down from the pool's end, group after group; the one in use is the one
 * whose extension is as long as the array's width needs (earlier grows'
 * were narrower; a grow prepared and left, lower still in the pool, was
 * wider).  When two groups have that length (a small volume: one block
 * holds every row at either width), which one is in use cannot be told and
 * *why says so: a superblock from a guess would pair rows with another
 * grow's checksums.
 */
static int grown_records(struct ffs *fs, struct ffs_super *sb, const char **why)
{
	const struct ff_geom *g = fs->g;
	uint64_t n = g->nstripes, end = ff_le64(sb->pool_start) + ff_le64(sb->pool_blocks);
	uint32_t table = table_ndata(sb), xw = g->ndata - table;
	uint64_t ext, orows, b = end, found = 0, start = 0;
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	struct ffs_grow_rec *gr = &sb->grow;

	FF_ASSERT(g->ndata > table); /* made narrower at the same level (made_width) */
	if (!buf)
		return -ENOMEM;
	memset(gr, 0, sizeof(*gr));
	ffs_grow_rec_place(gr, n, xw, 0); /* the sizes the records in use have */
	ext = ff_le64(gr->ext_blocks);
	orows = ff_le64(gr->orows_blocks);
	for (;;) {
		uint64_t k = 0, c = 0;

		while (k < orows && b - k > ff_le64(sb->pool_start) &&
		       type_at(fs, b - k - 1, buf) == FFS_B_BITMAP)
			k++;
		if (k < orows)
			break; /* no old-rows map here: no more records */
		while (b - orows - c > ff_le64(sb->pool_start) &&
		       type_at(fs, b - orows - c - 1, buf) == FFS_B_CSUMX)
			c++;
		if (!c)
			break;
		b -= orows + c;
		if (c == ext) {
			found++;
			start = b;
		}
	}
	free(buf);
	if (found != 1) {
		*why = found ? "its grows' records are too alike to tell which is in use"
			     : "the records of its grow are not where they belong";
		return -ENOENT;
	}
	sb->version = ff_cpu_to_le32(FFS_VERSION_GROWN);
	sb->nmembers = ff_cpu_to_le32(g->nmembers);
	sb->ndata = ff_cpu_to_le32(g->ndata);
	sb->stripe_bytes = ff_cpu_to_le64(g->stripe_bytes);
	gr->state = ff_cpu_to_le32(FFS_GROW_NONE);
	gr->old_level = ff_cpu_to_le32(g->level); /* the width it was made at */
	gr->old_nmembers = ff_cpu_to_le32(g->meta_members);
	gr->old_ndata = ff_cpu_to_le32(table);
	gr->old_stripe_bytes = ff_cpu_to_le64((uint64_t)table * g->chunk_bytes);
	gr->new_level = ff_cpu_to_le32(g->level);
	gr->new_nmembers = ff_cpu_to_le32(g->nmembers);
	gr->pool_cut = ff_cpu_to_le64(end - start);
	ffs_grow_rec_place(gr, n, xw, start);
	sb->pool_blocks = ff_cpu_to_le64(start - ff_le64(sb->pool_start));
	return 0;
}

int ffs_check_rebuild_super(struct ffs *fs, struct ffs_super *sb, uint64_t generation,
			    struct ffs_check_rebuilt *info)
{
	struct layout_search s = { .fs = fs, .sb = sb, .made = made_width(fs->g) };
	bool found;
	int rc;

	FF_ASSERT(!fs->sb);
	memset(info, 0, sizeof(*info));
	s.ctime_s = array_ctime(fs);
	/* mkfs's defaults first, then the layout the inode table shows */
	found = info->default_layout = try_layout(fs, &s.made, sb, 0, 0, s.ctime_s, &s.mkfs_s);
	if (!found) {
		rc = scan_sealed(fs, FFS_JOURNAL_START + 64, fs->g->meta_bytes / FFS_BLOCK, on_itable, &s,
				 &found);
		if (rc < 0 || s.err < 0)
			return rc < 0 ? rc : s.err;
		found = found && s.ntried <= FF_ARRAY_SIZE(s.tried) && ff_le64(sb->ninodes);
	}
	if (!found || layout_matches(fs, sb, &s.made, 0) == false)
		return -ENOENT;
	if (s.made.nmembers != fs->g->nmembers) {
		rc = grown_records(fs, sb, &info->grown_why);
		if (rc < 0)
			return rc;
		info->grown = true;
	}
	sb->magic = ff_cpu_to_le64(FFS_SB_MAGIC);
	sb->block_bytes = ff_cpu_to_le32(FFS_BLOCK);
	sb->generation = ff_cpu_to_le64(generation);
	memcpy(sb->uuid, ff_raid_uuid(fs->raid), 16);
	snprintf(sb->label, sizeof(sb->label), "%s", ff_raid_label(fs->raid));
	sb->itable_hwm = ff_cpu_to_le64(1); /* raised from the inode bitmap once it is loaded */
	sb->state = ff_cpu_to_le32(FFS_DIRTY);
	sb->flags = ff_cpu_to_le32(FFS_F_SB_COPIES4);
	sb->mkfs_time = ff_cpu_to_le64(s.mkfs_s ? s.mkfs_s : s.ctime_s);
	sb->write_time = ff_cpu_to_le64((uint64_t)time(NULL));
	info->ninodes = ff_le64(sb->ninodes);
	info->journal_blocks = ff_le64(sb->journal_blocks);
	/* the journal: where replay starts (journal.c) */
	fs->sb = sb;
	{
		uint64_t pos, seq;

		rc = ffs_journal_find_tail(fs, &pos, &seq, &info->pending);
		sb->journal_tail_pos = ff_cpu_to_le64(pos);
		sb->journal_tail_seq = ff_cpu_to_le64(seq);
	}
	fs->sb = NULL;
	if (rc == 0 && ffs_check_super_problem(fs, sb))
		rc = -ENOENT;
	return rc;
}

void ffs_check_hwm_from_bitmap(struct ffs *fs)
{
	uint64_t end = ffs_tools_inodes_end(fs);

	ffs_tools_set_itable_hwm(fs, (end ? end - 1 : 0) / FFS_INODES_PER_BLOCK + 1);
}
