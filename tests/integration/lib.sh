# Shared by the framefs integration tests (sourced).  A test makes a
# file-backed array in /dev/shm, mounts it with the real daemon through
# FUSE, and everything it made (mounts, daemons, members, users, the fstab
# line) is undone on exit, pass or fail.
#
# Environment (set by meson): FRAMEFS, MKFS, FSCK (the built binaries).
set -u
: "${FRAMEFS:?FRAMEFS must name the built framefs daemon}"
: "${MKFS:?MKFS must name the built mkfs.framefs}"
: "${FSCK:?FSCK must name the built fsck.framefs}"

IT_TMP=$(mktemp -d /tmp/ffit.XXXXXX)
chmod 755 "$IT_TMP" # other users (permission tests) must reach the mountpoint
MNT=$IT_TMP/mnt
mkdir -p "$MNT"
MEMBERS=()          # member files of the current array
SPEC=               # the same, comma-separated (the daemon's first argument)
DAEMON_PID=         # the framefs of the current mount (-f, our child)
DAEMON_LOG=
MOUNT_TRANSPORT=    # the transport IT_TRANSPORT gave the current mount, if it did
NMOUNTS=0
CLEANUPS=()         # extra commands run first on exit (eval'd)
MOUNT_MAX_S=${IT_MOUNT_MAX_S:-60}

it_cleanup() {
	local rc=$? i
	for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUPS[i]}" || true
	done
	if grep -qs " $MNT " /proc/mounts; then
		umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill -TERM "$DAEMON_PID" 2>/dev/null
		for i in $(seq 100); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$DAEMON_PID" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	rm -f "${MEMBERS[@]}"
	rm -rf "$IT_TMP"
	exit "$rc"
}
trap it_cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "FAIL: $*" >&2
	if [ -n "$DAEMON_LOG" ] && [ -s "$DAEMON_LOG" ]; then
		echo "--- daemon log ($DAEMON_LOG)" >&2
		tail -30 "$DAEMON_LOG" >&2
	fi
	exit 1
}

ok() { echo "ok: $*"; }

now_ns() { date +%s%N; }

# it_make_array LEVEL NMEMBERS SIZE [mkfs options...]: fresh members in /dev/shm
it_make_array() {
	local level=$1 n=$2 size=$3 i
	shift 3
	rm -f "${MEMBERS[@]}"
	MEMBERS=()
	for ((i = 0; i < n; i++)); do
		MEMBERS+=("/dev/shm/$(basename "$IT_TMP").m$i")
		truncate -s "$size" "${MEMBERS[i]}" || fail "cannot create ${MEMBERS[i]}"
	done
	SPEC=$(IFS=,; echo "${MEMBERS[*]}")
	"$MKFS" -q -f -l "$level" "$@" "${MEMBERS[@]}" || fail "mkfs.framefs -l $level $* failed"
}

is_mounted() { grep -qs " $MNT fuse.framefs " /proc/mounts; }

# it_mount [-o OPTS]: start the daemon in the foreground (our child), wait
# until the kernel shows the mount.  Sets MOUNT_NS (time to mount).
it_mount() {
	local t0 i
	NMOUNTS=$((NMOUNTS + 1))
	DAEMON_LOG=$IT_TMP/daemon.$NMOUNTS.log
	t0=$(now_ns)
	# IT_TRANSPORT=io_uring|dev: the suite over that transport (itlib.py
	# too), for the mounts that did not pick one themselves
	MOUNT_TRANSPORT=
	if [ -n "${IT_TRANSPORT:-}" ] && [[ " $* " != *transport=* ]]; then
		set -- "$@" -o "transport=$IT_TRANSPORT"
		MOUNT_TRANSPORT=$IT_TRANSPORT
	fi
	"$FRAMEFS" -f "$@" "$SPEC" "$MNT" >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	for ((i = 0; i < MOUNT_MAX_S * 20; i++)); do
		is_mounted && break
		kill -0 "$DAEMON_PID" 2>/dev/null || { wait "$DAEMON_PID"; fail "framefs exited (status $?) instead of mounting"; }
		sleep 0.05
	done
	is_mounted || fail "framefs did not mount within ${MOUNT_MAX_S}s"
	MOUNT_NS=$(($(now_ns) - t0))
}

