// SPDX-License-Identifier: GPL-2.0
#include "race_suite.hpp"

#include <unistd.h>

#include <optional>

#include "pin_module.hpp"
#include "race_cases.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The runner's interface over the table, body and judge of race_cases.hpp.
class race_suite final : public table_suite<race_cases::race_case> {
public:
	explicit race_suite(const suite_options &opt) : table_suite("race", race_cases::case_table), opt_(opt) {}

	std::optional<std::string> preflight(json &doc) override
	{
		if (opt_.restricted == placement::ordinary || !opt_.restricted_present)
			return "this boot has no restricted memory to race on (boot movable, cma or hugetlb_cma)";
		if (auto why = page_probe_unavailable(opt_))
			return why;
		doc["race"] = {{"placement", pinmatrix::name(opt_.restricted)}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}};
		return std::nullopt;
	}

	void before_case(const planned_case &, json &doc) override { fill_.before_case(opt_, doc["race"]); }

	json run_in_child(const planned_case &c) override
	{
		const auto probe = open_probe();
		return race_cases::run_case(row(c), probe.get(),
					    {opt_.device, opt_.restricted, size_t(64) << 20});
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return race_cases::judge_case(row(c), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return race_cases::not_run_case(row(c), v, reason);
	}

	void after_last_case(json &) override { fill_.release(); }

private:
	page_probe_in_use open_probe() const { return open_page_probe(opt_.pins.without_module()); }

	suite_options opt_;
	cma_fill_once fill_;
};

} // namespace

std::unique_ptr<suite> make_race_suite(const suite_options &opt)
{
	return std::make_unique<race_suite>(opt);
}

} // namespace pinmatrix
