#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""`pinmatrix bisect` end to end where no kernel builds: a git tree of four
commits whose Makefile is not a kernel's. The real git bisect run calls the
real step at each commit it checks out; every build fails, so every step is
`git bisect skip` (never bad, never good), git ends with only skipped
commits left, and pinmatrix bisect says "no first bad commit" with exit 1.
The tree is back on its branch at its commit with no bisect in progress,
and OUT holds bisect.json (each step: commit, subject, skip, why),
bisect.log, git-bisect.log and each step's build log. (tools/bisect-demo
is the proof with a real kernel: a first bad commit found.)

Usage: bisect_test.py PINMATRIX
"""
import json
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from script_checks import check, verdict  # noqa: E402


def git(tree, *args):
    return subprocess.run(["git", "-C", tree, "-c", "user.name=pm", "-c", "user.email=pm@invalid"] + list(args),
                          check=True, stdout=subprocess.PIPE, text=True).stdout.strip()


def small_tree(root):
    tree = os.path.join(root, "tree")
    os.makedirs(os.path.join(tree, "scripts/kconfig"))
    open(os.path.join(tree, "scripts/kconfig/merge_config.sh"), "w").write("#!/bin/sh\nexit 1\n")
    open(os.path.join(tree, "Makefile"), "w").write("not a kernel's Makefile\n")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "base")
    for i in range(3):
        open(os.path.join(tree, "Makefile"), "a").write("line %d\n" % i)
        git(tree, "commit", "-q", "-a", "-m", "change %d" % i)
    return tree


def main():
    pinmatrix = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="pm-bisect-") as root:
        tree = small_tree(root)
        head = git(tree, "rev-parse", "HEAD")
        out = os.path.join(root, "out")
        p = subprocess.run([pinmatrix, "bisect", "--tree", tree, "--good", "HEAD~3", "--bad", "HEAD", "--cases", "A",
                            "--out", out, "--cache", os.path.join(root, "cache")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        print(p.stdout[-3000:])
        check(p.returncode == 1, "exit %d, not 1" % p.returncode)
        check("no first bad commit" in p.stdout, "no 'no first bad commit' line")
        check(git(tree, "rev-parse", "HEAD") == head, "the tree is not back at its commit")
        check(git(tree, "symbolic-ref", "--short", "HEAD") == "main", "the tree is not back on its branch")
        check(not os.path.exists(os.path.join(tree, ".git/BISECT_START")), "a bisect is still in progress")
        check(git(tree, "status", "--porcelain") == "", "the tree has changes")
        for f in ("bisect.json", "bisect.log", "git-bisect.log", "git-bisect-run.log"):
            check(os.path.isfile(os.path.join(out, f)), f + " not written")
        doc = json.load(open(os.path.join(out, "bisect.json")))
        check(doc["first_bad"] is None, "a first bad commit: %s" % doc["first_bad"])
        steps = doc["steps"]
        check(len(steps) >= 1, "no step recorded")
        tested = {git(tree, "rev-parse", "HEAD~%d" % i): git(tree, "log", "-1", "--format=%s", "HEAD~%d" % i)
                  for i in range(3)}
        for s in steps:
            check(s["verdict"] == "skip" and s["why"].startswith("the build failed"), "step %s" % s)
            check(tested.get(s["commit"]) == s["subject"], "step %s: not one of the commits to test" % s)
            check(os.path.isfile(os.path.join(out, "steps", s["commit"][:12], "build.log")), "no build.log")
    return verdict("bisect", "an unbuildable tree: every step skipped, exit 1, the tree put back")


if __name__ == "__main__":
    sys.exit(main())
