/* SPDX-License-Identifier: MIT */
/*
 * The control socket: how framefs-admin talks to a running daemon.
 *
 * WHERE.  One Unix stream socket per mount, in FFS_CTL_DIR (/run/framefs,
 * mode 0700), named from the mountpoint's real path (ffs_ctl_sock_path):
 * the leading '/' is dropped, every other '/' becomes '_', and every byte
 * outside [A-Za-z0-9.-] becomes %XX (two lower-case hex digits), so that
 * no two mountpoints share a name:
 *
 *     /mnt/media          -> /run/framefs/mnt_media.sock
 *     /mnt/a_b            -> /run/framefs/mnt_a%5fb.sock
 *     /                   -> /run/framefs/_.sock
 *
 * A name that would not fit a sockaddr_un becomes "h-" + 16 hex digits of
 * the path's 64-bit FNV-1a hash + ".sock".  The socket is mode 0600 and
 * every connection is checked with SO_PEERCRED: only uid 0 is served
 * (root-only, as mdadm is).  A daemon not running as root cannot create
 * the directory; it mounts anyway, without a control socket, and says so.
 *
 * PROTOCOL.  One request per connection.  The client sends one line
 * (at most FFS_CTL_LINE_MAX bytes, '\n'-terminated): words separated by
 * single spaces, each word %XX-escaped for bytes <= 0x20, '%' and >= 0x7f
 * (ffs_ctl_escape).  The daemon answers with one JSON object on one line
 * and closes the connection.  Every answer has "ok" (true/false); a
 * failed one has "error" (one line naming the culprit) and "errno"
 * (positive errno value).  Requests:
 *
 *   status                         the volume (schema below)
 *   fail MEMBER [force]            mark a member failed; refused when the
 *                                  array could not survive it, unless force
 *   remove MEMBER                  take out a failed member or a spare
 *   add PATH [force]               new member: takes over a failed role at
 *                                  once (rebuilt) or waits as a hot spare
 *   re-add PATH                    a member back from a short absence takes
 *                                  its role again; only what was written
 *                                  without it is resynced
 *   replace OLD NEW [force]        NEW gets every write to OLD's role and a
 *                                  copy of OLD while OLD serves; NEW takes
 *                                  the role when the copy is done
 *   rebuild                        start or resume the rebuild
 *   scrub start [norepair] | scrub stop | scrub status
 *   grow status                    where a grow's restripe stands
 *   set KEY=VALUE ...              rebuild_min, rebuild_max, scrub_min,
 *                                  scrub_max in bytes per second (0 = no
 *                                  limit for *_max); label=TEXT
 *   fault RULES | fault clear      arm fault-injection rules (io/fault.h
 *                                  text form) on the running members, or
 *                                  disarm them: for tests and drills
 *   sync                           write out and commit everything buffered
 *                                  and wait for the background merges
 *   times [reset]                  request times since mount (or the last
 *                                  reset; reset answers them, then zeroes):
 *                                  times: {dropped, rows: [{op, wait
 *                                  (null: the whole request), count, avg_ms,
 *                                  p50_ms, p90_ms, p99_ms, max_ms}]}
 *
 * MEMBER is a role number, a member's path as the daemon knows it, its
 * basename, or any path to the same file or device.  PATH is absolute
 * (the daemon's working directory is "/").
 *
 * STATUS SCHEMA (schema 1; fields are only ever added):
 *   ok, schema: 1, source: "daemon"|"offline", mountpoint: string|null,
 *   label, uuid, level, nmembers, ndata, nparity, chunk_bytes,
 *   state: "clean"|"degraded"|"rebuilding"|"failed"
 *       (failed: more members lost than the parity covers; I/O fails),
 *   state_reason: string ("" when clean), read_only, events,
 *   failed_members, redundancy_left (members that may still be lost),
 *   geometry: {stripe_bytes, nstripes, data_offset, meta_offset,
 *              meta_member_bytes, meta_copies, member_bytes, data_bytes,
 *              meta_bytes, io_align},
 *   members: [{role, state: "active"|"failed"|"missing"|"rebuilding"|"stale",
 *              path|null, size_bytes|null, kind: "file"|"block"|null,
 *              nvme: {model, serial, firmware, nsid, lba_bytes}|null,
 *              reason: why it failed ("vanished: the file was unlinked",
 *                "write error", ...) or was left out at assembly | null,
 *              note: a warning about the member that fails nothing (its
 *                file renamed away, its loop device detached) | null,
 *              hint: what to do (framefs-admin add ...) | null,
 *              member_events: the event counter of a member left out at
 *                assembly | null,
 *              read_errors, write_errors, cksum_errors (chunks that failed
 *                their checksum on a read or a scrub), healed (ranges
 *                rewritten from parity after a read error): counts of the
 *                member in this role, kept in the member superblocks across
 *                remounts, reset when another member takes the role,
 *              failed_at: when it was failed (Unix seconds; reason says
 *                why) | null}],
 *       "stale": the member given for the role was left out at assembly
 *       because its event counter is behind the array's ("events"): the
 *       array was assembled without it (or it failed); path is that
 *       member's (size and kind null: it is not open).  A member that vanishes while mounted (file
 *       unlinked or replaced, block device removed) is "failed" within
 *       about a second (raid.h, ff_raid_check_presence).
 *   spares:  [{path, size_bytes, kind, nvme}],
 *   rebuild: {active, roles: [..], phase: "metadata"|"allocated"|"rest"|
 *             "done"|"pending" (to resume)|"none", fraction, percent, mb_per_s, eta_s,
 *             bytes_done, error: string|null},
 *   replacing_role: role being copied onto its replacement (replace OLD
 *             NEW; the old member serves until the copy is done) | null,
 *   scrub:   {active, repair, fraction, percent, stripes_checked,
 *             chunks_bad, chunks_repaired, parity_bad, parity_repaired,
 *             meta_bad, meta_repaired, unreadable, chunks_unrepairable,
 *             bytes_checked, meta_chunks_checked, start_s: wall-clock
 *             seconds|null (no scrub since the mount), mb_per_s, eta_s,
 *             error: string|null, files: [{ino, path, stripe, repaired}],
 *             history: the scrubs that ended, kept in the superblock, the
 *             last 8 newest first: [{seq, start_s, end_s, repair,
 *             result: "done"|"stopped"|"failed", bytes_checked,
 *             stripes_checked, meta_chunks_checked, chunks_bad,
 *             chunks_repaired, chunks_unrepairable, parity_bad,
 *             parity_repaired, meta_bad, meta_repaired, unreadable}]}
 *             | null (no filesystem),
 *   grow:    {state: "none"|"restriping"|"paused"|"done"|"failed"|"stopped", active,
 *             old_members, new_members, capacity_before, capacity_after
 *             (data bytes at each width), rows_before, rows_left (rows in
 *             the old geometry), files_moved, bytes_moved, fraction,
 *             percent, mb_per_s, eta_s, error: string|null,
 *             paused_reason: string|null (paused: active, waiting while the
 *             array has no redundancy left)} | null (no
 *             filesystem); restriping moves at the rebuild's rates,
 *   rates:   {rebuild_min_bps, rebuild_max_bps, scrub_min_bps, scrub_max_bps},
 *   (mb_per_s is 10^6 bytes per second, as it always was here; the text
 *   status shows rates and progress alike in MiB/s, 2^20 bytes per second)
 *   fs:      {stripe_bytes, nstripes, free_stripes, ninodes, free_inodes,
 *             commits, read_only, version (the on-disk format, fs/base/format.h),
 *             small_max (bytes: files whose bytes all lie below it live in
 *             the mirrored metadata pool; 0: off, as on every volume of
 *             format version 2 or older, or one made with mkfs -S 0),
 *             pool_start (META block number of the pool's first block),
 *             pool_blocks, pool_free_blocks (the pool holds directory and
 *             extent trees, xattrs, symlinks and small-file data),
 *             merges_pending (patched stripes queued for, or being
 *             rewritten by, the merge thread: fs/data/merge.c; while one runs
 *             its new stripe and its old one are both taken),
 *             patch_cache_blocks, patch_cache_capacity (4 KiB blocks the
 *             patch cache holds, and at most: fs/data/pcache.c; 0 without
 *             patches or with patch_cache_mb=0)} | null,
 *   requests: {in_flight, oldest_age_ms, oldest_op: string|null,
 *             oldest_ino, oldest_wait: string|null (what it waits for),
 *             stuck_ms (the watchdog's threshold), stuck_seen (requests
 *             logged as older), untracked} | null (offline),
 *   stats:   {raid: {fg_bytes, full_stripe_writes, rows_writes (tail rows
 *             written without their stripe's other rows), rmw_segments,
 *             rcw_segments, degraded_segments, member_reads, member_writes,
 *             read_bytes, write_bytes (bytes written to members: data,
 *             parity, every META copy, rebuild; not the superblocks and
 *             bitmaps), meta_write_bytes (the META part of write_bytes),
 *             member_errors},
 *             fs: {stripe_writes, stripe_fills, stripe_reads, readahead,
 *             rcache_hits, reads_again (reads redone: the file's map moved
 *             under them), direct_reads (reads from the members straight
 *             into a request's reply buffer, one per run of consecutive
 *             stripes), crc_errors, crc_repaired, meta_repaired,
 *             commits, wbuf_wait_pool, wbuf_wait_inode, wbuf_wait_rewrite,
 *             wbuf_evictions, small_stores (small files written to pool
 *             blocks), small_promotions (small files moved to stripes, having
 *             grown past small_max), small_nospc (small files sent to a
 *             stripe: the pool was at its reserve), tail_writes, tail_packed
 *             (tails sent to, and written and mapped in, tail stripes),
 *             tail_stripes (tail stripes opened), tail_busy (tails sent to a
 *             stripe of their own: every tail stripe busy), patch_writes
 *             (small overwrites sent as patches), patch_blocks (their 4 KiB
 *             blocks), patch_merges (patched stripes rewritten whole),
 *             merges_background (of those, by the merge thread: fs/data/merge.c),
 *             patch_reads (patched blocks read from the members),
 *             patch_cache_hits (patched blocks found in the patch cache
 *             instead: fs/data/pcache.c)}
 *             | null}
 * Other answers: fail/remove/add/replace/rebuild/set/fault/sync return
 * {"ok": true, "message": "..."} plus, for rebuild, "rebuild": {...}, for
 * sync, "merges" (background merges finished while it waited);
 * scrub returns {"ok": true, "scrub": {...}}; grow {"ok": true, "grow": {...}}.
 *
 * The same requests run in-process (ffs_ctl_exec) on an unmounted volume:
 * framefs-admin assembles it and answers offline with the same JSON
 * ("source": "offline").
 */
