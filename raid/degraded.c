/* SPDX-License-Identifier: MIT */
/*
 * Written while degraded: which regions were written while a role had no
 * member, so that the member, back after a short absence (a pulled cable,
 * a file unavailable at mount), is resynced in those regions only
 * (framefs-admin re-add: md's --re-add with its write-intent bitmap).
 *
 * On every member, in the upper half of the reserved area (the write-intent
 * blocks keep the lower half): a header block — which roles are recorded,
 * the event count the array last wrote to each one's member, the region
 * geometry, the array's event count when the header was written — then bit
 * blocks, data regions first, then groups of metadata rows; every block has
 * a magic, a crc32c and its index, as the write-intent blocks do.
 *
 * A bit is set, and its block written with RWF_DSYNC to every live member,
 * before the write it covers is handed to the workers (ff_raid_wwd_begin,
 * from submit) — or, for a write already past that point when a role
 * failed, before its completion is reported (ff_raid_wwd_end): a bit is
 * durable before the write it covers is acknowledged.  A block that a live
 * member did not take leaves the bitmap proving nothing (ff_raid_bitmap_write
 * in intent.c says why): a member back must then be rebuilt in full.  Bits
 * are cleared only when every role has an active member (none dead, none
 * rebuilding).
 *
 * A member may be re-added when the header records its role and its
 * superblock carries exactly the event count the array last wrote to it:
 * every write it missed came after recording began.  The header carries
 * the array's event count and is rewritten after every superblock write
 * while anything is recorded, so a header behind the superblocks (written
 * by a binary that does not record, or torn by a crash) proves nothing.
 */
#include <errno.h>
#include <string.h>

#include "io/bitmap.h"
#include "raid/raid_i.h"

#define WWD_OFFSET (FF_MEMBER_RESERVED / 2)
#define WWD_MAGIC_HDR 0x48445746u  /* "FWDH" */
#define WWD_MAGIC_BITS 0x42445746u /* "FWDB" */
#define WWD_VERSION 1u
#define WWD_BLK_HDR 16u
#define WWD_BITS_PER_BLOCK ((FF_MEMBER_SB_BYTES - WWD_BLK_HDR) * 8)
#define WWD_BLOCKS_MAX ((FF_MEMBER_RESERVED - WWD_OFFSET) / FF_MEMBER_SB_BYTES - 1)
#define WWD_REGION_BYTES_DEFAULT (64ull << 20) /* md's default bitmap chunk */
#define WWD_META_GROUP_ROWS 16u                /* 1 MiB of metadata per member */
#define WWD_DAMAGED 1u

struct wwd_hdr {
	le32 magic;
	le32 crc;               /* crc32c of the block with this field zero */
	le64 idx;               /* 0 (bit blocks: 1..) */
	le32 version;
	le32 flags;             /* WWD_DAMAGED: a bit could not be recorded */
	le64 events;            /* the array's event count when this was written */
	le64 region_stripes;
	le64 nregions;
	le64 meta_group_rows;
	le64 meta_groups;
	le32 recording;         /* roles whose absence is recorded */
	le32 nblocks;           /* bit blocks */
	le64 role_events[FF_MEMBERS_MAX]; /* the event count its member last got */
	uint8_t reserved[FF_MEMBER_SB_BYTES - 72 - 8 * FF_MEMBERS_MAX];
};
_Static_assert(sizeof(struct wwd_hdr) == FF_MEMBER_SB_BYTES, "degraded-bitmap header is one block");
_Static_assert(WWD_OFFSET >= 4096u + 127u * FF_MEMBER_SB_BYTES, "room for the write-intent blocks");
_Static_assert(WWD_BLOCKS_MAX >= 64, "room for the degraded bitmap");

struct raid_wwd {
	uint64_t region_stripes, nregions;
	uint64_t meta_group_rows, meta_groups;
	unsigned nblocks;
	struct wwd_hdr *hdr;       /* lock: as on disk */
	uint8_t *img;              /* nblocks bit blocks, as on disk; bits set under lock */
	pthread_mutex_t lock;
	uint32_t given_up;         /* lock: dead roles that cannot be recorded */
	_Atomic uint32_t seen;     /* recorded | given_up, for mark() to look at unlocked */
	char why[160];             /* lock: why the bitmap proves nothing ("" = it does) */
	_Atomic uint64_t marks;
};

