// SPDX-License-Identifier: GPL-2.0
#pragma once

// The files a run leaves next to its results.json, all made from that one
// document (see reports/README.md):
//   results.ktap  KTAP for kselftest-style runners (openQA, LAVA, prove)
//   junit.xml     JUnit XML for Jenkins and GitLab
//   report.html   one self-contained page for people: grid, evidence, plots
//   summary.md    a few lines of Markdown for a CI comment

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "atomic_file.hpp"

namespace pinmatrix {

namespace report {
struct run_files;	// run_files.hpp
}

std::string format_ktap(const nlohmann::json &doc);
std::string format_junit(const nlohmann::json &doc);
// bench: the run's benchmarks (reports/bench_report.hpp), or null; files:
// the run's files to link (find_run_files(), run_files.hpp), or null.
std::string format_html(const nlohmann::json &doc, const nlohmann::json *bench = nullptr,
			const report::run_files *files = nullptr);
std::string format_summary_markdown(const nlohmann::json &doc, const report::run_files *files = nullptr);

// Writes all four into dir, after the files of also (results.json, say),
// report.html and summary.md linking the run's files (run_files.hpp):
// one set, written under dir's lock (write_file_set), so two writers into
// one directory leave one writer's set whole. Every file is rendered before
// the first is written, and each is written through a temporary file and
// rename(), so a failure never leaves half a report. Throws
// std::system_error.
void write_reports(const std::filesystem::path &dir, const nlohmann::json &doc, file_set also = {});

// `pinmatrix report DIR [--out OUT]`: reads DIR/results.json (or the file
// given), writes the reports into OUT (created), else next to it, and
// prints where. Throws usage_error, before anything is written, for a
// missing directory or file, or one that load_results() refuses.
void regenerate_reports(const std::filesystem::path &dir_or_file, const std::filesystem::path &out = {});

// `pinmatrix report DIR [--out OUT]` or `pinmatrix report --compare OLD NEW
// [--format F]` (compare holds OLD and NEW, or is empty; format "text",
// "md", "json", or empty for text; out empty or a directory, not with
// compare). Returns the exit code: 0, or 1 for a verdict regression (or,
// with bench_threshold_pct, a benchmark slower by more than that; with
// latency, a case's latency slower beyond the spread); throws
// usage_error for bad arguments or input, a bad format before anything is
// read.
int report_command(const std::filesystem::path &dir, const std::vector<std::filesystem::path> &compare,
		   std::optional<double> bench_threshold_pct = std::nullopt, const std::string &format = "",
		   const std::filesystem::path &out = {}, bool latency = false);

} // namespace pinmatrix
