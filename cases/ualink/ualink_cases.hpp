// SPDX-License-Identifier: GPL-2.0
#pragma once

// The UALink conformance cases: one table (ualink_cases.cpp) says, for each
// case, what it checks (the sentence of the series' documentation or review,
// or the uapi field), what it needs, and the values its checks expect. A
// case body only observes: every comparison goes through case_context with a
// key of its table row, so expected outcomes live in one place.
//
// The same cases run against amdgpu (a node whose kernel carries the UALink
// series) and against the reference model ualink_sim, a test double for
// amdgpu; the cases that need the model's hooks SKIP on amdgpu with the
// reason.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "table_suite.hpp"

#include "ualink_device.hpp"
#include "verdict.hpp"

namespace pinmatrix::ualink {

enum needs : unsigned {
	needs_nothing = 0,
	needs_device = 1u << 0,	// an accelerator with the UALink ioctl
	needs_remote = 1u << 1,	// an importer outside the exporter's node (the NPA path)
	needs_model = 1u << 2,	// the reference model's hooks (loads/stores, pins, knobs)
};

struct expect_value {
	std::string_view key;
	int64_t value;		// an errno (positive), 0 for success, or a count
};

class case_context;

struct case_def {
	std::string_view name;		// kebab-case; the id is "ualink/<name>"
	std::string_view checks;	// the seed sentence or uapi field it checks
	std::string_view expected;	// the expected outcome, short (table column)
	unsigned needs;
	std::vector<expect_value> expect;
	void (*run)(case_context &);

	std::string id() const { return "ualink/" + std::string(name); }
	// The table's value for key; a missing key is a bug in the table.
	int64_t want(std::string_view key) const;
};

const std::vector<case_def> &case_table();
const case_def &case_by_id(const std::string &id);

// The model's fault-injection bits (uapi/ualink_sim.h) and the cases that
// must FAIL when each is on: the model's rows of the mutant table
// (matrix/promises.hpp).
struct fault_def {
	uint64_t bit;
	std::string_view name;
	std::string_view deviation;
	std::vector<std::string_view> caught_by;	// case ids
};
const std::vector<fault_def> &fault_table();

// The accelerators a case uses, found afresh in its child process.
struct pod_view {
	discovery found;

	bool empty() const { return found.accels.empty(); }
	const accel &exporter() const;
	// The n-th accelerator outside the exporter's node; unmet_need if none.
	const accel &remote(size_t n = 0) const;
	size_t remote_count() const;
};

struct check {
	std::string what, want, got;
	bool ok = false;
};

class case_context {
public:
	case_context(const case_def &d, pod_view &p) : def(d), pod(p) {}

	const case_def &def;
	pod_view &pod;

	// rc is 0 or -errno; the table's value for key is 0 or the errno.
	bool expect_rc(const std::string &what, std::string_view key, int rc);
	// got must equal the table's value for key.
	bool expect_value(const std::string &what, std::string_view key, int64_t got);
	// A property with no number in the table.
	bool expect(const std::string &what, bool ok, const std::string &want, const std::string &got);
	// A check the case owns that a failed step (a log that could not be
	// read, a reset that never happened) kept from deciding: no PASS.
	void undecided(const std::string &what, const std::string &why);
	// A check this machine cannot make (no oracle for it here): a SKIP
	// with why, unless another check failed or decided nothing.
	void unmet(const std::string &what, const std::string &why);

	nlohmann::json facts = nlohmann::json::object();
	std::optional<int64_t> latency_ns;	// export or import, when the case measures it
	std::string summary;			// observed, short (table column)

	nlohmann::json observation() const;

private:
	std::vector<check> checks_;
	nlohmann::json undecided_ = nlohmann::json::array();	// {what, why}
	nlohmann::json unmet_ = nlohmann::json::array();	// {what, why}
};

// In the case's child process: {"observation": ...}; throws unmet_need for
// a SKIP.
nlohmann::json run_case(const case_def &def);
// The suite: its table, body, judge, and the facts of discovery.
extern const suite_definition<case_def> definition;

std::string rc_name(int rc);	// "ok", "EINVAL (22)"

} // namespace pinmatrix::ualink
