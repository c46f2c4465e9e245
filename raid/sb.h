/* SPDX-License-Identifier: MIT */
/*
 * Member superblock: two identical copies per member (head and tail), each
 * checksummed; the copy with the highest event counter wins, so a torn
 * write of one copy never loses the member.
 */
#ifndef FF_RAID_SB_H
#define FF_RAID_SB_H

#include "io/ff_common.h"
#include "raid/raid.h"

#define FF_MEMBER_SB_MAGIC 0x314d44494152464full /* on disk (little-endian): the bytes "OFRAIDM1" */
#define FF_MEMBER_SB_VERSION 1u
/* A grown array's (old_level, old_nmembers, meta_members set): a binary that
 * knows only version 1 refuses it rather than read its rows wrong. */
#define FF_MEMBER_SB_VERSION_GROWN 2u
#define FF_ROLE_SPARE 0xffffu

enum ff_array_state { FF_ARRAY_CLEAN = 1, FF_ARRAY_DIRTY = 2 };

struct ff_sb_role {
	uint8_t member_uuid[16]; /* identity of the member that holds this role */
	le32 state;              /* enum ff_member_state */
	le32 reserved;
	le64 rebuild_pos;        /* stripes rebuilt so far when REBUILDING */
};
_Static_assert(sizeof(struct ff_sb_role) == 32, "role record size");

/* Error counts of the member holding a role, persisted with the roles
 * (raid/health.c); counts saturate at UINT32_MAX. */
struct ff_sb_health {
	le32 read_errors;
	le32 write_errors;
	le32 cksum_errors;
	le32 healed;             /* ranges rewritten from parity after a read error */
	le64 failed_s;           /* wall-clock time the role was failed, 0 = it was not */
	char fail_reason[64];    /* why, NUL-terminated (cut to fit) */
};
_Static_assert(sizeof(struct ff_sb_health) == 88, "health record size");

struct ff_member_sb {
	le64 magic;
	le32 version;
	le32 sb_bytes;
	uint8_t array_uuid[16];
	uint8_t member_uuid[16];
	le64 events;
	le64 ctime_s;
	le64 utime_s;
	le32 level;
	le32 nmembers;
	le32 chunk_bytes;
	le32 role;               /* 0..nmembers-1, or FF_ROLE_SPARE */
	le32 array_state;        /* enum ff_array_state */
	le32 meta_copies;
	le64 member_bytes;
	le64 data_offset;
	le64 nstripes;
	le64 meta_offset;
	le64 meta_member_bytes;
	char label[64];
	struct ff_sb_role roles[FF_MEMBERS_MAX];
	/* Was reserved (zero) before per-member health: a volume made before
	 * it reads as no errors, and a binary from before it carries the
	 * records through unchanged (it copies the freshest block). */
	struct ff_sb_health health[FF_MEMBERS_MAX];
	/* Version 2 (a grown array: raid.h "growing"): the geometry the rows
	 * not moved yet are in (old_nmembers 0: every row is in the array's),
	 * and the roles the META space is laid over (0: nmembers). */
	le32 old_level;
	le32 old_nmembers;
	le32 meta_members;
	uint8_t reserved[40];
	le32 crc;                /* crc32c of the block with this field as zero */
};
_Static_assert(sizeof(struct ff_member_sb) == FF_MEMBER_SB_BYTES, "member superblock is one 4 KiB block");

/*
 * The roster: who held each role, so that status can name a missing
 * member (its last path, NVMe model, serial and firmware) though its own
 * superblock is gone with it.  Every member carries the same roster in
 * two copies at the start of the last MiB (which the layout keeps for
 * superblock copy B and uses only the last 4 KiB of), written
 * alternately by generation: a torn write leaves the other copy whole.
 * The valid copy with the highest generation on any member wins.  A
 * volume made before it has none (all zeros): nothing is known then.
 */
#define FF_ROSTER_MAGIC 0x3152545352464646ull /* the bytes "FFFSRTR1" */
#define FF_ROSTER_BYTES 16384u
#define FF_ROSTER_TEXT_PATH 128u

