// SPDX-License-Identifier: GPL-2.0
#pragma once

// The reports' view of results.json (schema pinmatrix/1): one record per
// case, read defensively. Other suites add records without the pin matrix's
// fields (placement, first pin, pages), a guest that died leaves records
// without observations, and a matrix run may merge several kernels (each
// record then names its `kernel` and `append`). What is read from a file is
// checked once, by load_results() (check_schema()): a record that is not
// an object, has no verdict or an unknown one, a field of the wrong type
// or the same case twice is refused there. Past that nothing throws on a
// missing field: a report degrades to "-".

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "step_clock.hpp"
#include "text.hpp"
#include "verdict.hpp"

namespace pinmatrix::report {

using json = nlohmann::json;

struct results_file {
	std::filesystem::path path;	// the results.json that was read
	json doc;
};
// Reads DIR/results.json, or the file itself when given one, and checks it
// (check_schema()). Throws usage_error with one message naming the path and
// what is wrong with it.
results_file load_results(const std::filesystem::path &dir_or_file);

// What is read is bounded (size and depth): read_json() (results.hpp).
// Throws usage_error unless doc is schema pinmatrix/1 with a "cases" array
// whose every record is an object with a string id and a verdict of pass,
// fail, xfail, xpass, skip or error (an xfail or xpass with its known_bug), whose fields the reports read have their types
// (strings, numbers, objects), and which is the only record of its suite,
// placement and id on its kernel and boot. The message names the record
// ("case 3 (B)") and what is wrong.
void check_schema(const json &doc, const std::string &where);


// The kernel axis of the grid: a kernel and how it was booted. A merged
// matrix run names both per record (`kernel` {name, release, source},
// `boot` {placement, append} or `append`); a single run names them once.
struct kernel_config {
	std::string name;	// the matrix's name for the kernel; may be empty
	std::string release;	// "6.1.0-57-amd64"; "unknown kernel" when not recorded
	std::string boot;	// boot placement ("movable", "cma"); may be empty
	std::string append;	// boot parameters; may be empty
	// The name and the release, the release once: "6.1.0-57-amd64",
	// "debian 6.1.0-57-amd64", "debian:6.1.0-57-amd64" (a name that holds it).
	std::string name_and_release() const;
	// name_and_release() and the boot: "debian 6.1.0-57-amd64 (movable)".
	std::string label() const;
	auto operator<=>(const kernel_config &) const = default;
};

struct case_view {
	const json *record = nullptr;	// into the document; outlives the view
	std::string id, name;
	// The record's ("pin", "ualink", ...); without one, the id's part
	// before '/', else "pin" for a case with a placement, else "other".
	std::string suite;
	verdict result = verdict::error;
	std::string reason;		// empty for a pass
	kernel_config kernel;
	std::string placement;		// empty when the suite has no placements
	std::string first_pin;		// label ("FOLL_PIN (held)"); empty when none
	std::string second_pin;
	std::string expected;		// summaries; "-" when absent
	std::string observed;
	std::vector<double> latency_ns;	// registration latency samples (maybe none)
	std::optional<double> duration_ns;
	std::string anchor;		// unique HTML id
	size_t kernel_index = 0;	// into run_view::kernels

	// "A (movable-none)", or the id alone when the name is the id.
	std::string title() const;
};

// A case's title from its id and name (case_view::title(); `pinmatrix
// cases` names a planned case so).
std::string case_title(std::string_view id, std::string_view name);

struct run_view {
	const json *doc = nullptr;
	std::vector<case_view> cases;		// document order
	std::vector<kernel_config> kernels;	// in order of first appearance
	int pass = 0, fail = 0, skip = 0, error = 0;
	int xfail = 0, xpass = 0;		// known kernel bugs (matrix/known_bugs.hpp)
	verdict overall = verdict::skip;	// error > fail > xpass > xfail > pass > skip (worst())

