#!/usr/bin/env python3
"""tools/coverage's report: gcov on the summed counters of each module.

Usage: coverage-report.py MERGED OUT RUN...
  MERGED  the runs' summed counters: MERGED/<module build dir>/<object>.gcda,
          one per object the module is linked from (ualink_sim: usim_*.o),
          the module's name that of its build directory
  OUT     written: coverage.txt, coverage.json, gcov/<module>/*.gcov
  RUN     NAME|EXIT|WANT|SECONDS, one per run, in order
The .gcno files are read from each module's build directory (the path under
MERGED, as the guest's debugfs named it); gcov refusing them (a stamp
mismatch: the module was rebuilt after the runs) is an error.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile


def die(msg):
    print(f"coverage-report: ERROR: {msg}", file=sys.stderr)
    sys.exit(1)


def run_gcov(args, cwd):
    p = subprocess.run(["gcov"] + args, cwd=cwd, capture_output=True, text=True)
    # Headers are named relative to the kernel's build directory: only the
    # module's own source must open.
    own = os.path.basename(args[-1])
    if p.returncode != 0 or "mismatch" in p.stderr or "not a gcov data file" in p.stderr or \
            any(l.startswith("Cannot open source file") and l.endswith(own) for l in p.stderr.splitlines()):
        die(f"gcov {' '.join(args)}: {p.stderr.strip() or 'exit ' + str(p.returncode)}")
    return p.stdout


def object_coverage(gcda, build_dir, annotated):
    """One object of a module: its source's lines and functions from gcov's JSON, and its .gcov files."""
    name = os.path.basename(gcda)[: -len(".gcda")]
    source = os.path.join(build_dir, name + ".c")
    gcno = os.path.join(build_dir, name + ".gcno")
    if not os.path.isfile(gcno):
        die(f"{name}: no {gcno} (the module's build is gone from the cache)")
    with tempfile.TemporaryDirectory() as work:
        shutil.copy(gcno, work)
        shutil.copy(gcda, work)
        run_gcov(["-o", work, source], annotated)
        doc = json.loads(run_gcov(["--json-format", "--stdout", "-o", work, source], annotated))
    own = [f for f in doc["files"] if f["file"].endswith("/" + name + ".c") or f["file"] == name + ".c"]
    if not own:
        die(f"{name}: gcov has no data for {name}.c")
    return name + ".c", own[0]


def module_coverage(gcdas, merged, out):
    """One module: the lines and functions of each of its objects, in the objects' name order."""
    build_dir = "/" + os.path.relpath(os.path.dirname(gcdas[0]), merged)
    name = os.path.basename(build_dir)
    annotated = os.path.join(out, "gcov", name)
    os.makedirs(annotated, exist_ok=True)
    sources, lines, functions = [], [], []
    for gcda in sorted(gcdas):
        source, own = object_coverage(gcda, build_dir, annotated)
        sources.append(f"kmod/{name}/{source}")
        lines += own["lines"]
        for fn in sorted(own["functions"], key=lambda f: f["start_line"]):
            mine = [l for l in own["lines"] if l.get("function_name") == fn["name"]]
            functions.append({"name": fn["name"], "source": sources[-1], "start_line": fn["start_line"],
                              "calls": fn["execution_count"], "lines": len(mine),
                              "lines_hit": sum(1 for l in mine if l["count"] > 0)})
    return {"module": name, "sources": sources, "lines": len(lines),
            "lines_hit": sum(1 for l in lines if l["count"] > 0), "functions": functions}


def pct(hit, total):
    return f"{100.0 * hit / total:5.1f}%" if total else "   n/a"


def text_report(runs, modules):
    t = ["pinmatrix line coverage of the test modules (tools/coverage, kernel build:coverage)", "",
         "runs (pinmatrix vm; their counters summed):"]
    for r in runs:
        t.append(f"  {r['name']:<22} exit {r['exit']} (want {r['want']}) {r['seconds']:>5} s")
    t += ["", f"{'module':<12} {'lines':>6} {'hit':>6} {'cover':>7}"]
    for m in modules:
        t.append(f"{m['module']:<12} {m['lines']:>6} {m['lines_hit']:>6} {pct(m['lines_hit'], m['lines']):>7}")
    for title, keep in (("ioctl handlers", lambda f: "ioctl" in f["name"]), ("every function", lambda f: True)):
        t += ["", f"{title} (source order):", f"  {'module':<11} {'function':<34} {'lines':>5} {'hit':>5} {'cover':>7} {'calls':>9}"]
        for m in modules:
            for f in filter(keep, m["functions"]):
                t.append(f"  {m['module']:<11} {f['name']:<34} {f['lines']:>5} {f['lines_hit']:>5} "
                         f"{pct(f['lines_hit'], f['lines']):>7} {f['calls']:>9}")
    never = [f"{m['module']}:{f['name']}" for m in modules for f in m["functions"] if f["calls"] == 0]
    t += ["", "never called: " + (", ".join(never) if never else "none"),
          "annotated sources: gcov/<module>/*.gcov ('#####' marks a line never run)"]
    return "\n".join(t) + "\n"


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    if len(sys.argv) < 3:
        die("usage: coverage-report.py MERGED OUT RUN...")
    merged, out = sys.argv[1], sys.argv[2]
    runs = []
    for r in sys.argv[3:]:
        name, code, want, seconds = r.split("|")
        runs.append({"name": name, "exit": int(code), "want": int(want), "seconds": int(seconds)})
    gcdas = sorted(os.path.join(d, f) for d, _, fs in os.walk(merged) for f in fs if f.endswith(".gcda"))
    if not gcdas:
        die(f"no .gcda under {merged}: no module was profiled")
    by_dir = {}
    for g in gcdas:
        by_dir.setdefault(os.path.dirname(g), []).append(g)
    modules = [module_coverage(by_dir[d], merged, out) for d in sorted(by_dir)]
    write_atomically(os.path.join(out, "coverage.json"),
                     json.dumps({"schema": "pinmatrix-coverage/2", "runs": runs, "modules": modules}, indent=1) + "\n")
    report = text_report(runs, modules)
    write_atomically(os.path.join(out, "coverage.txt"), report)
    sys.stdout.write(report)


if __name__ == "__main__":
    main()
