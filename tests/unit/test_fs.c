/* SPDX-License-Identifier: MIT */
/*
 * The filesystem library without FUSE: mkfs, mount, the POSIX operations,
 * remount persistence, and a seeded random-operation run against an
 * in-memory model of every file.
 */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <semaphore.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "fs/volume/check.h"
#include "io/bitmap.h"
#include "fs/data/data_i.h" /* ffs_tail_closed */
#include "fs/grow/grow.h"  /* ffs_grow_prepare: a grow step by step */
#include "fs/ffs.h"
#include "fs/ffs_tools.h"
#include "fs/base/format.h"
#include "fs/volume/volume.h" /* the library's own test: internals where it needs them */
#include "io/fault.h"
#include "raid/raid.h"
#include "raid/sb.h"
#include "tests/unit/helpers.h"

#define NM 4

/* The patch cache of every mount (fs/data/pcache.c): 0, the default.  A test
 * that needs patched blocks read from the members sets it off; each test
 * runs in a child process of its own, so the setting ends with it. */
static size_t ut_patch_cache;

static struct ffs *mkfs_mount(unsigned mb, uint32_t chunk)
{
	struct ffs_mkfs_params p = { .level = 5, .chunk_bytes = chunk, .quiet = true };
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			       .patch_cache_bytes = ut_patch_cache };
	struct ff_err err = { "" };
	struct ffs *fs;

	ut_make_members(NM, mb);
	ck_assert_msg(ffs_mkfs(ut_pp, NM, &p, &err) == 0, "mkfs: %s", err.msg);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

/* mkfs with these parameters (level 5, 64 KiB chunks, quiet set here) on
 * NM members of mb MiB, then mount. */
static struct ffs *mkfs_mount_params(unsigned mb, struct ffs_mkfs_params p)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			       .patch_cache_bytes = ut_patch_cache };
	struct ff_err err = { "" };
	struct ffs *fs;

	p.level = 5;
	p.chunk_bytes = 64 * 1024;
	p.quiet = true;
	ut_make_members(NM, mb);
	ck_assert_msg(ffs_mkfs(ut_pp, NM, &p, &err) == 0, "mkfs: %s", err.msg);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

static struct ffs *remount(struct ffs *fs)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			       .patch_cache_bytes = ut_patch_cache };
	struct ff_err err = { "" };

	if (fs)
		ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

/* Mount over these members (read-only: nothing left out goes stale). */
static struct ffs *remount_members(const char *const *list, unsigned n, bool ro)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			       .patch_cache_bytes = ut_patch_cache, .ro = ro };
	struct ff_err err = { "" };
	struct ffs *fs;

	ck_assert_msg(ffs_mount(list, n, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

static uint64_t create(struct ffs *fs, uint64_t parent, const char *name, uint64_t *fh)
{
	struct stat st;

	ck_assert_int_eq(ffs_create(fs, parent, name, 0644, 0, 0, O_RDWR, &st, fh), 0);
	return st.st_ino;
}

/*
 * An array grown under the filesystem (raid.h, "growing": ff_raid_grow):
 * its rows keep the old geometry until the filesystem moves them, which it
 * cannot yet, so it mounts read-only only (a read-write mount is refused,
 * saying why) and reads every file in its rows' geometry: stripes, a tail
 * (packed in a shared tail stripe), patches laid over a stripe, a small
 * file, a hole; with every member, and degraded (an old member and the
 * added one left out in turn).  fsck.framefs refuses it, saying why.
 */
START_TEST(grown_array_reads_every_file_read_only)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20 };
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes;
	static const struct {
		const char *name;
		uint64_t size;
	} files[] = {
		{ "stripes_and_tail", 0 }, /* 5 stripes and a third: sizes set below */
		{ "patched", 0 },
		{ "small", 3000 },
		{ "sparse", 0 },
	};
	uint8_t *want[4], *got;
	uint64_t size[4], blocks[4];
	char added[300];
	const char *add[1] = { added };
	const char *all[NM + 1];

	size[0] = 5 * S + S / 3;
	size[1] = 4 * S;
	size[2] = files[2].size;
	size[3] = 3 * S;
	got = malloc(6 * S);
	for (unsigned i = 0; i < 4; i++) {
		uint64_t fh, ino;
		struct stat st;

		want[i] = calloc(1, 6 * S);
		ino = create(fs, FFS_ROOT_INO, files[i].name, &fh);
		if (i == 3) { /* a hole: only the last stripe written */
			ut_fill(want[i] + 2 * S, S);
			ck_assert_int_eq(ffs_write(fs, fh, want[i] + 2 * S, S, 2 * S), (ssize_t)S);
		} else {
			ut_fill(want[i], FF_ROUND_UP(size[i], 8));
			ck_assert_int_eq(ffs_write(fs, fh, want[i], size[i], 0), (ssize_t)size[i]);
		}
		ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
		if (i == 1) { /* small overwrites of a written stripe: patches */
			for (unsigned k = 0; k < 3; k++) {
				uint64_t at = S + (1 + 7 * k) * 4096;

				ut_fill(want[i] + at, 4096);
				ck_assert_int_eq(ffs_write(fs, fh, want[i] + at, 4096, at), 4096);
				ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
			}
		}
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
		blocks[i] = (uint64_t)st.st_blocks;
	}
	ck_assert_uint_gt(atomic_load(&ffs_stats(fs)->patch_writes), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);

	snprintf(added, sizeof(added), "%s/added.img", ut_dir);
	ut_sized_file(added, 96);
	ck_assert_msg(ff_raid_grow(ut_pp, NM, add, 1, false, &err) == 0, "grow: %s", err.msg);
	for (unsigned i = 0; i < NM; i++)
		all[i] = ut_pp[i];
	all[NM] = added;
	ck_assert_int_eq(ffs_mount(all, NM + 1, &o, &fs, &err), -EROFS);
	ck_assert_msg(strstr(err.msg, "grown to 5 members") && strstr(err.msg, "made on 4") &&
		      strstr(err.msg, "read-only"), "%s", err.msg);
	{ /* fsck opens it, and finds the superblock a misfit (never rebuilt over it) */
		struct ffs_super *sb = ff_alloc_aligned(FFS_BLOCK);
		struct ffs *chk;
		const char *why;

		ck_assert_msg(ffs_check_open(all, NM + 1, true, 0, &chk, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(ffs_meta_read_check(chk, ffs_sb_block[0], FFS_B_SUPER, sb, true), 0);
		why = ffs_check_super_problem(chk, sb);
		ck_assert_msg(why && !strcmp(why, FFS_CHECK_GROW_NO_RECORDS) &&
			      ffs_check_super_misfit(why), "%s", why ? why : "(no problem)");
		ck_assert_int_eq(ffs_check_close(chk), 0);
		free(sb);
	}
	o.ro = true;
	for (int left = -1; left < 2; left++) { /* all; without old member 1; without the added */
		const char *list[NM + 1];
		unsigned n = 0;

		for (unsigned i = 0; i < NM + 1; i++)
			if (!(left == 0 && i == 1) && !(left == 1 && i == NM))
				list[n++] = all[i];
		ck_assert_msg(ffs_mount(list, n, &o, &fs, &err) == 0, "read-only mount: %s", err.msg);
		for (unsigned i = 0; i < 4; i++) {
			struct stat st;
			uint64_t fh;

			ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, files[i].name, &st), 0);
			ck_assert_uint_eq((uint64_t)st.st_size, size[i]);
			ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDONLY, &fh), 0);
			memset(got, 0xee, 6 * S);
			ck_assert_int_eq(ffs_read(fs, fh, got, 6 * S, 0, 0), (ssize_t)size[i]);
			ck_assert_msg(memcmp(got, want[i], size[i]) == 0, "%s differs (left out: %d)",
				      files[i].name, left);
			ck_assert_int_eq(ffs_release(fs, fh), 0);
			ck_assert_uint_eq((uint64_t)st.st_blocks, blocks[i]);
		}
		ck_assert_int_eq(ffs_unmount(fs), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		free(want[i]);
	free(got);
	ck_assert_int_eq(unlink(added), 0);
	ut_remove_members(NM);
}
END_TEST

/* Rows still in the old geometry of a grown array (fs_i.h, fs->orows). */
static uint64_t old_rows(const struct ffs *fs)
{
	uint64_t n = 0;

	for (uint64_t w = 0; fs->orows && w < FF_BITMAP_WORDS(fs->g->nstripes); w++)
		n += (uint64_t)__builtin_popcountll(fs->orows[w]);
	return n;
}

/* n members of 96 MiB to add (added[]), and the list of all of them after
 * a grow to NM + n: ut_pp's, then the added ones. */
static void added_members(unsigned n, char added[][300], const char **all)
{
	for (unsigned i = 0; i < n; i++) {
		snprintf(added[i], 300, "%s/added%u.img", ut_dir, i);
		ut_sized_file(added[i], 96);
	}
	for (unsigned i = 0; i < NM; i++)
		all[i] = ut_pp[i];
	for (unsigned i = 0; i < n; i++)
		all[NM + i] = added[i];
}

/* Read file `name` whole and compare it with want (size bytes). */
static void read_back(struct ffs *fs, const char *name, const uint8_t *want, uint64_t size,
		      const char *when)
{
	struct stat st;
	uint64_t fh;
	uint8_t *got = malloc(size + 4096);

	ck_assert_msg(ffs_lookup(fs, FFS_ROOT_INO, name, &st) == 0, "%s: %s missing", when, name);
	ck_assert_uint_eq((uint64_t)st.st_size, size);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, got, size + 4096, 0, 0), (ssize_t)size);
	ck_assert_msg(memcmp(got, want, size) == 0, "%s: %s differs", when, name);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	free(got);
}

/*
 * ffs_grow (fs/grow/): RAID5 x 4 grown by one member, step by step.
 * Between the grow taken on and the restripe: files from before read back
 * at their old width; a new file
 * takes the new width (its stripe is 4 data chunks, an old file's 3); an
 * old file emptied by O_TRUNC is written at the new width; one unlinked
 * gives its rows to new files; all of it across a remount, and degraded;
 * a second grow waits for the first.  Then the restripe moves the rest:
 * the grow ends, every file reads back and is written again at the new
 * width, also with a member left out.
 */
START_TEST(grow_new_files_take_the_new_width)
{
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes, S5 = S / 3 * 4;
	const char *names[3] = { "old_big", "old_tail", "old_emptied" };
	const uint64_t size[3] = { 5 * S + S / 3, S / 2 + 4096, 2 * S };
	uint8_t *want[3], *fresh, *fresh2;
	char added[1][300];
	const char *add[1] = { added[0] }, *all[NM + 1];
	struct stat st;
	uint64_t fh, size2, rows0;

	for (unsigned i = 0; i < 3; i++) {
		want[i] = malloc(FF_ROUND_UP(size[i], 8));
		ut_fill(want[i], FF_ROUND_UP(size[i], 8));
		create(fs, FFS_ROOT_INO, names[i], &fh);
		ck_assert_int_eq(ffs_write(fs, fh, want[i], size[i], 0), (ssize_t)size[i]);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	added_members(1, added, all);
	/* ffs_grow's first steps by hand, to see the volume between them */
	fs = remount_members(ut_pp, NM, false);
	ck_assert_int_eq(ffs_sync(fs), 0);
	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(ffs_grow_prepare(fs, NM + 1, &err), 0);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ff_raid_grow(ut_pp, NM, add, 1, false, &err) == 0, "grow: %s", err.msg);

	fs = remount_members(all, NM + 1, false); /* takes the grow on */
	for (unsigned i = 0; i < 3; i++)
		read_back(fs, names[i], want[i], size[i], "grown");
	/* an old file keeps the old width until moved (or changed:
	 * grow_change_moves_the_old_file) */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[0], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S);
	/* a new file: the new width */
	fresh = malloc(3 * S5 + 8192);
	ut_fill(fresh, 3 * S5 + 8192);
	create(fs, FFS_ROOT_INO, "new", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, fresh, 3 * S5 + 8192, 0), (ssize_t)(3 * S5 + 8192));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "new", &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S5);
	read_back(fs, "new", fresh, 3 * S5 + 8192, "new file");
	/* emptied, an old file takes the new width */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[2], &st), 0);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR | O_TRUNC, &fh), 0);
	ut_fill(want[2], FF_ROUND_UP(size[2], 8));
	ck_assert_int_eq(ffs_write(fs, fh, want[2], size[2], 0), (ssize_t)size[2]);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[2], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S5);
	/* an old file unlinked: its rows go to new files, in the new geometry
	 * (new2 takes every stripe new data may: those rows too) */
	ck_assert_int_eq(ffs_sync(fs), 0); /* a truncation's rows leave the map at its commit */
	rows0 = old_rows(fs);
	ck_assert_uint_eq(rows0, 6); /* old_big's 5 stripes, and the tail stripe the two tails share */
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, names[0]), 0);
	ck_assert_int_eq(ffs_sync(fs), 0);
	ck_assert_uint_eq(old_rows(fs), rows0 - 5); /* its 5 whole stripes; its tail's stripe is shared */
	{
		struct statvfs sv;

		ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
		size2 = (uint64_t)sv.f_bavail * 4096 / S5 * S5;
		ck_assert_uint_gt(size2, 6 * S5);
	}
	fresh2 = malloc(size2);
	ut_fill(fresh2, size2);
	create(fs, FFS_ROOT_INO, "new2", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, fresh2, size2, 0), (ssize_t)size2);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	read_back(fs, "new2", fresh2, size2, "rows reused");
	ck_assert_int_eq(ffs_unmount(fs), 0);

	for (int left = -1; left < 2; left++) { /* remounted: all; without old member 1; without the added */
		const char *list[NM + 1];
		unsigned n = 0;

		for (unsigned i = 0; i < NM + 1; i++)
			if (!(left == 0 && i == 1) && !(left == 1 && i == NM))
				list[n++] = all[i];
		fs = remount_members(list, n, left >= 0);
		if (left < 0) /* read-write: the map from disk */
			ck_assert_uint_eq(old_rows(fs), rows0 - 5);
		read_back(fs, names[1], want[1], size[1], "remounted");
		read_back(fs, names[2], want[2], size[2], "remounted");
		read_back(fs, "new", fresh, 3 * S5 + 8192, "remounted");
		read_back(fs, "new2", fresh2, size2, "remounted");
		ck_assert_int_ne(ffs_lookup(fs, FFS_ROOT_INO, names[0], &st), 0);
		ck_assert_int_eq(ffs_unmount(fs), 0);
	}
	ck_assert_int_eq(ffs_grow(all, NM + 1, add, 1, false, true, &err), -EBUSY);
	ck_assert_msg(strstr(err.msg, "restripe finish"), "%s", err.msg);

	/* the restripe: the old files move, the grow ends */
	ck_assert_msg(ffs_grow_resume(all, NM + 1, &err) == 0, "restripe: %s", err.msg);
	/* a stop between the filesystem's end of the grow and the array's: the
	 * members' superblocks put back to say grown; the next mount ends it */
	for (unsigned i = 0; i < NM + 1; i++) {
		struct ff_member_sb *msb = ff_alloc_aligned(sizeof(*msb));
		struct ff_member m;

		ck_assert_int_eq(ff_member_open(&m, all[i], false, &err), 0);
		ck_assert_int_eq(ff_sb_read(&m, msb), 0);
		ck_assert_uint_eq(ff_le32(msb->old_nmembers), 0);
		msb->version = ff_cpu_to_le32(FF_MEMBER_SB_VERSION_GROWN);
		msb->old_level = msb->level;
		msb->old_nmembers = ff_cpu_to_le32(NM);
		ck_assert_int_eq(ff_sb_write(&m, msb), 0);
		ff_member_close(&m);
		free(msb);
	}
	fs = remount_members(all, NM + 1, false);
	ck_assert_ptr_null(ff_raid_geom_old(ffs_raid(fs)));
	ck_assert_ptr_null(fs->orows);
	read_back(fs, names[1], want[1], size[1], "restriped");
	read_back(fs, names[2], want[2], size[2], "restriped");
	read_back(fs, "new", fresh, 3 * S5 + 8192, "restriped");
	read_back(fs, "new2", fresh2, size2, "restriped");
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[1], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S5);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0); /* written again */
	ck_assert_int_eq(ffs_write(fs, fh, "moved", 5, 100), 5);
	memcpy(want[1] + 100, "moved", 5);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	{ /* every row laid over five members: readable without any one of them */
		const char *list[NM];

		for (unsigned i = 0; i < NM; i++)
			list[i] = all[i + 1];
		fs = remount_members(list, NM, true);
		read_back(fs, names[1], want[1], size[1], "restriped, member 0 left out");
		read_back(fs, "new2", fresh2, size2, "restriped, member 0 left out");
		ck_assert_int_eq(ffs_unmount(fs), 0);
	}
	for (unsigned i = 0; i < 3; i++)
		free(want[i]);
	free(fresh);
	free(fresh2);
	ck_assert_int_eq(unlink(added[0]), 0);
	ut_remove_members(NM);
}
END_TEST

START_TEST(small_file_round_trip)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	char buf[100];
	struct stat st;
	uint64_t fh, ino;

	ino = create(fs, FFS_ROOT_INO, "a.txt", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, "hello\n", 6, 0), 6);
	ck_assert_int_eq(ffs_read(fs, fh, buf, sizeof(buf), 0, 0), 6);
	ck_assert_int_eq(memcmp(buf, "hello\n", 6), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "a.txt", &st), 0);
	ck_assert_uint_eq(st.st_ino, ino);
	ck_assert_int_eq(st.st_size, 6);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(ffs_read(fs, fh, buf, sizeof(buf), 0, 0), 6);
	ck_assert_int_eq(memcmp(buf, "hello\n", 6), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* close(2) (FLUSH) commits the running transaction only for a file it
 * changed: a frame opened for playback while another file is being written
 * neither commits nor waits, a changed file's writable handle always
 * commits — also one that was evicted from the inode cache and loaded
 * again before its close — and a read-only handle never does (FH_RDONLY). */
START_TEST(flush_commits_only_changed_files)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ff_err err = { "" };
	_Atomic uint64_t *commits;
	uint64_t fh, fh2, ino, ino2, c0;
	struct stat st;
	char buf[16];

	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	commits = &ffs_stats(fs)->commits;
	ino = create(fs, FFS_ROOT_INO, "played", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, "frame", 5, 0), 5);
	c0 = atomic_load(commits);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_uint_eq(atomic_load(commits), c0 + 1);
	ck_assert_int_eq(ffs_release(fs, fh), 0);

	ino2 = create(fs, FFS_ROOT_INO, "being-written", &fh2); /* the running transaction */
	c0 = atomic_load(commits);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, buf, sizeof(buf), 0, 0), 5);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(atomic_load(commits), c0);

	/* the new file leaves the inode cache before its first close */
	ck_assert_int_eq(ffs_release(fs, fh2), 0);
	ffs_forget(fs, ino2, 1);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "being-written", &st), 0);
	ck_assert_int_eq(ffs_open(fs, ino2, O_RDONLY, &fh2), 0); /* a reader's close: not its change */
	ck_assert_int_eq(ffs_flush(fs, fh2), 0);
	ck_assert_uint_eq(atomic_load(commits), c0);
	ck_assert_int_eq(ffs_release(fs, fh2), 0);
	ck_assert_int_eq(ffs_open(fs, ino2, O_RDWR, &fh2), 0);
	ck_assert_int_eq(ffs_flush(fs, fh2), 0);
	ck_assert_uint_eq(atomic_load(commits), c0 + 1);
	ck_assert_int_eq(ffs_release(fs, fh2), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

struct flusher {
	struct ffs *fs;
	uint64_t fh;
	int rc;
	_Atomic bool done;
};

static void *flush_main(void *arg)
{
	struct flusher *f = arg;

	f->rc = ffs_flush(f->fs, f->fh);
	atomic_store(&f->done, true);
	return NULL;
}

static struct ff_member *member(struct ffs *fs, unsigned m)
{
	return ff_raid_member(ffs_raid(fs), m);
}

/* The handshake instead of a sleep: wait until member m holds a request
 * its fault rule delays (io/fault.h), i.e. the operation being slowed is
 * in progress and cannot finish before the delay ends.  Each wait ends by
 * its timeout; 10 s in all is a failure. */
static void wait_held(struct ffs *fs, unsigned m)
{
	ck_assert_msg(ff_fault_wait_held(member(fs, m), FF_FAULT_ANY, 1, 10000) == 0,
		      "member %u held no delayed request within 10 s", m);
}

/* The same for whichever member is the first to hold one; returns it. */
static unsigned wait_held_any(struct ffs *fs)
{
	for (unsigned i = 0; i < 1000; i++) /* 1000 waits of 10 ms */
		if (ff_fault_wait_held(member(fs, i % NM), FF_FAULT_ANY, 1, 10) == 0)
			return i % NM;
	ck_abort_msg("no member held a delayed request within 10 s");
	return NM;
}

/*
 * A grow keeps what fallocate reserved: a file preallocated to 3 stripes
 * with its first half written, and one written for a stripe and
 * preallocated 2 more past its end (FALLOC_FL_KEEP_SIZE), keep at least
 * that many bytes allocated at the new width after the restripe (st_blocks),
 * read back as written, and take writes into the reserved range.  Before,
 * a preallocated stripe read as zeros and was left a hole, and one past the
 * end was dropped: the space fallocate promised was gone.
 */
START_TEST(grow_keeps_preallocation)
{
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes;
	const char *names[2] = { "prealloc", "prealloc_past_end" };
	const uint64_t size[2] = { 3 * S, S }, reserved[2] = { 3 * S, 3 * S };
	uint8_t *want[2], *zeros = calloc(1, 3 * S);
	char added[1][300];
	const char *add[1] = { added[0] }, *all[NM + 1];
	struct stat st;
	uint64_t fh;

	for (unsigned i = 0; i < 2; i++) {
		want[i] = calloc(1, 3 * S);
		create(fs, FFS_ROOT_INO, names[i], &fh);
		ck_assert_int_eq(ffs_fallocate(fs, fh, i ? FALLOC_FL_KEEP_SIZE : 0, 0, reserved[i]), 0);
		ut_fill(want[i], i ? S : S / 2);
		ck_assert_int_eq(ffs_write(fs, fh, want[i], i ? S : S / 2, 0), (ssize_t)(i ? S : S / 2));
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[i], &st), 0);
		ck_assert_uint_eq((uint64_t)st.st_size, size[i]);
		ck_assert_uint_ge((uint64_t)st.st_blocks * 512, reserved[i]);
		read_back(fs, names[i], want[i], size[i], "written");
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	added_members(1, added, all);
	ck_assert_msg(ffs_grow(ut_pp, NM, add, 1, false, true, &err) == 0, "grow: %s", err.msg);
	fs = remount_members(all, NM + 1, false);
	ck_assert_ptr_null(fs->orows);
	for (unsigned i = 0; i < 2; i++) {
		read_back(fs, names[i], want[i], size[i], "moved");
		ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[i], &st), 0);
		ck_assert_msg((uint64_t)st.st_blocks * 512 >= reserved[i],
			      "%s: %llu bytes allocated after the grow, %llu reserved", names[i],
			      (unsigned long long)st.st_blocks * 512, (unsigned long long)reserved[i]);
	}
	/* the reserved range takes writes and reads them back */
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0);
	ut_fill(want[1] + S, 2 * S);
	ck_assert_int_eq(ffs_write(fs, fh, want[1] + S, 2 * S, S), (ssize_t)(2 * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	read_back(fs, names[1], want[1], 3 * S, "written into its reservation");
	ck_assert_int_eq(ffs_unmount(fs), 0);
	for (unsigned i = 0; i < 2; i++)
		free(want[i]);
	free(zeros);
	ut_remove_members(NM); /* the added member too: it is in ut_dir */
}
END_TEST

/*
 * A change to a file still in the old geometry of a grown array moves the
 * file first (fs/grow/restripe.c, ffs_grow_move_now), in the writer's
 * thread, and the change lands in the new geometry.  RAID5 x 4 grown by
 * one (ffs_grow without its restripe), then each kind of change on its own
 * old file: a write into the middle, a truncation to a size not 0, a
 * fallocate past the end (the new reservation kept, the bytes the same),
 * an append to a file that was one tail.  On a volume too full to hold the
 * file at the new width the write fails with ENOSPC and the file stays
 * whole where it was; with room made (freed, not committed yet: the move
 * commits to take it) it goes through.  Each file reads back as changed,
 * its stat says the new width, the old rows are all gone at the next
 * commit, and a remount reads the same.
 */
START_TEST(grow_change_moves_the_old_file)
{
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes, S5 = S / 3 * 4;
	enum { MID, CUT, ALLOC, APPEND, BIG, NF };
	const char *names[NF] = { "mid", "cut", "alloc", "append", "big" };
	const uint64_t size[NF] = { 3 * S + S / 3, 4 * S + 100, 2 * S, S / 2, 64 * S };
	uint64_t now_size[NF], fh, filler_size = 0;
	uint8_t *want[NF];
	char added[1][300];
	const char *add[1] = { added[0] }, *all[NM + 1];
	struct stat st, a;

	for (unsigned i = 0; i < NF; i++) {
		want[i] = calloc(1, 64 * S);
		ut_fill(want[i], FF_ROUND_UP(size[i], 8));
		memset(want[i] + size[i], 0, 64 * S - size[i]);
		now_size[i] = size[i];
		create(fs, FFS_ROOT_INO, names[i], &fh);
		ck_assert_int_eq(ffs_write(fs, fh, want[i], size[i], 0), (ssize_t)size[i]);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	added_members(1, added, all);
	ck_assert_msg(ffs_grow(ut_pp, NM, add, 1, false, false, &err) == 0, "grow: %s", err.msg);
	fs = remount_members(all, NM + 1, false); /* takes the grow on: every file old */
	ck_assert_uint_gt(old_rows(fs), 20);
	ck_assert(fs->old_file_move != NULL);

	/* a write into the middle */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[MID], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, "middle", 6, S + 7), 6);
	memcpy(want[MID] + S + 7, "middle", 6);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	/* a truncation to a size not 0 */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[CUT], &st), 0);
	memset(&a, 0, sizeof(a));
	a.st_size = (off_t)(S + 5);
	ck_assert_int_eq(ffs_setattr(fs, st.st_ino, &a, FFS_SET_SIZE, &st), 0);
	memset(want[CUT] + S + 5, 0, 64 * S - (S + 5));
	now_size[CUT] = S + 5;
	/* a reservation past the end */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[ALLOC], &st), 0);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0);
	ck_assert_int_eq(ffs_fallocate(fs, fh, FALLOC_FL_KEEP_SIZE, 2 * S, 2 * S5), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	/* an append to a file that was one tail */
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[APPEND], &st), 0);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0);
	ut_fill(want[APPEND] + S / 2, 2 * S);
	ck_assert_int_eq(ffs_write(fs, fh, want[APPEND] + S / 2, 2 * S, S / 2), (ssize_t)(2 * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	now_size[APPEND] = S / 2 + 2 * S;
	for (unsigned i = 0; i < BIG; i++) {
		read_back(fs, names[i], want[i], now_size[i], "changed");
		ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[i], &st), 0);
		ck_assert_msg((uint64_t)st.st_blksize == S5, "%s: stripe %llu after its change",
			      names[i], (unsigned long long)st.st_blksize);
	}
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[ALLOC], &st), 0);
	ck_assert_uint_ge((uint64_t)st.st_blocks * 512, 2 * S + 2 * S5);

	/* too full to hold big at the new width (48 rows): a filler written
	 * to ENOSPC leaves the overwrite reserve free (alloc.c: fewer rows),
	 * which a move may take, as any overwrite; the write fails, big
	 * whole and old */
	{
		uint8_t *fill = malloc(S5);
		ssize_t n;

		memset(fill, 0x5a, S5);
		create(fs, FFS_ROOT_INO, "filler", &fh);
		/* ends: each write takes a row, and the volume has a finite number */
		while ((n = ffs_write(fs, fh, fill, S5, filler_size)) == (ssize_t)S5)
			filler_size += S5;
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		ck_assert_int_eq(ffs_sync(fs), 0);
		ck_assert_uint_gt(filler_size, 8 * S5);
		free(fill);
	}
	ck_assert_uint_lt(fs->free_stripes, 48);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[BIG], &st), 0);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, "full", 4, 5 * S), -ENOSPC);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[BIG], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S);
	read_back(fs, names[BIG], want[BIG], size[BIG], "a move refused for want of room");
	/* room made, its rows freed in the running transaction: the move
	 * commits to take them (restripe.c move_stripe), the write goes through */
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "filler"), 0);
	ck_assert_uint_lt(fs->free_stripes, 48);
	ck_assert_int_eq(ffs_write(fs, fh, "full", 4, 5 * S), 4);
	memcpy(want[BIG] + 5 * S, "full", 4);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[BIG], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S5);

	ck_assert_int_eq(ffs_sync(fs), 0); /* the moves' old rows leave the map at a commit */
	ck_assert_uint_eq(old_rows(fs), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	fs = remount_members(all, NM + 1, false);
	for (unsigned i = 0; i < NF; i++)
		read_back(fs, names[i], want[i], now_size[i], "remounted");
	ck_assert_int_eq(ffs_unmount(fs), 0);
	for (unsigned i = 0; i < NF; i++)
		free(want[i]);
	ut_remove_members(NM); /* the added member too: it is in ut_dir */
}
END_TEST

