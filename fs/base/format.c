/* SPDX-License-Identifier: MIT */
#include "fs/base/format.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/ffs.h"
#include "raid/raid.h"

const uint64_t ffs_sb_block[FFS_SB_COPIES] = { FFS_SB_BLOCK_A, FFS_SB_BLOCK_B, FFS_SB_BLOCK_C,
						FFS_SB_BLOCK_D };
const char ffs_sb_name[FFS_SB_COPIES + 1] = "ABCD";

/* The copies must stay clear of the orphan block and the journal, and each
 * group must hold copies at two offsets within a chunk (see format.h). */
_Static_assert(FFS_SB_BLOCK_C < FFS_JOURNAL_START && FFS_SB_BLOCK_C != FFS_ORPHAN_BLOCK &&
	       FFS_SB_BLOCK_D != FFS_ORPHAN_BLOCK, "superblock copies in the head area");
#define CHUNK_BLOCKS (FF_META_CHUNK / FFS_BLOCK)
_Static_assert(FFS_SB_BLOCK_A % CHUNK_BLOCKS != FFS_SB_BLOCK_C % CHUNK_BLOCKS &&
	       FFS_SB_BLOCK_B % CHUNK_BLOCKS != FFS_SB_BLOCK_D % CHUNK_BLOCKS &&
	       FFS_SB_BLOCK_A / CHUNK_BLOCKS != FFS_SB_BLOCK_C / CHUNK_BLOCKS &&
	       FFS_SB_BLOCK_B / CHUNK_BLOCKS != FFS_SB_BLOCK_D / CHUNK_BLOCKS &&
	       FFS_SB_BLOCK_C % CHUNK_BLOCKS != FFS_SB_BLOCK_D % CHUNK_BLOCKS &&
	       FFS_SB_BLOCK_C % CHUNK_BLOCKS && FFS_SB_BLOCK_D % CHUNK_BLOCKS,
	       "each group spans two chunks at two offsets; C and D off A's and B's offset");

bool ffs_is_sb_block(uint64_t no)
{
	for (unsigned i = 0; i < FFS_SB_COPIES; i++)
		if (ffs_sb_block[i] == no)
			return true;
	return false;
}

void ffs_block_seal(void *block, uint32_t type, uint64_t blockno)
{
	struct ffs_bhdr *h = block;

	h->type = ff_cpu_to_le32(type);
	h->blockno = ff_cpu_to_le64(blockno);
	ff_csum_set(block, FFS_BLOCK, offsetof(struct ffs_bhdr, crc));
}

int ffs_block_check(const void *block, uint32_t type, uint64_t blockno)
{
	const struct ffs_bhdr *h = block;

	if (ff_le32(h->type) != type || ff_le64(h->blockno) != blockno)
		return -EBADMSG;
	return ff_csum_verify(block, FFS_BLOCK, offsetof(struct ffs_bhdr, crc));
}

int ffs_xattr_parse(const uint8_t *data, size_t used, size_t pos, struct ffs_xattr_ent *e)
{
	size_t v;

	if (used > FFS_XATTR_BYTES_MAX || pos + 3 > used)
		return -EUCLEAN;
	e->name_len = data[pos];
	v = (size_t)data[pos + 1] | ((size_t)data[pos + 2] << 8);
	e->name = data + pos + 3;
	e->first = 0;
	if (v == FFS_XATTR_VLEN_EXT) {
		struct ffs_xattr_ext x;

		e->size = 3 + e->name_len + sizeof(x);
		if (e->name_len == 0 || pos + e->size > used)
			return -EUCLEAN;
		memcpy(&x, e->name + e->name_len, sizeof(x));
		e->value_len = ff_le32(x.len);
		e->first = ff_le64(x.first);
		e->value = NULL;
		return e->value_len && e->value_len <= FFS_XATTR_VALUE_MAX && e->first ? 0 : -EUCLEAN;
	}
	e->value_len = v;
	e->value = e->name + e->name_len;
	e->size = 3 + e->name_len + v;
	return e->name_len == 0 || pos + e->size > used ? -EUCLEAN : 0;
}

