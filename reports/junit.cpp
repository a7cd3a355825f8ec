// SPDX-License-Identifier: GPL-2.0
// JUnit XML in the shape of Apache Ant's report, which Jenkins and GitLab
// read: <testsuites> of <testsuite> (one per suite and kernel) with
// <properties> (kernel, boot command line), then one <testcase> per case
// with at most one <failure>, <error> or <skipped>, and its evidence in
// <system-out>. tests/data/junit.xsd is the schema it is checked against.

#include <cctype>
#include <cstdio>
#include <map>
#include <sstream>

#include "report_input.hpp"
#include "reports.hpp"

namespace pinmatrix {

using namespace report;

namespace {

std::string attr(std::string_view s)
{
	return escape_markup(s, true);
}

std::string seconds(double ns)
{
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%.6f", ns > 0 ? ns / 1e9 : 0.0);
	return buf;
}

// Ant's timestamp: ISO 8601 without a zone (the run records UTC).
std::string ant_timestamp(const json &doc)
{
	std::string t = text_at(doc, "started_at");
	if (!t.empty() && t.back() == 'Z')
		t.pop_back();
	if (t.size() != 19 || t[10] != 'T')
		return "";
	return t;
}

std::string evidence_text(const case_view &c)
{
	std::string out;
	for (const auto &f : evidence_facts(c))
		out += f.label + ": " + f.value + "\n";
	for (const auto &x : extra_fields(c))
		out += x.label + ": " + echo_json(*x.value) + "\n";
	// Registration telemetry: each registration, its errno's meaning and
	// the kernel path that led there.
	for (const auto &r : registrations_of(c)) {
		out += "registration " + r.title + ": " + r.errno_name;
		if (!r.classification.empty())
			out += ": " + r.classification + " (rule " + r.rule + ")";
		out += "\n";
		for (const auto &f : r.facts)
			out += "  - " + f + "\n";
		for (const auto &l : r.path_lines)
			out += "  | " + l + "\n";
	}
	return out;
}

void property(std::ostringstream &out, const std::string &name, const std::string &value)
{
	if (!value.empty())
		out << "      <property name=\"" << attr(name) << "\" value=\"" << attr(value) << "\"/>\n";
}

// One <testsuite>: a suite's cases on one kernel.
struct suite_group {
	std::string suite;
	size_t kernel_index = 0;
	std::vector<const case_view *> cases;
};

// Suites in order of first appearance, each once per kernel.
std::vector<suite_group> suite_groups(const run_view &run)
{
	std::vector<suite_group> groups;
	std::map<std::pair<std::string, size_t>, size_t> index;
	for (const auto &c : run.cases) {
		const auto [it, fresh] = index.emplace(std::pair{c.suite, c.kernel_index}, groups.size());
		if (fresh)
			groups.push_back({c.suite, c.kernel_index, {}});
		groups[it->second].cases.push_back(&c);
	}
	return groups;
}

// <testsuites>: the counts and time of the whole run.
void render_testsuites_tag(std::ostringstream &out, const run_view &run)
{
	double total_ns = 0;
	for (const auto &c : run.cases)
		total_ns += c.duration_ns.value_or(0);
	out << "<testsuites name=\"pinmatrix\" tests=\"" << run.total() << "\" failures=\"" << run.fail
	    << "\" errors=\"" << run.error << "\" skipped=\"" << run.skip + run.xfail << "\" time=\"" << seconds(total_ns)
	    << "\">\n";
}

// <testsuite>: its name (with the kernel when several ran), counts and time.
void render_testsuite_tag(std::ostringstream &out, const run_view &run, const suite_group &g,
			  const std::string &timestamp)
{
	int failures = 0, errors = 0, skipped = 0;
	double ns = 0;
	for (const auto *c : g.cases) {
		failures += c->result == verdict::fail;
		errors += c->result == verdict::error;
		skipped += c->result == verdict::skip || c->result == verdict::xfail;
		ns += c->duration_ns.value_or(0);
	}
	std::string suite_name = "pinmatrix." + g.suite;
	if (run.several_kernels())
		suite_name += " on " + run.kernels[g.kernel_index].label();
	out << "  <testsuite name=\"" << attr(suite_name) << "\" tests=\"" << g.cases.size()
	    << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped
	    << "\" time=\"" << seconds(ns) << "\"";
	if (!timestamp.empty())
		out << " timestamp=\"" << attr(timestamp) << "\"";
	out << ">\n";
}

// <properties>: the kernel, its boot, and the run's tool and schema.
void render_properties(std::ostringstream &out, const run_view &run, const json &doc, const kernel_config &k)
{
	const json *kernel = member(doc, "kernel");
	const json *vm = member(doc, "vm");
	const tool_view tool = tool_of(doc);
	out << "    <properties>\n";
	property(out, "kernel.name", k.name);
	property(out, "kernel.release", k.release);
	property(out, "boot.placement", k.boot);
	property(out, "boot.append", k.append);
	// The run's own kernel facts describe this kernel unless the run
	// merged several.
	if (kernel && !run.several_kernels()) {
		property(out, "kernel.version", text_at(*kernel, "version"));
		property(out, "kernel.cmdline", text_at(*kernel, "cmdline"));
		property(out, "kernel.source", text_at(*kernel, "source"));
	}
	if (vm && !run.several_kernels())
		property(out, "vm.accel", text_at(*vm, "accel"));
	property(out, "rdma_device", text_at(doc, "rdma_device"));
	property(out, "pinmatrix.version", tool.version);
	property(out, "pinmatrix.commit", tool.commit);
	property(out, "results.schema", text_at(doc, "schema"));
	property(out, "results.started_at", text_at(doc, "started_at"));
	out << "    </properties>\n";
}

// The <failure>, <error> or <skipped> of a case that did not pass.
void render_verdict(std::ostringstream &out, const run_view &run, const case_view &c)
{
	const std::string reason = one_line(c.reason);
	switch (c.result) {
	case verdict::pass:
		break;
	case verdict::fail:
		out << "      <failure type=\"verdict\" message=\""
		    << attr(reason.empty() ? "expected " + c.expected + ", observed " + c.observed : reason) << "\">"
		    << escape_markup("expected: " + c.expected + "\nobserved: " + c.observed + "\nreason: " + c.reason +
				     "\n")
		    << "</failure>\n";
		break;
	case verdict::error: {
		std::string body = c.reason + "\n";
		if (auto serial = serial_excerpt_for(run, c); !serial.text.empty())
			body += "\nserial log:\n" + serial.text;
		out << "      <error type=\"error\" message=\"" << attr(reason) << "\">" << escape_markup(body)
		    << "</error>\n";
		break;
	}
	case verdict::skip:
	case verdict::xfail:	// skipped, with the known bug as the message (as IGT's CI)
		out << "      <skipped message=\"" << attr(reason) << "\"/>\n";
		break;
	case verdict::xpass:	// a pass; render_testcase() gives its reason in <system-err>
		break;
	}
}

// <testcase>: classname is the suite's (with the kernel when several ran)
// and the case's placement.
void render_testcase(std::ostringstream &out, const run_view &run, const case_view &c,
		     const std::string &classname)
{
	const std::string cls = classname + (c.placement.empty() ? "" : "." + name_part(c.placement));
	out << "    <testcase name=\"" << attr(c.title()) << "\" classname=\"" << attr(cls) << "\" time=\""
	    << seconds(c.duration_ns.value_or(0)) << "\">\n";
	render_verdict(out, run, c);
	out << "      <system-out>" << escape_markup(evidence_text(c)) << "</system-out>\n";
	// An unexpected pass: what it says of the known-bug table, for people.
	if (c.result == verdict::xpass)
		out << "      <system-err>" << escape_markup(c.reason + "\n") << "</system-err>\n";
	out << "    </testcase>\n";
}

void render_testsuite(std::ostringstream &out, const run_view &run, const json &doc, const suite_group &g)
{
	const kernel_config &k = run.kernels[g.kernel_index];
	render_testsuite_tag(out, run, g, ant_timestamp(doc));
	render_properties(out, run, doc, k);
	std::string classname = "pinmatrix.";
	if (run.several_kernels())
		classname += name_part(k.label()) + ".";
	classname += name_part(g.suite);
	for (const auto *c : g.cases)
		render_testcase(out, run, *c, classname);
	out << "  </testsuite>\n";
}

} // namespace

std::string format_junit(const json &doc)
{
	const run_view run = view_run(doc);
	std::ostringstream out;
	out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
	render_testsuites_tag(out, run);
	for (const auto &g : suite_groups(run))
		render_testsuite(out, run, doc, g);
	out << "</testsuites>\n";
	return out.str();
}

} // namespace pinmatrix
