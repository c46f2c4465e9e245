#!/usr/bin/env python3
# Proves: framefs-admin reaches the daemon through a root-only control socket
# named from the mountpoint; `status` shows level, chunk, state and every
# member's role, state, path and size, as text and as --json (schema 1: the
# keys fs/daemon/ctl.h documents, with their types); the same status comes out
# offline from the members of the unmounted volume (comma list or separate
# words); offline use of a mounted volume's members is refused; `set` changes
# the rate limits; mkfs.framefs -s makes a hot spare that `remove` and `add`
# manage; requests are checked (unknown words, bad escapes, bad usage); the
# small-data class shows (threshold, pool use, files stored in the pool and
# moved to stripes), and so does a small overwrite written as a patch (format
# version 5), as text and as --json.
# Fault injected: none (the control path itself is under test).
import mmap
import os
import shutil
import socket
import stat
import subprocess

from adminlib import TestFailure, Vol, check, log, run_test

TOP_KEYS = {
    "ok": bool, "schema": int, "source": str, "label": str, "uuid": str, "level": int,
    "nmembers": int, "ndata": int, "nparity": int, "chunk_bytes": int, "state": str,
    "state_reason": str, "read_only": bool, "events": int, "failed_members": int,
    "redundancy_left": int, "geometry": dict, "members": list, "spares": list,
    "rebuild": dict, "rates": dict, "stats": dict,
}
GEOM_KEYS = ["stripe_bytes", "nstripes", "data_offset", "meta_offset", "meta_member_bytes",
             "meta_copies", "member_bytes", "data_bytes", "meta_bytes", "io_align"]
MEMBER_KEYS = ["role", "state", "path", "size_bytes", "kind", "nvme"]
REBUILD_KEYS = ["active", "roles", "phase", "fraction", "percent", "mb_per_s", "eta_s",
                "bytes_done", "error"]
SCRUB_KEYS = ["active", "repair", "fraction", "percent", "stripes_checked", "chunks_bad",
              "chunks_repaired", "parity_bad", "parity_repaired", "meta_bad", "meta_repaired",
              "unreadable", "mb_per_s", "eta_s", "error", "files"]
RATE_KEYS = ["rebuild_min_bps", "rebuild_max_bps", "scrub_min_bps", "scrub_max_bps"]
FS_KEYS = ["stripe_bytes", "nstripes", "free_stripes", "ninodes", "free_inodes", "commits",
           "version", "small_max", "pool_start", "pool_blocks", "pool_free_blocks"]
FS_STATS_KEYS = ["stripe_writes", "crc_errors", "commits", "small_stores", "small_promotions",
                 "small_nospc"]


def check_schema(st, online):
    for k, t in TOP_KEYS.items():
        check(k in st, "status --json lacks %r" % k)
        check(isinstance(st[k], t), "status --json %r is %r, not %s" % (k, st[k], t.__name__))
    check(st["schema"] == 1, "schema %r" % st["schema"])
    for k in GEOM_KEYS:
        check(isinstance(st["geometry"].get(k), int), "geometry.%s missing" % k)
    for m in st["members"]:
        for k in MEMBER_KEYS:
            check(k in m, "member lacks %r: %r" % (k, m))
        check(m["state"] in ("active", "failed", "missing", "rebuilding"), "state %r" % m["state"])
    for k in REBUILD_KEYS:
        check(k in st["rebuild"], "rebuild lacks %r" % k)
    for k in RATE_KEYS:
        check(isinstance(st["rates"].get(k), int), "rates.%s missing" % k)
    check(st["state"] in ("clean", "degraded", "rebuilding", "failed"), "state %r" % st["state"])
    check(isinstance(st["fs"], dict), "fs is %r" % st["fs"])
    for k in FS_KEYS:
        check(isinstance(st["fs"].get(k), int), "fs.%s missing" % k)
    check(st["fs"]["pool_free_blocks"] <= st["fs"]["pool_blocks"], "pool %r" % st["fs"])
    for k in FS_STATS_KEYS:
        check(isinstance(st["stats"]["fs"].get(k), int), "stats.fs.%s missing" % k)
    check(isinstance(st["scrub"], dict), "scrub is %r" % st["scrub"])
    for k in SCRUB_KEYS:
        check(k in st["scrub"], "scrub lacks %r" % k)
    check(st["source"] == ("daemon" if online else "offline"), "source %r" % st["source"])
    check(isinstance(st["mountpoint"], str) if online else st["mountpoint"] is None,
          "mountpoint %r" % st["mountpoint"])


