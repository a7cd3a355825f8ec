#!/bin/bash
# Builds the project's out-of-tree modules (every kmod/<name>/ with a Kbuild)
# against one kernel's build directory, into OUT_DIR/<name>/<name>.ko. The
# sources, kmod/conftest (the feature tests each Kbuild runs) with them, are
# copied (with their times, so make rebuilds only what changed): no build
# output ever lands in the source tree.
#
# Usage: build-modules.sh [--root ROOT] KDIR OUT_DIR
#   --root ROOT: build inside ROOT (a root of the kernel's own Debian suite,
#   made by kernel-debian.sh when the host's compiler or C library cannot
#   build against these headers); KDIR is then a path inside ROOT.
set -euo pipefail

die() { echo "build-modules: ERROR: $*" >&2; exit 1; }

root=
if [[ ${1:-} == --root ]]; then
  [[ $# -ge 2 ]] || die "--root needs a directory"
  root=$2
  shift 2
  [[ -x $root/usr/bin/make ]] || die "$root is not a build root (no usr/bin/make)"
fi
[[ $# -eq 2 ]] || die "usage: $0 [--root ROOT] KDIR OUT_DIR"
kdir=$1
out=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../kmod" && pwd)
[[ -f $root$kdir/Makefile ]] || die "$root$kdir is not a kernel build directory (no Makefile): install linux-headers-<release> or build the kernel"

# Where make runs: OUT_DIR itself, or a scratch dir inside the root whose
# modules are copied out afterwards.
work=$out
if [[ -n $root ]]; then
  mkdir -p "$root/tmp"
  work=$(mktemp -d "$root/tmp/pinmatrix-modules.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$out"
(cd "$src" && find . \( -name '*.c' -o -name '*.h' -o -name Kbuild -o -name '*.mk' -o -name '*.sh' \) -print0 |
  xargs -0 cp -p --parents -t "$work")

# make in the root: /proc mounted (objtool reads it) in a mount namespace
# of its own, so nothing outlives the build.
kmake() { # DIR
  if [[ -z $root ]]; then
    make -s -C "$kdir" M="$1" modules
  else
    unshare --mount --propagation private sh -c \
      'mount -t proc proc "$1/proc" && exec chroot "$1" make -s -C "$2" M="$3" modules' \
      sh "$root" "$kdir" "${1#"$root"}"
  fi
}

# The options a module's Kbuild names in "# needs CONFIG_X: why" lines that
# the kernel's .config lacks, as "CONFIG_X (why)" joined by "; ".
lacking() { # KBUILD
  local line missing=''
  while IFS= read -r line; do
    [[ $line =~ ^#\ needs\ (CONFIG_[A-Z0-9_]+):\ (.*)$ ]] || continue
    grep -Eq "^${BASH_REMATCH[1]}=(y|m)$" "$root$kdir/.config" ||
      missing+="${missing:+; }${BASH_REMATCH[1]} (${BASH_REMATCH[2]})"
  done < "$1"
  echo "$missing"
}
[[ -f $root$kdir/.config ]] || die "$root$kdir/.config missing: the modules' kernel needs cannot be read"

built=0
for kbuild in "$work"/*/Kbuild; do
  dir=${kbuild%/Kbuild}
  name=$(basename "$dir")
  # A module this kernel cannot have: left out, its reason in OUT/NAME/left-out.
  why=$(lacking "$kbuild")
  if [[ -n $why ]]; then
    echo "build-modules: $name left out: the kernel lacks $why" >&2
    mkdir -p "$out/$name" && echo "the kernel lacks $why" > "$out/$name/left-out"
    continue
  fi
  echo "build-modules: $name against $root$kdir" >&2
  kmake "$dir" >&2 || die "$name did not build against $root$kdir"
  [[ $work == "$out" ]] || { mkdir -p "$out/$name" && cp -p "$dir/$name.ko" "$out/$name/"; }
  built=$((built + 1))
done
((built)) || die "no module built from $src"
[[ -f $out/pinmatrix/pinmatrix.ko ]] || die "the test module (pinmatrix) was not built"
