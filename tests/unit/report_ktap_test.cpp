// SPDX-License-Identifier: GPL-2.0
// results.ktap read by a real TAP parser (Perl's TAP::Parser, which prove
// uses): the plan up front and matching, exactly one result per case in
// plan order, SKIP with the reason, fail and error as "not ok".

#include <sstream>

#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "report_input.hpp"
#include "reports.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

// Prints what TAP::Parser makes of a file, one line per fact.
const char *const tap_parser_script = R"perl(
use strict; use warnings;
use TAP::Parser;
open(my $fh, '<', $ARGV[0]) or die "open $ARGV[0]: $!";
my $text = do { local $/; <$fh> };
my $p = TAP::Parser->new({ tap => $text });
my $first = 1;
while (my $r = $p->next) {
  print "first_line\t", $r->type, "\n" if $first; $first = 0;
  if ($r->is_plan) { print "plan\t", $r->plan, "\n"; }
  elsif ($r->is_test) {
    print join("\t", "test", $r->number, ($r->is_actual_ok ? "ok" : "not ok"),
               $r->directive, $r->explanation, $r->description), "\n";
  }
}
print "version\t", $p->version, "\n";
print "summary\t", join("\t", $p->tests_run, $p->tests_planned, scalar($p->parse_errors),
                        ($p->is_good_plan ? 1 : 0)), "\n";
print "parse_error\t$_\n" for $p->parse_errors;
)perl";

struct tap_test {
	int number;
	bool ok;
	std::string directive, explanation, description;
};

struct tap_parse {
	std::string first_line, plan, version;
	int tests_run = -1, planned = -1, parse_errors = -1, good_plan = -1;
	std::vector<tap_test> tests;
	std::string raw;
};

std::vector<std::string> split_tabs(const std::string &line)
{
	std::vector<std::string> out;
	std::string field;
	std::istringstream in(line);
	while (std::getline(in, field, '\t'))
		out.push_back(field);
	if (!line.empty() && line.back() == '\t')
		out.push_back("");
	return out;
}

tap_parse parse_with_perl(const temp_dir &dir, const fs::path &ktap)
{
	write_file(dir / "tap_parser.pl", tap_parser_script);
	tap_parse p;
	auto r = shell("perl " + shell_quoted(dir / "tap_parser.pl") + " " + shell_quoted(ktap));
	p.raw = r.output;
	std::istringstream lines(r.output);
	for (std::string line; std::getline(lines, line);) {
		auto f = split_tabs(line);
		if (f.empty())
			continue;
		if (f[0] == "first_line" && f.size() > 1)
			p.first_line = f[1];
		else if (f[0] == "plan" && f.size() > 1)
			p.plan = f[1];
		else if (f[0] == "version" && f.size() > 1)
			p.version = f[1];
		else if (f[0] == "summary" && f.size() > 4) {
			p.tests_run = std::stoi(f[1]);
			p.planned = std::stoi(f[2]);
			p.parse_errors = std::stoi(f[3]);
			p.good_plan = std::stoi(f[4]);
		} else if (f[0] == "test" && f.size() > 5) {
			p.tests.push_back({std::stoi(f[1]), f[2] == "ok", f[3], f[4], f[5]});
		}
	}
	return p;
}

bool have_tap_parser()
{
	return shell("perl -MTAP::Parser -e 1").exit_code == 0;
}

} // namespace

