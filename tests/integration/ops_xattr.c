/* SPDX-License-Identifier: MIT */
/*
 * Proves: extended attributes — set, get, list, remove on files,
 * directories and symlinks (l*xattr); XATTR_CREATE/XATTR_REPLACE (EEXIST,
 * ENODATA); the size query and ERANGE for a short buffer; empty and large
 * values of every size up to 65536 bytes (XATTR_SIZE_MAX: Samba stores SMB
 * streams so), 65537 answered E2BIG; sixteen 64 KiB values on one file and
 * ENOSPC for the next, other names when the entry block is full, with the
 * attributes already there untouched and room again after a removal; large
 * replaced by small and back; persistence across a remount; an inode's
 * attributes (and their value blocks) vanish with it.
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

/* Values of the sizes Samba's streams_xattr writes: up to 65536 bytes
 * (XATTR_SIZE_MAX), inline and in value blocks (fs/meta/xattr.c). */
static const size_t sizes[] = { 0, 1, 1024, 1025, 4000, 4097, 65536 };

static void check_value(const char *path, const char *name, size_t len, int seed)
{
	static char want[65536], rd[65536];
	ssize_t n;

	it_fill(want, len, seed, 0);
	n = getxattr(path, name, rd, sizeof(rd));
	EXPECT(n == (ssize_t)len && memcmp(rd, want, len) == 0, "%s %s: %zd bytes, want %zu, same bytes",
	       path, name, n, len);
	EXPECT_EQ(getxattr(path, name, NULL, 0), (ssize_t)len);
}

static void set_value(const char *path, const char *name, size_t len, int seed, int flags)
{
	static char val[65536];

	it_fill(val, len, seed, 0);
	EXPECT_OK(setxattr(path, name, val, len, flags));
}

static void value_sizes(void)
{
	static char val[65537];
	char name[32], list[512];
	ssize_t need = 0, n;

	IT_MUST(it_make_file(P("sizes"), 10, 80));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "user.v%zu", sizes[i]);
		set_value(P("sizes"), name, sizes[i], 81 + (int)i, XATTR_CREATE);
		need += (ssize_t)strlen(name) + 1;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(name, sizeof(name), "user.v%zu", sizes[i]);
		check_value(P("sizes"), name, sizes[i], 81 + (int)i);
	}
	n = listxattr(P("sizes"), list, sizeof(list));
	EXPECT(n == need && listxattr(P("sizes"), NULL, 0) == need, "list of 7 names: %zd bytes, want %zd",
	       n, need);
	EXPECT_ERR(listxattr(P("sizes"), list, (size_t)need - 1), ERANGE);
	EXPECT_ERR(getxattr(P("sizes"), "user.v65536", val, 65535), ERANGE);
	/* one byte past XATTR_SIZE_MAX: E2BIG (the kernel's answer, as on XFS or btrfs) */
	EXPECT_ERR(setxattr(P("sizes"), "user.over", val, 65537, 0), E2BIG);
	EXPECT_ERR(getxattr(P("sizes"), "user.over", NULL, 0), ENODATA);
	/* a large value replaced by a small one and back; inline to a chain and back */
	set_value(P("sizes"), "user.v65536", 10, 90, XATTR_REPLACE);
	check_value(P("sizes"), "user.v65536", 10, 90);
	set_value(P("sizes"), "user.v65536", 65536, 91, XATTR_REPLACE);
	check_value(P("sizes"), "user.v65536", 65536, 91);
	set_value(P("sizes"), "user.v1", 30000, 92, XATTR_REPLACE);
	check_value(P("sizes"), "user.v1", 30000, 92);
	set_value(P("sizes"), "user.v4097", 4096, 93, XATTR_REPLACE);
	check_value(P("sizes"), "user.v4097", 4096, 93);
	EXPECT_OK(removexattr(P("sizes"), "user.v4000"));
	EXPECT_ERR(getxattr(P("sizes"), "user.v4000", NULL, 0), ENODATA);
	/* a name longer than XATTR_NAME_MAX */
	{
		char lname[300] = "user.";

		memset(lname + 5, 'n', 280);
		lname[285] = '\0';
		EXPECT_ERR(setxattr(P("sizes"), lname, "v", 1, 0), ERANGE);
	}
}

