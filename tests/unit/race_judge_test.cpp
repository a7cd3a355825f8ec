// SPDX-License-Identifier: GPL-2.0
// cases/race: the judge on hand-built observations. It passes racing pins
// that left no page in restricted memory, fails one that succeeded in
// place, and passes nothing a failed step kept from deciding: an mlock()
// that put no page in a batch, pages the probe could not place, a window
// that was never held open.

#include <gtest/gtest.h>

#include "race/race_cases.hpp"

using namespace pinmatrix;
using namespace pinmatrix::race_cases;
using nlohmann::json;

namespace {

const race_case &case_by_id(const std::string &id) { return row_of(definition, id); }

// The suite's judge, as the runner calls it.
case_record judge_case(const race_case &c, const nlohmann::json &o) { return judge_row(definition, c, std::nullopt, o); }

} // namespace

namespace {

// Every round of c: its pins succeeded, none of its pages left behind.
json correct(const race_case &c)
{
	const bool mlocks = std::string(c.pinners) == "mlock+ibv_reg_mr";
	json round = {{"errnos", std::vector<int>(c.threads - mlocks, 0)},
		      {"pages_left_restricted", 0},
		      {"pages_left_restricted_and_pinned", 0},
		      {"pages_unplaced", 0}};
	if (mlocks)
		round["mlock_errno"] = 0;
	if (std::string(c.pinners) == "isolated+ibv_reg_mr") {
		round["first_pin_held_isolated"] = true;
		round["second_pin_returned_while_isolated"] = false;
	}
	json rounds = json::array();
	for (unsigned i = 0; i < c.rounds; i++)
		rounds.push_back(round);
	return {{"rounds", rounds}, {"probe", "module"}, {"placement", "movable"}, {"cpus", 2}};
}

} // namespace

TEST(RaceJudge, PassesWhatACorrectKernelShowsAndFailsASuccessInPlace)
{
	for (const auto &c : case_table()) {
		auto r = judge_case(c, correct(c));
		EXPECT_EQ(r.outcome, verdict::pass) << c.id() << ": " << r.reason;
		json o = correct(c);
		o["rounds"][c.rounds - 1]["pages_left_restricted"] = 5;
		r = judge_case(c, o);
		EXPECT_EQ(r.outcome, verdict::fail) << c.id();
		EXPECT_NE(r.reason.find("succeeded in place"), std::string::npos) << r.reason;
	}
}

TEST(RaceJudge, AnMlockThatFailedDecidesNothingAboutTheBatch)
{
	const auto &c = case_by_id("race/mlock-batch-reg-mr");
	json o = correct(c);
	o["rounds"][0]["mlock_errno"] = ENOMEM;
	auto r = judge_case(c, o);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("the race with an mlock batch decided nothing: mlock() failed in 1 of 20 rounds"),
		  std::string::npos)
		<< r.reason;
	o = correct(c);
	o["rounds"][7].erase("mlock_errno");
	EXPECT_EQ(judge_case(c, o).outcome, verdict::error);
	// A success in place stands as the FAIL it is.
	o["rounds"][2]["pages_left_restricted"] = 1;
	EXPECT_EQ(judge_case(c, o).outcome, verdict::fail);
}

TEST(RaceJudge, PagesTheProbeCouldNotPlaceDecideNothing)
{
	const auto &c = case_by_id("race/reg-mr-same-buffer");
	json o = correct(c);
	o["rounds"][4]["pages_unplaced"] = 3;
	const auto r = judge_case(c, o);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("no success in place decided nothing: round 5"), std::string::npos) << r.reason;
}

// race/reg-mr-while-isolated: a round whose first registration did not hold
// the buffer isolated (it returned first, or no migration waited for the
// module's locks) gave the second nothing to race with: no PASS. A success
// in place stands as the FAIL it is.
TEST(RaceJudge, ARoundThatHeldNothingIsolatedDecidesNothing)
{
	const auto &c = case_by_id("race/reg-mr-while-isolated");
	json o = correct(c);
	// One round that held nothing: the others decide (a pass).
	o["rounds"][1]["first_pin_held_isolated"] = false;
	o["rounds"][1]["errnos"] = {0};
	auto r = judge_case(c, o);
	EXPECT_EQ(r.outcome, verdict::pass) << r.reason;
	// A success in place fails it, held or not.
	o["rounds"][1]["pages_left_restricted"] = 16;
	r = judge_case(c, o);
	EXPECT_EQ(r.outcome, verdict::fail) << r.reason;
	EXPECT_NE(r.reason.find("round 2: 1 pin(s) succeeded with 16"), std::string::npos) << r.reason;
	// No round held: nothing decided.
	o = correct(c);
	for (auto &round : o["rounds"]) {
		round["first_pin_held_isolated"] = false;
		round["errnos"] = {0, 0};
	}
	r = judge_case(c, o);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("no success in place while isolated decided nothing: no round of 3 held the buffer's "
				"16 pages isolated"),
		  std::string::npos)
		<< r.reason;
}
