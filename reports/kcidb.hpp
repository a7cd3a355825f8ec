// SPDX-License-Identifier: GPL-2.0
#pragma once

// A run as KernelCI's KCIDB I/O data (schema 4.5, vendored in
// reports/schema/kcidb/): one checkout and one build per kernel the run
// covered, one test per case and per benchmark. Statuses: a case's verdict
// (PASS, FAIL, ERROR, SKIP), MISS for a case a dead guest never reached
// (the record's `not_reached`), DONE for a benchmark's measurement (SKIP
// when it skipped). Ids are "ORIGIN:" and a hash of what they stand for
// (a kernel's recorded facts; the results document and the test's place in
// it), so exporting the same run again gives the same ids and a
// resubmission replaces rather than duplicates. What pinmatrix does not
// record (the kernel's git tree and commit, its compiler, a log URL) is
// left out and said so in the objects' comments.

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace pinmatrix {

inline constexpr int kcidb_major = 4, kcidb_minor = 5;

// KCIDB's origin: the submitting CI system's name, ^[a-z0-9_]+$.
bool is_kcidb_origin(std::string_view origin);

// The KCIDB document of results.json `doc`; bench: the run's benchmarks
// (Google Benchmark JSON, reports/bench_report.hpp) or null. origin must
// pass is_kcidb_origin().
nlohmann::json format_kcidb(const nlohmann::json &doc, const std::string &origin,
			    const nlohmann::json *bench = nullptr);

// `pinmatrix report DIR --kcidb --origin NAME [--out FILE]`: writes the
// document to FILE (its directory created), else DIR/kcidb.json, through a
// temporary file and a rename, and prints what it wrote. Throws usage_error
// before anything is read or written for a bad origin or an --out that is
// a directory, and before anything is written for input load_results()
// refuses.
void kcidb_report_command(const std::filesystem::path &dir_or_file, const std::string &origin,
			  const std::filesystem::path &out);

} // namespace pinmatrix
