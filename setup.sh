#!/bin/bash
# framefs set-up on a fresh Debian 12 machine, as root.
#   ./setup.sh demo   install what is missing, build, install on PATH, run the demo
#   ./setup.sh test   install what is missing, build (release and ASan+UBSan), run the CI-sized tests,
#                     then build the Debian package and check it installed (package_test)
#   ./setup.sh test --full   the same with the long soaks and every suite under ASan+UBSan
#   ./setup.sh package   install what is missing, build the Debian package into build-deb/
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

PKGS="gcc meson ninja-build pkg-config libfuse3-dev fuse3 liburing-dev libisal-dev libnvme-dev libjson-c-dev
      check fio btrfs-progs e2fsprogs util-linux kmod python3 gdb python3-prometheus-client
      samba samba-vfs-modules smbclient samba-testsuite nfs-ganesha nfs-ganesha-vfs libnfs-utils libnfs-dev
      dpkg-dev libnuma-dev qemu-system-x86 busybox-static
      scdoc man-db bash-completion systemd debhelper lintian"
# libfuse: one pinned version, Debian's fuse3 source package 3.18.3-1 (libfuse
# 3.18.3: FUSE over io_uring since 3.18, parallel direct writes since 3.15),
# with framefs's patch, whose header says what each hunk does and where
# upstream stands on it.
FUSE_DEB_VERSION=3.18.3-1
FUSE_VERSION=${FUSE_DEB_VERSION%-*}
FUSE_SUITES="unstable testing" # the suites that carried it on 2026-12-07
FUSE_PATCH=subprojects/packagefiles/fuse3/uring-any-thread.patch
# the patch's version: the value it gives FUSE_URING_REPLY_FROM_ANY_THREAD
FUSE_PATCH_VERSION=$(sed -n 's/^+#define FUSE_URING_REPLY_FROM_ANY_THREAD \([0-9]*\)$/\1/p' "$FUSE_PATCH")

install_deps() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
}

