#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# pinmatrix's KTAP read by the kernel's own KTAP parser: kunit.py parse
# (tools/testing/kunit of the kernel source Debian ships, extracted into a
# scratch directory for the test). The parser must complain of nothing
# ("[ERROR]", a crashed or missing subtest, a traceback) and its JSON must
# nest as the run did: suites as sub-groups (inside one per kernel and boot
# for a merged run), each case by name with PASS, FAIL or SKIP.
#
# Usage:
#   ktap_kunit_parser_test.py reports PINMATRIX DATA_DIR
#       results.ktap of the fixtures (pass; timeout, failure, errors, skips
#       and a second suite; a merged run of two kernels) from `pinmatrix report`
#   ktap_kunit_parser_test.py run-stream PINMATRIX
#       `pinmatrix run --format ktap` on this machine (no guest, no module:
#       the pin cases SKIP; fork runs through io_uring or SKIPs): stdout is
#       the KTAP document alone, results.ktap line for line, written as each
#       case ends, and the parser reads it
#   ktap_kunit_parser_test.py plan PINMATRIX
#       `pinmatrix cases --format ktap-plan`: every line KTAP; the parser
#       finds it, reads its plan (a test a suite) and finds nothing run (a
#       plan has no results: its one complaint, "missing expected
#       subtest!", once a suite), and shows each "# plan:" line
#   ktap_kunit_parser_test.py parse FILE
#       prints the parser's tree of FILE ("suite/case STATUS" lines) for
#       the guest test; exit 1 when the parser complained
# Exit 77 (SKIP) without the kernel source tarball (tools/setup-host
# installs linux-source-6.1).
import json
import os
import re
import subprocess
import sys
import tempfile

TARBALL = os.environ.get("PINMATRIX_KERNEL_SOURCE", "/usr/src/linux-source-6.1.tar.xz")
KUNIT_DIR = "linux-source-6.1/tools/testing/kunit"
# What the parser prints when the document is not what KTAP says.
COMPLAINTS = ("[ERROR]", "[CRASHED]", "[NO TESTS RUN]", "Traceback", "could not find any KTAP output")


class Skip(Exception):
    pass


def extract_kunit(scratch):
    """tools/testing/kunit of the kernel source, or Skip."""
    if not os.path.isfile(TARBALL):
        raise Skip(f"no kernel source at {TARBALL} (Debian package linux-source-6.1; tools/setup-host)")
    # tar(1): Python's tarfile takes twice as long to read through the xz.
    subprocess.run(["tar", "-xJf", TARBALL, "-C", scratch, KUNIT_DIR], check=True)
    kunit = os.path.join(scratch, KUNIT_DIR, "kunit.py")
    if not os.path.isfile(kunit):
        raise Skip(f"{TARBALL} has no {KUNIT_DIR}/kunit.py")
    return kunit


def kunit_parse(kunit, ktap_file, scratch):
    """(parser output, JSON tree) of a KTAP file; AssertionError on any complaint."""
    out_json = os.path.join(scratch, "kunit.json")
    p = subprocess.run([sys.executable, kunit, "parse", "--json=" + out_json, ktap_file],
                       capture_output=True, text=True, cwd=os.path.dirname(kunit))
    output = p.stdout + p.stderr
    for complaint in COMPLAINTS:
        assert complaint not in output, f"kunit.py parse complained ({complaint}) about {ktap_file}:\n{output}"
    with open(out_json) as f:
        return output, json.load(f)


def tree_lines(group, prefix=""):
    """The parser's tree as 'group/suite/case STATUS' lines."""
    lines = []
    for sub in group["sub_groups"]:
        lines += tree_lines(sub, prefix + sub["name"] + "/")
    for case in group["test_cases"]:
        lines.append(f"{prefix}{case['name']} {case['status']}")
    return lines


def title(case):
    name = case.get("name", case["id"])
    return case["id"] if name == case["id"] else f"{case['id']} ({name})"


def suite_of(case):
    if case.get("suite"):
        return case["suite"]
    return case["id"].split("/")[0] if "/" in case["id"] else "pin"


# An expected failure and an unexpected pass are "ok" lines with kselftest's
# XFAIL and XPASS directives: the parser's PASS.
STATUS = {"pass": "PASS", "skip": "SKIP", "fail": "FAIL", "error": "FAIL", "xfail": "PASS", "xpass": "PASS"}


def expected_lines(doc, group_label=None):
    """What the tree must be: a group per (kernel, boot) when grouped, then
    the suites in order, then the cases; a not-ok KTAP line (FAIL, ERROR,
    TIMEOUT) is the parser's FAIL."""
    lines = []
    for case in doc["cases"]:
        group = group_label(case) + "/" if group_label else ""
        lines.append(f"{group}{suite_of(case)}/{title(case)} {STATUS[case['verdict']]}")
    return lines


