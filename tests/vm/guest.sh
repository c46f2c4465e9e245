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

# ---- mkfs deallocates the data area ----------------------------------------------
# The host filled the backing files of nvm0..2 ($D0 $D1 $D2) with 0xff and
# gave qemu discard=unmap: the nvme model's deallocate punches holes in them.
# allocated: ALLOC gets the host's figures (bytes each backing file has
# allocated), asked on the console and answered on its input.
allocated() {
	echo "VM-ASK: allocated nvm0 nvm1 nvm2"
	_ans=
	# shellcheck disable=SC3045 # busybox's read has -t
	read -r -t 30 _ans || die "no answer from the host 30 s after asking for the allocation"
	case $_ans in
	"VM-ANS: allocated "*) ALLOC=${_ans#VM-ANS: allocated } ;;
	*) die "the host answered '$_ans' to the allocation" ;;
	esac
}
# what the kernel made of the namespace's identify data (its write
# granularities NOWS/NPWG/NAWUPF, which a chunk size could follow; nothing
# here depends on them): printed for the record
for d in $D0 $D3; do
	_q=/sys/block/${d#/dev/}/queue _l=
	for _a in minimum_io_size optimal_io_size physical_block_size discard_granularity \
		discard_max_bytes write_zeroes_max_bytes atomic_write_unit_max_bytes; do
		_l="$_l $_a $(cat "$_q/$_a" 2>/dev/null || echo -)"
	done
	say "$d:$_l"
done
full=$((MEMBER_MIB * 1024 * 1024))
allocated
before=$ALLOC
say "allocated before mkfs (bytes, nvm0 nvm1 nvm2): $before"
for a in $before; do
	[ "$a" = "$full" ] || die "a backing file is not full before mkfs: $before (want $full each)"
done
mkfs.framefs -f -K -l 5 "$D0" "$D1" "$D2" >/tmp/mkfs.out 2>&1 ||
	{ cat /tmp/mkfs.out; die "mkfs.framefs -K failed"; }
grep -qx "data area not deallocated (-K)" /tmp/mkfs.out || { cat /tmp/mkfs.out; die "mkfs -K does not say it left the data area"; }
allocated
after=$ALLOC
say "allocated after mkfs -K: $after"
[ "$after" = "$before" ] || die "mkfs -K changed the allocation: $before -> $after"

# ---- RAID5 on three 512-byte namespaces ------------------------------------------
say "RAID5 on $D0 $D1 $D2"
mkfs.framefs -f -l 5 -L vm-raid5 "$D0" "$D1" "$D2" >/tmp/mkfs.out 2>&1 ||
	{ cat /tmp/mkfs.out; die "mkfs.framefs -l 5 failed"; }
cat /tmp/mkfs.out
check_identity /tmp/mkfs.out "$D0" "$D1" "$D2"
allocated
after=$ALLOC
say "allocated after mkfs: $after"
stripes=$(sed -n 's/^  usable size .* (\([0-9]*\) stripes).*/\1/p' /tmp/mkfs.out)
area=$((stripes * 512 * 1024)) # the default chunk
# shellcheck disable=SC2086 # a list of words
set -- $after
for d in $D0 $D1 $D2; do
	line=$(grep "^$d: " /tmp/mkfs.out) || die "mkfs printed no deallocate line for $d"
	said=$(echo "$line" | sed -n 's/.*: deallocated .*, the data area (\([0-9]*\) bytes)$/\1/p')
	[ "$said" = "$area" ] || die "$d: '$line' (the data area is $area bytes)"
	drop=$((full - $1))
	say "$d: backing file $full -> $1 bytes allocated (dropped $drop, data area $area)"
	# qemu punches whole host pages: every one of the data area's, none outside it
	[ "$drop" -ge $((area - 1048576)) ] || die "$d: the allocation dropped only $drop bytes (data area $area)"
	[ "$drop" -le "$area" ] || die "$d: the allocation dropped $drop bytes, more than the data area ($area)"
	shift
done
say "mkfs deallocated the data area on each drive; -K left it"
# shellcheck disable=SC2086 # a list of words
set -- $SERIALS
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

# ---- surprise removal: a controller taken away mid-stream, a new one added -------
# Injected (through qemu's monitor, by the host on our ask): device_del of
# the controller of $D1 (serial $2) while a paced stream writes; then
# device_add of a new controller with serial $SPARE_SERIAL.  The removal is
# the one qemu's i440fx machine offers: an ACPI eject, so the kernel's nvme
# driver runs its remove path (namespace deleted, its disk gone from sysfs,
# I/O on the open descriptor failing) as it does when a drive is pulled.
LIVE_FRAMES=64        # 1000 KiB frames, one 1 MiB stripe each: 8 s at 8 fps
DETECT_MS=5000        # the array's presence check runs every second (raid/raid.h)
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }
frames_in() { _c=$(find "$1" -type f | wc -l); [ "$_c" -ge "$2" ]; }
disk_gone() { [ ! -e "/sys/block/${1#/dev/}" ]; }
stream_running() { kill -0 "$LIVE_PID" 2>/dev/null; }
json_flat() { framefs-admin --json status "$MNT" 2>/dev/null | tr -d '\n' | tr -s ' '; }
# role_state ROLE STATE PATH: status --json has ROLE in STATE at PATH.
role_state() { json_flat | grep -q "\"role\": *$1, *\"state\": *\"$2\", *\"path\": *\"$3\""; }
vol_state() { json_flat | grep -q "\"chunk_bytes\": *[0-9]*, *\"state\": *\"$1\""; }

