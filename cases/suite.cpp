// SPDX-License-Identifier: GPL-2.0
#include "suite.hpp"

#include <algorithm>

#include "fork_suite.hpp"
#include "pin_suite.hpp"
#include "pinner_suite.hpp"
#include "race_suite.hpp"
#include "registration_suite.hpp"
#include "sys_error.hpp"
#include "ualink/ualink_suite.hpp"

namespace pinmatrix {

std::vector<std::unique_ptr<suite>> make_suites(const suite_options &opt)
{
	std::vector<std::unique_ptr<suite>> all;
	all.push_back(make_pin_suite(opt));
	all.push_back(make_ualink_suite(opt));
	all.push_back(make_registration_suite(opt));
	all.push_back(make_fork_suite(opt));
	all.push_back(make_race_suite(opt));
	all.push_back(make_pinner_suite(opt));
	return all;
}

std::vector<plan_entry> select_plan(const std::vector<std::unique_ptr<suite>> &suites,
				    const std::vector<std::string> &wanted)
{
	std::vector<plan_entry> all;
	for (const auto &s : suites)
		for (const auto &c : s->cases())
			all.push_back({s.get(), c});
	if (wanted.empty() || (wanted.size() == 1 && wanted[0] == "all"))
		return all;

	std::vector<bool> chosen(all.size());
	for (const auto &w : wanted) {
		if (w.empty())
			throw usage_error("an empty case name in the list of cases (two commas, or one at an end?)");
		bool hit = false;
		for (size_t i = 0; i < all.size(); i++)
			if (all[i].c.id == w || all[i].c.name == w || all[i].owner->name() == w)
				chosen[i] = hit = true;
		if (!hit) {
			std::string known;
			for (const auto &s : suites)
				known += (known.empty() ? "" : ", ") + s->name();
			for (const auto &e : all)
				known += ", " + e.c.id;
			throw usage_error("unknown case '" + w + "' (known: " + known + ")");
		}
	}
	// The plan's order, whatever order they were named in.
	std::vector<plan_entry> out;
	for (size_t i = 0; i < all.size(); i++)
		if (chosen[i])
			out.push_back(all[i]);
	return out;
}

} // namespace pinmatrix
