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
class registration_suite final : public table_suite<memlock::memlock_case> {
public:
	explicit registration_suite(const suite_options &opt) : table_suite("registration", memlock::case_table), opt_(opt) {}

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
		return memlock::run_case(row(pc),
					      {opt_.device, opt_.restricted, opt_.restricted_present,
					       opt_.pins.without_module()});
	}

	case_record judge(const planned_case &pc, const json &obs) override
	{
		return memlock::judge_case(row(pc), obs);
	}

	case_record not_run(const planned_case &pc, verdict v, const std::string &reason) override
	{
		return memlock::not_run_record(row(pc), v, reason);
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
