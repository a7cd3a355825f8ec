#!/bin/bash
# The heartbeat of a kernel build: vm/kernel-build.sh starts it beside make.
# Every INTERVAL seconds, one line on stderr: the time so far, what the last
# comparable build on this host took, and the step make is at (the last
# kbuild line of the build's log), e.g.
#   kernel-build: 6m30s of about 22m (last linux-source-6.1 build with
#   pinmatrix.config + cma.config: 1325 s); now: CC drivers/infiniband/core/umem.o
# It ends when its parent (the build) does. Not part of the build's cache
# key: it changes nothing the build makes.
#
# Usage: build-progress.sh LOG CACHE_DIR PACKAGE [FRAGMENT_NAME]...
#   PINMATRIX_PROGRESS_INTERVAL: seconds between lines (default 30)
set -uo pipefail

[[ $# -ge 3 ]] || { echo "usage: $0 LOG CACHE_DIR PACKAGE [FRAGMENT_NAME]..." >&2; exit 2; }
log=$1 cache=$2 package=$3
shift 3
fragments="$*"
interval=${PINMATRIX_PROGRESS_INTERVAL:-30}
[[ $interval =~ ^[1-9][0-9]*$ ]] || { echo "build-progress: PINMATRIX_PROGRESS_INTERVAL must be whole seconds" >&2; exit 2; }
parent=$PPID

# Alive and not a zombie (an unreaped parent still answers kill -0).
alive() { [[ $(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) =~ ^[^ZX] ]]; }

minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# A finished build's package (first word of its source file's first line)
# and its fragments' names, as "PACKAGE|NAME NAME".
build_profile() { # SOURCE_FILE
  local pkg names
  pkg=$(head -n 1 "$1" | cut -d' ' -f1)
  names=$(sed -n 's/^fragment \([^ ]*\) sha256 .*/\1/p' "$1" | paste -sd' ')
  echo "$pkg|$names"
}

# The newest finished build of the same package and fragments, else of the
# same package: "SECONDS|WHAT", or nothing.
expected() {
  local seconds file best= best_other= profile
  for file in $(ls -t "$cache"/kernels/build-*/build-seconds 2>/dev/null); do
    seconds=$(<"$file")
    [[ $seconds =~ ^[0-9]+$ ]] || continue
    profile=$(build_profile "${file%/build-seconds}/source")
    [[ ${profile%%|*} == "$package" ]] || continue
    if [[ ${profile#*|} == "$fragments" ]]; then
      best="$seconds|last $package build with ${fragments// / + }: $seconds s"
      break
    fi
    [[ -n $best_other ]] || best_other="$seconds|last $package build, other fragments (${profile#*|}): $seconds s"
  done
  echo "${best:-$best_other}"
}

# make's step: kbuild's quiet lines ("  CC      mm/gup.o", "  LD [M]  x.ko").
step() {
  local line
  line=$(tail -n 200 "$log" 2>/dev/null | grep -E '^  [A-Z][A-Z0-9_]*( \[M\])? +[^ ]' | tail -n 1)
  if [[ -n $line ]]; then
    echo "now: $(echo "$line" | tr -s ' ' | sed 's/^ //')"
  else
    echo "now: unpacking and configuring"
  fi
}

ahead=$(expected)
total=${ahead%%|*}
if [[ -n $ahead ]]; then
  about="of about $(minutes "$total" | sed 's/m[0-9]*s$/m/') (${ahead#*|})"
else
  about="(no earlier $package build in $cache to compare)"
fi

start=$SECONDS
tick=0
while alive "$parent"; do
  sleep 1
  tick=$((tick + 1))
  ((tick % interval == 0)) || continue
  alive "$parent" || break
  echo "kernel-build: $(minutes $((SECONDS - start))) $about; $(step)" >&2
done
