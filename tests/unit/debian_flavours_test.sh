#!/bin/bash
# Every amd64 kernel flavour Debian publishes (plain, rt, cloud) in
# bookworm (6.1, and 6.12 in its security suite), trixie and unstable
# resolves to the packages vm/kernel-debian.sh would fetch: its image and
# the headers its headers package depends on (a flavour's common headers:
# bookworm's rt depends on -common-rt), each with a candidate. From the archive index only
# (kernel-debian.sh --resolve): no package is downloaded. The flavours
# come from the archive too: the ABIs the metapackages linux-image-amd64,
# linux-image-rt-amd64 and linux-image-cloud-amd64 point at in each suite,
# and the series 6.12+deb12[-FLAVOUR].
#
# Usage: debian_flavours_test.sh PATH/TO/vm CACHE_DIR
set -euo pipefail

vm=$1 cache=$2
command -v apt-cache > /dev/null || { echo "SKIP: no apt-cache"; exit 77; }
[[ -w $cache || (! -e $cache && -w ${cache%/*}) ]] || { echo "SKIP: $cache is not writable (its apt lists)"; exit 77; }
[[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] || { echo "SKIP: no Debian archive keyring"; exit 77; }
apt() { "$vm/debian-apt.sh" "$cache" "$@"; }
apt apt-cache policy linux-image-amd64 > /dev/null 2>&1 ||
  { echo "SKIP: the private apt configuration cannot read the archive index (no mirror?)"; exit 77; }

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# The ABIs a metapackage points at, one per suite that has it.
abis_of() { # METAPACKAGE
  apt apt-cache show "$1" | sed -nE 's/^Depends: .*linux-image-([0-9][^ ,]*-amd64)( |,|$).*/\1/p' |
    sed 's/-unsigned$//' | sort -u
}

# ABI: its packages resolved; among its headers, every headers and kbuild
# package its headers package depends on, as the archive's record says
# (a flavour's own common headers: bookworm's and trixie's rt name
# -common-rt); each with a candidate.
check_abi() {
  local abi=$1 out dep missing pkgs
  out=$("$vm/kernel-debian.sh" --resolve "$abi" "$cache" 2> /dev/null) || { fail "$abi: --resolve failed"; return; }
  [[ $(sed -n 's/^abi //p' <<< "$out") == "$abi" ]] || fail "$abi: resolved to another ABI"
  grep -qxF -e "image linux-image-$abi" -e "image linux-image-$abi-unsigned" <<< "$out" ||
    fail "$abi: no linux-image-$abi"
  grep -qxF "headers linux-headers-$abi" <<< "$out" || fail "$abi: no linux-headers-$abi"
  for dep in $(apt apt-cache show "linux-headers-$abi" | sed -n 's/^Depends: //p' | tr ',|' '\n\n' |
    sed -nE 's/^ *(linux-(headers|kbuild)-[^ ]+).*/\1/p' | sort -u); do
    grep -qxF "headers $dep" <<< "$out" || fail "$abi: its headers depend on $dep, which is not fetched"
  done
  mapfile -t pkgs < <(sed -nE 's/^(image|headers) //p' <<< "$out" | sort -u)
  missing=$(apt apt-cache policy "${pkgs[@]}" | awk '/^[^ ]/ { p = $1 } /Candidate: \(none\)/ { print p }')
  [[ -z $missing ]] || fail "$abi: no candidate for $missing"
  echo "ok: $abi: ${#pkgs[@]} packages: ${pkgs[*]}"
}

checked=0
for flavour in "" rt cloud; do
  meta=linux-image-${flavour:+$flavour-}amd64
  abis=$(abis_of "$meta")
  [[ -n $abis ]] || { fail "$meta points at no kernel"; continue; }
  for abi in $abis; do
    check_abi "$abi"
    checked=$((checked + 1))
  done
  series=6.12+deb12${flavour:+-$flavour}
  abi=$("$vm/kernel-debian.sh" --resolve "$series" "$cache" 2> /dev/null | sed -n 's/^abi //p') || true
  [[ $abi =~ ^6\.12\.[0-9]+\+deb12-${flavour:+$flavour-}amd64$ ]] || { fail "$series resolved to '$abi'"; continue; }
  check_abi "$abi"
  checked=$((checked + 1))
done
((checked >= 12)) || fail "only $checked kernels checked (bookworm, trixie, unstable and 6.12+deb12, three flavours each)"
((failures == 0)) || exit 1
echo "ok: $checked kernels of three flavours resolve to complete headers"
