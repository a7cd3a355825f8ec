#!/bin/bash
# Lay out a kernel build tree the user built (`make bzImage modules` done in
# TREE, or in an O= output dir given as TREE) in the cache, like
# kernel-debian.sh's dirs, so mkinitramfs.sh, build-modules.sh and the
# launcher take it. Nothing is written into TREE: its modules are installed
# into the cache (modules_install with INSTALL_MOD_PATH) and the test modules
# build against TREE itself. Prints the kernel dir.
#
# Usage: kernel-tree.sh TREE CACHE_DIR
#
# $CACHE_DIR/kernels/tree-<key>/, key = sha256 of TREE's real path, the
# mtime and size of its vmlinux, bzImage and Module.symvers, its .config
# and this script, first 12 hex (a rebuilt tree is a new dir):
#   vmlinuz (arch/x86/boot/bzImage)  vmlinux (only with CONFIG_PVH=y)
#   release (make kernelrelease)  config  modules/ (lib/modules/<release>,
#   stripped, depmod'ed; without CONFIG_MODULES only modules.dep and
#   modules.builtin; modules/build -> TREE)  kdir (TREE)  source  .complete
set -euo pipefail

die() { echo "kernel-tree: ERROR: $*" >&2; exit 1; }
say() { echo "kernel-tree: $*" >&2; }

[[ $# -eq 2 ]] || die "usage: $0 TREE CACHE_DIR"
[[ -d $1 ]] || die "'$1' is not a directory"
tree=$(realpath "$1")
cache=$2
[[ -n $cache ]] || die "empty CACHE_DIR"
[[ -f $tree/.config && -f $tree/Makefile ]] || die "$tree is not a kernel build tree (no .config or Makefile)"
enabled() { grep -qx "$1=y" "$tree/.config"; }

vmlinux=$tree/vmlinux
bzimage=$tree/arch/x86/boot/bzImage
enabled CONFIG_PVH || vmlinux=   # QEMU boots an ELF vmlinux by its PVH entry only
[[ -f $bzimage || (-n $vmlinux && -f $vmlinux) ]] ||
  die "$tree has no arch/x86/boot/bzImage$([[ -z $vmlinux ]] || echo ' or vmlinux'): build it first (make bzImage modules)"
if enabled CONFIG_MODULES; then
  [[ -f $tree/Module.symvers ]] || die "$tree has no Module.symvers: its modules are not built (make modules)"
fi

mkdir -p "$cache/kernels"
cache=$(cd "$cache" && pwd)   # absolute: the guest sees this path via 9p

# A file's identity for the key: path, mtime (ns) and size, or its absence.
file_stamp() { if [[ -f $1 ]]; then stat -c '%n %.9Y %s' "$1"; else echo "$1 absent"; fi; }
key=$({
  echo "$tree"
  file_stamp "$tree/vmlinux"
  file_stamp "$bzimage"
  file_stamp "$tree/Module.symvers"
  sha256sum < "$tree/.config"
  sha256sum < "${BASH_SOURCE[0]}"
} | sha256sum | cut -c1-64)
dest=$cache/kernels/tree-${key:0:12}

# .complete names the layout, as kernel-debian.sh's does.
layout=2
if [[ -e $dest/.complete && $(<"$dest/.complete") == "layout $layout" ]]; then
  echo "$dest"
  exit 0
fi
rm -rf "$dest"

tmp=$(mktemp -d "$cache/kernels/.tmp-tree-${key:0:12}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
log=$tmp/make.log
# Settings from the caller's environment would redirect or break make.
unset ARCH CROSS_COMPILE KBUILD_OUTPUT KCONFIG_CONFIG O
tree_make() { make -C "$tree" "$@" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "make $* in $tree failed"; }; }

release=$(make -s -C "$tree" kernelrelease) || die "make kernelrelease failed in $tree"
[[ $release =~ ^[0-9][A-Za-z0-9._+~-]*$ ]] || die "make kernelrelease in $tree gave '$release'"
say "$tree is $release"

moddir=$tmp/root/lib/modules/$release
if enabled CONFIG_MODULES; then
  # Writes only under INSTALL_MOD_PATH (the tree's files are read).
  tree_make modules_install INSTALL_MOD_PATH="$tmp/root" INSTALL_MOD_STRIP=1
  [[ -d $moddir ]] || die "modules_install wrote no lib/modules/$release"
else
  mkdir -p "$moddir"
  [[ ! -f $tree/modules.builtin ]] || cp "$tree/modules.builtin" "$moddir/"
fi
depmod -b "$tmp/root" "$release" || die "depmod failed"
[[ -f $moddir/modules.dep ]] || die "depmod produced no modules.dep"

out=$tmp/out
mkdir "$out"
[[ ! -f $bzimage ]] || cp "$bzimage" "$out/vmlinuz"
[[ -z $vmlinux || ! -f $vmlinux ]] || cp "$vmlinux" "$out/vmlinux"
cp "$tree/.config" "$out/config"
printf '%s\n' "$release" > "$out/release"
printf '%s\n' "$tree" > "$out/kdir"
mv "$moddir" "$out/modules"
ln -sfn "$tree" "$out/modules/build"   # the test modules build against the tree itself
{
  echo "tree $tree"
  file_stamp "$tree/vmlinux"
  file_stamp "$bzimage"
  file_stamp "$tree/Module.symvers"
  echo "config sha256 $(sha256sum < "$tree/.config" | cut -c1-64)"
  echo "key $key"
} > "$out/source"
echo "layout $layout" > "$out/.complete"

# Another run may have finished first; keep theirs (it is equivalent).
if ! mv -T "$out" "$dest" 2>/dev/null; then
  [[ -e $dest/.complete ]] || die "cannot rename into $dest"
fi
say "ready at $dest"
echo "$dest"
