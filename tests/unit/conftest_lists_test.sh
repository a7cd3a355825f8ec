#!/usr/bin/env bash
# No kernel: each module's feature-test list (pm_conftest in its Kbuild,
# kmod/conftest/conftest.mk) against what its code reads. A PM_* name read
# by a module whose list lacks its test would be absent on every kernel, a
# silent wrong answer; a listed test whose define no code reads is a compile
# for nothing. Usage: conftest_lists_test.sh KMOD_DIR
set -euo pipefail
kmod=$1
status=0
# Every define a feature test names (line 2 of kmod/conftest/*.c).
mapfile -t all_defines < <(sed -s -n '2s|^/\* \(PM_[A-Z0-9_]*\): .* \*/$|\1|p' "$kmod"/conftest/*.c)
[[ ${#all_defines[@]} -gt 0 ]] || { echo "FAIL: no feature test in $kmod/conftest"; exit 1; }
for kbuild in "$kmod"/*/Kbuild; do
  dir=$(dirname "$kbuild")
  module=$(basename "$dir")
  # The list: the pm_conftest assignment and its continuation lines.
  listed=$(sed -n '/^pm_conftest :*=/,/[^\\]$/p' "$kbuild" | sed 's/^pm_conftest :*=//; s/\\$//' | tr -s ' \t' '\n' |
    sed '/^$/d' | sort -u)
  [[ -n $listed ]] || { echo "FAIL: $module: its Kbuild names no feature test (pm_conftest)"; status=1; continue; }
  provided=
  for t in $listed; do
    f=$kmod/conftest/$t.c
    [[ -f $f ]] || { echo "FAIL: $module: no feature test $f"; status=1; continue; }
    name=$(sed -n '2s|^/\* \(PM_[A-Z0-9_]*\): .* \*/$|\1|p' "$f")
    [[ -n $name ]] || { echo "FAIL: $f: no \"/* PM_NAME: ... */\" on line 2"; status=1; continue; }
    provided+="$name"$'\n'
  done
  # The names the module reads that some feature test defines.
  read_names=$(grep -ohwF -f <(printf '%s\n' "${all_defines[@]}") "$dir"/*.[ch] 2>/dev/null | sort -u || true)
  for n in $read_names; do
    grep -qx "$n" <<<"$provided" || { echo "FAIL: $module reads $n, whose test its pm_conftest does not name"; status=1; }
  done
  for n in $provided; do
    grep -qx "$n" <<<"$read_names" || { echo "FAIL: $module's pm_conftest names the test of $n, which its code never reads"; status=1; }
  done
  echo "$module: $(wc -w <<<"$listed") feature tests listed; it reads: $(tr '\n' ' ' <<<"$read_names")"
done
exit $status