	bool several_kernels() const { return kernels.size() > 1; }
	size_t total() const { return cases.size(); }
	// What a reader should see first: failures (a contract the kernel
	// broke), then errors (the run broke), unexpected passes, expected
	// failures, skips, passes; document order within each.
	std::vector<const case_view *> worst_first() const;
	// Skipped cases by reason (skips share few reasons): each reason once,
	// in order of first appearance, with the ids it skipped.
	std::vector<std::pair<std::string, std::vector<std::string>>> skip_reasons() const;
};
// doc must stay alive as long as the view.
run_view view_run(const json &doc);

// A known kernel bug (matrix/known_bugs.hpp) as the run met it: the cases
// it failed as predicted (xfail) and those it should have failed and did
// not (xpass), each once, in order of first appearance.
struct known_bug_met {
	std::string id, title, where, fix, kernels;	// from the records' known_bug
	std::vector<const case_view *> xfail, xpass;
};
std::vector<known_bug_met> known_bugs_met(const run_view &run);

// The suite that made the run, as results.json's "tool" names it; what it
// does not say (a run from before the commit was recorded, a build that
// did not know it) is "unknown", never guessed.
struct tool_view {
	std::string name = "pinmatrix";
	std::string version = "unknown";
	std::string commit = "unknown";
	// "pinmatrix 0.1.0 (commit 0123456789ab)", "pinmatrix (version unknown,
	// commit unknown)"
	std::string text() const;
};
tool_view tool_of(const json &doc);

// A kernel's version, from its record (the run's "kernel", or in a merged
// run its group's): the upstream X.Y.Z (matrix/kernel_version.hpp: an ABI
// release like 6.1.0-57-amd64 says it only through uname -v) and uname -v.
struct kernel_version_view {
	std::string upstream = "unknown";	// "6.1.192"
	std::string build;			// uname -v; empty when not recorded
};
kernel_version_view kernel_version_of(const json &doc, const kernel_config &k);
// The run's kernels once each by name and release (a merged run boots one
// kernel several ways), in order of first appearance, each with its
// version: the first of its boots that knows it.
struct kernel_with_version {
	std::string name_and_release;
	kernel_version_view version;
};
std::vector<kernel_with_version> kernels_with_versions(const run_view &run);

// The run says it stopped before its last case ("complete": false).
bool incomplete(const json &doc);

// Guests that ended abnormally (panic, hang, no results), from the run's
// "vm" or, in a merged run, from each of its "groups".
struct guest_ending {
	std::string guest;		// "guest", or the kernel label in a merged run
	std::string ended;		// how
	std::string serial_excerpt;	// the serial log lines that explain it
};
std::vector<guest_ending> guest_endings(const json &doc);
// The kernel and boot of a merged run's entry in "groups".
kernel_config group_kernel(const json &entry);
// A merged run's entry in "groups" for the guest that ran this kernel and
// boot; null when it has none.
const json *group_entry(const json &doc, const kernel_config &k);
// How the guest of `entry` (a run's "vm", or one of a merged run's "groups")
// ended, when it ended early; `guest` names it.
std::optional<guest_ending> ending_of(const json &entry, const std::string &guest);

// The serial log lines that explain a case that ended in error: its own, or
// those of the guest it ran in (then `guest` names it, as guest_endings()
// does, so a report can show a guest's excerpt once).
struct case_serial {
	std::string text;
	std::string guest;	// empty when the record carries its own
};
// Terminal escape sequences are removed from both.
case_serial serial_excerpt_for(const run_view &run, const case_view &c);
// The excerpt the record carries itself (the host gives it to the case that
// was running when its guest died); empty when it has none.
std::string own_serial_excerpt(const case_view &c);

// The case's --case-timeout in seconds when the runner ended it there (its
// record's stuck_task, cases/runner.cpp), else nullopt.
std::optional<long long> timed_out_after_s(const case_view &c);

// One line of a case's evidence.
struct fact {
	std::string label, value;
};
// The evidence of a case as label/value pairs: what it pinned and where,
// expected and observed, errno, PFNs, each page step, RDMA readback,
// recovery, latency. Only what the record has; extra_fields() has the rest.
std::vector<fact> evidence_facts(const case_view &c);

// The page (its placement) at each step the record has: observed.page's
// "before", "after first pin", "after registration", "after release"; else
// (the backing and pinner suites) observed's own "before", "after",
// "after give-back". Each step an object of facts (pfn, zone, ...).
struct page_step {
	std::string step;
	const json *page;
};
std::vector<page_step> page_steps(const case_view &c);

// The harm oracle's attempts (observed.give_back, lib/give_back.hpp): to
// give the page's memory back with the pins held, then released.
struct give_back_row {
	std::string when;	// "pins held", "first pin released", ...
	std::string given_back;	// "yes", "no", "unknown"
	std::string method, detail;
	std::string took;	// "920 ms"; empty when not recorded
};
std::vector<give_back_row> give_back_rows(const case_view &c);

// Fields of the record and of its observation that the reports have no
// special rendering for (another suite's evidence, telemetry, traces), with
// the name to show them under.
struct extra_field {
	std::string label;
	const json *value;
};
std::vector<extra_field> extra_fields(const case_view &c);

// A registration's telemetry and kernel path (observed.registrations[],
// lib/diagnosis/case_telemetry.hpp), as the reports show them.
struct registration_view {
	const json *record = nullptr;
	std::string title;		// "#1 the case's registration: ibv_reg_mr"
	int err = 0;
	std::string errno_name;		// "ENOMEM (12)", "ok"
	std::string classification;	// class, for a failure
	std::string rule;
	std::vector<std::string> facts;	// that decided the classification
	std::string failure_stage;
	std::string path_one_line;	// "long-term pin requested / ... / -ENOMEM"
	std::vector<std::string> path_lines;	// indented
	std::vector<std::string> path_sources;	// per line: "trace", "module probe", ...
	bool from_trace = false;
	std::vector<std::string> trace_notes;
	std::string latency;		// "5.28 ms"; empty when not recorded
	std::string pages;		// each page: pfn (-> pfn after), zone, pageblock, ...
	std::vector<fact> telemetry;	// address, length, class, API, memlock, pages, pins, ...
	std::vector<std::string> events;	// raw trace lines
};
std::vector<registration_view> registrations_of(const case_view &c);
// The kernel path of the case's first pin, when it went through GUP
// (observed.kernel_trace.first_pin_path): lines and the one-line form.
struct first_pin_path {
	std::string one_line;
	std::vector<std::string> lines;
};
std::optional<first_pin_path> first_pin_path_of(const case_view &c);
// The registration a reader wants first: the first failed one, else the first.
const registration_view *main_registration(const std::vector<registration_view> &regs);

// Field access that never throws.
const json *member(const json &j, std::string_view key);
std::string text_at(const json &j, std::string_view key, std::string fallback = "");
std::optional<double> number_at(const json &j, std::string_view key);
// A value as short text: strings as they are, numbers and the rest as JSON.
std::string as_text(const json &j);
// A value as a report echoes it whole (a string as it is, the rest as
// indented JSON), cut at max_bytes with a note saying so.
inline constexpr size_t max_echo_bytes = 60000;
std::string echo_json(const json &j, size_t max_bytes = max_echo_bytes);

// "5.28 ms", "219 µs" (ascii: "219 us"), "1.10 s".
std::string format_ns(double ns, bool ascii = false);

// Steps (lib/step_clock.hpp), the longest first, at most `most` of them
// ("give-back, pins held 921 ms, find the page 120 ms"); "" for none.
std::string steps_text(step_times steps, size_t most);
// Where a case's time went (observed.time_ms) as steps_text() gives it;
// "" when the case recorded none.
std::string case_steps_text(const case_view &c, size_t most);
// Newlines and tabs become spaces, runs of spaces one, other control
// characters go: for one-line formats.
std::string one_line(std::string_view s);

// Whether a table of rows x columns is worth drawing for filled cells: at
// most four times as many cells as are filled (never refused under 256).
// A run spread thin (a fleet, a kernel per node) is shown as a list of
// what ran instead: a table of empty cells would grow with the square of
// the cases.
inline bool worth_a_table(size_t rows, size_t columns, size_t filled)
{
	const size_t cells = rows * columns;
	return cells <= 256 || cells / 4 <= filled;
}
// s as one name of [A-Za-z0-9_-], every other character '_' ("_" for
// nothing): a part of a dotted name (a JUnit class, a KCIDB test path),
// where a kernel release's own dots must not separate.
std::string name_part(std::string_view s);

// Plain text inside Markdown (and GitHub/GitLab's HTML), on one line:
// nothing in it may start emphasis, a link, an HTML tag or a new table cell.
std::string markdown_text(std::string_view s);
// s as a Markdown code span on one line: between as many backticks as
// needed (one more than its longest run of them), so that no backtick, HTML
// tag or newline in s can end it or start anything else.
std::string markdown_code(std::string_view s);
// s and spaces up to width, counting code points, not bytes ("µs").
std::string pad_to_width(std::string s, size_t width);

// Text for XML and HTML: escapes the five markup characters, and replaces
// what XML 1.0 forbids (C0 controls but tab, newline, carriage return;
// U+FFFE, U+FFFF) with U+FFFD. In attributes, tabs and newlines become
// character references so they survive attribute normalisation.
std::string escape_markup(std::string_view s, bool attribute = false);
// The HTML pages' short name for it, in text.
inline std::string h(std::string_view s) { return escape_markup(s); }

// The run's kernel bug lines (its kernel_log.alarms: an oops, BUG or WARN
// in the guest's log) that no expected failure accounts for: a known
// kernel bug's WARN is its XFAIL's evidence (the record's kernel_alarms, as
// the runner read them from /dev/kmsg while the case ran). What is not a
// string is not a line.
std::vector<std::string> unexplained_kernel_alarms(const json &doc);

struct sample_stats {
	size_t n = 0;
	double median = 0, min = 0, max = 0, p25 = 0, p75 = 0;
};
std::optional<sample_stats> stats_of(std::vector<double> samples);
// "median 1.06 ms, range 0.98-1.20 ms, n=3"; IQR only from 4 samples on.
std::string describe(const sample_stats &s, bool ascii = false);

} // namespace pinmatrix::report
