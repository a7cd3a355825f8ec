// SPDX-License-Identifier: GPL-2.0
// Known kernel bugs in every report: an expected failure (xfail) and an
// unexpected pass (xpass) counted apart, the bug named with its fix in a
// section of its own, the unexpected pass before anything else, and the
// bug's text escaped for each format (report_fixtures.hpp:
// run_with_known_bugs()).

#include <gtest/gtest.h>

#include "kcidb.hpp"
#include "report_fixtures.hpp"
#include "reports.hpp"
#include "terminal_table.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

TEST(ReportKnownBugs, SummaryMarkdownCountsThemAndNamesTheFix)
{
	const std::string md = format_summary_markdown(run_with_known_bugs());
	EXPECT_NE(md.find(" 1 xfail, 1 xpass, "), std::string::npos) << md;
	const size_t xpass = md.find("**Unexpected pass** of B");
	const size_t section = md.find("#### Known kernel bugs");
	ASSERT_NE(xpass, std::string::npos) << md;
	ASSERT_NE(section, std::string::npos) << md;
	EXPECT_LT(xpass, section);
	EXPECT_NE(md.find("fixed by 0123456789ab", section), std::string::npos) << md;
	EXPECT_EQ(md.find("<b>in place</b>"), std::string::npos) << "markup in a title is escaped:\n" << md;
}

TEST(ReportKnownBugs, HtmlShowsTheUnexpectedPassFirstAndTheBugSection)
{
	const std::string html = format_html(run_with_known_bugs());
	const size_t alarm = html.find("<div class=\"alarm v-xpass\"><b>Unexpected pass</b>");
	const size_t section = html.find("<b>Known kernel bugs</b>");
	ASSERT_NE(alarm, std::string::npos);
	ASSERT_NE(section, std::string::npos);
	EXPECT_LT(alarm, section);
	EXPECT_NE(html.find("1 xfail</span>"), std::string::npos);
	EXPECT_NE(html.find("pins &lt;b&gt;in place&lt;/b&gt; &amp;"), std::string::npos);
	EXPECT_EQ(html.find("<b>in place</b>"), std::string::npos);
}

TEST(ReportKnownBugs, JunitSkipsTheExpectedFailureAndSaysTheUnexpectedPass)
{
	const std::string xml = format_junit(run_with_known_bugs());
	EXPECT_NE(xml.find("<skipped message=\"expected failure, known bug test-bug of 6.1.192: ENOMEM\"/>"),
		  std::string::npos) << xml;
	EXPECT_NE(xml.find("<system-err>unexpected pass: known bug test-bug"), std::string::npos) << xml;
	EXPECT_EQ(xml.find("<failure"), std::string::npos) << "neither is a failure";
}

TEST(ReportKnownBugs, KcidbHasAnIssueAndAnIncidentPerCase)
{
	const auto k = format_kcidb(run_with_known_bugs(), "test_lab");
	ASSERT_EQ(k["issues"].size(), 1u);
	EXPECT_EQ(k["issues"][0]["id"], "test_lab:pinmatrix-known-bug-test-bug");
	EXPECT_EQ(k["issues"][0]["culprit"]["code"], true);
	ASSERT_EQ(k["incidents"].size(), 2u);
	EXPECT_EQ(k["incidents"][0]["present"], true);
	EXPECT_EQ(k["incidents"][1]["present"], false);
	for (const auto &t : k["tests"]) {
		if (t["misc"]["case"] == "A") {
			EXPECT_EQ(t["status"], "FAIL");
		}
		if (t["misc"]["case"] == "B") {
			EXPECT_EQ(t["status"], "PASS");
		}
	}
}

TEST(ReportKnownBugs, TheTerminalTableListsEachBugOnceWithItsCases)
{
	const auto doc = run_with_known_bugs();
	const std::string table = format_table(doc["cases"], 100, false);
	const size_t section = table.find("known kernel bugs:\n");
	ASSERT_NE(section, std::string::npos) << table;
	EXPECT_NE(table.find("  test-bug: ", section), std::string::npos) << table;
	EXPECT_NE(table.find("expected failure A; UNEXPECTED PASS B;", section), std::string::npos) << table;
	EXPECT_EQ(table.find("test-bug: ", table.find("test-bug: ", section) + 1), std::string::npos) << "once";
}
