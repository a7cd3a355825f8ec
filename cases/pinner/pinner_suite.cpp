// SPDX-License-Identifier: GPL-2.0
#include "pinner_suite.hpp"

#include <unistd.h>

#include <optional>

#include "kernel_info.hpp"
#include "pin_module.hpp"
#include "pinner_cases.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The version this kernel is judged under (cases/pin/kernel_rules.hpp).
std::optional<kernel_version> this_kernel()
{
	static const kernel_info k = read_kernel_info();
	static const auto version = upstream_version(k.release, k.version);
	return version;
}

// The runner's interface over the table, body and judge of pinner_cases.hpp.
class pinner_suite final : public suite {
public:
	explicit pinner_suite(const suite_options &opt) : opt_(opt) {}

	std::string name() const override { return "pinner"; }

	std::vector<planned_case> cases() const override
	{
		return planned_cases_of(pinner_cases::case_table());
	}

	std::string describe(const planned_case &c) const override
	{
		return pinner_cases::case_by_id(c.id).checks;
	}

	std::optional<std::string> preflight(json &doc) override
	{
		if (opt_.restricted == placement::ordinary || !opt_.restricted_present)
			return "this boot has no restricted memory to hand a pinner (boot movable or cma)";
		if (opt_.pins.without_module() && geteuid() != 0)
			return "--no-module reads PFNs from /proc/self/pagemap: run as root";
		const auto v = this_kernel();
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
		return pinner_cases::run_case(pinner_cases::case_by_id(c.id), probe,
					      {opt_.device, opt_.restricted, size_t(256) << 20, this_kernel()});
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return pinner_cases::judge_case(pinner_cases::case_by_id(c.id), this_kernel(), observation);
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return pinner_cases::not_run_case(pinner_cases::case_by_id(c.id), this_kernel(), v, reason);
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