# libfuse $FUSE_VERSION, built by meson as a static subproject from
# subprojects/fuse3 (meson.build).  Debian 12 ships 3.14, so setup.sh takes
# Debian's own fuse3 $FUSE_DEB_VERSION source package from the mirror this
# machine already uses, through a private apt configuration under
# subprojects/.apt that holds deb-src lines for $FUSE_SUITES: the system's
# sources stay as they are.  apt checks the Release file's signature against
# Debian's archive keyring and the package's files against the checksums that
# file signs (hence dpkg-source --no-check: the uploader's key is not needed);
# dpkg-source applies Debian's patches.  When that version cannot be had,
# setup.sh says so and why, and framefs builds on the system's libfuse 3.14,
# which serves FUSE over /dev/fuse only.
fetch_fuse() {
	local apt_dir=subprojects/.apt uri have versions=""
	have=$(sed -n "s/^ *version: *'\([0-9.]*\)'.*/\1/p" subprojects/fuse3/meson.build 2>/dev/null | head -1) || have=
	if [ -n "$have" ] && [ "$have" != "$FUSE_VERSION" ]; then
		echo "libfuse: subprojects/fuse3 holds $have, not the pinned $FUSE_VERSION; fetching it again"
		rm -rf subprojects/fuse3 && have=
	fi
	# a tree patched by another version of framefs's patch: fetched anew
	if [ -n "$have" ] && grep -q 'FUSE_URING_REPLY_FROM_ANY_THREAD' subprojects/fuse3/include/fuse_lowlevel.h &&
		! patched_fuse; then
		echo "libfuse: subprojects/fuse3 has another version of $FUSE_PATCH; fetching it again"
		rm -rf subprojects/fuse3 && have=
	fi
	if [ -n "$have" ]; then
		echo "libfuse: $FUSE_DEB_VERSION from Debian's source package (subprojects/fuse3)"
		patch_fuse
		return 0
	fi
	# the main archive's address as this machine's apt knows it
	uri=$(apt-get indextargets --format '$(REPO_URI) $(LABEL)' | awk '$2 == "Debian" && !n++ { print $1 }') || uri=
	if [ -z "$uri" ]; then
		fuse_unavailable "apt's sources name no Debian mirror"
		return 0
	fi
	rm -rf "$apt_dir" && mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/src"
	for s in $FUSE_SUITES; do
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $s main"
	done >"$apt_dir/sources.list"
	local opts=(-o Dir::Etc::SourceList="$PWD/$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$PWD/$apt_dir/lists" -o Dir::Cache="$PWD/$apt_dir/cache"
		-o APT::Sandbox::User=root)
	if ! apt-get -qq "${opts[@]}" update; then
		fuse_unavailable "apt could not read the ${FUSE_SUITES// / and } source lists of $uri"
		rm -rf "$apt_dir"
		return 0
	fi
	versions=$(apt-cache "${opts[@]}" showsrc fuse3 2>/dev/null | awk '/^Version:/ { print $2 }' | sort -uV | paste -sd' ')
	if ! (cd "$apt_dir/src" && apt-get -qq "${opts[@]}" source --download-only "fuse3=$FUSE_DEB_VERSION" >/dev/null) ||
		! (cd "$apt_dir/src" && dpkg-source --no-check -x ./*.dsc fuse3 >/dev/null); then
		fuse_unavailable "the ${FUSE_SUITES// / and } suites carry fuse3 ${versions:-in no version}, not $FUSE_DEB_VERSION"
		rm -rf "$apt_dir"
		return 0
	fi
	rm -rf subprojects/fuse3 && mv "$apt_dir/src/fuse3" subprojects/fuse3 && rm -rf "$apt_dir"
	echo "libfuse: $FUSE_DEB_VERSION from Debian's source package (subprojects/fuse3)"
	patch_fuse
}

# The pinned libfuse cannot be had: say why and what follows, loudly, and go
# on with the system's libfuse (meson warns again at configure time).
fuse_unavailable() { # REASON
	cat >&2 <<-EOM
	libfuse: cannot get Debian's fuse3 $FUSE_DEB_VERSION source package: $1.
	libfuse: framefs builds on the system's libfuse $(pkg-config --modversion fuse3 2>/dev/null || echo '(none)') and serves FUSE over /dev/fuse only (no io_uring).
	libfuse: to fix, point apt at a Debian mirror whose ${FUSE_SUITES// / and } suites carry $FUSE_DEB_VERSION, or move
	libfuse: FUSE_DEB_VERSION in setup.sh to a version they carry and check that $FUSE_PATCH applies to it.
	EOM
}

# framefs's one patch to libfuse's io_uring code (the patch's own header
# says what and why): replies from the daemon's worker threads.  Applied
# once; a libfuse it does not apply to is used as it is, and framefs then
# answers every io_uring request on libfuse's queue thread (transport.c).
patch_fuse() {
	local p=$FUSE_PATCH
	if patched_fuse; then
		return 0
	fi
	if patch -d subprojects/fuse3 -p1 --forward --quiet --dry-run <"$p" >/dev/null &&
		patch -d subprojects/fuse3 -p1 --forward --quiet <"$p"; then
		echo "libfuse: $p applied"
	else
		echo "libfuse: $p does not apply; io_uring requests are answered on libfuse's queue threads" >&2
	fi
}

# Whether subprojects/fuse3 carries this version of that patch.
patched_fuse() {
	grep -q "FUSE_URING_REPLY_FROM_ANY_THREAD $FUSE_PATCH_VERSION\$" subprojects/fuse3/include/fuse_lowlevel.h
}

# The kernel's side of large requests and of FUSE over io_uring: both are
# off by default.  fs.fuse.max_pages_limit lifts requests from 1 MiB to
# 4 MiB, so a full-stripe write arrives as one request; fuse.enable_uring
# lets framefs -o transport=io_uring serve FUSE over io_uring.  Runtime settings only: a boot
# sets them back (docs/transport.md: how to keep them).
kernel_fuse() {
	if [ -w /sys/module/fuse/parameters/enable_uring ]; then
		echo 1 >/sys/module/fuse/parameters/enable_uring
		echo "kernel: fuse.enable_uring=1"
	else
		echo "kernel: no fuse.enable_uring here; framefs serves FUSE over /dev/fuse" >&2
	fi
	if [ -w /proc/sys/fs/fuse/max_pages_limit ]; then
		echo 1024 >/proc/sys/fs/fuse/max_pages_limit
		echo "kernel: fs.fuse.max_pages_limit=1024 (4 MiB requests)"
	fi
}

build() { # DIR [meson options...]
	local dir=$1; shift
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
	meson compile -C "$dir"
}

# One step of the test job: its name, then meson test's arguments; prints
# how long it took, so that a slow step shows in CI's log.
step() { # NAME MESON-TEST-ARGS...
	local name=$1 t0=$SECONDS; shift
	echo "== $name"
	meson test --print-errorlogs --timeout-multiplier 2 "$@"
	echo "== $name: $((SECONDS - t0)) s"
}

# The CI-sized job (./setup.sh test): 35 minutes at most on a quiet 2-core
# machine.  Tests run two at a time but for those meson.build marks
# is_parallel : false (they change the kernel's FUSE settings or /etc/fstab,
# or time what they check), which run alone, first (tests/meson.build: the
# order of a step).
#  1. Release on libfuse 3.18.3, FUSE over io_uring, every suite but unit:
#     the unit tests run once, in step 3, under the sanitizers (about 2 min
#     of CI saved; nothing in them is FUSE or transport specific).
#  2. The crash, power-loss and concurrent random-operation tests again over
#     /dev/fuse on libfuse 3.18.3, with smaller loops.
#  3. ASan+UBSan (-O2 -g) on the system's libfuse 3.14 over /dev/fuse: suite
#     'sanitize', the tests most likely to find a memory bug: the unit tests,
#     the fsck fuzz cases (other seeds than release's), the random-operation
#     model, the crash and power-loss loops, a grow offline and one in the
#     daemon (RAID5 x 3 + 1 each) and the fsck corpus cases whose paths no fuzz case
#     takes.  This run also proves that framefs builds and
#     works on libfuse 3.14.
# ./setup.sh test --full runs the long job instead (run_tests_full).
run_tests_ci() {
	local t0=$SECONDS
	FFS_FUZZ_CASES=60 IT_CRASH_ITERS=8 IT_POWERLOSS_ITERS=8 IT_XATTR_CRASH_ITERS=5 \
		IT_REPAIR_SWEEP=5x3,6x4 IT_FULL_OVERWRITES=800 \
		step "release, FUSE over io_uring" -C build --num-processes 2 --no-suite unit
	IT_TRANSPORT=dev IT_CRASH_ITERS=3 IT_POWERLOSS_ITERS=3 IT_RANDOM_OPS=1000 \
		step "release, /dev/fuse" -C build --num-processes 2 \
		crash-kill9 crash-powerloss random-ops-concurrent
	FFS_FUZZ_SEED=201 FFS_FUZZ_CASES=40 IT_CRASH_ITERS=5 IT_POWERLOSS_ITERS=4 \
		IT_RANDOM_OPS=2000 IT_GROW_CASES=5x3+1 \
		step "ASan+UBSan, /dev/fuse" -C build-asan --num-processes 2 --timeout-multiplier 4 \
		--suite sanitize
	echo "== test job: $((SECONDS - t0)) s"
}

# The long job (./setup.sh test --full): the scripts' own loop sizes in
# release (25 kill -9 and 12 power-cut iterations, 200 fuzz cases, the
# repair sweep on every array width), and every suite under ASan+UBSan but
# sharing, vm, frametest and the fsck corpus (which the fuzz cases stand in
# for), with their loops shrunk to fit the sanitizers' speed.  Well over an
# hour on 2 cores.
run_tests_full() {
	local t0=$SECONDS
	IT_REPAIR_SWEEP=full step "release, FUSE over io_uring" -C build --num-processes 2
	IT_TRANSPORT=dev IT_CRASH_ITERS=6 IT_POWERLOSS_ITERS=6 IT_RANDOM_OPS=2000 \
		step "release, /dev/fuse" -C build --num-processes 2 \
		crash-kill9 crash-powerloss random-ops-concurrent
	FFS_FUZZ_SEED=201 FFS_FUZZ_CASES=100 IT_CRASH_ITERS=10 IT_POWERLOSS_ITERS=8 \
		ADMIN_STREAM_LOOPS=2 IT_MATRIX_POOLS=min IT_SMALL_N=20000 IT_BIGDIR_N=50000 IT_REPAIR_SWEEP=5x3,6x4 \
		step "ASan+UBSan, /dev/fuse" -C build-asan --num-processes 2 --timeout-multiplier 4 \
		--no-suite sharing --no-suite vm --no-suite fsck --no-suite frametest
	step "ASan+UBSan, the fsck corpus cases no fuzz case reaches" \
		-C build-asan --num-processes 2 --timeout-multiplier 4 \
		fsck-patch-pending fsck-patch-pending-preen fsck-patch-root fsck-patch-stripe-lost
	echo "== test job (full): $((SECONDS - t0)) s"
}

# The Debian package (debian/), from this tree and the libfuse fetch_fuse
# put in subprojects/fuse3 (debian/rules refuses another version), into
# build-deb/: the .deb, its -dbgsym .deb, the .buildinfo and .changes that
# dpkg-buildpackage writes beside the tree, and its log.
build_package() {
	local v a
	v=$(dpkg-parsechangelog -S Version)
	a=$(dpkg --print-architecture)
	mkdir -p build-deb
	if ! dpkg-buildpackage -us -uc -b >build-deb/build.log 2>&1; then
		tail -n 40 build-deb/build.log >&2
		echo "package: dpkg-buildpackage failed (build-deb/build.log)" >&2
		return 1
	fi
	mv "../framefs_${v}_$a.deb" "../framefs-dbgsym_${v}_$a.deb" "../framefs_${v}_$a.buildinfo" \
		"../framefs_${v}_$a.changes" build-deb/
	echo "package: build-deb/framefs_${v}_$a.deb"
}

# CI's package step: build it, then tests/package/deb.sh (lintian, install,
# man, systemd-analyze verify, the demo on the installed programs, an
# install over a mounted volume, remove, purge).  Run after the tests, alone:
# the build takes both cores, and some tests time what they check.
package_test() {
	local t0=$SECONDS
	echo "== package"
	build_package
	echo "== package: built in $((SECONDS - t0)) s"
	tests/package/deb.sh build-deb/framefs_"$(dpkg-parsechangelog -S Version)"_"$(dpkg --print-architecture)".deb \
		build/mkfs/fsck/fsck.framefs
	echo "== package: $((SECONDS - t0)) s"
}

case "${1:-}" in
demo)
	install_deps
	fetch_fuse
	build build --buildtype=release
	meson install -C build --quiet --skip-subprojects # libfuse is linked in, not installed
	ldconfig
	kernel_fuse
	exec examples/demo.sh
	;;
test)
	case "${2:-}" in
	"") full=false ;;
	--full) full=true ;;
	*) echo "usage: $0 test [--full]" >&2; exit 2 ;;
	esac
	install_deps
	fetch_fuse
	build build --buildtype=release -Dwerror=true
	kernel_fuse # 4 MiB requests in the release run; fuse-transport tries the other settings
	build build-asan --buildtype=debugoptimized -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dfuse_subproject=disabled
	# under the sanitizers a leak, an error or undefined behaviour fails the test
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
	# python3 resolved once for the tests' many starts of it (every .py test,
	# and shell tests that parse status): a version manager's shim first in
	# PATH (pyenv's) took 0.5 s a start, the interpreter it runs 0.1 s
	py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || py=
	[ -z "$py" ] || PATH=${py%/*}:$PATH
	if $full; then run_tests_full; else run_tests_ci; fi
	package_test
	;;
package)
	install_deps
	fetch_fuse
	build_package
	;;
*)
	echo "usage: $0 demo|test [--full]|package" >&2
	exit 2
	;;
esac