static _Atomic uint8_t *bits_of(struct raid_wwd *d, uint64_t bit)
{
	return (_Atomic uint8_t *)(d->img + (bit / WWD_BITS_PER_BLOCK) * FF_MEMBER_SB_BYTES + WWD_BLK_HDR);
}

static bool bit_get(struct raid_wwd *d, uint64_t bit)
{
	return ff_bit8_test_atomic(bits_of(d, bit), bit % WWD_BITS_PER_BLOCK);
}

/* Block b (0 = header, 1.. = bits) to every live member, durable on return;
 * -EIO when one of them did not take it (ff_raid_bitmap_write, intent.c).
 * Caller holds d->lock. */
static int write_block(struct ff_raid *r, unsigned b)
{
	struct raid_wwd *d = r->wwd;
	uint8_t *blk = b == 0 ? (uint8_t *)d->hdr : d->img + (size_t)(b - 1) * FF_MEMBER_SB_BYTES;

	return ff_raid_bitmap_write(r, blk, b == 0 ? WWD_MAGIC_HDR : WWD_MAGIC_BITS, b,
				    WWD_OFFSET + (uint64_t)b * FF_MEMBER_SB_BYTES);
}

static void damaged_locked(struct ff_raid *r, const char *why)
{
	struct raid_wwd *d = r->wwd;

	if (d->why[0])
		return;
	snprintf(d->why, sizeof(d->why), "%s", why);
	d->hdr->flags = ff_cpu_to_le32(WWD_DAMAGED);
	ff_log(FF_LOG_WARN, "written-while-degraded bitmap: %s; a member back from an absence "
	       "must be rebuilt in full", why);
	write_block(r, 0);
}

/* Roles that died since the last look start being recorded, with the
 * event count the array last wrote to their member. */
static void start_roles_locked(struct ff_raid *r)
{
	struct raid_wwd *d = r->wwd;
	uint32_t rec = ff_le32(d->hdr->recording);
	uint32_t fresh = atomic_load(&r->dead_mask) & ~rec & ~d->given_up;

	if (!fresh)
		return;
	for (unsigned m = 0; m < r->g.nmembers; m++) {
		uint64_t ev = atomic_load(&r->sb_events_last[m]);

		if (!(fresh & (1u << m)))
			continue;
		if (!ev) { /* gone before this mount wrote to it: nothing proves when */
			d->given_up |= 1u << m;
			continue;
		}
		rec |= 1u << m;
		d->hdr->role_events[m] = ff_cpu_to_le64(ev);
	}
	d->hdr->recording = ff_cpu_to_le32(rec);
	atomic_store(&d->seen, rec | d->given_up);
	if (write_block(r, 0) < 0)
		damaged_locked(r, "its header could not be written");
}

/* Bits [first, last] of a request: data regions, then metadata row groups. */
static void bit_range(const struct ff_raid *r, const struct ff_raid_io *io, uint64_t *first,
		      uint64_t *last)
{
	const struct raid_wwd *d = r->wwd;

	if (io->space == FF_SPACE_DATA) {
		uint64_t sb = raid_io_geom(r, io)->stripe_bytes;

		*first = io->off / sb / d->region_stripes;
		*last = (io->off + io->len - 1) / sb / d->region_stripes;
		return;
	}
	/* copy k of metadata chunk c sits in row (c * copies + k) / meta_members */
	*first = d->nregions + io->off / FF_META_CHUNK * r->g.meta_copies / r->g.meta_members /
		 d->meta_group_rows;
	*last = d->nregions + (((io->off + io->len - 1) / FF_META_CHUNK + 1) * r->g.meta_copies - 1) /
		r->g.meta_members / d->meta_group_rows;
}

