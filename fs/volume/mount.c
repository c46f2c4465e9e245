/* SPDX-License-Identifier: MIT */
/*
 * Making, mounting and unmounting the filesystem.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "fs/volume/volume.h"
#include "io/bitmap.h"
#include "raid/label.h"

/* ---- mkfs ----------------------------------------------------------------- */

/* Write count fresh blocks of one type starting at `first`, 256 at a time. */
static int init_blocks(struct ff_raid *r, uint64_t first, uint64_t count, uint32_t type,
		       bool quiet, const char *what)
{
	const uint64_t batch = 256;
	uint8_t *buf = ff_alloc_aligned(batch * FFS_BLOCK);
	uint64_t t0 = ff_mono_ns(), last = 0;
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (uint64_t done = 0; done < count && rc == 0;) {
		uint64_t n = FF_MIN(batch, count - done);

		memset(buf, 0, n * FFS_BLOCK);
		for (uint64_t i = 0; i < n; i++)
			ffs_block_seal(buf + i * FFS_BLOCK, type, first + done + i);
		rc = ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, (first + done) * FFS_BLOCK, buf,
				n * FFS_BLOCK);
		done += n;
		if (!quiet && count > 4096 && ff_mono_ns() - last > 500000000ull) {
			last = ff_mono_ns();
			fprintf(stderr, "\r  %-24s %3llu%%", what, (unsigned long long)(done * 100 / count));
		}
	}
	if (!quiet && count > 4096)
		fprintf(stderr, "\r  %-24s done in %.1f s\n", what, (double)(ff_mono_ns() - t0) / 1e9);
	free(buf);
	return rc;
}

static void root_inode(struct ffs_inode *d)
{
	uint64_t now = ff_wall_ns();

	memset(d, 0, sizeof(*d));
	d->ino = ff_cpu_to_le64(FFS_ROOT_INO);
	d->mode = ff_cpu_to_le32(S_IFDIR | 0755);
	d->nlink = ff_cpu_to_le32(2);
	d->generation = ff_cpu_to_le32(1);
	d->parent = ff_cpu_to_le64(FFS_ROOT_INO);
	d->atime_ns = d->mtime_ns = d->ctime_ns = d->btime_ns = ff_cpu_to_le64(now);
}

static int mkfs_write(struct ff_raid *r, struct ffs_super *sb, bool quiet)
{
	uint8_t *blk = ff_alloc_aligned(FFS_BLOCK);
	int rc;

	if (!blk)
		return -ENOMEM;
	rc = init_blocks(r, ff_le64(sb->itable_start), 1, FFS_B_ITABLE, true, "");
	if (rc == 0) { /* inode table block 0: the root directory */
		struct ffs_itable_block *it = (struct ffs_itable_block *)blk;

		memset(blk, 0, FFS_BLOCK);
		root_inode(&it->inodes[FFS_ROOT_INO]);
		ffs_block_seal(blk, FFS_B_ITABLE, ff_le64(sb->itable_start));
		rc = ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, ff_le64(sb->itable_start) * FFS_BLOCK,
				blk, FFS_BLOCK);
	}
	if (rc == 0)
		rc = init_blocks(r, ff_le64(sb->ibitmap_start), ff_le64(sb->ibitmap_blocks),
				 FFS_B_BITMAP, quiet, "inode bitmap");
	if (rc == 0) { /* inodes 0 (never used) and 1 (root) are taken */
		struct ffs_bitmap_block *bm = (struct ffs_bitmap_block *)blk;

		memset(blk, 0, FFS_BLOCK);
		bm->bits[0] = 0x3;
		ffs_block_seal(blk, FFS_B_BITMAP, ff_le64(sb->ibitmap_start));
		rc = ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, ff_le64(sb->ibitmap_start) * FFS_BLOCK,
				blk, FFS_BLOCK);
	}
	if (rc == 0)
		rc = init_blocks(r, ff_le64(sb->sbitmap_start), ff_le64(sb->sbitmap_blocks),
				 FFS_B_BITMAP, quiet, "stripe bitmap");
	if (rc == 0)
		rc = init_blocks(r, ff_le64(sb->mbitmap_start), ff_le64(sb->mbitmap_blocks),
				 FFS_B_BITMAP, quiet, "metadata bitmap");
	if (rc == 0)
		rc = init_blocks(r, ff_le64(sb->csum_start), ff_le64(sb->csum_blocks), FFS_B_CSUM,
				 quiet, "checksum table");
	if (rc == 0)
		rc = init_blocks(r, ff_le64(sb->pcsum_start), ff_le64(sb->pcsum_blocks), FFS_B_PCSUM,
				 quiet, "small-data checksums");
	if (rc == 0)
		rc = init_blocks(r, FFS_ORPHAN_BLOCK, 1, FFS_B_ORPHAN, true, "");
	/* group A+C generation 1, group B+D generation 2 (format.h) */
	sb->flags = ff_cpu_to_le32(FFS_F_SB_COPIES4);
	for (unsigned copy = 0; copy < FFS_SB_COPIES && rc == 0; copy++) {
		uint64_t at = ffs_sb_block[copy];

		sb->generation = ff_cpu_to_le64(copy % 2 + 1);
		ffs_block_seal(sb, FFS_B_SUPER, at);
		rc = ff_raid_rw(r, FF_RAID_WRITE, FF_SPACE_META, at * FFS_BLOCK, sb, FFS_BLOCK);
	}
	if (rc == 0)
		rc = ff_raid_flush(r);
	free(blk);
	return rc;
}

