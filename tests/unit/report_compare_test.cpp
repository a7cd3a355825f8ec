// SPDX-License-Identifier: GPL-2.0
// `pinmatrix report DIR` and `pinmatrix report --compare OLD NEW` as a QA
// gate runs them: exit 1 on a verdict regression (pass -> fail, error or skip, a
// case gone), 0 otherwise, latency medians with their sample counts; and
// for bad input exit 2, one clear message, nothing written.

#include <algorithm>

#include <gtest/gtest.h>

#include "../command.hpp"
#include "compare.hpp"
#include "report_fixtures.hpp"
#include "reports.hpp"
#include "run_files.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

const std::vector<std::string> report_files = {"results.ktap", "junit.xml", "report.html", "summary.md"};

fs::path save_run(const temp_dir &dir, const std::string &name, const json &doc)
{
	const fs::path run = dir / name;
	write_file(run / "results.json", doc.dump(2));
	return run;
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

} // namespace

TEST(ReportCompare, VerdictChangesAreClassified)
{
	using pinmatrix::verdict;
	json before = sample_run();
	json after = sample_run();
	record(after, "B")["verdict"] = "fail";
	record(after, "C")["verdict"] = "error";
	record(after, "D")["verdict"] = "skip";
	record(before, "movable-mlock")["verdict"] = "fail";
	record(before, "movable-gup-ref")["verdict"] = "fail";
	record(after, "movable-gup-ref")["verdict"] = "error";
	after["cases"].erase(after["cases"].end() - 1);
	after["cases"].push_back({{"id", "ualink/new"}, {"verdict", "pass"}});

	const auto c = compare_results(before, after);
	auto change_of = [&](const std::string &key) {
		for (const auto &cc : c.cases)
			if (cc.label == key)
				return cc.change;
		ADD_FAILURE() << "no " << key;
		return verdict_change::unchanged;
	};
	EXPECT_EQ(change_of("A"), verdict_change::unchanged);
	EXPECT_EQ(change_of("B"), verdict_change::regression);
	EXPECT_EQ(change_of("C"), verdict_change::regression);
	EXPECT_EQ(change_of("D"), verdict_change::skipped);
	EXPECT_EQ(change_of("movable-gup-ref"), verdict_change::changed);
	EXPECT_EQ(change_of("movable-mlock"), verdict_change::improvement);
	EXPECT_EQ(change_of(before["cases"].back()["id"]), verdict_change::disappeared);
	EXPECT_EQ(change_of("ualink/new"), verdict_change::appeared);
	EXPECT_EQ(c.regressions(), 4);
	EXPECT_EQ(c.exit_code(), 1);
	EXPECT_EQ(c.cases.size(), before["cases"].size() + 1);
}

