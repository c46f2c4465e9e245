# The test inside the VM (busybox sh, run by /init): framefs on the NVMe
# namespaces qemu emulates, through the kernel's nvme driver and libnvme.
# /vm.conf (written by nvme_vm.sh) gives the serials qemu was told, the
# logical block size of each, and qemu's version (the firmware revision its
# controllers report).  Every check that fails prints "VM-FAIL: why" and
# exits non-zero; /init turns that into the VM-RESULT line.
# shellcheck disable=SC1091
. /vm.conf
set -u
MODEL="QEMU NVMe Ctrl" # qemu 7.2's nvme device has no property for the model
FRAMES=8
MNT=/mnt
DAEMON_PID=

say() { echo "vm: $*"; }
die() {
	echo "VM-FAIL: $*"
	[ -n "$DAEMON_PID" ] && [ -s /tmp/daemon.log ] && tail -20 /tmp/daemon.log
	exit 1
}

# poll DEADLINE_S CMD...: CMD until it succeeds, for at most DEADLINE_S.
poll() {
	_n=$(($1 * 20))
	shift
	while ! "$@"; do
		_n=$((_n - 1))
		[ "$_n" -gt 0 ] || return 1
		sleep 0.05
	done
}

# The namespace of the controller with serial $1 (sysfs pads it with spaces).
dev_of() {
	for _b in /sys/block/nvme*n1; do
		[ -e "$_b/device/serial" ] || continue
		if [ "$(sed 's/ *$//' "$_b/device/serial")" = "$1" ] && [ -b "/dev/${_b##*/}" ]; then
			echo "/dev/${_b##*/}"
			return 0
		fi
	done
	return 1
}
all_present() {
	for _s in $SERIALS; do dev_of "$_s" >/dev/null || return 1; done
}

is_mounted() { grep -qs " $MNT fuse.framefs " /proc/mounts; }
ctl_up() { [ -S /run/framefs/mnt.sock ]; }
daemon_gone() { ! kill -0 "$DAEMON_PID" 2>/dev/null; }

# mount_vol SPEC: the daemon in the foreground (our child), until its
# control socket answers.
mount_vol() {
	framefs -f "$1" "$MNT" >/tmp/daemon.log 2>&1 &
	DAEMON_PID=$!
	poll 60 is_mounted || die "framefs $1 did not mount within 60 s"
	poll 10 ctl_up || die "no control socket 10 s after the mount"
}

umount_vol() {
	umount "$MNT" || die "cannot unmount $MNT"
	poll 60 daemon_gone || die "framefs still running 60 s after the unmount"
	wait "$DAEMON_PID" || die "framefs exited with status $? after the unmount"
	grep -q "unmounted cleanly" /tmp/daemon.log || die "framefs did not report a clean unmount"
	DAEMON_PID=
}

# stream NAME: FRAMES 2K frames written, then read back, every byte checked.
stream() {
	framefs-frametest -w 2k -n "$FRAMES" -u 0 "$MNT/$1" >/tmp/ft.out 2>&1 ||
		{ cat /tmp/ft.out; die "frametest write of $1 failed"; }
	tail -1 /tmp/ft.out
	framefs-frametest -r -n "$FRAMES" -u 0 "$MNT/$1" >/tmp/ft.out 2>&1 ||
		{ cat /tmp/ft.out; die "frametest verified read of $1 failed"; }
	tail -1 /tmp/ft.out
}

# check_identity FILE DEV...: FILE (mkfs output) names each member with
# the model, serial and firmware its controller reports.
check_identity() {
	_f=$1
	shift
	for _d in "$@"; do
		_want="$_d ($MODEL S/N $(serial_of "$_d") FW $QEMU_VERSION nsid 1 LBA $(lbs_of "$_d"))"
		grep -qF "$_want" "$_f" || die "$_f does not name $_want"
	done
}

# check_status FILE DEV...: the same identity in status's member table,
# each member active with no read, write or checksum error (a request the
# 4096-byte namespace could not take would have failed it).
check_status() {
	_f=$1
	shift
	for _d in "$@"; do
		grep -Eq "^ *[0-9]+ +active +[0-9.]+ [KMGT]iB +0 +0 +0 +0 +$_d +NVMe $MODEL S/N $(serial_of "$_d") FW $QEMU_VERSION\$" "$_f" ||
			die "$_f has no active error-free member $_d: NVMe $MODEL S/N $(serial_of "$_d") FW $QEMU_VERSION"
	done
}
# The serial qemu was given for the controller of namespace $1.
serial_of() {
	for _x in $SERIALS; do
		[ "$(dev_of "$_x")" = "$1" ] && echo "$_x" && return 0
	done
	return 1
}
lbs_of() { cat "/sys/block/${1#/dev/}/queue/logical_block_size"; }

