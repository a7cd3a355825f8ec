// SPDX-License-Identifier: GPL-2.0
#pragma once

// The suite's version and the commit it was built from, as results.json
// (tool), the reports and `pinmatrix --version` name them. Both come from
// one generated source (lib/build_info.cpp.in, written by
// lib/build_info.cmake at every build and replaced only when they change):
// the commit is `git rev-parse --short=12 HEAD` of the source tree when it
// is a git checkout, else the cache variable PINMATRIX_COMMIT (a package
// built from a tarball); empty when neither says, never invented.

#include <string>
#include <string_view>

namespace pinmatrix {

// CMake's project version: "0.1.0".
std::string_view suite_version();
// 12 (or PINMATRIX_COMMIT's 7 to 40) lowercase hex digits; empty: unknown.
std::string_view suite_commit();

// "0.1.0 (commit 0123456789ab)", "0.1.0 (commit unknown)".
inline std::string suite_version_text()
{
	const std::string_view commit = suite_commit();
	return std::string(suite_version()) + " (commit " + std::string(commit.empty() ? "unknown" : commit) + ")";
}

} // namespace pinmatrix
