/* SPDX-License-Identifier: MIT */
/*
 * framefs-admin: watch and repair a framefs volume.
 *
 * Talks to the running daemon through its control socket (fs/daemon/ctl.h), or
 * opens the members of an unmounted volume itself (the same requests run
 * in-process, so the answers are the same).  See usage() for the commands.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/admin/admin.h"

#define POLL_MS 500

struct opts {
	bool json, force, no_wait, wait, no_repair, quiet, no_restripe;
	double watch_s;
	const char *sock;
	const char *footage_spec; /* status --footage FORMAT@FPS */
	struct footage footage;
};

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: framefs-admin [--json] COMMAND [options] VOLUME [ARGS]\n"
"\n"
"VOLUME is a mountpoint (the running daemon is asked through its control socket,\n"
"/run/framefs/<mountpoint>.sock, root only), or the members of an unmounted volume:\n"
"MEMBER[,MEMBER...] (status, rebuild and scrub also take them as separate words),\n"
"or UUID=UUID / LABEL=LABEL: found by reading the superblock of every block device,\n"
"of the files matching --members=GLOB[:GLOB] and of the globs in /etc/framefs/members.conf.\n"
"\n"
"  status [--watch[=SECS]] VOLUME    level, chunk, state (clean/degraded/rebuilding/\n"
"                                    failed), every member's role, state, path, size and\n"
"                                    NVMe model/serial/firmware; rebuild and scrub progress\n"
"         [--footage FORMAT@FPS]     adds the free space as running time of FORMAT (a\n"
"                                    framefs-frametest preset: 4k, 8k, dpx-uhd, ... or a\n"
"                                    frame size in KiB) at FPS frames per second, each\n"
"                                    frame rounded up to whole stripes\n"
"  metrics MOUNTPOINT                the status in the Prometheus text format (for\n"
"                                    node_exporter's textfile collector)\n"
"  fail [--force] VOLUME MEMBER      mark MEMBER failed (refused when the array could not\n"
"                                    survive it, unless --force); MEMBER is a path, its\n"
"                                    basename or a role number\n"
"  remove VOLUME MEMBER              take a failed member or a spare out of the array\n"
"  add [--force] VOLUME NEW          NEW takes over a failed role at once and is rebuilt,\n"
"                                    or waits as a hot spare for the next failure\n"
"  re-add VOLUME MEMBER              a member back from a short absence (failed, pulled,\n"
"                                    missing at mount) takes its role again; only what was\n"
"                                    written without it is rebuilt (offline: here, to the\n"
"                                    end); refused, saying why, when the array cannot prove\n"
"                                    what it missed: then add --force or replace\n"
"  replace [--force] VOLUME OLD NEW  copy OLD onto NEW while OLD keeps serving (NEW gets\n"
"                                    every write meanwhile); NEW takes OLD's role when the\n"
"                                    copy is done (follow it with rebuild); if OLD fails\n"
"                                    meanwhile, NEW is rebuilt from parity instead\n"
"  rebuild [--no-wait] VOLUME        start or resume the rebuild and follow it to the end;\n"
"                                    offline it runs here, from its checkpoint\n"
"  grow [--force] [--no-restripe] MEMBERS NEW...   add the members NEW to an unmounted\n"
"                                    volume (RAID5 or RAID6, same level) and move every\n"
"                                    file to the new width, here, to the end; with\n"
"                                    --no-restripe, stop once the array grew: the next mount\n"
"                                    moves the files in the background, yielding to streams;\n"
"                                    with no NEW, finish a grow that stopped; refusals say why\n"
"  grow [--wait] MOUNTPOINT          where a mounted volume's restripe stands; --wait\n"
"                                    follows it to the end\n"
"  scrub start [--no-repair] [--wait] VOLUME   check every copy, checksum and parity;\n"
"                                    repair what is damaged (offline it always waits)\n"
"  scrub stop VOLUME | scrub status VOLUME   status adds the history: the last 8\n"
"                                    scrubs (start, end, found, repaired, how each ended),\n"
"                                    kept in the superblock, so across remounts (offline too)\n");
	fputs(
"  set VOLUME label=NAME             a new label (what LABEL= finds), on a mounted or an\n"
"                                    unmounted volume: at most 63 bytes, no control characters\n"
"  set MOUNTPOINT KEY=RATE...        rebuild_min, rebuild_max, scrub_min, scrub_max in bytes\n"
"                                    per second (K/M/G suffixes, binary); min applies while\n"
"                                    files are being read or written, max when idle (0 = no\n"
"                                    limit); like md's speed_limit_min/max\n"
"  sync MOUNTPOINT                   write out everything buffered, commit, and wait for\n"
"                                    the background merges queued by then: the free space\n"
"                                    then moves only with new writes and deletions\n"
"                                    (sync(1) cannot ask a FUSE daemon for that)\n"
"  times MOUNTPOINT [reset]          where the requests spent their time since mount (or\n"
"                                    the last reset): per request (open, create, write,\n"
"                                    flush, release, ...) and per wait inside it (a journal\n"
"                                    commit, a stripe write in flight, ...): count, average,\n"
"                                    p50, p90, p99, max; reset starts the count again\n"
"  fault VOLUME RULES|clear          arm fault-injection rules on the running members\n"
"                                    (MEMBER@op=rw,err=EIO,after=N,...; for tests and drills)\n"
"\n"
"options: --json, -j (machine-readable answer; schema in fs/daemon/ctl.h);\n"
"         --socket PATH, -S PATH (the daemon's socket, standing for VOLUME);\n"
"         --members=GLOB[:GLOB]; --force, -f; --quiet, -q; --help, -h; --version, -V\n"
"exit status: 0 done, 1 refused or failed, 2 usage, 3 volume unreachable or not assembled\n", f);
}

