#!/bin/bash
# Fetch a stock Debian kernel from any suite the private apt configuration
# knows (vm/debian-apt.sh: bookworm and its security suite, trixie,
# unstable) and unpack it, with its headers, into a cache dir usable by
# mkinitramfs.sh, build-modules.sh and the QEMU launcher. Nothing is
# installed on the host. Prints the kernel dir.
#
# Usage: kernel-debian.sh ABI|SERIES CACHE_DIR
#        kernel-debian.sh --resolve ABI|SERIES CACHE_DIR
#        kernel-debian.sh --debs DEB_DIR CACHE_DIR
#   ABI: e.g. 6.12.117+deb12-amd64 (a flavour's: 6.12.117+deb12-rt-amd64,
#   6.12.117+deb12-cloud-amd64); SERIES: e.g. 7.2, the newest ABI of it,
#   or 6.12+deb12, the newest of bookworm's builds of 6.12; a flavour's
#   with -rt or -cloud after it (7.2-rt, 6.12+deb12-cloud)
#   --resolve: no download; prints the ABI and the packages it would fetch,
#   a line each: "abi ABI", "suite SUITE", "image PACKAGE", "headers PACKAGE"
#   --debs: no apt; a vendor's kernel as .deb files in DEB_DIR, classified
#   by their Package field: the image (linux-image-, or linux-binary-,
#   linux-modules-, linux-base-) and its headers (linux-headers-, -common,
#   linux-kbuild-). Without headers the kernel is laid out all the same,
#   with no kdir: it boots, but no module builds against it.
#
# Layout of $CACHE_DIR/kernels/debian-$ABI/ (--debs: debs-<key>/, key = the
# sha256 of the packages' sha256s, first 12 hex; no suite file):
#   vmlinuz  release  config  modules/ (lib/modules/<release>, depmod'ed;
#   modules/build -> the headers)  headers/ (the headers packages, extracted)
#   kdir (the headers' build directory)  suite  packages (name=version each)
#   buildroot (only when the host cannot build modules against these
#   headers: a root of the kernel's own suite made by mmdebstrap, holding
#   the headers at the same kdir path)  .complete
#   vmlinux  (only if the kernel supports PVH entry) uncompressed ELF image
#
# Packaging handled: one linux-image-<ABI> .deb with /boot/vmlinuz-* and
# /lib/modules (bookworm, trixie), or a metapackage depending on
# linux-binary-, linux-modules- and linux-base-<ABI> under /usr/lib/modules
# (unstable, 7.x); modules may be .ko, .ko.xz or .ko.zst.
set -euo pipefail

