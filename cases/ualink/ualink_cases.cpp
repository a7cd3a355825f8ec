// SPDX-License-Identifier: GPL-2.0
// A UALink case in its child (its accelerators found, its needs met, its
// body run through a case_context) and in the runner (its record judged
// from the checks it made).
#include "ualink_cases.hpp"

#include <algorithm>
#include <filesystem>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix::ualink {

using nlohmann::json;

std::string rc_name(int rc)
{
	return errno_name(rc < 0 ? -rc : rc);
}

// pod_view

const accel &pod_view::exporter() const
{
	if (found.accels.empty() && !std::filesystem::exists("/sys/class/drm"))
		throw unmet_need("no UALink accelerator here: the kernel has no DRM (no /sys/class/drm: "
				 "CONFIG_DRM), so neither amdgpu nor ualink_sim");
	if (found.accels.empty())
		throw unmet_need("no UALink accelerator here: no amdgpu render node with "
				 "<dev>/ualink/accel_id and no ualink_sim (modprobe drm_shmem_helper; "
				 "insmod ualink_sim.ko)");
	return found.accels.front();
}

size_t pod_view::remote_count() const
{
	const accel &a = exporter();
	const auto local = a.local_accels();
	const auto members = a.pod_members();
	size_t n = 0;
	for (const auto &b : found.accels)
		if (&b != &a && std::find(local.begin(), local.end(), b.id()) == local.end() &&
		    std::find(members.begin(), members.end(), b.id()) != members.end())
			n++;
	return n;
}

const accel &pod_view::remote(size_t n) const
{
	const accel &a = exporter();
	const auto local = a.local_accels();
	const auto members = a.pod_members();
	for (const auto &b : found.accels) {
		if (&b == &a || std::find(local.begin(), local.end(), b.id()) != local.end() ||
		    std::find(members.begin(), members.end(), b.id()) == members.end())
			continue;
		if (!n--)
			return b;
	}
	const std::string ids = join(found.accels, ",", [](const accel &b) { return std::to_string(b.id()); });
	throw unmet_need("needs an importer outside accelerator " + std::to_string(a.id()) +
			 "'s node (accelerators here: " + ids + "; local to it: " +
			 std::to_string(local.size()) +
			 "): local peers import through amdgpu's local path, without NPA");
}

// case_context

bool case_context::expect_rc(const std::string &what, std::string_view key, int rc)
{
	const int64_t want = def.want(key);
	const bool ok = (want == 0 && rc == 0) || (want != 0 && rc == -want);
	checks_.push_back({what, rc_name(int(want)), rc_name(rc), ok});
	return ok;
}

bool case_context::expect_value(const std::string &what, std::string_view key, int64_t got)
{
	const int64_t want = def.want(key);
	auto show = [](int64_t v) { return v > 4096 ? hex(uint64_t(v)) : std::to_string(v); };
	checks_.push_back({what, show(want), show(got), want == got});
	return want == got;
}

bool case_context::expect(const std::string &what, bool ok, const std::string &want, const std::string &got)
{
	checks_.push_back({what, want, got, ok});
	return ok;
}

void case_context::undecided(const std::string &what, const std::string &why)
{
	undecided_.push_back({{"what", what}, {"why", why}});
}

void case_context::unmet(const std::string &what, const std::string &why)
{
	unmet_.push_back({{"what", what}, {"why", why}});
}

json case_context::observation() const
{
	json checks = json::array();
	size_t failed = 0;
	const check *first_failed = nullptr;
	for (const auto &k : checks_) {
		checks.push_back({{"what", k.what}, {"want", k.want}, {"got", k.got}, {"ok", k.ok}});
		if (!k.ok && !failed++)
			first_failed = &k;
	}
	std::string s = summary;
	if (first_failed)
		s = first_failed->what + ": " + first_failed->got;
	else if (s.empty())
		s = std::to_string(checks_.size()) + (checks_.size() == 1 ? " check ok" : " checks ok");
	json o = {{"summary", s}, {"checks", checks}, {"facts", facts}};
	if (!undecided_.empty())
		o["undecided"] = undecided_;
	if (!unmet_.empty())
		o["unmet"] = unmet_;
	if (latency_ns)
		o["latency_ns"] = *latency_ns;
	return o;
}

