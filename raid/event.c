/* SPDX-License-Identifier: MIT */
/*
 * Events for the caller's hook: the place where a state changes calls
 * ff_raid_event, which logs it and hands a copy to opts.event_fn.  Nothing
 * here allocates or waits: engine threads post from their completion path.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "raid/raid_i.h"

static const char *const event_names[FF_EVENT_KINDS] = {
	[FF_EVENT_MEMBER_FAILED] = "member-failed",
	[FF_EVENT_DEGRADED] = "degraded",
	[FF_EVENT_REBUILD_STARTED] = "rebuild-started",
	[FF_EVENT_REBUILD_FINISHED] = "rebuild-finished",
	[FF_EVENT_REBUILD_FAILED] = "rebuild-failed",
	[FF_EVENT_SCRUB_FOUND_ERRORS] = "scrub-found-errors",
	[FF_EVENT_SCRUB_FINISHED] = "scrub-finished",
	[FF_EVENT_EVENTS_DROPPED] = "events-dropped",
	[FF_EVENT_LABEL_CHANGED] = "label-changed",
	[FF_EVENT_GROW_STARTED] = "grow-started",
	[FF_EVENT_GROW_FINISHED] = "grow-finished",
	[FF_EVENT_GROW_FAILED] = "grow-failed",
};

const char *ff_event_name(enum ff_event_kind kind)
{
	return (unsigned)kind < FF_EVENT_KINDS ? event_names[kind] : "unknown";
}

static void post(struct ff_raid *r, enum ff_event_kind kind, int role, const struct ff_member *m,
		 const char *fmt, va_list ap)
{
	struct ff_event ev = { .kind = kind, .role = role };

	FF_ASSERT((unsigned)kind < FF_EVENT_KINDS);
	FF_ASSERT(role < (int)r->g.nmembers);
	vsnprintf(ev.detail, sizeof(ev.detail), fmt, ap);
	if (m) {
		snprintf(ev.member, sizeof(ev.member), "%s", m->path);
		if (m->nvme.is_nvme)
			snprintf(ev.serial, sizeof(ev.serial), "%s", m->nvme.serial);
	}
	ff_log(FF_LOG_INFO, "event %s%s%s: %s", event_names[kind], role >= 0 ? " " : "", ev.member,
	       ev.detail);
	if (r->opts.event_fn)
		r->opts.event_fn(r->opts.event_ctx, &ev);
}

void ff_raid_event(struct ff_raid *r, enum ff_event_kind kind, int role, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	post(r, kind, role, role >= 0 ? &r->mem[role] : NULL, fmt, ap);
	va_end(ap);
}

void ff_raid_event_member(struct ff_raid *r, enum ff_event_kind kind, int role,
			  const struct ff_member *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	post(r, kind, role, m, fmt, ap);
	va_end(ap);
}
