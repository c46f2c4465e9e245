#!/bin/bash
# framefs on real NVMe driver code: boots Debian's kernel under qemu (TCG,
# no KVM needed) with emulated NVMe controllers, each with its own serial,
# one formatted with 4096-byte blocks, and runs tests/vm/guest.sh inside.
# The image is made from Debian packages only: the distribution kernel
# (fetched with apt-get download into VM_CACHE, unpacked into a scratch
# folder, never installed), busybox-static as the whole userland, and this
# build's binaries with the shared libraries they link.  The guest's verdict
# comes back on the serial console as one VM-RESULT line; this script exits
# 0 only on "VM-RESULT: PASS".  Anything missing is a failure, never a skip.
# What the guest proves, in order (guest.sh): identity from libnvme in mkfs,
# status and --json on RAID5; RAID6 with a 4096-byte namespace beside
# 512-byte ones; a controller removed mid-stream (device_del) and a new one
# added and rebuilt onto; a drive that stops answering mid-stream, failed
# at the member timeout and re-added; before all that, mkfs's deallocate of
# the data area, seen here as the backing files' allocation dropping.  The
# faults are injected from here, through qemu's monitor (QMP), when the
# guest asks on the console; what the guest asks to know (the allocation)
# is answered on the console's input.
#
# Environment (set by meson): FRAMEFS MKFS FSCK ADMIN FRAMETEST (the built
# binaries), VM_CACHE (where the kernel package is kept between runs).
#   VM_TIMEOUT_S   bound on the qemu run (default 600)
#   VM_KEEP        1: keep the scratch folder and the console log
set -euo pipefail
: "${FRAMEFS:?}" "${MKFS:?}" "${FSCK:?}" "${ADMIN:?}" "${FRAMETEST:?}" "${VM_CACHE:?}"
HERE=$(dirname "$(readlink -f "$0")")
VM_TIMEOUT_S=${VM_TIMEOUT_S:-600}
MEMBER_MIB=192 # RAID6 x 4: 316 MiB usable, room for every stream the guest writes

# The controllers: serial, logical block size.  The guest finds each drive
# by its serial (sysfs), not by its enumeration order.  The spare is only
# a drive at boot: the guest asks for a controller on it (device_add).
SERIALS=(FFVM0001 FFVM0002 FFVM0003 FFVM4K04 FFVM0005)
LBS=(512 512 512 4096 512)
SPARE_SERIAL=FFVM0006

