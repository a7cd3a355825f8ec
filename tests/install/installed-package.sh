#!/usr/bin/env bash
# The suite as a node gets it: the Debian packages debian/ makes
# (tools/build --packages, into BUILD/debs: pinmatrix, pinmatrix-dkms,
# pinmatrix-ualink-sim-dkms), nothing from the checkout.
#   1. extract them into a scratch root (dpkg-deb -x: the host's dpkg
#      database is not touched); the installed binary names no checkout path
#   2. in a mount namespace whose /var/lib/dkms is a tmpfs (DKMS's tree and
#      its module-signing key stay out of the host's), DKMS builds both
#      modules from the installed /usr/src trees for the guest's kernel, and
#      the installed `pinmatrix vm` runs A-D, given no --module: it finds
#      DKMS's builds itself and builds nothing
#   3. every case passes, the guest's run loaded DKMS's pinmatrix.ko, and
#      the guest's stage2 came from the installed share/pinmatrix
#   4. in a second guest, the installed `pinmatrix run`, given no --module,
#      SKIPs naming pinmatrix-dkms while modprobe finds no module, and loads
#      DKMS's with modprobe once it is where DKMS installs it
#      (tests/install/modprobe-in-guest.sh)
# Usage: installed-package.sh OUT_DIR BUILD_DIR SOURCE_DIR KERNEL_ABI   (exit 77: skipped)
set -euo pipefail
out=$1 build=$2 src=$3 abi=$4
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root (the guest loads the module)"; exit 77; }
for t in dpkg-deb dkms unshare qemu-system-x86_64; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup-host --tests)"; exit 77; }
done
[[ -n $abi && -f /usr/src/linux-headers-$abi/Makefile ]] ||
  { echo "SKIP: no headers for the guest kernel '$abi' (tools/setup-host)"; exit 77; }
compgen -G "$build/debs/pinmatrix_*.deb" >/dev/null ||
  { echo "SKIP: no packages in $build/debs (built without tools/build --packages)"; exit 77; }
fail() { echo "installed-package: FAIL: $*"; exit 1; }

rm -rf "$out"
mkdir -p "$out"
root=$out/root

find_packages() {
  suite_deb=$(echo "$build"/debs/pinmatrix_*.deb)
  dkms_deb=$(echo "$build"/debs/pinmatrix-dkms_*.deb)
  model_deb=$(echo "$build"/debs/pinmatrix-ualink-sim-dkms_*.deb)
  [[ -f $suite_deb && -f $dkms_deb && -f $model_deb ]] || fail "not the three packages: $(ls "$build/debs")"
  version=$(dpkg-deb -f "$dkms_deb" Version)
}

extract() {
  local deb
  for deb in "$suite_deb" "$dkms_deb" "$model_deb"; do dpkg-deb -x "$deb" "$root"; done
  [[ -x $root/usr/bin/pinmatrix && -f $root/usr/share/pinmatrix/vm/guest/init ]] || fail "incomplete install in $root"
  [[ -f $root/usr/src/pinmatrix-$version/dkms.conf ]] || fail "no dkms.conf in pinmatrix-dkms"
  [[ -f $root/usr/src/pinmatrix-ualink-sim-$version/dkms.conf ]] || fail "no dkms.conf in pinmatrix-ualink-sim-dkms"
}

check_no_checkout_path() {
  if grep -aqF "$src" "$root/usr/bin/pinmatrix"; then
    fail "the installed binary names the checkout ($src)"
  fi
}

# DKMS's tree on a tmpfs of this namespace: the builds, then the run that
# must find them.
dkms_build_then_run_a_to_d() {
  local rc=0
  unshare --mount --propagation private sh -c '
    set -e
    mount -t tmpfs tmpfs /var/lib/dkms
    for m in pinmatrix pinmatrix-ualink-sim; do
      dkms build -m "$m" -v "$1" -k "$2" --sourcetree "$3/usr/src" --kernelsourcedir "/usr/src/linux-headers-$2" \
        >>"$4/dkms.log" 2>&1 || { cat "$4/dkms.log"; echo "dkms build $m for $2 failed"; exit 3; }
    done
    "$3/usr/bin/pinmatrix" vm --kernel "debian:$2" --cases A,B,C,D --out "$4/vm" --timeout 900
    exec "$3/usr/bin/pinmatrix" vm --kernel "debian:$2" --out "$4/vm-modprobe" --timeout 600 \
      --guest-cmd "bash $5/tests/install/modprobe-in-guest.sh $3/usr/bin/pinmatrix \"\$PINMATRIX_MODULE\""' \
    sh "$version" "$abi" "$root" "$out" "$src" >"$out/vm.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { tail -n 40 "$out/vm.log"; fail "dkms build or the installed pinmatrix vm: exit $rc"; }
  grep -qs "^modprobe-in-guest: PASS" "$out/vm-modprobe/serial.log" "$out/vm.log" ||
    { tail -n 40 "$out/vm-modprobe/serial.log"; fail "pinmatrix run did not find DKMS's module with modprobe"; }
  grep -qF "the test modules for $abi: DKMS's (pinmatrix.ko, ualink_sim.ko)" "$out/vm.log" ||
    { tail -n 40 "$out/vm.log"; fail "pinmatrix vm did not take DKMS's modules"; }
}

check_results() {
  python3 - "$out/vm/results.json" "$root/usr/share/pinmatrix" <<'PY' || fail "results"
import json, sys
doc = json.load(open(sys.argv[1]))
verdicts = {c["id"]: c["verdict"] for c in doc["cases"]}
assert verdicts == {k: "pass" for k in "ABCD"}, verdicts
stage2 = [a for a in doc["kernel"]["cmdline"].split() if a.startswith("pinmatrix.stage2=")]
assert stage2 == ["pinmatrix.stage2=" + sys.argv[2] + "/vm/guest/stage2"], stage2
assert doc["module_loaded_by_run"], "the run did not load the DKMS module"
assert "-dkms-" in doc["module_loaded_from"], doc["module_loaded_from"]
print("installed-package: A-D", verdicts, "from", sys.argv[2], "with", doc["module_loaded_from"])
PY
}

find_packages
extract
check_no_checkout_path
dkms_build_then_run_a_to_d
check_results
echo "installed-package: PASS ($(basename "$suite_deb"), $(basename "$dkms_deb"), $(basename "$model_deb"))"