TEST(ReportCompare, RegressionExitsOneAndNamesTheCase)
{
	temp_dir dir;
	json worse = sample_run();
	record(worse, "B")["verdict"] = "fail";
	record(worse, "B")["reason"] = "registration returned ok, expected ENOMEM";
	const auto old_run = save_run(dir, "old", sample_run());
	const auto new_run = save_run(dir, "new", worse);
	auto r = run_pinmatrix("report --compare " + shell_quoted(old_run) + " " + shell_quoted(new_run / "results.json"));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find("pass -> fail"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("REGRESSION"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("expected ENOMEM"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("1 verdict regression (B)"), std::string::npos) << r.output;
}

TEST(ReportCompare, ImprovementAndSameRunExitZero)
{
	temp_dir dir;
	const auto failing = save_run(dir, "failing", run_with_failures());
	const auto passing = save_run(dir, "passing", sample_run());
	auto better = run_pinmatrix("report --compare " + shell_quoted(failing) + " " + shell_quoted(passing));
	EXPECT_EQ(better.exit_code, 0) << better.output;
	EXPECT_NE(better.output.find("improvement"), std::string::npos) << better.output;
	EXPECT_NE(better.output.find("no verdict regression"), std::string::npos) << better.output;

	auto same = run_pinmatrix("report --compare " + shell_quoted(passing) + " " + shell_quoted(passing));
	EXPECT_EQ(same.exit_code, 0) << same.output;
}

// A QA gate between two kernels: on the new one the module does not load,
// so every case SKIPs. That must fail the gate, not pass it quietly.
TEST(ReportCompare, PassToSkipIsARegression)
{
	temp_dir dir;
	auto r = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "old", sample_run())) + " " +
			       shell_quoted(save_run(dir, "new", run_all_skipped())));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find("pass -> skip"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("REGRESSION (now skipped): /dev/pinmatrix is absent"), std::string::npos) << r.output;
	const size_t n = sample_run()["cases"].size();
	EXPECT_NE(r.output.find(std::to_string(n) + " verdict regressions"), std::string::npos) << r.output;

	// One case skipped is enough; skip -> pass is an improvement.
	json one = sample_run();
	record(one, "A")["verdict"] = "skip";
	record(one, "A")["reason"] = "no RDMA device";
	auto single = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "base", sample_run())) + " " +
				    shell_quoted(save_run(dir, "one", one)));
	EXPECT_EQ(single.exit_code, 1) << single.output;
	EXPECT_NE(single.output.find("1 verdict regression (A)"), std::string::npos) << single.output;
	auto back = run_pinmatrix("report --compare " + shell_quoted(dir / "one") + " " + shell_quoted(dir / "base"));
	EXPECT_EQ(back.exit_code, 0) << back.output;
	EXPECT_NE(back.output.find("improvement"), std::string::npos) << back.output;
}

// Between two flavours of a kernel (plain and cloud) many rows are skipped
// on the second for a few reasons: each row, then the reasons counted, the
// most first; a reason read from the file is one line, escapes dropped.
TEST(ReportCompare, NowSkippedRowsAreCountedByReason)
{
	temp_dir dir;
	json cloud = sample_run();
	for (const char *id : {"A", "B", "C"}) {
		record(cloud, id)["verdict"] = "skip";
		record(cloud, id)["reason"] = "the kernel has no Soft-RoCE";
	}
	record(cloud, "D")["verdict"] = "skip";
	record(cloud, "D")["reason"] = "the kernel has no DRM\x1b[31m\nforged";
	auto r = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "plain", sample_run())) + " " +
			       shell_quoted(save_run(dir, "cloud", cloud)));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find("now skipped, by reason (4 cases):\n  3 cases: the kernel has no Soft-RoCE\n"
				"  1 case: the kernel has no DRM"),
		  std::string::npos)
		<< r.output;
	EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
	EXPECT_EQ(r.output.find("\nforged"), std::string::npos) << r.output;

	// One row skipped: no count to make.
	json one = sample_run();
	record(one, "A")["verdict"] = "skip";
	auto single = run_pinmatrix("report --compare " + shell_quoted(dir / "plain") + " " +
				    shell_quoted(save_run(dir, "one", one)));
	EXPECT_EQ(single.output.find("by reason"), std::string::npos) << single.output;
}

TEST(ReportCompare, MissingCaseIsARegression)
{
	temp_dir dir;
	json fewer = sample_run();
	const std::string gone = fewer["cases"].back()["id"];
	fewer["cases"].erase(fewer["cases"].end() - 1);
	auto r = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "old", sample_run())) + " " +
			       shell_quoted(save_run(dir, "new", fewer)));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	EXPECT_NE(r.output.find(gone), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("(missing)"), std::string::npos) << r.output;
}

