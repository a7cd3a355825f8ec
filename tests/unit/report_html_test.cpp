// SPDX-License-Identifier: GPL-2.0
// report.html: self-contained (nothing to fetch, no script), one grid cell
// per case, failures first, text escaped; and rendered by headless Chromium
// (Debian's chromium): the DOM shows the grid, the console shows no error,
// the screenshot is a page and not a blank.

#include <png.h>

#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "report_input.hpp"
#include "promises.hpp"
#include "reports.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

size_t count_of(const std::string &text, const std::string &what)
{
	size_t n = 0;
	for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size()))
		n++;
	return n;
}

// The grid's cells: one element per case, with the case id and its verdict.
std::multiset<std::pair<std::string, std::string>> grid_cells(const std::string &html)
{
	static const std::regex cell(R"re(<a class="cell v-(\w+)" href="#[^"]*" data-case="([^"]*)")re");
	std::multiset<std::pair<std::string, std::string>> out;
	for (std::sregex_iterator it(html.begin(), html.end(), cell), end; it != end; ++it)
		out.insert({(*it)[2].str(), (*it)[1].str()});
	return out;
}

std::multiset<std::pair<std::string, std::string>> expected_cells(const json &doc)
{
	std::multiset<std::pair<std::string, std::string>> out;
	for (const auto &c : doc["cases"])
		out.insert({report::escape_markup(c["id"].get<std::string>(), true), c["verdict"].get<std::string>()});
	return out;
}

// Chromium as the brief for CI runs it: headless, as root, fresh profile,
// no network of its own.
shell_result chromium(const temp_dir &dir, const std::string &what, const fs::path &html)
{
	const fs::path profile = dir / ("profile-" + std::to_string(std::hash<std::string>{}(what)));
	fs::create_directories(profile);
	return shell("timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
		     "--disable-background-networking --disable-component-update --disable-sync "
		     "--user-data-dir=" + shell_quoted(profile) + " --window-size=1400,1000 " + what + " " +
			     shell_quoted("file://" + html.string()),
		     what.find("--dump-dom") == std::string::npos);
}

struct image {
	unsigned width = 0, height = 0;
	std::vector<unsigned char> rgb;
	const unsigned char *at(unsigned x, unsigned y) const { return &rgb[(size_t(y) * width + x) * 3]; }
};

image read_png(const fs::path &path)
{
	png_image png{};
	png.version = PNG_IMAGE_VERSION;
	image out;
	if (!png_image_begin_read_from_file(&png, path.c_str()))
		return out;
	png.format = PNG_FORMAT_RGB;
	out.rgb.resize(PNG_IMAGE_SIZE(png));
	if (!png_image_finish_read(&png, nullptr, out.rgb.data(), 0, nullptr)) {
		png_image_free(&png);
		out.rgb.clear();
		return out;
	}
	out.width = png.width;
	out.height = png.height;
	return out;
}

} // namespace

TEST(ReportHtml, SelfContainedWithoutScript)
{
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		const std::string html = format_html(run.doc);
		EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
		for (const char *fetches : {"<script", "<link", "<img", "<iframe", " src=", "href=\"http", "url(",
					    "@import", "@font-face"})
			EXPECT_EQ(html.find(fetches), std::string::npos) << fetches;
		bool any_latency = false;
		for (const auto &c : run.doc["cases"])
			any_latency |= c.value("latency_ns", json()).is_number();
		EXPECT_EQ(html.find("<svg class=\"plot\"") != std::string::npos, any_latency) << "latency plot";
	}
}

TEST(ReportHtml, OneGridCellPerCaseWithItsVerdict)
{
	for (const auto &run : all_runs()) {
		SCOPED_TRACE(run.name);
		const std::string html = format_html(run.doc);
		EXPECT_EQ(grid_cells(html), expected_cells(run.doc));
		// Each cell leads to the case's evidence.
		EXPECT_EQ(count_of(html, "<details class=\"case "), run.doc["cases"].size());
	}
}

TEST(ReportHtml, VerdictFirstThenFailuresBeforePasses)
{
	json doc = run_with_failures();
	const std::string html = format_html(doc);
	// The banner says the run's verdict before anything else does.
	const size_t banner = html.find("<header class=\"banner v-error\"");
	ASSERT_NE(banner, std::string::npos);
	EXPECT_LT(banner, html.find("<section"));
	// Every failing case is named, with its reason, before the grid.
	const size_t grid = html.find("<section id=\"matrix\"");
	for (const auto &c : doc["cases"])
		if (c["verdict"] == "fail" || c["verdict"] == "error") {
			const size_t at = html.find("href=\"#case-" + c["id"].get<std::string>() + "\"");
			EXPECT_LT(at, grid) << c["id"];
		}
	EXPECT_LT(html.find(report::escape_markup(report::one_line(record(doc, "B")["reason"].get<std::string>()))), grid);
	// In the evidence, failures come first and are open.
	const size_t evidence = html.find("<section id=\"cases\"");
	const size_t first_fail = html.find("<details class=\"case v-fail\"", evidence);
	const size_t first_error = html.find("<details class=\"case v-error\"", evidence);
	const size_t first_pass = html.find("<details class=\"case v-pass\"", evidence);
	EXPECT_LT(first_error, first_pass);
	EXPECT_LT(first_fail, first_pass);
	EXPECT_NE(html.find(" open>", first_fail), html.find(" open>", first_pass));
	// The guest's serial log is shown, its escape sequence gone.
	EXPECT_NE(html.find("Kernel panic - not syncing"), std::string::npos);
	EXPECT_EQ(html.find('\x1b'), std::string::npos);
}

