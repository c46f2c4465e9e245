/* SPDX-License-Identifier: MIT */
/*
 * The test corpus's volumes, through the library (no FUSE):
 *
 *   ffsck-image build MEMBER...    mkfs, then the same small tree every time
 *   ffsck-image verify MEMBER...   mount, read everything, make and remove a
 *                                  file and a directory, change existing ones,
 *                                  unmount: exit 0 when every operation
 *                                  succeeded, 3 when only file reads failed
 *                                  (bad data checksums), else 1
 *   ffsck-image data MEMBER...     mount read-only and check that the tree is
 *                                  exactly as built: every name, type, link,
 *                                  symlink target, xattr, size and byte; exit 0,
 *                                  else 1 naming the first difference
 *
 * The tree (label "corpus", or FFSCK_IMAGE_LABEL when set: any bytes, as an old
 * or damaged volume may carry; RAID5, 64 KiB chunks; mkfs's default sizes, or
 * FFSCK_IMAGE_INODES inodes and an FFSCK_IMAGE_JOURNAL-block journal):
 *   /a/f1        1.5 stripes, xattr user.tag
 *   /a/f2        3 stripes; with FFSCK_IMAGE_XVALUE set, a 64 KiB xattr
 *                user.stream too (a chain of value blocks, format version 2)
 *   /a/s1        20000 bytes: a small file (format version 3: five pool blocks)
 *   /a/s2        5000 bytes written, then extended to 100000 by truncate: a
 *                small file longer than its two blocks (and than small_max)
 *   /b/c/f3      100 bytes (a small file: one pool block)
 *   /big         8 one-stripe extents with holes between (a B+tree map)
 *   /link        hard link to /a/f1
 *   /sym         short symlink; /longsym a 300-byte one (its own block)
 *   /fifo        a fifo
 *   /prealloc    2 preallocated (unwritten) stripes
 *   /many/       400 empty files (a directory tree of several leaves)
 *
 * With FFSCK_IMAGE_TAILS set the volume is format version 4 (packed tails,
 * fs/data/tail.c), whatever mkfs's default, and holds three more files whose last
 * stripes are tails (a tail stripe has 16 rows here; a row of a tail holds
 * 12 KiB of the file):
 *   /t/t1        1 stripe + 24 KiB: a tail of 2 rows
 *   /t/t2        1 stripe + 36 KiB: 3 rows
 *   /t/t3        100 KiB, one partial stripe above small_max: 9 rows
 * /a/f1's second half is a tail too (8 rows, the first in a tail stripe:
 * rows 0-7), t1 and t2 follow it in the same stripe (rows 8-9, 10-12); t3
 * does not fit there and opens the second tail stripe.  On a version 4
 * volume without FFSCK_IMAGE_TAILS, /a/f1's tail is the only one.
 *
 * With FFSCK_IMAGE_PATCHES set as well the volume is format version 5
 * (patches, fs/data/patch.c) and holds /p/db: 3 stripes and a 2-row tail, then
 * small overwrites, each round fsync'd (db_writes below): blocks of its
 * whole stripes and of its tail kept as patches in tail stripes, one of
 * them written over again.  With FFSCK_IMAGE_PENDING too, the volume is
 * mounted once more and two more rounds are written, the last fsync'd
 * without a commit (its tail stripe was listed by the one before: a patch
 * batch, fs/data/patch.c), and the process ends there, as a crash would end it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/ffs.h"
#include "fs/base/format.h"

#define CHUNK (64u * 1024)

static const char *const *members;
static unsigned nmembers;
static unsigned data_errors; /* reads that failed with EIO: bad data, not bad metadata */

