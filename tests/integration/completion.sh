#!/bin/bash
# Proves: the bash completion (dist/bash-completion/framefs) completes
# framefs-admin's commands and scrub's sub-commands, the mountpoint of a
# mounted framefs volume (and for metrics nothing else), the members of a
# volume, framefs-frametest's presets (as its --list prints them), --footage
# FORMAT@, and the daemon's -o list item by item; each completion runs in
# bash with Debian's bash-completion loaded, as an interactive shell would.
#
# Environment (meson): COMPLETION (the completion file), FRAMETEST (the
# built framefs-frametest, put on PATH as the completion calls it by name).
. "$(dirname "$0")/lib.sh"
: "${COMPLETION:?}" "${FRAMETEST:?}"
BASH_COMPLETION=/usr/share/bash-completion/bash_completion
[ -r "$BASH_COMPLETION" ] || fail "no $BASH_COMPLETION (Debian's bash-completion package)"
mkdir -p "$IT_TMP/bin"
ln -s "$FRAMETEST" "$IT_TMP/bin/framefs-frametest"

# complete_words "WORDS": the completions bash offers for the command line
# WORDS (the last word is the one being completed; a trailing space starts an
# empty one), one per line, sorted.
complete_words() {
	local -a w
	read -ra w <<<"$1"
	[[ $1 == *' ' ]] && w+=("")
	PATH=$IT_TMP/bin:$PATH bash -c '
		. "$1"; . "$2"; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		fn=$(complete -p "$1" | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
		"$fn" "$1" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"' sh "$BASH_COMPLETION" "$COMPLETION" "${w[@]}" | sort
}

# expect "WORDS" EXPECTED...: exactly these completions
expect() {
	local words=$1 got want
	shift
	got=$(complete_words "$words" | paste -sd' ')
	want=$(printf '%s\n' "$@" | sort | paste -sd' ')
	[ "$got" = "$want" ] || fail "completing '$words': got '$got', want '$want'"
	ok "'$words' -> $want"
}

# expect_has "WORDS" EXPECTED...: these among the completions (files too)
expect_has() {
	local words=$1 got w
	shift
	got=$(complete_words "$words")
	for w in "$@"; do
		grep -qxF -- "$w" <<<"$got" || fail "completing '$words': no '$w' in: $(paste -sd' ' <<<"$got")"
	done
	ok "'$words' offers $*"
}

it_make_array 5 3 64M
it_mount
it_wait_ctl

expect "framefs-admin sc" scrub
expect "framefs-admin re" re-add remove replace rebuild
expect "framefs-admin scrub st" start stop status
expect "framefs-admin --json scrub start --w" --wait
expect "framefs-admin times $MNT r" reset
# the mountpoint of the mounted volume; metrics takes nothing else
expect "framefs-admin metrics ${MNT%/*}/" "$MNT"
expect_has "framefs-admin status $MNT" "$MNT"
# a command that also works offline takes the members too
expect_has "framefs-admin status ${MEMBERS[0]%.m0}." "${MEMBERS[@]}"
expect_has "framefs-admin fail $MNT ${MEMBERS[1]}" "${MEMBERS[1]}"
expect_has "mkfs.framefs -l 6 ${MEMBERS[0]%.m0}.m" "${MEMBERS[@]}"
expect "fsck.framefs -n LA" LABEL=
# presets, as framefs-frametest --list prints them
presets=$("$FRAMETEST" --list | awk 'NR > 2 && NF == 0 { exit } NR > 2 { print $1 }')
[ "$(wc -l <<<"$presets")" -ge 10 ] || fail "framefs-frametest --list printed only: $presets"
expect "framefs-frametest -w dpx" $(grep '^dpx' <<<"$presets")
expect "framefs-frametest -t 4 -w " $presets
expect "framefs-admin status --footage 4" 4k@
# the daemon's -o list: the last item is completed, the ones before kept
expect "framefs -o ro,allow_other,write_b" ro,allow_other,write_buffer_mb=
expect "framefs -o transport=" transport=io_uring transport=dev

it_unmount
it_fsck
echo PASS
