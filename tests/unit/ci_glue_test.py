#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The CI glue of ci-glue/, run for real on this machine (no VM):

  lava         ci-glue/lava/pinmatrix.yaml checked against LAVA's test
               definition schema (lava_common/schemas/test/testdef.py), then
               its run steps executed as LAVA's test shell runs them (its
               params as shell variables, overridden as a job's parameters
               do, `set -e`, from the repository root) with the TEST DOUBLE
               of lava-test-case (tests/doubles/) first in PATH, against a
               real `pinmatrix run --cases A,D` (SKIPs here: no module); the
               signal lines parsed and compared with the results.json it
               wrote
  lava-report  the definition's report step on results with every verdict
               (pass with a latency, fail, skip, error, not reached, another
               suite, an id twice, a name with characters LAVA drops); a file
               that is not results refused with exit 2
  gitlab       ci-glue/gitlab-ci.yml: the job's script (PINMATRIX_ARGS set
               to `run --cases A,D`, as a pipeline variable would) in a
               scratch project directory; the file its artifacts:reports:junit
               names exists, is kept by its artifacts:paths, passes
               tests/data/junit.xsd and has a testcase per case of the run;
               then the same script as a gate (`--baseline`, a baseline in
               which the first case passed): exit 1 naming that case alone
  jenkins      ci-glue/Jenkinsfile: the same for the pinmatrix stage's sh
               step and the junit step's testResults

