/* SPDX-License-Identifier: MIT */
/*
 * What a VOLUME operand names, and how a request reaches it.
 *
 * A mountpoint is reached through its daemon's control socket (fs/daemon/ctl.h).
 * Members of an unmounted volume are opened here: the filesystem is
 * mounted in-process (read-only for status) and the request runs through
 * the very code the daemon runs (ffs_ctl_exec), so both answer alike.
 * Before opening members, every running daemon is asked for its members:
 * opening a mounted volume's members a second time would corrupt it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "tools/admin/admin.h"
#include "io/member.h"
#include "raid/sb.h"

/* ---- paths ------------------------------------------------------------------- */

/*
 * The real path of p without asking a FUSE daemon: realpath() of the
 * parent, plus the last name.  (A lookup of the mountpoint itself would be
 * a request to the daemon, which may be the thing that is stuck.)
 */
int abs_path(const char *in, char *out, size_t len)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *base, *d, *rd;
	size_t l;

	snprintf(tmp, sizeof(tmp), "%s", in);
	for (l = strlen(tmp); l > 1 && tmp[l - 1] == '/'; l--)
		tmp[l - 1] = '\0';
	snprintf(dir, sizeof(dir), "%s", tmp);
	base = basename(tmp);
	d = dirname(dir);
	if (strcmp(base, "/") == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		rd = realpath(in, NULL);
		if (!rd)
			return -errno;
		snprintf(out, len, "%s", rd);
		free(rd);
		return 0;
	}
	rd = realpath(d, NULL);
	if (!rd)
		return -errno;
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(rd, "/") ? rd : "", base) >= len) {
		free(rd);
		return -ENAMETOOLONG;
	}
	free(rd);
	return 0;
}

/* Is a framefs mounted at mnt (a real path)? */
static bool framefs_mounted_at(const char *mnt)
{
	char found[PATH_MAX];
	uint64_t dev;

	return ff_framefs_mount_find(mnt, 0, found, sizeof(found), &dev);
}

/* ---- resolving operands ---------------------------------------------------- */

const char *vol_members_glob;

static int add_paths(struct vol *v, const char *operand)
{
	char *copy = strdup(operand), *save = NULL;

	if (!copy)
		return -ENOMEM;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char p[PATH_MAX];
		int rc;

		if (v->npaths == ADMIN_PATHS_MAX) {
			free(copy);
			return -E2BIG;
		}
		rc = abs_path(t, p, sizeof(p));
		if (rc < 0) {
			fprintf(stderr, "framefs-admin: %s: %s\n", t, strerror(-rc));
			free(copy);
			return rc;
		}
		v->paths[v->npaths++] = strdup(p);
	}
	free(copy);
	return 0;
}

/* UUID=/LABEL= (or a comma list): the members it names, made absolute. */
static int add_spec(struct vol *v, const char *operand)
{
	struct ff_member_set set = { 0 };
	struct ff_err err = { "" };
	int rc = ff_members_resolve(operand, vol_members_glob, FF_MEMBERS_CONF, &set, &err);

	if (rc < 0) {
		fprintf(stderr, "framefs-admin: %s\n", err.msg);
		return rc;
	}
	for (unsigned i = 0; i < set.n && rc == 0; i++)
		rc = add_paths(v, set.path[i]);
	ff_member_set_free(&set);
	return rc;
}

