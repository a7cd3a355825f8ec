// SPDX-License-Identifier: GPL-2.0
// What report.html and summary.md say a run is and where its evidence is:
// the header names the kernel's version and the suite's version and
// commit; the run's files are linked, relative, only where they exist,
// every name from a file or from the disk escaped; a case's evidence is
// tables (placement at each step, give-back, registrations) with its raw
// record behind a disclosure.

#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "kcidb.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "run_files.hpp"
#include "text.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

constexpr const char *debian_uname_v = "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)";

std::string between(const std::string &text, const std::string &from, const std::string &to)
{
	const size_t at = text.find(from);
	if (at == std::string::npos)
		return "";
	const size_t end = text.find(to, at + from.size());
	return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string banner_of(const std::string &html)
{
	return between(html, "<header class=\"banner", "</header>");
}

// The Markdown above its first section heading.
std::string md_header_of(const std::string &md)
{
	return md.substr(0, md.find("\n####"));
}

size_t count_of(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
		n++;
	return n;
}

// Every href of the page that is not an anchor, as written (encoded).
std::vector<std::string> file_hrefs(const std::string &html)
{
	static const std::regex href(R"re(href="([^"#][^"]*)")re");
	std::vector<std::string> out;
	for (std::sregex_iterator it(html.begin(), html.end(), href), end; it != end; ++it)
		out.push_back((*it)[1].str());
	return out;
}

std::vector<std::string> md_link_targets(const std::string &md)
{
	static const std::regex link(R"re(\]\(([^)]*)\))re");
	std::vector<std::string> out;
	for (std::sregex_iterator it(md.begin(), md.end(), link), end; it != end; ++it)
		out.push_back((*it)[1].str());
	return out;
}

// A URL path back to the file name (%XX to its byte).
std::string percent_decoded(const std::string &s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '%' && i + 2 < s.size()) {
			out += char(std::stoi(s.substr(i + 1, 2), nullptr, 16));
			i += 2;
		} else {
			out += s[i];
		}
	}
	return out;
}

// An attribute's value back to text: the escapes escape_markup() makes.
std::string attribute_text(std::string s)
{
	for (auto [from, to] : {std::pair{"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}})
		for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1))
			s.replace(at, std::string_view(from).size(), to);
	return s;
}

// A table of a case's evidence: the case's section, then the table.
std::string case_table(const std::string &html, const std::string &id, const std::string &table_class)
{
	const std::string section = between(html, "id=\"case-" + id + "\"", "<details class=\"case ");
	return between(section, "<table class=\"" + table_class + "\">", "</table>");
}

// Each link of the written report.html and summary.md leads to a file
// that exists, from the directory they were written to.
void expect_links_lead_to_files(const fs::path &report_dir, size_t at_least)
{
	const std::string html = read_file(report_dir / "report.html");
	const auto hrefs = file_hrefs(html);
	EXPECT_GE(hrefs.size(), at_least);
	for (const auto &href : hrefs)
		EXPECT_TRUE(fs::is_regular_file(report_dir / percent_decoded(attribute_text(href)))) << href;
	for (const auto &target : md_link_targets(read_file(report_dir / "summary.md")))
		EXPECT_TRUE(fs::is_regular_file(report_dir / percent_decoded(target))) << target;
}

} // namespace

// The header: the kernel once by its release with its version (Debian's
// ABI release 6.1.0-57 is 6.1.192, which only uname -v says), and the
// suite's version and commit.
TEST(ReportHeader, NamesKernelVersionSuiteVersionAndCommit)
{
	json doc = sample_run();
	doc["kernel"]["name"] = "debian:6.1.0-57-amd64";	// as pinmatrix vm records a Debian kernel
	doc["kernel"]["version"] = debian_uname_v;
	doc["tool"]["commit"] = "0123456789ab";
	const std::string banner = banner_of(format_html(doc));
	EXPECT_NE(banner.find("kernel <code>debian:6.1.0-57-amd64</code> version <code>6.1.192</code>"), std::string::npos)
		<< banner;
	EXPECT_EQ(count_of(banner, "6.1.0-57-amd64"), 1u) << "the release once: " << banner;
	EXPECT_NE(banner.find(debian_uname_v), std::string::npos) << banner;
	EXPECT_NE(banner.find("pinmatrix version <code>0.1.0</code> \u00b7 commit <code>0123456789ab</code>"),
		  std::string::npos)
		<< banner;

	const std::string md = md_header_of(format_summary_markdown(doc));
	EXPECT_NE(md.find("Kernel: `debian:6.1.0-57-amd64` version `6.1.192` (`" + std::string(debian_uname_v) + "`)"),
		  std::string::npos)
		<< md;
	EXPECT_NE(md.find("pinmatrix version `0.1.0`, commit `0123456789ab`"), std::string::npos) << md;
}

