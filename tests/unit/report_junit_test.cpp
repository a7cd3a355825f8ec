// SPDX-License-Identifier: GPL-2.0
// junit.xml checked by xmllint against the JUnit schema Jenkins and GitLab
// read (tests/data/junit.xsd), its counts read back with XPath, and text
// that would break XML (markup characters, a serial log's control
// characters) escaped so that it reads back as written.

#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "report_input.hpp"
#include "reports.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

const fs::path schema = fs::path(PINMATRIX_TEST_DATA) / "junit.xsd";

std::string xpath(const fs::path &xml, const std::string &expr)
{
	std::string out = shell("xmllint --xpath " + shell_quoted(expr) + " " + shell_quoted(xml), false).output;
	if (!out.empty() && out.back() == '\n')
		out.pop_back();	// xmllint ends what it prints with a newline
	return out;
}

} // namespace

TEST(ReportJunit, ValidatesAgainstTheJunitSchemaWithCountsFromTheRun)
{
	if (!have_command("xmllint"))
		GTEST_SKIP() << "xmllint is missing (Debian package libxml2-utils; tools/setup-host)";
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const fs::path xml = dir / "junit.xml";
		auto valid = shell("xmllint --noout --schema " + shell_quoted(schema) + " " + shell_quoted(xml));
		EXPECT_EQ(valid.exit_code, 0) << valid.output;

		const auto cases = std::to_string(run.doc["cases"].size());
		EXPECT_EQ(xpath(xml, "count(//testcase)"), cases);
		EXPECT_EQ(xpath(xml, "string(/testsuites/@tests)"), cases);
		for (const auto &[element, verdict] : {std::pair{"failure", "fail"}, std::pair{"error", "error"},
						       std::pair{"skipped", "skip"}}) {
			const auto n = std::to_string(count_verdict(run.doc, verdict));
			EXPECT_EQ(xpath(xml, std::string("count(//testcase/") + element + ")"), n) << element;
			const std::string attribute = std::string(element) == "failure" ? "failures"
						      : std::string(element) == "error" ? "errors"
											: "skipped";
			EXPECT_EQ(xpath(xml, "string(/testsuites/@" + attribute + ")"), n) << attribute;
			EXPECT_EQ(xpath(xml, "sum(//testsuite/@" + attribute + ")"), n) << attribute;
		}
	}
}

TEST(ReportJunit, PropertiesNameTheKernelAndCommandLine)
{
	if (!have_command("xmllint"))
		GTEST_SKIP() << "xmllint is missing (Debian package libxml2-utils)";
	const json doc = sample_run();
	temp_dir dir;
	write_reports(dir.path(), doc);
	const fs::path xml = dir / "junit.xml";
	EXPECT_EQ(xpath(xml, "string(//testsuite[1]/properties/property[@name='kernel.release']/@value)"),
		  doc["kernel"]["release"].get<std::string>());
	EXPECT_EQ(xpath(xml, "string(//testsuite[1]/properties/property[@name='kernel.cmdline']/@value)"),
		  doc["kernel"]["cmdline"].get<std::string>());

	// A merged run: one suite per kernel, each with its release.
	const json merged = run_of_several_kernels();
	write_reports(dir.path(), merged);
	EXPECT_EQ(xpath(xml, "count(//testsuite)"), std::to_string(merged["groups"].size()));
	for (const auto &g : merged["groups"])
		EXPECT_NE(xpath(xml, "count(//property[@name='kernel.release'][@value='" +
					     g["kernel"]["release"].get<std::string>() + "'])"),
			  "0");
}

TEST(ReportJunit, MarkupAndControlCharactersReadBackAsText)
{
	if (!have_command("xmllint"))
		GTEST_SKIP() << "xmllint is missing (Debian package libxml2-utils)";
	json doc = run_with_failures();
	temp_dir dir;
	write_reports(dir.path(), doc);
	const fs::path xml = dir / "junit.xml";
	auto valid = shell("xmllint --noout --schema " + shell_quoted(schema) + " " + shell_quoted(xml));
	ASSERT_EQ(valid.exit_code, 0) << valid.output;
	// The message is the reason on one line, without the control character.
	const std::string reason = record(doc, "B")["reason"];
	EXPECT_EQ(xpath(xml, "string(//testcase[starts-with(@name,'B ')]/failure/@message)"), report::one_line(reason));
	// The error carries the guest's serial log, its escape sequence replaced.
	const std::string error = xpath(xml, "string(//testcase[starts-with(@name,'D ')]/error)");
	EXPECT_NE(error.find("Kernel panic - not syncing"), std::string::npos) << error;
	EXPECT_EQ(error.find('\x1b'), std::string::npos);
}
