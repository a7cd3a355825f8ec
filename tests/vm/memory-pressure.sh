#!/bin/bash
# Runs in a guest (tests/vm/vm_memory_pressure_test.cpp through `pinmatrix vm
# --guest-cmd`): the pin matrix with memory pressure alongside. stress-ng's
# vm workers keep mapping, touching and unmapping anonymous memory, and a
# reader keeps the page cache churning with large files of the host root
# (9p): the guest kernel's image and Debian's kernel source tarball. A sampler records what the stress held. Everything started here is
# stopped by its PID at the end.
# Writes /run/pinmatrix/pressure/{results.json,stress.json,stress-ng.log}.
# Usage: memory-pressure.sh PINMATRIX_BIN [VM_BYTES (default 640M of the 1 GiB guest)]
set -u
bin=$1 vm_bytes=${2:-640M}
out=/run/pinmatrix/pressure
mkdir -p "$out"
command -v stress-ng >/dev/null || { echo "memory-pressure: stress-ng is not installed"; exit 2; }

meminfo() { # FIELD -> kB
  local k v _
  while read -r k v _; do [[ $k == "$1:" ]] && { echo "$v"; return; }; done < /proc/meminfo
}

# kB resident in every stress-ng process (the parent and its workers).
stress_rss_kb() {
  local total=0 d comm k v _
  for d in /proc/[0-9]*; do
    read -r comm 2>/dev/null < "$d/comm" || continue
    [[ $comm == stress-ng* ]] || continue
    while read -r k v _; do
      [[ $k == VmRSS: ]] && { total=$((total + v)); break; }
    done 2>/dev/null < "$d/status"
  done
  echo "$total"
}

avail_before=$(meminfo MemAvailable)
# --timeout 0: until stopped. Workers the OOM killer takes are restarted.
stress-ng --vm 2 --vm-bytes "$vm_bytes" --timeout 0 --metrics-brief --temp-path /run/tmp \
  > "$out/stress-ng.log" 2>&1 &
stress_pid=$!
# Page cache: large files of the host root, read over and over. Named, not
# searched for: a find over 9p under TCG takes minutes.
kdir=$(sed -n 's/.*pinmatrix\.kdir=\([^ ]*\).*/\1/p' /proc/cmdline)
big=() big_bytes=0
for f in "$kdir"/vmlinux "$kdir"/vmlinuz /usr/src/linux-source-*.tar.*; do
  [[ -f $f ]] || continue
  big+=("$f")
  big_bytes=$((big_bytes + $(stat -c %s "$f")))
done
( while :; do
    for f in "${big[@]}"; do cat "$f" > /dev/null 2>&1; done
    [[ ${#big[@]} -gt 0 ]] || sleep 1
  done ) &
reader_pid=$!
# The sampler writes its peaks to a file once a second.
( peak_rss=0 min_avail=$avail_before max_cached=0 samples=0
  while :; do
    rss=$(stress_rss_kb) avail=$(meminfo MemAvailable) cached=$(meminfo Cached)
    ((rss > peak_rss)) && peak_rss=$rss
    ((avail < min_avail)) && min_avail=$avail
    ((cached > max_cached)) && max_cached=$cached
    samples=$((samples + 1))
    echo "$peak_rss $min_avail $max_cached $samples" > "$out/sampler.tmp"
    mv -f "$out/sampler.tmp" "$out/sampler.txt"
    sleep 1
  done ) &
sampler_pid=$!

# Let the workers reach their size before the first case.
for _ in $(seq 1 30); do
  (($(stress_rss_kb) > 65536)) && break
  sleep 1
done
echo "memory-pressure: stress-ng (pid $stress_pid) holds $(($(stress_rss_kb) / 1024)) MiB; running the matrix"

# --case-timeout 180: the stress takes two thirds of the guest's one vCPU
# and every case runs several times slower (A took 12 s in a CI run beside
# another guest, movable-gup-ref past the default 60 s). The verdicts are
# the test, not the time.
"$bin" run --module "$PINMATRIX_MODULE" --placement movable --device rxe0 --cases pin --case-timeout 180 --out "$out"
rc=$?

alive=false
kill -0 "$stress_pid" 2>/dev/null && alive=true
kill "$sampler_pid" "$reader_pid" 2>/dev/null
kill -TERM "$stress_pid" 2>/dev/null
wait "$sampler_pid" "$reader_pid" "$stress_pid" 2>/dev/null
read -r peak_rss min_avail max_cached samples < "$out/sampler.txt" || peak_rss=0
cat > "$out/stress.json" <<EOF
{"tool": "stress-ng $(stress-ng --version 2>/dev/null | sed -n 's/^stress-ng, version \([^ ]*\).*/\1/p')",
 "command": "stress-ng --vm 2 --vm-bytes $vm_bytes --timeout 0",
 "page_cache_files": ${#big[@]},
 "page_cache_bytes": $big_bytes,
 "alive_at_end": $alive,
 "mem_total_kb": $(meminfo MemTotal),
 "mem_available_before_kb": $avail_before,
 "mem_available_min_kb": ${min_avail:-0},
 "cached_max_kb": ${max_cached:-0},
 "stress_rss_peak_kb": ${peak_rss:-0},
 "samples": ${samples:-0},
 "matrix_exit": $rc}
EOF
cat "$out/stress.json"
tail -n 4 "$out/stress-ng.log"
exit "$rc"