/*
 * A sequential reader with the read cache at its floor (8 stripes) and 4
 * stripes read ahead reads each stripe from the members once (rcache.c,
 * rc_victim): a read-ahead never evicts a stripe read ahead and not read
 * yet.  Before, each read-ahead evicted the next stripe to be read (72
 * stripe reads for these 40).  Both read paths: copied (ffs_read) and
 * pinned (ffs_read_ref), a cold cache each (remounted), every byte checked.
 */
START_TEST(read_ahead_keeps_what_it_read_ahead)
{
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes, nk = 40;
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 1,
			       .readahead_stripes = 4, .patch_cache_bytes = ut_patch_cache };
	struct ff_err err = { "" };
	uint8_t *want = malloc(nk * S), *got = malloc(S);
	struct stat st;
	uint64_t fh;

	ut_fill(want, nk * S);
	create(fs, FFS_ROOT_INO, "seq", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, want, nk * S, 0), (ssize_t)(nk * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	for (int pinned = 0; pinned < 2; pinned++) {
		uint64_t reads;

		ck_assert_int_eq(ffs_unmount(fs), 0);
		ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
		ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "seq", &st), 0);
		ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDONLY, &fh), 0);
		reads = atomic_load(&ffs_stats(fs)->stripe_reads);
		for (uint64_t k = 0; k < nk; k++) {
			if (pinned) {
				struct ffs_rref ref;
				size_t at = 0;

				ck_assert_int_eq(ffs_read_ref(fs, fh, S, k * S, 0, &ref), (ssize_t)S);
				for (unsigned i = 0; i < ref.n; i++) {
					memcpy(got + at, ref.iov[i].iov_base, ref.iov[i].iov_len);
					at += ref.iov[i].iov_len;
				}
				ffs_read_unref(fs, &ref);
			} else {
				ck_assert_int_eq(ffs_read(fs, fh, got, S, k * S, 0), (ssize_t)S);
			}
			ck_assert_msg(memcmp(got, want + k * S, S) == 0, "stripe %llu differs",
				      (unsigned long long)k);
		}
		reads = atomic_load(&ffs_stats(fs)->stripe_reads) - reads;
		ck_assert_msg(reads <= nk, "%s: %llu stripe reads for a file of %llu stripes",
			      pinned ? "ffs_read_ref" : "ffs_read", (unsigned long long)reads,
			      (unsigned long long)nk);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(want);
	free(got);
	ut_remove_members(NM);
}
END_TEST

/* The superblock copy A of these members as fsck finds it: no problem;
 * and with its checksum extension one chunk narrower than the width needs
 * (a grow ended or under way), a layout problem. */
static void check_super_clean(const char *const *list, unsigned n, const char *when)
{
	struct ffs_super *sb = ff_alloc_aligned(FFS_BLOCK);
	struct ff_err err = { "" };
	struct ffs *chk;
	const char *why;

	ck_assert_msg(ffs_check_open(list, n, true, 0, &chk, &err) == 0, "%s: %s", when, err.msg);
	ck_assert_int_eq(ffs_meta_read_check(chk, ffs_sb_block[0], FFS_B_SUPER, sb, true), 0);
	why = ffs_check_super_problem(chk, sb);
	ck_assert_msg(!why, "%s: fsck finds the superblock wrong: %s", when, why);
	if (ff_le32(sb->grow.state) != FFS_GROW_PREPARED && ff_le32(sb->grow.ext_width)) {
		sb->grow.ext_width = ff_cpu_to_le32(ff_le32(sb->grow.ext_width) - 1);
		why = ffs_check_super_problem(chk, sb);
		ck_assert_msg(why && strstr(why, "layout"), "%s: a narrow extension: %s", when,
			      why ? why : "(no problem)");
	}
	ck_assert_int_eq(ffs_check_close(chk), 0);
	free(sb);
}

/*
 * A volume grown once grows again: RAID5 x 4 grown to 5 (restripe run), a
 * file written at 5, then grown to 6.  Every file reads back as written
 * after each grow, the old rows are gone (fs->orows NULL), fsck finds the
 * superblock right after each, every file is 5 data chunks wide at the
 * end (moved twice, or once) and takes a write, and the second grow's
 * records took more of the pool's end (pool_cut grew; the extension is 2
 * chunks wide: 5 data chunks at 6 members, the table holds 3).
 */
START_TEST(grow_twice)
{
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes, S5 = S / 3 * 4, S6 = S / 3 * 5;
	const char *names[4] = { "made_at_4", "tail_at_4", "made_at_5", "tail_at_5" };
	const uint64_t size[4] = { 5 * S + S / 3, S / 2 + 4096, 4 * S5 + 8192, S5 / 2 + 4096 };
	uint8_t *want[4];
	char added[2][300];
	const char *add1[1] = { added[0] }, *add2[1] = { added[1] }, *all[NM + 2];
	uint64_t fh, cut1;
	struct stat st;

	for (unsigned i = 0; i < 4; i++) {
		want[i] = malloc(FF_ROUND_UP(size[i], 8));
		ut_fill(want[i], FF_ROUND_UP(size[i], 8));
	}
	for (unsigned i = 0; i < 2; i++) {
		create(fs, FFS_ROOT_INO, names[i], &fh);
		ck_assert_int_eq(ffs_write(fs, fh, want[i], size[i], 0), (ssize_t)size[i]);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	added_members(2, added, all);

	ck_assert_msg(ffs_grow(ut_pp, NM, add1, 1, false, true, &err) == 0, "grow 1: %s", err.msg);
	check_super_clean(all, NM + 1, "grown once");
	fs = remount_members(all, NM + 1, false);
	ck_assert_ptr_null(fs->orows);
	cut1 = ff_le64(fs->sb->grow.pool_cut);
	for (unsigned i = 0; i < 2; i++)
		read_back(fs, names[i], want[i], size[i], "grown once");
	for (unsigned i = 2; i < 4; i++) {
		create(fs, FFS_ROOT_INO, names[i], &fh);
		ck_assert_int_eq(ffs_write(fs, fh, want[i], size[i], 0), (ssize_t)size[i]);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[2], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_blksize, S5);
	ck_assert_int_eq(ffs_unmount(fs), 0);

	ck_assert_msg(ffs_grow(all, NM + 1, add2, 1, false, true, &err) == 0, "grow 2: %s", err.msg);
	check_super_clean(all, NM + 2, "grown twice");
	fs = remount_members(all, NM + 2, false);
	ck_assert_ptr_null(ff_raid_geom_old(ffs_raid(fs)));
	ck_assert_ptr_null(fs->orows);
	ck_assert_uint_eq(ff_le32(fs->sb->nmembers), NM + 2);
	ck_assert_uint_eq(ff_le32(fs->sb->grow.ext_width), 2);
	ck_assert_uint_gt(ff_le64(fs->sb->grow.pool_cut), cut1);
	for (unsigned i = 0; i < 4; i++) {
		read_back(fs, names[i], want[i], size[i], "grown twice");
		ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[i], &st), 0);
		ck_assert_uint_eq((uint64_t)st.st_blksize, S6);
	}
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, names[0], &st), 0);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDWR, &fh), 0); /* written again */
	ck_assert_int_eq(ffs_write(fs, fh, "moved", 5, 100), 5);
	memcpy(want[0] + 100, "moved", 5);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	{ /* every row laid over six members: readable without any one of them */
		const char *list[NM + 1];

		for (unsigned i = 0; i < NM + 1; i++)
			list[i] = all[i + 1];
		fs = remount_members(list, NM + 1, true);
		for (unsigned i = 0; i < 4; i++)
			read_back(fs, names[i], want[i], size[i], "grown twice, member 0 left out");
		ck_assert_int_eq(ffs_unmount(fs), 0);
	}
	for (unsigned i = 0; i < 4; i++)
		free(want[i]);
	ut_remove_members(NM); /* the added members too: they are in ut_dir */
}
END_TEST

/*
 * A second grow stopped after its records are written and before the
 * superblock names them (ffs_grow_records_write alone): the volume mounts
 * with every file, its first grow's records still named; the grow run
 * again from the start finishes, every file read back.
 */
START_TEST(grow_twice_stopped_before_the_superblock)
{
	struct ff_err err = { "" };
	struct ffs *fs = mkfs_mount(96, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes;
	const uint64_t size = 4 * S + S / 2;
	uint8_t *want = malloc(FF_ROUND_UP(size, 8)), *want2 = malloc(FF_ROUND_UP(size, 8));
	char added[2][300];
	const char *add1[1] = { added[0] }, *add2[1] = { added[1] }, *all[NM + 2];
	struct ffs_grow_rec rec, first;
	uint64_t fh;

	ut_fill(want, FF_ROUND_UP(size, 8));
	ut_fill(want2, FF_ROUND_UP(size, 8));
	create(fs, FFS_ROOT_INO, "made_at_4", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, want, size, 0), (ssize_t)size);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	added_members(2, added, all);
	ck_assert_msg(ffs_grow(ut_pp, NM, add1, 1, false, true, &err) == 0, "grow 1: %s", err.msg);
	fs = remount_members(all, NM + 1, false);
	create(fs, FFS_ROOT_INO, "made_at_5", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, want2, size, 0), (ssize_t)size);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_sync(fs), 0);
	first = fs->sb->grow;
	pthread_mutex_lock(&fs->lock);
	ck_assert_msg(ffs_grow_records_write(fs, NM + 2, &rec, &err) == 0, "%s", err.msg);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_uint_lt(ff_le64(rec.ext_start), ff_le64(first.ext_start));
	ck_assert_int_eq(memcmp(&fs->sb->grow, &first, sizeof(first)), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);

	check_super_clean(all, NM + 1, "second grow's records written, not named");
	fs = remount_members(all, NM + 1, false);
	ck_assert_int_eq(memcmp(&fs->sb->grow, &first, sizeof(first)), 0);
	read_back(fs, "made_at_4", want, size, "records written, not named");
	read_back(fs, "made_at_5", want2, size, "records written, not named");
	ck_assert_int_eq(ffs_unmount(fs), 0);

	ck_assert_msg(ffs_grow(all, NM + 1, add2, 1, false, true, &err) == 0, "grow 2: %s", err.msg);
	check_super_clean(all, NM + 2, "grown twice");
	fs = remount_members(all, NM + 2, false);
	ck_assert_ptr_null(fs->orows);
	read_back(fs, "made_at_4", want, size, "grown twice");
	read_back(fs, "made_at_5", want2, size, "grown twice");
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(want);
	free(want2);
	ut_remove_members(NM); /* the added members too: they are in ut_dir */
}
END_TEST

/*
 * Threads that end before their starter goes on.  test_fs is linked with
 * -Wl,--wrap=pthread_create (tests/unit/meson.build): while ut_ends_first
 * is set, pthread_create returns only after the new thread's function
 * returned, the order a loaded machine may give.  Set it only around the
 * start of a thread that ends on its own.
 */
static bool ut_ends_first;

int __real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);

struct ut_trampoline {
	void *(*fn)(void *);
	void *arg;
	sem_t done;
};

static void *ut_trampoline_main(void *a)
{
	struct ut_trampoline *t = a;
	void *ret = t->fn(t->arg);

	sem_post(&t->done);
	return ret;
}

int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
			  void *arg)
{
	struct ut_trampoline t = { .fn = fn, .arg = arg };
	int rc;

	if (!ut_ends_first)
		return __real_pthread_create(th, attr, fn, arg);
	sem_init(&t.done, 0, 0);
	rc = __real_pthread_create(th, attr, ut_trampoline_main, &t);
	/* ends when the thread's function returns (the caller's promise; a
	 * signal only repeats the wait) */
	while (rc == 0 && sem_wait(&t.done) < 0 && errno == EINTR)
		;
	sem_destroy(&t.done);
	return rc;
}

/*
 * A background thread that ends before pthread_create returns in its
 * starter (ut_ends_first) is not shown running after it ended: the
 * restripe of a grown volume with nothing to move says done, not active
 * (framefs-admin grow --wait polled an active state for ever: a CI run
 * timed out in grow-online's empty-volume case), and so does a scrub, whose
 * waiter returns.
 */
START_TEST(thread_ending_before_its_start_returns)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ffs_grow_status gs;
	struct ffs_scrub_status ss;
	struct ff_err err = { "" };
	char added[1][300];
	const char *add[1] = { added[0] }, *all[NM + 1];

	ut_ends_first = true;
	ck_assert_int_eq(ffs_scrub_start(fs, false), 0);
	ut_ends_first = false;
	ffs_scrub_status(fs, &ss);
	ck_assert_msg(!ss.active, "a scrub that ended is shown running");
	ffs_scrub_wait(fs, &ss);
	ck_assert_int_eq(ffs_unmount(fs), 0);

	added_members(1, added, all);
	ck_assert_msg(ffs_grow(ut_pp, NM, add, 1, false, false, &err) == 0, "grow: %s", err.msg);
	fs = remount_members(all, NM + 1, false);
	ut_ends_first = true;
	ck_assert_int_eq(ffs_grow_start(fs), 0);
	ut_ends_first = false;
	ffs_grow_status(fs, &gs);
	ck_assert_msg(!gs.active && gs.done && gs.error == 0,
		      "a restripe with nothing to move: active %d done %d error %d", gs.active,
		      gs.done, gs.error);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM); /* the added member too: it is in ut_dir */
}
END_TEST

/* A read-only close leaves a writer's error to the writer.  The writer
 * changes one byte of a stripe it wrote, so its buffer must be completed
 * from the old stripe when it goes out; that read fails (fault: EIO on
 * every data-area read of members 0 and 1: two chunks of each RAID5 x 4
 * stripe, beyond parity); a reader opens and closes the file meanwhile.
 * The reader's close answers 0 and leaves the buffer alone; the writer's
 * close answers EIO, and the stripe on disk is the one written before. */
START_TEST(reader_close_leaves_the_writers_error)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ff_geom *g = ff_raid_geom(ffs_raid(fs));
	struct ff_fault_rule bad = { .ops = FF_FAULT_READ, .error = EIO, .off_start = g->data_offset };
	size_t n = g->stripe_bytes;
	char *buf = malloc(n), *back = malloc(n);
	uint64_t w, r, ino;

	ck_assert(buf && back);
	memset(buf, 0x5a, n);
	ino = create(fs, FFS_ROOT_INO, "f", &w);
	ck_assert_int_eq(ffs_write(fs, w, buf, n, 0), (ssize_t)n);
	ck_assert_int_eq(ffs_flush(fs, w), 0);
	ck_assert_int_eq(ffs_write(fs, w, "x", 1, 100), 1);
	for (unsigned m = 0; m < 2; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &bad), 0);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &r), 0);
	ck_assert_int_eq(ffs_release(fs, r), 0);
	ck_assert_int_eq(ffs_flush(fs, w), -EIO);
	for (unsigned m = 0; m < 2; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_release(fs, w), 0); /* reported once */
	fs = remount(fs);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &r), 0);
	ck_assert_int_eq(ffs_read(fs, r, back, n, 0, 0), (ssize_t)n);
	ck_assert_int_eq(memcmp(back, buf, n), 0);
	ck_assert_int_eq(ffs_release(fs, r), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(buf);
	free(back);
	ut_remove_members(NM);
}
END_TEST

/* framefs-admin sync (ffs_settle) answers a write error and leaves it for
 * the writer's own flush: the same write as above, its fill failing (fault:
 * EIO on every data-area read of members 0 and 1); sync returns -EIO, and
 * so does the writer's close after it, once. */
START_TEST(settle_leaves_the_writers_error)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ff_geom *g = ff_raid_geom(ffs_raid(fs));
	struct ff_fault_rule bad = { .ops = FF_FAULT_READ, .error = EIO, .off_start = g->data_offset };
	size_t n = g->stripe_bytes;
	char *buf = malloc(n);
	uint64_t w;

	ck_assert(buf);
	memset(buf, 0x5a, n);
	create(fs, FFS_ROOT_INO, "f", &w);
	ck_assert_int_eq(ffs_write(fs, w, buf, n, 0), (ssize_t)n);
	ck_assert_int_eq(ffs_flush(fs, w), 0);
	ck_assert_int_eq(ffs_write(fs, w, "x", 1, 100), 1);
	for (unsigned m = 0; m < 2; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &bad), 0);
	ck_assert_int_eq(ffs_settle(fs), -EIO);
	ck_assert_int_eq(ffs_flush(fs, w), -EIO);
	for (unsigned m = 0; m < 2; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_flush(fs, w), 0); /* reported once */
	ck_assert_int_eq(ffs_release(fs, w), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(buf);
	ut_remove_members(NM);
}
END_TEST

/* A commit in flight does not hold the filesystem: while the journal
 * write of one close is held (fault: 1 s of latency on every member write;
 * the test waits until a member holds it), other operations — lookup,
 * create, getattr — complete before that commit does, and the create made
 * meanwhile is committed by the next transaction. */
START_TEST(commit_in_flight_lets_operations_run)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ff_fault_rule slow = { .ops = FF_FAULT_WRITE, .latency_us = 1000000 };
	struct flusher f = { .rc = -1 };
	struct ff_err err = { "" };
	_Atomic uint64_t *commits;
	uint64_t fh, c0;
	pthread_t t;
	struct stat st;
	unsigned m;

	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	commits = &ffs_stats(fs)->commits;
	create(fs, FFS_ROOT_INO, "slow", &f.fh); /* empty: its flush is the commit alone */
	for (m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	c0 = atomic_load(commits);
	f.fs = fs;
	ck_assert_int_eq(pthread_create(&t, NULL, flush_main, &f), 0);
	/* the close's commit is in flight: its journal write is held */
	m = wait_held_any(fs);
	ck_assert_uint_eq(atomic_load(commits), c0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "slow", &st), 0);
	create(fs, FFS_ROOT_INO, "meanwhile", &fh);
	ck_assert_int_eq(ffs_getattr(fs, st.st_ino, &st), 0);
	ck_assert_msg(!atomic_load(&f.done) && atomic_load(commits) == c0 &&
		      ff_fault_held(member(fs, m), FF_FAULT_ANY) >= 1,
		      "operations waited for the commit in flight");
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(f.rc, 0);
	ck_assert_uint_eq(atomic_load(commits), c0 + 1);
	for (m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_flush(fs, fh), 0); /* its create went to the next transaction */
	ck_assert_uint_eq(atomic_load(commits), c0 + 2);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_release(fs, f.fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "meanwhile", &st), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "slow", &st), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/*
 * Frees become reusable in order, whatever a reader's hold does meanwhile
 * (alloc.c: reuse hold).  Sequence: a reader holds reuse off; a truncation
 * frees 2 stripes and its commit ends while the hold is on (the frees are
 * durable, kept taken); the next commit starts (fault: 1 s of latency on
 * every member write holds it in flight); the hold ends, and the 2 stripes
 * become free; then the commit in flight ends.  That commit had counted the
 * 2 frees among its own: the daemon aborted (alloc.c FF_ASSERT n <=
 * npending), as a grow's restripe did when readers of files not moved yet
 * (which hold reuse off) met its commits.  Now it ends, and a remount has
 * every file.
 */