#ifndef FFS_CTL_H
#define FFS_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "fs/ffs.h"
#include "raid/raid.h"

#define FFS_CTL_DIR "/run/framefs"
#define FFS_CTL_LINE_MAX 4096
#define FFS_CTL_SCHEMA 1

/* Default rates, bytes per second: foreground I/O first (min while it
 * runs), as fast as the members go when idle (max 0 = no limit).  Scrub's
 * are FFS_SCRUB_{MIN,MAX}_BPS_DEFAULT in fs/ffs.h. */
#define FFS_CTL_REBUILD_MIN_BPS (64ull << 20)
#define FFS_CTL_REBUILD_MAX_BPS 0ull

struct ffs_ctl;

/* The daemon: serve the control socket of the volume mounted at mnt_real
 * (the mountpoint's real path).  Sets the default rates.  Status answers
 * get a "fuse" object from fuse_json (libfuse, transport, request size and
 * counts).  Never fails the mount: NULL (after logging why) when there is
 * no socket. */
struct json_object;
struct ffs_ctl *ffs_ctl_start(struct ffs *fs, const char *mnt_real,
			      struct json_object *(*fuse_json)(void));
/* Stop serving, remove the socket, free.  NULL is fine. */
void ffs_ctl_stop(struct ffs_ctl *c);

/* In-process use (offline): a context for fs (may be NULL) and its array. */
struct ffs_ctl *ffs_ctl_new(struct ffs *fs, struct ff_raid *r, const char *source);
void ffs_ctl_free(struct ffs_ctl *c);
/* Run one request line; *reply is a malloc'd JSON line (no '\n').
 * Returns 0 when the answer is "ok": true, else -errno. */
int ffs_ctl_exec(struct ffs_ctl *c, const char *line, char **reply);

/* The socket path of a mountpoint (its real path); -ENAMETOOLONG if buf is short. */
int ffs_ctl_sock_path(const char *mnt_real, char *buf, size_t len);
/* %XX-escape one request word into buf; -ENAMETOOLONG if it does not fit. */
int ffs_ctl_escape(const char *word, char *buf, size_t len);

#endif
