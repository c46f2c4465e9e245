/* SPDX-License-Identifier: MIT */
/*
 * RAID levels (one table each) and the array geometry.
 *
 * Both levels rotate parity left-symmetrically, as md's default layout:
 * parity starts on the last member for stripe 0 and moves one member left
 * per stripe; data continues right after it, wrapping, so that a
 * sequential read touches every member in turn.
 */
#include <errno.h>
#include <string.h>

#include "raid/raid.h"

static void raid5_map(uint32_t n, uint64_t stripe, uint8_t *slot_member)
{
	uint32_t pd = n - 1 - (uint32_t)(stripe % n);

	for (uint32_t i = 0; i < n - 1; i++)
		slot_member[i] = (uint8_t)((pd + 1 + i) % n);
	slot_member[n - 1] = (uint8_t)pd;
}

static void raid6_map(uint32_t n, uint64_t stripe, uint8_t *slot_member)
{
	uint32_t pd = n - 1 - (uint32_t)(stripe % n);

	for (uint32_t i = 0; i < n - 2; i++)
		slot_member[i] = (uint8_t)((pd + 2 + i) % n);
	slot_member[n - 2] = (uint8_t)pd;
	slot_member[n - 1] = (uint8_t)((pd + 1) % n);
}

static const struct ff_raid_level raid5 = {
	.level = 5, .nparity = 1, .min_members = 3, .parity = &ff_parity_raid5, .map = raid5_map,
};

static const struct ff_raid_level raid6 = {
	.level = 6, .nparity = 2, .min_members = 4, .parity = &ff_parity_raid6, .map = raid6_map,
};

const struct ff_raid_level *ff_raid_level_get(uint32_t level)
{
	return level == 5 ? &raid5 : level == 6 ? &raid6 : NULL;
}

int ff_geom_compute(struct ff_geom *g, uint32_t level, uint32_t nmembers, uint32_t chunk_bytes,
		    uint64_t smallest_member_bytes, uint64_t meta_member_bytes, uint32_t io_align,
		    struct ff_err *err)
{
	const struct ff_raid_level *lv = ff_raid_level_get(level);
	uint64_t usable, meta_rows;

	memset(g, 0, sizeof(*g));
	if (!lv) {
		ff_err_set(err, "RAID level %u is not supported (5 or 6)", level);
		return -EINVAL;
	}
	if (nmembers < lv->min_members || nmembers > FF_MEMBERS_MAX) {
		ff_err_set(err, "RAID%u needs %u to %u members, %u given", level, lv->min_members,
			   FF_MEMBERS_MAX, nmembers);
		return -EINVAL;
	}
	if (!FF_IS_POW2(chunk_bytes) || chunk_bytes < FF_CHUNK_MIN || chunk_bytes > FF_CHUNK_MAX) {
		ff_err_set(err, "chunk size %u is not a power of two between 16K and 1M", chunk_bytes);
		return -EINVAL;
	}
	if (!FF_IS_POW2(io_align) || io_align > 4096)
		io_align = 4096;
	g->level = level;
	g->nmembers = nmembers;
	g->nparity = lv->nparity;
	g->ndata = nmembers - lv->nparity;
	g->chunk_bytes = chunk_bytes;
	g->io_align = io_align;
	g->stripe_bytes = (uint64_t)g->ndata * chunk_bytes;
	g->meta_copies = lv->nparity + 1;
	g->member_bytes = smallest_member_bytes / FF_MiB * FF_MiB;
	if (!meta_member_bytes)
		meta_member_bytes = FF_MAX(32 * FF_MiB, g->member_bytes / 512);
	meta_member_bytes = FF_ROUND_UP(meta_member_bytes, FF_META_CHUNK);
	g->meta_offset = FF_MEMBER_RESERVED;
	g->meta_member_bytes = meta_member_bytes;
	meta_rows = meta_member_bytes / FF_META_CHUNK;
	g->meta_members = nmembers;
	g->meta_bytes = meta_rows * nmembers / g->meta_copies * FF_META_CHUNK;
	g->data_offset = FF_ROUND_UP(g->meta_offset + meta_member_bytes, FF_MAX(chunk_bytes, FF_MiB));
	/* the last MiB holds superblock copy B */
	usable = g->member_bytes > g->data_offset + FF_MiB ? g->member_bytes - FF_MiB - g->data_offset : 0;
	g->nstripes = usable / chunk_bytes;
	g->data_bytes = g->nstripes * g->stripe_bytes;
	if (g->nstripes < 16) {
		ff_err_set(err, "members are too small: %llu MiB usable each, need at least %llu MiB",
			   (unsigned long long)(smallest_member_bytes / FF_MiB),
			   (unsigned long long)((g->data_offset + FF_MiB + 16ull * chunk_bytes) / FF_MiB));
		return -ENOSPC;
	}
	return 0;
}