START_TEST(hold_ending_under_a_commit_in_flight)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const uint64_t S = ff_raid_geom(ffs_raid(fs))->stripe_bytes;
	struct ff_fault_rule slow = { .ops = FF_FAULT_WRITE, .latency_us = 1000000 };
	struct flusher f = { .rc = -1 };
	struct ff_err err = { "" };
	struct stat st, attr = { .st_size = 0 };
	uint8_t *buf = malloc(2 * S);
	uint64_t fh, ino;
	pthread_t t;

	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	ut_fill(buf, 2 * S);
	ino = create(fs, FFS_ROOT_INO, "cut", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, buf, 2 * S, 0), (ssize_t)(2 * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_sync(fs), 0);
	pthread_mutex_lock(&fs->lock);
	ffs_alloc_reuse_hold(fs); /* a reader's */
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(ffs_setattr(fs, ino, &attr, FFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(ffs_sync(fs), 0); /* the frees durable, under the hold */
	create(fs, FFS_ROOT_INO, "next", &f.fh); /* the next transaction */
	for (unsigned m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	f.fs = fs;
	ck_assert_int_eq(pthread_create(&t, NULL, flush_main, &f), 0);
	wait_held_any(fs); /* its journal write is held: the commit is in flight */
	pthread_mutex_lock(&fs->lock);
	ffs_alloc_reuse_release(fs); /* the reader is done: the 2 frees are reused */
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(f.rc, 0);
	for (unsigned m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_release(fs, f.fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "next", &st), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "cut", &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(buf);
	ut_remove_members(NM);
}
END_TEST

/* The flush that makes a commit's data durable before its records runs
 * with the filesystem let go, like the records' own write and flush: with
 * 1 s of latency on every member flush (fault: op=f), a close that wrote a
 * stripe of data takes two slow flushes, and lookup, create and getattr
 * made while every member holds the first one complete before it ends:
 * afterwards each member still holds a flush and no further flush has
 * reached a member. */
START_TEST(preflush_lets_operations_run)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ff_fault_rule slow = { .ops = FF_FAULT_FLUSH, .latency_us = 1000000 };
	struct flusher f = { .rc = -1 };
	struct ff_err err = { "" };
	const size_t len = 3 * 64 * 1024; /* one whole stripe of RAID5 over 4 */
	uint8_t *data = malloc(len), *back = malloc(len);
	uint64_t fh, fired = 0;
	pthread_t t;
	struct stat st;

	ck_assert_ptr_nonnull(data);
	ck_assert_ptr_nonnull(back);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	create(fs, FFS_ROOT_INO, "frame", &f.fh);
	ck_assert_int_eq(ffs_write(fs, f.fh, data, len, 0), (ssize_t)len);
	for (unsigned m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	f.fs = fs;
	ck_assert_int_eq(pthread_create(&t, NULL, flush_main, &f), 0);
	/* the flush before the records is in progress: every member holds it
	 * (a flush goes to every member) */
	for (unsigned m = 0; m < NM; m++) {
		wait_held(fs, m);
		fired += atomic_load(&member(fs, m)->fault->fired);
	}
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "frame", &st), 0);
	create(fs, FFS_ROOT_INO, "meanwhile", &fh);
	ck_assert_int_eq(ffs_getattr(fs, st.st_ino, &st), 0);
	for (unsigned m = 0; m < NM; m++) {
		ck_assert_msg(ff_fault_held(member(fs, m), FF_FAULT_ANY) >= 1,
			      "member %u's flush ended before the operations: they waited for it", m);
		fired -= atomic_load(&member(fs, m)->fault->fired);
	}
	ck_assert_msg(fired == 0, "another flush started: the operations waited for the first");
	ck_assert_msg(!atomic_load(&f.done), "the close ended before two slow flushes");
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(f.rc, 0);
	for (unsigned m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_release(fs, f.fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "meanwhile", &st), 0);
	ck_assert_int_eq(ffs_lookup(fs, FFS_ROOT_INO, "frame", &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)len);
	ck_assert_int_eq(ffs_open(fs, st.st_ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, len, 0, 0), (ssize_t)len);
	ck_assert_int_eq(memcmp(back, data, len), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
	free(data);
	free(back);
}
END_TEST

static void corrupt(const char *path, uint64_t off, size_t len)
{
	char junk[8192];
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_eq(pwrite(fd, junk, FF_MIN(len, sizeof(junk)), (off_t)off), (ssize_t)FF_MIN(len, sizeof(junk)));
	close(fd);
}

/*
 * A read that reaches a stripe it cannot read fails whole; it does not
 * return the bytes before that stripe.  To FUSE a short reply is the end
 * of the file: the kernel would cut the file's size there and every later
 * reader would see it shorter.  Fault: junk in data chunk 0 of file stripe
 * 1 and in its parity (RAID5 x 4: beyond what parity rebuilds).
 */
START_TEST(read_fails_whole_at_an_unreadable_stripe)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const uint64_t C = 64 * 1024, S = 3 * C;
	uint8_t *data = malloc(3 * S), *back = malloc(3 * S);
	const struct ff_geom *g;
	uint64_t fh, ino;
	uint32_t parity = 0xf;

	ck_assert(data && back);
	for (uint64_t i = 0; i < 3 * S; i++)
		data[i] = (uint8_t)(i * 29 + 5);
	ino = create(fs, FFS_ROOT_INO, "clip.mov", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, 3 * S, 0), (ssize_t)(3 * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	/* the first file of a fresh volume takes stripes 0, 1, 2 */
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, 3 * S, 0, 0), (ssize_t)(3 * S));
	ck_assert_int_eq(memcmp(back, data, 3 * S), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	g = ff_raid_geom(ffs_raid(fs)); /* the array's, freed at each unmount */
	for (uint32_t i = 0; i < g->ndata; i++)
		parity &= ~(1u << ff_raid_chunk_member(ffs_raid(fs), 1, i));
	corrupt(ut_paths[ff_raid_chunk_member(ffs_raid(fs), 1, 0)], g->data_offset + C + 4096, 4096);
	corrupt(ut_paths[__builtin_ctz(parity)], g->data_offset + C + 4096, 4096);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, 3 * S, 0, 0), -EIO);
	ck_assert_int_eq(ffs_read(fs, fh, back, 2 * S, 0, 0), -EIO);
	ck_assert_int_eq(ffs_read(fs, fh, back, S, 0, 0), (ssize_t)S); /* stripe 0 alone reads */
	ck_assert_int_eq(memcmp(back, data, S), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, S, 2 * S, 0), (ssize_t)S);
	ck_assert_int_eq(memcmp(back, data + 2 * S, S), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
	free(data);
	free(back);
}
END_TEST

/*
 * Reads straight into the caller's buffer (ffs_read_into, what a buffered
 * reader's request over io_uring gets: fuse_ops.c).  RAID5 x 4 at 64 KiB
 * chunks, a stripe of 192 KiB.  Whole chunks of plain stripes land in the
 * buffer (direct_reads: one per run of consecutive stripes), also from
 * inside a stripe, and up to inside a chunk when the buffer holds all of
 * it; anything else is -EAGAIN, never a wrong byte: a range off a chunk, a
 * last chunk the buffer cannot hold, a tail, a stripe in the cache, a
 * stripe with a write buffer.  A copying read with FFS_READ_KERNEL_AHEAD
 * reads nothing ahead, so the reads after it can go straight in again.
 * Fault: junk written into member 0's chunks
 * of the first stripes: the direct read refuses them (-EAGAIN) and counts
 * nothing, the cached read returns the right bytes and repairs, and after
 * a remount the same ranges read straight in again.
 */
START_TEST(read_into_takes_whole_clean_chunks)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const uint64_t C = 64 * 1024, S = 3 * C, len = 6 * S;
	uint8_t *data = malloc(len + S), *back = malloc(len), *buf = ff_alloc_aligned(3 * S);
	_Atomic uint64_t *direct;
	const struct ff_geom *g;
	unsigned refused = 0;
	uint64_t fh, tfh, ino, tino, ra;

	ck_assert(data && back && buf);
	for (uint64_t i = 0; i < len + S; i++)
		data[i] = (uint8_t)(i * 131 + (i >> 16));
	ino = create(fs, FFS_ROOT_INO, "clip.mov", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	tino = create(fs, FFS_ROOT_INO, "tailed.mov", &fh); /* a stripe and a tail */
	ck_assert_int_eq(ffs_write(fs, fh, data, S + 20000, 0), (ssize_t)(S + 20000));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	direct = &ffs_stats(fs)->direct_reads;
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);

	/* two whole stripes, laid one after the other: one engine read */
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, 2 * S, 0), (ssize_t)(2 * S));
	ck_assert_int_eq(memcmp(buf, data, 2 * S), 0);
	ck_assert_uint_eq(atomic_load(direct), 1);
	/* from chunk 1 of stripe 2 to chunk 0 of stripe 3 */
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, S, 2 * S + C), (ssize_t)S);
	ck_assert_int_eq(memcmp(buf, data + 2 * S + C, S), 0);
	ck_assert_uint_eq(atomic_load(direct), 2);
	/* 100 KiB ends inside chunk 1: the buffer must hold all of chunk 1 */
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 100 * 1024, 100 * 1024, 0), -EAGAIN);
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 2 * C, 100 * 1024, 0), 100 * 1024);
	ck_assert_int_eq(memcmp(buf, data, 100 * 1024), 0);
	/* off a chunk; past the end; the end clips the range */
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, C, 4096), -EAGAIN);
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, C, len), 0);
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, 2 * S, len - S), (ssize_t)S);
	ck_assert_int_eq(memcmp(buf, data + len - S, S), 0);
	/* the tail: not a stripe of its own */
	ck_assert_int_eq(ffs_open(fs, tino, O_RDONLY, &tfh), 0);
	ck_assert_int_eq(ffs_read_into(fs, tfh, buf, 3 * S, S, 0), (ssize_t)S);
	ck_assert_int_eq(memcmp(buf, data, S), 0);
	ck_assert_int_eq(ffs_read_into(fs, tfh, buf, 3 * S, 2 * S, S), -EAGAIN);
	ck_assert_int_eq(ffs_release(fs, tfh), 0);
	/* a buffered reader's copying read puts its stripe in the cache and
	 * reads nothing ahead (the kernel does that for it) */
	ra = atomic_load(&ffs_stats(fs)->readahead);
	ck_assert_int_eq(ffs_read(fs, fh, back, C, 3 * S, FFS_READ_KERNEL_AHEAD), (ssize_t)C);
	ck_assert_uint_eq(atomic_load(&ffs_stats(fs)->readahead), ra);
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, S, 3 * S), -EAGAIN);
	/* stripe 4 in the cache, read by an O_DIRECT reader's copying read:
	 * that one reads ahead, on into the stripes after the file (tailed.mov's,
	 * for playback of a sequence) */
	ck_assert_int_eq(ffs_read(fs, fh, back, C, 4 * S, 0), (ssize_t)C);
	ck_assert_uint_gt(atomic_load(&ffs_stats(fs)->readahead), ra);
	ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, S, 4 * S), -EAGAIN);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	/* a write buffer on tailed.mov's stripe 0 (its copy of clip.mov's) */
	ck_assert_int_eq(ffs_open(fs, tino, O_RDWR, &tfh), 0);
	ck_assert_int_eq(ffs_write(fs, tfh, data + len, 4096, 8192), 4096);
	ck_assert_int_eq(ffs_read_into(fs, tfh, buf, 3 * S, S, 0), -EAGAIN);
	ck_assert_int_eq(ffs_read(fs, tfh, back, S, 0, 0), (ssize_t)S);
	ck_assert_int_eq(memcmp(back + 8192, data + len, 4096), 0);
	ck_assert_int_eq(memcmp(back, data, 8192), 0);
	ck_assert_int_eq(ffs_release(fs, tfh), 0);

	/* fault: junk in member 0's chunk of the first 8 stripes (data or parity) */
	fs = remount(fs);
	direct = &ffs_stats(fs)->direct_reads;
	g = ff_raid_geom(ffs_raid(fs));
	for (uint64_t p = 0; p < 8; p++)
		corrupt(ut_paths[0], g->data_offset + p * C + 4096, 4096);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	for (uint64_t off = 0; off < len; off += S) {
		ssize_t n = ffs_read_into(fs, fh, buf, 3 * S, S, off);

		if (n == -EAGAIN)
			refused++;
		else
			ck_assert_int_eq(memcmp(buf, data + off, S), 0);
	}
	ck_assert_uint_ge(refused, 1);
	ck_assert_uint_eq(atomic_load(direct), 6 - refused);
	ck_assert_uint_eq(atomic_load(&ffs_stats(fs)->crc_errors), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, len, 0, 0), (ssize_t)len);
	ck_assert_int_eq(memcmp(back, data, len), 0);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_repaired), refused);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	for (uint64_t off = 0; off < len; off += S) {
		ck_assert_int_eq(ffs_read_into(fs, fh, buf, 3 * S, S, off), (ssize_t)S);
		ck_assert_int_eq(memcmp(buf, data + off, S), 0);
	}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
	free(data);
	free(back);
	free(buf);
}
END_TEST

/* What an unwaited read's completions left (read_into_async_replies). */
struct async_seen {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned done, calls[8];
	ssize_t res[8];
	uint64_t fh[8];
};

static void async_seen_done(void *priv, ssize_t res, uint64_t fh, size_t size, uint64_t off)
{
	struct async_seen *a = priv;
	unsigned i = (unsigned)(off / (3 * 64 * 1024));

	(void)size;
	pthread_mutex_lock(&a->lock);
	if (i < 8) {
		a->res[i] = res;
		a->fh[i] = fh;
		a->calls[i]++;
	}
	a->done++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

/* ends: every read submitted has its one completion (the engine completes
 * every read it took); the test fails on a completion that never comes by
 * its own timeout */
static void async_seen_wait(struct async_seen *a, unsigned n)
{
	pthread_mutex_lock(&a->lock);
	while (a->done < n)
		pthread_cond_wait(&a->cond, &a->lock);
	pthread_mutex_unlock(&a->lock);
}

/*
 * Reads into the caller's buffer that no thread waits for
 * (ffs_read_into_async, what a buffered reader's request over io_uring
 * gets when replies may come from any thread: fuse_ops.c).  RAID5 x 4 at
 * 64 KiB chunks.  Six stripes read at once, each into its own buffer: each
 * completion comes once, with the request's handle and the bytes, and
 * direct_reads_unwaited counts them.  At once, with no completion: -EAGAIN
 * for a range off a chunk.  Past the end: a completion with 0.  Fault:
 * junk in member 0's chunk of stripe 2 (data there): that read's completion
 * brings -EAGAIN (the caller reads through the cache, which repairs) and
 * the others their bytes.
 */
START_TEST(read_into_async_replies)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const uint64_t C = 64 * 1024, S = 3 * C, len = 6 * S;
	uint8_t *data = malloc(len), *back = malloc(len), *buf = ff_alloc_aligned(len);
	struct async_seen a = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	_Atomic uint64_t *unwaited;
	const struct ff_geom *g;
	uint64_t fh, ino;

	ck_assert(data && back && buf);
	for (uint64_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 151 + (i >> 16));
	ino = create(fs, FFS_ROOT_INO, "clip.mov", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	unwaited = &ffs_stats(fs)->direct_reads_unwaited;
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);

	for (uint64_t k = 0; k < 6; k++)
		ck_assert_int_eq(ffs_read_into_async(fs, fh, buf + k * S, S, S, k * S, async_seen_done, &a), 0);
	async_seen_wait(&a, 6);
	for (unsigned k = 0; k < 6; k++) {
		ck_assert_uint_eq(a.calls[k], 1);
		ck_assert_int_eq(a.res[k], (ssize_t)S);
		ck_assert_uint_eq(a.fh[k], fh);
	}
	ck_assert_int_eq(memcmp(buf, data, len), 0);
	ck_assert_uint_eq(atomic_load(unwaited), 6);
	ck_assert_uint_eq(atomic_load(&ffs_stats(fs)->direct_reads), 6);

	/* off a chunk: refused at once, no completion */
	ck_assert_int_eq(ffs_read_into_async(fs, fh, buf, S, C, 4096, async_seen_done, &a), -EAGAIN);
	/* past the end: a completion with nothing read (here, at once) */
	ck_assert_int_eq(ffs_read_into_async(fs, fh, buf, S, S, len + 2 * S, async_seen_done, &a), 0);
	async_seen_wait(&a, 7);
	ck_assert_uint_eq(a.done, 7);
	ck_assert_int_eq(ffs_release(fs, fh), 0);

	/* fault: junk in member 0's chunk of stripe 2 */
	fs = remount(fs);
	unwaited = &ffs_stats(fs)->direct_reads_unwaited;
	g = ff_raid_geom(ffs_raid(fs));
	corrupt(ut_paths[0], g->data_offset + 2 * C + 4096, 4096);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	memset(&a.calls, 0, sizeof(a.calls));
	a.done = 0;
	memset(buf, 0, len);
	for (uint64_t k = 0; k < 6; k++)
		ck_assert_int_eq(ffs_read_into_async(fs, fh, buf + k * S, S, S, k * S, async_seen_done, &a), 0);
	async_seen_wait(&a, 6);
	for (unsigned k = 0, bad = 0; k < 6; k++) {
		ck_assert_uint_eq(a.calls[k], 1);
		if (a.res[k] == -EAGAIN) {
			bad++;
			ck_assert_uint_le(bad, 1);
		} else {
			ck_assert_int_eq(a.res[k], (ssize_t)S);
			ck_assert_int_eq(memcmp(buf + k * S, data + k * S, S), 0);
		}
	}
	ck_assert_uint_eq(atomic_load(unwaited), 5);
	/* the caller's way on: the cache, which repairs */
	ck_assert_int_eq(ffs_read(fs, fh, back, len, 0, 0), (ssize_t)len);
	ck_assert_int_eq(memcmp(back, data, len), 0);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_repaired), 1);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
	free(data);
	free(back);
	free(buf);
}
END_TEST

/*
 * The data path's pools (write buffers, read cache, the engine's parity
 * and scratch buffers) stay writable across a fork.  libfuse forks
 * /bin/mount -f after the volume is mounted (to update mtab), and a fork
 * leaves every private page of the parent write-protected until it is
 * written again: one page fault per 4 KiB of pool, on the data path, for
 * every page of every pool (76,000 on a default mount).
 * Here: a fork after the mount, then 32 full stripes written, flushed and
 * read back; the process may take a few faults (metadata blocks touched the
 * first time, thread stacks) but not one per page of the stripes it moved
 * (3,116 before).  Then 1024 overwrites of 4 KiB fsync'd every 16: the tail
 * slots' stripe images are a pool too, and the journal's staging buffer
 * does not move as transactions grow (182 faults before, 33 after).
 */
#ifdef __SANITIZE_ADDRESS__
#define OVERWRITE_FAULTS_MAX 400 /* AddressSanitizer's shadow and quarantine fault too: 136 seen */
#else
#define OVERWRITE_FAULTS_MAX (1024 / 10)
#endif
START_TEST(pools_stay_writable_across_a_fork)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const uint64_t S = 3 * 64 * 1024, len = 32 * S;
	uint8_t *data = malloc(len), *back = malloc(len);
	struct rusage a, b;
	uint64_t fh, pages = len / 4096;
	long faults;
	int status;
	pid_t pid;

	ck_assert(data && back);
	for (uint64_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 37 + (i >> 12));
	create(fs, FFS_ROOT_INO, "warm.dpx", &fh); /* metadata blocks in use once */
	ck_assert_int_eq(ffs_write(fs, fh, data, S, 0), (ssize_t)S);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	memset(back, 0, len); /* the test's own buffer, writable again */
	create(fs, FFS_ROOT_INO, "after_fork.dpx", &fh);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &a), 0);
	ck_assert_int_eq(ffs_write(fs, fh, data, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, len, 0, 0), (ssize_t)len);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &b), 0);
	faults = b.ru_minflt - a.ru_minflt;
	ck_assert_int_eq(memcmp(back, data, len), 0);
	ck_assert_msg(faults < (long)(pages / 8), "%ld page faults to write and read %lu pages",
		      faults, (unsigned long)pages);
	/* an editor's database: 4 KiB overwrites, fsync'd every 16 (patches in
	 * tail stripes, commits of every size up to the largest) */
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &a), 0);
	for (unsigned i = 0; i < 1024; i++) {
		uint64_t blk = (i * 2654435761u) % pages;

		ck_assert_int_eq(ffs_write(fs, fh, data + blk * 4096, 4096, blk * 4096), 4096);
		if (i % 16 == 15)
			ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	}
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &b), 0);
	faults = b.ru_minflt - a.ru_minflt;
	ck_assert_msg(faults < OVERWRITE_FAULTS_MAX, "%ld page faults for 1024 overwrites of 4 KiB",
		      faults);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
	free(data);
	free(back);
}
END_TEST

/*
 * fsck's chunk windows (fs/volume/check.c): every copy of four raw-written META
 * blocks reads back through them; a block written after its window was
 * read reads back new; and when one block of a chunk cannot be read (fault:
 * EIO on reads of that block's copy 1 only), the chunk's other blocks still
 * read from copy 1 and the bad one gives its error, while copy 2 has it.
 */
START_TEST(check_runs_follow_writes)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ff_geom *g = ff_raid_geom(ffs_raid(fs));
	const struct ffs_super *sb = ffs_tools_super(fs);
	/* the pool's last whole chunk: free, nothing of the mount reads it */
	uint64_t x = (ff_le64(sb->pool_start) + ff_le64(sb->pool_blocks)) / FFS_CHECK_RUN_BLOCKS *
		     FFS_CHECK_RUN_BLOCKS - FFS_CHECK_RUN_BLOCKS;
	uint64_t chunk = x / FFS_CHECK_RUN_BLOCKS, idx = chunk * g->meta_copies; /* copy 1 (raid/meta.c) */
	struct ff_fault_rule eio = { .ops = FF_FAULT_READ, .error = EIO };
	uint8_t *a = ff_alloc_aligned(4 * FFS_BLOCK), *b = ff_alloc_aligned(FFS_BLOCK);
	uint8_t *got = ff_alloc_aligned(FFS_BLOCK);
	struct ffs_check_runs runs;
	unsigned m = (unsigned)(idx % g->nmembers);

	ck_assert_uint_ge(x, ff_le64(sb->pool_start));
	ck_assert_int_eq(ffs_check_runs_init(fs, &runs), 0);
	for (unsigned i = 0; i < 4; i++)
		memset(a + i * FFS_BLOCK, 0x11 * (int)(i + 1), FFS_BLOCK);
	memset(b, 0xb5, FFS_BLOCK);
	ck_assert_int_eq(ffs_meta_write_raw(fs, x, a, 4), 0);
	for (unsigned k = 1; k <= g->meta_copies; k++)
		for (unsigned i = 0; i < 4; i++) {
			ck_assert_int_eq(ffs_check_run_read(fs, &runs, x + i, k, got), 0);
			ck_assert_msg(memcmp(got, a + i * FFS_BLOCK, FFS_BLOCK) == 0, "copy %u block %u", k, i);
		}
	/* every copy's window holds the chunk now: a write must not be hidden by it */
	ck_assert_int_eq(ffs_meta_write_raw(fs, x + 1, b, 1), 0);
	for (unsigned k = 1; k <= g->meta_copies; k++) {
		ck_assert_int_eq(ffs_check_run_read(fs, &runs, x + 1, k, got), 0);
		ck_assert_msg(memcmp(got, b, FFS_BLOCK) == 0, "copy %u kept the old image", k);
	}
	/* fault: EIO on reads of block x + 2 of copy 1, on the member holding that copy */
	eio.off_start = g->meta_offset + idx / g->nmembers * FF_META_CHUNK + 2 * FFS_BLOCK;
	eio.off_end = eio.off_start + FFS_BLOCK;
	ck_assert_int_eq(ff_fault_add(member(fs, m), &eio), 0);
	ck_assert_int_eq(ffs_meta_write_raw(fs, x + 3, b, 1), 0); /* the windows are read again */
	ck_assert_int_lt(ffs_check_run_read(fs, &runs, x + 2, 1, got), 0);
	ck_assert_int_eq(ffs_check_run_read(fs, &runs, x + 3, 1, got), 0);
	ck_assert(memcmp(got, b, FFS_BLOCK) == 0);
	ck_assert_int_eq(ffs_check_run_read(fs, &runs, x, 1, got), 0);
	ck_assert(memcmp(got, a, FFS_BLOCK) == 0);
	ck_assert_int_eq(ffs_check_run_read(fs, &runs, x + 2, 2, got), 0);
	ck_assert(memcmp(got, a + 2 * FFS_BLOCK, FFS_BLOCK) == 0);
	ck_assert_uint_ge(atomic_load(&member(fs, m)->fault->fired), 2); /* the chunk, then the block */
	ff_fault_clear(member(fs, m));
	ffs_check_runs_free(&runs);
	free(a);
	free(b);
	free(got);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* The extent mapping file stripe k of inode ino (fs->lock: internals). */
static struct ffs_extent extent_of(struct ffs *fs, uint64_t ino, uint64_t k)
{
	struct ffs_extent x;
	struct finode *fi;

	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(ffs_iget(fs, ino, &fi), 0);
	ck_assert_int_eq(ffs_extent_find(fs, fi, k, &x), 0);
	ffs_iput(fs, fi);
	pthread_mutex_unlock(&fs->lock);
	return x;
}

/* Data stripe of file stripe k of inode ino (not a tail). */
static uint64_t stripe_of(struct ffs *fs, uint64_t ino, uint64_t k)
{
	struct ffs_extent x = extent_of(fs, ino, k);

	ck_assert(!(ff_le32(x.flags) & FFS_X_TAIL));
	return ff_le64(x.pstripe) + (k - ff_le64(x.fstripe));
}

struct reader {
	struct ffs *fs;
	uint64_t fh;
	uint8_t *buf;
	size_t n;
	ssize_t rc;
};

