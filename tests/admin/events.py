#!/usr/bin/env python3
# Proves: -o event_cmd=PROGRAM runs PROGRAM EVENT MOUNTPOINT [MEMBER] with the
# FRAMEFS_* environment for a member failure (member-failed with the reason,
# degraded), a rebuild onto an added member (rebuild-started,
# rebuild-finished) and a scrub that finds flipped bits (scrub-found-errors,
# scrub-finished); a hook that hangs is killed at its deadline
# (event_timeout_s) and the daemon keeps serving and running hooks; a
# PROGRAM that does not exist is logged at mount and the mount goes on; the
# hook inherits no descriptor of the daemon's (members, /dev/fuse, sockets).
# Faults injected: `framefs-admin fail` on one member; bits flipped in the
# data area of another while unmounted (as bitflip_scrub.py does).
#
# The hook runs asynchronously, on the daemon's event thread, after the
# command that caused the event has returned: every check polls the record
# file until the record appears, with a bound (Vol.wait_for), never a sleep.
import json
import os
import random
import stat

from adminlib import (Vol, check, corrupt_member, log, member_data_area, run_test, seed_from_env, verify_set,
                      write_set)

RECORDER = """#!/usr/bin/env python3
import json, os, sys
env = {k: v for k, v in os.environ.items() if k.startswith("FRAMEFS_") and k != "FRAMEFS_FAULT"}
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink("/proc/self/fd/" + fd))
    except OSError:
        pass
with open(%r, "a") as f:
    f.write(json.dumps({"argv": sys.argv[1:], "env": env, "fds": fds}) + "\\n")
"""

# records that it started, then hangs in a child (the deadline kills the group)
HANGER = """#!/bin/sh
echo "$1 $$" >> %r
sleep 600
echo "not killed $1" >> %r
"""


def script(v, name, text):
    p = os.path.join(v.tmp, name)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return p


def records(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def wait_record(v, path, event, member=None, what=""):
    """The first record of event (about member, if given), polled for: the hook is async."""
    def find():
        for r in records(path):
            if r["argv"][0] == event and (member is None or r["argv"][2:] == [member]):
                return r
        return None
    return v.wait_for(find, 60, "the hook to record %s %s %s" % (event, member or "", what))




def test_events(v, rng):
    rec = os.path.join(v.tmp, "events.rec")
    hook = script(v, "record-hook", RECORDER % rec)
    v.mount("read_cache_mb=1", "event_cmd=" + hook)
    mnt = os.path.realpath(v.mnt)
    uuid = v.status()["uuid"]
    want = write_set(v.mnt, rng, [(9 << 20) + 1, 17 << 20, 4096])

    failed = v.members[1]
    v.admin("fail", v.mnt, failed)
    r = wait_record(v, rec, "member-failed", failed)
    check(r["argv"][1] == mnt and r["env"]["FRAMEFS_MEMBER_ROLE"] == "1" and
          r["env"]["FRAMEFS_UUID"] == uuid and r["env"]["FRAMEFS_MEMBER"] == failed and
          r["env"]["FRAMEFS_DETAIL"] != "" and r["env"]["FRAMEFS_EVENT"] == "member-failed",
          "member-failed record: %r" % r)
    leaked = [t for t in r["fds"] if t == "/dev/fuse" or t.startswith(v.base) or "socket:" in t]
    check(not leaked, "the hook inherited the daemon's descriptors: %r" % leaked)
    r = wait_record(v, rec, "degraded")
    check(r["argv"] == ["degraded", mnt] and "1 of 4" in r["env"]["FRAMEFS_DETAIL"],
          "degraded record: %r" % r)
    log("ok: member-failed (%s: %s) and degraded recorded"
        % (failed, r["env"]["FRAMEFS_DETAIL"]))

    v.admin("remove", v.mnt, failed)
    new = v.new_file("added")
    v.admin("add", v.mnt, new)
    v.members[1] = new
    wait_record(v, rec, "rebuild-started", new)
    v.rebuild_wait()
    r = wait_record(v, rec, "rebuild-finished", new)
    check(r["env"]["FRAMEFS_MEMBER_ROLE"] == "1", "rebuild-finished record: %r" % r)
    verify_set(v.mnt, want, "after the rebuild")
    log("ok: rebuild-started and rebuild-finished recorded for %s" % new)
    v.unmount()

    st = v.adminj("status", *v.members)
    start, end = member_data_area(st)
    hit = corrupt_member(v.members[2], start, end, st["chunk_bytes"], rng)
    check(hit >= 4, "only %d written chunks found on the member" % hit)
    v.mount("read_cache_mb=1", "event_cmd=" + hook)
    v.adminj("scrub", "start", "--wait", v.mnt)
    r = wait_record(v, rec, "scrub-found-errors")
    check(r["argv"] == ["scrub-found-errors", mnt] and "bad chunks" in r["env"]["FRAMEFS_DETAIL"],
          "scrub-found-errors record: %r" % r)
    wait_record(v, rec, "scrub-finished")
    log("ok: scrub-found-errors recorded: %s" % r["env"]["FRAMEFS_DETAIL"])
    v.unmount()
    return want


def test_hang(v, want):
    rec = os.path.join(v.tmp, "hang.rec")
    hook = script(v, "hang-hook", HANGER % (rec, rec))
    v.mount("event_cmd=" + hook, "event_timeout_s=1")

    def started(n):
        try:
            with open(rec) as f:
                lines = [line for line in f if line.startswith("scrub-finished ")]
        except FileNotFoundError:
            return None
        return lines if len(lines) >= n else None

    v.adminj("scrub", "start", "--wait", v.mnt)
    pid = int(started(1)[0].split()[1]) if v.wait_for(lambda: started(1), 30, "the hook") else 0
    v.wait_for(lambda: "still running after 1 s: killed" in v.full_log(), 30, "the hook killed")
    verify_set(v.mnt, want, "after a hook hung")
    # the event thread goes on: the next event runs the hook again
    v.adminj("scrub", "start", "--wait", v.mnt)
    v.wait_for(lambda: started(2), 30, "the second hook to start")
    check(not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z",
          "the hung hook %d is still alive" % pid)
    v.unmount()
    with open(rec) as f:
        check("not killed" not in f.read(), "a hung hook ran to its end")
    log("ok: a hung hook was killed at its deadline; the daemon served and ran the next hook")


def test_missing(v, want):
    v.mount("event_cmd=/nonexistent/framefs-hook")
    check("event_cmd=/nonexistent/framefs-hook" in v.full_log(),
          "no error about the missing hook:\n%s" % v.daemon_log())
    v.adminj("scrub", "start", "--wait", v.mnt)
    verify_set(v.mnt, want, "with a missing hook")
    v.unmount()
    log("ok: a missing PROGRAM is logged at mount; the mount works")


def test():
    rng = random.Random(seed_from_env())
    v = Vol(5, 4, 96 << 20)
    try:
        want = test_events(v, rng)
        test_hang(v, want)
        test_missing(v, want)
        v.fsck_clean()
    finally:
        v.cleanup()


run_test(test)
