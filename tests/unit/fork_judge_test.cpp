// SPDX-License-Identifier: GPL-2.0
// cases/fork: the judge on hand-built observations. It passes what a
// correct kernel shows and fails, naming the check, a child's write that
// leaked into the parent, a device write the parent's CPU does not see, and
// a device write that reached the child.

#include <gtest/gtest.h>

#include "fork/fork_cases.hpp"

using namespace pinmatrix;
using namespace pinmatrix::fork_cases;
using nlohmann::json;

namespace {

const fork_case &case_by_id(const std::string &id) { return row_of(definition, id); }

// The suite's judge and not-run record, as the runner calls them.
case_record judge_case(const fork_case &c, const json &o) { return judge_row(definition, c, std::nullopt, o); }
case_record not_run_case(const fork_case &c, verdict v, const std::string &why)
{
	return record_of_row(definition, c, std::nullopt, v, why);
}

} // namespace

namespace {

json correct(const fork_case &c)
{
	return {{"errno", 0},
		{"child_ready", true},
		{"parent_view_after_child", "O"},
		{"device_cpu_agree", true},
		{"child_view_after_device_write", std::string(1, c.child_sees)},
		{"child_exit", 0}};
}

} // namespace

TEST(ForkJudge, PassesWhatACorrectKernelShows)
{
	for (const auto &c : case_table()) {
		const auto r = judge_case(c, correct(c));
		EXPECT_EQ(r.outcome, verdict::pass) << c.id() << ": " << r.reason;
		EXPECT_EQ(r.observed->at("checks").size(), 5u);
	}
}

TEST(ForkJudge, FailsEachBrokenPromiseByName)
{
	const auto &c = case_by_id("fork/child-writes-private");
	auto failed = [&](const char *key, const json &value, const std::string &check) {
		json o = correct(c);
		o[key] = value;
		const auto r = judge_case(c, o);
		EXPECT_EQ(r.outcome, verdict::fail) << key;
		EXPECT_NE(r.reason.find(check), std::string::npos) << r.reason;
	};
	failed("parent_view_after_child", "C", "the parent's view after the child ran");
	failed("device_cpu_agree", false, "device write read back by the parent's CPU");
	failed("child_view_after_device_write", "D", "the child's view after the device write");
	failed("errno", 12, "registration errno");
	failed("child_exit", 2, "child exit");
}

TEST(ForkJudge, ANotRunCaseSaysWhatItExpected)
{
	const auto r = not_run_case(case_table().front(), verdict::skip, "no RDMA device");
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_FALSE(r.observed.has_value());
	EXPECT_EQ(r.expected.at("child_sees"), "C");
	EXPECT_NE(r.expected.at("summary").get<std::string>().find("its own write"), std::string::npos);
}
