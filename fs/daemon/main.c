/* SPDX-License-Identifier: MIT */
/*
 * framefs: the FUSE daemon.
 *
 *   framefs [-f] [-o OPTIONS] MEMBER[,MEMBER...] MOUNTPOINT
 *
 * Also started by mount(8) for type fuse.framefs (mount.fuse runs it with
 * the source, the mountpoint and -o options), so /etc/fstab works:
 *
 *   /dev/nvme0n1,/dev/nvme1n1,/dev/nvme2n1,/dev/nvme3n1  /mnt/media  fuse.framefs  allow_other  0 0
 *   uuid=<array uuid>  /mnt/media  fuse.framefs  allow_other,nofail  0 0
 *
 * (UUID=/LABEL= are resolved in raid/scan.c; fstab writes them in lower
 * case, or mount(8) would look them up through blkid and fail.)
 *
 * Unless -f is given it goes to the background only once the array is
 * assembled and the filesystem mounted, so every error reaches the
 * terminal that started it.  SIGTERM or unmount writes everything out and
 * marks the array clean.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <fuse_lowlevel.h>
#include <fuse_opt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/daemon/ctl.h"
#include "fs/daemon/events.h"
#include "fs/daemon/fuse_ops.h"
#include "fs/daemon/offload.h"
#include "fs/daemon/transport.h"
#include "fs/ffs.h"
#include "raid/raid.h"

struct cli {
	char *members;
	char *members_glob; /* -o members=GLOB[:GLOB]: where UUID=/LABEL= look for file members */
	unsigned raid_workers, write_window, wbuf_mb, rcache_mb, commit_ms, readahead, threads, bdi_ra_kb;
	unsigned stuck_ms, event_timeout_s;
	char *event_cmd;
	char *transport;     /* -o transport=io_uring|dev (transport.c) */
	unsigned uring_depth;
	unsigned max_read_errors; /* -o max_read_errors=N; UINT_MAX: not given */
	unsigned pcache_mb;       /* -o patch_cache_mb=N; UINT_MAX: not given */
	int ro, help, version, force, allow_other, default_permissions;
};

enum { KEY_HELP, KEY_VERSION, KEY_RO, KEY_DISCARD, KEY_ALLOW_OTHER, KEY_DEFAULT_PERMISSIONS };

#define OPT(t, p) { t, offsetof(struct cli, p), 1 }
static const struct fuse_opt cli_opts[] = {
	OPT("raid_workers=%u", raid_workers),
	OPT("write_window=%u", write_window),
	OPT("write_buffer_mb=%u", wbuf_mb),
	OPT("read_cache_mb=%u", rcache_mb),
	OPT("patch_cache_mb=%u", pcache_mb),
	OPT("commit_ms=%u", commit_ms),
	OPT("readahead=%u", readahead),
	OPT("threads=%u", threads),
	OPT("stuck_request_ms=%u", stuck_ms),
	OPT("kernel_readahead_kb=%u", bdi_ra_kb),
	OPT("event_cmd=%s", event_cmd),
	OPT("event_timeout_s=%u", event_timeout_s),
	OPT("force", force),
	OPT("members=%s", members_glob),
	OPT("transport=%s", transport),
	OPT("uring_depth=%u", uring_depth),
	OPT("max_read_errors=%u", max_read_errors),
	FUSE_OPT_KEY("ro", KEY_RO),
	FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
	FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	/* mount(8)/fstab words that mean nothing to the daemon */
	FUSE_OPT_KEY("defaults", KEY_DISCARD),
	FUSE_OPT_KEY("auto", KEY_DISCARD),
	FUSE_OPT_KEY("noauto", KEY_DISCARD),
	FUSE_OPT_KEY("nofail", KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", KEY_DISCARD),
	FUSE_OPT_KEY("user", KEY_DISCARD),
	FUSE_OPT_KEY("users", KEY_DISCARD),
	FUSE_OPT_KEY("nouser", KEY_DISCARD),
	FUSE_OPT_KEY("rw", KEY_DISCARD),
	FUSE_OPT_END
};

static int cli_proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct cli *c = data;

	(void)out;
	switch (key) {
	case FUSE_OPT_KEY_NONOPT:
		if (!c->members) {
			c->members = strdup(arg);
			return 0;
		}
		return 1; /* the mountpoint: for fuse_parse_cmdline */
	case KEY_HELP: c->help = 1; return 0;
	case KEY_VERSION: c->version = 1; return 0;
	case KEY_RO: c->ro = 1; return 1; /* also a FUSE mount option */
	case KEY_ALLOW_OTHER: c->allow_other = 1; return 1; /* FUSE mount options: kept */
	case KEY_DEFAULT_PERMISSIONS: c->default_permissions = 1; return 1;
	case KEY_DISCARD: return 0;
	default: /* x-systemd.*, x-gvfs-*: fstab words for other programs */
		return key == FUSE_OPT_KEY_OPT && strncmp(arg, "x-", 2) == 0 ? 0 : 1;
	}
}

