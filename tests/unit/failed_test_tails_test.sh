#!/usr/bin/env bash
# tools/failed-test-tails against a real ctest run of a scratch project: a
# failed test's last lines are printed, a passed test's are not, a test
# whose name is a prefix of another's is not taken for it, and a run with
# no failure prints nothing.
set -euo pipefail
tool=$1
if ! command -v cmake >/dev/null || ! command -v ctest >/dev/null; then echo "SKIP: no cmake"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/src"
cat > "$tmp/src/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(scratch NONE)
enable_testing()
add_test(NAME t.fails COMMAND sh -c "seq 1 100; echo 'why: the check saw 3, not 4'; exit 1")
add_test(NAME t.fails-too COMMAND sh -c "echo 'other test line'; exit 0")
add_test(NAME t.passes COMMAND sh -c "echo 'a passing line'")
CM
cmake -S "$tmp/src" -B "$tmp/b" >/dev/null
(cd "$tmp/b" && ctest >/dev/null 2>&1) && { echo "FAIL: the scratch run passed"; exit 1; }
"$tool" "$tmp/b" 5 > "$tmp/out"
cat "$tmp/out"
expected="=== t.fails: the last 5 lines of its output
97
98
99
100
why: the check saw 3, not 4"
[[ $(cat "$tmp/out") == "$expected" ]] || { echo "FAIL: not the failed test's last lines"; exit 1; }
"$tool" "$tmp/b" 0 2>/dev/null && { echo "FAIL: LINES 0 accepted"; exit 1; }
# A run with no failure: nothing.
sed -i '/t.fails /d' "$tmp/src/CMakeLists.txt"
cmake -S "$tmp/src" -B "$tmp/b" >/dev/null
(cd "$tmp/b" && ctest >/dev/null 2>&1) || { echo "FAIL: the second scratch run failed"; exit 1; }
[[ -z $("$tool" "$tmp/b") ]] || { echo "FAIL: output after a run with no failure"; exit 1; }
echo "PASS"
