#!/bin/bash
# vm/build-jobs.sh, make's -j for a kernel build: one job per CPU, fewer
# where the cgroup's CPU quota allows fewer, at most one per GiB available,
# never none; a meminfo without MemAvailable is an error, not a guess.
#
# Usage: build_jobs_test.sh PATH/TO/vm/build-jobs.sh
set -euo pipefail

script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-build-jobs-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
cpus=$(nproc)
min() { echo $(( $1 < $2 ? $1 : $2 )); }

meminfo() { # AVAILABLE_KB: a meminfo file
  printf 'MemTotal:       %s kB\nMemFree:        1000 kB\nMemAvailable:   %s kB\n' "$1" "$1" > "$work/meminfo"
}
expect() { # WANT_JOBS WANT_TEXT WHAT CPU_MAX_LINE
  local got
  if [[ -n $4 ]]; then echo "$4" > "$work/cpu.max"; else rm -f "$work/cpu.max"; fi
  got=$("$script" "$work/meminfo" "$work/cpu.max") || { fail "$3: exit $?"; return; }
  [[ ${got%% *} == "$1" ]] || fail "$3: want $1 jobs, got '$got'"
  [[ $got == *"$2"* ]] || fail "$3: no '$2' in '$got'"
}

meminfo $((64 * 1048576))
expect "$cpus" "$cpus CPUs, 64 GiB available" "plenty of memory, no quota" ""
expect "$cpus" "$cpus CPUs, 64 GiB" "'max' is no quota" "max 100000"
expect 1 "1 CPUs (cgroup quota 50000/100000)" "half a CPU rounds up to one" "50000 100000"
expect "$(min "$cpus" 2)" "64 GiB" "1.5 CPUs round up to two" "150000 100000"
meminfo $((3 * 1048576 + 500000))
expect "$(min "$cpus" 3)" "3 GiB available" "3.5 GiB: at most 3 jobs" ""
meminfo 400000
expect 1 "0 GiB available" "under a GiB: still one job" ""

printf 'MemTotal: 1000 kB\n' > "$work/meminfo"
if out=$("$script" "$work/meminfo" "$work/cpu.max" 2>&1); then
  fail "a meminfo without MemAvailable passed: '$out'"
else
  [[ $out == *"no MemAvailable"* ]] || fail "no clear message for a meminfo without MemAvailable: '$out'"
fi
"$script" a b c > /dev/null 2>&1 && fail "three arguments passed"

# This host, as kernel-build.sh runs it.
"$script" | grep -qE '^[1-9][0-9]* \(' || fail "this host: '$("$script" 2>&1)'"

[[ $failures -eq 0 ]] || { echo "$failures failure(s)" >&2; exit 1; }
echo "PASS: build-jobs.sh"
