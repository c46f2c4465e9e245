/* SPDX-License-Identifier: MIT */
/*
 * One member's superblock (raid/sb.h): its two copies read (the freshest
 * valid one wins), checked, written (head, flush, tail, flush) and erased;
 * the foreign signatures mkfs will not overwrite unasked; uuids.  Nothing
 * here knows an assembled array: mkfs, fsck and the tools use it too.  An
 * assembled array's state goes to every member's superblock in sb_update.c.
 */
#include "raid/sb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

static int sb_read_copy(struct ff_member *m, unsigned copy, struct ff_member_sb *sb)
{
	uint64_t off = ff_sb_offset(copy, m->size_bytes);
	int rc;

	if (m->size_bytes < 2 * FF_MEMBER_SB_BYTES)
		return -ENOENT;
	rc = ff_member_pread(m, sb, sizeof(*sb), off);
	if (rc < 0)
		return rc;
	if (ff_le64(sb->magic) != FF_MEMBER_SB_MAGIC)
		return -ENOENT;
	if (ff_csum_verify(sb, sizeof(*sb), offsetof(struct ff_member_sb, crc)) < 0)
		return -EBADMSG;
	return 0;
}

int ff_sb_read(struct ff_member *m, struct ff_member_sb *sb)
{
	struct ff_member_sb *b = ff_alloc_aligned(sizeof(*b));
	struct ff_member_sb *a = ff_alloc_aligned(sizeof(*a));
	int ra, rb, rc;

	if (!a || !b) {
		free(a);
		free(b);
		return -ENOMEM;
	}
	ra = sb_read_copy(m, 0, a);
	rb = sb_read_copy(m, 1, b);
	if (ra == 0 && (rb < 0 || ff_le64(a->events) >= ff_le64(b->events)))
		memcpy(sb, a, sizeof(*sb)), rc = 0;
	else if (rb == 0)
		memcpy(sb, b, sizeof(*sb)), rc = 0;
	else if (ra == -EBADMSG || rb == -EBADMSG)
		rc = -EBADMSG;
	else if (ra == -ENOENT && rb == -ENOENT)
		rc = -ENOENT;
	else
		rc = ra < 0 ? ra : rb;
	free(a);
	free(b);
	return rc;
}

int ff_sb_validate(const struct ff_member_sb *sb, struct ff_err *err, const char *path)
{
	const struct ff_raid_level *lv = ff_raid_level_get(ff_le32(sb->level));
	uint32_t n = ff_le32(sb->nmembers), chunk = ff_le32(sb->chunk_bytes);
	uint32_t role = ff_le32(sb->role);

	uint32_t version = ff_le32(sb->version), on = ff_le32(sb->old_nmembers);
	uint32_t mm = ff_le32(sb->meta_members);
	const struct ff_raid_level *olv = ff_raid_level_get(ff_le32(sb->old_level));

	if (version != FF_MEMBER_SB_VERSION && version != FF_MEMBER_SB_VERSION_GROWN) {
		ff_err_set(err, "%s: member superblock version %u is not supported", path, version);
		return -EINVAL;
	}
	if ((version == FF_MEMBER_SB_VERSION && (on || mm || sb->old_level)) ||
	    (on && (!olv || on < olv->min_members || on >= n ||
		    on - olv->nparity > n - (lv ? lv->nparity : 0))) ||
	    mm > n || (mm && lv && mm < lv->nparity + 1)) {
		ff_err_set(err, "%s: member superblock has an inconsistent grow record", path);
		return -EINVAL;
	}
	if (!lv || n < lv->min_members || n > FF_MEMBERS_MAX || !FF_IS_POW2(chunk) ||
	    chunk < FF_CHUNK_MIN || chunk > FF_CHUNK_MAX || (role >= n && role != FF_ROLE_SPARE) ||
	    ff_le32(sb->meta_copies) != lv->nparity + 1 ||
	    ff_le64(sb->data_offset) < ff_le64(sb->meta_offset) + ff_le64(sb->meta_member_bytes) ||
	    ff_le64(sb->data_offset) + ff_le64(sb->nstripes) * chunk > ff_le64(sb->member_bytes)) {
		ff_err_set(err, "%s: member superblock has inconsistent geometry", path);
		return -EINVAL;
	}
	return 0;
}

