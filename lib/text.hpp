// SPDX-License-Identifier: GPL-2.0
#pragma once

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

} // namespace pinmatrix
