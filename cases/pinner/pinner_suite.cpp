// SPDX-License-Identifier: GPL-2.0
#include "pinner_suite.hpp"

#include <unistd.h>

#include <optional>

#include "pin_module.hpp"
#include "pinner_cases.hpp"
#include "running_kernel.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The runner's interface over the table, body and judge of pinner_cases.hpp.
class pinner_suite final : public table_suite<pinner_cases::pinner_case> {
public:
	explicit pinner_suite(const suite_options &opt) : table_suite("pinner", pinner_cases::case_table), opt_(opt) {}

	guest_needs prepares(const planned_case &c) const override
	{
		return {.vdpa_sim = c.id == "pinner/vdpa-sim", .vfio_edu = c.id == "pinner/vfio-type1"};
	}

	std::optional<std::string> preflight(json &doc) override
	{
		if (opt_.restricted == placement::ordinary || !opt_.restricted_present)
			return "this boot has no restricted memory to hand a pinner (boot movable or cma)";
		if (auto why = page_probe_unavailable(opt_))
			return why;
		const auto v = running_kernel_version();
		doc["pinner"] = {{"placement", pinmatrix::name(opt_.restricted)},
				 {"kernel_version", v ? json(v->text()) : json(nullptr)}};
		return std::nullopt;
	}

	json run_in_child(const planned_case &c) override
	{
		std::optional<pin_module> module;
		try {
			if (!opt_.pins.without_module())
				module.emplace(pin_module::open());
		} catch (const unmet_need &) {
		}
		pagemap_prober pagemap;
		const page_prober &probe = module ? static_cast<const page_prober &>(*module) : pagemap;
		return pinner_cases::run_case(row(c), probe,
					      {opt_.device, opt_.restricted, size_t(256) << 20, running_kernel_version()});
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return pinner_cases::judge_case(row(c), running_kernel_version(), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return pinner_cases::not_run_case(row(c), running_kernel_version(), v, reason);
	}

private:
	suite_options opt_;
};

} // namespace

std::unique_ptr<suite> make_pinner_suite(const suite_options &opt)
{
	return std::make_unique<pinner_suite>(opt);
}

} // namespace pinmatrix
