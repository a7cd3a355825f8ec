#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`pinmatrix report DIR --kcidb --origin NAME` on fixture runs, its output
validated against KCIDB's own schema (reports/schema/kcidb/, Draft-07 with
the format checker, as kcidb-io validates) by python3-jsonschema, and read
back: no VM.

Runs (made in a scratch directory from tests/data/results-pass.json, a real
run, and tests/data/bench-sample.json):
  single      one kernel: a failure, a skip, and bench.json (DONE and SKIP)
  merged      a matrix over two kernels x two boots whose last guest died at
              D: D an error, the cases after it never reached (MISS)
  telemetry   tests/data/results-telemetry.json as it is

Each fixture is first checked against the results schema (its new fields
are published there). Then: the document is valid; its version is the
vendored schema's; each case's status is its verdict (MISS where the record
says not_reached), each benchmark DONE or SKIP as bench.json says; one
checkout and build per kernel; every reference resolves; ids unique; a
second export is the same file. And the validation is not vacuous: a
document with an unknown status or an id without its origin is refused.

Usage: kcidb_export_test.py PINMATRIX KCIDB_SCHEMA RESULTS_SCHEMA DATA_DIR
Exit: 0 pass, 1 fail, 77 python3-jsonschema missing.
"""
import copy
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (tools/setup-host)")
    sys.exit(77)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from script_checks import check, verdict  # noqa: E402

ORIGIN = "pinmatrix_ctest"

# RFC 3339's date-time (section 5.6), as kcidb-io checks it. python3-jsonschema
# checks "date-time" only with rfc3339-validator installed, which Debian 12
# does not package: without it every string passed (found by a package build
# as a user whose python3 was Debian's).
RFC3339_DATE_TIME = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?"
    r"([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$")


def format_checker():
    checker = copy.deepcopy(jsonschema.Draft7Validator.FORMAT_CHECKER)
    if "date-time" not in checker.checkers:
        checker.checks("date-time")(lambda v: not isinstance(v, str) or bool(RFC3339_DATE_TIME.match(v)))
    return checker


def validator(path):
    with open(path) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema, format_checker=format_checker()), schema


# Fixtures, made the way real runs differ.

def single_run(data):
    doc = json.load(open(os.path.join(data, "results-pass.json")))
    for c in doc["cases"]:
        if c["id"] == "B":
            c.update(verdict="fail", reason="registration returned ok, expected ENOMEM")
        if c["id"] == "movable-mlock":
            c.update(verdict="skip", reason="no page found in movable placement", observed=None, latency_ns=None)
        c["started_at"] = doc["started_at"]
    doc["benchmarks"] = "bench.json"
    return doc


def merged_run(data):
    one = json.load(open(os.path.join(data, "results-pass.json")))
    doc = {"schema": "pinmatrix/1", "groups": [], "cases": []}
    groups = [(k, b) for k in (("debian", "6.1.0-57-amd64"), ("build", "6.12.9-pinmatrix")) for b in ("movable", "cma")]
    for i, ((name, release), boot) in enumerate(groups):
        kernel = {"name": name, "release": release, "source": "debian" if name == "debian" else "build"}
        boot_json = {"placement": boot, "append": boot + "core=512M", "memory_mib": 1024, "cpus": 1}
        last = i == len(groups) - 1
        group = {"kernel": dict(kernel, version="#1 SMP", machine="x86_64"), "boot": boot_json,
                 "ended": "guest stopped before the job finished (panic or reset?)" if last else None}
        if last:
            group["kernel"]["fragments"] = ["pinmatrix.config"]
            group["serial_excerpt"] = "[    5.1] Kernel panic - not syncing: sysrq triggered crash\n"
        doc["groups"].append(group)
        reached = True
        for c in copy.deepcopy(one["cases"]):
            c["kernel"], c["boot"] = kernel, boot_json
            if last and c["id"] == "D":
                reached = False
                c.update(verdict="error", observed=None, latency_ns=None,
                         reason="no result from the guest: case D was running when the guest ended: panic")
            elif not reached:
                c.update(verdict="error", observed=None, latency_ns=None, not_reached=True,
                         reason="no result from the guest: not reached: panic")
            doc["cases"].append(c)
    doc["complete"] = False
    return doc


def write_run(root, name, doc, data):
    d = os.path.join(root, name)
    os.makedirs(d)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(doc, f, indent=2)
    if doc.get("benchmarks"):
        with open(os.path.join(data, "bench-sample.json")) as src, open(os.path.join(d, "bench.json"), "w") as dst:
            dst.write(src.read())
    return d


# What the export must say, read from the inputs themselves.

def expected_status(case):
    return "MISS" if case.get("not_reached") is True else case["verdict"].upper()


def expected_bench_statuses(bench_path):
    """DONE per benchmark with a result, SKIP per one whose every run errored, in file order."""
    runs = {}
    for r in json.load(open(bench_path))["benchmarks"]:
        name = r["run_name"].replace("/manual_time", "")
        runs.setdefault(name, []).append(not r.get("error_occurred", False))
    return ["DONE" if any(ok) else "SKIP" for ok in runs.values()]


def kernels_of(doc):
    out = []
    for c in doc["cases"]:
        k = c.get("kernel") or doc.get("kernel", {})
        key = (k.get("name", ""), k.get("release", ""))
        if key not in out:
            out.append(key)
    return out


def export(pinmatrix, run_dir, *extra):
    p = subprocess.run([pinmatrix, "report", run_dir, "--kcidb", "--origin", ORIGIN, *extra],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    check(p.returncode == 0, "%s: exit %d: %s" % (run_dir, p.returncode, p.stdout.strip()))
    return p.stdout


def check_run(pinmatrix, kcidb, results_schema, run_dir):
    name = os.path.basename(run_dir)
    doc = json.load(open(os.path.join(run_dir, "results.json")))
    errors = list(results_schema.iter_errors(doc))
    check(not errors, "%s: the fixture is not valid results: %s" % (name, [e.message[:120] for e in errors[:3]]))
    export(pinmatrix, run_dir)
    path = os.path.join(run_dir, "kcidb.json")
    with open(path, "rb") as f:
        first = f.read()
    k = json.loads(first)
    errors = sorted(kcidb.iter_errors(k), key=lambda e: list(e.absolute_path))
    for e in errors[:10]:
        print("INVALID %s: %s: %s" % (name, "/".join(map(str, e.absolute_path)), e.message[:200]))
    check(not errors, "%s: kcidb.json is not valid KCIDB 4.5 (%d errors)" % (name, len(errors)))
    check(k["version"] == {"major": 4, "minor": 5}, "%s: version %s" % (name, k["version"]))

    statuses = [t["status"] for t in k["tests"]]
    want = [expected_status(c) for c in doc["cases"]]
    if doc.get("benchmarks"):
        want += expected_bench_statuses(os.path.join(run_dir, doc["benchmarks"]))
    check(statuses == want, "%s: statuses %s, expected %s" % (name, statuses, want))

    kernels = kernels_of(doc)
    check(len(k["checkouts"]) == len(kernels) == len(k["builds"]),
          "%s: %d checkouts, %d builds for kernels %s" % (name, len(k["checkouts"]), len(k["builds"]), kernels))
    checkouts = {c["id"] for c in k["checkouts"]}
    builds = {b["id"] for b in k["builds"]}
    check(all(b["checkout_id"] in checkouts for b in k["builds"]), name + ": a build's checkout is missing")
    check(all(t["build_id"] in builds for t in k["tests"]), name + ": a test's build is missing")
    ids = [o["id"] for part in ("checkouts", "builds", "tests") for o in k[part]]
    check(len(ids) == len(set(ids)), name + ": ids repeat")
    check(all(o["origin"] == ORIGIN and o["id"].startswith(ORIGIN + ":")
              for part in ("checkouts", "builds", "tests") for o in k[part]), name + ": origin")

    export(pinmatrix, run_dir)
    with open(path, "rb") as f:
        check(f.read() == first, name + ": a second export differs (ids not deterministic)")
    return k


def check_not_vacuous(kcidb, k):
    bad = copy.deepcopy(k)
    bad["tests"][0]["status"] = "BROKEN"
    check(not kcidb.is_valid(bad), "a status outside KCIDB's was accepted")
    bad = copy.deepcopy(k)
    bad["tests"][0]["id"] = "no-origin-here"
    check(not kcidb.is_valid(bad), "an id without its origin was accepted")
    bad = copy.deepcopy(k)
    bad["tests"][0]["start_time"] = "yesterday"
    check(not kcidb.is_valid(bad), "a start_time that is not a date-time was accepted (no format checker?)")


def main():
    if len(sys.argv) != 5:
        print("usage: kcidb_export_test.py PINMATRIX KCIDB_SCHEMA RESULTS_SCHEMA DATA_DIR", file=sys.stderr)
        return 2
    pinmatrix, kcidb_path, results_path, data = sys.argv[1:]
    kcidb, schema = validator(kcidb_path)
    check(schema["properties"]["version"]["properties"]["minor"]["maximum"] == 5, "the vendored schema is not 4.5")
    results_schema, _ = validator(results_path)
    with tempfile.TemporaryDirectory(prefix="pm-kcidb-") as root:
        runs = [write_run(root, "single", single_run(data), data),
                write_run(root, "merged", merged_run(data), data),
                write_run(root, "telemetry", json.load(open(os.path.join(data, "results-telemetry.json"))), data)]
        exported = {os.path.basename(r): check_run(pinmatrix, kcidb, results_schema, r) for r in runs}
        merged = exported["merged"]["tests"]
        check(sum(t["status"] == "MISS" for t in merged) > 0, "merged: no MISS")
        check(all("log_excerpt" not in t for t in merged if t["status"] == "MISS"),
              "merged: the guest's end repeated in the cases it never reached")
        check(all("Kernel panic" in t.get("log_excerpt", "") for t in merged if t["status"] == "ERROR"),
              "merged: the case that was running has no serial excerpt")
        check(sum(t["status"] == "DONE" for t in exported["single"]["tests"]) > 0, "single: no DONE")
        check(any("number" in t for t in exported["single"]["tests"]), "single: no benchmark measurement")
        check_not_vacuous(kcidb, exported["single"])
        out = os.path.join(root, "elsewhere", "k.json")
        export(pinmatrix, runs[0], "--out", out)
        check(os.path.exists(out) and kcidb.is_valid(json.load(open(out))), "--out FILE: not written or not valid")
    return verdict("kcidb export", "%s exported, valid KCIDB %s, statuses from the verdicts" %
                   (", ".join(exported), "4.5"))


if __name__ == "__main__":
    sys.exit(main())
