/* SPDX-License-Identifier: MIT */
/*
 * Proves (with -o default_permissions,allow_other, and with -o allow_other
 * alone, which implies default_permissions): a user who is not root
 * gets EACCES where the mode bits deny access and EPERM where only the
 * owner (or root) may act — chmod, chown, explicit times, the sticky bit —
 * while what the modes allow works, and files a user creates are theirs;
 * and a write, truncate or chown takes set-user-ID, set-group-ID and file
 * capabilities as Linux does.
 *
 *   permissions MNT setup      as root: the tree
 *   permissions MNT user-a     as uid 54321 (setpriv)
 *   permissions MNT user-b     as uid 54322
 *   permissions MNT verify     as root, after a remount: ownership kept
 */
#define IT_OWN_MAIN
#include <dirent.h>
#include <sys/xattr.h>

#include "it.h"

#define UID_A 54321
#define UID_B 54322

/* A file capability (struct vfs_cap_data, revision 2: CAP_NET_BIND_SERVICE
 * permitted), as setcap would write it. */
static const uint8_t cap_v2[20] = { 0, 0, 0, 2, 0, 4, 0, 0 };

/* One byte written at the start of path, opened write-only. */
static void write_one(const char *path)
{
	int fd;

	EXPECT_OK(fd = open(path, O_WRONLY));
	if (fd >= 0) {
		EXPECT_EQ(pwrite(fd, "W", 1, 0), 1);
		close(fd);
	}
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_mode : 0;
}

/* The privileges a write, truncate or chown takes from a file (fs/ops.c
 * kill_priv with FUSE's killpriv_v2 on libfuse 3.18; the kernel itself on
 * 3.14): files A writes to, and what root's own chown and write take. */
static void setup_privileged(void)
{
	static const struct { const char *name; mode_t mode; } own[] = {
		{ "suid-write", 06755 }, { "suid-trunc", 06755 }, { "suid-otrunc", 06755 },
		{ "sgid-noexec", 02644 }, { "cap-user", 0644 },
	};
	char buf[20];

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		IT_MUST(it_make_file(P(own[i].name), 10, 160));
		IT_MUST(chown(P(own[i].name), UID_A, UID_A)); /* before the mode: chown takes it */
		IT_MUST(chmod(P(own[i].name), own[i].mode));
		EXPECT_EQ(mode_of(P(own[i].name)), S_IFREG | own[i].mode);
	}
	IT_MUST(setxattr(P("cap-user"), "security.capability", cap_v2, sizeof(cap_v2), 0));
	/* root's chown takes set-user-ID too */
	IT_MUST(it_make_file(P("suid-chown"), 10, 161));
	IT_MUST(chmod(P("suid-chown"), 04755));
	IT_MUST(chown(P("suid-chown"), UID_B, -1));
	EXPECT_EQ(mode_of(P("suid-chown")), S_IFREG | 0755);
	/* and root's write the file capability (CAP_FSETID keeps only the mode bits) */
	IT_MUST(it_make_file(P("cap-root"), 10, 162));
	IT_MUST(chmod(P("cap-root"), 04755));
	IT_MUST(setxattr(P("cap-root"), "security.capability", cap_v2, sizeof(cap_v2), 0));
	EXPECT_EQ(getxattr(P("cap-root"), "security.capability", buf, sizeof(buf)), 20);
	write_one(P("cap-root"));
	EXPECT_ERR(getxattr(P("cap-root"), "security.capability", buf, sizeof(buf)), ENODATA);
	EXPECT_EQ(mode_of(P("cap-root")), S_IFREG | 04755);
}

/* What A's write, truncate and truncating open take (see setup_privileged). */
static void user_privileged(void)
{
	char buf[20];
	int fd;

	write_one(P("suid-write"));
	EXPECT_EQ(mode_of(P("suid-write")), S_IFREG | 0755);
	EXPECT_OK(truncate(P("suid-trunc"), 3));
	EXPECT_EQ(mode_of(P("suid-trunc")), S_IFREG | 0755);
	EXPECT_OK(fd = open(P("suid-otrunc"), O_WRONLY | O_TRUNC));
	if (fd >= 0)
		close(fd);
	EXPECT_EQ(mode_of(P("suid-otrunc")), S_IFREG | 0755);
	/* set-group-ID without group execute is no privilege: it stays */
	write_one(P("sgid-noexec"));
	EXPECT_EQ(mode_of(P("sgid-noexec")), S_IFREG | 02644);
	EXPECT_EQ(getxattr(P("cap-user"), "security.capability", buf, sizeof(buf)), 20);
	write_one(P("cap-user"));
	EXPECT_ERR(getxattr(P("cap-user"), "security.capability", buf, sizeof(buf)), ENODATA);
}

