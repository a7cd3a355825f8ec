// SPDX-License-Identifier: GPL-2.0
// KTAP version 1, nested (ktap.hpp): one result line per case, SKIP, ERROR
// and kselftest's TIMEOUT directives, diagnostics as "# " lines directly
// before the result they explain, kselftest's closing "# Totals:" line.

#include "ktap.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>

#include "reports.hpp"
#include "sys_error.hpp"
#include "user_input.hpp"

namespace pinmatrix {

using namespace report;

namespace {

// ktap.rst: "One level of indentation is two spaces".
constexpr const char *indent_step = "  ";

// A KTAP description cannot contain '#' (it would start a directive).
std::string description_text(std::string_view s)
{
	std::string out = one_line(s);
	for (auto &ch : out)
		if (ch == '#')
			ch = ' ';
	return out.empty() ? "-" : out;
}

std::string printable(const std::string &line)
{
	std::string out;
	for (char ch : line)
		if (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f)
			out += ch;	// not a serial log's escape sequences
	return out;
}

// A run with a level per (kernel, boot): a merged matrix run, or any
// document whose records ran on several kernels (a fleet's).
bool grouped(const json &doc, const run_view &run)
{
	return member(doc, "groups") || run.several_kernels();
}

// The first line of the run's diagnostics: the tool (its version and
// commit), and the kernel it ran on (a grouped run's groups name theirs).
std::string run_header(const json &doc, const run_view &run, size_t groups)
{
	const std::string name = one_line(tool_of(doc).text());
	if (grouped(doc, run)) {
		const json *matrix = member(doc, "matrix");
		return name + ": " + std::to_string(groups) + " kernel and boot groups" +
		       (matrix ? " of " + one_line(as_text(*matrix)) : "");
	}
	const json *kernel = member(doc, "kernel");
	std::string release = run.kernels.empty() ? "" : run.kernels[0].release;
	if (release.empty())
		release = kernel ? text_at(*kernel, "release", "unknown kernel") : "unknown kernel";
	const std::string cmdline = kernel ? one_line(text_at(*kernel, "cmdline")) : "";
	return name + " on " + release + (cmdline.empty() ? "" : " (" + cmdline + ")");
}

// What the case expected and observed, and its latency.
std::string facts_of(const case_view &c)
{
	std::string facts = c.id + ": expected " + one_line(c.expected) + "; " +
			    (c.observed == "-" ? "nothing observed" : "observed " + one_line(c.observed));
	if (auto latency = stats_of(c.latency_ns))
		facts += "; latency " + (latency->n == 1 ? format_ns(latency->median, true) : describe(*latency, true));
	return facts;
}

// The registration telemetry: what each failed registration's errno meant
// and the kernel path that led there (or, when none failed, the path of the
// case's own registration).
std::vector<std::string> kernel_paths_of(const case_view &c)
{
	std::vector<std::string> out;
	if (auto fp = first_pin_path_of(c); fp && !fp->one_line.empty())
		out.push_back(c.id + ": first pin kernel path: " + one_line(fp->one_line));
	const auto regs = registrations_of(c);
	for (const auto &r : regs) {
		if (!r.err && &r != main_registration(regs))
			continue;
		std::string line = c.id + ": registration " + r.title + " -> " + r.errno_name;
		if (!r.classification.empty())
			line += ": " + r.classification + " (rule " + r.rule + ")";
		out.push_back(one_line(line));
		if (!r.path_one_line.empty())
			out.push_back(c.id + ":   kernel path" + (r.from_trace ? "" : " (not traced)") + ": " +
				      one_line(r.path_one_line));
	}
	return out;
}

// The document's groups and their suites, as its cases run: consecutive
// cases of one (kernel, boot) and, in it, of one suite.
struct outline {
	ktap_plan plan;
	std::vector<size_t> group_kernels;	// each group's kernel_index
};

outline outline_of(const json &doc, const run_view &run)
{
	outline o;
	o.plan.grouped = grouped(doc, run);
	const std::string *suite = nullptr;
	for (const auto &c : run.cases) {
		if (o.plan.groups.empty() || (o.plan.grouped && c.kernel_index != o.group_kernels.back())) {
			o.plan.groups.emplace_back();
			o.group_kernels.push_back(c.kernel_index);
			suite = nullptr;
		}
		if (!suite || *suite != c.suite)
			o.plan.groups.back().push_back(0);
		suite = &c.suite;
		o.plan.groups.back().back()++;
	}
	return o;
}

// False, with errno, when not all of it was written.
bool write_all(int fd, const std::string &text)
{
	for (size_t off = 0; off < text.size();) {
		const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		off += size_t(n);
	}
	return true;
}

} // namespace

ktap_stream::ktap_stream(ktap_plan plan, int fd) : plan_(std::move(plan)), fd_(fd) {}

void ktap_stream::begin()
{
	if (begun_)
		return;
	begun_ = true;
	const size_t tests = plan_.grouped ? plan_.groups.size() : plan_.groups.empty() ? 0 : plan_.groups[0].size();
	open_.push_back({"main", tests});
	line("KTAP version 1");
	line("1.." + std::to_string(tests));
	flush();
}

void ktap_stream::header(const json &doc)
{
	begin();
	if (headed_)
		return;
	headed_ = true;
	diagnostic(run_header(doc, view_run(doc), plan_.groups.size()));
	flush();
}

size_t ktap_stream::records(const json &doc, size_t from)
{
	header(doc);
	const run_view run = view_run(doc);
	for (size_t i = from; i < run.cases.size(); i++)
		record(run.cases[i]);
	flush();
	return run.cases.size() > from ? run.cases.size() - from : 0;
}

void ktap_stream::end_group(const json *guest)
{
	// main, the group, a suite.
	while (open_.size() > 2)
		close();	// a suite short of its plan: its results so far
	if (guest)
		guest_ending(*guest);
	if (open_.size() == 2)
		close();
	group_++;
	suite_ = 0;
	flush();
}

void ktap_stream::end(const json &doc)
{
	header(doc);
	while (open_.size() > 1)
		close();
	if (!plan_.grouped)
		if (const json *vm = member(doc, "vm"))
			guest_ending(*vm);
	if (incomplete(doc))
		diagnostic("the run did not complete (results.json: \"complete\": false)");
	line("# Totals: pass:" + std::to_string(pass_) + " fail:" + std::to_string(fail_) + " xfail:" +
	     std::to_string(xfail_) + " xpass:" + std::to_string(xpass_) + " skip:" + std::to_string(skip_) +
	     " error:" + std::to_string(error_));
	flush();
}

std::string ktap_stream::take()
{
	return std::exchange(pending_, {});
}

// A case opens its group (a grouped run) and its suite when none is open,
// and its suite's result line follows the suite's last planned case.
void ktap_stream::record(const case_view &c)
{
	begin();
	const size_t suite_depth = plan_.grouped ? 2 : 1;
	if (plan_.grouped && open_.size() == 1) {
		const size_t suites = group_ < plan_.groups.size() ? plan_.groups[group_].size() : 0;
		open(description_text(c.kernel.label()), suites);
	}
	if (open_.size() > suite_depth && open_.back().name != description_text(c.suite)) {
		close();	// short of its plan (a plan the records do not follow)
		suite_++;
	}
	if (open_.size() == suite_depth)
		open(description_text(c.suite), planned_cases());
	case_diagnostics(c);
	case_result(c);
	if (open_.back().done == open_.back().planned) {
		close();
		suite_++;
	}
}

// The next suite's planned cases; 0 past the plan (then it stays open until
// its group or the run ends).
size_t ktap_stream::planned_cases() const
{
	if (group_ >= plan_.groups.size() || suite_ >= plan_.groups[group_].size())
		return 0;
	return plan_.groups[group_][suite_];
}

void ktap_stream::open(const std::string &name, size_t planned)
{
	open_.push_back({name, planned});
	// The subtest's own lines, indented; its name after its version line,
	// as KUnit writes it (and its parser prefers it).
	line("KTAP version 1");
	line("# Subtest: " + name);
	line("1.." + std::to_string(planned));
}

// The subtest's result line, one level out: not ok when any of its results
// was, SKIP when all were skips (with their reason when they gave one).
void ktap_stream::close()
{
	const level done = open_.back();
	open_.pop_back();
	if (done.not_ok)
		diagnostic(done.name + ": " + std::to_string(done.not_ok) + " of " + std::to_string(done.done) +
			   " not ok");
	const bool skipped = done.skipped == done.done;
	result(!done.not_ok, done.name, skipped ? "SKIP" : "", skipped ? done.skip_reason.value_or("") : "");
}

// A result line at the current level; its parent counts it.
void ktap_stream::result(bool ok, const std::string &description, const std::string &directive,
			 const std::string &reason)
{
	level &parent = open_.back();
	parent.done++;
	parent.not_ok += !ok;
	if (directive == "SKIP") {
		parent.skipped++;
		if (parent.skipped == 1)
			parent.skip_reason = reason;
		else if (parent.skip_reason != reason)
			parent.skip_reason = "";
	}
	std::string text = std::string(ok ? "ok " : "not ok ") + std::to_string(parent.done) + ' ' + description;
	if (!directive.empty())
		text += " # " + directive + (reason.empty() ? "" : " " + reason);
	line(text);
}

void ktap_stream::case_diagnostics(const case_view &c)
{
	if (c.result != verdict::skip)
		diagnostic(facts_of(c));
	for (const auto &path : kernel_paths_of(c))
		diagnostic(path);
	if (c.result == verdict::fail || c.result == verdict::xpass || timed_out_after_s(c))
		diagnostic(c.id + ": " + c.reason);
	if (c.result == verdict::error)
		serial_log(c.id, own_serial_excerpt(c));
}

// SKIP and ERROR with the reason; a case the runner ended at its
// --case-timeout as kselftest's runner reports one ("# TIMEOUT 60 seconds");
// a known kernel bug's expected failure and unexpected pass as kselftest's
// ksft_test_result_xfail() and _xpass() print them ("ok 3 # XFAIL why").
void ktap_stream::case_result(const case_view &c)
{
	const std::string desc = description_text(c.title());
	switch (c.result) {
	case verdict::pass:
		pass_++;
		return result(true, desc);
	case verdict::skip:
		skip_++;
		return result(true, desc, "SKIP", one_line(c.reason));
	case verdict::fail:
		fail_++;
		return result(false, desc);
	case verdict::xfail:
		xfail_++;
		return result(true, desc, "XFAIL", one_line(c.reason));
	case verdict::xpass:
		xpass_++;
		return result(true, desc, "XPASS", one_line(c.reason));
	case verdict::error:
		error_++;
		if (auto s = timed_out_after_s(c))
			return result(false, desc, "TIMEOUT", std::to_string(*s) + " seconds");
		return result(false, desc, "ERROR", one_line(c.reason));
	}
}

// A serial log excerpt, once: shown again, it points to where it was.
void ktap_stream::serial_log(const std::string &where, const std::string &text)
{
	if (text.empty())
		return;
	for (const auto &[shown, at] : shown_)
		if (shown == text)
			return diagnostic(where + ": serial log: above, at " + at);
	shown_.emplace_back(text, where);
	diagnostic(where + ": serial log:");
	diagnostic(text, 20);
}

// How a guest ended, when it ended early: the result it explains follows.
void ktap_stream::guest_ending(const json &entry)
{
	if (auto ending = ending_of(entry, "guest")) {
		diagnostic("guest: " + ending->ended);
		serial_log("guest", ending->serial_excerpt);
	}
}

void ktap_stream::diagnostic(std::string_view text, size_t max_lines)
{
	std::istringstream lines{std::string(text)};
	size_t n = 0;
	for (std::string l; std::getline(lines, l);) {
		if (n++ == max_lines)
			return line("# ...");
		line("# " + printable(l));
	}
}

// A line at the current depth: the top level's lines are not indented, a
// subtest's by one step per level.
void ktap_stream::line(const std::string &text)
{
	for (size_t depth = 1; depth < open_.size(); depth++)
		pending_ += indent_step;
	pending_ += text;
	pending_ += '\n';
}

// A stdout that cannot take the document (a full disk) does not end the
// run: its cases go on to results.json and results.ktap.
void ktap_stream::flush()
{
	if (fd_ < 0 || write_all(fd_, take()))
		return;
	const std::string why = std::strerror(errno);
	std::cerr << "pinmatrix: ERROR: KTAP not written to stdout: " << why << "; the run goes on" << std::endl;
	fd_ = -1;
}

std::string format_ktap(const json &doc)
{
	const run_view run = view_run(doc);
	const outline o = outline_of(doc, run);
	ktap_stream ktap(o.plan);
	ktap.header(doc);
	size_t at = 0;
	for (size_t g = 0; g < o.plan.groups.size(); g++) {
		for (size_t cases : o.plan.groups[g])
			for (size_t i = 0; i < cases; i++)
				ktap.record(run.cases[at++]);
		if (o.plan.grouped)
			ktap.end_group(group_entry(doc, run.kernels[o.group_kernels[g]]));
	}
	ktap.end(doc);
	return ktap.take();
}

bool streams_ktap(const std::string &format)
{
	require_format(format, {"text", "ktap"});
	return format == "ktap";
}

namespace {

// The plan's "# plan: SUITE N CASE" lines: each suite's cases numbered
// from 1, as their subtest numbers their result lines.
std::string planned_case_lines(const json &suites)
{
	std::string out;
	for (const auto &s : suites) {
		const std::string suite = description_text(s.at("name").get<std::string>());
		size_t n = 0;
		for (const auto &c : s.at("cases")) {
			const std::string title =
				case_title(c.at("id").get<std::string>(), c.at("name").get<std::string>());
			out += "# plan: " + suite + " " + std::to_string(++n) + " " + description_text(title) + "\n";
		}
	}
	return out;
}

} // namespace

std::string format_ktap_plan(const json &plan, const std::string &tool)
{
	// A suite without cases has no subtest in a run.
	json suites = json::array();
	for (const auto &s : plan.at("suites"))
		if (!s.at("cases").empty())
			suites.push_back(s);
	ktap_plan sizes;
	sizes.groups.emplace_back();
	size_t cases = 0;
	for (const auto &s : suites) {
		sizes.groups[0].push_back(s["cases"].size());
		cases += s["cases"].size();
	}
	ktap_stream head(sizes);
	head.begin();
	return head.take() + "# " + one_line(tool) + ": the plan, no results: " + std::to_string(cases) +
	       " cases in " + std::to_string(suites.size()) +
	       " suites; \"# plan: SUITE N CASE\" is the result line \"ok N CASE\" to come in subtest SUITE\n" +
	       planned_case_lines(suites);
}

namespace {

// The real stdout, kept for the KTAP document; fd 1 becomes stderr's. C's
// stdout goes line by line from now on, so that people's lines reach stderr
// as they are printed.
int keep_stdout()
{
	std::cout.flush();
	std::fflush(stdout);
	const int kept = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (kept < 0)
		throw last_sys_error("dup stdout");
	if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		::close(kept);
		throw last_sys_error("dup2 stderr to stdout");
	}
	std::setvbuf(stdout, nullptr, _IOLBF, 0);
	return kept;
}

} // namespace

ktap_console::ktap_console(ktap_plan plan) : stdout_(keep_stdout()), stream_(std::move(plan), stdout_.get()) {}

ktap_console::~ktap_console()
{
	std::cout.flush();
	std::fflush(stdout);
	dup2(stdout_.get(), STDOUT_FILENO);
}

} // namespace pinmatrix