/* Blocks of META that ffs_layout lays out for `ninodes` inodes with `small`
 * bytes of small-file room in the pool (ffs_mkfs_params, geometry g). */
static uint64_t meta_blocks_for(const struct ffs_mkfs_params *p, const struct ff_geom *g,
				uint64_t ninodes, uint64_t small)
{
	/* the pool: the small data, the trees and xattrs of the inodes, and
	 * the sixteenth of the pool small data leaves to them (small.c
	 * pool_reserve), on top */
	uint64_t pool = (small + ninodes * FFS_TREES_PER_INODE) / FFS_BLOCK * 16 / 15;
	/* and never less than twice the 1024 blocks ffs_layout asks for */
	pool = FF_MAX(pool, 2048ull);
	/* what ffs_layout places around it */
	uint64_t blocks = FF_DIV_ROUND_UP(ninodes, FFS_INODES_PER_BLOCK) +
			  FF_DIV_ROUND_UP(ninodes, FFS_BITS_PER_BLOCK) +
			  FF_DIV_ROUND_UP(g->nstripes, FFS_BITS_PER_BLOCK) +
			  FF_DIV_ROUND_UP(g->nstripes, (FFS_BLOCK - 16) / (8 + 4 * g->ndata)) +
			  pool + FF_DIV_ROUND_UP(pool, FFS_PCSUM_PER_BLOCK) +
			  FF_DIV_ROUND_UP(pool, FFS_BITS_PER_BLOCK) + FFS_JOURNAL_START;

	/* and the journal: ffs_layout's default is a sixteenth of the area it
	 * lays out, between 1024 and 65536 blocks */
	if (p->journal_blocks)
		return blocks + p->journal_blocks;
	return blocks + FF_MIN(FF_MAX(blocks / 15, 1024ull), 65536ull);
}

static uint64_t member_share(const struct ff_geom *g, uint64_t blocks)
{
	return FF_ROUND_UP(FF_DIV_ROUND_UP(blocks * FFS_BLOCK * g->meta_copies, g->nmembers),
			   FF_META_CHUNK);
}

/*
 * The metadata area each member gives (ff_raid_create_params): what the
 * layout asked for needs, and at least 1/512 of the member (ffs.h
 * FFS_INODES_MIN says why both).  The geometry it is sized on has the
 * smallest area, so its stripe count bounds the real one's from above.
 */
static int meta_member_bytes(const char *const *paths, unsigned n, const struct ffs_mkfs_params *p,
			     uint32_t small_max, uint64_t *out, struct ff_err *err)
{
	uint64_t smallest = UINT64_MAX, want, small, bare, ninodes;
	struct ff_geom g;
	int rc;

	*out = 0;
	for (unsigned i = 0; i < n; i++) {
		struct ff_member m;

		if (ff_member_open(&m, paths[i], true, err) < 0)
			return 0; /* ff_raid_create names the member that cannot be opened */
		smallest = FF_MIN(smallest, m.size_bytes);
		ff_member_close(&m);
	}
	rc = ff_geom_compute(&g, p->level, n, p->chunk_bytes ? p->chunk_bytes : 512 * 1024,
			     smallest, FF_META_CHUNK, 4096, err);
	if (rc < 0)
		return 0; /* the same: ff_raid_create says what is wrong */
	ninodes = p->ninodes ? p->ninodes : FFS_INODES_MIN;
	small = !small_max ? 0 : p->ninodes ? p->ninodes * FFS_SMALL_PER_INODE
					    : g.data_bytes / FFS_SMALL_DEFAULT_SHARE;
	/* the small-file room takes at most a third of each member: the rest
	 * stays for frames, and small files past the room take stripes */
	want = member_share(&g, meta_blocks_for(p, &g, ninodes, small));
	bare = member_share(&g, meta_blocks_for(p, &g, ninodes, 0));
	want = FF_MAX(bare, FF_MIN(want, g.member_bytes / 3 / FF_META_CHUNK * FF_META_CHUNK));
	*out = FF_MAX(want, FF_ROUND_UP(g.member_bytes / 512, FF_META_CHUNK));
	return 0;
}

