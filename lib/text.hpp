// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pinmatrix {

// "0x1a2b": PFNs, addresses, flags and PTEs, as the kernel prints them.
inline std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
	return buf;
}

// s without trailing white space (what a sysfs or proc file ends with).
inline std::string trimmed(std::string s)
{
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

// Strings (or string_views) one after another with sep between: "a, b".
template <typename Range> std::string join(const Range &items, std::string_view sep)
{
	std::string out;
	bool first = true;
	for (const auto &item : items) {
		if (!first)
			out += sep;
		out += std::string_view(item);
		first = false;
	}
	return out;
}

} // namespace pinmatrix