// A run from before the commit was recorded, and one whose build did not
// know it: "unknown", never a made-up commit; no tool at all: no version.
TEST(ReportHeader, CommitNotRecordedIsUnknown)
{
	json doc = sample_run();
	ASSERT_FALSE(doc["tool"].contains("commit"));
	EXPECT_NE(banner_of(format_html(doc)).find("commit <code>unknown</code>"), std::string::npos);
	doc["tool"]["commit"] = nullptr;
	EXPECT_NE(md_header_of(format_summary_markdown(doc)).find("commit `unknown`"), std::string::npos);
	doc.erase("tool");
	EXPECT_NE(banner_of(format_html(doc)).find("pinmatrix version <code>unknown</code>"), std::string::npos);
}

// A merged run: each kernel once (not once per boot), with its version
// from its groups (a group that never booted knows none).
TEST(ReportHeader, EachKernelOfAMergedRunWithItsVersion)
{
	json doc = run_of_several_kernels();
	for (auto &g : doc["groups"])
		if (g["kernel"]["release"] == "6.1.0-57-amd64" && g["boot"]["placement"] == "cma")
			g["kernel"]["version"] = debian_uname_v;
	const std::string banner = banner_of(format_html(doc));
	EXPECT_NE(banner.find("kernels <code>debian 6.1.0-57-amd64</code> version <code>6.1.192</code>"),
		  std::string::npos)
		<< banner;
	EXPECT_NE(banner.find(", <code>build 6.12.9-pinmatrix</code> version <code>6.12.9</code></div>"),
		  std::string::npos)
		<< banner;
	EXPECT_EQ(count_of(banner, "6.1.0-57-amd64"), 1u) << banner;
	const std::string md = md_header_of(format_summary_markdown(doc));
	EXPECT_NE(md.find("Kernels: `debian 6.1.0-57-amd64` version `6.1.192` (`" + std::string(debian_uname_v) +
			  "`), `build 6.12.9-pinmatrix` version `6.12.9`\n"),
		  std::string::npos)
		<< md;
}

// Links only to files that exist when the reports are written: the serial
// log is there, the kernel log results.json names is not (yet).
TEST(ReportLinks, OnlyToFilesThatExist)
{
	temp_dir dir;
	const fs::path run = dir / "run";
	json doc = sample_run();
	doc["kernel_log"] = {{"file", "guest/kernel.log"}, {"alarms", json::array()}};
	write_file(run / "serial.log", "[    0.000000] Linux version 6.1.0-57-amd64\n");
	write_reports(run, doc, {{"results.json", doc.dump()}});
	std::string html = read_file(run / "report.html");
	const std::string files = between(banner_of(html), "<div class=\"meta files\">", "</div>");
	EXPECT_NE(files.find("<a href=\"results.json\">results.json</a>"), std::string::npos) << files;
	EXPECT_NE(files.find("<a href=\"serial.log\">serial log</a>"), std::string::npos) << files;
	EXPECT_EQ(html.find("kernel.log\""), std::string::npos);
	EXPECT_EQ(html.find("qemu.log"), std::string::npos);
	std::string md = read_file(run / "summary.md");
	EXPECT_NE(md.find("Files: [results.json](results.json) \u00b7 [serial log](serial.log)\n"), std::string::npos) << md;
	EXPECT_EQ(md.find("kernel.log"), std::string::npos) << md;
	expect_links_lead_to_files(run, 2);

	// The kernel log appears: the next report links it, from every case too.
	write_file(run / "guest" / "kernel.log", "[    5.0] ok\n");
	write_reports(run, doc, {{"results.json", doc.dump()}});
	html = read_file(run / "report.html");
	EXPECT_NE(banner_of(html).find("<a href=\"guest/kernel.log\">kernel log</a>"), std::string::npos);
	EXPECT_EQ(count_of(html, "<a href=\"guest/kernel.log\">kernel log</a>"), doc["cases"].size() + 1)
		<< "the banner and every case";
	EXPECT_NE(read_file(run / "summary.md").find("[kernel log](guest/kernel.log)"), std::string::npos);
	expect_links_lead_to_files(run, 3);
}