int ffs_mkfs(const char *const *paths, unsigned n, const struct ffs_mkfs_params *p,
	     struct ff_err *err)
{
	struct ff_raid_create_params rp;
	struct ff_raid_opts ro = { 0 };
	struct ffs_super *sb = ff_alloc_aligned(sizeof(*sb));
	struct ff_raid *r;
	uint32_t small_max;
	int rc;

	if (!sb)
		return -ENOMEM;
	memset(&rp, 0, sizeof(rp));
	rp.level = p->level;
	rp.chunk_bytes = p->chunk_bytes ? p->chunk_bytes : 512 * 1024;
	rp.force = p->force;
	rp.discard = p->discard;
	small_max = p->small_max == FFS_SMALL_OFF ? 0 : p->small_max ? p->small_max : FFS_SMALL_DEFAULT;
	if (p->version && (p->version < FFS_VERSION_MIN || p->version > FFS_VERSION)) {
		ff_err_set(err, "format version %u cannot be made (%u to %u)", p->version,
			   FFS_VERSION_MIN, FFS_VERSION);
		rc = -EINVAL;
		goto out;
	}
	if (p->version && p->version < FFS_VERSION_SMALL)
		small_max = 0;
	rc = meta_member_bytes(paths, n, p, small_max, &rp.meta_member_bytes, err);
	if (rc < 0)
		goto out;
	rp.discard_out = p->discard_out;
	memcpy(rp.label, p->label, sizeof(rp.label));
	rp.label[sizeof(rp.label) - 1] = '\0';
	rc = ff_raid_create(paths, n, &rp, err);
	if (rc < 0)
		goto out;
	rc = ff_raid_assemble(paths, n, &ro, &r, err);
	if (rc < 0)
		goto out;
	memset(sb, 0, sizeof(*sb));
	rc = ffs_layout(sb, ff_raid_geom(r), p->ninodes, p->journal_blocks,
			p->version ? p->version : FFS_VERSION, small_max, err);
	if (rc == 0) {
		uint64_t now = (uint64_t)time(NULL);

		sb->magic = ff_cpu_to_le64(FFS_SB_MAGIC);
		sb->block_bytes = ff_cpu_to_le32(FFS_BLOCK);
		memcpy(sb->uuid, ff_raid_uuid(r), 16);
		memcpy(sb->label, rp.label, sizeof(sb->label));
		sb->itable_hwm = ff_cpu_to_le64(1);
		sb->journal_tail_seq = ff_cpu_to_le64(1);
		sb->journal_tail_pos = 0;
		sb->state = ff_cpu_to_le32(FFS_CLEAN);
		sb->mkfs_time = sb->write_time = ff_cpu_to_le64(now);
		rc = mkfs_write(r, sb, p->quiet);
		if (rc < 0)
			ff_err_set(err, "cannot write the filesystem: %s", strerror(-rc));
	}
	if (rc == 0 && p->layout_out) {
		p->layout_out->small_max = ff_le32(sb->small_max);
		p->layout_out->pool_blocks = ff_le64(sb->pool_blocks);
		p->layout_out->version = ff_le32(sb->version);
	}
	if (ff_raid_close(r) < 0 && rc == 0)
		rc = -EIO;
out:
	free(sb);
	return rc;
}

/* ---- mount ----------------------------------------------------------------- */

void ffs_geo_init(struct ffs *fs)
{
	const struct ff_geom *o = ff_raid_geom_old(fs->raid);

	fs->geo[0] = (struct ffs_geo){ .g = fs->g };
	if (o)
		fs->geo[1] = (struct ffs_geo){ .g = o, .raid_flags = FF_RAID_IO_OLD_GEOM };
}