/* ---- helpers ------------------------------------------------------------------ */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int request1(struct vol *v, const char *const *w, unsigned n, json_object **out)
{
	int rc = vol_request(v, w, n, out);

	return rc < 0 ? EX_UNREACHABLE : EX_OK;
}

/* A member operand: an existing path is made absolute, anything else
 * (a role number, a basename the daemon knows) goes as it is. */
static const char *member_arg(const char *in, char *buf, size_t len)
{
	if (access(in, F_OK) == 0 && abs_path(in, buf, len) == 0)
		return buf;
	return in;
}

/* Show a progress line while obj (rebuild or scrub) is active. */
static void progress(const char *what, json_object *prog, const struct opts *o, uint64_t *last_ns)
{
	char line[256];
	bool tty = isatty(2);
	uint64_t now = ff_mono_ns();

	if (o->quiet || (!tty && now - *last_ns < 5000000000ull))
		return;
	*last_ns = now;
	render_progress(what, prog, line, sizeof(line));
	fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
}

/* ---- commands ------------------------------------------------------------------- */

static int cmd_status(struct vol *v, const struct opts *o)
{
	const char *w[] = { "status" };

	for (;;) {
		json_object *st = NULL;
		int rc = request1(v, w, 1, &st);

		if (rc != EX_OK)
			return rc;
		if (!jbool(st, "ok")) {
			rc = report_answer(st, o->json, false);
			json_object_put(st);
			return rc;
		}
		if (o->footage.set)
			json_object_object_add(st, "footage", footage_json(&o->footage, st));
		if (o->watch_s > 0 && isatty(1))
			printf("\033[H\033[2J");
		if (o->json)
			print_json(st, stdout);
		else
			render_status(st, stdout);
		fflush(stdout);
		json_object_put(st);
		if (o->watch_s <= 0 || interrupted)
			return EX_OK;
		sleep_ms((unsigned)(o->watch_s * 1000));
		if (interrupted)
			return EX_OK;
	}
}

/*
 * The status in the Prometheus text format, written in one piece: a
 * textfile collector never reads half an answer from a failed run.
 */
static int cmd_metrics(struct vol *v)
{
	const char *w[] = { "status" };
	json_object *st = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mf;
	int rc = request1(v, w, 1, &st);

	if (rc != EX_OK)
		return rc;
	if (!jbool(st, "ok")) {
		rc = report_answer(st, false, false);
		json_object_put(st);
		return rc;
	}
	mf = open_memstream(&buf, &len);
	if (!mf || render_metrics(st, mf) < 0 || fclose(mf) != 0) {
		fprintf(stderr, "framefs-admin: metrics: %s\n", strerror(errno));
		json_object_put(st);
		free(buf);
		return EX_FAILED;
	}
	json_object_put(st);
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0) {
		fprintf(stderr, "framefs-admin: metrics: cannot write: %s\n", strerror(errno));
		free(buf);
		return EX_FAILED;
	}
	free(buf);
	return EX_OK;
}

