// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix report --compare OLD NEW`: what changed between two runs (two
// kernels, typically) case by case: verdicts and registration latency. A
// QA gate runs it and fails on a verdict regression.

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_input.hpp"

namespace pinmatrix {

enum class verdict_change {
	unchanged,
	regression,	// pass -> fail or error
	skipped,	// pass -> skip: a regression too (a kernel where the module
			// does not load must not pass a QA gate)
	disappeared,	// in OLD, not in NEW: a regression too
	improvement,	// anything -> pass
	changed,	// any other change (fail <-> error, skip -> fail)
	appeared,	// in NEW only
};
const char *name(verdict_change c);
bool is_regression(verdict_change c);

struct case_comparison {
	std::string key;	// the case id; "kernel / id" when a run merged kernels
	std::optional<report::outcome> before, after;
	verdict_change change = verdict_change::unchanged;
	std::string detail;	// the new reason, for what got worse
	std::optional<report::sample_stats> latency_before, latency_after;
};

struct comparison {
	bool by_kernel = false;		// keys carry the kernel
	std::vector<case_comparison> cases;	// OLD's order, then cases new in NEW
	int regressions() const;
	int exit_code() const { return regressions() ? 1 : 0; }
};

comparison compare_results(const nlohmann::json &before, const nlohmann::json &after);
std::string format_comparison(const comparison &c, const std::string &before_name,
			      const nlohmann::json &before, const std::string &after_name,
			      const nlohmann::json &after);

// The command: each of OLD and NEW a run directory or a results.json.
// Prints the comparison; returns 1 on a verdict regression, else 0.
// Throws usage_error for a missing or unreadable input.
int compare_runs(const std::filesystem::path &before, const std::filesystem::path &after,
		 std::ostream &out);

} // namespace pinmatrix
