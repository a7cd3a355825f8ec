// SPDX-License-Identifier: GPL-2.0
#pragma once

// Where a case's time goes: the time from one mark to the next, by the
// name of the step that took it (a step marked twice adds up), in the order
// first marked. A case's record carries the steps as observed.time_ms
// ([{"step": ..., "ms": ...}]), so that its slowest steps can be named.

#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.hpp"

namespace pinmatrix {

using step_times = std::vector<std::pair<std::string, double>>;	// (step, milliseconds)

class step_clock {
public:
	// The time since the previous mark (or the clock's start) was step's.
	void mark(const std::string &step)
	{
		const int64_t now = monotonic_raw_ns();
		const double ms = double(now - last_) / 1e6;
		last_ = now;
		for (auto &[name, total] : steps_)
			if (name == step) {
				total += ms;
				return;
			}
		steps_.emplace_back(step, ms);
	}
	const step_times &steps() const { return steps_; }

private:
	int64_t last_ = monotonic_raw_ns();
	step_times steps_;
};

// [{"step": NAME, "ms": 12.3}, ...], to a tenth of a millisecond.
inline nlohmann::json step_times_json(const step_times &steps)
{
	nlohmann::json out = nlohmann::json::array();
	for (const auto &[step, ms] : steps)
		out.push_back({{"step", step}, {"ms", std::round(ms * 10) / 10}});
	return out;
}

// What step_times_json() wrote; entries of another shape are left out.
inline step_times step_times_from_json(const nlohmann::json &j)
{
	step_times out;
	if (!j.is_array())
		return out;
	for (const auto &e : j)
		if (e.is_object() && e.contains("step") && e["step"].is_string() && e.contains("ms") &&
		    e["ms"].is_number())
			out.emplace_back(e["step"].get<std::string>(), e["ms"].get<double>());
	return out;
}

} // namespace pinmatrix