static void *read_main(void *arg)
{
	struct reader *r = arg;

	r->rc = ffs_read(r->fs, r->fh, r->buf, r->n, 0, 0);
	return NULL;
}

/*
 * A read racing an overwrite gets the file's bytes, old or new, never
 * another file's.  The read of file a's stripe is in flight (fault: 1 s of
 * latency on every data-area read; the test waits until a member holds it)
 * when a is overwritten whole (copy-on-write: its old stripe is freed and,
 * once committed, free for anyone) and files b, c, ... are written until
 * one of them takes that stripe.  The read must then give a's bytes.
 */
START_TEST(read_racing_reuse_gets_its_file)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ff_geom *g = ff_raid_geom(ffs_raid(fs));
	struct ff_fault_rule slow = { .ops = FF_FAULT_READ, .latency_us = 1000000,
				      .off_start = g->data_offset };
	size_t n = g->stripe_bytes;
	uint8_t *old = malloc(n), *new = malloc(n), *other = malloc(n);
	struct reader r = { .fs = fs, .n = n, .buf = malloc(n) };
	uint64_t a, w, fh, p, taker = 0;
	pthread_t t;

	ck_assert(old && new && other && r.buf);
	memset(old, 0xaa, n);
	memset(new, 0xa2, n);
	memset(other, 0xbb, n);
	a = create(fs, FFS_ROOT_INO, "a", &w);
	ck_assert_int_eq(ffs_write(fs, w, old, n, 0), (ssize_t)n);
	ck_assert_int_eq(ffs_fsync(fs, w, false), 0);
	p = stripe_of(fs, a, 0);
	fs = remount(fs); /* nothing of a in any cache */
	r.fs = fs;
	ck_assert_int_eq(ffs_open(fs, a, O_RDWR, &w), 0);
	ck_assert_int_eq(ffs_open(fs, a, O_RDONLY, &r.fh), 0);
	for (unsigned m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, read_main, &r), 0);
	wait_held_any(fs); /* a's stripe is being read */
	ck_assert_int_eq(ffs_write(fs, w, new, n, 0), (ssize_t)n);
	ck_assert_int_eq(ffs_fsync(fs, w, false), 0);
	ck_assert_uint_ne(stripe_of(fs, a, 0), p);
	/* the allocator moves on from its last stripe: a's old one comes round
	 * again once the ones after it are taken (the volume holds < 4096) */
	for (unsigned i = 0; i < 4096 && !taker; i++) {
		char name[16];
		uint64_t ino;

		snprintf(name, sizeof(name), "b%u", i);
		ino = create(fs, FFS_ROOT_INO, name, &fh);
		ck_assert_int_eq(ffs_write(fs, fh, other, n, 0), (ssize_t)n);
		ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		if (stripe_of(fs, ino, 0) == p)
			taker = ino;
	}
	ck_assert_msg(taker, "no file took a's old stripe %llu", (unsigned long long)p);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	for (unsigned m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(r.rc, (ssize_t)n);
	ck_assert_msg(memcmp(r.buf, old, n) == 0 || memcmp(r.buf, new, n) == 0,
		      "the read of a gave bytes 0x%02x, not a's (another file's: 0xbb)", r.buf[0]);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->reads_again), 1); /* it saw the map move */
	ck_assert_int_eq(ffs_release(fs, r.fh), 0);
	ck_assert_int_eq(ffs_release(fs, w), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(old);
	free(new);
	free(other);
	free(r.buf);
	ut_remove_members(NM);
}
END_TEST

/* While a reader holds reuse off (alloc.c; data.c's last try), a stripe
 * whose free a commit made durable stays taken; the last hold's release
 * gives it back. */
START_TEST(reuse_hold_keeps_freed_stripes)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	size_t n = ff_raid_geom(ffs_raid(fs))->stripe_bytes;
	uint8_t *buf = malloc(n);
	uint64_t a, w, p, nfree;

	ck_assert(buf);
	memset(buf, 0x3c, n);
	a = create(fs, FFS_ROOT_INO, "a", &w);
	ck_assert_int_eq(ffs_write(fs, w, buf, n, 0), (ssize_t)n);
	ck_assert_int_eq(ffs_fsync(fs, w, false), 0);
	p = stripe_of(fs, a, 0);
	pthread_mutex_lock(&fs->lock);
	ffs_alloc_reuse_hold(fs);
	ffs_alloc_reuse_hold(fs);
	nfree = fs->free_stripes;
	pthread_mutex_unlock(&fs->lock);
	memset(buf, 0x3d, n);
	ck_assert_int_eq(ffs_write(fs, w, buf, n, 0), (ssize_t)n); /* a new stripe; p freed */
	ck_assert_int_eq(ffs_fsync(fs, w, false), 0);
	ck_assert_int_eq(ffs_fsync(fs, w, false), 0);
	ck_assert_uint_ne(stripe_of(fs, a, 0), p);
	pthread_mutex_lock(&fs->lock);
	ck_assert(ffs_stripe_in_use(fs, p));
	ck_assert_uint_eq(fs->free_stripes, nfree - 1); /* the new one taken, p not back */
	ffs_alloc_reuse_release(fs);
	ck_assert(ffs_stripe_in_use(fs, p)); /* one hold left */
	ffs_alloc_reuse_release(fs);
	ck_assert(!ffs_stripe_in_use(fs, p));
	ck_assert_uint_eq(fs->free_stripes, nfree);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(ffs_release(fs, w), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	free(buf);
	ut_remove_members(NM);
}
END_TEST

/* Silent corruption on the members — a data chunk, a parity chunk, one
 * mirror copy of a metadata block — is found by scrub, repaired, and the
 * damaged file is reported by name; the file then reads back intact. */
START_TEST(scrub_finds_and_repairs)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ffs_scrub_past past[FFS_SCRUB_HISTORY_MAX];
	struct ffs_scrub_status st;
	uint64_t found[3];
	const struct ff_geom *g;
	static uint8_t data[1 << 20], back[1 << 20];
	struct stat dst;
	uint64_t fh, ino;
	unsigned m;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 131 + (i >> 9));
	ck_assert_int_eq(ffs_mkdir(fs, FFS_ROOT_INO, "seq", 0755, 0, 0, &dst), 0);
	ino = create(fs, dst.st_ino, "frame001.dpx", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, sizeof(data), 0), (ssize_t)sizeof(data));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	g = ff_raid_geom(ffs_raid(fs));
	/* fault: 4 KiB of junk in data chunk 0 of stripe 0 (the file's first stripe) */
	m = ff_raid_chunk_member(ffs_raid(fs), 0, 0);
	corrupt(ut_paths[m], g->data_offset + 4096, 4096);
	/* fault: junk in the parity chunk of stripe 1 (the member that holds no data chunk) */
	{
		uint32_t used = 0;

		for (unsigned i = 0; i < g->ndata; i++)
			used |= 1u << ff_raid_chunk_member(ffs_raid(fs), 1, i);
		m = (unsigned)__builtin_ctz(~used);
		corrupt(ut_paths[m], g->data_offset + g->chunk_bytes + 4 * 4096, 4096);
	}
	/* fault: junk in copy 0 of metadata block 0 (superblock A, on member 0) */
	corrupt(ut_paths[0], g->meta_offset + 512, 512);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_ge(st.chunks_bad, 1);
	ck_assert_uint_eq(st.chunks_repaired, st.chunks_bad);
	ck_assert_uint_ge(st.parity_bad, 1);
	ck_assert_uint_eq(st.parity_repaired, st.parity_bad);
	ck_assert_uint_ge(st.meta_bad, 1);
	ck_assert_uint_eq(st.meta_repaired, st.meta_bad);
	ck_assert_uint_ge(st.nreport, 1);
	ck_assert_uint_eq(st.report[0].ino, ino);
	ck_assert(st.report[0].repaired);
	ck_assert_str_eq(st.report[0].path, "/seq/frame001.dpx");
	found[0] = st.chunks_bad;
	found[1] = st.parity_bad;
	found[2] = st.meta_bad;
	/* a second scrub finds nothing; the file reads back as written */
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.chunks_bad + st.parity_bad + st.meta_bad, 0);
	fs = remount(fs);
	/* both are in the history after the remount, newest first */
	ck_assert_uint_eq(ffs_scrub_history(fs, past), 2);
	ck_assert_uint_eq(past[0].seq, 2);
	ck_assert_uint_eq(past[0].chunks_bad + past[0].parity_bad + past[0].meta_bad, 0);
	ck_assert_uint_eq(past[1].seq, 1);
	ck_assert(past[1].repair && past[1].result == FFS_SCRUB_DONE);
	ck_assert_uint_eq(past[1].chunks_bad, found[0]);
	ck_assert_uint_eq(past[1].chunks_repaired, found[0]);
	ck_assert_uint_eq(past[1].parity_bad, found[1]);
	ck_assert_uint_eq(past[1].parity_repaired, found[1]);
	ck_assert_uint_eq(past[1].meta_bad, found[2]);
	ck_assert_uint_eq(past[1].meta_repaired, found[2]);
	ck_assert_uint_le(past[1].start_s, past[1].end_s);
	ck_assert_uint_ge(past[1].stripes_checked, 1);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, sizeof(back), 0, 0), (ssize_t)sizeof(back));
	ck_assert_int_eq(memcmp(data, back, sizeof(data)), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* The scrub history is a ring of the 8 newest, kept across remounts; a
 * nonsense record (fsck clears it) is left out and its slot reused in
 * turn. */
START_TEST(scrub_history_ring)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct ffs_scrub_past past[FFS_SCRUB_HISTORY_MAX];
	struct ffs_scrub_record bad;
	unsigned n;

	ck_assert_uint_eq(ffs_scrub_history(fs, past), 0);
	for (unsigned i = 0; i < 10; i++) {
		ck_assert_int_eq(ffs_scrub_start(fs, i % 2), 0);
		ffs_scrub_wait(fs, NULL);
	}
	fs = remount(fs);
	n = ffs_scrub_history(fs, past);
	ck_assert_uint_eq(n, FFS_SCRUB_HISTORY_MAX);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_eq(past[i].seq, 10 - i);
		ck_assert(past[i].repair == (past[i].seq % 2 == 0)); /* scrub i + 1 repaired when i odd */
		ck_assert(past[i].result == FFS_SCRUB_DONE);
	}
	/* seq 10 (slot 1) ends before it starts: not shown, seq 11 goes to slot 2 */
	memcpy(&bad, &ffs_tools_super(fs)->scrub_history.rec[1], sizeof(bad));
	ck_assert_uint_eq(ff_le64(bad.seq), 10);
	bad.start_s = ff_cpu_to_le64(ff_le64(bad.end_s) + 1);
	ffs_tools_set_scrub_record(fs, 1, &bad);
	ck_assert_ptr_nonnull(ffs_scrub_record_problem(ffs_tools_super(fs), 1));
	ck_assert_uint_eq(ffs_scrub_history(fs, past), 7);
	ck_assert_uint_eq(past[0].seq, 9);
	ck_assert_int_eq(ffs_scrub_start(fs, false), 0);
	ffs_scrub_wait(fs, NULL);
	fs = remount(fs);
	n = ffs_scrub_history(fs, past);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(past[0].seq, 11);
	ck_assert_uint_eq(past[1].seq, 9);
	ck_assert_uint_eq(past[6].seq, 4);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* Pool block of byte 0 of small file ino (fs->lock taken: internals). */
static uint64_t small_block(struct ffs *fs, uint64_t ino, bool *home_stale)
{
	struct finode *fi;
	uint64_t no;

	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(ffs_iget(fs, ino, &fi), 0);
	ck_assert(ffs_is_small(fi));
	no = ff_le64(ffs_tools_super(fs)->pool_start) + ff_le32(fi->d.u.small.block[0]);
	ffs_iput(fs, fi);
	*home_stale = ffs_meta_home_stale(fs, no);
	pthread_mutex_unlock(&fs->lock);
	return no;
}

/* Where copy k of META block no is: its member, and *off there (raid/meta.c). */
static unsigned meta_copy_at(const struct ff_geom *g, uint64_t no, unsigned k, uint64_t *off)
{
	uint64_t per = FF_META_CHUNK / FFS_BLOCK, idx = no / per * g->meta_copies + k;

	*off = g->meta_offset + idx / g->nmembers * FF_META_CHUNK + no % per * FFS_BLOCK;
	return (unsigned)(idx % g->nmembers);
}

/* Small-file data has no block header: scrub settles its copies by the pcsum
 * table.  A block whose newest image waits in the journal (committed, not
 * yet checkpointed) is left alone whatever its home copies hold, as the
 * checkpoint writes them; once home, a bad copy is repaired from the good
 * one; freed, its copies may differ (nothing reads them). */
START_TEST(scrub_small_data)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	static uint8_t data[FFS_BLOCK], back[FFS_BLOCK];
	struct ff_err err = { "" };
	struct ffs_scrub_status st;
	uint64_t fh, ino, no, off;
	bool stale;
	unsigned m;
	int fd;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 29 + 7);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	ino = create(fs, FFS_ROOT_INO, "clip.xmp", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, sizeof(data), 0), (ssize_t)sizeof(data));
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0); /* committed; the checkpoint is not due */
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	no = small_block(fs, ino, &stale);
	ck_assert(stale);
	/* fault: junk in one home copy, which holds no live data yet */
	m = meta_copy_at(ffs_tools_geom(fs), no, 1, &off);
	corrupt(ut_paths[m], off, FFS_BLOCK);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.meta_bad, 0);

	fs = remount(fs); /* the checkpoint at unmount writes both copies */
	ck_assert_uint_eq(small_block(fs, ino, &stale), no);
	ck_assert(!stale);
	/* fault: junk in copy 0 of the block, now home */
	m = meta_copy_at(ffs_tools_geom(fs), no, 0, &off);
	corrupt(ut_paths[m], off, FFS_BLOCK);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.meta_bad, 1);
	ck_assert_uint_eq(st.meta_repaired, 1);
	fd = open(ut_paths[m], O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, back, sizeof(back), (off_t)off), (ssize_t)sizeof(back));
	close(fd);
	ck_assert_int_eq(memcmp(back, data, sizeof(data)), 0);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.meta_bad, 0);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, sizeof(back), 0, 0), (ssize_t)sizeof(back));
	ck_assert_int_eq(memcmp(back, data, sizeof(data)), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);

	/* fault: junk in one copy of the block once the file is gone: a free
	 * block, its old bytes there without a header */
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "clip.xmp"), 0);
	fs = remount(fs);
	corrupt(ut_paths[m], off, FFS_BLOCK);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.meta_bad, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A checksum mismatch on an ordinary read is repaired on the spot: the
 * reader gets the right bytes (rebuilt from parity) and the chunk is
 * rewritten. */
START_TEST(read_repairs_bad_chunk)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ff_geom *g;
	static uint8_t data[512 * 1024], back[512 * 1024];
	uint64_t fh, ino;
	unsigned m;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	ino = create(fs, FFS_ROOT_INO, "clip.mov", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, sizeof(data), 0), (ssize_t)sizeof(data));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	g = ff_raid_geom(ffs_raid(fs));
	/* fault: junk in data chunk 1 of stripe 0 */
	m = ff_raid_chunk_member(ffs_raid(fs), 0, 1);
	corrupt(ut_paths[m], g->data_offset + 8192, 4096);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, back, sizeof(back), 0, 0), (ssize_t)sizeof(back));
	ck_assert_int_eq(memcmp(data, back, sizeof(data)), 0);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_errors), 1);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_repaired), 1);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/*
 * The write-buffer pool's progress rule (fs/data/wbuf.c): 12 writers each write a
 * file of 96 stripes (past WB_PER_INODE) in 1 MiB pieces in a shuffled
 * order, as FUSE hands out concurrent O_DIRECT pieces, and four of them
 * share one more file, while one member takes 2 or 10 ms per write (fault:
 * op=w,lat_ms=2|10), so that stripe writes pile up in flight.  Run with a pool
 * larger than WB_PER_INODE (a file reaches its cap with every buffer in
 * flight: this spun forever holding the file's lock before) and with the
 * smallest pool and read cache (8 stripes each: exhaustion is the normal
 * case).  Every write must complete — a deadlock ends in the test's
 * timeout — and every byte read back, before and after a remount.
 */
#define POOL_WRITERS 12
#define POOL_PIECE (1u << 20)

struct pool_writer {
	struct ffs *fs;
	uint64_t fh, fh_shared;
	unsigned id, npieces;
};

static uint8_t piece_byte(uint64_t file, uint64_t off)
{
	return (uint8_t)((off >> 12) * 31 + file * 7 + (off & 0xfff));
}

static void piece_fill(uint8_t *b, uint64_t file, uint64_t off)
{
	for (size_t i = 0; i < POOL_PIECE; i++)
		b[i] = piece_byte(file, off + i);
}

static void *pool_writer_main(void *arg)
{
	struct pool_writer *w = arg;
	uint8_t *b = malloc(POOL_PIECE);
	unsigned order[64];
	uint64_t seed = w->id * 2654435761u + 1;

	ck_assert_ptr_nonnull(b);
	for (unsigned i = 0; i < w->npieces; i++)
		order[i] = i;
	for (unsigned i = w->npieces - 1; i > 0; i--) { /* a seeded shuffle */
		unsigned j, t;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		j = (unsigned)(seed >> 33) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < w->npieces; i++) {
		uint64_t off = (uint64_t)order[i] * POOL_PIECE;

		piece_fill(b, w->id, off);
		ck_assert_int_eq(ffs_write(w->fs, w->fh, b, POOL_PIECE, off), POOL_PIECE);
		if (w->id < 4 && order[i] % 4 == w->id) { /* the shared file: each its quarter */
			piece_fill(b, POOL_WRITERS, off);
			ck_assert_int_eq(ffs_write(w->fs, w->fh_shared, b, POOL_PIECE, off), POOL_PIECE);
		}
	}
	free(b);
	return NULL;
}

static void pool_check_file(struct ffs *fs, uint64_t ino, uint64_t file, uint64_t len)
{
	uint8_t *b = malloc(POOL_PIECE);
	uint64_t fh;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	for (uint64_t off = 0; off < len; off += POOL_PIECE) {
		ck_assert_int_eq(ffs_read(fs, fh, b, POOL_PIECE, off, 0), POOL_PIECE);
		for (size_t i = 0; i < POOL_PIECE; i++)
			if (b[i] != piece_byte(file, off + i))
				ck_abort_msg("file %llu: byte %llu differs", (unsigned long long)file,
					     (unsigned long long)(off + i));
	}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	free(b);
}

/* Every writer's file, and the shared one when all four of its writers ran. */
static void pool_check_all(struct ffs *fs, const uint64_t *ino, unsigned nwriters, unsigned npieces)
{
	for (unsigned i = 0; i < nwriters; i++)
		pool_check_file(fs, ino[i], i, (uint64_t)npieces * POOL_PIECE);
	if (nwriters >= 4)
		pool_check_file(fs, ino[POOL_WRITERS], POOL_WRITERS, (uint64_t)npieces * POOL_PIECE);
}

/* Until *counter is nonzero (true) or timeout_ms passed (false).  A bounded
 * poll, 1 ms apart: the counter has no condition variable to wait on. */
static bool wait_nonzero(_Atomic uint64_t *counter, unsigned timeout_ms)
{
	struct timespec ms = { 0, 1000000 };

	for (unsigned i = 0; i < timeout_ms && !atomic_load(counter); i++)
		nanosleep(&ms, NULL);
	return atomic_load(counter) != 0;
}

static void pool_run(size_t pool_bytes, unsigned nwriters, unsigned lat_us)
{
	struct ffs_mkfs_params p = { .level = 5, .chunk_bytes = 64 * 1024, .quiet = true };
	struct ffs_opts o = { .write_buffer_bytes = pool_bytes, .read_cache_bytes = 1 };
	struct ff_fault_rule slow = { .ops = FF_FAULT_WRITE, .latency_us = lat_us };
	struct pool_writer w[POOL_WRITERS];
	pthread_t t[POOL_WRITERS];
	uint64_t ino[POOL_WRITERS + 1], fh_shared;
	struct ff_err err = { "" };
	struct ffs *fs;
	char name[32];
	const unsigned npieces = 18; /* 96 stripes of 192 KiB */

	ut_make_members(NM, 160);
	ck_assert_msg(ffs_mkfs(ut_pp, NM, &p, &err) == 0, "mkfs: %s", err.msg);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	ck_assert_int_eq(ff_fault_add(ff_raid_member(ffs_raid(fs), 1), &slow), 0);
	ino[POOL_WRITERS] = create(fs, FFS_ROOT_INO, "shared.mov", &fh_shared);
	for (unsigned i = 0; i < nwriters; i++) {
		snprintf(name, sizeof(name), "frame%02u.dpx", i);
		ino[i] = create(fs, FFS_ROOT_INO, name, &w[i].fh);
		w[i].fs = fs;
		w[i].fh_shared = fh_shared;
		w[i].id = i;
		w[i].npieces = npieces;
	}
	for (unsigned i = 0; i < nwriters; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, pool_writer_main, &w[i]), 0);
	if (pool_bytes != 1) {
		/* A handshake, not a race with the clock: member writes stay slow
		 * until the writer has been seen waiting at its file's cap (it
		 * must get there: every write it starts is held), then go fast. */
		ck_assert_int_eq(ff_fault_wait_held(ff_raid_member(ffs_raid(fs), 1), 0, 1, 30000), 0);
		ck_assert_msg(wait_nonzero(&ffs_stats(fs)->wbuf_wait_inode, 30000),
			      "the writer never waited at its file's buffer cap");
		ff_fault_clear(ff_raid_member(ffs_raid(fs), 1));
	}
	for (unsigned i = 0; i < nwriters; i++)
		pthread_join(t[i], NULL);
	for (unsigned i = 0; i < nwriters; i++)
		ck_assert_int_eq(ffs_release(fs, w[i].fh), 0);
	ck_assert_int_eq(ffs_release(fs, fh_shared), 0);
	ff_fault_clear(ff_raid_member(ffs_raid(fs), 1));
	/* the run went through the waits it is about, not around them */
	if (pool_bytes == 1)
		ck_assert_uint_gt(atomic_load(&ffs_stats(fs)->wbuf_wait_pool), 0);
	else
		ck_assert_uint_gt(atomic_load(&ffs_stats(fs)->wbuf_wait_inode), 0);
	pool_check_all(fs, ino, nwriters, npieces);
	fs = remount(fs);
	pool_check_all(fs, ino, nwriters, npieces);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}

START_TEST(pool_past_per_file_cap_progress)
{
	/* 213 buffers, one writer, member writes held 2 s until the writer has
	 * waited at WB_PER_INODE (pool_run's handshake), then fast */
	pool_run(40 << 20, 1, 2000000);
}
END_TEST

START_TEST(smallest_pool_many_writers_progress)
{
	pool_run(1, POOL_WRITERS, 2000);
}
END_TEST

static uint64_t pool_used(struct ffs *fs)
{
	uint64_t n = 0, blocks = ff_le64(ffs_tools_super(fs)->pool_blocks);

	for (uint64_t i = 0; i < blocks; i++)
		n += ffs_tools_bit(fs, FFS_TOOLS_POOL, i);
	return n;
}

/* fs/meta/xattr.c: values up to FFS_XATTR_INLINE_MAX stay inline; a larger one
 * goes to value blocks (a version 4 volume reads them: its version stays);
 * replacing or removing a value gives its blocks back; 65537 bytes is
 * E2BIG. */
/* The request times (fs/base/watch.c): counts, sums and maxima exact,
 * percentiles the upper edge of their bucket (within 19%, never past the
 * maximum); a request's waits of one kind summed into one time; a reset
 * zeroes; pairs beyond the table are counted as dropped, not kept. */
static const struct ffs_req_time *time_row(const struct ffs_req_time *t, unsigned n, const char *op,
					   const char *wait)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(t[i].op, op) && (wait ? t[i].wait && !strcmp(t[i].wait, wait) : !t[i].wait))
			return &t[i];
	return NULL;
}

