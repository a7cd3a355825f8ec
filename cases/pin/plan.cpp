// SPDX-License-Identifier: GPL-2.0
#include "plan.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

namespace {

// One source's rows of the table, the restricted placement filled in.
std::vector<case_def> build(placement restricted, const pin_sources &o)
{
	std::vector<case_def> cases;
	for (const auto &row : pin_table()) {
		if (row.source != o.first_pin)
			continue;
		// Without restricted memory there is no A-C to stand for.
		if (row.where == page_at::restricted && restricted == placement::ordinary)
			continue;
		const auto &t = traits(row.first);
		case_def c;
		c.where = row.where == page_at::restricted ? restricted : placement::ordinary;
		c.first = row.first;
		// The driver chooses an allocating pinner's page: its name alone.
		c.name = t.allocates ? std::string(t.name) : std::string(name(c.where)) + "-" + t.name;
		c.id = *row.id ? row.id : c.name;
		c.second_pin = o.second_pin;
		c.row = &row;
		cases.push_back(c);
	}
	return cases;
}

} // namespace

const std::vector<std::string_view> &second_pins()
{
	static const std::vector<std::string_view> names = {"ibv_reg_mr", "io_uring", "vfio-type1"};
	return names;
}

void check(const pin_sources &o)
{
	if (!is_first_pin_source(o.first_pin))
		throw usage_error("--first-pin '" + o.first_pin + "': expected " + join(first_pin_sources(), ", "));
	if (std::find(second_pins().begin(), second_pins().end(), o.second_pin) == second_pins().end())
		throw usage_error("--second-pin '" + o.second_pin + "': expected " + join(second_pins(), ", "));
}

const std::vector<case_def> &pin_cases(placement restricted, const pin_sources &o)
{
	check(o);
	// Built once per (restricted, source, second pin); std::map never moves
	// its values, so the references stay valid.
	static std::map<std::tuple<int, std::string, std::string>, std::vector<case_def>> plans;
	const auto key = std::make_tuple(static_cast<int>(restricted), o.first_pin, o.second_pin);
	auto it = plans.find(key);
	if (it == plans.end())
		it = plans.emplace(key, build(restricted, o)).first;
	return it->second;
}

} // namespace pinmatrix
