// SPDX-License-Identifier: GPL-2.0
#include "backing_suite.hpp"

#include <unistd.h>

#include <cstdlib>

#include "backing_cases.hpp"
#include "case_telemetry.hpp"
#include "pin_module.hpp"
#include "running_kernel.hpp"

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

// The runner's interface over the table, body and judge of backing_cases.hpp.
class backing_suite final : public table_suite<backing_cases::backing_case> {
public:
	explicit backing_suite(const suite_options &opt) : table_suite("backing", backing_cases::case_table), opt_(opt) {}

	std::optional<std::string> preflight(json &doc) override
	{
		if (auto why = page_probe_unavailable(opt_))
			return why;
		const auto v = running_kernel_version();
		doc["backing"] = {{"placement", pinmatrix::name(opt_.restricted)},
				  {"kernel_version", v ? json(v->text()) : json(nullptr)},
				  {"disk_dir", disk_dir().string()}};
		// Which GUP path decided each row, where the kernel lets it be seen.
		run_trace_session(doc);
		return std::nullopt;
	}

	// A file on a disk filesystem: the guest mounts one (vm/guest/job.sh,
	// PINMATRIX_DISK_DIR), which costs a boot about 2 s under TCG.
	guest_needs prepares(const planned_case &c) const override
	{
		return {.disk_dir = row(c).kind == backing_cases::backing::file};
	}

	void before_case(const planned_case &, json &doc) override { fill_.before_case(opt_, doc["backing"]); }

	json run_in_child(const planned_case &c) override
	{
		const auto probe = open_page_probe(opt_.pins.without_module());
		json result, telemetry_json;
		{
			// The row's registration, traced (case_telemetry.hpp).
			case_telemetry telemetry(probe.module ? &*probe.module : nullptr);
			result = backing_cases::run_case(row(c), probe.get(),
							 {opt_.device, opt_.restricted, opt_.restricted_present, disk_dir()});
			telemetry_json = telemetry.finish();
		}
		result["observation"].update(telemetry_json);
		return result;
	}

	case_record judge(const planned_case &c, const json &observation) override
	{
		return backing_cases::judge_case(row(c), observation, running_kernel_version());
	}

	case_record not_run(const planned_case &c, verdict v, const std::string &reason) override
	{
		return backing_cases::not_run_case(row(c), v, reason, running_kernel_version());
	}

	void after_last_case(json &) override { fill_.release(); }

	void finish(json &doc) override { end_run_trace_session(doc); }

private:
	suite_options opt_;
	cma_fill_once fill_;
};

} // namespace

std::unique_ptr<suite> make_backing_suite(const suite_options &opt)
{
	return std::make_unique<backing_suite>(opt);
}

} // namespace pinmatrix