/* Is sb usable on this array?  0, or why not in err. */
static int check_super(const struct ffs *fs, const struct ffs_super *sb, struct ff_err *err)
{
	const struct ff_geom *g = fs->g, *old = ff_raid_geom_old(fs->raid);
	const struct ffs_grow_rec *gr = &sb->grow;
	bool v6 = ff_le32(sb->version) >= FFS_VERSION_GROWN;
	uint32_t state = v6 ? ff_le32(gr->state) : FFS_GROW_NONE, xw = v6 ? ff_le32(gr->ext_width) : 0;
	/* the geometry the superblock's fields describe: the array's, or the
	 * old one of an array grown under a filesystem that has not taken the
	 * grow on (PREPARED: this mount does, fs/grow/grow.c) */
	const struct ff_geom *made = old && state != FFS_GROW_GROWING && !ffs_grow_ended(sb, g) ? old
											: g;
	/* data chunks the checksum table's entries hold (the rest: the grow's
	 * extension, made for the width the grow goes to when PREPARED) */
	uint32_t table_ndata = state == FFS_GROW_PREPARED
		? ff_le32(gr->new_nmembers) - (made->nmembers - made->ndata) - xw : made->ndata - xw;
	uint64_t meta = g->meta_bytes / FFS_BLOCK;

	if (ff_le64(sb->magic) != FFS_SB_MAGIC) {
		ff_err_set(err, "no framefs magic");
		return -EINVAL;
	}
	if (ff_le32(sb->version) < FFS_VERSION_MIN || ff_le32(sb->version) > FFS_VERSION_MAX) {
		ff_err_set(err, "filesystem version %u is not supported (this framefs reads versions "
			   "%u to %u): use the framefs that made it", ff_le32(sb->version),
			   FFS_VERSION_MIN, FFS_VERSION_MAX);
		return -EINVAL;
	}
	if (memcmp(sb->uuid, ff_raid_uuid(fs->raid), 16) != 0) {
		ff_err_set(err, "filesystem does not belong to this array (uuid differs)");
		return -EINVAL;
	}
	if (state == FFS_GROW_GROWING &&
	    (!old || ff_le32(gr->old_level) != old->level || ff_le32(gr->old_nmembers) != old->nmembers ||
	     ff_le32(gr->old_ndata) != old->ndata || ff_le64(gr->old_stripe_bytes) != old->stripe_bytes)) {
		ff_err_set(err, "the filesystem is growing from %u members but the array's old "
			   "geometry is %u members: not the array it grows on",
			   ff_le32(gr->old_nmembers), old ? old->nmembers : g->nmembers);
		return -EINVAL;
	}
	if (state == FFS_GROW_PREPARED && old &&
	    (ff_le32(gr->new_nmembers) != g->nmembers || ff_le32(gr->new_level) != g->level)) {
		ff_err_set(err, "the filesystem was prepared to grow to %u members, the array grew to %u",
			   ff_le32(gr->new_nmembers), g->nmembers);
		return -EINVAL;
	}
	if (made != g && state == FFS_GROW_NONE && !fs->ro) {
		/* raid.h, "growing": grown by the RAID library alone, with no
		 * record of which rows are old; read-only, every row is read in
		 * its geometry (fs/grow/grow.c) */
		ff_err_set(err, "the array was grown to %u members under the filesystem (made on "
			   "%u) without its records (framefs-admin grow makes them): it mounts "
			   "read-only only", g->nmembers, made->nmembers);
		return -EROFS;
	}
	if (ff_le32(sb->level) != made->level || ff_le32(sb->nmembers) != made->nmembers ||
	    ff_le32(sb->chunk_bytes) != g->chunk_bytes || ff_le64(sb->nstripes) != g->nstripes ||
	    ff_le64(sb->stripe_bytes) != made->stripe_bytes || ff_le32(sb->ndata) != made->ndata ||
	    ff_le64(sb->meta_blocks) != meta) {
		ff_err_set(err, "filesystem geometry does not match the array");
		return -EINVAL;
	}
	/* every region inside META and in order */
	if (ff_le64(sb->journal_start) != FFS_JOURNAL_START || ff_le64(sb->journal_blocks) < 64 ||
	    ff_le64(sb->itable_start) != FFS_JOURNAL_START + ff_le64(sb->journal_blocks) ||
	    ff_le64(sb->itable_blocks) * FFS_INODES_PER_BLOCK != ff_le64(sb->ninodes) ||
	    ff_le64(sb->ibitmap_start) != ff_le64(sb->itable_start) + ff_le64(sb->itable_blocks) ||
	    ff_le64(sb->ibitmap_blocks) * FFS_BITS_PER_BLOCK < ff_le64(sb->ninodes) ||
	    ff_le64(sb->sbitmap_start) != ff_le64(sb->ibitmap_start) + ff_le64(sb->ibitmap_blocks) ||
	    ff_le64(sb->sbitmap_blocks) * FFS_BITS_PER_BLOCK < ff_le64(sb->nstripes) ||
	    ff_le64(sb->csum_start) != ff_le64(sb->sbitmap_start) + ff_le64(sb->sbitmap_blocks) ||
	    table_ndata == 0 || table_ndata > made->ndata ||
	    ff_le32(sb->csum_entry_bytes) != 8 + 4 * table_ndata || ff_le32(sb->csum_per_block) == 0 ||
	    ff_le32(sb->csum_per_block) * ff_le32(sb->csum_entry_bytes) > FFS_BLOCK - 16 ||
	    ff_le64(sb->csum_blocks) * ff_le32(sb->csum_per_block) < ff_le64(sb->nstripes) ||
	    !ffs_small_layout_ok(sb) ||
	    ff_le64(sb->pool_start) != ff_le64(sb->mbitmap_start) + ff_le64(sb->mbitmap_blocks) ||
	    ff_le64(sb->mbitmap_blocks) * FFS_BITS_PER_BLOCK < ff_le64(sb->pool_blocks) ||
	    ff_le64(sb->pool_start) + ff_le64(sb->pool_blocks) > meta ||
	    (v6 && !ffs_grow_layout_ok(sb, made->ndata - table_ndata, meta))) {
		ff_err_set(err, "filesystem superblock layout is inconsistent");
		return -EUCLEAN;
	}
	return 0;
}

