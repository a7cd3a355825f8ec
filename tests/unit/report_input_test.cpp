// SPDX-License-Identifier: GPL-2.0
// What `pinmatrix report` refuses to read (issue 13): documents nested past
// a sane depth or larger than a results.json can be, case records that are
// not objects, verdicts that are not one of pass, fail, skip, error, fields
// of the wrong type, the same case twice in one run, and fleet node
// directories that hold nothing usable or name one node twice. Each is one
// message, exit 2 and nothing written. And what it echoes is bounded:
// a report never repeats more of a record than a reader can use.

#include <algorithm>

#include <gtest/gtest.h>

#include "../command.hpp"
#include "fleet.hpp"
#include "report_fixtures.hpp"
#include "report_input.hpp"
#include "results.hpp"
#include "reports.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

fs::path save_text(const temp_dir &dir, const std::string &name, const std::string &text)
{
	write_file(dir / name / "results.json", text);
	return dir / name;
}

fs::path save_run(const temp_dir &dir, const std::string &name, const json &doc)
{
	return save_text(dir, name, doc.dump());
}

std::vector<std::string> listing(const fs::path &dir)
{
	std::vector<std::string> out;
	for (const auto &e : fs::recursive_directory_iterator(dir))
		out.push_back(fs::relative(e.path(), dir).string());
	std::sort(out.begin(), out.end());
	return out;
}

size_t lines_of(const std::string &s)
{
	return size_t(std::count(s.begin(), s.end(), '\n'));
}

// {"schema": ..., "cases": [], "deep": [[[...]]]}, `depth` arrays deep.
std::string nested_run(size_t depth)
{
	return R"({"schema": "pinmatrix/1", "cases": [], "deep": )" + std::string(depth, '[') +
	       std::string(depth, ']') + "}";
}

// The command refuses: exit 2, one line that says `says`, nothing written.
void expect_refused(const std::string &args, const std::string &says, const temp_dir &dir)
{
	const auto before = listing(dir.path());
	const auto r = run_pinmatrix(args);
	EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
	EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
	EXPECT_EQ(lines_of(r.output), 1u) << args << "\n" << r.output;
	EXPECT_EQ(listing(dir.path()), before) << args << ": wrote something";
}

} // namespace

// 200,000 levels crashed the report (SIGSEGV, recursion in the copy of the
// run's fields); 50,000 wrote a 5 GB report.html.
TEST(ReportInput, DeepNestingIsRefused)
{
	temp_dir dir;
	const auto deep = save_text(dir, "deep", nested_run(200000));
	expect_refused("report " + shell_quoted(deep), "nested deeper than", dir);
	expect_refused("report --compare " + shell_quoted(deep) + " " + shell_quoted(deep), "nested deeper than",
		       dir);
	const auto just_past = save_text(dir, "past", nested_run(max_json_depth));
	EXPECT_THROW(report::load_results(just_past), usage_error);
	// Within the bound it reads (the document's own level is the first).
	const auto within = save_text(dir, "within", nested_run(max_json_depth - 1));
	EXPECT_NO_THROW(report::load_results(within));
}

// A results.json larger than any run writes is refused before it is read.
TEST(ReportInput, OversizedFileIsRefusedUnread)
{
	temp_dir dir;
	const auto big = save_text(dir, "big", sample_run().dump());
	fs::resize_file(big / "results.json", max_json_bytes + 1);	// sparse: nothing on disk
	expect_refused("report " + shell_quoted(big), "larger than", dir);
}

