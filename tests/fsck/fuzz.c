/* SPDX-License-Identifier: MIT */
/*
 * ffsck-fuzz: seeded random damage fed to fsck.framefs, to the library's
 * mount (ffsck-image verify: mount, read everything, create and remove) and
 * to mkfs.framefs.  Passes when, for every case:
 *
 *   - no program dies of a signal, hangs, or prints a sanitizer report;
 *   - fsck -n exits 0, 4 or 8 and changes no member; on 8 it says why on
 *     one "fsck.framefs: ..." line; a refused mount says why on one line;
 *   - after fsck -y exits 0 or 1, fsck -n finds nothing (exit 0) and the
 *     volume mounts, reads and takes new files (reading files may fail on
 *     data checksums unless the case ran fsck with -c);
 *   - mkfs.framefs on garbage succeeds (then fsck finds it clean) or says
 *     why on one "mkfs.framefs: ..." line.
 *
 *   ffsck-fuzz FSCK MKFS IMAGE
 *   FFS_FUZZ_CASES (default 200), FFS_FUZZ_SEED (default 1): case i uses
 *   seed FFS_FUZZ_SEED + i, so one failing case reruns alone with
 *   FFS_FUZZ_SEED=<its seed> FFS_FUZZ_CASES=1.
 *
 * Damage kinds: garbage over a metadata block in use (every mirror copy, or
 * one), fields of such a block changed and the block resealed (so that it
 * passes its checksum and the checker must read the fields), several of
 * those at once, a member superblock changed and resealed, truncated
 * members, a member of another array, and files of random bytes as members.
 * The blocks in use include the small files' data blocks (format version 3:
 * the corpus tree has three small files), which have no header to reseal:
 * changed, they fail the checksum their entry in the small-data checksum
 * table gives (whose blocks are damaged like any other).  The volume is
 * format version 5 with packed tails and patches (FFSCK_IMAGE_TAILS and
 * FFSCK_IMAGE_PATCHES: image.c), so the inode-table, checksum-table and
 * B+tree blocks damaged hold tail extents, tail stripes' entries and patch
 * records too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/volume/check.h"
#include "raid/sb.h"

/* fsck(8) exit codes */
enum { FSCK_EXIT_FIXED = 1, FSCK_EXIT_UNFIXED = 4, FSCK_EXIT_OPERROR = 8 };

#define NM 4
#define MEMBER_BYTES (40ull << 20)
#define CHILD_TIMEOUT_S (getenv("FFS_FUZZ_TIMEOUT") ? atoi(getenv("FFS_FUZZ_TIMEOUT")) : 300)

static char work[64];
static const char *fsck_bin, *mkfs_bin, *image_bin;

struct mblock {
	uint64_t no;
	uint32_t type;
	uint32_t crc;         /* FFS_B_SDATA: what its pcsum entry says */
};

/* What the clean volume looks like: the metadata blocks in use, and where
 * each mirror copy of a META block lies on which member. */
/* A packed tail's fields: bytes [off, off + len) of META block no (a tail
 * extent in an inode, or a tail stripe's checksum entry), of block type type. */
struct tspot {
	uint64_t no;
	uint32_t type, off, len;
};
#define TSPOTS_MAX 64

static struct {
	struct mblock *blocks;
	size_t n;
	struct tspot tails[TSPOTS_MAX];
	unsigned ntails;
	struct ff_geom g;
	uint64_t ninodes, nstripes, pool_start, pool_blocks;
} base;

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545F4914F6CDD1Dull;
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static void path(char *buf, const char *set, unsigned i)
{
	snprintf(buf, 128, "%s/%s%u", work, set, i);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(p);
}

