/* SPDX-License-Identifier: MIT */
/*
 * Scrub: read everything online, check it, repair it.
 *
 *  - Metadata: every 64 KiB chunk of the mirrored META space is read from
 *    each copy; 4 KiB blocks whose copies differ are settled by their own
 *    header (type, block number, crc32c) or, for small-file data (no
 *    header), by its entry in the pcsum table (small.c), and the good image
 *    is rewritten over every copy.  Done under fs->lock, so a commit is
 *    never half-seen.
 *  - Data: every stripe in use is read whole with a parity check
 *    (FF_RAID_CHECK); each chunk's crc32c is compared with the checksum
 *    table.  A stripe with bad chunks is read again around their members
 *    (rebuilt from parity), checked, and written back whole, its parity
 *    computed from the verified data (repair.c); a stripe whose data is
 *    good but whose parity differs is rewritten whole the same way.  A
 *    repair happens under fs->lock after confirming that the owner still
 *    maps the stripe: a stripe can then neither be freed nor reused under
 *    it.
 *
 * Scrub yields to foreground I/O with the same min/max rates as rebuild.
 * The files it found damaged are reported by path and stripe.
 *
 * Every scrub that ends — done, stopped or failed — leaves a record in the
 * superblock's scrub history (format.h), written like any other change of
 * the superblock: under fs->lock, by ffs_super_write, to one group of
 * copies.  A crash during that write leaves the other group, which lacks
 * only this record.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "fs/volume/volume.h"
#include "io/bitmap.h"

struct scrub {
	pthread_t thread;
	bool started, running;
	_Atomic bool stop;          /* ffs_scrub_stop asks; the thread reads it between chunks */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ffs_scrub_status st;
	uint64_t start_ns;
	uint64_t start_s;  /* wall clock, for the history */
	uint64_t bytes;
	uint64_t min_bps, max_bps;
	uint64_t last_fg;
	uint8_t *buf;
	uint8_t *mbuf[FF_PARITY_MAX + 1];
};

static struct scrub *scrub_get(struct ffs *fs)
{
	if (!fs->scrub) {
		struct scrub *s = calloc(1, sizeof(*s));

		if (!s)
			return NULL;
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
		s->min_bps = FFS_SCRUB_MIN_BPS_DEFAULT;
		s->max_bps = FFS_SCRUB_MAX_BPS_DEFAULT;
		fs->scrub = s;
	}
	return fs->scrub;
}

/* Sleep while over the allowed rate; foreground I/O lowers it to min. */
static void throttle(struct ffs *fs, struct scrub *s)
{
	uint64_t fg = atomic_load(&ff_raid_stats(fs->raid)->fg_bytes); /* its own are background */
	uint64_t rate = fg != s->last_fg ? s->min_bps : s->max_bps;
	uint64_t elapsed = ff_mono_ns() - s->start_ns + 1;

	s->last_fg = fg;
	if (rate && s->bytes * 1000000000ull > rate * elapsed)
		usleep((useconds_t)FF_MIN(50000ull, (s->bytes * 1000000000ull / rate - elapsed) / 1000));
}

static void note_file(struct scrub *s, uint64_t ino, uint64_t fstripe, bool repaired)
{
	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < s->st.nreport; i++)
		if (s->st.report[i].ino == ino && s->st.report[i].fstripe == fstripe) {
			s->st.report[i].repaired = repaired;
			pthread_mutex_unlock(&s->lock);
			return;
		}
	if (s->st.nreport < FFS_SCRUB_REPORT_MAX) {
		s->st.report[s->st.nreport].ino = ino;
		s->st.report[s->st.nreport].fstripe = fstripe;
		s->st.report[s->st.nreport].repaired = repaired;
		s->st.nreport++;
	}
	pthread_mutex_unlock(&s->lock);
}

/* ---- metadata ---------------------------------------------------------- */