# check_json FILE DEV...: the --json status has the same identity per
# member, the serial being the one qemu was given.
check_json() {
	_f=$1 _j=$(tr -d '\n' <"$1" | tr -s ' ')
	shift
	for _d in "$@"; do
		_s=$(serial_of "$_d")
		echo "$_j" | grep -q "\"path\": *\"$_d\", *\"size_bytes\": *[0-9]*, *\"kind\": *\"block\", *\"nvme\": *{ *\"model\": *\"$MODEL\", *\"serial\": *\"$_s\", *\"firmware\": *\"$QEMU_VERSION\", *\"nsid\": *1, *\"lba_bytes\": *$(lbs_of "$_d") *}" ||
			{ cat "$_f"; die "status --json: no member $_d with serial $_s, firmware $QEMU_VERSION"; }
	done
}

# ---- the drives ------------------------------------------------------------------
poll 30 all_present || { ls -l /dev/nvme* /sys/block; die "not every controller's namespace appeared within 30 s"; }
# shellcheck disable=SC2086 # a list of words
set -- $SERIALS
D0=$(dev_of "$1") D1=$(dev_of "$2") D2=$(dev_of "$3") D3=$(dev_of "$4") D4=$(dev_of "$5")
for d in $D0 $D1 $D2 $D3 $D4; do
	say "$d: serial '$(sed 's/ *$//' "/sys/block/${d#/dev/}/device/serial")', $(lbs_of "$d")-byte blocks"
done
[ "$(lbs_of "$D3")" = 4096 ] || die "$D3 ($4) should have 4096-byte blocks"

# ---- RAID5 on three 512-byte namespaces ------------------------------------------
say "RAID5 on $D0 $D1 $D2"
mkfs.framefs -f -l 5 -L vm-raid5 "$D0" "$D1" "$D2" >/tmp/mkfs.out 2>&1 ||
	{ cat /tmp/mkfs.out; die "mkfs.framefs -l 5 failed"; }
cat /tmp/mkfs.out
check_identity /tmp/mkfs.out "$D0" "$D1" "$D2"
mount_vol "$D0,$D1,$D2"
stream raid5
framefs-admin status "$MNT" >/tmp/status.out 2>&1 || { cat /tmp/status.out; die "status failed"; }
cat /tmp/status.out
check_status /tmp/status.out "$D0" "$D1" "$D2"
framefs-admin --json status "$MNT" >/tmp/status.json 2>&1 || { cat /tmp/status.json; die "status --json failed"; }
check_json /tmp/status.json "$D0" "$D1" "$D2"
umount_vol
fsck.framefs -n -c "$D0" "$D1" "$D2" >/tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; die "fsck.framefs -n -c: not clean"; }
say "RAID5: mkfs, stream, status, --json, fsck clean"

# ---- RAID6 with a 4096-byte namespace beside 512-byte ones -----------------------
say "RAID6 on $D0 $D1 $D2 $D3 ($D3: 4096-byte blocks)"
mkfs.framefs -f -l 6 -L vm-raid6 "$D0" "$D1" "$D2" "$D3" >/tmp/mkfs.out 2>&1 ||
	{ cat /tmp/mkfs.out; die "mkfs.framefs -l 6 with a 4096-byte namespace failed"; }
cat /tmp/mkfs.out
check_identity /tmp/mkfs.out "$D0" "$D1" "$D2" "$D3"
mount_vol "$D0,$D1,$D2,$D3"
stream raid6
framefs-admin status "$MNT" >/tmp/status.out 2>&1 || { cat /tmp/status.out; die "status failed"; }
cat /tmp/status.out
check_status /tmp/status.out "$D0" "$D1" "$D2" "$D3"
framefs-admin --json status "$MNT" >/tmp/status.json 2>&1 || die "status --json failed"
check_json /tmp/status.json "$D0" "$D1" "$D2" "$D3"
umount_vol
fsck.framefs -n -c "$D0" "$D1" "$D2" "$D3" >/tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; die "fsck.framefs -n -c: not clean"; }
say "RAID6 with a 4096-byte member: mkfs, stream, status, fsck clean"
