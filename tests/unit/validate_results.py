#!/usr/bin/env python3
"""Validates results.json files against reports/schema/pinmatrix-1.schema.json
with python3-jsonschema (a real validator, not the suite's own reader).

Usage: validate_results.py SCHEMA PATH...
  PATH  a results file, or a directory searched for every results.json in it
        (a directory no test made, PATH/ or a name without .json, holds none)
Exit: 0 all valid, 1 any invalid (each error on one line: file, where, what),
77 when the directories hold no results.json (nothing ran: a SKIP), 2 on bad
arguments.
"""
import json
import os
import sys

try:
    import jsonschema
except ImportError:
    print("SKIP: python3-jsonschema is not installed (tools/setup-host)")
    sys.exit(77)


def files_of(paths):
    for p in paths:
        if not os.path.exists(p) and (p.endswith("/") or not p.endswith(".json")):
            continue  # a directory no test made: no results in it
        if os.path.isdir(p):
            for d, _, names in sorted(os.walk(p)):
                if "results.json" in names:
                    yield os.path.join(d, "results.json")
        else:
            yield p


def main():
    if len(sys.argv) < 3:
        print("usage: validate_results.py SCHEMA PATH...", file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    files = list(files_of(sys.argv[2:]))
    if not files:
        print("SKIP: no results.json under " + " ".join(sys.argv[2:]))
        return 77
    bad = 0
    for path in files:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"INVALID {path}: not JSON: {e}")
            bad += 1
            continue
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        for e in errors[:20]:
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            print(f"INVALID {path}: {where}: {e.message[:300]}")
        bad += bool(errors)
    print(f"{len(files) - bad} of {len(files)} results files valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
