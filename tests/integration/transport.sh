#!/bin/bash
# Proves: the daemon serves FUSE over io_uring by default (and when asked,
# -o transport=io_uring) where it can, over /dev/fuse when asked
# (-o transport=dev), falls back to /dev/fuse where io_uring cannot serve,
# says which and why (log, status), and the data is the
# same either way — O_DIRECT and buffered, requests of 1 MiB and of
# whole stripes (fs.fuse.max_pages_limit raised), RAID5 and RAID6, several
# widths.  With a libfuse older than 3.18 in the build (the ASan run), every
# mount must say so and work over /dev/fuse.
#
# Changes two kernel settings for its run and puts back what it found:
# /sys/module/fuse/parameters/enable_uring and fs.fuse.max_pages_limit.
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"
unset IT_TRANSPORT # this test picks each mount's transport, the default too

URING_PARAM=/sys/module/fuse/parameters/enable_uring
PAGES=/proc/sys/fs/fuse/max_pages_limit
[ -r "$URING_PARAM" ] || fail "$URING_PARAM is missing: this kernel has no FUSE over io_uring"
[ -w "$PAGES" ] || fail "$PAGES is not writable (the test runs as root)"
old_uring=$(cat "$URING_PARAM")
old_pages=$(cat "$PAGES")
CLEANUPS+=("echo $old_uring >$URING_PARAM" "echo $old_pages >$PAGES")

version=$("$FRAMEFS" --version | head -1)
case "$version" in
*"libfuse 3.1"[89]* | *"libfuse 3."[2-9][0-9]* | *"libfuse "[4-9]*) HAS_URING=1 ;;
*) HAS_URING=0 ;;
esac
echo "built: $version (io_uring possible: $HAS_URING)"

SRC=$IT_TMP/src
# sizes: a 4K DPX frame, an odd size (last stripe partial), one byte; and
# an 8K frame in the case that sets SIZES8K=1
SIZES4K=(51052544 7340033 1)
SIZES=("${SIZES4K[@]}")

status_field() { # KEY: one field of the mount's "fuse" status object
	"$ADMIN" --json status "$MNT" | python3 -c '
import json, sys
f = json.load(sys.stdin)["fuse"]
print(f[sys.argv[1]])' "$1"
}

# write_check TAG: every size written O_DIRECT and buffered, read back both
# ways after the caches are dropped, compared byte for byte
write_check() {
	local tag=$1 i s
	for i in "${!SIZES[@]}"; do
		s=${SIZES[i]}
		# O_DIRECT needs whole blocks: the odd sizes go buffered only
		if [ $((s % 4096)) = 0 ]; then
			head -c "$s" "$SRC" | dd of="$MNT/$tag.d$i" bs=32M iflag=fullblock oflag=direct \
				status=none || fail "$tag: O_DIRECT write of $s bytes"
		fi
		head -c "$s" "$SRC" | dd of="$MNT/$tag.b$i" bs=3M status=none || fail "$tag: write of $s bytes"
	done
	echo 3 >/proc/sys/vm/drop_caches
	for i in "${!SIZES[@]}"; do
		s=${SIZES[i]}
		if [ $((s % 4096)) = 0 ]; then
			dd if="$MNT/$tag.d$i" bs=32M iflag=direct status=none | cmp -s - <(head -c "$s" "$SRC") ||
				fail "$tag: $s bytes written O_DIRECT differ (read O_DIRECT)"
		fi
		cmp -s "$MNT/$tag.b$i" <(head -c "$s" "$SRC") || fail "$tag: $s bytes written buffered differ"
	done
}

