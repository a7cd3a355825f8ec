// SPDX-License-Identifier: GPL-2.0
#include "backing_suite.hpp"

#include <unistd.h>

#include <cstdlib>

#include "backing_cases.hpp"
#include "kernel_info.hpp"
#include "pin_module.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The file backing's directory: PINMATRIX_DISK_DIR (the guest's job sets
// it to an ext4 scratch filesystem), else /var/tmp.
std::filesystem::path disk_dir()
{
	const char *dir = getenv("PINMATRIX_DISK_DIR");
	return dir && *dir ? dir : "/var/tmp";
}

std::optional<kernel_version> running_version()
{
	static const kernel_info k = read_kernel_info();
	return upstream_version(k.release, k.version);
}

// The runner's interface over the table, body and judge of backing_cases.hpp.
class backing_suite final : public suite {
public:
	explicit backing_suite(const suite_options &opt) : opt_(opt) {}

	std::string name() const override { return "backing"; }

	std::vector<planned_case> cases() const override
	{
		return planned_cases_of(backing_cases::case_table());
	}

	std::string describe(const planned_case &c) const override
	{
		return backing_cases::case_by_id(c.id).checks;
	}

	std::optional<std::string> preflight(json &doc) override
	{
		if (opt_.pins.without_module() && geteuid() != 0)
			return "--no-module reads PFNs from /proc/self/pagemap: run as root";
		const auto v = running_version();
		doc["backing"] = {{"placement", pinmatrix::name(opt_.restricted)},
				  {"kernel_version", v ? json(v->text()) : json(nullptr)},
				  {"disk_dir", disk_dir().string()}};
		return std::nullopt;
	}

	// CMA takes movable allocations only once it holds more than half the
	// free pages: fill first, once for the suite (lib/placement.hpp).
	void before_case(const planned_case &, json &doc) override
	{
		if (pressed_ || opt_.restricted != placement::cma || !opt_.restricted_present)
			return;
		const auto probe = open_page_probe(opt_.pins.without_module());
		pressure_ = press_towards(probe.get(), opt_.restricted, opt_.find_budget_mib << 20);
		pressed_ = true;
		doc["backing"]["pressure_bytes"] = pressure_.bytes;
	}

	json run_in_child(const planned_case &c) override
	{
		const auto probe = open_page_probe(opt_.pins.without_module());
		return backing_cases::run_case(backing_cases::case_by_id(c.id), probe.get(),
					       {opt_.device, opt_.restricted, opt_.restricted_present, disk_dir()});
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return backing_cases::judge_case(backing_cases::case_by_id(c.id), observation, running_version());
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return backing_cases::not_run_case(backing_cases::case_by_id(c.id), v, reason, running_version());
	}

	void finish(json &) override { pressure_ = {}; }

private:
	suite_options opt_;
	placement_pressure pressure_;
	bool pressed_ = false;
};

} // namespace

std::unique_ptr<suite> make_backing_suite(const suite_options &opt)
{
	return std::make_unique<backing_suite>(opt);
}

} // namespace pinmatrix
