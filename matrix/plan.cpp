// SPDX-License-Identifier: GPL-2.0
#include "plan.hpp"

#include <algorithm>
#include <optional>

#include "sys_error.hpp"

namespace pinmatrix {

namespace {

struct seed_case {
	const char *id;
	std::optional<placement> where;	// nullopt: the restricted placement
	first_pin first;
};

// Section 16.5. "CMA page" is the boot's restricted placement: a MIGRATE_CMA
// pageblock, or ZONE_MOVABLE standing in for it on a kernel without CMA.
constexpr seed_case seed_cases[] = {
	{"A", std::nullopt, first_pin::none},
	{"B", std::nullopt, first_pin::foll_pin},
	{"C", std::nullopt, first_pin::foll_pin_longterm},
	{"D", placement::ordinary, first_pin::foll_pin},
};

std::vector<case_def> build(placement restricted)
{
	std::vector<case_def> cases;
	std::vector<placement> placements = {placement::ordinary};
	if (restricted != placement::ordinary)
		placements.insert(placements.begin(), restricted);
	for (placement p : placements) {
		for (const auto &f : all_first_pins()) {
			case_def c;
			c.where = p;
			c.first = f.kind;
			c.name = std::string(name(p)) + "-" + f.name;
			c.id = c.name;
			c.second_pin = "ibv_reg_mr";
			// Without restricted memory there is no A-C to stand for.
			for (const auto &s : seed_cases)
				if ((s.where || restricted != placement::ordinary) &&
				    s.where.value_or(restricted) == p && s.first == f.kind)
					c.id = s.id;
			cases.push_back(c);
		}
	}
	// Seed cases first within a placement, so A-D read in order.
	std::stable_sort(cases.begin(), cases.end(), [](const case_def &a, const case_def &b) {
		if (a.where != b.where)
			return a.where != placement::ordinary;
		return a.id.size() == 1 && b.id.size() != 1;
	});
	return cases;
}

} // namespace

const std::vector<case_def> &pin_cases(placement restricted)
{
	static const std::vector<case_def> by_restricted[] = {
		build(placement::ordinary), build(placement::movable), build(placement::cma)};
	return by_restricted[static_cast<int>(restricted)];
}

std::vector<case_def> select_cases(const std::vector<std::string> &wanted, placement restricted)
{
	const auto &all = pin_cases(restricted);
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
