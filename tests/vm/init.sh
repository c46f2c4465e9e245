#!/bin/sh
# /init of the test VM (busybox sh, PID 1): the kernel, busybox, framefs's
# binaries and their libraries are all there is.  It loads the modules the
# host listed (in dependency order), runs /guest.sh and reports on the
# serial console, then powers off: qemu exits with the VM (-no-reboot).
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /run /tmp /mnt
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
ln -sf /proc/self/mounts /etc/mtab
while read -r ko; do
	insmod "$ko" || echo "VM-NOTE: insmod $ko failed"
done </modules.order
if sh /guest.sh; then
	echo "VM-RESULT: PASS"
else
	echo "VM-RESULT: FAIL (guest.sh exited $?)"
fi
# no sync: the drives die with the VM, and a volume left mounted on a
# drive that stopped answering would hold it up
poweroff -f
