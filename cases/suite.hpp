// SPDX-License-Identifier: GPL-2.0
#pragma once

// A suite is one subject of the plan (the pin causal matrix, UALink, ...).
// The runner owns the process model; a suite says what its cases are, what
// they need, how one runs (in a child process) and how its outcome is judged
// (in the parent). Every planned case ends as exactly one record.

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_record.hpp"
#include "first_pin.hpp"
#include "kernel_version.hpp"
#include "placement.hpp"
#include "verdict.hpp"

namespace pinmatrix {

struct planned_case {
	std::string id;		// unique across suites ("A", "ualink/export-idempotent")
	std::string name;	// kebab-case
};

// What the guest must prepare before the runner starts (vm/guest/job.sh):
// the backing suite's scratch disk, the vDPA simulator, and QEMU's
// intel-iommu with the edu device for VFIO type1.
struct guest_needs {
	bool disk_dir = false;
	bool vdpa_sim = false;
	bool vfio_edu = false;

	guest_needs &operator|=(const guest_needs &o)
	{
		disk_dir |= o.disk_dir;
		vdpa_sim |= o.vdpa_sim;
		vfio_edu |= o.vfio_edu;
		return *this;
	}
};

// The kernel whose upstream version the rows by version are judged under:
// this machine's, where the cases run; else `version`. That is unknown
// where the launcher writes, on the host, the records of cases its guest
// never ran (the host's kernel is not the guest's), and the one
// `pinmatrix cases --kernel` names.
struct judged_kernel_version {
	bool this_machine = true;
	std::optional<kernel_version> version;
};

struct suite_options {
	std::string device;		// RDMA device; empty: the first one
	size_t find_budget_mib = 2048;	// memory a pin case may fault in to find its page
	// The boot's memory a long-term pin may not stay in (cases/pin/plan.hpp).
	placement restricted = placement::movable;
	// False when this boot has no such memory at all: those cases SKIP.
	bool restricted_present = true;
	pin_sources pins;	// --first-pin, --second-pin
	// Registrations a pin case times (its own, then repeats on fresh pages).
	int latency_samples = 5;
	judged_kernel_version judged_kernel;
};

class suite {
public:
	virtual ~suite() = default;
	virtual std::string name() const = 0;
	virtual std::vector<planned_case> cases() const = 0;
	// One line for `pinmatrix cases`: what the case expects or checks.
	virtual std::string describe(const planned_case &c) const = 0;
	// What the guest must prepare for the case (the launcher asks the plan).
	virtual guest_needs prepares(const planned_case &) const { return {}; }

	// LTP style: nullopt when the suite can run here, else why not (every
	// case becomes a SKIP with it). May record facts in doc["<suite>"].
	virtual std::optional<std::string> preflight(nlohmann::json &doc) = 0;
	// In the runner, before a case's child is forked.
	virtual void before_case(const planned_case &, nlohmann::json &) {}
	// In the child: {"observation": ...} | {"skip": why} | {"error": why}.
	virtual nlohmann::json run_in_child(const planned_case &c) = 0;
	// In the runner: the case's record from the child's observation.
	virtual case_record judge(const planned_case &c, const nlohmann::json &observation) = 0;
	// The record of a case that did not run to an observation.
	virtual case_record not_run(const planned_case &c, verdict v, const std::string &reason) = 0;
	// After its last case, before the next suite's first: release what
	// before_case() held (memory the next suite's cases must find free).
	virtual void after_last_case(nlohmann::json &) {}
	// At the end of the run (a trace session other suites' cases use).
	virtual void finish(nlohmann::json &) {}
};

// A table's helpers (cases/table_suite.hpp): its rows as planned cases, and
// the row of an id (std::logic_error for an id that is not in the table:
// the runner only asks for the ids it was given).
template <typename Row> std::vector<planned_case> planned_cases_of(const std::vector<Row> &table)
{
	std::vector<planned_case> out;
	for (const auto &r : table)
		out.push_back({r.id(), std::string(r.name)});
	return out;
}

template <typename Row> const Row &row_by_id(const std::vector<Row> &table, const std::string &id, const char *suite)
{
	for (const auto &r : table)
		if (r.id() == id)
			return r;
	throw std::logic_error(std::string("not a ") + suite + " case: " + id);
}

// --no-module reads PFNs through /proc/self/pagemap, which shows them to
// root only: why a suite that places pages cannot run, or nullopt.
std::optional<std::string> page_probe_unavailable(const suite_options &opt);

// CMA takes movable allocations only once it holds more than half the free
// pages (lib/placement.hpp): a suite whose cases need CMA pages fills memory
// once, before its first case, and lets go after its last.
class cma_fill_once {
public:
	// Fills on the first call of a CMA boot; records the bytes in facts.
	void before_case(const suite_options &opt, nlohmann::json &facts);
	void release() { pressure_ = {}; }

private:
	placement_pressure pressure_;
	bool filled_ = false;
};

// All suites, in plan order (cases/suite_list.cpp).
std::vector<std::unique_ptr<suite>> make_suites(const suite_options &opt);

struct plan_entry {
	suite *owner;
	planned_case c;
};
// Selects by id or name across suites; also a suite name ("ualink") selects
// all of its cases. Empty or "all": everything. "-NAME" takes NAME's cases
// out again (alone: everything but them; "-backing/hugetlb-2m" on a kernel
// whose known bug is not the subject). Throws usage_error for an unknown
// name, listing what is known, or for a list that leaves nothing.
std::vector<plan_entry> select_plan(const std::vector<std::unique_ptr<suite>> &suites,
				    const std::vector<std::string> &wanted);
// What the guest must prepare for every case of the plan.
guest_needs guest_needs_of(const std::vector<plan_entry> &plan);
// The number of cases of each suite in the plan, in its order (the plan of
// each suite's subtest in KTAP, reports/ktap.hpp).
std::vector<size_t> suite_sizes(const std::vector<plan_entry> &plan);

} // namespace pinmatrix
