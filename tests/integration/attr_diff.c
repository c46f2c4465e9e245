/* SPDX-License-Identifier: MIT */
/*
 * One fixed script of attribute operations, run in a directory, printing
 * one line per step: the call's result (ok or the errno's name) and the
 * object's mode, uid, gid, whether each of its times changed in the step,
 * and whether it has a security.capability xattr.  attr_diff.sh runs it
 * on a tmpfs (the reference: Linux's own rules) and on a framefs mount
 * and compares the lines; nothing here knows what either should say.
 *
 *   attr_diff DIR root     as root: DIR/r (root's own steps) and DIR/u
 *                          (files for the user, owned by uid 65534)
 *   attr_diff DIR user     as uid 65534, gid 65534, groups 65533,65532
 *                          (attr_diff.sh enters it with setpriv)
 *
 * Every step starts with an lstat of the object it reports on, so "same"
 * and "changed" compare with the attributes seen just before the call.
 * Steps that set up the next one (chmod to set-ID bits, xattrs) are steps
 * too: their results are compared as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define USER_ID 65534  /* the unprivileged user's uid and primary gid */
#define SUPP_A 65533   /* its supplementary groups */
#define SUPP_B 65532
#define OTHER_ID 1000  /* an owner and group nobody here is or is in */

static const char *base;
static int step_no;
static struct stat before;
static int before_ok;

/* A file capability (struct vfs_cap_data, revision 2: CAP_NET_BIND_SERVICE
 * permitted), as setcap would write it. */
static const unsigned char cap_v2[20] = { 0, 0, 0, 2, 0, 4, 0, 0 };
static const struct timespec t_explicit = { 1000000000, 123456789 };

static __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "attr_diff: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* DIR/rel (rotating buffers: up to 8 alive at once) */
static const char *P(const char *fmt, ...)
{
	static char bufs[8][4096];
	static unsigned next;
	char *b = bufs[next++ % 8], rel[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(b, 4096, "%s/%s", base, rel);
	return b;
}

static const char *err_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static const char *rel(const struct timespec *was, const struct timespec *now)
{
	return was->tv_sec == now->tv_sec && was->tv_nsec == now->tv_nsec ? "same" : "changed";
}

static void look(const char *path)
{
	before_ok = lstat(path, &before) == 0;
}

/* The state of path after a step: attributes, times against look()'s. */
static void state(char *out, size_t n, const char *path)
{
	struct stat st;
	char cap[20];
	const char *c;
	ssize_t len;

	if (lstat(path, &st) < 0) {
		snprintf(out, n, "lstat %s", err_name(errno));
		return;
	}
	len = lgetxattr(path, "security.capability", cap, sizeof(cap));
	c = len >= 0 ? "yes" : errno == ENODATA ? "no" : err_name(errno);
	if (!before_ok) {
		snprintf(out, n, "mode=%07o uid=%u gid=%u times=new cap=%s", (unsigned)st.st_mode,
			 (unsigned)st.st_uid, (unsigned)st.st_gid, c);
		return;
	}
	snprintf(out, n, "mode=%07o uid=%u gid=%u atime=%s mtime=%s ctime=%s cap=%s",
		 (unsigned)st.st_mode, (unsigned)st.st_uid, (unsigned)st.st_gid,
		 rel(&before.st_atim, &st.st_atim), rel(&before.st_mtim, &st.st_mtim),
		 rel(&before.st_ctim, &st.st_ctim), c);
	/* explicit times are the one place the value itself is compared */
	if (st.st_atim.tv_sec == t_explicit.tv_sec && st.st_atim.tv_nsec == t_explicit.tv_nsec)
		strncat(out, " atime=explicit", n - strlen(out) - 1);
	if (st.st_mtim.tv_sec == t_explicit.tv_sec && st.st_mtim.tv_nsec == t_explicit.tv_nsec)
		strncat(out, " mtime=explicit", n - strlen(out) - 1);
}

static void report(const char *label, long rc, int err, const char *path)
{
	char st[256];

	state(st, sizeof(st), path);
	printf("%03d %s: %s | %s\n", ++step_no, label, rc < 0 ? err_name(err) : "ok", st);
	fflush(stdout);
}

/* STEP(path, call, label...): look at path, make the call, report on path */
#define STEP(path, call, ...) do { \
	char l_[200]; \
	const char *p_ = (path); \
	long r_; \
	int e_; \
	snprintf(l_, sizeof(l_), __VA_ARGS__); \
	look(p_); \
	errno = 0; \
	r_ = (long)(call); \
	e_ = errno; \
	report(l_, r_, e_, p_); \
} while (0)

