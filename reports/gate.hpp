// SPDX-License-Identifier: GPL-2.0
#pragma once

// The gate of a kernel update in one command: `pinmatrix gate --baseline
// OLD --out DIR [vm options]` (a guest of the kernel about to ship) or
// `pinmatrix run --baseline OLD --out DIR ...` (on the node itself: LAVA,
// a fleet). The run writes DIR as ever; then DIR is compared with OLD (a
// run of the kernel before the update, or its results.json) case by case,
// as `report --compare OLD DIR` does (compare.hpp). Only what got worse
// fails the gate: a pass that became a fail, an error, an expected failure
// (xfail) or a skip; a case missing from the new run; a kernel bug line
// that no case explains where the baseline had none; with `latency`, a
// case whose every new registration was slower than every old one; with
// a benchmark threshold, a benchmark slower beyond it. A failure OLD had
// too is no regression: the run's own reports say everything, the gate
// says what changed. The comparison goes to stdout (stderr when stdout is
// the run's KTAP document) and to DIR/gate.md and DIR/gate.json.

#include <filesystem>
#include <functional>

#include "compare.hpp"

namespace pinmatrix {

struct gate_options {
	std::filesystem::path baseline;	// a run directory or its results.json
	compare_options compare;
};

// The baseline read and checked, and OUT checked not to hold it: throws
// usage_error (one message) before anything is run or written.
report::results_file read_baseline(const gate_options &gate, const std::filesystem::path &out);

// Runs run() (it writes OUT/results.json and returns its exit code), then
// compares. Exit code: 0 no regression, 1 a regression, 4 neither run
// decided a case (every case skipped), 2 the run ended without results
// (its own message said why).
int gated_run(const std::function<int()> &run, const report::results_file &baseline,
	      const std::filesystem::path &out, bool stdout_is_ktap, const compare_options &compare);

} // namespace pinmatrix
