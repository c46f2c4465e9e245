#!/bin/bash
# Proves: the integration programs reach the daemon with every FUSE request
# the filesystem issue lists — the mount runs with -d (libfuse prints each
# request it dispatches) while the "run" phase of each C test program works
# in its own directory, and every opcode must appear in that trace, answered
# (no ENOSYS).  Guards against a test passing only because the kernel
# answered from its caches.
#   ops_coverage.sh PROG...
. "$(dirname "$0")/lib.sh"

it_make_array 5 4 256M
it_mount -d
i=0
for prog in "$@"; do
	i=$((i + 1))
	mkdir "$MNT/t$i" || fail "mkdir t$i"
	"$prog" "$MNT/t$i" run >"$IT_TMP/prog.$i.out" 2>&1 ||
		{ cat "$IT_TMP/prog.$i.out" >&2; fail "$(basename "$prog") run (in a subdirectory)"; }
done
# the kernel forgets inodes it no longer needs: dentries and inodes dropped
sync
echo 2 >/proc/sys/vm/drop_caches
sleep 0.5
it_unmount
it_fsck

missing=()
for op in LOOKUP GETATTR SETATTR CREATE MKNOD OPEN READ WRITE FLUSH RELEASE FSYNC FSYNCDIR MKDIR \
	RMDIR UNLINK LINK SYMLINK READLINK OPENDIR READDIRPLUS RELEASEDIR STATFS FALLOCATE \
	GETXATTR SETXATTR LISTXATTR REMOVEXATTR ACCESS INIT; do
	grep -q "opcode: $op " "$DAEMON_LOG" || missing+=("$op")
done
grep -q "opcode: RENAME2* " "$DAEMON_LOG" || missing+=(RENAME)
grep -q "opcode: RENAME2 " "$DAEMON_LOG" || missing+=("RENAME2 (renameat2 flags)")
grep -Eq "opcode: (BATCH_)?FORGET " "$DAEMON_LOG" || missing+=(FORGET)
grep -Eq "opcode: READDIR " "$DAEMON_LOG" || missing+=("READDIR (plain)")
[ ${#missing[@]} = 0 ] || fail "requests never reached the daemon: ${missing[*]}"
grep -q "error: -38 " "$DAEMON_LOG" && fail "the daemon answered ENOSYS: $(grep -B3 'error: -38 ' "$DAEMON_LOG" | head)"
ok "every listed FUSE request reached framefs and was answered ($(grep -c 'opcode:' "$DAEMON_LOG") requests)"
