// SPDX-License-Identifier: GPL-2.0
#pragma once

// The groups a `pinmatrix vm` run boots: one from the command line, or
// one per (kernel, boot) of a matrix file's runs; each checked, and its
// plan made, before the first boots.

#include <vector>

#include "group_spec.hpp"
#include "launcher.hpp"

namespace pinmatrix {

// A group and its plan, made once when it was checked.
struct planned_group {
	group_spec spec;
	guest_plan plan;
};

// Without --matrix: the one guest. Throws usage_error for what it asks
// that cannot be.
planned_group single_group(const vm_options &opt);

// With --matrix: every group of the file, in its order. Throws usage_error
// naming the file's kernel and placement.
std::vector<planned_group> matrix_groups(const vm_options &opt);

} // namespace pinmatrix