mount_vol "$D0,$D1,$D2,$D3"
mkdir "$MNT/live"
framefs-frametest -w 1000 -n "$LIVE_FRAMES" -f 8 -q "$LIVE_FRAMES" -u 0 "$MNT/live" >/tmp/live.out 2>&1 &
LIVE_PID=$!
poll 60 frames_in "$MNT/live" 8 || die "the stream wrote no 8 frames within 60 s"
gone_serial=$2
say "removing the controller of $D1 (S/N $gone_serial) mid-stream"
t_ask=$(now_ms)
echo "VM-ASK: device_del ctl1"
poll 30 disk_gone "$D1" || die "$D1 still there 30 s after asking for its controller's removal"
t_gone=$(now_ms)
say "$D1 left sysfs $((t_gone - t_ask)) ms after the ask"
poll 10 role_state 1 failed "$D1" || { framefs-admin status "$MNT"; die "role 1 ($D1) not failed 10 s after its disk went"; }
lat=$(($(now_ms) - t_gone))
stream_running || die "the stream ended before role 1 was failed: nothing was written degraded"
say "role 1 failed ${lat} ms after its disk left sysfs, while the stream ran"
[ "$lat" -le "$DETECT_MS" ] || die "role 1 failed only after ${lat} ms (bound ${DETECT_MS} ms)"
wait "$LIVE_PID" || { cat /tmp/live.out; die "the stream failed with a member removed"; }
tail -1 /tmp/live.out
grep -q "dropped 0" /tmp/live.out || die "the stream dropped frames"
framefs-admin status "$MNT" >/tmp/status.out 2>&1
cat /tmp/status.out
grep -Eq "^ *1 +failed .* $D1 +NVMe $MODEL S/N $gone_serial FW " /tmp/status.out ||
	die "status does not name the failed role 1 by its serial $gone_serial"
json_flat | grep -q "\"role\": *1, *\"state\": *\"failed\", *\"path\": *\"$D1\", *\"size_bytes\": *[0-9]*, *\"kind\": *\"block\", *\"nvme\": *{ *\"model\": *\"$MODEL\", *\"serial\": *\"$gone_serial\"" ||
	die "status --json does not name the failed role 1 by its serial $gone_serial"
# A pulled drive's writes fail with ENOSPC (the kernel set the deleted
# disk's capacity to 0): the reason must say it was removed, not full.
reason=$(json_flat | sed -n 's/.*"role": *1, *"state": *"failed",[^}]*}, *"member_events": *[a-z0-9]*, *"reason": *"\([^"]*\)".*/\1/p')
say "role 1 reason: $reason"
case $reason in
"vanished: the device was removed"*) ;;
*) die "role 1's reason does not say its device was removed: '$reason'" ;;
esac
grep -q "^ *vanished: the device was removed" /tmp/status.out || die "status text lacks the removal"
vol_state degraded || die "the volume is not degraded"
framefs-frametest -r -n "$LIVE_FRAMES" -u 0 "$MNT/live" >/tmp/ft.out 2>&1 || { cat /tmp/ft.out; die "degraded read of the live stream"; }
tail -1 /tmp/ft.out
framefs-frametest -r -n "$FRAMES" -u 0 "$MNT/raid6" >/tmp/ft.out 2>&1 || { cat /tmp/ft.out; die "degraded read of raid6"; }
tail -1 /tmp/ft.out