struct ff_roster_entry {
	uint8_t member_uuid[16];  /* the role's member it describes (sb roles[].member_uuid) */
	le64 seen_s;              /* when it was last assembled or took the role */
	le64 size_bytes;
	char kind[8];             /* "file", "bdev", "nvme" */
	char model[48];           /* NVMe identify, NUL-terminated; "" if not NVMe */
	char serial[24];
	char firmware[16];
	char path[FF_ROSTER_TEXT_PATH]; /* absolute path it was opened at (cut to fit) */
};
_Static_assert(sizeof(struct ff_roster_entry) == 256, "roster entry size");

struct ff_roster {
	le64 magic;
	le64 generation;
	uint8_t array_uuid[16];
	le32 nroles;
	le32 bytes;
	uint8_t reserved0[24];
	struct ff_roster_entry role[FF_MEMBERS_MAX];
	uint8_t reserved[FF_ROSTER_BYTES - 64 - 256 * FF_MEMBERS_MAX - 4];
	le32 crc;                 /* crc32c of the record with this field as zero */
};
_Static_assert(sizeof(struct ff_roster) == FF_ROSTER_BYTES, "roster record size");
_Static_assert(2 * FF_ROSTER_BYTES + FF_MEMBER_SB_BYTES <= 1024u * 1024,
	       "both roster copies fit the last MiB beside superblock copy B");

/* Byte offset of roster copy `copy` (0, 1) on a member of the geometry's
 * member_bytes (the superblock's, a multiple of 1 MiB). */
static inline uint64_t ff_roster_offset(unsigned copy, uint64_t geom_member_bytes)
{
	return geom_member_bytes - 1024u * 1024 + (uint64_t)copy * FF_ROSTER_BYTES;
}

/* An empty roster of array_uuid with nroles roles (generation 0). */
void ff_roster_init(struct ff_roster *ro, const uint8_t array_uuid[16], unsigned nroles);
/* Both copies on m; a valid one newer than *best (or any, when best is not
 * valid) replaces it.  1 when m had a valid copy, 0 if not, -ENOMEM. */
int ff_roster_read(struct ff_member *m, uint64_t geom_member_bytes, const uint8_t array_uuid[16],
		   struct ff_roster *best);
/* The copy its generation chooses (ro aligned for O_DIRECT); sets the crc. */
int ff_roster_write(struct ff_member *m, struct ff_roster *ro, uint64_t geom_member_bytes);
/* What m is, as role member_uuid's entry, seen at seen_s. */
void ff_roster_entry_fill(struct ff_roster_entry *e, const struct ff_member *m,
			  const uint8_t member_uuid[16], uint64_t seen_s);

/* Offsets of the two copies on a member of member_bytes. */
static inline uint64_t ff_sb_offset(unsigned copy, uint64_t member_bytes)
{
	return copy == 0 ? 0 : (member_bytes / 4096) * 4096 - FF_MEMBER_SB_BYTES;
}

/* Read both copies; return the valid one with the highest events in *sb.
 * -ENOENT when neither copy is a framefs member superblock, -EBADMSG when
 * one is recognisable but corrupt. */
int ff_sb_read(struct ff_member *m, struct ff_member_sb *sb);

/* Check a superblock's fields for internal consistency. */
int ff_sb_validate(const struct ff_member_sb *sb, struct ff_err *err, const char *path);

/* Write both copies (head, flush, tail, flush). */
int ff_sb_write(struct ff_member *m, struct ff_member_sb *sb);

/* Erase both copies (used when a member is removed). */
int ff_sb_erase(struct ff_member *m);

/* Known foreign signatures (ext4, xfs, btrfs, md, LVM, ...): name or NULL. */
const char *ff_probe_signature(struct ff_member *m);

void ff_uuid_generate(uint8_t uuid[16]);
void ff_uuid_format(const uint8_t uuid[16], char out[37]);

#endif
