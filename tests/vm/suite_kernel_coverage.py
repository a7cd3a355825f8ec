#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The suite's own kernel (vm/kconfig/pinmatrix.config, under the debug
kernel too) runs every case the suite has a body for, and answers every
question a case asks of it:

- a case it skips must be one of MAY_SKIP, each for a reason no Kconfig
  option of 6.1 removes; a skip for a missing option (no ext4 for the file
  rows, no SECRETMEM, no UDMABUF, no vDPA simulator, no VFIO) fails;
- every give-back check (can the memory go back?) has an answer: an
  unknown there (offlining without MEMORY_HOTREMOVE is EINVAL) fails;
- a memory block that would not go offline is proved refused by the
  kernel's count of failed migrations (/proc/vmstat pgmigrate_fail, which
  needs VM_EVENT_COUNTERS), not only by the wait running out.

With --passed CASE, only that the case ran and passed in each results
file (a case the coverage runs elsewhere, in a guest of its own), and where
it probed pages of its buffer (observed.sampled), that some were in
restricted memory before the pin.

Usage: suite_kernel_coverage.py [--passed CASE] RESULTS_JSON...
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit"))
from script_checks import check, verdict  # noqa: E402

MAY_SKIP = {
    "backing/hugetlb-1g-cma": "needs a boot with hugetlb_cma and a CPU with 1 GiB pages",
    "backing/file-shared-writable-in-place": "needs a page cache page outside restricted memory: on the movable "
                                             "boot the page cache is in ZONE_MOVABLE (the ordinary boot gives it)",
    "pinner/rxe-odp": "rxe has no on-demand paging before 7.x (drivers/infiniband/sw/rxe/rxe_odp.c)",
    "pinner/iommufd-mock": "iommufd is 6.2 on: the suite's 6.1 kernel has none",
    "pinner/cma-heap": "needs a CMA area for its heap: the cma boot (the movable boot has none)",
    "pinner/gup-test-over-2g": "needs a guest of 3584 MiB (--memory): tests/vm/debug-kernel.sh's big-pin step",
}


def check_skip(path, case):
    why = MAY_SKIP.get(case["id"])
    print("%s: %s skipped (%s)%s" % (path, case["id"], case.get("reason", ""),
                                     "" if why is None else ": expected, " + why))
    check(why is not None, "%s: %s skipped on the suite's kernel: %s" % (path, case["id"], case.get("reason")))


def check_give_back(path, case):
    observed = case.get("observed")
    give_back = observed.get("give_back") if isinstance(observed, dict) else None
    for when, answer in (give_back or {}).items():
        what = "%s: %s: give-back %s" % (path, case["id"], when)
        check(answer.get("given_back") is not None, "%s unknown: %s" % (what, answer.get("detail")))
        if answer.get("given_back") is False and answer.get("method", "").startswith("offline memory block"):
            check("failed migrations" in answer.get("detail", ""),
                  "%s refused without the kernel's count of failed migrations: %s" % (what, answer.get("detail")))
    return len(give_back or {})


def check_passed(path, case_id):
    with open(path) as f:
        found = [c for c in json.load(f).get("cases", []) if c.get("id") == case_id]
    check(len(found) == 1, "%s: %s ran %d times" % (path, case_id, len(found)))
    for case in found:
        print("%s: %s %s (%s)" % (path, case_id, case.get("verdict"), case.get("reason", "")))
        check(case.get("verdict") == "pass", "%s: %s did not pass: %s" % (path, case_id, case.get("verdict")))
        sampled = (case.get("observed") or {}).get("sampled")
        if sampled is not None:
            check(sampled.get("restricted_before", 0) > 0,
                  "%s: %s: no probed page was in restricted memory before the pin: %s" % (path, case_id, sampled))


def main(args):
    if args[:1] == ["--passed"] and len(args) >= 3:
        for path in args[2:]:
            check_passed(path, args[1])
        return verdict("suite_kernel_coverage", "%s passed" % args[1])
    paths = args
    if not paths or paths[0].startswith("-"):
        print("usage: suite_kernel_coverage.py [--passed CASE] RESULTS_JSON...", file=sys.stderr)
        return 2
    for path in paths:
        with open(path) as f:
            cases = json.load(f).get("cases", [])
        check(cases, "%s: no cases" % path)
        give_backs = 0
        for case in cases:
            if case.get("verdict") == "skip":
                check_skip(path, case)
            give_backs += check_give_back(path, case)
        print("%s: %d cases, %d give-back checks" % (path, len(cases), give_backs))
        check(give_backs > 0, "%s: no give-back check ran" % path)
    return verdict("suite_kernel_coverage", "the suite's kernel runs every case with a body and answers every give-back")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
