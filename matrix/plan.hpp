// SPDX-License-Identifier: GPL-2.0
#pragma once

// The plan: the pin causal matrix as a table of first pins crossed with
// placements, each leaf one case with one result. Cases A-D are the four of
// section 16.5; the rest are the other rungs of the pinning ladder.

#include <string>
#include <string_view>
#include <vector>

#include "first_pin.hpp"
#include "placement.hpp"

namespace pinmatrix {

struct case_def {
	std::string id;		// "A".."D" for the seed's cases, else the name
	std::string name;	// kebab-case: <placement>-<first pin>
	placement where;
	first_pin first;
	std::string second_pin;	// "ibv_reg_mr"
};

// All cases, in the order they run (movable placements first: filling memory
// to reach ordinary pages must not starve the movable cases).
const std::vector<case_def> &pin_cases();

// Selects by id or name ("A", "movable-mlock"); "all" or empty selects all.
// Throws usage_error naming an unknown case.
std::vector<case_def> select_cases(const std::vector<std::string> &wanted);

} // namespace pinmatrix
