// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where what a kernel does about the long-term pin contract differs by
// kernel version: one table (kernel_rules.cpp), and which of its rows a
// case on a given kernel is judged under. The expectation itself stays the
// contract (matrix/rules.cpp: it does not change with the version); a row
// with affected versions names a known regression of some releases, so that
// a FAIL on such a kernel says which change it most likely is, and a PASS
// on one says the case did not hit it. Every pin record carries the rows
// applied (`expected.kernel_rules`): rule, versions, and whether this
// kernel is in them ("unknown" when its upstream version cannot be read).

#include <optional>
#include <string>
#include <vector>

#include "kernel_version.hpp"
#include "plan.hpp"
#include "common/running_kernel.hpp"

namespace pinmatrix {

struct kernel_rule {
	const char *id;
	const char *says;		// the rule or the regression, for people
	const char *source;		// where it is in the kernel (function, commit)
	std::vector<version_range> versions;	// empty: every kernel
	bool (*applies_to)(const case_def &);
};
const std::vector<kernel_rule> &kernel_rules();

struct applied_rule {
	std::string id, says, source;
	std::string versions;	// "every kernel" or "6.1.129-6.1.154, ..."
	std::string this_kernel;	// "in range", "not in range", "unknown (...)"
	bool in_range = false;
};
std::vector<applied_rule> rules_applied(const case_def &c, const std::optional<kernel_version> &v);

} // namespace pinmatrix