// `report DIR --out OUT`: the links lead from OUT back to the run.
TEST(ReportLinks, RelativeFromAnotherOutputDirectory)
{
	temp_dir dir;
	const json doc = sample_run();
	write_file(dir / "run" / "results.json", doc.dump());
	write_file(dir / "run" / "serial.log", "console\n");
	regenerate_reports(dir / "run", dir / "elsewhere" / "out");
	const std::string html = read_file(dir / "elsewhere" / "out" / "report.html");
	EXPECT_NE(html.find("href=\"../../run/serial.log\""), std::string::npos);
	EXPECT_NE(html.find("href=\"../../run/results.json\""), std::string::npos);
	expect_links_lead_to_files(dir / "elsewhere" / "out", 2);
}

// A name results.json gives is a path below the run, or no link: not one
// outside it (".."), not an absolute one, not one with a NUL in it.
TEST(ReportLinks, NamesOutsideTheRunAreNotLinked)
{
	temp_dir dir;
	write_file(dir / "outside.log", "not the run's\n");
	json doc = sample_run();
	doc["vm"]["serial_log"] = "../outside.log";
	doc["kernel_log"] = {{"file", (dir / "outside.log").string()}};
	static constexpr char with_nul[] = "x.json\0../outside.log";
	doc["benchmarks"] = std::string(with_nul, sizeof(with_nul) - 1);
	write_file(dir / "run" / "x.json", "{}");	// what the name would open, cut at its NUL
	const auto files = report::find_run_files(doc, {dir / "run" / "results.json", dir / "run", {"results.json"}});
	ASSERT_EQ(files.run.size(), 1u) << join(files.run, ", ", &report::file_link::path);
	EXPECT_EQ(files.run[0].path, "results.json");
	// The same names inside the run are linked.
	write_file(dir / "run" / "console.log", "console\n");
	doc["vm"]["serial_log"] = "console.log";
	doc["benchmarks"] = "x.json";
	const auto inside = report::find_run_files(doc, {dir / "run" / "results.json", dir / "run", {"results.json"}});
	ASSERT_EQ(inside.run.size(), 3u) << join(inside.run, ", ", &report::file_link::path);
	EXPECT_EQ(inside.run[1].label + " " + inside.run[1].path, "serial log console.log");
	EXPECT_EQ(inside.run[2].label + " " + inside.run[2].path, "benchmarks x.json");
}

