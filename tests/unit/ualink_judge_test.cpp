// SPDX-License-Identifier: GPL-2.0
// cases/ualink: the judge on hand-built observations. Its checks decide a
// PASS or FAIL; a check a failed step kept from deciding makes no PASS,
// and one this machine has no oracle for makes a SKIP with why.

#include <gtest/gtest.h>

#include "ualink/ualink_cases.hpp"

using namespace pinmatrix;
using namespace pinmatrix::ualink;
using nlohmann::json;

namespace {

// The suite's judge, as the runner calls it.
case_record judge_case(const case_def &c, const nlohmann::json &o) { return judge_row(definition, c, std::nullopt, o); }

} // namespace

namespace {

json check(const char *what, bool ok)
{
	return {{"what", what}, {"want", "none"}, {"got", ok ? "none" : "0x20000200000"}, {"ok", ok}};
}

json observed(bool ok)
{
	return {{"summary", "s"}, {"checks", {check("the import writes its fd", true), check("no NPA in readlink", ok)}},
		{"facts", json::object()}};
}

const case_def &no_npa() { return case_by_id("ualink/no-npa-in-output"); }

} // namespace

TEST(UalinkJudge, ChecksDecide)
{
	EXPECT_EQ(judge_case(no_npa(), observed(true)).outcome, verdict::pass);
	EXPECT_EQ(judge_case(no_npa(), observed(false)).outcome, verdict::fail);
	json none = observed(true);
	none["checks"] = json::array();
	EXPECT_EQ(judge_case(no_npa(), none).outcome, verdict::error);
}

// The kernel log unread, or a stress whose resets all failed: no PASS.
TEST(UalinkJudge, ACheckAFailedStepKeptFromDecidingIsNoPass)
{
	json o = observed(true);
	o["undecided"] = {{{"what", "no NPA in the kernel log"}, {"why", "the kernel log could not be read: EPERM"}}};
	auto r = judge_case(no_npa(), o);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_EQ(r.reason, "no NPA in the kernel log decided nothing: the kernel log could not be read: EPERM");
	o["checks"] = observed(false)["checks"];
	EXPECT_EQ(judge_case(no_npa(), o).outcome, verdict::fail) << "a decided FAIL stands";
}

// A driver with no NPA oracle (amdgpu: the ranges are the model's debugfs).
TEST(UalinkJudge, ACheckWithNoOracleHereIsASkipWithWhy)
{
	json o = observed(true);
	o["unmet"] = {{{"what", "no output word in an NPA range"}, {"why", "amdgpu has none to compare with"}}};
	auto r = judge_case(no_npa(), o);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_EQ(r.reason, "no output word in an NPA range cannot be checked here: amdgpu has none to compare with");
	o["checks"] = observed(false)["checks"];
	EXPECT_EQ(judge_case(no_npa(), o).outcome, verdict::fail);
	o["checks"] = observed(true)["checks"];
	o["undecided"] = {{{"what", "x"}, {"why", "y"}}};
	EXPECT_EQ(judge_case(no_npa(), o).outcome, verdict::error);
}
