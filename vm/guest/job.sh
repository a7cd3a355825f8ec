#!/bin/bash
# shellcheck disable=SC2154 # job_mode, modules, ...: assigned by JOB_ENV
# The guest's job, run by vm/guest/stage2 inside the guest: bash job.sh JOB_ENV.
# JOB_ENV (/run/pinmatrix/job.env) is written by `pinmatrix vm` before the
# boot (vm/guest_job.cpp: write_guest_job) and says what to run:
#   job_mode        matrix | command | ssh
#   modules         the directory of the modules built for this kernel
#   module_ko       the test module (pinmatrix.ko) in it
#   ualink_sim_ko   the UALink reference model (matrix mode)
#   load_test_modules  0 under --no-module: no out-of-tree module is loaded
#   disk_dir        1 when the plan has a case on a disk file (cases/backing/)
#   vdpa_sim        1 when the plan has pinner/vdpa-sim
#   vfio_edu        1 when the plan maps through VFIO type1 (QEMU's edu device)
#   run_argv=(...)  `pinmatrix run ...` (matrix mode)
#   bench_argv=(...) pinmatrix_bench after the cases, or empty (matrix mode)
#   guest_cmd       a shell command (command and ssh modes)
#   ssh_key, ssh_port  the managed node's authorized key and host port (ssh)
# Its exit status is the job's: the run's, or the command's.
set -u
[[ $# -eq 1 && -r $1 ]] || { echo "pinmatrix-job: ERROR: usage: job.sh JOB_ENV" >&2; exit 2; }
# shellcheck source=/dev/null
. "$1"
dir=/run/pinmatrix

# bash's own read: no exec of cut over 9p.
mark() { local up _; read -r up _ < /proc/uptime; echo "$1 $up" >> "$dir/timeline"; }

# Soft-RoCE on a dummy netdev: loopback traffic never leaves rxe0.
start_rxe() {
  if modprobe rdma_rxe && modprobe dummy numdummies=0 &&
     ip link add pm0 type dummy && ip link set pm0 up &&
     rdma link add rxe0 type rxe netdev pm0; then
    echo 'pinmatrix-job: rxe0 on pm0 ready'
  else
    echo 'pinmatrix-job: could not create rxe0: cases needing it will SKIP'
  fi
}

# The UALink reference model (ualink_sim, a test double for amdgpu): its DRM
# helpers from the guest kernel, then the module built with the others.
load_ualink_sim() {
  if modprobe drm_shmem_helper && insmod "$ualink_sim_ko"; then
    echo 'pinmatrix-job: ualink_sim loaded'
  else
    echo 'pinmatrix-job: could not load ualink_sim: UALink cases will SKIP'
  fi
}

# sshd on the host root's openssh-server; its keys and config on the guest's
# tmpfs (sshd refuses group-readable host keys), the host key's public half
# in the results dir for known_hosts.
start_sshd() {
  local sshdir=/run/pinmatrix-sshd nic
  modprobe virtio_net
  for nic in /sys/class/net/*; do
    nic=${nic##*/}
    [[ $nic == lo || $nic == pm0 ]] || break
  done
  ip link set "$nic" up && ip addr add 10.0.2.15/24 dev "$nic"
  mkdir -p /run/sshd "$sshdir" "$dir/ssh" /run/tmp && chmod 0755 /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$sshdir/ssh_host_ed25519_key"
  cp "$sshdir/ssh_host_ed25519_key.pub" "$dir/ssh/"
  cp "$ssh_key" "$sshdir/authorized_keys"
  chmod 0600 "$sshdir/authorized_keys"
  cat > "$sshdir/sshd_config" <<CONFIG
Port 22
HostKey $sshdir/ssh_host_ed25519_key
AuthorizedKeysFile $sshdir/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile /run/sshd.pid
SetEnv TMPDIR=/run/tmp
Subsystem sftp /usr/lib/openssh/sftp-server
CONFIG
  if /usr/sbin/sshd -f "$sshdir/sshd_config" -E "$dir/ssh/sshd.log"; then
    echo "pinmatrix-job: sshd listening (host 127.0.0.1:$ssh_port)"
  else
    echo 'pinmatrix-job: ERROR: sshd did not start'
  fi
}

# A small ext4 filesystem on a loop device for the backing suite's file
# cases (cases/backing/): tmpfs, the guest's only writable filesystem, needs
# no dirty tracking, which is what those cases are about.
# Run beside the other preparations: it leaves $disk_ready behind for
# run_matrix to export PINMATRIX_DISK_DIR.
disk=/run/pinmatrix-disk disk_ready=/run/tmp/disk-ready
prepare_disk_dir() {
  mkdir -p "$disk" &&
    modprobe loop && modprobe ext4 &&
    truncate -s 64M /run/tmp/disk.img &&
    mkfs.ext4 -q -F /run/tmp/disk.img &&
    mount -o loop /run/tmp/disk.img "$disk" &&
    : > "$disk_ready" ||
    echo 'pinmatrix-job: no ext4 scratch filesystem: the file backing cases will SKIP'
}

# The vDPA network simulator behind vhost-vdpa (pinner/vdpa-sim): mapping by
# physical address, which pins (use_va=0, where vdpa_sim has the parameter;
# 6.1's always does), one device added with iproute2's vdpa tool.
prepare_vdpa_sim() {
  local params=()
  modinfo -F parm vdpa_sim 2> /dev/null | grep -q '^use_va:' && params=(use_va=0)
  if modprobe vdpa_sim "${params[@]}" && modprobe vdpa_sim_net && modprobe vhost_vdpa &&
     vdpa dev add mgmtdev vdpasim_net name pm-vdpa0; then
    echo 'pinmatrix-job: vDPA simulator pm-vdpa0 ready'
  else
    echo 'pinmatrix-job: no vDPA simulator: pinner/vdpa-sim will SKIP'
  fi
}

# QEMU's edu device (PCI 1234:11e8, behind intel-iommu) bound to vfio-pci for
# VFIO type1 (pinner/vfio-type1, --second-pin vfio-type1). The guest's IOMMU
# remaps no interrupts (intremap=off; our kernel has no IRQ_REMAP), which
# type1 refuses unless told: nothing here uses the device's interrupts.
prepare_vfio_edu() {
  if modprobe vfio_iommu_type1 allow_unsafe_interrupts=1 && modprobe vfio-pci &&
     echo 1234 11e8 > /sys/bus/pci/drivers/vfio-pci/new_id &&
     ls /dev/vfio/[0-9]* > /dev/null 2>&1; then
    echo 'pinmatrix-job: edu bound to vfio-pci'
  else
    echo 'pinmatrix-job: edu not bound to vfio-pci: VFIO type1 cases will SKIP'
  fi
}

# The user's --guest-cmd, as a shell runs it (without this script's set -u).
run_guest_cmd() {
  set +u
  eval "$guest_cmd"
}

# A managed node: the command, then sshd serves until the host says stop.
serve_ssh() {
  local rc=0
  start_sshd
  if [[ -n $guest_cmd ]]; then
    run_guest_cmd
    rc=$?
  fi
  echo 'pinmatrix-job: waiting for the host to create stop'
  while [[ ! -e $dir/stop ]]; do sleep 1; done
  kill "$(cat /run/sshd.pid)" 2>/dev/null
  return "$rc"
}

# The O_DIRECT first pin's loop device and device-mapper target (--no-module).
load_direct_write_modules() {
  echo 'pinmatrix-job: --no-module: no out-of-tree module loaded'
  modprobe loop && modprobe dm_mod ||
    echo 'pinmatrix-job: no loop or device-mapper: the direct-write first pin will SKIP'
}

# What the plan needs, prepared side by side: each is a few modprobes and a
# tool or two read over 9p (0.3-1.4 s apiece under TCG), none needs another.
prepare_for_matrix() {
  local jobs=()
  start_rxe & jobs+=($!)
  if ((load_test_modules)); then
    load_ualink_sim & jobs+=($!)
  else
    load_direct_write_modules & jobs+=($!)
  fi
  if ((disk_dir)); then
    prepare_disk_dir & jobs+=($!)
  fi
  if ((vdpa_sim)); then
    prepare_vdpa_sim & jobs+=($!)
  fi
  if ((vfio_edu)); then
    prepare_vfio_edu & jobs+=($!)
  fi
  wait "${jobs[@]}"
  [[ -e $disk_ready ]] && export PINMATRIX_DISK_DIR=$disk
}

# The matrix; with bench_argv, the benchmarks after the cases
# (benchmarks/README.md), the run's exit status kept as the job's.
run_matrix() {
  local rc
  prepare_for_matrix
  mark runner-start
  "${run_argv[@]}"
  rc=$?
  if ((${#bench_argv[@]})); then
    echo 'pinmatrix-job: benchmarks'
    mark bench-start
    "${bench_argv[@]}"
    echo $? > "$dir/bench_exit"
  fi
  return "$rc"
}

# Nothing but the run pins pages here: its pin balance decides (cases/pin_balance.hpp).
export PINMATRIX_MODULE=$module_ko PINMATRIX_MODULES=$modules PINMATRIX_QUIET_MACHINE=1
case $job_mode in
  ssh) start_rxe; serve_ssh ;;
  command) start_rxe; run_guest_cmd ;;
  matrix) run_matrix ;;
  *) echo "pinmatrix-job: ERROR: unknown job_mode '$job_mode'" >&2; exit 2 ;;
esac
