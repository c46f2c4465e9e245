#!/bin/bash
# --json: stdout is one JSON document that matches the schema (schema.py);
# --json=FILE keeps the text report on stdout, PASS|FAIL last.
. "$(dirname "$0")/lib.sh"
SCHEMA="$(dirname "$0")/schema.py"

mount_tmpfs "$WORK/t" 256m
run_ft -w 1 -z 256 -n 30 -t 2 -f 60 -u 0 --json "$WORK/t/j"
expect_rc 0 "write --json"
python3 "$SCHEMA" "$WORK/out" || fail "write JSON does not match the schema"
[ "$(json_get "$WORK/out" "j['test']['mode'], j['frames']['total'], j['test']['fps']")" = "write 30 60" ] ||
	fail "write JSON content"
ok "write: JSON on stdout matches the schema"

run_ft -r -n 30 -u 0 --json="$WORK/r.json" "$WORK/t/j"
expect_rc 0 "read --json=FILE"
expect_last "^PASS: 1 stream\(s\) of 256KiB at .* verified 30/30 frames$" "text report on stdout"
python3 "$SCHEMA" "$WORK/r.json" || fail "read JSON does not match the schema"
[ "$(json_get "$WORK/r.json" "j['frames']['verified'], j['lowest_fps_1s'], j['max_streams']")" = "30 None None" ] ||
	fail "read JSON content"
[ "$(json_get "$WORK/r.json" "sum(j['histogram']['counts'])")" = 30 ] || fail "histogram counts"
ok "read: --json=FILE matches the schema, text report on stdout"

run_ft -r -n 30 --streams 1 -f 24 --max-streams=2 -u 0 --json "$WORK/t"
expect_rc 2 "bad usage with --json"
python3 "$SCHEMA" "$WORK/out" >/dev/null 2>&1 && fail "a failed run printed JSON anyway"
run_ft -w 1 -z 64 -n 10 -f 100 --max-streams=2 -u 0 --json "$WORK/t/ms"
expect_rc 0 "--max-streams --json"
python3 "$SCHEMA" "$WORK/out" || fail "max-streams JSON does not match the schema"
[ "$(json_get "$WORK/out" "j['max_streams']['limit'], len(j['max_streams']['trials'])")" = "2 2" ] ||
	fail "max-streams JSON content"
ok "--max-streams: JSON matches the schema"
