#!/bin/bash
# Proves: attributes come out of framefs exactly as Linux keeps them.  One
# script of operations (attr_diff.c: every file type, chmod with set-ID
# bits, chown/lchown with -1 and unchanged ids, write, truncate, O_TRUNC,
# utimensat with each kind of time, security.capability and user.* xattrs,
# set-group-ID directories, rename over a file) runs as root and then as
# uid 65534 with supplementary groups 65533,65532 on a tmpfs, the
# reference, and on a framefs mount (-o allow_other,default_permissions);
# every mode, uid, gid, errno and whether each time changed must be the
# same.  Over FUSE on io_uring (killpriv_v2: framefs takes set-ID bits and
# capabilities itself) and over /dev/fuse.
#
#   attr_diff.sh ATTR_DIFF_PROG
#
# Turns /sys/module/fuse/parameters/enable_uring on for its run and puts
# back what it found (is_parallel : false).
. "$(dirname "$0")/lib.sh"
PROG=${1:?usage: attr_diff.sh ATTR_DIFF_PROG}
[ -x "$PROG" ] || fail "$PROG is not an executable"
unset IT_TRANSPORT # each mount here names its transport

URING_PARAM=/sys/module/fuse/parameters/enable_uring
[ -w "$URING_PARAM" ] || fail "$URING_PARAM is missing or not writable: this kernel has no FUSE over io_uring, or the test is not root"
old_uring=$(cat "$URING_PARAM")
CLEANUPS+=("echo $old_uring >$URING_PARAM")
echo Y >"$URING_PARAM"

# libfuse 3.18 (the release build) negotiates killpriv_v2, and framefs takes
# set-ID bits itself; on an older one (the ASan build's 3.14) the kernel does
# it and the daemon serves /dev/fuse only (fuse-transport checks the fallback)
version=$("$FRAMEFS" --version | head -1)
case "$version" in
*"libfuse 3.1"[89]* | *"libfuse 3."[2-9][0-9]* | *"libfuse "[4-9]*) TRANSPORTS=(io_uring dev) KILLPRIV_V2=1 ;;
*) TRANSPORTS=(dev) KILLPRIV_V2=0
	echo "built: $version: no FUSE over io_uring and no killpriv_v2 in this build, /dev/fuse only" ;;
esac

REF=$IT_TMP/tmpfs
mkdir -p "$REF"
mount -t tmpfs -o mode=0755,size=16M attr-diff-ref "$REF" || fail "cannot mount a tmpfs on $REF"
CLEANUPS+=("umount $REF")

as_user() {
	setpriv --reuid=65534 --regid=65534 --groups=65533,65532 --reset-env "$@"
}

# run_script DIR OUT: the root phase then the user phase, both outputs in OUT
run_script() {
	local dir=$1 out=$2
	mkdir "$dir" || fail "cannot make $dir"
	chmod 0755 "$dir"
	"$PROG" "$dir" root >"$out" || fail "$PROG $dir root failed (output: $out)"
	as_user "$PROG" "$dir" user >>"$out" || fail "$PROG $dir user failed"
}

# Differences framefs cannot remove, each a step-label pattern (awk regex)
# and why; every one must still be seen in each run, or it leaves this list.
# chown with neither id (-1, -1): the VFS turns the chown's set-ID kill into
# a mode change, which on tmpfs also needs the caller to own the file (EPERM
# otherwise); FUSE's setattr drops that mode, killpriv_v2 leaving the kill
# to the filesystem, and flags a kill only with an id.  What reaches
# framefs is a SETATTR with nothing in it (GETXATTR, REMOVEXATTR, SETATTR
# where there is a capability), the same requests a write by root to a
# file with a capability sends (seen with -d), where the bits must stay.
KNOWN_RE=('chown\(-1, -1\)')
KNOWN_WHY=('FUSE killpriv_v2: a chown of neither id reaches framefs as an empty SETATTR')
# Without killpriv_v2 the kernel's FUSE code takes the bits itself, and the
# chown above works as on tmpfs, but fuse_setattr decides set-group-ID by
# group execute alone (not by the caller's groups, as the VFS does) and puts
# the resulting mode into the SETATTR of a truncate, where framefs cannot
# tell it from a chmod, which stamps ctime.
if [ "$KILLPRIV_V2" = 0 ]; then
	KNOWN_RE=('u/[a-z]+-c$|-sgid-out$|root-02767$' 'truncate u/t-suid2 to its size')
	KNOWN_WHY=("FUSE without killpriv_v2: the kernel keeps set-group-ID without group execute whatever the caller's groups"
		"FUSE without killpriv_v2: the kernel sends a same-size truncate's set-ID change as a mode")
