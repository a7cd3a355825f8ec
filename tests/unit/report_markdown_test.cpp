// SPDX-License-Identifier: GPL-2.0
// summary.md, for a CI comment: the counts, each failing case with its
// reason, a table whose rows stay rows whatever a reason contains.

#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "reports.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

TEST(ReportMarkdown, CountsFailuresAndOneTableRowPerCase)
{
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		const std::string md = format_summary_markdown(run.doc);
		const std::string counts = "**" + std::to_string(count_verdict(run.doc, "fail")) + " fail, " +
					   std::to_string(count_verdict(run.doc, "error")) + " error, " +
					   std::to_string(count_verdict(run.doc, "pass")) + " pass, " +
					   std::to_string(count_verdict(run.doc, "skip")) + " skip**";
		EXPECT_NE(md.find(counts), std::string::npos) << md;

		// Table rows: one per case, or per case id across kernels; every
		// row with the header's number of cells.
		std::istringstream lines(md);
		size_t rows = 0, header_cells = 0;
		for (std::string line; std::getline(lines, line) && line != "Slowest cases:";) {
			if (line.rfind("| ", 0) != 0)
				continue;
			size_t cells = 0;
			for (size_t i = 1; i < line.size(); i++)
				cells += line[i] == '|' && line[i - 1] != '\\';
			if (!header_cells)
				header_cells = cells;
			else
				rows++;
			EXPECT_EQ(cells, header_cells) << line;
		}
		std::set<std::string> ids;
		for (const auto &c : run.doc["cases"])
			ids.insert(c["id"].get<std::string>());
		EXPECT_EQ(rows, run.doc.contains("groups") ? ids.size() : run.doc["cases"].size()) << md;
	}
}

TEST(ReportMarkdown, FailingCasesWithTheirReasons)
{
	json doc = run_with_failures();
	const std::string md = format_summary_markdown(doc);
	EXPECT_NE(md.find("**B (movable-foll-pin)** FAIL: registration returned ok, expected ENOMEM"),
		  std::string::npos)
		<< md;
	EXPECT_NE(md.find("**D (ordinary-foll-pin)** ERROR: no result from the guest"), std::string::npos) << md;
	EXPECT_NE(md.find("movable-mlock): no page found"), std::string::npos) << md;
	// A reason cannot open HTML or a table cell.
	EXPECT_EQ(md.find("<page>"), std::string::npos) << md;
	EXPECT_NE(md.find("&lt;page&gt;"), std::string::npos) << md;
	EXPECT_NE(md.find("\\| 'anyway'"), std::string::npos) << md;
}

// Where the run's time went: the slowest cases, each with its longest steps
// first (observed.time_ms), a step's name unable to open a cell.
TEST(ReportMarkdown, TheSlowestCasesNameTheirLongestSteps)
{
	json doc = run_with_failures();
	int64_t ns = 1000000;
	for (auto &c : doc["cases"]) {
		c["duration_ns"] = ns;
		ns += 1000000;
	}
	json &slowest = doc["cases"].back();
	slowest["duration_ns"] = 4000000000LL;
	slowest["observed"]["time_ms"] = json::array({{{"step", "find the page"}, {"ms", 120.0}},
						       {{"step", "give-back | pins held"}, {"ms", 3500.4}},
						       {{"step", "registration"}, {"ms", 7.2}},
						       {{"step", "release"}, {"ms", 1.0}}});
	const std::string md = format_summary_markdown(doc);
	const auto at = md.find("\nSlowest cases:\n");
	ASSERT_NE(at, std::string::npos) << md;
	const std::string table = md.substr(at);
	const auto row = table.find("| 4.00 s | give-back \\| pins held 3.50 s, find the page 120 ms, registration 7.20 ms |");
	EXPECT_NE(row, std::string::npos) << table;
	EXPECT_EQ(table.find("release 1.00 ms"), std::string::npos) << "three steps at most:\n" << table;
	size_t rows = 0;
	std::istringstream lines(table);
	for (std::string line; std::getline(lines, line);)
		rows += line.rfind("| ", 0) == 0;
	EXPECT_EQ(rows, 1 + std::min<size_t>(5, doc["cases"].size())) << table;
}

// Where the run's time went besides its cases: its steps, the longest
// first, the cases' own left out.
TEST(ReportMarkdown, TheRunsOwnStepsFollow)
{
	json doc = run_with_failures();
	doc["time_ms"] = json::array({{{"step", "the start: module, preflight"}, {"ms", 420.0}},
				      {{"step", "cases"}, {"ms", 9000.0}},
				      {{"step", "results.json after each case"}, {"ms", 1500.0}}});
	const std::string md = format_summary_markdown(doc);
	EXPECT_NE(md.find("\nThe run besides its cases: results.json after each case 1.50 s, the start: module, "
			  "preflight 420 ms\n"),
		  std::string::npos)
		<< md;
	EXPECT_EQ(md.find("cases 9.00 s"), std::string::npos) << md;
}