// What a report echoes of the document (the run's other fields, a case's
// fields without a rendering of their own) is cut, and says so.
TEST(ReportInput, EchoedFieldsAreCutWithANote)
{
	json doc = sample_run();
	json wide = json::array();
	for (int i = 0; i < 20000; i++)
		wide.push_back({{"key", i}, {"value", std::string(64, 'x')}});
	doc["wide_run_field"] = wide;
	doc["cases"][0]["wide_case_field"] = wide;
	const std::string html = format_html(doc);
	EXPECT_LT(html.size(), 1000000u) << "report.html echoes all of a 2 MB document";
	EXPECT_NE(html.find("cut at"), std::string::npos);
	const std::string junit = format_junit(doc);
	EXPECT_LT(junit.size(), 1000000u) << "junit.xml echoes all of a 2 MB field";
	EXPECT_NE(junit.find("cut at"), std::string::npos);

	// The helper itself: whole when short, cut with the note when not.
	const json small = {{"a", 1}, {"b", {true, "x"}}};
	EXPECT_EQ(report::echo_json(small, 100), small.dump(2));
	const std::string cut = report::echo_json(wide, 4096);
	EXPECT_LT(cut.size(), 4096u + 200u);
	EXPECT_NE(cut.find("cut at 4096 bytes"), std::string::npos) << cut.substr(cut.size() - 200);
}

// Case records that a QA gate would have read as PASS (exit 0, no warning).
TEST(ReportInput, GarbageRecordsAreRefused)
{
	struct bad_case {
		json record;
		std::string says;
	};
	const json good = sample_run()["cases"][0];
	auto with = [&](const std::string &key, json value) {
		json r = good;
		r[key] = std::move(value);
		return r;
	};
	json no_verdict = good;
	no_verdict.erase("verdict");
	const bad_case bad[] = {
		{1, "case 2: not an object"},
		{"A", "case 2: not an object"},
		{json::array(), "case 2: not an object"},
		{with("verdict", "banana"), "case 2 (A): verdict \"banana\""},
		{with("verdict", nullptr), "case 2 (A): verdict null"},
		{with("verdict", 42), "case 2 (A): verdict 42"},
		{with("verdict", "PASS"), "verdict \"PASS\""},
		{no_verdict, "case 2 (A): no verdict"},
		{with("id", 42), "case 2: id is not a string"},
		{with("id", ""), "case 2: id is empty"},
		{with("reason", json::object()), "case 2 (A): reason is not a string"},
		{with("placement", 3), "case 2 (A): placement is not a string"},
		{with("suite", true), "case 2 (A): suite is not a string"},
		{with("latency_ns", "fast"), "case 2 (A): latency_ns is not a number"},
		{with("duration_ns", "1s"), "case 2 (A): duration_ns is not a number"},
		{with("latency_samples_ns", {1, "x"}), "case 2 (A): latency_samples_ns is not an array of numbers"},
		{with("observed", 7), "case 2 (A): observed is not an object"},
		{with("kernel", 7), "case 2 (A): kernel is not an object"},
	};
	temp_dir dir;
	int n = 0;
	for (const auto &b : bad) {
		json doc = sample_run();
		doc["cases"].insert(doc["cases"].begin() + 1, b.record);
		const auto run = save_run(dir, "run" + std::to_string(n++), doc);
		expect_refused("report " + shell_quoted(run), b.says, dir);
		expect_refused("report --compare " + shell_quoted(run) + " " + shell_quoted(run), b.says, dir);
	}
	// A case of another suite with little more than its verdict is fine.
	EXPECT_NO_THROW(report::check_schema(run_with_another_suite(), "x"));
	EXPECT_NO_THROW(report::check_schema(run_of_several_kernels(), "x"));
}

// The same case twice in one run (suite, placement, id and kernel): which
// one a comparison should read is anyone's guess.
TEST(ReportInput, DuplicateCasesAreRefused)
{
	temp_dir dir;
	json twice = sample_run();
	twice["cases"].push_back(twice["cases"][1]);
	const auto run = save_run(dir, "twice", twice);
	const auto good = save_run(dir, "good", sample_run());
	const std::string id = twice["cases"][1]["id"];
	expect_refused("report --compare " + shell_quoted(good) + " " + shell_quoted(run),
		       "case " + std::to_string(twice["cases"].size()) + " (" + id + "): the same case as case 2", dir);
	expect_refused("report --compare " + shell_quoted(run) + " " + shell_quoted(good), "the same case as", dir);
	expect_refused("report " + shell_quoted(run), "the same case as", dir);
	// The same id on another kernel or placement is another case, and on
	// another node of a fleet's merged results.
	EXPECT_NO_THROW(report::check_schema(run_of_several_kernels(), "x"));
	json fleet = sample_run();
	fleet["cases"].push_back(fleet["cases"][1]);
	fleet["cases"][1]["node"] = "node-1";
	fleet["cases"].back()["node"] = "node-2";
	EXPECT_NO_THROW(report::check_schema(fleet, "x"));
}

