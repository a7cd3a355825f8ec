#!/usr/bin/env bash
# The Debian packages as debian/ builds them (tools/build --packages, into
# BUILD/debs): the three packages at the project's version, lintian with
# nothing to say (no error, no warning), and pinmatrix(1) rendering without
# a warning, with every command of `pinmatrix --help` in it.
# Usage: lintian.sh BUILD_DIR PROJECT_VERSION   (exit 77: skipped)
set -euo pipefail
build=$1 version=$2
debs=$build/debs
for t in lintian dpkg-deb man; do
  command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup-host --tests)"; exit 77; }
done
compgen -G "$debs/*.deb" >/dev/null ||
  { echo "SKIP: no packages in $debs (built without tools/build --packages)"; exit 77; }
fail() { echo "packaging: FAIL: $*"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

check_the_three_packages() {
  local p
  for p in pinmatrix_"$version"_amd64 pinmatrix-dkms_"$version"_all pinmatrix-ualink-sim-dkms_"$version"_all; do
    [[ -f $debs/$p.deb ]] || fail "no $p.deb in $debs: $(ls "$debs")"
  done
}

check_lintian_says_nothing() {
  local said
  local rc=0
  said=$(lintian --fail-on error,warning --tag-display-limit 0 "$debs"/*.deb 2>&1) || rc=$?
  # Info tags aside (lintian -I shows them), nothing at all but its remark
  # on running as root (CI's tests do).
  said=$(grep -vxF 'running with root privileges is not recommended!' <<<"$said" || true)
  ((rc == 0)) || { echo "$said"; fail "lintian exit $rc"; }
  [[ -z $said ]] || { echo "$said"; fail "lintian: the packages have errors or warnings"; }
}

check_manpage() {
  local page=usr/share/man/man1/pinmatrix.1.gz out warnings cmd
  dpkg-deb -x "$debs/pinmatrix_${version}_amd64.deb" "$scratch/root"
  [[ -f $scratch/root/$page ]] || fail "no $page in the pinmatrix package"
  warnings=$(MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$scratch/root/$page" 2>&1 >/dev/null)
  [[ -z $warnings ]] || { echo "$warnings"; fail "pinmatrix(1) renders with warnings"; }
  # Spaces squeezed: groff adjusts a filled line by widening its gaps, from
  # the left on one line and the right on the next, so where they widen
  # moves with any line added above (a text search must not care).
  out=$(MANWIDTH=80 man -l "$scratch/root/$page" 2>/dev/null | col -bx | tr -s ' ')
  for cmd in $("$scratch/root/usr/bin/pinmatrix" --help | sed -n '/^Subcommands:/,$ s/^  \([a-z-]*\) .*/\1/p'); do
    grep -q "^ *pinmatrix $cmd\$" <<<"$out" || fail "pinmatrix(1) has no section for '$cmd'"
  done
  grep -q "Exit codes: 0 every case passed" <<<"$out" || fail "pinmatrix(1) does not give run's exit codes"
}

check_the_three_packages
check_lintian_says_nothing
check_manpage
echo "packaging: PASS (lintian: nothing to say; pinmatrix(1) renders)"
