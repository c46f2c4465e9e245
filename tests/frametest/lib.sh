# Shared by the frametest integration tests (sourced).  Every mount, loop
# device and daemon a test makes is undone on exit, pass or fail.
set -u
: "${FT:?FT must name the framefs-frametest binary}"

WORK=$(mktemp -d /tmp/ft-it.XXXXXX)
MOUNTS=()
LOOPS=()
DAEMONS=()

cleanup() {
	local i
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null
	done
	for i in "${DAEMONS[@]}"; do
		kill "$i" 2>/dev/null
		wait "$i" 2>/dev/null
	done
	for i in "${LOOPS[@]}"; do
		losetup -d "$i" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -f "$WORK/out" ] && { echo "--- stdout" >&2; tail -40 "$WORK/out" >&2; }
	[ -f "$WORK/err" ] && { echo "--- stderr" >&2; tail -20 "$WORK/err" >&2; }
	exit 1
}

ok() { echo "ok: $*"; }

# run_ft ARGS...: stdout to $WORK/out, stderr to $WORK/err, status in $RC.
run_ft() {
	"$FT" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
}

expect_rc() { [ "$RC" = "$1" ] || fail "$2: exit status $RC, expected $1"; }
last_line() { tail -n 1 "$WORK/out"; }
expect_last() { # REGEX WHAT
	last_line | grep -Eq "$1" || fail "$2: last line '$(last_line)' does not match '$1'"
}
expect_out() { grep -Eq "$1" "$WORK/out" || fail "$2: stdout has no '$1'"; }
expect_err() { grep -Eq "$1" "$WORK/err" || fail "$2: stderr has no '$1'"; }

# json_get FILE PYTHON-EXPRESSION-ON-j
json_get() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print($2)" "$1"; }

mount_tmpfs() { # DIR SIZE
	mkdir -p "$1"
	mount -t tmpfs -o size="$2" tmpfs "$1" || fail "cannot mount tmpfs on $1"
	MOUNTS+=("$1")
}

mount_ext4_loop() { # DIR SIZE_MB: ext4 on a loop device over a file in tmpfs
	local img="$WORK/img-$(basename "$1")" dev
	mount_tmpfs "$img" "$(($2 + 8))m"
	truncate -s "${2}M" "$img/disk" || fail "cannot create $img/disk"
	dev=$(losetup -f --show "$img/disk") || fail "no free loop device"
	LOOPS+=("$dev")
	mkfs.ext4 -q -F "$dev" >/dev/null 2>&1 || fail "mkfs.ext4 $dev"
	mkdir -p "$1"
	mount "$dev" "$1" || fail "cannot mount $dev"
	MOUNTS+=("$1")
}

mount_slowfs() { # [--no-direct] [--log=FILE] BACKING DELAY_MS MOUNTPOINT [fuse options]
	local pre=() back delay mnt i
	while [ "${1#--}" != "$1" ]; do pre+=("$1"); shift; done
	back=$1 delay=$2 mnt=$3
	shift 3
	: "${SLOWFS:?SLOWFS must name the ft-slowfs binary}"
	mkdir -p "$back" "$mnt"
	"$SLOWFS" "${pre[@]}" "$back" "$delay" "$mnt" -f "$@" 2>"$WORK/slowfs.err" &
	DAEMONS+=($!)
	MOUNTS+=("$mnt")
	for ((i = 0; i < 100; i++)); do
		mountpoint -q "$mnt" && return 0
		sleep 0.05
	done
	fail "ft-slowfs did not mount $mnt: $(cat "$WORK/slowfs.err")"
}
