// SPDX-License-Identifier: GPL-2.0
#include "fork_suite.hpp"

#include "fork_cases.hpp"
#include "second_pin.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The runner's interface over the table, body and judge of fork_cases.hpp.
class fork_suite final : public table_suite<fork_cases::fork_case> {
public:
	explicit fork_suite(const suite_options &opt) : table_suite("fork", fork_cases::case_table), opt_(opt) {}

	guest_needs prepares(const planned_case &) const override
	{
		return {.vfio_edu = opt_.pins.second_pin == "vfio-type1"};
	}

	std::optional<std::string> preflight(json &doc) override
	{
		try {
			auto second = open_second_pinner(opt_.pins.second_pin, opt_.device);
			doc["fork"] = {{"second_pin", second->name()}, {"device", second->device()}};
		} catch (const unmet_need &e) {
			return e.what();
		}
		return std::nullopt;
	}

	json run_in_child(const planned_case &c) override
	{
		return fork_cases::run_case(row(c), opt_.pins.second_pin, opt_.device);
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return fork_cases::judge_case(row(c), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return fork_cases::not_run_case(row(c), v, reason);
	}

private:
	suite_options opt_;
};

} // namespace

std::unique_ptr<suite> make_fork_suite(const suite_options &opt)
{
	return std::make_unique<fork_suite>(opt);
}

} // namespace pinmatrix
