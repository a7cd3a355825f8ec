// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix report --compare OLD NEW [--format text|md|json]`: what changed
// between two runs (two kernels, typically) case by case: verdicts and
// registration latency. A QA gate runs it and fails on a verdict regression.
//
// Cases match by (suite, placement, case id), never by kernel: a kernel
// update changes the release, not the case. Where a key ran on several
// kernels (a matrix run), OLD's and NEW's records of it pair by
// pair_by_kernel() in compare.cpp: a record with NEW's of the same matrix
// kernel name and boot placement (what an update keeps), the rest in
// kernel-series order (release, numbers as numbers): the i-th oldest with
// the i-th oldest. One record each side pairs whatever the kernels (a 6.1
// run against a 6.12 run). A record left over is missing from NEW (a
// regression) or new in it. See reports/README.md.

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_report.hpp"
#include "report_input.hpp"

namespace pinmatrix {

enum class verdict_change {
	unchanged,
	regression,	// pass -> fail or error
	skipped,	// pass -> skip: a regression too (a kernel where the module
			// does not load must not pass a QA gate)
	disappeared,	// in OLD, not in NEW: a regression too
	improvement,	// anything -> pass
	changed,	// any other change (fail <-> error, skip -> fail)
	appeared,	// in NEW only
};
const char *name(verdict_change c);	// "REGRESSION (now skipped)", for people
const char *id(verdict_change c);	// "skipped", for machines (--format json)
bool is_regression(verdict_change c);

enum class compare_format { text, md, json };
// "text", "md" or "json"; anything else throws usage_error.
compare_format compare_format_of(std::string_view name);

struct case_key {
	std::string suite, placement, id;	// placement empty for a suite without
	bool operator==(const case_key &) const = default;
};

struct case_comparison {
	case_key key;
	std::string label;	// the id, with the placement where the id has several
	std::optional<report::kernel_config> kernel_before, kernel_after;	// nullopt: no record
	std::optional<verdict> before, after;
	verdict_change change = verdict_change::unchanged;
	std::string detail;	// the new reason, for what got worse
	std::optional<report::sample_stats> latency_before, latency_after;
	std::optional<double> median_change_pct() const;	// when both sides have a median
	// A latency that moved beyond the spread of both runs: every new sample
	// above every old one ("slower") or below ("faster"), with at least
	// latency_spread_min_samples a side (pin cases time 5 registrations:
	// --latency-samples). Informational, as the benchmarks' comparison,
	// unless the comparison gates on latency (compare_options::latency).
	const char *latency_beyond_spread() const;
	bool latency_regression = false;	// slower beyond the spread, and gated on
	bool regressed() const { return is_regression(change) || latency_regression; }
};
inline constexpr size_t latency_spread_min_samples = 3;

// One side of the comparison, for the header.
struct compared_run {
	std::string path;			// set by compare_runs()
	std::vector<std::string> kernels;	// name and release, each once, in order
	bool kernel_per_row = false;		// several kernels or boots: rows name theirs
	int pass = 0, fail = 0, skip = 0, error = 0;
	int xfail = 0, xpass = 0;
	bool incomplete = false;
};

struct comparison {
	compared_run before, after;
	std::vector<case_comparison> cases;	// OLD's order, then cases new in NEW
	bool latency_gated = false;		// compare_options::latency
	// Rows name their kernels when either side ran several.
	bool kernels_per_row() const { return before.kernel_per_row || after.kernel_per_row; }
	int regressions() const;	// rows that regressed()
	int exit_code() const { return regressions() ? 1 : 0; }
};

// What counts against NEW besides a verdict regression.
struct compare_options {
	// A benchmark slower by more than this percentage (none: informational).
	std::optional<double> bench_threshold_pct;
	// A case whose latency moved beyond the spread, slower: a regression.
	bool latency = false;
};

comparison compare_results(const nlohmann::json &before, const nlohmann::json &after,
			   const compare_options &options = {});
// text: what changed, then every case's latency; md: a table of every case
// for a ticket; json: every row with its fields (reports/README.md).
std::string format_comparison_text(const comparison &c);
std::string format_comparison_markdown(const comparison &c);
nlohmann::json comparison_json(const comparison &c);

// Two runs compared: their verdicts and latency, then their benchmarks
// (reports/bench_report.hpp).
struct run_comparison {
	comparison verdicts;
	report::bench_runs_comparison bench;
	// 1 on a regression (options' latency and benchmark threshold
	// included), else 0.
	int exit_code() const;
};
run_comparison compare_run_files(const report::results_file &before, const report::results_file &after,
				 const compare_options &options);
// comparison_json() with "benchmarks" and "exit_code" (--format json).
nlohmann::json run_comparison_json(const run_comparison &c);
// The comparison in one format, as `report --compare` prints it.
std::string format_run_comparison(const run_comparison &c, compare_format format);

// The command: each of OLD and NEW a run directory or a results.json,
// compared and printed in one format. Returns run_comparison::exit_code().
// Throws usage_error for a missing or unreadable input, before anything is
// printed.
int compare_runs(const std::filesystem::path &before, const std::filesystem::path &after, compare_format format,
		 const compare_options &options, std::ostream &out);

} // namespace pinmatrix
