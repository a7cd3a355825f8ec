// SPDX-License-Identifier: GPL-2.0
#pragma once

// `pinmatrix report --mutants DIR`: what a merged run of the mutant kernels
// (tools/run-mutants: matrix/mutants.toml, each kernel series booted once
// per value of pinmatrix_mutant on each boot) says of each kernel mutant of
// the table (matrix/promises.hpp): on each (kernel, boot), the cases that
// failed or ended in error under it.

#include <filesystem>
#include <iosfwd>

#include <nlohmann/json.hpp>

namespace pinmatrix {

// The table for people, from a merged results document. Returns the exit
// code: 1 when the kernel as it was (pinmatrix_mutant=0) failed a case, a
// mutant passed every case on some (kernel, boot) it ran on (not caught
// there: a finding), or a (kernel, boot, mutant) decided nothing (no case
// passed or failed); else 0.
int print_mutants_table(const nlohmann::json &doc, std::ostream &out);

// Reads DIR/results.json (or the file) first; usage_error for a bad one.
int mutants_report_command(const std::filesystem::path &dir_or_file);

} // namespace pinmatrix
