// SPDX-License-Identifier: GPL-2.0
#pragma once

// KTAP version 1 as the kernel's Documentation/dev-tools/ktap.rst describes
// it, nested the way KUnit nests it: a subtest is its "KTAP version 1" line,
// a "# Subtest: NAME" line, its plan and its results, indented one level
// (two spaces), and then its own result line one level out. A run on one
// kernel is one subtest per suite; a merged matrix run one per (kernel,
// boot) group, each holding its suites:
//
//   KTAP version 1
//   1..2
//   # pinmatrix 0.1 on 6.1.0-57-amd64 (console=ttyS0 ...)
//     KTAP version 1
//     # Subtest: pin
//     1..10
//     # A: expected migrate, ok; observed moved 0x2147a->0x3015, ok
//     ok 1 A (movable-none)
//     # B: case did not finish within 60 s (...); killed; ...
//     not ok 2 B (movable-foll-pin) # TIMEOUT 60 seconds
//     ...
//   not ok 1 pin
//     KTAP version 1
//     # Subtest: fork
//     1..2
//     ok 1 fork/child-writes-private (child-writes-private) # SKIP no RDMA device
//     ok 2 fork/device-write-stays-in-parent (device-write-stays-in-parent) # SKIP no RDMA device
//   ok 2 fork # SKIP no RDMA device
//   # Totals: pass:8 fail:0 xfail:0 xpass:0 skip:2 error:1
//
// One renderer makes results.ktap (format_ktap(), which feeds it a finished
// results.json) and the document `--format ktap` streams to stdout while a
// run goes (`pinmatrix run`, `pinmatrix vm`): the same records give the same
// lines.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_input.hpp"
#include "unique_fd.hpp"

namespace pinmatrix {

// What is known before the first case: for each group (one, for a run on
// one kernel and boot) the number of cases of each of its suites, in plan
// order.
struct ktap_plan {
	bool grouped = false;	// a level per (kernel, boot) group: a matrix run
	std::vector<std::vector<size_t>> groups;
};

class ktap_stream {
public:
	// Without fd, what is rendered waits in the stream for take(); with
	// one, each piece is written to fd as soon as it is rendered.
	explicit ktap_stream(ktap_plan plan, int fd = -1);

	// "KTAP version 1" and the top-level plan; once.
	void begin();
	// The run's own diagnostics (tool, kernel, command line) from its
	// results.json; once, after begin().
	void header(const nlohmann::json &doc);
	// Each of doc's cases from index `from` on (begin() and header() first
	// when not done yet): a case opens its group and suite when it is
	// their first, and a suite's result line follows its last case.
	// Returns the number of doc's cases rendered now.
	size_t records(const nlohmann::json &doc, size_t from = 0);
	// One case, as records() renders each (after header()).
	void record(const report::case_view &c);
	// The open group's result line, after how its guest ended (`guest`: the
	// group's entry in a merged run's "groups"; may be null).
	void end_group(const nlohmann::json *guest);
	// How the run ended and kselftest's "# Totals:" line.
	void end(const nlohmann::json &doc);

	std::string take();

private:
	// A test with subtests: its results so far.
	struct level {
		std::string name;
		size_t planned = 0, done = 0, not_ok = 0, skipped = 0;
		std::optional<std::string> skip_reason;	// while every skip gave the same one
	};

	size_t planned_cases() const;
	void open(const std::string &name, size_t planned);
	void close();
	void result(bool ok, const std::string &description, const std::string &directive = "",
		    const std::string &skip_reason = "");
	void diagnostic(std::string_view text, size_t max_lines = 40);
	void case_diagnostics(const report::case_view &c);
	void case_result(const report::case_view &c);
	void serial_log(const std::string &where, const std::string &text);
	void guest_ending(const nlohmann::json &entry);
	void line(const std::string &text);
	void flush();

	ktap_plan plan_;
	int fd_;
	std::string pending_;
	bool begun_ = false, headed_ = false;
	size_t group_ = 0, suite_ = 0;	// the next in plan_
	// The top level and the subtests now open in it, outermost first.
	std::vector<level> open_;
	int pass_ = 0, fail_ = 0, xfail_ = 0, xpass_ = 0, skip_ = 0, error_ = 0;
	// Serial log excerpts shown, and where: each is shown once.
	std::vector<std::pair<std::string, std::string>> shown_;
};

// --format of `run` and `vm`: "text" (people's lines and the table on
// stdout) or "ktap" (the KTAP document on stdout as cases finish, the rest
// on stderr). True for ktap; throws usage_error for anything else.
bool streams_ktap(const std::string &format);

// `pinmatrix cases --format ktap-plan`: the plan as a run's KTAP announces
// it before its first case ("KTAP version 1" and the top-level plan "1..S",
// S suites, a subtest each, as ktap_stream::begin() writes them) and, a
// plan having no results, each case as a diagnostic line naming the result
// line it will have: "# plan: SUITE N CASE" for "ok N CASE" (or "not ok")
// in subtest SUITE, in plan order, named and escaped as record() names it.
// plan: {"suites": [{"name", "cases": [{"id", "name"}, ...]}, ...]}, as
// `pinmatrix cases --format json` prints it; tool: "pinmatrix 0.1".
std::string format_ktap_plan(const nlohmann::json &plan, const std::string &tool);

// The KTAP document of `--format ktap` on stdout, and nothing else there:
// while it lives, whatever else this process and its children print (the
// progress lines, the table, tools' chatter) goes to stderr.
class ktap_console {
public:
	explicit ktap_console(ktap_plan plan);
	ktap_console(const ktap_console &) = delete;
	ktap_console &operator=(const ktap_console &) = delete;
	~ktap_console();
	ktap_stream &stream() { return stream_; }

private:
	unique_fd stdout_;	// the real stdout; fd 1 is stderr's meanwhile
	ktap_stream stream_;
};

} // namespace pinmatrix
