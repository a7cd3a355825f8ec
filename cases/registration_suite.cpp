// SPDX-License-Identifier: GPL-2.0
#include "registration_suite.hpp"

#include <linux/capability.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include "capability.hpp"
#include "case_telemetry.hpp"
#include "mapping.hpp"
#include "pin_module.hpp"
#include "placement.hpp"
#include "sys_error.hpp"
#include "verbs.hpp"
#include "verdict.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The table: what each case does to the memlock limit and what ib_umem_get
// (drivers/infiniband/core/umem.c, 6.1) must answer.
struct memlock_case {
	const char *name;
	const char *checks;
	// RLIMIT_MEMLOCK (soft) for the registration, in bytes of the page size:
	// limit = page_size * num / den. The process drops CAP_IPC_LOCK.
	size_t num, den;
	int expected_errno;
	const char *expected_class;	// classification.class of that registration
	const char *source;
};

const memlock_case table[] = {
	{"memlock-quota",
	 "RLIMIT_MEMLOCK of half a page, no CAP_IPC_LOCK, one page registered: ENOMEM classified as "
	 "memlock quota, not placement; ok once the limit is restored",
	 1, 2, ENOMEM, "memlock quota",
	 "ib_umem_get(): new_pinned = pinned_vm + npages > rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT && "
	 "!capable(CAP_IPC_LOCK) -> -ENOMEM"},
	{"memlock-zero",
	 "RLIMIT_MEMLOCK 0, no CAP_IPC_LOCK: EPERM (can_do_mlock), which the classification does not call "
	 "an ENOMEM; ok once the limit is restored",
	 0, 1, EPERM, "not ENOMEM", "ib_umem_get(): !can_do_mlock() -> -EPERM"},
};

const memlock_case &by_id(const std::string &id)
{
	for (const auto &c : table)
		if (id == std::string("registration/") + c.name)
			return c;
	throw std::logic_error("not a registration case: " + id);
}

std::string expected_summary(const memlock_case &c)
{
	return errno_name(c.expected_errno) + ", " + c.expected_class;
}

class registration_suite final : public suite {
public:
	explicit registration_suite(const suite_options &opt) : opt_(opt) {}

	std::string name() const override { return "registration"; }

	std::vector<planned_case> cases() const override
	{
		std::vector<planned_case> out;
		for (const auto &c : table)
			out.push_back({std::string("registration/") + c.name, c.name});
		return out;
	}

	std::string describe(const planned_case &c) const override { return by_id(c.id).checks; }

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
		const auto &c = by_id(pc.id);
		auto dev = verbs_device::open(opt_.device);
		std::optional<pin_module> module;
		try {
			module.emplace(pin_module::open());
		} catch (const unmet_need &) {
		}
		const size_t ps = page_size();
		// A page that a long-term pin would have to migrate, when there is
		// one: the classification must still blame the limit.
		mapping page;
		if (module && opt_.restricted != placement::ordinary && opt_.restricted_present)
			if (auto found = find_page(*module, opt_.restricted, 16 << 20))
				page = std::move(found->map);
		if (!page.data())
			page = populated_pages(ps);

		case_telemetry telemetry(module ? &*module : nullptr);
		rlimit saved{};
		if (getrlimit(RLIMIT_MEMLOCK, &saved))
			throw last_sys_error("getrlimit(RLIMIT_MEMLOCK)");
		const rlim_t limit = rlim_t(ps * c.num / c.den);
		rlimit small = saved;
		small.rlim_cur = limit;
		if (setrlimit(RLIMIT_MEMLOCK, &small))
			throw last_sys_error("setrlimit(RLIMIT_MEMLOCK, " + std::to_string(limit) + ")");
		if (int ret = set_effective_cap(CAP_IPC_LOCK, false))
			throw sys_error(-ret, "capset: drop CAP_IPC_LOCK");

		telemetry.next_role("with RLIMIT_MEMLOCK " + std::to_string(limit) + " bytes and no CAP_IPC_LOCK");
		registration reg = register_memory(dev, page.data(), ps);
		reg.mr.reset();