/* Follow the rebuild until no member is left to rebuild. */
static int follow_rebuild(struct vol *v, const struct opts *o)
{
	const char *w[] = { "status" };
	uint64_t t0 = ff_mono_ns(), last = 0, idle_since = 0;
	json_object *st = NULL, *rb;
	int rc = EX_OK;

	for (;;) {
		json_object_put(st);
		st = NULL;
		if ((rc = request1(v, w, 1, &st)) != EX_OK)
			return rc;
		rb = jget(st, "rebuild");
		if (jbool(rb, "active")) {
			idle_since = 0;
			progress("rebuild", rb, o, &last);
		} else if (json_object_array_length(jget(rb, "roles")) == 0) {
			break; /* done, or nothing to rebuild */
		} else if (jstr(rb, "error", NULL)) {
			rc = EX_FAILED;
			break;
		} else if (!idle_since) {
			idle_since = ff_mono_ns();
		} else if (ff_mono_ns() - idle_since > 3000000000ull) {
			rc = EX_FAILED; /* members to rebuild, but no rebuild runs */
			break;
		}
		if (interrupted) {
			fprintf(stderr, "\nframefs-admin: interrupted; the rebuild goes on%s\n",
				v->online ? " in the daemon" : " from its checkpoint next time");
			json_object_put(st);
			return EX_FAILED;
		}
		sleep_ms(POLL_MS);
	}
	if (isatty(2) && last && !o->quiet)
		fprintf(stderr, "\n");
	if (o->json) {
		print_json(st, stdout);
	} else if (rc == EX_OK) {
		char b[32];

		printf("rebuild finished: %s written in %.1f s; state %s\n",
		       ff_fmt_bytes((uint64_t)jnum(rb, "bytes_done"), b, sizeof(b)),
		       (double)(ff_mono_ns() - t0) / 1e9, jstr(st, "state", "?"));
	} else {
		fprintf(stderr, "framefs-admin: the rebuild stopped: %s\n",
			jstr(rb, "error", "it is not running (is a member missing?)"));
	}
	json_object_put(st);
	return rc;
}

static int cmd_rebuild(struct vol *v, const struct opts *o)
{
	const char *w[] = { "rebuild" };
	json_object *a = NULL, *rb;
	int rc = request1(v, w, 1, &a);

	if (rc != EX_OK)
		return rc;
	if (!jbool(a, "ok")) {
		rc = report_answer(a, o->json, false);
		json_object_put(a);
		return rc;
	}
	rb = jget(a, "rebuild");
	if (!jbool(rb, "active") && json_object_array_length(jget(rb, "roles")) == 0) {
		if (o->json)
			print_json(a, stdout);
		else if (!o->quiet)
			printf("nothing to rebuild (add a member to a failed role first)\n");
		json_object_put(a);
		return EX_OK;
	}
	if (o->no_wait && v->online) {
		rc = report_answer(a, o->json, o->quiet);
		json_object_put(a);
		return rc;
	}
	json_object_put(a);
	return follow_rebuild(v, o);
}

static int scrub_summary(json_object *sc, const struct opts *o)
{
	bool left = jnum(sc, "chunks_bad") > jnum(sc, "chunks_repaired") ||
		    jnum(sc, "parity_bad") > jnum(sc, "parity_repaired") ||
		    jnum(sc, "meta_bad") > jnum(sc, "meta_repaired") || jnum(sc, "unreadable") > 0;

	if (o->json) {
		json_object *w = json_object_new_object();

		json_object_object_add(w, "ok", json_object_new_boolean(true));
		json_object_object_add(w, "scrub", json_object_get(sc));
		print_json(w, stdout);
		json_object_put(w);
	} else {
		render_scrub(sc, stdout, "");
	}
	return left || jstr(sc, "error", NULL) ? EX_FAILED : EX_OK;
}

