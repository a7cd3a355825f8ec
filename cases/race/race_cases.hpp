// SPDX-License-Identifier: GPL-2.0
#pragma once

// Long-term pins racing on one buffer (cases/race/): N threads register the
// same buffer of restricted memory (ZONE_MOVABLE or CMA) at once, round
// after round. The contract: no long-term pin that succeeds may leave a
// page where it was; ENOMEM (or a retry the kernel bounds) is legal. The
// 2025 regression (1aaf8c122918, reverted by 517f496e1e61; stable 6.1.129 to
// 6.1.154, 6.6.79 to 6.6.108, 6.12.14 to 6.12.35) broke it: a pinner that
// could not isolate the page (another pinner had it isolated) returned
// success on the page in place. Table, body and judge, as the other suites.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "table_suite.hpp"

namespace pinmatrix::race_cases {

struct race_case {
	const char *name;
	const char *checks;		// for `pinmatrix cases`
	// "ibv_reg_mr", "io_uring", "mixed" (threads alternate),
	// "mlock+ibv_reg_mr" (thread 0 mlock()s, the others register), or
	// "isolated+ibv_reg_mr" (thread 1 registers while thread 0's
	// registration holds the buffer isolated: the test module's folio locks)
	const char *pinners;
	unsigned threads;
	unsigned pages;			// the buffer, all of it in restricted memory
	unsigned rounds;		// each on a fresh buffer

	std::string id() const { return std::string("race/") + name; }
};

const std::vector<race_case> &case_table();

// The body, in the case's process: {"observation": {...}}. Throws
// unmet_need (a SKIP) without a pinner or without a buffer in restricted
// memory.
nlohmann::json run_case(const race_case &c, const suite_options &opt);

// The suite: its table, needs, body and judge.
extern const suite_definition<race_case> definition;

} // namespace pinmatrix::race_cases
