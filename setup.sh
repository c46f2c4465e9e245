#!/bin/bash
# framefs set-up on a fresh Debian 12 machine, as root.
#   ./setup.sh demo   install what is missing, build, install on PATH, run the demo
#   ./setup.sh test   install what is missing, build (release and ASan+UBSan), run every test
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

PKGS="gcc meson ninja-build pkg-config libfuse3-dev fuse3 liburing-dev libisal-dev libnvme-dev libjson-c-dev
      check fio btrfs-progs e2fsprogs util-linux kmod python3 gdb python3-prometheus-client
      samba samba-vfs-modules smbclient samba-testsuite nfs-ganesha nfs-ganesha-vfs libnfs-utils libnfs-dev"

install_deps() {
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
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

case "${1:-}" in
demo)
	install_deps
	build build --buildtype=release
	meson install -C build --quiet
	ldconfig
	exec examples/demo.sh
	;;
test)
	install_deps
	build build --buildtype=release -Dwerror=true
	meson test -C build --print-errorlogs --num-processes 1 --timeout-multiplier 2
	# The same suite under AddressSanitizer and UndefinedBehaviorSanitizer,
	# optimised (-O2 -g: a quarter faster than -O0 here, with the same
	# reports).  The fuzz cases take the next 100 seeds, so the two runs
	# together try 300 kinds of damage.  The sharing suite runs in the
	# release build only: it drives the same FUSE operations through
	# servers, and the whole job must stay under 30 minutes.
	build build-asan --buildtype=debugoptimized -Dwerror=true -Db_sanitize=address,undefined \
		-Db_lundef=false
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	FFS_FUZZ_SEED=201 FFS_FUZZ_CASES=100 \
		meson test -C build-asan --print-errorlogs --num-processes 1 --timeout-multiplier 4 \
		--no-suite sharing
	;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
