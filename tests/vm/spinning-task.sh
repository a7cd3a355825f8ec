#!/bin/bash
# In a guest, for VmFaults.CaseSpinningInTheKernelIsNamedFromItsCpu...:
# case B's pin through the module spins in the kernel, runnable (--fault
# kernel-spin-at=B), with a kretprobe on the spinning function, as a
# long-term GUP loop that never ends spins under the suite's own kretprobes
# (__gup_longterm_locked, ib_umem_get). The runner must say where it spins
# without unwinding it from another task, which makes the kernel warn
# (rethook_find_ret_addr: a running task's stack holds a kretprobe).
# Usage: spinning-task.sh PINMATRIX OUT_DIR   (PINMATRIX_MODULE: pinmatrix.ko)
set -u
[[ $# -eq 2 ]] || { echo "usage: $0 PINMATRIX OUT_DIR" >&2; exit 2; }
bin=$1 out=$2
t=/sys/kernel/tracing
[[ -d $t/instances ]] || mount -t tracefs tracefs "$t" || exit 2
insmod "$PINMATRIX_MODULE" || exit 2
echo 'r:pmtest/spin pinmatrix:pm_spin_until_killed' >> "$t/kprobe_events" || exit 2
echo 1 > "$t/events/pmtest/spin/enable" || exit 2
"$bin" run --cases B --fault kernel-spin-at=B --case-timeout 6 --out "$out"
rc=$?
echo 0 > "$t/events/pmtest/spin/enable"
echo '-:pmtest/spin' >> "$t/kprobe_events"
exit "$rc"
