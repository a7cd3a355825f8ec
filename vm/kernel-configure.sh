#!/bin/bash
# Configure a kernel source tree for the guest: `make tinyconfig`, the
# Kconfig FRAGMENTs merged on top in order (a later one overrides an earlier
# one), `make olddefconfig`; then every CONFIG_X=V line of the fragments
# must be in .config and every "# CONFIG_X is not set" line not set (Kconfig
# drops an option silently when a dependency is missing). vm/kernel-build.sh
# (Debian's linux-source) and vm/bisect-build.sh (a user's git tree, at
# each commit of a bisect) run it.
# A fragment's lines between "# pinmatrix: where the source has PATH" and
# "# pinmatrix: end" count only where SRC/PATH exists: an option a series
# does not have yet (IOMMUFD before 6.2) is asked by what the source has,
# not by a guessed version.
#
# Usage: kernel-configure.sh SRC OUT LOG FRAGMENT...
#   SRC: the source tree; OUT: where .config goes (SRC itself, or an O= dir);
#   LOG: make's output is appended there. FRAGMENTs: absolute paths.
# Exit 0 configured, 1 (with the reason on stderr) not.
set -euo pipefail

die() { echo "kernel-configure: ERROR: $*" >&2; exit 1; }
say() { echo "kernel-configure: $*" >&2; }

[[ $# -ge 4 ]] || die "usage: $0 SRC OUT LOG FRAGMENT..."
src=$1 out=$2 log=$3
shift 3
fragments=("$@")
# O= only for a separate output dir: the same dir as O= is refused by make.
o=()
[[ $(realpath "$out") == "$(realpath "$src")" ]] || o=(O="$out")
kmake() { make -C "$src" "${o[@]}" "$@" >> "$log" 2>&1 || { tail -n 30 "$log" >&2; die "make $* failed (log: $log)"; }; }

# for_this_source FRAGMENT COPY: the fragment less the blocks this source
# lacks (each named on stderr).
for_this_source() {
  local line need='' keep=1
  while IFS= read -r line || [[ -n $line ]]; do
    if [[ $line =~ ^#\ pinmatrix:\ where\ the\ source\ has\ ([A-Za-z0-9_./-]+)$ ]]; then
      [[ -z $need ]] || die "${1##*/}: a block inside the block for $need"
      need=${BASH_REMATCH[1]}
      [[ $need != *..* ]] || die "${1##*/}: '$need' leaves the source tree"
      keep=1
      [[ -e $src/$need ]] || { keep=0; say "${1##*/}: not asked: the block for $need (this source has none)"; }
    elif [[ $line == "# pinmatrix: end" ]]; then
      [[ -n $need ]] || die "${1##*/}: '# pinmatrix: end' without a block"
      need='' keep=1
    elif [[ $keep -eq 1 ]]; then
      printf '%s\n' "$line"
    fi
  done < "$1" > "$2"
  [[ -z $need ]] || die "${1##*/}: the block for $need has no '# pinmatrix: end'"
}
copies=$(mktemp -d "$out/.pinmatrix-fragments.XXXXXX")
trap 'rm -rf "$copies"' EXIT
for i in "${!fragments[@]}"; do
  mkdir "$copies/$i"
  for_this_source "${fragments[$i]}" "$copies/$i/${fragments[$i]##*/}"
  fragments[$i]=$copies/$i/${fragments[$i]##*/}
done

names=$(for f in "${fragments[@]}"; do printf ' + %s' "${f##*/}"; done)
say "configuring: tinyconfig$names"
kmake tinyconfig
# merge_config.sh makes its temporary files in the current directory.
(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O . .config "${fragments[@]}") >> "$log" 2>&1 ||
  die "merge_config.sh failed (log: $log)"
kmake olddefconfig

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
      grep -qxF -- "$line" "$out/.config" && continue
    elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
      [[ ${final[${BASH_REMATCH[1]}]} == "$f" ]] || continue
      grep -q "^${BASH_REMATCH[1]}=" "$out/.config" || continue
    else
      continue
    fi
    name=${line#\# }; name=${name%%[= ]*}
    got=$(grep -E "^(# )?$name[= ]" "$out/.config" || echo "absent (dependency missing?)")
    echo "kernel-configure: ${f##*/} asked '$line', got '$got'" >&2
    bad=1
  done < "$f"
done
[[ $bad -eq 0 ]] || die "the options above did not end up as the fragments ask"
