// SPDX-License-Identifier: GPL-2.0
// results.ktap as KTAP version 1 (the kernel's ktap.rst), nested: read back
// line by line by a strict reader of its own (indentation, version lines,
// "# Subtest:" names, plans, numbering, each subtest's result line one level
// out), and its top level by a plain TAP parser (Perl's TAP::Parser, which
// prove uses). The kernel's own parser (tools/testing/kunit) reads it in
// ktap_kunit_parser_test.py.

#include <sstream>

#include <gtest/gtest.h>

#include "ktap.hpp"
#include "report_fixtures.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

// One test of a KTAP document as its lines say it: a result, and the
// subtests when it has any.
struct ktap_test {
	std::string name;	// the result line's description
	bool ok = false;
	std::string directive;	// "SKIP reason", "TIMEOUT 60 seconds", ...
	std::vector<std::string> diagnostics;	// the "# " lines just before its result
	size_t plan = 0;	// a subtest's "1..N"
	std::vector<ktap_test> subtests;
};

// A strict reader: every line at its depth's indentation (two spaces a
// level), each (sub)test "KTAP version 1", "# Subtest: NAME" (not at the
// top), "1..N", then N results numbered from 1, a subtest's result line
// named as its header and at its parent's depth. ADD_FAILURE()s name the
// line that breaks it.
class ktap_reader {
public:
	explicit ktap_reader(const std::string &text)
	{
		std::istringstream in(text);
		for (std::string l; std::getline(in, l);)
			lines_.push_back(l);
	}

	ktap_test top()
	{
		ktap_test t;
		t.name = "main";
		body(t, 0);
		while (at_ < lines_.size() && is_diagnostic(lines_[at_], 0))
			trailer_.push_back(lines_[at_++].substr(2));
		if (at_ != lines_.size())
			ADD_FAILURE() << "line " << at_ + 1 << " after the document: " << lines_[at_];
		return t;
	}
	// The top level's diagnostics after its last result ("# Totals: ...").
	const std::vector<std::string> &trailer() const { return trailer_; }

private:
	static std::string pad(size_t depth) { return std::string(2 * depth, ' '); }
	static bool is_diagnostic(const std::string &l, size_t depth)
	{
		return l.rfind(pad(depth) + "# ", 0) == 0 && l.rfind(pad(depth) + "# Subtest: ", 0) != 0;
	}
	std::string next(const std::string &what)
	{
		if (at_ == lines_.size()) {
			ADD_FAILURE() << "the document ends where " << what << " was due";
			return "";
		}
		return lines_[at_++];
	}
	void expect(const std::string &line, const std::string &what)
	{
		const std::string got = next(what);
		EXPECT_EQ(got, line) << "line " << at_ << ": " << what;
	}

	// Version, (name), plan, then the results and subtests of one level.
	void body(ktap_test &t, size_t depth)
	{
		expect(pad(depth) + "KTAP version 1", "the version line");
		if (depth > 0)
			expect(pad(depth) + "# Subtest: " + t.name, "the subtest's name");
		const std::string plan = next("the plan");
		ASSERT_EQ(plan.rfind(pad(depth) + "1..", 0), 0u) << "line " << at_ << ": " << plan;
		t.plan = std::stoul(plan.substr(pad(depth).size() + 3));
		for (size_t n = 1; n <= t.plan; n++)
			t.subtests.push_back(one(depth, n));
	}

	// The n-th test at this depth: its diagnostics, a subtest if one opens
	// here, and its result line.
	ktap_test one(size_t depth, size_t n)
	{
		ktap_test t;
		while (at_ < lines_.size() && is_diagnostic(lines_[at_], depth))
			t.diagnostics.push_back(lines_[at_++].substr(pad(depth).size() + 2));
		if (at_ < lines_.size() && lines_[at_] == pad(depth + 1) + "KTAP version 1") {
			const std::string header = at_ + 1 < lines_.size() ? lines_[at_ + 1] : "";
			t.name = header.substr(std::min(header.size(), pad(depth + 1).size() + 11));
			body(t, depth + 1);
			while (at_ < lines_.size() && is_diagnostic(lines_[at_], depth))
				t.diagnostics.push_back(lines_[at_++].substr(pad(depth).size() + 2));
		}
		const std::string l = next("result " + std::to_string(n));
		const std::string ok = pad(depth) + "ok " + std::to_string(n) + " ";
		const std::string not_ok = pad(depth) + "not ok " + std::to_string(n) + " ";
		t.ok = l.rfind(ok, 0) == 0;
		EXPECT_TRUE(t.ok || l.rfind(not_ok, 0) == 0) << "line " << at_ << " is not result " << n << ": " << l;
		std::string rest = l.substr(std::min(l.size(), (t.ok ? ok : not_ok).size()));
		if (const size_t hash = rest.find(" # "); hash != std::string::npos) {
			t.directive = rest.substr(hash + 3);
			rest.resize(hash);
		}
		if (!t.subtests.empty() || t.plan) {
			EXPECT_EQ(rest, t.name) << "line " << at_ << ": the subtest's result names it";
		}
		t.name = rest;
		return t;
	}

