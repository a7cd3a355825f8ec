#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""A sweep of bad inputs through the CLI, no boot: arguments of every
subcommand, kernel specs, matrix files, results files (through report,
--compare, --fleet, --kcidb and gate's baseline) and bisect's git trees. Each input runs in
a fresh scratch directory (its --out and --cache are in it, so an input that
is not refused can touch nothing else) under a time bound, and is clean when
pinmatrix

  - exits non-zero, by itself (no signal, within the bound: a refusal is
    immediate, an accepted input starts work),
  - says so in one line that starts with "pinmatrix" (or CLI11's usage line
    and one message),
  - and leaves the scratch directory as it found it (nothing written, nothing
    half-written).

Usage: bad_input_sweep.py PINMATRIX [-v]   (exit 1 when any input is not clean)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

BOUND_S = 20
MESSAGE_MAX = 4096      # a refusal is a line, whatever the input's size
# Hostile in every string a report may print: a terminal's title sequence,
# a line break that starts a Markdown heading or a KTAP result, raw HTML,
# a table cell, a code fence, the end of a JUnit element and of CDATA.
HOSTILE = "\x1b]0;T\x07\r\n# EVIL <img src=x onerror=alert(1)> | ``` \nok 1 forged\n</testcase>]]>"


def raw_control(text):
    """The first control byte in text other than a line break, or None."""
    return next((ch for ch in text if (ord(ch) < 0x20 and ch != "\n") or ord(ch) == 0x7f), None)


def listing(root):
    out = set()
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def toml_inputs():
    """Matrix files: (name, text)."""
    good_kernel = '[kernels.k]\nsource = "debian"\nabi = "6.1"\n'
    run = '[[run]]\nkernel = "k"\nboots = ["ordinary"]\ncases = ["pin"]\n'
    return [
        ("empty", ""),
        ("not-toml", "this is = = not toml ["),
        ("no-run", good_kernel),
        ("no-kernels", run),
        ("run-unknown-kernel", good_kernel + run.replace('"k"', '"nosuch"')),
        ("kernel-escapes", good_kernel.replace("kernels.k", 'kernels."../../escaped"') +
         run.replace('"k"', '"../../escaped"')),
        ("kernel-slash", good_kernel.replace("kernels.k", 'kernels."a/b"') + run.replace('"k"', '"a/b"')),
        ("kernel-nul", good_kernel.replace("kernels.k", 'kernels."a\\u0000b"') +
         run.replace('"k"', '"a\\u0000b"')),
        ("kernel-empty-name", good_kernel.replace("kernels.k", 'kernels.""') + run.replace('"k"', '""')),
        ("kernel-dot", good_kernel.replace("kernels.k", 'kernels."."') + run.replace('"k"', '"."')),
        ("source-bogus", good_kernel.replace('"debian"', '"fedora"') + run),
        ("abi-empty", good_kernel.replace('"6.1"', '""') + run),
        ("abi-escapes", good_kernel.replace('"6.1"', '"../../etc"') + run),
        ("fragment-passwd", '[kernels.k]\nsource = "build"\nfragment = "/etc/passwd"\n' + run),
        ("fragment-escapes", '[kernels.k]\nsource = "build"\nfragment = "../../../etc/passwd"\n' + run),
        ("boots-empty", good_kernel + run.replace('["ordinary"]', "[]")),
        ("placement-bogus", good_kernel + run.replace('"ordinary"', '"bogus"')),
        ("cases-bogus", good_kernel + run.replace('["pin"]', '["bogus"]')),
        ("cases-empty", good_kernel + run.replace('["pin"]', "[]")),
        ("boots-not-array", good_kernel + run.replace('["ordinary"]', '"ordinary"')),
        ("kernel-not-string", good_kernel + run.replace('"k"', "42")),
        ("unknown-key", good_kernel + run + 'colour = "red"\n'),
        ("unknown-kernel-key", good_kernel + 'colour = "red"\n' + run),
        ("deep-array", "x = " + "[" * 5000 + "]" * 5000 + "\n"),
        ("huge-string", 'x = "' + "a" * (4 << 20) + '"\n'),
        # a path: never "" (it would mean the file's own directory), never
        # carried whole or raw into the message
        ("image-dir-empty", '[kernels.k]\nsource = "image"\ndir = ""\n' + run),
        ("tree-dir-empty", '[kernels.k]\nsource = "tree"\ndir = ""\n' + run),
        ("debs-dir-empty", '[kernels.k]\nsource = "debs"\ndir = ""\n' + run),
        ("build-fragment-empty", '[kernels.k]\nsource = "build"\nfragment = ""\n' + run),
        ("image-dir-10mb", '[kernels.k]\nsource = "image"\ndir = "' + "d" * (10 << 20) + '"\n' + run),
        ("image-dir-4k", '[kernels.k]\nsource = "image"\ndir = "/' + "d/" * 2000 + '"\n' + run),
        ("image-dir-escape-sequence", '[kernels.k]\nsource = "image"\ndir = "/nonexistent-\\u001b]0;T\\u0007"\n' + run),
    ]


def results_inputs():
    """results.json documents: (name, text)."""
    case = {"id": "A", "verdict": "pass"}
    doc = lambda cases, **kw: json.dumps({"schema": "pinmatrix/1", "cases": cases, **kw})
    return [
        ("empty", ""),
        ("not-json", "{not json"),
        ("array", "[1, 2, 3]"),
        ("object-without-schema", json.dumps({"cases": [case]})),
        ("schema-wrong", json.dumps({"schema": "pinmatrix/99", "cases": [case]})),
        ("cases-not-array", doc({"A": 1})),
        ("case-not-object", doc([1, "two", None])),
        ("verdict-banana", doc([{"id": "A", "verdict": "banana"}])),
        ("verdict-null", doc([{"id": "A", "verdict": None}])),
        ("verdict-42", doc([{"id": "A", "verdict": 42}])),
        ("verdict-missing", doc([{"id": "A"}])),
        ("id-missing", doc([{"verdict": "pass"}])),
        ("id-number", doc([{"id": 42, "verdict": "pass"}])),
        ("same-case-twice", doc([case, case])),
        ("placement-number", doc([{"id": "A", "verdict": "pass", "placement": 7}])),
        ("not-reached-string", doc([{"id": "A", "verdict": "error", "reason": "x", "not_reached": "yes"}])),
        ("started-at-number", doc([{"id": "A", "verdict": "pass", "started_at": 1700000000}])),
        ("deep", '{"schema": "pinmatrix/1", "cases": [], "x": ' + "[" * 200000 + "]" * 200000 + "}"),
        ("nul-bytes", '{"schema": "pinmatrix/1", "cases": [\0]}'),
    ]


def git_tree(w, kernel=True):
    """A small git tree of two commits in w["dir"]/tree: with a Makefile and
    scripts/kconfig/merge_config.sh, what bisect checks of a kernel tree
    before anything runs."""
    t = os.path.join(w["dir"], "tree")
    os.makedirs(os.path.join(t, "scripts/kconfig"))
    git = lambda *a: subprocess.run(["git", "-C", t, "-c", "user.name=sweep", "-c", "user.email=sweep@invalid"] +
                                    list(a), check=True, stdout=subprocess.DEVNULL)
    open(os.path.join(t, "Makefile" if kernel else "README"), "w").write("one\n")
    open(os.path.join(t, "scripts/kconfig/merge_config.sh"), "w").write("#!/bin/sh\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    open(os.path.join(t, "scripts/kconfig/merge_config.sh"), "a").write("# two\n")
    git("commit", "-q", "-a", "-m", "two")
    return t


def setup_inputs():
    """(name, setup): inputs made on disk first: --out targets that are not
    regular files, bisect's git trees (each refused before anything is
    built, checked out or written) and gate's baseline inside its --out."""
    def bisect(w, t, *more, good="HEAD~1", bad="HEAD", cases="A", out=None):
        return ["bisect", "--tree", t, "--good", good, "--bad", bad, "--cases", cases,
                "--out", out or w["out"], "--cache", w["cache"]] + list(more)

    def dirty(w):
        t = git_tree(w)
        open(os.path.join(t, "Makefile"), "a").write("changed\n")
        return bisect(w, t)

    def in_progress(w):
        t = git_tree(w)
        open(os.path.join(t, ".git/BISECT_START"), "w").write("main\n")
        return bisect(w, t)

    def gate_over_baseline(w):
        os.makedirs(os.path.join(w["out"], "old"))
        doc = {"schema": "pinmatrix/1", "cases": [{"id": "A", "verdict": "pass"}]}
        json.dump(doc, open(os.path.join(w["out"], "old", "results.json"), "w"))
        return ["gate", "--baseline", os.path.join(w["out"], "old"), "--out", w["out"], "--cache", w["cache"]]

    def kcidb_out(make):
        def setup(w):
            doc = {"schema": "pinmatrix/1", "cases": [{"id": "A", "verdict": "pass"}]}
            json.dump(doc, open(os.path.join(w["dir"], "results.json"), "w"))
            target = make(w)
            return ["report", w["dir"], "--kcidb", "--origin", "sweep", "--out", target]
        return setup

    def fifo(w):
        os.mkfifo(os.path.join(w["node"], "fifo"))
        return os.path.join(w["node"], "fifo")

    def link(w):
        os.symlink(w["file"], os.path.join(w["node"], "link"))
        return os.path.join(w["node"], "link")

    def fleet_out_is_node(w):
        doc = {"schema": "pinmatrix/1", "cases": [{"id": "A", "verdict": "pass"}]}
        for n in ("n1", "n2"):
            os.makedirs(os.path.join(w["dir"], n))
            json.dump(doc, open(os.path.join(w["dir"], n, "results.json"), "w"))
            open(os.path.join(w["dir"], n, "status.json"), "w").write('{"state": "ran"}')
        n1, n2 = os.path.join(w["dir"], "n1"), os.path.join(w["dir"], "n2")
        return ["report", "--fleet", n1, n2, "--out", n1 + "/"]

    def debs(content):
        def setup(w):
            open(os.path.join(w["dir"], "linux-image-6.1.0-1-amd64_6.1.1-1_amd64.deb"), "wb").write(content)
            return ["vm", "--kernel", "debs:" + w["dir"], "--out", w["out"], "--cache", w["cache"]]
        return setup

    def image_named(name):
        def setup(w):
            img = os.path.join(w["dir"], name)
            for d in ("modules", "build"):
                os.makedirs(os.path.join(img, d))
            for f, text in (("release", "6.1.0-sweep\n"), ("config", "CONFIG_MODULES=y\n"), ("vmlinux", "")):
                open(os.path.join(img, f), "w").write(text)
            return ["vm", "--kernel", "image:" + img, "--out", w["out"], "--cache", w["cache"]]
        return setup

    return [
        # paths the guest would split: QEMU's -virtfs splits at a comma, the
        # guest's init splits its command line at white space
        ("vm-out-comma", lambda w: ["vm", "--out", w["out"] + ",x", "--cache", w["cache"]]),
        ("vm-cache-space", lambda w: ["vm", "--out", w["out"], "--cache", w["cache"] + " x"]),
        ("image-dir-space", image_named("my image")),
        ("image-dir-newline", image_named("my\nimage")),
        ("image-dir-quote", image_named('my"image')),
        # a .deb that is not a Debian package: told before dpkg-deb sees it
        ("debs-garbage", debs(b"garbage\n")),
        ("debs-empty-file", debs(b"")),
        ("debs-ar-without-debian-binary", debs(b"!<arch>\ncontrol.tar.xz/  0           0     0     644     4         `\nxxxx")),
        ("debs-debian-binary-3", debs(b"!<arch>\ndebian-binary   0           0     0     100644  4         `\n3.0\n")),
        # an --out that is an input: the input would be lost
        ("fleet-out-is-a-node", fleet_out_is_node),
        ("kcidb-out-is-its-results", kcidb_out(lambda w: os.path.join(w["dir"], "results.json"))),
        # --out: never through a link, never over a FIFO or device, never a directory
        ("kcidb-out-fifo", kcidb_out(fifo)),
        ("kcidb-out-symlink", kcidb_out(link)),
        ("kcidb-out-trailing-slash", kcidb_out(lambda w: os.path.join(w["out"], "newdir") + "/")),
        ("bisect-tree-is-file", lambda w: bisect(w, w["file"])),
        ("bisect-tree-not-git", lambda w: bisect(w, w["dir"])),
        ("bisect-tree-not-kernel", lambda w: bisect(w, git_tree(w, kernel=False))),
        ("bisect-tree-subdir", lambda w: bisect(w, os.path.join(git_tree(w), "scripts"))),
        ("bisect-tree-dirty", dirty),
        ("bisect-in-progress", in_progress),
        ("bisect-good-unknown", lambda w: bisect(w, git_tree(w), good="nosuchrev")),
        ("bisect-good-option", lambda w: bisect(w, git_tree(w), good="--output=x")),
        ("bisect-good-empty", lambda w: bisect(w, git_tree(w), good="")),
        ("bisect-good-is-bad", lambda w: bisect(w, git_tree(w), good="HEAD")),
        ("bisect-good-after-bad", lambda w: bisect(w, git_tree(w), good="HEAD", bad="HEAD~1")),
        ("bisect-cases-empty", lambda w: bisect(w, git_tree(w), cases="")),
        ("bisect-cases-comma", lambda w: bisect(w, git_tree(w), cases="A,,B")),
        ("bisect-boot-bogus", lambda w: bisect(w, git_tree(w), "--boot", "bogus")),
        ("bisect-fragment-missing", lambda w: bisect(w, git_tree(w), "--fragment", "/nonexistent-pm.config")),
        ("bisect-fragment-passwd", lambda w: bisect(w, git_tree(w), "--fragment", "/etc/passwd")),
        ("bisect-out-in-tree", lambda w: bisect(w, git_tree(w), out=os.path.join(w["dir"], "tree", "out"))),
        ("bisect-build-in-tree", lambda w: bisect(w, git_tree(w), "--build", os.path.join(w["dir"], "tree", "b"))),
        ("bisect-out-is-file", lambda w: bisect(w, git_tree(w), out=w["file"])),
        ("bisect-cpus-0", lambda w: bisect(w, git_tree(w), "--cpus", "0")),
        ("bisect-no-tree", lambda w: ["bisect", "--good", "a", "--bad", "b", "--cases", "A", "--out", w["out"]]),
        ("gate-out-holds-baseline", gate_over_baseline),
    ]


def cli_inputs(w):
    """(name, argv) for argument errors; w: the scratch dir's paths."""
    out, cache = w["out"], w["cache"]
    vm = ["vm", "--out", out, "--cache", cache]
    kb = ["kernel", "build", "--cache", cache]
    a = []
    add = lambda name, *argv: a.append((name, list(argv)))
    add("no-subcommand")
    add("unknown-subcommand", "frobnicate")
    add("unknown-option", "cases", "--frob")
    add("cases-extra", "cases", "extra")
    # vm: each option, bad
    add("vm-no-out", "vm", "--cache", cache)
    add("vm-out-empty", "vm", "--out", "", "--cache", cache)
    add("vm-out-is-file", "vm", "--out", w["file"], "--cache", cache)
    add("vm-out-unwritable", "vm", "--out", "/proc/pm-sweep/out", "--cache", cache)
    add("vm-cache-is-file", "vm", "--out", out, "--cache", w["file"])
    add("vm-cache-empty", "vm", "--out", out, "--cache", "")
    for v in ("0", "-1", "abc", "255", "99999999", "1e3", ""):
        add("vm-memory-" + (v or "empty"), *vm, "--memory", v)
    for v in ("0", "9", "x", "-1"):
        add("vm-cpus-" + v, *vm, "--cpus", v)
    for v in ("0", "65", "x", "-1", ""):
        add("vm-jobs-" + (v or "empty"), *vm, "--jobs", v)
    add("vm-jobs-without-matrix", *vm, "--jobs", "2")
    # decimal only: CLI11 reads a leading zero as octal (--jobs 010 ran 8 guests)
    for opt, v in (("--jobs", "010"), ("--memory", "03000"), ("--memory", "02048"), ("--cpus", "01"),
                   ("--timeout", "0300"), ("--case-timeout", "060")):
        add("vm-leading-zero" + opt + "-" + v, *vm, "--matrix", w["file"], opt, v)
    for v in ("0", "-5", "abc", "2147483648"):
        add("vm-timeout-" + v, *vm, "--timeout", v)
        add("vm-case-timeout-" + v, *vm, "--case-timeout", v)
    for v in ("bogus", "", "CMA", "movable,cma"):
        add("vm-boot-" + (v or "empty"), *vm, "--boot", v)
    add("vm-placement", *vm, "--placement", "cma")
    for v in ("", ",", "A,,B", "Z", "A,Z", "../A"):
        add("vm-cases-" + (v or "empty"), *vm, "--cases", v)
    add("vm-append-long", *vm, "--append", "x" * 3000)
    add("vm-append-newline", *vm, "--append", "a\nb")
    add("vm-append-quote", *vm, "--append", 'a="b"')
    for v in ("panic-at=", "hang-at=Z", "kernel-hang-at=A", "explode", "panic-at=A,B"):
        add("vm-fault-" + (v or "empty"), *vm, "--fault", v)
    add("vm-guest-cmd-and-cases", *vm, "--guest-cmd", "true", "--cases", "A")
    add("vm-guest-cmd-and-matrix", *vm, "--guest-cmd", "true", "--matrix", w["file"])
    for v in ("80", "70000", "x"):
        add("vm-ssh-port-" + v, *vm, "--ssh-port", v)
    add("vm-ssh-port-without-key", *vm, "--ssh-port", "2222")
    add("vm-ssh-key-without-port", *vm, "--ssh-key", w["file"])
    add("vm-ssh-key-missing", *vm, "--ssh-port", "2222", "--ssh-key", "/nonexistent-pm-key")
    add("vm-bench-args-without-bench", *vm, "--bench-args", "--benchmark_filter=x")
    add("vm-bench-and-guest-cmd", *vm, "--bench", "--guest-cmd", "true")
    for v in ("bogus", ""):
        add("vm-first-pin-" + (v or "empty"), *vm, "--first-pin", v)
        add("vm-second-pin-" + (v or "empty"), *vm, "--second-pin", v)
    add("vm-matrix-missing", *vm, "--matrix", "/nonexistent-pm.toml")
    add("vm-matrix-dir", *vm, "--matrix", w["dir"])
    add("vm-patch-not-build", *vm, "--kernel", "debian", "--patch", w["file"])
    add("vm-positional", *vm, "extra")
    # kernel specs, through vm and through kernel build
    for spec in ("", "debian:", "build:", "image:", "tree:", "debs:", "debian:../x", "debian:6.1/../..",
                 "build:../../etc/passwd", "build:debug+", "build:+", "build@", "build@six", "build@6.12:",
                 "build@6.12:nosuch", "build:nosuch", "nosuch:", "fedora:41", "debian:6.1 x",
                 "tree:/nonexistent-pm-tree", "debs:/nonexistent-pm-debs", "image:/nonexistent-pm-image",
                 "tree:" + w["file"], "debs:" + w["dir"], "tree:" + w["dir"]):
        add("vm-kernel-" + (spec or "empty"), *vm, "--kernel", spec)
        add("kernel-build-" + (spec or "empty"), *kb, "--kernel", spec)
    add("kernel-build-patch-missing", *kb, "--kernel", "build", "--patch", "/nonexistent-pm.patch")
    add("kernel-build-patch-devnull", *kb, "--kernel", "build", "--patch", "/dev/null")
    add("kernel-build-patch-dir", *kb, "--kernel", "build", "--patch", w["dir"])
    add("kernel-build-patch-not-build", *kb, "--kernel", "debian", "--patch", w["file"])
    add("kernel-build-cache-file", "kernel", "build", "--kernel", "build", "--cache", w["file"])
    add("kernel-no-subcommand", "kernel")
    # report
    add("report-nothing", "report")
    add("report-missing-dir", "report", w["dir"] + "/missing")
    add("report-empty-dir", "report", w["dir"])
    add("report-compare-one", "report", "--compare", w["dir"])
    add("report-compare-missing", "report", "--compare", w["dir"] + "/a", w["dir"] + "/b")
    add("report-format-without-compare", "report", "--format", "md", w["dir"])
    add("report-format-bogus", "report", "--format", "xml", "--compare", w["dir"], w["dir"])
    for v in ("-1", "abc", "nan"):
        add("report-bench-threshold-" + v, "report", "--bench-threshold", v, "--compare", w["dir"], w["dir"])
    add("report-fleet-without-out", "report", "--fleet", w["dir"])
    add("report-fleet-empty-node", "report", "--fleet", w["dir"], "--out", out)
    add("report-fleet-same-node-twice", "report", "--fleet", w["node"], w["node"], "--out", out)
    add("report-out-is-file", "report", w["dir"], "--out", w["file"])
    # report --kcidb: the origin first, then what it reads
    add("report-kcidb-no-origin", "report", w["dir"], "--kcidb")
    for i, v in enumerate(("", "My_Lab", "my-lab", "a:b", "a b", "lab\n", "lab/..")):
        add("report-kcidb-origin-%d" % i, "report", w["dir"], "--kcidb", "--origin", v)
    add("report-origin-without-kcidb", "report", w["dir"], "--origin", "lab")
    add("report-kcidb-no-dir", "report", "--kcidb", "--origin", "lab")
    add("report-kcidb-missing-dir", "report", w["dir"] + "/missing", "--kcidb", "--origin", "lab")
    add("report-kcidb-empty-dir", "report", w["dir"], "--kcidb", "--origin", "lab")
    add("report-kcidb-out-is-dir", "report", w["dir"], "--kcidb", "--origin", "lab", "--out", w["node"])
    add("report-kcidb-and-compare", "report", "--kcidb", "--origin", "lab", "--compare", w["dir"], w["dir"])
    add("report-kcidb-and-fleet", "report", "--kcidb", "--origin", "lab", "--fleet", w["node"])
    add("report-kcidb-and-format", "report", w["dir"], "--kcidb", "--origin", "lab", "--format", "md")
    # explain
    add("explain-nothing", "explain")
    for v in ("-1", "0", "abc", "99999999999"):
        add("explain-pid-" + v, "explain", v, "0x1000")
    for v in ("bogus", "10-5", "0+0", "zz", "0x1000+", "+5", "0x1000-0x1000", "0x1000+99999G"):
        add("explain-range-" + v, "explain", str(os.getpid()), v)
    add("explain-no-command", "explain", "--")
    add("explain-command-missing", "explain", "--", "/nonexistent-pm-command")
    # run: parse-level refusals only (an accepted run would pin host memory)
    add("run-cases-unknown", "run", "--cases", "Z", "--out", out)
    add("run-fault-bogus", "run", "--fault", "explode", "--out", out)
    add("run-module-missing", "run", "--module", "/nonexistent-pm.ko", "--out", out)
    add("run-placement-bogus", "run", "--placement", "bogus", "--out", out)
    add("run-first-pin-bogus", "run", "--first-pin", "bogus", "--out", out)
    add("run-second-pin-bogus", "run", "--second-pin", "bogus", "--out", out)
    # --no-module is the only spelling of the stock kernel's source, and
    # it takes no module and no other first-pin source.
    add("run-first-pin-stock", "run", "--first-pin", "stock", "--out", out)
    add("run-no-module-and-first-pin", "run", "--no-module", "--first-pin", "io_uring", "--out", out)
    add("run-no-module-and-module", "run", "--no-module", "--module", w["file"], "--out", out)
    add("vm-no-module-and-first-pin", *vm, "--no-module", "--first-pin", "cuda")
    add("cases-first-pin-stock", "cases", "--first-pin", "stock")
    add("run-find-budget-0", "run", "--find-budget", "0", "--out", out)
    # --format: text or ktap; ktap reports cases, not a guest command's output
    add("run-format-bogus", "run", "--format", "tap", "--out", out)
    add("vm-format-bogus", *vm, "--format", "xml")
    add("vm-format-ktap-guest-cmd", *vm, "--format", "ktap", "--guest-cmd", "true")
    # --format is what stdout holds, in every command: a form it lacks is refused
    add("cases-format-ktap", "cases", "--format", "ktap")
    add("cases-cases-unknown", "cases", "--cases", "Z")
    add("explain-format-bogus", "explain", "--format", "xml", str(os.getpid()), "0x1000")
    add("explain-json-and-format", "explain", "--json", "--format", "text", str(os.getpid()), "0x1000")
    # gate and run --baseline: the baseline is read before anything runs
    gate = ["gate", "--out", out, "--cache", cache]
    add("gate-no-baseline", *gate)
    add("gate-no-out", "gate", "--baseline", w["dir"], "--cache", cache)
    add("gate-baseline-missing", *gate, "--baseline", w["dir"] + "/missing")
    add("gate-baseline-empty-dir", *gate, "--baseline", w["dir"])
    add("gate-baseline-is-file", *gate, "--baseline", w["file"])
    add("gate-guest-cmd", *gate, "--baseline", w["dir"], "--guest-cmd", "true")
    add("gate-bench-threshold-without-bench", *gate, "--baseline", w["dir"], "--bench-threshold", "10")
    add("gate-cases-empty", *gate, "--baseline", w["dir"], "--cases", "")
    add("run-baseline-missing", "run", "--baseline", w["dir"] + "/missing", "--out", out)
    add("vm-baseline-missing", *vm, "--baseline", w["dir"] + "/missing")
    add("vm-latency-without-baseline", *vm, "--latency")
    add("vm-bench-threshold-without-baseline", *vm, "--bench-threshold", "10")
    add("run-baseline-without-out", "run", "--baseline", w["dir"])
    add("run-latency-without-baseline", "run", "--latency", "--out", out)
    add("report-latency-without-compare", "report", "--latency", w["dir"])
    # a path given as "" is refused, never read as not given
    add("report-out-empty", "report", w["dir"], "--out", "")
    add("run-out-empty", "run", "--out", "")
    add("gate-baseline-empty", *gate, "--baseline", "")
    add("report-kcidb-latency", "report", w["dir"], "--kcidb", "--origin", "lab", "--latency")
    return a


def one(pinmatrix, name, setup, verbose):
    """One input (setup(w) writes its files and gives its argv): (name, why it is not clean or None, output)."""
    with tempfile.TemporaryDirectory(prefix="pm-sweep-") as root:
        w = {k: os.path.join(root, k) for k in ("out", "cache", "file", "dir", "node")}
        open(w["file"], "w").write("not a directory\n")
        os.mkdir(w["dir"])
        os.mkdir(w["node"])
        json.dump([1, 2, 3], open(os.path.join(w["node"], "status.json"), "w"))
        argv = setup(w)
        before = listing(root)
        p = subprocess.Popen([pinmatrix] + argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            text, _ = p.communicate(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # the session we started, nothing else
            text, _ = p.communicate()
            return name, "not refused: still running after %d s" % BOUND_S, text.decode(errors="replace")
        text = text.decode(errors="replace")
        lines = [l for l in text.splitlines() if l.strip()]
        after = listing(root)
        why = None
        if p.returncode == 0:
            why = "exit 0"
        elif p.returncode < 0:
            why = "killed by signal %d" % -p.returncode
        elif not lines:
            why = "exit %d with no message" % p.returncode
        elif len(lines) > 2:
            why = "%d lines of output" % len(lines)
        elif not lines[-1].startswith(("pinmatrix", "Run with --help")) and not lines[0].startswith("pinmatrix"):
            why = "message does not name pinmatrix: " + lines[0][:80]
        elif after != before:
            why = "wrote " + ", ".join(sorted(after - before)[:5]) + (" removed " if before - after else "")
        elif len(text) > MESSAGE_MAX:
            why = "%d bytes of output: a message carries the input whole" % len(text)
        elif raw_control(text):
            why = "raw control byte %r in the message (a terminal would act on it)" % raw_control(text)
        if verbose:
            print("  %-40s exit %-3s %s" % (name, p.returncode, lines[0][:110] if lines else ""))
        return name, why, text


def hostile(x, key=None):
    """x with HOSTILE after every string but the schema and the verdicts."""
    if isinstance(x, dict):
        return {k: v if k in ("schema", "verdict") else hostile(v, k) for k, v in x.items()}
    if isinstance(x, list):
        return [hostile(v, key) for v in x]
    return x + HOSTILE if isinstance(x, str) else x


def markdown_outside_code(text):
    """text less its fenced code blocks and code spans, which Markdown shows
    as text (CommonMark 4.5, 6.1)."""
    kept, fence = [], None
    for line in text.splitlines():
        run = len(line) - len(line.lstrip("`"))
        if fence is None and run >= 3:
            fence = run
        elif fence is not None and run >= fence and not line.strip("`").strip():
            fence = None
        elif fence is None:
            kept.append(line)
    return re.sub(r"(`+)(.+?)(?<!`)\1(?!`)", "", "\n".join(kept))


def forged(kind, text):
    """What HOSTILE forged in text, an output of kind, or None."""
    lines = text.splitlines()
    if raw_control(text):
        return "raw control byte %r" % raw_control(text)
    if kind in ("terminal", "markdown", "ktap") and any(l.startswith(("# EVIL", "ok 1 forged")) for l in lines):
        return "a line of its own from a results string"
    if kind == "html" and "<img" in text:
        return "raw HTML from a results string"
    if kind == "markdown" and "<img" in markdown_outside_code(text):
        return "raw HTML from a results string"
    # a report's own fences are backticks alone (or with a language)
    if kind == "markdown" and any(l.startswith("```") and " " in l.strip("`").strip() for l in lines):
        return "a code fence from a results string"
    if kind == "xml":
        import xml.etree.ElementTree as ET
        try:
            ET.fromstring(text)
        except ET.ParseError as e:
            return "not XML: %s" % e
    if kind == "json":
        try:
            json.loads(text)
        except ValueError as e:
            return "not JSON: %s" % e
    return None


def hostile_reports(pinmatrix):
    """Every report of results whose every string is HOSTILE (accepted, so
    not a refusal): (name, what was forged) for each output that shows it."""
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "results-pass.json")
    doc = hostile(json.load(open(fixture)))
    worse = json.loads(json.dumps(doc))
    worse["cases"][0]["verdict"] = "fail"
    found = []
    with tempfile.TemporaryDirectory(prefix="pm-hostile-") as root:
        runs = {}
        for name, d in (("old", doc), ("new", worse)):
            runs[name] = os.path.join(root, name)
            os.mkdir(runs[name])
            json.dump(d, open(os.path.join(runs[name], "results.json"), "w"))
            status = {"state": "ran" + HOSTILE, "node": name + HOSTILE, "reason": HOSTILE}
            json.dump(status, open(os.path.join(runs[name], "status.json"), "w"))
            json.dump({"kernel": HOSTILE, "cpu": HOSTILE}, open(os.path.join(runs[name], "facts.json"), "w"))
        commands = {
            "report": (["report", runs["old"], "--out", os.path.join(root, "out")],
                       {"summary.md": "markdown", "report.html": "html", "junit.xml": "xml", "results.ktap": "ktap"}),
            "fleet": (["report", "--fleet", runs["old"], runs["new"], "--out", os.path.join(root, "fleet")],
                      {"fleet.md": "markdown", "summary.md": "markdown", "report.html": "html", "junit.xml": "xml"}),
            "kcidb": (["report", runs["old"], "--kcidb", "--origin", "sweep", "--out", "-"], {}),
        }
        for fmt in ("text", "md", "json"):
            commands["compare-" + fmt] = (["report", "--compare", runs["old"], runs["new"], "--format", fmt], {})
        for name, (argv, files) in commands.items():
            p = subprocess.run([pinmatrix] + argv, cwd=root, capture_output=True, text=True, errors="replace",
                               timeout=60)
            kind = "json" if name in ("kcidb", "compare-json") else "markdown" if name == "compare-md" else "terminal"
            for stream, text in (("stdout", p.stdout), ("stderr", p.stderr)):
                what = forged(kind if stream == "stdout" else "terminal", text)
                if what:
                    found.append(("hostile/%s %s" % (name, stream), what))
            out = argv[argv.index("--out") + 1] if "--out" in argv else None
            for f, fkind in files.items():
                path = os.path.join(out, f)
                if not os.path.exists(path):
                    found.append(("hostile/%s %s" % (name, f), "not written (exit %d: %s)" % (p.returncode, p.stderr[:200])))
                    continue
                what = forged(fkind, open(path, errors="replace").read())
                if what:
                    found.append(("hostile/%s %s" % (name, f), what))
    return found


def main():
    if len(sys.argv) < 2:
        print("usage: bad_input_sweep.py PINMATRIX [-v]", file=sys.stderr)
        return 2
    pinmatrix, verbose = os.path.abspath(sys.argv[1]), "-v" in sys.argv[2:]
    inputs = []
    # The arguments name the scratch dir's paths: made again for each one.
    names = [name for name, _ in cli_inputs({k: k for k in ("out", "cache", "file", "dir", "node")})]
    for i, name in enumerate(names):
        inputs.append(("cli/" + name, lambda w, i=i: cli_inputs(w)[i][1]))
    for name, text in toml_inputs():
        def setup(w, text=text):
            f = os.path.join(w["dir"], "matrix.toml")
            open(f, "w").write(text)
            return ["vm", "--matrix", f, "--out", w["out"], "--cache", w["cache"]]
        inputs.append(("matrix/" + name, setup))
    for name, text in results_inputs():
        for mode in ("report", "compare", "fleet", "kcidb", "gate"):
            def setup(w, text=text, mode=mode):
                f = os.path.join(w["dir"], "results.json")
                open(f, "w").write(text)
                if mode == "report":
                    return ["report", w["dir"], "--out", w["out"]]
                if mode == "compare":
                    return ["report", "--compare", w["dir"], w["dir"]]
                if mode == "gate":
                    return ["gate", "--baseline", w["dir"], "--out", w["out"], "--cache", w["cache"]]
                if mode == "kcidb":
                    return ["report", w["dir"], "--kcidb", "--origin", "sweep", "--out", w["out"] + "/kcidb.json"]
                os.replace(f, os.path.join(w["node"], "results.json"))
                open(os.path.join(w["node"], "status.json"), "w").write('{"state": "ran"}')
                return ["report", "--fleet", w["node"], "--out", w["out"]]
            inputs.append(("results-%s/%s" % (mode, name), setup))
    for name, setup in setup_inputs():
        inputs.append(("setup/" + name, setup))
    unclean = []
    for name, setup in inputs:
        n, why, text = one(pinmatrix, name, setup, verbose)
        if why:
            unclean.append((n, why, text))
    for n, why, text in unclean:
        print("NOT CLEAN: %s: %s" % (n, why))
        for l in text.strip().splitlines()[:4]:
            print("    | " + l[:160])
    print("bad-input sweep: %d inputs, %d clean, %d not clean" % (len(inputs), len(inputs) - len(unclean),
                                                                   len(unclean)))
    forgeries = hostile_reports(pinmatrix)
    for n, what in forgeries:
        print("FORGED: %s: %s" % (n, what))
    print("hostile strings in every results field: %d forged outputs" % len(forgeries))
    return 1 if unclean or forgeries else 0


if __name__ == "__main__":
    sys.exit(main())
