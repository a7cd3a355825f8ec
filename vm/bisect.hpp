// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix bisect --tree DIR --good REV --bad REV --cases IDS --out OUT`:
// the first bad commit of a kernel regression the suite sees. It drives
// `git bisect run` over the user's kernel git tree; each step
// (`pinmatrix bisect-step`, the same options) builds the commit git checked
// out into one build directory (vm/bisect-build.sh: incremental, ccache
// where the host has it), boots the suite's guest on it (`pinmatrix vm
// --kernel tree:BUILD`) and judges it by the named cases:
//   a case failed (fail, xfail)             -> bad (exit 1)
//   else a case ended in error (unknown)    -> skip (125): no verdict
//   else a case passed                      -> good (0)
//   every case skipped, the build failed,
//   the guest could not run                 -> skip (125)
// OUT gets each step's run (steps/COMMIT/), steps.jsonl (a line per step:
// commit, subject, verdict, why, build and run seconds), git's own log
// (git-bisect.log), bisect.log (people's: a line per step, then the first
// bad commit) and bisect.json. The tree is checked out by git bisect while
// it runs and put back (`git bisect reset`) however the run ends.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data_dir.hpp"

namespace pinmatrix {

struct bisect_options {
	std::filesystem::path tree;	// a kernel git work tree, clean
	std::string good, bad;		// revisions: good an ancestor of bad
	std::vector<std::string> cases;
	std::filesystem::path out;
	std::string boot = "movable";
	std::vector<std::filesystem::path> fragments;	// empty: vm/kconfig/pinmatrix.config
	std::filesystem::path build;	// empty: OUT/build
	std::filesystem::path cache = default_cache_dir();
	int case_timeout_s = 60;
	int timeout_s = 600;
	unsigned cpus = 1;
};

// Exit code: 0 the first bad commit found, 1 not (git bisect ended on
// skipped commits, or could not run), 2 bad usage. Throws usage_error for
// bad options before anything is written or checked out.
int run_bisect(const bisect_options &opt);

// One step, at the tree's HEAD: 0 good, 1 bad, 125 skip (git bisect run's
// codes).
int run_bisect_step(const bisect_options &opt);

enum class step_verdict { good, bad, skip };
const char *name(step_verdict v);
struct judged_step {
	step_verdict verdict;
	std::string why;	// "B failed: expected ENOMEM, observed 0"
};
// A step's results.json (its cases) judged as the table above says.
judged_step judge_step(const nlohmann::json &results);

} // namespace pinmatrix