/* The members as given, for a command line to copy: quoted where a shell
 * would split or expand them; "" when they do not fit. */
static void members_line(char *buf, size_t len, const char *const *paths, unsigned n)
{
	size_t at = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		bool plain = paths[i][0] != '\0';
		int w;

		for (const char *p = paths[i]; *p && plain; p++)
			plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:=@%",
				       *p) != NULL;
		w = plain || strchr(paths[i], '\'') ? snprintf(buf + at, len - at, " %s", paths[i])
						      : snprintf(buf + at, len - at, " '%s'", paths[i]);
		if (w < 0 || (size_t)w >= len - at) {
			buf[0] = '\0';
			return;
		}
		at += (size_t)w;
	}
}

/*
 * Read the four superblock copies (each from any mirror copy that passes
 * its checksum) and take the newest one that is valid on this array.  The
 * next superblock write goes to the other group, so that the newest copy
 * is overwritten last.
 */
static int read_super(struct ffs *fs, const char *const *paths, unsigned n, struct ff_err *err)
{
	struct ffs_super *c = ff_alloc_aligned(FFS_SB_COPIES * FFS_BLOCK);
	struct ff_err why[FFS_SB_COPIES];
	bool ok[FFS_SB_COPIES], sealed[FFS_SB_COPIES];
	int best = -1, newest_sealed = -1, bad[FFS_SB_COPIES];

	if (!c)
		return -ENOMEM;
	fs->sb = &c[0]; /* ffs_meta_read_check only needs the geometry, not the sb */
	for (unsigned i = 0; i < FFS_SB_COPIES; i++) {
		why[i].msg[0] = '\0';
		/* quiet: a volume made before copies C and D has none there */
		sealed[i] = ffs_meta_read_check(fs, ffs_sb_block[i], FFS_B_SUPER, &c[i], true) == 0;
		bad[i] = sealed[i] ? check_super(fs, &c[i], &why[i]) : -EBADMSG;
		ok[i] = bad[i] == 0;
		if (sealed[i] && ff_le64(c[i].magic) == FFS_SB_MAGIC &&
		    (newest_sealed < 0 || ff_le64(c[i].generation) > ff_le64(c[newest_sealed].generation)))
			newest_sealed = (int)i;
		if (ok[i] && (best < 0 || ff_le64(c[i].generation) > ff_le64(c[best].generation)))
			best = (int)i;
	}
	fs->sb = NULL;
	if (best < 0) {
		char members[400];
		int rc = newest_sealed >= 0 ? bad[newest_sealed] : -EINVAL;

		members_line(members, sizeof(members), paths, n);
		if (newest_sealed >= 0) /* a superblock, but not one for this array */
			ff_err_set(err, "%s", why[newest_sealed].msg);
		else /* never mkfs: it would start a new filesystem over the data */
			ff_err_set(err, "no valid framefs superblock on this array (all %u copies are "
				   "damaged); run fsck.framefs -y%s to rebuild it from the member "
				   "superblocks and the metadata layout", FFS_SB_COPIES,
				   members[0] ? members : " with these members");
		free(c);
		return rc;
	}
	fs->sb = ff_alloc_aligned(FFS_BLOCK);
	if (!fs->sb) {
		free(c);
		return -ENOMEM;
	}
	memcpy(fs->sb, &c[best], FFS_BLOCK);
	for (unsigned i = 0; i < FFS_SB_COPIES; i++)
		if (!ok[i] && (i < 2 || (ff_le32(fs->sb->flags) & FFS_F_SB_COPIES4)))
			ff_log(FF_LOG_WARN, "superblock copy %c (metadata block %llu) is damaged: a "
			       "read-write mount rewrites it", ffs_sb_name[i],
			       (unsigned long long)ffs_sb_block[i]);
	fs->sb_next_copy = !(best % 2); /* overwrite the other group first */
	free(c);
	return 0;
}

