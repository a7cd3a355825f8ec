#!/bin/bash
# In a guest (tests/install/installed-package.sh, `pinmatrix vm
# --guest-cmd`): the installed `pinmatrix run`, given no --module, finds the
# node's own test module with modprobe, where DKMS installs it:
#   1. no pinmatrix module for this kernel: case A SKIPs, and its reason
#      says to install pinmatrix-dkms; the run loaded nothing
#   2. DKMS's pinmatrix.ko in /lib/modules/RELEASE/updates/dkms (on an
#      overlay of the guest's read-only module tree) and depmod: the run
#      loads it with modprobe, A passes, and the module is gone at its end
# Usage: modprobe-in-guest.sh PINMATRIX DKMS_PINMATRIX_KO
set -u
bin=$1 ko=$2 out=/run/pinmatrix
fail() { echo "modprobe-in-guest: FAIL: $*"; exit 1; }
[[ ! -e /dev/pinmatrix ]] || fail "/dev/pinmatrix exists before the runs"

# results.json's case A: "VERDICT|REASON|LOADED_FROM".
case_a() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
a = [c for c in d["cases"] if c["id"] == "A"][0]
print("%s|%s|%s" % (a["verdict"], a.get("reason", ""), d.get("module_loaded_from")))' "$1/results.json"
}

"$bin" run --cases A --placement movable --device rxe0 --out "$out/without" >"$out/without.log" 2>&1
result=$(case_a "$out/without")
IFS='|' read -r verdict reason from <<<"$result"
[[ $verdict == skip && $reason == *"install pinmatrix-dkms"* && $from == None ]] ||
  fail "without a module: '$verdict' '$reason' loaded from '$from'"
skip_reason=$reason

release=$(uname -r)
modprobe overlay && mkdir -p /run/modules-upper /run/modules-work &&
  mount -t overlay overlay -o "lowerdir=/lib/modules/$release,upperdir=/run/modules-upper,workdir=/run/modules-work" \
    "/lib/modules/$release" || fail "no writable /lib/modules/$release"
mkdir -p "/lib/modules/$release/updates/dkms" && cp "$ko" "/lib/modules/$release/updates/dkms/" &&
  depmod "$release" || fail "cannot install $ko as DKMS does"

"$bin" run --cases A --placement movable --device rxe0 --out "$out/with" >"$out/with.log" 2>&1
result=$(case_a "$out/with")
IFS='|' read -r verdict reason from <<<"$result"
[[ $verdict == pass && $from == "modprobe pinmatrix" ]] ||
  fail "with DKMS's module: '$verdict' '$reason' loaded from '$from'"
[[ ! -e /sys/module/pinmatrix ]] || fail "the run left the module it loaded"
echo "modprobe-in-guest: PASS (without it A SKIPs: $skip_reason; then modprobe loads it and A passes)"