static int cmd_scrub(struct vol *v, const char *sub, const struct opts *o)
{
	const char *w[3] = { "scrub", sub, "norepair" };
	const char *ws[] = { "scrub", "status" };
	uint64_t last = 0;
	json_object *a = NULL;
	int rc;

	rc = request1(v, w, strcmp(sub, "start") == 0 && o->no_repair ? 3 : 2, &a);
	if (rc != EX_OK)
		return rc;
	if (!jbool(a, "ok") || strcmp(sub, "stop") == 0) {
		rc = report_answer(a, o->json, o->quiet);
		if (rc == EX_OK && !o->json && !o->quiet)
			printf("scrub stopped\n");
		json_object_put(a);
		return rc;
	}
	if (strcmp(sub, "status") == 0 || (strcmp(sub, "start") == 0 && !o->wait && v->online)) {
		if (o->json)
			print_json(a, stdout);
		else if (strcmp(sub, "start") == 0)
			printf("scrub started\n");
		else {
			render_scrub(jget(a, "scrub"), stdout, "");
			render_scrub_history(jget(a, "scrub"), stdout);
		}
		json_object_put(a);
		return EX_OK;
	}
	for (;;) { /* start --wait (always offline): follow it */
		json_object *sc = jget(a, "scrub");

		if (!jbool(sc, "active")) {
			if (isatty(2) && last && !o->quiet)
				fprintf(stderr, "\n");
			rc = scrub_summary(sc, o);
			json_object_put(a);
			return rc;
		}
		progress("scrub", sc, o, &last);
		if (interrupted) {
			fprintf(stderr, "\nframefs-admin: interrupted%s\n",
				v->online ? "; the scrub goes on in the daemon" : "");
			json_object_put(a);
			return EX_FAILED;
		}
		sleep_ms(POLL_MS);
		json_object_put(a);
		a = NULL;
		if ((rc = request1(v, ws, 2, &a)) != EX_OK)
			return rc;
	}
}

/* Where the requests spent their time, as a table (or the JSON answer). */
static int cmd_times(struct vol *v, const char *const *w, unsigned n, const struct opts *o)
{
	json_object *a = NULL;
	int rc = request1(v, w, n, &a);

	if (rc != EX_OK)
		return rc;
	if (o->json || !jbool(a, "ok")) {
		rc = report_answer(a, o->json, o->quiet);
	} else {
		render_times(jget(a, "times"), stdout);
		if (n == 2)
			printf("(reset: the next times count from now)\n");
	}
	json_object_put(a);
	return rc;
}

/* fail, remove, add, replace, set, fault: one request, one answer. */
static int cmd_simple(struct vol *v, const char *const *w, unsigned n, const struct opts *o)
{
	json_object *a = NULL;
	int rc = request1(v, w, n, &a);

	if (rc != EX_OK)
		return rc;
	rc = report_answer(a, o->json, o->quiet);
	if (rc == EX_OK && !v->online && !o->json && !o->quiet && strcmp(w[0], "add") == 0 &&
	    strstr(jstr(a, "message", ""), "rebuilt"))
		printf("the rebuild runs at the next mount, or now with: framefs-admin rebuild "
		       "MEMBER[,MEMBER...]\n");
	json_object_put(a);
	return rc;
}

/* ---- command line ------------------------------------------------------------------ */

struct command {
	const char *name;
	unsigned min_args, max_args; /* after VOLUME */
	bool offline;                /* makes sense on an unmounted volume */
	bool writes;                 /* offline: open read-write */
};

static const struct command commands[] = {
	{ "status", 0, 0, true, false },  { "fail", 1, 1, true, true },
	{ "remove", 1, 1, true, true },   { "add", 1, 1, true, true },
	{ "replace", 2, 2, true, true },  { "rebuild", 0, 0, true, true },
	{ "set", 1, 5, true, true },      { "metrics", 0, 0, false, false },
	{ "fault", 1, 1, false, false },  { "re-add", 1, 1, true, true },
	{ "sync", 0, 0, false, false },   { "times", 0, 1, false, false },
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },    { "force", no_argument, NULL, 'f' },
		{ "watch", optional_argument, NULL, 'w' }, { "no-wait", no_argument, NULL, 'N' },
		{ "wait", no_argument, NULL, 'W' },    { "no-repair", no_argument, NULL, 'n' },
		{ "socket", required_argument, NULL, 'S' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },    { "version", no_argument, NULL, 'V' },
		{ "footage", required_argument, NULL, 'F' },
		{ "members", required_argument, NULL, 'M' },
		{ "no-restripe", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "+jfqhVS:", lo, NULL)) != -1) {
		switch (c) {
		case 'j': o->json = true; break;
		case 'f': o->force = true; break;
		case 'w': o->watch_s = optarg ? atof(optarg) : 2; break;
		case 'N': o->no_wait = true; break;
		case 'W': o->wait = true; break;
		case 'n': o->no_repair = true; break;
		case 'R': o->no_restripe = true; break;
		case 'S': o->sock = optarg; break;
		case 'F': o->footage_spec = optarg; break;
		case 'M': vol_members_glob = optarg; break;
		case 'q': o->quiet = true; break;
		case 'h': usage(stdout); exit(EX_OK);
		case 'V': printf("framefs-admin 0.1.0\n"); exit(EX_OK);
		default: usage(stderr); return -1;
		}
	}
	return 0;
}

