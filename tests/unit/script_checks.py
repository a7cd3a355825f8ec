# SPDX-License-Identifier: GPL-2.0
"""What the Python test scripts share: checks that collect their failures,
a SKIP (exit 77, ctest's SKIP_RETURN_CODE), and the exit code at the end."""

import sys

failures = []


def check(ok, what):
    """Records what when ok is false; returns ok."""
    if not ok:
        failures.append(what)
        print("FAIL: " + what)
    return ok


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def verdict(name, passed):
    """1 with the number of failures, else 0 with passed."""
    if failures:
        print("%s: %d failure(s)" % (name, len(failures)))
        return 1
    print("PASS: " + passed)
    return 0
