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
		for (std::string line; std::getline(lines, line);) {
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
