// SPDX-License-Identifier: GPL-2.0
#pragma once

// Fork with a registered page (cases/fork/): after fork() the parent's
// long-term pin and its CPU mapping must still name the same page (a
// device write through the pin is what the parent's CPU reads), and the
// child's view stays private: what the child writes the parent never sees,
// and the device's later write never reaches the child. The kernel copies a
// pinned anonymous page for the child at fork (page_needs_cow_for_dma())
// rather than sharing it copy-on-write; these cases check that outcome, not
// the mechanism. Table, body and judge, as the other suites.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "table_suite.hpp"

namespace pinmatrix::fork_cases {

struct fork_case {
	const char *name;
	const char *checks;		// what it checks, for `pinmatrix cases`
	bool child_writes;		// the child writes its view of the page before the device write
	// What the parent must see after the child ran, and what the child
	// must see after the parent's device write: 'O' the page as it was at
	// fork, 'C' the child's write.
	char parent_sees;
	char child_sees;

	std::string id() const { return std::string("fork/") + name; }
};

const std::vector<fork_case> &case_table();

// The body, in the case's process: {"observation": {...}}, through the
// run's --second-pin (cases/common/second_pin.hpp); throws unmet_need when
// it cannot run here (a SKIP).
nlohmann::json run_case(const fork_case &c, const suite_options &opt);

// The suite: its table, needs, body and judge.
extern const suite_definition<fork_case> definition;

} // namespace pinmatrix::fork_cases
