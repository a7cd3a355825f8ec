// SPDX-License-Identifier: GPL-2.0
#pragma once

// A kernel's upstream version and ranges of them: what the suites' version
// rows (cases/pin/kernel_rules.cpp, the backing table) and the known kernel
// bugs (known_bugs.cpp) are keyed on. No system calls: the running kernel's
// is read by running_kernel_version() (cases/common/running_kernel.hpp).

#include <optional>
#include <string>
#include <vector>

namespace pinmatrix {

struct kernel_version {
	int major = 0, minor = 0, patch = 0;
	auto operator<=>(const kernel_version &) const = default;
	std::string text() const;
};

// The upstream version of a kernel: Debian's `uname -v` names it
// ("... Debian 6.1.192-3 ..."), since its release is an ABI (6.1.0-57-amd64);
// otherwise the release's leading X.Y.Z (6.12.117+deb12-amd64,
// 6.12.118-pinmatrix). nullopt when neither says.
std::optional<kernel_version> upstream_version(const std::string &release, const std::string &uname_v);

// Inclusive; `open`: every release from `first` on (nothing known fixes it).
struct version_range {
	kernel_version first, last;
	bool open = false;
	bool holds(const kernel_version &v) const { return first <= v && (open || v <= last); }
};
// "every kernel" (none), or "6.1.129-6.1.154, 7.2.0 on, every 6.1" (a
// range to patch INT_MAX is its whole series).
std::string ranges_text(const std::vector<version_range> &ranges);

} // namespace pinmatrix