uint64_t ffs_name_hash(const char *name, size_t len)
{
	uint64_t h = ((uint64_t)ff_crc32c(0x9e3779b9u, name, len) << 32) |
		     ff_crc32c(0x7f4a7c15u, name, len);

	h >>= 1; /* 63 bits: keys stay positive as readdir offsets */
	return h < FFS_DIR_KEY_MIN ? h + FFS_DIR_KEY_MIN : h;
}

/* DT_* values are the S_IFMT bits shifted down (as Linux defines them). */
_Static_assert(DT_DIR == (S_IFDIR >> 12) && DT_REG == (S_IFREG >> 12) && DT_LNK == (S_IFLNK >> 12),
	       "DT_* = S_IFMT >> 12");

uint8_t ffs_dtype(uint32_t mode)
{
	return (uint8_t)((mode & S_IFMT) >> 12);
}

static uint64_t blocks_for_bits(uint64_t bits)
{
	return FF_DIV_ROUND_UP(bits, FFS_BITS_PER_BLOCK);
}

uint32_t ffs_patch_crc(uint64_t p, uint32_t slot, const void *data)
{
	uint64_t seed[2] = { ff_cpu_to_le64(p), ff_cpu_to_le64(slot) };

	return ff_crc32c(ff_crc32c(0, seed, sizeof(seed)), data, FFS_BLOCK);
}

uint32_t ffs_sdata_crc(uint64_t no, const void *data)
{
	uint64_t seed = ff_cpu_to_le64(no);

	return ff_crc32c(ff_crc32c(0, &seed, sizeof(seed)), data, FFS_BLOCK);
}

bool ffs_small_layout_ok(const struct ffs_super *sb)
{
	uint64_t csum_end = ff_le64(sb->csum_start) + ff_le64(sb->csum_blocks);

	if (ff_le32(sb->version) < FFS_VERSION_SMALL)
		return !sb->pcsum_start && !sb->pcsum_blocks && !sb->small_max &&
		       ff_le64(sb->mbitmap_start) == csum_end;
	return ff_le64(sb->pcsum_start) == csum_end &&
	       ff_le64(sb->mbitmap_start) == csum_end + ff_le64(sb->pcsum_blocks) &&
	       ff_le64(sb->pcsum_blocks) * FFS_PCSUM_PER_BLOCK >= ff_le64(sb->pool_blocks) &&
	       ff_le32(sb->small_max) <= FFS_SMALL_BYTES_MAX &&
	       ff_le32(sb->small_max) <= ff_le64(sb->stripe_bytes) && !sb->small_reserved;
}