static int read_meta_copy(struct ffs *fs, uint64_t off, void *buf, unsigned copy)
{
	struct ff_raid_io io;

	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_READ;
	io.space = FF_SPACE_META;
	io.off = off;
	io.len = FF_META_CHUNK;
	io.buf = buf;
	io.meta_copy = (uint8_t)(copy + 1);
	io.flags = FF_RAID_IO_BACKGROUND; /* foreground first (raid/worker.c) */
	return ff_raid_submit_wait(fs->raid, &io);
}

static bool self_check(const uint8_t *blk, uint64_t no)
{
	const struct ffs_bhdr *h = (const struct ffs_bhdr *)blk;

	return ffs_block_check(blk, ff_le32(h->type), no) == 0;
}

/* Do the copies of this block (at off in each copy's chunk) differ, or
 * could one not be read? */
static bool copies_differ(const struct ffs *fs, const struct scrub *s, const bool *ok, size_t off)
{
	for (unsigned c = 0; c < fs->g->meta_copies; c++) {
		if (!ok[c])
			return true;
		if (c && memcmp(s->mbuf[c] + off, s->mbuf[0] + off, FFS_BLOCK))
			return true;
	}
	return false;
}

/*
 * The copy of block no to keep, -1 when none is good: the one its header
 * vouches for, or for small-file data (FFS_B_SDATA: no header; its pcsum
 * entry names an owner) the one that matches the entry's crc.  fs->lock
 * held (the pcsum table is read through the cache).
 */
static int good_copy(struct ffs *fs, const struct scrub *s, const bool *ok, uint64_t no, size_t off)
{
	uint32_t owner = 0, crc = 0;
	bool sdata = ffs_pcsum_get(fs, no, &owner, &crc) == 0 && owner != 0;

	for (unsigned c = 0; c < fs->g->meta_copies; c++) {
		const uint8_t *blk = s->mbuf[c] + off;

		if (ok[c] && (sdata ? ffs_sdata_crc(no, blk) == crc : self_check(blk, no)))
			return (int)c;
	}
	return -1;
}

/*
 * A pool block whose home copies hold nothing the volume reads now, so that
 * no copy being good is no damage: a free block (small-file data leaves no
 * header behind, so differing copies of a freed one cannot be settled), or
 * one whose newest image is still in the cache (the running transaction, or
 * a committed one not yet checkpointed: the pcsum entry there describes that
 * image, not the copies, and the checkpoint writes every copy).  fs->lock
 * held.
 */
static bool home_unused(struct ffs *fs, uint64_t no)
{
	uint64_t start = ff_le64(fs->sb->pool_start);

	return no >= start && no - start < ff_le64(fs->sb->pool_blocks) &&
	       (ffs_pool_block_free(fs, no) || ffs_meta_home_stale(fs, no));
}

/* One 64 KiB chunk of META: settle every block whose copies disagree.
 * fs->lock held: no commit or checkpoint is half-way through it. */
static void scrub_meta_chunk(struct ffs *fs, struct scrub *s, uint64_t chunk)
{
	unsigned copies = fs->g->meta_copies;
	bool ok[FF_PARITY_MAX + 1] = { false };
	uint64_t first = chunk * (FF_META_CHUNK / FFS_BLOCK);

	for (unsigned c = 0; c < copies; c++)
		ok[c] = read_meta_copy(fs, chunk * FF_META_CHUNK, s->mbuf[c], c) == 0;
	for (unsigned b = 0; b < FF_META_CHUNK / FFS_BLOCK; b++) {
		size_t off = (size_t)b * FFS_BLOCK;
		int good;

		if (!copies_differ(fs, s, ok, off))
			continue; /* identical everywhere (in use and good, or never written) */
		good = good_copy(fs, s, ok, first + b, off);
		if (good < 0 && home_unused(fs, first + b)) {
			ff_log(FF_LOG_INFO, "scrub: metadata block %llu: copies differ, but the block is "
			       "free or its newest image is not home yet: nothing to repair",
			       (unsigned long long)(first + b));
			continue;
		}
		s->st.meta_bad++;
		if (good >= 0 && s->st.repair &&
		    ffs_meta_write_raw(fs, first + b, s->mbuf[good] + off, 1) == 0) {
			s->st.meta_repaired++;
			ff_log(FF_LOG_WARN, "scrub: metadata block %llu: copies differed, repaired",
			       (unsigned long long)(first + b));
		} else if (good < 0) {
			ff_log(FF_LOG_ERR, "scrub: metadata block %llu: no copy is good",
			       (unsigned long long)(first + b));
		}
	}
}

