// SPDX-License-Identifier: GPL-2.0
#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

#include "bench_report.hpp"
#include "compare.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

void write_reports(const fs::path &dir, const nlohmann::json &doc)
{
	// Render everything first: a formatting failure writes nothing.
	std::string bench_problem;
	const auto bench = report::load_bench(dir, doc, &bench_problem);
	if (!bench_problem.empty())
		std::cerr << "pinmatrix: warning: " << bench_problem << ": report.html without benchmarks\n";
	const std::vector<std::pair<const char *, std::string>> files = {
		{"results.ktap", format_ktap(doc)},
		{"junit.xml", format_junit(doc)},
		{"report.html", format_html(doc, bench ? &*bench : nullptr)},
		{"summary.md", format_summary_markdown(doc)},
	};
	for (const auto &[file, text] : files)
		report::write_text_atomically(dir / file, text);
}

void regenerate_reports(const fs::path &dir_or_file)
{
	const auto results = report::load_results(dir_or_file);
	const fs::path dir = results.path.parent_path().empty() ? fs::path(".") : results.path.parent_path();
	write_reports(dir, results.doc);
	const auto run = report::view_run(results.doc);
	std::cout << "pinmatrix report: " << report::upper_name(run.overall) << " (pass " << run.pass << ", fail "
		  << run.fail << ", skip " << run.skip << ", error " << run.error << "); wrote results.ktap, "
		  << "junit.xml, report.html and summary.md in " << dir.string() << "\n";
}

} // namespace pinmatrix

namespace pinmatrix {

int report_command(const std::filesystem::path &dir, const std::vector<std::filesystem::path> &compare,
		   std::optional<double> bench_threshold_pct, const std::string &format)
{
	// The format first: a bad one is told before anything is read.
	if (!format.empty() && compare.empty())
		throw usage_error("report: --format goes with --compare OLD NEW");
	const compare_format compare_as = compare_format_of(format.empty() ? "text" : format);
	if (!compare.empty()) {
		if (!dir.empty())
			throw usage_error("report: give a run directory or --compare OLD NEW, not both");
		if (compare.size() != 2)
			throw usage_error("report --compare: expected OLD and NEW");
		if (bench_threshold_pct && !(*bench_threshold_pct > 0))
			throw usage_error("report --bench-threshold: a percentage above 0");
		return compare_runs(compare[0], compare[1], compare_as, bench_threshold_pct, std::cout);
	}
	if (bench_threshold_pct)
		throw usage_error("report: --bench-threshold goes with --compare OLD NEW");
	if (dir.empty())
		throw usage_error("report: give a run directory (or its results.json), or --compare OLD NEW");
	regenerate_reports(dir);
	return 0;
}

} // namespace pinmatrix
