// SPDX-License-Identifier: GPL-2.0
// The benchmarks in the reports (reports/bench_report.hpp): Google
// Benchmark JSON read back (sizes, repetitions, skips, aggregates only),
// report.html's plots and tables, and `report --compare` over bench.json:
// informational by default, a failing gate with --bench-threshold.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "bench_report.hpp"
#include "reports.hpp"

using nlohmann::json;
using namespace pinmatrix::report;
namespace fs = std::filesystem;

namespace {

json one(const std::string &name, double time, const std::string &unit, json counters = json::object())
{
	json r = {{"name", name},	   {"run_name", name}, {"run_type", "iteration"}, {"repetitions", 1},
		  {"repetition_index", 0}, {"threads", 1},     {"iterations", 10},	  {"real_time", time},
		  {"cpu_time", time},	   {"time_unit", unit}};
	for (auto &[k, v] : counters.items())
		r[k] = v;
	return r;
}

json skipped(const std::string &name, const std::string &why)
{
	json r = one(name, 0, "us");
	r["error_occurred"] = true;
	r["error_message"] = why;
	return r;
}

// A bench.json as pinmatrix_bench writes it; `slow` scales reg_mr/movable.
json sample_bench(double slow = 1)
{
	json b = {{"context",
		   {{"date", "2026-11-30T07:00:00+00:00"},
		    {"pinmatrix.kernel_release", "6.1.0-57-amd64"},
		    {"pinmatrix.restricted_placement", "movable"}}},
		  {"benchmarks", json::array()}};
	auto &l = b["benchmarks"];
	l.push_back(one("harness/clock_read", 132, "ns"));
	l.push_back(one("harness/ibv_reg_mr_raw/4096/manual_time", 41.4, "us"));
	l.push_back(one("harness/register_memory/4096/manual_time", 49.5, "us", {{"reported_ns", 48555.8}}));
	l.push_back(one("probe/unpopulated/1073741824/manual_time", 1.82, "ms", {{"pages_per_s", 144e6}}));
	size_t i = 0;
	for (int64_t size = 4096; size <= (256 << 20); size *= 4, i++) {
		const double pages = double(size) / 4096;
		const double movable = (100 + 16 * pages) * slow, ordinary = 100 + 0.6 * pages;
		l.push_back(one("reg_mr/movable/" + std::to_string(size) + "/iterations:3/manual_time", movable, "us",
				{{"ns_per_page", movable * 1e3 / pages}, {"in_placement", 1.0}, {"pages", pages}}));
		if (size == (256 << 20))
			l.push_back(skipped("reg_mr/ordinary/" + std::to_string(size) + "/manual_time",
					    "256 MiB of fresh ordinary pages do not fit: 120 MiB free there"));
		else
			l.push_back(one("reg_mr/ordinary/" + std::to_string(size) + "/manual_time", ordinary, "us",
					{{"ns_per_page", ordinary * 1e3 / pages}, {"in_placement", 1.0}, {"pages", pages}}));
	}
	return b;
}

fs::path run_dir(const std::string &name, const json &bench)
{
	const fs::path dir = fs::temp_directory_path() / ("pinmatrix-bench-report-" + std::to_string(getpid())) / name;
	fs::create_directories(dir);
	json doc = {{"schema", "pinmatrix/1"},
		    {"kernel", {{"release", "6.1.0-57-amd64"}}},
		    {"cases", json::array()},
		    {"benchmarks", "bench.json"}};
	std::ofstream(dir / "results.json") << doc.dump(2);
	std::ofstream(dir / "bench.json") << bench.dump(2);
	return dir;
}

} // namespace

TEST(BenchReport, EntriesHaveFamiliesSizesAndSkips)
{
	const auto e = bench_entries(sample_bench());
	ASSERT_EQ(e.size(), 4u + 18u);
	EXPECT_EQ(e[0].name, "harness/clock_read");
	EXPECT_FALSE(e[0].bytes);
	EXPECT_DOUBLE_EQ(e[0].ns, 132);
	EXPECT_EQ(e[1].name, "harness/ibv_reg_mr_raw/4096");
	EXPECT_EQ(e[1].family, "harness/ibv_reg_mr_raw");
	EXPECT_DOUBLE_EQ(e[1].ns, 41400);
	EXPECT_EQ(e[4].family, "reg_mr/movable");
	EXPECT_DOUBLE_EQ(*e[4].bytes, 4096);
	EXPECT_TRUE(e[4].counters.count("ns_per_page"));
	EXPECT_NE(e.back().skipped.find("do not fit"), std::string::npos);
}