// run and judge

json run_case(const case_def &def)
{
	pod_view pod{def.needs & needs_device ? discover() : discovery{}};
	if (def.needs & needs_device) {
		const accel &a = pod.exporter();
		if (a.accel_state() != "active")
			throw unmet_need("accelerator " + std::to_string(a.id()) + " is not active (accel_state '" +
					 a.accel_state() + "')");
		if (def.needs & needs_model)
			a.require_model("hooks");
		if (def.needs & needs_remote)
			pod.remote();
	}
	case_context c(def, pod);
	def.run(c);
	json o = c.observation();
	if (!pod.empty()) {
		o["driver"] = pod.exporter().driver();
		o["exporter"] = pod.exporter().id();
	}
	return {{"observation", o}};
}

namespace {

// The checks the body could not make: one a failed step kept from deciding
// is no PASS (ERROR unless a check FAILed); one this machine has no oracle
// for turns what would be a PASS into a SKIP with why.
void judge_undecided(const json &observation, case_record &r)
{
	for (const auto &u : observation.value("undecided", json::array()))
		r.undecided(u.at("what").get<std::string>(), u.at("why").get<std::string>());
	for (const auto &u : observation.value("unmet", json::array())) {
		if (r.outcome == verdict::pass)
			r.outcome = verdict::skip;
		if (r.outcome == verdict::skip)
			r.add_reason(u.at("what").get<std::string>() + " cannot be checked here: " +
				     u.at("why").get<std::string>());
	}
}

void judge(const case_def &, const std::optional<kernel_version> &, const json &observation, case_record &r)
{
	std::vector<std::string> failed;
	const json &checks = observation.at("checks");
	for (const auto &k : checks)
		if (!k.at("ok").get<bool>())
			failed.push_back(k.at("what").get<std::string>() + ": want " +
					 k.at("want").get<std::string>() + ", got " + k.at("got").get<std::string>());
	if (checks.empty()) {
		r.outcome = verdict::error;
		r.reason = "the case made no check";
	} else if (!failed.empty()) {
		r.outcome = verdict::fail;
		r.add_reason(join(failed, "; "));
	}
	judge_undecided(observation, r);
	r.observed = observation;
	if (observation.contains("latency_ns"))
		r.latency_ns = observation["latency_ns"].get<int64_t>();
}

void expects(const case_def &def, const std::optional<kernel_version> &, case_record &r)
{
	json expect = json::object();
	for (const auto &e : def.expect)
		expect[std::string(e.key)] = e.value;
	r.details = {{"source", std::string(def.checks)}};
	r.expected = {{"summary", std::string(def.expected)}, {"values", expect}};
}

// What discovery found, in the run's document; never a reason to skip the
// whole suite: the ABI case needs no device, and every other case SKIPs
// with its own reason when it cannot run.
void facts(const suite_options &, json &u)
{
	try {
		const auto found = discover();
		u["discovery"] = found.method;
		u["accelerators"] = json::array();
		bool model = false;
		for (const auto &a : found.accels) {
			u["driver"] = a.driver();
			model |= a.is_model();
			u["accelerators"].push_back({{"node", a.node()},
						     {"accel_id", a.id()},
						     {"accel_state", a.accel_state()},
						     {"local_accels", a.local_accels()}});
		}
		u["not_ualink"] = found.skipped;
		if (model)
			if (auto f = model_faults())
				u["model_faults"] = *f;
	} catch (const std::exception &e) {
		u["discovery_error"] = e.what();
	}
}

// A case that died with the model's accelerator offline must not skip the
// rest: each case starts with every model accelerator active.
void before_case(const suite_options &)
{
	try {
		for (const auto &a : discover().accels)
			if (a.is_model() && a.accel_state() != "active")
				a.set_accel_state("active");
	} catch (const std::exception &) {
	}
}

json run(const case_def &def, const suite_options &) { return run_case(def); }

} // namespace

const suite_definition<case_def> definition = {
	.name = "ualink",
	.table = case_table,
	.needs = {},
	.run = run,
	.expects = expects,
	.judge = judge,
	.facts = facts,
	.before_case = before_case,
};

} // namespace pinmatrix::ualink
