#!/usr/bin/env bash
# No kernel: tools/coverage's summing (gcov-tool merge, as tools/coverage
# runs it) and its report (tools/coverage-report.py) on a user-space stand-in
# for a module: a program of two objects built with --coverage, run twice
# down different branches, whose counters are laid out as a guest's debugfs
# lays out a module's (RUN/<build dir>/<object>.gcda). The sum must cover
# both branches, the two objects must make one module, a function never
# called must be named, and counters against a rebuilt object must be
# refused. Usage: coverage_report_test.sh REPORT_PY
set -euo pipefail
report=$1
command -v gcov-tool > /dev/null || { echo "SKIP: no gcov-tool (gcc)"; exit 77; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

src=$t/build/stand_in
mkdir -p "$src"
cat > "$src/stand_in.c" <<'C'
int stand_in_ioctl(int cmd);

int main(int argc, char **argv)
{
	(void)argv;
	return stand_in_ioctl(argc) == 0;
}
C
cat > "$src/stand_in_ioctl.c" <<'C'
int stand_in_ioctl(int cmd)
{
	if (cmd == 1)
		return 10;
	return 20;
}

int never_called(void)
{
	return 3;
}
C
# Absolute paths, as Kbuild compiles an external module.
(cd "$src" && for o in stand_in stand_in_ioctl; do gcc --coverage -O0 -c "$src/$o.c" -o "$src/$o.o"; done &&
  gcc --coverage stand_in.o stand_in_ioctl.o -o stand_in)
for run in 1 2; do
  args=()
  [[ $run -eq 2 ]] && args=(x)
  "$src/stand_in" ${args[@]+"${args[@]}"} || fail "the stand-in exited $?"
  mkdir -p "$t/runs/$run$src"
  mv "$src/stand_in.gcda" "$src/stand_in_ioctl.gcda" "$t/runs/$run$src/"
done
gcov-tool merge -o "$t/merged" "$t/runs/1" "$t/runs/2"
python3 "$report" "$t/merged" "$t/out" "one|0|0|1" "two|1|1|2" > "$t/stdout" || fail "report exited $?"

python3 - "$t/out/coverage.json" <<'PY' || fail "coverage.json: see above"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "pinmatrix-coverage/2", doc["schema"]
assert [r["name"] for r in doc["runs"]] == ["one", "two"], doc["runs"]
(m,) = doc["modules"]  # its two objects: one module
assert m["module"] == "stand_in", m["module"]
assert m["sources"] == ["kmod/stand_in/stand_in.c", "kmod/stand_in/stand_in_ioctl.c"], m["sources"]
f = {fn["name"]: fn for fn in m["functions"]}
assert f["main"]["source"] == "kmod/stand_in/stand_in.c" and f["main"]["calls"] == 2, f["main"]
assert f["stand_in_ioctl"]["source"] == "kmod/stand_in/stand_in_ioctl.c", f["stand_in_ioctl"]
assert f["stand_in_ioctl"]["lines_hit"] == f["stand_in_ioctl"]["lines"] > 0, f["stand_in_ioctl"]  # both branches: summed
assert f["stand_in_ioctl"]["calls"] == 2, f["stand_in_ioctl"]
assert f["never_called"]["calls"] == 0 and f["never_called"]["lines_hit"] == 0, f["never_called"]
assert 0 < m["lines_hit"] < m["lines"], m
PY
grep -q "^ioctl handlers" "$t/out/coverage.txt" || fail "coverage.txt has no ioctl handlers table"
grep -q "never called: stand_in:never_called$" "$t/out/coverage.txt" || fail "coverage.txt does not name never_called"
ls "$t/out/gcov/stand_in/"stand_in{,_ioctl}.c.gcov > /dev/null || fail "no annotated source"
cat "$t/out/coverage.txt"

# Counters of an older build: gcov's stamp mismatch is an error, no report.
sed -i 's/return 3;/return 4;/' "$src/stand_in_ioctl.c"
(cd "$src" && gcc --coverage -O0 -c "$src/stand_in_ioctl.c" -o "$src/stand_in_ioctl.o")
rm -rf "$t/out"
if python3 "$report" "$t/merged" "$t/out" "one|0|0|1" > "$t/stale" 2>&1; then
  fail "counters of a rebuilt object were reported"
fi
grep -q "coverage-report: ERROR: .*mismatch" "$t/stale" || fail "no mismatch error: $(cat "$t/stale")"
[[ ! -e $t/out/coverage.json ]] || fail "a report was written for stale counters"
echo "PASS: summed counters, two objects one module, ioctl table, never-called function, stale counters refused"
