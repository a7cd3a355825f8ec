#!/usr/bin/env bash
# The fleet playbook (ansible/site.yml) against a QEMU guest as a managed
# node over SSH: `pinmatrix vm --ssh-port` forwards 127.0.0.1:PORT to the
# guest's sshd (QEMU user networking, restrict=on), which accepts a key made
# here; the guest's host key is pinned in known_hosts. The inventory names
# the guest three times:
#   guest            the real node: preflight -> build (the module, against
#                    the guest kernel's headers) -> run -> collect
#   guest-noheaders  kernel headers looked for where there are none
#   guest-nordma     an RDMA device the node does not have (mlx5_0)
# The last two must end as "cannot run here" in the fleet report, not as a
# crash. The play runs with --check first (changes nothing), then for real,
# then again (idempotent: the run is not repeated).
# Usage: ansible-guest.sh OUT_DIR PINMATRIX_BIN SOURCE_DIR   (exit 77: skipped)
set -euo pipefail
out=$1 bin=$2 src=$3
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
for t in qemu-system-x86_64 ansible-playbook ssh ssh-keygen /usr/sbin/sshd; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup-host)"; exit 77; }
done

rm -rf "$out"
mkdir -p "$out/ssh" "$out/src"
# A frozen copy of the sources: the plays must see one tree (the second
# play's "nothing to do" depends on the same source digest).
tar -C "$src" --exclude='./build*' --exclude=./.git --exclude=./ansible/fleet-results -cf - . |
  tar -C "$out/src" -xf -
ssh-keygen -q -t ed25519 -N '' -C pinmatrix-fleet-test -f "$out/ssh/id_ed25519"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

"$bin" vm --out "$out/vm" --ssh-port "$port" --ssh-key "$out/ssh/id_ed25519.pub" --timeout 3000 \
  > "$out/vm.log" 2>&1 &
vm_pid=$!
stop_guest() {
  mkdir -p "$out/vm/guest" && touch "$out/vm/guest/stop"
  for _ in $(seq 60); do kill -0 "$vm_pid" 2>/dev/null || break; sleep 1; done
  kill "$vm_pid" 2>/dev/null || true   # only the launcher we started; it kills its QEMU
  wait "$vm_pid" 2>/dev/null || true
}
trap stop_guest EXIT

echo "fleet-test: guest booting, sshd on 127.0.0.1:$port"
hostkey=$out/vm/guest/ssh/ssh_host_ed25519_key.pub
for _ in $(seq 600); do
  [[ -s $hostkey ]] && break
  kill -0 "$vm_pid" 2>/dev/null || { echo "fleet-test: guest ended early"; cat "$out/vm.log"; exit 1; }
  sleep 1
done
[[ -s $hostkey ]] || { echo "fleet-test: no host key from the guest"; exit 1; }
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$hostkey")" > "$out/ssh/known_hosts"
ssh_opts=(-i "$out/ssh/id_ed25519" -p "$port" -o BatchMode=yes -o StrictHostKeyChecking=yes
          -o UserKnownHostsFile="$out/ssh/known_hosts" -o ConnectTimeout=10)
for _ in $(seq 120); do
  ssh "${ssh_opts[@]}" root@127.0.0.1 true 2>/dev/null && break
  sleep 2
done
ssh "${ssh_opts[@]}" root@127.0.0.1 'echo "fleet-test: ssh into $(uname -r) ok"'

cat > "$out/inventory.yml" <<INV
pinmatrix_nodes:
  vars:
    ansible_host: 127.0.0.1
    ansible_port: $port
    ansible_user: root
    ansible_ssh_private_key_file: $out/ssh/id_ed25519
    ansible_ssh_common_args: -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$out/ssh/known_hosts -o ControlPath=$out/ssh/cm-%C
    ansible_python_interpreter: /usr/bin/python3
    # The guest's root is the host's, read-only: scratch is its tmpfs.
    ansible_remote_tmp: /run/tmp/ansible
    pinmatrix_workdir: /run/tmp/pinmatrix-{{ inventory_hostname }}
    # The userspace build of this host (same distribution, visible in the
    # guest): compiling C++ under TCG would take most of an hour. The module
    # is built in the guest against its kernel's headers.
    pinmatrix_bin: $bin
    pinmatrix_cases: pin
    pinmatrix_placement: movable
    pinmatrix_fleet_dir: $out/fleet-results
    pinmatrix_controller_bin: $bin
    pinmatrix_src: $out/src
  hosts:
    guest:
    guest-noheaders:
      pinmatrix_kdir: /nonexistent/linux-headers
    guest-nordma:
      pinmatrix_rdma_device: mlx5_0