static void usage(const char *prog)
{
	printf("usage: %s [options] MEMBER[,MEMBER...]|UUID=UUID|LABEL=LABEL MOUNTPOINT\n\n"
	       "Mounts the framefs volume made by mkfs.framefs on MEMBERs (block devices or files,\n"
	       "in any order; one missing member of RAID5, two of RAID6, mount degraded).\n"
	       "UUID= (the array uuid) and LABEL= find the members by their superblocks: every\n"
	       "block device, the files matching -o members= and the globs in %s.\n"
	       "In /etc/fstab and mount units write uuid= or label= (lower case): mount(8) looks up\n"
	       "UUID= and LABEL= itself through blkid, which does not know framefs.\n\n"
	       "options:\n"
	       "  -h, --help             this help\n"
	       "  -V, --version          the version, and the FUSE transport it would use\n"
	       "  -f                     stay in the foreground\n"
	       "  -d                     FUSE debug output (implies -f)\n"
	       "  -s                     single-threaded\n"
	       "  -o clone_fd            over /dev/fuse, a descriptor of its own for each thread\n"
	       "  -o max_idle_threads=N  idle FUSE threads kept (default 8)\n"
	       "  -o ro                  read-only\n"
	       "  -o allow_other         let other users in (root, or user_allow_other in /etc/fuse.conf);\n"
	       "                         implies default_permissions\n"
	       "  -o default_permissions let the kernel check permissions\n"
	       "  -o raid_workers=N      RAID engine threads (default 2)\n"
	       "  -o write_window=N      stripe writes in progress per RAID thread (default 1 when\n"
	       "                         the members are files in RAM (tmpfs), else 16)\n"
	       "  -o write_buffer_mb=N   stripe-assembly memory (default 160)\n"
	       "  -o read_cache_mb=N     whole-stripe read cache (default 128)\n"
	       "  -o patch_cache_mb=N    the newest small overwrites' blocks, kept for the reads\n"
	       "                         and merges that follow (default 128, 0 = none)\n"
	       "  -o readahead=N         stripes read ahead (default 4)\n"
	       "  -o commit_ms=N         metadata commit interval (default 5000)\n"
	       "  -o threads=N           FUSE worker threads at most (default 16, at most 64)\n"
	       "  -o stuck_request_ms=N  log a request in flight longer than this (default 10000)\n"
	       "  -o kernel_readahead_kb=N  page-cache readahead for buffered readers (default 8192)\n"
	       "  -o event_cmd=PROGRAM   run PROGRAM EVENT MOUNTPOINT [MEMBER] (no shell) on member-failed,\n"
	       "                         degraded, rebuild-started, rebuild-finished, rebuild-failed,\n"
	       "                         scrub-found-errors, scrub-finished, label-changed,\n"
	       "                         grow-started, grow-finished, grow-failed,\n"
	       "                         events-dropped; it gets\n"
	       "                         FRAMEFS_EVENT, _VOLUME, _UUID, _LABEL, _MEMBER, _MEMBER_ROLE,\n"
	       "                         _MEMBER_SERIAL, _DETAIL in its environment; one at a time\n"
	       "  -o event_timeout_s=N   kill an event_cmd still running after N s (default 30)\n"
	       "  -o force               mount even if the array was not shut down cleanly\n"
	       "  -o members=GLOB[:GLOB] where UUID=/LABEL= also look for members that are files\n"
	       "                         (e.g. members=/srv/media/*.img)\n"
	       "  -o transport=io_uring|dev  how requests come: FUSE over io_uring (the default\n"
	       "                         where libfuse >= 3.18 and the kernel's fuse.enable_uring\n"
	       "                         allow it; else /dev/fuse, and the log says why) or /dev/fuse\n"
	       "  -o uring_depth=N       io_uring queue depth per CPU (default %u)\n"
	       "  -o max_read_errors=N   a member read error is healed from parity; more than N\n"
	       "                         within %u s fail the member (default %u, 0 = the first)\n"
	       "  fstab's words in -o (defaults, auto, noauto, nofail, _netdev, user, users, nouser,\n"
	       "  rw, x-*) are ignored\n",
	       prog, FF_MEMBERS_CONF, FFS_URING_DEPTH_DEFAULT, FF_RAID_READ_ERROR_WINDOW_S,
	       FF_RAID_MAX_READ_ERRORS);
}