static void setup(void)
{
	umask(0);
	IT_MUST(mkdir(P("private"), 0700));
	IT_MUST(it_make_file(P("private/secret"), 10, 150));
	IT_MUST(it_make_file(P("root600"), 10, 151));
	IT_MUST(chmod(P("root600"), 0600));
	IT_MUST(it_make_file(P("world644"), 10, 152));
	IT_MUST(chmod(P("world644"), 0644));
	IT_MUST(it_make_file(P("world666"), 10, 153));
	IT_MUST(chmod(P("world666"), 0666));
	IT_MUST(mkdir(P("rodir"), 0755));
	IT_MUST(it_make_file(P("rodir/f"), 10, 154));
	IT_MUST(mkdir(P("shared"), 01777));
	IT_MUST(chmod(P("shared"), 01777));
	IT_MUST(mkdir(P("open"), 0777));
	IT_MUST(chmod(P("open"), 0777));
	IT_MUST(it_make_file(P("noexec"), 10, 155));
	IT_MUST(chmod(P("noexec"), 0644));
	setup_privileged();
}

static void user_a(void)
{
	struct timespec ts[2] = { { 1000, 0 }, { 1000, 0 } };
	struct stat st;
	char buf[16];
	int fd;

	EXPECT_EQ(getuid(), UID_A);
	/* reading */
	EXPECT_ERR(open(P("root600"), O_RDONLY), EACCES);
	EXPECT_ERR(access(P("root600"), R_OK), EACCES);
	EXPECT_ERR(opendir(P("private")) ? 0 : -1, EACCES);
	EXPECT_ERR(open(P("private/secret"), O_RDONLY), EACCES);
	EXPECT_ERR(stat(P("private/secret"), &st), EACCES);
	EXPECT_OK(fd = open(P("world644"), O_RDONLY));
	if (fd >= 0) {
		EXPECT_EQ(read(fd, buf, sizeof(buf)), 10);
		close(fd);
	}
	/* writing */
	EXPECT_ERR(open(P("world644"), O_WRONLY), EACCES);
	EXPECT_ERR(open(P("root600"), O_WRONLY | O_APPEND), EACCES);
	EXPECT_ERR(open(P("world644"), O_WRONLY | O_APPEND), EACCES);
	EXPECT_ERR(open(P("world644"), O_RDWR | O_TRUNC), EACCES);
	EXPECT_ERR(truncate(P("world644"), 0), EACCES);
	EXPECT_ERR(setxattr(P("world644"), "user.x", "1", 1, 0), EACCES);
	EXPECT_OK(fd = open(P("world666"), O_WRONLY));
	if (fd >= 0) {
		EXPECT_EQ(pwrite(fd, "A", 1, 0), 1);
		close(fd);
	}
	/* directories that are not ours */
	EXPECT_ERR(open(P("rodir/new"), O_CREAT | O_WRONLY, 0644), EACCES);
	EXPECT_ERR(mkdir(P("rodir/d"), 0755), EACCES);
	EXPECT_ERR(unlink(P("rodir/f")), EACCES);
	EXPECT_ERR(rename(P("rodir/f"), P("open/f")), EACCES);
	EXPECT_ERR(symlink("x", P("rodir/l")), EACCES);
	EXPECT_ERR(mkdir(P("newtop"), 0755), EACCES);
	/* owner-only operations */
	EXPECT_ERR(chmod(P("world666"), 0777), EPERM);
	EXPECT_ERR(chown(P("world666"), UID_A, -1), EPERM);
	EXPECT_ERR(utimensat(AT_FDCWD, P("world644"), ts, 0), EPERM);
	EXPECT_ERR(utimensat(AT_FDCWD, P("world644"), NULL, 0), EACCES); /* "now" needs write access */
	EXPECT_OK(utimensat(AT_FDCWD, P("world666"), NULL, 0));        /* which world666 gives */
	EXPECT_ERR(access(P("noexec"), X_OK), EACCES);
	EXPECT_ERR(execl(P("noexec"), "noexec", (char *)NULL), EACCES);
	/* our own files */
	umask(022);
	EXPECT_OK(fd = open(P("shared/a-file"), O_CREAT | O_WRONLY, 0600));
	if (fd >= 0) {
		EXPECT_EQ(write(fd, "mine", 4), 4);
		close(fd);
	}
	EXPECT_OK(stat(P("shared/a-file"), &st));
	EXPECT_EQ(st.st_uid, UID_A);
	EXPECT_EQ(st.st_gid, UID_A);
	EXPECT_OK(chmod(P("shared/a-file"), 0640));
	EXPECT_OK(utimensat(AT_FDCWD, P("shared/a-file"), ts, 0));
	EXPECT_ERR(chown(P("shared/a-file"), UID_B, -1), EPERM);
	EXPECT_ERR(link(P("shared/a-file"), P("rodir/l")), EACCES);
	EXPECT_OK(link(P("shared/a-file"), P("open/a-link")));
	EXPECT_OK(unlink(P("open/a-link")));
	EXPECT_OK(setxattr(P("shared/a-file"), "user.owner", "a", 1, 0));
	EXPECT_OK(mkdir(P("open/a-dir"), 0700));
	EXPECT_OK(it_make_file(P("open/a-dir/inner"), 5, 156));
	EXPECT_OK(it_make_file(P("shared/a-open"), 5, 157));
	EXPECT_OK(chmod(P("shared/a-open"), 0666));
	user_privileged();
}

