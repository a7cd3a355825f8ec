// SPDX-License-Identifier: GPL-2.0
#pragma once

// results.json, schema "pinmatrix/1": the contract later tools read.
//   { "schema", "tool": {name, version, commit}, "kernel": {release,
//     version, cmdline}, "rdma_device",
//     "module": {...}, "cases": [ {id, name, placement, first_pin,
//     second_pin, expected, observed: {errno, migrated, pfn_before,
//     pfn_after, ...}, latency_ns, verdict, reason} ], "summary", "verdict" }

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "verdict.hpp"

namespace pinmatrix {

inline constexpr const char *results_schema = "pinmatrix/1";

struct run_summary {
	int pass = 0, fail = 0, skip = 0, error = 0;
	int xfail = 0, xpass = 0;	// known kernel bugs (matrix/known_bugs.hpp)
	verdict overall = verdict::skip;
};
// results.json's "tool": {"name": "pinmatrix", "version", "commit"}, this
// build's (lib/build_info.hpp); commit null when unknown.
nlohmann::json tool_json();

run_summary summarize_json(const nlohmann::json &cases);
// results.json's "summary": {pass, fail, xfail, xpass, skip, error}.
nlohmann::json summary_json(const run_summary &s);
// "pass 50, fail 0, xfail 1, skip 3, error 0" (xfail and xpass only when
// there are some).
std::string summary_text(const run_summary &s);

// 0 all pass (or pass and skip; expected failures and unexpected passes
// too: --strict has made both failures before), 1 any fail or error, 4 all
// skipped.
int exit_code(const run_summary &s);

// doc as results.json holds it: pretty JSON and a newline.
std::string results_json_text(const nlohmann::json &doc);
// Writes results_json_text(doc) to path through a temporary file and
// rename(), so a reader never sees half a file.
void write_json_atomically(const std::filesystem::path &path, const nlohmann::json &doc);

// results_json_text() of a run's document as its cases come, each case's
// text made once: a run writes results.json whole after every case, and
// serializing every record again each time made that quadratic (1.7 s of a
// 72-case run under TCG).
class results_text {
public:
	// doc's text; its "cases" array holds the cases given before, unchanged,
	// and any more at its end.
	std::string of(const nlohmann::json &doc);

private:
	std::vector<std::string> cases_;	// each case's text, indented for its place
};
// Bounds on a JSON file that is read back (a results.json, a node's
// status.json or facts.json, a guest's results): one larger, or nested
// deeper (the document itself is level 1), is refused before it is parsed.
inline constexpr uintmax_t max_json_bytes = uintmax_t(1) << 30;
inline constexpr size_t max_json_depth = 64;
// Reads and parses one JSON file within those bounds. Throws usage_error
// with one message naming the file and what is wrong (unreadable, too large,
// too deep, not JSON).
nlohmann::json read_json(const std::filesystem::path &path);

} // namespace pinmatrix
