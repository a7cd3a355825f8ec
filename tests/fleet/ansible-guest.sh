#!/usr/bin/env bash
# The fleet collection (ansible/collections/.../pinmatrix/fleet), built and
# installed with ansible-galaxy as a user would, against QEMU guests as
# managed nodes over SSH: `pinmatrix vm --ssh-port` forwards 127.0.0.1:PORT
# to the guest's sshd (QEMU user networking, restrict=on), which accepts a
# key made here; each guest's host key is pinned in known_hosts. Nodes:
#   guest              the real node (Soft-RoCE rxe0): preflight -> install
#                      (the Debian packages from DEBS_DIR, with apt; DKMS
#                      builds the module against the guest kernel's
#                      headers) -> run (the installed pinmatrix, which loads
#                      DKMS's module with modprobe) -> collect
#   guest-noheaders    the same guest, kernel headers looked for where there
#                      are none
#   guest-nordma       a second guest whose rxe0 was deleted: no RDMA device
#   guest-unreachable  a loopback port nothing listens on
# guest-noheaders and guest-nordma must end as "cannot run here" in the
# fleet report and guest-unreachable as "unreachable", each with its reason,
# not drop out. The guest's root is the host's, read-only: the real node is
# given a writable "disk" first (tests/fleet/guest-node-disk.sh: overlays
# on /etc, /usr, /var, /tmp and its kernel's module tree), so apt, dpkg and
# DKMS write as on a node. The play runs with --check first (no file written on the
# controller), then for real, then again on the real node only (--limit
# guest; idempotent: the run is not repeated). Then a kernel update: the
# node's disk and work directory are kept (the guest's are tmpfs, so they
# are saved and put back over ssh), the guest is powered off and booted with
# another kernel, and a third play must not install the packages again but
# have DKMS build the module for the new release, run the matrix again and
# report the new kernel.
# The guests have 1 vCPU: with 2 (--cpus 2) on CI's 2-core host the first
# play took 650 s instead of 382 s (measured; the module's build forks and
# execs much, and cross-vCPU work is dear under TCG).
# Usage: ansible-guest.sh OUT_DIR PINMATRIX_BIN SOURCE_DIR DEBS_DIR   (exit 77: skipped)
#   DEBS_DIR: the packages (tools/build --packages writes BUILD/debs)
#   PINMATRIX_FLEET_SECOND_KERNEL: the kernel of the second boot
#   (default debian:6.12.117+deb12-amd64; any `pinmatrix vm --kernel` value)
set -Eeuo pipefail
# A step that fails without a word says which, last (a CI log cut to its
# head and tail keeps that): its command's first line, as a heredoc's text
# would push the rest out of the tail.
trap 'echo "fleet-test: FAILED at line $LINENO (exit $?): ${BASH_COMMAND%%$'"'"'\n'"'"'*}" >&2' ERR
out=$1 bin=$2 src=$3 debs=$4
kernel2=${PINMATRIX_FLEET_SECOND_KERNEL:-debian:6.12.117+deb12-amd64}
[[ $EUID -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
for t in qemu-system-x86_64 ansible-playbook ansible-galaxy ssh ssh-keygen /usr/sbin/sshd; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup-host)"; exit 77; }
done
compgen -G "$debs/pinmatrix-dkms_*.deb" >/dev/null ||
  { echo "SKIP: no packages in $debs (built without tools/build --packages)"; exit 77; }

rm -rf "$out"
mkdir -p "$out/ssh" "$out/src"
# A frozen copy of the sources: the plays must see one tree (the second
# play's "nothing to do" depends on the same source digest).
tar -C "$src" --exclude='./build*' --exclude='./obj-*' --exclude=./debian --exclude=./.git --exclude=./ansible/fleet-results -cf - . |
  tar -C "$out/src" -xf -
ssh-keygen -q -t ed25519 -N '' -C pinmatrix-fleet-test -f "$out/ssh/id_ed25519"

# Each guest by name: its launcher's PID, its loopback port and its dir.
declare -A vm_pids vm_ports vm_dirs
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# ssh options for guest NAME (its port; the host keys of every guest pinned).
ssh_opts_for() {
  echo -i "$out/ssh/id_ed25519" -p "${vm_ports[$1]}" -o BatchMode=yes -o StrictHostKeyChecking=yes \
    -o UserKnownHostsFile="$out/ssh/known_hosts" -o ConnectTimeout=10
}
# start_guest NAME VM_DIR [pinmatrix vm options]: a guest as a managed node
# on a fresh loopback port, booting in the background.
start_guest() {
  local name=$1 dir=$2
  shift 2
  vm_dirs[$name]=$dir vm_ports[$name]=$(free_port)
  "$bin" vm --out "$dir" --ssh-port "${vm_ports[$name]}" --ssh-key "$out/ssh/id_ed25519.pub" --timeout 3000 "$@" \
    > "$dir.log" 2>&1 &
  vm_pids[$name]=$!
  echo "fleet-test: $name booting (${*:-the default kernel}), sshd on 127.0.0.1:${vm_ports[$name]}"
}
# await_guest NAME: its host key pinned, ssh into it works.
await_guest() {
  local name=$1 hostkey=${vm_dirs[$1]}/guest/ssh/ssh_host_ed25519_key.pub
  for _ in $(seq 600); do
    [[ -s $hostkey ]] && break
    kill -0 "${vm_pids[$name]}" 2>/dev/null || { echo "fleet-test: $name ended early"; cat "${vm_dirs[$name]}.log"; exit 1; }
    sleep 1
  done
  [[ -s $hostkey ]] || { echo "fleet-test: no host key from $name"; exit 1; }
  touch "$out/ssh/known_hosts"
  grep -v "^\[127.0.0.1\]:${vm_ports[$name]} " "$out/ssh/known_hosts" > "$out/ssh/known_hosts.new" || true
  echo "[127.0.0.1]:${vm_ports[$name]} $(cut -d' ' -f1,2 "$hostkey")" >> "$out/ssh/known_hosts.new"
  mv "$out/ssh/known_hosts.new" "$out/ssh/known_hosts"
  # shellcheck disable=SC2046   # word-split options
  for _ in $(seq 120); do
    ssh $(ssh_opts_for "$name") root@127.0.0.1 true 2>/dev/null && break
    sleep 2
  done
  # shellcheck disable=SC2046,SC2016   # word-split options; expanded in the guest
  ssh $(ssh_opts_for "$name") root@127.0.0.1 'echo "fleet-test: ssh into $(uname -r) ok"'
}
# The guest powers off when its job sees stop.
stop_guest() {
  local name=$1 pid=${vm_pids[$1]:-}
  [[ -n $pid ]] || return 0
  mkdir -p "${vm_dirs[$name]}/guest" && touch "${vm_dirs[$name]}/guest/stop"
  for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill "$pid" 2>/dev/null || true   # only the launcher we started; it kills its QEMU
  wait "$pid" 2>/dev/null || true
  vm_pids[$name]=
}
refusing_pid=
stop_all() {
  for name in "${!vm_pids[@]}"; do stop_guest "$name"; done
  [[ -z $refusing_pid ]] || kill "$refusing_pid" 2>/dev/null || true   # the holder we started
}
# unreachable_port: a loopback port held bound but never listening, for the
# whole test: a connection to it is refused (SSH: "Connection refused") and
# nothing else can take it meanwhile. A port bound and closed again was
# taken once in CI by another test's guest forwarding SSH: the node meant to
# be unreachable answered and hung up ("Broken pipe").
hold_refusing_port() {
  python3 -c 'import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(86400)' "$out/refusing-port" > /dev/null &
  refusing_pid=$!
  for _ in $(seq 100); do [[ -s $out/refusing-port ]] && break; sleep 0.1; done
  unreachable_port=$(cat "$out/refusing-port")
}
trap stop_all EXIT
# shellcheck disable=SC2029,SC2046   # the commands are for the guest's shell; word-split options
on_guest() { ssh $(ssh_opts_for guest) root@127.0.0.1 "$@"; }
# The module is gone from the guest and no pin is left (vmstat counters agree).
check_unpinned() {
  # shellcheck disable=SC2016   # expanded in the guest
  on_guest 'if [ -e /sys/module/pinmatrix ]; then echo "fleet-test: the module is still loaded"; exit 1; fi
    awk "/^nr_foll_pin_acquired/ {a=\$2} /^nr_foll_pin_released/ {r=\$2} END {print \"pins acquired\", a, \"released\", r; exit a != r}" /proc/vmstat'
}

# The real node's disk (a tmpfs here): what apt, dpkg and DKMS write.
node_disk() { on_guest "bash $out/src/tests/fleet/guest-node-disk.sh /run/node-disk"; }

# The collection as a user installs it: built into a tarball and installed
# into a collections path of its own.
ansible-galaxy collection build --output-path "$out/galaxy" "$out/src/ansible/collections/ansible_collections/pinmatrix/fleet" >/dev/null
ansible-galaxy collection install -p "$out/collections" "$out"/galaxy/pinmatrix-fleet-*.tar.gz >/dev/null
[[ -f $out/collections/ansible_collections/pinmatrix/fleet/playbooks/site.yml ]] ||
  { echo "fleet-test: ansible-galaxy installed no pinmatrix.fleet"; exit 1; }

# A second guest without an RDMA device: its rxe0 deleted before sshd serves.
start_guest guest "$out/vm"
start_guest nordma "$out/vm-nordma" --guest-cmd 'rdma link delete rxe0'
await_guest guest
await_guest nordma
node_disk
hold_refusing_port

write_inventory() { # [with_nordma]
  local nordma=""
  [[ ${1:-} == with_nordma ]] && nordma="
    guest-nordma:
      ansible_port: ${vm_ports[nordma]}"
cat > "$out/inventory.yml" <<INV
pinmatrix_nodes:
  vars:
    ansible_host: 127.0.0.1
    ansible_port: ${vm_ports[guest]}
    ansible_user: root
    ansible_ssh_private_key_file: $out/ssh/id_ed25519
    ansible_ssh_common_args: -o StrictHostKeyChecking=yes -o UserKnownHostsFile=$out/ssh/known_hosts -o ControlPath=$out/ssh/cm-%C -o ConnectTimeout=10
    ansible_python_interpreter: /usr/bin/python3
    # The guest's root is the host's, read-only: scratch is its tmpfs.
    ansible_remote_tmp: /run/tmp/ansible
    pinmatrix_workdir: /run/tmp/pinmatrix-{{ inventory_hostname }}
    # The packages: apt installs them in the guest and DKMS builds the
    # module there against its kernel's headers.
    pinmatrix_debs_dir: $debs
    pinmatrix_cases: pin
    pinmatrix_placement: movable
    pinmatrix_fleet_dir: $out/fleet-results
    pinmatrix_controller_bin: $bin
  hosts:
    guest:
    guest-noheaders:
      pinmatrix_kdir: /nonexistent/linux-headers$nordma
    guest-unreachable:
      ansible_port: $unreachable_port
      # Without pipelining the first command sends ssh nothing on stdin,
      # so the reason is ssh's own ("Connection refused"); with it, Ansible
      # may be writing the module when ssh exits ("Broken pipe", CI once).
      ansible_pipelining: false
INV
}
write_inventory with_nordma

export ANSIBLE_CONFIG=$out/src/ansible/ansible.cfg ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
export ANSIBLE_COLLECTIONS_PATHS=$out/collections
# Each task's time in the plays' logs (play*.log): where the test's minutes go.
export ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks
play() { ansible-playbook -i "$out/inventory.yml" pinmatrix.fleet.site "$@"; }
# A play that failed: its log, then what failed again, last (where a log
# cut to its tail keeps it); the test fails.
play_failed() { # LOG
  cat "$1"
  echo "fleet-test: the play failed ($1):"
  grep -E -A4 '^(fatal|failed): ' "$1" | cut -c1-400 | tail -n 30
  grep -A6 'PLAY RECAP' "$1"
  exit 1
}
# The recap's failures, but for the node that is meant to be unreachable.
recap_failures() { grep -E 'failed=[1-9]|rescued=[1-9]|unreachable=[1-9]' "$1" | grep -v '^guest-unreachable '; }

echo "fleet-test: ansible-playbook --check"
files_before=$(find "$out" -type f ! -name 'play-check.log' | sort)
play --check > "$out/play-check.log" 2>&1 || play_failed "$out/play-check.log"
[[ ! -e $out/fleet-results ]] || { echo "fleet-test: --check wrote on the controller:"; find "$out/fleet-results"; exit 1; }
[[ $(find "$out" -type f ! -name 'play-check.log' | sort) == "$files_before" ]] ||
  { echo "fleet-test: --check left files:"; diff <(echo "$files_before") <(find "$out" -type f ! -name 'play-check.log' | sort); exit 1; }
! recap_failures "$out/play-check.log" || play_failed "$out/play-check.log"

echo "fleet-test: ansible-playbook"
t0=$(date +%s.%N)
play > "$out/play.log" 2>&1 || play_failed "$out/play.log"
t1=$(date +%s.%N)
wall=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
echo "$wall" > "$out/play-wall-seconds"
grep -A8 'PLAY RECAP' "$out/play.log"
! recap_failures "$out/play.log" || play_failed "$out/play.log"
echo "fleet-test: playbook wall time ${wall} s"

echo "fleet-test: the fleet report: $out/fleet-results/report/fleet.md"
python3 - "$out/fleet-results/report" <<'PY'
import json, sys, os
d = sys.argv[1]
doc = json.load(open(os.path.join(d, "results.json")))
nodes = {n["node"]: n for n in doc["nodes"]}
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
want(set(nodes) == {"guest", "guest-noheaders", "guest-nordma", "guest-unreachable"}, "four nodes")
want(nodes["guest"]["state"] == "ran", "guest ran")
guest = {c["id"]: c for c in doc["cases"] if c["node"] == "guest"}
for i in "ABCD":
    want(guest.get(i, {}).get("verdict") == "pass", "guest case %s pass" % i)
want(guest["B"]["observed"]["errno"] == 12, "guest B ENOMEM")
node_run = json.load(open(os.path.join(d, "..", "nodes", "guest", "results.json")))
want(node_run.get("module_loaded_from") == "modprobe pinmatrix",
     "guest's run loaded DKMS's module with modprobe (module_loaded_from %r)" % node_run.get("module_loaded_from"))
want(nodes["guest"]["facts"]["kernel_release"].endswith("-amd64"), "guest facts")
want(nodes["guest"]["facts"]["rdma_devices"][0]["name"] == "rxe0", "guest rxe0 in facts")
want(nodes["guest-nordma"]["facts"]["rdma_devices"] == [], "guest-nordma: no RDMA device in its facts")
for n, why in (("guest-noheaders", "no kernel headers"), ("guest-nordma", "no RDMA device for ibv_reg_mr (found: none)")):
    want(nodes[n]["state"] == "cannot_run", n + " cannot_run")
    want(why in nodes[n].get("reason", ""), n + " reason: " + why)
    rec = [c for c in doc["cases"] if c["node"] == n]
    want(len(rec) == 1 and rec[0]["verdict"] == "skip" and rec[0]["reason"].startswith("cannot run here: "),
         n + " one SKIP record")
want(nodes["guest-unreachable"]["state"] == "unreachable", "guest-unreachable: unreachable")
want("Connection refused" in nodes["guest-unreachable"].get("reason", ""), "guest-unreachable: SSH's reason")
rec = [c for c in doc["cases"] if c["node"] == "guest-unreachable"]
want(len(rec) == 1 and rec[0]["verdict"] == "error" and rec[0]["reason"].startswith("unreachable: "),
     "guest-unreachable: one ERROR record")
for f in ("report.html", "junit.xml", "results.ktap", "summary.md", "fleet.md"):
    want(os.path.getsize(os.path.join(d, f)) > 0, f)
if bad:
    print("fleet-test: FAILED:", "; ".join(bad))
    sys.exit(1)
print("fleet-test: fleet report checked")
PY
# The play installed the packages and DKMS built the module for this kernel.
grep -q '^changed: \[guest\]' <(sed -n '/TASK \[pinmatrix.fleet.pinmatrix_install : Install the packages (apt)\]/,/^TASK/p' "$out/play.log") ||
  { echo "fleet-test: the play did not install the packages on guest"; exit 1; }
on_guest 'dkms status pinmatrix; modinfo -n pinmatrix' | tee "$out/dkms-kernel-1.txt"
grep -q "^pinmatrix/[^,]*, $(on_guest uname -r), [^:]*: installed" "$out/dkms-kernel-1.txt" ||
  { echo "fleet-test: DKMS has not installed pinmatrix for the guest's kernel"; exit 1; }
# The node without RDMA has shown what it must: the later plays go without it.
stop_guest nordma
write_inventory
results=$out/fleet-results/nodes/guest/results.json
mtime=$(stat -c %Y "$results")
echo "fleet-test: ansible-playbook again on guest (idempotent)"
ta=$(date +%s.%N)
play --limit guest > "$out/play-again.log" 2>&1 || play_failed "$out/play-again.log"
tb=$(date +%s.%N)
wall_again=$(python3 -c "print(f'{$tb - $ta:.1f}')")
grep -A8 'PLAY RECAP' "$out/play-again.log"
! recap_failures "$out/play-again.log" || play_failed "$out/play-again.log"
grep -q 'TASK \[pinmatrix.fleet.pinmatrix_run : Run pinmatrix' "$out/play-again.log"
! grep -q '^changed: \[guest\]' <(sed -n '/TASK \[pinmatrix.fleet.pinmatrix_install : Install the packages (apt)\]/,/^TASK/p' "$out/play-again.log") ||
  { echo "fleet-test: the second play installed the packages again"; exit 1; }
[[ $(stat -c %Y "$out/fleet-results/nodes/guest/results.json") == "$mtime" ]] ||
  { echo "fleet-test: the second play ran the matrix again"; exit 1; }

check_unpinned

# --- A kernel update: the same node, its work directory kept, another kernel.
rel1=$(on_guest uname -r)
echo "$rel1" > "$out/kernel-1"
# The guest's disk and scratch are tmpfs: what a node's disk keeps across
# the reboot is saved here and put back after the second boot (the overlays'
# upper layers with their whiteouts and xattrs; not their work dirs).
on_guest "tar -C /run --xattrs --xattrs-include='trusted.*' --exclude='node-disk/*/work' -cf - node-disk tmp/pinmatrix-guest" \
  > "$out/node-disk.tar"
cp "$results" "$out/results-kernel-1.json"
stop_guest guest
echo "fleet-test: guest powered off; booting $kernel2"
start_guest guest "$out/vm-2" --kernel "$kernel2"
await_guest guest
on_guest "tar -C /run --xattrs --xattrs-include='trusted.*' -xpf -" < "$out/node-disk.tar"
node_disk
rel2=$(on_guest uname -r)
echo "$rel2" > "$out/kernel-2"
[[ $rel2 != "$rel1" ]] || { echo "fleet-test: the second boot runs $rel1 again"; exit 1; }
write_inventory

echo "fleet-test: ansible-playbook after the kernel update ($rel1 -> $rel2)"
t2=$(date +%s.%N)
play > "$out/play-kernel-2.log" 2>&1 || play_failed "$out/play-kernel-2.log"
t3=$(date +%s.%N)
wall3=$(python3 -c "print(f'{$t3 - $t2:.1f}')")
grep -A8 'PLAY RECAP' "$out/play-kernel-2.log"
! recap_failures "$out/play-kernel-2.log" || play_failed "$out/play-kernel-2.log"
# On the node: this kernel's module next to the first kernel's, each with
# its own release in vermagic; this kernel's run directory with results.
# DKMS's module of each kernel in that kernel's module tree on the disk.
on_guest "set -e; dkms status pinmatrix; cd /run/node-disk
  for r in '$rel1' '$rel2'; do
    ko=\$(find modules-\$r/upper -name 'pinmatrix.ko*')
    echo \"\$ko: \$(modinfo -F vermagic \"\$ko\")\"
  done
  cd /run/tmp/pinmatrix-guest && ls runs/*/*/results.json" > "$out/node-after-kernel-2.txt"
cat "$out/node-after-kernel-2.txt"
echo "fleet-test: the fleet report: $out/fleet-results/report/fleet.md"
python3 - "$out" "$rel1" "$rel2" "$wall" "$wall_again" "$wall3" <<'PY'
import json, os, re, sys
out, rel1, rel2 = sys.argv[1:4]
walls = dict(zip(("first", "again", "kernel-2"), sys.argv[4:7]))
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
def load(*p):
    return json.load(open(os.path.join(out, *p)))

# Which tasks changed something on the real node in the third play.
changed, task = [], None
for line in open(os.path.join(out, "play-kernel-2.log")):
    m = re.match(r"TASK \[(.*)\] \*+", line)
    if m:
        task = m.group(1)
    elif re.match(r"changed: \[guest(\]| ->)", line) and task not in changed:
        changed.append(task)
print("fleet-test: third play changed on guest:", "; ".join(changed) or "nothing")
for t in ("pinmatrix.fleet.pinmatrix_install : DKMS builds and installs the module for the running kernel: pinmatrix",
          "pinmatrix.fleet.pinmatrix_run : Run pinmatrix (bounded by pinmatrix_run_timeout)"):
    want(t in changed, "changed in the third play: " + t)
# The packages did not change: kept on the node's disk, not installed again.
want("pinmatrix.fleet.pinmatrix_install : Install the packages (apt)" not in changed,
     "the packages were installed again")

# The module: DKMS's build for the new release beside the old one's.
node = open(os.path.join(out, "node-after-kernel-2.txt")).read()
want(re.search(r"^pinmatrix/[^,]+, %s, [^:]+: installed" % re.escape(rel2), node, re.M),
     "dkms status: pinmatrix installed for " + rel2)
for r in (rel1, rel2):
    want(re.search(r"^modules-%s/upper/\S*/pinmatrix\.ko(\.xz|\.zst|\.gz)?: %s " % (re.escape(r), re.escape(r)), node, re.M),
         "DKMS's pinmatrix.ko with vermagic %s in /lib/modules/%s" % (r, r))
want(re.search(r"^runs/%s/[^/]+/results\.json$" % re.escape(rel2), node, re.M), "runs/%s/.../results.json" % rel2)
want(re.search(r"^runs/%s/[^/]+/results\.json$" % re.escape(rel1), node, re.M), "runs/%s/ kept" % rel1)

# Collected: this kernel's results, facts and status.
old, new = load("results-kernel-1.json"), load("fleet-results", "nodes", "guest", "results.json")
want(old["kernel"]["release"] == rel1, "first results on " + rel1)
want(new["kernel"]["release"] == rel2, "collected results on %s (got %s)" % (rel2, new["kernel"]["release"]))
want(new != old, "a new results.json")
want(new.get("module_loaded_from") == "modprobe pinmatrix",
     "the run on %s loaded DKMS's module with modprobe (%r)" % (rel2, new.get("module_loaded_from")))
want(load("fleet-results", "nodes", "guest", "facts.json")["kernel_release"] == rel2, "facts.json names " + rel2)
status = load("fleet-results", "nodes", "guest", "status.json")
want(status["state"] == "ran" and status["kernel_release"] == rel2, "status.json: ran on " + rel2)
want(str(status["run_rc"]) in ("0", "1", "4"), "status.json: the run ran now (run_rc %r)" % status["run_rc"])
want("/runs/%s/" % rel2 in (status.get("run_dir") or ""), "status.json run_dir under runs/" + rel2)

# The fleet report: the node's row and its records name the new kernel.
doc = load("fleet-results", "report", "results.json")
nodes = {n["node"]: n for n in doc["nodes"]}
want(nodes["guest"]["state"] == "ran", "guest ran on " + rel2)
want(nodes["guest"]["facts"]["kernel_release"] == rel2, "report: guest's facts name " + rel2)
recs = [c for c in doc["cases"] if c["node"] == "guest"]
want({c["id"] for c in recs} >= set("ABCD"), "report: guest has cases A-D")
want(all(c["kernel"]["release"] == rel2 for c in recs),
     "report: guest's records name %s (got %s)" % (rel2, sorted({c["kernel"]["release"] for c in recs})))
# A case may SKIP (a give-back that decided nothing on a loaded host): not an error.
want(all(c["verdict"] != "error" for c in recs), "report: verdicts on %s, not errors" % rel2)
print("fleet-test: verdicts on %s:" % rel2, ", ".join("%s %s" % (c["id"], c["verdict"]) for c in recs))
want(nodes["guest-noheaders"]["state"] == "cannot_run" and nodes["guest-noheaders"]["facts"]["kernel_release"] == rel2,
     "guest-noheaders: cannot_run, facts on " + rel2)
want(nodes["guest-unreachable"]["state"] == "unreachable", "guest-unreachable: still unreachable")
md = open(os.path.join(out, "fleet-results", "report", "fleet.md")).read()
section = md.split("\n## guest: ", 1)[-1].split("\n## ", 1)[0]
want("| kernel | %s |" % rel2 in section, "fleet.md: guest's section names kernel " + rel2)
stale = [l for l in section.splitlines() if l.startswith(("| kernel |", "| run: module |")) and rel1 in l]
want(not stale, "fleet.md: guest's section still names %s: %s" % (rel1, stale))

print("fleet-test: play wall times (s):", ", ".join("%s %s" % kv for kv in walls.items()))
if bad:
    print("fleet-test: FAILED after the kernel update:", "; ".join(bad))
    sys.exit(1)
print("fleet-test: kernel update %s -> %s checked" % (rel1, rel2))
PY
check_unpinned
echo "fleet-test: PASS (plays ${wall} s, again ${wall_again} s, after the kernel update ${wall3} s)"
