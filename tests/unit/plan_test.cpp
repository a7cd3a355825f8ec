// SPDX-License-Identifier: GPL-2.0
#include <set>

#include <algorithm>

#include <gtest/gtest.h>

#include "pin/plan.hpp"
#include "suite.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;

namespace {

const case_def &by_id(const std::string &id)
{
	for (const auto &c : pin_cases())
		if (c.id == id)
			return c;
	throw std::runtime_error("no case " + id);
}

} // namespace

TEST(Plan, SeedCasesAreThoseOfSection16_5)
{
	EXPECT_EQ(by_id("A").where, placement::movable);
	EXPECT_EQ(by_id("A").first, first_pin::none);
	EXPECT_EQ(by_id("B").where, placement::movable);
	EXPECT_EQ(by_id("B").first, first_pin::foll_pin);
	EXPECT_EQ(by_id("C").where, placement::movable);
	EXPECT_EQ(by_id("C").first, first_pin::foll_pin_longterm);
	EXPECT_EQ(by_id("D").where, placement::ordinary);
	EXPECT_EQ(by_id("D").first, first_pin::foll_pin);
	for (const auto &c : pin_cases())
		EXPECT_EQ(c.second_pin, "ibv_reg_mr");
}

TEST(Plan, EveryRungCrossedWithMovableAndOrdinary)
{
	const auto &cases = pin_cases();
	EXPECT_EQ(cases.size(), first_pins_of("module").size() * 2);
	std::set<std::pair<placement, first_pin>> leaves;
	for (const auto &c : cases)
		leaves.insert({c.where, c.first});
	EXPECT_EQ(leaves.size(), cases.size());
}

TEST(Plan, IdsAndNamesAreUniqueAndKebabCase)
{
	std::set<std::string> ids, names;
	for (const auto &c : pin_cases()) {
		EXPECT_TRUE(ids.insert(c.id).second) << c.id;
		EXPECT_TRUE(names.insert(c.name).second) << c.name;
		for (char ch : c.name)
			EXPECT_TRUE(islower(ch) || isdigit(ch) || ch == '-') << c.name;
	}
}

TEST(Plan, MovableCasesRunBeforeOrdinaryOnes)
{
	bool seen_ordinary = false;
	for (const auto &c : pin_cases()) {
		if (c.where == placement::ordinary)
			seen_ordinary = true;
		else
			EXPECT_FALSE(seen_ordinary) << c.id;
	}
}

// The selection is select_plan's (cases/suite.hpp), across suites: one way
// to name cases, for the pin suite as for the others.
std::vector<std::string> selected_ids(const std::vector<std::string> &wanted)
{
	static const auto suites = make_suites({});
	std::vector<std::string> ids;
	for (const auto &e : select_plan(suites, wanted))
		ids.push_back(e.c.id);
	return ids;
}

size_t planned_total()
{
	size_t n = 0;
	for (const auto &s : make_suites({}))
		n += s->cases().size();
	return n;
}

TEST(Plan, SelectByIdOrNameKeepsPlanOrder)
{
	const auto sel = selected_ids({"D", "movable-none", "B", "D"});
	EXPECT_EQ(sel, (std::vector<std::string>{"A", "B", "D"}));
	EXPECT_EQ(selected_ids({}).size(), planned_total());
	EXPECT_EQ(selected_ids({"all"}).size(), planned_total());
	// A suite's name selects its cases: the pin suite's are the plan's.
	EXPECT_EQ(selected_ids({"pin"}).size(), pin_cases().size());
}

// "-NAME" takes cases out: alone, of everything; after names, of those.
TEST(Plan, ALeadingDashTakesCasesOut)
{
	const auto all_but = selected_ids({"-backing/hugetlb-2m"});
	EXPECT_EQ(all_but.size(), planned_total() - 1);
	EXPECT_EQ(std::count(all_but.begin(), all_but.end(), "backing/hugetlb-2m"), 0);
	EXPECT_EQ(selected_ids({"pin", "-B", "-C"}).size(), pin_cases().size() - 2);
	EXPECT_EQ(selected_ids({"A", "B", "-B"}), (std::vector<std::string>{"A"}));
	EXPECT_THROW(selected_ids({"A", "-A"}), usage_error);	// nothing left
	EXPECT_THROW(selected_ids({"-Z"}), usage_error);	// unknown, out or in
	EXPECT_THROW(selected_ids({"-"}), usage_error);
}

TEST(Plan, UnknownCaseIsAUsageErrorNamingIt)
{
	try {
		selected_ids({"A", "Z"});
		FAIL() << "no error";
	} catch (const usage_error &e) {
		EXPECT_NE(std::string(e.what()).find("'Z'"), std::string::npos);
	}
}

TEST(Plan, RestrictedPlacementCarriesCasesAToC)
{
	for (placement r : {placement::movable, placement::cma}) {
		const auto &cases = pin_cases(r);
		EXPECT_EQ(cases.size(), first_pins_of("module").size() * 2);
		for (const auto &c : cases) {
			if (c.id == "A" || c.id == "B" || c.id == "C") {
				EXPECT_EQ(c.where, r) << c.id;
			}
			if (c.id == "D") {
				EXPECT_EQ(c.where, placement::ordinary);
			}
		}
	}
	// A boot without movable or CMA memory has only the ordinary cases.
	const auto &ordinary = pin_cases(placement::ordinary);
	EXPECT_EQ(ordinary.size(), first_pins_of("module").size());
	std::set<std::string> ids;
	for (const auto &c : ordinary) {
		EXPECT_EQ(c.where, placement::ordinary);
		ids.insert(c.id);
	}
	EXPECT_TRUE(ids.count("D"));
	EXPECT_FALSE(ids.count("A") || ids.count("B") || ids.count("C"));
}
