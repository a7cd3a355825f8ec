// SPDX-License-Identifier: GPL-2.0
#pragma once

// Boot placements: how a guest is booted so that user pages can land in
// the memory a long-term pin may not stay in, and what the kernel needs for
// it (LTP style: an unmet need is a SKIP with the reason, not a boot).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "placement.hpp"

namespace pinmatrix {

struct boot_placement {
	const char *name;		// "ordinary", "movable", "cma", "hugetlb_cma"
	const char *append;		// kernel command line
	unsigned memory_mib;		// guest RAM it needs
	placement restricted;		// where cases A-C find their page
	std::vector<const char *> needs_kconfig;
	const char *meaning;
	// A layout for comparing placements (benchmarks), not a new contract:
	// the default matrix leaves it out.
	bool comparison_only = false;
};

const std::vector<boot_placement> &boot_placements();
// Throws usage_error listing the known ones.
const boot_placement &find_boot_placement(std::string_view name);

// "y", "m" or "" for an option in a kernel .config text.
std::string kconfig_value(const std::string &config, const std::string &option);
// nullopt when every need is met, else "cma: CONFIG_CMA is not set in <release>".
std::optional<std::string> unmet_kconfig(const boot_placement &b, const std::string &config,
					 const std::string &release);

} // namespace pinmatrix