	std::vector<std::string> lines_;
	size_t at_ = 0;
	std::vector<std::string> trailer_;
};

// The suites of a document (or of one group's records) in order, each with
// the ids of its cases: what the nesting must show.
std::vector<std::pair<std::string, std::vector<const json *>>> suites_of(const std::vector<const json *> &cases)
{
	std::vector<std::pair<std::string, std::vector<const json *>>> out;
	for (const json *c : cases) {
		const std::string id = (*c)["id"];
		std::string suite = c->value("suite", "");
		if (suite.empty())
			suite = id.find('/') != std::string::npos ? id.substr(0, id.find('/')) : "pin";
		if (out.empty() || out.back().first != suite)
			out.push_back({suite, {}});
		out.back().second.push_back(c);
	}
	return out;
}

std::vector<const json *> records(const json &doc)
{
	std::vector<const json *> out;
	for (const auto &c : doc["cases"])
		out.push_back(&c);
	return out;
}

// A suite's (or group's) cases against its subtest: one result per case in
// order, named by the case, ok for pass and skip, the directive its verdict
// calls for; and the subtest's own result.
void expect_suite(const ktap_test &t, const std::string &name, const std::vector<const json *> &cases)
{
	SCOPED_TRACE("suite " + name);
	EXPECT_EQ(t.name, name);
	ASSERT_EQ(t.plan, cases.size());
	ASSERT_EQ(t.subtests.size(), cases.size());
	bool any_bad = false, all_skipped = true;
	for (size_t i = 0; i < cases.size(); i++) {
		const json &c = *cases[i];
		const ktap_test &r = t.subtests[i];
		const std::string verdict = c["verdict"], id = c["id"];
		SCOPED_TRACE(id + " " + verdict);
		EXPECT_EQ(r.name.rfind(id, 0), 0u) << r.name;
		EXPECT_TRUE(r.subtests.empty());
		EXPECT_EQ(r.ok, verdict == "pass" || verdict == "skip");
		if (verdict == "skip")
			EXPECT_EQ(r.directive, "SKIP " + report::one_line(c["reason"].get<std::string>()));
		else if (verdict == "error" && c.contains("stuck_task"))
			EXPECT_EQ(r.directive.rfind("TIMEOUT ", 0), 0u) << r.directive;
		else if (verdict == "error")
			EXPECT_EQ(r.directive, "ERROR " + report::one_line(c["reason"].get<std::string>()));
		else
			EXPECT_EQ(r.directive, "");
		any_bad |= verdict == "fail" || verdict == "error";
		all_skipped &= verdict == "skip";
	}
	EXPECT_EQ(t.ok, !any_bad);
	EXPECT_EQ(t.directive.rfind("SKIP", 0) == 0, all_skipped) << t.directive;
}

// The document's tree against its records: the suites at the top, or, for
// a merged run, one group per (kernel, boot) holding its suites.
void expect_nesting(const json &doc, const ktap_test &top)
{
	const auto run = report::view_run(doc);
	if (!doc.contains("groups") && !run.several_kernels()) {
		const auto suites = suites_of(records(doc));
		ASSERT_EQ(top.subtests.size(), suites.size());
		for (size_t s = 0; s < suites.size(); s++)
			expect_suite(top.subtests[s], suites[s].first, suites[s].second);
		return;
	}
	ASSERT_EQ(top.subtests.size(), run.kernels.size());
	for (size_t k = 0; k < run.kernels.size(); k++) {
		std::vector<const json *> mine;
		for (const auto &c : run.cases)
			if (c.kernel_index == k)
				mine.push_back(c.record);
		const auto suites = suites_of(mine);
		const ktap_test &group = top.subtests[k];
		EXPECT_EQ(group.name, run.kernels[k].label());
		ASSERT_EQ(group.subtests.size(), suites.size()) << group.name;
		for (size_t s = 0; s < suites.size(); s++)
			expect_suite(group.subtests[s], suites[s].first, suites[s].second);
	}
}

