// SPDX-License-Identifier: GPL-2.0
#pragma once

// The benchmarks of a run (Google Benchmark JSON, benchmarks/README.md)
// in the reports: results.json names the file ("benchmarks": "bench.json",
// relative to the run directory). report.html plots them (latency vs size
// per placement, log scales) and `report --compare` lists them per
// benchmark: informational, unless a threshold makes a slowdown fail.

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_input.hpp"

namespace pinmatrix::report {

// The bench JSON that results.json `doc` in run_dir names; nullopt when it
// names none, or one that cannot be read (then *problem says why: the
// reports go on without it).
std::optional<nlohmann::json> load_bench(const std::filesystem::path &run_dir, const nlohmann::json &doc,
					 std::string *problem = nullptr);

// One benchmark of the file: repetitions folded into their median.
struct bench_entry {
	std::string name;		// run_name without "/manual_time" ("reg_mr/movable/4096")
	std::string family;		// without the size ("reg_mr/movable")
	std::optional<double> bytes;	// the size argument, for families that have one
	double ns = 0;			// time per iteration (a run's mean), median over repetitions
	size_t samples = 0;		// repetitions folded in
	int64_t iterations = 0;
	std::map<std::string, double> counters;	// of the median sample
	std::string skipped;		// SkipWithError's reason; then ns is 0
};
// In file order. Aggregates (mean, median, stddev) are used only when the
// file has no single runs (--benchmark_report_aggregates_only).
std::vector<bench_entry> bench_entries(const nlohmann::json &bench);

// The suite's paths against their anchors, as ratios (suite / anchor):
// the module's long-term pin and ibv_reg_mr against kselftest's gup_test
// PIN_LONGTERM_BENCHMARK, per placement and size; the suite's registration
// (register_memory) and a case's whole path against the raw ibv_reg_mr.
// Only pairs whose two benchmarks both ran.
struct anchor_ratio {
	std::string what;		// "the module's long-term pin / gup_test's, movable 1 MiB"
	std::string suite, anchor;	// the two benchmarks' names
	double suite_ns = 0, anchor_ns = 0;
	double ratio = 0;		// suite_ns / anchor_ns
};
std::vector<anchor_ratio> anchor_ratios(const std::vector<bench_entry> &entries);

// <section id="benchmarks">: one log-log plot per group of families with
// sizes (reg_mr by placement, the module's pins, UALink), ns per page for
// the registrations, the harness overhead, the ratios to the anchors and a
// table of every benchmark.
std::string bench_html_section(const nlohmann::json &bench);

struct bench_change {
	std::string name;
	std::optional<double> before_ns, after_ns;	// nullopt: absent or skipped
	std::string note;		// "skipped: ...", "new", "gone"
	double ratio = 0;		// after / before, when both
	bool slower = false;		// beyond the threshold (or 10 % informational)
};
struct bench_comparison {
	std::vector<bench_change> rows;
	std::optional<double> threshold_pct;	// the user's; nullopt: informational
	int regressions() const;		// slower rows, when a threshold was given
};
bench_comparison compare_bench(const nlohmann::json &before, const nlohmann::json &after,
			       std::optional<double> threshold_pct);
std::string format_bench_comparison(const bench_comparison &c);

// `report --compare OLD NEW`: the benchmarks of both runs (the bench.json
// each results.json names), when either has any.
struct bench_runs_comparison {
	std::optional<bench_comparison> comparison;	// when both runs have benchmarks
	std::vector<std::string> notes;			// a file that could not be read, or why
							// there is nothing to compare
	int exit_code() const;	// 1 when a threshold was given and a benchmark got slower beyond it
};
bench_runs_comparison compare_bench_runs(const results_file &before, const results_file &after,
					 std::optional<double> threshold_pct);
// As `report --compare` prints them; empty when neither run has benchmarks.
std::string format_bench_runs(const bench_runs_comparison &c);
// {"notes", "rows": [{name, before_ns, after_ns, ratio, slower, note}], "threshold_pct", "regressions"}
nlohmann::json bench_runs_json(const bench_runs_comparison &c);

} // namespace pinmatrix::report
