// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix vm --bench`: after the cases, the guest runs pinmatrix_bench
// (built next to the pinmatrix binary) with its JSON output in the results
// dir; the host keeps it as OUT/bench.json, named by results.json's
// "benchmarks". Linked into the launcher (vm/launcher.cpp, vm/guest_job.cpp).

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pinmatrix::bench {

// pinmatrix_bench next to the running pinmatrix. Throws usage_error when
// it is not there (build target pinmatrix_bench).
std::filesystem::path bench_binary();

// pinmatrix_bench as the guest runs it after the cases (vm/guest/job.sh),
// with the test module and rxe0, writing /run/pinmatrix/bench.json. args:
// more arguments for pinmatrix_bench, split on blanks.
std::vector<std::string> guest_argv(const std::filesystem::path &bench, const std::string &args,
				    const std::filesystem::path &module_ko);

// Copies guest/bench.json to out/bench.json (or removes a stale one) and
// records it in doc: "benchmarks": "bench.json", "bench": {exit, ...}.
void collect(const std::filesystem::path &guest_dir, const std::filesystem::path &out, nlohmann::json &doc);

// One line about the benchmarks of doc; false when they did not run
// cleanly (no bench.json, or pinmatrix_bench exited non-zero).
bool print_summary(const nlohmann::json &doc, std::ostream &out);

} // namespace pinmatrix::bench
