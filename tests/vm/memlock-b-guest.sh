#!/usr/bin/env bash
# Runs in a guest (`pinmatrix vm --guest-cmd`): case B without CAP_IPC_LOCK
# under two memlock limits, each into its own results directory.
#   fits   1.5 pages: the module's short-term first pin is not charged, the
#          registration's one page fits, and its ENOMEM is the blocked
#          migration's (B passes, for that reason)
#   tight  half a page: ib_umem_get()'s memlock check refuses the
#          registration before any migration (B decided nothing: ERROR)
# Usage: memlock-b-guest.sh PINMATRIX_BIN OUT_DIR
set -u
bin=$1 out=$2
no_ipc_lock=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock)
for run in fits:6 tight:2; do
  name=${run%%:*} kib=${run#*:}
  mkdir -p "$out/$name"
  "${no_ipc_lock[@]}" sh -c 'ulimit -l "$1"; shift; exec "$@"' - "$kib" \
    "$bin" run --cases B --module "$PINMATRIX_MODULE" --out "$out/$name" > "$out/$name.txt" 2>&1
  echo $? > "$out/$name.rc"
done
