#!/bin/bash
# tools/apt-wait.sh: while another process holds the package lists' lock,
# `apt-get update` waits, saying who holds it, and goes on when it goes; a
# holder past the bound is an error that names it. No download, and the
# host's lists untouched: the runs read no sources (Dir::Etc::sourcelist
# /dev/null) into lists of their own (Dir::State::Lists), whose lock is
# apt's own kind (fcntl), held as another apt would.
#
# Usage: apt_wait_test.sh PATH/TO/tools/apt-wait.sh
set -euo pipefail

lib=$1
[[ $EUID -eq 0 ]] || { echo "SKIP: apt-get update needs root"; exit 77; }
command -v apt-get > /dev/null && command -v python3 > /dev/null || { echo "SKIP: no apt-get or python3"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-apt-wait.XXXXXX")
holder=
cleanup() {
  [[ -n $holder ]] && kill "$holder" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
lists=$work/lists
mkdir -p "$lists/partial"
host_lists=$(ls -l --time-style=+%s /var/lib/apt/lists)
no_sources=(-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=/nonexistent -o Dir::State::Lists="$lists/")

# Holds the lists' lock (apt's own kind: fcntl) for $1 seconds; our process.
hold_lock() {
  python3 -c '
import fcntl, sys, time
f = open(sys.argv[2], "w")
fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
time.sleep(float(sys.argv[1]))' "$1" "$lists/lock" > "$work/held" &
  holder=$!
  for _ in $(seq 50); do grep -q held "$work/held" 2> /dev/null && return 0; sleep 0.1; done
  echo "FAIL: cannot take $lists/lock" >&2
  exit 1
}

# Within the bound: it waits for the holder, names it, and succeeds.
hold_lock 5
start=$SECONDS
rc=0
(PINMATRIX_APT_LOCK_WAIT=60 apt_lists_dir=$lists && source "$lib" && apt_update_waiting "${no_sources[@]}") 2> "$work/err" || rc=$?
[[ $rc -eq 0 ]] || fail "exit $rc once the holder went: $(cat "$work/err")"
((SECONDS - start >= 3)) || fail "did not wait for the holder ($((SECONDS - start)) s)"
grep -qF "apt-wait: waiting up to 60 s for $lists/lock, held by PID $holder (python3)" "$work/err" ||
  fail "no line saying what it waits for and who holds it: $(cat "$work/err")"
wait "$holder" 2> /dev/null || true
holder=

# Past the bound: one error naming the holder, non-zero.
hold_lock 20
rc=0
(PINMATRIX_APT_LOCK_WAIT=2 apt_lists_dir=$lists && source "$lib" && apt_update_waiting "${no_sources[@]}") 2> "$work/err" || rc=$?
[[ $rc -ne 0 ]] || fail "succeeded while the lock was held past the bound"
grep -qF "apt-wait: ERROR: PID $holder (python3) has held $lists/lock for 2 s" "$work/err" ||
  fail "no error naming the holder: $(cat "$work/err")"

# A bound that is not a number of seconds is refused before anything runs.
rc=0
(PINMATRIX_APT_LOCK_WAIT=soon && source "$lib") 2> "$work/err" || rc=$?
[[ $rc -eq 2 ]] || fail "PINMATRIX_APT_LOCK_WAIT=soon: exit $rc"

# The host's lists were not touched.
[[ $(ls -l --time-style=+%s /var/lib/apt/lists) == "$host_lists" ]] || fail "the host's package lists changed"

((failures == 0)) && echo "PASS" || exit 1
