#!/usr/bin/env bash
# The suite as a node gets it: the packages CPack makes (pinmatrix, and
# pinmatrix-dkms for the test module), nothing from the checkout.
#   1. cpack both .debs; `cmake --install` lays out the same files
#   2. extract them into a scratch root (dpkg-deb -x: the host's dpkg
#      database is not touched); the installed binary names no checkout path
#   3. DKMS builds pinmatrix.ko from the installed /usr/src/pinmatrix-VERSION
#      for the guest's kernel (in a mount namespace whose /var/lib/dkms is a
#      tmpfs: DKMS's tree and its module-signing key stay out of the host's)
#   4. the installed `pinmatrix vm` boots the guest kernel and runs A-D with
#      the installed `pinmatrix run` and the DKMS module; every case passes,
#      and the guest's stage2 came from the installed share/pinmatrix
# Usage: installed-package.sh OUT_DIR BUILD_DIR SOURCE_DIR KERNEL_ABI   (exit 77: skipped)
set -euo pipefail
out=$1 build=$2 src=$3 abi=$4
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root (the guest loads the module)"; exit 77; }
for t in cpack dpkg-deb dkms unshare qemu-system-x86_64; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup-host --tests)"; exit 77; }
done
[[ -n $abi && -f /usr/src/linux-headers-$abi/Makefile ]] ||
  { echo "SKIP: no headers for the guest kernel '$abi' (tools/setup-host)"; exit 77; }
fail() { echo "installed-package: FAIL: $*"; exit 1; }

rm -rf "$out"
mkdir -p "$out"
root=$out/root

make_packages() {
  cpack --config "$build/CPackConfig.cmake" -B "$out/packages" >"$out/cpack.log" 2>&1 ||
    { cat "$out/cpack.log"; fail "cpack"; }
  suite_deb=$(echo "$out"/packages/pinmatrix_*.deb)
  dkms_deb=$(echo "$out"/packages/pinmatrix-dkms_*.deb)
  [[ -f $suite_deb && -f $dkms_deb ]] || fail "cpack made no pinmatrix and pinmatrix-dkms .deb: $(ls "$out/packages")"
  version=$(dpkg-deb -f "$dkms_deb" Version)
}

# `cmake --install` and the .deb lay out the same files (the .deb under /usr).
check_install_layout() {
  cmake --install "$build" --prefix "$out/prefix" --component suite >/dev/null
  diff <(cd "$out/prefix" && find . -type f | sort) \
    <(dpkg-deb -c "$suite_deb" | awk '$1 !~ /^d/ { sub("^[.]/usr/", "./", $6); print $6 }' | sort) ||
    fail "cmake --install and the .deb lay out different files"
}

extract() {
  dpkg-deb -x "$suite_deb" "$root"
  dpkg-deb -x "$dkms_deb" "$root"
  [[ -x $root/usr/bin/pinmatrix && -f $root/usr/share/pinmatrix/vm/guest/init ]] || fail "incomplete install in $root"
  [[ -f $root/usr/src/pinmatrix-$version/dkms.conf ]] || fail "no dkms.conf in pinmatrix-dkms"
}

check_no_checkout_path() {
  if grep -aqF "$src" "$root/usr/bin/pinmatrix"; then
    fail "the installed binary names the checkout ($src)"
  fi
}

build_module_with_dkms() {
  unshare --mount --propagation private sh -c '
    mount -t tmpfs tmpfs /var/lib/dkms &&
    dkms build -m pinmatrix -v "$1" -k "$2" --sourcetree "$3" --kernelsourcedir "/usr/src/linux-headers-$2" &&
    cp "/var/lib/dkms/pinmatrix/$1/$2/x86_64/module/pinmatrix.ko" "$4"' \
    sh "$version" "$abi" "$root/usr/src" "$out/pinmatrix.ko" >"$out/dkms.log" 2>&1 ||
    { cat "$out/dkms.log"; fail "dkms build for $abi"; }
  [[ $(modinfo -F vermagic "$out/pinmatrix.ko") == "$abi "* ]] || fail "the DKMS module is not for $abi"
}

run_a_to_d() {
  local rc=0
  "$root/usr/bin/pinmatrix" vm --kernel "debian:$abi" --out "$out/vm" --timeout 900 --guest-cmd \
    "$root/usr/bin/pinmatrix run --module $out/pinmatrix.ko --placement movable --device rxe0 --cases A,B,C,D --out /run/pinmatrix/installed" \
    >"$out/vm.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { tail -n 40 "$out/vm.log"; fail "the installed pinmatrix vm exited $rc"; }
}

check_results() {
  python3 - "$out/vm/guest/installed/results.json" "$root/usr/share/pinmatrix" <<'PY' || fail "results"
import json, sys
doc = json.load(open(sys.argv[1]))
verdicts = {c["id"]: c["verdict"] for c in doc["cases"]}
assert verdicts == {k: "pass" for k in "ABCD"}, verdicts
stage2 = [a for a in doc["kernel"]["cmdline"].split() if a.startswith("pinmatrix.stage2=")]
assert stage2 == ["pinmatrix.stage2=" + sys.argv[2] + "/vm/guest/stage2"], stage2
assert doc["module_loaded_by_run"], "the run did not load the DKMS module"
print("installed-package: A-D", verdicts, "from", sys.argv[2])
PY
}

make_packages
extract
check_install_layout
check_no_checkout_path
build_module_with_dkms
run_a_to_d
check_results
echo "installed-package: PASS ($(basename "$suite_deb"), $(basename "$dkms_deb"))"