TEST(BenchReport, RepetitionsFoldIntoTheirMedianAndAggregatesServeAlone)
{
	json b = {{"benchmarks", json::array()}};
	for (double t : {30.0, 10.0, 20.0}) {
		json r = one("x/4096/manual_time", t, "us");
		r["run_name"] = "x/4096/manual_time";
		r["name"] = "x/4096/manual_time";
		b["benchmarks"].push_back(r);
	}
	json agg = one("y/4096/manual_time_median", 7, "ms");
	agg["run_name"] = "y/4096/manual_time";
	agg["run_type"] = "aggregate";
	agg["aggregate_name"] = "median";
	b["benchmarks"].push_back(agg);
	const auto e = bench_entries(b);
	ASSERT_EQ(e.size(), 2u);
	EXPECT_DOUBLE_EQ(e[0].ns, 20000);
	EXPECT_EQ(e[0].samples, 3u);
	EXPECT_DOUBLE_EQ(e[1].ns, 7e6);
}

TEST(BenchReport, HtmlPlotsLatencyAndPerPageBySizeAndListsSkips)
{
	const json bench = sample_bench();
	const std::string page = pinmatrix::format_html(json{{"schema", "pinmatrix/1"}, {"cases", json::array()}}, &bench);
	EXPECT_NE(page.find("<section id=\"benchmarks\">"), std::string::npos);
	size_t plots = 0;
	for (size_t at = 0; (at = page.find("<svg class=\"plot xy\"", at)) != std::string::npos; at++)
		plots++;
	EXPECT_EQ(plots, 2u); // reg_mr: time per iteration, ns per page
	EXPECT_NE(page.find(">movable</text>"), std::string::npos);
	EXPECT_NE(page.find(">ordinary</text>"), std::string::npos);
	EXPECT_NE(page.find("256 MiB</text>"), std::string::npos); // the x axis reaches 256 MiB
	EXPECT_NE(page.find("skipped: 256 MiB of fresh ordinary pages do not fit"), std::string::npos);
	EXPECT_NE(page.find("what the wrapper adds"), std::string::npos);
	// Without bench data there is no section.
	const std::string plain = pinmatrix::format_html(json{{"schema", "pinmatrix/1"}, {"cases", json::array()}});
	EXPECT_EQ(plain.find("id=\"benchmarks\""), std::string::npos);
}