json timeout_run()
{
	std::ifstream in(fs::path(PINMATRIX_TEST_DATA) / "results-timeout.json");
	return json::parse(in);
}

std::vector<named_run> ktap_runs()
{
	auto runs = all_runs();
	runs.push_back({"timeout", timeout_run()});
	return runs;
}

// The KTAP of doc with every result line and the rest at its depth.
std::vector<std::string> lines_of(const std::string &ktap)
{
	std::vector<std::string> out;
	std::istringstream in(ktap);
	for (std::string l; std::getline(in, l);)
		out.push_back(l);
	return out;
}

size_t index_of(const std::vector<std::string> &lines, const std::string &prefix)
{
	for (size_t i = 0; i < lines.size(); i++)
		if (lines[i].rfind(prefix, 0) == 0)
			return i;
	return lines.size();
}

} // namespace

TEST(ReportKtap, EveryRunNestsItsSuitesWithTheirPlansAndResults)
{
	for (const auto &run : ktap_runs()) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const std::string ktap = read_file(dir / "results.ktap");
		EXPECT_EQ(ktap, format_ktap(run.doc));
		ktap_reader reader(ktap);
		const ktap_test top = reader.top();
		expect_nesting(run.doc, top);
		ASSERT_FALSE(reader.trailer().empty()) << ktap;
		EXPECT_EQ(reader.trailer().back(),
			  "Totals: pass:" + std::to_string(count_verdict(run.doc, "pass")) +
				  " fail:" + std::to_string(count_verdict(run.doc, "fail")) +
				  " xfail:0 xpass:0 skip:" + std::to_string(count_verdict(run.doc, "skip")) +
				  " error:" + std::to_string(count_verdict(run.doc, "error")));
		for (const auto &l : lines_of(ktap))
			for (char ch : l)
				EXPECT_TRUE(static_cast<unsigned char>(ch) >= 0x20) << "control character in: " << l;
	}
}

TEST(ReportKtap, SeveralKernelsNestGroupsThenSuitesThenCases)
{
	const json doc = run_of_several_kernels();
	const std::string ktap = format_ktap(doc);
	const auto lines = lines_of(ktap);
	EXPECT_EQ(lines[0], "KTAP version 1");
	EXPECT_EQ(lines[1], "1..4") << "one subtest per (kernel, boot)";
	const size_t group = index_of(lines, "  # Subtest: debian 6.1.0-57-amd64 (movable)");
	ASSERT_LT(group, lines.size()) << ktap;
	EXPECT_EQ(lines[group - 1], "  KTAP version 1");
	EXPECT_EQ(lines[group + 1], "  1..1") << "the group holds one suite";
	EXPECT_EQ(lines[group + 2], "    KTAP version 1");
	EXPECT_EQ(lines[group + 3], "    # Subtest: pin");
	EXPECT_EQ(lines[group + 4], "    1..10");
	EXPECT_LT(index_of(lines, "    ok 1 A (movable-none)"), lines.size()) << ktap;
	// B fails in the last guest only: its suite and group are not ok.
	EXPECT_LT(index_of(lines, "not ok 4 build 6.12.9-pinmatrix (cma)"), lines.size()) << ktap;
	EXPECT_LT(index_of(lines, "ok 1 debian 6.1.0-57-amd64 (movable)"), lines.size()) << ktap;
	EXPECT_LT(index_of(lines, "    not ok 2 B (movable-foll-pin)"), lines.size()) << ktap;
	EXPECT_LT(index_of(lines, "  not ok 1 pin"), lines.size()) << ktap;
}