int vol_resolve(struct vol *v, char *const *operands, unsigned n, const char *sock_override)
{
	struct stat st;
	char real[PATH_MAX];

	memset(v, 0, sizeof(*v));
	if (sock_override) {
		v->online = true;
		snprintf(v->sock, sizeof(v->sock), "%s", sock_override);
		snprintf(v->mnt, sizeof(v->mnt), "(socket %s)", sock_override);
		return EX_OK;
	}
	if (n == 0) {
		fprintf(stderr, "framefs-admin: no volume given (a mountpoint, or MEMBER[,MEMBER...])\n");
		return EX_USAGE;
	}
	if (n == 1 && (!strncasecmp(operands[0], "UUID=", 5) || !strncasecmp(operands[0], "LABEL=", 6)))
		return add_spec(v, operands[0]) < 0 ? EX_UNREACHABLE : EX_OK;
	if (n == 1 && !strchr(operands[0], ',') && abs_path(operands[0], real, sizeof(real)) == 0 &&
	    (framefs_mounted_at(real) || (lstat(real, &st) == 0 && S_ISDIR(st.st_mode)))) {
		v->online = true;
		snprintf(v->mnt, sizeof(v->mnt), "%s", real);
		if (ffs_ctl_sock_path(real, v->sock, sizeof(v->sock)) < 0) {
			fprintf(stderr, "framefs-admin: %s: path too long\n", real);
			return EX_USAGE;
		}
		if (!framefs_mounted_at(real) && access(v->sock, F_OK) != 0) {
			fprintf(stderr, "framefs-admin: %s is a directory, not a mounted framefs volume "
				"(give the members of an unmounted volume instead)\n", real);
			return EX_UNREACHABLE;
		}
		return EX_OK;
	}
	for (unsigned i = 0; i < n; i++)
		if (add_paths(v, operands[i]) < 0)
			return EX_USAGE;
	return EX_OK;
}

/* ---- talking to a daemon ---------------------------------------------------- */

static int sock_request(const char *sock, const char *line, json_object **reply, bool quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	/* a probe of other daemons (quiet) must not hang on a stuck one for long */
	struct timeval tv = { .tv_sec = quiet ? 5 : 30 };
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, rc = 0;

	*reply = NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		if (!quiet)
			fprintf(stderr, "framefs-admin: cannot reach the daemon at %s: %s%s\n", sock,
				strerror(-rc), rc == -EACCES || rc == -EPERM
				? " (framefs-admin must run as root)"
				: rc == -ENOENT || rc == -ECONNREFUSED
				? " (is the volume mounted by a framefs daemon running as root?)" : "");
		close(fd);
		return rc;
	}
	/* a send error (EPIPE) is not the end: a daemon that refuses the
	 * peer answers and closes without reading the request */
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) >= 0)
		(void)!send(fd, "\n", 1, MSG_NOSIGNAL);
	while (rc == 0) {
		ssize_t k;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap * 2 + 8192);

			if (!nb) {
				rc = -ENOMEM;
				break;
			}
			buf = nb;
		}
		k = recv(fd, buf + len, cap - len - 1, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && len && errno == ECONNRESET)
			break; /* the whole answer came before the reset */
		if (k < 0)
			rc = -errno;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (rc == 0 && buf) {
		buf[len] = '\0';
		*reply = json_tokener_parse(buf);
	}
	if (rc == 0 && !*reply)
		rc = -EPROTO;
	if (rc < 0 && !quiet)
		fprintf(stderr, "framefs-admin: no answer from the daemon at %s: %s\n", sock,
			strerror(-rc));
	free(buf);
	return rc;
}

static int build_line(const char *const *words, unsigned n, char *line, size_t len)
{
	size_t used = 0;

	line[0] = '\0';
	for (unsigned i = 0; i < n; i++) {
		char esc[FFS_CTL_LINE_MAX];
		int rc = ffs_ctl_escape(words[i], esc, sizeof(esc));

		if (rc < 0 || used + strlen(esc) + 2 > len)
			return -E2BIG;
		used += (size_t)snprintf(line + used, len - used, "%s%s", i ? " " : "", esc);
	}
	return 0;
}

int vol_request(struct vol *v, const char *const *words, unsigned n, json_object **reply)
{
	char line[FFS_CTL_LINE_MAX];
	char *answer = NULL;

	*reply = NULL;
	if (build_line(words, n, line, sizeof(line)) < 0) {
		fprintf(stderr, "framefs-admin: request too long\n");
		return -E2BIG;
	}
	if (v->online)
		return sock_request(v->sock, line, reply, false);
	ffs_ctl_exec(v->ctl, line, &answer);
	if (!answer)
		return -ENOMEM;
	*reply = json_tokener_parse(answer);
	free(answer);
	return *reply ? 0 : -EPROTO;
}