// The suite against its anchors: gup_test's long-term pin beside the
// module's and ibv_reg_mr, the raw ibv_reg_mr beside the suite's
// registration; a pair with a skipped or absent side has no row.
TEST(BenchReport, AnchorRatiosPairTheSuiteWithGupTestAndTheRawCall)
{
	json b = sample_bench();
	auto &l = b["benchmarks"];
	l.push_back(one("harness/case_path/4096/iterations:20/manual_time", 414, "us", {{"reported_ns", 50000}}));
	l.push_back(one("pin/foll_pin_longterm/movable/1048576/iterations:256/manual_time", 3000, "us"));
	l.push_back(one("gup_test/pin_longterm/movable/4096/iterations:500/manual_time", 50, "us"));
	l.push_back(one("gup_test/pin_longterm/movable/1048576/iterations:256/manual_time", 2000, "us"));
	l.push_back(skipped("pin/foll_pin_longterm/movable/4096/manual_time", "no test module"));
	const auto r = anchor_ratios(bench_entries(b));
	ASSERT_EQ(r.size(), 5u);
	EXPECT_EQ(r[0].suite, "harness/register_memory/4096");
	EXPECT_EQ(r[0].anchor, "harness/ibv_reg_mr_raw/4096");
	EXPECT_NEAR(r[0].ratio, 49.5 / 41.4, 1e-9);
	EXPECT_NEAR(r[1].ratio, 414 / 41.4, 1e-9);
	// gup_test 4 KiB: the module's pin skipped, so only ibv_reg_mr's row.
	EXPECT_EQ(r[2].suite, "reg_mr/movable/4096");
	EXPECT_NEAR(r[2].ratio, (100 + 16) / 50.0, 1e-9);
	EXPECT_EQ(r[3].suite, "pin/foll_pin_longterm/movable/1048576");
	EXPECT_EQ(r[3].anchor, "gup_test/pin_longterm/movable/1048576");
	EXPECT_NEAR(r[3].ratio, 1.5, 1e-9);
	EXPECT_NE(r[3].what.find("movable 1 MiB"), std::string::npos) << r[3].what;
	EXPECT_EQ(r[4].suite, "reg_mr/movable/1048576");
	const std::string page = pinmatrix::format_html(json{{"schema", "pinmatrix/1"}, {"cases", json::array()}}, &b);
	EXPECT_NE(page.find("The suite against its anchors"), std::string::npos);
	EXPECT_NE(page.find("<td>1.50x</td>"), std::string::npos);
	// Without gup_test and case_path, only the raw call's pair.
	EXPECT_EQ(anchor_ratios(bench_entries(sample_bench())).size(), 1u);
}

TEST(BenchReport, CompareIsInformationalWithoutAThreshold)
{
	const auto c = compare_bench(sample_bench(), sample_bench(1.5), std::nullopt);
	EXPECT_EQ(c.regressions(), 0);
	bool slower = false;
	for (const auto &r : c.rows)
		if (r.name == "reg_mr/movable/1048576") {
			ASSERT_TRUE(r.before_ns && r.after_ns);
			EXPECT_NEAR(r.ratio, 1.5, 1e-9);
			slower = r.slower;
		}
	EXPECT_TRUE(slower);
	const std::string text = format_bench_comparison(c);
	EXPECT_NE(text.find("informational"), std::string::npos) << text;
	EXPECT_NE(text.find("1.50x"), std::string::npos) << text;
}

TEST(BenchReport, ThresholdMakesASlowdownARegression)
{
	EXPECT_EQ(compare_bench(sample_bench(), sample_bench(1.5), 60.0).regressions(), 0);
	EXPECT_EQ(compare_bench(sample_bench(), sample_bench(1.5), 10.0).regressions(), 9);
	EXPECT_EQ(compare_bench(sample_bench(), sample_bench(), 10.0).regressions(), 0);
}

TEST(BenchReport, CommandComparesBenchJsonOfTwoRuns)
{
	const fs::path before = run_dir("old", sample_bench()), after = run_dir("new", sample_bench(1.5));
	using pinmatrix::test::run_pinmatrix;
	auto r = run_pinmatrix("report --compare " + before.string() + " " + after.string());
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("benchmarks (bench.json)"), std::string::npos) << r.output;
	r = run_pinmatrix("report --compare " + before.string() + " " + after.string() + " --bench-threshold 10");
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find("benchmark result: 9 slower than +10%: exit 1"), std::string::npos) << r.output;
	r = run_pinmatrix("report " + before.string() + " --bench-threshold 10");
	EXPECT_EQ(r.exit_code, 2) << r.output;
	// `report DIR` puts them into report.html.
	r = run_pinmatrix("report " + after.string());
	EXPECT_EQ(r.exit_code, 0) << r.output;
	std::ifstream html(after / "report.html");
	const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
	EXPECT_NE(page.find("<section id=\"benchmarks\">"), std::string::npos);
	fs::remove_all(before.parent_path());
}

TEST(BenchReport, AMissingBenchFileIsAWarningNotAFailure)
{
	const fs::path dir = run_dir("missing", sample_bench());
	fs::remove(dir / "bench.json");
	const auto r = pinmatrix::test::run_pinmatrix("report " + dir.string());
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("warning: " + (dir / "bench.json").string()), std::string::npos) << r.output;
	EXPECT_TRUE(fs::exists(dir / "report.html"));
	fs::remove_all(dir.parent_path());
}