TEST(ReportCompare, LatencyMediansWithSampleCounts)
{
	temp_dir dir;
	const json old_doc = sample_run();
	json slower = sample_run();
	for (auto &c : slower["cases"])
		if (c["latency_ns"].is_number())
			c["latency_ns"] = c["latency_ns"].get<int64_t>() * 2;
	auto r = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "old", old_doc)) + " " +
			       shell_quoted(save_run(dir, "new", slower)));
	EXPECT_EQ(r.exit_code, 0) << r.output;
	for (const auto &c : old_doc["cases"]) {
		if (!c["latency_ns"].is_number())
			continue;
		const std::string median = report::format_ns(c["latency_ns"].get<double>(), true) + " (n=1)";
		EXPECT_NE(r.output.find(median), std::string::npos) << median << "\n" << r.output;
	}
	EXPECT_NE(r.output.find("+100.0%"), std::string::npos) << r.output;

	// Runs with several samples per case also say how they spread.
	auto merged = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "m1", run_of_several_kernels())) +
				    " " + shell_quoted(save_run(dir, "m2", run_of_several_kernels())));
	EXPECT_EQ(merged.exit_code, 0) << merged.output;
	EXPECT_NE(merged.output.find("IQR"), std::string::npos) << merged.output;
	EXPECT_NE(merged.output.find("n=5"), std::string::npos) << merged.output;
	EXPECT_NE(merged.output.find("by suite, placement and case id"), std::string::npos) << merged.output;
}

// Five registrations a case (--latency-samples): a latency whose new
// samples all lie above the old ones is flagged, one that moved within the
// spread is not; a single sample a side never is. Informational: exit 0.
TEST(ReportCompare, LatencyBeyondTheSpreadIsFlagged)
{
	auto with_samples = [](std::vector<double> a_ns, std::vector<double> b_ns) {
		json doc = sample_run();
		record(doc, "A")["observed"]["latency_samples_ns"] = a_ns;
		record(doc, "B")["observed"]["latency_samples_ns"] = b_ns;
		return doc;
	};
	const json before = with_samples({900, 1000, 1100, 1200, 1300}, {900, 1000, 1100, 1200, 1300});
	const json after = with_samples({1400, 1500, 1600, 1700, 1800}, {1000, 1100, 1250, 1300, 1400});
	const auto c = compare_results(before, after);
	const auto find = [&](const std::string &id) {
		return *std::find_if(c.cases.begin(), c.cases.end(),
				     [&](const case_comparison &cc) { return cc.key.id == id; });
	};
	ASSERT_NE(find("A").latency_beyond_spread(), nullptr);
	EXPECT_STREQ(find("A").latency_beyond_spread(), "slower");
	EXPECT_EQ(find("B").latency_beyond_spread(), nullptr);	// +13.6%, within the spread
	const auto faster = compare_results(after, before);
	EXPECT_STREQ(std::find_if(faster.cases.begin(), faster.cases.end(),
				  [](const case_comparison &cc) { return cc.key.id == "A"; })
			     ->latency_beyond_spread(),
		     "faster");
	// One sample a side (sample_run's latency_ns alone): never flagged.
	for (const auto &cc : compare_results(sample_run(), sample_run()).cases)
		EXPECT_EQ(cc.latency_beyond_spread(), nullptr) << cc.label;

	temp_dir dir;
	const auto r = run_pinmatrix("report --compare " + shell_quoted(save_run(dir, "old", before)) + " " +
				     shell_quoted(save_run(dir, "new", after)));
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("+45.5%, slower beyond the spread"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("1 case(s) moved beyond the spread"), std::string::npos) << r.output;

	// --latency: the slower one is a regression, the faster one is not.
	const auto gated = compare_results(before, after, {.latency = true});
	EXPECT_EQ(gated.regressions(), 1);
	const auto latency = run_pinmatrix("report --latency --compare " + shell_quoted(save_run(dir, "old", before)) +
					   " " + shell_quoted(save_run(dir, "new", after)));
	EXPECT_EQ(latency.exit_code, 1) << latency.output;
	EXPECT_NE(latency.output.find("1 latency regression (A): exit 1"), std::string::npos) << latency.output;
	EXPECT_EQ(compare_results(after, before, {.latency = true}).regressions(), 0);
	EXPECT_EQ(run_pinmatrix("report --latency " + shell_quoted(save_run(dir, "new", after))).exit_code, 2);
}