Usage: ci_glue_test.py MODE PINMATRIX SOURCE_DIR
Exit: 0 pass, 1 fail, 77 skip (python3-yaml or xmllint missing; the module
loaded here, where a run would pin this machine's memory).
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml is not installed (tools/setup-host)")
    sys.exit(77)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from script_checks import check, skip, verdict  # noqa: E402

SIGNAL = re.compile(r"^<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=(\S+) RESULT=(\S+)(?: UNITS=(\S+))?(?: MEASUREMENT=(\S+))?>$")
def need_host_run():
    if os.path.exists("/dev/pinmatrix"):
        skip("the module is loaded on this machine: pinmatrix run would pin its memory")


# What the glue must report, from results.json itself.

def lava_name(case):
    suite = case.get("suite") or (case["id"].split("/", 1)[0] if "/" in case["id"] else
                                  "pin" if case.get("placement") else "other")
    rest = case["id"][len(suite) + 1:] if case["id"].startswith(suite + "/") else case["id"]
    return re.sub(r"[^A-Za-z0-9._-]", "_", suite + "." + rest.replace("/", "."))


def expected_signals(doc):
    out, seen = [], {}
    for c in doc["cases"]:
        name = lava_name(c)
        seen[name] = seen.get(name, 0) + 1
        name += "-%d" % seen[name] if seen[name] > 1 else ""
        latency = c.get("latency_ns")
        timed = isinstance(latency, int) and not isinstance(latency, bool)
        result = {"pass": "pass", "fail": "fail", "skip": "skip", "error": "unknown"}[c["verdict"]]
        out.append((name, result, "ns" if timed else None, str(latency) if timed else None))
    return out


def run_verdict(doc):
    s = doc["summary"]
    return "fail" if s["fail"] or s["error"] else "pass" if s["pass"] else "skip"


# LAVA

def lava_definition(source):
    with open(os.path.join(source, "ci-glue/lava/pinmatrix.yaml")) as f:
        d = yaml.safe_load(f)
    m = d.get("metadata", {})
    check(m.get("format") == "Lava-Test Test Definition 1.0", "metadata.format: %r" % m.get("format"))
    check(isinstance(m.get("name"), str) and isinstance(m.get("description"), str), "metadata name, description")
    for key in ("environment", "devices", "maintainer", "scope", "os"):
        check(key not in m or all(isinstance(x, str) for x in m[key]), "metadata.%s: a list of strings" % key)
    check(isinstance(d.get("params", {}), dict), "params: a mapping")
    steps = d.get("run", {}).get("steps")
    check(isinstance(steps, list) and steps and all(isinstance(s, str) for s in steps), "run.steps: strings")
    # The DUT gets the packages (LAVA's install: deps, from its apt sources),
    # not a build of the checkout.
    deps = d.get("install", {}).get("deps", [])
    check({"pinmatrix", "pinmatrix-dkms"} <= set(deps), "install.deps lacks the packages: %r" % deps)
    check(d.get("params", {}).get("PINMATRIX") == "pinmatrix", "PINMATRIX is not the installed pinmatrix")
    return d


def lava_shell(source, definition, parameters, steps):
    """The script LAVA's test shell makes of a definition: its params, then
    the job's parameters, as shell variables; `set -e`; the repository root."""
    lines = ["###default parameters from test definition###"]
    lines += ["%s=%s" % (k, shlex.quote(str(v))) for k, v in definition.get("params", {}).items()]
    lines += ["###test parameters from job submission###"]
    lines += ["%s=%s" % (k, shlex.quote(str(v))) for k, v in parameters.items()]
    lines += ["set -e", "cd " + shlex.quote(source)] + steps
    return "\n".join(lines) + "\n"


def run_lava(source, script):
    env = dict(os.environ, PATH=os.path.join(source, "tests/doubles") + os.pathsep + os.environ["PATH"])
    p = subprocess.run(["sh", "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    signals = [m.groups() for m in map(SIGNAL.match, p.stdout.splitlines()) if m]
    return p, signals


def test_lava(pinmatrix, source):
    """PINMATRIX_GLUE_ARGS: the definition's ARGS (default --cases A,D);
    PINMATRIX_GLUE_EXPECT_PASS=1: a case must pass with its latency (a guest
    with the module, vm.ci-glue-lava)."""
    need_host_run()
    d = lava_definition(source)
    with tempfile.TemporaryDirectory(prefix="pm-lava-") as tmp:
        out = os.path.join(tmp, "out")
        params = {"PINMATRIX": pinmatrix, "OUT": out, "ARGS": os.environ.get("PINMATRIX_GLUE_ARGS", "--cases A,D")}
        p, signals = run_lava(source, lava_shell(source, d, params, d["run"]["steps"]))
        print(p.stdout[-3000:])
        check(p.returncode == 0, "the steps exited %d" % p.returncode)
        if not check(os.path.exists(os.path.join(out, "results.json")), "no results.json in OUT"):
            return
        doc = json.load(open(os.path.join(out, "results.json")))
        check(len(doc["cases"]) == len(doc["plan"]) > 0, "%d cases for plan %s" % (len(doc["cases"]), doc["plan"]))
        want = [("pinmatrix-run", run_verdict(doc), None, None)] + expected_signals(doc)
        check(signals == want, "signals %s, expected %s" % (signals, want))
        if os.environ.get("PINMATRIX_GLUE_EXPECT_PASS") == "1":
            check(any(s[1] == "pass" and s[3] for s in signals[1:]), "no case passed with its latency")


def lava_fixture(source):
    with open(os.path.join(source, "tests/data/results-pass.json")) as f:
        doc = json.load(f)
    by_id = {c["id"]: c for c in doc["cases"]}
    by_id["B"].update(verdict="fail", reason="registration returned ok, expected ENOMEM")
    by_id["movable-mlock"].update(verdict="skip", reason="no page found", latency_ns=None, observed=None)
    by_id["D"].update(verdict="error", reason="no result from the guest: case D was running", latency_ns=None)
    by_id["ordinary-none"].update(verdict="error", reason="no result from the guest: not reached",
                                  latency_ns=None, not_reached=True)
    a_again = dict(by_id["A"], placement="cma")
    doc["cases"] += [a_again,
                     {"id": "ualink/export-idempotent", "suite": "ualink", "verdict": "pass", "latency_ns": None},
                     {"id": "backing/odd name:1", "suite": "backing", "verdict": "skip", "reason": "no disk"}]
    return doc


def test_lava_report(pinmatrix, source):
    d = lava_definition(source)
    steps = [s for s in d["run"]["steps"] if "lava-report-cases.py" in s]
    if not check(len(steps) == 1, "one report step, found %d" % len(steps)):
        return
    with tempfile.TemporaryDirectory(prefix="pm-lava-") as tmp:
        doc = lava_fixture(source)
        with open(os.path.join(tmp, "results.json"), "w") as f:
            json.dump(doc, f)
        p, signals = run_lava(source, lava_shell(source, d, {"OUT": tmp}, steps))
        check(p.returncode == 0, "the report step exited %d: %s" % (p.returncode, p.stdout[-2000:]))
        want = expected_signals(doc)
        check(signals == want, "signals %s, expected %s" % (signals, want))
        results = {s[1] for s in signals}
        check(results == {"pass", "fail", "skip", "unknown"}, "results seen: %s" % sorted(results))
        check(any(s[0].endswith("-2") for s in signals), "an id met twice was not told apart")
        check(any(s[3] for s in signals), "no latency measurement")

        with open(os.path.join(tmp, "results.json"), "w") as f:
            f.write('{"schema": "other", "cases": []}')
        p, signals = run_lava(source, lava_shell(source, d, {"OUT": tmp}, steps))
        check(p.returncode == 2 and not signals, "not results: exit %d, %d signals" % (p.returncode, len(signals)))


# GitLab and Jenkins

def junit_of_run(source, junit):
    """junit.xml against the JUnit schema, one testcase per case of the results.json beside it."""
    if not check(os.path.exists(junit), "%s: not written" % junit):
        return
    p = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(source, "tests/data/junit.xsd"), junit],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    check(p.returncode == 0, "junit.xml does not pass junit.xsd: " + p.stdout[-1000:])
    cases = json.load(open(os.path.join(os.path.dirname(junit), "results.json")))["cases"]
    n = subprocess.run(["xmllint", "--xpath", "count(//testcase)", junit], stdout=subprocess.PIPE, text=True).stdout
    check(cases and n.strip() == str(len(cases)), "%s testcases for %d cases" % (n.strip(), len(cases)))


def run_in_project(shell_argv, env, project):
    p = subprocess.run(shell_argv, cwd=project, env=dict(os.environ, **env), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    print(p.stdout[-2000:])
    return p.returncode


def passing_baseline(out, baseline):
    """BASELINE/results.json: OUT's run with its first case a pass (the kernel
    before the update, where it passed): on this machine it skips."""
    with open(os.path.join(out, "results.json")) as f:
        doc = json.load(f)
    first = doc["cases"][0]
    first.update(verdict="pass", reason="")
    os.makedirs(baseline)
    with open(os.path.join(baseline, "results.json"), "w") as f:
        json.dump(doc, f)
    return first["id"]


def check_gate(run_step, env, project, out):
    """The same step as a gate (PINMATRIX_BASELINE set: --baseline): exit 1
    for the case that passed in the baseline and skips here, named in
    gate.json."""
    baseline = os.path.join(project, "baseline")
    regressed = passing_baseline(os.path.join(project, out), baseline)
    check("PINMATRIX_BASELINE" in env, "no PINMATRIX_BASELINE variable: the job cannot be a gate")
    gated = dict(env, PINMATRIX_BASELINE=baseline)
    rc = run_step(gated)
    check(rc == 1, "the gate exited %d, not 1, for %s passed -> skipped" % (rc, regressed))
    gate = os.path.join(project, out, "gate.json")
    if check(os.path.exists(gate), "no gate.json"):
        with open(gate) as f:
            rows = [c for c in json.load(f)["cases"] if c["regression"]]
        check([(c["id"], c["change"]) for c in rows] == [(regressed, "skipped")], "gate.json regressions: %s" % rows)


PACKAGES = ("pinmatrix_", "pinmatrix-dkms_", "pinmatrix-ualink-sim-dkms_")


def installs_packages(line, debs):
    """An apt-get install of the three .debs in DEBS (not run here: it
    would install them on this machine)."""
    return line.startswith("apt-get install -y ") and all(" ./%s/%s*.deb" % (debs, p) in line for p in PACKAGES)


def check_installs_the_packages_it_built(jobs):
    """The packages job builds them from the checkout into build/debs/ and
    hands them on; the run job needs it, installs them and runs the installed
    pinmatrix, nothing of the checkout's."""
    packages = jobs.get("pinmatrix-packages", {})
    run = jobs.get("pinmatrix", {})
    check("tools/build --packages" in packages.get("script", []), "the packages job does not build the packages")
    check("build/debs/" in packages.get("artifacts", {}).get("paths", []), "build/debs/ is not an artifact")
    check(run.get("needs") == ["pinmatrix-packages"], "the run job does not need the packages job")
    check(any(installs_packages(line, "build/debs") for line in run.get("before_script", [])),
          "the run job does not install the three packages")
    check(run.get("variables", {}).get("PINMATRIX") == "pinmatrix", "the run job does not run the installed pinmatrix")


def test_gitlab(pinmatrix, source):
    need_host_run()
    with open(os.path.join(source, "ci-glue/gitlab-ci.yml")) as f:
        jobs = {k: v for k, v in yaml.safe_load(f).items() if isinstance(v, dict) and "script" in v}
    check(len(jobs) == 2, "two jobs (the packages, the run), found %s" % list(jobs))
    check_installs_the_packages_it_built(jobs)
    job = jobs.get("pinmatrix", {"script": []})
    artifacts = job.get("artifacts", {})
    junit = artifacts.get("reports", {}).get("junit")
    if not check(isinstance(junit, str), "no artifacts:reports:junit"):
        return
    check(artifacts.get("when") == "always", "artifacts are not kept when the job fails")
    check(any(junit.startswith(p.rstrip("/") + "/") for p in artifacts.get("paths", [])), "junit.xml not in paths")
    allowed = job.get("allow_failure", {}).get("exit_codes", [])
    check(4 in allowed, "exit 4 (cannot run here) is not allowed to fail")
    env = {k: str(v) for k, v in job.get("variables", {}).items()}
    env.update(PINMATRIX=pinmatrix, PINMATRIX_ARGS="run --cases A,D")
    with tempfile.TemporaryDirectory(prefix="pm-gitlab-") as project:
        script = "set -eo pipefail\n" + "\n".join(job["script"]) + "\n"
        rc = run_in_project(["bash", "-c", script], env, project)
        check(rc in [0, 1] + allowed, "the script exited %d" % rc)
        junit_of_run(source, os.path.join(project, junit))
        check_gate(lambda e: run_in_project(["bash", "-c", script], e, project), env, project,
                   os.path.dirname(junit))


def test_jenkins(pinmatrix, source):
    need_host_run()
    with open(os.path.join(source, "ci-glue/Jenkinsfile")) as f:
        text = f.read()
    env_block = re.search(r"environment\s*\{(.*?)\}", text, re.S)
    stage = re.search(r"stage\('pinmatrix'\).*?sh\(script:\s*'([^']*)'", text, re.S)
    junit = re.search(r"junit testResults:\s*'([^']*)'", text)
    archived = re.search(r"archiveArtifacts artifacts:\s*'([^']*)'", text)
    if not check(env_block and stage and junit and archived, "environment, the sh step, junit or archiveArtifacts"):
        return
    check(archived.group(1).rstrip("*") and junit.group(1).startswith(archived.group(1).rstrip("*")),
          "junit.xml not archived")
    env = dict(re.findall(r"(\w+)\s*=\s*'([^']*)'", env_block.group(1)))
    packages = re.search(r"stage\('packages'\)\s*\{\s*steps\s*\{(.*?)\}", text, re.S)
    steps = re.findall(r"sh '([^']*)'", packages.group(1)) if packages else []
    check(steps[:1] == ["tools/build --packages"] and any(installs_packages(s, "build/debs") for s in steps),
          "the packages stage does not build and install the three packages: %s" % steps)
    check(env.get("PINMATRIX") == "pinmatrix", "the pinmatrix stage does not run the installed pinmatrix")
    env.update(PINMATRIX=pinmatrix, PINMATRIX_ARGS="run --cases A,D")
    with tempfile.TemporaryDirectory(prefix="pm-jenkins-") as workspace:
        rc = run_in_project(["sh", "-xe", "-c", stage.group(1)], env, workspace)	# as Jenkins' sh runs it
        check(rc in (0, 1, 4), "the sh step exited %d" % rc)
        junit_of_run(source, os.path.join(workspace, junit.group(1)))
        check_gate(lambda e: run_in_project(["sh", "-xe", "-c", stage.group(1)], e, workspace), env, workspace,
                   os.path.dirname(junit.group(1)))


def main():
    modes = {"lava": test_lava, "lava-report": test_lava_report, "gitlab": test_gitlab, "jenkins": test_jenkins}
    if len(sys.argv) != 4 or sys.argv[1] not in modes:
        print("usage: ci_glue_test.py %s PINMATRIX SOURCE_DIR" % "|".join(modes), file=sys.stderr)
        return 2
    mode, pinmatrix, source = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if mode in ("gitlab", "jenkins") and subprocess.run(["sh", "-c", "command -v xmllint"],
                                                        stdout=subprocess.DEVNULL).returncode:
        skip("xmllint is missing (Debian package libxml2-utils; tools/setup-host)")
    modes[mode](pinmatrix, source)
    return verdict("ci-glue " + mode, "ci-glue " + mode)


if __name__ == "__main__":
    sys.exit(main())
