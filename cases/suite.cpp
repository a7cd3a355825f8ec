// SPDX-License-Identifier: GPL-2.0
#include "suite.hpp"

#include <unistd.h>

#include <algorithm>

#include "case_telemetry.hpp"
#include "pin_module.hpp"
#include "common/second_pin.hpp"
#include "sys_error.hpp"
#include "table_suite.hpp"
#include "text.hpp"
#include "verbs.hpp"

namespace pinmatrix {

std::optional<std::string> page_probe_unavailable(const suite_options &opt)
{
	if (opt.pins.without_module() && geteuid() != 0)
		return "--no-module reads PFNs from /proc/self/pagemap: run as root";
	return std::nullopt;
}

void cma_fill_once::before_case(const suite_options &opt, nlohmann::json &facts)
{
	if (filled_ || opt.restricted != placement::cma || !opt.restricted_present)
		return;
	pressure_ = press_into_cma(opt.find_budget_mib << 20);
	filled_ = true;
	facts["pressure_bytes"] = pressure_.bytes;
	facts["cma_takes_movable_allocations"] = pressure_.reached;
}

namespace {

// The first need of `needs` this run does not meet, recording in facts
// what it found of those it does.
std::optional<std::string> unmet_need_of(const suite_needs &needs, const suite_options &opt, nlohmann::json &facts)
{
	if (needs.restricted_memory && (opt.restricted == placement::ordinary || !opt.restricted_present))
		return "this boot has no restricted memory (boot movable, cma or hugetlb_cma)";
	if (needs.page_probe) {
		if (auto why = page_probe_unavailable(opt))
			return why;
		facts["placement"] = name(opt.restricted);
	}
	try {
		if (needs.rdma_device)
			facts["rdma_device"] = verbs_device::open(opt.device).name();
		if (needs.second_pin) {
			auto second = open_second_pinner(opt.pins.second_pin, opt.device);
			facts["second_pin"] = second->name();
			facts["device"] = second->device();
		}
	} catch (const unmet_need &e) {
		return e.what();
	}
	return std::nullopt;
}

} // namespace

std::optional<std::string> preflight_suite(const char *name, const suite_needs &needs, const suite_options &opt,
					   const std::function<void(nlohmann::json &)> &facts, nlohmann::json &doc)
{
	nlohmann::json found = nlohmann::json::object();
	if (auto why = unmet_need_of(needs, opt, found))
		return why;
	facts(found);
	if (!found.empty())
		doc[name] = found;
	// Which GUP path decided each row, where the kernel lets it be seen.
	if (needs.trace_session)
		run_trace_session(doc);
	return std::nullopt;
}

guest_needs guest_needs_of_options(const suite_needs &needs, const suite_options &opt)
{
	return {.vfio_edu = needs.second_pin && opt.pins.second_pin == "vfio-type1"};
}

void finish_suite(const suite_needs &needs, nlohmann::json &doc)
{
	if (needs.trace_session)
		end_run_trace_session(doc);
}

namespace {

// The entries `w` names (a case id or name, or a suite's name); throws
// usage_error for a name nothing answers to, listing what is known.
std::vector<bool> named_by(const std::vector<std::unique_ptr<suite>> &suites, const std::vector<plan_entry> &all,
			   const std::string &w)
{
	if (w.empty())
		throw usage_error("an empty case name in the list of cases (two commas, or one at an end?)");
	std::vector<bool> hit(all.size());
	bool any = false;
	for (size_t i = 0; i < all.size(); i++)
		if (all[i].c.id == w || all[i].c.name == w || all[i].owner->name() == w)
			hit[i] = any = true;
	if (!any) {
		std::string known = join(suites, ", ", [](const auto &s) { return s->name(); });
		for (const auto &e : all)
			known += ", " + e.c.id;
		throw usage_error("unknown case '" + w + "' (known: " + known + ")");
	}
	return hit;
}

} // namespace

std::vector<plan_entry> select_plan(const std::vector<std::unique_ptr<suite>> &suites,
				    const std::vector<std::string> &wanted)
{
	std::vector<plan_entry> all;
	for (const auto &s : suites)
		for (const auto &c : s->cases())
			all.push_back({s.get(), c});
	// Everything unless something is named to be in; then less what is
	// named to be out ("-NAME").
	bool includes = false;
	for (const auto &w : wanted)
		includes = includes || (w != "all" && (w.empty() || w[0] != '-'));
	std::vector<bool> chosen(all.size(), !includes);
	for (const auto &w : wanted) {
		if (w == "all")
			continue;
		const bool out = !w.empty() && w[0] == '-';
		const auto hit = named_by(suites, all, out ? w.substr(1) : w);
		for (size_t i = 0; i < all.size(); i++)
			if (hit[i])
				chosen[i] = !out;
	}
	// The plan's order, whatever order they were named in.
	std::vector<plan_entry> out;
	for (size_t i = 0; i < all.size(); i++)
		if (chosen[i])
			out.push_back(all[i]);
	if (out.empty())
		throw usage_error("the list of cases leaves nothing to run");
	return out;
}

guest_needs guest_needs_of(const std::vector<plan_entry> &plan)
{
	guest_needs n;
	for (const auto &e : plan)
		n |= e.owner->prepares(e.c);
	return n;
}

std::vector<size_t> suite_sizes(const std::vector<plan_entry> &plan)
{
	std::vector<size_t> sizes;
	for (size_t i = 0; i < plan.size(); i++) {
		if (i == 0 || plan[i].owner != plan[i - 1].owner)
			sizes.push_back(0);
		sizes.back()++;
	}
	return sizes;
}

} // namespace pinmatrix
