// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <string>

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

} // namespace pinmatrix