# it_wait_daemon: the daemon must exit 0 (it wrote everything out) and say so.
it_wait_daemon() {
	local st
	wait "$DAEMON_PID"
	st=$?
	DAEMON_PID=
	[ "$st" = 0 ] || fail "framefs exited with status $st after unmount"
	grep -q "unmounted cleanly" "$DAEMON_LOG" || fail "framefs did not report a clean unmount"
	local said=
	case "$MOUNT_TRANSPORT" in
	io_uring) said="FUSE over io_uring" ;;
	dev) said="FUSE over /dev/fuse" ;;
	esac
	[ -z "$said" ] || grep -qF "$said" "$DAEMON_LOG" ||
		fail "IT_TRANSPORT=$MOUNT_TRANSPORT, but the daemon did not say '$said'"
}

# it_wait_ctl: the control socket of the mount on $MNT (framefs-admin's
# way in) is there.  The daemon opens it just after the mount shows in
# /proc/mounts; bounded by CTL_MAX_S.  ffs_ctl_sock_path's name: '/' to
# '_', bytes outside [A-Za-z0-9.-] as %XX (fs/daemon/ctl.h).
it_wait_ctl() {
	local path=${MNT#/} name= c h i sock
	for ((i = 0; i < ${#path}; i++)); do
		c=${path:i:1}
		case $c in
		/) name+=_ ;;
		[A-Za-z0-9.-]) name+=$c ;;
		*) printf -v h '%%%02x' "'$c"; name+=$h ;;
		esac
	done
	sock=/run/framefs/${name:-_}.sock
	for ((i = 0; i < ${CTL_MAX_S:-10} * 20; i++)); do
		[ -S "$sock" ] && return 0
		sleep 0.05
	done
	fail "no control socket $sock ${CTL_MAX_S:-10} s after the mount"
}

# it_unmount: umount(8), then wait for the daemon to write out and exit.
it_unmount() {
	local i
	for i in $(seq 50); do
		umount "$MNT" 2>/dev/null && break
		sleep 0.1 # a child that just closed a file may still hold the mount busy
	done
	is_mounted && fail "cannot unmount $MNT"
	it_wait_daemon
}

# it_kill9: SIGKILL the daemon and detach the dead mount.
it_kill9() {
	kill -KILL "$DAEMON_PID" 2>/dev/null
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT" 2>/dev/null
	is_mounted && fail "cannot detach the dead mount"
	return 0
}

# it_fsck: an unmounted array needs no repair, metadata or data (-c checks
# every data chunk against its checksum).
it_fsck() {
	local st=0
	"$FSCK" -n -c "${MEMBERS[@]}" >"$IT_TMP/fsck.out" 2>&1 || st=$?
	if [ "$st" != 0 ]; then
		cat "$IT_TMP/fsck.out" >&2
		fail "fsck.framefs -n -c found problems (status $st)"
	fi
	FSCK_RUNS=$((${FSCK_RUNS:-0} + 1))
}

# it_mounted_clean_log: the last mount found the array shut down cleanly.
it_expect_clean_start() {
	grep -q "not shut down cleanly" "$DAEMON_LOG" && fail "array was marked dirty at mount: $1"
	return 0
}

# it_helper_on_path: mount(8) finds this build's framefs as its helper.
# mount.fuse3 starts it through /bin/sh and PATH; where setuid mount strips
# PATH (seen here: a capability-limited root), /bin/sh looks in its default
# path, so /usr/local/sbin/framefs links to the build for the test, unless
# a framefs is installed there already, and is removed on exit.
it_helper_on_path() {
	mkdir -p "$IT_TMP/bin"
	ln -sf "$FRAMEFS" "$IT_TMP/bin/framefs"
	export PATH=$IT_TMP/bin:$PATH
	if [ ! -e /usr/local/sbin/framefs ]; then
		mkdir -p /usr/local/sbin
		ln -s "$FRAMEFS" /usr/local/sbin/framefs
		CLEANUPS+=('rm -f /usr/local/sbin/framefs')
	fi
}