INV

export ANSIBLE_CONFIG=$out/src/ansible/ansible.cfg ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
play() { ansible-playbook -i "$out/inventory.yml" "$out/src/ansible/site.yml" "$@"; }

echo "fleet-test: ansible-playbook --check"
play --check > "$out/play-check.log" 2>&1 || { cat "$out/play-check.log"; exit 1; }
[[ ! -e $out/fleet-results/nodes/guest/results.json ]] || { echo "--check ran the matrix"; exit 1; }
! grep -E 'failed=[1-9]|rescued=[1-9]' "$out/play-check.log" || { cat "$out/play-check.log"; exit 1; }

echo "fleet-test: ansible-playbook"
t0=$(date +%s.%N)
play > "$out/play.log" 2>&1 || { cat "$out/play.log"; exit 1; }
t1=$(date +%s.%N)
wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
echo "$wall" > "$out/play-wall-seconds"
grep -A8 'PLAY RECAP' "$out/play.log"
! grep -E 'failed=[1-9]|rescued=[1-9]|unreachable=[1-9]' "$out/play.log" || { cat "$out/play.log"; exit 1; }
echo "fleet-test: playbook wall time ${wall} s"

results=$out/fleet-results/nodes/guest/results.json
mtime=$(stat -c %Y "$results")
echo "fleet-test: ansible-playbook again (idempotent)"
play > "$out/play-again.log" 2>&1 || { cat "$out/play-again.log"; exit 1; }
grep -A8 'PLAY RECAP' "$out/play-again.log"
grep -q 'TASK \[run : Run pinmatrix' "$out/play-again.log"
[[ $(stat -c %Y "$out/fleet-results/nodes/guest/results.json") == "$mtime" ]] ||
  { echo "fleet-test: the second play ran the matrix again"; exit 1; }

cat "$out/fleet-results/report/fleet.md"
python3 - "$out/fleet-results/report" <<'PY'
import json, sys, os
d = sys.argv[1]
doc = json.load(open(os.path.join(d, "results.json")))
nodes = {n["node"]: n for n in doc["nodes"]}
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
want(set(nodes) == {"guest", "guest-noheaders", "guest-nordma"}, "three nodes")
want(nodes["guest"]["state"] == "ran", "guest ran")
guest = {c["id"]: c for c in doc["cases"] if c["node"] == "guest"}
for i in "ABCD":
    want(guest.get(i, {}).get("verdict") == "pass", "guest case %s pass" % i)
want(guest["B"]["observed"]["errno"] == 12, "guest B ENOMEM")
want(nodes["guest"]["facts"]["kernel_release"].endswith("-amd64"), "guest facts")
want(nodes["guest"]["facts"]["rdma_devices"][0]["name"] == "rxe0", "guest rxe0 in facts")
for n, why in (("guest-noheaders", "no kernel headers"), ("guest-nordma", "no RDMA device mlx5_0")):
    want(nodes[n]["state"] == "cannot_run", n + " cannot_run")
    want(why in nodes[n].get("reason", ""), n + " reason: " + why)
    rec = [c for c in doc["cases"] if c["node"] == n]
    want(len(rec) == 1 and rec[0]["verdict"] == "skip" and rec[0]["reason"].startswith("cannot run here: "),
         n + " one SKIP record")
for f in ("report.html", "junit.xml", "results.ktap", "summary.md", "fleet.md"):
    want(os.path.getsize(os.path.join(d, f)) > 0, f)
if bad:
    print("fleet-test: FAILED:", "; ".join(bad))
    sys.exit(1)
print("fleet-test: fleet report checked")
PY
# The module is gone from the guest and no pin is left (vmstat counters agree).
ssh "${ssh_opts[@]}" root@127.0.0.1 'test ! -e /sys/module/pinmatrix &&
  awk "/^nr_foll_pin_acquired/ {a=\$2} /^nr_foll_pin_released/ {r=\$2} END {print \"pins acquired\", a, \"released\", r; exit a != r}" /proc/vmstat'
echo "fleet-test: PASS (playbook ${wall} s)"
