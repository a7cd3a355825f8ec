// SPDX-License-Identifier: GPL-2.0
#pragma once

// Known kernel bugs as data: one table (known_bugs.cpp) of the bugs the
// suites have met, each with the cases it breaks, the kernels that carry it,
// its upstream fix (or none), and its signature in a case's record, so that
// a case failing exactly as a known bug of this kernel predicts is an
// expected failure (XFAIL), another failure of the same case still a FAIL,
// and a case that passes where its bug should always show an unexpected
// pass (XPASS: the table is out of date, or the kernel carries the fix).
// As kselftest's XFAIL, LTP's known failures and IGT's CI known issues.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "case_record.hpp"
#include "kernel_version.hpp"

namespace pinmatrix {

// One test of a record: the values at `pointer` (a JSON pointer into the
// record as results.json holds it; a "*" step walks every element of an
// array or member of an object) meet `op` against `value` for at least one
// value found.
struct record_test {
	enum class op { equals, starts_with, contains, nonzero };
	const char *pointer;
	op test;
	nlohmann::json value = nullptr;	// unused by nonzero
};

// How a case recognises the bug: every test of `all`, and one of `any`
// when it has some.
struct bug_signature {
	std::vector<record_test> all, any;
};

struct known_bug {
	const char *id;
	const char *title;		// what breaks, one line
	const char *where;		// the kernel code at fault
	std::vector<const char *> cases;	// the case ids it breaks
	std::vector<version_range> kernels;	// the upstream versions that carry it
	const char *fix_commit;		// upstream fix, 12 hex digits; nullptr: unfixed
	const char *fix_subject;	// its subject, or what is known of a fix
	const char *seen_on;		// where the suite met it
	const char *reproducer;		// a stand-alone reproducer; may be nullptr
	// Every run of its cases on a kernel that carries it meets it: a PASS
	// there is an XPASS. A race that only may hit the bug makes no XPASS.
	bool always;
	bug_signature signature;
};
const std::vector<known_bug> &known_bugs();
const known_bug *find_known_bug(const std::string &id);

// Whether the record (to_json() of a judged case) shows the signature.
bool shows(const bug_signature &s, const nlohmann::json &record);

// The known bug of this kernel that the judged record meets, if any:
// a FAIL with its signature becomes XFAIL, a PASS of a case an `always`
// bug of this kernel breaks becomes XPASS; either names the bug in the
// reason and in details.known_bug. With `strict`, both are FAILs instead
// (an expected failure counts; an unexpected pass fails the gate), still
// naming the bug. An unknown kernel version changes nothing.
void apply_known_bugs(case_record &r, const std::optional<kernel_version> &kernel, bool strict);

// The record's details.known_bug entry for a bug.
nlohmann::json known_bug_json(const known_bug &b);

} // namespace pinmatrix
