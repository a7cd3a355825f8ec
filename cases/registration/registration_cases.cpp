// SPDX-License-Identifier: GPL-2.0
#include "registration_cases.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <stdexcept>

#include "capability.hpp"
#include "case_telemetry.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "suite.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"

namespace pinmatrix::memlock {

using nlohmann::json;

// The table.
const std::vector<memlock_case> &case_table()
{
	static const std::vector<memlock_case> table = {
		{"memlock-quota",
		 "RLIMIT_MEMLOCK of half a page, no CAP_IPC_LOCK, one page registered: ENOMEM classified as "
		 "memlock quota, not placement; ok once the limit is restored",
		 1, 2, ENOMEM, "memlock quota",
		 "ib_umem_get(): new_pinned = pinned_vm + npages > rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT && "
		 "!capable(CAP_IPC_LOCK) -> -ENOMEM"},
		{"memlock-zero",
		 "RLIMIT_MEMLOCK 0, no CAP_IPC_LOCK: EPERM (can_do_mlock), which the classification does not "
		 "call an ENOMEM; ok once the limit is restored",
		 0, 1, EPERM, "not ENOMEM", "ib_umem_get(): !can_do_mlock() -> -EPERM"},
	};
	return table;
}

// The body.
namespace {

mapping page_to_register(const std::optional<pin_module> &module, const suite_options &opt)
{
	const pagemap_prober pagemap;
	const page_prober *probe = module ? static_cast<const page_prober *>(&*module)
			       : opt.pins.without_module() ? &pagemap
						    : nullptr;
	if (probe && opt.restricted != placement::ordinary && opt.restricted_present)
		if (auto found = find_page(*probe, opt.restricted, 16 << 20))
			return std::move(found->map);
	return populated_pages(page_size());
}

// RLIMIT_MEMLOCK lowered to `limit` and CAP_IPC_LOCK dropped for the
// object's life; restore() puts both back and says what it could not.
class memlock_squeeze {
public:
	explicit memlock_squeeze(rlim_t limit)
	{
		if (getrlimit(RLIMIT_MEMLOCK, &saved_))
			throw last_sys_error("getrlimit(RLIMIT_MEMLOCK)");
		rlimit small = saved_;
		small.rlim_cur = limit;
		if (setrlimit(RLIMIT_MEMLOCK, &small))
			throw last_sys_error("setrlimit(RLIMIT_MEMLOCK, " + std::to_string(limit) + ")");
		if (int ret = set_effective_cap(CAP_IPC_LOCK, false))
			throw sys_error(-ret, "capset: drop CAP_IPC_LOCK");
	}
	json restore()
	{
		const int cap = set_effective_cap(CAP_IPC_LOCK, true);
		const int limit = setrlimit(RLIMIT_MEMLOCK, &saved_) ? errno : 0;
		return {{"capset", -cap}, {"setrlimit", limit}};
	}

private:
	rlimit saved_{};
};

json registration_json(const registration &reg)
{
	return {{"errno", reg.err}, {"errno_name", errno_name(reg.err)}, {"latency_ns", reg.latency_ns}};
}

} // namespace

json run_case(const memlock_case &c, const suite_options &opt)
{
	auto dev = verbs_device::open(opt.device);
	std::optional<pin_module> module;
	try {
		if (!opt.pins.without_module())
			module.emplace(pin_module::open());
	} catch (const unmet_need &) {
	}
	const mapping page = page_to_register(module, opt);
	case_telemetry telemetry(module ? &*module : nullptr);
	const size_t ps = page_size();
	const rlim_t limit = rlim_t(ps * c.num / c.den);

	memlock_squeeze squeeze(limit);
	telemetry.next_role("with RLIMIT_MEMLOCK " + std::to_string(limit) + " bytes and no CAP_IPC_LOCK");
	registration reg = register_memory(dev, page.data(), ps);
	reg.mr.reset();
	const json restore_errors = squeeze.restore();
	telemetry.next_role("limit and CAP_IPC_LOCK restored");
	registration again = register_memory(dev, page.data(), ps);
	again.mr.reset();

	json obs = registration_json(reg);
	obs["limit_bytes"] = limit;
	obs["recovery"] = registration_json(again);
	obs["restore_errors"] = restore_errors;
	obs.update(telemetry.finish());
	return {{"observation", obs}};
}

// The judge.
namespace {

std::string expected_summary(const memlock_case &c)
{
	return errno_name(c.expected_errno) + ", " + c.expected_class;
}

void expects(const memlock_case &c, const std::optional<kernel_version> &, case_record &r)
{
	r.details = {{"second_pin", "ibv_reg_mr"}, {"checks", c.checks}, {"source", c.source}};
	r.expected = {{"errno", c.expected_errno},
		      {"class", c.expected_class},
		      {"limit", std::to_string(c.num) + "/" + std::to_string(c.den) + " page"},
		      {"summary", expected_summary(c)}};
}

// The telemetry's record of the squeezed registration, if any.
const json *first_registration(const json &obs)
{
	if (obs.contains("registrations") && obs["registrations"].is_array() && !obs["registrations"].empty())
		return &obs["registrations"][0];
	return nullptr;
}

std::string class_of(const json *first)
{
	return first && first->contains("classification") ? (*first)["classification"].value("class", "(none)")
							   : "(none)";
}

std::vector<std::string> mismatches(const memlock_case &c, const json &obs)
{
	std::vector<std::string> why;
	const int err = obs.value("errno", -1);
	const int recovered = obs.contains("recovery") ? obs["recovery"].value("errno", -1) : -1;
	const json *first = first_registration(obs);
	if (err != c.expected_errno)
		why.push_back("registration " + errno_name(err) + ", expected " + errno_name(c.expected_errno));
	if (!first)
		why.push_back("no telemetry record of the registration");
	else if (err && class_of(first) != c.expected_class)
		why.push_back("classified \"" + class_of(first) + "\", expected \"" + c.expected_class + "\"");
	if (recovered != 0)
		why.push_back("registration with the limit restored: " + errno_name(recovered));
	const json &restore = obs.contains("restore_errors") ? obs["restore_errors"] : json::object();
	if (restore.value("capset", 0) || restore.value("setrlimit", 0))
		why.push_back("could not restore the limit or CAP_IPC_LOCK: " + restore.dump());
	return why;
}

json observed_of(const json &obs)
{
	const int err = obs.value("errno", -1);
	const int recovered = obs.contains("recovery") ? obs["recovery"].value("errno", -1) : -1;
	const json *first = first_registration(obs);
	json observed = obs;
	observed["summary"] = errno_name(err) + (err ? ", " + class_of(first) : "") +
			      (recovered == 0 ? "; ok once restored" : "; still " + errno_name(recovered) + " once restored");
	if (first && first->contains("pages") && !(*first)["pages"].empty()) {
		const std::string placement = (*first)["pages"][0].value("placement", "");
		if (!placement.empty())
			observed["page_placement"] = placement;
	}
	return observed;
}

void judge(const memlock_case &c, const std::optional<kernel_version> &, const json &obs, case_record &r)
{
	const auto why = mismatches(c, obs);
	if (!why.empty())
		r.outcome = verdict::fail;
	r.observed = observed_of(obs);
	r.latency_ns = obs.value("latency_ns", int64_t(0));
	for (const auto &w : why)
		r.add_reason(w);
}

} // namespace

const suite_definition<memlock_case> definition = {
	.name = "registration",
	.table = case_table,
	.needs = {.rdma_device = true, .trace_session = true},
	.run = run_case,
	.expects = expects,
	.judge = judge,
};

} // namespace pinmatrix::memlock