static void mark(struct ff_raid *r, struct ff_raid_io *io)
{
	struct raid_wwd *d = r->wwd;
	uint64_t first, last;

	if (!d || r->read_only || io->op != FF_RAID_WRITE || !atomic_load(&r->dead_mask))
		return;
	bit_range(r, io, &first, &last);
	FF_ASSERT(last < d->nregions + d->meta_groups);
	if (atomic_load(&r->dead_mask) & ~atomic_load(&d->seen)) {
		pthread_mutex_lock(&d->lock);
		start_roles_locked(r);
		pthread_mutex_unlock(&d->lock);
	}
	for (uint64_t g = first; g <= last; g++) {
		if (bit_get(d, g))
			continue;
		pthread_mutex_lock(&d->lock);
		if (!bit_get(d, g)) {
			ff_bit8_set_atomic(bits_of(d, g), g % WWD_BITS_PER_BLOCK);
			if (write_block(r, 1 + (unsigned)(g / WWD_BITS_PER_BLOCK)) < 0)
				damaged_locked(r, "a bit could not be written");
			atomic_fetch_add(&d->marks, 1);
		}
		pthread_mutex_unlock(&d->lock);
	}
}

void ff_raid_wwd_begin(struct ff_raid *r, struct ff_raid_io *io)
{
	mark(r, io);
}

/* A write that was handed to the workers before a role died may have
 * missed that role's member: its regions are marked before it completes. */
void ff_raid_wwd_end(struct ff_raid *r, struct ff_raid_io *io)
{
	mark(r, io);
}

/* Geometry: from the opts, or from a header found on the members. */
static void geometry(struct ff_raid *r, struct raid_wwd *d, uint64_t region_bytes)
{
	uint64_t rows = r->g.meta_member_bytes / FF_META_CHUNK, cap;

	d->region_stripes = FF_MAX(1ull, FF_DIV_ROUND_UP(region_bytes, r->g.stripe_bytes));
	d->meta_group_rows = WWD_META_GROUP_ROWS;
	d->meta_groups = FF_DIV_ROUND_UP(rows, d->meta_group_rows);
	cap = (uint64_t)WWD_BLOCKS_MAX * WWD_BITS_PER_BLOCK - d->meta_groups;
	d->region_stripes = FF_MAX(d->region_stripes, FF_DIV_ROUND_UP(r->g.nstripes, cap));
	d->nregions = FF_DIV_ROUND_UP(r->g.nstripes, d->region_stripes);
	d->nblocks = (unsigned)FF_DIV_ROUND_UP(d->nregions + d->meta_groups, WWD_BITS_PER_BLOCK);
	FF_ASSERT(d->nblocks <= WWD_BLOCKS_MAX);
}

