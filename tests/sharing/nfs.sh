#!/bin/bash
# NFS: the framefs volume exported by a real NFS-Ganesha (VFS FSAL over the
# FUSE mount, examples/ganesha.conf: NFSv4 only, so no rpcbind) on
# 127.0.0.1 and a private port, used by libnfs's user-space client (this
# kernel has no NFS client): nfs-cp, nfs-cat, nfs-ls, and ff-nfs-client
# (nfs_client.c) for writes and the stale-handle case.
#
# Checks: a frame sequence copied down and up (checksums, frametest reads
# the uploaded frames back); a 4K-frame stream written and read, MB/s beside
# the same on the mount; a listing of SHARE_LIST_N frames, time beside local
# ls -l; a deleted file's handle answers NFS4ERR_STALE once a new file
# reuses its inode number, and a fresh listing no longer shows the name
# deleted on the mount.  Then Ganesha stops, the volume unmounts cleanly
# and fsck finds nothing.
#
# Argument: the ff-nfs-client binary.
set -u
HERE=$(dirname "$(readlink -f "$0")")
NFSC=$1
# Fewer 4K frames than the SMB test: libnfs writes them in 3936-byte WRITEs.
: "${SHARE_FRAMES_4K:=3}"
. "$HERE/../integration/lib.sh"
. "$HERE/share_lib.sh"
need ganesha.nfsd nfs-cp nfs-cat nfs-ls
[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 ||
	{ echo "FAIL: nfs-ganesha-vfs is not installed (./setup.sh test installs it)"; exit 1; }

it_make_array 5 4 1G -N $((LIST_N + 5000)) # the listing's frames and the rest
it_mount

# --- ganesha.nfsd: the example configuration with our path, port, recovery dir
G=$IT_TMP/ganesha
mkdir -p "$G/recovery"
PORT=$(free_port 20490)
sed -e "s#^\tPath = /mnt/frames;\$#\tPath = $MNT;#" \
	-e "s#^\tNFS_Port = 2049;\$#\tNFS_Port = $PORT;\n\tBind_addr = 127.0.0.1;#" \
	-e "s#^\tRecoveryRoot = .*\$#\tRecoveryRoot = $G/recovery;#" \
	"$EXAMPLES/ganesha.conf" >"$G/ganesha.conf"
grep -q "Path = $MNT;" "$G/ganesha.conf" && grep -q "NFS_Port = $PORT;" "$G/ganesha.conf" &&
	grep -q "RecoveryRoot = $G/recovery;" "$G/ganesha.conf" ||
	fail "examples/ganesha.conf lacks a line this test replaces (Path, NFS_Port, RecoveryRoot)"
# -F: foreground, our child; setsid: its own process group, stopped as one.
setsid ganesha.nfsd -F -f "$G/ganesha.conf" -L "$G/ganesha.log" -p "$G/ganesha.pid" -N NIV_EVENT \
	>"$G/out" 2>&1 &
GANESHA_PID=$!
CLEANUPS+=('stop_group "$GANESHA_PID" ganesha.nfsd')
wait_port "$PORT" "$GANESHA_PID" ganesha.nfsd
ok "ganesha.nfsd listens on 127.0.0.1:$PORT"

Q="?version=4&nfsport=$PORT"
URL=nfs://127.0.0.1/framefs
# url PATH: the libnfs URL of PATH (relative to the export)
url() { echo "$URL/$1$Q"; }

# The export answers (bounded: Ganesha may still be loading the export
# when the port opens).
for ((i = 0; i < SERVER_START_MAX_S * 20; i++)); do
	nfs-ls "$(url '')" >/dev/null 2>&1 && break
	sleep 0.05
done
nfs-ls "$(url '')" >/dev/null || { tail -20 "$G/ganesha.log" >&2; fail "nfs-ls cannot list the export"; }

# --- a frame sequence down and up
make_sequence "$MNT/seq"
mkdir -p "$SCRATCH/down"
for f in "$MNT"/seq/*; do
	b=$(basename "$f")
	nfs-cp "$(url "seq/$b")" "$SCRATCH/down/$b" >/dev/null || fail "nfs-cp of seq/$b"
done
same_sums "$MNT/seq" "$SCRATCH/down" "sequence downloaded over NFS"
mkdir "$MNT/seq_up"
"$NFSC" put "$(url seq_up)" "$SCRATCH"/down/* >/dev/null || fail "ff-nfs-client put of the sequence"
same_sums "$SCRATCH/down" "$MNT/seq_up" "sequence uploaded over NFS"
check_sequence "$MNT/seq_up" "sequence uploaded over NFS"
ok "sequence of $SEQ_N SD frames down and up over NFS, checksums equal, frametest reads them back"

# --- a 4K stream: MB/s over NFS beside the same on the mount
make_4k_source
local_stream "$MNT/local4k"
mkdir "$MNT/nfs4k"
out=$("$NFSC" put "$(url nfs4k)" "$SRC4K"/*) || fail "ff-nfs-client put of the 4K stream"
read -r _ bytes s <<<"$out"
[ "$bytes" = "$STREAM_BYTES" ] || fail "ff-nfs-client wrote $bytes bytes, not $STREAM_BYTES"
NFS_W=$(mbps "$STREAM_BYTES" "$s")
same_sums "$SRC4K" "$MNT/nfs4k" "4K stream written over NFS"
drop_caches
t0
for f in "$SRC4K"/*; do
	nfs-cat "$(url "nfs4k/$(basename "$f")")" >/dev/null || fail "nfs-cat of nfs4k/$(basename "$f")"
done
NFS_R=$(mbps "$STREAM_BYTES" "$(secs)")
report "NFS write $NFS_W MB/s, local $LOCAL_W MB/s, ratio $(ratio "$NFS_W" "$LOCAL_W") ($FRAMES_4K 4K frames; libnfs 4.0 NFSv4 WRITEs of 3936 bytes, see nfs_client.c)"
report "NFS read $NFS_R MB/s, local $LOCAL_R MB/s, ratio $(ratio "$NFS_R" "$LOCAL_R")"
rm -rf "$MNT/local4k" "$MNT/nfs4k"

# --- listing a big directory
make_big_dir "$MNT/big"
t0
n=$(nfs-ls "$(url big)" | grep -c ' frame[0-9]*\.dpx$')
NFS_LS_S=$(secs)
[ "$n" = "$LIST_N" ] || fail "nfs-ls lists $n frames, not $LIST_N"
report "listing $LIST_N frames: NFS ${NFS_LS_S}s, local ls -l ${LOCAL_LS_S}s"
rm -rf "$MNT/big"

# --- stale handle: unlink on the mount, a new file takes the inode number,
# the old handle must answer NFS4ERR_STALE (and the new one NFS4_OK)
mkdir "$MNT/stale"
echo "take 1" >"$MNT/stale/shot.dpx"
# Listed over NFS first, so that a directory cache in the server has seen
# the name that the mount then deletes.
nfs-ls "$(url stale)" | grep -q ' shot\.dpx$' || fail "nfs-ls does not list stale/shot.dpx"
"$NFSC" stale "$(url stale)" "$MNT/stale" shot.dpx >"$IT_TMP/stale.out" 2>&1 ||
	{ cat "$IT_TMP/stale.out" >&2; fail "stale-handle case over NFS"; }
ok "stale handle: $(tr '\n' ';' <"$IT_TMP/stale.out")"
# A fresh listing shows the mount's change: the deleted name is gone, the new one is there.
ls_stale=$(nfs-ls "$(url stale)") || fail "nfs-ls of stale/ after the unlink"
grep -q ' shot\.dpx$' <<<"$ls_stale" && fail "nfs-ls still lists stale/shot.dpx, deleted on the mount"
grep -q ' shot\.dpx\.new$' <<<"$ls_stale" || fail "nfs-ls does not list stale/shot.dpx.new, made on the mount"
ok "a name deleted on the mount is gone from a fresh NFS listing, a new one is there"

# --- stop Ganesha, unmount, check the volume
stop_group "$GANESHA_PID" ganesha.nfsd
GANESHA_PID=
it_unmount
it_fsck
ok "ganesha.nfsd stopped, volume unmounted cleanly, fsck clean"
echo "nfs: all checks passed"