START_TEST(request_times)
{
	static struct ffs_req_time t[FFS_REQ_TIME_ROWS];
	static char ops[FFS_REQ_TIME_ROWS + 8][8];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	const struct ffs_req_time *r;
	struct ffs_req_slot *slot;
	const char *prev;
	uint64_t dropped, sum = 0;
	unsigned n;

	/* 1..1000 microseconds: p50 500 us, p90 900, p99 990, max 1000 */
	for (uint64_t us = 1; us <= 1000; us++) {
		ffs_times_add(fs, "op-a", NULL, us * 1000);
		sum += us * 1000;
	}
	n = ffs_req_times(fs, t, FFS_REQ_TIME_ROWS, &dropped);
	r = time_row(t, n, "op-a", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->count, 1000);
	ck_assert_uint_eq(r->sum_ns, sum);
	ck_assert_uint_eq(r->max_ns, 1000000);
	ck_assert_msg(r->p50_ns >= 500000 && r->p50_ns <= 500000 * 119 / 100, "p50 %llu",
		      (unsigned long long)r->p50_ns);
	ck_assert_msg(r->p90_ns >= 900000 && r->p90_ns <= 900000 * 119 / 100, "p90 %llu",
		      (unsigned long long)r->p90_ns);
	ck_assert_msg(r->p99_ns >= 990000 && r->p99_ns <= 1000000, "p99 %llu",
		      (unsigned long long)r->p99_ns);
	ck_assert_uint_eq(dropped, 0);

	/* one request with two waits of one kind and one of another */
	slot = ffs_req_begin(fs, "op-b", 1);
	ck_assert_ptr_nonnull(slot);
	for (int i = 0; i < 2; i++) {
		prev = ffs_watch_wait_begin("wait-x");
		usleep(2000);
		ffs_watch_wait_end(prev);
	}
	prev = ffs_watch_wait_begin("wait-y");
	ffs_watch_wait_end(prev);
	ffs_req_end(slot);
	n = ffs_req_times(fs, t, FFS_REQ_TIME_ROWS, &dropped);
	r = time_row(t, n, "op-b", "wait-x");
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->count, 1);
	ck_assert_uint_ge(r->sum_ns, 4000000);
	ck_assert_ptr_nonnull(time_row(t, n, "op-b", "wait-y"));
	r = time_row(t, n, "op-b", NULL);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->count, 1);
	ck_assert_uint_ge(r->sum_ns, 4000000);

	/* a reset zeroes: no row has a count */
	ffs_req_times_reset(fs);
	ck_assert_uint_eq(ffs_req_times(fs, t, FFS_REQ_TIME_ROWS, &dropped), 0);

	/* more pairs than rows: the table keeps what fits, counts the rest */
	for (unsigned i = 0; i < FFS_REQ_TIME_ROWS + 8; i++) {
		snprintf(ops[i], sizeof(ops[i]), "o%u", i);
		ffs_times_add(fs, ops[i], NULL, 1000);
	}
	n = ffs_req_times(fs, t, FFS_REQ_TIME_ROWS, &dropped);
	ck_assert_uint_eq(n, FFS_REQ_TIME_ROWS - 4); /* op-a, op-b and its two waits hold rows */
	ck_assert_uint_eq(dropped, 12);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

START_TEST(xattr_value_blocks)
{
	static uint8_t v[FFS_XATTR_VALUE_MAX + 1], r[FFS_XATTR_VALUE_MAX];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t fh, ino = create(fs, FFS_ROOT_INO, "f", &fh), base;

	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (uint8_t)(i * 7 + i / 251);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "user.inline", v, FFS_XATTR_INLINE_MAX, 0), 0);
	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->version), FFS_VERSION);
	base = pool_used(fs);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "user.big", v, FFS_XATTR_VALUE_MAX + 1, 0), -E2BIG);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "user.big", v, FFS_XATTR_VALUE_MAX, 0), 0);
	/* mkfs writes a version that reads chains: not raised, never lowered */
	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->version), FFS_VERSION);
	ck_assert_uint_ge(FFS_VERSION, FFS_VERSION_XVALUE);
	ck_assert_uint_eq(pool_used(fs), base + FFS_XVALUE_BLOCKS_MAX);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "user.big", v + 1, FFS_XVALUE_BYTES + 1, XATTR_REPLACE), 0);
	ck_assert_uint_eq(pool_used(fs), base + 2);
	fs = remount(fs);
	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->version), FFS_VERSION);
	ck_assert_int_eq(ffs_getxattr(fs, ino, "user.big", r, sizeof(r)), FFS_XVALUE_BYTES + 1);
	ck_assert_int_eq(memcmp(r, v + 1, FFS_XVALUE_BYTES + 1), 0);
	ck_assert_int_eq(ffs_getxattr(fs, ino, "user.inline", r, sizeof(r)), FFS_XATTR_INLINE_MAX);
	ck_assert_int_eq(memcmp(r, v, FFS_XATTR_INLINE_MAX), 0);
	ck_assert_int_eq(ffs_removexattr(fs, ino, "user.big"), 0);
	ck_assert_uint_eq(pool_used(fs), base);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* ---- the small-data class (fs/meta/small.c) -------------------------------------- */

static void fill_pattern(uint8_t *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i * 31 + seed * 7 + i / 4093);
}

static void check_content(struct ffs *fs, uint64_t ino, const uint8_t *want, size_t n)
{
	static uint8_t got[2 << 20];
	struct stat st;
	uint64_t fh;

	ck_assert_uint_le(n + 1, sizeof(got));
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)n);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_read(fs, fh, got, n + 1, 0, 0), (ssize_t)n);
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		if (got[i] == want[i])
			continue;
		while (j < n && got[j] != want[j])
			j++;
		ck_abort_msg("bytes [%zu, %zu) differ, from block %zu + %zu: got %02x, want %02x", i, j,
			     i / FFS_BLOCK, i % FFS_BLOCK, got[i], want[i]);
	}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
}

static uint64_t stripes_free(struct ffs *fs)
{
	struct statvfs sv;

	ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
	return sv.f_bfree;
}

/* The blocks new data may still take: the free ones less the overwrite
 * reserve (alloc.c). */
static uint64_t blocks_available(struct ffs *fs)
{
	struct statvfs sv;

	ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
	ck_assert_uint_eq(sv.f_bfree - sv.f_bavail,
			  FF_MIN(sv.f_bfree, ffs_overwrite_reserve(fs) *
						     (ffs_tools_geom(fs)->stripe_bytes / sv.f_frsize)));
	return sv.f_bavail;
}

/* Files below small_max take pool blocks (one per 4 KiB, a 4096-byte file
 * one block), never a stripe; they read back across a remount; deleting
 * them gives the blocks back. */
START_TEST(small_files_take_pool_blocks)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, 4097, 30000, 65536 };
	static uint8_t b[65536];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t ino[FF_ARRAY_SIZE(sizes)], fh, base, blocks = 0, free0;
	char name[16];

	create(fs, FFS_ROOT_INO, "first", &fh); /* the directory's tree node is made */
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	base = pool_used(fs);

	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->small_max), FFS_SMALL_DEFAULT);
	free0 = stripes_free(fs);
	for (unsigned i = 0; i < FF_ARRAY_SIZE(sizes); i++) {
		snprintf(name, sizeof(name), "s%u", i);
		ino[i] = create(fs, FFS_ROOT_INO, name, &fh);
		fill_pattern(b, sizes[i], i);
		ck_assert_int_eq(ffs_write(fs, fh, b, sizes[i], 0), (ssize_t)sizes[i]);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		blocks += (sizes[i] + 4095) / 4096;
	}
	ck_assert_uint_eq(ffs_stats(fs)->stripe_writes, 0);
	ck_assert_uint_eq(stripes_free(fs), free0);
	ck_assert_uint_eq(pool_used(fs), base + blocks);
	fs = remount(fs);
	for (unsigned i = 0; i < FF_ARRAY_SIZE(sizes); i++) {
		struct stat st;

		fill_pattern(b, sizes[i], i);
		check_content(fs, ino[i], b, sizes[i]);
		ck_assert_int_eq(ffs_getattr(fs, ino[i], &st), 0);
		ck_assert_int_eq(st.st_blocks, (blkcnt_t)((sizes[i] + 4095) / 4096 * 8));
	}
	for (unsigned i = 0; i < FF_ARRAY_SIZE(sizes); i++) {
		snprintf(name, sizeof(name), "s%u", i);
		ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, name), 0);
	}
	ck_assert_uint_eq(pool_used(fs), base);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A small file that grows by appends, each closed, moves to stripes once:
 * when it passes small_max; a sparse write past stripe 0 moves one at once;
 * fallocate does too.  Every byte survives each move and a remount.  (On
 * version 4 the growing file leaves the pool for a packed tail: a move too.) */
START_TEST(small_file_moves_to_stripes_once)
{
	static uint8_t want[1 << 20];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t fh, ino = create(fs, FFS_ROOT_INO, "grows", &fh), ino2, ino3, size = 0;
	uint64_t stripe = ff_le64(ffs_tools_super(fs)->stripe_bytes);

	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fill_pattern(want, sizeof(want), 3);
	while (size < 300000) { /* 7000-byte appends, a close after each */
		ck_assert_int_eq(ffs_open(fs, ino, O_WRONLY, &fh), 0);
		ck_assert_int_eq(ffs_write(fs, fh, want + size, 7000, size), 7000);
		ck_assert_int_eq(ffs_release(fs, fh), 0);
		size += 7000;
		ck_assert_uint_eq(ffs_stats(fs)->small_promotions, size > FFS_SMALL_DEFAULT ? 1 : 0);
	}
	check_content(fs, ino, want, size);

	/* small, then a write past stripe 0: stripe 0 moves first */
	ino2 = create(fs, FFS_ROOT_INO, "sparse", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, want, 5000, 0), 5000);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_open(fs, ino2, O_WRONLY, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, want + stripe, 100, stripe), 100);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(ffs_stats(fs)->small_promotions, 2);

	/* small, then fallocate */
	ino3 = create(fs, FFS_ROOT_INO, "falloc", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, want, 9000, 0), 9000);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_open(fs, ino3, O_WRONLY, &fh), 0);
	ck_assert_int_eq(ffs_fallocate(fs, fh, 0, 0, 2 * stripe), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(ffs_stats(fs)->small_promotions, 3);

	fs = remount(fs);
	check_content(fs, ino, want, size);
	{
		static uint8_t sp[2 << 20];

		memset(sp, 0, sizeof(sp));
		memcpy(sp, want, 5000);
		memcpy(sp + stripe, want + stripe, 100);
		check_content(fs, ino2, sp, stripe + 100);
		memset(sp, 0, sizeof(sp));
		memcpy(sp, want, 9000);
		check_content(fs, ino3, sp, 2 * stripe);
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

static void set_size(struct ffs *fs, uint64_t ino, uint64_t size)
{
	struct stat attr = { .st_size = (off_t)size }, st;

	ck_assert_int_eq(ffs_setattr(fs, ino, &attr, FFS_SET_SIZE, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)size);
}

/* Truncating a small file keeps it small, frees the blocks past the new
 * size and zeroes the rest of the last one: growing it again reads zeros;
 * truncating it to 0 gives every block back; growing one by truncate past
 * small_max keeps the bytes it had. */
START_TEST(small_file_truncate)
{
	static uint8_t want[200000];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t fh, ino, base, promoted;

	fill_pattern(want, sizeof(want), 5);
	ino = create(fs, FFS_ROOT_INO, "t", &fh);
	base = pool_used(fs); /* with the directory's tree node */
	ck_assert_int_eq(ffs_write(fs, fh, want, 20000, 0), 20000);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(pool_used(fs), base + 5);
	set_size(fs, ino, 5000);
	ck_assert_uint_eq(pool_used(fs), base + 2);
	set_size(fs, ino, 12000);
	memset(want + 5000, 0, 7000);
	check_content(fs, ino, want, 12000);
	promoted = ffs_stats(fs)->small_promotions;
	set_size(fs, ino, 150000); /* past small_max, by truncate: nothing to move */
	memset(want + 12000, 0, 150000 - 12000);
	fs = remount(fs);
	check_content(fs, ino, want, 150000);
	ck_assert_uint_eq(ffs_stats(fs)->small_promotions, promoted);
	set_size(fs, ino, 0);
	ck_assert_uint_eq(pool_used(fs), base);
	ck_assert_uint_eq(ffs_stats(fs)->stripe_writes, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* When small data would take the pool's reserve for trees and xattrs,
 * small files go to stripes instead (small_nospc), and directories still
 * grow: nothing fails while stripes are free. */
START_TEST(small_files_leave_the_pool_reserve)
{
	static uint8_t b[65536];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .ninodes = 4096 });
	uint64_t pool, fh, ino[1200];
	unsigned n;

	pool = ff_le64(ffs_tools_super(fs)->pool_blocks);
	/* 64 KiB files: 16 blocks each, more than the pool holds */
	n = (unsigned)FF_MIN(pool / 16 + 40, FF_ARRAY_SIZE(ino));
	ck_assert_uint_lt(pool / 16 + 40, FF_ARRAY_SIZE(ino));
	for (unsigned i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = create(fs, FFS_ROOT_INO, name, &fh);
		fill_pattern(b, sizeof(b), i);
		ck_assert_int_eq(ffs_write(fs, fh, b, sizeof(b), 0), (ssize_t)sizeof(b));
		ck_assert_int_eq(ffs_release(fs, fh), 0);
	}
	ck_assert_uint_gt(ffs_stats(fs)->small_nospc, 0);
	/* to the data area: stripes, or tails in shared stripes (version 4) */
	ck_assert_uint_gt(ffs_stats(fs)->stripe_writes + ffs_stats(fs)->tail_writes, 0);
	ck_assert_uint_ge(pool - pool_used(fs), pool / 16 - 16);
	fs = remount(fs);
	for (unsigned i = 0; i < n; i++) {
		fill_pattern(b, sizeof(b), i);
		check_content(fs, ino[i], b, sizeof(b));
	}
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A sidecar of len bytes written to a volume without the class takes a
 * stripe, or on version 4 a tail in a tail stripe, and reads back: its inode. */
static uint64_t sidecar_takes_a_stripe(struct ffs *fs, const char *data, size_t len)
{
	uint64_t fh, ino;

	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->small_max), 0);
	ino = create(fs, FFS_ROOT_INO, "x", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, data, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(ffs_stats(fs)->small_stores, 0);
	/* a stripe of its own, or (version 4) one opened as a tail stripe */
	ck_assert_uint_eq(ffs_stats(fs)->stripe_writes + ffs_stats(fs)->tail_stripes, 1);
	check_content(fs, ino, (const uint8_t *)data, len);
	return ino;
}

/* mkfs with the class off (FFS_SMALL_OFF): small_max 0, files take stripes
 * as before the class. */
START_TEST(small_class_off)
{
	static const char data[] = "sidecar";
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .small_max = FFS_SMALL_OFF });

	sidecar_takes_a_stripe(fs, data, sizeof(data));
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A volume of version 2 (made before the class) mounts and works: small
 * files take stripes there, as they always did, and it stays version 2. */
START_TEST(small_class_absent_on_version_2)
{
	static const char data[] = "an old volume's sidecar";
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_XVALUE });
	uint64_t ino;

	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->version), FFS_VERSION_XVALUE);
	ck_assert_uint_eq(ffs_tools_super(fs)->pcsum_blocks, 0);
	ino = sidecar_takes_a_stripe(fs, data, sizeof(data));
	fs = remount(fs);
	check_content(fs, ino, (const uint8_t *)data, sizeof(data));
	ck_assert_uint_eq(ff_le32(ffs_tools_super(fs)->version), FFS_VERSION_XVALUE);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* On a volume whose stripes are all taken, a small file still fits (its
 * buffer is made without a stripe); a file that turns out larger than
 * small_max gets its ENOSPC when it is written out (flush), and the volume
 * takes it once space is freed. */
START_TEST(small_file_fits_a_full_volume)
{
	static uint8_t b[1 << 20];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t fh, big, side, fat;
	ssize_t w = 0;

	big = create(fs, FFS_ROOT_INO, "big", &fh);
	fill_pattern(b, sizeof(b), 9);
	for (uint64_t off = 0; (w = ffs_write(fs, fh, b, sizeof(b), off)) > 0; off += (uint64_t)w)
		;
	ck_assert_int_eq(w, -ENOSPC);
	ck_assert_int_eq(ffs_release(fs, fh), 0); /* the write said it */
	ck_assert_uint_eq(blocks_available(fs), 0); /* the reserve is for overwrites */

	side = create(fs, FFS_ROOT_INO, "._big", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, b, 4096, 0), 4096);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	check_content(fs, side, b, 4096);

	fat = create(fs, FFS_ROOT_INO, "fat", &fh);
	ck_assert_int_eq(ffs_write(fs, fh, b, 100000, 0), 100000);
	ck_assert_int_eq(ffs_flush(fs, fh), -ENOSPC);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "big"), 0);
	ffs_forget(fs, big, 1); /* the create's lookup */
	/* the unmount waits for the completion thread's last reference to the
	 * big file, after which its stripes are free (the remount shows it) */
	fs = remount(fs);
	ck_assert_uint_gt(blocks_available(fs), 0);
	ck_assert_int_eq(ffs_open(fs, fat, O_WRONLY, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, b, 100000, 0), 100000);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	check_content(fs, side, b, 4096);
	check_content(fs, fat, b, 100000);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* ---- packed tails (fs/data/tail.c) ---------------------------------------------------- */

/* Whole stripes free (statfs counts in f_frsize units). */
static uint64_t whole_stripes_free(struct ffs *fs)
{
	struct statvfs sv;

	ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
	return sv.f_bfree * sv.f_frsize / ffs_tools_geom(fs)->stripe_bytes;
}

