#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The report step of ci-glue/lava/pinmatrix.yaml: each case of a pinmatrix
results.json (schema pinmatrix/1) as one LAVA test case, through LAVA's
lava-test-case:

  name         SUITE.CASE ("pin.A", "backing.hugetlb-2m") in the characters
               LAVA's names keep (letters, digits, '.', '-', '_'; others
               become '_'); a name met before gets "-2", "-3", ...
  --result     pass, fail, skip; an error (the run broke and the kernel's
               answer is unknown: a guest that died, a case never reached,
               a timeout) is unknown
  --measurement, --units ns
               the registration latency, where the case timed one

Usage: lava-report-cases.py RESULTS_JSON
Exit: 0 every case reported; 1 lava-test-case failed for one; 2 the file
is missing or not pinmatrix results.
"""
import json
import re
import subprocess
import sys

RESULTS = {"pass": "pass", "fail": "fail", "skip": "skip", "error": "unknown"}


def suite_of(case):
    case_id = case["id"]
    if case.get("suite"):
        return case["suite"]
    if "/" in case_id.strip("/"):
        return case_id.split("/", 1)[0]
    return "pin" if case.get("placement") else "other"


def name_of(case):
    suite, case_id = suite_of(case), case["id"]
    if case_id.startswith(suite + "/"):
        case_id = case_id[len(suite) + 1:]
    return re.sub(r"[^A-Za-z0-9._-]", "_", suite + "." + case_id.replace("/", "."))


def lava_argv(case, name):
    argv = ["lava-test-case", name, "--result", RESULTS[case["verdict"]]]
    latency = case.get("latency_ns")
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        argv += ["--measurement", str(int(latency)), "--units", "ns"]
    return argv


def refuse(path, why):
    print("lava-report-cases.py: %s: %s" % (path, why), file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        refuse(path, e)
    if not isinstance(doc, dict) or doc.get("schema") != "pinmatrix/1" or not isinstance(doc.get("cases"), list):
        refuse(path, "not pinmatrix results (schema pinmatrix/1)")
    for case in doc["cases"]:
        if not isinstance(case, dict) or not isinstance(case.get("id"), str) or case.get("verdict") not in RESULTS:
            refuse(path, "a case without an id or a verdict: %.80s" % (case,))
    return doc


def main():
    if len(sys.argv) != 2:
        print("usage: lava-report-cases.py RESULTS_JSON", file=sys.stderr)
        return 2
    doc = load(sys.argv[1])
    seen = {}
    for case in doc["cases"]:
        name = name_of(case)
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            name += "-%d" % seen[name]
        if subprocess.run(lava_argv(case, name)).returncode != 0:
            print("lava-report-cases.py: lava-test-case failed for " + name, file=sys.stderr)
            return 1
    print("lava-report-cases.py: %d case(s) reported" % len(doc["cases"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