TEST(ReportKtap, TimedOutCaseIsReportedAsKselftestReportsATimeout)
{
	json doc = timeout_run();
	const auto lines = lines_of(format_ktap(doc));
	const size_t b = index_of(lines, "  not ok 2 B (movable-foll-pin)");
	ASSERT_LT(b, lines.size());
	EXPECT_EQ(lines[b], "  not ok 2 B (movable-foll-pin) # TIMEOUT 60 seconds");
	// Its reason directly before it, at its depth.
	EXPECT_EQ(lines[b - 1], "  # B: " + record(doc, "B")["reason"].get<std::string>());

	// A record written before stuck_task kept its timeout: the reason's.
	json old = doc;
	record(old, "B")["stuck_task"].erase("timeout_s");
	record(old, "B")["reason"] = "case did not finish within 45 s (a registration that never returns?); killed";
	EXPECT_NE(format_ktap(old).find("  not ok 2 B (movable-foll-pin) # TIMEOUT 45 seconds\n"), std::string::npos);
}

TEST(ReportKtap, CasesTheGuestNeverReachedStayErrorsWithTheirReason)
{
	const json doc = timeout_run();
	const std::string ktap = format_ktap(doc);
	EXPECT_NE(ktap.find("  not ok 10 ordinary-foll-pin-longterm # ERROR no result from the guest: not reached: "
			    "guest stopped before the job finished (panic or reset?)\n"),
		  std::string::npos)
		<< ktap;
	// The serial log once, at the case that was running; the guest's ending
	// at the end points there.
	const std::string panic = "Kernel panic - not syncing";
	const size_t first = ktap.find(panic);
	ASSERT_NE(first, std::string::npos);
	EXPECT_LT(first, ktap.find("not ok 9 ordinary-gup-ref"));
	EXPECT_EQ(ktap.find(panic, first + 1), std::string::npos);
	EXPECT_NE(ktap.find("\n# guest: guest stopped before the job finished (panic or reset?)\n"
			    "# guest: serial log: above, at ordinary-gup-ref\n"),
		  std::string::npos)
		<< ktap;
}

TEST(ReportKtap, SuiteResultLinesSayHowTheirCasesWent)
{
	const std::string ktap = format_ktap(timeout_run());
	// A failure and errors: not ok, with the count directly before it.
	EXPECT_NE(ktap.find("\n# pin: 4 of 10 not ok\nnot ok 1 pin\n"), std::string::npos) << ktap;
	// Every case skipped for one reason: SKIP with it.
	EXPECT_NE(ktap.find("\nok 2 fork # SKIP no RDMA device (rdma link add rxe0 type rxe netdev IF)\n"),
		  std::string::npos)
		<< ktap;
	// Passes only: ok, no directive.
	EXPECT_NE(format_ktap(sample_run()).find("\nok 1 pin\n"), std::string::npos);
	// Skips for different reasons: SKIP alone.
	json mixed = run_all_skipped();
	record(mixed, "A")["reason"] = "another reason";
	EXPECT_NE(format_ktap(mixed).find("\nok 1 pin # SKIP\n"), std::string::npos) << format_ktap(mixed);
}

TEST(ReportKtap, DiagnosticsComeDirectlyBeforeTheResultTheyExplainAtItsDepth)
{
	json doc = run_with_failures();
	const auto lines = lines_of(format_ktap(doc));
	const size_t b = index_of(lines, "  not ok 2 B (movable-foll-pin)");
	ASSERT_LT(b, lines.size());
	EXPECT_EQ(lines[b - 1].rfind("  # B: registration returned ok, expected ENOMEM", 0), 0u) << lines[b - 1];
	EXPECT_EQ(lines[b - 2].rfind("  # B: expected ENOMEM; observed moved 0x2228c->0x67d4, ok", 0), 0u)
		<< lines[b - 2];
}

// The stream the runner and `vm` write case by case is results.ktap: the
// plan given up front as they know it, each record as it comes, a matrix
// run's groups ended by their entries.
TEST(ReportKtap, StreamedCaseByCaseIsResultsKtap)
{
	for (const auto &run : ktap_runs()) {
		SCOPED_TRACE(run.name);
		const auto view = report::view_run(run.doc);
		const bool grouped = run.doc.contains("groups") || view.several_kernels();
		ktap_plan plan{grouped, {}};
		for (size_t i = 0; i < view.cases.size(); i++) {
			const auto &c = view.cases[i];
			if (i == 0 || (grouped && c.kernel_index != view.cases[i - 1].kernel_index))
				plan.groups.push_back({0});
			else if (c.suite != view.cases[i - 1].suite)
				plan.groups.back().push_back(0);
			plan.groups.back().back()++;
		}
		ktap_stream stream(plan);
		std::string streamed;
		stream.begin();
		streamed += stream.take();
		json so_far = run.doc;
		so_far["cases"] = json::array();
		for (size_t i = 0; i < view.cases.size(); i++) {
			so_far["cases"].push_back(run.doc["cases"][i]);
			EXPECT_EQ(stream.records(so_far, i), 1u);
			const bool last_of_group = i + 1 == view.cases.size() ||
						   view.cases[i + 1].kernel_index != view.cases[i].kernel_index;
			if (grouped && last_of_group)
				stream.end_group(report::group_entry(run.doc, view.cases[i].kernel));
			streamed += stream.take();
		}
		stream.end(run.doc);
		streamed += stream.take();
		EXPECT_EQ(streamed, format_ktap(run.doc));
	}
}