/* Write a file of len bytes (pattern seed), closed: its inode. */
static uint64_t put_file(struct ffs *fs, const char *name, uint8_t *b, size_t len, unsigned seed)
{
	uint64_t fh, ino = create(fs, FFS_ROOT_INO, name, &fh);

	fill_pattern(b, len, seed);
	ck_assert_int_eq(ffs_write(fs, fh, b, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	return ino;
}

/*
 * On a full volume, a file's stripes that a punched hole or a truncation
 * gave up are its to take back: the hole written again, then the file
 * truncated to 0 and written again at its size (a save with O_TRUNC), both
 * succeed and read back after a remount; no more than it gave up: a stripe
 * rewritten gives nothing up, and a file truncated and written again
 * shorter still cannot grow past what it gave.  Before, the hole's
 * write-back was refused with ENOSPC (this test stopped there), as was
 * full-volume-overwrites' O_TRUNC save (seed 6: RAID5 x 6, 512 KiB
 * chunks): the file's tail shares a tail stripe with other files' tails,
 * so giving it up frees no stripe, while writing it again needs one, and
 * new data may not take the overwrite reserve.
 */
START_TEST(truncated_file_takes_its_stripes_back)
{
	static uint8_t b[1 << 20], want[1 << 20];
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, len = 4 * S + S / 2, fh, proj, footage;
	uint64_t free0 = whole_stripes_free(fs);
	struct stat st;
	ssize_t w = 0;

	ck_assert_uint_le(len, sizeof(want));
	proj = put_file(fs, "project.db", want, len, 21);
	put_file(fs, "project.db-wal", b, S + S / 4, 22);
	/* the two tails share a tail stripe */
	ck_assert_uint_eq(ffs_stats(fs)->tail_writes, 2);
	ck_assert_uint_eq(whole_stripes_free(fs), free0 - 4 - 1 - 1);
	footage = create(fs, FFS_ROOT_INO, "footage", &fh);
	fill_pattern(b, sizeof(b), 23);
	for (uint64_t off = 0; (w = ffs_write(fs, fh, b, sizeof(b), off)) > 0; off += (uint64_t)w)
		;
	ck_assert_int_eq(w, -ENOSPC);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(blocks_available(fs), 0);

	/* a stripe rewritten whole replaces one: nothing given up, so the
	 * file's new data is still refused */
	ck_assert_int_eq(ffs_open(fs, footage, O_RDWR, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, b, S, 0), (ssize_t)S);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_int_eq(ffs_getattr(fs, footage, &st), 0);
	ck_assert_int_eq(ffs_fallocate(fs, fh, 0, (uint64_t)st.st_size, S), -ENOSPC);
	ck_assert_int_eq(ffs_release(fs, fh), 0);

	/* stripes 1-3 and the tail punched, then written again */
	ck_assert_int_eq(ffs_open(fs, proj, O_RDWR, &fh), 0);
	ck_assert_int_eq(ffs_fallocate(fs, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, S, len - S), 0);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_uint_lt(blocks_available(fs) * 4096, len - S); /* less than it needs */
	ck_assert_int_eq(ffs_write(fs, fh, want + S, len - S, S), (ssize_t)(len - S));
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	check_content(fs, proj, want, len);

	/* truncated to 0 and written again, as a save with O_TRUNC does */
	ck_assert_int_eq(ffs_open(fs, proj, O_RDWR | O_TRUNC, &fh), 0);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_uint_lt(blocks_available(fs) * 4096, len);
	fill_pattern(want, len, 25);
	ck_assert_int_eq(ffs_write(fs, fh, want, len, 0), (ssize_t)len);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	/* it took back no more than it gave up: new data is still refused */
	ck_assert_uint_eq(blocks_available(fs), 0);

	/* truncated to 0 (4 stripes and the tail given up: 5) and written
	 * again at 2 stripes, then 6 stripes asked for past its end: ENOSPC —
	 * every stripe it takes for new data, from the reserve or not, counts
	 * against what it may take back */
	ck_assert_int_eq(ffs_open(fs, proj, O_RDWR | O_TRUNC, &fh), 0);
	ck_assert_int_eq(ffs_write(fs, fh, want, 2 * S, 0), (ssize_t)(2 * S));
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_int_eq(ffs_fallocate(fs, fh, 0, 2 * S, 6 * S), -ENOSPC);
	ck_assert_int_eq(ffs_getattr(fs, proj, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)(2 * S));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	len = 2 * S;
	fs = remount(fs);
	check_content(fs, proj, want, len);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* Files whose last stripe is partial: their tails share tail stripes
 * (fewer stripes than files), every byte reads back before and after a
 * remount, and deleting them all gives every stripe back.  RAID5 x 4 at
 * 64 KiB chunks: a stripe is 192 KiB, a row 12 KiB, 16 rows a stripe. */
START_TEST(tails_share_stripes)
{
	static uint8_t b[8][1 << 20];
	static const size_t tail[] = { 1, 5000, 12288, 12289, 40000, 70000, 100000, 130000 };
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_TAILS });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0 = whole_stripes_free(fs), ino[8], used;
	char name[16];

	ck_assert(ffs_tails_on(fs));
	for (unsigned i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ino[i] = put_file(fs, name, b[i], 2 * S + tail[i], i + 1);
	}
	used = free0 - whole_stripes_free(fs);
	ck_assert_uint_eq(ffs_stats(fs)->tail_packed, 8);
	/* 16 full stripes, and the 8 tails (1+1+1+2+4+7+9+12 = 37 rows) in 3
	 * tail stripes of 16 rows, or 4 as the two open ones fill unevenly */
	ck_assert_uint_le(used, 16 + 4);
	ck_assert_uint_ge(used, 16 + 3);
	for (unsigned i = 0; i < 8; i++)
		check_content(fs, ino[i], b[i], 2 * S + tail[i]);
	fs = remount(fs);
	for (unsigned i = 0; i < 8; i++)
		check_content(fs, ino[i], b[i], 2 * S + tail[i]);
	for (unsigned i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "f%u", i);
		ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, name), 0);
		ffs_forget(fs, ino[i], 1);
	}
	fs = remount(fs);
	ck_assert_uint_eq(whole_stripes_free(fs), free0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* Writers closing files at the same time: each has at most one tail in
 * flight, so with fewer writers than tail-stripe slots (8 at this write
 * pool: tail.c) every tail finds an idle slot and none takes a stripe of
 * its own (tail_busy 0); every byte reads back after a remount, and
 * deleting the files gives every stripe back. */
#define TW_WRITERS 6
#define TW_FILES 8

struct tail_writer {
	struct ffs *fs;
	unsigned id;
	size_t len[TW_FILES];
	uint64_t ino[TW_FILES];
	uint8_t *b[TW_FILES];
};

static void *tail_writer_main(void *arg)
{
	struct tail_writer *w = arg;
	char name[32];

	for (unsigned k = 0; k < TW_FILES; k++) {
		snprintf(name, sizeof(name), "w%u.%u", w->id, k);
		w->ino[k] = put_file(w->fs, name, w->b[k], w->len[k], 100 * w->id + k + 1);
	}
	return NULL;
}

START_TEST(tails_many_writers_find_a_slot)
{
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_TAILS });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0 = whole_stripes_free(fs);
	static struct tail_writer w[TW_WRITERS];
	pthread_t t[TW_WRITERS];
	char name[32];

	ut_rng = 4242;
	for (unsigned i = 0; i < TW_WRITERS; i++) {
		w[i] = (struct tail_writer){ .fs = fs, .id = i };
		for (unsigned k = 0; k < TW_FILES; k++) {
			w[i].len[k] = S + 1 + ut_rnd() % (S - 1); /* one stripe and a tail */
			w[i].b[k] = malloc(w[i].len[k]);
			ck_assert_ptr_nonnull(w[i].b[k]);
		}
	}
	for (unsigned i = 0; i < TW_WRITERS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, tail_writer_main, &w[i]), 0);
	for (unsigned i = 0; i < TW_WRITERS; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(ffs_stats(fs)->tail_packed, TW_WRITERS * TW_FILES);
	ck_assert_uint_eq(ffs_stats(fs)->tail_busy, 0);
	fs = remount(fs);
	for (unsigned i = 0; i < TW_WRITERS; i++)
		for (unsigned k = 0; k < TW_FILES; k++)
			check_content(fs, w[i].ino[k], w[i].b[k], w[i].len[k]);
	for (unsigned i = 0; i < TW_WRITERS; i++)
		for (unsigned k = 0; k < TW_FILES; k++) {
			snprintf(name, sizeof(name), "w%u.%u", i, k);
			ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, name), 0);
			ffs_forget(fs, w[i].ino[k], 1);
			free(w[i].b[k]);
		}
	fs = remount(fs);
	ck_assert_uint_eq(whole_stripes_free(fs), free0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A hole punched where the file has holes already allocates nothing: its
 * partial stripes at both ends are unmapped, so no zeros are written there
 * (they would take a stripe or a tail each); the whole stripe inside that
 * holds data is freed; everything reads as zeros, before and after a
 * remount.  Then a punch whose ends are in written stripes does write
 * their zeros. */
START_TEST(punch_in_holes_allocates_nothing)
{
	static uint8_t want[6 * 192 * 1024], b[192 * 1024];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_TAILS });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0, fh, ino, tails;

	ck_assert_uint_eq(S, 192 * 1024);
	ino = create(fs, FFS_ROOT_INO, "sparse", &fh);
	set_size(fs, ino, 6 * S);
	fill_pattern(b, S, 9);
	ck_assert_int_eq(ffs_write(fs, fh, b, S, 2 * S), (ssize_t)S); /* stripe 2 only */
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	free0 = whole_stripes_free(fs);
	tails = ffs_stats(fs)->tail_writes;
	ck_assert_int_eq(ffs_fallocate(fs, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, S / 2, 5 * S), 0);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_uint_eq(whole_stripes_free(fs), free0 + 1);
	ck_assert_uint_eq(ffs_stats(fs)->tail_writes, tails);
	memset(want, 0, sizeof(want));
	check_content(fs, ino, want, 6 * S);
	/* ends in written stripes: their zeros are written */
	ck_assert_int_eq(ffs_write(fs, fh, b, S, 0), (ssize_t)S);
	ck_assert_int_eq(ffs_write(fs, fh, b, S, 5 * S), (ssize_t)S);
	ck_assert_int_eq(ffs_fallocate(fs, fh, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, S / 2, 5 * S), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	memcpy(want, b, S / 2);
	memcpy(want + 5 * S + S / 2, b + S / 2, S / 2);
	check_content(fs, ino, want, 6 * S);
	fs = remount(fs);
	check_content(fs, ino, want, 6 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A tail is rewritten, grown, shrunk and cut off like any last stripe:
 * writes into it, truncate within it (the bytes past the new size read as
 * zeros when the file grows again), truncate to a stripe boundary (the
 * tail goes), append past it; and a file of one partial stripe above
 * small_max is a tail too. */
START_TEST(tails_rewrite_and_truncate)
{
	static uint8_t want[1 << 20], b[1 << 20];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_TAILS });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0 = whole_stripes_free(fs), fh, ino;
	size_t len = S + 50000;

	ino = put_file(fs, "t", want, len, 3);
	ck_assert_uint_eq(ffs_stats(fs)->tail_packed, 1);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	/* a write into the tail: the new tail replaces it */
	fill_pattern(b, 1000, 77);
	ck_assert_int_eq(ffs_write(fs, fh, b, 1000, S + 20000), 1000);
	memcpy(want + S + 20000, b, 1000);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_uint_eq(ffs_stats(fs)->tail_packed, 2);
	check_content(fs, ino, want, len);
	/* shrink within the tail, then grow: zeros past the cut */
	set_size(fs, ino, S + 30000);
	set_size(fs, ino, len);
	memset(want + S + 30000, 0, len - (S + 30000));
	check_content(fs, ino, want, len);
	/* append past the tail: the old last stripe becomes whole */
	fill_pattern(b, S, 78);
	ck_assert_int_eq(ffs_write(fs, fh, b, S, len), (ssize_t)S);
	memcpy(want + len, b, S);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	check_content(fs, ino, want, len + S);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	check_content(fs, ino, want, len + S);
	/* cut at a stripe boundary: no tail left */
	set_size(fs, ino, 2 * S);
	check_content(fs, ino, want, 2 * S);
	/* one partial stripe above small_max: a tail */
	ino = put_file(fs, "one", b, 100000, 5);
	check_content(fs, ino, b, 100000);
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "t"), 0);
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "one"), 0);
	fs = remount(fs);
	ck_assert_uint_eq(whole_stripes_free(fs), free0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* Write n bytes of pattern seed at off into the file and the model, then
 * flush (the buffer goes out as patches or a whole stripe). */
static void overwrite(struct ffs *fs, uint64_t fh, uint8_t *want, uint64_t off, size_t n,
		      unsigned seed)
{
	static uint8_t b[1 << 20];

	fill_pattern(b, n, seed);
	ck_assert_int_eq(ffs_write(fs, fh, b, n, off), (ssize_t)n);
	memcpy(want + off, b, n);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
}

/* Small overwrites of a file's stripes go as patches (patch.c): a 4 KiB
 * write costs one patch and no stripe rewrite; patches that overlap older
 * ones (inside, across both ends, unaligned) read back exactly, before and
 * after a remount; a stripe whose patches pass half of it is rewritten
 * whole by the merge thread, with them laid over; truncating inside a patched stripe
 * and growing again reads zeros; and deleting the file gives every stripe
 * back (the tail stripes the patches took too).  RAID5 x 4 at 64 KiB
 * chunks: 192 KiB stripes of 48 blocks, 3 slots a row. */
/* ffs_bt_scan against the records a tree holds: every range a caller asks
 * (all, across leaves, none, lo > hi), in key order with each value, and
 * its callback's stop and error.  Keys 3i, values of 1..40 bytes. */
struct scan_seen {
	unsigned n, stop_at;
	int stop_rc;
	uint64_t keys[2000];
	bool bad_value;
};

static int scan_cb(void *arg, uint64_t key, const void *val, uint16_t len)
{
	struct scan_seen *s = arg;
	const uint8_t *v = val;

	if (len != key / 3 % 40 + 1)
		s->bad_value = true;
	for (uint16_t j = 0; j < len; j++)
		if (v[j] != (uint8_t)(key + j))
			s->bad_value = true;
	s->keys[s->n++] = key;
	return s->n == s->stop_at ? s->stop_rc : 0;
}

static int count_leaf(void *arg, uint64_t block, int level)
{
	(void)block;
	*(unsigned *)arg += level == 0;
	return 0;
}

static struct scan_seen scan_range(struct ffs *fs, struct bt_root *t, uint64_t lo, uint64_t hi,
				   unsigned stop_at, int stop_rc, int want_rc)
{
	struct scan_seen s = { .stop_at = stop_at, .stop_rc = stop_rc };

	ck_assert_int_eq(ffs_bt_scan(fs, t, lo, hi, scan_cb, &s), want_rc);
	ck_assert(!s.bad_value);
	for (unsigned i = 1; i < s.n; i++)
		ck_assert_uint_eq(s.keys[i], s.keys[i - 1] + 3);
	return s;
}

START_TEST(bt_scan_ranges)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct bt_root t = { 0, 12345 };
	struct scan_seen s;
	uint8_t val[40];
	unsigned leaves = 0;

	pthread_mutex_lock(&fs->lock);
	for (uint64_t i = 0; i < 2000; i++) {
		uint64_t key = 3 * i;

		for (unsigned j = 0; j < sizeof(val); j++)
			val[j] = (uint8_t)(key + j);
		ck_assert_int_eq(ffs_bt_insert(fs, &t, key, val, (uint16_t)(i % 40 + 1)), 0);
	}
	ck_assert_int_eq(ffs_bt_walk(fs, &t, count_leaf, &leaves), 0);
	ck_assert_uint_ge(leaves, 8); /* the ranges below cross leaves */

	s = scan_range(fs, &t, 0, UINT64_MAX, 0, 0, 0);
	ck_assert_uint_eq(s.n, 2000);
	ck_assert_uint_eq(s.keys[0], 0);
	s = scan_range(fs, &t, 301, 4000, 0, 0, 0); /* 303 .. 3999 */
	ck_assert_uint_eq(s.n, 1233);
	ck_assert_uint_eq(s.keys[0], 303);
	ck_assert_uint_eq(s.keys[s.n - 1], 3999);
	s = scan_range(fs, &t, 3000, 3000, 0, 0, 0); /* one key exactly */
	ck_assert_uint_eq(s.n, 1);
	s = scan_range(fs, &t, 1, 2, 0, 0, 0); /* between two keys */
	ck_assert_uint_eq(s.n, 0);
	s = scan_range(fs, &t, 6000, UINT64_MAX, 0, 0, 0); /* past the last */
	ck_assert_uint_eq(s.n, 0);
	s = scan_range(fs, &t, 900, 30, 0, 0, 0); /* lo > hi */
	ck_assert_uint_eq(s.n, 0);
	s = scan_range(fs, &t, 0, UINT64_MAX, 700, 1, 0); /* the callback stops it */
	ck_assert_uint_eq(s.n, 700);
	s = scan_range(fs, &t, 30, UINT64_MAX, 5, -EIO, -EIO); /* and fails it */
	ck_assert_uint_eq(s.n, 5);

	ck_assert_int_eq(ffs_bt_destroy(fs, &t), 0);
	ck_assert_int_eq(ffs_journal_commit(fs), 0);
	pthread_mutex_unlock(&fs->lock);
	s = scan_range(fs, &t, 0, UINT64_MAX, 0, 0, 0); /* an empty tree */
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

START_TEST(patches_small_overwrites)
{
	static uint8_t want[4 * 192 * 1024];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_PATCH });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0 = whole_stripes_free(fs), fh, ino, sw;
	const struct ffs_stats *st = ffs_stats(fs);

	ck_assert_uint_eq(S, 192 * 1024);
	ino = put_file(fs, "db", want, 4 * S, 11);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	sw = st->stripe_writes;
	overwrite(fs, fh, want, S + 3 * 4096, 4096, 21); /* one block of stripe 1 */
	ck_assert_uint_eq(st->patch_writes, 1);
	ck_assert_uint_eq(st->patch_blocks, 1);
	check_content(fs, ino, want, 4 * S);
	/* stripe 2: blocks 10..19, then inside it, then across its start, then
	 * 100 bytes in the middle of a patched block */
	overwrite(fs, fh, want, 2 * S + 10 * 4096, 10 * 4096, 22);
	overwrite(fs, fh, want, 2 * S + 12 * 4096, 2 * 4096, 23);
	check_content(fs, ino, want, 4 * S);
	overwrite(fs, fh, want, 2 * S + 8 * 4096, 3 * 4096, 24);
	overwrite(fs, fh, want, 2 * S + 15 * 4096 + 50, 100, 25);
	overwrite(fs, fh, want, 2 * S + 19 * 4096 + 4000, 200, 26); /* across a block edge */
	ck_assert_uint_eq(st->patch_writes, 6);
	ck_assert_uint_eq(st->stripe_writes, sw); /* no stripe rewritten */
	ck_assert_uint_eq(st->tail_stripes, 1);   /* one tail stripe holds them all */
	check_content(fs, ino, want, 4 * S);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	check_content(fs, ino, want, 4 * S);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	/* 14 more blocks of stripe 2 pass half of it (13 patched): they go as
	 * patches, and the merge thread rewrites the stripe whole (merge.c) */
	sw = st->stripe_writes;
	overwrite(fs, fh, want, 2 * S + 30 * 4096, 14 * 4096, 27);
	ffs_merges_drain(fs);
	ck_assert_uint_eq(st->patch_merges, 1);
	ck_assert_uint_eq(st->merges_background, 1);
	ck_assert_uint_eq(st->stripe_writes, sw + 1);
	check_content(fs, ino, want, 4 * S);
	/* patches again on the rewritten stripe, then a cut inside it and growth */
	overwrite(fs, fh, want, 2 * S + 40 * 4096, 4096, 28);
	overwrite(fs, fh, want, 2 * S + 5 * 4096, 4096, 29);
	ck_assert_uint_eq(st->patch_writes, 3); /* the 14 blocks went as patches too */
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	set_size(fs, ino, 2 * S + 20 * 4096 + 7);
	set_size(fs, ino, 4 * S);
	memset(want + 2 * S + 20 * 4096 + 7, 0, 2 * S - 20 * 4096 - 7);
	check_content(fs, ino, want, 4 * S);
	fs = remount(fs);
	check_content(fs, ino, want, 4 * S);
	/* a file's last stripe kept as a tail takes patches too: no tail rewrite */
	{
		static uint8_t t[192 * 1024 + 50000];
		uint64_t tino = put_file(fs, "tailed", t, sizeof(t), 12), tfh, packed;

		st = ffs_stats(fs);
		packed = st->tail_packed;
		ck_assert_int_eq(ffs_open(fs, tino, O_RDWR, &tfh), 0);
		overwrite(fs, tfh, t, S + 4096, 4096, 30);
		overwrite(fs, tfh, t, S + 2 * 4096 + 10, 30, 31);
		ck_assert_uint_eq(st->tail_packed, packed);
		ck_assert_uint_eq(st->patch_writes, 2);
		ck_assert_int_eq(ffs_release(fs, tfh), 0);
		check_content(fs, tino, t, sizeof(t));
		fs = remount(fs);
		check_content(fs, tino, t, sizeof(t));
		ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "tailed"), 0);
		ffs_forget(fs, tino, 1);
	}
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "db"), 0);
	ffs_forget(fs, ino, 1);
	fs = remount(fs);
	ck_assert_uint_eq(whole_stripes_free(fs), free0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* File stripe k of inode ino is a tail: its tail stripe and first row. */
static uint64_t tail_of(struct ffs *fs, uint64_t ino, uint64_t k, uint32_t *row0)
{
	struct ffs_extent x = extent_of(fs, ino, k);
	uint32_t rows;

	ck_assert(ff_le32(x.flags) & FFS_X_TAIL);
	ffs_tail_rows_of(&x, row0, &rows);
	return ff_le64(x.pstripe);
}

/* Silent corruption in a tail stripe: a read of the damaged tail is served
 * rebuilt from parity and repairs the stripe (the other tails in it read
 * right throughout), and scrub finds and repairs another damaged tail's
 * chunk.  Fault: junk over one data chunk's rows of a tail, on its member. */
START_TEST(tails_bad_chunk_repaired)
{
	static uint8_t b[3][1 << 20];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_TAILS });
	const struct ff_geom *g = ffs_tools_geom(fs);
	uint64_t S = g->stripe_bytes, ino[3], p[3], fh;
	struct ffs_scrub_status st;
	uint32_t row0[3];
	char name[8];

	for (unsigned i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "c%u", i);
		ino[i] = put_file(fs, name, b[i], S + 30000 + 10000 * i, 20 + i);
	}
	fs = remount(fs);
	g = ffs_tools_geom(fs); /* the mount's own */
	for (unsigned i = 0; i < 3; i++)
		p[i] = tail_of(fs, ino[i], 1, &row0[i]);
	ck_assert_uint_eq(p[0], p[1]); /* packed together */
	ck_assert_uint_eq(p[1], p[2]);
	/* fault: junk over data chunk 1's rows of tail 1 */
	corrupt(ut_paths[ff_raid_chunk_member(ffs_raid(fs), p[1], 1)],
		g->data_offset + p[1] * g->chunk_bytes + row0[1] * FFS_TAIL_ROW, FFS_TAIL_ROW);
	ck_assert_int_eq(ffs_open(fs, ino[1], O_RDONLY, &fh), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	for (unsigned i = 0; i < 3; i++)
		check_content(fs, ino[i], b[i], S + 30000 + 10000 * i);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_errors), 1);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_repaired), 1);
	fs = remount(fs); /* no cached copy: the stripe on the members is right again */
	g = ffs_tools_geom(fs);
	for (unsigned i = 0; i < 3; i++)
		check_content(fs, ino[i], b[i], S + 30000 + 10000 * i);
	ck_assert_uint_eq(atomic_load(&ffs_stats(fs)->crc_errors), 0);
	/* fault: junk over data chunk 0's rows of tail 2; scrub repairs it */
	corrupt(ut_paths[ff_raid_chunk_member(ffs_raid(fs), p[2], 0)],
		g->data_offset + p[2] * g->chunk_bytes + row0[2] * FFS_TAIL_ROW, FFS_TAIL_ROW);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.chunks_bad, 1);
	ck_assert_uint_eq(st.chunks_repaired, 1);
	ck_assert_uint_eq(st.parity_bad, 0);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &st);
	ck_assert_uint_eq(st.chunks_bad, 0);
	fs = remount(fs);
	for (unsigned i = 0; i < 3; i++)
		check_content(fs, ino[i], b[i], S + 30000 + 10000 * i);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* ---- a silently corrupted patched block (fs/data/patch.c read_slot) ----------------- */

/* mkfs at RAID level on NM members of 64 MiB, `chunk` chunks, patches on;
 * then mount. */
static struct ffs *mkfs_mount_level_chunk(unsigned level, uint32_t chunk)
{
	struct ffs_mkfs_params p = { .level = level, .chunk_bytes = chunk,
				     .version = FFS_VERSION_PATCH, .quiet = true };
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			       .patch_cache_bytes = ut_patch_cache };
	struct ff_err err = { "" };
	struct ffs *fs;

	ut_make_members(NM, 64);
	ck_assert_msg(ffs_mkfs(ut_pp, NM, &p, &err) == 0, "mkfs: %s", err.msg);
	ck_assert_msg(ffs_mount(ut_pp, NM, &o, &fs, &err) == 0, "mount: %s", err.msg);
	return fs;
}

static struct ffs *mkfs_mount_level(unsigned level)
{
	return mkfs_mount_level_chunk(level, 64 * 1024);
}

/* The flags of the extent mapping file stripe k of ino. */
static uint32_t extent_flags(struct ffs *fs, uint64_t ino, uint64_t k)
{
	return ff_le32(extent_of(fs, ino, k).flags);
}

/* Where a one-block patch lives: its record, and the member and byte
 * offset on it of the block (slot s of tail stripe p is row s / ndata of
 * data chunk s % ndata: format.h). */
struct patch_loc {
	uint64_t p;
	uint32_t slot, crc;
	unsigned member;
	uint64_t off;
};

/* The patch of block b of file stripe k of ino, which must start there
 * and cover that block alone (the patch tree: internals, fs->lock). */
static void patch_at(struct ffs *fs, uint64_t ino, uint64_t k, uint32_t b, struct patch_loc *l)
{
	const struct ff_geom *g = ffs_tools_geom(fs);
	uint8_t rec[FFS_BT_RECORD_MAX];
	struct ffs_patch x;
	struct finode *fi;
	struct bt_root t;
	uint64_t found;
	uint16_t len;
	le32 c;

	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(ffs_iget(fs, ino, &fi), 0);
	t = (struct bt_root){ ff_le64(fi->d.u2.patch_root), ino };
	ck_assert_uint_ne(t.root, 0);
	ck_assert_int_eq(ffs_bt_find_ge(fs, &t, FFS_PATCH_KEY(k, b), &found, rec, &len), 0);
	ffs_iput(fs, fi);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_uint_eq(found, FFS_PATCH_KEY(k, b));
	ck_assert_uint_eq(len, sizeof(x) + 4);
	memcpy(&x, rec, sizeof(x));
	memcpy(&c, rec + sizeof(x), sizeof(c));
	ck_assert_uint_eq(ff_le16(x.nblocks), 1);
	l->p = ff_le64(x.pstripe);
	l->slot = ff_le16(x.slot0);
	l->crc = ff_le32(c);
	ck_assert_uint_lt(l->p, g->nstripes);
	l->member = ff_raid_chunk_member(ffs_raid(fs), l->p, l->slot % g->ndata);
	l->off = g->data_offset + l->p * g->chunk_bytes + (uint64_t)(l->slot / g->ndata) * FFS_BLOCK;
}

/* Whether the member holds exactly `want` where the patched block lives. */
static bool member_holds(const struct patch_loc *l, const uint8_t *want)
{
	uint8_t b[FFS_BLOCK];
	int fd = open(ut_paths[l->member], O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, sizeof(b), (off_t)l->off), (ssize_t)sizeof(b));
	close(fd);
	return memcmp(b, want, sizeof(b)) == 0;
}

/* Fault: 16 bytes of the patched block flipped on its member.  Silent: the
 * array reads the block back, flipped, without an error — only the
 * patch's crc can tell. */
static void flip_patch(struct ffs *fs, const struct patch_loc *l, const uint8_t *good)
{
	const struct ff_geom *g = ffs_tools_geom(fs);
	uint64_t at = l->p * g->stripe_bytes + (uint64_t)(l->slot % g->ndata) * g->chunk_bytes +
		      (uint64_t)(l->slot / g->ndata) * FFS_BLOCK;
	_Alignas(4096) uint8_t b[FFS_BLOCK];
	int fd = open(ut_paths[l->member], O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, sizeof(b), (off_t)l->off), (ssize_t)sizeof(b));
	ck_assert_int_eq(memcmp(b, good, sizeof(b)), 0); /* it is the block, and good, before */
	for (unsigned i = 2000; i < 2016; i++)
		b[i] ^= 0xff;
	ck_assert_int_eq(pwrite(fd, b, sizeof(b), (off_t)l->off), (ssize_t)sizeof(b));
	close(fd);
	ck_assert(!member_holds(l, good));
	ck_assert_int_eq(ff_raid_rw(ffs_raid(fs), FF_RAID_READ, FF_SPACE_DATA, at, b, FFS_BLOCK), 0);
	ck_assert_int_ne(memcmp(b, good, sizeof(b)), 0);
}

/*
 * A 4 KiB overwrite in the middle of file stripe 1 goes as a patch; then
 * the patched block is corrupted on its member, silently, four times over:
 *  1. still mounted, right after the fsync (its tail stripe open, idle, not
 *     in the read cache): the read checks the block alone against its
 *     record's crc, falls back to the tail stripe through the read cache,
 *     which finds the bad chunk, rebuilds it from parity and rewrites the
 *     stripe (holding it first: it takes no more rows, so the next patch
 *     goes elsewhere);
 *  2. after a remount, scrub finds and repairs the chunk;
 *  3. after another remount (caches empty, nothing open): the read heals it
 *     as in 1;
 *  4. with the tail stripe now in the read cache (verified, good): the
 *     read drops the cache's copy and heals the block as in 1; a 100-byte
 *     write inside the patched block, bad once more, has its edges filled
 *     through the same check, so the new patch carries the good bytes,
 *     never the junk, and the old block is healed too.
 * Every read returns exactly what was written; the array itself reads the
 * flipped block back without an error each time (flip_patch).  The patch
 * cache is off: with it, 1's read would find the block just written in
 * memory and never meet the damage (patch_cache_serves_merges).  tailed:
 * the file is a stripe and a tail, the patch inside the tail; it lands in
 * the tail's own tail stripe (asserted), whose read through the cache
 * then meets the bad chunk first.
 */