static bool hdr_fits(const struct ff_raid *r, const struct wwd_hdr *h)
{
	uint64_t rs = ff_le64(h->region_stripes), mg = ff_le64(h->meta_group_rows);
	uint64_t rows = r->g.meta_member_bytes / FF_META_CHUNK;

	return ff_le32(h->version) == WWD_VERSION && rs && mg &&
	       ff_le64(h->nregions) == FF_DIV_ROUND_UP(r->g.nstripes, rs) &&
	       ff_le64(h->meta_groups) == FF_DIV_ROUND_UP(rows, mg) &&
	       ff_le32(h->nblocks) == FF_DIV_ROUND_UP(ff_le64(h->nregions) + ff_le64(h->meta_groups),
						     WWD_BITS_PER_BLOCK) &&
	       ff_le32(h->nblocks) <= WWD_BLOCKS_MAX;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/*
 * The freshest valid header among the live members, and the union of the
 * bit blocks of every member that carries that header (a bit written to
 * some members only, one write having failed, counts).  Returns 1 when one
 * was loaded, 0 when no member has one (a new volume, or one an older
 * framefs kept), -EBADMSG when one is damaged or a bit block is valid on
 * none of them.
 */
static int load(struct ff_raid *r, struct raid_wwd *d, uint8_t *scratch)
{
	struct wwd_hdr *h = (struct wwd_hdr *)(void *)scratch;
	int best = -1, damaged = 0;
	uint64_t best_ev = 0;

	for (unsigned m = 0; m < r->g.nmembers; m++) {
		if (r->mem[m].fd < 0 || ff_member_pread(&r->mem[m], h, FF_MEMBER_SB_BYTES, WWD_OFFSET) < 0)
			continue;
		if (!ff_raid_bitmap_block_ok(scratch, WWD_MAGIC_HDR, 0) || !hdr_fits(r, h)) {
			damaged |= !all_zero(scratch, FF_MEMBER_SB_BYTES);
			continue;
		}
		if (best < 0 || ff_le64(h->events) > best_ev) {
			best = (int)m;
			best_ev = ff_le64(h->events);
		}
	}
	if (best < 0)
		return damaged ? -EBADMSG : 0;
	if (ff_member_pread(&r->mem[best], h, FF_MEMBER_SB_BYTES, WWD_OFFSET) < 0)
		return -EBADMSG;
	d->region_stripes = ff_le64(h->region_stripes);
	d->nregions = ff_le64(h->nregions);
	d->meta_group_rows = ff_le64(h->meta_group_rows);
	d->meta_groups = ff_le64(h->meta_groups);
	d->nblocks = ff_le32(h->nblocks);
	memcpy(d->hdr, h, FF_MEMBER_SB_BYTES);
	for (unsigned b = 0; b < d->nblocks; b++) {
		uint8_t *blk = d->img + (size_t)b * FF_MEMBER_SB_BYTES;
		unsigned valid = 0;

		for (unsigned m = 0; m < r->g.nmembers; m++) {
			if (r->mem[m].fd < 0 ||
			    ff_member_pread(&r->mem[m], scratch, FF_MEMBER_SB_BYTES, WWD_OFFSET) < 0 ||
			    !ff_raid_bitmap_block_ok(scratch, WWD_MAGIC_HDR, 0) ||
			    ff_le64(h->events) != best_ev ||
			    memcmp(scratch, d->hdr, FF_MEMBER_SB_BYTES) != 0 ||
			    ff_member_pread(&r->mem[m], scratch, FF_MEMBER_SB_BYTES,
					    WWD_OFFSET + (uint64_t)(b + 1) * FF_MEMBER_SB_BYTES) < 0 ||
			    !ff_raid_bitmap_block_ok(scratch, WWD_MAGIC_BITS, b + 1))
				continue;
			for (size_t i = WWD_BLK_HDR; i < FF_MEMBER_SB_BYTES; i++)
				blk[i] |= scratch[i];
			valid++;
		}
		if (!valid)
			return -EBADMSG;
	}
	return 1;
}

static void reset_locked(struct ff_raid *r)
{
	struct raid_wwd *d = r->wwd;

	memset(d->hdr, 0, FF_MEMBER_SB_BYTES);
	memset(d->img, 0, (size_t)d->nblocks * FF_MEMBER_SB_BYTES);
	d->hdr->version = ff_cpu_to_le32(WWD_VERSION);
	d->hdr->region_stripes = ff_cpu_to_le64(d->region_stripes);
	d->hdr->nregions = ff_cpu_to_le64(d->nregions);
	d->hdr->meta_group_rows = ff_cpu_to_le64(d->meta_group_rows);
	d->hdr->meta_groups = ff_cpu_to_le64(d->meta_groups);
	d->hdr->nblocks = ff_cpu_to_le32(d->nblocks);
	d->hdr->events = ff_cpu_to_le64(r->events);
	d->given_up = 0;
	atomic_store(&d->seen, 0);
	d->why[0] = '\0';
}

/* Everything written out: bit blocks first, the header last. */
static int write_all_locked(struct ff_raid *r)
{
	int rc = 0;

	for (unsigned b = 1; b <= r->wwd->nblocks && rc == 0; b++)
		rc = write_block(r, b);
	return rc ? rc : write_block(r, 0);
}

/*
 * At assembly, after the first superblock write: events_before is the
 * array's event count before it (what every member present at the last
 * unmount carries).  A recorded role stays recorded when the header is as
 * fresh as the superblocks; a role missing now and not recorded yet is
 * recorded from here when the last shutdown was clean and nothing was
 * recorded then either (its member, if it comes back, must carry
 * events_before).
 */
int ff_raid_wwd_init(struct ff_raid *r, uint64_t events_before, bool unclean)
{
	struct raid_wwd *d = calloc(1, sizeof(*d));
	uint8_t *scratch = ff_alloc_aligned(FF_MEMBER_SB_BYTES);
	uint32_t dead = atomic_load(&r->dead_mask), rec = 0;
	uint64_t region_bytes = r->opts.readd_region_bytes ? r->opts.readd_region_bytes
							   : WWD_REGION_BYTES_DEFAULT;
	char why[160] = "";
	int loaded, rc;

	if (!d || !scratch) {
		free(d);
		free(scratch);
		return -ENOMEM;
	}
	geometry(r, d, region_bytes);
	d->hdr = ff_alloc_aligned(FF_MEMBER_SB_BYTES);
	d->img = ff_alloc_aligned((size_t)WWD_BLOCKS_MAX * FF_MEMBER_SB_BYTES);
	if (!d->hdr || !d->img) {
		free(d->hdr);
		free(d->img);
		free(d);
		free(scratch);
		return -ENOMEM;
	}
	memset(d->img, 0, (size_t)WWD_BLOCKS_MAX * FF_MEMBER_SB_BYTES);
	pthread_mutex_init(&d->lock, NULL);
	r->wwd = d;
	loaded = load(r, d, scratch);
	free(scratch);
	if (loaded == 1)
		rec = ff_le32(d->hdr->recording);
	if (loaded == 1 && (rec || d->hdr->flags) && ff_le64(d->hdr->events) != events_before)
		snprintf(why, sizeof(why), "it is older than the superblocks (events %llu, not %llu: "
			 "written without it, or a crash)", (unsigned long long)ff_le64(d->hdr->events),
			 (unsigned long long)events_before);
	else if (loaded < 0)
		snprintf(why, sizeof(why), "a block of it fails its checksum");
	else if (loaded == 1 && (ff_le32(d->hdr->flags) & WWD_DAMAGED))
		snprintf(why, sizeof(why), "a bit could not be recorded during an earlier mount");
	pthread_mutex_lock(&d->lock);
	if (!dead && !atomic_load(&r->rebuild_mask))
		why[0] = '\0'; /* nothing is missing: nothing to keep */
	if (why[0] || !rec || (!dead && !atomic_load(&r->rebuild_mask))) {
		geometry(r, d, region_bytes);
		reset_locked(r);
		rec = 0;
	}
	if (why[0])
		damaged_locked(r, why);
	for (unsigned m = 0; m < r->g.nmembers; m++) {
		if (!(dead & (1u << m)) || (rec & (1u << m)))
			continue;
		if (unclean) /* the writes in flight at the crash are not recorded */
			d->given_up |= 1u << m;
		else /* its member, when it comes back, must have been here at the last unmount */
			atomic_store(&r->sb_events_last[m], events_before);
	}
	d->hdr->events = ff_cpu_to_le64(r->events);
	rc = write_all_locked(r);
	pthread_mutex_unlock(&d->lock);
	if (rc == 0)
		ff_raid_wwd_sb_written(r);
	return rc;
}

void ff_raid_wwd_free(struct ff_raid *r)
{
	struct raid_wwd *d = r->wwd;

	if (!d)
		return;
	pthread_mutex_destroy(&d->lock);
	free(d->hdr);
	free(d->img);
	free(d);
	r->wwd = NULL;
}

/* After a superblock write (caller holds sb_lock): roles that died are
 * recorded, and the header says how fresh it is. */
void ff_raid_wwd_sb_written(struct ff_raid *r)
{
	struct raid_wwd *d = r->wwd;

	if (!d || r->read_only)
		return;
	pthread_mutex_lock(&d->lock);
	start_roles_locked(r);
	if (d->hdr->recording || d->hdr->flags || ff_le64(d->hdr->events) != r->events) {
		d->hdr->events = ff_cpu_to_le64(r->events);
		if (write_block(r, 0) < 0)
			damaged_locked(r, "its header could not be written");
	}
	pthread_mutex_unlock(&d->lock);
}

/* Superblock thread: every role has an active member again: start over. */
void ff_raid_wwd_clean(struct ff_raid *r)
{
	struct raid_wwd *d = r->wwd;
	bool any = false;

	if (!d || r->read_only || atomic_load(&r->dead_mask) || atomic_load(&r->rebuild_mask))
		return;
	pthread_mutex_lock(&d->lock);
	for (unsigned b = 0; b < d->nblocks && !any; b++)
		any = !all_zero(d->img + (size_t)b * FF_MEMBER_SB_BYTES + WWD_BLK_HDR,
				FF_MEMBER_SB_BYTES - WWD_BLK_HDR);
	/* checked again under the lock: a role that dies from here on is seen
	 * by mark(), which waits for this lock before it sets a bit */
	if ((any || d->hdr->recording || d->hdr->flags || d->given_up) &&
	    !atomic_load(&r->dead_mask) && !atomic_load(&r->rebuild_mask)) {
		reset_locked(r);
		write_all_locked(r);
	}
	pthread_mutex_unlock(&d->lock);
}

/* A role gets a member (re-added or rebuilt): its next absence is
 * recorded from then on. */
void ff_raid_wwd_role_back(struct ff_raid *r, unsigned role)
{
	struct raid_wwd *d = r->wwd;

	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->hdr->recording = ff_cpu_to_le32(ff_le32(d->hdr->recording) & ~(1u << role));
	d->given_up &= ~(1u << role);
	atomic_store(&d->seen, ff_le32(d->hdr->recording) | d->given_up);
	pthread_mutex_unlock(&d->lock);
}

int ff_raid_wwd_readd_check(struct ff_raid *r, unsigned role, uint64_t member_events,
			    char *why, size_t why_len)
{
	struct raid_wwd *d = r->wwd;
	int rc = 0;

	if (!d) {
		snprintf(why, why_len, "the array keeps no record of what was written without it");
		return -EINVAL;
	}
	pthread_mutex_lock(&d->lock);
	start_roles_locked(r);
	if (d->why[0]) {
		snprintf(why, why_len, "the record of what was written without it proves nothing: %s",
			 d->why);
		rc = -EINVAL;
	} else if (!(ff_le32(d->hdr->recording) & (1u << role))) {
		snprintf(why, why_len, "it left before the array began recording what was written "
			 "without it (its events %llu, the array's %llu)",
			 (unsigned long long)member_events, (unsigned long long)r->events);
		rc = -EINVAL;
	} else if (ff_le64(d->hdr->role_events[role]) != member_events) {
		snprintf(why, why_len, "its event count %llu is not the one the array last wrote to "
			 "it (%llu)", (unsigned long long)member_events,
			 (unsigned long long)ff_le64(d->hdr->role_events[role]));
		rc = -EINVAL;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

bool ff_raid_wwd_stripe_marked(struct ff_raid *r, uint64_t stripe)
{
	return r->wwd && bit_get(r->wwd, stripe / r->wwd->region_stripes);
}

bool ff_raid_wwd_meta_row_marked(struct ff_raid *r, uint64_t row)
{
	return r->wwd && bit_get(r->wwd, r->wwd->nregions + row / r->wwd->meta_group_rows);
}

void ff_raid_wwd_counts(struct ff_raid *r, uint64_t *data_regions, uint64_t *meta_groups)
{
	struct raid_wwd *d = r->wwd;

	*data_regions = *meta_groups = 0;
	for (uint64_t g = 0; d && g < d->nregions + d->meta_groups; g++)
		if (bit_get(d, g))
			(*(g < d->nregions ? data_regions : meta_groups))++;
}

uint64_t ff_raid_wwd_region_stripes(const struct ff_raid *r)
{
	return r->wwd ? r->wwd->region_stripes : 0;
}

void ff_raid_wwd_lock(struct ff_raid *r)
{
	if (r->wwd)
		pthread_mutex_lock(&r->wwd->lock);
}

void ff_raid_wwd_unlock(struct ff_raid *r)
{
	if (r->wwd)
		pthread_mutex_unlock(&r->wwd->lock);
}
