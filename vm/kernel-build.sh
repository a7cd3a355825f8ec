#!/bin/bash
# Build a guest kernel from Debian's linux-source-6.1: `make tinyconfig`, the
# Kconfig FRAGMENTs merged on top in order (a later one overrides an earlier
# one), optional patches. Prints the kernel dir, laid out like
# vm/kernel-debian.sh's, so mkinitramfs.sh and the launcher take either.
#
# Usage: kernel-build.sh [--patch FILE]... FRAGMENT... CACHE_DIR
#   e.g. kernel-build.sh vm/kconfig/pinmatrix.config /var/cache/pinmatrix
#        kernel-build.sh vm/kconfig/pinmatrix.config vm/kconfig/debug.config \
#                        /var/cache/pinmatrix
#
# $CACHE_DIR/kernels/build-<key>/, key = sha256 of the linux-source-6.1
# package version, each fragment and each patch (in order), first 12 hex
# (one fragment gives the same key as before fragments could be layered):
#   vmlinuz  vmlinux (ELF, QEMU boots it via PVH)  release  config
#   modules/ (lib/modules/<release>, depmod'ed)  build/ (the build tree:
#   make -C DIR/build M=... modules)  patches/ (as applied, in order)
#   source  build-seconds  build.log  .complete
# build/ is kept whole: its object files are only ~70 MB of ~1.7 GB.
set -euo pipefail

pkg=linux-source-6.1
tarball=/usr/src/$pkg.tar.xz

die() { echo "kernel-build: ERROR: $*" >&2; exit 1; }
say() { echo "kernel-build: $*" >&2; }

patches=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --patch) [[ $# -ge 2 ]] || die "--patch needs a FILE"; patches+=("$2"); shift 2 ;;
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
version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || true
[[ -n $version && -f $tarball ]] ||
  die "$tarball missing (apt-get install $pkg; tools/setup-host installs the build tools)"

fragment_shas=()
for f in "${fragments[@]}"; do fragment_shas+=("$(sha256sum < "$f" | cut -c1-64)"); done
key=$({
  echo "$pkg $version"
  printf '%s\n' "${fragment_shas[@]}"
  for p in ${patches[@]+"${patches[@]}"}; do sha256sum < "$p"; done
} | sha256sum | cut -c1-64)

mkdir -p "$cache/kernels"
cache=$(cd "$cache" && pwd)   # absolute: the guest sees this path via 9p
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

names=$(for f in "${fragments[@]}"; do printf ' + %s' "${f##*/}"; done)
say "configuring: tinyconfig$names"
kmake tinyconfig
(cd "$tree" && scripts/kconfig/merge_config.sh -m .config "${fragments[@]}") >> "$log" 2>&1 ||
  die "merge_config.sh failed (log: $log)"
kmake olddefconfig

# Kconfig drops an option silently when a dependency is missing: check that
# every CONFIG_X=V line of the fragments is in .config, and every
# "# CONFIG_X is not set" line is not set. A line a later fragment overrides
# (the same option, another value) is checked in its last form only.
declare -A final
for f in "${fragments[@]}"; do
  while IFS= read -r line; do
    if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= || $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set ]]; then
      final[${BASH_REMATCH[1]}]=$f
    fi
  done < "$f"
done
bad=0
for f in "${fragments[@]}"; do
  while IFS= read -r line; do
    line=${line%"${line##*[![:space:]]}"}
    if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
      [[ ${final[${BASH_REMATCH[1]}]} == "$f" ]] || continue
      grep -qxF -- "$line" "$tree/.config" && continue
    elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
      [[ ${final[${BASH_REMATCH[1]}]} == "$f" ]] || continue
      grep -q "^${BASH_REMATCH[1]}=" "$tree/.config" || continue
    else
      continue
    fi
    name=${line#\# }; name=${name%%[= ]*}
    got=$(grep -E "^(# )?$name[= ]" "$tree/.config" || echo "absent (dependency missing?)")
    echo "kernel-build: ${f##*/} asked '$line', got '$got'" >&2
    bad=1
  done < "$f"
done
[[ $bad -eq 0 ]] || die "the options above did not end up as the fragments ask"

say "building bzImage and modules (make -j$(nproc), log: $log)"
kmake -j"$(nproc)" bzImage modules
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
