#!/bin/bash
# tools/setup-host on a machine whose apt has no package lists yet (a fresh
# container, a root made by mmdebstrap): it updates them and says so, and a
# kernel it still cannot resolve is one clear error, not apt-cache's silent
# exit 100. No download, and the host's apt state untouched: apt reads a
# configuration of the test's own (APT_CONFIG: empty lists, no sources, its
# own cache), so the update succeeds with nothing in it.
#
# Usage: setup_host_no_lists_test.sh PATH/TO/tools/setup-host
set -euo pipefail

setup_host=$1
[[ $EUID -eq 0 ]] || { echo "SKIP: tools/setup-host runs as root"; exit 77; }
command -v apt-get > /dev/null || { echo "SKIP: no apt-get"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/pm-setup-host.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
cat > "$work/apt.conf" <<CONF
Dir::State::Lists "$work/lists/";
Dir::Cache "$work/cache/";
Dir::Etc::sourcelist "/dev/null";
Dir::Etc::sourceparts "/nonexistent";
CONF
host_lists=$(ls -l --time-style=+%s /var/lib/apt/lists)

rc=0
APT_CONFIG=$work/apt.conf "$setup_host" > "$work/out" 2> "$work/err" || rc=$?
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
((rc == 2)) || fail "exit $rc, not 2"
grep -q '^setup-host: apt-get update$' "$work/err" || fail "the update was not said"
grep -q '^setup-host: ERROR: cannot resolve linux-image-amd64 to a kernel ABI$' "$work/err" ||
  fail "no error that says what it could not resolve"
[[ ! -s $work/out ]] || fail "printed an ABI: $(cat "$work/out")"
[[ $(ls -l --time-style=+%s /var/lib/apt/lists) == "$host_lists" ]] || fail "the host's package lists changed"
((failures == 0)) || { echo "--- stderr:"; cat "$work/err"; exit 1; }
echo "ok: no lists: updated, then one clear error (exit 2)"
