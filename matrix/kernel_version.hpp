// SPDX-License-Identifier: GPL-2.0
#pragma once

// A kernel's upstream version and ranges of them: what the suites' rows by
// version (backing, pinner, cases/pin/kernel_rules.cpp) and the known kernel
// bugs (known_bugs.cpp) are keyed on. No system calls: the running kernel's
// is read by running_kernel_version() (cases/common/running_kernel.hpp).

#include <climits>
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

// The kernels a row of a table holds on, the one way every table says it
// (the suites' rows by version, cases/pin/kernel_rules.cpp, the known
// kernel bugs): inclusive; `open`, every release from `first` on. `commit`
// is the upstream commit whose change of the contract (or regression)
// begins the range, 12 hex digits; nullptr where the range begins with no
// change (every kernel) or the change is named in the row's text only.
struct version_range {
	kernel_version first, last;
	bool open = false;
	const char *commit = nullptr;
	bool holds(const kernel_version &v) const { return first <= v && (open || v <= last); }
};

// Every kernel: the contract as it always was.
constexpr version_range every_kernel() { return {{0, 0, 0}, {0, 0, 0}, true}; }
// Every release of one series (6.1.0 to the last 6.1.y).
constexpr version_range whole_series(int major, int minor)
{
	return {{major, minor, 0}, {major, minor, INT_MAX}};
}
// From `first` on: the release that took `commit`.
constexpr version_range since(kernel_version first, const char *commit = nullptr)
{
	return {first, {}, true, commit};
}
// Every release before `first` (the first one of since(first, ...)).
constexpr version_range before(kernel_version first)
{
	const kernel_version last = first.patch   ? kernel_version{first.major, first.minor, first.patch - 1}
				    : first.minor ? kernel_version{first.major, first.minor - 1, INT_MAX}
						  : kernel_version{first.major - 1, INT_MAX, INT_MAX};
	return {{0, 0, 0}, last};
}

// "every kernel", "6.11.0 on (c6a3194c05e7)", "before 6.11.0", "every 6.1",
// "6.1.129-6.1.154".
std::string range_text(const version_range &r);
// The ranges of a list, joined; none is "every kernel".
std::string ranges_text(const std::vector<version_range> &ranges);

// The row of `rows` (each with its `versions`) that holds on kernel v:
// nullptr where none does, or where v is unknown and the rows differ (what
// the row would expect cannot be known; never a default).
template <typename Row>
const Row *row_for_kernel(const std::vector<Row> &rows, const std::optional<kernel_version> &v)
{
	if (!v)
		return rows.size() == 1 ? &rows.front() : nullptr;
	for (const auto &r : rows)
		if (r.versions.holds(*v))
			return &r;
	return nullptr;
}

} // namespace pinmatrix
