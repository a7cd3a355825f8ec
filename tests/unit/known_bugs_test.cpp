// SPDX-License-Identifier: GPL-2.0
// The known kernel bugs as verdicts (matrix/known_bugs.cpp): a FAIL with a
// known bug's signature on a kernel that carries it is an XFAIL, any other
// FAIL stays one, a PASS where an `always` bug should show is an XPASS, and
// --strict counts both as failures. Every path on records as the judges
// make them.

#include <cerrno>

#include <gtest/gtest.h>

#include "known_bugs.hpp"
#include "results.hpp"

using namespace pinmatrix;
using nlohmann::json;

namespace {

constexpr kernel_version v6_1{6, 1, 192}, v6_12{6, 12, 117}, v7_2{7, 2, 13};
const char *const hugetlb_warn = "WARNING: CPU: 0 PID: 97 at mm/hugetlb.c:6629 follow_hugetlb_page+0x5c1/0x6f0";

case_record hugetlb_2m(verdict v, int err, bool warned)
{
	case_record r;
	r.id = "backing/hugetlb-2m";
	r.name = "hugetlb-2m";
	r.suite = "backing";
	r.expected = {{"summary", "registered"}, {"errno", 0}};
	r.observed = json{{"summary", err ? "refused" : "registered"}, {"errno", err}};
	r.outcome = v;
	r.reason = v == verdict::pass ? "" : "ibv_reg_mr: ENOMEM, expected success";
	if (warned)
		r.details["kernel_alarms"] = {hugetlb_warn};
	return r;
}

} // namespace

TEST(KnownBugs, AFailAsTheBugPredictsIsAnExpectedFailure)
{
	auto r = hugetlb_2m(verdict::fail, ENOMEM, true);
	apply_known_bugs(r, v6_1, false);
	EXPECT_EQ(r.outcome, verdict::xfail);
	EXPECT_EQ(r.reason.find("expected failure, known bug hugetlb-longterm-warn of 6.1.192: "), 0u) << r.reason;
	EXPECT_NE(r.reason.find("ibv_reg_mr: ENOMEM, expected success"), std::string::npos) << "the evidence stays";
	EXPECT_NE(r.reason.find("follow_hugetlb_page()"), std::string::npos) << r.reason;
	const json bug = r.details.at("known_bug");
	EXPECT_EQ(bug.at("id"), "hugetlb-longterm-warn");
	EXPECT_EQ(bug.at("kernel"), "6.1.192");
	EXPECT_EQ(bug.at("kernels"), "every 6.1");
}

TEST(KnownBugs, AnotherFailureOfTheSameCaseIsStillAFail)
{
	// ENOMEM without the bug's WARN; the WARN with another errno.
	for (auto r : {hugetlb_2m(verdict::fail, ENOMEM, false), hugetlb_2m(verdict::fail, EFAULT, true)}) {
		apply_known_bugs(r, v6_1, false);
		EXPECT_EQ(r.outcome, verdict::fail) << r.reason;
		EXPECT_FALSE(r.details.contains("known_bug"));
	}
	// The bug's signature on a kernel that does not carry it.
	auto r = hugetlb_2m(verdict::fail, ENOMEM, true);
	apply_known_bugs(r, v6_12, false);
	EXPECT_EQ(r.outcome, verdict::fail);
	// An error is never an expected failure.
	auto e = hugetlb_2m(verdict::error, ENOMEM, true);
	apply_known_bugs(e, v6_1, false);
	EXPECT_EQ(e.outcome, verdict::error);
}

TEST(KnownBugs, APassWhereTheBugShouldShowIsAnUnexpectedPass)
{
	auto r = hugetlb_2m(verdict::pass, 0, false);
	apply_known_bugs(r, v6_1, false);
	EXPECT_EQ(r.outcome, verdict::xpass);
	EXPECT_NE(r.reason.find("the known-bug table (matrix/known_bugs.cpp) is out of date, or this kernel carries "
				"the fix"),
		  std::string::npos) << r.reason;
	EXPECT_EQ(r.details.at("known_bug").at("id"), "hugetlb-longterm-warn");
	// A pass on a kernel outside the bug's range is a pass.
	auto p = hugetlb_2m(verdict::pass, 0, false);
	apply_known_bugs(p, v6_12, false);
	EXPECT_EQ(p.outcome, verdict::pass);
}

