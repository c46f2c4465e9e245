#!/bin/bash
# --io-size: a frame moves in I/O calls of SIZE bytes instead of one call per
# frame.  strace shows the calls (tmpfs, ext4): whole-frame pwrite64/pread64
# against 1 MiB pieces, for fixed frames and --vary frames in one file (-s),
# where the pieces must tile the file exactly.  The ft-slowfs request log
# shows what reaches a FUSE filesystem: pieces of 256 KiB (under FUSE's
# largest request) are never merged into, or crossed by, a request.
. "$(dirname "$0")/lib.sh"

# check_calls LOG SYSCALL PIECE SIZES_FILE ONE_FILE: the traced calls, in
# order, are exactly each frame (sizes in SIZES_FILE, frame order) cut into
# PIECE-byte calls (0: one call per frame), at offsets from 0 in each frame's
# file, or end to end when ONE_FILE is 1; every call moved all it asked for.
# (A read test is given its size, so that no read finds it from frame 0.)
check_calls() {
	python3 - "$@" <<'EOF'
import re, sys
log, call, piece, sizes, one = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
# strace -y names each fd's file: only calls on frame files (*.tst) count, not the loader's.
pat = re.compile(r"\b" + call + r"\(\d+<[^>]*\.tst>, [^,]*, (\d+), (\d+)\)\s+= (-?\d+)")
got = []
for line in open(log):
    m = pat.search(line)
    if m:
        size, off, ret = map(int, m.groups())
        assert ret == size, f"short {call}: {line.strip()}"
        got.append((size, off))
want, base = [], 0
for b in (int(x) for x in open(sizes)):
    step = piece or b
    want += [(min(step, b - o), base + o) for o in range(0, b, step)]
    base += b if one else 0
if got != want:
    print(f"{call}: {len(got)} calls, expected {len(want)}; first difference:",
          next(((g, w) for g, w in zip(got, want) if g != w), (got[len(want):len(want)+1], want[len(got):len(got)+1])))
    sys.exit(1)
print(f"{call}: {len(got)} calls as expected")
EOF
}

# LeakSanitizer cannot run under ptrace: an ASan build checks leaks in the untraced runs.
traced() { # SYSCALL ARGS...: run the tool under strace, log in $WORK/trace
	local call=$1
	shift
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -y -s 0 -e trace="$call" -o "$WORK/trace" "$FT" "$@" >"$WORK/out" 2>"$WORK/err"
	RC=$?
}

csv_bytes() { # CSV: bytes of each frame of stream 0, in frame order
	python3 -c '
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["stream"] == "0"]
for r in sorted(rows, key=lambda r: int(r["frame"])):
    print(r["bytes"])' "$1"
}

