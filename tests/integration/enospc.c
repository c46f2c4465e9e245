/* SPDX-License-Identifier: MIT */
/*
 * Proves: running out of space fails with ENOSPC — for data (write, fsync
 * or close reports it, never EIO or silence) and for inodes (create, mkdir,
 * mknod, symlink) — and the volume stays usable: every file completed
 * before reads back, deleting frees space that new writes can use, nothing
 * leaks (after deleting everything, a remount shows exactly the free space
 * and inodes of the empty volume); and space reserved ahead by writers that
 * hold their files open never makes another writer fail while there is room.  Needs a volume made with few inodes
 * (mkfs -N).
 */
#include <sys/statvfs.h>

#include "it.h"

#define MiB (1024 * 1024)
#define FRAME (24 * MiB + 12345)

static const char *state_file(void)
{
	return P("../enospc.state");
}

/* Write one frame; 0 done, 1 out of space (ENOSPC seen), -1 other error. */
static int write_frame(const char *path, uint64_t seed)
{
	static uint8_t *buf;
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644), rc = 0, err = 0;

	if (!buf)
		IT_MUST((buf = malloc(FRAME)) ? 0 : -1);
	if (fd < 0)
		return errno == ENOSPC ? 1 : -1;
	it_fill(buf, FRAME, seed, 0);
	/* a short write is allowed when space runs out; the next one says why */
	for (size_t off = 0; off < FRAME && !err;) {
		size_t n = FRAME - off < MiB ? FRAME - off : MiB;
		ssize_t w = pwrite(fd, buf + off, n, (off_t)off);

		if (w < 0)
			err = errno;
		else if (w == 0)
			err = -1;
		else
			off += (size_t)w;
	}
	if (!err && fsync(fd) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	if (err == ENOSPC)
		rc = 1;
	else if (err) {
		rc = -1;
		IT_FAIL("%s: %s where ENOSPC or success was due", path, err > 0 ? strerror(err) : "write of 0 bytes");
	}
	return rc;
}

/* Writers that keep their files open hold stripes reserved ahead of their
 * writes; twelve of them, each in its own directory with 2 MiB written, use
 * a small part of the volume and must not be refused space. */
static void many_open_writers(void)
{
	uint8_t *buf = malloc(2 * MiB);
	int fds[12];

	IT_MUST(buf ? 0 : -1);
	it_fill(buf, 2 * MiB, 500, 0);
	for (int i = 0; i < 12; i++) {
		IT_MUST(mkdir(P("w%d", i), 0755));
		IT_MUST(fds[i] = open(P("w%d/f", i), O_CREAT | O_RDWR, 0644));
		EXPECT(it_write_all(fds[i], buf, 2 * MiB, 0) == 0, "open writer %d: %s", i, strerror(errno));
	}
	for (int i = 0; i < 12; i++) {
		EXPECT_OK(close(fds[i]));
		it_check_file(P("w%d/f", i), 2 * MiB, 500);
		EXPECT_OK(unlink(P("w%d/f", i)));
		EXPECT_OK(rmdir(P("w%d", i)));
	}
	free(buf);
}