static void patch_bad_block(unsigned level, bool tailed)
{
	static uint8_t want[3 * 192 * 1024];
	struct ffs *fs = (ut_patch_cache = FFS_PATCH_CACHE_OFF, mkfs_mount_level(level));
	const struct ff_geom *g = ffs_tools_geom(fs);
	const struct ffs_stats *st = ffs_stats(fs);
	uint64_t S = g->stripe_bytes, len = tailed ? S + 50000 : 3 * S, fh, ino;
	uint32_t b = tailed ? 5 : (uint32_t)(S / FFS_BLOCK / 2); /* in the tail / mid-stripe */
	uint64_t at = S + (uint64_t)b * FFS_BLOCK;
	uint64_t pw, pb, sw, tp, e0, r0;
	struct ffs_scrub_status ss;
	struct patch_loc l, l2;
	uint8_t good[FFS_BLOCK];
	uint32_t row0;

	ck_assert_uint_eq(g->level, level);
	ck_assert_uint_le(len, sizeof(want));
	ck_assert(fs->features & FFS_FEAT_PATCHES);
	ino = put_file(fs, "db", want, len, 41);
	/* on stripes of its own; with tailed, its stripe 1 a tail */
	ck_assert(!(extent_flags(fs, ino, 0) & FFS_X_TAIL));
	ck_assert(!!(extent_flags(fs, ino, 1) & FFS_X_TAIL) == tailed);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	pw = st->patch_writes;
	pb = st->patch_blocks;
	sw = st->stripe_writes;
	tp = st->tail_packed;
	overwrite(fs, fh, want, at, FFS_BLOCK, 42);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_uint_eq(st->patch_writes, pw + 1); /* a patch ... */
	ck_assert_uint_eq(st->patch_blocks, pb + 1);
	ck_assert_uint_eq(st->stripe_writes, sw);    /* ... not a stripe rewrite */
	ck_assert_uint_eq(st->tail_packed, tp);      /* nor a tail rewrite */
	memcpy(good, want + at, FFS_BLOCK);
	patch_at(fs, ino, 1, b, &l);
	ck_assert_uint_eq(ffs_patch_crc(l.p, l.slot, good), l.crc);
	ck_assert(member_holds(&l, good)); /* the block is where the layout says */
	if (tailed) /* in the tail's own stripe, still open */
		ck_assert_uint_eq(l.p, tail_of(fs, ino, 1, &row0));
	/* (no read before the fault: a tail's read would put its stripe in
	 * the read cache, which is case 4) */

	/* 1: mounted, the tail stripe open; the read heals it */
	e0 = st->crc_errors;
	r0 = st->crc_repaired;
	flip_patch(fs, &l, good);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, e0 + 1); /* counted once: by the cache's repair */
	ck_assert_uint_eq(st->crc_repaired, r0 + 1);
	ck_assert(member_holds(&l, good));
	/* the repair held the stripe: the next patch goes to another one */
	overwrite(fs, fh, want, at + 2 * FFS_BLOCK, FFS_BLOCK, 43);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_uint_eq(st->patch_writes, pw + 2);
	ck_assert_uint_eq(st->stripe_writes, sw);
	patch_at(fs, ino, 1, b + 2, &l2);
	ck_assert_uint_ne(l2.p, l.p);
	ck_assert(member_holds(&l2, want + at + 2 * FFS_BLOCK));
	check_content(fs, ino, want, len);
	ck_assert_int_eq(ffs_release(fs, fh), 0);

	/* 2: after a remount (the rewrite held on disk), scrub repairs it */
	fs = remount(fs);
	st = ffs_stats(fs);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, 0);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &ss);
	ck_assert_uint_eq(ss.chunks_bad + ss.parity_bad, 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	flip_patch(fs, &l, good);
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &ss);
	ck_assert_uint_eq(ss.chunks_bad, 1);
	ck_assert_uint_eq(ss.chunks_repaired, 1);
	ck_assert_uint_eq(ss.parity_bad, 0);
	ck_assert(member_holds(&l, good));
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &ss);
	ck_assert_uint_eq(ss.chunks_bad + ss.parity_bad, 0);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, 0);

	/* 3: after a remount, caches empty and no tail stripe open: the read heals it */
	fs = remount(fs);
	st = ffs_stats(fs);
	flip_patch(fs, &l, good);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, 1); /* counted once: by the cache's repair */
	ck_assert_uint_eq(st->crc_repaired, 1);
	ck_assert(member_holds(&l, good));

	/* 4: the tail stripe is in the read cache now (that read put it
	 * there, repaired).  The block read alone fails its crc; the cache's
	 * copy is dropped (it could be older than the damage) and the stripe
	 * read again, checked: the chunk is rebuilt and rewritten, counted
	 * once, and the next read finds nothing wrong. */
	flip_patch(fs, &l, good);
	e0 = st->crc_errors;
	r0 = st->crc_repaired;
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, e0 + 1);
	ck_assert_uint_eq(st->crc_repaired, r0 + 1);
	ck_assert(member_holds(&l, good));
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, e0 + 1);
	/* and a 100-byte write inside the block, its edges filled through the
	 * same check from a block made bad once more */
	flip_patch(fs, &l, good);
	e0 = st->crc_errors;
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	pw = st->patch_writes;
	overwrite(fs, fh, want, at + 1000, 100, 44);
	ck_assert_int_eq(ffs_fsync(fs, fh, false), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_uint_eq(st->patch_writes, pw + 1);
	ck_assert_uint_eq(st->crc_errors, e0 + 1); /* the fill met the bad block, healed it */
	ck_assert(member_holds(&l, good));
	check_content(fs, ino, want, len);
	patch_at(fs, ino, 1, b, &l2);
	ck_assert(l2.p != l.p || l2.slot != l.slot);
	ck_assert(member_holds(&l2, want + at));
	ck_assert_uint_eq(ffs_patch_crc(l2.p, l2.slot, want + at), l2.crc);
	/* the old block, healed, is dead now: in the tail's stripe (tailed)
	 * the tail's read finds the whole stripe good; alone in its stripe,
	 * the stripe was freed with its last patch; either way scrub then
	 * finds nothing */
	fs = remount(fs);
	st = ffs_stats(fs);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, 0);
	if (!tailed)
		ck_assert(!ffs_stripe_in_use(fs, l.p));
	ck_assert_int_eq(ffs_scrub_start(fs, true), 0);
	ffs_scrub_wait(fs, &ss);
	ck_assert_uint_eq(ss.chunks_bad + ss.parity_bad, 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	check_content(fs, ino, want, len);
	ck_assert_uint_eq(st->crc_errors, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}

/* Write n bytes of pattern seed at off into the file and the model; no flush. */
static void put_bytes(struct ffs *fs, uint64_t fh, uint8_t *want, uint64_t off, size_t n,
		      unsigned seed)
{
	uint8_t b[FFS_BLOCK];

	ck_assert_uint_le(n, sizeof(b));
	fill_pattern(b, n, seed);
	ck_assert_int_eq(ffs_write(fs, fh, b, n, off), (ssize_t)n);
	memcpy(want + off, b, n);
}

/*
 * A stripe with more patched blocks than one wave of reads takes (fs/data/patch.c:
 * OVERLAY_WAVE 32, OVERLAY_BOUNCE 4), some patches from partial writes, reads
 * back exactly: whole into an aligned buffer (blocks land in place), at an
 * unaligned address (every block bounced, a wave each four) and from an
 * unaligned offset.  Then one patched block is corrupted on its member
 * (fault: 16 bytes flipped, silent: flip_patch) and a buffer that passes
 * half the stripe merges it: its gaps come from the base stripe and the
 * patches in one overlay, the bytes it holds inside patched blocks are
 * kept, and the bad block is met in a wave and rebuilt from parity
 * (read_slot).  RAID5 x 4 at 256 KiB chunks: 768 KiB stripes of 192
 * blocks, 96 the most patched.
 */
START_TEST(patches_read_in_waves)
{
	static uint8_t want[2 * 768 * 1024], got[2 * 768 * 1024 + 8192];
	struct ffs *fs = mkfs_mount_level_chunk(5, 256 * 1024);
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, fh, ino, sw;
	uint8_t *aligned = got + (4096 - (uintptr_t)got % 4096) % 4096;
	const struct ffs_stats *st = ffs_stats(fs);
	struct patch_loc l;
	unsigned seed = 50;

	ck_assert_uint_eq(S, 768 * 1024);
	ino = put_file(fs, "db", want, 2 * S, 41);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	sw = st->stripe_writes;
	/* 64 odd blocks of stripe 0, 16 a flush (a buffer holds 16 ranges) */
	for (uint32_t b = 1; b < 129; b += 2) {
		put_bytes(fs, fh, want, b * FFS_BLOCK, FFS_BLOCK, seed++);
		if (b % 32 == 31)
			ck_assert_int_eq(ffs_flush(fs, fh), 0);
	}
	/* partial blocks: inside an unpatched one, across two */
	put_bytes(fs, fh, want, 140 * FFS_BLOCK + 300, 100, seed++);
	put_bytes(fs, fh, want, 151 * FFS_BLOCK - 150, 300, seed++);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_uint_eq(st->stripe_writes, sw); /* all patches */
	ck_assert_uint_eq(st->patch_merges, 0);
	ck_assert_uint_ge(st->patch_blocks, 67);
	check_content(fs, ino, want, 2 * S);
	ck_assert_int_eq(ffs_read(fs, fh, aligned, S, 0, 0), (ssize_t)S);
	ck_assert_int_eq(memcmp(aligned, want, S), 0);
	ck_assert_int_eq(ffs_read(fs, fh, aligned + 1, 2 * S, 0, 0), (ssize_t)(2 * S));
	ck_assert_int_eq(memcmp(aligned + 1, want, 2 * S), 0);
	ck_assert_int_eq(ffs_read(fs, fh, aligned, S, 4095, 0), (ssize_t)S);
	ck_assert_int_eq(memcmp(aligned, want + 4095, S), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs); /* nothing cached */
	st = ffs_stats(fs);
	patch_at(fs, ino, 0, 7, &l);
	flip_patch(fs, &l, want + 7 * FFS_BLOCK);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	/* bytes inside patched blocks (the patch's rest around them), and 40
	 * blocks that take the stripe past half: a rewrite, merging */
	put_bytes(fs, fh, want, 9 * FFS_BLOCK + 100, 50, seed++);
	put_bytes(fs, fh, want, 12 * FFS_BLOCK - 20, 40, seed++);
	put_bytes(fs, fh, want, 7 * FFS_BLOCK + 4000, 96, seed++);
	for (uint32_t b = 150; b < 190; b++)
		put_bytes(fs, fh, want, b * FFS_BLOCK, FFS_BLOCK, seed++);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ffs_merges_drain(fs);
	ck_assert_uint_eq(st->patch_merges, 1);
	ck_assert_uint_ge(atomic_load(&st->crc_errors), 1);
	ck_assert_uint_ge(atomic_load(&st->crc_repaired), 1);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	check_content(fs, ino, want, 2 * S);
	fs = remount(fs);
	check_content(fs, ino, want, 2 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/*
 * A merge holds up neither the file's flush nor its writers (fs/data/merge.c;
 * the fill runs without dlock: fs/data/wbuf.c writeout).  Stripe 0 of a
 * two-stripe file gets 64 patched blocks (a third of its 192), then, after
 * a remount that empties the caches, 40 more blocks, which take it past
 * half: the flush sends them as patches and queues the stripe for the
 * merge thread, whose fill reads the stripe from the members.  Fault: 2 s
 * of latency on the first read of each member's data area, where the
 * fill's reads go (metadata reads are not slowed).  While one of them is
 * held, the flush returns, and a write to stripe 1 of the same file and a
 * second flush complete: the read is still held after each.  When the
 * flush merged itself it returned only once the read was let go; when the
 * fill held dlock the write waited for it.  A syncfs then waits for the
 * merge, asleep.  Then the merge lands, and the
 * file reads back exactly, before and after a remount.
 */
START_TEST(merge_holds_up_neither_flush_nor_writers)
{
	static uint8_t want[2 * 768 * 1024];
	struct ffs *fs = mkfs_mount_level_chunk(5, 256 * 1024);
	const struct ff_geom *g = ffs_tools_geom(fs);
	struct ff_fault_rule slow = { .ops = FF_FAULT_READ, .off_start = g->data_offset,
				      .count_ops = 1, .latency_us = 2000000 };
	uint64_t S = g->stripe_bytes, ino;
	struct flusher f = { .rc = -1 };
	const struct ffs_stats *st;
	unsigned seed = 70, m;
	pthread_t t;

	ck_assert_uint_eq(S, 768 * 1024);
	ino = put_file(fs, "db", want, 2 * S, 43);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &f.fh), 0);
	for (uint32_t b = 1; b < 129; b += 2) { /* 64 patches, 16 a flush */
		put_bytes(fs, f.fh, want, b * FFS_BLOCK, FFS_BLOCK, seed++);
		if (b % 32 == 31)
			ck_assert_int_eq(ffs_flush(fs, f.fh), 0);
	}
	ck_assert_int_eq(ffs_release(fs, f.fh), 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	ck_assert_uint_eq(st->patch_merges, 0);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &f.fh), 0);
	for (uint32_t b = 150; b < 190; b++)
		put_bytes(fs, f.fh, want, b * FFS_BLOCK, FFS_BLOCK, seed++);
	for (m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	f.fs = fs;
	ck_assert_int_eq(pthread_create(&t, NULL, flush_main, &f), 0);
	m = wait_held_any(fs); /* the merge's fill is reading the stripe */
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(f.rc, 0);
	ck_assert_msg(ff_fault_held(member(fs, m), FF_FAULT_ANY) >= 1,
		      "the flush waited for the merge's read");
	put_bytes(fs, f.fh, want, S + 5 * FFS_BLOCK, FFS_BLOCK, seed++);
	ck_assert_int_eq(ffs_flush(fs, f.fh), 0);
	ck_assert_msg(ff_fault_held(member(fs, m), FF_FAULT_ANY) >= 1,
		      "the write to stripe 1 or its flush waited for stripe 0's merge");
	/* syncfs (and unmount) wait for it, asleep: thread CPU time stays far
	 * under the rest of the 2 s hold, which a loop over the file's buffers
	 * would have burnt */
	{
		struct rusage a, b;

		ck_assert_int_eq(getrusage(RUSAGE_THREAD, &a), 0);
		ck_assert_int_eq(ffs_sync(fs), 0);
		ck_assert_int_eq(getrusage(RUSAGE_THREAD, &b), 0);
		ck_assert_msg(ff_fault_held(member(fs, m), FF_FAULT_ANY) == 0,
			      "syncfs returned with the merge's read still held");
		ck_assert_msg((b.ru_utime.tv_sec - a.ru_utime.tv_sec + b.ru_stime.tv_sec - a.ru_stime.tv_sec) * 1000000 +
				      (b.ru_utime.tv_usec - a.ru_utime.tv_usec + b.ru_stime.tv_usec - a.ru_stime.tv_usec) <
				      500000,
			      "syncfs spun while the merge was in flight");
	}
	ffs_merges_drain(fs);
	ck_assert_uint_eq(st->patch_merges, 1);
	ck_assert_uint_eq(st->merges_background, 1);
	for (m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	ck_assert_int_eq(ffs_release(fs, f.fh), 0);
	check_content(fs, ino, want, 2 * S);
	fs = remount(fs);
	check_content(fs, ino, want, 2 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/*
 * framefs-admin sync (ffs_settle) finishes the background merges queued
 * before it: afterwards none is queued or running, and the free space is
 * what a remount finds.  Two stripes pass their patches' share in one flush,
 * so two merges queue; every read of the data area takes 200 ms (fault:
 * latency on all members' data-area reads), so that both are still queued
 * or reading when the flush returns.  (The integration test
 * admin-sync-settles-merges shows the same through the daemon, and fails
 * with sync(2) in its place.)
 */
START_TEST(settle_finishes_queued_merges)
{
	static uint8_t want[2 * 768 * 1024];
	struct ffs *fs = mkfs_mount_level_chunk(5, 256 * 1024);
	const struct ff_geom *g = ffs_tools_geom(fs);
	struct ff_fault_rule slow = { .ops = FF_FAULT_READ, .off_start = g->data_offset,
				      .latency_us = 200000 };
	uint64_t S = g->stripe_bytes, ino, fh;
	const struct ffs_stats *st;
	struct statvfs a, b;
	unsigned seed = 90;

	ck_assert_uint_eq(S, 768 * 1024);
	ino = put_file(fs, "db", want, 2 * S, 47);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	for (uint64_t k = 0; k < 2; k++) /* 64 patches each, under the share */
		for (uint32_t blk = 1; blk < 129; blk += 2) {
			put_bytes(fs, fh, want, k * S + blk * FFS_BLOCK, FFS_BLOCK, seed++);
			if (blk % 32 == 31)
				ck_assert_int_eq(ffs_flush(fs, fh), 0);
		}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	ck_assert_uint_eq(st->patch_merges, 0);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	for (uint64_t k = 0; k < 2; k++) /* 40 more each: past it */
		for (uint32_t blk = 150; blk < 190; blk++)
			put_bytes(fs, fh, want, k * S + blk * FFS_BLOCK, FFS_BLOCK, seed++);
	for (unsigned m = 0; m < NM; m++)
		ck_assert_int_eq(ff_fault_add(member(fs, m), &slow), 0);
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ck_assert_int_eq(ffs_settle(fs), 0);
	ck_assert_msg(ffs_merges_pending(fs) == 0, "sync returned with %u merges queued or running",
		      ffs_merges_pending(fs));
	ck_assert_uint_eq(st->merges_background, 2);
	ck_assert_int_eq(ffs_statfs(fs, &a), 0);
	for (unsigned m = 0; m < NM; m++)
		ff_fault_clear(member(fs, m));
	check_content(fs, ino, want, 2 * S);
	fs = remount(fs);
	ck_assert_int_eq(ffs_statfs(fs, &b), 0);
	ck_assert_uint_eq(a.f_bfree, b.f_bfree);
	check_content(fs, ino, want, 2 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/*
 * The patch cache (fs/data/pcache.c) serves the patched blocks written since the
 * mount, and only those.  RAID5 x 4 at 256 KiB chunks: 768 KiB stripes of
 * 192 blocks.  Stripe 0 of a two-stripe file gets 64 patched blocks: a read
 * finds all of them in the cache (no patched block read from the members),
 * and so does the merge that 40 more blocks set off; once merged, none is
 * cached any more (their patches are gone).  Stripe 1 gets 64 patched
 * blocks, then a remount: the read takes all 64 from the members.  Then,
 * with a cache of 8 blocks, 64 patches leave the newest 8 cached (a FIFO),
 * and a slot written again holds only its newest block.  The file reads
 * back exactly throughout.
 */
START_TEST(patch_cache_serves_merges)
{
	static uint8_t want[2 * 768 * 1024];
	struct ffs *fs = mkfs_mount_level_chunk(5, 256 * 1024);
	const struct ffs_stats *st = ffs_stats(fs);
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, ino, fh, reads, hits, used, cap;
	uint8_t a[FFS_BLOCK], b[FFS_BLOCK], got[FFS_BLOCK];
	unsigned seed = 120;

	ck_assert_uint_eq(S, 768 * 1024);
	ffs_pcache_usage(fs, &used, &cap);
	ck_assert_uint_eq(cap, 128 * FF_MiB / FFS_BLOCK); /* the default */
	ck_assert_uint_eq(used, 0);
	ino = put_file(fs, "db", want, 2 * S, 48);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	for (uint32_t blk = 1; blk < 129; blk += 2) {
		put_bytes(fs, fh, want, blk * FFS_BLOCK, FFS_BLOCK, seed++);
		if (blk % 32 == 31)
			ck_assert_int_eq(ffs_flush(fs, fh), 0);
	}
	ffs_pcache_usage(fs, &used, &cap);
	ck_assert_uint_eq(used, 64);
	reads = st->patch_reads;
	hits = st->patch_cache_hits;
	check_content(fs, ino, want, 2 * S);
	ck_assert_uint_eq(st->patch_reads, reads);
	ck_assert_uint_ge(st->patch_cache_hits, hits + 64);
	/* 40 more: past half, merged in the background from the cache alone */
	for (uint32_t blk = 150; blk < 190; blk++)
		put_bytes(fs, fh, want, blk * FFS_BLOCK, FFS_BLOCK, seed++);
	hits = st->patch_cache_hits;
	ck_assert_int_eq(ffs_flush(fs, fh), 0);
	ck_assert_int_eq(ffs_settle(fs), 0); /* the merge done and its stripe mapped */
	ck_assert_uint_eq(st->patch_merges, 1);
	ck_assert_uint_eq(st->patch_reads, reads);
	ck_assert_uint_ge(st->patch_cache_hits, hits + 104);
	ffs_pcache_usage(fs, &used, &cap);
	ck_assert_uint_eq(used, 0); /* the merge dropped the patches, the cache their blocks */
	check_content(fs, ino, want, 2 * S);
	/* written before a mount: read from the members */
	for (uint32_t blk = 1; blk < 129; blk += 2) {
		put_bytes(fs, fh, want, S + blk * FFS_BLOCK, FFS_BLOCK, seed++);
		if (blk % 32 == 31)
			ck_assert_int_eq(ffs_flush(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	st = ffs_stats(fs);
	check_content(fs, ino, want, 2 * S);
	ck_assert_uint_ge(st->patch_reads, 64);
	ck_assert_uint_eq(st->patch_cache_hits, 0);
	ck_assert_int_eq(ffs_unmount(fs), 0);

	/* a cache of 8 blocks keeps the newest 8 */
	ut_patch_cache = 8 * FFS_BLOCK;
	fs = remount(NULL);
	st = ffs_stats(fs);
	ck_assert_int_eq(ffs_open(fs, ino, O_RDWR, &fh), 0);
	for (uint32_t blk = 0; blk < 64; blk++) {
		put_bytes(fs, fh, want, blk * FFS_BLOCK + 100, 50, seed++);
		if (blk % 16 == 15)
			ck_assert_int_eq(ffs_flush(fs, fh), 0);
	}
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	ffs_pcache_usage(fs, &used, &cap);
	ck_assert_uint_eq(cap, 8);
	ck_assert_uint_eq(used, 8);
	check_content(fs, ino, want, 2 * S);
	ck_assert_uint_ge(st->patch_cache_hits, 8);
	ck_assert_uint_ge(st->patch_reads, 56);
	/* a slot holds its newest block; forgotten, nothing */
	fill_pattern(a, sizeof(a), seed++);
	fill_pattern(b, sizeof(b), seed++);
	ffs_pcache_put(fs, 7, 3, a);
	ffs_pcache_put(fs, 7, 3, b);
	ck_assert(ffs_pcache_get(fs, 7, 3, got));
	ck_assert_int_eq(memcmp(got, b, sizeof(b)), 0);
	ffs_pcache_forget(fs, 7, 3, 1);
	ck_assert(!ffs_pcache_get(fs, 7, 3, got));
	check_content(fs, ino, want, 2 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A checkpoint writes its blocks home in runs of consecutive blocks, one
 * request per run (fs/meta/journal.c ckpt_write), not one per block.  300 small
 * files dirty inode-table, directory and pool blocks, many of them side by
 * side; after a commit, the checkpoint's member writes must number fewer
 * than its blocks times the META copies (one per block and copy before,
 * plus the superblock's), and at most one per copy for each run and each
 * META chunk a run crosses, plus the superblock's.  Then every file reads
 * back after a remount, from its home blocks (the journal is empty).
 */
START_TEST(checkpoint_writes_runs)
{
	static uint8_t want[300][5000];
	/* a journal that half fills with none of this: no checkpoint before ours */
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .journal_blocks = 4096 });
	const struct ff_geom *g = ffs_tools_geom(fs);
	const struct ff_raid_stats *rs = ff_raid_stats(fs->raid);
	uint64_t ino[300], w0, w1, blocks = 0, runs = 0;
	uint64_t *no;
	char name[32];

	for (unsigned i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "side%03u.xmp", i);
		ino[i] = put_file(fs, name, want[i], sizeof(want[i]), 200 + i);
	}
	pthread_mutex_lock(&fs->lock);
	ck_assert_int_eq(ffs_journal_commit(fs), 0);
	no = malloc(fs->nckpt * sizeof(*no));
	ck_assert_ptr_nonnull(no);
	for (struct mbuf *mb = fs->ckpt_head; mb; mb = mb->ckpt_next)
		no[blocks++] = mb->blockno;
	qsort(no, blocks, sizeof(*no), u64_cmp);
	for (uint64_t i = 0; i < blocks; i++)
		runs += i == 0 || no[i] != no[i - 1] + 1;
	free(no);
	ck_assert_uint_ge(blocks, 64);
	ck_assert_uint_lt(runs * 2, blocks); /* the setup: blocks side by side */
	w0 = atomic_load(&rs->member_writes);
	ck_assert_int_eq(ffs_journal_checkpoint(fs), 0);
	w1 = atomic_load(&rs->member_writes);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_msg(w1 - w0 < blocks * g->meta_copies,
		      "%llu member writes for %llu blocks in %llu runs, %u copies",
		      (unsigned long long)(w1 - w0), (unsigned long long)blocks,
		      (unsigned long long)runs, g->meta_copies);
	ck_assert_uint_le(w1 - w0, g->meta_copies * (runs + blocks * FFS_BLOCK / FF_META_CHUNK) + 8);
	fs = remount(fs);
	for (unsigned i = 0; i < 300; i++)
		check_content(fs, ino[i], want[i], sizeof(want[i]));
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A file of three whole stripes; _i 0: RAID5 x 4, 1: RAID6 x 4. */
/* What a write, truncate or chown by a caller without CAP_FSETID takes
 * (ffs_kill_priv, FFS_SET_KILL_PRIV: FUSE's killpriv_v2 leaves it to the
 * filesystem): set-user-ID, set-group-ID when the group may execute, and
 * the file capability; nothing else, and a mode given with it stands. */
START_TEST(kill_priv_takes_privileges)
{
	static const uint8_t cap[20] = { 0, 0, 0, 2, 0, 4 };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct stat a = { 0 }, st;
	uint64_t fh, ino = create(fs, FFS_ROOT_INO, "tool", &fh);
	char buf[32];

	a.st_mode = 06755;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_MODE, &st), 0);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "security.capability", cap, sizeof(cap), 0), 0);
	ck_assert_int_eq(ffs_setxattr(fs, ino, "user.keep", "k", 1, 0), 0);
	ck_assert_int_eq(ffs_kill_priv(fs, fh, NULL), 0);
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0755);
	ck_assert_int_eq(ffs_getxattr(fs, ino, "security.capability", buf, sizeof(buf)), -ENODATA);
	ck_assert_int_eq(ffs_getxattr(fs, ino, "user.keep", buf, sizeof(buf)), 1);
	/* set-group-ID without group execute stays (no caller given: ffs_caller) */
	a.st_mode = 02644;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_MODE, &st), 0);
	ck_assert_int_eq(ffs_kill_priv(fs, fh, NULL), 0);
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 02644);
	/* a truncate or chown with it; a mode given in the same call stands */
	a.st_mode = 04755;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_MODE, &st), 0);
	a.st_size = 0;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_SIZE | FFS_SET_KILL_PRIV, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0755);
	a.st_mode = 04711;
	a.st_uid = 7;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_UID | FFS_SET_MODE | FFS_SET_KILL_PRIV, &st),
			 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04711);
	ck_assert_uint_eq(st.st_uid, 7);
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	fs = remount(fs);
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 04711);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