		const int restore_cap = set_effective_cap(CAP_IPC_LOCK, true);
		const int restore_limit = setrlimit(RLIMIT_MEMLOCK, &saved) ? errno : 0;
		telemetry.next_role("limit and CAP_IPC_LOCK restored");
		registration again = register_memory(dev, page.data(), ps);
		again.mr.reset();

		json obs = {{"limit_bytes", limit},
			    {"errno", reg.err},
			    {"errno_name", errno_name(reg.err)},
			    {"latency_ns", reg.latency_ns},
			    {"recovery", {{"errno", again.err}, {"errno_name", errno_name(again.err)},
					  {"latency_ns", again.latency_ns}}},
			    {"restore_errors", {{"capset", -restore_cap}, {"setrlimit", restore_limit}}}};
		obs.update(telemetry.finish());
		return {{"observation", obs}};
	}

	json judge(const planned_case &pc, const json &obs) override
	{
		const auto &c = by_id(pc.id);
		json r = record(pc, c);
		std::vector<std::string> why;
		const int err = obs.value("errno", -1);
		const int recovered = obs.contains("recovery") ? obs["recovery"].value("errno", -1) : -1;
		std::string cls = "(none)";
		const json *first = nullptr;
		if (obs.contains("registrations") && obs["registrations"].is_array() && !obs["registrations"].empty())
			first = &obs["registrations"][0];
		if (first && first->contains("classification"))
			cls = (*first)["classification"].value("class", "(none)");
		if (err != c.expected_errno)
			why.push_back("registration " + errno_name(err) + ", expected " + errno_name(c.expected_errno));
		if (!first)
			why.push_back("no telemetry record of the registration");
		else if (err && cls != c.expected_class)
			why.push_back("classified \"" + cls + "\", expected \"" + c.expected_class + "\"");
		if (recovered != 0)
			why.push_back("registration with the limit restored: " + errno_name(recovered));
		const json &restore = obs.contains("restore_errors") ? obs["restore_errors"] : json::object();
		if (restore.value("capset", 0) || restore.value("setrlimit", 0))
			why.push_back("could not restore the limit or CAP_IPC_LOCK: " + restore.dump());

		std::string placement;
		if (first && (*first).contains("pages") && !(*first)["pages"].empty())
			placement = (*first)["pages"][0].value("placement", "");
		json observed = obs;
		observed["summary"] = errno_name(err) + (err ? ", " + cls : "") +
				      (recovered == 0 ? "; ok once restored" : "; still " + errno_name(recovered) + " once restored");
		if (!placement.empty())
			observed["page_placement"] = placement;
		r["observed"] = observed;
		r["latency_ns"] = obs.value("latency_ns", int64_t(0));
		r["verdict"] = why.empty() ? "pass" : "fail";
		std::string reason;
		for (const auto &w : why)
			reason += (reason.empty() ? "" : "; ") + w;
		if (!why.empty())
			r["reason"] = reason;
		return r;
	}

	json not_run(const planned_case &pc, verdict v, const std::string &reason) override
	{
		json r = record(pc, by_id(pc.id));
		r["observed"] = nullptr;
		r["latency_ns"] = nullptr;
		r["verdict"] = pinmatrix::name(v);
		r["reason"] = reason;
		return r;
	}

	void finish(json &doc) override { end_run_trace_session(doc); }

private:
	static json record(const planned_case &pc, const memlock_case &c)
	{
		return {{"id", pc.id},
			{"name", c.name},
			{"second_pin", "ibv_reg_mr"},
			{"checks", c.checks},
			{"source", c.source},
			{"expected",
			 {{"errno", c.expected_errno},
			  {"class", c.expected_class},
			  {"limit", std::to_string(c.num) + "/" + std::to_string(c.den) + " page"},
			  {"summary", expected_summary(c)}}}};
	}

	suite_options opt_;
};

} // namespace

std::unique_ptr<suite> make_registration_suite(const suite_options &opt)
{
	return std::make_unique<registration_suite>(opt);
}

} // namespace pinmatrix
