#!/usr/bin/env python3
# Proves: `framefs-admin metrics MOUNTPOINT` prints the Prometheus text format
# that a real parser (prometheus_client, Debian's python3-prometheus-client)
# reads: HELP and TYPE for every family, framefs_ names, the volume's uuid /
# label / mountpoint on every series, and values that agree with `status
# --json` and with the array the test made (members, sizes, free space,
# inodes, bytes written, the small-file threshold, metadata pool and small
# files stored); a running scrub shows as active with its progress;
# a failed member and the degraded array show in the state series; a
# rebuild shows as running, then done; an unmounted directory is a one-line
# error with nothing on stdout.
# Faults injected: read latency on every member's data area (the scrub
# walks slowly enough to be seen running), a member failed with
# `framefs-admin fail`, a rebuild held to a low rate.
import os
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    # meson may have found another python3 first on PATH (pyenv, a venv);
    # Debian's package lives in the system interpreter's dist-packages
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != \
            os.path.realpath("/usr/bin/python3") and not os.environ.get("METRICS_REEXEC"):
        os.environ["METRICS_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("FAIL: prometheus_client is not installed (apt-get install python3-prometheus-client)")
    sys.exit(1)

from adminlib import TestFailure, Vol, check, log, run_test

MiB = 1 << 20


def metrics(v):
    """{family name: family}, parsed; checks what every family must have."""
    _, out, err = v.admin("metrics", v.mnt)
    check(err == "", "metrics wrote on stderr: %r" % err)
    fams = {}
    try:
        parsed = list(text_string_to_metric_families(out))
    except Exception as e:  # the parser raises ValueError and others
        raise TestFailure("prometheus_client cannot parse the metrics: %s\n%s" % (e, out))
    for f in parsed:
        check(f.name.startswith("framefs_"), "family %r lacks the framefs_ prefix" % f.name)
        check(f.documentation, "family %s has no HELP" % f.name)
        check(f.type in ("gauge", "counter"), "family %s has type %r" % (f.name, f.type))
        check(f.name not in fams, "family %s appears twice" % f.name)
        fams[f.name] = f
    return fams


def samples(fams, name, **labels):
    """Samples of family name whose labels include labels."""
    check(name in fams, "no family %s" % name)
    return [s for s in fams[name].samples
            if all(s.labels.get(k) == str(w) for k, w in labels.items())]


def value(fams, name, **labels):
    ss = samples(fams, name, **labels)
    check(len(ss) == 1, "%s%r: %d samples, expected one" % (name, labels, len(ss)))
    return ss[0].value


def member_states(fams):
    """{role: state} from the series whose value is 1."""
    got = {}
    for s in fams["framefs_member_state"].samples:
        if s.value == 1:
            check(s.labels["role"] not in got, "role %s in two states" % s.labels["role"])
            got[s.labels["role"]] = s.labels["state"]
    return got


def array_state(fams):
    on = [s.labels["state"] for s in fams["framefs_array_state"].samples if s.value == 1]
    check(len(on) == 1, "array state series set: %r" % on)
    return on[0]


def test():
    v = Vol(5, 4, 64 * MiB, mkfs_args=("-L", 'metrics "test"', "-c", "64K"))
    try:
        _, out, err = v.admin("metrics", v.mnt, expect=3)
        check(out == "" and err.count("\n") == 1 and "not a mounted framefs volume" in err,
              "unmounted: stdout %r, stderr %r" % (out, err))
        log("ok: an unmounted directory: exit 3, one line on stderr, nothing on stdout")

        v.mount()
        data = os.urandom(3 * MiB)
        with open(os.path.join(v.mnt, "clip.dpx"), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        st = v.status()
        fams = metrics(v)
        vol = {"uuid": st["uuid"], "label": 'metrics "test"', "mountpoint": v.mnt}
        for f in fams.values():
            for s in f.samples:
                for k, w in vol.items():
                    check(s.labels.get(k) == w, "%s: %s=%r, expected %r"
                          % (s.name, k, s.labels.get(k), w))
        check(value(fams, "framefs_members") == 4 == len(st["members"]), "members")
        check(value(fams, "framefs_data_members") == 3, "data members")
        check(value(fams, "framefs_parity_members") == 1, "parity members")
        check(value(fams, "framefs_chunk_bytes") == 64 << 10, "chunk")
        sb = st["fs"]["stripe_bytes"]
        check(sb == 3 * (64 << 10) and value(fams, "framefs_stripe_bytes") == sb, "stripe")
        check(member_states(fams) == {str(r): "active" for r in range(4)},
              "member states %r" % member_states(fams))
        check(len(fams["framefs_member_state"].samples) == 4 * 5, "4 roles x 5 states")
        for r, path in enumerate(v.members):
            check(value(fams, "framefs_member_size_bytes", role=r, path=path, kind="file",
                        serial="") == 64 * MiB, "member %d size" % r)
        check(array_state(fams) == "clean", "array state")
        check(value(fams, "framefs_redundancy_left") == 1, "redundancy")
        log("ok: %d families parse; labels, members, geometry and state match status --json"
            % len(fams))

        # space: exactly the status's, and near what the test knows it used
        size = st["fs"]["nstripes"] * sb
        free = value(fams, "framefs_filesystem_free_bytes")
        check(value(fams, "framefs_filesystem_size_bytes") == size, "size")
        check(free == st["fs"]["free_stripes"] * sb, "free %d vs status %d"
              % (free, st["fs"]["free_stripes"] * sb))
        used = -(-len(data) // sb) * sb
        check(size - used - 4 * sb <= free <= size - used, "free %d, size %d, file %d"
              % (free, size, used))
        svfs = os.statvfs(v.mnt)
        check(abs(svfs.f_bfree * svfs.f_frsize - free) <= 0.01 * size,
              "free %d vs statvfs %d" % (free, svfs.f_bfree * svfs.f_frsize))
        # the overwrite reserve: free, not available for new data
        reserve = value(fams, "framefs_filesystem_reserve_stripes")
        check(reserve == st["fs"]["reserve_stripes"] and reserve > 0,
              "reserve %r vs status %r" % (reserve, st["fs"]["reserve_stripes"]))
        check((svfs.f_bfree - svfs.f_bavail) * svfs.f_frsize == reserve * sb,
              "statvfs keeps %d bytes from new data, the reserve is %d"
              % ((svfs.f_bfree - svfs.f_bavail) * svfs.f_frsize, reserve * sb))
        check(value(fams, "framefs_filesystem_files") == st["fs"]["ninodes"], "inodes")
        check(value(fams, "framefs_filesystem_files_free") == st["fs"]["free_inodes"],
              "free inodes")
        # counters: the parser names the family without _total, the sample with it
        check(fams["framefs_written_bytes"].type == "counter", "written bytes type")
        wr = value(fams, "framefs_written_bytes")
        check(wr >= len(data), "written %d < %d" % (wr, len(data)))
        check(samples(fams, "framefs_written_bytes")[0].name == "framefs_written_bytes_total",
              "counter sample name")
        check(value(fams, "framefs_member_errors") == 0, "member errors")
        check(value(fams, "framefs_requests_in_flight") >= 0 and
              value(fams, "framefs_oldest_request_age_seconds") >= 0, "requests")
        log("ok: free %d of %d bytes (status and statvfs agree), %d bytes written"
            % (free, size, wr))

        # the small-data class: threshold, pool and counters as status --json has them
        # (the sidecar is deleted again: fsck at the end does not know the class yet)
        side = os.path.join(v.mnt, "clip.xmp")
        with open(side, "wb") as f:
            f.write(os.urandom(3000))
            f.flush()
            os.fsync(f.fileno())
        st = v.status()
        fams = metrics(v)
        check(value(fams, "framefs_small_file_max_bytes") == st["fs"]["small_max"] == 64 << 10,
              "small_max")
        check(value(fams, "framefs_metadata_pool_blocks") == st["fs"]["pool_blocks"] > 0 and
              value(fams, "framefs_metadata_pool_free_blocks") == st["fs"]["pool_free_blocks"]
              < st["fs"]["pool_blocks"], "pool")
        for key in ("small_stores", "small_promotions", "small_nospc"):
            check(fams["framefs_" + key].type == "counter" and
                  value(fams, "framefs_" + key) == st["stats"]["fs"][key], key)
        check(value(fams, "framefs_small_stores") == 1, "small stores")
        for key in ("patch_reads", "patch_cache_hits"):
            check(fams["framefs_" + key].type == "counter" and
                  value(fams, "framefs_" + key) == st["stats"]["fs"][key], key)
        os.unlink(side)
        log("ok: small-file threshold, pool blocks and small-file counters match status --json")

        # a running scrub: every member's data area answers reads 0.2 s late,
        # so the scrub walks a stripe at a time; polled (bounded) until the
        # first data stripe is checked
        g = st["geometry"]
        v.admin("set", v.mnt, "scrub_min=0", "scrub_max=0")
        v.admin("fault", v.mnt, ";".join("%s@op=r,from=%d,lat_us=200000"
                                         % (os.path.basename(m), g["data_offset"])
                                         for m in v.members))
        v.admin("scrub", "start", v.mnt)
        v.wait_for(lambda: v.status()["scrub"]["stripes_checked"] >= 1, 30,
                   "the scrub's first data stripe")
        fams = metrics(v)
        after = v.status()["scrub"]
        ratio = value(fams, "framefs_scrub_progress_ratio")
        checked = value(fams, "framefs_scrub_checked_bytes")
        check(value(fams, "framefs_scrub_active") == 1, "scrub not active in the metrics")
        check(0 < ratio < 1, "scrub progress %r" % ratio)
        check(value(fams, "framefs_scrub_space_bytes") == size, "scrub space")
        check(abs(value(fams, "framefs_scrub_walked_bytes") - ratio * size) < 1, "walked")
        check(sb <= checked <= after["stripes_checked"] * sb, "checked %d bytes, status %d "
              "stripes" % (checked, after["stripes_checked"]))
        v.admin("scrub", "stop", v.mnt)
        v.admin("fault", v.mnt, "clear")
        v.wait_for(lambda: not v.status()["scrub"]["active"], 30, "the scrub to stop")
        fams = metrics(v)
        sc = v.status()["scrub"]
        check(value(fams, "framefs_scrub_active") == 0, "scrub still active")
        check(value(fams, "framefs_scrub_checked_bytes") == sc["stripes_checked"] * sb,
              "checked after stop")
        check(value(fams, "framefs_scrub_bad", kind="data") == 0, "bad chunks")
        # the stopped scrub is the last one in the superblock's history
        last = sc["history"][0]
        check(last["result"] == "stopped", "history[0] %r" % last)
        check(value(fams, "framefs_scrub_last_result", result="stopped") == 1 and
              value(fams, "framefs_scrub_last_result", result="done") == 0, "last result")
        check(value(fams, "framefs_scrub_last_start_timestamp_seconds") == last["start_s"] and
              value(fams, "framefs_scrub_last_end_timestamp_seconds") == last["end_s"],
              "last scrub times")
        check(value(fams, "framefs_scrub_last_errors_found") == 0 and
              value(fams, "framefs_scrub_last_errors_unrepaired") == 0, "last scrub errors")
        check(value(fams, "framefs_scrub_history_records") == len(sc["history"]), "records")
        log("ok: a running scrub: active, %.1f%% walked, %d bytes checked" % (ratio * 100,
                                                                             checked))

        # a failed member
        v.admin("fail", v.mnt, v.members[2])
        fams = metrics(v)
        check(member_states(fams) == {"0": "active", "1": "active", "2": "failed", "3": "active"},
              "member states after fail: %r" % member_states(fams))
        check(value(fams, "framefs_member_state", role=2, path=v.members[2],
                    state="failed") == 1, "failed series of role 2")
        check(array_state(fams) == "degraded", "array state after fail")
        check(value(fams, "framefs_failed_members") == 1, "failed members")
        check(value(fams, "framefs_redundancy_left") == 0, "redundancy after fail")
        log("ok: the failed member and the degraded array show")

        # a rebuild held at 1 MiB/s is seen running, then let go to the end
        v.admin("set", v.mnt, "rebuild_min=1M", "rebuild_max=1M")
        new = v.new_file("n2")
        v.admin("add", v.mnt, new)
        v.wait_for(lambda: v.status()["rebuild"]["bytes_done"] > 0, 30, "the rebuild to write")
        fams = metrics(v)
        check(value(fams, "framefs_rebuild_active") == 1, "rebuild not active")
        check(value(fams, "framefs_rebuild_roles") == 1, "rebuild roles")
        check(value(fams, "framefs_rebuild_written_bytes") > 0, "rebuild bytes")
        check(0 <= value(fams, "framefs_rebuild_progress_ratio") < 1, "rebuild ratio")
        check(array_state(fams) == "rebuilding", "array state during the rebuild")
        check(member_states(fams)["2"] == "rebuilding", "role 2 not rebuilding")
        check(samples(fams, "framefs_member_state", role=2, state="rebuilding")[0]
              .labels["path"] == new, "role 2's path")
        v.admin("set", v.mnt, "rebuild_min=0", "rebuild_max=0")
        v.rebuild_wait(timeout=120)
        fams = metrics(v)
        check(array_state(fams) == "clean", "array state after the rebuild")
        check(value(fams, "framefs_rebuild_active") == 0 and
              value(fams, "framefs_rebuild_progress_ratio") == 1, "rebuild done")
        log("ok: the rebuild shows running, then done")

        _, _, err = v.admin("--json", "metrics", v.mnt, expect=2)
        check("status --json" in err, "metrics --json: %r" % err)
        v.unmount()
        _, out, err = v.admin("metrics", v.mnt, expect=3)
        check(out == "" and err.count("\n") == 1, "after unmount: %r %r" % (out, err))
        log("ok: after the unmount: exit 3, one line")
        v.fsck_clean(paths=v.members[:2] + [new] + v.members[3:])
    finally:
        v.cleanup()


run_test(test)