/* The members the first argument names (raid.h: ff_members_resolve). */
static int resolve_members(const struct cli *c, struct ff_member_set *set)
{
	struct ff_err err = { "" };
	int rc = ff_members_resolve(c->members, c->members_glob, FF_MEMBERS_CONF, set, &err);

	if (rc == 0 && set->n > FF_MEMBERS_MAX) {
		ff_err_set(&err, "%s: %u members, at most %u", c->members, set->n, FF_MEMBERS_MAX);
		ff_member_set_free(set);
		rc = -E2BIG;
	}
	if (rc < 0)
		fprintf(stderr, "framefs: %s\n", err.msg);
	for (unsigned i = 0; rc == 0 && strchr(c->members, '=') && i < set->n; i++)
		ff_log(FF_LOG_INFO, "%s: found member %s", c->members, set->path[i]);
	return rc;
}

/*
 * Fork before any thread exists; the child reports back through a pipe
 * once mounted ("" for success, else the error), so the parent can exit
 * with the right status and message.
 */
static int background(int *report_fd)
{
	int p[2];
	pid_t pid;

	if (pipe(p) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		char msg[600];
		ssize_t n;

		close(p[1]);
		n = read(p[0], msg, sizeof(msg) - 1);
		if (n <= 0)
			_exit(1);
		msg[n] = '\0';
		if (msg[0] == '\0' || (n == 1 && msg[0] == '\n'))
			_exit(0);
		fprintf(stderr, "%s\n", msg);
		_exit(1);
	}
	close(p[0]);
	setsid();
	*report_fd = p[1];
	return 0;
}

static void report(int fd, const char *msg)
{
	if (fd < 0) {
		if (msg && *msg)
			fprintf(stderr, "%s\n", msg);
		return;
	}
	if (write(fd, msg && *msg ? msg : "\n", msg && *msg ? strlen(msg) : 1) < 0)
		_exit(1);
	close(fd);
}

/*
 * Buffered readers get the kernel's readahead, which FUSE caps at the bdi's
 * read_ahead_kb (128 KiB unless raised).  Raise it to a few stripes so that
 * playback through the page cache is a continuous read.  The mount's
 * device number comes from /proc/self/mountinfo: a stat() of the mountpoint
 * would be a request to this very daemon, whose loop is not running yet.
 */
static void tune_bdi(const char *mnt_real, unsigned kb)
{
	char line[4096], path[128];
	unsigned maj, min;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0;

	if (!f || !mnt_real)
		goto out;
	while (!found && fgets(line, sizeof(line), f)) {
		char mp[2048];

		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &maj, &min, mp) == 3 &&
		    strcmp(mp, mnt_real) == 0)
			found = 1;
	}
	if (found) {
		FILE *b;

		snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
		b = fopen(path, "we");
		if (b) {
			fprintf(b, "%u\n", kb);
			fclose(b);
		}
	}
out:
	if (f)
		fclose(f);
}

static void detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	if (chdir("/") < 0)
		return;
}

/* libfuse's messages (a ring that fails to start, say) go where ours go:
 * syslog once the daemon is in the background.  Its debug trace (-d, one
 * line per request) stays on stderr, as libfuse prints it. */
static void fuse_log_to_ours(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	if (level == FUSE_LOG_DEBUG) {
		vfprintf(stderr, fmt, ap);
		return;
	}
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	ff_log(level <= FUSE_LOG_ERR ? FF_LOG_ERR : level == FUSE_LOG_WARNING ? FF_LOG_WARN :
	       level == FUSE_LOG_DEBUG ? FF_LOG_DEBUG : FF_LOG_INFO, "libfuse: %s", line);
}

/* Before the session loop ran: free what parsing allocated (for ASan runs). */
static int early_exit(struct fuse_args *args, struct cli *c, struct fuse_cmdline_opts *fo, int rc)
{
	fuse_opt_free_args(args);
	free(c->members);
	free(c->event_cmd);
	free(c->members_glob);
	free(c->transport);
	free(fo->mountpoint);
	return rc;
}

