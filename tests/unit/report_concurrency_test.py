#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Two writers of one report directory take turns (issue 32, item 4): while
# another holds the directory's lock (flock on the directory, as
# write_file_set() takes it), `pinmatrix report RUN --out OUT` writes
# nothing, says it waits, and writes its whole set once the lock is let go.
# Without the lock, the report is written at once, and two concurrent runs
# could leave a set mixed from both.
import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPORTS = ["junit.xml", "report.html", "results.ktap", "summary.md"]


def main(pinmatrix, fixture):
    scratch = tempfile.mkdtemp(prefix="pm-report-lock-")
    try:
        run, out = os.path.join(scratch, "run"), os.path.join(scratch, "out")
        os.mkdir(run)
        os.mkdir(out)
        shutil.copy(fixture, os.path.join(run, "results.json"))
        held = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(held, fcntl.LOCK_EX)
        report = subprocess.Popen([pinmatrix, "report", run, "--out", out],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.5)
        written_while_held = sorted(os.listdir(out))
        still_running = report.poll() is None
        os.close(held)
        stdout, stderr = report.communicate(timeout=60)
        failures = []
        if written_while_held:
            failures.append(f"written while another writer held {out}: {written_while_held}")
        if not still_running:
            failures.append("the report ended while another writer held the directory")
        if "waiting for another writer" not in stderr:
            failures.append(f"no word that it waits: {stderr!r}")
        if report.returncode != 0:
            failures.append(f"exit {report.returncode}: {stderr}")
        if sorted(os.listdir(out)) != REPORTS:
            failures.append(f"after the lock was let go, {out} holds {sorted(os.listdir(out))}")
        for f in failures:
            print("FAIL:", f)
        print("ok" if not failures else f"{len(failures)} failures")
        return 1 if failures else 0
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