fail() { echo "FAIL: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || fail "$1 not found ($2): ./setup.sh installs it"; }

need qemu-system-x86_64 "package qemu-system-x86"
need apt-get "apt"
need dpkg-deb "dpkg"
# grep without -q reads the whole list: with pipefail, -q exiting first would SIGPIPE busybox
if ! [ -x /bin/busybox ] || ! /bin/busybox --list | grep -x cpio >/dev/null; then
	fail "/bin/busybox (package busybox-static) with its cpio applet is needed"
fi
file_static() { ! ldd "$1" >/dev/null 2>&1; }
file_static /bin/busybox || fail "/bin/busybox is not static: install busybox-static"
for b in "$FRAMEFS" "$MKFS" "$FSCK" "$ADMIN" "$FRAMETEST"; do
	[ -x "$b" ] || fail "$b: not built"
done

T0=$(date +%s)
WORK=$(mktemp -d /tmp/ffvm.XXXXXX)
SHM=/dev/shm/$(basename "$WORK")
QEMU_PID=
cleanup() {
	local rc=$?
	# QEMU_PID is timeout(1)'s: it passes TERM on to qemu, and KILLs it
	# 10 s later if need be (--kill-after); a KILL here would orphan qemu
	if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
		kill -TERM "$QEMU_PID" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	rm -f "$SHM".*
	if [ "${VM_KEEP:-0}" = 1 ]; then
		echo "kept: $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the kernel: Debian's, as linux-image-amd64 names it today ------------------
kernel_pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ && !n++ { print $2 }')
[ -n "$kernel_pkg" ] || fail "apt-cache knows no linux-image-amd64 (run apt-get update)"
mkdir -p "$VM_CACHE"
deb=$(find "$VM_CACHE" -maxdepth 1 -name "${kernel_pkg}_*.deb" | sort -V | tail -1)
if [ -z "$deb" ]; then
	find "$VM_CACHE" -maxdepth 1 -name 'linux-image-*.deb' -delete # an older kernel's
	# as root, apt's sandbox user could not write here: download as root
	(cd "$VM_CACHE" && apt-get download -q -o APT::Sandbox::User=root "$kernel_pkg" >/dev/null) ||
		fail "apt-get download $kernel_pkg failed"
	deb=$(find "$VM_CACHE" -maxdepth 1 -name "${kernel_pkg}_*.deb" | sort -V | tail -1)
fi
dpkg-deb -x "$deb" "$WORK/kernel"
kver=${kernel_pkg#linux-image-}
kmod=$WORK/kernel/lib/modules/$kver
vmlinuz=$WORK/kernel/boot/vmlinuz-$kver
if ! [ -f "$vmlinuz" ] || ! [ -d "$kmod" ]; then
	fail "$deb holds no vmlinuz-$kver and modules"
fi
echo "kernel: $(basename "$deb")"

# ---- the root: busybox, the modules, framefs and its libraries ------------------
R=$WORK/root
mkdir -p "$R"/{bin,etc,lib/modules,lib64,proc,sys,dev,run,tmp,mnt}
cp /bin/busybox "$R/bin/busybox"
ln -s busybox "$R/bin/sh" # /init's interpreter, before it installs the other applets
cp "$HERE/init.sh" "$R/init" && chmod 755 "$R/init"
cp "$HERE/guest.sh" "$R/guest.sh"

# The modules in load order: each one's dependencies (modinfo) first.  No
# modules.dep in the package (depmod runs at install), so resolve here.
declare -A loaded=()
ko_path() { find "$kmod" \( -name "$1.ko" -o -name "$1.ko.xz" \) -print -quit; }
ko_add() {
	local name=$1 ko dep
	[ -n "${loaded[$name]:-}" ] && return 0
	ko=$(ko_path "$name")
	[ -n "$ko" ] || fail "module $name not in $kernel_pkg"
	for dep in $(modinfo -F depends "$ko" | tr ',' ' '); do
		ko_add "$dep"
	done
	loaded[$name]=1
	case $ko in
	*.xz) xz -dc "$ko" >"$R/lib/modules/$name.ko" ;;
	*) cp "$ko" "$R/lib/modules/$name.ko" ;;
	esac
	echo "/lib/modules/$name.ko" >>"$R/modules.order"
}
: >"$R/modules.order"
for m in nvme fuse; do
	ko_add "$m"
done

# framefs's binaries, the libraries ldd finds for them, the loader at the
# path the binaries name (PT_INTERP), and libgcc_s, which glibc loads with
# dlopen when a thread is cancelled (the daemon's exit: ldd cannot see it).
# awk reads to the end: exiting at the match let ldconfig die of SIGPIPE
# (about 1 run in 300: its 58 KB did not always fit the pipe), which
# pipefail made this test's exit status.
libgcc=$(ldconfig -p | awk '$1 == "libgcc_s.so.1" && /x86-64/ && !n++ { print $NF }')
[ -n "$libgcc" ] || fail "no libgcc_s.so.1 (package libgcc-s1) in ldconfig's cache"
for b in "$FRAMEFS" "$MKFS" "$FSCK" "$ADMIN" "$FRAMETEST"; do
	cp "$b" "$R/bin/"
	ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | { cat; echo "$libgcc"; } | sort -u | while read -r lib; do
	mkdir -p "$R$(dirname "$lib")"
	cp -L "$lib" "$R$lib"
done
[ -e "$R/lib64/ld-linux-x86-64.so.2" ] || fail "the dynamic loader was not copied"

{
	echo "SERIALS='${SERIALS[*]}'"
	echo "LBS='${LBS[*]}'"
	echo "SPARE_SERIAL='$SPARE_SERIAL'"
	echo "MEMBER_MIB='$MEMBER_MIB'"
	echo "QEMU_VERSION='$(qemu-system-x86_64 --version | sed -n '1s/.*version \([0-9.]*\).*/\1/p')'"
} >"$R/vm.conf"
(cd "$R" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1 >"$WORK/initrd.gz")
echo "initramfs: $(du -k "$WORK/initrd.gz" | cut -f1) KiB, built in $(($(date +%s) - T0)) s"

# ---- the controllers and the run ------------------------------------------------
# The drives of the first array (nvm0..2) start full of 0xff, every block
# allocated, as a used drive: mkfs's deallocate must show as holes.
# discard=unmap: qemu's block layer ignores a discard by default; with it,
# the nvme model's Dataset Management deallocate punches a hole in the file.
args=()
for i in "${!SERIALS[@]}"; do
	if [ "$i" -lt 3 ]; then
		head -c "${MEMBER_MIB}M" /dev/zero | tr '\0' '\377' >"$SHM.nvm$i"
	else
		truncate -s "${MEMBER_MIB}M" "$SHM.nvm$i"
	fi
	args+=(-drive "file=$SHM.nvm$i,if=none,id=nvm$i,format=raw,cache=unsafe,discard=unmap")
	dev="nvme,id=ctl$i,serial=${SERIALS[i]},drive=nvm$i"
	[ "${LBS[i]}" = 512 ] || dev+=",logical_block_size=${LBS[i]},physical_block_size=${LBS[i]}"
	args+=(-device "$dev")
done
spare=${#SERIALS[@]}
truncate -s "${MEMBER_MIB}M" "$SHM.nvm$spare"
args+=(-drive "file=$SHM.nvm$spare,if=none,id=nvm$spare,format=raw,cache=unsafe,discard=unmap")

# The guest asks for what only the host can do, on the console:
#   VM-ASK: device_del ctlN   remove controller N (a drive pulled)
#   VM-ASK: device_add spare  a new controller, serial SPARE_SERIAL, on the spare drive
#   VM-ASK: stall nvmN        drive N stops answering (QMP throttle to 1 byte/s)
#   VM-ASK: unstall nvmN      ... and answers again (the throttle lifted)
#   VM-ASK: allocated nvmN..  the bytes each backing file has allocated, answered
#                             "VM-ANS: allocated N.." on the console's input
# Each other is one QMP command; the guest polls for the effect itself.
QMP=$WORK/qmp.sock
CONSOLE_IN=$WORK/console.in
mkfifo "$CONSOLE_IN"
# held open read-write here: qemu's read end never sees EOF, and a write
# from serve_asks never waits for a reader
exec 7<>"$CONSOLE_IN"
serve_asks() {
	local line id
	while IFS= read -r line; do
		line=${line%$'\r'}
		case $line in
		"VM-ASK: device_del ctl"[0-9])
			id=${line#VM-ASK: device_del }
			echo "host: device_del $id (injected: controller removed)"
			python3 "$HERE/qmp.py" "$QMP" device_del "{\"id\": \"$id\"}" || true
			;;
		"VM-ASK: device_add spare")
			echo "host: device_add nvme serial $SPARE_SERIAL on drive nvm$spare"
			python3 "$HERE/qmp.py" "$QMP" device_add "{\"driver\": \"nvme\", \"id\": \"ctl$spare\", \"drive\": \"nvm$spare\", \"serial\": \"$SPARE_SERIAL\"}" || true
			;;
		"VM-ASK: stall nvm"[0-9] | "VM-ASK: unstall nvm"[0-9])
			# 1 byte/s: qemu lets the request at hand through, and holds each one
			# after it for its size in seconds (days); 0 lifts the limit
			id=${line##* }
			bps=1
			[ "${line#VM-ASK: unstall}" = "$line" ] || bps=0
			echo "host: $id throttled to $bps bytes/s (0: no limit) (injected: a drive that stops answering)"
			python3 "$HERE/qmp.py" "$QMP" block_set_io_throttle "{\"device\": \"$id\", \"bps\": $bps, \"bps_rd\": 0, \"bps_wr\": 0, \"iops\": 0, \"iops_rd\": 0, \"iops_wr\": 0}" || true
			;;
		"VM-ASK: allocated"*)
			ans=
			for id in ${line#VM-ASK: allocated}; do
				case $id in
				nvm[0-9]) ans+=" $(($(stat -c '%b * %B' "$SHM.$id")))" ;;
				*) ans+=" ?" ;;
				esac
			done
			echo "host: allocated ${line#VM-ASK: allocated }:$ans"
			echo "VM-ANS: allocated$ans" >"$CONSOLE_IN"
			;;
		"VM-ASK: "*)
			echo "host: unknown ask: $line"
			;;
		esac
	done
}