/* ---- offline -------------------------------------------------------------------- */

static bool same_file(const char *a, const struct stat *sb)
{
	struct stat sa;

	if (stat(a, &sa) < 0)
		return false;
	if (S_ISBLK(sa.st_mode) || S_ISBLK(sb->st_mode))
		return S_ISBLK(sa.st_mode) && S_ISBLK(sb->st_mode) && sa.st_rdev == sb->st_rdev;
	return sa.st_dev == sb->st_dev && sa.st_ino == sb->st_ino;
}

/* Does a running daemon's answer list one of our members (or spares)? */
static const char *daemon_holds(json_object *st, const char *path)
{
	static const char *lists[] = { "members", "spares" };
	struct stat sb;

	if (stat(path, &sb) < 0)
		return NULL;
	for (unsigned l = 0; l < 2; l++) {
		json_object *arr = jget(st, lists[l]);

		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			const char *p = jstr(json_object_array_get_idx(arr, i), "path", NULL);

			if (p && same_file(p, &sb))
				return jstr(st, "mountpoint", "?");
		}
	}
	return NULL;
}

/* Refuse members that a running daemon has open. */
static int check_not_mounted(struct vol *v)
{
	DIR *d = opendir(FFS_CTL_DIR);
	struct dirent *e;
	int rc = 0;

	if (!d)
		return 0;
	while (rc == 0 && (e = readdir(d))) {
		char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
		json_object *st = NULL;
		const char *req[] = { "status" };
		char line[16];

		if (!strstr(e->d_name, ".sock") ||
		    (size_t)snprintf(sock, sizeof(sock), "%s/%s", FFS_CTL_DIR, e->d_name) >= sizeof(sock))
			continue;
		build_line(req, 1, line, sizeof(line));
		if (sock_request(sock, line, &st, true) < 0)
			continue; /* a stale socket: nobody answers */
		for (unsigned i = 0; i < v->npaths && rc == 0; i++) {
			const char *mnt = daemon_holds(st, v->paths[i]);

			if (mnt) {
				fprintf(stderr, "framefs-admin: %s is in use by the framefs volume mounted "
					"on %s: give that mountpoint instead\n", v->paths[i], mnt);
				rc = -EBUSY;
			}
		}
		json_object_put(st);
	}
	closedir(d);
	return rc;
}

static const char *state_name(uint32_t s)
{
	switch (s) {
	case FF_MEMBER_ACTIVE: return "active";
	case FF_MEMBER_FAILED: return "failed";
	case FF_MEMBER_REBUILDING: return "rebuilding";
	default: return "missing";
	}
}