static void scrub_meta(struct ffs *fs, struct scrub *s)
{
	uint64_t chunks = ff_le64(fs->sb->meta_blocks) * FFS_BLOCK / FF_META_CHUNK;

	for (uint64_t c = 0; c < chunks && !s->stop; c++) {
		pthread_mutex_lock(&fs->lock); /* no commit half-way through a chunk */
		scrub_meta_chunk(fs, s, c);
		pthread_mutex_unlock(&fs->lock);
		s->bytes += FF_META_CHUNK * fs->g->meta_copies;
		s->st.meta_chunks_checked++;
		throttle(fs, s);
	}
}

/* ---- data ---------------------------------------------------------------- */

/* Does the owner still map this stripe?  fs->lock held.  A tail stripe
 * (tail.c): it still holds the rows scrub checked, and takes no more from
 * now on (ffs_tail_hold), so that the repair's whole-stripe write cannot
 * overwrite rows appended meanwhile; with a tail write in flight to it,
 * it is left for the next scrub. */
static bool still_mapped(struct ffs *fs, uint64_t p, uint32_t ino, uint32_t fstripe)
{
	uint32_t cino, cf, crc[FF_MEMBERS_MAX];
	uint64_t mp, run;
	uint32_t flags;
	struct finode *fi;
	bool yes;

	if (ino == FFS_CSUM_TAILS)
		return ffs_csum_get(fs, p, &cino, &cf, crc) == 0 && cino == ino &&
		       FFS_CSUM_TAIL_HWM(cf) == FFS_CSUM_TAIL_HWM(fstripe) && FFS_CSUM_TAIL_LIVE(cf) &&
		       ffs_tail_hold(fs, p);
	if (ffs_csum_get(fs, p, &cino, &cf, crc) < 0 || cino != ino || cf != fstripe)
		return false;
	if (ffs_iget(fs, ino, &fi) < 0)
		return false;
	yes = ffs_extent_lookup(fs, fi, fstripe, &mp, &run, &flags) == 0 && mp == p;
	ffs_iput(fs, fi);
	return yes;
}

/*
 * Rebuild the bad chunks of stripe p from parity and the good chunks, check
 * them, and write the stripe back whole: its parity then comes from the
 * verified stripe, never from the bad chunks still on disk (repair.c).
 * fs->lock held.
 */
static bool repair_chunks(struct ffs *fs, uint64_t p, uint32_t bad, const uint32_t *crc,
			  uint32_t vlen)
{
	uint8_t *buf = fs->scrub->buf;

	if (ffs_repair_reconstruct(fs, p, bad, crc, vlen, buf) < 0) {
		ff_log(FF_LOG_ERR, "scrub: data stripe %llu: chunks 0x%x fail their checksum even "
		       "rebuilt from parity", (unsigned long long)p, bad);
		return false;
	}
	if (ffs_repair_rewrite(fs, p, buf, bad) < 0)
		return false;
	ff_log(FF_LOG_WARN, "scrub: data stripe %llu: %d bad chunk(s) repaired from parity",
	       (unsigned long long)p, __builtin_popcount(bad));
	return true;
}

/*
 * Stripe p against its checksum entry, in its row's geometry (a row not
 * moved since a grow: the old one).  Only a stripe in use: a free one's
 * entry is whatever its last owner left, which its bytes still match on a
 * volume with one geometry, but not once a grow's restripe freed it: a
 * freed row is the array's geometry from then on (alloc.c), its entry and
 * bytes the old one's.  The entry, the geometry and the bit are read
 * together under fs->lock.
 */
