// SPDX-License-Identifier: GPL-2.0
#pragma once

// The verdict every case of every suite ends with, exactly one per case
// (a pin case's judge: cases/pin/pin_judge.hpp). A judge says pass, fail,
// skip or error; the known kernel bugs (known_bugs.hpp) then make a FAIL
// that a known bug of this kernel predicts an expected failure (xfail), and
// a PASS where that bug should have shown an unexpected pass (xpass), as
// kselftest's ksft_test_result_xfail() and _xpass().

#include <string_view>

namespace pinmatrix {

// In the order a reader should meet them: worst first (a report's map keyed
// by verdict lists errors, then failures, unexpected passes, expected
// failures, skips, passes).
enum class verdict { error, fail, xpass, xfail, skip, pass };
const char *name(verdict v);		// "error", "fail", "xpass", "xfail", "skip", "pass"
const char *upper_name(verdict v);	// "ERROR", ...
// A record's "verdict" string; anything unknown is an error.
verdict verdict_of(std::string_view text);
// Whether the string is one of the verdicts' names.
bool is_verdict_name(std::string_view text);
// KernelCI order: error > fail > xpass > xfail > pass > skip.
verdict worst(verdict a, verdict b);
// A failure that a run's gate counts: fail or error (an xfail is known, an
// xpass is reported but, without --strict, counts as what it is: a pass).
bool counts_as_failure(verdict v);

} // namespace pinmatrix