/* Sixteen 64 KiB streams fit one file (FFS_XATTR_TOTAL_MAX), the
 * seventeenth answers ENOSPC with the others intact; removing one makes
 * room for it. */
static void many_streams(void)
{
	char name[32];
	int made = 0;

	IT_MUST(it_make_file(P("streams"), 1, 84));
	for (int i = 0; i < 40; i++) {
		static char val[65536];

		snprintf(name, sizeof(name), "user.stream%02d", i);
		it_fill(val, sizeof(val), 100 + i, 0);
		if (setxattr(P("streams"), name, val, sizeof(val), 0) < 0) {
			EXPECT(errno == ENOSPC, "stream %d refused with %s, want ENOSPC", i, strerror(errno));
			break;
		}
		made++;
	}
	EXPECT(made == 16, "64 KiB streams on one file: %d, want 16", made);
	EXPECT_ERR(getxattr(P("streams"), "user.stream16", NULL, 0), ENODATA);
	check_value(P("streams"), "user.stream00", 65536, 100);
	check_value(P("streams"), "user.stream15", 65536, 115);
	EXPECT_OK(removexattr(P("streams"), "user.stream03"));
	set_value(P("streams"), "user.stream16", 65536, 116, XATTR_CREATE);
	check_value(P("streams"), "user.stream16", 65536, 116);
	EXPECT_ERR(setxattr(P("streams"), "user.stream17", "x", 1, 0), ENOSPC);
	EXPECT_OK(setxattr(P("streams"), "user.stream16", "x", 1, XATTR_REPLACE));
	EXPECT_OK(setxattr(P("streams"), "user.small", "x", 1, 0));
	{
		static char val[65536];

		it_fill(val, sizeof(val), 116, 0);
		EXPECT_ERR(setxattr(P("streams"), "user.stream16", val, sizeof(val), XATTR_REPLACE), ENOSPC);
	}
	{
		char c = 0;

		EXPECT(getxattr(P("streams"), "user.stream16", &c, 1) == 1 && c == 'x',
		       "a refused replace keeps the value it had");
	}
	EXPECT_OK(removexattr(P("streams"), "user.small"));
	set_value(P("streams"), "user.stream16", 65536, 116, XATTR_REPLACE);
}

/* Small values that no longer fit inline beside others go to value blocks:
 * an entry block filled by inline values still takes values of any size. */
static void inline_full(void)
{
	char name[32];

	IT_MUST(it_make_file(P("inline"), 1, 87));
	for (int i = 0; i < 3; i++) {
		snprintf(name, sizeof(name), "user.i%d", i);
		set_value(P("inline"), name, 1024, 120 + i, 0);
	}
	set_value(P("inline"), "user.i3", 900, 123, 0);  /* the block: 4012 of 4064 bytes */
	set_value(P("inline"), "user.more", 900, 124, 0);
	set_value(P("inline"), "user.i1", 1000, 125, XATTR_REPLACE);
	set_value(P("inline"), "user.i3", 65536, 126, XATTR_REPLACE);
	set_value(P("inline"), "user.i1", 1024, 121, XATTR_REPLACE);
	check_value(P("inline"), "user.i0", 1024, 120);
	check_value(P("inline"), "user.i1", 1024, 121);
	check_value(P("inline"), "user.i3", 65536, 126);
	check_value(P("inline"), "user.more", 900, 124);
}

/* Small attributes until the entry block is full: ENOSPC, the others
 * intact, a replace in the full block and a remove that makes room. */
