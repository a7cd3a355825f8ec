#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Reports grow linearly with the cases (issue 32, item 6), with one kernel
# and with a kernel per case (a fleet where every node runs its own): from
# 1k to 4k cases, each report file and the peak memory grow at most 1.2
# times as fast as the cases (linear: 4x; the case x kernel grid and plot
# lanes made them 15x). Sizes and memory, not time: deterministic on a
# noisy machine. The timing curves are tools/scaling-curves.
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL, LARGE = 1000, 4000
SLACK = 1.2
FILES = ("report.html", "summary.md", "junit.xml", "results.ktap")


def curves_tool():
    loader = importlib.machinery.SourceFileLoader("scaling_curves", os.path.join(TOP, "tools", "scaling-curves"))
    spec = importlib.util.spec_from_loader("scaling_curves", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def measure(pinmatrix, tool, scratch, n, kernel_per_case):
    run = os.path.join(scratch, f"run-{n}-{int(kernel_per_case)}")
    os.mkdir(run)
    tool.write_results(os.path.join(run, "results.json"), n, kernel_per_case)
    rc, _, _, rss = tool.timed([pinmatrix, "report", run])
    if rc != 0:
        raise SystemExit(f"pinmatrix report exit {rc} on {n} cases")
    sizes = {f: os.path.getsize(os.path.join(run, f)) for f in FILES}
    ids_shown = open(os.path.join(run, "report.html")).read().count('data-case="case-')
    shutil.rmtree(run)
    return sizes, rss, ids_shown


def main(pinmatrix):
    tool = curves_tool()
    failures = []
    scratch = tempfile.mkdtemp(prefix="pm-scaling-")
    try:
        for kernel_per_case in (False, True):
            shape = "a kernel per case" if kernel_per_case else "one kernel"
            small, small_rss, _ = measure(pinmatrix, tool, scratch, SMALL, kernel_per_case)
            large, large_rss, shown = measure(pinmatrix, tool, scratch, LARGE, kernel_per_case)
            bound = SLACK * LARGE / SMALL
            for f in FILES:
                ratio = large[f] / small[f]
                print(f"{shape}: {f} {small[f]} -> {large[f]} bytes (x{ratio:.2f})")
                if ratio > bound:
                    failures.append(f"{shape}: {f} grew x{ratio:.1f} for x{LARGE // SMALL} the cases")
            ratio = large_rss / small_rss
            print(f"{shape}: peak RSS {small_rss:.0f} -> {large_rss:.0f} MiB (x{ratio:.2f})")
            if ratio > bound:
                failures.append(f"{shape}: peak memory grew x{ratio:.1f} for x{LARGE // SMALL} the cases")
            if shown != LARGE:
                failures.append(f"{shape}: report.html's grid shows {shown} cells for {LARGE} cases")
    finally:
        shutil.rmtree(scratch)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
