// SPDX-License-Identifier: GPL-2.0
#include "ualink_suite.hpp"

#include "sys_error.hpp"
#include "ualink_cases.hpp"
#include "ualink_device.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

class ualink_suite final : public suite {
public:
	std::string name() const override { return "ualink"; }

	std::vector<planned_case> cases() const override
	{
		return planned_cases_of(ualink::case_table());
	}

	std::string describe(const planned_case &c) const override
	{
		return std::string(ualink::case_by_id(c.id).checks);
	}

	// Never refuses the whole suite: the ABI case needs no device, and
	// every other case SKIPs with its own reason when it cannot run.
	std::optional<std::string> preflight(json &doc) override
	{
		auto &u = doc["ualink"];
		try {
			const auto found = ualink::discover();
			u["discovery"] = found.method;
			u["accelerators"] = json::array();
			for (const auto &a : found.accels) {
				u["driver"] = a.driver();
				model_ |= a.is_model();
				u["accelerators"].push_back({{"node", a.node()},
							     {"accel_id", a.id()},
							     {"accel_state", a.accel_state()},
							     {"local_accels", a.local_accels()}});
			}
			u["not_ualink"] = found.skipped;
			if (model_)
				if (auto f = ualink::model_faults())
					u["model_faults"] = *f;
		} catch (const std::exception &e) {
			u["discovery_error"] = e.what();
		}
		return std::nullopt;
	}

	// A case that died with an accelerator offline must not skip the rest.
	void before_case(const planned_case &, json &) override
	{
		if (!model_)
			return;
		try {
			for (const auto &a : ualink::discover().accels)
				if (a.is_model() && a.accel_state() != "active")
					a.set_accel_state("active");
		} catch (const std::exception &) {
		}
	}

	json run_in_child(const planned_case &c) override
	{
		return ualink::run_case(ualink::case_by_id(c.id));
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return ualink::judge_case(ualink::case_by_id(c.id), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return ualink::not_run_case(ualink::case_by_id(c.id), v, reason);
	}

private:
	bool model_ = false;
};

} // namespace

std::unique_ptr<suite> make_ualink_suite(const suite_options &)
{
	return std::make_unique<ualink_suite>();
}

} // namespace pinmatrix