def check_tree(tree, doc, what, group_label=None):
    got, want = tree_lines(tree), expected_lines(doc, group_label)
    assert got == want, f"{what}: the parser's tree\n  " + "\n  ".join(got) + "\nis not\n  " + "\n  ".join(want)
    # Sub-groups only where they nest: no case at the top or beside suites.
    assert not tree["test_cases"], f"{what}: cases outside any suite: {tree['test_cases']}"


def report(pinmatrix, doc, scratch, name):
    """results.ktap of doc, as `pinmatrix report` writes it."""
    run = os.path.join(scratch, name)
    os.makedirs(run)
    with open(os.path.join(run, "results.json"), "w") as f:
        json.dump(doc, f)
    subprocess.run([pinmatrix, "report", run], check=True, capture_output=True)
    return os.path.join(run, "results.ktap")


def merged(docs):
    """A matrix run's merged results.json: each record names its kernel and boot."""
    out = {"schema": "pinmatrix/1", "matrix": "matrix/test.toml", "groups": [], "cases": []}
    for (name, release, boot), doc in docs:
        kernel = {"name": name, "release": release, "source": "debian"}
        boot_json = {"placement": boot, "append": "movablecore=512M"}
        group = {"kernel": kernel, "boot": boot_json, "ended": doc.get("vm", {}).get("ended")}
        if doc.get("vm", {}).get("serial_excerpt"):
            group["serial_excerpt"] = doc["vm"]["serial_excerpt"]
        out["groups"].append(group)
        for case in doc["cases"]:
            out["cases"].append(dict(case, kernel=kernel, boot=boot_json))
    return out


def with_known_bugs(doc):
    """doc with its first case an expected failure of a known kernel bug and
    its second an unexpected pass of one (matrix/known_bugs.cpp)."""
    doc = json.loads(json.dumps(doc))
    bug = {"id": "hugetlb-longterm-warn", "title": "a long-term pin of a 2 MiB hugetlb page WARNs",
           "where": "mm/hugetlb.c: follow_hugetlb_page()", "kernels": "every 6.1", "fix": "unfixed",
           "fix_note": "no fix in the 6.1 stable series", "kernel": "6.1.192"}
    doc["cases"][0].update(verdict="xfail", known_bug=bug,
                           reason="expected failure, known bug hugetlb-longterm-warn of 6.1.192: ENOMEM")
    doc["cases"][1].update(verdict="xpass", known_bug=bug,
                           reason="unexpected pass: known bug hugetlb-longterm-warn should fail this case")
    return doc


def check_directives(ktap_file, doc):
    """Each xfail and xpass case's line carries kselftest's directive."""
    with open(ktap_file) as f:
        text = f.read()
    for case in doc["cases"]:
        if case["verdict"] in ("xfail", "xpass"):
            directive = " # " + case["verdict"].upper() + " "
            line = next((l for l in text.splitlines() if re.match(r"^ *ok [0-9]+ " + re.escape(title(case)) + " #", l)), "")
            assert directive in line, f"{case['id']}: no {directive.strip()} line in:\n{text}"


def check_reports(pinmatrix, data, scratch, kunit):
    with open(os.path.join(data, "results-pass.json")) as f:
        passing = json.load(f)
    with open(os.path.join(data, "results-timeout.json")) as f:
        timeout = json.load(f)
    for name, doc in (("pass", passing), ("timeout", timeout), ("known-bugs", with_known_bugs(passing))):
        ktap_file = report(pinmatrix, doc, scratch, name)
        check_directives(ktap_file, doc)
        output, tree = kunit_parse(kunit, ktap_file, scratch)
        check_tree(tree, doc, name)
        summary = [l.split("] ", 1)[-1] for l in output.splitlines() if "Testing complete" in l]
        print(f"ok: {name}: {summary}")
    matrix = merged([(("debian", "6.1.0-57-amd64", "movable"), passing),
                     (("build", "6.12.9-pinmatrix", "cma"), timeout)])
    output, tree = kunit_parse(kunit, report(pinmatrix, matrix, scratch, "matrix"), scratch)
    check_tree(tree, matrix, "matrix",
               lambda c: f"{c['kernel']['name']} {c['kernel']['release']} ({c['boot']['placement']})")
    print("ok: matrix: groups, suites, cases")


KTAP_LINE = re.compile(r"^(  )*(KTAP version 1|1\.\.[0-9]+|# .*|(not )?ok [0-9]+ [^#]*( # .*)?)$")


def run_here(pinmatrix, out, merge_stderr):
    args = [pinmatrix, "run", "--cases", "A,D,fork", "--second-pin", "io_uring", "--format", "ktap", "--out", out]
    return subprocess.run(args, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE, text=True)


