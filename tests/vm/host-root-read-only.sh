#!/bin/bash
# In a guest: the host's root stays unwritten even where the guest mounts
# it read-write. Remounts / read-write (a guest's root can), then tries to
# create PROBE there. Exit 0 when the write was refused, 1 when it was made.
# Usage: host-root-read-only.sh PROBE
set -u
probe=${1:?usage: host-root-read-only.sh PROBE}
grep -E "^[^ ]+ / " /proc/mounts
if mount -o remount,rw /; then
  echo "host-root-read-only: / remounted read-write in the guest"
else
  echo "host-root-read-only: / not remounted read-write in the guest"
fi
if (: > "$probe") 2> "$TMPDIR/write-error"; then
  echo "host-root-read-only: WROTE $probe on the host's root"
  rm -f "$probe"
  exit 1
fi
echo "host-root-read-only: the write was refused: $(cat "$TMPDIR/write-error")"
