#!/bin/bash
# How many jobs `make -j` may run for a kernel build on this host: one per
# CPU the build may use, and no more than one per GiB of memory available
# (a compile of a large file with KASAN's inline checks takes several
# hundred MB; more jobs than memory holds swap, or the OOM killer ends one).
# The CPUs: nproc (this process's affinity), less where the cgroup's CPU
# quota (cgroup v2 cpu.max, "QUOTA PERIOD") allows fewer. Prints one line,
# the number and why, e.g.
#   2 (2 CPUs, 22 GiB available: one job per CPU, at most one per GiB)
# vm/kernel-build.sh runs it; it is not part of the build's cache key: the
# number of jobs changes how fast a kernel builds, not what it is.
#
# Usage: build-jobs.sh [MEMINFO [CPU_MAX]]
#   MEMINFO: /proc/meminfo by default; CPU_MAX: this process's cgroup's
#   cpu.max by default (none on cgroup v1, or outside a cgroup)
set -euo pipefail

die() { echo "build-jobs: ERROR: $*" >&2; exit 2; }

[[ $# -le 2 ]] || die "usage: $0 [MEMINFO [CPU_MAX]]"
meminfo=${1:-/proc/meminfo}
cpu_max=${2:-/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null)/cpu.max}

cpus=$(nproc)
why="$cpus CPUs"
# "max 100000" is no quota; "150000 100000" is 1.5 CPUs, rounded up.
if [[ -r $cpu_max ]] && read -r quota period < "$cpu_max" && [[ $quota =~ ^[0-9]+$ && $period =~ ^[1-9][0-9]*$ ]]; then
  by_quota=$(( (quota + period - 1) / period ))
  if (( by_quota < cpus )); then
    cpus=$by_quota
    why="$cpus CPUs (cgroup quota $quota/$period)"
  fi
fi

avail_kb=$(awk '/^MemAvailable:/ { print $2 }' "$meminfo" 2>/dev/null) || true
[[ $avail_kb =~ ^[0-9]+$ ]] || die "no MemAvailable in $meminfo"
gib=$(( avail_kb / 1048576 ))
jobs=$cpus
(( gib < jobs )) && jobs=$gib
(( jobs >= 1 )) || jobs=1
echo "$jobs ($why, $gib GiB available: one job per CPU, at most one per GiB)"