say "adding a new controller (S/N $SPARE_SERIAL)"
echo "VM-ASK: device_add spare"
new_present() { dev_of "$SPARE_SERIAL" >/dev/null; }
poll 30 new_present || die "no namespace with serial $SPARE_SERIAL 30 s after asking for it"
DN=$(dev_of "$SPARE_SERIAL")
say "$DN: serial '$SPARE_SERIAL', $(lbs_of "$DN")-byte blocks"
framefs-admin add "$MNT" "$DN" || die "framefs-admin add $MNT $DN failed"
poll 300 vol_state clean || { framefs-admin status "$MNT"; die "not clean 300 s after the add"; }
framefs-admin status "$MNT" >/tmp/status.out 2>&1
cat /tmp/status.out
SERIALS="$SERIALS $SPARE_SERIAL"
check_status /tmp/status.out "$D0" "$DN" "$D2" "$D3"
for s in live raid6; do
	n=$FRAMES
	[ $s = live ] && n=$LIVE_FRAMES
	framefs-frametest -r -n "$n" -u 0 "$MNT/$s" >/tmp/ft.out 2>&1 || { cat /tmp/ft.out; die "read of $s after the rebuild"; }
	tail -1 /tmp/ft.out
done
say "surprise removal: failed in ${lat} ms, stream verified degraded, rebuilt onto $SPARE_SERIAL"

# ---- a controller that stops answering -------------------------------------------
# Injected (QMP block_set_io_throttle to 1 byte/s, by the host on our
# ask): the drive of $D2's controller stops answering while the controller
# stays (qemu has no way to make an nvme controller hang).  framefs must
# fail the role at its member timeout (5 s: raid/raid.h).  The writes it
# had in flight to that drive cannot be cancelled once the kernel has them,
# so the stream waits for them: once the role is failed the throttle is
# lifted (before the kernel's own nvme timeout, 30 s, would reset the
# controller), the stream goes on degraded with none of its queued frames
# dropped, and framefs-admin re-add takes $D2 back: only what was written
# without it is rebuilt.
stalled_serial=$(serial_of "$D2")
mkdir "$MNT/stall"
framefs-frametest -w 1000 -n "$LIVE_FRAMES" -f 8 -q "$LIVE_FRAMES" -u 0 "$MNT/stall" >/tmp/live.out 2>&1 &
LIVE_PID=$!
poll 60 frames_in "$MNT/stall" 8 || die "the stall stream wrote no 8 frames within 60 s"
say "stalling the drive of $D2 (S/N $stalled_serial) mid-stream"
t_ask=$(now_ms)
echo "VM-ASK: stall nvm2"
poll 30 role_state 2 failed "$D2" || { framefs-admin status "$MNT"; die "role 2 ($D2) not failed 30 s after its drive stalled"; }
slat=$(($(now_ms) - t_ask))
stream_running || die "the stream ended before role 2 was failed: nothing was written degraded"
echo "VM-ASK: unstall nvm2"
reason=$(json_flat | sed -n 's/.*"role": *2, *"state": *"failed",[^}]*}, *"member_events": *[a-z0-9]*, *"reason": *"\([^"]*\)".*/\1/p')
say "role 2 failed ${slat} ms after the stall was asked for: $reason"
[ "$reason" = "no answer within the member timeout" ] || die "role 2's reason is not the member timeout"
[ "$slat" -le 15000 ] || die "role 2 failed only after ${slat} ms (member timeout 5000 ms)"
wait "$LIVE_PID" || { cat /tmp/live.out; die "the stream failed with a member stalled"; }
tail -1 /tmp/live.out
grep -q "dropped 0" /tmp/live.out || die "the stall stream dropped frames"
framefs-frametest -r -n "$LIVE_FRAMES" -u 0 "$MNT/stall" >/tmp/ft.out 2>&1 || { cat /tmp/ft.out; die "degraded read of the stall stream"; }
tail -1 /tmp/ft.out
framefs-admin re-add "$MNT" "$D2" >/tmp/readd.out 2>&1 || { cat /tmp/readd.out; die "framefs-admin re-add $MNT $D2 failed"; }
cat /tmp/readd.out
poll 120 vol_state clean || { framefs-admin status "$MNT"; die "not clean 120 s after the re-add"; }
framefs-admin status "$MNT" >/tmp/status.out 2>&1
cat /tmp/status.out
check_status /tmp/status.out "$D0" "$DN" "$D2" "$D3"
for s in live stall raid6; do
	n=$LIVE_FRAMES
	[ $s = raid6 ] && n=$FRAMES
	framefs-frametest -r -n "$n" -u 0 "$MNT/$s" >/tmp/ft.out 2>&1 || { cat /tmp/ft.out; die "read of $s after the re-add"; }
	tail -1 /tmp/ft.out
done
umount_vol
fsck.framefs -n -c "$D0" "$DN" "$D2" "$D3" >/tmp/fsck.out 2>&1 || { cat /tmp/fsck.out; die "fsck.framefs -n -c at the end: not clean"; }
say "stalled drive: failed in ${slat} ms at the member timeout, re-added, every stream verifies, fsck clean"