// Names from the disk and from results.json, hostile ones (<, ", &, ],
// a backtick, a newline): percent-encoded in the links, escaped in the
// text, in the HTML and in the Markdown.
TEST(ReportLinks, HostileFileAndCaseNamesAreEscaped)
{
	const std::string evil = "g<\"&]`\nx";
	temp_dir dir;
	json doc = run_of_several_kernels();
	doc["groups"][0]["dir"] = "groups/" + evil;
	write_file(dir / "run" / "groups" / evil / "serial.log", "console\n");
	json &failing = doc["cases"][0];
	failing["id"] = "B" + evil;
	failing["verdict"] = "fail";
	failing["reason"] = "case " + evil;
	const fs::path results = dir / "run" / ("res" + evil + ".json");
	write_file(results, doc.dump());
	regenerate_reports(results, {});

	const std::string encoded = "g%3C%22%26%5D%60%0Ax";
	const std::string html = read_file(dir / "run" / "report.html");
	EXPECT_NE(html.find("href=\"groups/" + encoded + "/serial.log\""), std::string::npos);
	EXPECT_NE(html.find("href=\"res" + encoded + ".json\">res" + report::escape_markup(evil) + ".json</a>"),
		  std::string::npos);
	EXPECT_EQ(html.find("<\"&"), std::string::npos);
	EXPECT_NE(html.find("<b>B" + report::escape_markup(evil) + " (movable-none)</b>"), std::string::npos);
	expect_links_lead_to_files(dir / "run", 2);

	const std::string md = read_file(dir / "run" / "summary.md");
	EXPECT_EQ(md.find("<\""), std::string::npos) << md;
	EXPECT_EQ(md.find("]`"), std::string::npos) << md;
	EXPECT_NE(md.find("[res" + report::markdown_text(evil) + ".json](res" + encoded + ".json)"), std::string::npos)
		<< md;
	EXPECT_NE(md.find("**B" + report::markdown_text(evil) + " (movable-none)** FAIL"), std::string::npos) << md;
	EXPECT_NE(md.find("[serial log](groups/" + encoded + "/serial.log)"), std::string::npos) << md;
	for (const auto &target : md_link_targets(md))
		EXPECT_EQ(target.find_first_of("<>\"&]`\n ()"), std::string::npos) << target;
}

// A case's placement at each step as a table, the cells that changed
// marked; its raw record behind a disclosure.
TEST(ReportEvidence, PlacementTableOfAFixture)
{
	json doc = sample_run();
	const std::string html = format_html(doc);
	const std::string table = case_table(html, "A", "plain mono placement");
	const json &page = record(doc, "A")["observed"]["page"];
	// Before and after the first pin (none): in ZONE_MOVABLE; after the
	// registration migrated it: another PFN in DMA32, both cells marked.
	for (const auto &[step, key] : {std::pair{"before", "before"}, std::pair{"after first pin", "after_first_pin"}})
		EXPECT_NE(table.find("<tr><th>" + std::string(step) + "</th><td>" +
				     pinmatrix::hex(page[key]["pfn"].get<uint64_t>()) + "</td><td>Movable</td>"),
			  std::string::npos)
			<< step << "\n" << table;
	EXPECT_NE(table.find("<tr><th>after registration</th><td class=\"changed\">" +
			     pinmatrix::hex(page["after_registration"]["pfn"].get<uint64_t>()) +
			     "</td><td class=\"changed\">DMA32</td>"),
		  std::string::npos)
		<< table;
	EXPECT_NE(table.find("<th>long-term pinnable</th>"), std::string::npos) << table;
	const std::string a = between(html, "id=\"case-A\"", "<details class=\"case ");
	const std::string raw = between(a, "<details class=\"raw\">", "</details>");
	EXPECT_NE(raw.find("&quot;pfn_before&quot;: " + std::to_string(record(doc, "A")["observed"]["pfn_before"].get<uint64_t>())),
		  std::string::npos)
		<< raw;
}

// The pinner suite's steps are observed's own (before, after, after
// give-back); the pin suite's after release is shown too.
TEST(ReportEvidence, StepsOfEverySuiteShape)
{
	json doc = sample_run();
	record(doc, "A")["observed"]["page"]["after_release"] = {{"pfn", 26580}, {"zone", "DMA32"}, {"refcount", 1}};
	json &b = record(doc, "B");
	b["observed"].erase("page");
	b["observed"]["before"] = {{"pfn", 139916}, {"placement", "movable"}, {"probe", "module"}};
	b["observed"]["after"] = {{"pfn", 26580}, {"placement", "ordinary"}};
	const std::string html = format_html(doc);
	EXPECT_NE(case_table(html, "A", "plain mono placement").find("<tr><th>after release</th><td>0x67d4</td>"),
		  std::string::npos);
	const std::string b_table = case_table(html, "B", "plain mono placement");
	EXPECT_NE(b_table.find("<th>probe</th>"), std::string::npos) << b_table;
	EXPECT_NE(b_table.find("<tr><th>after</th><td class=\"changed\">0x67d4</td><td class=\"changed\">ordinary</td>"
			       "<td>\u2014</td>"),
		  std::string::npos)
		<< b_table;
	const auto run = report::view_run(doc);
	for (const auto &c : run.cases) {
		if (c.id != "B")
			continue;
		for (const auto &x : report::extra_fields(c))
			EXPECT_NE(x.label, "observed before") << "shown in the table, not again";
	}
}