static void scrub_stripe(struct ffs *fs, struct scrub *s, uint64_t p)
{
	const struct ffs_geo *geo;
	const struct ff_geom *g;
	uint32_t ino, fstripe, crc[FF_MEMBERS_MAX], bad = 0, mismatch, cino, cf, ccrc[FF_MEMBERS_MAX];
	struct ff_raid_io io;
	bool used, owned;
	int rc;

	pthread_mutex_lock(&fs->lock);
	used = ff_bit_test(fs->sbits, p);
	rc = used ? ffs_csum_get(fs, p, &ino, &fstripe, crc) : 0;
	geo = ffs_row_geo(fs, p);
	pthread_mutex_unlock(&fs->lock);
	g = geo->g;
	if (!used || rc < 0 || ino == 0)
		return;
	memset(&io, 0, sizeof(io));
	io.op = FF_RAID_CHECK;
	io.space = FF_SPACE_DATA;
	io.flags = FF_RAID_IO_BACKGROUND | geo->raid_flags; /* foreground first (raid/worker.c) */
	io.off = p * g->stripe_bytes;
	io.len = g->stripe_bytes;
	io.buf = s->buf;
	if (ino == FFS_CSUM_TAILS) { /* the rows written: those past hold old bytes (tail.c) */
		io.flags |= FF_RAID_IO_ROWS;
		io.len = FF_MAX(1u, FF_MIN(FFS_CSUM_TAIL_HWM(fstripe), g->chunk_bytes / FFS_TAIL_ROW)) *
			 FFS_TAIL_ROW;
	}
	rc = ff_raid_submit_wait(fs->raid, &io);
	if (rc == -EAGAIN) /* degraded: no parity to compare, the data still is checked */
		rc = ffs_repair_read_around(fs, p, 0, s->buf);
	s->bytes += g->stripe_bytes;
	s->st.stripes_checked++;
	if (rc < 0) {
		s->st.unreadable++;
		return;
	}
	mismatch = atomic_load(&io.check_mismatch);
	if (!(fstripe & FFS_CSUM_UNWRITTEN))
		bad = ffs_repair_bad_chunks(fs, p, s->buf, crc, ffs_csum_vlen(fs, ino, fstripe));
	if (!bad && !mismatch)
		return;
	/* Counted only while the entry's owner still maps p: a row reserved
	 * for a new owner (a grow's restripe holds its copies' rows reserved
	 * for as long as a file takes to copy) is written before its entry is,
	 * and until the commit its entry is its last owner's. */
	pthread_mutex_lock(&fs->lock);
	owned = ino == FFS_CSUM_TAILS ? ffs_csum_get(fs, p, &cino, &cf, ccrc) == 0 && cino == ino &&
					    cf == fstripe
				      : still_mapped(fs, p, ino, fstripe);
	pthread_mutex_unlock(&fs->lock);
	if (!owned)
		return;
	s->st.chunks_bad += (uint64_t)__builtin_popcount(bad);
	s->st.parity_bad += !bad && mismatch;
	/* per member: a bad chunk's, or with the data right, the parity's */
	ff_raid_note_cksum_errors(fs->raid, p, bad ? bad : mismatch << g->ndata);
	if (bad && ino != FFS_CSUM_TAILS) /* a tail stripe's chunk holds several files' tails */
		note_file(s, ino, fstripe & ~FFS_CSUM_UNWRITTEN, false);
	if (!s->st.repair)
		return;
	pthread_mutex_lock(&fs->lock);
	if (still_mapped(fs, p, ino, fstripe)) {
		if (bad && repair_chunks(fs, p, bad, crc, ffs_csum_vlen(fs, ino, fstripe))) {
			s->st.chunks_repaired += (uint64_t)__builtin_popcount(bad);
			if (ino != FFS_CSUM_TAILS)
				note_file(s, ino, fstripe & ~FFS_CSUM_UNWRITTEN, true);
		} else if (bad) {
			s->st.chunks_unrepairable += (uint64_t)__builtin_popcount(bad);
		}
		if (!bad && mismatch && ffs_repair_rewrite(fs, p, s->buf, 0) == 0)
			s->st.parity_repaired++; /* the data is right: a full write recomputes parity */
		ffs_rcache_invalidate(fs, p, 1);
	}
	pthread_mutex_unlock(&fs->lock);
}

