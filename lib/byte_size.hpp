// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace pinmatrix {

// "1.5 GiB", "2.0 MiB", "64 KiB", "100 bytes": sizes in facts people read.
inline std::string byte_size_text(uint64_t n)
{
	char buf[64];
	if (n >= (uint64_t(1) << 30))
		std::snprintf(buf, sizeof(buf), "%.1f GiB", double(n) / double(uint64_t(1) << 30));
	else if (n >= (uint64_t(1) << 20))
		std::snprintf(buf, sizeof(buf), "%.1f MiB", double(n) / double(uint64_t(1) << 20));
	else if (n >= 1024 && n % 1024 == 0)
		std::snprintf(buf, sizeof(buf), "%llu KiB", static_cast<unsigned long long>(n / 1024));
	else
		std::snprintf(buf, sizeof(buf), "%llu bytes", static_cast<unsigned long long>(n));
	return buf;
}

} // namespace pinmatrix
