#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The run step of ci-glue/lava/pinmatrix.yaml: `pinmatrix run --out OUT` on
# the DUT, reported as the LAVA test case pinmatrix-run: pass (exit 0),
# skip (4: every case skipped, or it cannot run here), fail (anything else:
# 1 a case failed or ended in error, 2 bad usage or setup). Exits 0 when the
# run wrote OUT/results.json, so that LAVA's `set -e` goes on to the step
# that reports the cases; else with pinmatrix's status (1 if that was 0).
# Usage: run-pinmatrix.sh PINMATRIX OUT [pinmatrix run arguments...]
set -u
if [ $# -lt 2 ]; then
	echo "usage: run-pinmatrix.sh PINMATRIX OUT [pinmatrix run arguments...]" >&2
	exit 2
fi
pinmatrix=$1 out=$2
shift 2
rm -f "$out/results.json"	# a results.json left by an earlier run is not this run's
rc=0
"$pinmatrix" run --out "$out" "$@" || rc=$?
echo "run-pinmatrix.sh: pinmatrix run exited $rc"
case $rc in
0) result=pass ;;
4) result=skip ;;
*) result=fail ;;
esac
lava-test-case pinmatrix-run --result "$result"
if [ ! -f "$out/results.json" ]; then
	echo "run-pinmatrix.sh: $out/results.json was not written: no cases to report" >&2
	[ "$rc" -ne 0 ] && exit "$rc"
	exit 1
fi
exit 0
