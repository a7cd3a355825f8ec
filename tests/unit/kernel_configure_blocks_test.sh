#!/bin/bash
# vm/kernel-configure.sh's "# pinmatrix: where the source has PATH" blocks,
# through the script itself against scratch source trees (no kernel: make
# fails after the fragments are read, which is all this test needs): a block
# counts only where the source has PATH, and a malformed block is refused
# with its reason before make runs.
# Usage: kernel_configure_blocks_test.sh SOURCE_DIR
set -u
script=$1/vm/kernel-configure.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { # WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
lacks() { ! grep -q -- "$1" "$2"; }
mkdir -p "$work/with/drivers/iommu/iommufd" "$work/without"
printf 'CONFIG_A=y\n# pinmatrix: where the source has drivers/iommu/iommufd\nCONFIG_IOMMUFD=y\n# pinmatrix: end\n' \
  > "$work/good.config"
run() { # SRC FRAGMENT -> stderr in $work/err, exit code in rc
  bash "$script" "$1" "$1" "$work/log" "$2" 2> "$work/err"
  rc=$?
}
run "$work/with" "$work/good.config"
check "a source with the path keeps the block" lacks "not asked" "$work/err"
check "... and goes on to make (which fails on a scratch tree)" grep -q "make tinyconfig failed" "$work/err"
run "$work/without" "$work/good.config"
check "a source without the path drops the block, saying so" \
  grep -q "good.config: not asked: the block for drivers/iommu/iommufd (this source has none)" "$work/err"
bad() { # NAME TEXT EXPECTED-MESSAGE
  printf "$2" > "$work/$1.config"
  run "$work/with" "$work/$1.config"
  check "$1: exit 1 with '$3', before make" \
    bash -c '[[ $0 -eq 1 ]] && grep -qF -- "$1" "$2" && ! grep -q "make tinyconfig" "$2"' "$rc" "$3" "$work/err"
}
bad unterminated '# pinmatrix: where the source has drivers/iommu/iommufd\nCONFIG_A=y\n' \
  "the block for drivers/iommu/iommufd has no '# pinmatrix: end'"
bad nested '# pinmatrix: where the source has a\n# pinmatrix: where the source has b\n# pinmatrix: end\n' \
  "a block inside the block for a"
bad stray-end 'CONFIG_A=y\n# pinmatrix: end\n' "'# pinmatrix: end' without a block"
bad outside '# pinmatrix: where the source has ../x\n# pinmatrix: end\n' "'../x' leaves the source tree"
exit $fail
