#!/bin/bash
# Fetch a stock Debian kernel image package and unpack it into a cache dir
# usable by mkinitramfs.sh and the QEMU launcher. Prints the kernel dir.
#
# Usage: kernel-debian.sh ABI CACHE_DIR      (e.g. ABI=6.1.0-57-amd64)
#
# Layout of $CACHE_DIR/kernels/debian-$ABI/:
#   vmlinuz  release  config  modules/ (lib/modules/<release>, depmod'ed)  .complete
#   vmlinux  (only if the kernel supports PVH entry) uncompressed ELF image
set -euo pipefail

die() { echo "kernel-debian: ERROR: $*" >&2; exit 1; }

# Find the compressed payload inside a bzImage and unpack it (like the
# kernel's scripts/extract-vmlinux). Usage: extract_vmlinux BZIMAGE OUT
extract_vmlinux() {
  local magic cmd off
  for magic in '\xfd7zXZ\x00:xz -dc --single-stream' '\x1f\x8b\x08:gzip -dc' \
               '\x28\xb5\x2f\xfd:zstd -dcq'; do
    cmd=${magic#*:}
    command -v "${cmd%% *}" >/dev/null || continue
    while IFS=: read -r off _; do
      tail -c "+$((off + 1))" "$1" | $cmd > "$2" 2>/dev/null || true
      [[ $(head -c 4 "$2" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] && return 0
    done < <(LC_ALL=C grep -aboP "${magic%%:*}" "$1")
  done
  rm -f "$2"
  return 1
}

[[ $# -eq 2 ]] || die "usage: $0 ABI CACHE_DIR"
abi=$1
cache=$2
[[ $abi =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "bad ABI '$abi'"
[[ -n $cache ]] || die "empty CACHE_DIR"
mkdir -p "$cache/kernels"
cache=$(cd "$cache" && pwd)   # absolute: the guest sees this path via 9p
dest=$cache/kernels/debian-$abi

if [[ -e $dest/.complete ]]; then
  echo "$dest"
  exit 0
fi

tmp=$(mktemp -d "$cache/kernels/.tmp-debian-$abi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Bookworm ships both a signed and an -unsigned package; either has the same
# vmlinuz and modules for our purposes, so take whichever apt can find.
echo "kernel-debian: downloading linux-image-$abi" >&2
# apt drops privileges to _apt for downloads; let it write there.
chmod 755 "$tmp"
mkdir "$tmp/dl"
if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$tmp/dl"; fi
download() {
  local pkg
  for pkg in "linux-image-$abi" "linux-image-$abi-unsigned"; do
    if (cd "$tmp/dl" && apt-get download "$pkg" >&2); then got=$pkg; return 0; fi
  done
  return 1
}
got=
# Stale or missing package lists are the usual reason a download fails.
download || { apt-get update -qq >&2 && download; } || true
[[ -n $got ]] || die "apt-get download failed for linux-image-$abi{,-unsigned}"
debs=("$tmp"/dl/*.deb)
[[ ${#debs[@]} -eq 1 && -f ${debs[0]} ]] || die "expected one .deb, got: ${debs[*]}"

echo "kernel-debian: extracting $got" >&2
dpkg-deb -x "${debs[0]}" "$tmp/root"

vmlinuz=("$tmp"/root/boot/vmlinuz-*)
[[ ${#vmlinuz[@]} -eq 1 && -f ${vmlinuz[0]} ]] || die "no unique boot/vmlinuz-* in $got"
release=${vmlinuz[0]##*/vmlinuz-}
moddir=$tmp/root/lib/modules/$release
[[ -d $moddir ]] || die "no lib/modules/$release in $got"

# The package leaves modules.dep to a postinst hook; generate it ourselves.
depmod -b "$tmp/root" "$release"
[[ -s $moddir/modules.dep ]] || die "depmod produced no modules.dep"

out=$tmp/out
mkdir "$out"
cp "${vmlinuz[0]}" "$out/vmlinuz"
cp "$tmp/root/boot/config-$release" "$out/config"
printf '%s\n' "$release" > "$out/release"
mv "$moddir" "$out/modules"
# QEMU can boot an uncompressed ELF vmlinux through its PVH entry point,
# skipping BIOS real-mode setup and in-guest decompression (~3-5 s of a
# ~10 s TCG boot). Optional: launchers fall back to vmlinuz.
if grep -qx 'CONFIG_PVH=y' "$out/config"; then
  extract_vmlinux "$out/vmlinuz" "$out/vmlinux" ||
    echo "kernel-debian: WARNING: could not extract vmlinux; use vmlinuz" >&2
fi
touch "$out/.complete"

# Another run may have finished first; keep theirs (it is equivalent).
if ! mv -T "$out" "$dest" 2>/dev/null; then
  [[ -e $dest/.complete ]] || die "cannot rename into $dest"
fi
echo "kernel-debian: ready at $dest" >&2
echo "$dest"
