#!/bin/bash
# In a fleet-test guest (run over ssh by tests/fleet/ansible-guest.sh): give
# the guest what a node's disk gives a package install. The guest's root is
# the host's, read-only over 9p; here /etc, /usr, /var and /tmp become
# overlays whose upper layers are under DISK (tmpfs), so apt, dpkg and DKMS
# write as on a node and the host sees nothing of it. The running kernel's
# module tree gets an overlay of its own (DISK/modules-RELEASE: DKMS installs
# into updates/dkms and runs depmod), and /lib/modules still shows only the
# guest's kernel (DKMS's package hook builds for the kernels it finds there;
# under /usr, the host's would show). DISK is what the test saves before a
# reboot and puts back after it, as a disk keeps it; an upper layer found
# there is used again. man-db's package trigger is off on this disk: it would
# index every manual page of the host under TCG (minutes).
# Usage: guest-node-disk.sh DISK
set -euo pipefail
disk=$1 release=$(uname -r)
fail() { echo "guest-node-disk: $*" >&2; exit 1; }
grep -q '^node-usr /usr overlay ' /proc/mounts && fail "/usr is already an overlay"
modprobe overlay || fail "no overlay filesystem in $release"

# The guest kernel's module tree, before /usr covers where it is mounted
# (with /lib a link to usr/lib).
mods=$(readlink -f /lib/modules)
mkdir -p /run/node-modules-lower
mount --bind "/lib/modules/$release" /run/node-modules-lower

overlay() { # NAME LOWER MOUNTPOINT
  mkdir -p "$disk/$1/upper" "$disk/$1/work"
  mount -t overlay "node-$1" -o "lowerdir=$2,upperdir=$disk/$1/upper,workdir=$disk/$1/work" "$3" ||
    fail "cannot mount an overlay on $3"
}
for d in etc usr var tmp; do overlay "$d" "/$d" "/$d"; done
mountpoint -q "$mods" || mount -t tmpfs -o mode=0755 node-modules "$mods"
mkdir -p "$mods/$release"
overlay "modules-$release" /run/node-modules-lower "$mods/$release"

rm -f /var/lib/man-db/auto-update
echo "guest-node-disk: /etc /usr /var /tmp and /lib/modules/$release writable, kept in $disk"
