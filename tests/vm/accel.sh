#!/usr/bin/env bash
# `pinmatrix vm --accel` (vm/accel.hpp) on a host whose /dev/kvm opens. On
# these machines KVM starts no guest: -cpu host makes QEMU abort on an MSR,
# -cpu qemu64 hangs before the kernel's first line. Case A each time.
# fallback (ctest vm.accel-fallback):
#   1. auto, --kvm-cpu qemu64, its record removed: KVM is tried, the guest's
#      job has not started at the bound, QEMU is killed and the guest booted
#      with TCG; A passes; vm.accel tcg, vm.accel_fallback (not earlier,
#      the bound in its why, the KVM attempt's logs kept and named)
#   2. the same again: the record sends it straight to TCG (earlier, no KVM
#      attempt's logs)
#   3. --accel kvm, --kvm-cpu qemu64: no fallback; the run ends with the
#      bound's message and A is not passed
#   Where KVM does start a qemu64 guest, 1 checks that A passed under KVM
#   and 2-3 are left out.
# kvm (ctest vm.accel-kvm):
#   4. --accel kvm (-cpu host): where KVM works, A passes under KVM; where
#      it does not, the run says why and the test SKIPs with that reason
# Where /dev/kvm does not open, only that auto says so (then SKIP).
# Usage: accel.sh fallback|kvm PINMATRIX OUT_DIR CACHE_DIR   (exit 77: skipped)
set -euo pipefail
mode=$1 bin=$2 out=$3 cache=$4
[[ $mode == fallback || $mode == kvm ]] || { echo "usage: accel.sh fallback|kvm PINMATRIX OUT_DIR CACHE_DIR" >&2; exit 2; }
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root (the guest loads the module)"; exit 77; }
command -v qemu-system-x86_64 >/dev/null || { echo "SKIP: qemu-system-x86_64 is not installed"; exit 77; }
fail() { echo "accel: FAIL: $*"; exit 1; }
rm -rf "$out"
mkdir -p "$out"

# vm NAME [options]: case A into OUT/NAME; its exit status in OUT/NAME.rc.
vm() {
  local name=$1
  shift
  local rc=0
  "$bin" vm --out "$out/$name" --cases A --timeout 300 "$@" >"$out/$name.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$name.rc"
  echo "accel: $name: exit $rc"
}
# field NAME EXPR: a Python expression over the run's results.json (d),
# its vm record (vm) and case A (a).
field() {
  python3 - "$out/$1/results.json" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
vm = d.get("vm", {})
a = next((c for c in d.get("cases", []) if c["id"] == "A"), {})
print(eval(sys.argv[2]))
PY
}

if ! { exec 3<>/dev/kvm; } 2>/dev/null; then
  vm no-device
  [[ $(field no-device 'vm["accel"], a.get("verdict")') == "('tcg', 'pass')" ]] || fail "no /dev/kvm: $(cat "$out/no-device.log")"
  why=$(field no-device 'vm["accel_fallback"]["why"]')
  [[ $why == /dev/kvm:* ]] || fail "no /dev/kvm, and the fallback says: $why"
  echo "SKIP: /dev/kvm does not open here ($why): only auto's fallback without it was checked"
  exit 77
fi
exec 3>&-

if [[ $mode == kvm ]]; then
  vm kvm-host --accel kvm
  if [[ $(field kvm-host 'vm["accel"], a.get("verdict")') == "('kvm', 'pass')" ]]; then
    echo "accel: PASS (A passed under KVM with -cpu host)"
    exit 0
  fi
  ended=$(field kvm-host 'vm.get("ended")')
  [[ -n $ended && $ended != None ]] || fail "--accel kvm: A did not pass and the run says nothing: $(tail -n 20 "$out/kvm-host.log")"
  echo "SKIP: KVM starts no guest here (--accel kvm: $ended)"
  exit 77
fi

rm -f "$cache"/accel/kvm-failed-*-cpu-qemu64.json
vm auto-first --kvm-cpu qemu64
[[ $(field auto-first 'a.get("verdict")') == pass ]] || fail "auto: A did not pass: $(tail -n 20 "$out/auto-first.log")"
if [[ $(field auto-first 'vm["accel"]') == kvm ]]; then
  echo "accel: PASS (KVM starts a qemu64 guest here: A passed under KVM; the fallback is left out)"
  exit 0
fi
[[ $(field auto-first 'vm["accel_fallback"]["earlier"]') == False ]] || fail "auto: the fallback was not this run's"
why=$(field auto-first 'vm["accel_fallback"]["why"]')
[[ $why == "the guest's job did not start within 15 s under KVM"* ]] || fail "auto: the fallback says: $why"
for log in serial-kvm.log qemu-kvm.log; do
  [[ -f $out/auto-first/$log && $(field auto-first "vm['accel_fallback'].get('${log%%-*}_log')") == "$log" ]] ||
    fail "auto: the KVM attempt's $log is not kept and named"
done
grep -qF "KVM did not start the guest (the guest's job did not start within 15 s" "$out/auto-first.log" ||
  fail "auto: the run did not say it fell back"
grep -qF "TCG: kvm did not serve (the guest&#39;s job did not start within 15 s" "$out/auto-first/report.html" &&
  grep -qF 'href="serial-kvm.log"' "$out/auto-first/report.html" ||
  fail "auto: report.html does not show the fallback and link the KVM attempt's serial log"

vm auto-again --kvm-cpu qemu64
[[ $(field auto-again '(vm["accel"], a.get("verdict"), vm["accel_fallback"]["earlier"])') == "('tcg', 'pass', True)" ]] ||
  fail "auto again: not straight to TCG by the record: $(tail -n 20 "$out/auto-again.log")"
[[ ! -e $out/auto-again/qemu-kvm.log ]] || fail "auto again: KVM was tried again"

vm kvm-qemu64 --accel kvm --kvm-cpu qemu64
[[ $(cat "$out/kvm-qemu64.rc") != 0 ]] || fail "--accel kvm: a guest that never started passed"
[[ $(field kvm-qemu64 'a.get("verdict") != "pass" and vm["accel"] == "kvm" and "accel_fallback" not in vm') == True ]] ||
  fail "--accel kvm fell back or passed: $(tail -n 20 "$out/kvm-qemu64.log")"
[[ $(field kvm-qemu64 'vm["ended"]') == "the guest's job did not start within 15 s under KVM"* ]] ||
  fail "--accel kvm: the run ended with: $(field kvm-qemu64 'vm["ended"]')"

echo "accel: PASS (auto fell back within the bound and said why, the record spared the next guest its KVM attempt, --accel kvm did not fall back)"