/* For the event hook: what the scrub found, then that it ended. */
static void post_events(struct ffs *fs, struct scrub *s)
{
	const struct ffs_scrub_status *st = &s->st;
	char path[256] = "";

	if (st->nreport && ffs_ino_path(fs, st->report[0].ino, path, sizeof(path)) < 0)
		path[0] = '\0';
	if (st->chunks_bad || st->parity_bad || st->meta_bad || st->unreadable)
		ff_raid_event(fs->raid, FF_EVENT_SCRUB_FOUND_ERRORS, -1,
			      "%llu bad chunks (%llu repaired), %llu parity mismatches (%llu repaired), "
			      "%llu bad metadata copies (%llu repaired), %llu unreadable stripes%s%s",
			      (unsigned long long)st->chunks_bad, (unsigned long long)st->chunks_repaired,
			      (unsigned long long)st->parity_bad, (unsigned long long)st->parity_repaired,
			      (unsigned long long)st->meta_bad, (unsigned long long)st->meta_repaired,
			      (unsigned long long)st->unreadable, path[0] ? "; first file: " : "", path);
	ff_raid_event(fs->raid, FF_EVENT_SCRUB_FINISHED, -1, "%s: %llu stripes checked",
		      s->stop ? "stopped" : "done", (unsigned long long)st->stripes_checked);
}

/* ---- history -------------------------------------------------------------- */

const char *ffs_scrub_result_name(enum ffs_scrub_result r)
{
	switch (r) {
	case FFS_SCRUB_DONE: return "done";
	case FFS_SCRUB_STOPPED: return "stopped";
	case FFS_SCRUB_FAILED: return "failed";
	default: return "unknown";
	}
}

static void record_fill(struct ffs_scrub_record *r, uint64_t seq, const struct scrub *s,
			enum ffs_scrub_result result)
{
	const struct ffs_scrub_status *st = &s->st;
	uint64_t end = ff_wall_ns() / 1000000000ull;

	memset(r, 0, sizeof(*r));
	r->seq = ff_cpu_to_le64(seq);
	r->start_s = ff_cpu_to_le64(s->start_s);
	r->end_s = ff_cpu_to_le64(FF_MAX(end, s->start_s)); /* a clock stepped back: no negative time */
	r->result = ff_cpu_to_le32((uint32_t)result);
	r->flags = ff_cpu_to_le32(st->repair ? FFS_SCRUB_F_REPAIR : 0);
	r->bytes_checked = ff_cpu_to_le64(s->bytes);
	r->stripes_checked = ff_cpu_to_le64(st->stripes_checked);
	r->meta_chunks_checked = ff_cpu_to_le64(st->meta_chunks_checked);
	r->chunks_bad = ff_cpu_to_le64(st->chunks_bad);
	r->chunks_repaired = ff_cpu_to_le64(st->chunks_repaired);
	r->chunks_unrepairable = ff_cpu_to_le64(st->chunks_unrepairable);
	r->parity_bad = ff_cpu_to_le64(st->parity_bad);
	r->parity_repaired = ff_cpu_to_le64(st->parity_repaired);
	r->meta_bad = ff_cpu_to_le64(st->meta_bad);
	r->meta_repaired = ff_cpu_to_le64(st->meta_repaired);
	r->unreadable = ff_cpu_to_le64(st->unreadable);
}

/*
 * Put the scrub that ended into the next slot of the ring and write the
 * superblock.  Under fs->lock: every superblock write is (a commit's tail
 * move writes it too), so this one carries the journal tail as it is.  A
 * read-only mount writes nothing: the record stays in memory.
 */
