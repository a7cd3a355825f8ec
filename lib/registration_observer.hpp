// SPDX-License-Identifier: GPL-2.0
#pragma once

// A process-wide hook around every memory registration the suite makes
// (register_memory() in verbs.cpp calls it), so that telemetry and trace
// markers are gathered for each one without the callers knowing: the case
// process installs an observer (lib/diagnosis/case_telemetry.cpp) for its lifetime.

#include <cstddef>
#include <cstdint>
#include <string>

namespace pinmatrix {

struct registration_call {
	const char *api = "";		// "ibv_reg_mr"
	std::string device;		// "rxe0"
	uintptr_t addr = 0;
	size_t length = 0;
	int access = 0;			// IBV_ACCESS_*
};

class registration_observer {
public:
	virtual ~registration_observer() = default;
	// Just before the call, and just after it (err 0 or the errno).
	virtual void before(const registration_call &call) = 0;
	virtual void after(const registration_call &call, int err, int64_t latency_ns) = 0;
};

// The observer of this process, or null. Not thread-safe: set it before
// the registrations start.
inline registration_observer *&current_registration_observer()
{
	static registration_observer *observer = nullptr;
	return observer;
}

} // namespace pinmatrix