def check_run_stream(pinmatrix, scratch, kunit):
    if os.path.exists("/dev/pinmatrix"):
        raise Skip("the module is loaded on this machine: its cases would run here, not SKIP")
    out = os.path.join(scratch, "run")
    p = run_here(pinmatrix, out, False)
    with open(os.path.join(out, "results.json")) as f:
        doc = json.load(f)
    verdicts = [c["verdict"] for c in doc["cases"]]
    want_rc = 1 if {"fail", "error"} & set(verdicts) else 4 if set(verdicts) == {"skip"} else 0
    assert p.returncode == want_rc, f"exit {p.returncode}, not {want_rc}:\n{p.stderr}"
    # stdout: the KTAP document alone, the file's twin; people's lines on stderr.
    for line in p.stdout.splitlines():
        assert KTAP_LINE.match(line), f"not a KTAP line on stdout: {line!r}"
    with open(os.path.join(out, "results.ktap")) as f:
        assert p.stdout == f.read(), "stdout is not results.ktap:\n" + p.stdout
    for human in ("pinmatrix: 4 cases on", "[1/4] A (movable-none): SKIP", "summary: pass"):
        assert human in p.stderr, f"{human!r} not on stderr:\n{p.stderr}"
        assert human not in p.stdout, f"{human!r} on stdout"
    ktap = os.path.join(scratch, "stdout.ktap")
    with open(ktap, "w") as f:
        f.write(p.stdout)
    output, tree = kunit_parse(kunit, ktap, scratch)
    check_tree(tree, doc, "run --format ktap")
    print("ok: run --format ktap: stdout is results.ktap; the parser reads it:")
    print("  " + "\n  ".join(tree_lines(tree)))
    check_written_as_cases_end(pinmatrix, scratch, doc)


def check_written_as_cases_end(pinmatrix, scratch, doc):
    """Both streams in one pipe: case i's KTAP result comes after its
    progress line [i/N] and before [i+1/N], the Totals before the table."""
    p = run_here(pinmatrix, os.path.join(scratch, "run-merged"), True)
    lines = p.stdout.splitlines()
    n = len(doc["cases"])
    for i, case in enumerate(doc["cases"]):
        progress = next(k for k, l in enumerate(lines) if l.startswith(f"[{i + 1}/{n}] "))
        result = next(k for k, l in enumerate(lines) if re.match(r"^  (not )?ok [0-9]+ " + re.escape(title(case)), l))
        following = [k for k, l in enumerate(lines) if l.startswith(f"[{i + 2}/{n}] ")]
        assert progress < result, f"{case['id']}: its KTAP line came before its progress line:\n{p.stdout}"
        assert not following or result < following[0], \
            f"{case['id']}: its KTAP line came after the next case's progress: not streamed\n{p.stdout}"
    totals = next(k for k, l in enumerate(lines) if l.startswith("# Totals:"))
    table = next(k for k, l in enumerate(lines) if l.startswith("summary: pass"))
    assert totals < table, f"the Totals after the human summary:\n{p.stdout}"
    print("ok: each case's KTAP lines were written as it ended")


def check_plan(pinmatrix, scratch, kunit):
    p = subprocess.run([pinmatrix, "cases", "--format", "ktap-plan"], capture_output=True, text=True, check=True)
    lines = p.stdout.splitlines()
    for line in lines:
        assert KTAP_LINE.match(line), f"not a KTAP line: {line!r}"
    suites = int(lines[1][len("1.."):])
    plan = os.path.join(scratch, "plan.ktap")
    with open(plan, "w") as f:
        f.write(p.stdout)
    parsed = subprocess.run([sys.executable, kunit, "parse", plan], capture_output=True, text=True,
                            cwd=os.path.dirname(kunit))
    output = parsed.stdout + parsed.stderr
    for complaint in ("Traceback", "could not find any KTAP output"):
        assert complaint not in output, f"kunit.py parse: {complaint}:\n{output}"
    errors = [l.split("] ", 1)[-1] for l in output.splitlines() if "[ERROR]" in l]
    assert errors == ["[ERROR] Test: main: missing expected subtest!"] * suites, \
        f"not {suites} missing subtests alone:\n{output}"
    assert f"Ran {suites} tests: crashed: {suites}" in output, output
    for line in lines:
        if line.startswith("# plan: "):
            assert line in output, f"{line!r} not in the parser's log:\n{output}"
    print(f"ok: cases --format ktap-plan: the parser reads a plan of {suites} tests, "
          f"{sum(l.startswith('# plan: ') for l in lines)} '# plan:' lines, nothing run")


def main(argv):
    if len(argv) < 3 or argv[1] not in ("reports", "run-stream", "plan", "parse"):
        print("usage: ktap_kunit_parser_test.py reports PINMATRIX DATA_DIR | run-stream PINMATRIX | plan PINMATRIX"
              " | parse FILE", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pm-kunit-") as scratch:
        try:
            kunit = extract_kunit(scratch)
            if argv[1] == "reports":
                check_reports(argv[2], argv[3], scratch, kunit)
            elif argv[1] == "run-stream":
                check_run_stream(argv[2], scratch, kunit)
            elif argv[1] == "plan":
                check_plan(argv[2], scratch, kunit)
            else:
                _, tree = kunit_parse(kunit, os.path.abspath(argv[2]), scratch)
                print("\n".join(tree_lines(tree)))
        except Skip as e:
            print(f"SKIP: {e}")
            return 77
        except AssertionError as e:
            print(f"FAIL: {e}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
