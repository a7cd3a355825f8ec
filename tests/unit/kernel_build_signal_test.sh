#!/bin/bash
# vm/kernel-build.sh stopped by a signal to its whole process group (what
# ctest's timeout, timeout(1) or a supervisor sends), while it unpacks the
# source: it exits non-zero and leaves no half-made build in the cache (a
# dir of up to 1.7 GB), only its log beside where the build was. The
# heartbeat may die first from the same signal; the cleanup must not
# depend on it. A few seconds: the build is stopped before make runs.
#
# Usage: kernel_build_signal_test.sh PATH/TO/vm/kernel-build.sh FRAGMENT
set -euo pipefail

script=$1 fragment=$2
[[ -f /usr/src/linux-source-6.1.tar.xz ]] ||
  { echo "SKIP: no /usr/src/linux-source-6.1.tar.xz (tools/setup-host installs it)"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-kernel-build-signal-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cache=$work/cache
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

for signal in TERM HUP; do
  rm -rf "$cache"
  setsid "$script" "$fragment" "$cache" > /dev/null 2> "$work/stderr" &
  pid=$!
  # Stopped once the unpacking has written something.
  for _ in $(seq 300); do
    compgen -G "$cache/kernels/.tmp-build-*/out/build/*" > /dev/null && break
    sleep 0.1
  done
  compgen -G "$cache/kernels/.tmp-build-*/out/build/*" > /dev/null ||
    { fail "SIG$signal: no unpacking seen in 30 s: $(cat "$work/stderr")"; kill -KILL -- -"$pid"; wait "$pid"; continue; }
  # The heartbeat first, as it happens when the signal reaches it before
  # the script (the order is the scheduler's): the cleanup must not need it.
  pkill -"$signal" -s "$pid" -f build-progress.sh || fail "SIG$signal: no heartbeat running"
  sleep 0.2
  kill -"$signal" -- -"$pid"
  rc=0
  wait "$pid" || rc=$?
  ((rc != 0)) || fail "SIG$signal: kernel-build.sh exited 0"
  left=$(find "$cache/kernels" -mindepth 1 -maxdepth 1 ! -name '.tmp-build-*.log' -printf '%f\n')
  [[ -z $left ]] || fail "SIG$signal left in the cache: $left"
  compgen -G "$cache/kernels/.tmp-build-*.log" > /dev/null || fail "SIG$signal: the build's log is gone"
done

[[ $failures -eq 0 ]] || { echo "$failures failure(s)" >&2; exit 1; }
echo "PASS: a signalled kernel-build.sh leaves its log and no half-made build"
