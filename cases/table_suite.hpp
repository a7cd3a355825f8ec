// SPDX-License-Identifier: GPL-2.0
#pragma once

// A table suite is one literal definition, as LTP's `struct tst_test` is
// for a test: its name, its table, what it needs of the run (as data: each
// unmet need SKIPs every case with its reason), what the guest must prepare
// for a row, the body that runs a row in the case's child, what a row
// expects on this kernel, and the judge. table_suite runs any of them
// behind the runner's interface (suite.hpp); adding a suite is a folder
// with its table, bodies and judge, its definition, and one line in
// cases/suite_list.cpp.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_record.hpp"
#include "kernel_version.hpp"
#include "common/running_kernel.hpp"
#include "suite.hpp"

namespace pinmatrix {

// What a suite needs of the run, each checked before its first case.
struct suite_needs {
	bool restricted_memory = false;	// a boot with memory a long-term pin may not stay in
	bool page_probe = false;	// the test module, or root to read PFNs from pagemap
	bool rdma_device = false;	// an RDMA device (--device, else the first)
	bool second_pin = false;	// the run's --second-pin opens here
	bool trace_session = false;	// the run's kernel trace, from its preflight to the run's end
	bool cma_filled = false;	// on a CMA boot, CMA filled before its first case (cma_fill_once)
};

template <typename Row> struct suite_definition {
	const char *name;
	const std::vector<Row> &(*table)();
	suite_needs needs;
	// The body, in the case's child: {"observation": ...}, or {"skip": why}
	// or {"error": why}; throws unmet_need for a SKIP.
	nlohmann::json (*run)(const Row &, const suite_options &);
	// What the row expects on this kernel (nullopt: not known) and why, in
	// the record of every case, run or not: r.details and r.expected.
	void (*expects)(const Row &, const std::optional<kernel_version> &, case_record &r);
	// The judge, in the runner: r expects (expects() filled it) and is a
	// PASS until the observation says otherwise.
	void (*judge)(const Row &, const std::optional<kernel_version> &, const nlohmann::json &observation,
		      case_record &r);
	// The suite's own facts in the run's document (doc[name]); null: none.
	void (*facts)(const suite_options &, nlohmann::json &facts) = nullptr;
	// What the guest must prepare for a row; null: nothing.
	guest_needs (*prepares)(const Row &) = nullptr;
	// In the runner before each case; null: nothing.
	void (*before_case)(const suite_options &) = nullptr;
};

// The row of a case id; std::logic_error for an id not in the table.
template <typename Row> const Row &row_of(const suite_definition<Row> &d, const std::string &id)
{
	return row_by_id(d.table(), id, d.name);
}

// A row's record before it is judged: its id, name, expectation and
// outcome (the record of a case that did not run to an observation).
template <typename Row>
case_record record_of_row(const suite_definition<Row> &d, const Row &row, const std::optional<kernel_version> &v,
			  verdict outcome, const std::string &reason)
{
	case_record r;
	r.id = row.id();
	r.name = row.name;
	d.expects(row, v, r);
	r.outcome = outcome;
	r.reason = reason;
	return r;
}

// A row's record from its observation, on a kernel of version v.
template <typename Row>
case_record judge_row(const suite_definition<Row> &d, const Row &row, const std::optional<kernel_version> &v,
		      const nlohmann::json &observation)
{
	case_record r = record_of_row(d, row, v, verdict::pass, "");
	d.judge(row, v, observation, r);
	return r;
}

// The upstream version the rows by version are judged under, if known.
inline std::optional<kernel_version> cases_kernel_version(const suite_options &opt)
{
	return opt.judged_kernel.this_machine ? running_kernel_version() : opt.judged_kernel.version;
}

// What table_suite does the same for every definition (cases/suite.cpp).
// Checks the needs in order, recording what it found in doc[name], then
// the suite's facts, then starts the trace session: why not, or nullopt.
std::optional<std::string> preflight_suite(const char *name, const suite_needs &needs, const suite_options &opt,
					   const std::function<void(nlohmann::json &)> &facts, nlohmann::json &doc);
// What a row needs of the guest for the run's options (VFIO type1 as the
// second pin needs QEMU's edu device).
guest_needs guest_needs_of_options(const suite_needs &needs, const suite_options &opt);
void finish_suite(const suite_needs &needs, nlohmann::json &doc);

template <typename Row> class table_suite final : public suite {
public:
	table_suite(const suite_definition<Row> &d, const suite_options &opt) : d_(d), opt_(opt) {}

	std::string name() const override { return d_.name; }
	std::vector<planned_case> cases() const override { return planned_cases_of(d_.table()); }
	std::string describe(const planned_case &c) const override { return std::string(row(c).checks); }

	guest_needs prepares(const planned_case &c) const override
	{
		guest_needs n = guest_needs_of_options(d_.needs, opt_);
		if (d_.prepares)
			n |= d_.prepares(row(c));
		return n;
	}

	std::optional<std::string> preflight(nlohmann::json &doc) override
	{
		auto facts = [this](nlohmann::json &f) {
			if (d_.facts)
				d_.facts(opt_, f);
		};
		return preflight_suite(d_.name, d_.needs, opt_, facts, doc);
	}

	void before_case(const planned_case &, nlohmann::json &doc) override
	{
		if (d_.needs.cma_filled)
			fill_.before_case(opt_, doc[d_.name]);
		if (d_.before_case)
			d_.before_case(opt_);
	}

	nlohmann::json run_in_child(const planned_case &c) override { return d_.run(row(c), opt_); }

	case_record judge(const planned_case &c, const nlohmann::json &observation) override
	{
		return judge_row(d_, row(c), cases_kernel_version(opt_), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return record_of_row(d_, row(c), cases_kernel_version(opt_), v, reason);
	}

	void after_last_case(nlohmann::json &) override { fill_.release(); }
	void finish(nlohmann::json &doc) override { finish_suite(d_.needs, doc); }

private:
	const Row &row(const planned_case &c) const { return row_by_id(d_.table(), c.id, d_.name); }

	const suite_definition<Row> &d_;
	suite_options opt_;
	cma_fill_once fill_;
};

template <typename Row>
std::unique_ptr<suite> make_table_suite(const suite_definition<Row> &d, const suite_options &opt)
{
	return std::make_unique<table_suite<Row>>(d, opt);
}

} // namespace pinmatrix