/* The high-water mark in the superblock may predate the last transactions. */
static void fix_itable_hwm(struct ffs *fs)
{
	uint64_t n = ff_le64(fs->sb->ninodes), hi = 0;

	for (uint64_t w = FF_DIV_ROUND_UP(n, 64); w-- > 0;)
		if (fs->ibits[w]) {
			hi = w * 64 + 63 - (uint64_t)__builtin_clzll(fs->ibits[w]);
			break;
		}
	if (hi / FFS_INODES_PER_BLOCK + 1 > ff_le64(fs->sb->itable_hwm))
		fs->sb->itable_hwm = ff_cpu_to_le64(hi / FFS_INODES_PER_BLOCK + 1);
}

/* For the rebuild: stripes in use (or about to be) come first.  An answer
 * a moment old is fine: a stripe allocated a moment later is written
 * whole, which brings it up to date anyway. */
static bool stripe_in_use(void *arg, uint64_t stripe)
{
	return ffs_stripe_in_use(arg, stripe);
}

static void opts_defaults(struct ffs_opts *o)
{
	/* with the engine's stripe buffers and the FUSE threads' request
	 * buffers this keeps the daemon near 512 MiB resident, 128 MiB of it
	 * the patch cache on a volume with patches (frames.sh's heaviest phase
	 * peaked at 427 MiB resident before the patch cache came) */
	if (!o->meta_cache_bytes)
		o->meta_cache_bytes = 32 * FF_MiB;
	if (!o->write_buffer_bytes)
		o->write_buffer_bytes = 160 * FF_MiB;
	if (!o->read_cache_bytes)
		o->read_cache_bytes = 128 * FF_MiB;
	if (!o->patch_cache_bytes) /* every block a merge wants, for 256 MiB written at random: pcache.c */
		o->patch_cache_bytes = 128 * FF_MiB;
	if (!o->commit_interval_ms)
		o->commit_interval_ms = 5000;
	if (!o->readahead_stripes)
		o->readahead_stripes = 4;
	if (!o->stuck_request_ms)
		o->stuck_request_ms = 10000;
}

static void fs_free(struct ffs *fs)
{
	ffs_watch_stop(fs);
	ffs_scrub_free(fs);
	ffs_grow_free(fs);
	ffs_data_free(fs);
	ffs_icache_free(fs);
	ffs_meta_cache_free(fs);
	ffs_alloc_free_all(fs);
	ffs_journal_free(fs);
	free(fs->orows);
	free(fs->sb);
	pthread_mutex_destroy(&fs->lock);
	pthread_cond_destroy(&fs->commit_cond);
	pthread_cond_destroy(&fs->committed_cond);
	free(fs);
}

static int mount_meta(struct ffs *fs, const char *const *paths, unsigned n, struct ff_err *err)
{
	unsigned replayed = 0, orphans = 0, batches = 0;
	struct finode *root;
	int rc;

	rc = read_super(fs, paths, n, err);
	if (rc == 0 && (rc = ffs_meta_cache_init(fs, fs->opts.meta_cache_bytes)) == 0)
		rc = ffs_icache_init(fs);
	if (rc < 0)
		return rc;
	rc = ffs_journal_replay(fs, &replayed);
	if (rc < 0) {
		ff_err_set(err, "journal replay failed: %s", strerror(-rc));
		return rc;
	}
	/* The member superblocks hold the label LABEL= finds; ours is a copy,
	 * written second by ffs_set_label: a crash between the two is made
	 * good here (on disk by the superblock write below when read-write). */
	memset(fs->sb->label, 0, sizeof(fs->sb->label));
	memcpy(fs->sb->label, ff_raid_label(fs->raid),
	       strnlen(ff_raid_label(fs->raid), sizeof(fs->sb->label) - 1));
	if (replayed)
		ff_log(FF_LOG_INFO, "replayed %u journal transaction(s)", replayed);
	ffs_meta_cache_drop_clean(fs);
	rc = ffs_alloc_load(fs);
	if (rc < 0) {
		ff_err_set(err, "cannot load allocation bitmaps: %s", strerror(-rc));
		return rc;
	}
	/* which rows are in which geometry, before anything reads a data row */
	rc = ffs_grow_mount(fs, err);
	if (rc < 0)
		return rc;
	fix_itable_hwm(fs);
	rc = ffs_iget(fs, FFS_ROOT_INO, &root);
	if (rc < 0 || !S_ISDIR(ff_le32(root->d.mode))) {
		ff_err_set(err, "root directory is damaged: run fsck.framefs");
		return rc < 0 ? rc : -EUCLEAN;
	}
	ffs_iput(fs, root);
	rc = ffs_patch_replay(fs, !fs->ro, &batches);
	if (rc < 0) {
		ff_err_set(err, "patch replay failed: %s", strerror(-rc));
		return rc;
	}
	if (fs->ro && batches) { /* read-only, their data would be missing from the files */
		ff_err_set(err, "%u patch batch(es) written after the last commit wait for recovery: "
			   "mount read-write once (or run fsck.framefs -y)", batches);
		return -EROFS;
	}
	if (batches)
		ff_log(FF_LOG_INFO, "replayed %u patch batch(es)", batches);
	if (!fs->ro) {
		rc = ffs_orphans_process(fs, &orphans);
		if (rc == 0)
			rc = ffs_journal_commit(fs);
		if (rc < 0) {
			ff_err_set(err, "cannot free orphaned inodes: %s", strerror(-rc));
			return rc;
		}
		if (orphans)
			ff_log(FF_LOG_INFO, "freed %u orphaned inode(s)", orphans);
		fs->sb->state = ff_cpu_to_le32(FFS_DIRTY);
		fs->sb->mount_time = ff_cpu_to_le64((uint64_t)time(NULL));
		fs->sb->mount_count = ff_cpu_to_le64(ff_le64(fs->sb->mount_count) + 1);
		rc = ffs_super_write(fs);
		if (rc < 0)
			ff_err_set(err, "cannot write the superblock: %s", strerror(-rc));
	}
	return rc;
}

