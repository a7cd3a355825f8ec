// SPDX-License-Identifier: GPL-2.0
#pragma once

// The registration suite as a table, bodies and a judge: registrations that
// fail for reasons other than placement, so that the telemetry's
// classification is checked against a known cause. Each row sets the
// memlock limit, drops CAP_IPC_LOCK, registers one page and says what
// ib_umem_get (drivers/infiniband/core/umem.c, 6.1) must answer and how the
// classification must call it; the body then restores the limit and
// registers again (it must succeed).

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "table_suite.hpp"

namespace pinmatrix::memlock {

struct memlock_case {
	const char *name;
	const char *checks;
	// RLIMIT_MEMLOCK (soft) for the registration, in bytes of the page size:
	// limit = page_size * num / den. The process drops CAP_IPC_LOCK.
	size_t num, den;
	int expected_errno;
	const char *expected_class;	// classification.class of that registration
	const char *source;		// where the kernel decides it

	std::string id() const { return std::string("registration/") + name; }
};

const std::vector<memlock_case> &case_table();

// The body, in the case's process: {"observation": {...}}. It looks for a
// page a long-term pin would have to migrate when this boot has one (the
// classification must still blame the limit), else an ordinary one.
nlohmann::json run_case(const memlock_case &c, const suite_options &opt);

// The suite: its table, needs, body and judge.
extern const suite_definition<memlock_case> definition;

} // namespace pinmatrix::memlock
