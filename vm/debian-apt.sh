#!/bin/bash
# apt-get / apt-cache on a private configuration kept in the cache: Debian's
# bookworm (with its updates and security suites), trixie and unstable, from
# the same mirrors the host's own sources name. The host's sources list, its
# package lists and its dpkg state are never written: kernels and headers are
# only ever downloaded and extracted, never installed.
#
# Usage: debian-apt.sh CACHE_DIR apt-get|apt-cache ARGS...
#        debian-apt.sh CACHE_DIR --sources SUITE (prints SUITE's deb lines, with its
#                                               updates and security suites)
#
# $CACHE_DIR/apt/: sources.list, lists/, archives/ (apt's cache), updated
# (stamp of the last update). The lists are refreshed when older than
# PINMATRIX_APT_MAX_AGE seconds (default a day) or when a caller runs
# `apt-get update` itself.
set -euo pipefail

die() { echo "debian-apt: ERROR: $*" >&2; exit 2; }

SUITES=(bookworm bookworm-updates trixie trixie-updates sid)
SECURITY_SUITES=(bookworm-security trixie-security)
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

[[ $# -ge 2 ]] || die "usage: $0 CACHE_DIR apt-get|apt-cache ARGS... | CACHE_DIR --sources SUITE"
cache=$1
shift
[[ -d $cache ]] || mkdir -p "$cache"
dir=$(cd "$cache" && pwd)/apt

# The URI of the host's entry for SUITE (deb822 .sources or one-line lists).
host_uri() {
  local suite=$1 f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    awk -v want="$suite" '
      /^[[:space:]]*$/ { if (hit && uri != "") { print uri; exit } hit = 0; uri = ""; next }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == want) hit = 1 }
      END { if (hit && uri != "") print uri }' "$f" | head -n 1
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] || continue
    awk -v want="$suite" '$1 == "deb" {
      i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /^\[/ || $i ~ /\]$/) i++
      if ($(i + 1) == want) { print $i; exit } }' "$f"
  done
}

mirror=$(host_uri bookworm | head -n 1)
security=$(host_uri bookworm-security | head -n 1)
[[ -n $mirror ]] || die "the host's apt sources name no bookworm mirror"
[[ -n $security ]] || security=${mirror%/debian}/debian-security
# One sources line per suite of the private configuration.
sources_lines() {
  local s
  for s in "$@"; do
    case $s in
      *-security) echo "deb [signed-by=$KEYRING] $security $s main" ;;
      *) echo "deb [signed-by=$KEYRING] $mirror $s main" ;;
    esac
  done
}
if [[ $1 == --sources ]]; then
  [[ $# -eq 2 ]] || die "--sources needs a SUITE"
  case $2 in
    sid | unstable) sources_lines "$2" ;;
    *) sources_lines "$2" "$2-updates" "$2-security" ;;
  esac
  exit 0
fi

tool=$1
shift
[[ $tool == apt-get || $tool == apt-cache ]] || die "unknown tool '$tool' (apt-get or apt-cache)"
[[ -r $KEYRING ]] || die "$KEYRING missing (apt-get install debian-archive-keyring)"

mkdir -p "$dir/lists/partial" "$dir/archives/partial"

# One apt at a time on the private configuration (runs that prepare two
# kernels at once share it): a run that must wait says so, and who holds
# it, as the cache's other locks do (vm/cache_lock.hpp): the holder's line
# is PID, since (epoch seconds), what, command line, tab-separated. Held
# through the exec below (fd 9 stays open), released when apt ends.
lock=$dir/pinmatrix.lock
exec 9<>"$lock"
if ! flock -n 9; then
  while :; do
    IFS=$'\t' read -r pid since _ command < "$lock" || true
    # The line is the last holder's: a holder that has just taken the lock
    # has not written its own yet, and one that is gone names no one.
    if [[ $pid =~ ^[0-9]+$ && $since =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
      holder="PID $pid ($command), for $(($(date +%s) - since)) s"
    else
      holder="a process that has not said who it is yet"
    fi
    echo "debian-apt: waiting for $dir: held by $holder ($lock)" >&2
    flock -w 60 9 && break
  done
fi
printf '%s\t%s\t%s\t%s\n' "$$" "$(date +%s)" "the private apt configuration" \
  "$(tr '\0' ' ' < "/proc/$PPID/cmdline" 2>/dev/null | cut -c1-200)" > "$lock"
sources=$dir/sources.list
sources_lines "${SUITES[@]}" "${SECURITY_SUITES[@]}" > "$sources.tmp"
if cmp -s "$sources.tmp" "$sources"; then rm -f "$sources.tmp"; else mv -f "$sources.tmp" "$sources"; fi
# apt downloads as _apt: the lists and archives must be writable by it.
if [[ $EUID -eq 0 ]] && id _apt >/dev/null 2>&1; then
  chown -R _apt "$dir/lists" "$dir/archives"
fi

opts=(
  -o "Dir::Etc::SourceList=$sources" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir" -o "Dir::Cache::archives=$dir/archives"
  # apt's binary caches of the lists, kept beside them (a host may turn its
  # own off, as Debian's container images do): without them every call
  # parses the lists of five suites again, ~2 s
  -o "Dir::Cache::pkgcache=$dir/pkgcache.bin" -o "Dir::Cache::srcpkgcache=$dir/srcpkgcache.bin"
  -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
  -o APT::Architectures::=amd64 -o Acquire::Languages=none
  # Unstable's Release file may be past its Valid-Until on a mirror snapshot.
  -o Acquire::Check-Valid-Until=false
)

update() {
  echo "debian-apt: updating the private package lists (${SUITES[*]} ${SECURITY_SUITES[*]})" >&2
  apt-get "${opts[@]}" update -qq >&2 || die "apt-get update failed (private lists in $dir/lists)"
  touch "$dir/updated"
}

if [[ $tool == apt-get && ${1:-} == update ]]; then
  update
  exit 0
fi
max_age=${PINMATRIX_APT_MAX_AGE:-86400}
if [[ ! -e $dir/updated ]] || (($(date +%s) - $(stat -c %Y "$dir/updated") > max_age)); then
  update
fi
exec "$tool" "${opts[@]}" "$@"
