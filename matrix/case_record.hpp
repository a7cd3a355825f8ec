// SPDX-License-Identifier: GPL-2.0
#pragma once

// One case's record in results.json (schema "pinmatrix/1", published as
// reports/schema/pinmatrix-1.schema.json; fields: reports/README.md). Every
// suite's judge returns one, the runner and the VM launcher add what they
// saw around the case, and it is written with to_json() and read back with
// case_record_from_json() alone. What is the suite's own (the pin matrix's
// placement and pins, UALink's source) is in `details`, `expected` and
// `observed`; the envelope is the same for every suite.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "verdict.hpp"

namespace pinmatrix {

struct case_record {
	std::string id;			// unique across suites ("A", "ualink/export-idempotent")
	std::string name;		// kebab-case
	std::string suite;		// "pin", "ualink", ...; set by the runner, may be empty before
	// What the case expected: at least {"summary": one line}, then the
	// suite's own fields (errno, migrations, kernel rules, ...).
	nlohmann::json expected = nlohmann::json::object();
	// What it saw; nullopt when it did not run to an observation.
	std::optional<nlohmann::json> observed;
	std::optional<int64_t> latency_ns;	// the registration's; nullopt: none was timed
	std::optional<int64_t> duration_ns;	// the whole case's, set by the runner
	verdict outcome = verdict::error;
	std::string reason;		// why, for every verdict but a plain pass
	// The record's other top-level fields, by name: what the case is (the
	// pin suite's placement, first_pin, second_pin; a source, checks) and
	// what was seen around it (stuck_task, kernel_alarms, serial_excerpt,
	// kernel, boot).
	nlohmann::json details = nlohmann::json::object();

	// Adds a reason: the first one, or "; " and the next.
	void add_reason(const std::string &why);
	// A check the case owns ran into a step that failed (a control, a
	// readback, a trace that never came) and decided nothing: the case is
	// no PASS. ERROR, with "CHECK decided nothing: WHY", unless a check that
	// did decide has FAILed it (that FAIL stands).
	void undecided(const std::string &check, const std::string &why);
};

nlohmann::json to_json(const case_record &r);
// The record a results.json holds. Throws usage_error naming the field that
// is missing or of the wrong type (id, name, verdict, expected, observed,
// latency_ns, duration_ns, reason).
case_record case_record_from_json(const nlohmann::json &j);

} // namespace pinmatrix