// The kernel-update gate (issue 12): cases match by suite, placement and
// case id whatever kernel each run booted.
namespace {

const char *const formats[] = {"text", "md", "json"};

std::string compare_command(const fs::path &old_run, const fs::path &new_run, const std::string &format = "")
{
	return "report --compare " + shell_quoted(old_run) + " " + shell_quoted(new_run) +
	       (format.empty() ? "" : " --format " + format);
}

// stdout alone: what a machine reads.
json compare_json(const fs::path &old_run, const fs::path &new_run, int *exit_code = nullptr)
{
	const auto r = shell(std::string(PINMATRIX_BIN) + " " + compare_command(old_run, new_run, "json"), false);
	if (exit_code)
		*exit_code = r.exit_code;
	return json::parse(r.output);
}

const case_comparison &row(const comparison &c, const std::string &id, const std::string &release_after)
{
	for (const auto &cc : c.cases)
		if (cc.key.id == id && cc.kernel_after && cc.kernel_after->release == release_after)
			return cc;
	throw std::runtime_error("no row " + id + " on " + release_after);
}

} // namespace

TEST(ReportCompareKernels, KernelUpdateMatchesEveryCase)
{
	const json old_doc = sample_run();
	const json new_doc = on_kernel(sample_run(), "6.12.9-pinmatrix");
	const auto c = compare_results(old_doc, new_doc);
	ASSERT_EQ(c.cases.size(), old_doc["cases"].size());
	for (const auto &cc : c.cases) {
		EXPECT_EQ(cc.change, verdict_change::unchanged) << cc.label;
		ASSERT_TRUE(cc.kernel_before && cc.kernel_after) << cc.label;
		EXPECT_EQ(cc.kernel_before->release, "6.1.0-57-amd64");
		EXPECT_EQ(cc.kernel_after->release, "6.12.9-pinmatrix");
	}
	EXPECT_EQ(c.before.kernels, std::vector<std::string>{"6.1.0-57-amd64"});
	EXPECT_EQ(c.after.kernels, std::vector<std::string>{"6.12.9-pinmatrix"});
	EXPECT_FALSE(c.kernels_per_row());
	EXPECT_EQ(c.exit_code(), 0);

	temp_dir dir;
	const auto old_run = save_run(dir, "old", old_doc), new_run = save_run(dir, "new", new_doc);
	for (const char *format : formats) {
		auto r = run_pinmatrix(compare_command(old_run, new_run, format));
		EXPECT_EQ(r.exit_code, 0) << format << "\n" << r.output;
		const char *verdict = std::string(format) == "json" ? "\"regressions\": 0" : "no verdict regression";
		EXPECT_NE(r.output.find(verdict), std::string::npos) << format << "\n" << r.output;
		EXPECT_NE(r.output.find("6.12.9-pinmatrix"), std::string::npos) << format << "\n" << r.output;
	}
	const auto text = run_pinmatrix(compare_command(old_run, new_run)).output;
	EXPECT_NE(text.find("kernel 6.1.0-57-amd64: pass"), std::string::npos) << text;
	EXPECT_NE(text.find("kernel 6.12.9-pinmatrix: pass"), std::string::npos) << text;
	EXPECT_NE(text.find("none: all " + std::to_string(c.cases.size()) + " cases have the same verdict"),
		  std::string::npos) << text;
}

TEST(ReportCompareKernels, RegressionOnTheNewKernelExitsOneInEveryFormat)
{
	json worse = on_kernel(sample_run(), "6.12.9-pinmatrix");
	record(worse, "B")["verdict"] = "fail";
	record(worse, "B")["reason"] = "registration returned ok, expected ENOMEM";
	temp_dir dir;
	const auto old_run = save_run(dir, "old", sample_run()), new_run = save_run(dir, "new", worse);
	for (const char *format : formats) {
		auto r = run_pinmatrix(compare_command(old_run, new_run, format));
		EXPECT_EQ(r.exit_code, 1) << format << "\n" << r.output;
		if (std::string(format) != "json") {
			EXPECT_NE(r.output.find("1 verdict regression (B): exit 1"), std::string::npos)
				<< format << "\n" << r.output;
		}
	}
	int exit_code = -1;
	const json doc = compare_json(old_run, new_run, &exit_code);
	EXPECT_EQ(exit_code, 1);
	EXPECT_EQ(doc["regressions"], 1);
	EXPECT_EQ(doc["exit_code"], 1);
	for (const auto &r : doc["cases"])
		EXPECT_EQ(r["regression"], r["id"] == "B") << r.dump();
}