# expect TRANSPORT REASON-PATTERN: what status and the log say
expect() {
	local want=$1 why=$2 got
	got=$(status_field transport)
	[ "$got" = "$want" ] || fail "status says transport $got, expected $want"
	if [ "$want" = io_uring ]; then
		[ "$(status_field uring_requests)" -gt 0 ] || fail "io_uring, but no request came over it"
		grep -q "FUSE over io_uring" "$DAEMON_LOG" || fail "the log does not say FUSE over io_uring"
	else
		[ "$(status_field uring_requests)" = 0 ] || fail "/dev/fuse, but requests came over io_uring"
		status_field why_dev_fuse | grep -q -- "$why" || fail "status gives no reason matching '$why'"
		grep -q "FUSE over /dev/fuse.*$why" "$DAEMON_LOG" || fail "the log gives no reason matching '$why'"
	fi
	ok "transport $want$([ "$want" = io_uring ] || echo " ($why)")"
}

head -c $((203423744 + 4096)) /dev/urandom >"$SRC"

# bad options: refused before anything is touched
it_make_array 5 3 512M
for bad in transport=carrier-pigeon uring_depth=100000; do
	out=$("$FRAMEFS" -f -o "$bad" "$SPEC" "$MNT" 2>&1) && fail "-o $bad was accepted"
	echo "$out" | grep -q "give" || fail "-o $bad: no hint what to give: $out"
done
ok "bad transport options refused with a hint"

case_no=0
run_case() { # LEVEL N CHUNK URING(Y|N) PAGES [mount options] -> mounts, writes, checks, unmounts
	local level=$1 n=$2 chunk=$3 uring=$4 pages=$5 stripe want
	shift 5
	case_no=$((case_no + 1))
	echo "$uring" >"$URING_PARAM"
	echo "$pages" >"$PAGES"
	SIZES=("${SIZES4K[@]}")
	[ "${SIZES8K:-0}" = 0 ] || SIZES+=(203423744)
	it_make_array "$level" "$n" 512M -c "$chunk"
	it_mount "$@"
	stripe=$(( (n - (level == 6 ? 2 : 1)) * $(numfmt --from=iec "$chunk") ))
	# whole stripes within the kernel's limit, or the largest power of two
	# in it; libfuse before 3.18 takes at most 256 pages
	[ "$HAS_URING" = 1 ] || [ "$pages" -le 256 ] || pages=256
	if [ "$stripe" -le $((pages * 4096)) ]; then
		want=$((pages * 4096 / stripe * stripe))
	else
		want=4096
		while [ $((want * 2)) -le $((pages * 4096)) ]; do want=$((want * 2)); done
	fi
	write_check "c$case_no" # first: INIT (which settles the size) is done once a request is answered
	[ "$(status_field request_bytes)" = "$want" ] ||
		fail "RAID$level x $n, chunk $chunk, max_pages_limit $pages: requests of" \
			"$(status_field request_bytes) bytes, expected $want"
	if [[ " $* " == *" transport=dev "* ]]; then
		expect /dev/fuse "transport=dev"
	elif [ "$HAS_URING" = 0 ]; then
		expect /dev/fuse "older than 3.18"
	elif [ "$uring" = N ]; then
		expect /dev/fuse "enable_uring is off"
	else
		expect io_uring ""
	fi
	it_unmount
	it_fsck
	ok "RAID$level x $n, chunk $chunk, enable_uring=$uring, max_pages_limit=$pages $*:" \
		"requests of $want bytes, data verified"
}

run_case 5 4 512K Y 256 -o transport=io_uring # 1 MiB requests
SIZES8K=1 run_case 5 4 512K Y 1024 -o transport=io_uring # two 1.5 MiB stripes per request
run_case 6 10 128K Y 1024 -o transport=io_uring  # RAID6, wide: four 1 MiB stripes per request
run_case 5 3 1M Y 256 -o transport=io_uring      # a stripe (2 MiB) larger than a request
run_case 5 4 512K Y 1024                         # the default: io_uring where it can
run_case 5 4 512K Y 256 -o transport=dev
run_case 6 6 256K N 256 -o transport=io_uring    # kernel parameter off: falls back and says why
run_case 5 5 256K N 1024                         # the same for the default