// `report DIR --out X` wrote next to DIR/results.json and ignored X.
TEST(ReportInput, OutIsHonoured)
{
	temp_dir dir;
	const auto run = save_run(dir, "run", sample_run());
	const auto r = run_pinmatrix("report " + shell_quoted(run) + " --out " + shell_quoted(dir / "elsewhere"));
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_EQ(listing(run), std::vector<std::string>{"results.json"}) << "wrote next to the results";
	for (const char *f : {"results.ktap", "junit.xml", "report.html", "summary.md"})
		EXPECT_TRUE(fs::exists(dir / "elsewhere" / f)) << f;
	EXPECT_NE(r.output.find("elsewhere"), std::string::npos) << r.output;
	// --out has no meaning for a comparison: refused, not ignored.
	expect_refused("report --compare " + shell_quoted(run) + " " + shell_quoted(run) + " --out " +
			       shell_quoted(dir / "x"),
		       "--out", dir);
}

// Node directories `report --fleet` cannot use.
TEST(ReportInput, FleetRefusesUnusableNodes)
{
	temp_dir dir;
	const json results = {{"schema", "pinmatrix/1"}, {"complete", true},
			      {"kernel", {{"release", "6.1.0-57-amd64"}}},
			      {"cases", {{{"id", "A"}, {"verdict", "pass"}}}}};
	write_file(dir / "n1" / "results.json", results.dump());
	write_file(dir / "n1" / "status.json", R"({"node": "n1", "state": "ran"})");
	write_file(dir / "n2" / "status.json", R"({"node": "n1", "state": "ran"})");
	write_file(dir / "n2" / "results.json", results.dump());
	fs::create_directories(dir / "empty");
	write_file(dir / "array" / "status.json", "[1,2,3]");
	write_file(dir / "facts" / "facts.json", "[1]");
	write_file(dir / "state" / "status.json", R"({"node": "s", "state": 42})");
	json banana = results;
	banana["cases"][0]["verdict"] = "banana";
	write_file(dir / "bad" / "results.json", banana.dump());
	write_file(dir / "bad" / "status.json", R"({"node": "bad", "state": "ran"})");
	auto fleet = [&](std::vector<std::string> nodes) {
		std::string args = "report --fleet";
		for (const auto &n : nodes)
			args += " " + shell_quoted(dir / n);
		return args + " --out " + shell_quoted(dir / "out");
	};
	expect_refused(fleet({"n1", "empty"}), "empty: no status.json, facts.json or results.json", dir);
	expect_refused(fleet({"n1", "array"}), "status.json: not a JSON object", dir);
	expect_refused(fleet({"n1", "facts"}), "facts.json: not a JSON object", dir);
	expect_refused(fleet({"n1", "state"}), "state 42 is not a string", dir);
	expect_refused(fleet({"n1", "n1"}), "node n1 twice", dir);
	expect_refused(fleet({"n1", "n2"}), "node n1 twice", dir);
	expect_refused(fleet({"n1", "bad"}), "verdict \"banana\"", dir);
	// An --out that is a node: its results.json, an input, would be lost.
	const std::string n1_results = read_file(dir / "n1" / "results.json");
	expect_refused("report --fleet " + shell_quoted(dir / "n1") + " --out " + shell_quoted(dir / "n1"),
		       "an input: it would be written over", dir);
	EXPECT_EQ(read_file(dir / "n1" / "results.json"), n1_results);
	// The good node alone makes the report.
	EXPECT_EQ(run_pinmatrix(fleet({"n1"})).exit_code, 0);
	EXPECT_TRUE(fs::exists(dir / "out" / "fleet.md"));
}

