// SPDX-License-Identifier: GPL-2.0
#pragma once

// One guest boot of `pinmatrix vm` (a group of the matrix): its kernel, its
// boot placement, what it is given; and its plan, made once per group and
// handed to each step that asks what the guest runs (what the guest must
// prepare, KTAP's plan, the records of cases without a result).

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "boot.hpp"
#include "guest_run_options.hpp"
#include "kernels.hpp"
#include "suite.hpp"

namespace pinmatrix {

struct group_spec {
	kernel_spec kernel;
	const boot_placement *boot = nullptr;
	guest_run_options guest;	// the command line's, with a matrix file's append, memory and cases
	std::filesystem::path out;
	std::string label;	// before its lines while other guests run beside it
};

// The guest's memory: --memory (or the matrix file's), else the boot's.
unsigned guest_memory_mib(const group_spec &g);

// Whether the guest runs a command (--guest-cmd) or is a managed node
// (--ssh-port) instead of the matrix.
bool runs_no_plan(const group_spec &g);

// The group's cases: the suites (which own them) and the plan's entries
// into them, in plan order; what the guest must prepare for them. Moves
// keep the entries' owners (each suite stays where it was made).
struct guest_plan {
	std::vector<std::unique_ptr<suite>> suites;
	std::vector<plan_entry> entries;
	guest_needs needs;	// none where the guest runs no plan
};

// Throws usage_error for a case the suites do not know (select_plan()).
guest_plan make_guest_plan(const group_spec &g);

} // namespace pinmatrix