// A bug a race only may hit (1aaf8c122918) makes no XPASS of a pass, and
// its FAIL in range is expected.
TEST(KnownBugs, ABugThatMayNotShowMakesNoUnexpectedPass)
{
	case_record r;
	r.id = "race/reg-mr-same-buffer";
	r.name = "reg-mr-same-buffer";
	r.expected = {{"summary", "no pin in place"}};
	r.observed = json{{"summary", "16 pins ok"}, {"rounds_in_place", 0}};
	r.outcome = verdict::pass;
	const kernel_version in_range{6, 12, 20};
	apply_known_bugs(r, in_range, false);
	EXPECT_EQ(r.outcome, verdict::pass);
	(*r.observed)["rounds_in_place"] = 3;
	r.outcome = verdict::fail;
	apply_known_bugs(r, in_range, false);
	EXPECT_EQ(r.outcome, verdict::xfail) << r.reason;
	EXPECT_EQ(r.details.at("known_bug").at("fix").at("commit"), "517f496e1e61");
}

TEST(KnownBugs, StrictCountsBothAsFailuresAndStillNamesTheBug)
{
	auto x = hugetlb_2m(verdict::fail, ENOMEM, true);
	apply_known_bugs(x, v6_1, true);
	EXPECT_EQ(x.outcome, verdict::fail);
	EXPECT_EQ(x.reason.find("expected failure, counted (--strict): known bug hugetlb-longterm-warn"), 0u) << x.reason;
	auto p = hugetlb_2m(verdict::pass, 0, false);
	apply_known_bugs(p, v6_1, true);
	EXPECT_EQ(p.outcome, verdict::fail);
	EXPECT_EQ(p.reason.find("unexpected pass, counted (--strict): known bug hugetlb-longterm-warn"), 0u) << p.reason;
	EXPECT_EQ(p.details.at("known_bug").at("id"), "hugetlb-longterm-warn");
}

// What cannot be known changes nothing: no version, no expectation.
TEST(KnownBugs, AnUnknownKernelVersionLeavesTheVerdict)
{
	auto r = hugetlb_2m(verdict::fail, ENOMEM, true);
	apply_known_bugs(r, std::nullopt, false);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_FALSE(r.details.contains("known_bug"));
}

// The signature's pointers: "*" walks arrays and objects; a miss anywhere
// is no match.
TEST(KnownBugs, SignaturesWalkTheRecord)
{
	const json record = {{"observed",
			      {{"device", "rxe0"},
			       {"data_path", {{"transfers", json::array({{{"odp", {{"misplaced", false}}}},
									 {{"odp", {{"misplaced", true}}}}})}}}}}};
	using op = record_test::op;
	EXPECT_TRUE(shows({.all = {{"/observed/data_path/transfers/*/odp/misplaced", op::equals, true}}}, record));
	EXPECT_TRUE(shows({.all = {{"/observed/data_path/transfers/1/odp/misplaced", op::equals, true}}}, record));
	EXPECT_FALSE(shows({.all = {{"/observed/data_path/transfers/0/odp/misplaced", op::equals, true}}}, record));
	EXPECT_TRUE(shows({.all = {{"/observed/device", op::starts_with, "rxe"}}}, record));
	EXPECT_FALSE(shows({.all = {{"/observed/device", op::starts_with, "mlx5"}}}, record));
	EXPECT_FALSE(shows({.all = {{"/observed/nothing/*", op::nonzero}}}, record));
	EXPECT_FALSE(shows({.all = {{"/observed/device", op::starts_with, "rxe"}},
			    .any = {{"/observed/device_write/in_place/misplaced", op::equals, true}}},
			   record));
}

// Expected failures and unexpected passes pass the gate; --strict has made
// them failures before the summary.
TEST(KnownBugs, ARunWithOnlyExpectedFailuresExitsZero)
{
	const json cases = json::array({{{"verdict", "pass"}}, {{"verdict", "xfail"}}, {{"verdict", "skip"}}});
	const auto s = summarize_json(cases);
	EXPECT_EQ(s.xfail, 1);
	EXPECT_EQ(s.overall, verdict::xfail);
	EXPECT_EQ(exit_code(s), 0);
	EXPECT_EQ(summary_text(s), "pass 1, fail 0, xfail 1, xpass 0, skip 1, error 0");
	EXPECT_EQ(exit_code(summarize_json(json::array({{{"verdict", "xfail"}}, {{"verdict", "fail"}}}))), 1);
	EXPECT_EQ(exit_code(summarize_json(json::array({{{"verdict", "xpass"}}}))), 0);
}
