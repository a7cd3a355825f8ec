#!/bin/bash
# Runs in a guest (tests/vm/vm_first_pin_test.cpp through `pinmatrix vm
# --guest-cmd`): the matrix with the real io_uring pinners and with the GPU
# host-pin TEST DOUBLE in both contracts. Each run leaves its results.json in
# /run/pinmatrix/<name>/ for the host to check.
# Usage: first-pinners.sh PINMATRIX_BIN GPU_DOUBLE_SO
set -u
bin=$1 double=$2
out=/run/pinmatrix
status=0
run() { # NAME ARGS...
  local name=$1; shift
  echo "== $name: pinmatrix run $*"
  "$bin" run --module "$PINMATRIX_MODULE" --placement movable --device rxe0 \
    --out "$out/$name" "$@"
  local rc=$?
  echo "== $name: exit $rc"
  [[ $rc -eq 0 ]] || status=1
}
# The stand-in GPU driver (a test double) with each contract.
for contract in r535 r555; do
  PINMATRIX_CUDA_LIBRARY=$double PINMATRIX_CUDART_LIBRARY=$double PINMATRIX_DOUBLE_CONTRACT=$contract \
    run "cuda-$contract" --first-pin cuda --cases pin
  PINMATRIX_HIP_LIBRARY=$double PINMATRIX_DOUBLE_CONTRACT=$contract \
    run "hip-$contract" --first-pin hip --cases A,B,C,D --second-pin io_uring
done
# io_uring fixed buffers, for real: as the first pin, the second, and both.
run io_uring-first --first-pin io_uring --cases A,B,C,D
run io_uring-second --second-pin io_uring --cases A,B,C,D
run io_uring-both --first-pin io_uring --second-pin io_uring --cases A,B,C,D
exit $status
