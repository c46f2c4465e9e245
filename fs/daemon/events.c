/* SPDX-License-Identifier: MIT */
/*
 * The event hook, like mdadm's PROGRAM: ffs_events_post (called from engine,
 * rebuild and scrub threads) copies the event into a fixed ring under a
 * short lock and returns — no allocation, no fork, no wait in the I/O path.
 * When the ring is full the event is counted as dropped, and an
 * events-dropped notice takes the next free place.  One thread takes events
 * off the ring and runs PROGRAM EVENT VOLUME [MEMBER] with posix_spawn (no
 * shell), one at a time, each with a deadline: a hook that hangs is killed,
 * so hooks cannot pile up.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs/daemon/events.h"
#include "raid/raid.h"
#include "raid/sb.h"

extern char **environ;

#define EVENTS_RING 64         /* events waiting for the hook; more are counted as dropped */
#define HOOK_ENV_OWN 9         /* FRAMEFS_* variables the hook gets */

struct ffs_events {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool stop, ready;
	unsigned head, count;       /* ring[head] is the oldest */
	uint64_t dropped;           /* lost since the last notice */
	struct ff_event ring[EVENTS_RING];
	struct ff_event cur;        /* the event thread's copy of the one it runs */
	char program[PATH_MAX];     /* "" = none: the thread only drains */
	char volume[PATH_MAX];
	char uuid[37];
	char label[64];
	int stop_pipe[2];           /* written at stop: ends the wait for a hook */
	unsigned deadline_ms;       /* a hook still running after this is killed */
};

/* Caller holds the lock, and the ring has room. */
static void ring_put(struct ffs_events *e, const struct ff_event *ev)
{
	FF_ASSERT(e->count < EVENTS_RING);
	e->ring[(e->head + e->count) % EVENTS_RING] = *ev;
	e->count++;
}