int ff_sb_write(struct ff_member *m, struct ff_member_sb *sb)
{
	int rc;

	ff_csum_set(sb, sizeof(*sb), offsetof(struct ff_member_sb, crc));
	/* Head, flush, tail: one copy is always whole, whatever instant power fails. */
	rc = ff_member_pwrite(m, sb, sizeof(*sb), ff_sb_offset(0, m->size_bytes));
	if (rc == 0)
		rc = ff_member_flush(m);
	if (rc == 0)
		rc = ff_member_pwrite(m, sb, sizeof(*sb), ff_sb_offset(1, m->size_bytes));
	if (rc == 0)
		rc = ff_member_flush(m);
	return rc;
}

int ff_sb_erase(struct ff_member *m)
{
	void *z = ff_alloc_aligned(FF_MEMBER_SB_BYTES);
	int rc;

	if (!z)
		return -ENOMEM;
	memset(z, 0, FF_MEMBER_SB_BYTES);
	rc = ff_member_pwrite(m, z, FF_MEMBER_SB_BYTES, ff_sb_offset(0, m->size_bytes));
	if (rc == 0)
		rc = ff_member_pwrite(m, z, FF_MEMBER_SB_BYTES, ff_sb_offset(1, m->size_bytes));
	if (rc == 0)
		rc = ff_member_flush(m);
	free(z);
	return rc;
}

/* Signatures checked before mkfs overwrites a member. */
static const struct {
	const char *name;
	uint32_t off;
	const char *magic;
	uint32_t len;
} signatures[] = {
	{ "ext2/3/4", 1080, "\x53\xef", 2 },
	{ "xfs", 0, "XFSB", 4 },
	{ "btrfs", 65536 + 64, "_BHRfS_M", 8 },
	{ "md raid (1.1)", 0, "\xfc\x4e\x2b\xa9", 4 },
	{ "md raid (1.2)", 4096, "\xfc\x4e\x2b\xa9", 4 },
	{ "LVM2", 512, "LABELONE", 8 },
	{ "GPT partition table", 512, "EFI PART", 8 },
	{ "swap", 4086, "SWAPSPACE2", 10 },
	{ "iso9660", 32769, "CD001", 5 },
	{ "bcache", 4096 + 24, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca", 8 },
	{ "dos partition table", 510, "\x55\xaa", 2 },
};

const char *ff_probe_signature(struct ff_member *m)
{
	const size_t len = 72 * 1024;
	struct ff_member_sb sb;
	const char *found = NULL;
	uint8_t *buf;

	if (ff_sb_read(m, &sb) != -ENOENT)
		return "framefs member";
	if (m->size_bytes < len)
		return NULL;
	buf = ff_alloc_aligned(len);
	if (!buf || ff_member_pread(m, buf, len, 0) < 0) {
		free(buf);
		return NULL;
	}
	for (size_t i = 0; i < FF_ARRAY_SIZE(signatures) && !found; i++)
		if (memcmp(buf + signatures[i].off, signatures[i].magic, signatures[i].len) == 0)
			found = signatures[i].name;
	free(buf);
	return found;
}

void ff_uuid_generate(uint8_t uuid[16])
{
	if (getrandom(uuid, 16, 0) != 16) {
		uint64_t t = ff_mono_ns() ^ ((uint64_t)getpid() << 32);

		for (int i = 0; i < 16; i++, t = t * 6364136223846793005ull + 1442695040888963407ull)
			uuid[i] = (uint8_t)(t >> 56);
	}
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80); /* variant 1 */
}

void ff_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}