static void cleanup(void)
{
	if (work[0])
		nftw(work, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void on_signal(int sig)
{
	cleanup();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "ffsck-fuzz: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

/* ---- files ------------------------------------------------------------------ */

static void copy_file(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static char buf[1 << 20];
	struct stat st;
	off_t pos = 0;

	if (in < 0 || out < 0 || fstat(in, &st) < 0 || ftruncate(out, st.st_size) < 0)
		die("cannot copy %s", src);
	while ((pos = lseek(in, pos, SEEK_DATA)) >= 0 && pos < st.st_size) {
		off_t end = lseek(in, pos, SEEK_HOLE);

		while (pos < end) {
			ssize_t n = pread(in, buf, (size_t)FF_MIN((off_t)sizeof(buf), end - pos), pos);

			if (n <= 0 || pwrite(out, buf, (size_t)n, pos) != n)
				die("cannot copy %s", src);
			pos += n;
		}
	}
	close(in);
	close(out);
}

/* A digest of a file's contents: its size and every 4 KiB block that is
 * not all zeros, with its offset.  Holes and zero blocks read alike, so the
 * digest sees what a reader sees, not how tmpfs happens to store it. */
static uint32_t digest(const char *p)
{
	static const char zero[4096];
	static char buf[1 << 20];
	int fd = open(p, O_RDONLY);
	uint32_t crc = 0;
	struct stat st;
	off_t pos = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	crc = ff_crc32c(crc, &st.st_size, sizeof(st.st_size));
	while ((pos = lseek(fd, pos, SEEK_DATA)) >= 0 && pos < st.st_size) {
		off_t end = lseek(fd, pos, SEEK_HOLE);

		pos &= ~(off_t)4095;
		while (pos < end) {
			ssize_t n = pread(fd, buf, (size_t)FF_MIN((off_t)sizeof(buf), end - pos), pos);

			if (n <= 0)
				break;
			for (ssize_t at = 0; at < n; at += 4096) {
				size_t len = (size_t)FF_MIN((ssize_t)4096, n - at);
				off_t off = pos + at;

				if (memcmp(buf + at, zero, len) == 0)
					continue;
				crc = ff_crc32c(crc, &off, sizeof(off));
				crc = ff_crc32c(crc, buf + at, len);
			}
			pos += n;
		}
	}
	close(fd);
	return crc;
}

static void pwrite_at(const char *p, const void *buf, size_t len, uint64_t off)
{
	int fd = open(p, O_WRONLY);

	if (fd < 0 || pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		die("cannot write %s", p);
	close(fd);
}

static bool pread_at(const char *p, void *buf, size_t len, uint64_t off)
{
	int fd = open(p, O_RDONLY);
	bool ok = fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok;
}

/* ---- running the programs ------------------------------------------------------ */

struct result {
	int status;          /* exit status, or -signal */
	char out[PATH_MAX], err[PATH_MAX];
};

static void spawn(char *const argv[], struct result *res)
{
	int st;
	pid_t pid;

	snprintf(res->out, sizeof(res->out), "%s/stdout", work);
	snprintf(res->err, sizeof(res->err), "%s/stderr", work);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int o = open(res->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(res->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int n = open("/dev/null", O_RDONLY);

		dup2(n, 0);
		dup2(o, 1);
		dup2(e, 2);
		alarm(CHILD_TIMEOUT_S); /* survives exec: a hang ends as SIGALRM */
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		die("cannot run %s", argv[0]);
	res->status = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

/* Lines of file p that start with prefix; and whether any sanitizer spoke. */
static unsigned lines_with(const char *p, const char *prefix, bool *sanitizer)
{
	FILE *f = fopen(p, "r");
	char line[4096];
	unsigned n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, prefix, strlen(prefix)) == 0 && strlen(line) > strlen(prefix) + 1)
			n++;
		if (strstr(line, "Sanitizer") || strstr(line, "runtime error:"))
			*sanitizer = true;
	}
	if (f)
		fclose(f);
	return n;
}

static bool grep(const char *p, const char *what)
{
	FILE *f = fopen(p, "r");
	char line[4096];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

/* ---- the clean volume --------------------------------------------------------- */

static void make_members(const char *set, unsigned n, uint64_t bytes, char (*paths)[128])
{
	for (unsigned i = 0; i < n; i++) {
		int fd;

		path(paths[i], set, i);
		fd = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0)
			die("cannot create %s", paths[i]);
		close(fd);
	}
}

static void build_volume(const char *set)
{
	char paths[NM][128];
	char *argv[NM + 3] = { (char *)image_bin, "build" };
	struct result res;

	make_members(set, NM, MEMBER_BYTES, paths);
	for (unsigned i = 0; i < NM; i++)
		argv[2 + i] = paths[i];
	spawn(argv, &res);
	if (res.status != 0)
		die("cannot build the %s volume", set);
}

static void add_block(uint64_t no, uint32_t type, uint32_t crc)
{
	base.blocks = realloc(base.blocks, (base.n + 1) * sizeof(*base.blocks));
	if (!base.blocks)
		die("%s", "out of memory");
	base.blocks[base.n++] = (struct mblock){ no, type, crc };
}

static void add_region(uint64_t start, uint64_t count, uint32_t type)
{
	for (uint64_t i = 0; i < count; i++)
		add_block(start + i, type, 0);
}

/* Pool blocks in use, each with the type it verifies as: a header, or a
 * small file's data that matches its pcsum entry.  How many of the latter. */
static unsigned add_pool(struct ffs *fs, void *buf)
{
	static const uint32_t types[] = { FFS_B_BTREE, FFS_B_XATTR, FFS_B_SYMLINK, FFS_B_XVALUE };
	unsigned small = 0;

	for (uint64_t b = 0; b < base.pool_blocks; b++) {
		uint64_t no = base.pool_start + b;
		uint32_t ino, crc;
		unsigned t = 0;

		if (!ffs_tools_bit(fs, FFS_TOOLS_POOL, b))
			continue;
		while (t < FF_ARRAY_SIZE(types) && ffs_meta_read_check(fs, no, types[t], buf, true) < 0)
			t++;
		if (t < FF_ARRAY_SIZE(types)) {
			add_block(no, types[t], 0);
		} else if (ffs_pcsum_get(fs, no, &ino, &crc) == 0 && ino &&
			   ffs_meta_read_sdata(fs, no, crc, buf) == 0) {
			add_block(no, FFS_B_SDATA, crc);
			small++;
		}
	}
	return small;
}

static void add_tspot(uint64_t no, uint32_t type, size_t off, size_t len)
{
	if (base.ntails < TSPOTS_MAX)
		base.tails[base.ntails++] = (struct tspot){ no, type, (uint32_t)off, (uint32_t)len };
}

/* Where the clean volume's tails are: the tail stripes' checksum entries
 * (in use, ino FFS_CSUM_TAILS) and the inline tail extents; how many stripes. */
static unsigned learn_tails(struct ffs *fs, const struct ffs_super *sb, void *buf)
{
	uint32_t crc[FF_MEMBERS_MAX], ino, f, per = ff_le32(sb->csum_per_block);
	unsigned n = 0;

	for (uint64_t p = 0; p < base.nstripes; p++)
		if (ffs_tools_bit(fs, FFS_TOOLS_STRIPES, p) && ffs_csum_get(fs, p, &ino, &f, crc) == 0 &&
		    ino == FFS_CSUM_TAILS) {
			add_tspot(ff_le64(sb->csum_start) + p / per, FFS_B_CSUM,
				  sizeof(struct ffs_bhdr) + (p % per) * ff_le32(sb->csum_entry_bytes),
				  ff_le32(sb->csum_entry_bytes));
			n++;
		}
	for (uint64_t b = 0; b < ff_le64(sb->itable_hwm); b++) {
		uint64_t no = ff_le64(sb->itable_start) + b;
		const struct ffs_itable_block *it = buf;

		if (ffs_meta_read_check(fs, no, FFS_B_ITABLE, buf, true) < 0)
			continue;
		for (unsigned i = 0; i < FFS_INODES_PER_BLOCK; i++) {
			const struct ffs_inode *d = &it->inodes[i];

			if (!d->ino || (ff_le32(d->flags) & (FFS_I_BTREE | FFS_I_SMALL)))
				continue;
			for (unsigned k = 0; k < FF_MIN(ff_le32(d->nextents), FFS_INLINE_EXTENTS); k++)
				if (ff_le32(d->u.extents[k].flags) & FFS_X_TAIL)
					add_tspot(no, FFS_B_ITABLE,
						  (size_t)((const uint8_t *)&d->u.extents[k] - (const uint8_t *)buf),
						  sizeof(struct ffs_extent));
		}
	}
	return n;
}

static void learn_base(void)
{
	char paths[NM][128];
	const char *pp[NM];
	struct ff_err err = { "" };
	struct ffs_super *sb = ff_alloc_aligned(FFS_BLOCK);
	bool pending;
	struct ffs *fs;

	for (unsigned i = 0; i < NM; i++)
		path(paths[i], "b", i), pp[i] = paths[i];
	if (ffs_check_open(pp, NM, true, 0, &fs, &err) < 0 ||
	    ffs_meta_read_check(fs, FFS_SB_BLOCK_B, FFS_B_SUPER, sb, true) < 0 ||
	    ffs_check_start(fs, sb, 0) < 0 || ffs_check_journal_pending(fs, &pending) < 0 ||
	    ffs_check_load_bitmaps(fs) < 0)
		die("cannot read the clean volume: %s", err.msg);
	for (unsigned i = 0; i < NM; i++) { /* roles follow the order mkfs was given */
		const struct ff_member *m = ff_raid_member(ffs_raid(fs), i);

		if (!m || strcmp(m->path, paths[i]))
			die("member roles are not in creation order (%s)", paths[i]);
	}
	base.g = *ffs_tools_geom(fs);
	base.ninodes = ff_le64(sb->ninodes);
	base.nstripes = ff_le64(sb->nstripes);
	base.pool_start = ff_le64(sb->pool_start);
	base.pool_blocks = ff_le64(sb->pool_blocks);
	for (unsigned i = 0; i < FFS_SB_COPIES; i++)
		add_block(ffs_sb_block[i], FFS_B_SUPER, 0);
	add_block(FFS_ORPHAN_BLOCK, FFS_B_ORPHAN, 0);
	add_region(ff_le64(sb->itable_start), ff_le64(sb->itable_hwm), FFS_B_ITABLE);
	add_region(ff_le64(sb->ibitmap_start), ff_le64(sb->ibitmap_blocks), FFS_B_BITMAP);
	add_region(ff_le64(sb->sbitmap_start), ff_le64(sb->sbitmap_blocks), FFS_B_BITMAP);
	add_region(ff_le64(sb->mbitmap_start), ff_le64(sb->mbitmap_blocks), FFS_B_BITMAP);
	add_region(ff_le64(sb->csum_start), ff_le64(sb->csum_blocks), FFS_B_CSUM);
	add_region(ff_le64(sb->pcsum_start), ff_le64(sb->pcsum_blocks), FFS_B_PCSUM);
	if (!learn_tails(fs, ffs_tools_super(fs), sb) || base.ntails < 2)
		die("%s", "the clean volume has no packed tails (format version 4, FFSCK_IMAGE_TAILS)");
	if (!add_pool(fs, sb)) /* sb is its scratch block from here on */
		die("%s", "the clean volume has no small files (format version 3)");
	free(sb);
	ffs_check_close(fs);
}

/* Member and offset of mirror copy k of META block no (raid/meta.c's
 * mapping; the fuzz checks it against the clean volume at start). */
static void copy_at(uint64_t no, unsigned k, unsigned *role, uint64_t *off)
{
	const struct ff_geom *g = &base.g;
	uint64_t chunk = no * FFS_BLOCK / FF_META_CHUNK, idx = chunk * g->meta_copies + k;

	*role = (unsigned)(idx % g->nmembers);
	*off = g->meta_offset + idx / g->nmembers * FF_META_CHUNK + no * FFS_BLOCK % FF_META_CHUNK;
}

static bool block_good(const struct mblock *b, const void *buf)
{
	if (b->type == FFS_B_SDATA)
		return ffs_sdata_crc(b->no, buf) == b->crc;
	return ffs_block_check(buf, b->type, b->no) == 0;
}

static void check_mapping(void)
{
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	char p[128];

	for (size_t i = 0; i < base.n; i++)
		for (unsigned k = 0; k < base.g.meta_copies; k++) {
			unsigned role;
			uint64_t off;

			copy_at(base.blocks[i].no, k, &role, &off);
			path(p, "b", role);
			if (!pread_at(p, buf, FFS_BLOCK, off) || !block_good(&base.blocks[i], buf))
				die("the META mirror layout is not what this test assumes (%s)", p);
		}
	free(buf);
}

/* ---- damage ---------------------------------------------------------------------- */

struct fcase {
	uint64_t seed;
	unsigned nm;
	char m[8][128];
	char kind[64];
	bool garbage;         /* members are not (all) the volume's: mkfs gets them too */
	bool data;            /* fsck runs with -c (verify data checksums) */
};

static void fill(struct rng *r, void *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)rnd(r);
}

static void write_copies(struct fcase *fc, uint64_t no, const void *buf, size_t off, size_t len,
			 unsigned only)
{
	for (unsigned k = 0; k < base.g.meta_copies; k++) {
		unsigned role;
		uint64_t at;

		if (only != UINT32_MAX && k != only)
			continue;
		copy_at(no, k, &role, &at);
		pwrite_at(fc->m[role], (const uint8_t *)buf + off, len, at + off);
	}
}

/* Garbage over a block in use (all copies, or one), whole or a torn part. */
static const struct mblock *pick(struct rng *r);

static void garbage_block(struct rng *r, struct fcase *fc, bool one)
{
	const struct mblock *b = pick(r);
	uint8_t buf[FFS_BLOCK];
	size_t off = below(r, 2) ? 0 : below(r, FFS_BLOCK);
	size_t len = off ? 1 + below(r, FFS_BLOCK - off) : FFS_BLOCK;

	fill(r, buf, sizeof(buf));
	write_copies(fc, b->no, buf, off, len, one ? (unsigned)below(r, base.g.meta_copies) : UINT32_MAX);
}

static uint64_t interesting(struct rng *r)
{
	const uint64_t v[] = { 0, 1, 2, 3, 15, 16, 17, 255, 4096, base.ninodes - 1, base.ninodes,
			       base.ninodes + 1, base.nstripes - 1, base.nstripes, base.pool_start,
			       base.pool_start + base.pool_blocks, base.pool_start - 1, 1ull << 31,
			       1ull << 32, UINT32_MAX, UINT64_MAX, UINT64_MAX / 2 };

	switch (below(r, 4)) {
	case 0: return v[below(r, FF_ARRAY_SIZE(v))];
	case 1: return below(r, 64);
	case 2: return base.pool_start + below(r, base.pool_blocks);
	default: return rnd(r);
	}
}

static void mutate(struct rng *r, uint8_t *buf, size_t lo, size_t len)
{
	unsigned n = 1 + (unsigned)below(r, 8);

	for (unsigned i = 0; i < n; i++) {
		size_t w = (size_t)1 << below(r, 4), at;
		uint64_t v = htole64(w == 1 ? rnd(r) : interesting(r));

		while (w > len - lo)
			w /= 2;
		at = lo + below(r, (len - lo) / w) * w;
		memcpy(buf + at, &v, w); /* the low bytes, little-endian */
	}
}

/* Where in a block of this type the fields that steer readers are. */
static void field_span(struct rng *r, uint32_t type, const uint8_t *buf, size_t *lo, size_t *hi)
{
	size_t h = type == FFS_B_SDATA ? 0 : sizeof(struct ffs_bhdr);

	*lo = h;
	*hi = FFS_BLOCK;
	if (type == FFS_B_ITABLE) { /* one inode */
		*lo = h + below(r, FFS_INODES_PER_BLOCK) * sizeof(struct ffs_inode);
		*hi = *lo + sizeof(struct ffs_inode);
	} else if (type == FFS_B_BTREE && below(r, 4)) { /* header and slots or pointers */
		uint16_t count;

		memcpy(&count, buf + offsetof(struct ffs_bt_node, count), 2);
		*hi = sizeof(struct ffs_bt_node) + (le16toh(count) + 1) * sizeof(struct ffs_bt_ptr);
		*hi = FF_MIN(*hi, (size_t)FFS_BLOCK);
	} else if (type == FFS_B_SUPER || type == FFS_B_ORPHAN || type == FFS_B_XATTR ||
		   type == FFS_B_XVALUE || type == FFS_B_SYMLINK) {
		*hi = below(r, 4) ? 512 : FFS_BLOCK;
	}
}

/* A leaf record moved or resized but kept inside the block: the node looks
 * sane, the record does not fit what its reader expects. */
static void leaf_slot(struct rng *r, uint8_t *buf)
{
	struct ffs_bt_node *n = (struct ffs_bt_node *)buf;
	struct ffs_bt_slot *sl = (struct ffs_bt_slot *)(n + 1);
	unsigned count = le16toh(n->count), start = le16toh(n->data_start), off, len;

	if (n->level || !count || start >= FFS_BLOCK)
		return;
	sl += below(r, count);
	off = below(r, 2) ? le16toh(sl->off) : start + (unsigned)below(r, FFS_BLOCK - start);
	off = FF_MIN(off, FFS_BLOCK - 1u);
	len = (unsigned)below(r, FFS_BLOCK - off + 1);
	sl->off = htole16((uint16_t)off);
	sl->len = htole16((uint16_t)len);
}

/* A block to damage: B+tree nodes and inode tables as often as the rest. */
static const struct mblock *pick(struct rng *r)
{
	uint32_t want = below(r, 3) == 0 ? FFS_B_BTREE : below(r, 2) ? FFS_B_ITABLE : 0;

	for (unsigned tries = 0; want && tries < 64; tries++) {
		const struct mblock *b = &base.blocks[below(r, base.n)];

		if (b->type == want)
			return b;
	}
	return &base.blocks[below(r, base.n)];
}

/* Fields of a block in use changed, the block sealed again: it passes its
 * checksum, so whatever reads it must check what it says.  A small file's
 * data has no header: changed anywhere, it fails its pcsum entry's crc. */
static void reseal_block(struct rng *r, struct fcase *fc)
{
	const struct mblock *b = pick(r);
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	unsigned role;
	uint64_t at;
	size_t lo, hi;

	copy_at(b->no, 0, &role, &at);
	if (!pread_at(fc->m[role], buf, FFS_BLOCK, at))
		die("cannot read %s", fc->m[role]);
	field_span(r, b->type, buf, &lo, &hi);
	if (b->type == FFS_B_BTREE && below(r, 3) == 0)
		leaf_slot(r, buf);
	else
		mutate(r, buf, lo, hi);
	if (b->type != FFS_B_SDATA)
		ffs_block_seal(buf, b->type, b->no);
	write_copies(fc, b->no, buf, 0, FFS_BLOCK, UINT32_MAX);
	free(buf);
}

/* A packed tail's fields changed (a tail extent's rows, stripe, flags; a
 * tail stripe's entry: owner, hwm and live count, crcs), the block sealed
 * again: fsck must read what they say. */
static void tail_fields(struct rng *r, struct fcase *fc)
{
	const struct tspot *t = &base.tails[below(r, base.ntails)];
	uint8_t *buf = ff_alloc_aligned(FFS_BLOCK);
	unsigned role;
	uint64_t at;

	copy_at(t->no, 0, &role, &at);
	if (!pread_at(fc->m[role], buf, FFS_BLOCK, at))
		die("cannot read %s", fc->m[role]);
	if (t->type == FFS_B_CSUM && below(r, 2)) { /* the head: ino, hwm and live */
		uint32_t v = htole32(below(r, 2) ? FFS_CSUM_TAILS : (uint32_t)interesting(r));
		uint32_t f = htole32(FFS_CSUM_TAIL_PACK(below(r, 20), below(r, 6)));

		memcpy(buf + t->off, &v, 4);
		if (below(r, 3))
			memcpy(buf + t->off + 4, &f, 4);
	} else if (t->type == FFS_B_ITABLE && below(r, 2)) { /* row0 and rows: small numbers */
		uint16_t v = htole16((uint16_t)below(r, 20));

		memcpy(buf + t->off + 16 + 2 * below(r, 2), &v, 2);
	} else {
		mutate(r, buf, t->off, t->off + t->len);
	}
	ffs_block_seal(buf, t->type, t->no);
	write_copies(fc, t->no, buf, 0, FFS_BLOCK, UINT32_MAX);
	free(buf);
}

static void member_sb(struct rng *r, struct fcase *fc)
{
	unsigned i = (unsigned)below(r, fc->nm);
	uint8_t *buf = ff_alloc_aligned(FF_MEMBER_SB_BYTES);

	if (!pread_at(fc->m[i], buf, FF_MEMBER_SB_BYTES, 0))
		die("cannot read %s", fc->m[i]);
	mutate(r, buf, 8, 512);
	ff_csum_set(buf, FF_MEMBER_SB_BYTES, offsetof(struct ff_member_sb, crc));
	pwrite_at(fc->m[i], buf, FF_MEMBER_SB_BYTES, 0);
	pwrite_at(fc->m[i], buf, FF_MEMBER_SB_BYTES, ff_sb_offset(1, MEMBER_BYTES));
	free(buf);
}

static void truncate_members(struct rng *r, struct fcase *fc)
{
	for (unsigned n = 1 + (unsigned)below(r, 2), k = 0; k < n; k++) {
		const uint64_t sizes[] = { 0, 4096, 1 << 20, MEMBER_BYTES - 4096, MEMBER_BYTES / 2,
					   below(r, MEMBER_BYTES) };

		if (truncate(fc->m[below(r, fc->nm)], (off_t)sizes[below(r, FF_ARRAY_SIZE(sizes))]) < 0)
			die("cannot truncate %s", fc->m[0]);
	}
	fc->garbage = true;
}

/* Files of random bytes; the first sometimes starts with a member
 * superblock of the clean volume, changed and resealed. */
static void garbage_members(struct rng *r, struct fcase *fc)
{
	const uint64_t sizes[] = { 0, 1, 4095, 4096, 65536, 1 << 20, MEMBER_BYTES };
	uint8_t *buf = ff_alloc_aligned(FF_MEMBER_SB_BYTES);
	char p[128];

	fc->nm = 1 + (unsigned)below(r, 5);
	for (unsigned i = 0; i < fc->nm; i++) {
		uint64_t size = below(r, 4) ? sizes[below(r, FF_ARRAY_SIZE(sizes))] : below(r, 2 << 20);
		int fd;

		path(fc->m[i], "g", i);
		fd = open(fc->m[i], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
			die("cannot create %s", fc->m[i]);
		close(fd);
		for (unsigned k = 0; size >= FF_MEMBER_SB_BYTES && k < 4; k++) {
			fill(r, buf, FF_MEMBER_SB_BYTES);
			pwrite_at(fc->m[i], buf, FF_MEMBER_SB_BYTES, k ? below(r, size / 4096) * 4096 : 0);
		}
	}
	path(p, "b", 0);
	if (below(r, 2) && pread_at(p, buf, FF_MEMBER_SB_BYTES, 0)) {
		if (truncate(fc->m[0], (off_t)MEMBER_BYTES) < 0)
			die("cannot resize %s", fc->m[0]);
		mutate(r, buf, 8, 512);
		ff_csum_set(buf, FF_MEMBER_SB_BYTES, offsetof(struct ff_member_sb, crc));
		pwrite_at(fc->m[0], buf, FF_MEMBER_SB_BYTES, 0);
	}
	free(buf);
	fc->garbage = true;
}

/* Garbage inside a data chunk (or parity) of one of the stripes in use:
 * fsck -c finds it, parity rebuilds it. */
static void data_chunk(struct rng *r, struct fcase *fc)
{
	const struct ff_geom *g = &base.g;
	uint64_t at = g->data_offset + below(r, 16) * g->chunk_bytes + below(r, g->chunk_bytes);
	uint8_t buf[512];

	fill(r, buf, sizeof(buf));
	pwrite_at(fc->m[below(r, NM)], buf, (size_t)FF_MIN(sizeof(buf), 1 + below(r, 512)), at);
	fc->data = true;
}

static void make_case(struct rng *r, struct fcase *fc)
{
	unsigned k = (unsigned)below(r, 100), n;
	char p[128];

	fc->nm = NM;
	for (unsigned i = 0; i < NM; i++) {
		path(fc->m[i], "c", i);
		path(p, "b", i);
		copy_file(p, fc->m[i]);
	}
	fc->data = below(r, 10) == 0;
	if (k < 20) {
		snprintf(fc->kind, sizeof(fc->kind), "garbage block");
		garbage_block(r, fc, false);
	} else if (k < 40) {
		snprintf(fc->kind, sizeof(fc->kind), "resealed block");
		reseal_block(r, fc);
	} else if (k < 45) {
		snprintf(fc->kind, sizeof(fc->kind), "tail fields");
		tail_fields(r, fc);
	} else if (k < 50) {
		snprintf(fc->kind, sizeof(fc->kind), "data chunk");
		data_chunk(r, fc);
	} else if (k < 58) {
		snprintf(fc->kind, sizeof(fc->kind), "one bad copy");
		garbage_block(r, fc, true);
	} else if (k < 72) {
		n = 2 + (unsigned)below(r, 5);
		snprintf(fc->kind, sizeof(fc->kind), "%u damaged blocks", n);
		while (n--)
			below(r, 2) ? reseal_block(r, fc) : garbage_block(r, fc, below(r, 3) == 0);
	} else if (k < 79) {
		snprintf(fc->kind, sizeof(fc->kind), "member superblock");
		member_sb(r, fc);
	} else if (k < 86) {
		snprintf(fc->kind, sizeof(fc->kind), "truncated member");
		truncate_members(r, fc);
	} else if (k < 92) {
		snprintf(fc->kind, sizeof(fc->kind), "member of another array");
		path(p, "f", (unsigned)below(r, NM));
		copy_file(p, fc->m[below(r, NM)]);
		fc->garbage = true;
	} else {
		snprintf(fc->kind, sizeof(fc->kind), "garbage members");
		garbage_members(r, fc);
	}
}

/* ---- checks ------------------------------------------------------------------------- */

struct stats {
	unsigned fsck_n[16], fsck_y[16], mount_ok, mount_refused, mkfs_ok, mkfs_refused;
};

static struct fcase *cur;
static char cur_cmd[512];

static void show(const char *p)
{
	FILE *f = fopen(p, "r");
	char line[512];

	for (unsigned n = 0; f && n < 40 && fgets(line, sizeof(line), f); n++)
		fprintf(stderr, "    %s", line);
	if (f)
		fclose(f);
}

static void failed(const char *what, const struct result *res)
{
	fprintf(stderr, "FAIL seed %llu (%s): %s (status %d)\n  %s\n", (unsigned long long)cur->seed,
		cur->kind, what, res->status, cur_cmd);
	fprintf(stderr, "  stdout:\n");
	show(res->out);
	fprintf(stderr, "  stderr:\n");
	show(res->err);
	fprintf(stderr, "rerun: FFS_FUZZ_SEED=%llu FFS_FUZZ_CASES=1 (FFS_FUZZ_KEEP=1 keeps %s)\n",
		(unsigned long long)cur->seed, work);
	if (getenv("FFS_FUZZ_KEEP"))
		work[0] = '\0';
	exit(1);
}

/* Run prog on the members; dead, hung or sanitized is a failure. */
static void run(const char *prog, const char *const *opts, char (*m)[128], unsigned nm,
		struct result *res)
{
	char *argv[16] = { (char *)prog };
	unsigned a = 1;
	bool san = false;

	while (opts && *opts)
		argv[a++] = (char *)*opts++;
	for (unsigned i = 0; i < nm; i++)
		argv[a++] = m[i];
	argv[a] = NULL;
	cur_cmd[0] = '\0';
	for (unsigned i = 0; i < a; i++)
		snprintf(cur_cmd + strlen(cur_cmd), sizeof(cur_cmd) - strlen(cur_cmd), "%s ", argv[i]);
	spawn(argv, res);
	lines_with(res->err, "", &san);
	if (res->status < 0)
		failed(res->status == -SIGALRM ? "hung" : "died of a signal", res);
	if (san)
		failed("a sanitizer report", res);
}

static int fsck(const char *mode, char (*m)[128], unsigned nm, struct result *res)
{
	bool san = false;

	run(fsck_bin, (const char *[]){ mode, cur->data ? "-c" : NULL, NULL }, m, nm, res);
	if (res->status & ~(FSCK_EXIT_FIXED | FSCK_EXIT_UNFIXED | FSCK_EXIT_OPERROR))
		failed("fsck.framefs exit status is not an fsck(8) code", res);
	if ((res->status & FSCK_EXIT_OPERROR) && lines_with(res->err, "fsck.framefs: ", &san) != 1)
		failed("fsck.framefs stopped without one line saying why", res);
	return res->status;
}

/* Mount, read everything, create and remove: true when all of it worked. */
static bool mount_works(char (*m)[128], unsigned nm, struct result *res)
{
	bool san = false;

	run(image_bin, (const char *[]){ "verify", NULL }, m, nm, res);
	if (res->status != 0 && res->status != 1 && res->status != 3)
		failed("ffsck-image verify: unexpected status", res);
	if (res->status && lines_with(res->err, "ffsck-image: ", &san) != 1)
		failed("a failed mount or walk without one line saying why", res);
	/* only fsck -c looks at data: without it, bad data checksums may remain */
	return res->status == 0 || (res->status == 3 && !cur->data);
}

static void check_mkfs(struct rng *r, struct fcase *fc, struct stats *st)
{
	struct result res;
	bool san = false;

	run(mkfs_bin, (const char *[]){ "-q", "-c", "64K", below(r, 2) ? "-f" : NULL, NULL }, fc->m,
	    fc->nm, &res);
	if (res.status != 0 && res.status != 1)
		failed("mkfs.framefs: unexpected status", &res);
	if (res.status == 1) {
		if (lines_with(res.err, "mkfs.framefs: ", &san) != 1)
			failed("mkfs.framefs failed without one line saying why", &res);
		st->mkfs_refused++;
		return;
	}
	st->mkfs_ok++;
	if (fsck("-n", fc->m, fc->nm, &res) != 0)
		failed("fsck.framefs -n after a successful mkfs is not clean", &res);
}

static void one_case(uint64_t seed, struct stats *st)
{
	struct rng r = { seed * 0x9E3779B97F4A7C15ull | 1 };
	struct fcase fc = { .seed = seed };
	char v[8][128];
	uint32_t before[8];
	struct result res;
	int n, y;

	cur = &fc;
	make_case(&r, &fc);
	for (unsigned i = 0; i < fc.nm; i++) {
		before[i] = digest(fc.m[i]);
		if (getenv("FFS_FUZZ_KEEP")) { /* the damage as made, for a rerun by hand */
			path(v[i], "d", i);
			copy_file(fc.m[i], v[i]);
		}
	}
	n = fsck("-n", fc.m, fc.nm, &res);
	st->fsck_n[n & 15]++;
	for (unsigned i = 0; i < fc.nm; i++) {
		uint32_t after = digest(fc.m[i]);
		char what[200];

		if (after == before[i])
			continue;
		usleep(200 * 1000); /* a late write of an earlier process would show as a second change */
		snprintf(what, sizeof(what), "fsck.framefs -n changed member %u (%s; 200 ms later %s)", i,
			 fc.m[i], digest(fc.m[i]) == after ? "unchanged since" : "changed again");
		failed(what, &res);
	}
	for (unsigned i = 0; i < fc.nm; i++) { /* the library meets the damage on a copy */
		path(v[i], "v", i);
		copy_file(fc.m[i], v[i]);
	}
	mount_works(v, fc.nm, &res) ? st->mount_ok++ : st->mount_refused++;
	y = fsck("-y", fc.m, fc.nm, &res);
	st->fsck_y[y & 15]++;
	if (grep(res.out, "remain after the repairs"))
		failed("fsck.framefs -y left problems its repairs should have fixed", &res);
	if (!(y & (FSCK_EXIT_UNFIXED | FSCK_EXIT_OPERROR))) {
		if (fsck("-n", fc.m, fc.nm, &res) != 0)
			failed("fsck.framefs -n after a repair is not clean", &res);
		if (!mount_works(fc.m, fc.nm, &res))
			failed("the repaired volume does not mount and work", &res);
	}
	if (getenv("FFS_FUZZ_VERBOSE"))
		printf("seed %llu (%s): fsck -n exit %d, -y exit %d\n", (unsigned long long)seed,
		       fc.kind, n, y);
	/* what -n could check, -y must be able to repair or leave: not fail on */
	if ((y & FSCK_EXIT_OPERROR) && !(n & FSCK_EXIT_OPERROR))
		failed("fsck.framefs -y failed where -n did not", &res);
	if (fc.garbage || below(&r, 8) == 0)
		check_mkfs(&r, &fc, st);
	for (unsigned i = 0; i < 8; i++) { /* the next case starts from fresh copies */
		path(v[i], "g", i);
		unlink(v[i]);
	}
}

static uint64_t env_num(const char *name, uint64_t def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : def;
}

int main(int argc, char **argv)
{
	uint64_t cases = env_num("FFS_FUZZ_CASES", 200), seed0 = env_num("FFS_FUZZ_SEED", 1);
	uint64_t t0 = ff_mono_ns();
	struct stats st;

	if (argc != 4) {
		fprintf(stderr, "usage: ffsck-fuzz FSCK MKFS IMAGE\n");
		return 2;
	}
	memset(&st, 0, sizeof(st));
	fsck_bin = argv[1];
	mkfs_bin = argv[2];
	image_bin = argv[3];
	snprintf(work, sizeof(work), "/dev/shm/ffsck-fuzz.XXXXXX");
	if (!mkdtemp(work))
		die("cannot make %s", work);
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	ff_log_set_level(FF_LOG_ERR);
	build_volume("b");
	build_volume("f");
	learn_base();
	check_mapping();
	printf("fuzz: %llu cases, seeds %llu..%llu, %zu metadata blocks in use\n",
	       (unsigned long long)cases, (unsigned long long)seed0,
	       (unsigned long long)(seed0 + cases - 1), base.n);
	for (uint64_t i = 0; i < cases; i++)
		one_case(seed0 + i, &st);
	printf("fuzz: %llu cases passed in %.1f s\n", (unsigned long long)cases,
	       (double)(ff_mono_ns() - t0) / 1e9);
	printf("  fsck -n exit 0/4/8: %u/%u/%u; fsck -y exit 0/1/4/5/8: %u/%u/%u/%u/%u\n",
	       st.fsck_n[0], st.fsck_n[4], st.fsck_n[8], st.fsck_y[0], st.fsck_y[1], st.fsck_y[4],
	       st.fsck_y[5], st.fsck_y[8] + st.fsck_y[9] + st.fsck_y[12] + st.fsck_y[13]);
	printf("  damaged volume mounted and worked: %u, refused: %u; mkfs on the members: %u made, "
	       "%u refused\n", st.mount_ok, st.mount_refused, st.mkfs_ok, st.mkfs_refused);
	free(base.blocks);
	if (getenv("FFS_FUZZ_KEEP")) {
		printf("kept %s\n", work);
		work[0] = '\0';
	}
	return 0;
}