/*
 * Options may come anywhere (framefs-admin status --json /mnt/media):
 * pull them out first, keep the words in order.
 */
static int split_args(int argc, char **argv, struct opts *o, char **words, unsigned *nwords)
{
	char *opts_argv[64];
	int nopt = 1;
	bool dashdash = false;

	opts_argv[0] = argv[0];
	*nwords = 0;
	for (int i = 1; i < argc; i++) {
		bool takes_arg = !strcmp(argv[i], "--socket") || !strcmp(argv[i], "-S") ||
				 !strcmp(argv[i], "--footage") || !strcmp(argv[i], "--members");

		if (!dashdash && !strcmp(argv[i], "--")) {
			dashdash = true;
		} else if (!dashdash && argv[i][0] == '-' && argv[i][1]) {
			if (nopt >= 62)
				return -1;
			opts_argv[nopt++] = argv[i];
			if (takes_arg && i + 1 < argc)
				opts_argv[nopt++] = argv[++i];
		} else if (*nwords < ADMIN_PATHS_MAX + 8) {
			words[(*nwords)++] = argv[i];
		}
	}
	opts_argv[nopt] = NULL;
	return parse_opts(nopt, opts_argv, o);
}

static int run(const struct command *cmd, char **a, unsigned na, const struct opts *o)
{
	const char *w[8] = { cmd->name };
	char b1[PATH_MAX], b2[PATH_MAX];
	struct vol v;
	unsigned nv = 1, nw = 1;
	int rc;

	/* VOLUME: --socket stands for it; status and rebuild take any number
	 * of member words; the others exactly one word before their ARGS */
	if (o->sock)
		nv = 0;
	else if (!strcmp(cmd->name, "status") || !strcmp(cmd->name, "rebuild"))
		nv = na;
	if ((!o->sock && na < 1) || na - nv < cmd->min_args || na - nv > cmd->max_args) {
		usage(stderr);
		return EX_USAGE;
	}
	rc = vol_resolve(&v, a, nv, o->sock);
	if (rc != EX_OK)
		return rc;
	if (!v.online && !cmd->offline) {
		fprintf(stderr, "framefs-admin: %s needs a mounted volume (give its mountpoint)\n",
			cmd->name);
		vol_close(&v);
		return EX_USAGE;
	}
	for (unsigned i = nv; i < na && !v.online && !strcmp(cmd->name, "set"); i++)
		if (strncmp(a[i], "label=", 6) != 0) { /* rates belong to a running daemon */
			fprintf(stderr, "framefs-admin: set %s: an unmounted volume takes label= only; "
				"rates are set on a mounted volume (give its mountpoint)\n", a[i]);
			vol_close(&v);
			return EX_USAGE;
		}
	for (unsigned i = nv; i < na && nw < 6; i++) {
		if (!strcmp(cmd->name, "add") || !strcmp(cmd->name, "re-add") ||
		    (!strcmp(cmd->name, "replace") && i == nv + 1)) {
			if (abs_path(a[i], i == nv ? b1 : b2, PATH_MAX) < 0) {
				fprintf(stderr, "framefs-admin: %s: %s\n", a[i], strerror(errno));
				vol_close(&v);
				return EX_USAGE;
			}
			w[nw++] = i == nv ? b1 : b2;
		} else if (!strcmp(cmd->name, "fail") || !strcmp(cmd->name, "remove") ||
			   !strcmp(cmd->name, "replace")) {
			w[nw++] = member_arg(a[i], i == nv ? b1 : b2, PATH_MAX);
		} else {
			w[nw++] = a[i];
		}
	}
	if (o->force && (!strcmp(cmd->name, "fail") || !strcmp(cmd->name, "add") ||
			 !strcmp(cmd->name, "replace")))
		w[nw++] = "force";
	rc = vol_open(&v, cmd->writes && !(o->no_repair && !strcmp(cmd->name, "scrub")) ? VOL_RW
									       : VOL_STATUS, o->json);
	if (rc != EX_OK) {
		vol_close(&v);
		return rc;
	}
	if (!strcmp(cmd->name, "status"))
		rc = cmd_status(&v, o);
	else if (!strcmp(cmd->name, "metrics"))
		rc = cmd_metrics(&v);
	else if (!strcmp(cmd->name, "rebuild"))
		rc = cmd_rebuild(&v, o);
	else if (!strcmp(cmd->name, "times"))
		rc = cmd_times(&v, w, nw, o);
	else if (!strcmp(cmd->name, "re-add") && !v.online && (rc = cmd_simple(&v, w, nw, o)) == EX_OK)
		rc = follow_rebuild(&v, o); /* offline: resync here, the record is in memory */
	else if (strcmp(cmd->name, "re-add") != 0 || v.online)
		rc = cmd_simple(&v, w, nw, o);
	vol_close(&v);
	return rc;
}

