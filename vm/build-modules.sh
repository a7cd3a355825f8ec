#!/bin/bash
# Builds the project's out-of-tree modules (every kmod/<name>/ with a Kbuild)
# against one kernel's build directory, into OUT_DIR/<name>/<name>.ko. The
# sources, kmod/conftest (the feature tests each Kbuild runs) with them, are
# copied (with their times, so make rebuilds only what changed): no build
# output ever lands in the source tree.
#
# Usage: build-modules.sh KDIR OUT_DIR
set -euo pipefail

die() { echo "build-modules: ERROR: $*" >&2; exit 1; }

[[ $# -eq 2 ]] || die "usage: $0 KDIR OUT_DIR"
kdir=$1
out=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kmod" && pwd)
[[ -f $kdir/Makefile ]] || die "$kdir is not a kernel build directory (no Makefile): install linux-headers-<release> or build the kernel"

mkdir -p "$out"
(cd "$src" && find . \( -name '*.c' -o -name '*.h' -o -name Kbuild -o -name '*.mk' -o -name '*.sh' \) -print0 |
  xargs -0 cp -p --parents -t "$out")

built=0
for kbuild in "$out"/*/Kbuild; do
  dir=${kbuild%/Kbuild}
  echo "build-modules: $(basename "$dir") against $kdir" >&2
  make -s -C "$kdir" M="$dir" modules >&2 || die "$(basename "$dir") did not build against $kdir"
  built=$((built + 1))
done
((built)) || die "no module sources under $src"
