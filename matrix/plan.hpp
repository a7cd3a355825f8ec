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
	std::string second_pin;	// "ibv_reg_mr" | "io_uring"
};

// --second-pin: the long-term pin that must migrate the page.
const std::vector<std::string_view> &second_pins();

// Which pinners take the pins (--first-pin SOURCE, --second-pin NAME).
// Cases A-D keep the seed's definitions (section 16.5), each slot filled by
// the source's pin when its contract can fill it, else by the module's:
//   A  restricted page, no first pin
//   B  restricted page, the source's pin unless that is known to be
//      long-term (a GPU driver's pin is the seed's hypothesis: observed)
//   C  restricted page, the source's pin when known long-term (io_uring),
//      else the module's FOLL_PIN|FOLL_LONGTERM
//   D  ordinary page, as B
// The source's other pins are named rungs; a pinner that allocates its own
// memory (cudaHostAlloc) is one case, its placement observed.
struct plan_options {
	std::string first_pin_source = "module";
	std::string second_pin = "ibv_reg_mr";
};
// Throws usage_error for an unknown source or second pin.
void check(const plan_options &o);

// All cases of one boot, in the order they run. `restricted` is the memory a
// long-term pin may not stay in that this boot has (ZONE_MOVABLE or CMA):
// cases A-C and the rungs run on it, D and the rest on ordinary memory.
// Restricted cases run first: filling memory to reach ordinary pages must
// not starve them. With restricted == ordinary only the ordinary cases run.
const std::vector<case_def> &pin_cases(placement restricted = placement::movable,
				       const plan_options &o = {});

// Selects by id or name ("A", "movable-mlock"); "all" or empty selects all.
// Throws usage_error naming an unknown case.
std::vector<case_def> select_cases(const std::vector<std::string> &wanted,
				   placement restricted = placement::movable,
				   const plan_options &o = {});

} // namespace pinmatrix