die() { echo "kernel-debian: ERROR: $*" >&2; exit 1; }
say() { echo "kernel-debian: $*" >&2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Find the compressed payload inside a bzImage and unpack it (like the
# kernel's scripts/extract-vmlinux). Usage: extract_vmlinux BZIMAGE OUT
extract_vmlinux() {
  local magic cmd off
  for magic in '\xfd7zXZ\x00:xz -dc --single-stream' '\x1f\x8b\x08:gzip -dc' \
               '\x28\xb5\x2f\xfd:zstd -dcq'; do
    cmd=${magic#*:}
    command -v "${cmd%% *}" >/dev/null || continue
    # Offsets only: `read` rejects the raw magic bytes in a UTF-8 locale.
    while read -r off; do
      tail -c "+$((off + 1))" "$1" | $cmd > "$2" 2>/dev/null || true
      [[ $(head -c 4 "$2" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] && return 0
    done < <(LC_ALL=C grep -aboP "${magic%%:*}" "$1" | cut -d: -f1)
  done
  rm -f "$2"
  return 1
}

debs= resolve=0
if [[ ${1:-} == --resolve ]]; then
  resolve=1
  shift
fi
if [[ ${1:-} == --debs ]]; then
  ((resolve == 0)) || die "--resolve names an ABI or a series, not --debs"
  [[ $# -eq 3 ]] || die "usage: $0 --debs DEB_DIR CACHE_DIR"
  [[ -d $2 ]] || die "--debs: '$2' is not a directory"
  debs=$(realpath "$2")
  shift 2
  abi=
else
  [[ $# -eq 2 ]] || die "usage: $0 [--resolve] ABI|SERIES CACHE_DIR | --debs DEB_DIR CACHE_DIR"
  abi=$1
  shift
  [[ $abi =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || die "bad ABI '$abi'"
fi
cache=$1
[[ -n $cache ]] || die "empty CACHE_DIR"
mkdir -p "$cache/kernels"
cache=$(cd "$cache" && pwd)   # absolute: the guest sees this path via 9p
apt() { "$here/debian-apt.sh" "$cache" "$@"; }

# --debs: DEB_DIR's packages of the image and of the headers, by their
# Package field (not their file names); any other package is left out.
image_debs=()
header_debs=()
classify_debs() {
  local deb pkg
  for deb in "$debs"/*.deb; do
    [[ -f $deb ]] || continue
    pkg=$(dpkg-deb -f "$deb" Package) || die "$deb is not a .deb package"
    case $pkg in
      *-dbg | *-dbgsym) say "leaving out $pkg (debug symbols)" ;;
      linux-image-* | linux-binary-* | linux-modules-* | linux-base-?*) image_debs+=("$deb") ;;
      linux-headers-* | linux-kbuild-*) header_debs+=("$deb") ;;
      *) say "leaving out $pkg (neither the kernel image nor its headers)" ;;
    esac
  done
  ((${#image_debs[@]})) || die "no linux-image- (or linux-binary-/linux-modules-) .deb in $debs"
}

# The newest amd64 ABI of series MAJOR.MINOR of a flavour ("", -rt,
# -cloud), of one release's builds (+debN) or any's ("").
newest_of_series() { # MAJOR.MINOR RELEASE FLAVOUR
  local name
  apt apt-cache pkgnames "linux-image-$1." | while read -r name; do
    [[ $name =~ ^linux-image-([0-9.]+(\+deb[0-9]+|-[0-9]+)(-rt|-cloud)?-amd64)$ ]] || continue
    [[ ${BASH_REMATCH[3]} == "$3" && (-z $2 || ${BASH_REMATCH[2]} == "$2") ]] || continue
    echo "${BASH_REMATCH[1]}"
  done | sort -V | tail -n 1
}

# A series (6.12, 7.2) names the newest amd64 kernel of that series any
# suite has: a matrix keeps working when Debian moves to the next ABI.
# SERIES+debN keeps to one release's build of it (6.12+deb12: bookworm's);
# -rt or -cloud after it, to a flavour's (6.12+deb12-rt).
if [[ -n $debs ]]; then
  classify_debs
  key=$(sha256sum "${image_debs[@]}" ${header_debs[@]+"${header_debs[@]}"} | cut -c1-64 | sort | sha256sum | cut -c1-64)
  dest=$cache/kernels/debs-${key:0:12}
elif [[ $abi =~ ^([0-9]+\.[0-9]+)(\+deb[0-9]+)?(-rt|-cloud)?$ ]]; then
  series=$abi
  abi=$(newest_of_series "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}")
  [[ -n $abi ]] || die "no linux-image-$series kernel (amd64) in bookworm, trixie or unstable"
  say "$series is $abi"
fi
[[ -n $debs ]] || dest=$cache/kernels/debian-$abi

# .complete names the layout: a dir of an older layout is made again.
layout=2
if ((resolve == 0)) && [[ -e $dest/.complete ]]; then
  if [[ $(<"$dest/.complete") == "layout $layout" ]]; then
    echo "$dest"
    exit 0
  fi
  say "$dest has an older layout: extracting again"
  rm -rf "$dest"
fi

# The package that has a candidate: signed or -unsigned (same image).
image_package() {
  local pkg
  for pkg in "linux-image-$abi" "linux-image-$abi-unsigned"; do
    [[ $(apt apt-cache policy "$pkg" 2>/dev/null) == *"Candidate: "[0-9]* ]] && { echo "$pkg"; return 0; }
  done
  return 1
}

# The suite a package's candidate comes from: "bookworm-security/main" -> bookworm.
package_suite() {
  apt apt-cache policy "$1" | awk '/^ +(\*\*\* )?[0-9][^ ]* [0-9]+$/ { getline; print $3; exit }' |
    sed 's,/.*,,; s,-security$,,; s,-updates$,,'
}

# PKG and the dependencies of it that belong to this kernel build: their
# names carry the version (linux-modules-7.2.13+deb14-amd64), or they are
# headers or kbuild tools, as the package names them in its Depends (a
# flavour's common headers: linux-headers-6.12.118+deb12-common-rt;
# bookworm's 6.1 names its kbuild tools by series: linux-kbuild-6.1);
# never another linux-image.
kernel_packages() {
  local stem=${abi%-amd64} dep
  echo "$1"
  apt apt-cache depends "$1" | sed -n 's/^ *|\?Depends: \([^<>]*\)$/\1/p' | while read -r dep; do
    [[ ($dep == *"$stem"* || $dep == linux-kbuild-* || $dep == linux-headers-*) && $dep != linux-image-* ]] ||
      continue
    echo "$dep"
  done
}

# Downloads PACKAGE... into DIR (apt runs downloads as _apt).
download() {
  local dir=$1
  shift
  mkdir -p "$dir"
  if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then chown _apt "$dir"; fi
  (cd "$dir" && apt apt-get download "$@" >&2) || die "apt-get download failed for: $*"
}

extract_all() { # ROOT DEB...
  local root=$1 deb
  shift
  for deb in "$@"; do dpkg-deb -x "$deb" "$root" || die "cannot extract $deb"; done
}

# The first existing path of the given candidates.
first_of() { local p; for p in "$@"; do [[ -e $p ]] && { echo "$p"; return 0; }; done; return 1; }

# The compiler KDIR's headers name (gcc-12, gcc-16), or "" for plain gcc.
headers_compiler() { # KDIR
  local cc
  cc=$(sed -n 's/^CC = .*)\(gcc[-0-9.]*\)$/\1/p' "$1/.kernelvariables" 2>/dev/null)
  [[ -n $cc ]] || cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ ]*\) .*/\1/p' "$1/.config")
  echo "$cc"
}

# Whether the host can build modules against KDIR: its compiler is here
# and its prebuilt kbuild tools run on this C library. Unstable's headers
# name gcc-16 and need glibc >= 2.38: those build in a root of their own.
host_can_build() {
  local kdir=$1 cc
  cc=$(headers_compiler "$kdir")
  command -v "${cc:-gcc}" >/dev/null || { say "the host has no ${cc:-gcc} for $abi's headers"; return 1; }
  [[ -x $kdir/scripts/basic/fixdep ]] || die "$abi's headers have no scripts/basic/fixdep (a linux-kbuild package missing?)"
  [[ $("$kdir/scripts/basic/fixdep" 2>&1) == Usage* ]] ||
    { say "$abi's kbuild tools do not run on the host's C library"; return 1; }
}

# --debs: .debs name no suite; take the Debian suite whose compiler the
# headers name (a guess, for the build root only).
suite_of_headers() { # KDIR
  case $(headers_compiler "$1") in
    gcc-12) echo bookworm ;;
    gcc-14) echo trixie ;;
    *) echo sid ;;
  esac
}

# A root of SUITE with the compiler the headers name and the headers
# themselves installed (inside the root, not on the host): SUITE's
# linux-headers-$abi, or (--debs) the headers .debs themselves.
make_buildroot() { # SUITE ROOT_DIR HEADERS_DIR
  local suite=$1 root=$2 kdir=$3 cc deb
  local -a sources headers=(--include="linux-headers-$abi")
  command -v mmdebstrap >/dev/null || die "mmdebstrap is needed to build modules for $abi (apt-get install mmdebstrap)"
  mapfile -t sources < <("$here/debian-apt.sh" "$cache" --sources "$suite")
  if [[ -n $debs ]]; then
    headers=(--hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount)
    for deb in "${header_debs[@]}"; do headers+=(--include="$deb"); done
  fi
  cc=$(headers_compiler "$kdir")
  say "making a $suite build root for $abi (mmdebstrap, ${cc:-gcc})"
  mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
    --include="make,${cc:-gcc},libc6-dev" "${headers[@]}" "$suite" "$root" "${sources[@]}" >&2 ||
    die "mmdebstrap of $suite failed"
  [[ -f $root/usr/src/linux-headers-$abi/Makefile ]] || die "the $suite root has no linux-headers-$abi"
}

tmp=$(mktemp -d "$cache/kernels/.tmp-${dest##*/}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

# --resolve: what would be fetched, and nothing fetched.
if ((resolve)); then
  image=$(image_package) || die "no linux-image-$abi in bookworm, trixie or unstable"
  echo "abi $abi"
  echo "suite $(package_suite "$image")"
  kernel_packages "$image" | sed 's/^/image /'
  kernel_packages "linux-headers-$abi" | sed 's/^/headers /'
  exit 0
fi

# The image's .debs: DEB_DIR's, or downloaded from the suite that has it.
suite=
if [[ -z $debs ]]; then
  image=$(image_package) || die "no linux-image-$abi in bookworm, trixie or unstable (vm/debian-apt.sh $cache apt-cache search linux-image)"
  suite=$(package_suite "$image")
  say "$image from $suite"
  mapfile -t image_pkgs < <(kernel_packages "$image")
  download "$tmp/dl-image" "${image_pkgs[@]}"
  image_debs=("$tmp"/dl-image/*.deb)
fi
extract_all "$tmp/root" "${image_debs[@]}"

vmlinuz=$(first_of "$tmp"/root/boot/vmlinuz-* "$tmp"/root/usr/lib/modules/*/vmlinuz) ||
  die "no vmlinuz in ${image_debs[*]##*/}"
moddir=$(first_of "$tmp"/root/lib/modules/* "$tmp"/root/usr/lib/modules/*) || die "no modules in ${image_debs[*]##*/}"
release=${moddir##*/}
kernels=$({ find "$tmp"/root/{,usr/}lib/modules -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null || true; } | sort -u)
[[ $kernels == "$release" ]] || die "more than one kernel in ${image_debs[*]##*/}:" $kernels
config=$(first_of "$tmp/root/boot/config-$release" "$moddir/config") || die "no config in ${image_debs[*]##*/}"
[[ -n $abi ]] || abi=$release   # --debs: Debian's headers dir is named by the release

# Headers: the headers package and its -common, kbuild and base packages.
if [[ -z $debs ]]; then
  mapfile -t header_pkgs < <(kernel_packages "linux-headers-$abi")
  download "$tmp/dl-headers" "${header_pkgs[@]}"
  header_debs=("$tmp"/dl-headers/*.deb)
fi
out=$tmp/out
mkdir "$out"
kdir=
if ((${#header_debs[@]})); then
  extract_all "$out/headers" "${header_debs[@]}"
  kdir=$dest/headers/usr/src/linux-headers-$abi
  [[ -f $out/headers/usr/src/linux-headers-$abi/Makefile ]] ||
    die "no usr/src/linux-headers-$abi in ${header_debs[*]##*/}"
  # The flavour's Makefile includes its -common tree by absolute path: point
  # it at the extracted one (its other links are relative).
  sed -i "s|^include /usr/src/|include $dest/headers/usr/src/|" "$out/headers/usr/src/linux-headers-$abi/Makefile"
else
  say "WARNING: no headers .debs in $debs (linux-headers-$abi): the kernel boots, but no module builds against it"
fi

# The package leaves modules.dep to a postinst hook; generate it ourselves.
depmod -b "$tmp/root" "$release" 2>/dev/null || depmod -b "$tmp/root/usr" "$release"
[[ -s $moddir/modules.dep ]] || die "depmod produced no modules.dep"

cp "$vmlinuz" "$out/vmlinuz"
cp "$config" "$out/config"
printf '%s\n' "$release" > "$out/release"
[[ -z $suite ]] || printf '%s\n' "$suite" > "$out/suite"
[[ -z $debs ]] || printf '%s\n' "$debs" > "$out/debs"
for d in "${image_debs[@]}" ${header_debs[@]+"${header_debs[@]}"}; do
  dpkg-deb --show --showformat='${Package}=${Version}\n' "$d"
done > "$out/packages"
mv "$moddir" "$out/modules"
rm -f "$out/modules/build" "$out/modules/source"
if [[ -n $kdir ]]; then
  printf '%s\n' "$kdir" > "$out/kdir"
  ln -s "$kdir" "$out/modules/build"   # the guest sees the cache at the same path
  if ! host_can_build "$out/headers/usr/src/linux-headers-$abi"; then
    [[ -n $suite ]] || suite=$(suite_of_headers "$out/headers/usr/src/linux-headers-$abi")
    make_buildroot "$suite" "$out/buildroot" "$out/headers/usr/src/linux-headers-$abi"
  fi
fi
# QEMU can boot an uncompressed ELF vmlinux through its PVH entry point,
# skipping BIOS real-mode setup and in-guest decompression (~3-5 s of a
# ~10 s TCG boot). Optional: launchers fall back to vmlinuz.
if grep -qx 'CONFIG_PVH=y' "$out/config"; then
  extract_vmlinux "$out/vmlinuz" "$out/vmlinux" ||
    say "WARNING: could not extract vmlinux; use vmlinuz"
fi
echo "layout $layout" > "$out/.complete"

# Another run may have finished first; keep theirs (it is equivalent).
if ! mv -T "$out" "$dest" 2>/dev/null; then
  [[ -e $dest/.complete ]] || die "cannot rename into $dest"
fi
say "ready at $dest"
echo "$dest"