int ffs_layout(struct ffs_super *sb, const struct ff_geom *g, uint64_t ninodes,
	       uint64_t journal_blocks, uint32_t version, uint32_t small_max, struct ff_err *err)
{
	uint64_t meta_blocks = g->meta_bytes / FFS_BLOCK, pos, rest, mbitmap, pcsum;
	uint32_t entry = (uint32_t)(sizeof(struct ffs_csum_entry) + 4 * g->ndata);

	if (!journal_blocks)
		journal_blocks = FF_MIN(FF_MAX(meta_blocks / 16, 1024ull), 65536ull);
	if (!ninodes) /* one inode per 256 KiB of data, at least FFS_INODES_MIN, at most a quarter of META */
		ninodes = FF_MIN(FF_MAX(g->data_bytes / (256 * FF_KiB), (uint64_t)FFS_INODES_MIN),
				 meta_blocks / 4 * FFS_INODES_PER_BLOCK);
	sb->meta_blocks = ff_cpu_to_le64(meta_blocks);
	sb->journal_start = ff_cpu_to_le64(FFS_JOURNAL_START);
	sb->journal_blocks = ff_cpu_to_le64(journal_blocks);
	pos = FFS_JOURNAL_START + journal_blocks;
	sb->itable_start = ff_cpu_to_le64(pos);
	sb->itable_blocks = ff_cpu_to_le64(FF_DIV_ROUND_UP(ninodes, FFS_INODES_PER_BLOCK));
	ninodes = ff_le64(sb->itable_blocks) * FFS_INODES_PER_BLOCK;
	sb->ninodes = ff_cpu_to_le64(ninodes);
	pos += ff_le64(sb->itable_blocks);
	sb->ibitmap_start = ff_cpu_to_le64(pos);
	sb->ibitmap_blocks = ff_cpu_to_le64(blocks_for_bits(ninodes));
	pos += ff_le64(sb->ibitmap_blocks);
	sb->sbitmap_start = ff_cpu_to_le64(pos);
	sb->sbitmap_blocks = ff_cpu_to_le64(blocks_for_bits(g->nstripes));
	pos += ff_le64(sb->sbitmap_blocks);
	sb->csum_entry_bytes = ff_cpu_to_le32(entry);
	sb->csum_per_block = ff_cpu_to_le32((FFS_BLOCK - (uint32_t)sizeof(struct ffs_bhdr)) / entry);
	sb->csum_start = ff_cpu_to_le64(pos);
	sb->csum_blocks = ff_cpu_to_le64(FF_DIV_ROUND_UP(g->nstripes, ff_le32(sb->csum_per_block)));
	pos += ff_le64(sb->csum_blocks);
	if (pos >= meta_blocks) {
		ff_err_set(err, "metadata area too small: %llu blocks, layout needs %llu",
			   (unsigned long long)meta_blocks, (unsigned long long)pos);
		return -ENOSPC;
	}
	rest = meta_blocks - pos;
	/* the pool takes what the table and the bitmap that cover it leave:
	 * each covers at least the pool, as rest bounds it */
	pcsum = version >= FFS_VERSION_SMALL ? FF_DIV_ROUND_UP(rest, FFS_PCSUM_PER_BLOCK + 1) : 0;
	sb->version = ff_cpu_to_le32(version);
	sb->pcsum_start = ff_cpu_to_le64(pcsum ? pos : 0);
	sb->pcsum_blocks = ff_cpu_to_le64(pcsum);
	pos += pcsum;
	rest -= pcsum;
	mbitmap = FF_DIV_ROUND_UP(rest, FFS_BITS_PER_BLOCK + 1);
	sb->mbitmap_start = ff_cpu_to_le64(pos);
	sb->mbitmap_blocks = ff_cpu_to_le64(mbitmap);
	sb->pool_start = ff_cpu_to_le64(pos + mbitmap);
	sb->pool_blocks = ff_cpu_to_le64(rest - mbitmap);
	/* a file no larger than a stripe: its bytes would have fit stripe 0 */
	if (!pcsum)
		small_max = 0;
	sb->small_max = ff_cpu_to_le32((uint32_t)FF_MIN((uint64_t)FF_MIN(small_max, FFS_SMALL_BYTES_MAX),
						       g->stripe_bytes));
	if (rest - mbitmap < 1024) {
		ff_err_set(err, "metadata area too small: %llu pool blocks left, need 1024",
			   (unsigned long long)(rest - mbitmap));
		return -ENOSPC;
	}
	sb->level = ff_cpu_to_le32(g->level);
	sb->nmembers = ff_cpu_to_le32(g->nmembers);
	sb->chunk_bytes = ff_cpu_to_le32(g->chunk_bytes);
	sb->ndata = ff_cpu_to_le32(g->ndata);
	sb->stripe_bytes = ff_cpu_to_le64(g->stripe_bytes);
	sb->nstripes = ff_cpu_to_le64(g->nstripes);
	return 0;
}

/* ---- scrub history ---------------------------------------------------------- */

_Static_assert(FFS_SB_SCRUB_RECORDS == FFS_SCRUB_HISTORY_MAX, "the API's history is the superblock's");

/* Beyond any count of scrubs a volume runs: a larger seq is garbage. */
#define SCRUB_SEQ_MAX (1ull << 40)
/* 2^34 s after the epoch is the year 2514: a later time is garbage. */
#define SCRUB_TIME_MAX (1ull << 34)

