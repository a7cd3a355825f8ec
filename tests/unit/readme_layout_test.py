#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The README is what a newcomer reads first, and docs/*.md the rest of it:
no build, no VM, no root.

Checks, each a failure of its own name:
  length        README.md is at most 200 lines.
  first-block   its first fenced code block holds exactly two commands,
                tools/run-matrix and tools/run-tests (comments aside), and
                .ci/run runs tools/run-tests.
  layout-paths  every path the "## Layout" table names exists: a row's first
                cell from the repository's root; any other backticked path
                in a row (one with a '/', not an absolute one) from the root
                or from the row's folder, unless git ignores it (a run's
                output, reports/latest/).
  layout-folders  every top-level folder git tracks is named in the first
                column of the table. Left out: hidden folders (.ci/: CI's
                entry, named as a file row, .github/ if ever).
  links         every relative Markdown link [text](path) of README.md and
                docs/*.md resolves, from the file that holds it, to a file
                or folder that exists; a #anchor, to a heading of its target
                (GitHub's ids). Links in code are not links.
  inside        no link or path of those files leaves the repository: a
                link that resolves outside the root, a backticked path that
                does read from the root (paths in prose are the root's:
                `cases/pin/`), anything naming /work/ or shared/seeds (the
                seeds are not in the repository: say what they are instead).

Usage: readme_layout_test.py [REPO_ROOT]   (default: two folders above this file)
Exit: 0 pass, 1 fail.
"""
import os
import re
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from script_checks import check, verdict  # noqa: E402

MAX_LINES = 200


def git(root, *args):
    """git's output, or None where root is no git checkout."""
    try:
        r = subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout if r.returncode == 0 else None


def ignored(root, path):
    return git(root, "check-ignore", "-q", "--no-index", path) is not None


def strip_fences(text):
    """The text with every fenced code block blanked (line numbers kept)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def code_spans(text):
    return re.findall(r"`([^`\n]+)`", strip_fences(text))


def links(text):
    """(target, line) of every inline link outside code."""
    prose = strip_fences(text)
    prose = re.sub(r"`[^`]*`", lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)
    found = []
    for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", prose):
        found.append((m.group(1), prose.count("\n", 0, m.start()) + 1))
    return found


def anchors(path):
    """GitHub's ids of the headings of a Markdown file."""
    ids, seen = set(), {}
    with open(path, encoding="utf-8") as f:
        text = strip_fences(f.read())
    for line in text.split("\n"):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        ids.add(slug if n == 0 else "%s-%d" % (slug, n))
    return ids


def inside(root, path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def table_cells(line):
    """A table row's cells, split at pipes that are not escaped."""
    cells = re.split(r"(?<!\\)\|", line.strip())
    return [c.strip() for c in cells[1:-1]]


def layout_rows(readme):
    """The "## Layout" section's table rows (their cells), no header."""
    rows, section = [], False
    for line in readme.split("\n"):
        if line.startswith("## "):
            section = line.strip() == "## Layout"
            continue
        if section and line.startswith("|"):
            cells = table_cells(line)
            if cells and not re.fullmatch(r"[-: ]+", cells[0]):
                rows.append(cells)
    return rows[1:]  # the header row


def check_length(readme):
    n = readme.count("\n") + (0 if readme.endswith("\n") else 1)
    check(n <= MAX_LINES, "length: README.md has %d lines, more than %d" % (n, MAX_LINES))


def check_first_block(root, readme):
    m = re.search(r"^```[^\n]*\n(.*?)^```", readme, re.S | re.M)
    if not check(m is not None, "first-block: README.md has no fenced code block"):
        return
    commands = []
    for line in m.group(1).split("\n"):
        line = line.split("#", 1)[0].strip()
        if line:
            commands.append(line)
    check(commands == ["tools/run-matrix", "tools/run-tests"],
          "first-block: README.md's first code block runs %s, not exactly tools/run-matrix and tools/run-tests"
          % commands)
    ci = os.path.join(root, ".ci", "run")
    runs = False
    if os.path.exists(ci):
        with open(ci) as f:
            for line in f:
                line = line.split("#", 1)[0].split()
                if line and line[0] == "exec":
                    line = line[1:]
                if line and line[0] == "tools/run-tests":
                    runs = True
    check(runs, "first-block: .ci/run does not run tools/run-tests")


def check_layout(root, readme):
    rows = layout_rows(readme)
    if not check(rows, "layout-paths: README.md has no \"## Layout\" table"):
        return
    named = set()
    for cells in rows:
        first = re.findall(r"`([^`]+)`", cells[0])
        check(first, "layout-paths: a layout row names no path in its first cell: %s" % cells[0])
        for p in first:
            named.add(p.strip("/").split("/")[0])
            check(os.path.exists(os.path.join(root, p)), "layout-paths: %s does not exist" % p)
        folder = first[0] if first else ""
        for cell in cells[1:]:
            for span in re.findall(r"`([^`]+)`", cell):
                p = span.replace("\\|", "|")
                if "/" not in p or p.startswith("/") or " " in p or "|" in p:
                    continue
                ok = (os.path.exists(os.path.join(root, p)) or
                      os.path.exists(os.path.join(root, folder, p)) or ignored(root, p))
                check(ok, "layout-paths: %s (row %s) exists neither from the root nor from %s" % (p, folder, folder))
    tracked = git(root, "ls-files")
    if tracked is None:
        print("note: layout-folders: no git checkout, the tracked folders unknown: not checked")
        return
    folders = {f.split("/")[0] for f in tracked.split("\n") if "/" in f}
    for d in sorted(folders):
        if d.startswith("."):
            continue
        check(d in named, "layout-folders: the top-level folder %s/ is not in the layout table" % d)


def check_links_and_paths(root, files):
    for path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for bad in ("/work/", "shared/seeds"):
            for n, line in enumerate(text.split("\n"), 1):
                check(bad not in line, "inside: %s:%d names %s: %s" % (rel, n, bad, line.strip()))
        for target, n in links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not check(inside(root, dest), "inside: %s:%d links out of the repository: %s" % (rel, n, target)):
                continue
            if not check(os.path.exists(dest), "links: %s:%d links to %s, which does not exist" % (rel, n, target)):
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest):
                check(anchor in anchors(dest), "links: %s:%d links to %s: no such heading in %s"
                      % (rel, n, target, os.path.relpath(dest, root)))
        for span in code_spans(text):
            for p in span.split():
                if "/" in p and not p.startswith("/") and "://" not in p:
                    check(inside(root, os.path.join(root, p.rstrip(".,;:)"))),
                          "inside: %s names the path %s, outside the repository" % (rel, p))


def main():
    root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    readme_path = os.path.join(root, "README.md")
    with open(readme_path, encoding="utf-8") as f:
        readme = f.read()
    docs = os.path.join(root, "docs")
    files = [readme_path] + sorted(os.path.join(docs, n) for n in os.listdir(docs)
                                   if n.endswith(".md")) if os.path.isdir(docs) else [readme_path]
    check_length(readme)
    check_first_block(root, readme)
    check_layout(root, readme)
    check_links_and_paths(root, files)
    return verdict("readme_layout_test", "README.md (%d lines) and %d docs files: layout, links and paths hold"
                   % (readme.count("\n"), len(files) - 1))


if __name__ == "__main__":
    sys.exit(main())