TEST(ReportHtml, EvidenceShowsPagesErrnoAndRecovery)
{
	json doc = sample_run();
	const std::string html = format_html(doc);
	const json &b = record(doc, "B");
	EXPECT_NE(html.find(pinmatrix::hex(b["observed"]["page"]["before"]["pfn"].get<uint64_t>())), std::string::npos);
	EXPECT_NE(html.find(b["observed"]["errno_name"].get<std::string>()), std::string::npos);
	EXPECT_NE(html.find("recovery"), std::string::npos);
	const json &a = record(doc, "A");
	EXPECT_NE(html.find(pinmatrix::hex(a["observed"]["page"]["after_registration"]["pfn"].get<uint64_t>())),
		  std::string::npos);
}

TEST(ReportHtml, TextIsEscaped)
{
	json doc = sample_run();
	not_observed(record(doc, "C"), "error", "<script>alert(1)</script> & more");
	record(doc, "C")["id"] = "C<b>";
	const std::string html = format_html(doc);
	EXPECT_EQ(html.find("<script>"), std::string::npos);
	EXPECT_EQ(html.find("C<b>"), std::string::npos);
	EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), std::string::npos);
}

// The promise table's section: a row per promise, the run's verdicts of
// its cases, the promise no case checks called so.
TEST(ReportHtml, PromisesSectionShowsEachPromiseAndItsCasesInTheRun)
{
	json doc = run_with_failures();
	const std::string html = format_html(doc);
	const size_t at = html.find("<section id=\"promises\">");
	ASSERT_NE(at, std::string::npos);
	const std::string section = html.substr(at, html.find("</section>", at) - at);
	for (const auto &p : promise_table())
		EXPECT_NE(section.find("<code>" + report::escape_markup(p.id) + "</code>"), std::string::npos) << p.id;
	EXPECT_EQ(section.find("Not checked by any case"), std::string::npos);
	// Case A of the run is one of pin/case-a's: its verdict is in that row.
	const size_t row = section.find("<code>pin/case-a</code>");
	ASSERT_NE(row, std::string::npos);
	const std::string case_a = section.substr(row, section.find("</tr>", row) - row);
	EXPECT_NE(case_a.find("title=\"A\""), std::string::npos) << case_a;
}

TEST(ReportHtml, ChromiumRendersTheGridWithoutErrors)
{
	if (!have_command("chromium"))
		GTEST_SKIP() << "chromium is missing (Debian package chromium; tools/setup-host)";
	for (const auto &run : {named_run{"failures", run_with_failures()}, named_run{"pass", sample_run()}}) {
		SCOPED_TRACE(run.name);
		temp_dir dir;
		write_reports(dir.path(), run.doc);
		const fs::path html = dir / "report.html";

		// The DOM Chromium built: the grid, one cell per case.
		auto dom = chromium(dir, "--dump-dom", html);
		ASSERT_EQ(dom.exit_code, 0) << dom.output.substr(0, 2000);
		EXPECT_EQ(grid_cells(dom.output), expected_cells(run.doc)) << dom.output.substr(0, 2000);
		EXPECT_NE(dom.output.find("<section id=\"matrix\">"), std::string::npos);

		// The console while taking the screenshot: no script error, no
		// failed load.
		auto console = chromium(dir, "--enable-logging=stderr --v=0 --screenshot=" + shell_quoted(dir / "page.png"), html);
		ASSERT_EQ(console.exit_code, 0) << console.output;
		for (const char *bad : {"Uncaught", ":CONSOLE(", "ERR_FILE_NOT_FOUND", "net::ERR_"})
			EXPECT_EQ(console.output.find(bad), std::string::npos) << bad << "\n" << console.output;

		// The screenshot: written, the window's size, not blank, and the
		// banner at the top in the run's verdict colour (red for a failing
		// run, green for a passing one).
		const image shot = read_png(dir / "page.png");
		ASSERT_EQ(shot.width, 1400u);
		ASSERT_EQ(shot.height, 1000u);
		std::set<uint32_t> colours;
		size_t ink = 0;
		for (unsigned y = 0; y < shot.height; y += 2)
			for (unsigned x = 0; x < shot.width; x += 2) {
				const unsigned char *p = shot.at(x, y);
				colours.insert(uint32_t(p[0]) << 16 | uint32_t(p[1]) << 8 | p[2]);
				ink += p[0] < 200 || p[1] < 200 || p[2] < 200;
			}
		EXPECT_GT(colours.size(), 50u) << "a page has text, cells and colours";
		EXPECT_GT(ink * 100 / (size_t(shot.width / 2) * (shot.height / 2)), 5u) << "mostly blank";
		const unsigned char *banner = shot.at(8, 8);
		const bool failing = count_verdict(run.doc, "fail") + count_verdict(run.doc, "error") > 0;
		if (failing)
			EXPECT_GT(banner[0], banner[1] + 60) << "a failing run's banner is red or orange";
		else
			EXPECT_GT(banner[1], banner[0] + 60) << "a passing run's banner is green";
		// Kept for a look when the test fails.
		if (::testing::Test::HasFailure())
			fs::copy_file(dir / "page.png", fs::temp_directory_path() / ("pm-report-" + std::string(run.name) + ".png"),
				      fs::copy_options::overwrite_existing);
	}
}