static void user_b(void)
{
	struct stat st;
	char buf[8];
	int fd;

	EXPECT_EQ(getuid(), UID_B);
	/* A's 0640 file: not readable by B (other group) */
	EXPECT_ERR(open(P("shared/a-file"), O_RDONLY), EACCES);
	EXPECT_ERR(getxattr(P("shared/a-file"), "user.owner", buf, sizeof(buf)), EACCES);
	EXPECT_ERR(opendir(P("open/a-dir")) ? 0 : -1, EACCES);
	EXPECT_ERR(stat(P("open/a-dir/inner"), &st), EACCES);
	/* sticky directory: B cannot remove or rename A's files, even writable ones */
	EXPECT_ERR(unlink(P("shared/a-file")), EPERM);
	EXPECT_ERR(unlink(P("shared/a-open")), EPERM);
	EXPECT_ERR(rename(P("shared/a-open"), P("shared/b-took")), EPERM);
	EXPECT_OK(fd = open(P("shared/a-open"), O_WRONLY));
	if (fd >= 0)
		close(fd);
	/* a plain 0777 directory lets B remove entries, but A's directory is not empty */
	EXPECT_ERR(rmdir(P("open/a-dir")), ENOTEMPTY);
	EXPECT_OK(it_make_file(P("shared/b-file"), 3, 158));
	EXPECT_OK(unlink(P("shared/b-file")));
}

static void verify(void)
{
	struct stat st;

	EXPECT_OK(stat(P("shared/a-file"), &st));
	EXPECT_EQ(st.st_uid, UID_A);
	EXPECT_EQ(st.st_mode, S_IFREG | 0640);
	EXPECT_EQ(st.st_mtim.tv_sec, 1000);
	EXPECT_OK(stat(P("open/a-dir"), &st));
	EXPECT_EQ(st.st_uid, UID_A);
	EXPECT_EQ(st.st_mode, S_IFDIR | 0700);
	EXPECT_OK(stat(P("world666"), &st));
	EXPECT_EQ(st.st_uid, 0);
	EXPECT_EQ(st.st_mode, S_IFREG | 0666);
	EXPECT_OK(stat(P("shared"), &st));
	EXPECT_EQ(st.st_mode, S_IFDIR | 01777);
	it_check_file(P("root600"), 10, 151);
	it_check_file(P("world644"), 10, 152);
	it_check_file(P("rodir/f"), 10, 154);
	/* root may do what the users could not */
	EXPECT_OK(unlink(P("shared/a-file")));
	EXPECT_OK(chown(P("world666"), UID_B, UID_B));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s MNT setup|user-a|user-b|verify\n", argv[0]);
		return 2;
	}
	it_mnt = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[2], "setup"))
		setup();
	else if (!strcmp(argv[2], "user-a"))
		user_a();
	else if (!strcmp(argv[2], "user-b"))
		user_b();
	else if (!strcmp(argv[2], "verify"))
		verify();
	else
		return 2;
	printf("%s %s: %d checks, %d failed\n", argv[0], argv[2], it_checks, it_failures);
	return it_failures ? 1 : 0;
}