fi

# compare REF_OUT FFS_OUT: one line per step on each side, the same steps;
# prints every step whose outcome differs, both sides; DIFFS counts those
# not in the known list
compare() {
	local ref=$1 ffs=$2 i
	[ "$(wc -l <"$ref")" -ge 300 ] || fail "the reference run has only $(wc -l <"$ref") steps"
	diff <(cut -d: -f1 "$ref") <(cut -d: -f1 "$ffs") >/dev/null ||
		fail "the two runs did not take the same steps: $(diff <(cut -d: -f1 "$ref") <(cut -d: -f1 "$ffs") | head -5)"
	paste -d '\n' "$ref" "$ffs" | awk -v known="$(IFS=$'\n'; echo "${KNOWN_RE[*]}")" '
		BEGIN { nk = split(known, k, "\n") }
		NR % 2 == 1 { ref = $0; next }
		$0 != ref {
			i = index(ref, ":")
			label = substr(ref, 1, i - 1)
			tag = "DIFF"
			for (j = 1; j <= nk; j++)
				if (label ~ k[j]) { tag = "KNOWN" j; break }
			printf "%s %s\n    tmpfs:   %s\n    framefs: %s\n", tag, label,
				substr(ref, i + 2), substr($0, i + 2)
		}' >"$IT_TMP/diffs"
	cat "$IT_TMP/diffs"
	DIFFS=$(grep -c '^DIFF ' "$IT_TMP/diffs")
	for i in "${!KNOWN_RE[@]}"; do
		if grep -q "^KNOWN$((i + 1)) " "$IT_TMP/diffs"; then
			echo "known: ${KNOWN_WHY[i]} ($(grep -c "^KNOWN$((i + 1)) " "$IT_TMP/diffs") steps)"
		else
			echo "FAIL: known difference '${KNOWN_RE[i]}' (${KNOWN_WHY[i]}) was not seen:" \
				"take it out of the list" >&2
			DIFFS=$((DIFFS + 1))
		fi
	done
}

failed=0
for t in "${TRANSPORTS[@]}"; do
	it_make_array 5 4 128M
	it_mount -o "allow_other,default_permissions,transport=$t"
	case $t in
	io_uring) said="FUSE over io_uring" ;;
	dev) said="FUSE over /dev/fuse" ;;
	esac
	grep -qF "$said" "$DAEMON_LOG" || fail "-o transport=$t, but the daemon did not say '$said'"
	run_script "$REF/$t" "$IT_TMP/ref.$t"
	run_script "$MNT/t" "$IT_TMP/ffs.$t"
	compare "$IT_TMP/ref.$t" "$IT_TMP/ffs.$t"
	steps=$(wc -l <"$IT_TMP/ref.$t")
	if [ "$DIFFS" != 0 ]; then
		echo "FAIL: transport=$t: $DIFFS of $steps steps differ from tmpfs (DIFF above)" >&2
		failed=1
	else
		ok "transport=$t: all $steps steps as on tmpfs but $(grep -c '^KNOWN' "$IT_TMP/diffs") known differences (above)"
	fi
	it_unmount
	it_fsck
done
[ "$failed" = 0 ] || fail "framefs's attributes differ from tmpfs's"