/* A setup call that must work (not compared: both sides stop if it fails) */
#define MUST(call) do { \
	if ((long)(call) < 0) \
		die("%s:%d: %s: %s", __FILE__, __LINE__, #call, strerror(errno)); \
} while (0)

enum kind { REG, DIR_, FIFO, SOCK, CHR, BLK };
static const char *const kind_name[] = { "reg", "dir", "fifo", "sock", "chr", "blk" };

static int make(enum kind k, const char *path, mode_t mode)
{
	int fd;

	switch (k) {
	case REG:
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, mode);
		return fd < 0 ? -1 : close(fd);
	case DIR_:
		return mkdir(path, mode);
	case FIFO:
		return mknod(path, S_IFIFO | mode, 0);
	case SOCK:
		return mknod(path, S_IFSOCK | mode, 0);
	case CHR:
		return mknod(path, S_IFCHR | mode, makedev(1, 3));
	case BLK:
		return mknod(path, S_IFBLK | mode, makedev(7, 250));
	}
	return -1;
}

/* An object of kind k with this owner and mode, made by root (the mode
 * after the owner: chown takes set-ID bits) */
static void fixture(enum kind k, const char *path, uid_t uid, gid_t gid, mode_t mode)
{
	MUST(make(k, path, 0600));
	MUST(lchown(path, uid, gid));
	MUST(chmod(path, mode));
}

