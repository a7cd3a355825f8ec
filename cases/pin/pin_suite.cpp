// SPDX-License-Identifier: GPL-2.0
#include "pin_suite.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>

#include "case_telemetry.hpp"
#include "gpu_pin.hpp"
#include "kernel_info.hpp"
#include "kernel_rules.hpp"
#include "pin_case.hpp"
#include "placement.hpp"
#include "registration_telemetry.hpp"
#include "pin_record.hpp"
#include "results.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The kernel_rules.cpp rows a case is judged under on this kernel, in its
// record; a FAIL on a kernel inside a known regression's range names it.
void attach_kernel_rules(case_record &record, const case_def &c)
{
	const auto version = running_kernel_version();
	json rules = json::array();
	for (const auto &a : rules_applied(c, version)) {
		rules.push_back({{"rule", a.id}, {"says", a.says}, {"source", a.source},
				 {"versions", a.versions}, {"this_kernel", a.this_kernel}});
		if (a.in_range && a.versions != "every kernel" && record.outcome == verdict::fail)
			record.add_reason("this kernel (" + version->text() + ") is in the range of known regression " +
					  a.id + ": " + a.says);
	}
	record.expected["kernel_version"] = version ? json(version->text()) : json(nullptr);
	record.expected["kernel_rules"] = rules;
}

// The loaded modules the kernel marks out of tree (taint flag O in
// /proc/modules): under --no-module, evidence that the run needed none.
json out_of_tree_modules()
{
	json names = json::array();
	std::istringstream in(read_text_file("/proc/modules"));
	for (std::string line; std::getline(in, line);)
		if (const auto flags = line.rfind('('); flags != std::string::npos &&
		    line.find('O', flags) != std::string::npos)
			names.push_back(line.substr(0, line.find(' ')));
	return names;
}

// An ENOMEM the case expects is a migration that a held pin blocked. The
// registration's telemetry tells other ENOMEMs apart (lib/diagnosis/
// registration_telemetry.hpp): the memlock quota, checked before any page
// is looked at, or no memory at all. Either decided nothing about the
// placement contract: the case is an ERROR that says which, never a PASS
// (nor a FAIL: its recovery, a registration too, met the same quota).
void refuse_an_enomem_of_another_cause(case_record &r, const json &observation)
{
	const bool judged = r.outcome == verdict::pass || r.outcome == verdict::fail;
	if (!judged || r.expected.value("errno", 0) != ENOMEM)
		return;
	const json regs = observation.value("registrations", json::array());
	if (!regs.is_array() || regs.empty() || !regs[0].is_object() || !regs[0].contains("classification"))
		return;
	const json &cls = regs[0]["classification"];
	const std::string why = cls.value("class", "");
	if (why != name(enomem_class::memlock_quota) && why != name(enomem_class::capacity))
		return;
	const std::string facts =
		join(cls.value("facts", json::array()), "; ", [](const json &f) { return f.get<std::string>(); });
	r.outcome = verdict::error;
	r.reason = "the registration's ENOMEM is the " + why + "'s (" + facts +
		   "), not a migration a held pin blocked: the case decided nothing";
}

class pin_suite final : public suite {
public:
	explicit pin_suite(const suite_options &opt) : opt_(opt) {}

	std::string name() const override { return "pin"; }

	std::vector<planned_case> cases() const override
	{
		std::vector<planned_case> out;
		for (const auto &c : pin_cases(opt_.restricted, plan()))
			out.push_back({c.id, c.name});
		return out;
	}

	std::string describe(const planned_case &pc) const override
	{
		const auto &c = def(pc);
		const auto &t = traits(c.first);
		const auto &row = *c.row;
		auto yes = [](bool b) { return b ? "yes" : "no"; };
		return std::string(t.allocates ? "the driver's page" : pinmatrix::name(c.where)) + ", first pin " +
		       t.label + ", then " + c.second_pin + ": expect " + std::string(summary(row.expected)) +
		       " (why: 1. must migrate " + yes(row.must_migrate) + ", 2. first pin long-term " +
		       std::string(pinmatrix::name(row.first_longterm)) + ", 3. it holds a reference " +
		       yes(row.first_holds_reference) + "; " + row.kernels + ")";
	}

	// VFIO type1 as the second pin pins through QEMU's edu device.
	guest_needs prepares(const planned_case &) const override
	{
		return {.vfio_edu = opt_.pins.second_pin == "vfio-type1"};
	}

	std::optional<std::string> preflight(json &doc) override
	{
		try {
			open_probe(doc);
			auto second = open_second_pinner(opt_.pins.second_pin, opt_.device);
			if (!second->device().empty())
				doc["rdma_device"] = second->device();
			doc["first_pin_source"] = opt_.pins.first_pin;
			doc["second_pin"] = opt_.pins.second_pin;
			record_first_pinners(doc);
			doc["restricted_placement"] = pinmatrix::name(opt_.restricted);
			json areas = json::array();
			for (const auto &a : read_cma_areas())
				areas.push_back({{"name", a.name}, {"base_pfn", a.base_pfn}, {"count", a.count},
						 {"source", a.source}, {"exact", a.exact}});
			doc["cma_areas"] = areas;
			run_trace_session(doc);
			return std::nullopt;
		} catch (const unmet_need &e) {
			module_.reset();
			ready_ = false;
			return e.what();
		}
	}