LOG=$WORK/console.log
T1=$(date +%s)
# cache=unsafe: the backing files are in RAM and die with the run; what a
# flush must reach is the guest's view, which qemu's nvme model gives
# whatever the host cache mode.
timeout --kill-after=10 "$VM_TIMEOUT_S" qemu-system-x86_64 -accel tcg -m 1G -smp 2 \
	-nographic -no-reboot -nodefaults -serial stdio \
	-kernel "$vmlinuz" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 panic=-1 loglevel=4" \
	-qmp "unix:$QMP,server=on,wait=off" \
	"${args[@]}" <&7 >"$LOG" 2>&1 &
QEMU_PID=$!
# tail ends with qemu (--pid): the asks are answered as they come, no polling
tail -n +1 -F --pid="$QEMU_PID" "$LOG" 2>/dev/null | serve_asks >"$WORK/host.log" 2>&1 &
ASKS_PID=$!
st=0
wait "$QEMU_PID" || st=$?
QEMU_PID=
wait "$ASKS_PID" || true
tr -d '\r' <"$LOG" >"$LOG.txt"
cat "$LOG.txt"
echo "--- host side"
cat "$WORK/host.log"
echo "vm: qemu ran $(($(date +%s) - T1)) s (exit $st), $(($(date +%s) - T0)) s in all"
if [ "$st" = 124 ] || [ "$st" = 137 ]; then
	fail "the VM did not finish within ${VM_TIMEOUT_S}s"
fi
grep -q '^VM-RESULT: PASS$' "$LOG.txt" || fail "the guest did not report PASS"
echo "PASS: framefs on emulated NVMe"
