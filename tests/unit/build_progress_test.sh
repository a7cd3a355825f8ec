#!/bin/bash
# vm/build-progress.sh, the kernel build's heartbeat, on a scratch cache of
# finished builds and a log as kbuild writes it: each line says the time so
# far, what the last comparable build took (same package and fragments, else
# the same package, else none) and make's step; it ends with its parent.
#
# Usage: build_progress_test.sh PATH/TO/vm/build-progress.sh
set -euo pipefail

script=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-build-progress-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cache=$work/cache
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

finished_build() { # NAME SECONDS PACKAGE FRAGMENT...
  local dir=$cache/kernels/build-$1 seconds=$2 pkg=$3 f
  shift 3
  mkdir -p "$dir"
  { echo "$pkg 6.1.158-1"; echo "compiler gcc (Debian 12.2.0-14) 12.2.0"
    for f in "$@"; do echo "fragment $f sha256 0123"; done; echo "key 4567"; } > "$dir/source"
  echo "$seconds" > "$dir/build-seconds"
}

# Runs the heartbeat under a parent that lives for 3 s, one line a second;
# its stderr in $work/out, its pid in $work/pid.
beat() { # LOG PACKAGE FRAGMENT...
  PINMATRIX_PROGRESS_INTERVAL=1 bash -c '"$1" "${@:4}" 2> "$2" & echo $! > "$3"; sleep 3' \
    _ "$script" "$work/out" "$work/pid" "$1" "$cache" "${@:2}"
}

expect_line() { # TEXT WHAT
  grep -qF -- "$1" "$work/out" || fail "$2: no '$1' in: $(cat "$work/out")"
}

finished_build aaa 1325 linux-source-6.1 pinmatrix.config cma.config
touch -d '2 days ago' "$cache/kernels/build-aaa/build-seconds"
finished_build bbb 2400 linux-source-6.1 pinmatrix.config debug.config
finished_build ccc 900 linux-source-6.12 pinmatrix.config cma.config

log=$work/build.log
printf '%s\n' '  HOSTCC  scripts/basic/fixdep' 'mm/gup.c: In function x:' '  CC      mm/gup.o' \
  'warning: something' > "$log"
beat "$log" linux-source-6.1 pinmatrix.config cma.config
expect_line "of about 22m (last linux-source-6.1 build with pinmatrix.config + cma.config: 1325 s)" \
  "same package and fragments, though older than another"
expect_line "now: CC mm/gup.o" "make's step"
grep -qE '^kernel-build: 0m0[1-3]s ' "$work/out" || fail "time so far: $(cat "$work/out")"
[[ $(grep -c '^kernel-build: ' "$work/out") -ge 2 ]] || fail "one line a second: $(cat "$work/out")"
sleep 2
# Gone, or a zombie nobody reaped yet (a container's pid 1 may not).
[[ ! $(sed 's/.*) //' "/proc/$(<"$work/pid")/stat" 2>/dev/null) =~ ^[^ZX] ]] || fail "still running 2 s after its parent ended: $(ps -o pid,ppid,stat,args -p "$(<"$work/pid")")"

echo '  LD [M]  drivers/infiniband/sw/rxe/rdma_rxe.ko' >> "$log"
beat "$log" linux-source-6.1 pinmatrix.config kasan.config
expect_line "of about 40m (last linux-source-6.1 build, other fragments (pinmatrix.config debug.config): 2400 s)" \
  "same package, other fragments: the newest"
expect_line "now: LD [M] drivers/infiniband/sw/rxe/rdma_rxe.ko" "a module's link"

: > "$log"
beat "$log" linux-source-7.2 pinmatrix.config
expect_line "(no earlier linux-source-7.2 build in $cache to compare)" "no build of that package"
expect_line "now: unpacking and configuring" "nothing built yet"

out=$(PINMATRIX_PROGRESS_INTERVAL=0 "$script" "$log" "$cache" linux-source-6.1 2>&1) && fail "interval 0 accepted"
[[ $out == *"whole seconds"* ]] || fail "interval 0: $out"

[[ $failures -eq 0 ]] || { echo "$failures failure(s)" >&2; exit 1; }
echo "PASS: build-progress"