TEST(ReportCompareKernels, CaseMissingOnTheNewKernelIsARegression)
{
	json fewer = on_kernel(sample_run(), "6.12.9-pinmatrix");
	const std::string gone = fewer["cases"].back()["id"];
	fewer["cases"].erase(fewer["cases"].end() - 1);
	const auto c = compare_results(sample_run(), fewer);
	EXPECT_EQ(c.regressions(), 1);
	EXPECT_EQ(c.cases.back().label, gone);
	EXPECT_EQ(c.cases.back().change, verdict_change::disappeared);
	temp_dir dir;
	const auto old_run = save_run(dir, "old", sample_run()), new_run = save_run(dir, "new", fewer);
	for (const char *format : formats) {
		auto r = run_pinmatrix(compare_command(old_run, new_run, format));
		EXPECT_EQ(r.exit_code, 1) << format << "\n" << r.output;
		EXPECT_NE(r.output.find(gone), std::string::npos) << format << "\n" << r.output;
	}
	EXPECT_NE(run_pinmatrix(compare_command(old_run, new_run)).output.find("REGRESSION (case missing)"),
		  std::string::npos);
}

// A matrix run (one kernel, two boots) before and after the kernel update:
// every case pairs with the same boot's, whatever the release.
TEST(ReportCompareKernels, MergedRunsOfOneKernelEachSide)
{
	const json old_doc = merged_run({{"debian", "6.1.0-57-amd64"}});
	const json new_doc = merged_run({{"debian", "6.12.9-pinmatrix"}});
	const auto c = compare_results(old_doc, new_doc);
	ASSERT_EQ(c.cases.size(), old_doc["cases"].size());
	for (const auto &cc : c.cases) {
		EXPECT_EQ(cc.change, verdict_change::unchanged) << cc.label;
		ASSERT_TRUE(cc.kernel_before && cc.kernel_after) << cc.label;
		EXPECT_EQ(cc.kernel_before->boot, cc.kernel_after->boot) << cc.label;
		EXPECT_EQ(cc.kernel_after->release, "6.12.9-pinmatrix");
	}
	EXPECT_TRUE(c.kernels_per_row());
	EXPECT_EQ(c.exit_code(), 0);

	// One boot each side, other names and boots: matched all the same.
	const auto single = compare_results(merged_run({{"debian", "6.1.0-57-amd64"}}, {"movable"}),
					    merged_run({{"build", "6.12.9-pinmatrix"}}, {"cma"}));
	EXPECT_EQ(single.cases.size(), sample_run()["cases"].size());
	EXPECT_EQ(single.regressions(), 0);
	EXPECT_FALSE(single.kernels_per_row());

	temp_dir dir;
	auto r = run_pinmatrix(compare_command(save_run(dir, "old", old_doc), save_run(dir, "new", new_doc)));
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("debian 6.1.0-57-amd64 (cma) -> debian 6.12.9-pinmatrix (cma)"), std::string::npos)
		<< r.output;
}