/* The array did not assemble: say what each member's superblock says. */
static void explain_members(struct vol *v, const char *why, int err, bool json)
{
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(o, "ok", json_object_new_boolean(false));
	json_object_object_add(o, "error", json_object_new_string(why));
	json_object_object_add(o, "errno", json_object_new_int(-err));
	for (unsigned i = 0; i < v->npaths && sb; i++) {
		json_object *m = json_object_new_object(), *roles = json_object_new_array();
		struct ff_err e = { "" };
		struct ff_member mem;
		char u[37];
		int rc;

		json_object_object_add(m, "path", json_object_new_string(v->paths[i]));
		rc = ff_member_open(&mem, v->paths[i], true, &e);
		if (rc == 0) {
			rc = ff_sb_read(&mem, sb);
			ff_member_close(&mem);
		}
		if (rc < 0) {
			json_object_object_add(m, "error", json_object_new_string(
				e.msg[0] ? e.msg : rc == -ENOENT ? "no framefs member superblock" : strerror(-rc)));
			json_object_put(roles);
			json_object_array_add(arr, m);
			continue;
		}
		ff_uuid_format(sb->array_uuid, u);
		json_object_object_add(m, "array_uuid", json_object_new_string(u));
		if (ff_le32(sb->role) == FF_ROLE_SPARE)
			json_object_object_add(m, "role", json_object_new_string("spare"));
		else
			json_object_object_add(m, "role", json_object_new_int((int)ff_le32(sb->role)));
		json_object_object_add(m, "events", json_object_new_uint64(ff_le64(sb->events)));
		for (unsigned r = 0; r < ff_le32(sb->nmembers) && r < FF_MEMBERS_MAX; r++)
			json_object_array_add(roles, json_object_new_string(
				state_name(ff_le32(sb->roles[r].state))));
		json_object_object_add(m, "roles_seen", roles);
		json_object_array_add(arr, m);
	}
	json_object_object_add(o, "members", arr);
	if (json) {
		print_json(o, stdout);
	} else {
		fprintf(stderr, "framefs-admin: %s\n", why);
		fprintf(stderr, "member superblocks (what each member last recorded):\n");
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *m = json_object_array_get_idx(arr, i), *roles = jget(m, "roles_seen");

			fprintf(stderr, "  %s: ", jstr(m, "path", "?"));
			if (jget(m, "error")) {
				fprintf(stderr, "%s\n", jstr(m, "error", ""));
				continue;
			}
			fprintf(stderr, "role %s, events %.0f, roles:", json_object_get_string(jget(m, "role")),
				jnum(m, "events"));
			for (size_t r = 0; roles && r < json_object_array_length(roles); r++)
				fprintf(stderr, " %zu=%s", r,
					json_object_get_string(json_object_array_get_idx(roles, r)));
			fprintf(stderr, "\n");
		}
	}
	json_object_put(o);
	free(sb);
}

int vol_open(struct vol *v, enum vol_mode mode, bool json)
{
	struct ffs_opts fo = { .ro = mode == VOL_STATUS, .read_cache_bytes = 16 * FF_MiB,
			       .write_buffer_bytes = 32 * FF_MiB };
	struct ff_raid_opts ro = { .read_only = mode == VOL_STATUS };
	struct ff_err err = { "" }, err2 = { "" };
	int rc;

	if (v->online)
		return EX_OK;
	if (check_not_mounted(v) < 0)
		return EX_UNREACHABLE;
	ff_log_set_level(FF_LOG_WARN);
	rc = ffs_mount((const char *const *)v->paths, v->npaths, &fo, &v->fs, &err);
	if (rc < 0) {
		/* the array without its filesystem: status and rebuild still make sense */
		rc = ff_raid_assemble((const char *const *)v->paths, v->npaths, &ro, &v->r, &err2);
		if (rc < 0) {
			explain_members(v, err2.msg[0] ? err2.msg : err.msg, rc, json);
			return EX_UNREACHABLE;
		}
		fprintf(stderr, "framefs-admin: the filesystem does not mount (%s); working on the "
			"array alone\n", err.msg);
	}
	v->ctl = ffs_ctl_new(v->fs, v->r, "offline");
	if (!v->ctl) {
		vol_close(v);
		return EX_UNREACHABLE;
	}
	if (mode == VOL_RW) { /* nothing else runs here: no reason to hold back */
		char *answer = NULL;

		ffs_ctl_exec(v->ctl, "set rebuild_min=0 rebuild_max=0 scrub_min=0 scrub_max=0", &answer);
		free(answer);
	}
	return EX_OK;
}

void vol_close(struct vol *v)
{
	ffs_ctl_free(v->ctl);
	v->ctl = NULL;
	if (v->fs && ffs_unmount(v->fs) < 0)
		fprintf(stderr, "framefs-admin: the volume could not be written out cleanly\n");
	if (v->r)
		ff_raid_close(v->r);
	v->fs = NULL;
	v->r = NULL;
	for (unsigned i = 0; i < v->npaths; i++)
		free(v->paths[i]);
	v->npaths = 0;
}
