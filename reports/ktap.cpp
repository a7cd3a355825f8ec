// SPDX-License-Identifier: GPL-2.0
// KTAP version 1 as kselftest writes it: the "TAP version 13" header (which
// KTAP accepts and plain TAP parsers such as prove require), the plan up
// front, diagnostics as "# " lines directly before the result they explain,
// exactly one result line per case, SKIP and ERROR directives, and
// kselftest's closing "# Totals:" line.

#include <set>
#include <sstream>

#include "report_input.hpp"
#include "reports.hpp"

namespace pinmatrix {

using namespace report;

namespace {

// A KTAP description cannot contain '#' (it would start a directive).
std::string description_text(std::string_view s)
{
	std::string out = one_line(s);
	for (auto &ch : out)
		if (ch == '#')
			ch = ' ';
	return out.empty() ? "-" : out;
}

void diagnostic(std::ostringstream &out, std::string_view text, size_t max_lines = 40)
{
	std::istringstream lines{std::string(text)};
	size_t n = 0;
	for (std::string line; std::getline(lines, line);) {
		if (n++ == max_lines) {
			out << "# ...\n";
			break;
		}
		std::string printable;
		for (char ch : line)
			if (static_cast<unsigned char>(ch) >= 0x20 && ch != 0x7f)
				printable += ch;	// not a serial log's escape sequences
		out << "# " << printable << '\n';
	}
}

// The diagnostics before the first result: the tool and the kernel(s)
// it ran on, and whether the run completed.
void render_header(std::ostringstream &out, const run_view &run, const json &doc)
{
	const json *tool = member(doc, "tool");
	const std::string header = tool ? text_at(*tool, "name", "pinmatrix") + " " + text_at(*tool, "version")
					 : std::string("pinmatrix");
	if (run.several_kernels()) {
		diagnostic(out, one_line(header) + ": " + std::to_string(run.kernels.size()) + " kernels");
		for (const auto &k : run.kernels)
			diagnostic(out, "kernel: " + k.label());
	} else {
		const json *kernel = member(doc, "kernel");
		std::string release = run.kernels.empty() ? "" : run.kernels[0].release;
		if (release.empty())
			release = kernel ? text_at(*kernel, "release", "unknown kernel") : "unknown kernel";
		const std::string cmdline = kernel ? one_line(text_at(*kernel, "cmdline")) : "";
		diagnostic(out, one_line(header) + " on " + release + (cmdline.empty() ? "" : " (" + cmdline + ")"));
	}
	if (incomplete(doc))
		diagnostic(out, "the run did not complete: cases without a result are missing");
}

// What the case expected and observed, and its latency.
void render_facts(std::ostringstream &out, const case_view &c)
{
	std::string facts = c.id + ": expected " + one_line(c.expected) + "; " +
			    (c.observed == "-" ? "nothing observed" : "observed " + one_line(c.observed));
	if (auto latency = stats_of(c.latency_ns))
		facts += "; latency " + (latency->n == 1 ? format_ns(latency->median, true) : describe(*latency, true));
	diagnostic(out, facts);
}

// The registration telemetry: what each failed registration's errno meant
// and the kernel path that led there (or, when none failed, the path of the
// case's own registration).
void render_kernel_paths(std::ostringstream &out, const case_view &c)
{
	if (auto fp = first_pin_path_of(c); fp && !fp->one_line.empty())
		diagnostic(out, c.id + ": first pin kernel path: " + one_line(fp->one_line));
	const auto regs = registrations_of(c);
	for (const auto &r : regs) {
		if (!r.err && &r != main_registration(regs))
			continue;
		std::string line = c.id + ": registration " + r.title + " -> " + r.errno_name;
		if (!r.classification.empty())
			line += ": " + r.classification + " (rule " + r.rule + ")";
		diagnostic(out, one_line(line));
		if (!r.path_one_line.empty())
			diagnostic(out, c.id + ":   kernel path" + (r.from_trace ? "" : " (not traced)") + ": " +
						one_line(r.path_one_line));
	}
}

// The serial log of a case in error: a guest's log once, at its first case
// in error.
void render_serial_log(std::ostringstream &out, const run_view &run, const case_view &c,
		       std::set<std::string> &shown_guests)
{
	auto serial = serial_excerpt_for(run, c);
	if (serial.text.empty())
		return;
	if (serial.guest.empty() || shown_guests.insert(serial.guest).second) {
		diagnostic(out, c.id + ": serial log" + (serial.guest.empty() ? "" : " of " + serial.guest) + ":");
		diagnostic(out, serial.text, 20);
	} else {
		diagnostic(out, c.id + ": serial log of " + serial.guest + ": above");
	}
}

// The case's one result line, after the diagnostics that explain it.
void render_result(std::ostringstream &out, const run_view &run, const case_view &c, size_t number,
		   std::set<std::string> &shown_guests)
{
	std::string desc = c.title();
	if (run.several_kernels())
		desc += " on " + c.kernel.label();
	desc = description_text(desc);
	switch (c.result) {
	case verdict::pass:
		out << "ok " << number << ' ' << desc << '\n';
		break;
	case verdict::skip:
		out << "ok " << number << ' ' << desc << " # SKIP " << one_line(c.reason) << '\n';
		break;
	case verdict::fail:
		diagnostic(out, c.id + ": " + c.reason);
		out << "not ok " << number << ' ' << desc << '\n';
		break;
	case verdict::error:
		render_serial_log(out, run, c, shown_guests);
		out << "not ok " << number << ' ' << desc << " # ERROR " << one_line(c.reason) << '\n';
		break;
	}
}

} // namespace

std::string format_ktap(const json &doc)
{
	const run_view run = view_run(doc);
	std::ostringstream out;
	out << "TAP version 13\n";
	out << "1.." << run.total() << '\n';
	render_header(out, run, doc);
	std::set<std::string> shown_guests;
	size_t number = 0;
	for (const auto &c : run.cases) {
		if (c.result != verdict::skip)
			render_facts(out, c);
		render_kernel_paths(out, c);
		render_result(out, run, c, ++number, shown_guests);
	}
	out << "# Totals: pass:" << run.pass << " fail:" << run.fail << " xfail:0 xpass:0 skip:" << run.skip
	    << " error:" << run.error << '\n';
	return out.str();
}

} // namespace pinmatrix