// Several kernels a side: each pairs with the same matrix kernel's (and
// boot's), else in kernel-series order.
TEST(ReportCompareKernels, SeveralKernelsPairByNameThenInSeriesOrder)
{
	const json old_doc = merged_run({{"lts", "6.1.0-57-amd64"}, {"stable", "6.12.9"}});
	auto releases_paired = [&](const json &new_doc) {
		const auto c = compare_results(old_doc, new_doc);
		EXPECT_EQ(c.regressions(), 0);
		EXPECT_EQ(c.cases.size(), old_doc["cases"].size());
		EXPECT_EQ(row(c, "B", "6.12.9").kernel_before->release, "6.1.0-57-amd64");
		EXPECT_EQ(row(c, "B", "7.2.0").kernel_before->release, "6.12.9");
		EXPECT_EQ(row(c, "B", "7.2.0").kernel_before->boot, row(c, "B", "7.2.0").kernel_after->boot);
	};
	releases_paired(merged_run({{"lts", "6.12.9"}, {"stable", "7.2.0"}}));
	// Other names, and in the other order in the file: by series.
	releases_paired(merged_run({{"next", "7.2.0"}, {"current", "6.12.9"}}));
	// The same name goes first: debian moved on to 7.2, "cma" stayed on 6.12.
	const auto by_name = compare_results(merged_run({{"debian", "6.1.0-57-amd64"}, {"cma", "6.12.9"}}),
					     merged_run({{"cma", "6.12.9"}, {"debian", "7.2.0"}}));
	EXPECT_EQ(row(by_name, "A", "7.2.0").kernel_before->name, "debian");
	EXPECT_EQ(row(by_name, "A", "6.12.9").kernel_before->name, "cma");

	// A kernel NEW no longer runs: its cases are missing.
	const auto fewer = compare_results(old_doc, merged_run({{"stable", "7.2.0"}}));
	EXPECT_EQ(fewer.regressions(), int(old_doc["cases"].size() / 2));
	EXPECT_EQ(row(fewer, "A", "7.2.0").kernel_before->name, "stable");
}

TEST(ReportCompareKernels, JsonHasEveryRowAndItsFields)
{
	json worse = on_kernel(sample_run(), "6.12.9-pinmatrix");
	record(worse, "B")["verdict"] = "fail";
	temp_dir dir;
	const json old_doc = sample_run();
	const json doc = compare_json(save_run(dir, "old", old_doc), save_run(dir, "new", worse));
	EXPECT_EQ(doc["schema"], "pinmatrix-compare/1");
	EXPECT_EQ(doc["old"]["kernels"], json::array({"6.1.0-57-amd64"}));
	EXPECT_EQ(doc["new"]["kernels"], json::array({"6.12.9-pinmatrix"}));
	EXPECT_EQ(doc["new"]["fail"], 1);
	ASSERT_EQ(doc["cases"].size(), old_doc["cases"].size());
	for (size_t i = 0; i < doc["cases"].size(); i++) {
		const json &r = doc["cases"][i], &c = old_doc["cases"][i];
		EXPECT_EQ(r["id"], c["id"]);
		EXPECT_EQ(r["suite"], "pin");
		EXPECT_EQ(r["placement"], c["placement"]);
		EXPECT_EQ(r["old"]["verdict"], "pass");
		EXPECT_EQ(r["new"]["verdict"], r["id"] == "B" ? "fail" : "pass");
		EXPECT_EQ(r["old"]["kernel"], "6.1.0-57-amd64 movablecore=512M");
		EXPECT_EQ(r["new"]["kernel"], "6.12.9-pinmatrix movablecore=512M");
		EXPECT_EQ(r["change"], r["id"] == "B" ? "regression" : "unchanged");
		EXPECT_TRUE(r["detail"].is_string());
		EXPECT_EQ(r["old"]["latency"]["median_ns"], c["latency_ns"]);
		EXPECT_EQ(r["old"]["latency"]["n"], 1);
		EXPECT_NEAR(r["median_change_pct"].get<double>(), 0, 1e-9);
	}
	EXPECT_TRUE(doc["benchmarks"]["rows"].empty());

	// Another suite's records: the suite from the record, else the id.
	const json other = compare_json(save_run(dir, "a", run_with_another_suite()),
					save_run(dir, "b", run_with_another_suite()));
	for (const auto &r : other["cases"])
		EXPECT_EQ(r["suite"], std::string(r["id"]).rfind("ualink/", 0) == 0 ? "ualink" : "pin") << r.dump();
}