/* grow [--wait] MOUNTPOINT: the daemon's restripe (fs/grow/restripe.c),
 * once or followed to its end.  Exit 0 once every row is at the new width
 * (or none was left to move), failure when it failed or stopped. */
static int grow_online(struct vol *v, const struct opts *o)
{
	const char *w[] = { "grow", "status" };
	uint64_t last = 0;

	for (;;) {
		json_object *a = NULL, *gr;
		const char *state;
		int rc = request1(v, w, 2, &a);

		if (rc != EX_OK)
			return rc;
		if (!jbool(a, "ok")) {
			rc = report_answer(a, o->json, o->quiet);
			json_object_put(a);
			return rc;
		}
		gr = jget(a, "grow");
		state = jstr(gr, "state", "none");
		if (!o->wait || !jbool(gr, "active")) {
			if (isatty(2) && last && !o->quiet)
				fprintf(stderr, "\n");
			if (o->json)
				print_json(a, stdout);
			else if (!strcmp(state, "none"))
				printf("no grow under way on %s\n", v->mnt);
			else
				render_grow(gr, stdout, "");
			rc = !strcmp(state, "failed") || (o->wait && !strcmp(state, "stopped"))
			     ? EX_FAILED : EX_OK;
			json_object_put(a);
			return rc;
		}
		progress("grow", gr, o, &last);
		json_object_put(a);
		if (interrupted) {
			fprintf(stderr, "\nframefs-admin: interrupted; the restripe goes on in the daemon\n");
			return EX_FAILED;
		}
		sleep_ms(POLL_MS);
	}
}

/*
 * grow MEMBERS NEW...: offline, to the end (fs/grow/: the records, the
 * array's superblocks, the restripe), or with --no-restripe until the
 * array grew (the next mount restripes in the background); grow MEMBERS:
 * a grow that stopped goes on; grow MOUNTPOINT: grow_online.  Adding
 * members under a running daemon is not built: refused, saying how.
 */