// A node name, case id or fact taken from a node's files is one line in
// fleet.md and on the terminal: no heading, table cell or code fence of its
// own, no escape sequence (issue 32, item 5).
TEST(ReportInput, HostileFleetStringsCannotForgeOutput)
{
	temp_dir dir;
	const std::string node = "n1\n## EVIL node\x1b]0;title\x07";
	const json results = {{"schema", "pinmatrix/1"}, {"complete", true},
			      {"kernel", {{"release", "6.1.0\n## EVIL release"}}},
			      {"cases", {{{"id", "```\n## EVIL case"}, {"verdict", "fail"}, {"reason", "r\n## EVIL"}}}}};
	write_file(dir / "n1" / "results.json", results.dump());
	write_file(dir / "n1" / "status.json", json{{"node", node}, {"state", "ran"}}.dump());
	write_file(dir / "n1" / "facts.json", json{{"kernel_release", "a | b | c\n## EVIL fact"}}.dump());
	const auto r = run_pinmatrix("report --fleet " + shell_quoted(dir / "n1") + " --out " + shell_quoted(dir / "out"));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	const std::string md = read_file(dir / "out" / "fleet.md");
	for (const std::string *text : {&md, &r.output}) {
		EXPECT_EQ(text->find("\n## EVIL"), std::string::npos) << *text;
		EXPECT_EQ(text->find('\x1b'), std::string::npos) << *text;
	}
	size_t fences = 0;
	for (size_t at = md.find("\n```"); at != std::string::npos; at = md.find("\n```", at + 1))
		fences++;
	EXPECT_EQ(fences, 2u) << md;	// the grid's own, open and close
}

// The harm oracle's answers are evidence a reader sees by name (not an
// unrendered extra field), unknown said as unknown.
TEST(ReportInput, GiveBackAnswersAreEvidence)
{
	const nlohmann::json attempt = {{"method", "offline memory block 5"},
					{"given_back", false},
					{"detail", "still offlining after 3000 ms"},
					{"latency_ns", 3000000000}};
	nlohmann::json unknown = attempt;
	unknown["given_back"] = nullptr;
	unknown["detail"] = "no memory hotplug";
	const nlohmann::json doc = {
		{"schema", results_schema},
		{"cases",
		 {{{"id", "B"},
		   {"name", "movable-foll-pin"},
		   {"verdict", "pass"},
		   {"observed", {{"give_back", {{"with_pins_held", attempt}, {"first_pin_released", unknown}}}}}}}}};
	const auto run = report::view_run(doc);
	const auto facts = report::evidence_facts(run.cases.at(0));
	auto value_of = [&](const std::string &label) {
		for (const auto &f : facts)
			if (f.label == label)
				return f.value;
		return std::string("(absent)");
	};
	EXPECT_EQ(value_of("memory given back, pins held"),
		  "no: offline memory block 5: still offlining after 3000 ms");
	EXPECT_EQ(value_of("memory given back, first pin released"), "unknown: offline memory block 5: no memory hotplug");
	for (const auto &e : report::extra_fields(run.cases.at(0)))
		EXPECT_NE(e.label, "observed give_back");
}

// A string from a file as a Markdown code span: no backtick, newline or
// control character inside can end it or start anything else.
TEST(ReportInput, MarkdownCodeSpansHoldAnyString)
{
	EXPECT_EQ(report::markdown_code("6.1.0-57-amd64"), "`6.1.0-57-amd64`");
	EXPECT_EQ(report::markdown_code("a`b"), "``a`b``");
	EXPECT_EQ(report::markdown_code("``x"), "``` ``x ```");
	EXPECT_EQ(report::markdown_code("a\n## b\x1b[2J"), "`a ## b[2J`");
	json doc = sample_run();
	doc["kernel"]["release"] = "6.1`\n## EVIL <img src=x onerror=alert(1)>";
	const std::string md = format_summary_markdown(doc);
	EXPECT_EQ(md.find("\n## EVIL"), std::string::npos) << md;
	EXPECT_NE(md.find("``6.1` ## EVIL <img src=x onerror=alert(1)>"), std::string::npos) << md;
}
