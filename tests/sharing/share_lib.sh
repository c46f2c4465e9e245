# Shared by the sharing tests (sourced after tests/integration/lib.sh, which
# makes the array, mounts it and undoes everything on exit).
#
# Environment (set by meson): FRAMEFS, MKFS, FSCK, FRAMETEST, EXAMPLES.
# Knobs: SHARE_LIST_N (frames in the listed directory, default 10000),
#        SHARE_FRAMES_4K (4K frames in the MB/s stream, default 6),
#        SHARE_SEQ_N (frames of the copied sequence, default 36).
: "${FRAMETEST:?FRAMETEST must name the built framefs-frametest}"
: "${EXAMPLES:?EXAMPLES must name the examples directory}"
LIST_N=${SHARE_LIST_N:-10000}
FRAMES_4K=${SHARE_FRAMES_4K:-6}
SEQ_N=${SHARE_SEQ_N:-36}
FRAME_4K_BYTES=51052544 # framefs-frametest --list: 4k, 4096x3112
SERVER_START_MAX_S=${SHARE_SERVER_START_MAX_S:-30}
# Scratch in RAM for the client side (downloads, the source frame).
SCRATCH=/dev/shm/$(basename "$IT_TMP").share
mkdir -p "$SCRATCH"
CLEANUPS+=("rm -rf '$SCRATCH'")

# need CMD...: fail the test when a tool is not installed.
need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null || { echo "FAIL: $c is not installed (./setup.sh test installs it)"; exit 1; }
	done
}

# wait_port PORT PID NAME: readiness, not a delay: poll (every 50 ms, at most
# SERVER_START_MAX_S) until a TCP connect to 127.0.0.1:PORT succeeds; fail
# at once if the server PID died.
wait_port() {
	local port=$1 pid=$2 name=$3 i
	for ((i = 0; i < SERVER_START_MAX_S * 20; i++)); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || fail "$name exited before listening on port $port"
		sleep 0.05
	done
	fail "$name did not listen on 127.0.0.1:$port within ${SERVER_START_MAX_S}s"
}

# free_port: a TCP port on 127.0.0.1 nobody listens on (from 20000 up).
free_port() {
	local p
	for ((p = $1; p < $1 + 500; p++)); do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
	done
	fail "no free port from $1"
}

# stop_group PGID NAME: TERM the server's process group (it and the children
# it forked, started by this test), wait (bounded, 10 s) until they are
# gone, then KILL what is left.
stop_group() {
	local pg=$1 name=$2 i
	[ -n "$pg" ] || return 0
	kill -TERM -- "-$pg" 2>/dev/null || return 0
	for ((i = 0; i < 200; i++)); do
		kill -0 -- "-$pg" 2>/dev/null || return 0
		sleep 0.05
	done
	echo "warning: $name did not stop on TERM in 10 s: KILL" >&2
	kill -KILL -- "-$pg" 2>/dev/null || true
}

# drop_caches: read figures come from the volume, not the page cache, where
# the kernel lets us (best effort: containers may refuse).
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

t0() { T0=$(now_ns); }
# secs: seconds since t0, 3 decimals
secs() { awk -v a="$T0" -v b="$(now_ns)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
# mbps BYTES SECONDS (MB = 10^6 bytes, as framefs-frametest)
mbps() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.1f", (s > 0 ? n / s / 1e6 : 0) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# sums DIR: "name sha256" of every regular file of DIR, sorted
sums() { (cd "$1" && find . -maxdepth 1 -type f -printf '%f\n' | sort | xargs -r sha256sum); }

# same_sums DIR1 DIR2 WHAT: same files, same contents
same_sums() {
	local a b
	a=$(sums "$1") b=$(sums "$2")
	[ -n "$a" ] || fail "$3: no files in $1"
	[ "$a" = "$b" ] || { diff <(echo "$a") <(echo "$b") | head >&2; fail "$3: checksums differ"; }
}

# make_sequence DIR: SEQ_N SD frames (1.4 MB each) written on the mount by
# framefs-frametest; each carries its own checksums (frametest -r checks them).
make_sequence() {
	mkdir -p "$1"
	"$FRAMETEST" -w sd -n "$SEQ_N" -u 0 "$1" >"$IT_TMP/frametest.w.out" 2>&1 ||
		{ cat "$IT_TMP/frametest.w.out" >&2; fail "framefs-frametest could not write the sequence"; }
}

# check_sequence DIR WHAT: frametest reads the frames back and checks every byte.
check_sequence() {
	"$FRAMETEST" -r -n "$SEQ_N" -u 0 "$1" >"$IT_TMP/frametest.r.out" 2>&1 ||
		{ tail -5 "$IT_TMP/frametest.r.out" >&2; fail "$2: framefs-frametest -r found bad frames"; }
}

# make_4k_source: one random 4K-sized frame in RAM, linked under
# SHARE_FRAMES_4K frame names (the stream sends the same bytes each time).
make_4k_source() {
	local i
	SRC4K=$SCRATCH/src4k
	mkdir -p "$SRC4K"
	head -c "$FRAME_4K_BYTES" /dev/urandom >"$SCRATCH/frame4k" || fail "cannot make the 4K frame"
	for ((i = 0; i < FRAMES_4K; i++)); do
		ln "$SCRATCH/frame4k" "$(printf '%s/frame%06d.dpx' "$SRC4K" "$i")"
	done
	STREAM_BYTES=$((FRAME_4K_BYTES * FRAMES_4K))
}

# local_stream DIR: the same stream written (cp) and read (cat) on the mount:
# LOCAL_W and LOCAL_R in MB/s.
local_stream() {
	mkdir -p "$1"
	t0
	cp "$SRC4K"/* "$1"/ || fail "local copy of the 4K stream"
	LOCAL_W=$(mbps "$STREAM_BYTES" "$(secs)")
	drop_caches
	t0
	cat "$1"/* >/dev/null || fail "local read of the 4K stream"
	LOCAL_R=$(mbps "$STREAM_BYTES" "$(secs)")
}

# make_big_dir DIR: LIST_N empty frames, made on the mount.
make_big_dir() {
	mkdir -p "$1"
	(cd "$1" && seq -f 'frame%07g.dpx' 0 $((LIST_N - 1)) | xargs touch) || fail "cannot make $LIST_N frames"
	drop_caches
	t0
	local n
	n=$(ls -l "$1" | grep -c 'frame')
	LOCAL_LS_S=$(secs)
	[ "$n" = "$LIST_N" ] || fail "local ls -l counts $n frames, not $LIST_N"
}

report() { echo "figure: $*"; }
