// SPDX-License-Identifier: GPL-2.0
// `pinmatrix report --mutants`: each kernel mutant x (kernel, boot) -> the
// cases that caught it, from a merged run of the mutant kernels; exit 1
// for a mutant not caught somewhere, a failure on the kernel as it was, or
// a (kernel, boot, mutant) that decided nothing.

#include <algorithm>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "mutants_report.hpp"
#include "promises.hpp"

using namespace pinmatrix;
using nlohmann::json;

namespace {

// A case record as a merged run of matrix/mutants.toml labels it.
json record(const std::string &id, const std::string &verdict, const std::string &kernel,
	    const std::string &boot, int mutant)
{
	return {{"id", id},
		{"name", id},
		{"suite", "pin"},
		{"verdict", verdict},
		{"kernel", {{"name", kernel}, {"release", "6.1.192"}}},
		{"boot",
		 {{"placement", boot},
		  {"append", "movablecore=512M " + std::string(mutant_boot_parameter) + "=" + std::to_string(mutant)}}}};
}

std::vector<int> kernel_mutants()
{
	std::vector<int> out = {0};
	for (const auto &m : mutant_table())
		if (m.kind == mutant_kind::kernel_patch && m.boot_value)
			out.push_back(m.boot_value);
	return out;
}

// Every mutant caught by B on both boots; the kernel as it was clean.
json caught_everywhere()
{
	json doc = {{"schema", "pinmatrix/1"}, {"cases", json::array()}};
	for (const char *boot : {"movable", "cma"})
		for (int n : kernel_mutants()) {
			doc["cases"].push_back(record("A", "pass", "mutants-6.1", boot, n));
			doc["cases"].push_back(record("B", n ? "fail" : "pass", "mutants-6.1", boot, n));
		}
	return doc;
}

int table(const json &doc, std::string &text)
{
	std::ostringstream out;
	const int rc = print_mutants_table(doc, out);
	text = out.str();
	return rc;
}

void set_verdict(json &doc, const std::string &id, const std::string &boot, int mutant, const std::string &v)
{
	for (auto &c : doc["cases"])
		if (c["id"] == id && c["boot"]["placement"] == boot &&
		    c["boot"]["append"].get<std::string>().ends_with("=" + std::to_string(mutant)))
			c["verdict"] = v;
}

} // namespace

TEST(ReportMutants, EveryMutantCaughtAndTheKernelAsItWasCleanIsExit0)
{
	std::string text;
	EXPECT_EQ(table(caught_everywhere(), text), 0) << text;
	EXPECT_NE(text.find("every mutant caught everywhere it ran"), std::string::npos) << text;
	EXPECT_NE(text.find("mutants-6.1 cma: caught by B"), std::string::npos) << text;
	EXPECT_NE(text.find("mutants-6.1 movable: clean (2 passed)"), std::string::npos) << text;
}

TEST(ReportMutants, AMutantNotCaughtOnOneBootIsAFinding)
{
	json doc = caught_everywhere();
	set_verdict(doc, "B", "cma", 2, "pass");
	std::string text;
	EXPECT_EQ(table(doc, text), 1) << text;
	EXPECT_NE(text.find("mutants-6.1 cma: NOT CAUGHT (2 passed)"), std::string::npos) << text;
	EXPECT_NE(text.find("findings: no-lru-drain"), std::string::npos) << text;
}

TEST(ReportMutants, AFailureOnTheKernelAsItWasIsAFinding)
{
	json doc = caught_everywhere();
	set_verdict(doc, "A", "movable", 0, "fail");
	std::string text;
	EXPECT_EQ(table(doc, text), 1) << text;
	EXPECT_NE(text.find("FAILED on the kernel as it was: A"), std::string::npos) << text;
}

TEST(ReportMutants, ARunThatSkippedEverythingDecidedNothing)
{
	json doc = caught_everywhere();
	set_verdict(doc, "A", "cma", 5, "skip");
	set_verdict(doc, "B", "cma", 5, "skip");
	std::string text;
	EXPECT_EQ(table(doc, text), 1) << text;
	EXPECT_NE(text.find("DECIDED NOTHING (2 skipped)"), std::string::npos) << text;
}

TEST(ReportMutants, NamesFromTheFileReachTheTerminalWithoutControlCharacters)
{
	json doc = caught_everywhere();
	for (auto &c : doc["cases"])
		c["kernel"]["name"] = "mut\x1b]0;pwned\x07\nants";
	std::string text;
	table(doc, text);
	EXPECT_EQ(text.find('\x1b'), std::string::npos);
	EXPECT_EQ(text.find('\x07'), std::string::npos);
	EXPECT_EQ(text.find("\nants"), std::string::npos) << text;
}

// An ERROR decided nothing: a mutant that only ERRORs is not caught, and
// an ERROR on the kernel as it was is a finding (it is not clean).
TEST(ReportMutants, AnErrorCatchesNothing)
{
	json doc = caught_everywhere();
	set_verdict(doc, "B", "cma", 2, "error");
	std::string text;
	EXPECT_EQ(table(doc, text), 1) << text;
	EXPECT_NE(text.find("mutants-6.1 cma: NOT CAUGHT (1 passed; ERROR, which decides nothing: B)"),
		  std::string::npos)
		<< text;
	doc = caught_everywhere();
	set_verdict(doc, "A", "movable", 0, "error");
	EXPECT_EQ(table(doc, text), 1) << text;
	EXPECT_NE(text.find("mutants-6.1 movable: NOT CLEAN (1 passed; ERROR, which decides nothing: A)"), std::string::npos)
		<< text;
	EXPECT_NE(text.find("findings: the kernel as it was"), std::string::npos) << text;
	// Beside a FAIL that caught it, an ERROR is said, and the mutant is caught.
	doc = caught_everywhere();
	set_verdict(doc, "A", "cma", 2, "error");
	EXPECT_EQ(table(doc, text), 0) << text;
	EXPECT_NE(text.find("caught by B; ERROR, which decides nothing: A"), std::string::npos) << text;
}

TEST(ReportMutants, ARunWithNoCaseIsNothingRan)
{
	std::string text;
	EXPECT_EQ(table(json{{"schema", "pinmatrix/1"}, {"cases", json::array()}}, text), 1);
	EXPECT_NE(text.find("nothing ran"), std::string::npos);
}

TEST(ReportMutants, CommandRefusesWhatItDoesNotTakeInOneLine)
{
	for (const char *args : {"report --mutants", "report --mutants /nonexistent-pm-dir",
				 "report --mutants . --format md", "report --mutants . --kcidb"}) {
		const auto r = test::run_pinmatrix(args);
		EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
		EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
	}
}