static void record_history(struct ffs *fs, struct scrub *s, enum ffs_scrub_result result)
{
	struct ffs_scrub_record old, *slot;
	const char *why;
	uint64_t seq;
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	seq = ffs_scrub_history_newest(fs->sb) + 1;
	slot = &fs->sb->scrub_history.rec[(seq - 1) % FFS_SB_SCRUB_RECORDS];
	old = *slot;
	record_fill(slot, seq, s, result);
	/* checked before it is written, as every block is: only a wall clock far
	 * off (start at 0, past the year 2500) can fail it; the older record stays */
	why = ffs_scrub_record_problem(fs->sb, (unsigned)((seq - 1) % FFS_SB_SCRUB_RECORDS));
	if (why)
		*slot = old;
	else if (!fs->ro)
		rc = ffs_super_write(fs);
	pthread_mutex_unlock(&fs->lock);
	if (why)
		ff_log(FF_LOG_ERR, "scrub %llu: not recorded in the history: %s (is the clock right?)",
		       (unsigned long long)seq, why);
	if (rc < 0)
		ff_log(FF_LOG_ERR, "scrub %llu: cannot write its record to the superblock: %s",
		       (unsigned long long)seq, strerror(-rc));
}

static void past_from(struct ffs_scrub_past *p, const struct ffs_scrub_record *r)
{
	p->seq = ff_le64(r->seq);
	p->start_s = ff_le64(r->start_s);
	p->end_s = ff_le64(r->end_s);
	p->repair = ff_le32(r->flags) & FFS_SCRUB_F_REPAIR;
	p->result = (enum ffs_scrub_result)ff_le32(r->result);
	p->bytes_checked = ff_le64(r->bytes_checked);
	p->stripes_checked = ff_le64(r->stripes_checked);
	p->meta_chunks_checked = ff_le64(r->meta_chunks_checked);
	p->chunks_bad = ff_le64(r->chunks_bad);
	p->chunks_repaired = ff_le64(r->chunks_repaired);
	p->chunks_unrepairable = ff_le64(r->chunks_unrepairable);
	p->parity_bad = ff_le64(r->parity_bad);
	p->parity_repaired = ff_le64(r->parity_repaired);
	p->meta_bad = ff_le64(r->meta_bad);
	p->meta_repaired = ff_le64(r->meta_repaired);
	p->unreadable = ff_le64(r->unreadable);
}

unsigned ffs_scrub_history(struct ffs *fs, struct ffs_scrub_past *out)
{
	uint64_t newest;
	unsigned n = 0;

	pthread_mutex_lock(&fs->lock);
	newest = ffs_scrub_history_newest(fs->sb);
	/* newest first: seq newest, newest - 1, ... each in its own slot */
	for (uint64_t k = 0; k < FFS_SB_SCRUB_RECORDS && k < newest; k++) {
		uint64_t seq = newest - k;
		unsigned slot = (unsigned)((seq - 1) % FFS_SB_SCRUB_RECORDS);
		const struct ffs_scrub_record *r = &fs->sb->scrub_history.rec[slot];

		if (ff_le64(r->seq) == seq && !ffs_scrub_record_problem(fs->sb, slot))
			past_from(&out[n++], r);
	}
	pthread_mutex_unlock(&fs->lock);
	return n;
}

/* How the scrub ended; a failed array makes it a failure (its error says why). */
static enum ffs_scrub_result scrub_result(struct ffs *fs, struct scrub *s)
{
	if (ff_raid_failed_count(fs->raid) > fs->g->nparity) {
		pthread_mutex_lock(&s->lock);
		s->st.error = -EIO;
		pthread_mutex_unlock(&s->lock);
	}
	if (s->st.error)
		return FFS_SCRUB_FAILED;
	return s->stop ? FFS_SCRUB_STOPPED : FFS_SCRUB_DONE;
}