TEST(ReportCompareKernels, MarkdownHasATableRowPerCase)
{
	json worse = on_kernel(sample_run(), "6.12.9-pinmatrix");
	record(worse, "B")["verdict"] = "fail";
	temp_dir dir;
	const auto r =
		run_pinmatrix(compare_command(save_run(dir, "old", sample_run()), save_run(dir, "new", worse), "md"));
	EXPECT_EQ(r.exit_code, 1) << r.output;
	for (const auto &c : sample_run()["cases"]) {
		const std::string start = "\n| " + c["id"].get<std::string>() + " | pin | " +
					  c["placement"].get<std::string>() + " | PASS | " +
					  (c["id"] == "B" ? "FAIL | **REGRESSION** |" : "PASS | unchanged |");
		EXPECT_NE(r.output.find(start), std::string::npos) << start << "\n" << r.output;
	}
	EXPECT_NE(r.output.find("| old | "), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("| 6.12.9-pinmatrix | 9 | 1 | 0 | 0 |"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"), std::string::npos)
		<< r.output;
}

// A bad --format is told before either run is read, and nothing is written.
TEST(ReportCompareKernels, BadFormatIsAUsageError)
{
	temp_dir dir;
	const auto good = save_run(dir, "good", sample_run());
	for (const std::string &args :
	     {compare_command(good, good, "yaml"), compare_command(dir / "nonexistent", dir / "nonexistent", "yaml")}) {
		auto r = run_pinmatrix(args);
		EXPECT_EQ(r.exit_code, 2) << r.output;
		EXPECT_EQ(r.output, "pinmatrix: --format: 'yaml': expected text, md or json (see --help)\n");
	}
	auto alone = run_pinmatrix("report " + shell_quoted(good) + " --format md");
	EXPECT_EQ(alone.exit_code, 2) << alone.output;
	EXPECT_NE(alone.output.find("--format goes with --compare"), std::string::npos) << alone.output;
	const std::vector<std::string> only_the_run = {"good", "good/results.json"};
	EXPECT_EQ(listing(dir.path()), only_the_run);
}

TEST(ReportCommand, WritesEveryFormatNextToResults)
{
	temp_dir dir;
	const json doc = run_with_failures();
	const auto run = save_run(dir, "run", doc);
	auto r = run_pinmatrix("report " + shell_quoted(run));
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_EQ(read_file(run / "results.ktap"), format_ktap(doc));
	EXPECT_EQ(read_file(run / "junit.xml"), format_junit(doc));
	// Both link the run's files: here results.json.
	const auto files = report::find_run_files(doc, {run / "results.json", run, {}});
	ASSERT_EQ(files.run.size(), 1u);
	EXPECT_EQ(read_file(run / "report.html"), format_html(doc, nullptr, &files));
	EXPECT_EQ(read_file(run / "summary.md"), format_summary_markdown(doc, &files));
	for (const auto &f : listing(run))
		EXPECT_NE(f.front(), '.') << f;	// no temporary file left
	// The file itself names the run as well as its directory.
	EXPECT_EQ(run_pinmatrix("report " + shell_quoted(run / "results.json")).exit_code, 0);
}

TEST(ReportCommand, BadInputExitsTwoWithOneMessageAndWritesNothing)
{
	temp_dir dir;
	const fs::path empty = dir / "empty";
	fs::create_directories(empty);
	write_file(dir / "not-json" / "results.json", "{ this is not JSON");
	json other = sample_run();
	other["schema"] = "pinmatrix/0";
	write_file(dir / "other-schema" / "results.json", other.dump());
	write_file(dir / "no-cases" / "results.json", json{{"schema", "pinmatrix/1"}}.dump());
	const auto good = save_run(dir, "good", sample_run());
	const auto before = listing(dir.path());

	struct {
		std::string args;
		std::string says;
	} bad[] = {
		{"report " + shell_quoted(dir / "nonexistent"), "nonexistent: no such directory or file"},
		{"report " + shell_quoted(empty), "no results.json"},
		{"report " + shell_quoted(dir / "not-json"), "not valid JSON"},
		{"report " + shell_quoted(dir / "other-schema"), "expected \"pinmatrix/1\""},
		{"report " + shell_quoted(dir / "no-cases"), "no \"cases\" array"},
		{"report", "give a run directory"},
		{"report --compare " + shell_quoted(good), "--compare"},
		{"report --compare " + shell_quoted(good) + " " + shell_quoted(dir / "nonexistent"), "nonexistent"},
		{"report --compare " + shell_quoted(dir / "other-schema") + " " + shell_quoted(good), "schema"},
		{"report " + shell_quoted(good) + " --compare " + shell_quoted(good) + " " + shell_quoted(good), "not both"},
	};
	for (const auto &b : bad) {
		auto r = run_pinmatrix(b.args);
		EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.output;
		EXPECT_NE(r.output.find(b.says), std::string::npos) << b.args << "\n" << r.output;
		EXPECT_LE(lines_of(r.output), 2u) << b.args << "\n" << r.output;
	}
	EXPECT_EQ(listing(dir.path()), before) << "bad input wrote something";
}

TEST(ReportCommand, EveryRunWritesEveryFormat)
{
	if (fs::exists("/dev/pinmatrix"))
		GTEST_SKIP() << "the module is loaded here: the run would pin pages for real";
	temp_dir dir;
	auto r = run_pinmatrix("run --cases A,D --out " + shell_quoted(dir / "run"));
	EXPECT_EQ(r.exit_code, 4) << r.output;	// all skipped: no module
	const json doc = json::parse(read_file(dir / "run" / "results.json"));
	for (const auto &f : report_files)
		EXPECT_TRUE(fs::exists(dir / "run" / f)) << f;
	EXPECT_EQ(read_file(dir / "run" / "results.ktap"), format_ktap(doc));
	const auto files = report::find_run_files(doc, {dir / "run" / "results.json", dir / "run", {}});
	EXPECT_EQ(read_file(dir / "run" / "summary.md"), format_summary_markdown(doc, &files));
}

// What a results file says (a case id, a kernel release, a reason) reaches
// the terminal and the Markdown as one line without a control character:
// no escape sequence (a window title, a cleared screen), no newline that
// starts a heading or a forged row (issue 32, item 5).
TEST(ReportCompare, HostileStringsFromResultsCannotForgeOutput)
{
	const std::string hostile = "A\x1b]0;pwned\x07\n# EVIL\r\x1b[2J<img src=x onerror=alert(1)>";
	auto with_hostile = [&](json doc, const std::string &release) {
		record(doc, "A")["id"] = hostile;
		not_observed(record(doc, "B"), "fail", "bad\n# EVIL heading\x1b[31m");
		return on_kernel(doc, release);
	};
	json before = with_hostile(sample_run(), "6.1.0");
	record(before, "B")["verdict"] = "pass";
	const json after = with_hostile(sample_run(), "6.1.1\n# EVIL kernel\x1b[2J");
	temp_dir dir;
	const auto old_run = save_run(dir, "old", before), new_run = save_run(dir, "new", after);
	for (const char *format : {"text", "md"}) {
		const auto r = run_pinmatrix(std::string("report --compare ") + shell_quoted(old_run) + " " +
					     shell_quoted(new_run) + " --format " + format);
		EXPECT_EQ(r.exit_code, 1) << r.output;
		for (char c : r.output) {
			EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << format << ": byte " << int(c);
		}
		EXPECT_EQ(r.output.find("\n# EVIL"), std::string::npos) << format << "\n" << r.output;
		if (std::string(format) == "md") {
			EXPECT_EQ(r.output.find("<img"), std::string::npos) << r.output;
		}
	}
}
