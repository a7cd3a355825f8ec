#!/bin/bash
# Build a guest kernel from Debian's linux-source-SERIES (6.1 by default;
# 6.12 and 7.2 too): `make tinyconfig`, the Kconfig FRAGMENTs merged on top
# in order (a later one overrides an earlier one), optional patches. Prints
# the kernel dir, laid out like vm/kernel-debian.sh's, so mkinitramfs.sh and
# the launcher take either.
#
# Usage: kernel-build.sh [--series S] [--patch FILE]... FRAGMENT... CACHE_DIR
#   e.g. kernel-build.sh vm/kconfig/pinmatrix.config /var/cache/pinmatrix
#        kernel-build.sh --series 6.12 vm/kconfig/pinmatrix.config \
#                        vm/kconfig/debug.config /var/cache/pinmatrix
#
# The source: /usr/src/linux-source-S.tar.xz when the host has the package,
# else the package downloaded through vm/debian-apt.sh and extracted into
# $CACHE_DIR/sources/ (never installed).
# $CACHE_DIR/kernels/build-<key>/, key = sha256 of the source package and
# version, the compiler's version, this script and kernel-configure.sh,
# each fragment and each patch (in order), first 12 hex:
#   vmlinuz  vmlinux (ELF, QEMU boots it via PVH)  release  config
#   modules/ (lib/modules/<release>, depmod'ed)  build/ (the build tree:
#   make -C DIR/build M=... modules)  patches/ (as applied, in order)
#   source  build-seconds  build.log  .complete
# build/ is kept whole: its object files are only ~70 MB of ~1.7 GB.
set -euo pipefail