// Give-back: every attempt a row, in the order they are made.
TEST(ReportEvidence, GiveBackTable)
{
	json doc = sample_run();
	auto attempt = [](bool given, const char *detail) {
		return json{{"method", "offline memory block 4"}, {"given_back", given}, {"detail", detail},
			    {"latency_ns", 920723969}};
	};
	record(doc, "A")["observed"]["give_back"] = {{"all_released", attempt(true, "offline; put back")},
						     {"with_pins_held", attempt(false, "EBUSY <busy>")}};
	record(doc, "B")["observed"]["give_back"] = {{"released", attempt(true, "offline")},
						     {"with_pin_held", attempt(false, "EBUSY")}};
	const std::string html = format_html(doc);
	const std::string a = case_table(html, "A", "plain give-back");
	const size_t held = a.find("<tr><th>pins held</th><td class=\"gb-no\">no</td><td>offline memory block 4</td>"
				   "<td>EBUSY &lt;busy&gt;</td><td class=\"num\">921 ms</td></tr>");
	const size_t released = a.find("<tr><th>every pin released (control)</th><td class=\"gb-yes\">yes</td>");
	ASSERT_NE(held, std::string::npos) << a;
	ASSERT_NE(released, std::string::npos) << a;
	EXPECT_LT(held, released);
	const std::string b = case_table(html, "B", "plain give-back");
	ASSERT_NE(b.find("<th>pin held</th>"), std::string::npos) << b;
	EXPECT_LT(b.find("<th>pin held</th>"), b.find("<th>pin released (control)</th>")) << b;
}

// Registrations: one row each, with its result, class, latency and pages.
TEST(ReportEvidence, RegistrationTable)
{
	std::ifstream in(fs::path(PINMATRIX_TEST_DATA) / "results-telemetry.json");
	const json doc = json::parse(in);
	const std::string b = case_table(format_html(doc), "B", "plain registrations");
	EXPECT_NE(b.find("<tr><th>#1 the case&#39;s registration: ibv_reg_mr</th><td>ENOMEM (12)</td>"
			 "<td>long-term placement blocked by an existing pin</td>"),
		  std::string::npos)
		<< b;
	EXPECT_NE(b.find("<td>pfn 0x"), std::string::npos) << b;
}

// The suite's version and commit in the formats machines read: KTAP's
// first diagnostic, a JUnit property, each KCIDB test's misc.
TEST(ReportHeader, SuiteCommitInKtapJunitAndKcidb)
{
	json doc = sample_run();
	doc["tool"]["commit"] = "0123456789ab";
	const std::string ktap = format_ktap(doc);
	EXPECT_EQ(ktap.find("\n# pinmatrix 0.1.0 (commit 0123456789ab) on 6.1.0-57-amd64 ("),
		  ktap.find("\n# ")) << ktap.substr(0, 400);
	EXPECT_NE(format_junit(doc).find("<property name=\"pinmatrix.commit\" value=\"0123456789ab\"/>"),
		  std::string::npos);
	const json kcidb = format_kcidb(doc, "test_lab");
	ASSERT_FALSE(kcidb["tests"].empty());
	for (const auto &t : kcidb["tests"])
		EXPECT_EQ(t["misc"]["tool"], (json{{"name", "pinmatrix"}, {"version", "0.1.0"}, {"commit", "0123456789ab"}}));
	doc["tool"].erase("commit");
	EXPECT_NE(format_ktap(doc).find("\n# pinmatrix 0.1.0 (commit unknown) on "), std::string::npos);
	EXPECT_NE(format_junit(doc).find("<property name=\"pinmatrix.commit\" value=\"unknown\"/>"), std::string::npos);
}
