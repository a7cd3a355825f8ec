// SPDX-License-Identifier: GPL-2.0
#pragma once

// The promise table (matrix/promises.hpp) for people and tools: what
// `pinmatrix promises` prints, and report.html's section of it for a run
// (which of the run's cases checked each promise, and how they ended).

#include <string>

#include <nlohmann/json.hpp>

namespace pinmatrix {

struct promises_filter {
	std::string contract;	// "pin", "ualink", or empty for both
	bool unproved_only = false;	// promises that no mutant proves
};

// Text for a terminal (wrapped to width) or JSON (the tables and their counts).
std::string format_promises_text(const promises_filter &f, size_t width);
nlohmann::json promises_json(const promises_filter &f);

// report.html's <section id="promises"> for the run's cases (results.json's
// "cases"): per promise, its cases in the run with their verdicts, and its
// cases and mutants in the table. Linear in cases plus promises.
std::string promises_html_section(const nlohmann::json &cases);

} // namespace pinmatrix
