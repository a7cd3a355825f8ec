#!/usr/bin/env bash
# No VM: the published results schema (reports/schema/pinmatrix-1.schema.json)
# through a real validator (python3-jsonschema, tests/unit/validate_results.py):
# the fixtures are valid, and each way a results file can lie to a QA gate
# (an unknown verdict, a case that is not an object, a FAIL with no reason,
# no verdict at all, another schema, a passing case marked not reached) is
# refused. A run that ended early
# (complete: false) may lack its summary.
# Usage: results_schema_test.sh SCHEMA VALIDATE_PY DATA_DIR
set -euo pipefail
schema=$1 validate=$2 data=$3
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
python3 -c 'import jsonschema' 2> /dev/null || { echo "SKIP: python3-jsonschema is not installed (tools/setup-host)"; exit 77; }

python3 "$validate" "$schema" "$data"/results-*.json || fail "the fixtures are not valid"

# NAME|a Python expression that changes d (the fixture, results-pass.json)
mutations=(
  "verdict-banana|d['cases'][0]['verdict'] = 'banana'"
  "verdict-null|d['cases'][0]['verdict'] = None"
  "run-verdict-42|d.__setitem__('verdict', 42)"
  "cases-not-objects|d.__setitem__('cases', [1, 2, 3])"
  "fail-without-reason|d['cases'][1].update(verdict='fail') or d['cases'][1].pop('reason', None)"
  "skip-empty-reason|d['cases'][1].update(verdict='skip', reason='')"
  "no-verdict|d.pop('verdict')"
  "no-summary|d.pop('summary')"
  "summary-negative|d['summary'].update({'pass': -1})"
  "other-schema|d.__setitem__('schema', 'pinmatrix/2')"
  "no-case-id|d['cases'][0].pop('id')"
  "pin-without-placement|d['cases'][0].pop('placement')"
  "latency-negative|d['cases'][0].update(latency_ns=-5)"
  "unknown-suite|d['cases'][0].update(suite='banana')"
  "ualink-without-observed|d['cases'][0].update(suite='ualink', source='x') or d['cases'][0].pop('observed')"
  "timeout-not-seconds|d['cases'][1].update(verdict='error', reason='x', stuck_task={'timeout_s': '60 s'})"
  "not-reached-pass|d['cases'][0].update(not_reached=True)"
  "not-reached-false|d['cases'][0].update(verdict='error', reason='x', not_reached=False)"
  "started-at-not-a-time|d['cases'][0].update(started_at='yesterday')"
  "tool-commit-a-branch|d['tool'].update(commit='main')"
  "tool-commit-empty|d['tool'].update(commit='')"
)
# Every lie in one file each, validated in one run of the validator (one
# Python start instead of two per lie): each must have its INVALID line.
python3 - "$data/results-pass.json" "$t" "${mutations[@]}" <<'PY'
import json, sys
for m in sys.argv[3:]:
    name, expr = m.split("|", 1)
    d = json.load(open(sys.argv[1]))
    exec(expr)
    json.dump(d, open("%s/%s.json" % (sys.argv[2], name), "w"))
PY
rc=0; python3 "$validate" "$schema" "$t"/*.json > "$t/lies.out" || rc=$?
[[ $rc -eq 1 ]] || fail "the lies: validator exit $rc, expected 1: $(head -3 "$t/lies.out")"
for m in "${mutations[@]}"; do
  name=${m%%|*}
  grep -q "^INVALID $t/$name.json: " "$t/lies.out" || fail "$name: accepted"
done

# A run cut short: no summary, no verdict, complete: false.
python3 - "$data/results-pass.json" "$t/partial.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("summary", "verdict"):
    d.pop(k)
d["complete"] = False
json.dump(d, open(sys.argv[2], "w"))
PY
python3 "$validate" "$schema" "$t/partial.json" > /dev/null || fail "a run cut short (complete: false) was refused"

# The tool's commit: 12 hex digits as git gives them, or null (unknown).
python3 - "$data/results-pass.json" "$t" <<'PY'
import json, sys
for name, commit in (("commit-hex", "0123456789ab"), ("commit-unknown", None)):
    d = json.load(open(sys.argv[1]))
    d["tool"]["commit"] = commit
    json.dump(d, open("%s/%s.json" % (sys.argv[2], name), "w"))
PY
python3 "$validate" "$schema" "$t/commit-hex.json" "$t/commit-unknown.json" > /dev/null ||
  fail "a tool commit of 12 hex digits or null was refused"

# No guest test ran: their output directory was never made, nothing to check
# (77); a results file named but missing is an error.
rc=0; python3 "$validate" "$schema" "$t/no-such-dir" > /dev/null || rc=$?
[[ $rc -eq 77 ]] || fail "a directory no test made: exit $rc, expected 77 (SKIP)"
rc=0; python3 "$validate" "$schema" "$t/missing.json" > /dev/null || rc=$?
[[ $rc -eq 1 ]] || fail "a missing results file: exit $rc, expected 1"
echo "PASS: fixtures valid, ${#mutations[@]} lies refused, a partial run accepted"
