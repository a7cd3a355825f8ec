// SPDX-License-Identifier: GPL-2.0
#include "pin_record.hpp"

#include "placement.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

json to_json(const page_state &p)
{
	return {{"pfn", p.pfn},
		{"placement", p.placement},
		{"zone", p.zone},
		{"migratetype", p.migratetype},
		{"longterm_pinnable", p.longterm_pinnable ? json(*p.longterm_pinnable) : json(nullptr)},
		{"maybe_dma_pinned", p.maybe_dma_pinned},
		{"refcount", p.refcount},
		{"cma_area", p.cma_area.empty() ? json(nullptr) : json(p.cma_area)}};
}

page_state page_state_from_json(const json &j)
{
	page_state p;
	p.pfn = j.at("pfn");
	p.placement = j.at("placement");
	p.zone = j.at("zone");
	p.migratetype = j.at("migratetype");
	if (const auto &lp = j.at("longterm_pinnable"); !lp.is_null())
		p.longterm_pinnable = lp.get<bool>();
	p.maybe_dma_pinned = j.at("maybe_dma_pinned");
	p.refcount = j.at("refcount");
	if (j.contains("cma_area") && j["cma_area"].is_string())
		p.cma_area = j["cma_area"];
	return p;
}

namespace {

json to_json(const give_back_attempt &g)
{
	return {{"method", g.method},
		{"given_back", g.given_back ? json(*g.given_back) : json(nullptr)},
		{"detail", g.detail},
		{"latency_ns", g.latency_ns}};
}

give_back_attempt give_back_from_json(const json &j)
{
	give_back_attempt g;
	g.method = j.at("method");
	if (const auto &b = j.at("given_back"); !b.is_null())
		g.given_back = b.get<bool>();
	g.detail = j.at("detail");
	g.latency_ns = j.at("latency_ns");
	return g;
}

} // namespace

json to_json(const observation &o)
{
	json j = {{"errno", o.registration_errno},
		  {"errno_name", errno_name(o.registration_errno)},
		  {"migrated", o.migrated_by_first_pin() || o.migrated_by_registration()},
		  {"migrated_by_first_pin", o.migrated_by_first_pin()},
		  {"migrated_by_registration", o.migrated_by_registration()},
		  {"pfn_before", o.before.pfn},
		  {"pfn_after", o.pfn_after()},
		  {"first_pin_errno", o.first_pin_errno},
		  {"first_pin_pfns", o.first_pin_pfns},
		  {"latency_ns", o.latency_ns},
		  {"scanned_bytes", o.scanned_bytes},
		  {"summary", o.summary()},
		  {"page", {{"before", to_json(o.before)}}}};
	if (o.after_first_pin)
		j["page"]["after_first_pin"] = to_json(*o.after_first_pin);
	if (o.after_registration)
		j["page"]["after_registration"] = to_json(*o.after_registration);
	if (o.after_release)
		j["page"]["after_release"] = to_json(*o.after_release);
	if (o.rdma_write_readback)
		j["rdma_write_readback"] = *o.rdma_write_readback;
	if (!o.rdma_detail.empty())
		j["rdma_detail"] = o.rdma_detail;
	if (o.content_intact)
		j["content_intact"] = *o.content_intact;
	if (o.recovery)
		j["recovery"] = {{"errno", o.recovery->errno_value},
				 {"latency_ns", o.recovery->latency_ns},
				 {"pfn_after", o.recovery->pfn_after}};
	if (!o.first_pinner.empty())
		j["first_pinner"] = o.first_pinner;
	if (!o.first_pin_detail.empty())
		j["first_pin_detail"] = o.first_pin_detail;
	if (o.longterm_by_version)
		j["longterm_by_version"] = *o.longterm_by_version;
	if (!o.readback_method.empty())
		j["readback_method"] = o.readback_method;
	if (!o.probe.empty())
		j["probe"] = o.probe;
	if (!o.latency_samples_ns.empty())
		j["latency_samples_ns"] = o.latency_samples_ns;
	if (!o.latency_repeats_otherwise.empty())
		j["latency_repeats_otherwise"] = o.latency_repeats_otherwise;
	if (o.give_back_held)
		j["give_back"]["with_pins_held"] = to_json(*o.give_back_held);
	if (o.give_back_released)
		j["give_back"]["first_pin_released"] = to_json(*o.give_back_released);
	if (o.give_back_control)
		j["give_back"]["all_released"] = to_json(*o.give_back_control);
	if (!o.time_ms.empty())
		j["time_ms"] = step_times_json(o.time_ms);
	return j;
}

