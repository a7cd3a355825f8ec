// SPDX-License-Identifier: GPL-2.0
// The literal pin table (cases/pin/pin_table.cpp) against its checker, the rule
// (matrix/rules.cpp), and against the rows each source must have.
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "pin/pin_table.hpp"
#include "pin/plan.hpp"
#include "rules.hpp"

using namespace pinmatrix;

namespace {

// The placements a row stands for: each restricted one a boot can offer.
std::vector<placement> placements_of(const pin_row &row)
{
	if (row.where == page_at::ordinary)
		return {placement::ordinary};
	return {placement::movable, placement::cma};
}

std::string row_name(const pin_row &row)
{
	return std::string(row.source) + ":" + (*row.id ? row.id : "") + ":" + std::string(name(row.where)) + "-" +
	       std::string(name(row.first));
}

longterm_answer answer_of(first_pin f)
{
	const auto &t = traits(f);
	return t.contract_observed ? longterm_answer::observed
	       : t.declares_longterm ? longterm_answer::yes
				     : longterm_answer::no;
}

} // namespace

TEST(PinTable, EveryRowAnswersTheRulesQuestionsAsTheRuleDoes)
{
	for (const auto &row : pin_table())
		for (placement p : placements_of(row)) {
			SCOPED_TRACE(row_name(row) + " on " + std::string(name(p)));
			EXPECT_EQ(row.must_migrate, !traits(p).longterm_pinnable);
			EXPECT_EQ(row.first_longterm, answer_of(row.first));
			EXPECT_EQ(row.first_holds_reference, traits(row.first).holds_reference);
			EXPECT_STREQ(row.kernels, "every kernel");
		}
}

TEST(PinTable, EveryRowExpectsWhatTheRuleExpects)
{
	for (const auto &row : pin_table())
		for (placement p : placements_of(row)) {
			SCOPED_TRACE(row_name(row) + " on " + std::string(name(p)));
			EXPECT_EQ(summary(row.expected), expect(p, row.first).summary());
			if (row.first_longterm != longterm_answer::observed)
				continue;
			// An observed contract: the outcome for each answer.
			const bool restricted = row.where == page_at::restricted;
			EXPECT_EQ(expect(p, row.first, false).summary(), restricted ? "ENOMEM" : "ok");
			EXPECT_EQ(expect(p, row.first, true).summary(), restricted ? "ok, no move" : "ok");
		}
}

// Each source's rows: every first pin it has (and the module's two that fill
// the slots it cannot) once on restricted and once on ordinary memory, but
// an allocating pinner's once; A, B, C once on restricted memory, D once on
// ordinary memory with B's first pin.
TEST(PinTable, EachSourceHasEachOfItsFirstPinsOncePerPlacement)
{
	for (auto source : first_pin_sources()) {
		SCOPED_TRACE(std::string(source));
		std::set<first_pin> pins;
		for (first_pin f : first_pins_of(source))
			pins.insert(f);
		// The module's two pins fill what another source lacks; with no
		// module at all (--no-module), io_uring's long-term pin and mlock.
		if (source == pin_sources::stock_source)
			pins.insert({first_pin::io_uring, first_pin::mlock});
		else if (source != "module")
			pins.insert({first_pin::foll_pin, first_pin::foll_pin_longterm});
		std::set<std::pair<page_at, first_pin>> want, have;
		for (first_pin f : pins) {
			want.insert({page_at::ordinary, f});
			if (!traits(f).allocates)
				want.insert({page_at::restricted, f});
		}
		std::map<std::string, const pin_row *> seeds;
		for (const auto &row : pin_table()) {
			if (row.source != source)
				continue;
			EXPECT_TRUE(have.insert({row.where, row.first}).second) << "twice: " << row_name(row);
			if (*row.id) {
				EXPECT_TRUE(seeds.emplace(row.id, &row).second) << "id twice: " << row_name(row);
			}
		}
		EXPECT_EQ(have, want);
		ASSERT_EQ(seeds.size(), 4u);
		EXPECT_EQ(seeds["A"]->where, page_at::restricted);
		EXPECT_EQ(seeds["A"]->first, first_pin::none);
		EXPECT_EQ(seeds["B"]->where, page_at::restricted);
		EXPECT_NE(seeds["B"]->first_longterm, longterm_answer::yes);
		EXPECT_TRUE(seeds["B"]->first_holds_reference);
		EXPECT_EQ(seeds["C"]->where, page_at::restricted);
		EXPECT_EQ(seeds["C"]->first_longterm, longterm_answer::yes);
		EXPECT_EQ(seeds["D"]->where, page_at::ordinary);
		EXPECT_EQ(seeds["D"]->first, seeds["B"]->first);
	}
}

// The order cases run in: restricted rows first, and in each placement the
// seed's cases first, in order.
TEST(PinTable, SeedCasesLeadEachPlacementInOrder)
{
	for (auto source : first_pin_sources()) {
		SCOPED_TRACE(std::string(source));
		std::vector<std::string> order;
		page_at last = page_at::restricted;
		for (const auto &row : pin_table()) {
			if (row.source != source)
				continue;
			EXPECT_FALSE(last == page_at::ordinary && row.where == page_at::restricted) << row_name(row);
			if (row.where != last)
				order.push_back("|");
			last = row.where;
			order.push_back(*row.id ? row.id : "-");
		}
		std::string text;
		for (const auto &o : order)
			text += o;
		EXPECT_EQ(text.substr(0, 3), "ABC") << text;
		EXPECT_NE(text.find("|D"), std::string::npos) << text;
		EXPECT_EQ(text.find_last_of("ABC"), 2u) << text;
	}
}

// The plan of every boot is its source's rows, in table order.
TEST(PinTable, ThePlanIsTheTable)
{
	for (auto source : first_pin_sources())
		for (placement r : {placement::movable, placement::cma, placement::ordinary}) {
			SCOPED_TRACE(std::string(source) + " on " + std::string(name(r)));
			std::vector<std::pair<placement, first_pin>> want;
			for (const auto &row : pin_table())
				if (row.source == source && !(row.where == page_at::restricted && r == placement::ordinary))
					want.push_back({row.where == page_at::restricted ? r : placement::ordinary, row.first});
			std::vector<std::pair<placement, first_pin>> have;
			for (const auto &c : pin_cases(r, {std::string(source), "ibv_reg_mr"}))
				have.push_back({c.where, c.first});
			EXPECT_EQ(have, want);
		}
}