static void many_names(void)
{
	static char val[64];
	char name[32];
	int made = 0;

	IT_MUST(it_make_file(P("names"), 1, 85));
	it_fill(val, sizeof(val), 86, 0);
	for (int i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "user.s%03d", i);
		if (setxattr(P("names"), name, val + i % 32, 16, 0) < 0) {
			EXPECT(errno == ENOSPC, "filling: %s, want ENOSPC", strerror(errno));
			break;
		}
		made++;
	}
	EXPECT(made > 100 && made < 400, "16-byte attributes on one file: %d", made);
	EXPECT_OK(setxattr(P("names"), "user.s000", "new!new!new!new!", 16, XATTR_REPLACE));
	EXPECT_ERR(setxattr(P("names"), "user.s999", val, 16, 0), ENOSPC);
	EXPECT_OK(removexattr(P("names"), "user.s001"));
	EXPECT_OK(setxattr(P("names"), "user.s999", val, 16, 0));
	EXPECT(listxattr(P("names"), NULL, 0) == (ssize_t)made * 10, "list of %d names", made);
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
	value_sizes();
	many_streams();
	many_names();
	inline_full();
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
	ssize_t n;

	n = getxattr(P("file"), "user.a", buf, sizeof(buf));
	EXPECT(n == 14 && memcmp(buf, "replaced value", 14) == 0, "file user.a after remount");
	n = getxattr(P("dir"), "trusted.t", buf, sizeof(buf));
	EXPECT(n == 1 && buf[0] == 'T', "dir trusted.t after remount");
	EXPECT_EQ(lgetxattr(P("link"), "trusted.empty", buf, sizeof(buf)), 0);
	EXPECT_ERR(getxattr(P("file"), "user.b", buf, sizeof(buf)), ENODATA);
	check_value(P("sizes"), "user.v0", 0, 81);
	check_value(P("sizes"), "user.v1", 30000, 92);
	check_value(P("sizes"), "user.v1024", 1024, 83);
	check_value(P("sizes"), "user.v1025", 1025, 84);
	check_value(P("sizes"), "user.v4097", 4096, 93);
	check_value(P("sizes"), "user.v65536", 65536, 91);
	EXPECT_ERR(getxattr(P("sizes"), "user.v4000", NULL, 0), ENODATA);
	for (int i = 0; i <= 16; i++) {
		char name[32];

		snprintf(name, sizeof(name), "user.stream%02d", i);
		if (i == 3)
			EXPECT_ERR(getxattr(P("streams"), name, NULL, 0), ENODATA);
		else
			check_value(P("streams"), name, 65536, 100 + i);
	}
	check_value(P("inline"), "user.i2", 1024, 122);
	check_value(P("inline"), "user.i3", 65536, 126);
	check_value(P("inline"), "user.more", 900, 124);
	n = getxattr(P("names"), "user.s000", buf, sizeof(buf));
	EXPECT(n == 16 && memcmp(buf, "new!new!new!new!", 16) == 0, "replaced value after remount");
	/* every stream removed: their blocks are free again (fsck -n after this phase) */
	for (int i = 0; i <= 16; i++) {
		char name[32];

		snprintf(name, sizeof(name), "user.stream%02d", i);
		if (i != 3)
			EXPECT_OK(removexattr(P("streams"), name));
	}
	EXPECT_EQ(listxattr(P("streams"), NULL, 0), 0);
	/* a file with large values goes with its value blocks */
	EXPECT_OK(unlink(P("sizes")));
	/* removing everything leaves an empty list */
	EXPECT_OK(removexattr(P("file"), "user.a"));
	EXPECT_OK(removexattr(P("file"), "user.empty"));
	EXPECT_OK(removexattr(P("file"), "trusted.t"));
	EXPECT_EQ(listxattr(P("file"), buf, sizeof(buf)), 0);
	it_check_file(P("file"), 100, 82);
}
