# apt-get as tools/setup-host runs it, sourced: where another apt holds a
# lock (a fresh cloud VM's unattended-upgrades), it waits, bounded, and says
# who holds it, rather than failing at once. dpkg's lock apt waits for
# itself (DPkg::Lock::Timeout); the package lists' lock, which
# `apt-get update` takes and that option does not cover, is retried here.
#
# apt_lock_wait_s: the bound, in seconds (PINMATRIX_APT_LOCK_WAIT, else 600).
# apt_lists_dir: apt's Dir::State::Lists (a test passes its own to apt too).
apt_lock_wait_s=${PINMATRIX_APT_LOCK_WAIT:-600}
[[ $apt_lock_wait_s =~ ^[0-9]+$ ]] || { echo "apt-wait: PINMATRIX_APT_LOCK_WAIT is not a number of seconds" >&2; exit 2; }
apt_lists_dir=${apt_lists_dir:-/var/lib/apt/lists}

# "PID N (comm)" of the process that holds FILE's POSIX lock (/proc/locks),
# or "another process" when it cannot be told.
lock_holder() {
  local ino pid
  ino=$(stat -c %i "$1" 2>/dev/null) || { echo "another process"; return; }
  pid=$(awk -v ino=":$ino" '$6 ~ ino"$" {print $5; exit}' /proc/locks 2>/dev/null)
  [[ -n $pid ]] || { echo "another process"; return; }
  echo "PID $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo '?'))"
}

# apt-get update [ARGS...], waiting for the package lists' lock.
apt_update_waiting() {
  local waited=0 out lock=$apt_lists_dir/lock
  until out=$(apt-get update -qq "$@" 2>&1); do
    if ! grep -q 'Unable to lock directory\|Could not get lock' <<< "$out"; then
      echo "$out" >&2
      return 1
    fi
    if ((waited >= apt_lock_wait_s)); then
      echo "apt-wait: ERROR: $(lock_holder "$lock") has held $lock for ${apt_lock_wait_s} s; try again when it is done" >&2
      return 1
    fi
    ((waited == 0)) &&
      echo "apt-wait: waiting up to ${apt_lock_wait_s} s for $lock, held by $(lock_holder "$lock")" >&2
    sleep 2
    waited=$((waited + 2))
  done
  [[ -z $out ]] || echo "$out" >&2
}

# apt-get install ARGS..., waiting for dpkg's lock (apt says who holds it).
apt_install_waiting() {
  apt-get -o DPkg::Lock::Timeout="$apt_lock_wait_s" install "$@"
}
