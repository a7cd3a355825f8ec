// SPDX-License-Identifier: GPL-2.0
#pragma once

// The bytes a case writes to tell its data from anything else: seeded, so
// that the writer and a later reader (the CPU after an RDMA WRITE or a
// READ_FIXED, an importer of a UALink export) agree without sharing them.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace pinmatrix {

inline void fill_pattern(std::byte *p, size_t n, uint64_t seed)
{
	std::mt19937_64 gen(seed);
	for (size_t i = 0; i < n; i += 8) {
		const uint64_t v = gen();
		std::memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

inline std::vector<std::byte> pattern(uint64_t seed, size_t n)
{
	std::vector<std::byte> out(n);
	fill_pattern(out.data(), n, seed);
	return out;
}

} // namespace pinmatrix