io_fs() { # DIR FSNAME
	local d=$1 fs=$2

	for _ in 1 2 3; do echo 4456448; done >"$WORK/fixed"	# 4 MiB + 256 KiB
	traced pwrite64 -w 1 -z 4352 -n 3 -u 0 "$d/whole"
	expect_rc 0 "$fs: whole-frame write"
	check_calls "$WORK/trace" pwrite64 0 "$WORK/fixed" 0 || fail "$fs: one pwrite64 per frame"
	traced pwrite64 -w 1 -z 4352 -n 3 --io-size=1M -u 0 "$d/piece"
	expect_rc 0 "$fs: 1 MiB pieces write"
	expect_out "^Test parameters:    -w4352 -n3 -t1 --io-size=1MiB$" "$fs: parameters"
	check_calls "$WORK/trace" pwrite64 1048576 "$WORK/fixed" 0 || fail "$fs: 1 MiB pwrite64 pieces"
	traced pread64 -r 4352 -n 3 -u 0 "$d/piece"
	expect_last "verified 3/3 frames$" "$fs: whole-frame read"
	check_calls "$WORK/trace" pread64 0 "$WORK/fixed" 0 || fail "$fs: one pread64 per frame"
	traced pread64 -r 4352 -n 3 --io-size=1M -u 0 "$d/whole"
	expect_last "verified 3/3 frames$" "$fs: 1 MiB pieces read"
	check_calls "$WORK/trace" pread64 1048576 "$WORK/fixed" 0 || fail "$fs: 1 MiB pread64 pieces"
	ok "$fs: fixed frames: one call per frame, or 1 MiB pieces (writes and reads)"

	traced pwrite64 -w --vary=1M:4M,3 -n 8 -s -u 0 -x "$WORK/v.csv" "$d/vs"
	expect_rc 0 "$fs: --vary -s whole-frame write"
	csv_bytes "$WORK/v.csv" >"$WORK/vsizes"
	[ "$(sort -u "$WORK/vsizes" | wc -l)" -ge 5 ] || fail "$fs: --vary sizes hardly vary"
	check_calls "$WORK/trace" pwrite64 0 "$WORK/vsizes" 1 || fail "$fs: --vary -s: one pwrite64 per frame, end to end"
	traced pwrite64 -w --vary=1M:4M,3 -n 8 -s --io-size=1M -u 0 "$d/vs"
	expect_rc 0 "$fs: --vary -s 1 MiB pieces write"
	check_calls "$WORK/trace" pwrite64 1048576 "$WORK/vsizes" 1 || fail "$fs: --vary -s: 1 MiB pieces tile the file"
	traced pread64 -r -s -n 8 --vary=1M:4M,3 --io-size=1M -u 0 "$d/vs"
	expect_last "^PASS: .* of 1MiB-4MiB .* verified 8/8 frames$" "$fs: --vary -s pieces read"
	check_calls "$WORK/trace" pread64 1048576 "$WORK/vsizes" 1 || fail "$fs: --vary -s: 1 MiB pread64 pieces"
	traced pread64 -r -s -n 8 --vary=1M:4M,3 -u 0 "$d/vs"
	expect_last "verified 8/8 frames$" "$fs: --vary -s whole-frame read"
	check_calls "$WORK/trace" pread64 0 "$WORK/vsizes" 1 || fail "$fs: --vary -s: one pread64 per frame"
	ok "$fs: --vary in one file: one call per frame, or 1 MiB pieces that tile the file"
}

# requests LOG DIR: "SIZE OFFSET" of each logged request under /DIR/
requests() { awk -v d="/$2/" 'index($2, d) == 1 { print $1, $3, $4 }' "$1"; }

if command -v strace >/dev/null; then
	mount_tmpfs "$WORK/tmpfs" 256m
	io_fs "$WORK/tmpfs" tmpfs
	mount_ext4_loop "$WORK/ext4" 128
	io_fs "$WORK/ext4" ext4
else
	echo "skip: no strace, the I/O calls themselves are not checked"
	mount_tmpfs "$WORK/tmpfs" 256m
fi

mount_slowfs --log="$WORK/fuse.log" "$WORK/tmpfs/back" 0 "$WORK/slow"
S="$WORK/slow"
run_ft -w 1 -z 4352 -n 3 -u 0 "$S/whole"
expect_rc 0 "slowfs: whole-frame write"
run_ft -w 1 -z 4352 -n 3 --io-size=256K -u 0 "$S/piece"
expect_rc 0 "slowfs: 256 KiB pieces write"
run_ft -r 4352 -n 3 --io-size=256K -u 0 "$S/whole"
expect_last "verified 3/3 frames$" "slowfs: 256 KiB pieces read"
run_ft -w --vary=1M:4M,3 -n 6 -t 2 --io-size=256K -u 0 "$S/vary"
expect_rc 0 "slowfs: --vary 256 KiB pieces write"
run_ft -r -n 6 -t 2 --io-size=256K -u 0 "$S/vary"
expect_last "^PASS: .* of 1MiB-4MiB .* verified 6/6 frames$" "slowfs: --vary 256 KiB pieces read"
requests "$WORK/fuse.log" whole | awk '$1 == "write" && $2 > 262144 { n++ } END { exit !n }' ||
	fail "slowfs: whole-frame writes should reach FUSE in requests over 256 KiB"
for dir in piece vary; do
	requests "$WORK/fuse.log" "$dir" | awk '$2 == 4096 && $3 == 0 { next }	# -r finding the size
		{ n++ } $2 > 262144 || int($3 / 262144) != int(($3 + $2 - 1) / 262144) { bad++; print }
		END { exit !(n && !bad) }' || fail "slowfs: a request of /$dir crosses a 256 KiB piece"
done
[ "$(requests "$WORK/fuse.log" piece | awk '$1 == "write" { n++ } END { print n }')" = 51 ] ||
	fail "slowfs: 3 frames of 17 pieces should be 51 write requests"
ok "slowfs: 256 KiB pieces reach FUSE as requests of at most one piece; whole frames in larger ones"
