/* SPDX-License-Identifier: MIT */
/*
 * Proves: extended attributes — set, get, list, remove on files,
 * directories and symlinks (l*xattr); XATTR_CREATE/XATTR_REPLACE (EEXIST,
 * ENODATA); the size query and ERANGE for a short buffer; empty and large
 * values; ENOSPC/E2BIG when an inode's attribute space is full, with the
 * attributes already there untouched; persistence across a remount; an
 * inode's attributes vanish with it.
 */
#include <sys/xattr.h>

#include "it.h"

/* user.* is not allowed on symlinks (xattr(7)): they use trusted.* */
static char A[32], B[32], E[32], NONE[32];

static void ns(int l)
{
	const char *pre = l ? "trusted" : "user";

	snprintf(A, sizeof(A), "%s.a", pre);
	snprintf(B, sizeof(B), "%s.b", pre);
	snprintf(E, sizeof(E), "%s.empty", pre);
	snprintf(NONE, sizeof(NONE), "%s.none", pre);
}

static void set_get(const char *rel, int l)
{
	char buf[4096];
	ssize_t n;
	const char *p = P("%s", rel);
	ssize_t (*get)(const char *, const char *, void *, size_t) = l ? lgetxattr : getxattr;
	int (*set)(const char *, const char *, const void *, size_t, int) = l ? lsetxattr : setxattr;

	ns(l);
	EXPECT_ERR(get(p, NONE, buf, sizeof(buf)), ENODATA);
	EXPECT_OK(set(p, A, "alpha", 5, 0));
	EXPECT_OK(set(p, E, "", 0, 0));
	EXPECT_OK(set(p, "trusted.t", "T", 1, 0));
	n = get(p, A, buf, sizeof(buf));
	EXPECT(n == 5 && memcmp(buf, "alpha", 5) == 0, "%s: user.a reads back", rel);
	EXPECT_EQ(get(p, A, NULL, 0), 5);
	EXPECT_ERR(get(p, A, buf, 3), ERANGE);
	EXPECT_EQ(get(p, E, buf, sizeof(buf)), 0);
	EXPECT_ERR(set(p, A, "x", 1, XATTR_CREATE), EEXIST);
	EXPECT_ERR(set(p, B, "x", 1, XATTR_REPLACE), ENODATA);
	EXPECT_OK(set(p, A, "replaced value", 14, XATTR_REPLACE));
	n = get(p, A, buf, sizeof(buf));
	EXPECT(n == 14 && memcmp(buf, "replaced value", 14) == 0, "%s: replaced value", rel);
	EXPECT_OK(set(p, B, "beta", 4, XATTR_CREATE));
}

static int list_has(const char *list, ssize_t n, const char *name)
{
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		if (!strcmp(list + i, name))
			return 1;
	return 0;
}

static void listing(const char *rel, int l)
{
	char list[4096];
	ssize_t n, need;
	const char *p = P("%s", rel);

	ns(l);
	need = llistxattr(p, NULL, 0);
	n = llistxattr(p, list, sizeof(list));
	EXPECT(n > 0 && n == need, "%s: list size %zd, query said %zd", rel, n, need);
	EXPECT(list_has(list, n, A) && list_has(list, n, B) &&
	       list_has(list, n, E) && list_has(list, n, "trusted.t"),
	       "%s: listing names every attribute", rel);
	if (need > 1)
		EXPECT_ERR(llistxattr(p, list, (size_t)need - 1), ERANGE);
	EXPECT_OK(lremovexattr(p, B));
	EXPECT_ERR(lremovexattr(p, B), ENODATA);
	n = llistxattr(p, list, sizeof(list));
	EXPECT(n > 0 && !list_has(list, n, B) && list_has(list, n, A),
	       "%s: removed name gone from the list, others kept", rel);
}