static bool caller_in_no_group(const struct ffs_caller *c, gid_t gid)
{
	(void)c;
	(void)gid;
	return false;
}

static bool caller_in_every_group(const struct ffs_caller *c, gid_t gid)
{
	(void)c;
	(void)gid;
	return true;
}

static bool same_ts(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The attribute rules attr-diff-tmpfs checks against tmpfs, here on the
 * library alone: a chown (FFS_SET_KILL_PRIV with an id) takes set-ID bits
 * from a FIFO as from a regular file, never from a directory; set-group-ID
 * without group execute goes only from a caller neither in the file's
 * group nor with CAP_FSETID; a set-group-ID directory gives its group (and
 * to a directory its bit); a truncation to the same size stamps no time
 * unless the caller asks (ftruncate). */
START_TEST(attrs_as_linux)
{
	const struct ffs_caller nobody = { caller_in_no_group }, member = { caller_in_every_group };
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	struct stat a = { 0 }, st, was;
	uint64_t fh, ino;

	ck_assert_int_eq(ffs_mknod(fs, FFS_ROOT_INO, "fifo", S_IFIFO | 06755, 0, 0, 0, &st), 0);
	a.st_gid = 5;
	ck_assert_int_eq(ffs_setattr_as(fs, st.st_ino, &a, FFS_SET_GID | FFS_SET_KILL_PRIV, NULL, &st),
			 0);
	ck_assert_uint_eq(st.st_mode, S_IFIFO | 0755);
	ck_assert_int_eq(ffs_mkdir(fs, FFS_ROOT_INO, "dir", 06755, 0, 0, &st), 0);
	ck_assert_int_eq(ffs_setattr_as(fs, st.st_ino, &a, FFS_SET_GID | FFS_SET_KILL_PRIV, &nobody,
					&st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 06755);
	/* set-group-ID without group execute: the caller decides */
	ck_assert_int_eq(ffs_mknod(fs, FFS_ROOT_INO, "sock", S_IFSOCK | 02745, 0, 0, 0, &st), 0);
	ck_assert_int_eq(ffs_setattr_as(fs, st.st_ino, &a, FFS_SET_GID | FFS_SET_KILL_PRIV, &member,
					&st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFSOCK | 02745);
	ck_assert_int_eq(ffs_setattr_as(fs, st.st_ino, &a, FFS_SET_GID | FFS_SET_KILL_PRIV, &nobody,
					&st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFSOCK | 0745);
	ino = create(fs, FFS_ROOT_INO, "f", &fh);
	a.st_mode = 02745;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_MODE, &st), 0);
	ck_assert_int_eq(ffs_kill_priv(fs, fh, &member), 0);
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 02745);
	ck_assert_int_eq(ffs_kill_priv(fs, fh, &nobody), 0);
	ck_assert_int_eq(ffs_getattr(fs, ino, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFREG | 0745);
	/* truncation to the size the file has */
	ck_assert_int_eq(ffs_getattr(fs, ino, &was), 0);
	a.st_size = was.st_size;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_SIZE, &st), 0);
	ck_assert(same_ts(&st.st_mtim, &was.st_mtim) && same_ts(&st.st_ctim, &was.st_ctim));
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_SIZE | FFS_SET_MTIME_NOW, &st), 0);
	ck_assert(!same_ts(&st.st_mtim, &was.st_mtim) && !same_ts(&st.st_ctim, &was.st_ctim));
	was = st;
	a.st_size = 10;
	ck_assert_int_eq(ffs_setattr(fs, ino, &a, FFS_SET_SIZE, &st), 0);
	ck_assert(!same_ts(&st.st_mtim, &was.st_mtim) && !same_ts(&st.st_ctim, &was.st_ctim));
	ck_assert_int_eq(ffs_release(fs, fh), 0);
	/* a set-group-ID directory */
	ck_assert_int_eq(ffs_mkdir(fs, FFS_ROOT_INO, "sg", 02775, 0, 7, &st), 0);
	ino = st.st_ino;
	ck_assert_int_eq(ffs_mkdir(fs, ino, "d", 0755, 3, 3, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 02755);
	ck_assert_uint_eq(st.st_gid, 7);
	ck_assert_int_eq(ffs_mknod(fs, ino, "p", S_IFIFO | 0644, 0, 3, 3, &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFIFO | 0644);
	ck_assert_uint_eq(st.st_gid, 7);
	ck_assert_int_eq(ffs_symlink(fs, ino, "l", "p", 3, 3, &st), 0);
	ck_assert_uint_eq(st.st_gid, 7);
	fs = remount(fs);
	ck_assert_int_eq(ffs_lookup(fs, ino, "d", &st), 0);
	ck_assert_uint_eq(st.st_mode, S_IFDIR | 02755);
	ck_assert_uint_eq(st.st_gid, 7);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* ---- a tail slot's spare stripe (fs/data/tail.c): openings without a commit ---- */

/* A test's child that mounted the volume and ended as a crash would
 * (_exit): it must have ended with 0, or says the step that failed. */
static void child_ok(pid_t pid)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: step %d",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

#define SPARE_BATCHES 20 /* one block each: one row; 16 rows fill a tail stripe */

/* Batch i of the spare test: one block of the db file, in a stripe of its
 * own blocks (at most 20 of 48 per stripe: none is merged whole). */
static uint64_t spare_off(uint64_t S, unsigned i)
{
	return (i % 8) * S + (2 + 2 * (i / 8)) * 4096;
}

/* What the spare test's child does, mounted; 0 or the step that failed.
 * Every overwrite is fsync'd (flush); the last ones no commit holds. */
static int spare_child(uint64_t ino, uint8_t *want, uint64_t S)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	static uint8_t b[4096];
	struct ff_err err = { "" };
	_Atomic uint64_t *commits;
	struct ffs *fs;
	uint64_t fh, ofh, c;
	struct stat st;

	if (ffs_mount(ut_pp, NM, &o, &fs, &err) || ffs_open(fs, ino, O_RDWR, &fh))
		return 1;
	commits = &ffs_stats(fs)->commits;
	for (unsigned i = 0; i < SPARE_BATCHES; i++) {
		c = atomic_load(commits);
		fill_pattern(b, sizeof(b), 100 + i);
		memcpy(want + spare_off(S, i), b, sizeof(b));
		if (ffs_write(fs, fh, b, sizeof(b), spare_off(S, i)) != (ssize_t)sizeof(b) ||
		    ffs_flush(fs, fh))
			return 2;
		/* batch 0 opens a tail stripe no commit listed: its fsync
		 * commits; batch 1's reservation is the slot's spare, which
		 * the commit of a file's close lists */
		if (i == 1 && (ffs_create(fs, FFS_ROOT_INO, "other", 0644, 0, 0, O_RDWR, &st, &ofh) ||
			       ffs_write(fs, ofh, b, 100, 0) != 100 || ffs_flush(fs, ofh) ||
			       ffs_release(fs, ofh) || atomic_load(commits) == c))
			return 3;
		/* batch 16 opens the listed spare: no fsync commits after 1 */
		if (i >= 2 && atomic_load(commits) != c)
			return 10 + (int)i;
	}
	if (ffs_stats(fs)->tail_stripes != 2 || ffs_stats(fs)->patch_writes != SPARE_BATCHES)
		return 4;
	_exit(0); /* as a crash ends it: batches 2..19 are in no commit */
}

/* What the tail-chain test's child does, mounted; 0 or the step that
 * failed.  Batch 0 opens tail stripe A (its fsync commits), then with no
 * commit file t's tail goes to A's next rows (gone: a patch batch of a
 * file no commit holds), then batch 1 goes after it and is fsync'd. */
/* The file's buffers written out, as an eviction does: no commit. */
static int flush_no_commit(struct ffs *fs, uint64_t ino)
{
	struct finode *fi;
	int rc;

	pthread_mutex_lock(&fs->lock);
	rc = ffs_iget(fs, ino, &fi);
	pthread_mutex_unlock(&fs->lock);
	if (rc == 0) {
		rc = ffs_data_flush(fs, fi);
		pthread_mutex_lock(&fs->lock);
		ffs_iput(fs, fi);
		pthread_mutex_unlock(&fs->lock);
	}
	return rc;
}

static int chain_child(uint64_t ino, uint64_t tino, uint8_t *want, uint64_t S, bool gone)
{
	struct ffs_opts o = { .write_buffer_bytes = 16 << 20, .read_cache_bytes = 16 << 20,
			      .commit_interval_ms = 600000 };
	static uint8_t b[5000];
	struct ff_err err = { "" };
	struct ffs *fs;
	uint64_t fh, tfh, nfh;

	if (ffs_mount(ut_pp, NM, &o, &fs, &err) || ffs_open(fs, ino, O_RDWR, &fh) ||
	    ffs_open(fs, tino, O_RDWR, &tfh))
		return 1;
	for (unsigned i = 0; i < 2; i++) {
		fill_pattern(b, 4096, 200 + i);
		memcpy(want + spare_off(S, i), b, 4096);
		if (ffs_write(fs, fh, b, 4096, spare_off(S, i)) != 4096 || ffs_flush(fs, fh))
			return 2;
		if (i == 1)
			break;
		if (gone) { /* a new file no commit holds: a stripe, then a patch of it */
			static uint8_t full[192 * 1024];
			struct stat st;

			if (ffs_create(fs, FFS_ROOT_INO, "new", 0644, 0, 0, O_RDWR, &st, &nfh) ||
			    ffs_write(fs, nfh, full, S, 0) != (ssize_t)S)
				return 3;
			tino = st.st_ino;
			if (flush_no_commit(fs, tino) || ffs_write(fs, nfh, b, 4096, 4096) != 4096)
				return 4;
		} else { /* t: a stripe and 5000 bytes, its tail one row */
			fill_pattern(b, sizeof(b), 210);
			if (ffs_write(fs, tfh, b, sizeof(b), S) != (ssize_t)sizeof(b))
				return 3;
		}
		if (flush_no_commit(fs, tino))
			return 5;
	}
	if (ffs_stats(fs)->tail_stripes != 1 ||
	    (gone ? ffs_stats(fs)->patch_writes != 3 : ffs_stats(fs)->tail_packed != 1))
		return 6; /* all three in one tail stripe, as meant */
	_exit(0); /* as a crash ends it */
}

/* A tail written into a tail stripe after the commit that listed it
 * breaks the chain of batches replay follows from that commit's hwm; a
 * batch after the tail must not count on that listing.  And a batch whose
 * file the crash took (created after the last commit) still counts its
 * rows at replay, or the batches after it are lost (loop 1).  Fail before
 * their fixes: batch 1's fsync committed nothing and the mount after the
 * crash lost it. */
START_TEST(patches_after_tail_replayed)
{
	static uint8_t want[8 * 192 * 1024], t[192 * 1024];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_PATCH });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, ino, tino;
	pid_t pid;

	ino = put_file(fs, "db", want, 8 * S, 11);
	tino = put_file(fs, "t", t, S, 12);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(chain_child(ino, tino, want, S, _i == 1));
	child_ok(pid);
	for (unsigned i = 0; i < 2; i++) /* the child's fsync'd writes, in the model */
		fill_pattern(want + spare_off(S, i), 4096, 200 + i);
	fs = remount(NULL);
	check_content(fs, ino, want, 8 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* The slot's spare: a batch that opens it is replayable at once, so its
 * fsync commits nothing; after a crash, mount lays it over its file
 * although the spare is free in the last commit, and the volume gives
 * every stripe back once the files go.  Fails before spares: batch 16's
 * fsync committed. */
START_TEST(patches_spare_opens_without_commit)
{
	static uint8_t want[8 * 192 * 1024];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_PATCH });
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, free0 = whole_stripes_free(fs), ino;
	pid_t pid;

	ino = put_file(fs, "db", want, 8 * S, 11);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(spare_child(ino, want, S));
	child_ok(pid);
	for (unsigned i = 0; i < SPARE_BATCHES; i++) /* the child's writes, in the model */
		fill_pattern(want + spare_off(S, i), 4096, 100 + i);
	fs = remount(NULL);
	check_content(fs, ino, want, 8 * S);
	fs = remount(fs);
	check_content(fs, ino, want, 8 * S);
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "db"), 0);
	ffs_forget(fs, ino, 1);
	ck_assert_int_eq(ffs_unlink(fs, FFS_ROOT_INO, "other"), 0);
	fs = remount(fs);
	ck_assert_uint_eq(whole_stripes_free(fs), free0);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* Member m's block at offset off, rewritten with its bytes from `from` on inverted. */
static void invert_block(unsigned m, uint64_t off, size_t from)
{
	uint8_t blk[4096];
	int fd = open(ut_paths[m], O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, blk, sizeof(blk), (off_t)off), (ssize_t)sizeof(blk));
	for (size_t i = from; i < sizeof(blk); i++)
		blk[i] ^= 0xff;
	ck_assert_int_eq(pwrite(fd, blk, sizeof(blk), (off_t)off), (ssize_t)sizeof(blk));
	close(fd);
}

/* Where on the members a 4 KiB block of the data area passes test(blk):
 * the first one found, as member and offset; false if none. */
static bool find_block(uint64_t from, uint64_t to, bool (*test)(const uint8_t *, const void *),
		       const void *arg, unsigned *m, uint64_t *off)
{
	static uint8_t blk[4096];

	for (unsigned i = 0; i < NM; i++) {
		int fd = open(ut_paths[i], O_RDONLY);

		ck_assert_int_ge(fd, 0);
		for (uint64_t o = from; o < to; o += sizeof(blk))
			if (pread(fd, blk, sizeof(blk), (off_t)o) == (ssize_t)sizeof(blk) && test(blk, arg)) {
				close(fd);
				*m = i;
				*off = o;
				return true;
			}
		close(fd);
	}
	return false;
}

/* The patch batch header with the n-th lowest seq on the members (n from 0):
 * its member and offset. */
static void nth_header(uint64_t from, uint64_t to, unsigned n, unsigned *m, uint64_t *off)
{
	static uint8_t blk[4096];
	const struct ffs_pbatch *h = (const void *)blk;
	uint64_t seq[64], at[64];
	unsigned who[64], k = 0;

	for (unsigned i = 0; i < NM; i++) {
		int fd = open(ut_paths[i], O_RDONLY);

		ck_assert_int_ge(fd, 0);
		for (uint64_t o = from; o < to; o += sizeof(blk))
			if (pread(fd, blk, sizeof(blk), (off_t)o) == (ssize_t)sizeof(blk) &&
			    ff_le32(h->h.type) == FFS_B_PBATCH && k < 64) {
				seq[k] = ff_le64(h->seq);
				who[k] = i;
				at[k++] = o;
			}
		close(fd);
	}
	ck_assert_uint_gt(k, n);
	for (unsigned i = 0; i <= n; i++) /* selection: the i-th lowest into place i */
		for (unsigned j = i + 1; j < k; j++)
			if (seq[j] < seq[i]) {
				uint64_t t = seq[i], a = at[i];
				unsigned w = who[i];

				seq[i] = seq[j], at[i] = at[j], who[i] = who[j];
				seq[j] = t, at[j] = a, who[j] = w;
			}
	*m = who[n];
	*off = at[n];
}

static bool is_pattern(const uint8_t *blk, const void *arg)
{
	uint8_t want[4096];

	fill_pattern(want, sizeof(want), *(const unsigned *)arg);
	return memcmp(blk, want, sizeof(want)) == 0;
}

/*
 * A bad chunk does not cost replay the batches it holds or those after
 * it: after a crash left batches 2..19 in no commit (the spare test's
 * child), batch 2's header (in the first tail stripe) and batch 17's
 * patched block (in the second) are damaged on their members (fault: the
 * header's records and the whole block inverted in the member file; one
 * chunk per stripe, as parity allows).  The mount rebuilds both from parity, counts them, and every
 * batch is laid over the file; reads then repair both chunks.  Before:
 * batches 2..15, the rest of the first stripe, and 17 lost.
 */
START_TEST(patches_replay_heals_bad_chunks)
{
	static uint8_t want[8 * 192 * 1024];
	struct ffs *fs = mkfs_mount_params(64, (struct ffs_mkfs_params){ .version = FFS_VERSION_PATCH });
	const struct ff_geom *g = ff_raid_geom(ffs_raid(fs));
	uint64_t S = ffs_tools_geom(fs)->stripe_bytes, ino, from = g->data_offset, off;
	uint64_t to = g->data_offset + g->nstripes * g->chunk_bytes;
	unsigned m, pat17 = 117;
	pid_t pid;

	ino = put_file(fs, "db", want, 8 * S, 11);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(spare_child(ino, want, S));
	child_ok(pid);
	for (unsigned i = 0; i < SPARE_BATCHES; i++)
		fill_pattern(want + spare_off(S, i), 4096, 100 + i);
	nth_header(from, to, 2, &m, &off); /* batch 2's: the third lowest seq */
	invert_block(m, off, 80); /* its records; type, place and uuid still say what it is */
	ck_assert(find_block(from, to, is_pattern, &pat17, &m, &off)); /* in the second tail stripe */
	invert_block(m, off, 0);
	fs = remount(NULL);
	check_content(fs, ino, want, 8 * S);
	ck_assert_uint_ge(atomic_load(&ffs_stats(fs)->crc_errors), 2);
	fs = remount(fs);
	check_content(fs, ino, want, 8 * S);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

/* A tail stripe let go twice in one transaction is freed once (tail.c's
 * ffs_tail_closed): replay releases a listed stripe's last patch, which frees
 * it, then lets every listed stripe go.  Before, the second freed it again
 * and failed on its bitmap bit ("already clear: run fsck"), and a power
 * cut so left a volume that would not mount (crash-powerloss in CI). */
START_TEST(tail_stripe_freed_once)
{
	struct ffs *fs = mkfs_mount(64, 64 * 1024);
	uint32_t crc[FF_MEMBERS_MAX] = { 0 };
	uint64_t p = ff_le64(fs->sb->nstripes) - 1; /* the last: nothing took it */
	struct statvfs sv;
	fsblkcnt_t free0;

	ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
	free0 = sv.f_bfree;
	pthread_mutex_lock(&fs->lock);
	ck_assert(!ffs_stripe_in_use(fs, p));
	ck_assert_int_eq(ffs_take_stripes(fs, p, 1), 0);
	ck_assert_int_eq(ffs_csum_set(fs, p, FFS_CSUM_TAILS, FFS_CSUM_TAIL_PACK(1, 0), crc), 0);
	ck_assert(!ffs_stripe_freed_in_tx(fs, p));
	ck_assert_int_eq(ffs_tail_closed(fs, p), 0);
	ck_assert(ffs_stripe_freed_in_tx(fs, p));
	ck_assert_int_eq(ffs_tail_closed(fs, p), 0);
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(ffs_journal_commit(fs), 0);
	ck_assert_int_eq(ffs_statfs(fs, &sv), 0);
	ck_assert_uint_eq(sv.f_bfree, free0);
	fs = remount(fs);
	pthread_mutex_lock(&fs->lock);
	ck_assert(!ffs_stripe_in_use(fs, p));
	pthread_mutex_unlock(&fs->lock);
	ck_assert_int_eq(ffs_unmount(fs), 0);
	ut_remove_members(NM);
}
END_TEST

START_TEST(patches_bad_block_healed)
{
	patch_bad_block(5 + (unsigned)_i, false);
}
END_TEST

/* A file of a stripe and a tail, the patch inside the tail; RAID5, RAID6. */
START_TEST(patches_bad_block_in_tail_healed)
{
	patch_bad_block(5 + (unsigned)_i, true);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fs");
	TCase *tc = tcase_create("library");
	SRunner *sr;
	int failed;

	ff_log_set_level(getenv("FRAMEFS_LOG") ? FF_LOG_DEBUG : FF_LOG_WARN);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, small_file_round_trip);
	tcase_add_test(tc, grown_array_reads_every_file_read_only);
	tcase_add_test(tc, grow_new_files_take_the_new_width);
	tcase_add_test(tc, thread_ending_before_its_start_returns);
	tcase_add_test(tc, grow_keeps_preallocation);
	tcase_add_test(tc, grow_change_moves_the_old_file);
	tcase_add_test(tc, read_ahead_keeps_what_it_read_ahead);
	tcase_add_test(tc, reader_close_leaves_the_writers_error);
	tcase_add_test(tc, xattr_value_blocks);
	tcase_add_test(tc, scrub_finds_and_repairs);
	tcase_add_test(tc, scrub_history_ring);
	tcase_add_test(tc, scrub_small_data);
	tcase_add_test(tc, read_repairs_bad_chunk);
	tcase_add_test(tc, read_into_takes_whole_clean_chunks);
	tcase_add_test(tc, read_into_async_replies);
	tcase_add_test(tc, pools_stay_writable_across_a_fork);
	tcase_add_test(tc, read_fails_whole_at_an_unreadable_stripe);
	tcase_add_test(tc, flush_commits_only_changed_files);
	tcase_add_test(tc, commit_in_flight_lets_operations_run);
	tcase_add_test(tc, hold_ending_under_a_commit_in_flight);
	tcase_add_test(tc, preflush_lets_operations_run);
	tcase_add_test(tc, pool_past_per_file_cap_progress);
	tcase_add_test(tc, smallest_pool_many_writers_progress);
	tcase_add_test(tc, small_files_take_pool_blocks);
	tcase_add_test(tc, small_file_moves_to_stripes_once);
	tcase_add_test(tc, small_file_truncate);
	tcase_add_test(tc, small_files_leave_the_pool_reserve);
	tcase_add_test(tc, truncated_file_takes_its_stripes_back);
	tcase_add_test(tc, small_class_off);
	tcase_add_test(tc, small_file_fits_a_full_volume);
	tcase_add_test(tc, small_class_absent_on_version_2);
	tcase_add_test(tc, tails_share_stripes);
	tcase_add_test(tc, tails_rewrite_and_truncate);
	tcase_add_test(tc, tails_many_writers_find_a_slot);
	tcase_add_test(tc, punch_in_holes_allocates_nothing);
	tcase_add_test(tc, tails_bad_chunk_repaired);
	tcase_add_test(tc, bt_scan_ranges);
	tcase_add_test(tc, patches_small_overwrites);
	tcase_add_test(tc, patches_read_in_waves);
	tcase_add_test(tc, merge_holds_up_neither_flush_nor_writers);
	tcase_add_test(tc, settle_finishes_queued_merges);
	tcase_add_test(tc, patch_cache_serves_merges);
	tcase_add_test(tc, checkpoint_writes_runs);
	tcase_add_test(tc, settle_leaves_the_writers_error);
	tcase_add_test(tc, patches_spare_opens_without_commit);
	tcase_add_test(tc, patches_replay_heals_bad_chunks);
	tcase_add_test(tc, tail_stripe_freed_once);
	tcase_add_loop_test(tc, patches_after_tail_replayed, 0, 2);
	tcase_add_test(tc, kill_priv_takes_privileges);
	tcase_add_test(tc, attrs_as_linux);
	tcase_add_test(tc, check_runs_follow_writes);
	tcase_add_test(tc, read_racing_reuse_gets_its_file);
	tcase_add_test(tc, reuse_hold_keeps_freed_stripes);
	tcase_add_test(tc, request_times);
	tcase_add_loop_test(tc, patches_bad_block_healed, 0, 2);
	tcase_add_loop_test(tc, patches_bad_block_in_tail_healed, 0, 2);
	suite_add_tcase(s, tc);
	/* a case of its own: CK_RUN_CASE=grow_twice runs these alone */
	tc = tcase_create("grow_twice");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, grow_twice);
	tcase_add_test(tc, grow_twice_stopped_before_the_superblock);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	ut_runner_begin();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	ut_sweep();
	return failed ? 1 : 0;
}
