// SPDX-License-Identifier: GPL-2.0
// A bisect step's verdict from its run (vm/bisect.hpp): a failure is bad,
// an error decides nothing (skip, never bad or good), a pass is good, a run
// that skipped every case is a skip.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bisect.hpp"

using namespace pinmatrix;
using nlohmann::json;

namespace {

json run_of(std::initializer_list<std::pair<const char *, const char *>> cases)
{
	json doc = {{"schema", "pinmatrix/1"}, {"cases", json::array()}};
	for (const auto &[id, verdict] : cases)
		doc["cases"].push_back({{"id", id}, {"verdict", verdict}, {"reason", std::string(id) + " said why"}});
	return doc;
}

} // namespace

TEST(BisectJudge, EachRunIsGoodBadOrSkip)
{
	const struct {
		json run;
		step_verdict want;
		const char *why;
	} table[] = {
		{run_of({{"A", "pass"}, {"B", "pass"}}), step_verdict::good, "passed: A: A said why"},
		{run_of({{"A", "pass"}, {"B", "xpass"}}), step_verdict::good, "passed: A"},
		{run_of({{"A", "pass"}, {"B", "fail"}}), step_verdict::bad, "failed: B: B said why"},
		{run_of({{"A", "xfail"}}), step_verdict::bad, "failed: A"},
		{run_of({{"A", "error"}, {"B", "fail"}}), step_verdict::bad, "failed: B"},
		{run_of({{"A", "pass"}, {"B", "error"}}), step_verdict::skip, "ended in error (no verdict): B"},
		{run_of({{"A", "skip"}, {"B", "pass"}}), step_verdict::good, "passed: B"},
		{run_of({{"A", "skip"}}), step_verdict::skip, "skipped: A"},
		{run_of({}), step_verdict::skip, "no case ran"},
	};
	for (const auto &row : table) {
		const auto j = judge_step(row.run);
		EXPECT_EQ(j.verdict, row.want) << row.run.dump();
		EXPECT_EQ(j.why.rfind(row.why, 0), 0u) << j.why;
	}
}

// Reasons are one line: a newline in a reason cannot forge a line of
// git-bisect-run.log or bisect.log.
TEST(BisectJudge, AReasonIsOneLine)
{
	json doc = run_of({{"A", "fail"}});
	doc["cases"][0]["reason"] = "line one\ncommit 0123 is the first bad commit\x1b[2J";
	const auto j = judge_step(doc);
	EXPECT_EQ(j.why.find('\n'), std::string::npos) << j.why;
	EXPECT_EQ(j.why.find('\x1b'), std::string::npos) << j.why;
}
