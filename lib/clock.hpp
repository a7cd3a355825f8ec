// SPDX-License-Identifier: GPL-2.0
#pragma once

// The suite's one clock for latencies and phases: CLOCK_MONOTONIC_RAW (no
// NTP slewing), in nanoseconds.

#include <time.h>

#include <chrono>
#include <cstdint>

namespace pinmatrix {

inline int64_t monotonic_raw_ns()
{
	timespec ts{};
	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Seconds from t0 to now, for a phase's wall time (steady_clock).
inline double seconds_since(std::chrono::steady_clock::time_point t0)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace pinmatrix
