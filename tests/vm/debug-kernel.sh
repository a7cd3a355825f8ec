#!/bin/bash
# vm.debug-kernel: the suite on the debug kernel (`--kernel build:debug`:
# vm/kconfig/pinmatrix.config + debug.config, KASAN, lockdep, DEBUG_VM,
# DEBUG_ATOMIC_SLEEP). Each run fails on its own verdicts and on any kernel
# bug report in its guest's log (pinmatrix vm reads guest/kernel.log).
# Builds the kernel first when CACHE lacks it (minutes; cached after; the
# ctest kernel.debug-build has built it before, beside other tests).
# Usage: debug-kernel.sh OUT CACHE PINMATRIX PINMATRIX_FUZZ UALINK_GUEST_TESTS UALINK_FUZZ
#        debug-kernel.sh --build CACHE PINMATRIX   (the kernel only, at nice 10)
set -u
need() { # the needs of both: a SKIP (77) with the reason
  [[ $EUID -eq 0 ]] || { echo "SKIP: needs root (the guest runs the module)"; exit 77; }
  command -v qemu-system-x86_64 > /dev/null || { echo "SKIP: qemu-system-x86_64 is not installed"; exit 77; }
  [[ -f /usr/src/linux-source-6.1.tar.xz ]] ||
    { echo "SKIP: no /usr/src/linux-source-6.1.tar.xz to build the debug kernel from (tools/setup-host)"; exit 77; }
}
if [[ ${1:-} == --build ]]; then
  [[ $# -eq 3 ]] || { echo "usage: $0 --build CACHE PINMATRIX" >&2; exit 2; }
  need
  exec nice -n 10 "$3" kernel build --kernel build:debug --cache "$2"
fi
[[ $# -eq 6 ]] || { echo "usage: $0 OUT CACHE PINMATRIX PINMATRIX_FUZZ UALINK_GUEST_TESTS UALINK_FUZZ" >&2; exit 2; }
out=$1 cache=$2 bin=$3 fuzz=$4 ualink=$5 ualink_fuzz=$6
need

rm -rf "$out"
mkdir -p "$out"
status=0
step() { # NAME ARGS...: one pinmatrix command, timed
  local name=$1 t0=$SECONDS rc
  shift
  echo "== $name: pinmatrix $*"
  "$bin" "$@" --cache "$cache"
  rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s"
  [[ $rc -eq 0 ]] || status=1
}

step kernel kernel build --kernel build:debug
[[ $status -eq 0 ]] || exit 1
# The check can fail: a bug report planted in the guest's log fails the run.
echo "== planted: a planted 'BUG: KASAN' line must fail the run"
"$bin" vm --kernel build:debug --cache "$cache" --out "$out/planted" \
  --guest-cmd "echo 'pinmatrix-test: BUG: KASAN: planted by tests/vm/debug-kernel.sh' > /dev/kmsg"
rc=$?
echo "== planted: exit $rc (want 1)"
[[ $rc -eq 1 ]] || status=1
# The fuzzer can fail: with the model's planted dangling import (an import
# freed while still on its importer's list, the class of the npa show's
# oops; kmod/uapi/ualink_sim.h UALINK_SIM_PLANT_*), KASAN names a
# use-after-free in ualink_sim. kasan.fault=panic ends the guest there: the
# corrupted list would hang it with the pod's lock held. The report is on
# the console (serial.log).
echo "== planted-model: ualink_fuzz --plant 1 must fail with a KASAN use-after-free in ualink_sim"
"$bin" vm --kernel build:debug --cache "$cache" --out "$out/planted-model" --timeout 300 \
  --append kasan.fault=panic \
  --guest-cmd "$ualink_fuzz --seed 1 --calls 4000 --threads 2 --forks 0 --plant 1"
rc=$?
echo "== planted-model: exit $rc (want non-zero)"
report=$(grep -m1 -A40 'BUG: KASAN: .*use-after-free' "$out/planted-model/serial.log")
head -1 <<< "$report"
if [[ $rc -eq 0 ]] || ! grep -q 'usim_\|\[ualink_sim\]' <<< "$report"; then
  echo "== planted-model: the fuzzer did not find the planted dangling import"
  status=1
fi
# The suite, with the timeouts vm.matrix, vm.ualink, vm.fuzz and
# vm.fuzz-ualink use: the debug kernel under TCG needs no more
# (docs/kernels.md, "The debug kernel").
# Less backing/hugetlb-2m: 6.1's follow_hugetlb_page() WARNs on it (a known
# bug of the kernel, which vm.backing shows on stock 6.1), and a WARNING
# fails the run; this test is about the suite's own code under KASAN.
# --timeout 900: the whole run took 287 s on the movable boot and 303 s on
# the cma boot here (KASAN under TCG), past the guest's default 300 s.
step matrix vm --kernel build:debug --timeout 900 --cases=-backing/hugetlb-2m --out "$out/matrix"
# On the cma boot pinner/udmabuf asks the whole 256 MiB area back twice
# (with the pin held, then as the control), each up to 36 s: under KASAN
# and TCG the control alone migrates ~37k pages of the suite's fill and ran
# past the default 60 s case timeout on a loaded 2-core host.
step matrix-cma vm --kernel build:debug --boot cma --timeout 900 --case-timeout 180 --cases=-backing/hugetlb-2m \
  --out "$out/matrix-cma"
# The suite's kernel runs every case the suite has a body for and answers
# every give-back check: a skip or an unknown for a Kconfig option
# pinmatrix.config lacks fails (tests/vm/suite_kernel_coverage.py). On the
# movable boot: the cma boot has placement skips of its own.
# Its crng seeded at boot (random.trust_cpu=on with the guest CPU's RDRAND;
# the kernel, from tinyconfig, has no RANDOM_TRUST_CPU): else getrandom()
# answers EAGAIN for seconds, and mkfs.ext4 of the scratch disk waits.
echo "== crng: seeded before the first second of boot"
awk '/random: crng init done/ { t = $2 + 0; found = 1; exit } END { exit !(found && t < 1) }' \
  "$out/matrix/guest/kernel.log" || { grep -m1 'crng' "$out/matrix/guest/kernel.log"; status=1; }
echo "== coverage: every case with a body runs, every give-back is answered"
python3 "$(dirname "${BASH_SOURCE[0]}")/suite_kernel_coverage.py" "$out/matrix/results.json" || status=1
# One long-term pin of 2 GiB and a page in one call (pinner/gup-test-over-2g,
# 53ba78de064b's cap), in a guest with the memory for it: it must pass, with
# pages of the buffer in CMA before the pin and none after. The cma boot:
# in a 3584 MiB guest KASAN's shadow, allocated from the top of memory at
# boot, takes all but ~170 pages of movablecore=512M (the CMA area is
# reserved before it). 34 s here.
step big-pin vm --kernel build:debug --boot cma --memory 3584 --timeout 900 --case-timeout 600 \
  --cases pinner/gup-test-over-2g --out "$out/big-pin"
python3 "$(dirname "${BASH_SOURCE[0]}")/suite_kernel_coverage.py" --passed pinner/gup-test-over-2g \
  "$out/big-pin/results.json" || status=1
# The UALink guest tests without EachBit/* (one suite run per fault bit:
# 180 of their 226 s here). Those check the suite's judgement, which the
# kernel does not change (vm.ualink runs them); the model's code under each
# bit still runs here, in ualink_fuzz --fault-bits 1.
step ualink vm --kernel build:debug --out "$out/ualink" --timeout 1200 \
  --guest-cmd "$ualink '--gtest_filter=-EachBit/*' --gtest_output=xml:/run/pinmatrix/ualink-tests.xml"
step fuzz vm --kernel build:debug --out "$out/fuzz" \
  --guest-cmd "$fuzz --seed 1 --calls 20000 --threads 4 --forks 8 && $fuzz --seed 2 --calls 20000 --threads 2 --forks 4"
step fuzz-ualink vm --kernel build:debug --out "$out/fuzz-ualink" \
  --guest-cmd "$ualink_fuzz --seed 1 --calls 40000 --threads 4 --forks 8 && $ualink_fuzz --seed 2 --calls 20000 --threads 3 --forks 4 --fault-bits 1"
exit $status