static void big_values(void)
{
	static char val[65536], rd[65536];
	int made = 0;
	ssize_t n;

	IT_MUST(it_make_file(P("big"), 10, 80));
	it_fill(val, sizeof(val), 81, 0);
	/* 3000 bytes fits one inode's attribute block */
	EXPECT_OK(setxattr(P("big"), "user.v3000", val, 3000, 0));
	n = getxattr(P("big"), "user.v3000", rd, sizeof(rd));
	EXPECT(n == 3000 && memcmp(rd, val, 3000) == 0, "3000-byte value reads back");
	/* a value larger than the space left is refused, the others stay */
	{
		int rc = setxattr(P("big"), "user.v2000", val, 2000, 0);

		EXPECT(rc < 0 && (errno == ENOSPC || errno == E2BIG),
		       "value beyond the inode's attribute space: %s", rc < 0 ? strerror(errno) : "accepted");
	}
	{
		int rc = setxattr(P("big"), "user.huge", val, 65536, 0);

		EXPECT(rc < 0 && (errno == ENOSPC || errno == E2BIG),
		       "64 KiB value refused: %s", rc < 0 ? strerror(errno) : "accepted");
	}
	n = getxattr(P("big"), "user.v3000", rd, sizeof(rd));
	EXPECT(n == 3000 && memcmp(rd, val, 3000) == 0, "3000-byte value intact after refusals");
	/* fill with small ones until full, then replace one in place */
	for (int i = 0; i < 200; i++) {
		char name[32];

		snprintf(name, sizeof(name), "user.s%03d", i);
		if (setxattr(P("big"), name, val + i, 16, 0) < 0) {
			EXPECT(errno == ENOSPC || errno == E2BIG, "filling: %s", strerror(errno));
			break;
		}
		made++;
	}
	EXPECT(made > 10, "small attributes fit next to the large one (%d)", made);
	EXPECT_OK(setxattr(P("big"), "user.s000", "new!new!new!new!", 16, XATTR_REPLACE));
	n = getxattr(P("big"), "user.s000", rd, sizeof(rd));
	EXPECT(n == 16 && memcmp(rd, "new!new!new!new!", 16) == 0, "replace in a full block");
	/* a name longer than XATTR_NAME_MAX */
	{
		char name[300] = "user.";

		memset(name + 5, 'n', 280);
		name[285] = '\0';
		EXPECT_ERR(setxattr(P("big"), name, "v", 1, 0), ERANGE);
	}
}

static void it_run(void)
{
	IT_MUST(it_make_file(P("file"), 100, 82));
	IT_MUST(mkdir(P("dir"), 0755));
	IT_MUST(symlink("file", P("link")));
	set_get("file", 0);
	set_get("dir", 0);
	set_get("link", 1);
	listing("file", 0);
	listing("dir", 0);
	listing("link", 1);
	/* the symlink's attributes are its own, not its target's */
	{
		char buf[64];

		EXPECT_EQ(lgetxattr(P("link"), "trusted.a", buf, sizeof(buf)), 14);
		EXPECT_ERR(getxattr(P("link"), "trusted.a", buf, sizeof(buf)), ENODATA);
		EXPECT_ERR(lsetxattr(P("link"), "user.a", "x", 1, 0), EPERM);
	}
	big_values();
	/* a removed file's attributes go with it: a new file of the same name has none */
	IT_MUST(it_make_file(P("tmp"), 1, 83));
	EXPECT_OK(setxattr(P("tmp"), "user.x", "1", 1, 0));
	EXPECT_OK(unlink(P("tmp")));
	IT_MUST(it_make_file(P("tmp"), 1, 83));
	EXPECT_ERR(getxattr(P("tmp"), "user.x", NULL, 0), ENODATA);
	EXPECT_EQ(listxattr(P("tmp"), NULL, 0), 0);
}

static void it_verify(void)
{
	char buf[4096];
	static char val[65536];
	ssize_t n;

	it_fill(val, sizeof(val), 81, 0);
	n = getxattr(P("file"), "user.a", buf, sizeof(buf));
	EXPECT(n == 14 && memcmp(buf, "replaced value", 14) == 0, "file user.a after remount");
	n = getxattr(P("dir"), "trusted.t", buf, sizeof(buf));
	EXPECT(n == 1 && buf[0] == 'T', "dir trusted.t after remount");
	EXPECT_EQ(lgetxattr(P("link"), "trusted.empty", buf, sizeof(buf)), 0);
	EXPECT_ERR(getxattr(P("file"), "user.b", buf, sizeof(buf)), ENODATA);
	n = getxattr(P("big"), "user.v3000", buf, sizeof(buf));
	EXPECT(n == 3000 && memcmp(buf, val, 3000) == 0, "3000-byte value after remount");
	n = getxattr(P("big"), "user.s000", buf, sizeof(buf));
	EXPECT(n == 16 && memcmp(buf, "new!new!new!new!", 16) == 0, "replaced value after remount");
	n = getxattr(P("big"), "user.s005", buf, sizeof(buf));
	EXPECT(n == 16 && memcmp(buf, val + 5, 16) == 0, "small value after remount");
	/* removing everything leaves an empty list */
	EXPECT_OK(removexattr(P("file"), "user.a"));
	EXPECT_OK(removexattr(P("file"), "user.empty"));
	EXPECT_OK(removexattr(P("file"), "trusted.t"));
	EXPECT_EQ(listxattr(P("file"), buf, sizeof(buf)), 0);
	it_check_file(P("file"), 100, 82);
}
