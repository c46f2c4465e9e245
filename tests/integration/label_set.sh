#!/bin/bash
# Proves: framefs-admin set label= renames a volume where LABEL= looks for
# it (every member superblock, and a hot spare's), mounted or not.  Online:
# status, metrics and the event hook (label-changed, FRAMEFS_LABEL) carry
# the new label at once; after umount LABEL=<new> mounts it (spare
# included) and LABEL=<old> finds nothing.  Offline, by the member list:
# LABEL=<newer> then finds it.  A label too long or with a control
# character is refused, exit status not 0, with a message saying what is
# allowed, online and offline, and changes nothing.  fsck.framefs is clean
# at the end.
. "$(dirname "$0")/lib.sh"
: "${ADMIN:?ADMIN must name the built framefs-admin}"

D=$(mktemp -d /dev/shm/fflabel.XXXXXX)
CLEANUPS+=('rm -rf "$D"')
L0=take-$$ L1="reel 2 $$" L2=grade-$$
HOOK_WAIT_S=20 # the hook runs on the daemon's event thread, after the request answered

for i in 0 1 2 3 4; do truncate -s 64M "$D/m$i" || fail "cannot create $D/m$i"; done
MEMBERS=("$D/m0" "$D/m1" "$D/m2" "$D/m3")
"$MKFS" -q -f -l 5 -L "$L0" "${MEMBERS[@]}" || fail "mkfs.framefs -L $L0"
LIST=$(IFS=,; echo "${MEMBERS[*]}")

# expect_refused WHAT PATTERN CMD...: CMD fails (not hung), PATTERN on stderr
expect_refused() {
	local what=$1 pat=$2 rc=0
	shift 2
	timeout 60 "$@" >"$IT_TMP/out" 2>"$IT_TMP/err" || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "$what: status $rc (124 = hung)"
	grep -q -- "$pat" "$IT_TMP/err" || fail "$what: no '$pat' in: $(cat "$IT_TMP/err")"
	ok "$what refused (status $rc): $(cat "$IT_TMP/err")"
}

cat >"$IT_TMP/hook" <<EOF
#!/bin/sh
echo "\$1|\$FRAMEFS_LABEL|\$FRAMEFS_DETAIL" >>"$IT_TMP/hook.rec"
EOF
chmod +x "$IT_TMP/hook"

# 1. online: mount by the old label with a hook, add a hot spare, rename
SPEC="LABEL=$L0"
it_mount -o "members=$D/m*,event_cmd=$IT_TMP/hook"
it_wait_ctl
echo frame >"$MNT/f" || fail "write"
"$ADMIN" add "$MNT" "$D/m4" >"$IT_TMP/out" 2>&1 || fail "add a spare: $(cat "$IT_TMP/out")"
t0=$(now_ns)
"$ADMIN" set "$MNT" "label=$L1" >"$IT_TMP/out" 2>&1 || fail "set label= online: $(cat "$IT_TMP/out")"
echo "set label= online: $((($(now_ns) - t0) / 1000000)) ms: $(cat "$IT_TMP/out")"
"$ADMIN" status "$MNT" >"$IT_TMP/out" 2>&1 || fail "status: $(cat "$IT_TMP/out")"
grep -q "label \"$L1\"" "$IT_TMP/out" || fail "status does not show the new label: $(cat "$IT_TMP/out")"
"$ADMIN" metrics "$MNT" >"$IT_TMP/metrics" 2>&1 || fail "metrics: $(cat "$IT_TMP/metrics")"
grep -q "^framefs_[a-z_]*{uuid=\"[^\"]*\",label=\"$L1\"" "$IT_TMP/metrics" ||
	fail "metrics do not carry the new label: $(head -5 "$IT_TMP/metrics")"
for ((i = 0; i < HOOK_WAIT_S * 20; i++)); do
	grep -qs "^label-changed|" "$IT_TMP/hook.rec" && break
	sleep 0.05
done
grep -qx "label-changed|$L1|$L1" "$IT_TMP/hook.rec" ||
	fail "the hook did not get label-changed with FRAMEFS_LABEL=$L1: $(cat "$IT_TMP/hook.rec" 2>&1)"
ok "online: status, metrics and the hook carry \"$L1\""

# 2. refused online: too long, a control character; the label stays
expect_refused "a 64-byte label" "at most 63 bytes" \
	"$ADMIN" set "$MNT" "label=$(printf 'x%.0s' $(seq 64))"
expect_refused "a label with a tab" "control character (0x09 at byte 3)" \
	"$ADMIN" set "$MNT" "label=ab	c"
"$ADMIN" status "$MNT" | grep -q "label \"$L1\"" || fail "a refused label changed the label"
it_unmount

# 3. the new label assembles the volume, with its spare; the old finds nothing
SPEC="LABEL=$L1"
it_mount -o "members=$D/m*"
it_wait_ctl
[ "$(cat "$MNT/f")" = frame ] || fail "data after mounting by the new label"
"$ADMIN" status --json "$MNT" >"$IT_TMP/out" 2>&1 || fail "status: $(cat "$IT_TMP/out")"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(not (s["label"] == sys.argv[2] and len(s["spares"]) == 1 and s["state"] == "clean"))' \
	"$IT_TMP/out" "$L1" || fail "by LABEL=$L1: not clean with its spare: $(cat "$IT_TMP/out")"
it_unmount
SPEC=
expect_refused "LABEL= the old label" "no member found" "$FSCK" -n --members="$D/m*" "LABEL=$L0"
ok "LABEL=\"$L1\" mounts the volume clean with its spare"

# 4. offline, by the member list: refused labels change nothing; a good one does
expect_refused "offline, a 70-byte label" "at most 63 bytes" \
	"$ADMIN" set "$LIST" "label=$(printf 'y%.0s' $(seq 70))"
expect_refused "offline, a rate" "takes label= only" "$ADMIN" set "$LIST" rebuild_max=1M
t0=$(now_ns)
"$ADMIN" set "$LIST" "label=$L2" >"$IT_TMP/out" 2>&1 || fail "set label= offline: $(cat "$IT_TMP/out")"
echo "set label= offline: $((($(now_ns) - t0) / 1000000)) ms: $(cat "$IT_TMP/out")"
"$ADMIN" status --members="$D/m*" "LABEL=$L2" >"$IT_TMP/out" 2>&1 ||
	fail "status LABEL=$L2: $(cat "$IT_TMP/out")"
grep -q "label \"$L2\"" "$IT_TMP/out" || fail "offline status: $(cat "$IT_TMP/out")"
SPEC="LABEL=$L2"
it_mount -o "members=$D/m*"
[ "$(cat "$MNT/f")" = frame ] || fail "data after mounting by the offline label"
it_unmount
ok "offline: LABEL=\"$L2\" finds and mounts the volume"

# 5. fsck: clean, and it prints the label the volume now has
"$FSCK" -n -f --members="$D/m*" "LABEL=$L2" >"$IT_TMP/fsck.out" 2>&1 ||
	fail "fsck.framefs -n -f: $(cat "$IT_TMP/fsck.out")"
grep -q "^$L2: " "$IT_TMP/fsck.out" || fail "fsck does not name the new label: $(cat "$IT_TMP/fsck.out")"
ok "fsck.framefs clean: $(tail -1 "$IT_TMP/fsck.out")"