TEST(ReportKtap, EveryRunParsesWithOneResultPerCaseInPlanOrder)
{
	if (!have_tap_parser())
		GTEST_SKIP() << "perl's TAP::Parser is missing (Debian package perl)";
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const auto tap = parse_with_perl(dir, dir / "results.ktap");
		const auto &cases = run.doc["cases"];

		EXPECT_EQ(tap.first_line, "version") << tap.raw;
		EXPECT_EQ(tap.version, "13");
		EXPECT_EQ(tap.plan, "1.." + std::to_string(cases.size()));
		EXPECT_EQ(tap.planned, int(cases.size()));
		EXPECT_EQ(tap.tests_run, int(cases.size()));
		EXPECT_EQ(tap.parse_errors, 0) << tap.raw;
		EXPECT_EQ(tap.good_plan, 1);
		ASSERT_EQ(tap.tests.size(), cases.size()) << tap.raw;
		for (size_t i = 0; i < cases.size(); i++) {
			const auto &c = cases[i];
			const auto &t = tap.tests[i];
			const std::string verdict = c["verdict"];
			SCOPED_TRACE(c["id"].get<std::string>() + " " + verdict);
			EXPECT_EQ(t.number, int(i + 1));
			EXPECT_EQ(t.description.rfind(c["id"].get<std::string>(), 0), 0u) << t.description;
			EXPECT_EQ(t.ok, verdict == "pass" || verdict == "skip");
			if (verdict == "skip") {
				EXPECT_EQ(t.directive, "SKIP");
				EXPECT_EQ(t.explanation, report::one_line(c["reason"].get<std::string>()));
			} else {
				EXPECT_EQ(t.directive, "");
			}
			// KTAP's ERROR directive (TAP sees it in the description).
			if (verdict == "error") {
				EXPECT_NE(t.description.find("# ERROR " + report::one_line(c["reason"].get<std::string>())),
					  std::string::npos);
			}
		}
	}
}

TEST(ReportKtap, ProveAcceptsPassingAndSkippedRunsAndRejectsFailingOnes)
{
	if (!have_command("prove") || !have_tap_parser())
		GTEST_SKIP() << "prove is missing (Debian package perl)";
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const bool bad = count_verdict(run.doc, "fail") + count_verdict(run.doc, "error") > 0;
		auto r = shell("prove --exec cat " + shell_quoted(dir / "results.ktap"));
		EXPECT_EQ(r.exit_code != 0, bad) << r.output;
		EXPECT_NE(r.output.find("Tests=" + std::to_string(run.doc["cases"].size())), std::string::npos)
			<< r.output;
	}
}

TEST(ReportKtap, ExactlyOneResultLinePerCaseAndKselftestTotals)
{
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		const std::string ktap = format_ktap(run.doc);
		std::istringstream lines(ktap);
		size_t results = 0;
		std::string last;
		for (std::string line; std::getline(lines, line);) {
			results += line.rfind("ok ", 0) == 0 || line.rfind("not ok ", 0) == 0;
			// Nothing but version, plan, results and diagnostics.
			EXPECT_TRUE(line.rfind("ok ", 0) == 0 || line.rfind("not ok ", 0) == 0 ||
				    line.rfind("# ", 0) == 0 || line == "#" || line == "TAP version 13" ||
				    line.rfind("1..", 0) == 0)
				<< line;
			for (char ch : line)
				EXPECT_TRUE(static_cast<unsigned char>(ch) >= 0x20) << "control character in: " << line;
			last = line;
		}
		EXPECT_EQ(results, run.doc["cases"].size());
		EXPECT_EQ(last, "# Totals: pass:" + std::to_string(count_verdict(run.doc, "pass")) +
					" fail:" + std::to_string(count_verdict(run.doc, "fail")) +
					" xfail:0 xpass:0 skip:" + std::to_string(count_verdict(run.doc, "skip")) +
					" error:" + std::to_string(count_verdict(run.doc, "error")));
	}
}

TEST(ReportKtap, FailuresCarryTheReasonAndErrorsTheSerialLogOnce)
{
	json doc = run_with_failures();
	const std::string ktap = format_ktap(doc);
	const std::string reason = record(doc, "B")["reason"];
	EXPECT_NE(ktap.find("# B: " + reason.substr(0, 30)), std::string::npos) << ktap;
	const std::string panic_line = "Kernel panic - not syncing";
	const size_t first = ktap.find(panic_line);
	ASSERT_NE(first, std::string::npos) << ktap;
	EXPECT_EQ(ktap.find(panic_line, first + 1), std::string::npos) << "the guest's log twice";
}