static int write_one(const char *path)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		return -1;
	if (pwrite(fd, "W", 1, 0) != 1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

static int open_trunc(const char *path)
{
	int fd = open(path, O_WRONLY | O_TRUNC);

	return fd < 0 ? -1 : close(fd);
}

static int ftrunc(const char *path, off_t len)
{
	int fd = open(path, O_WRONLY), rc;

	if (fd < 0)
		return -1;
	rc = ftruncate(fd, len);
	if (rc < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

static int set_cap(const char *path)
{
	return lsetxattr(path, "security.capability", cap_v2, sizeof(cap_v2), 0);
}

/* utimensat with each kind of argument: N(ow), O(mit), E(xplicit) for atime
 * then mtime; "null" for no times at all */
static int utimes_as(const char *path, const char *how, int flags)
{
	struct timespec ts[2];

	if (strcmp(how, "null") == 0)
		return utimensat(AT_FDCWD, path, NULL, flags);
	for (int i = 0; i < 2; i++)
		ts[i] = how[i] == 'N' ? (struct timespec){ 0, UTIME_NOW }
		      : how[i] == 'O' ? (struct timespec){ 0, UTIME_OMIT } : t_explicit;
	return utimensat(AT_FDCWD, path, ts, flags);
}

static const char *const time_args[] = { "NN", "ON", "NO", "EO", "OE", "EE", "OO", "null" };

static void utimes_all(const char *path, const char *who, int flags)
{
	for (size_t i = 0; i < sizeof(time_args) / sizeof(time_args[0]); i++)
		STEP(path, utimes_as(path, time_args[i], flags), "%s utimensat(%s) %s", who,
		     time_args[i], path + strlen(base) + 1);
}

/* rename FROM over TO (both exist): the directory, the moved inode and the
 * one replaced (through an open descriptor: its name is gone) */
static void rename_over(const char *who, const char *dir, const char *from, const char *to)
{
	struct stat moved, victim, after;
	char st[256];
	int fd;

	MUST(lstat(P("%s/%s", dir, from), &moved));
	MUST(fd = open(P("%s/%s", dir, to), O_RDONLY));
	MUST(fstat(fd, &victim));
	STEP(P("%s", dir), rename(P("%s/%s", dir, from), P("%s/%s", dir, to)),
	     "%s rename %s over %s: the directory", who, from, to);
	before = moved;
	before_ok = 1;
	state(st, sizeof(st), P("%s/%s", dir, to));
	printf("%03d %s rename: the moved inode | %s\n", ++step_no, who, st);
	MUST(fstat(fd, &after));
	printf("%03d %s rename: the replaced inode | nlink=%lu ctime=%s mtime=%s\n", ++step_no, who,
	       (unsigned long)after.st_nlink, rel(&victim.st_ctim, &after.st_ctim),
	       rel(&victim.st_mtim, &after.st_mtim));
	close(fd);
}

/* chown-type steps on one object that ends up with set-ID bits before each */
static void chown_steps(const char *who, const char *path, int chmod_ok)
{
	const char *r = path + strlen(base) + 1;

	if (chmod_ok)
		STEP(path, chmod(path, 06755), "%s chmod 06755 %s", who, r);
	STEP(path, lchown(path, OTHER_ID, -1), "%s lchown(%d, -1) %s", who, OTHER_ID, r);
	if (chmod_ok)
		STEP(path, chmod(path, 06755), "%s chmod 06755 %s", who, r);
	STEP(path, lchown(path, -1, OTHER_ID), "%s lchown(-1, %d) %s", who, OTHER_ID, r);
	if (chmod_ok)
		STEP(path, chmod(path, 06745), "%s chmod 06745 %s", who, r);
	STEP(path, lchown(path, -1, 0), "%s lchown(-1, 0) %s (set-group-ID, no group execute)",
	     who, r);
	if (chmod_ok)
		STEP(path, chmod(path, 06755), "%s chmod 06755 %s", who, r);
	STEP(path, lchown(path, -1, -1), "%s lchown(-1, -1) %s", who, r);
	if (chmod_ok)
		STEP(path, chmod(path, 06755), "%s chmod 06755 %s", who, r);
	STEP(path, lchown(path, OTHER_ID, 0), "%s lchown(%d, 0) %s (both unchanged)", who,
	     OTHER_ID, r);
	if (chmod_ok)
		STEP(path, chmod(path, 06755), "%s chmod 06755 %s", who, r);
	STEP(path, set_cap(path), "%s set security.capability %s", who, r);
	STEP(path, lchown(path, 0, 0), "%s lchown(0, 0) %s", who, r);
	STEP(path, lsetxattr(path, "user.a", "1", 1, 0), "%s set user.a %s", who, r);
	STEP(path, lremovexattr(path, "user.a"), "%s remove user.a %s", who, r);
	STEP(path, lremovexattr(path, "security.capability"), "%s remove security.capability %s",
	     who, r);
}

static void root_steps(void)
{
	MUST(mkdir(P("r"), 0755));
	for (enum kind k = REG; k <= BLK; k++) {
		const char *path = P("r/%s", kind_name[k]);

		STEP(path, make(k, path, 0644), "root create %s 0644", kind_name[k]);
		chown_steps("root", path, 1);
		utimes_all(path, "root", 0);
	}
	/* a symlink: its own owner, no mode of its own */
	STEP(P("r/sym"), symlink("reg", P("r/sym")), "root symlink r/sym");
	chown_steps("root", P("r/sym"), 0);
	utimes_all(P("r/sym"), "root nofollow", AT_SYMLINK_NOFOLLOW);

	/* root writes and truncates: CAP_FSETID keeps set-ID bits, not capabilities */
	fixture(REG, P("r/w"), 0, 0, 06755);
	STEP(P("r/w"), write_one(P("r/w")), "root write r/w");
	STEP(P("r/w"), truncate(P("r/w"), 0), "root truncate r/w");
	STEP(P("r/w"), ftrunc(P("r/w"), 5), "root ftruncate r/w");
	STEP(P("r/w"), open_trunc(P("r/w")), "root open O_TRUNC r/w");
	STEP(P("r/w"), set_cap(P("r/w")), "root set security.capability r/w");
	STEP(P("r/w"), write_one(P("r/w")), "root write r/w (with a capability)");
	STEP(P("r/w"), set_cap(P("r/w")), "root set security.capability r/w");
	STEP(P("r/w"), truncate(P("r/w"), 0), "root truncate r/w (with a capability)");
	STEP(P("r/w"), set_cap(P("r/w")), "root set security.capability r/w");
	STEP(P("r/w"), open_trunc(P("r/w")), "root open O_TRUNC r/w (with a capability)");
	STEP(P("r/w"), truncate(P("r/w"), 0), "root truncate r/w to its size");
	STEP(P("r/w"), ftrunc(P("r/w"), 0), "root ftruncate r/w to its size");
	STEP(P("r/w"), open_trunc(P("r/w")), "root open O_TRUNC r/w (empty)");
	STEP(P("r/fifo"), truncate(P("r/fifo"), 0), "root truncate r/fifo");
	STEP(P("r/dir"), truncate(P("r/dir"), 0), "root truncate r/dir");

	/* a set-group-ID directory: what is made in it takes its group */
	MUST(mkdir(P("r/sg"), 0755));
	STEP(P("r/sg"), chown(P("r/sg"), 0, OTHER_ID), "root chown(0, %d) r/sg", OTHER_ID);
	STEP(P("r/sg"), chmod(P("r/sg"), 02775), "root chmod 02775 r/sg");
	for (enum kind k = REG; k <= BLK; k++) {
		const char *path = P("r/sg/%s", kind_name[k]);

		STEP(path, make(k, path, 02755), "root create r/sg/%s 02755", kind_name[k]);
	}
	STEP(P("r/sg/sym"), symlink("reg", P("r/sg/sym")), "root symlink r/sg/sym");

	/* rename over an existing file */
	MUST(make(REG, P("r/ra"), 0644));
	MUST(make(REG, P("r/rb"), 0644));
	rename_over("root", "r", "ra", "rb");
	MUST(mkdir(P("r/da"), 0755));
	MUST(mkdir(P("r/db"), 0755));
	/* tmpfs stamps the directory with the time it takes for the inode it
	 * replaces: looking at that one too makes its next stamp a fine one,
	 * not the coarse tick its creation may share with this step */
	MUST(lstat(P("r/db"), &before));
	STEP(P("r"), rename(P("r/da"), P("r/db")), "root rename r/da over the empty r/db");
}

/* What root makes for the user's steps, in DIR/u */
static void user_fixtures(void)
{
	MUST(mkdir(P("u"), 0777));
	MUST(chmod(P("u"), 0777));
	for (enum kind k = REG; k <= BLK; k++) {
		/* the case: the owner changes the group (set-group-ID with group execute) */
		fixture(k, P("u/%s-a", kind_name[k]), USER_ID, USER_ID, 06555);
		/* set-group-ID without group execute, the file's group one of the user's */
		fixture(k, P("u/%s-b", kind_name[k]), USER_ID, USER_ID, 06545);
		/* the same in a group the user is not in */
		fixture(k, P("u/%s-c", kind_name[k]), USER_ID, 0, 06545);
		/* no owner or group given */
		fixture(k, P("u/%s-d", kind_name[k]), USER_ID, USER_ID, 06555);
		/* a group the user is in through a supplementary group */
		fixture(k, P("u/%s-e", kind_name[k]), USER_ID, SUPP_A, 06575);
	}
	/* writes and truncations by the owner */
	static const struct { const char *name; gid_t gid; mode_t mode; } own[] = {
		{ "w-suid", USER_ID, 06755 }, { "w-sgid-x", USER_ID, 02775 },
		{ "w-sgid-in", USER_ID, 02745 }, { "w-sgid-supp", SUPP_B, 02745 },
		{ "w-sgid-out", 0, 02745 }, { "w-sgid-x-out", 0, 02775 },
		{ "t-suid", USER_ID, 06755 }, { "t-sgid-in", USER_ID, 02745 },
		{ "t-sgid-out", 0, 02745 }, { "t-sgid-x", USER_ID, 02775 },
		{ "f-suid", USER_ID, 06755 }, { "f-sgid-out", 0, 02745 },
		{ "t-suid2", USER_ID, 06755 }, { "f-suid2", USER_ID, 06755 },
		{ "o-suid", USER_ID, 06755 }, { "o-sgid-in", USER_ID, 02745 },
		{ "o-sgid-out", 0, 02745 }, { "o-sgid-x", USER_ID, 02775 },
		{ "m-out", 0, 0644 }, { "m-supp", SUPP_A, 0644 }, { "m-in", USER_ID, 0644 },
		{ "times", USER_ID, 0644 }, { "x-own", USER_ID, 0644 },
		{ "ra", USER_ID, 0644 }, { "rb", USER_ID, 0644 },
	};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		fixture(REG, P("u/%s", own[i].name), USER_ID, own[i].gid, own[i].mode);
	/* root's files the user may write (set-ID bits, capabilities) or not */
	fixture(REG, P("u/root-06777"), 0, 0, 06777);
	fixture(REG, P("u/root-02767"), 0, 0, 02767);
	fixture(REG, P("u/root-cap-w"), 0, 0, 0666);
	MUST(set_cap(P("u/root-cap-w")));
	fixture(REG, P("u/root-cap-t"), 0, 0, 0666);
	MUST(set_cap(P("u/root-cap-t")));
	fixture(REG, P("u/root-cap-chown"), USER_ID, USER_ID, 0644);
	MUST(set_cap(P("u/root-cap-chown")));
	fixture(REG, P("u/root-04755"), 0, 0, 04755);
	fixture(REG, P("u/root-0644"), 0, 0, 0644);
	fixture(REG, P("u/root-0666"), 0, 0, 0666);
	fixture(DIR_, P("u/dir-own"), USER_ID, USER_ID, 06755);
	/* a set-group-ID directory of a group the user is not in */
	fixture(DIR_, P("u/sg"), 0, 0, 02777);
	MUST(symlink("x-own", P("u/sym-root")));
}

static void check_user(void)
{
	gid_t groups[16];
	char line[256];
	int n = getgroups(16, groups), a = 0, b = 0;
	FILE *f;

	if (getuid() != USER_ID || geteuid() != USER_ID || getgid() != USER_ID ||
	    getegid() != USER_ID)
		die("the user phase must run as uid and gid %d (setpriv --reuid %d --regid %d)",
		    USER_ID, USER_ID, USER_ID);
	for (int i = 0; i < n; i++) {
		a |= groups[i] == SUPP_A;
		b |= groups[i] == SUPP_B;
	}
	if (n != 2 || !a || !b)
		die("the user phase must have exactly the supplementary groups %d,%d", SUPP_A, SUPP_B);
	f = fopen("/proc/self/status", "r");
	if (!f)
		die("/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0 && strtoull(line + 7, NULL, 16) != 0)
			die("the user phase must have no capabilities: %s", line);
	fclose(f);
}

static void user_steps(void)
{
	const char *u = "user";

	check_user();
	for (enum kind k = REG; k <= BLK; k++) {
		const char *n = kind_name[k];

		STEP(P("u/%s-a", n), lchown(P("u/%s-a", n), USER_ID, SUPP_A),
		     "user lchown(%d, %d) u/%s-a", USER_ID, SUPP_A, n);
		STEP(P("u/%s-b", n), lchown(P("u/%s-b", n), -1, SUPP_A), "user lchown(-1, %d) u/%s-b",
		     SUPP_A, n);
		STEP(P("u/%s-c", n), lchown(P("u/%s-c", n), -1, SUPP_B), "user lchown(-1, %d) u/%s-c",
		     SUPP_B, n);
		STEP(P("u/%s-d", n), lchown(P("u/%s-d", n), -1, -1), "user lchown(-1, -1) u/%s-d", n);
		STEP(P("u/%s-e", n), lchown(P("u/%s-e", n), USER_ID, -1), "user lchown(%d, -1) u/%s-e",
		     USER_ID, n);
		STEP(P("u/%s-e", n), lchown(P("u/%s-e", n), -1, 0), "user lchown(-1, 0) u/%s-e", n);
		STEP(P("u/%s-e", n), lchown(P("u/%s-e", n), 0, -1), "user lchown(0, -1) u/%s-e", n);
	}
	STEP(P("u/dir-own"), chown(P("u/dir-own"), -1, SUPP_A), "user chown(-1, %d) u/dir-own", SUPP_A);

	/* writes, truncations, truncating opens by the owner */
	static const char *const w[] = { "w-suid", "w-sgid-x", "w-sgid-in", "w-sgid-supp",
					 "w-sgid-out", "w-sgid-x-out" };
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		STEP(P("u/%s", w[i]), write_one(P("u/%s", w[i])), "user write u/%s", w[i]);
	static const char *const t[] = { "t-suid", "t-sgid-in", "t-sgid-out", "t-sgid-x" };
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		STEP(P("u/%s", t[i]), truncate(P("u/%s", t[i]), 3), "user truncate u/%s", t[i]);
	STEP(P("u/f-suid"), ftrunc(P("u/f-suid"), 2), "user ftruncate u/f-suid");
	STEP(P("u/t-suid2"), truncate(P("u/t-suid2"), 0), "user truncate u/t-suid2 to its size");
	STEP(P("u/f-suid2"), ftrunc(P("u/f-suid2"), 0), "user ftruncate u/f-suid2 to its size");
	STEP(P("u/f-sgid-out"), ftrunc(P("u/f-sgid-out"), 2), "user ftruncate u/f-sgid-out");
	static const char *const o[] = { "o-suid", "o-sgid-in", "o-sgid-out", "o-sgid-x" };
	for (size_t i = 0; i < sizeof(o) / sizeof(o[0]); i++)
		STEP(P("u/%s", o[i]), open_trunc(P("u/%s", o[i])), "user open O_TRUNC u/%s", o[i]);
	STEP(P("u/root-06777"), write_one(P("u/root-06777")), "user write u/root-06777");
	STEP(P("u/root-02767"), write_one(P("u/root-02767")), "user write u/root-02767");
	STEP(P("u/root-cap-w"), write_one(P("u/root-cap-w")), "user write u/root-cap-w");
	STEP(P("u/root-cap-t"), truncate(P("u/root-cap-t"), 0), "user truncate u/root-cap-t");
	STEP(P("u/root-cap-chown"), chown(P("u/root-cap-chown"), -1, SUPP_A),
	     "user chown(-1, %d) u/root-cap-chown", SUPP_A);

	/* the mode: set-group-ID given up where the group is not the user's */
	STEP(P("u/m-out"), chmod(P("u/m-out"), 02755), "user chmod 02755 u/m-out");
	STEP(P("u/m-supp"), chmod(P("u/m-supp"), 02755), "user chmod 02755 u/m-supp");
	STEP(P("u/m-in"), chmod(P("u/m-in"), 06755), "user chmod 06755 u/m-in");
	STEP(P("u/m-in"), chmod(P("u/m-in"), 01644), "user chmod 01644 u/m-in");

	/* root's files */
	STEP(P("u/root-04755"), chown(P("u/root-04755"), -1, -1), "user chown(-1, -1) u/root-04755");
	STEP(P("u/root-0644"), chown(P("u/root-0644"), -1, USER_ID), "user chown(-1, %d) u/root-0644",
	     USER_ID);
	STEP(P("u/root-0644"), chmod(P("u/root-0644"), 0666), "user chmod 0666 u/root-0644");
	STEP(P("u/root-0644"), setxattr(P("u/root-0644"), "user.a", "1", 1, 0),
	     "user set user.a u/root-0644");
	STEP(P("u/root-0666"), setxattr(P("u/root-0666"), "user.a", "1", 1, 0),
	     "user set user.a u/root-0666");
	utimes_all(P("u/root-0644"), u, 0);
	utimes_all(P("u/root-0666"), u, 0);
	utimes_all(P("u/times"), u, 0);

	/* xattrs on the user's own files */
	STEP(P("u/x-own"), setxattr(P("u/x-own"), "user.a", "1", 1, 0), "user set user.a u/x-own");
	STEP(P("u/x-own"), removexattr(P("u/x-own"), "user.a"), "user remove user.a u/x-own");
	STEP(P("u/x-own"), set_cap(P("u/x-own")), "user set security.capability u/x-own");
	STEP(P("u/fifo-a"), lsetxattr(P("u/fifo-a"), "user.a", "1", 1, 0), "user set user.a u/fifo-a");

	/* what the user makes: in its own directory and in a set-group-ID one */
	for (enum kind k = REG; k <= BLK; k++) {
		const char *path = P("u/new-%s", kind_name[k]);

		STEP(path, make(k, path, 06777), "user create u/new-%s 06777", kind_name[k]);
	}
	STEP(P("u/new-fifo"), lchown(P("u/new-fifo"), -1, SUPP_A), "user lchown(-1, %d) u/new-fifo",
	     SUPP_A);
	STEP(P("u/new-sym"), symlink("x-own", P("u/new-sym")), "user symlink u/new-sym");
	STEP(P("u/new-sym"), lchown(P("u/new-sym"), -1, SUPP_A), "user lchown(-1, %d) u/new-sym",
	     SUPP_A);
	STEP(P("u/sym-root"), lchown(P("u/sym-root"), -1, SUPP_A), "user lchown(-1, %d) u/sym-root",
	     SUPP_A);
	utimes_all(P("u/new-sym"), "user nofollow", AT_SYMLINK_NOFOLLOW);
	for (enum kind k = REG; k <= BLK; k++) {
		const char *path = P("u/sg/%s", kind_name[k]);

		STEP(path, make(k, path, 02775), "user create u/sg/%s 02775", kind_name[k]);
	}
	rename_over(u, "u", "ra", "rb");
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "root") != 0 && strcmp(argv[2], "user") != 0))
		die("usage: attr_diff DIR root|user");
	base = argv[1];
	umask(022);
	if (strcmp(argv[2], "root") == 0) {
		if (geteuid() != 0)
			die("the root phase must run as root");
		root_steps();
		user_fixtures();
	} else {
		user_steps();
	}
	return 0;
}
