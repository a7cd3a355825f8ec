#!/bin/bash
# A vendor's kernel as .debs (--kernel debs:DIR): Debian's linux-image and
# linux-headers packages of one ABI downloaded from the Debian mirror into
# OUT/debs (once), laid out by vm/kernel-debian.sh --debs, the test modules
# built against those headers, and cases A-D run in a guest on it.
#   debs-kernel.sh OUT_DIR PINMATRIX_BIN [CACHE_DIR]
# PINMATRIX_DEBS_ABI: the ABI (default 6.12.117+deb12-amd64, bookworm's 6.12).
set -euo pipefail

out=$1
bin=$2
cache=${3:-/var/cache/pinmatrix}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
abi=${PINMATRIX_DEBS_ABI:-6.12.117+deb12-amd64}
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root (apt downloads as _apt, QEMU guest)"; exit 77; }

debs=$out/debs
if ! compgen -G "$debs/linux-headers-${abi}_*.deb" > /dev/null; then
  rm -rf "$debs"
  mkdir -p "$debs"
  chown _apt "$debs"
  (cd "$debs" && "$here/vm/debian-apt.sh" "$cache" apt-get download "linux-image-$abi" \
    "linux-headers-$abi" "linux-headers-${abi%-amd64}-common" "linux-kbuild-${abi%-amd64}") ||
    { echo "SKIP: cannot download the $abi .debs from the Debian mirror"; exit 77; }
fi
rm -rf "$out/run"
"$bin" vm --kernel "debs:$debs" --cases A,B,C,D --cache "$cache" --out "$out/run"
grep -q '"source": "debs"' "$out/run/results.json" || { echo "FAIL: results.json names no debs kernel"; exit 1; }