static bool slot_fits(const struct ffs_scrub_record *r, unsigned slot)
{
	uint64_t seq = ff_le64(r->seq);

	return seq && seq <= SCRUB_SEQ_MAX && (seq - 1) % FFS_SB_SCRUB_RECORDS == slot;
}

uint64_t ffs_scrub_history_newest(const struct ffs_super *sb)
{
	uint64_t newest = 0;

	for (unsigned i = 0; i < FFS_SB_SCRUB_RECORDS; i++)
		if (slot_fits(&sb->scrub_history.rec[i], i))
			newest = FF_MAX(newest, ff_le64(sb->scrub_history.rec[i].seq));
	return newest;
}

static bool all_zero(const void *p, size_t len)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* Counts no scrub of this volume can have reached. */
static const char *counts_problem(const struct ffs_super *sb, const struct ffs_scrub_record *r)
{
	uint64_t stripes = ff_le64(r->stripes_checked), mchunks = ff_le64(r->meta_chunks_checked);
	bool repair = ff_le32(r->flags) & FFS_SCRUB_F_REPAIR;

	if (stripes > ff_le64(sb->nstripes))
		return "more stripes checked than the volume has";
	if (mchunks > ff_le64(sb->meta_blocks) * FFS_BLOCK / FF_META_CHUNK)
		return "more metadata chunks checked than the volume has";
	if (ff_le64(r->bytes_checked) > stripes * ff_le64(sb->stripe_bytes) +
					mchunks * FF_META_CHUNK * (FF_PARITY_MAX + 1))
		return "more bytes checked than the stripes and metadata checked hold";
	if (ff_le64(r->chunks_bad) > stripes * ff_le32(sb->ndata) ||
	    ff_le64(r->parity_bad) > stripes || ff_le64(r->unreadable) > stripes ||
	    ff_le64(r->meta_bad) > mchunks * (FF_META_CHUNK / FFS_BLOCK))
		return "more damage found than was checked";
	/* each bounded by chunks_bad (itself bounded above) before they are added */
	if (ff_le64(r->chunks_repaired) > ff_le64(r->chunks_bad) ||
	    ff_le64(r->chunks_unrepairable) > ff_le64(r->chunks_bad) ||
	    ff_le64(r->chunks_repaired) + ff_le64(r->chunks_unrepairable) > ff_le64(r->chunks_bad) ||
	    ff_le64(r->parity_repaired) > ff_le64(r->parity_bad) ||
	    ff_le64(r->meta_repaired) > ff_le64(r->meta_bad))
		return "more damage repaired than found";
	if (!repair && (r->chunks_repaired || r->chunks_unrepairable || r->parity_repaired ||
			r->meta_repaired))
		return "repairs recorded by a scrub that did not repair";
	return NULL;
}

const char *ffs_scrub_record_problem(const struct ffs_super *sb, unsigned slot)
{
	const struct ffs_scrub_record *r = &sb->scrub_history.rec[slot];
	uint64_t seq = ff_le64(r->seq), start = ff_le64(r->start_s), end = ff_le64(r->end_s);

	FF_ASSERT(slot < FFS_SB_SCRUB_RECORDS);
	if (seq == 0)
		return all_zero(r, sizeof(*r)) ? NULL : "an empty slot holds data";
	if (!slot_fits(r, slot))
		return "its number does not belong in this slot";
	if (seq + FFS_SB_SCRUB_RECORDS <= ffs_scrub_history_newest(sb))
		return "older than the eight newest";
	if (ff_le32(r->result) < FFS_SCRUB_DONE || ff_le32(r->result) > FFS_SCRUB_FAILED)
		return "its result is unknown";
	if (ff_le32(r->flags) & ~(uint32_t)FFS_SCRUB_F_REPAIR)
		return "unknown flags";
	if (start == 0 || end >= SCRUB_TIME_MAX)
		return "its times are out of range";
	if (start > end)
		return "it ends before it starts";
	return counts_problem(sb, r);
}
