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

#include "case_record.hpp"

#include "placement.hpp"
#include "verdict.hpp"

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
// Throws std::logic_error for an id not in the table.
const memlock_case &case_by_id(const std::string &id);

// Where the body looks for its page: a page a long-term pin would have to
// migrate when this boot has one (the classification must still blame the
// limit), else an ordinary one.
struct body_options {
	std::string device;		// RDMA device; empty: the first one
	placement restricted = placement::movable;
	bool restricted_present = true;
	// --no-module: the module is not opened; pages are read through
	// pagemap (lib/page_probe.hpp).
	bool without_module = false;
};

// The body, in the case's process: {"observation": {...}}.
nlohmann::json run_case(const memlock_case &c, const body_options &opt);
// The judge, in the runner: the record of an observation.
case_record judge_case(const memlock_case &c, const nlohmann::json &obs);
// The record of a case that did not run to an observation.
case_record not_run_record(const memlock_case &c, verdict v, const std::string &reason);

} // namespace pinmatrix::memlock