observation observation_from_json(const json &j)
{
	observation o;
	o.registration_errno = j.at("errno");
	o.first_pin_errno = j.at("first_pin_errno");
	o.first_pin_pfns = j.at("first_pin_pfns").get<std::vector<uint64_t>>();
	o.latency_ns = j.at("latency_ns");
	o.latency_samples_ns = j.value("latency_samples_ns", std::vector<int64_t>{});
	o.latency_repeats_otherwise = j.value("latency_repeats_otherwise", std::vector<std::string>{});
	o.scanned_bytes = j.at("scanned_bytes");
	if (j.contains("time_ms"))
		o.time_ms = step_times_from_json(j["time_ms"]);
	const auto &page = j.at("page");
	o.before = page_state_from_json(page.at("before"));
	if (page.contains("after_first_pin"))
		o.after_first_pin = page_state_from_json(page["after_first_pin"]);
	if (page.contains("after_registration"))
		o.after_registration = page_state_from_json(page["after_registration"]);
	if (page.contains("after_release"))
		o.after_release = page_state_from_json(page["after_release"]);
	if (j.contains("rdma_write_readback"))
		o.rdma_write_readback = j["rdma_write_readback"].get<bool>();
	o.rdma_detail = j.value("rdma_detail", "");
	if (j.contains("content_intact"))
		o.content_intact = j["content_intact"].get<bool>();
	if (j.contains("recovery")) {
		const auto &r = j["recovery"];
		o.recovery = recovery_record{r.at("errno"), r.at("latency_ns"), r.at("pfn_after")};
	}
	o.first_pinner = j.value("first_pinner", "");
	o.first_pin_detail = j.value("first_pin_detail", "");
	if (j.contains("longterm_by_version"))
		o.longterm_by_version = j["longterm_by_version"].get<bool>();
	o.readback_method = j.value("readback_method", "");
	o.probe = j.value("probe", "");
	if (j.contains("give_back")) {
		const auto &g = j["give_back"];
		if (g.contains("with_pins_held"))
			o.give_back_held = give_back_from_json(g["with_pins_held"]);
		if (g.contains("first_pin_released"))
			o.give_back_released = give_back_from_json(g["first_pin_released"]);
		if (g.contains("all_released"))
			o.give_back_control = give_back_from_json(g["all_released"]);
	}
	return o;
}

case_record record_of(const case_result &r)
{
	const auto &e = r.expected;
	case_record c;
	c.id = r.def.id;
	c.name = r.def.name;
	c.details = {{"placement", name(r.def.where)},
		     {"first_pin", name(r.def.first)},
		     {"first_pin_label", traits(r.def.first).label},
		     {"second_pin", r.def.second_pin}};
	c.expected = {{"errno", e.registration_errno},
		      {"first_pin_migrates", e.first_pin_migrates},
		      {"registration_migrates", e.registration_migrates},
		      {"first_pin_contract", e.contract},
		      {"contract_source", e.contract_source},
		      {"summary", e.summary()}};
	if (r.observed && r.observed->give_back_held)
		c.expected["memory_given_back_while_held"] = e.memory_given_back_while_held();
	if (r.observed) {
		c.observed = to_json(*r.observed);
		c.latency_ns = r.observed->latency_ns;
	}
	c.duration_ns = r.duration_ns;
	c.outcome = r.outcome;
	c.reason = r.reason;
	return c;
}

} // namespace pinmatrix
