// SPDX-License-Identifier: GPL-2.0
#include "registration_suite.hpp"

#include "case_telemetry.hpp"
#include "registration_cases.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The runner's interface over the table, bodies and judge of
// registration_cases.hpp.
class registration_suite final : public suite {
public:
	explicit registration_suite(const suite_options &opt) : opt_(opt) {}

	std::string name() const override { return "registration"; }

	std::vector<planned_case> cases() const override
	{
		return planned_cases_of(memlock::case_table());
	}

	std::string describe(const planned_case &c) const override
	{
		return memlock::case_by_id(c.id).checks;
	}

	std::optional<std::string> preflight(json &doc) override
	{
		try {
			auto dev = verbs_device::open(opt_.device);
			doc["registration"] = {{"rdma_device", dev.name()}};
		} catch (const unmet_need &e) {
			return e.what();
		}
		run_trace_session(doc);
		return std::nullopt;
	}

	json run_in_child(const planned_case &pc) override
	{
		return memlock::run_case(memlock::case_by_id(pc.id),
					      {opt_.device, opt_.restricted, opt_.restricted_present,
					       opt_.pins.without_module()});
	}

	case_record judge(const planned_case &pc, const json &obs) override
	{
		return memlock::judge_case(memlock::case_by_id(pc.id), obs);
	}

	case_record not_run(const planned_case &pc, verdict v, const std::string &reason) override
	{
		return memlock::not_run_record(memlock::case_by_id(pc.id), v, reason);
	}

	void finish(json &doc) override { end_run_trace_session(doc); }

private:
	suite_options opt_;
};

} // namespace

std::unique_ptr<suite> make_registration_suite(const suite_options &opt)
{
	return std::make_unique<registration_suite>(opt);
}

} // namespace pinmatrix