void ffs_events_post(void *ctx, const struct ff_event *ev)
{
	struct ffs_events *e = ctx;

	pthread_mutex_lock(&e->lock);
	/* the volume's new name: taken here, not when the hook runs, so that a
	 * full queue that drops the event does not lose the name */
	if (ev->kind == FF_EVENT_LABEL_CHANGED)
		snprintf(e->label, sizeof(e->label), "%.*s", (int)sizeof(e->label) - 1, ev->detail);
	if (e->dropped && e->count < EVENTS_RING) {
		struct ff_event note = { .kind = FF_EVENT_EVENTS_DROPPED, .role = -1 };

		snprintf(note.detail, sizeof(note.detail), "%llu events lost: the queue was full",
			 (unsigned long long)e->dropped);
		ring_put(e, &note);
		e->dropped = 0;
	}
	if (e->count < EVENTS_RING)
		ring_put(e, ev);
	else
		e->dropped++;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

static void env_add(char **env, unsigned *n, char *buf, size_t len, const char *key, const char *val)
{
	snprintf(buf, len, "%s=%s", key, val);
	env[(*n)++] = buf;
}

static bool env_ours(const char *kv)
{
	return strncmp(kv, "FRAMEFS_EVENT=", 14) == 0 || strncmp(kv, "FRAMEFS_VOLUME=", 15) == 0 ||
	       strncmp(kv, "FRAMEFS_UUID=", 13) == 0 || strncmp(kv, "FRAMEFS_LABEL=", 14) == 0 ||
	       strncmp(kv, "FRAMEFS_MEMBER", 14) == 0 || strncmp(kv, "FRAMEFS_DETAIL=", 15) == 0;
}

/* The daemon's environment, less FRAMEFS_* names the hook gets from us, plus
 * the event's.  NULL when out of memory. */
static char **hook_env(const struct ffs_events *e, const struct ff_event *ev, char (*own)[PATH_MAX + 32])
{
	unsigned n = 0, ninh = 0;
	char role[16];
	char **env;

	while (environ[ninh])
		ninh++;
	env = calloc(ninh + HOOK_ENV_OWN + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (unsigned i = 0; i < ninh; i++)
		if (!env_ours(environ[i]))
			env[n++] = environ[i];
	snprintf(role, sizeof(role), "%d", ev->role);
	env_add(env, &n, own[0], sizeof(own[0]), "FRAMEFS_EVENT", ff_event_name(ev->kind));
	env_add(env, &n, own[1], sizeof(own[1]), "FRAMEFS_VOLUME", e->volume);
	env_add(env, &n, own[2], sizeof(own[2]), "FRAMEFS_UUID", e->uuid);
	env_add(env, &n, own[3], sizeof(own[3]), "FRAMEFS_LABEL", e->label);
	env_add(env, &n, own[4], sizeof(own[4]), "FRAMEFS_DETAIL", ev->detail);
	if (ev->role >= 0) {
		env_add(env, &n, own[5], sizeof(own[5]), "FRAMEFS_MEMBER", ev->member);
		env_add(env, &n, own[6], sizeof(own[6]), "FRAMEFS_MEMBER_ROLE", role);
		env_add(env, &n, own[7], sizeof(own[7]), "FRAMEFS_MEMBER_SERIAL", ev->serial);
	}
	FF_ASSERT(n <= ninh + HOOK_ENV_OWN);
	env[n] = NULL;
	return env;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Wait for the hook until its deadline or the daemon's stop.  The wait ends:
 * the pidfd becomes readable when the hook exits, the stop pipe when the
 * daemon stops, and poll returns at the deadline at the latest.  Returns
 * true when the hook exited (status in *status), false when it is still
 * running.
 */
static bool hook_wait(struct ffs_events *e, pid_t pid, int *status)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	uint64_t deadline = now_ms() + e->deadline_ms;

	for (;;) { /* ends by the deadline: each turn waits at most for what is left of it */
		struct pollfd p[2] = { { .fd = e->stop_pipe[0], .events = POLLIN },
				       { .fd = pidfd, .events = POLLIN } };
		uint64_t now = now_ms();
		int left = now >= deadline ? 0 : (int)(deadline - now);

		if (waitpid(pid, status, WNOHANG) == pid)
			break;
		if (left == 0)
			goto running;
		/* without a pidfd (Linux < 5.3) look again every 100 ms */
		if (poll(p, pidfd >= 0 ? 2 : 1, pidfd >= 0 || left < 100 ? left : 100) > 0 &&
		    (p[0].revents & POLLIN))
			goto running;
	}
	if (pidfd >= 0)
		close(pidfd);
	return true;
running:
	if (pidfd >= 0)
		close(pidfd);
	return false;
}

static void hook_status(const char *name, pid_t pid, int status)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ff_log(FF_LOG_INFO, "event hook for %s (pid %d) exited 0", name, (int)pid);
	else if (WIFEXITED(status))
		ff_log(FF_LOG_WARN, "event hook for %s (pid %d) exited with status %d", name, (int)pid,
		       WEXITSTATUS(status));
	else
		ff_log(FF_LOG_WARN, "event hook for %s (pid %d) ended by signal %d", name, (int)pid,
		       WTERMSIG(status));
}

/* Run the hook for ev and wait for it (until its deadline). */
static void hook_run(struct ffs_events *e, const struct ff_event *ev)
{
	static char own[HOOK_ENV_OWN][PATH_MAX + 32]; /* only the event thread uses it */
	const char *name = ff_event_name(ev->kind);
	char *argv[5] = { e->program, (char *)name, e->volume, ev->role >= 0 ? (char *)ev->member : NULL, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char **env = hook_env(e, ev, own);
	bool stopping;
	pid_t pid;
	int rc, status;

	if (!env) {
		ff_log(FF_LOG_ERR, "event hook for %s not run: out of memory", name);
		return;
	}
	posix_spawnattr_init(&attr);
	/* its own process group, so that the deadline kills what it started too;
	 * the default signal mask and actions, not the daemon's */
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	{
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		posix_spawnattr_setsigmask(&attr, &none);
		posix_spawnattr_setsigdefault(&attr, &all);
	}
	/* only stdin, stdout, stderr: a mailer the hook leaves behind must not
	 * keep members, /dev/fuse or the control socket open */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	rc = posix_spawn(&pid, e->program, &fa, &attr, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(env);
	if (rc != 0) {
		ff_log(FF_LOG_ERR, "event hook %s for %s cannot run: %s", e->program, name, strerror(rc));
		return;
	}
	if (hook_wait(e, pid, &status)) {
		hook_status(name, pid, status);
		return;
	}
	pthread_mutex_lock(&e->lock);
	stopping = e->stop;
	pthread_mutex_unlock(&e->lock);
	if (stopping)
		ff_log(FF_LOG_WARN, "event hook for %s (pid %d) still running at unmount: killed", name,
		       (int)pid);
	else
		ff_log(FF_LOG_ERR, "event hook for %s (pid %d) still running after %u s: killed", name,
		       (int)pid, e->deadline_ms / 1000);
	kill(-pid, SIGKILL);
	if (waitpid(pid, &status, 0) == pid)
		hook_status(name, pid, status);
}

static void *events_main(void *arg)
{
	struct ffs_events *e = arg;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		/* ends when an event is posted (once the volume is mounted) or at stop */
		while (!e->stop && !(e->ready && e->count))
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->stop)
			break;
		e->cur = e->ring[e->head];
		e->head = (e->head + 1) % EVENTS_RING;
		e->count--;
		pthread_mutex_unlock(&e->lock);
		if (e->program[0])
			hook_run(e, &e->cur);
		pthread_mutex_lock(&e->lock);
	}
	if (e->count && e->program[0])
		ff_log(FF_LOG_WARN, "%u events queued at unmount: their hooks not run", e->count);
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* Resolve program now: the daemon chdirs to "/" later, and an error is best
 * seen at mount. */
static void set_program(struct ffs_events *e, const char *program)
{
	if (!program || !*program)
		return;
	if (!realpath(program, e->program)) {
		ff_log(FF_LOG_ERR, "event_cmd=%s: %s; events are only logged", program, strerror(errno));
		e->program[0] = '\0';
		return;
	}
	if (access(e->program, X_OK) < 0) {
		ff_log(FF_LOG_ERR, "event_cmd=%s: not executable (%s); events are only logged", program,
		       strerror(errno));
		e->program[0] = '\0';
		return;
	}
	ff_log(FF_LOG_INFO, "event hook: %s", e->program);
}

int ffs_events_start(const char *program, const char *volume, unsigned timeout_s,
		     struct ffs_events **out)
{
	struct ffs_events *e = calloc(1, sizeof(*e));
	int rc;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	e->deadline_ms = (timeout_s ? timeout_s : 30) * 1000u;
	set_program(e, program);
	if (!realpath(volume, e->volume))
		snprintf(e->volume, sizeof(e->volume), "%s", volume);
	if (pipe2(e->stop_pipe, O_CLOEXEC) < 0) {
		free(e);
		return -errno;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	rc = -pthread_create(&e->thread, NULL, events_main, e);
	if (rc < 0) {
		close(e->stop_pipe[0]);
		close(e->stop_pipe[1]);
		free(e);
		return rc;
	}
	*out = e;
	return 0;
}

void ffs_events_ready(struct ffs_events *e, const uint8_t uuid[16], const char *label)
{
	pthread_mutex_lock(&e->lock);
	ff_uuid_format(uuid, e->uuid);
	snprintf(e->label, sizeof(e->label), "%s", label);
	e->ready = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

void ffs_events_stop(struct ffs_events *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stop = true;
	pthread_cond_signal(&e->cond);
	pthread_mutex_unlock(&e->lock);
	if (write(e->stop_pipe[1], "x", 1) < 0) /* the pipe is empty: this cannot block */
		ff_log(FF_LOG_WARN, "event hook: cannot signal stop: %s", strerror(errno));
	pthread_join(e->thread, NULL);
	close(e->stop_pipe[0]);
	close(e->stop_pipe[1]);
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->cond);
	free(e);
}