void ffs_hooks_init(struct ffs *fs)
{
	fs->patches_drop = ffs_patch_drop;
	fs->tail_release = ffs_tail_release;
}

/* The features this mount runs with (fs->features). */
static unsigned mount_features(const struct ffs *fs)
{
	uint32_t v = ff_le32(fs->sb->version);
	unsigned f = 0;

	if (v >= FFS_VERSION_TAILS && !fs->ro)
		f |= FFS_FEAT_TAILS;
	/* slot numbers are 16 bits (format.h); tails give the rows */
	if ((f & FFS_FEAT_TAILS) && v >= FFS_VERSION_PATCH && fs->stripe_bytes / FFS_BLOCK <= UINT16_MAX)
		f |= FFS_FEAT_PATCHES;
	return f;
}

/* The engine's events (raid.h): a role failed or rebuilt wakes a grow's
 * paused restripe (fs/grow/restripe.c), then they go on to the caller's
 * hook.  Engine threads call it: it must not block (a lock held briefly). */
static void raid_event(void *ctx, const struct ff_event *ev)
{
	struct ffs *fs = ctx;

	if (ev->kind == FF_EVENT_MEMBER_FAILED || ev->kind == FF_EVENT_REBUILD_FINISHED)
		ffs_grow_array_changed(fs);
	if (fs->opts.event_fn)
		fs->opts.event_fn(fs->opts.event_ctx, ev);
}

int ffs_mount(const char *const *paths, unsigned n, const struct ffs_opts *o, struct ffs **out,
	      struct ff_err *err)
{
	struct ffs *fs = calloc(1, sizeof(*fs));
	struct ff_raid_opts ro = { 0 };
	int rc;

	*out = NULL;
	if (!fs)
		return -ENOMEM;
	fs->opts = *o;
	opts_defaults(&fs->opts);
	fs->ro = o->ro;
	ffs_hooks_init(fs);
	pthread_mutex_init(&fs->lock, NULL);
	pthread_cond_init(&fs->commit_cond, NULL);
	pthread_cond_init(&fs->committed_cond, NULL);
	ro.read_only = o->ro;
	ro.force_clean = o->force_clean;
	ro.workers = o->raid_workers;
	ro.write_window = o->raid_write_window;
	ro.max_read_errors = o->max_read_errors;
	ro.fault_spec = o->fault_spec;
	ro.undo_dir = o->undo_dir;
	ro.event_fn = raid_event; /* then o->event_fn */
	ro.event_ctx = fs;
	rc = ff_raid_assemble(paths, n, &ro, &fs->raid, err);
	if (rc < 0) {
		fs_free(fs);
		return rc;
	}
	fs->g = ff_raid_geom(fs->raid);
	fs->stripe_bytes = fs->g->stripe_bytes;
	ffs_geo_init(fs);
	pthread_mutex_lock(&fs->lock);
	rc = mount_meta(fs, paths, n, err);

	if (rc == 0)
		fs->features = mount_features(fs);
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0)
		rc = ffs_watch_start(fs);
	if (rc == 0 && (rc = ffs_data_init(fs)) < 0)
		ff_err_set(err, "out of memory for data buffers");
	if (rc == 0) {
		ff_raid_set_alloc_query(fs->raid, stripe_in_use, fs);
		/* a rebuild interrupted by a restart resumes from its checkpoint */
		if (!fs->ro && ff_raid_rebuild_start(fs->raid) < 0)
			ff_log(FF_LOG_ERR, "cannot resume the rebuild");
	}
	if (rc == 0 && !fs->ro)
		rc = ffs_journal_thread_start(fs);
	if (rc < 0) {
		ff_raid_close(fs->raid);
		fs_free(fs);
		return rc;
	}
	*out = fs;
	return 0;
}

