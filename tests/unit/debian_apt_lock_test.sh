#!/bin/bash
# vm/debian-apt.sh's lock on its private apt configuration: while another
# process holds it, a run waits and says for what and who holds it; when the
# holder goes, the run goes on. No download: the scratch configuration's
# lists are marked fresh (apt-cache reads empty lists).
#
# Usage: debian_apt_lock_test.sh PATH/TO/vm/debian-apt.sh
set -euo pipefail

script=$1
command -v flock >/dev/null || { echo "SKIP: no flock(1)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-debian-apt-lock.XXXXXX")
holder= run=
cleanup() {
  [[ -n $holder ]] && kill "$holder" 2>/dev/null
  [[ -n $run ]] && kill "$run" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

cache=$work/cache
mkdir -p "$cache/apt"
touch "$cache/apt/updated"
"$script" "$cache" --sources bookworm > /dev/null 2>&1 || { echo "SKIP: the host's apt sources name no bookworm mirror"; exit 77; }

# The holder: our own process, with its line as a holder writes it.
lock=$cache/apt/pinmatrix.lock
: > "$lock"
# One process (bash, then sleep by exec) holds the lock's fd: its kill frees it.
bash -c 'exec 8<>"$1"; flock 8
  printf "%s\t%s\t%s\t%s\n" $$ $(($(date +%s) - 65)) "the private apt configuration" "holder-for-the-test" > "$1"
  exec sleep 60' _ "$lock" > /dev/null 2>&1 &
holder=$!
for _ in $(seq 50); do grep -q holder-for-the-test "$lock" && break; sleep 0.1; done

"$script" "$cache" apt-cache policy no-such-package > "$work/out" 2> "$work/err" &
run=$!
for _ in $(seq 100); do grep -q "waiting" "$work/err" && break; sleep 0.1; done
grep -qE "^debian-apt: waiting for $cache/apt: held by PID [0-9]+ \(holder-for-the-test\), for 6[5-9] s \($lock\)\$" "$work/err" ||
  fail "no line saying what it waits for and who holds it: $(cat "$work/err")"
kill -0 "$run" 2>/dev/null || fail "did not wait for the holder"

kill "$holder"; wait "$holder" 2>/dev/null || true
holder=
rc=0
wait "$run" || rc=$?
[[ $rc -eq 0 ]] || fail "exit $rc once the holder went: $(cat "$work/err")"
# Its own line, once it held the lock: its PID, what, and who ran it (us).
IFS=$'\t' read -r pid _ what command < "$lock"
[[ $pid == "$run" && $what == "the private apt configuration" && $command == *debian_apt_lock_test* ]] ||
  fail "the run did not write its holder line: $(cat "$lock")"
run=

# A holder that has not written its line yet, the file still naming the
# last holder, now gone (seen: a matrix's second kernel named a finished
# CI run's process as the holder): it names no one.
printf '%s\t%s\t%s\t%s\n' "$(bash -c 'echo $$')" "$(date +%s)" "the private apt configuration" "gone-holder" > "$lock"
bash -c 'exec 8<>"$1"; flock 8; exec sleep 60' _ "$lock" > /dev/null 2>&1 &
holder=$!
for _ in $(seq 50); do flock -n "$lock" true 2>/dev/null || break; sleep 0.1; done
"$script" "$cache" apt-cache policy no-such-package > "$work/out" 2> "$work/err" &
run=$!
for _ in $(seq 100); do grep -q "waiting" "$work/err" && break; sleep 0.1; done
grep -qF "held by a process that has not said who it is yet" "$work/err" ||
  fail "a gone holder's line was taken for the holder: $(cat "$work/err")"
kill "$holder"; wait "$holder" 2>/dev/null || true
holder=
wait "$run" || fail "exit $? once the second holder went"
run=

[[ $failures -eq 0 ]] || { echo "$failures failure(s)" >&2; exit 1; }
echo "PASS: debian-apt lock"