int main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts fo = { 0 };
	struct cli c = { 0 };
	struct ffs_opts o = { 0 };
	struct fuse_session *se = NULL;
	struct ffs *fs = NULL;
	struct ffs_ctl *ctl = NULL;
	struct ffs_events *events = NULL;
	struct ff_err err = { "" };
	struct ff_member_set set = { 0 };
	char *mnt_real = NULL;
	char msg[600];
	int report_fd = -1, rc = 1;

	/* a few malloc arenas, not one per FUSE thread: resident memory stays bounded */
	mallopt(M_ARENA_MAX, 2);
	c.max_read_errors = UINT_MAX;
	c.pcache_mb = UINT_MAX;
	if (fuse_opt_parse(&args, &c, cli_opts, cli_proc) < 0)
		return early_exit(&args, &c, &fo, 2);
	if (c.help) {
		usage(argv[0]);
		return early_exit(&args, &c, &fo, 0);
	}
	if (c.version) {
		if (ffs_transport_choose(&args, c.transport, c.uring_depth) < 0)
			return early_exit(&args, &c, &fo, 2);
		printf("framefs 0.1.0 (libfuse %s, %s)\n", fuse_pkgversion(),
		       ffs_transport.uring_asked ? "FUSE over io_uring" : "FUSE over /dev/fuse");
		if (!ffs_transport.uring_asked)
			printf("FUSE over /dev/fuse: %s\n", ffs_transport.why_dev);
		return early_exit(&args, &c, &fo, 0);
	}
	if (fuse_parse_cmdline(&args, &fo) != 0)
		return early_exit(&args, &c, &fo, 2);
	if (!c.members || !fo.mountpoint) {
		usage(argv[0]);
		return early_exit(&args, &c, &fo, 2);
	}
	/* FUSE would mount on a file too, and every access would then fail */
	{
		struct stat st;

		if (stat(fo.mountpoint, &st) < 0) {
			fprintf(stderr, "framefs: mountpoint %s: %s; give an existing directory\n",
				fo.mountpoint, strerror(errno));
			return early_exit(&args, &c, &fo, 2);
		}
		if (!S_ISDIR(st.st_mode)) {
			fprintf(stderr, "framefs: mountpoint %s is not a directory; give a directory "
				"to mount on\n", fo.mountpoint);
			return early_exit(&args, &c, &fo, 2);
		}
	}
	/*
	 * The daemon checks no permissions itself (only access()): with
	 * allow_other alone every user could read and change every file.  The
	 * kernel checks them with default_permissions, so allow_other gets it.
	 */
	if (c.allow_other && !c.default_permissions) {
		if (fuse_opt_add_arg(&args, "-odefault_permissions") != 0)
			return early_exit(&args, &c, &fo, 2);
		ff_log(FF_LOG_INFO, "allow_other given without default_permissions: added "
		       "default_permissions, so that the kernel checks permissions for every user");
	}
	if (c.threads > FFS_REQ_SLOTS) {
		fprintf(stderr, "framefs: threads=%u: at most %u FUSE worker threads; give a smaller "
			"number\n", c.threads, FFS_REQ_SLOTS);
		return early_exit(&args, &c, &fo, 2);
	}
	if (ffs_transport_choose(&args, c.transport, c.uring_depth) < 0)
		return early_exit(&args, &c, &fo, 2);
	fuse_set_log_func(fuse_log_to_ours);
	rc = resolve_members(&c, &set);
	if (rc < 0)
		return early_exit(&args, &c, &fo, rc == -EINVAL ? 2 : 1);
	rc = 1;
	if (!fo.foreground && background(&report_fd) < 0) {
		fprintf(stderr, "framefs: cannot go to the background\n");
		ff_member_set_free(&set);
		return early_exit(&args, &c, &fo, 1);
	}
	o.ro = c.ro;
	o.force_clean = c.force;
	o.raid_workers = c.raid_workers;
	o.raid_write_window = c.write_window;
	o.write_buffer_bytes = (size_t)c.wbuf_mb * FF_MiB;
	o.read_cache_bytes = (size_t)c.rcache_mb * FF_MiB;
	o.patch_cache_bytes = c.pcache_mb == UINT_MAX ? 0 /* the default */
			      : c.pcache_mb == 0 ? FFS_PATCH_CACHE_OFF : (size_t)c.pcache_mb * FF_MiB;
	o.commit_interval_ms = c.commit_ms;
	o.readahead_stripes = c.readahead;
	o.stuck_request_ms = c.stuck_ms;
	o.max_read_errors = c.max_read_errors == UINT_MAX ? 0 /* the engine's default */
			    : c.max_read_errors == 0 ? FF_RAID_READ_ERRORS_NONE : c.max_read_errors;
	o.fault_spec = getenv("FRAMEFS_FAULT");  /* tests only: io/fault.h */
	o.undo_dir = getenv("FRAMEFS_UNDO_DIR");
	/* after background(): the event thread would not survive its fork */
	if (ffs_events_start(c.event_cmd, fo.mountpoint, c.event_timeout_s, &events) == 0) {
		o.event_fn = ffs_events_post;
		o.event_ctx = events;
	} else {
		ff_log(FF_LOG_ERR, "cannot start the event thread: events are only logged");
	}
	rc = ffs_mount((const char *const *)set.path, set.n, &o, &fs, &err);
	ff_member_set_free(&set);
	if (rc < 0) {
		snprintf(msg, sizeof(msg), "framefs: %s", err.msg[0] ? err.msg : "mount failed");
		report(report_fd, msg);
		ffs_events_stop(events);
		return early_exit(&args, &c, &fo, 1);
	}
	rc = 1;
	if (events) {
		struct ffs_info info;

		ffs_info(fs, &info);
		ffs_events_ready(events, info.uuid, info.label);
	}
	mnt_real = realpath(fo.mountpoint, NULL); /* before mounting: afterwards it would ask us */
	se = fuse_session_new(&args, &ffs_fuse_ops, sizeof(ffs_fuse_ops), fs);
	if (!se || fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, fo.mountpoint) != 0) {
		snprintf(msg, sizeof(msg), "framefs: cannot mount on %s", fo.mountpoint);
		report(report_fd, msg);
		if (se)
			fuse_session_destroy(se);
		ffs_unmount(fs);
		ffs_events_stop(events);
		free(mnt_real);
		return early_exit(&args, &c, &fo, 1);
	}
	if (!c.bdi_ra_kb)
		c.bdi_ra_kb = 8192;
	ffs_fuse_readahead_bytes = c.bdi_ra_kb * 1024;
	tune_bdi(mnt_real, c.bdi_ra_kb);
	ctl = ffs_ctl_start(fs, mnt_real, ffs_transport_json); /* framefs-admin's control socket */
	free(mnt_real);
	/* a grow under way goes on in the background, at the rates ctl set */
	if (ffs_grow_start(fs) < 0)
		ff_log(FF_LOG_ERR, "cannot start the grow's restripe: the next mount tries again");
	report(report_fd, "");
	if (!fo.foreground) {
		detach_stdio();
		ff_log_use_syslog(1);
	}
	ff_log(FF_LOG_INFO, "mounted on %s", fo.mountpoint);
	ffs_transport_offload_start();
	if (fo.singlethread) {
		rc = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *cfg = fuse_loop_cfg_create();

		fuse_loop_cfg_set_clone_fd(cfg, fo.clone_fd);
		fuse_loop_cfg_set_max_threads(cfg, c.threads ? c.threads : 16);
		fuse_loop_cfg_set_idle_threads(cfg, fo.max_idle_threads != UINT_MAX ? fo.max_idle_threads : 8);
		rc = fuse_session_loop_mt(se, cfg);
		fuse_loop_cfg_destroy(cfg);
	}
	/* libfuse returns the signal that ended the loop: a requested stop
	 * (SIGTERM from an init system, ^C) is not a failure */
	if (rc == SIGTERM || rc == SIGINT || rc == SIGHUP)
		rc = 0;
	ffs_offload_stop(); /* libfuse has had every reply: the workers are idle or finishing */
	ffs_ctl_stop(ctl);
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	if (ffs_unmount(fs) < 0) {
		ff_log(FF_LOG_ERR, "unmount could not write everything out");
		rc = 1;
	} else {
		ff_log(FF_LOG_INFO, "unmounted cleanly");
	}
	ffs_events_stop(events); /* after unmount: the engine posts events until it stops */
	free(fo.mountpoint);
	free(c.members);
	free(c.members_glob);
	free(c.transport);
	free(c.event_cmd);
	fuse_opt_free_args(&args);
	return rc ? 1 : 0;
}