static int cmd_grow(char **a, unsigned na, const struct opts *o)
{
	char add[ADMIN_PATHS_MAX][PATH_MAX];
	const char *addp[ADMIN_PATHS_MAX];
	struct ff_err err = { "" };
	struct vol v;
	uint64_t t0 = ff_mono_ns();
	int rc;

	if (na < 1 || na - 1 > ADMIN_PATHS_MAX) {
		usage(stderr);
		return EX_USAGE;
	}
	rc = vol_resolve(&v, a, 1, o->sock);
	if (rc != EX_OK)
		return rc;
	if (v.online && na == 1) {
		rc = vol_open(&v, VOL_STATUS, o->json);
		if (rc == EX_OK)
			rc = grow_online(&v, o);
		vol_close(&v);
		return rc;
	}
	if (v.online) {
		fprintf(stderr, "framefs-admin: grow: %s is mounted; members cannot be added under a "
			"running daemon yet: unmount it, run grow --no-restripe MEMBERS NEW... (seconds), "
			"mount again: the files move in the background while the volume works\n", v.mnt);
		vol_close(&v);
		return EX_USAGE;
	}
	for (unsigned i = 1; i < na; i++) {
		if (abs_path(a[i], add[i - 1], PATH_MAX) < 0) {
			fprintf(stderr, "framefs-admin: %s: %s\n", a[i], strerror(errno));
			vol_close(&v);
			return EX_USAGE;
		}
		addp[i - 1] = add[i - 1];
	}
	rc = vol_open(&v, VOL_STATUS, o->json); /* refuses members a daemon serves */
	if (rc == EX_OK) { /* the grow mounts the volume itself, step by step */
		ffs_ctl_free(v.ctl);
		v.ctl = NULL;
		if (v.fs)
			ffs_unmount(v.fs);
		if (v.r)
			ff_raid_close(v.r);
		v.fs = NULL;
		v.r = NULL;
		rc = na > 1 ? ffs_grow((const char *const *)v.paths, v.npaths, addp, na - 1, o->force,
				       !o->no_restripe, &err)
			    : ffs_grow_resume((const char *const *)v.paths, v.npaths, &err);
		if (rc < 0)
			fprintf(stderr, "framefs-admin: grow: %s\n", err.msg);
		else if (o->json)
			printf("{\"grown\":true,\"added\":%u,\"restriped\":%s,\"seconds\":%.1f}\n",
			       na - 1, o->no_restripe && na > 1 ? "false" : "true",
			       (double)(ff_mono_ns() - t0) / 1e9);
		else if (!o->quiet && o->no_restripe && na > 1)
			printf("grown: %u member(s) added (%.1f s); the files move to the new width in "
			       "the background at the next mount (framefs-admin grow MOUNTPOINT)\n",
			       na - 1, (double)(ff_mono_ns() - t0) / 1e9);
		else if (!o->quiet)
			printf("grown: %u member(s) added, every file at the new width (%.1f s)\n", na - 1,
			       (double)(ff_mono_ns() - t0) / 1e9);
		rc = rc < 0 ? EX_FAILED : EX_OK;
	}
	vol_close(&v);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	char *words[ADMIN_PATHS_MAX + 8];
	unsigned nwords;
	struct sigaction sa = { .sa_handler = on_signal };

	if (split_args(argc, argv, &o, words, &nwords) < 0)
		return EX_USAGE;
	if (nwords == 0) {
		usage(stderr);
		return EX_USAGE;
	}
	if (o.footage_spec) {
		if (strcmp(words[0], "status")) {
			fprintf(stderr, "framefs-admin: --footage goes with status\n");
			return EX_USAGE;
		}
		if (footage_parse(o.footage_spec, &o.footage) != EX_OK)
			return EX_USAGE;
	}
	if (o.json && !strcmp(words[0], "metrics")) {
		fprintf(stderr, "framefs-admin: metrics prints the Prometheus text format; for JSON "
			"use status --json\n");
		return EX_USAGE;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(words[0], "scrub")) {
		struct vol v;
		const char *sub = nwords > 1 ? words[1] : "";
		struct opts o2 = o;
		int rc;

		if (strcmp(sub, "start") && strcmp(sub, "stop") && strcmp(sub, "status")) {
			usage(stderr);
			return EX_USAGE;
		}
		if (nwords < 3 && !o.sock) {
			usage(stderr);
			return EX_USAGE;
		}
		rc = vol_resolve(&v, words + 2, nwords - 2, o.sock);
		if (rc != EX_OK)
			return rc;
		if (!v.online && !strcmp(sub, "stop")) { /* status: the history on disk */
			fprintf(stderr, "framefs-admin: no scrub runs on an unmounted volume; "
				"'scrub start MEMBERS' runs one here\n");
			vol_close(&v);
			return EX_USAGE;
		}
		o2.wait = o.wait || !v.online;
		/* a check-only scrub opens the volume read-write too: its record
		 * goes into the superblock's scrub history */
		rc = vol_open(&v, strcmp(sub, "start") ? VOL_STATUS : VOL_RW, o.json);
		if (rc == EX_OK)
			rc = cmd_scrub(&v, sub, &o2);
		vol_close(&v);
		return rc;
	}
	if (!strcmp(words[0], "grow"))
		return cmd_grow(words + 1, nwords - 1, &o);
	for (unsigned i = 0; i < FF_ARRAY_SIZE(commands); i++)
		if (!strcmp(words[0], commands[i].name))
			return run(&commands[i], words + 1, nwords - 1, &o);
	fprintf(stderr, "framefs-admin: unknown command '%s'\n", words[0]);
	usage(stderr);
	return EX_USAGE;
}