static int fail(const char *what, int rc)
{
	fprintf(stderr, "ffsck-image: %s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	return 1;
}

static void pattern(uint8_t *buf, size_t len, uint64_t off, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((off + i) * 7 + seed * 131 + ((off + i) >> 12));
}

static int write_file(struct ffs *fs, uint64_t parent, const char *name, uint64_t len,
		      uint64_t stride, unsigned seed, uint64_t *ino)
{
	uint64_t fh, stripe = 3ull * CHUNK;
	uint8_t *buf = malloc(stripe);
	struct stat st;
	int rc = buf ? ffs_create(fs, parent, name, 0644, 0, 0, O_RDWR, &st, &fh) : -ENOMEM;

	for (uint64_t off = 0; rc == 0 && off < len; off += stride ? stride : stripe) {
		size_t n = (size_t)FF_MIN(stripe, len - off);
		ssize_t w;

		pattern(buf, n, off, seed);
		w = ffs_write(fs, fh, buf, n, off);
		rc = w == (ssize_t)n ? 0 : (w < 0 ? (int)w : -EIO);
	}
	if (buf && rc == 0)
		rc = ffs_release(fs, fh);
	if (rc == 0 && ino)
		*ino = st.st_ino;
	free(buf);
	return rc;
}

/* The files of /t and their lengths and seeds (see the top). */
static const struct { const char *name; uint64_t len; unsigned seed; } tails[] = {
	{ "t1", 3ull * CHUNK + 24 * 1024, 11 },
	{ "t2", 3ull * CHUNK + 36 * 1024, 12 },
	{ "t3", 100 * 1024, 13 },
};

static int build_tails(struct ffs *fs)
{
	struct stat t;
	int rc = ffs_mkdir(fs, 1, "t", 0755, 0, 0, &t);

	for (unsigned i = 0; i < FF_ARRAY_SIZE(tails) && rc == 0; i++)
		rc = write_file(fs, t.st_ino, tails[i].name, tails[i].len, 0, tails[i].seed, NULL);
	return rc;
}

/* /p/db: its length and seed, then the overwrites, round by round (a round
 * ends with an fsync); the rounds from DB_PENDING on are written only with
 * FFSCK_IMAGE_PENDING, in a second mount (see the top). */
#define DB_LEN (3ull * 3 * CHUNK + 20 * 1024)
#define DB_SEED 21u
#define DB_PENDING 3u
static const struct { uint64_t off, len; unsigned round; } db_writes[] = {
	{ 5 * 4096, 4096, 0 },                         /* stripe 0, block 5 */
	{ 3 * CHUNK * 1 + 10 * 4096, 8192, 0 },        /* stripe 1, blocks 10-11 */
	{ 5 * 4096 + 100, 3000, 1 },                   /* stripe 0, block 5 again */
	{ 3 * CHUNK * 2 + 47 * 4096, 4096, 1 },        /* stripe 2, its last block */
	{ 3 * CHUNK * 3 + 4096, 4096, 2 },             /* the tail, block 1 */
	{ 3 * CHUNK * 1 + 30 * 4096, 4096, 3 },        /* commits: a new tail stripe opens */
	{ 3 * CHUNK * 2 + 3 * 4096, 8192, 4 },         /* the batch no commit holds */
};

static bool db_round_on(unsigned round)
{
	return round < DB_PENDING || getenv("FFSCK_IMAGE_PENDING");
}

/* The rounds [r0, r1) of db_writes into file fh. */
static int db_rounds(struct ffs *fs, uint64_t fh, unsigned r0, unsigned r1)
{
	static uint8_t buf[16384];
	int rc = 0;

	for (unsigned r = r0; r < r1 && rc == 0; r++) {
		for (unsigned i = 0; i < FF_ARRAY_SIZE(db_writes) && rc == 0; i++) {
			ssize_t w;

			if (db_writes[i].round != r)
				continue;
			pattern(buf, db_writes[i].len, db_writes[i].off, 30 + i);
			w = ffs_write(fs, fh, buf, db_writes[i].len, db_writes[i].off);
			rc = w == (ssize_t)db_writes[i].len ? 0 : (w < 0 ? (int)w : -EIO);
		}
		if (rc == 0)
			rc = ffs_fsync(fs, fh, false);
	}
	return rc;
}

static int build_patches(struct ffs *fs)
{
	struct stat p;
	uint64_t db, fh;
	int rc = ffs_mkdir(fs, 1, "p", 0755, 0, 0, &p);

	if (rc == 0)
		rc = write_file(fs, p.st_ino, "db", DB_LEN, 0, DB_SEED, &db);
	if (rc == 0)
		rc = ffs_open(fs, db, O_RDWR, &fh);
	if (rc == 0) {
		rc = db_rounds(fs, fh, 0, DB_PENDING);
		if (ffs_release(fs, fh) < 0 && rc == 0)
			rc = -EIO;
	}
	return rc;
}

/* FFSCK_IMAGE_PENDING: the rounds a second mount writes, then the end. */
static int build_pending(const struct ffs_opts *o0)
{
	struct ffs_opts o = *o0;
	struct ff_err err = { "" };
	struct stat p, st;
	struct ffs *fs;
	uint64_t fh;
	int rc;

	o.commit_interval_ms = 24u * 3600 * 1000; /* no commit but the ones fsync makes */
	rc = ffs_mount(members, nmembers, &o, &fs, &err);
	if (rc < 0) {
		fprintf(stderr, "ffsck-image: %s\n", err.msg);
		return 1;
	}
	rc = ffs_lookup(fs, 1, "p", &p);
	if (rc == 0)
		rc = ffs_lookup(fs, p.st_ino, "db", &st);
	if (rc == 0)
		rc = ffs_open(fs, st.st_ino, O_RDWR, &fh);
	if (rc == 0)
		rc = db_rounds(fs, fh, DB_PENDING, DB_PENDING + 2);
	if (rc < 0)
		return fail("writing the pending rounds", rc);
	_exit(0); /* as a crash would: no unmount, no commit */
}

static int build_tree(struct ffs *fs)
{
	uint64_t stripe = 3ull * CHUNK, f1, f2, s2, fh;
	struct stat a, b, c, st;
	char longt[301], name[32];
	int rc = ffs_mkdir(fs, 1, "a", 0755, 0, 0, &a);

	if (rc == 0) rc = ffs_mkdir(fs, 1, "b", 0755, 0, 0, &b);
	if (rc == 0) rc = ffs_mkdir(fs, b.st_ino, "c", 0755, 0, 0, &c);
	if (rc == 0) rc = write_file(fs, a.st_ino, "f1", stripe * 3 / 2, 0, 1, &f1);
	if (rc == 0) rc = ffs_setxattr(fs, f1, "user.tag", "one", 3, 0);
	if (rc == 0) rc = write_file(fs, a.st_ino, "f2", stripe * 3, 0, 2, &f2);
	if (rc == 0 && getenv("FFSCK_IMAGE_XVALUE")) { /* a 64 KiB value: a chain of value blocks */
		static uint8_t v[FFS_XATTR_VALUE_MAX];

		pattern(v, sizeof(v), 0, 5);
		rc = ffs_setxattr(fs, f2, "user.stream", v, sizeof(v), 0);
	}
	if (rc == 0) rc = write_file(fs, a.st_ino, "s1", 20000, 0, 6, NULL);
	if (rc == 0) rc = write_file(fs, a.st_ino, "s2", 5000, 0, 7, &s2);
	if (rc == 0) {
		struct stat to = { .st_size = 100000 };

		rc = ffs_setattr(fs, s2, &to, FFS_SET_SIZE, &st);
	}
	if (rc == 0) rc = write_file(fs, c.st_ino, "f3", 100, 0, 3, NULL);
	if (rc == 0) rc = write_file(fs, 1, "big", stripe * 15, stripe * 2, 4, NULL);
	if (rc == 0) rc = ffs_link(fs, f1, 1, "link", &st);
	if (rc == 0) rc = ffs_symlink(fs, 1, "sym", "a/f1", 0, 0, &st);
	memset(longt, 'x', 300);
	longt[300] = '\0';
	if (rc == 0) rc = ffs_symlink(fs, 1, "longsym", longt, 0, 0, &st);
	if (rc == 0) rc = ffs_mknod(fs, 1, "fifo", S_IFIFO | 0644, 0, 0, 0, &st);
	if (rc == 0) rc = ffs_create(fs, 1, "prealloc", 0644, 0, 0, O_RDWR, &st, &fh);
	if (rc == 0) rc = ffs_fallocate(fs, fh, 0, 0, stripe * 2);
	if (rc == 0) rc = ffs_release(fs, fh);
	if (rc == 0) rc = ffs_mkdir(fs, 1, "many", 0755, 0, 0, &st);
	for (unsigned i = 0; i < 400 && rc == 0; i++) {
		snprintf(name, sizeof(name), "frame_%05u.dpx", i);
		rc = write_file(fs, st.st_ino, name, 0, 0, 0, NULL);
	}
	if (rc == 0 && getenv("FFSCK_IMAGE_TAILS"))
		rc = build_tails(fs);
	return rc == 0 && getenv("FFSCK_IMAGE_PATCHES") ? build_patches(fs) : rc;
}

static int build(void)
{
	struct ffs_mkfs_params p = { .level = 5, .chunk_bytes = CHUNK, .label = "corpus",
				     .force = true, .quiet = true };
	struct ffs_opts o = { .write_buffer_bytes = 8 << 20, .read_cache_bytes = 8 << 20 };
	struct ff_err err = { "" };
	const char *label = getenv("FFSCK_IMAGE_LABEL");
	struct ffs *fs;
	int rc;

	if (label)
		snprintf(p.label, sizeof(p.label), "%s", label);
	if (getenv("FFSCK_IMAGE_INODES"))
		p.ninodes = strtoull(getenv("FFSCK_IMAGE_INODES"), NULL, 0);
	if (getenv("FFSCK_IMAGE_JOURNAL"))
		p.journal_blocks = strtoull(getenv("FFSCK_IMAGE_JOURNAL"), NULL, 0);
	if (getenv("FFSCK_IMAGE_TAILS"))
		p.version = FFS_VERSION_TAILS;
	if (getenv("FFSCK_IMAGE_PATCHES"))
		p.version = FFS_VERSION_PATCH;
	rc = ffs_mkfs(members, nmembers, &p, &err);

	if (rc == 0)
		rc = ffs_mount(members, nmembers, &o, &fs, &err);
	if (rc < 0) {
		fprintf(stderr, "ffsck-image: %s\n", err.msg);
		return 1;
	}
	rc = build_tree(fs);
	if (rc < 0) {
		ffs_unmount(fs);
		return fail("building the tree", rc);
	}
	rc = ffs_unmount(fs);
	if (rc < 0)
		return fail("unmount", rc);
	return getenv("FFSCK_IMAGE_PATCHES") && getenv("FFSCK_IMAGE_PENDING") ? build_pending(&o) : 0;
}

struct names {
	char name[64][FFS_NAME_MAX + 1];
	uint64_t ino[64];
	unsigned n;
	uint64_t next;
};

static int fill(void *arg, const char *name, const struct stat *st, uint32_t gen, uint64_t next_pos)
{
	struct names *n = arg;

	if (n->n == 64)
		return 1;
	snprintf(n->name[n->n], sizeof(n->name[0]), "%s", name);
	n->ino[n->n++] = st->st_ino;
	n->next = next_pos;
	return 0;
}

static int read_all(struct ffs *fs, uint64_t ino, const struct stat *st)
{
	static uint8_t buf[1 << 20];
	char target[4096];
	uint64_t fh;
	int rc = ffs_listxattr(fs, ino, NULL, 0);

	if (rc < 0)
		return rc;
	if (S_ISLNK(st->st_mode))
		return FF_MIN(ffs_readlink(fs, ino, target, sizeof(target)), 0);
	if (!S_ISREG(st->st_mode))
		return 0;
	rc = ffs_open(fs, ino, O_RDONLY, &fh);
	if (rc < 0)
		return rc;
	/* the first 16 MiB and the last one: a damaged size may be huge and sparse */
	for (uint64_t i = 0, size = (uint64_t)st->st_size; rc == 0 && i < 17; i++) {
		uint64_t off = i < 16 ? i * sizeof(buf) : (size - 1) / sizeof(buf) * sizeof(buf);
		ssize_t r;

		if (off >= size || (i == 16 && off < 16 * sizeof(buf)))
			break;
		r = ffs_read(fs, fh, buf, sizeof(buf), off, 0);
		rc = r < 0 ? (int)r : 0;
		if (rc == -EIO) { /* a chunk that fails its checksum: counted, not fatal */
			data_errors++;
			rc = 0;
		}
	}
	ffs_release(fs, fh);
	return rc;
}

/* Every entry below dir, every file read; depth bounds a looping tree. */
static int walk(struct ffs *fs, uint64_t dir, unsigned depth, unsigned *count)
{
	struct names *n = calloc(1, sizeof(*n));
	int rc = n ? 0 : -ENOMEM;

	if (depth > 64)
		rc = -ELOOP;
	for (uint64_t pos = 0; rc == 0;) {
		n->n = 0;
		rc = ffs_readdir(fs, dir, pos, false, fill, n);
		if (rc == -ENOENT)
			rc = 0;
		for (unsigned i = 0; i < n->n && rc == 0; i++) {
			struct stat st;

			if (!strcmp(n->name[i], ".") || !strcmp(n->name[i], ".."))
				continue;
			rc = ffs_getattr(fs, n->ino[i], &st);
			if (rc == 0)
				rc = S_ISDIR(st.st_mode) ? walk(fs, n->ino[i], depth + 1, count)
							 : read_all(fs, n->ino[i], &st);
			(*count)++;
		}
		if (n->n < 64 || rc)
			break;
		pos = n->next;
	}
	free(n);
	return rc;
}

static int exercise(struct ffs *fs)
{
	uint8_t buf[4096];
	struct stat st;
	uint64_t fh;
	int rc = ffs_mkdir(fs, 1, "verify.d", 0755, 0, 0, &st);

	memset(buf, 0x5a, sizeof(buf));
	if (rc == 0)
		rc = ffs_create(fs, st.st_ino, "file", 0644, 0, 0, O_RDWR, &st, &fh);
	if (rc == 0) {
		ssize_t w = ffs_write(fs, fh, buf, sizeof(buf), 0);

		rc = w == sizeof(buf) ? 0 : w < 0 ? (int)w : -EIO;
	}
	if (rc == 0)
		rc = ffs_fsync(fs, fh, false);
	if (rc == 0)
		rc = ffs_release(fs, fh);
	if (rc == 0 && (rc = ffs_lookup(fs, 1, "verify.d", &st)) == 0)
		rc = ffs_unlink(fs, st.st_ino, "file");
	if (rc == 0)
		rc = ffs_rmdir(fs, 1, "verify.d");
	return rc;
}

/* 100 bytes into file dir/name at off. */
static int write_at(struct ffs *fs, uint64_t dir, const char *name, uint64_t off)
{
	uint8_t buf[100];
	struct stat st;
	uint64_t fh;
	ssize_t w;
	int rc = ffs_lookup(fs, dir, name, &st);

	if (rc == 0)
		rc = ffs_open(fs, st.st_ino, O_RDWR, &fh);
	if (rc < 0)
		return rc;
	pattern(buf, sizeof(buf), off, 9);
	w = ffs_write(fs, fh, buf, sizeof(buf), off);
	rc = ffs_release(fs, fh);
	return w < 0 ? (int)w : w != sizeof(buf) ? -EIO : rc;
}

/* Change what is there: each step may find its file gone (a repair moved
 * it to /lost+found), never anything worse. */
static int change_existing(struct ffs *fs)
{
	struct stat a, st;
	uint64_t fh;
	int rc = ffs_lookup(fs, 1, "a", &a);

	if (rc == 0 && (rc = ffs_lookup(fs, a.st_ino, "f1", &st)) == 0 &&
	    (rc = ffs_setxattr(fs, st.st_ino, "user.more", "xyz", 3, 0)) == 0)
		rc = ffs_unlink(fs, a.st_ino, "f1");
	if (rc == 0 && (rc = ffs_lookup(fs, a.st_ino, "f2", &st)) == 0 &&
	    (rc = ffs_open(fs, st.st_ino, O_RDWR | O_TRUNC, &fh)) == 0)
		rc = ffs_release(fs, fh);
	/* a small file stays small (more pool blocks), another grows into stripes */
	if (rc == 0)
		rc = write_at(fs, a.st_ino, "s1", 30000);
	if (rc == 0)
		rc = write_at(fs, a.st_ino, "s2", 3ull * CHUNK * 2);
	if (rc == 0 && (rc = ffs_lookup(fs, 1, "many", &st)) == 0 &&
	    (rc = ffs_unlink(fs, st.st_ino, "frame_00007.dpx")) == 0)
		rc = ffs_rename(fs, st.st_ino, "frame_00008.dpx", 1, "moved", 0);
	if (rc == 0)
		rc = ffs_unlink(fs, 1, "big");
	if (rc == 0)
		rc = ffs_unlink(fs, 1, "longsym");
	if (rc == 0)
		rc = ffs_rename(fs, 1, "b", 1, "b2", 0);
	return rc == -ENOENT ? 0 : rc;
}

/* Every step runs even after one failed (on a damaged volume what matters
 * is that nothing crashes); the first failure is the one reported. */
static int verify(void)
{
	struct ffs_opts o = { .write_buffer_bytes = 8 << 20, .read_cache_bytes = 8 << 20 };
	struct ff_err err = { "" };
	const char *what = NULL;
	unsigned count = 0;
	struct ffs *fs;
	int rc = ffs_mount(members, nmembers, &o, &fs, &err), first = 0;

	if (rc < 0) {
		fprintf(stderr, "ffsck-image: mount: %s\n", err.msg);
		return 1;
	}
	if ((rc = walk(fs, 1, 0, &count)) < 0)
		first = rc, what = "walking the tree";
	rc = exercise(fs);
	if (rc < 0 && rc != -ENOSPC && !first) /* a volume may well be full */
		first = rc, what = "creating and removing";
	if ((rc = change_existing(fs)) < 0 && !first)
		first = rc, what = "changing what is there";
	if ((rc = ffs_unmount(fs)) < 0 && !first)
		first = rc, what = "unmount";
	if (first)
		return fail(what, first);
	if (data_errors) {
		fprintf(stderr, "ffsck-image: %u file reads failed (data checksums)\n", data_errors);
		return 3;
	}
	printf("verified %u entries\n", count);
	return 0;
}

/* ---- data: the tree exactly as built ------------------------------------- */

static int differs(const char *what, const char *how)
{
	fprintf(stderr, "ffsck-image: %s: %s\n", what, how);
	return 1;
}

/* File path (one level below dir) has len bytes: pattern pieces of `piece`
 * bytes every `stride` (0: contiguous), zeros between, and zeros from
 * `written` on. */
static int check_file(struct ffs *fs, uint64_t dir, const char *name, const char *path,
		      uint64_t len, uint64_t written, uint64_t stride, unsigned seed, uint64_t *ino)
{
	uint64_t piece = 3ull * CHUNK, fh;
	uint8_t *got = malloc(piece), *want = malloc(piece);
	struct stat st;
	int rc = got && want ? ffs_lookup(fs, dir, name, &st) : -ENOMEM;

	if (rc == 0 && (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != len))
		rc = differs(path, "not a regular file of the size it was built with");
	else if (rc == 0 && (rc = ffs_open(fs, st.st_ino, O_RDONLY, &fh)) == 0) {
		for (uint64_t off = 0; rc == 0 && off < len; off += piece) {
			size_t n = (size_t)FF_MIN(piece, len - off);
			ssize_t r = ffs_read(fs, fh, got, n, off, 0);

			if (!stride || (off / piece) % (stride / piece) == 0)
				pattern(want, n, off, seed);
			else
				memset(want, 0, n);
			if (off + n > written) { /* zeros from written on */
				uint64_t z = FF_MAX(written, off);

				memset(want + (z - off), 0, off + n - z);
			}
			if (r != (ssize_t)n || memcmp(got, want, n) != 0)
				rc = differs(path, r < 0 ? strerror((int)-r) : "bytes differ");
		}
		ffs_release(fs, fh);
	} else if (rc < 0) {
		rc = differs(path, strerror(-rc));
	}
	if (rc == 0 && ino)
		*ino = st.st_ino;
	free(got);
	free(want);
	return rc;
}

/* /p/db: its pattern with the overwrites over it (db_writes). */
static int check_db(struct ffs *fs)
{
	uint8_t *want = malloc(DB_LEN), *got = malloc(DB_LEN);
	struct stat p, st;
	uint64_t fh;
	ssize_t r = -ENOMEM;
	int rc = want && got ? 0 : -ENOMEM;

	if (rc == 0 && (ffs_lookup(fs, 1, "p", &p) < 0 || ffs_lookup(fs, p.st_ino, "db", &st) < 0 ||
			(uint64_t)st.st_size != DB_LEN))
		rc = differs("/p/db", "missing, or not the size it was built with");
	if (rc == 0 && (rc = ffs_open(fs, st.st_ino, O_RDONLY, &fh)) == 0) {
		r = ffs_read(fs, fh, got, DB_LEN, 0, 0);
		ffs_release(fs, fh);
	}
	if (rc == 0) {
		pattern(want, DB_LEN, 0, DB_SEED);
		for (unsigned i = 0; i < FF_ARRAY_SIZE(db_writes); i++)
			if (db_round_on(db_writes[i].round))
				pattern(want + db_writes[i].off, db_writes[i].len, db_writes[i].off, 30 + i);
		if (r != (ssize_t)DB_LEN || memcmp(got, want, DB_LEN))
			rc = differs("/p/db", r < 0 ? strerror((int)-r) : "bytes differ");
	}
	free(want);
	free(got);
	return rc < 0 ? differs("/p/db", strerror(-rc)) : rc;
}

static int data_tree(struct ffs *fs)
{
	uint64_t stripe = 3ull * CHUNK, f1, f2;
	struct stat a, b, c, st;
	char buf[512], longt[301], name[32];
	int rc;

	if (ffs_lookup(fs, 1, "a", &a) < 0 || ffs_lookup(fs, 1, "b", &b) < 0 ||
	    ffs_lookup(fs, b.st_ino, "c", &c) < 0 || !S_ISDIR(a.st_mode) || !S_ISDIR(c.st_mode))
		return differs("/a, /b/c", "missing or not directories");
	if ((rc = check_file(fs, a.st_ino, "f1", "/a/f1", stripe * 3 / 2, UINT64_MAX, 0, 1, &f1)) ||
	    (rc = check_file(fs, a.st_ino, "f2", "/a/f2", stripe * 3, UINT64_MAX, 0, 2, &f2)) ||
	    (rc = check_file(fs, a.st_ino, "s1", "/a/s1", 20000, UINT64_MAX, 0, 6, NULL)) ||
	    (rc = check_file(fs, a.st_ino, "s2", "/a/s2", 100000, 5000, 0, 7, NULL)) ||
	    (rc = check_file(fs, c.st_ino, "f3", "/b/c/f3", 100, UINT64_MAX, 0, 3, NULL)) ||
	    (rc = check_file(fs, 1, "big", "/big", stripe * 15, UINT64_MAX, stripe * 2, 4, NULL)))
		return rc;
	rc = ffs_getxattr(fs, f1, "user.tag", buf, sizeof(buf));
	if (rc != 3 || memcmp(buf, "one", 3))
		return differs("/a/f1", "xattr user.tag is not 'one'");
	if (getenv("FFSCK_IMAGE_XVALUE")) {
		static uint8_t want[FFS_XATTR_VALUE_MAX], have[FFS_XATTR_VALUE_MAX];

		pattern(want, sizeof(want), 0, 5);
		rc = ffs_getxattr(fs, f2, "user.stream", have, sizeof(have));
		if (rc != (int)sizeof(have) || memcmp(have, want, sizeof(have)))
			return differs("/a/f2", "xattr user.stream is not the 64 KiB pattern");
	}
	if (ffs_lookup(fs, 1, "link", &st) < 0 || st.st_ino != f1 || st.st_nlink != 2)
		return differs("/link", "not the second link of /a/f1");
	if (ffs_lookup(fs, 1, "sym", &st) < 0 || ffs_readlink(fs, st.st_ino, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, "a/f1"))
		return differs("/sym", "not a symlink to a/f1");
	memset(longt, 'x', 300);
	longt[300] = '\0';
	if (ffs_lookup(fs, 1, "longsym", &st) < 0 || ffs_readlink(fs, st.st_ino, buf, sizeof(buf)) < 0 ||
	    strcmp(buf, longt))
		return differs("/longsym", "not the 300-byte symlink");
	if (ffs_lookup(fs, 1, "fifo", &st) < 0 || !S_ISFIFO(st.st_mode))
		return differs("/fifo", "not a fifo");
	if (ffs_lookup(fs, 1, "prealloc", &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != stripe * 2 || (uint64_t)st.st_blocks * 512 < stripe * 2)
		return differs("/prealloc", "not a file of 2 preallocated stripes");
	if (getenv("FFSCK_IMAGE_TAILS")) {
		if (ffs_lookup(fs, 1, "t", &st) < 0 || !S_ISDIR(st.st_mode))
			return differs("/t", "missing or not a directory");
		for (unsigned i = 0; i < FF_ARRAY_SIZE(tails); i++) {
			snprintf(name, sizeof(name), "/t/%s", tails[i].name);
			rc = check_file(fs, st.st_ino, tails[i].name, name, tails[i].len, UINT64_MAX, 0,
					tails[i].seed, NULL);
			if (rc)
				return rc;
		}
	}
	if (getenv("FFSCK_IMAGE_PATCHES") && (rc = check_db(fs)) != 0)
		return rc;
	if (ffs_lookup(fs, 1, "many", &st) < 0)
		return differs("/many", "missing");
	for (unsigned i = 0; i < 400; i++) {
		struct stat f;

		snprintf(name, sizeof(name), "frame_%05u.dpx", i);
		if (ffs_lookup(fs, st.st_ino, name, &f) < 0 || !S_ISREG(f.st_mode) || f.st_size)
			return differs("/many", "an empty frame file is missing");
	}
	return 0;
}

static int data(void)
{
	struct ffs_opts o = { .ro = true, .write_buffer_bytes = 8 << 20, .read_cache_bytes = 8 << 20 };
	struct ff_err err = { "" };
	struct ffs *fs;
	int rc = ffs_mount(members, nmembers, &o, &fs, &err);

	if (rc < 0) {
		fprintf(stderr, "ffsck-image: mount: %s\n", err.msg);
		return 1;
	}
	rc = data_tree(fs);
	if (ffs_unmount(fs) < 0 && !rc)
		rc = fail("unmount", -EIO);
	if (!rc)
		printf("the tree is as built\n");
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "build") && strcmp(argv[1], "verify") &&
			 strcmp(argv[1], "data"))) {
		fprintf(stderr, "usage: ffsck-image build|verify|data MEMBER...\n");
		return 2;
	}
	ff_log_set_level(FF_LOG_WARN);
	members = (const char *const *)argv + 2;
	nmembers = (unsigned)(argc - 2);
	if (strcmp(argv[1], "data") == 0)
		return data();
	return strcmp(argv[1], "build") == 0 ? build() : verify();
}
