// SPDX-License-Identifier: GPL-2.0
#pragma once

// The verdict every case of every suite ends with, exactly one per case
// (a pin case's judge: cases/pin/pin_judge.hpp).

#include <string_view>

namespace pinmatrix {

// In the order a reader should meet them: worst first (a report's map keyed
// by verdict lists errors, then failures, skips, passes).
enum class verdict { error, fail, skip, pass };
const char *name(verdict v);		// "error", "fail", "skip", "pass"
const char *upper_name(verdict v);	// "ERROR", ...
// A record's "verdict" string; anything unknown is an error.
verdict verdict_of(std::string_view text);
// KernelCI order: error > fail > pass > skip.
verdict worst(verdict a, verdict b);

} // namespace pinmatrix
