#!/bin/bash
# The Debian package end to end, on this machine, as root (./setup.sh test
# runs it after ./setup.sh package's build): lintian finds no error (its
# other tags are listed); apt-get installs it; man renders every page it
# ships without a warning; systemd-analyze verify passes each unit it ships
# (as an instance for /mnt/media) and examples/mnt-media.mount; the README's
# demo runs on the installed programs alone (PATH=/usr/sbin:/usr/bin:...).
# Then the upgrade and removal: a volume mounted by the installed daemon
# keeps its daemon (same process), its mount and its frames while the package
# is installed over it; the commands of the installed framefs-metrics@ and
# framefs-scrub@ services work on it (a .prom file with the volume's state; a
# scrub that ends clean; ExecStop= stopping the unit's scrub and no other); "apt-get remove" leaves the volume (fsck -n clean)
# and /etc/framefs/members.conf as the administrator left it; "apt-get
# purge" takes the conffile, and the machine is as before.
#
# Usage: tests/package/deb.sh DEB FSCK (FSCK: a built fsck.framefs, to check
# the volume once the package is gone).
set -euo pipefail
DEB=$(readlink -f "$1")
FSCK=$(readlink -f "$2")
cd "$(dirname "$0")/../.."
SCRATCH=$(mktemp -d /dev/shm/framefs-deb.XXXXXX)
MNT=$SCRATCH/mnt
DAEMON=
export DEBIAN_FRONTEND=noninteractive
INSTALLED_PATH=/usr/sbin:/usr/bin:/sbin:/bin

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
cleanup() {
	local rc=$?
	if grep -qs " $MNT fuse.framefs " /proc/mounts; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
	fi
	[ -z "$DAEMON" ] || wait "$DAEMON" 2>/dev/null || true
	if dpkg-query -W -f='${Status}' framefs 2>/dev/null | grep -q 'ok \(installed\|config-files\)'; then
		apt-get purge -y -qq framefs >/dev/null </dev/null || true
	fi
	rm -rf "$SCRATCH"
	exit $rc
}
trap cleanup EXIT
mounted() { grep -qs " $MNT fuse.framefs " /proc/mounts; }
installed() { PATH=$INSTALLED_PATH "$@"; }

dpkg-query -W framefs >/dev/null 2>&1 && fail "framefs is installed already: this test installs and purges it"

# lintian: no error; every other tag it gives is listed
lintian --fail-on error --display-level '>=warning' "${DEB%.deb}.changes" >"$SCRATCH/lintian" 2>&1 ||
	{ cat "$SCRATCH/lintian" >&2; fail "lintian found errors"; }
tags=$(grep -c '^[WIPX]: ' "$SCRATCH/lintian" || true)
sed -n 's/^\([WIPX]: \)/lintian: \1/p' "$SCRATCH/lintian"
ok "lintian: no error, $tags other tag(s) at warning level"

apt-get install -y -qq "$DEB" >/dev/null </dev/null || fail "apt-get install $DEB"
for p in /usr/bin/framefs /usr/bin/framefs-frametest /usr/sbin/mkfs.framefs /usr/sbin/fsck.framefs \
	/usr/sbin/framefs-admin; do
	[ -x "$p" ] || fail "$p not installed"
done
ok "installed: $(dpkg-query -W -f='${Package} ${Version}, Depends: ${Depends}' framefs)"

# every page the package ships renders without a warning, and man finds each by name
pages=$(dpkg -L framefs | grep '^/usr/share/man/man./.*\.gz$')
[ "$(wc -l <<<"$pages")" = 7 ] || fail "the package ships $(wc -l <<<"$pages") man pages, not 7"
for p in $pages; do
	err=$(MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null) || fail "man -l $p failed: $err"
	[ -z "$err" ] || fail "man --warnings -l $p: $err"
	n=$(basename "$p" .gz)
	man -aw "${n##*.}" "${n%.*}" | grep -qxF "$p" || fail "man ${n##*.} ${n%.*} does not find $p"
done
ok "man: $(wc -l <<<"$pages") pages render without a warning"

# the units, each as an instance for /mnt/media (verify reads the template
# beside it), and the example mount unit
units=$(dpkg -L framefs | grep '^/lib/systemd/system/.*@\.\(service\|timer\)$')
[ "$(wc -l <<<"$units")" = 4 ] || fail "the package ships $(wc -l <<<"$units") units, not 4"
mkdir -p "$SCRATCH/units"
for u in $units; do
	cp "$u" "$SCRATCH/units/"
	b=$(basename "$u")
	ln -s "$b" "$SCRATCH/units/${b/@./@mnt-media.}"