def raw_request(path, line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(path)
    s.sendall(line)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    s.close()
    check(data.endswith(b"\n") and data.count(b"\n") == 1,
          "answer is not one line: %r" % data[:200])
    import json
    return json.loads(data)


def same_view(a, b, what):
    for k in ("uuid", "level", "nmembers", "chunk_bytes", "state", "geometry"):
        check(a[k] == b[k], "%s: %s differs: %r vs %r" % (what, k, a[k], b[k]))
    check([(m["role"], m["state"], m["path"], m["size_bytes"]) for m in a["members"]] ==
          [(m["role"], m["state"], m["path"], m["size_bytes"]) for m in b["members"]],
          "%s: members differ:\n%r\n%r" % (what, a["members"], b["members"]))
    check([s["path"] for s in a["spares"]] == [s["path"] for s in b["spares"]],
          "%s: spares differ" % what)
    check(a["fs"]["free_stripes"] == b["fs"]["free_stripes"], "%s: free stripes differ" % what)


def test():
    v = Vol(5, 4, 256 << 20, spares=1, mkfs_args=("-L", "cli test", "-c", "256K"))
    try:
        v.mount()
        sock = v.sock_path()
        # the socket: named from the mountpoint, 0600 in a 0700 root directory
        st = os.stat(sock)
        check(stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 0,
              "socket %s mode %o uid %d" % (sock, st.st_mode, st.st_uid))
        d = os.stat("/run/framefs")
        check(stat.S_IMODE(d.st_mode) == 0o700, "/run/framefs mode %o" % d.st_mode)
        log("ok: control socket %s, mode 0600, directory 0700" % sock)

        with open(os.path.join(v.mnt, "frame0001.dpx"), "wb") as f:
            f.write(os.urandom(3 << 20))
        s = v.status()
        check_schema(s, True)
        check(s["level"] == 5 and s["nmembers"] == 4 and s["chunk_bytes"] == 256 << 10,
              "geometry %r" % s)
        check(s["state"] == "clean" and s["label"] == "cli test", "state %r" % s["state"])
        check([m["path"] for m in s["members"]] == v.members, "member paths %r" % s["members"])
        check(all(m["size_bytes"] == 256 << 20 and m["kind"] == "file" and m["nvme"] is None
                  for m in s["members"]), "member sizes/kinds %r" % s["members"])
        check([x["path"] for x in s["spares"]] == v.spares, "spares %r" % s["spares"])
        _, out, _ = v.admin("status", v.mnt)
        for want in ["RAID5", "4 members", "chunk 256.00 KiB", "state    clean", 'label "cli test"']:
            check(want in out, "status text lacks %r:\n%s" % (want, out))
        for m in v.members + v.spares:
            check(m in out, "status text lacks member %s" % m)
        log("ok: status --json has every documented key; the text shows level, chunk, state, members")

        # the small-data class: a 2 KiB sidecar goes to the pool, then moves to
        # stripes when it grows past a stripe (it is no longer small)
        before = s["fs"]["pool_free_blocks"]
        side = os.path.join(v.mnt, "frame0001.xmp")
        with open(side, "wb") as f:
            f.write(os.urandom(2048))
            f.flush()
            os.fsync(f.fileno())
        s = v.status()
        check(s["fs"]["version"] == 5 and s["fs"]["small_max"] == 64 << 10,
              "small-data class: %r" % s["fs"])
        check(s["stats"]["fs"]["small_stores"] == 1 and s["stats"]["fs"]["small_promotions"] == 0
              and s["stats"]["fs"]["small_nospc"] == 0, "small counters %r" % s["stats"]["fs"])
        check(s["fs"]["pool_free_blocks"] == before - 1, "pool free %d -> %d"
              % (before, s["fs"]["pool_free_blocks"]))
        _, out, _ = v.admin("status", v.mnt)
        used = s["fs"]["pool_blocks"] - s["fs"]["pool_free_blocks"]
        for want in ["small files  up to 64.00 KiB in the mirrored pool; 1 stored, 0 moved to "
                     "stripes, 0 sent to stripes (pool at its reserve) since the mount",
                     "pool     %d of %d metadata blocks used (" % (used, s["fs"]["pool_blocks"])]:
            check(want in out, "status text lacks %r:\n%s" % (want, out))
        with open(side, "ab") as f:
            f.write(os.urandom(s["fs"]["stripe_bytes"]))
            f.flush()
            os.fsync(f.fileno())
        s = v.status()
        check(s["stats"]["fs"]["small_promotions"] == 1 and
              s["fs"]["pool_free_blocks"] == before, "after growing: %r, pool free %d (was %d)"
              % (s["stats"]["fs"], s["fs"]["pool_free_blocks"], before))
        _, out, _ = v.admin("status", v.mnt)
        check("1 stored, 1 moved to stripes, 0 sent to stripes" in out, "status text:\n%s" % out)
        log("ok: status shows the small-file threshold, the pool and the small-file counters")

        # a small overwrite of a file of two stripes goes as a patch (format version 5)
        clip = os.path.join(v.mnt, "clip.mov")
        with open(clip, "wb") as f:
            f.write(os.urandom(2 * s["fs"]["stripe_bytes"]))
        with open(clip, "r+b") as f:
            f.seek(s["fs"]["stripe_bytes"] + 8192)
            f.write(os.urandom(4096))
            f.flush()
            os.fsync(f.fileno())
        s = v.status()
        check(s["stats"]["fs"]["patch_writes"] == 1 and s["stats"]["fs"]["patch_blocks"] == 1
              and s["stats"]["fs"]["patch_merges"] == 0, "patch counters %r" % s["stats"]["fs"])
        _, out, _ = v.admin("status", v.mnt)
        want = "overwrites  small ones go as patches: 1 written (1 blocks), 0 patched stripes"
        check(want in out, "status text lacks %r:\n%s" % (want, out))
        log("ok: status counts a small overwrite written as a patch")

        # the patched block is in the patch cache (fs/data/pcache.c): a read that
        # passes the page cache (O_DIRECT) finds it there, not on the members
        check(s["fs"]["patch_cache_capacity"] == (128 << 20) // 4096 and
              s["fs"]["patch_cache_blocks"] == 1, "patch cache %r" % s["fs"])
        fs0 = s["stats"]["fs"]
        fd = os.open(clip, os.O_RDONLY | os.O_DIRECT)
        try:
            buf = mmap.mmap(-1, 4096)
            check(os.preadv(fd, [buf], s["fs"]["stripe_bytes"] + 8192) == 4096, "O_DIRECT read")
        finally:
            os.close(fd)
        s = v.status()
        fs1 = s["stats"]["fs"]
        check(fs1["patch_cache_hits"] == fs0["patch_cache_hits"] + 1 and
              fs1["patch_reads"] == fs0["patch_reads"], "patch reads %r" % fs1)
        _, out, _ = v.admin("status", v.mnt)
        want = "%d patched blocks read from the patch cache and %d from the members" % (
            fs1["patch_cache_hits"], fs1["patch_reads"])
        check(want in out, "status text lacks %r:\n%s" % (want, out))
        log("ok: a read of the patched block finds it in the patch cache")

        # rates
        v.admin("set", v.mnt, "rebuild_min=32M", "rebuild_max=1G", "scrub_min=8M", "scrub_max=0")
        r = v.status()["rates"]
        check(r == {"rebuild_min_bps": 32 << 20, "rebuild_max_bps": 1 << 30,
                    "scrub_min_bps": 8 << 20, "scrub_max_bps": 0}, "rates %r" % r)
        _, _, err = v.admin("set", v.mnt, "rebuild_speed=5", expect=1)
        check("unknown setting" in err, "bad key: %r" % err)
        _, _, err = v.admin("set", v.mnt, "rebuild_min=2G", "rebuild_max=1G", expect=1)
        check("above its maximum" in err, "min > max: %r" % err)
        log("ok: set changes the rate limits; wrong keys and min > max are refused")

        # usage errors and protocol checks
        v.admin("fail", v.mnt, expect=2)
        v.admin("frobnicate", v.mnt, expect=2)
        a = raw_request(sock, b"frobnicate\n")
        check(a["ok"] is False and "unknown request" in a["error"] and a["errno"] > 0, "%r" % a)
        a = raw_request(sock, b"fail %zz\n")
        check(a["ok"] is False and "malformed" in a["error"], "%r" % a)
        esc = v.spares[0].replace("%", "%25").replace(" ", "%20")
        a = raw_request(sock, b"fail " + esc.encode() + b"\n")
        check(a["ok"] is False and "not a member" in a["error"], "a spare is no member: %r" % a)
        a = raw_request(sock, b"status\n")
        check(a["ok"] is True and a["schema"] == 1, "raw status %r" % a)
        _, _, err = v.admin("fail", v.mnt, "/dev/shm/no-such-member", expect=1)
        check("not a member" in err, "%r" % err)
        log("ok: requests are checked (unknown word, bad escape, not a member, usage)")

        # offline use of a mounted volume's members is refused
        _, _, err = v.admin("status", ",".join(v.members), expect=3)
        check("in use by the framefs volume mounted on" in err, "%r" % err)
        log("ok: offline access to a mounted volume's members is refused")

        # root only: a non-root user cannot reach the socket, and the daemon
        # itself refuses a non-root peer even when the file modes would allow it
        tool = os.path.join(v.tmp, "framefs-admin")
        shutil.copy(v.admin_exe, tool)
        os.chmod(tool, 0o755)
        r = subprocess.run([tool, "status", v.mnt], capture_output=True, text=True, user=65534,
                           group=65534, extra_groups=[])
        check(r.returncode == 3 and "Permission denied" in r.stderr and "root" in r.stderr,
              "non-root: exit %d, %r" % (r.returncode, r.stderr))
        os.chmod("/run/framefs", 0o755)
        os.chmod(sock, 0o666)
        try:
            r = subprocess.run([tool, "status", v.mnt], capture_output=True, text=True,
                               user=65534, group=65534, extra_groups=[])
        finally:
            os.chmod(sock, 0o600)
            os.chmod("/run/framefs", 0o700)
        check(r.returncode == 1 and "serves root only" in r.stderr,
              "SO_PEERCRED check: exit %d, %r" % (r.returncode, r.stderr))
        log("ok: root only (file modes, and SO_PEERCRED in the daemon)")

        # spares: remove, then add back (clean array: it waits as a spare)
        v.admin("remove", v.mnt, v.spares[0])
        check(v.status()["spares"] == [], "spare still listed after remove")
        _, out, _ = v.admin("add", v.mnt, v.spares[0])
        check("hot spare" in out, "add to a clean array: %r" % out)
        check([x["path"] for x in v.status()["spares"]] == v.spares, "spare not back")
        log("ok: a spare is removed and added back")

        # scrub status --json
        sc = v.adminj("scrub", "status", v.mnt)
        check(sc["ok"] and isinstance(sc["scrub"], dict), "scrub status %r" % sc)
        online = v.status()
        v.unmount()
        check(not os.path.exists(sock), "socket %s left after unmount" % sock)
        log("ok: the socket goes away with the daemon")

        # the naming rule escapes what is not [A-Za-z0-9.-]: a mountpoint with a
        # space, an underscore and a percent sign gets its own socket name
        plain_mnt = v.mnt
        v.mnt = os.path.join(v.tmp, "m nt_1%")
        os.mkdir(v.mnt)
        v.mount()
        want_name = ("/run/framefs/" + v.tmp.lstrip("/").replace("_", "%5f").replace("/", "_")
                     + "_m%20nt%5f1%25.sock")
        check(v.sock_path() == want_name and os.path.exists(want_name),
              "socket for %r: %s (expected %s)" % (v.mnt, v.sock_path(), want_name))
        check(v.status()["mountpoint"] == v.mnt, "mountpoint %r" % v.status()["mountpoint"])
        v.unmount()
        v.mnt = plain_mnt
        log("ok: a mountpoint with a space, '_' and '%%' is reached at %s" % want_name)

        # offline: the same view from the members, as one list or as words
        off1 = v.adminj("status", ",".join(v.members + v.spares))
        off2 = v.adminj("status", *(v.members + v.spares))
        check_schema(off1, False)
        same_view(online, off1, "offline (comma list)")
        same_view(online, off2, "offline (words)")
        _, out, _ = v.admin("status", *(v.members + v.spares))
        check("(offline)" in out and "state    clean" in out, "offline text:\n%s" % out)
        v.admin("set", ",".join(v.members), "rebuild_min=1M", expect=2)
        log("ok: offline status from the members matches the daemon's")
        v.fsck_clean()
    finally:
        v.cleanup()


run_test(test)