static void it_run(void)
{
	struct statvfs empty, full, v;
	int nframes = 0, r, ninodes = 0, fd;
	FILE *f;

	sync();
	IT_MUST(statvfs(it_mnt, &empty));
	f = fopen(state_file(), "w");
	IT_MUST(f ? 0 : -1);
	fprintf(f, "%llu %llu\n", (unsigned long long)empty.f_bfree, (unsigned long long)empty.f_ffree);
	fclose(f);
	many_open_writers();
	IT_MUST(mkdir(P("frames"), 0755));
	/* data: frames until the volume is full */
	for (;;) {
		r = write_frame(P("frames/f%04d", nframes), 300 + (uint64_t)nframes);
		if (r != 0)
			break;
		nframes++;
		IT_MUST(nframes < 10000 ? 0 : -1);
	}
	EXPECT(r == 1, "filling the volume ended in ENOSPC");
	EXPECT(nframes * (uint64_t)FRAME > empty.f_bfree * empty.f_frsize / 2,
	       "most of the space was usable (%d frames)", nframes);
	printf("volume full after %d frames of %u bytes\n", nframes, FRAME);
	EXPECT_OK(statvfs(it_mnt, &full));
	EXPECT(full.f_bavail * full.f_frsize < 2 * (uint64_t)FRAME, "statfs shows the volume full");
	/* again: still ENOSPC, not a crash or EIO */
	EXPECT_EQ(write_frame(P("frames/again"), 1), 1);
	EXPECT_OK(unlink(P("frames/again")));
	EXPECT_OK(unlink(P("frames/f%04d", nframes)));
	/* everything completed reads back */
	for (int i = 0; i < nframes; i++)
		it_check_file(P("frames/f%04d", i), FRAME, 300 + (uint64_t)i);
	/* metadata still works when data is full */
	EXPECT_OK(mkdir(P("meta-ok"), 0755));
	EXPECT_OK(rename(P("meta-ok"), P("meta-ok2")));
	EXPECT_OK(rmdir(P("meta-ok2")));
	/* deleting makes room: a new frame fits again */
	for (int i = 0; i < nframes; i += 2)
		EXPECT_OK(unlink(P("frames/f%04d", i)));
	EXPECT_EQ(write_frame(P("frames/new"), 400), 0);
	it_check_file(P("frames/new"), FRAME, 400);

	/* inodes: empty files until none is left */
	IT_MUST(mkdir(P("inodes"), 0755));
	for (;;) {
		fd = open(P("inodes/i%05d", ninodes), O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			break;
		close(fd);
		ninodes++;
		IT_MUST(ninodes < 100000 ? 0 : -1);
	}
	EXPECT(errno == ENOSPC, "creating files ended in ENOSPC, not %s", strerror(errno));
	printf("inodes exhausted after %d files\n", ninodes);
	EXPECT_OK(statvfs(it_mnt, &v));
	EXPECT_EQ(v.f_ffree, 0);
	EXPECT_ERR(mkdir(P("inodes/dir"), 0755), ENOSPC);
	EXPECT_ERR(mknod(P("inodes/node"), S_IFIFO | 0644, 0), ENOSPC);
	EXPECT_ERR(symlink("x", P("inodes/link")), ENOSPC);
	/* a hard link needs no inode */
	EXPECT_OK(link(P("inodes/i00000"), P("inodes/hard")));
	/* one freed inode can be used again: once the kernel has forgotten the
	 * unlinked one (FUSE sends that FORGET asynchronously, after unlink
	 * returned), so allow it up to 2 s */
	EXPECT_OK(unlink(P("inodes/i00001")));
	for (int t = 0; t < 200; t++) {
		fd = open(P("inodes/reused"), O_CREAT | O_WRONLY, 0644);
		if (fd >= 0 || errno != ENOSPC)
			break;
		usleep(10000);
	}
	EXPECT(fd >= 0, "the freed inode was not usable again within 2 s: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
	EXPECT_ERR(open(P("inodes/one-more"), O_CREAT | O_WRONLY, 0644), ENOSPC);
}

static void it_verify(void)
{
	struct statvfs v;
	unsigned long long bfree = 0, ffree = 0;
	FILE *f = fopen(state_file(), "r");
	char name[64];
	int n = 0;

	IT_MUST(f ? 0 : -1);
	IT_MUST(fscanf(f, "%llu %llu", &bfree, &ffree) == 2 ? 0 : -1);
	fclose(f);
	/* the surviving frames (odd numbers) and the new one */
	for (int i = 1;; i += 2) {
		struct stat st;

		if (stat(P("frames/f%04d", i), &st) < 0)
			break;
		it_check_file(P("frames/f%04d", i), FRAME, 300 + (uint64_t)i);
		n++;
	}
	EXPECT(n > 0, "frames survived the remount");
	it_check_file(P("frames/new"), FRAME, 400);
	EXPECT_OK(access(P("inodes/reused"), F_OK));
	EXPECT_OK(access(P("inodes/hard"), F_OK));
	/* delete everything: the volume is as empty as it was made */
	for (int i = 1; i < 2 * n; i += 2)
		EXPECT_OK(unlink(P("frames/f%04d", i)));
	EXPECT_OK(unlink(P("frames/new")));
	EXPECT_OK(rmdir(P("frames")));
	for (int i = 0; i < 100000; i++) { /* i00001 went in run */
		snprintf(name, sizeof(name), "inodes/i%05d", i);
		if (unlink(P("%s", name)) == 0 || (errno == ENOENT && i == 1))
			continue;
		if (errno != ENOENT)
			IT_FAIL("unlink %s: %s", name, strerror(errno));
		break;
	}
	EXPECT_OK(unlink(P("inodes/reused")));
	EXPECT_OK(unlink(P("inodes/hard")));
	EXPECT_OK(rmdir(P("inodes")));
	EXPECT_OK(it_statvfs_freed(&v, bfree, ffree));
	EXPECT(v.f_bfree == bfree, "free blocks %llu after deleting everything, %llu when empty",
	       (unsigned long long)v.f_bfree, bfree);
	EXPECT(v.f_ffree == ffree, "free inodes %llu after deleting everything, %llu when empty",
	       (unsigned long long)v.f_ffree, ffree);
}
