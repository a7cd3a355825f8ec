#!/usr/bin/env bash
# No VM: lib/build_info.cmake, which writes the suite's version and commit
# into one generated source: a git checkout gives its HEAD (12 hex digits);
# a tarball (no .git, or unpacked inside another repository) gives
# PINMATRIX_COMMIT, else nothing ("unknown"), never a commit it invented;
# a bad PINMATRIX_COMMIT is refused; the same commit again leaves the file
# as it was (nothing rebuilds), a new one replaces it; no path goes in.
# Usage: build_info_test.sh SOURCE_DIR
set -euo pipefail
src=$1
script=$src/lib/build_info.cmake template=$src/lib/build_info.cpp.in
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v git > /dev/null || { echo "SKIP: git is not installed"; exit 77; }

# generate DIR OUT [FALLBACK]: the script's run on DIR as a source tree.
generate() {
  cmake -DSOURCE_DIR="$1" -DTEMPLATE="$template" -DOUTPUT="$2" -DPM_VERSION=9.8.7 \
    ${3+-DPM_FALLBACK_COMMIT="$3"} -P "$script"
}
commit_in() { sed -n 's/^	return "\(.*\)";$/\1/p' "$1" | sed -n 2p; }
git_in() { git -C "$1" -c user.name=t -c user.email=t@example.org "${@:2}"; }

# A git checkout: its HEAD, whatever PINMATRIX_COMMIT says.
mkdir "$t/repo"
git_in "$t/repo" init -q
git_in "$t/repo" commit -q --allow-empty -m one
head=$(git -C "$t/repo" rev-parse --short=12 HEAD)
generate "$t/repo" "$t/checkout.cpp" abcdef1234567
[[ $(commit_in "$t/checkout.cpp") == "$head" ]] || fail "checkout: $(commit_in "$t/checkout.cpp"), expected $head"
grep -q '"9.8.7"' "$t/checkout.cpp" || fail "checkout: no version 9.8.7"
grep -qF "$t" "$t/checkout.cpp" && fail "the generated source names a path"

# The same commit again: the file untouched; a new commit: replaced.
touch -d '2001-01-01' "$t/checkout.cpp"
generate "$t/repo" "$t/checkout.cpp"
[[ $(stat -c %Y "$t/checkout.cpp") == $(date -d '2001-01-01' +%s) ]] || fail "the same commit rewrote the file"
git_in "$t/repo" commit -q --allow-empty -m two
generate "$t/repo" "$t/checkout.cpp"
[[ $(commit_in "$t/checkout.cpp") == "$(git -C "$t/repo" rev-parse --short=12 HEAD)" ]] || fail "a new commit: not replaced"
[[ -e $t/checkout.cpp.tmp ]] && fail "the temporary file was left"

# A tarball: PINMATRIX_COMMIT, or unknown; unpacked inside another
# repository, that repository's HEAD is not its commit.
mkdir "$t/tarball" "$t/repo/unpacked"
generate "$t/tarball" "$t/tarball.cpp" 0123456789AB
[[ $(commit_in "$t/tarball.cpp") == 0123456789ab ]] || fail "tarball: $(commit_in "$t/tarball.cpp"), expected 0123456789ab"
generate "$t/tarball" "$t/unknown.cpp"
[[ -z $(commit_in "$t/unknown.cpp") ]] || fail "tarball without PINMATRIX_COMMIT: $(commit_in "$t/unknown.cpp"), expected none"
generate "$t/repo/unpacked" "$t/inside.cpp" 1234567
[[ $(commit_in "$t/inside.cpp") == 1234567 ]] || fail "a tarball inside a repository took its HEAD: $(commit_in "$t/inside.cpp")"

# A PINMATRIX_COMMIT that is no commit is refused, nothing written.
for bad in main 12345 "$(printf 'a%.0s' {1..41})" '0123456"; evil();//'; do
  if generate "$t/tarball" "$t/bad.cpp" "$bad" > "$t/bad.out" 2>&1; then
    fail "PINMATRIX_COMMIT '$bad' accepted"
  fi
  grep -q "PINMATRIX_COMMIT" "$t/bad.out" || fail "PINMATRIX_COMMIT '$bad': the message does not name it: $(cat "$t/bad.out")"
  [[ -e $t/bad.cpp ]] && fail "PINMATRIX_COMMIT '$bad': a file was written"
done
echo "PASS: checkout HEAD, tarball PINMATRIX_COMMIT or unknown, rewritten only on a new commit, bad commits refused"
