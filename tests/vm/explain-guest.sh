#!/bin/bash
# Runs in a guest (pinmatrix vm --guest-cmd, tests/vm/vm_matrix_test.cpp,
# VmExplain): `pinmatrix explain` on processes started here, as a wrapper
# around a real failing ibv_reg_mr, and the kernel trace's promise to leave
# no probe behind (after a run, after a SIGTERM mid-run, and the leftovers of
# a run that was killed). Writes its findings to $out for the host to check.
#   explain-guest.sh PINMATRIX_BIN
set -u
bin=$1
out=/run/pinmatrix/explain
mkdir -p "$out"
T=/sys/kernel/tracing
ko=${PINMATRIX_MODULE:?}

stack_of() { awk '/\[stack\]/ { print $1; exit }' "/proc/$1/maps"; }
no_ipc_lock=(setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock)

# 1. A process with RLIMIT_MEMLOCK 1 KiB and no CAP_IPC_LOCK, and one with
#    the defaults (root: CAP_IPC_LOCK); both sleep with a touched stack.
"${no_ipc_lock[@]}" sh -c 'ulimit -l 1; exec sleep 120' &
small=$!
sleep 120 &
plain=$!
sleep 0.5
"$bin" explain "$small" "$(stack_of "$small")" > "$out/memlock.txt" 2>&1
echo $? > "$out/memlock.rc"
"$bin" explain --json "$small" "$(stack_of "$small")" > "$out/memlock.json" 2> "$out/memlock.err"
"$bin" explain --json "$plain" "$(stack_of "$plain")" > "$out/plain.json" 2> "$out/plain.err"
"$bin" explain 999999 0x1000 > "$out/badpid.txt" 2>&1
echo $? > "$out/badpid.rc"
"$bin" explain "$plain" 0x1000 > "$out/badrange.txt" 2>&1
echo $? > "$out/badrange.rc"
kill "$small" "$plain"

# 2. The wrapper around a real registration that fails on the memlock limit.
"$bin" explain -- "${no_ipc_lock[@]}" sh -c 'ulimit -l 1; exec ibv_rc_pingpong -d rxe0 -g 0' \
  > "$out/wrapper.txt" 2>&1
echo $? > "$out/wrapper.rc"
"$bin" explain --json -- "${no_ipc_lock[@]}" sh -c 'ulimit -l 1; exec ibv_rc_pingpong -d rxe0 -g 0' \
  > "$out/wrapper.json" 2> "$out/wrapper.err"
echo $? > "$out/wrapper-json.rc"

# ... and around a run of case B: the registration that a held FOLL_PIN
# makes fail, seen from outside (no module pins visible to explain); the
# case's one registration, not its latency repeats.
"$bin" explain --json -- "$bin" run --cases B --latency-samples 1 --device rxe0 --module "$ko" \
  > "$out/wrapper-b.json" 2> "$out/wrapper-b.err"
echo $? > "$out/wrapper-b.rc"

ours() { grep -c 'pinmatrix' "$T/kprobe_events"; ls "$T/instances" | grep -c '^pinmatrix-'; }

# 3. Leftovers of a killed run (a pid that is gone) are removed by the next.
mkdir "$T/instances/pinmatrix-999999"
echo 'p:pinmatrix_999999/leftover pin_user_pages_fast' >> "$T/kprobe_events"
"$bin" run --cases registration/memlock-zero --device rxe0 --module "$ko" --out "$out/run" > "$out/run.txt" 2>&1
echo $? > "$out/run.rc"
echo "$(ours)" | tr '\n' ' ' > "$out/after-run.txt"

# 4. SIGTERM in the middle of a run: the probes and the instance go with it.
"$bin" run --cases A,B,C,D --device rxe0 --module "$ko" > "$out/term.txt" 2>&1 &
run=$!
for _ in $(seq 600); do
  grep -q pinmatrix "$T/kprobe_events" && break
  sleep 0.05
done
grep -c pinmatrix "$T/kprobe_events" > "$out/during-run.txt"
kill -TERM "$run"
wait "$run"
echo $? > "$out/term.rc"
echo "$(ours)" | tr '\n' ' ' > "$out/after-term.txt"

# 5. ... also when it comes while the run itself holds a file of its
# instance open (CI once: the instance stayed, busy): strace holds the run
# for 2 s in its open() of the instance's set_event_pid, returned (-D: the
# run keeps the pid that names its instance).
held_open() {
  local fd
  for fd in "/proc/$1/fd/"*; do
    [[ $(readlink "$fd") == */pinmatrix-$1/set_event_pid ]] && return 0
  done
  return 1
}
bash -c 'exec strace -D -o /dev/null -P "$1/instances/pinmatrix-$$/set_event_pid" -e trace=open,openat \
  -e inject=open,openat:delay_exit=2000000 "$2" run --cases A --device rxe0 --module "$3"' \
  held "$T" "$bin" "$ko" > "$out/term-held.txt" 2>&1 &
run=$!
for _ in $(seq 600); do
  held_open "$run" && break
  sleep 0.05
done
held_open "$run" && echo held > "$out/held-open.txt"
kill -TERM "$run"
wait "$run"
echo $? > "$out/term-held.rc"
ours | tr '\n' ' ' > "$out/after-term-held.txt"
exit 0