/*
 * Write out every buffered stripe of every cached inode, each inode once a
 * pass: a writer that keeps writing meanwhile cannot hold a sync up for
 * ever (what it buffers after its inode's turn is the next sync's).  At
 * unmount no one writes, so one pass leaves nothing buffered.  keep:
 * ffs_data_flush_all's (framefs-admin sync).
 */
static int flush_all(struct ffs *fs, bool keep)
{
	int first = 0;
	uint64_t pass;

	pthread_mutex_lock(&fs->lock);
	pass = ++fs->flush_pass;
	pthread_mutex_unlock(&fs->lock);
	for (;;) {
		struct finode *fi = NULL;

		pthread_mutex_lock(&fs->lock);
		for (unsigned i = 0; i < fs->ihash_size && !fi; i++)
			for (struct finode *f = fs->ihash[i]; f && !fi; f = f->hnext)
				if ((f->wbufs || f->reserve_count) && f->flush_pass < pass)
					fi = f;
		if (fi) {
			fi->refs++;
			fi->flush_pass = pass; /* a later pass (>) has it as well */
		}
		pthread_mutex_unlock(&fs->lock);
		if (!fi)
			return first;
		{
			int rc = ffs_data_flush_all(fs, fi, keep);

			if (rc < 0 && !first)
				first = rc;
		}
		pthread_mutex_lock(&fs->lock);
		ffs_iput(fs, fi);
		pthread_mutex_unlock(&fs->lock);
	}
}

/* Commit, then the members' caches out (fs->lock taken). */
static int commit_flush(struct ffs *fs)
{
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_journal_commit(fs);
	if (rc == 0)
		rc = ff_raid_flush(fs->raid);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_sync(struct ffs *fs)
{
	int rc, rc2;

	if (fs->ro)
		return 0;
	rc = flush_all(fs, false);
	rc2 = commit_flush(fs);
	return rc < 0 ? rc : rc2;
}

int ffs_settle(struct ffs *fs)
{
	int rc, rc2;

	if (fs->ro)
		return 0;
	/* files stay as their writers left them: a write error stays for the
	 * file's own fsync and close (the application is told, not the
	 * operator alone), stripes reserved ahead for the file's next writes */
	rc = flush_all(fs, true); /* a writeout past its patches' share queues a merge */
	ffs_merges_drain(fs);     /* those queued by now: each merge's write is out */
	rc2 = flush_all(fs, true); /* and has landed (flush_all waits for it) */
	if (rc == 0)
		rc = rc2;
	rc2 = commit_flush(fs);
	return rc < 0 ? rc : rc2;
}

int ffs_set_label(struct ffs *fs, const char *label, struct ff_err *err)
{
	int rc;

	if (fs->ro) {
		ff_err_set(err, "the volume is mounted read-only: the label cannot change");
		return -EROFS;
	}
	rc = ff_raid_set_label(fs->raid, label, err); /* checks it; the copy LABEL= finds */
	if (rc < 0 && rc != -EIO)
		return rc;
	pthread_mutex_lock(&fs->lock); /* one superblock write at a time: commits write it too */
	memset(fs->sb->label, 0, sizeof(fs->sb->label));
	memcpy(fs->sb->label, label, strlen(label));
	{
		int rc2 = ffs_super_write(fs);

		if (rc2 < 0 && rc == 0) {
			ff_err_set(err, "the label is changed on the members, but the filesystem's "
				   "superblock could not be written (%s): the next mount writes it",
				   strerror(-rc2));
			rc = rc2;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

int ffs_unmount(struct ffs *fs)
{
	int rc = 0, rc2;

	ffs_scrub_stop(fs);
	ffs_grow_stop(fs);   /* between two stripes: the next mount goes on */
	ffs_merges_stop(fs); /* before the last sync: no merge after it */
	ffs_journal_thread_stop(fs);
	if (!fs->ro) {
		rc = ffs_sync(fs);
		pthread_mutex_lock(&fs->lock);
		rc2 = ffs_tails_retire_all(fs); /* an empty one is freed: the checkpoint commits it */
		if (rc == 0)
			rc = rc2;
		fs->sb->state = ff_cpu_to_le32(rc == 0 ? FFS_CLEAN : FFS_DIRTY);
		rc2 = ffs_journal_checkpoint(fs); /* nothing to replay after a clean unmount */
		if (rc2 == 0)
			rc2 = ffs_super_write(fs);
		pthread_mutex_unlock(&fs->lock);
		if (rc == 0)
			rc = rc2;
	}
	rc2 = ff_raid_close(fs->raid);
	if (rc == 0)
		rc = rc2;
	fs_free(fs);
	return rc;
}
