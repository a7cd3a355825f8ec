#!/bin/bash
# One kernel build of `pinmatrix bisect` (vm/bisect.hpp): the user's git TREE
# at the commit `git bisect` checked out, built out of tree into BUILD, the
# one directory of every step, so that a step rebuilds what changed since
# the last one. Configured once (vm/kernel-configure.sh: tinyconfig and the
# FRAGMENTs) when BUILD has no .config, `make olddefconfig` at every step (a
# commit may add or drop options); ccache in front of the compiler where
# the host has it (a step back to an older commit finds its objects there).
# Nothing is written into TREE.
#
# Usage: bisect-build.sh TREE BUILD LOG FRAGMENT...
# Exit 0 built (BUILD has bzImage and Module.symvers); 1 not (the tail of
# LOG on stderr): `pinmatrix bisect` skips the commit.
set -euo pipefail

die() { echo "bisect-build: ERROR: $*" >&2; exit 1; }
say() { echo "bisect-build: $*" >&2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

[[ $# -ge 4 ]] || die "usage: $0 TREE BUILD LOG FRAGMENT..."
tree=$1 build=$2 log=$3
shift 3
# Settings from the caller's environment would redirect or break the build.
unset ARCH CROSS_COMPILE KBUILD_OUTPUT KCONFIG_CONFIG O
mkdir -p "$build"
cc=(CC=gcc)
command -v ccache > /dev/null && cc=(CC="ccache gcc")
kmake() { make -C "$tree" O="$build" "${cc[@]}" "$@" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "make $* failed (log: $log)"; }; }

if [[ ! -f $build/.config ]]; then
  "$here/kernel-configure.sh" "$tree" "$build" "$log" "$@" || die "cannot configure (log: $log)"
fi
kmake olddefconfig
read -r jobs why < <("$here/build-jobs.sh") || die "cannot size make's jobs (vm/build-jobs.sh)"
say "building $(git -C "$tree" log -1 --format='%h %s' 2>/dev/null) (make -j$jobs $why; log: $log)"
kmake -j"$jobs" bzImage modules