die() { echo "kernel-build: ERROR: $*" >&2; exit 1; }
say() { echo "kernel-build: $*" >&2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

series=6.1
patches=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --patch) [[ $# -ge 2 ]] || die "--patch needs a FILE"; patches+=("$2"); shift 2 ;;
    --series) [[ $# -ge 2 && $2 =~ ^[0-9]+\.[0-9]+$ ]] || die "--series needs a kernel series (6.12)"; series=$2; shift 2 ;;
    -*) die "unknown option '$1' (usage: $0 [--patch FILE]... FRAGMENT... CACHE_DIR)" ;;
    *) break ;;
  esac
done
[[ $# -ge 2 ]] || die "usage: $0 [--patch FILE]... FRAGMENT... CACHE_DIR"
fragments=("${@:1:$#-1}")
cache=${!#}
for i in "${!fragments[@]}"; do
  f=${fragments[$i]}
  [[ -f $f && -r $f ]] || die "fragment '$f' not found"
  grep -qE '^CONFIG_[A-Za-z0-9_]+=' "$f" || die "fragment '$f' has no CONFIG_X=... line"
  fragments[$i]=$(realpath "$f")
done
for p in ${patches[@]+"${patches[@]}"}; do
  [[ -f $p && -r $p ]] || die "patch '$p' not found"
done
[[ -n $cache ]] || die "empty CACHE_DIR"
mkdir -p "$cache/kernels"
cache=$(cd "$cache" && pwd)   # absolute: the guest sees this path via 9p
pkg=linux-source-$series

# The source tarball and its package version: the host's package if it has
# it, else the package downloaded and extracted into the cache.
find_source() {
  local dl deb
  tarball=/usr/src/$pkg.tar.xz
  version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || true
  [[ -n $version && -f $tarball ]] && return 0
  version=$("$here/debian-apt.sh" "$cache" apt-cache policy "$pkg" | sed -n 's/^ *Candidate: \([0-9].*\)$/\1/p')
  [[ -n $version ]] || die "no $pkg in bookworm, trixie or unstable"
  dl=$cache/sources/$pkg-$version
  tarball=$dl/root/usr/src/$pkg.tar.xz
  [[ -f $tarball ]] && return 0
  mkdir -p "$dl/deb"
  if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$dl/deb"; fi
  say "downloading $pkg $version"
  (cd "$dl/deb" && "$here/debian-apt.sh" "$cache" apt-get download "$pkg=$version" >&2) ||
    die "cannot download $pkg $version"
  for deb in "$dl"/deb/*.deb; do dpkg-deb -x "$deb" "$dl/root.tmp"; done
  mv -T "$dl/root.tmp" "$dl/root"
  rm -rf "$dl/deb"
  [[ -f $tarball ]] || die "$pkg $version has no usr/src/$pkg.tar.xz"
}
find_source
compiler=$(${CC:-gcc} --version | head -n 1)

fragment_shas=()
for f in "${fragments[@]}"; do fragment_shas+=("$(sha256sum < "$f" | cut -c1-64)"); done
key=$({
  echo "$pkg $version"
  echo "$compiler"
  sha256sum < "${BASH_SOURCE[0]}"
  sha256sum < "$here/kernel-configure.sh"
  printf '%s\n' "${fragment_shas[@]}"
  for p in ${patches[@]+"${patches[@]}"}; do sha256sum < "$p"; done
} | sha256sum | cut -c1-64)

dest=$cache/kernels/build-${key:0:12}
if [[ -e $dest/.complete ]]; then
  echo "$dest"
  exit 0
fi

start=$SECONDS
tmp=$(mktemp -d "$cache/kernels/.tmp-build-${key:0:12}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
out=$tmp/out
tree=$out/build
# Next to (not in) $tmp: a failed build's log outlives the cleanup.
log=$tmp.log
mkdir -p "$tree" "$out/patches"
: > "$log"
# A line every 30 s while it builds: time so far, the last build's, make's step.
"$here/build-progress.sh" "$log" "$cache" "$pkg" "${fragments[@]##*/}" > /dev/null &
progress=$!
# bash runs the EXIT trap on a signal too (TERM, HUP); the heartbeat may
# be gone already, from the same signal, and under set -e a failed kill
# would end the trap before the rm.
trap 'kill "$progress" 2>/dev/null || true; rm -rf "$tmp"' EXIT
# Settings from the caller's environment would redirect or break the build.
unset ARCH CROSS_COMPILE KBUILD_OUTPUT KCONFIG_CONFIG O
kmake() { make -C "$tree" "$@" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "make $* failed (log: $log)"; }; }

say "unpacking $pkg $version into $out"
tar -xJf "$tarball" -C "$tree" --strip-components=1 || die "cannot unpack $tarball"

n=0
for p in ${patches[@]+"${patches[@]}"}; do
  n=$((n + 1))
  copy=$out/patches/$(printf '%04d' "$n")-${p##*/}
  cp "$p" "$copy"
  say "applying $p"
  patch -d "$tree" -p1 --forward --batch --no-backup-if-mismatch < "$copy" >> "$log" 2>&1 ||
    { tail -n 20 "$log" >&2; die "patch '$p' does not apply to $pkg $version (log: $log)"; }
done

"$here/kernel-configure.sh" "$tree" "$tree" "$log" "${fragments[@]}" || die "cannot configure (log: $log)"

# make's jobs: one per CPU, at most one per GiB available (vm/build-jobs.sh).
read -r jobs why < <("$here/build-jobs.sh") || die "cannot size make's jobs (vm/build-jobs.sh)"
say "building bzImage and modules (make -j$jobs $why; log: $log)"
kmake -j"$jobs" bzImage modules
release=$(make -s -C "$tree" kernelrelease)
kmake modules_install INSTALL_MOD_PATH="$tmp/root"
depmod -b "$tmp/root" "$release" || die "depmod failed"
[[ -s $tmp/root/lib/modules/$release/modules.dep ]] || die "depmod produced no modules.dep"

say "laying out $release"
mv "$tmp/root/lib/modules/$release" "$out/modules"
# Point build/source at the final tree (the guest sees host paths via 9p).
ln -sfn "$dest/build" "$out/modules/build"
ln -sfn "$dest/build" "$out/modules/source"
cp "$tree/arch/x86/boot/bzImage" "$out/vmlinuz"
cp "$tree/vmlinux" "$out/vmlinux"
cp "$tree/.config" "$out/config"
echo "$release" > "$out/release"
{
  echo "$pkg $version"
  echo "compiler $compiler"
  for i in "${!fragments[@]}"; do
    echo "fragment ${fragments[$i]##*/} sha256 ${fragment_shas[$i]}"
  done
  for p in "$out"/patches/*; do
    [[ -f $p ]] && echo "patch ${p##*/} sha256 $(sha256sum < "$p" | cut -c1-64)"
  done
  echo "key $key"
} > "$out/source"
echo $((SECONDS - start)) > "$out/build-seconds"
mv "$log" "$out/build.log"
touch "$out/.complete"

# Another run may have finished first; keep theirs (it is equivalent).
if ! mv -T "$out" "$dest" 2>/dev/null; then
  [[ -e $dest/.complete ]] || die "cannot rename into $dest"
fi
say "ready at $dest ($(<"$dest/build-seconds") s)"
echo "$dest"