	// Fills memory once per placement (not once per case) so that each
	// case's fresh allocation lands where it should.
	void before_case(const planned_case &pc, json &doc) override
	{
		const auto &c = def(pc);
		if (!ready_ || pressed_ == c.where ||
		    (c.where != placement::ordinary && !opt_.restricted_present))
			return;
		const auto t0 = std::chrono::steady_clock::now();
		pressure_ = {};
		pressure_ = press_towards(probe(), pin_page_wish(c.where), opt_.find_budget_mib << 20);
		pressed_ = c.where;
		doc["placement_pressure"][std::string(pinmatrix::name(c.where))] = {
			{"bytes", pressure_.bytes},
			{"reached", pressure_.reached},
			{"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
	}

	json run_in_child(const planned_case &pc) override
	{
		if (def(pc).where != placement::ordinary && !opt_.restricted_present)
			throw unmet_need(opt_.restricted == placement::cma
						 ? "this boot has no CMA area (CmaTotal 0: boot with cma= or hugetlb_cma=; "
						   "a kernel that failed to reserve it logs \"cma: Failed to reserve\")"
						 : "this boot has no ZONE_MOVABLE (boot with movablecore=)");
		step_clock clock;
		std::optional<pin_module> module;
		if (!opt_.pins.without_module())
			module.emplace(pin_module::open());
		auto second = open_second_pinner(opt_.pins.second_pin, opt_.device);
		const case_tools tools{module ? static_cast<const page_prober &>(*module) : pagemap_,
				       module ? &*module : nullptr};
		observation o;
		json telemetry_json;
		{
			// Telemetry and the kernel trace of every registration of
			// the case (case_telemetry.hpp) ...
			case_telemetry telemetry(module ? &*module : nullptr);
			clock.mark("open the module, the second pin and the trace");
			o = run_pin_case(def(pc), tools, *second, opt_.find_budget_mib << 20, clock);
			telemetry_json = telemetry.finish();
			clock.mark("read the trace");
		}
		// ... but not of its repeats, timed after it.
		time_registration_again(def(pc), tools, *second, opt_.latency_samples, o);
		clock.mark("latency repeats");
		o.time_ms = clock.steps();
		json obs = to_json(o);
		obs.update(telemetry_json);
		return {{"observation", obs}};
	}

	case_record judge(const planned_case &pc, const json &observation) override
	{
		case_record r = record_of(pinmatrix::judge(def(pc), observation_from_json(observation)));
		if (r.observed)
			attach_telemetry(*r.observed, observation);
		refuse_an_enomem_of_another_cause(r, observation);
		attach_kernel_rules(r, def(pc));
		return r;
	}

	case_record not_run(const planned_case &pc, verdict v, const std::string &reason) override
	{
		return record_of(pinmatrix::not_run(def(pc), v, reason));
	}

	void after_last_case(json &) override { pressure_ = {}; }

	void finish(json &doc) override
	{
		pressure_ = {};
		module_.reset();
		ready_ = false;
		end_run_trace_session(doc);
	}

private:
	const pin_sources &plan() const { return opt_.pins; }

	// The test module and its facts, or under --no-module the pagemap
	// probe, which needs root to see PFNs.
	void open_probe(json &doc)
	{
		if (opt_.pins.without_module()) {
			if (geteuid() != 0)
				throw unmet_need("--no-module reads PFNs from /proc/self/pagemap: run as root "
						 "(CAP_SYS_ADMIN)");
			doc["out_of_tree_modules"] = out_of_tree_modules();
		} else {
			module_.emplace(pin_module::open());
			const auto info = module_->info();
			doc["module"] = {{"abi_version", info.abi_version},
					 {"migratetype_method", mt_method_name(info.mt_method)},
					 {"max_pinned_pages", info.max_pinned_pages}};
		}
		doc["probe"] = probe().probe_name();
		ready_ = true;
	}

	const page_prober &probe() const
	{
		return module_ ? static_cast<const page_prober &>(*module_) : pagemap_;
	}

	// The GPU driver behind the source's pins, as found here: a missing one
	// is no reason to skip the cases that do not need it (those that do
	// SKIP on their own).
	void record_first_pinners(json &doc) const
	{
		if (opt_.pins.first_pin != "cuda" && opt_.pins.first_pin != "hip")
			return;
		json drivers = json::array();
		for (gpu_api api : {gpu_api::cuda_register, gpu_api::cudart_register, gpu_api::hip_register}) {
			if ((api == gpu_api::hip_register) != (opt_.pins.first_pin == "hip"))
				continue;
			try {
				auto info = load_gpu_driver(api);
				json d = {{"library", info.library}, {"family", info.family},
					  {"version", info.version}, {"test_double", info.test_double},
					  {"describe", info.describe()}};
				if (info.test_double)
					d["double_contract"] = info.double_contract;
				if (info.longterm_by_version)
					d["longterm_by_version"] = *info.longterm_by_version;
				drivers.push_back(d);
			} catch (const unmet_need &e) {
				drivers.push_back({{"missing", e.what()}});
			}
		}
		doc["gpu_drivers"] = drivers;
	}

	const case_def &def(const planned_case &pc) const
	{
		for (const auto &c : pin_cases(opt_.restricted, plan()))
			if (c.id == pc.id)
				return c;
		throw std::logic_error("not a pin case: " + pc.id);
	}

	suite_options opt_;
	std::optional<pin_module> module_;
	pagemap_prober pagemap_;
	bool ready_ = false;	// preflight found what the cases read pages with
	placement_pressure pressure_;
	std::optional<placement> pressed_;
};

} // namespace

std::unique_ptr<suite> make_pin_suite(const suite_options &opt)
{
	return std::make_unique<pin_suite>(opt);
}

} // namespace pinmatrix
