#!/bin/bash
# Build the tiny initramfs that mounts the host root over 9p (or virtiofs)
# and hands off to vm/guest/stage2. Contents: static busybox, the virtio
# and share modules (plus their dependencies, from modules.dep) and
# vm/guest/init as /init.
#
# Usage: mkinitramfs.sh KERNEL_DIR OUT_FILE [9p|virtiofs]
#   KERNEL_DIR: output of kernel-debian.sh (needs release, modules/)
#   9p (the default) or virtiofs: how the guest reaches the host's files
set -euo pipefail

die() { echo "mkinitramfs: ERROR: $*" >&2; exit 1; }

[[ $# -eq 2 || $# -eq 3 ]] || die "usage: $0 KERNEL_DIR OUT_FILE [9p|virtiofs]"
kdir=$1
out=$2
share=${3:-9p}
# Modules init must load; dependencies are added automatically; those the
# kernel has built in are skipped.
case $share in
  9p) WANT=(virtio_pci 9pnet_virtio 9p) ;;
  virtiofs) WANT=(virtio_pci virtiofs) ;;
  *) die "the shares' transport is 9p or virtiofs, not '$share'" ;;
esac
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ -r $kdir/release ]] || die "$kdir/release missing (not a kernel dir?)"
release=$(<"$kdir/release")
mods=$kdir/modules
[[ -f $mods/modules.dep ]] || die "$mods/modules.dep missing"
[[ -x /bin/busybox ]] || die "/bin/busybox missing (apt-get install busybox-static)"
/bin/busybox --list | grep -x switch_root >/dev/null || die "/bin/busybox lacks switch_root"
[[ -f $here/guest/init ]] || die "$here/guest/init missing"

# Module names treat '-' and '_' alike; key everything by the '_' spelling.
declare -A dep_line=() builtin=() seen=()
while IFS= read -r line; do
  path=${line%%:*}
  name=${path##*/}; name=${name%%.ko*}
  dep_line[${name//-/_}]=$line
done < "$mods/modules.dep"
if [[ -f $mods/modules.builtin ]]; then
  while IFS= read -r path; do
    name=${path##*/}; name=${name%%.ko*}
    builtin[${name//-/_}]=1
  done < "$mods/modules.builtin"
fi

# Depth-first: every module's deps are appended before the module itself.
order=()
add_module() {
  local name=${1//-/_} line dep
  [[ -z ${seen[$name]:-} ]] || return 0
  seen[$name]=1
  [[ -z ${builtin[$name]:-} ]] || return 0
  line=${dep_line[$name]:-}
  [[ -n $line ]] || die "module $name neither in modules.dep nor built in"
  for dep in ${line#*:}; do
    dep=${dep##*/}
    add_module "${dep%%.ko*}"
  done
  order+=("${line%%:*}")
}
for m in "${WANT[@]}"; do add_module "$m"; done

out_dir=$(dirname "$out")
[[ -d $out_dir ]] || die "output directory $out_dir does not exist"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pinmatrix-initramfs.XXXXXX")
# Written next to OUT_FILE so the final rename is atomic.
tmp_out=$(mktemp "$out_dir/.${out##*/}.XXXXXX")
trap 'rm -rf "$tmp" "$tmp_out"' EXIT
root=$tmp/root
mkdir -p "$root"/{bin,dev,proc,sys,newroot} "$root/lib/modules/$release"
ln -s bin "$root/sbin"

cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list); do
  [[ $applet == busybox ]] || ln -s busybox "$root/bin/$applet"
done

: > "$root/lib/modules/$release/load-order"
# Compressed modules (.ko.xz, .ko.zst: Debian's 6.12 and 7.x) are stored
# decompressed: busybox's insmod loads plain .ko files only.
for rel in "${order[@]}"; do
  mkdir -p "$root/lib/modules/$release/$(dirname "$rel")"
  case $rel in
    *.ko.xz) plain=${rel%.xz}; xz -dc "$mods/$rel" > "$root/lib/modules/$release/$plain" ;;
    *.ko.zst) plain=${rel%.zst}; zstd -dcq "$mods/$rel" > "$root/lib/modules/$release/$plain" ;;
    *.ko) plain=$rel; cp "$mods/$rel" "$root/lib/modules/$release/$rel" ;;
    *) die "module $rel: neither .ko, .ko.xz nor .ko.zst" ;;
  esac
  echo "$plain" >> "$root/lib/modules/$release/load-order"
done
install -m 0755 "$here/guest/init" "$root/init"

# Fixed mtimes/owners/order keep the archive byte-identical across rebuilds.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
  cpio --null --create --format=newc --owner=0:0 --reproducible --quiet) |
  gzip -n -6 > "$tmp_out"
chmod 0644 "$tmp_out"
mv -f "$tmp_out" "$out"
echo "mkinitramfs: wrote $out (modules: ${order[*]##*/})" >&2