TEST(ReportKtap, FailuresCarryTheReasonAndErrorsTheSerialLogOnce)
{
	json doc = run_with_failures();
	const std::string ktap = format_ktap(doc);
	const std::string reason = record(doc, "B")["reason"];
	EXPECT_NE(ktap.find("  # B: " + reason.substr(0, 30)), std::string::npos) << ktap;
	const std::string panic_line = "Kernel panic - not syncing";
	const size_t first = ktap.find(panic_line);
	ASSERT_NE(first, std::string::npos) << ktap;
	EXPECT_EQ(ktap.find(panic_line, first + 1), std::string::npos) << "the guest's log twice";
}

TEST(ReportKtap, FormatIsTextOrKtap)
{
	EXPECT_FALSE(streams_ktap("text"));
	EXPECT_TRUE(streams_ktap("ktap"));
	EXPECT_THROW(streams_ktap("tap"), usage_error);
	EXPECT_THROW(streams_ktap(""), usage_error);
}

namespace {

// Prints what TAP::Parser makes of a file, one line per fact.
const char *const tap_parser_script = R"perl(
use strict; use warnings;
use TAP::Parser;
open(my $fh, '<', $ARGV[0]) or die "open $ARGV[0]: $!";
my $text = do { local $/; <$fh> };
my $p = TAP::Parser->new({ tap => $text });
while (my $r = $p->next) {
  if ($r->is_plan) { print "plan\t", $r->plan, "\n"; }
  elsif ($r->is_test) {
    print join("\t", "test", $r->number, ($r->is_actual_ok ? "ok" : "not ok"), $r->directive,
               $r->description), "\n";
  }
}
print "summary\t", join("\t", $p->tests_run, $p->tests_planned, scalar($p->parse_errors),
                        ($p->is_good_plan ? 1 : 0)), "\n";
print "parse_error\t$_\n" for $p->parse_errors;
)perl";

bool have_tap_parser()
{
	return shell("perl -MTAP::Parser -e 1").exit_code == 0;
}

} // namespace

// ktap.rst: KTAP should form valid TAP, nested results aside. A plain TAP
// consumer (prove, openQA) reads the top level: one test per suite (per
// group in a merged run), not ok when any of its cases failed or erred.
TEST(ReportKtap, PlainTapReadsTheTopLevel)
{
	if (!have_tap_parser() || !have_command("prove"))
		GTEST_SKIP() << "perl's TAP::Parser or prove is missing (Debian package perl)";
	for (const auto &run : ktap_runs()) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const ktap_test top = ktap_reader(read_file(dir / "results.ktap")).top();
		write_file(dir / "tap_parser.pl", tap_parser_script);
		const auto r = shell("perl " + shell_quoted(dir / "tap_parser.pl") + " " +
				     shell_quoted(dir / "results.ktap"));
		const std::string n = std::to_string(top.subtests.size());
		EXPECT_NE(r.output.find("plan\t1.." + n + "\n"), std::string::npos) << r.output;
		EXPECT_NE(r.output.find("summary\t" + n + "\t" + n + "\t0\t1\n"), std::string::npos) << r.output;
		for (size_t i = 0; i < top.subtests.size(); i++) {
			const auto &t = top.subtests[i];
			EXPECT_NE(r.output.find("test\t" + std::to_string(i + 1) + "\t" + (t.ok ? "ok" : "not ok")),
				  std::string::npos)
				<< t.name << "\n" << r.output;
		}
		const bool bad = count_verdict(run.doc, "fail") + count_verdict(run.doc, "error") > 0;
		auto prove = shell("prove --exec cat " + shell_quoted(dir / "results.ktap"));
		EXPECT_EQ(prove.exit_code != 0, bad) << prove.output;
	}
}
