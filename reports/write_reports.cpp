// SPDX-License-Identifier: GPL-2.0
#include <algorithm>
#include <iterator>
#include <iostream>
#include <utility>
#include <vector>

#include "atomic_file.hpp"
#include "bench_report.hpp"
#include "compare.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "run_files.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// Every report of doc, rendered before any is written: a formatting failure
// writes nothing. The benchmarks are those results.json names beside it;
// report.html and summary.md link the run's files that exist (or are
// written with them, place.written).
file_set render_reports(const report::report_place &place, const nlohmann::json &doc)
{
	const fs::path run_dir = place.results.parent_path().empty() ? fs::path(".") : place.results.parent_path();
	std::string bench_problem;
	const auto bench = report::load_bench(run_dir, doc, &bench_problem);
	if (!bench_problem.empty())
		std::cerr << "pinmatrix: warning: " << bench_problem << ": report.html without benchmarks\n";
	const auto files = report::find_run_files(doc, place);
	return {
		{"results.ktap", format_ktap(doc)},
		{"junit.xml", format_junit(doc)},
		{"report.html", format_html(doc, bench ? &*bench : nullptr, &files)},
		{"summary.md", format_summary_markdown(doc, &files)},
	};
}

} // namespace

void write_reports(const fs::path &dir, const nlohmann::json &doc, file_set also)
{
	report::report_place place{dir / "results.json", dir, {}};
	for (const auto &f : also)
		place.written.insert(f.first);
	file_set reports = render_reports(place, doc);
	also.insert(also.end(), std::make_move_iterator(reports.begin()), std::make_move_iterator(reports.end()));
	write_file_set(dir, also);
}

void regenerate_reports(const fs::path &dir_or_file, const fs::path &out)
{
	const auto results = report::load_results(dir_or_file);
	const fs::path run_dir = results.path.parent_path().empty() ? fs::path(".") : results.path.parent_path();
	const fs::path dir = out.empty() ? run_dir : out;
	const auto files = render_reports({results.path, dir, {}}, results.doc);
	fs::create_directories(dir);
	write_file_set(dir, files);
	const auto run = report::view_run(results.doc);
	std::cout << "pinmatrix report: " << upper_name(run.overall) << " (pass " << run.pass << ", fail "
		  << run.fail << ", skip " << run.skip << ", error " << run.error << "); wrote results.ktap, "
		  << "junit.xml, report.html and summary.md in " << dir.string() << "\n";
}

} // namespace pinmatrix

namespace pinmatrix {

int report_command(const std::filesystem::path &dir, const std::vector<std::filesystem::path> &compare,
		   std::optional<double> bench_threshold_pct, const std::string &format,
		   const std::filesystem::path &out, bool latency)
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
		if (!out.empty())
			throw usage_error("report --compare prints its result: --out goes with a run directory or --fleet");
		if (bench_threshold_pct && !(*bench_threshold_pct > 0))
			throw usage_error("report --bench-threshold: a percentage above 0");
		return compare_runs(compare[0], compare[1], compare_as, {bench_threshold_pct, latency}, std::cout);
	}
	if (bench_threshold_pct)
		throw usage_error("report: --bench-threshold goes with --compare OLD NEW");
	if (latency)
		throw usage_error("report: --latency goes with --compare OLD NEW");
	if (dir.empty())
		throw usage_error("report: give a run directory (or its results.json), or --compare OLD NEW");
	regenerate_reports(dir, out);
	return 0;
}

} // namespace pinmatrix
