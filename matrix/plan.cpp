// SPDX-License-Identifier: GPL-2.0
#include "plan.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "sys_error.hpp"

namespace pinmatrix {

namespace {

// Section 16.5. "CMA page" is the boot's restricted placement: a MIGRATE_CMA
// pageblock, or ZONE_MOVABLE standing in for it on a kernel without CMA.
// Which first pin fills B, C and D depends on the source (plan.hpp).
struct seed_slots {
	first_pin b, c, d;
};

seed_slots slots_for(const std::string &source)
{
	if (source == "module")
		return {first_pin::foll_pin, first_pin::foll_pin_longterm, first_pin::foll_pin};
	const auto rows = first_pins_of(source);
	const first_pin primary = rows.at(1);	// rows[0] is "none"
	const auto &t = traits(primary);
	const bool known_longterm = t.declares_longterm && !t.contract_observed;
	return {known_longterm ? first_pin::foll_pin : primary,
		known_longterm ? primary : first_pin::foll_pin_longterm,
		known_longterm ? first_pin::foll_pin : primary};
}

std::vector<case_def> build(placement restricted, const plan_options &o)
{
	std::vector<first_pin> rows = first_pins_of(o.first_pin_source);
	if (o.first_pin_source != "module")
		for (first_pin ref : {first_pin::foll_pin, first_pin::foll_pin_longterm})
			rows.push_back(ref);	// the module's, for the slots the source cannot fill
	const seed_slots slot = slots_for(o.first_pin_source);

	std::vector<case_def> cases;
	std::vector<placement> placements = {placement::ordinary};
	if (restricted != placement::ordinary)
		placements.insert(placements.begin(), restricted);
	for (placement p : placements) {
		for (first_pin f : rows) {
			const auto &t = traits(f);
			// The driver chooses an allocating pinner's page: one case.
			if (t.allocates && p != placement::ordinary)
				continue;
			case_def c;
			c.where = p;
			c.first = f;
			c.name = t.allocates ? std::string(t.name) : std::string(name(p)) + "-" + t.name;
			c.id = c.name;
			c.second_pin = o.second_pin;
			// Without restricted memory there is no A-C to stand for.
			if (p != placement::ordinary) {
				if (f == first_pin::none)
					c.id = "A";
				else if (f == slot.b)
					c.id = "B";
				else if (f == slot.c)
					c.id = "C";
			} else if (f == slot.d && !t.allocates) {
				c.id = "D";
			}
			cases.push_back(c);
		}
	}
	// Seed cases first within a placement, so A-D read in order.
	std::stable_sort(cases.begin(), cases.end(), [](const case_def &a, const case_def &b) {
		if (a.where != b.where)
			return a.where != placement::ordinary;
		if (a.id.size() == 1 && b.id.size() == 1)
			return a.id < b.id;
		return a.id.size() == 1 && b.id.size() != 1;
	});
	return cases;
}

} // namespace

const std::vector<std::string_view> &second_pins()
{
	static const std::vector<std::string_view> names = {"ibv_reg_mr", "io_uring"};
	return names;
}

void check(const plan_options &o)
{
	auto list = [](const auto &names) {
		std::string out;
		for (auto n : names)
			out += (out.empty() ? "" : ", ") + std::string(n);
		return out;
	};
	if (!is_first_pin_source(o.first_pin_source))
		throw usage_error("--first-pin '" + o.first_pin_source + "': expected " + list(first_pin_sources()));
	if (std::find(second_pins().begin(), second_pins().end(), o.second_pin) == second_pins().end())
		throw usage_error("--second-pin '" + o.second_pin + "': expected " + list(second_pins()));
}

const std::vector<case_def> &pin_cases(placement restricted, const plan_options &o)
{
	check(o);
	// Built once per (restricted, source, second pin); std::map never moves
	// its values, so the references stay valid.
	static std::map<std::tuple<int, std::string, std::string>, std::vector<case_def>> plans;
	const auto key = std::make_tuple(static_cast<int>(restricted), o.first_pin_source, o.second_pin);
	auto it = plans.find(key);
	if (it == plans.end())
		it = plans.emplace(key, build(restricted, o)).first;
	return it->second;
}

std::vector<case_def> select_cases(const std::vector<std::string> &wanted, placement restricted,
				   const plan_options &o)
{
	const auto &all = pin_cases(restricted, o);
	if (wanted.empty() || (wanted.size() == 1 && wanted[0] == "all"))
		return all;
	std::vector<case_def> out;
	for (const auto &w : wanted) {
		auto it = std::find_if(all.begin(), all.end(), [&](const case_def &c) {
			return c.id == w || c.name == w;
		});
		if (it == all.end()) {
			std::string known;
			for (const auto &c : all)
				known += (known.empty() ? "" : ", ") + c.id;
			throw usage_error("unknown case '" + w + "' (known: " + known + ")");
		}
		if (std::none_of(out.begin(), out.end(), [&](const case_def &c) { return c.id == it->id; }))
			out.push_back(*it);
	}
	// Keep the plan's order whatever order they were named in.
	std::vector<case_def> ordered;
	for (const auto &c : all)
		if (std::any_of(out.begin(), out.end(), [&](const case_def &o) { return o.id == c.id; }))
			ordered.push_back(c);
	return ordered;
}

} // namespace pinmatrix