static void *scrub_main(void *arg)
{
	struct ffs *fs = arg;
	struct scrub *s = fs->scrub;
	uint64_t n = ff_le64(fs->sb->nstripes);
	enum ffs_scrub_result result;

	ff_log(FF_LOG_INFO, "scrub started (%s)", s->st.repair ? "repair" : "check only");
	scrub_meta(fs, s);
	for (uint64_t p = 0; p < n && !s->stop; p++) {
		if (ffs_stripe_in_use(fs, p)) /* scrub_stripe checks its owner under fs->lock */
			scrub_stripe(fs, s, p);
		pthread_mutex_lock(&s->lock);
		s->st.fraction = (double)(p + 1) / (double)n;
		pthread_mutex_unlock(&s->lock);
		throttle(fs, s);
	}
	result = scrub_result(fs, s);
	ff_log(FF_LOG_INFO, "scrub %s: %llu stripes, %llu bad chunks (%llu repaired), %llu parity "
	       "mismatches (%llu repaired), %llu metadata copies repaired", ffs_scrub_result_name(result),
	       (unsigned long long)s->st.stripes_checked, (unsigned long long)s->st.chunks_bad,
	       (unsigned long long)s->st.chunks_repaired, (unsigned long long)s->st.parity_bad,
	       (unsigned long long)s->st.parity_repaired, (unsigned long long)s->st.meta_repaired);
	post_events(fs, s);
	record_history(fs, s, result); /* before it shows as ended: a waiter then sees its record */
	pthread_mutex_lock(&s->lock);
	s->running = false;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int ffs_scrub_start(struct ffs *fs, bool repair)
{
	struct scrub *s = scrub_get(fs);
	int rc;

	if (!s)
		return -ENOMEM;
	if (fs->ro && repair)
		return -EROFS;
	pthread_mutex_lock(&s->lock);
	if (s->running) {
		pthread_mutex_unlock(&s->lock);
		return -EBUSY;
	}
	pthread_mutex_unlock(&s->lock);
	if (s->started) {
		pthread_join(s->thread, NULL);
		s->started = false;
	}
	if (!s->buf)
		s->buf = ff_alloc_aligned(fs->stripe_bytes);
	for (unsigned c = 0; c < fs->g->meta_copies; c++)
		if (!s->mbuf[c])
			s->mbuf[c] = ff_alloc_aligned(FF_META_CHUNK);
	if (!s->buf)
		return -ENOMEM;
	/* running is set before the thread exists and only the thread (or a
	 * failed start) clears it: a short scrub may end before pthread_create
	 * returns, and must not be shown running for ever after (a waiter
	 * would never wake) */
	pthread_mutex_lock(&s->lock);
	memset(&s->st, 0, sizeof(s->st));
	s->st.active = true;
	s->st.repair = repair;
	s->stop = false;
	s->running = true;
	s->bytes = 0;
	s->last_fg = atomic_load(&ff_raid_stats(fs->raid)->fg_bytes);
	s->start_ns = ff_mono_ns();
	s->start_s = ff_wall_ns() / 1000000000ull;
	s->st.start_s = s->start_s;
	pthread_mutex_unlock(&s->lock);
	rc = -pthread_create(&s->thread, NULL, scrub_main, fs);
	s->started = rc == 0;
	if (rc < 0) {
		pthread_mutex_lock(&s->lock);
		s->running = false;
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

int ffs_scrub_stop(struct ffs *fs)
{
	struct scrub *s = fs->scrub;

	if (!s || !s->started)
		return 0;
	s->stop = true;
	pthread_join(s->thread, NULL);
	s->started = false;
	return 0;
}

static void fill_paths(struct ffs *fs, struct ffs_scrub_status *st)
{
	for (unsigned i = 0; i < st->nreport; i++)
		if (ffs_ino_path(fs, st->report[i].ino, st->report[i].path,
				 sizeof(st->report[i].path)) < 0)
			st->report[i].path[0] = '\0';
}

void ffs_scrub_status(struct ffs *fs, struct ffs_scrub_status *st)
{
	struct scrub *s = fs->scrub;
	double secs;

	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	*st = s->st;
	st->active = s->running;
	st->bytes_checked = s->bytes;
	pthread_mutex_unlock(&s->lock);
	secs = (double)(ff_mono_ns() - s->start_ns) / 1e9;
	st->mb_per_s = secs > 0 ? (double)s->bytes / 1e6 / secs : 0;
	st->eta_s = st->fraction > 0 && st->fraction < 1 ? secs * (1 - st->fraction) / st->fraction : 0;
	fill_paths(fs, st);
}

int ffs_scrub_wait(struct ffs *fs, struct ffs_scrub_status *st)
{
	struct scrub *s = fs->scrub;

	if (s) {
		pthread_mutex_lock(&s->lock);
		while (s->running)
			pthread_cond_wait(&s->cond, &s->lock);
		pthread_mutex_unlock(&s->lock);
	}
	if (st)
		ffs_scrub_status(fs, st);
	return 0;
}

void ffs_scrub_set_rate(struct ffs *fs, uint64_t min_bps, uint64_t max_bps)
{
	struct scrub *s = scrub_get(fs);

	if (s) {
		s->min_bps = min_bps;
		s->max_bps = max_bps;
	}
}

void ffs_scrub_free(struct ffs *fs)
{
	struct scrub *s = fs->scrub;

	if (!s)
		return;
	ffs_scrub_stop(fs);
	free(s->buf);
	for (unsigned c = 0; c <= FF_PARITY_MAX; c++)
		free(s->mbuf[c]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	fs->scrub = NULL;
}

/* ---- naming inodes ---------------------------------------------------------- */

/* The name of ino in directory dir (a scan: used only for reports). */
static int name_in(struct ffs *fs, struct finode *dir, uint64_t ino, char *name)
{
	uint64_t pos = 0;

	for (;;) {
		uint64_t child, next;
		uint8_t type;
		int rc = ffs_dir_next(fs, dir, pos, name, &child, &type, &next);

		if (rc < 0)
			return rc;
		if (child == ino)
			return 0;
		pos = next;
	}
}

int ffs_ino_path(struct ffs *fs, uint64_t ino, char *buf, size_t len)
{
	char part[FFS_NAME_MAX + 1], tmp[4096] = "";
	int rc = 0;

	pthread_mutex_lock(&fs->lock);
	for (unsigned depth = 0; ino != FFS_ROOT_INO && depth < 256 && rc == 0; depth++) {
		struct finode *fi, *dir;
		uint64_t parent;

		rc = ffs_iget(fs, ino, &fi);
		if (rc < 0)
			break;
		parent = ff_le64(fi->d.parent);
		ffs_iput(fs, fi);
		rc = ffs_iget(fs, parent, &dir);
		if (rc < 0)
			break;
		rc = name_in(fs, dir, ino, part);
		ffs_iput(fs, dir);
		if (rc == 0) { /* prepend "/part" */
			size_t pl = strlen(part) + 1, tl = strlen(tmp);

			if (pl + tl >= sizeof(tmp)) {
				rc = -ENAMETOOLONG;
				break;
			}
			memmove(tmp + pl, tmp, tl + 1);
			tmp[0] = '/';
			memcpy(tmp + 1, part, pl - 1);
		}
		ino = parent;
	}
	pthread_mutex_unlock(&fs->lock);
	if (rc < 0)
		return rc;
	snprintf(buf, len, "%s", tmp[0] ? tmp : "/");
	return 0;
}

void ffs_info(struct ffs *fs, struct ffs_info *info)
{
	memset(info, 0, sizeof(*info));
	pthread_mutex_lock(&fs->lock);
	memcpy(info->label, fs->sb->label, sizeof(info->label));
	info->label[sizeof(info->label) - 1] = '\0';
	memcpy(info->uuid, fs->sb->uuid, 16);
	info->stripe_bytes = fs->stripe_bytes;
	info->nstripes = ff_le64(fs->sb->nstripes);
	info->free_stripes = fs->free_stripes + fs->npending + ffs_tails_spare_count(fs);
	info->reserve_stripes = ffs_overwrite_reserve(fs);
	info->ninodes = ff_le64(fs->sb->ninodes);
	info->free_inodes = fs->free_inodes;
	info->commits = fs->commits;
	info->ro = fs->ro;
	info->version = ff_le32(fs->sb->version);
	info->small_max = ffs_small_max(fs);
	info->pool_start = ff_le64(fs->sb->pool_start);
	info->pool_blocks = ff_le64(fs->sb->pool_blocks);
	info->free_pool_blocks = fs->free_mblocks;
	pthread_mutex_unlock(&fs->lock);
	info->merges_pending = ffs_merges_pending(fs);
	ffs_pcache_usage(fs, &info->patch_cache_blocks, &info->patch_cache_capacity);
}