done
cp examples/mnt-media.mount "$SCRATCH/units/"
(cd "$SCRATCH/units" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify ./*@mnt-media.* ./mnt-media.mount) \
	>"$SCRATCH/verify" 2>&1 || { cat "$SCRATCH/verify" >&2; fail "systemd-analyze verify"; }
[ ! -s "$SCRATCH/verify" ] || { cat "$SCRATCH/verify" >&2; fail "systemd-analyze verify has something to say"; }
ok "systemd-analyze verify: $(cd "$SCRATCH/units" && echo ./*@mnt-media.* mnt-media.mount)"

# the README's demo on the installed programs only
SCRATCH=$SCRATCH/demo MEMBER_MB=512 FRAMES=24 installed bash /usr/share/doc/framefs/examples/demo.sh \
	>"$SCRATCH/demo.log" 2>&1 || { cat "$SCRATCH/demo.log" >&2; fail "the demo on the installed programs"; }
grep -q '^demo done$' "$SCRATCH/demo.log" || fail "the demo did not finish"
ok "demo on the installed programs: $(grep -c PASS "$SCRATCH/demo.log") PASS lines"

# a volume mounted by the installed daemon, with frames on it
mkdir -p "$MNT"
for i in 0 1 2; do truncate -s 256M "$SCRATCH/m$i"; done
M=("$SCRATCH/m0" "$SCRATCH/m1" "$SCRATCH/m2")
installed mkfs.framefs -q -L debtest "${M[@]}" || fail "mkfs.framefs"
PATH=$INSTALLED_PATH framefs -f "$(IFS=,; echo "${M[*]}")" "$MNT" >"$SCRATCH/daemon.log" 2>&1 &
DAEMON=$!
for ((i = 0; i < 600; i++)); do
	mounted && break
	kill -0 "$DAEMON" 2>/dev/null || fail "framefs exited: $(cat "$SCRATCH/daemon.log")"
	sleep 0.05
done
mounted || fail "framefs did not mount in 30 s"
[ "$(readlink /proc/$DAEMON/exe)" = /usr/bin/framefs ] || fail "the daemon is $(readlink /proc/$DAEMON/exe)"
installed framefs-frametest -w 2k -n 8 -u 0 "$MNT/A001" >"$SCRATCH/ft-w" || fail "frametest write"
echo "/srv/framefs-deb-test/*.img" >>/etc/framefs/members.conf
conf=$(md5sum </etc/framefs/members.conf)

# the package installed over the running volume
apt-get install -y -qq --reinstall "$DEB" >/dev/null </dev/null || fail "apt-get install --reinstall"
kill -0 "$DAEMON" 2>/dev/null || fail "the daemon died when the package was installed over it"
mounted || fail "the mount is gone after the package was installed over it"
[ "$(md5sum </etc/framefs/members.conf)" = "$conf" ] || fail "the reinstall changed /etc/framefs/members.conf"
installed framefs-frametest -r -n 8 -u 0 "$MNT/A001" >"$SCRATCH/ft-r" || fail "frametest read after the reinstall"
ok "installed over a mounted volume: daemon $DAEMON still serving, 8 frames read back verified, members.conf kept"

# the units' commands, as systemd would run them for framefs-*@<this mountpoint>
inst=$(systemd-escape --path "$MNT")
# (systemd puts a specifier's value in its word as it is, backslashes
# included: here eval takes it from a variable)
unit_cmd() { # UNIT KEY: the unit's KEY= line with %i, %f and $$ expanded as systemd does
	local c
	c=$(sed -n "s/^$2=//p" "/lib/systemd/system/$1")
	c=${c//%i/'"$inst"'}
	c=${c//%f/'"$MNT"'}
	echo "${c//\$\$/\$}"
}
mkdir -p "$SCRATCH/textfile"
cmd=$(unit_cmd framefs-metrics@.service ExecStart)
TEXTFILE_DIR=$SCRATCH/textfile installed eval "$cmd" || fail "framefs-metrics@ ExecStart: $cmd"
prom=$SCRATCH/textfile/framefs-$inst.prom
grep -q '^framefs_array_state{.*state="clean"} 1$' "$prom" || fail "$prom: no clean framefs_array_state"
[ "$(ls "$SCRATCH/textfile")" = "$(basename "$prom")" ] || fail "left in the textfile directory: $(ls "$SCRATCH/textfile")"
cmd=$(unit_cmd framefs-scrub@.service ExecStart)
installed eval "$cmd" || fail "framefs-scrub@ ExecStart: $cmd"
installed framefs-admin --json status "$MNT" | python3 -c '
import json, sys
h = json.load(sys.stdin)["scrub"]["history"]
sys.exit(0 if h and h[0]["result"] == "done" and h[0]["chunks_bad"] == 0 else 1)' ||
	fail "the scrub the unit ran is not in the history as done and clean"
ok "framefs-metrics@$inst wrote $(wc -l <"$prom") lines; framefs-scrub@$inst scrubbed the volume clean"

# systemctl stop of framefs-scrub@: its ExecStop= (with MAINPID, as systemd
# runs it while ExecStart= runs) stops the scrub, which the history records as
# stopped; without MAINPID (ExecStart= has ended) it leaves a scrub alone.
# At 1 MiB/s the scrub of the frames above lasts over a minute.
installed framefs-admin -q set "$MNT" scrub_min=1M scrub_max=1M || fail "set scrub rates"
scrub_active() {
	installed framefs-admin --json status "$MNT" | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["scrub"]["active"] else 1)'
}
wait_scrub() { # active|idle: poll until the scrub is so, at most 30 s
	local i
	for ((i = 0; i < 300; i++)); do
		if [ "$1" = active ] && scrub_active; then return 0; fi
		if [ "$1" = idle ] && ! scrub_active; then return 0; fi
		sleep 0.1
	done
	fail "the scrub is not $1 after 30 s"
}
installed framefs-admin -q scrub start "$MNT" || fail "scrub start"
wait_scrub active
stop=$(unit_cmd framefs-scrub@.service ExecStop)
MAINPID= installed eval "$stop" || fail "framefs-scrub@ ExecStop without MAINPID: $stop"
scrub_active || fail "ExecStop without MAINPID stopped a scrub that was not the unit's"
installed framefs-admin -q scrub stop "$MNT" || fail "scrub stop"
wait_scrub idle
cmd=$(unit_cmd framefs-scrub@.service ExecStart)
installed eval "$cmd" &
main=$!
wait_scrub active
MAINPID=$main installed eval "$stop" || fail "framefs-scrub@ ExecStop: $stop"
wait "$main" || fail "framefs-scrub@ ExecStart exited $? when stopped (a stopped scrub that found nothing: 0)"
installed framefs-admin --json status "$MNT" | python3 -c '
import json, sys
h = json.load(sys.stdin)["scrub"]["history"]
sys.exit(0 if len(h) >= 3 and [r["result"] for r in h[:2]] == ["stopped", "stopped"] else 1)' ||
	fail "the history does not end with the two stopped scrubs"
ok "framefs-scrub@ ExecStop stops the unit's scrub, and only while ExecStart runs"

fusermount3 -u "$MNT"
wait "$DAEMON" || fail "the daemon exited with status $? after unmount"
DAEMON=

# removal: the volume and the administrator's members.conf stay
apt-get remove -y -qq framefs >/dev/null </dev/null || fail "apt-get remove"
[ ! -e /usr/bin/framefs ] || fail "/usr/bin/framefs still there after remove"
[ "$(dpkg-query -W -f='${Status}' framefs)" = "deinstall ok config-files" ] || fail "after remove: $(dpkg-query -W -f='${Status}' framefs)"
[ "$(md5sum </etc/framefs/members.conf)" = "$conf" ] || fail "remove changed /etc/framefs/members.conf"
"$FSCK" -n -c "${M[@]}" >"$SCRATCH/fsck" 2>&1 || { cat "$SCRATCH/fsck" >&2; fail "fsck.framefs -n -c after remove"; }
ok "removed: the volume checks clean, /etc/framefs/members.conf kept as edited"
apt-get purge -y -qq framefs >/dev/null </dev/null || fail "apt-get purge"
[ ! -e /etc/framefs/members.conf ] || fail "purge left /etc/framefs/members.conf"
ok "purged: /etc/framefs/members.conf gone"
echo PASS
