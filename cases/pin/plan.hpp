// SPDX-License-Identifier: GPL-2.0
#pragma once

// The plan: the pin causal matrix (the literal table of pin_table.cpp) for
// one boot, each row one case with one result. Cases A-D are the four of
// section 16.5; the rest are the other rungs of the pinning ladder.

#include <string>
#include <string_view>
#include <vector>

#include "first_pin.hpp"
#include "pin_table.hpp"
#include "placement.hpp"

namespace pinmatrix {

struct case_def {
	std::string id;		// "A".."D" for the seed's cases, else the name
	std::string name;	// kebab-case: <placement>-<first pin>
	placement where;
	first_pin first;
	std::string second_pin;	// "ibv_reg_mr" | "io_uring"
	const pin_row *row = nullptr;	// its row of pin_table(): the expectation and why
};

// --second-pin: the long-term pin that must migrate the page.
const std::vector<std::string_view> &second_pins();

// Which pinners take the pins (--first-pin SOURCE, --second-pin NAME). The
// cases of each source are its rows of cases/pin/pin_table.cpp: A-D keep the
// seed's definitions (section 16.5), each slot filled by the source's pin
// when its contract can fill it, else by the module's.
// Throws usage_error for an unknown source or second pin.
void check(const pin_sources &o);

// All cases of one boot, in the order they run. `restricted` is the memory a
// long-term pin may not stay in that this boot has (ZONE_MOVABLE or CMA):
// cases A-C and the rungs run on it, D and the rest on ordinary memory.
// Restricted cases run first: filling memory to reach ordinary pages must
// not starve them. With restricted == ordinary only the ordinary cases run.
const std::vector<case_def> &pin_cases(placement restricted = placement::movable,
				       const pin_sources &o = {});

} // namespace pinmatrix
