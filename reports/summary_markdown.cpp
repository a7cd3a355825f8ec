// SPDX-License-Identifier: GPL-2.0
// summary.md: what a CI comment needs and no more: the verdict and counts,
// every failing case with its reason, the skips by reason, and a compact
// table (case x kernel when several kernels ran).

#include <algorithm>
#include <map>
#include <sstream>

#include "report_input.hpp"
#include "reports.hpp"
#include "run_files.hpp"
#include "step_clock.hpp"

namespace pinmatrix {

using namespace report;

namespace {

std::string verdict_text(verdict o)
{
	// Non-pass verdicts stand out in a table.
	return o == verdict::pass ? "PASS" : std::string("**") + upper_name(o) + "**";
}

std::string latency_text(const case_view &c)
{
	auto s = stats_of(c.latency_ns);
	if (!s)
		return "-";
	return s->n == 1 ? format_ns(s->median) : format_ns(s->median) + " (median of " + std::to_string(s->n) + ")";
}

constexpr size_t table_limit = 40;	// rows; past that only non-pass cases

// A row of the case x kernel table: the id's case on each kernel that ran
// it (its last in the document), and whether all of them passed.
struct id_row {
	std::string_view id;
	std::map<size_t, const case_view *> per_kernel;
	bool all_pass = true;
};

std::vector<id_row> cases_by_id(const run_view &run)
{
	std::vector<id_row> rows;
	std::map<std::string_view, size_t> index;
	for (const auto &c : run.cases) {
		const auto [it, fresh] = index.emplace(c.id, rows.size());
		if (fresh)
			rows.push_back({c.id, {}});
		id_row &row = rows[it->second];
		row.per_kernel[c.kernel_index] = &c;
		row.all_pass &= c.result == verdict::pass;
	}
	return rows;
}

// Links to files of the run: "[serial log](serial.log) · ...", each
// label escaped, each path percent-encoded (no byte of it can end the link).
std::string links_markdown(const std::vector<file_link> &links)
{
	return join(links, " \u00b7 ", [](const file_link &l) {
		return "[" + markdown_text(l.label) + "](" + l.href() + ")";
	});
}

// "`6.1.0-57-amd64` version `6.1.192` (`#1 SMP ... Debian 6.1.192-3 ...`)"
std::string kernel_markdown(const kernel_with_version &k)
{
	return markdown_code(k.name_and_release) + " version " + markdown_code(k.version.upstream) +
	       (k.version.build.empty() ? "" : " (" + markdown_code(k.version.build) + ")");
}

// Under the heading: the kernel(s) and their versions, the suite's version
// and commit, the run's files.
void render_provenance(std::ostringstream &out, const run_view &run, const json &doc, const run_files *files)
{
	const auto kernels = kernels_with_versions(run);
	out << "\n" << (kernels.size() > 1 ? "Kernels: " : "Kernel: ") << join(kernels, ", ", kernel_markdown)
	    << (kernels.empty() ? "not recorded" : "") << "\n";
	const tool_view tool = tool_of(doc);
	out << "\n" << markdown_text(tool.name) << " version " << markdown_code(tool.version) << ", commit "
	    << markdown_code(tool.commit) << "\n";
	if (files && !files->run.empty())
		out << "\nFiles: " << links_markdown(files->run) << "\n";
	if (!files || files->guests.empty())
		return;
	constexpr size_t shown = 16;
	out << "\nEach guest's files:\n\n";
	for (size_t i = 0; i < files->guests.size() && i < shown; i++)
		out << "- " << markdown_code(files->guests[i].kernel.label()) << ": " << links_markdown(files->guests[i].files)
		    << "\n";
	if (files->guests.size() > shown)
		out << "- and " << files->guests.size() - shown << " more in report.html\n";
}

// The heading: the verdict, the counts, the kernels and how a guest ended.
void render_heading(std::ostringstream &out, const run_view &run, const json &doc, const run_files *files)
{
	out << "### pinmatrix: " << upper_name(run.overall);
	if (run.several_kernels())
		out << " on " << run.kernels.size() << " kernels";
	else if (!run.kernels.empty())
		out << " on " << markdown_code(run.kernels[0].label());
	out << "\n\n";
	out << "**" << run.fail << " fail, " << run.error << " error, ";
	if (run.xfail || run.xpass)
		out << run.xfail << " xfail, " << run.xpass << " xpass, ";
	out << run.pass << " pass, " << run.skip << " skip** of " << run.total() << (run.total() == 1 ? " case" : " cases");
	if (incomplete(doc))
		out << " - **the run did not complete**";
	out << "\n";
	render_provenance(out, run, doc, files);
	for (const auto &g : guest_endings(doc))
		out << "\n" << (g.guest == "guest" ? "Guest" : "Guest " + markdown_code(g.guest)) << ": "
		    << markdown_text(g.ended)
		    << " (serial log excerpt in report.html)\n";
}

// Unexpected passes first: the known-bug table says the case should fail here.
void render_unexpected_passes(std::ostringstream &out, const run_view &run)
{
	for (const auto &b : known_bugs_met(run))
		for (const auto *c : b.xpass)
			out << "\n**Unexpected pass** of " << markdown_text(c->title())
			    << (run.several_kernels() ? " on " + markdown_code(c->kernel.label()) : "") << ": known bug "
			    << markdown_text(b.id) << " should fail it; the known-bug table is out of date, or this "
			    << "kernel carries the fix\n";
}

// The known kernel bugs the run met: what, where, the cases, the fix.
void render_known_bugs(std::ostringstream &out, const run_view &run)
{
	const auto bugs = known_bugs_met(run);
	if (bugs.empty())
		return;
	out << "\n#### Known kernel bugs\n\n";
	for (const auto &b : bugs) {
		out << "- **" << markdown_text(b.id) << "**: " << markdown_text(b.title) << " ("
		    << markdown_text(b.where) << "). Kernels: " << markdown_text(b.kernels)
		    << ". Fix: " << markdown_text(b.fix) << ".";
		for (const auto &[label, cases] : {std::pair{"expected failure", &b.xfail}, std::pair{"unexpected pass", &b.xpass}})
			for (const auto *c : *cases)
				out << " " << label << ": " << markdown_text(c->title())
				    << (run.several_kernels() ? " on " + markdown_code(c->kernel.label()) : "") << ";";
		out << "\n";
	}
}

// Every case that failed or ended in error, worst first, with its reason
// (and in a merged run the files of its guest).
void render_failing(std::ostringstream &out, const run_view &run, const run_files *files)
{
	if (run.fail + run.error == 0)
		return;
	out << "\n#### Failing\n\n";
	for (const auto *c : run.worst_first()) {
		if (c->result != verdict::fail && c->result != verdict::error)
			continue;
		out << "- **" << markdown_text(c->title()) << "** " << upper_name(c->result);
		if (run.several_kernels())
			out << " on " << markdown_code(c->kernel.label());
		out << ": " << markdown_text(c->reason.empty() ? "(no reason recorded)" : c->reason);
		if (c->result == verdict::fail)
			out << " (expected " << markdown_text(c->expected) << ", observed "
			    << markdown_text(c->observed) << ")";
		if (files && !files->guests.empty() && &files->of_case(*c) != &files->run)
			out << " - " << links_markdown(files->of_case(*c));
		out << "\n";
	}
}

// The skips, one line per reason.
void render_skipped(std::ostringstream &out, const run_view &run)
{
	if (!run.skip)
		return;
	out << "\n#### Skipped\n\n";
	for (const auto &[reason, ids] : run.skip_reasons()) {
		out << "- " << ids.size() << (ids.size() == 1 ? " case" : " cases");
		if (ids.size() <= 12) {
			out << " (";
			for (size_t i = 0; i < ids.size(); i++)
				out << (i ? ", " : "") << markdown_text(ids[i]);
			out << ")";
		}
		out << ": " << markdown_text(reason.empty() ? "(no reason recorded)" : reason) << "\n";
	}
}

// What each failed registration's errno meant (registration telemetry),
// expected ones included: an ENOMEM is several different problems.
void render_classified_errors(std::ostringstream &out, const run_view &run)
{
	std::vector<std::string> classified;
	for (const auto &c : run.cases)
		for (const auto &r : registrations_of(c))
			if (r.err && !r.classification.empty()) {
				std::string line = "- **" + markdown_text(c.id) + "** " + markdown_text(r.errno_name) +
						   ": " + markdown_text(r.classification);
				if (run.several_kernels())
					line += " on " + markdown_code(c.kernel.label());
				if (!r.path_one_line.empty())
					line += " (kernel path: " + markdown_text(r.path_one_line) + ")";
				classified.push_back(line);
			}
	if (classified.empty())
		return;
	constexpr size_t shown = 12;
	out << "\n#### Registration errors, classified\n\n";
	for (size_t i = 0; i < classified.size() && i < shown; i++)
		out << classified[i] << "\n";
	if (classified.size() > shown)
		out << "- and " << classified.size() - shown << " more in report.html\n";
}

// A case on a kernel: its verdict and median latency.
std::string verdict_and_latency(const case_view &c)
{
	const auto latency = stats_of(c.latency_ns);
	return verdict_text(c.result) + (latency ? " " + markdown_text(format_ns(latency->median)) : "");
}

// Case x kernel: each case's verdict and median latency on each kernel;
// a line per (case, kernel) that ran where that table would be mostly
// empty (worth_a_table).
void render_kernel_table(std::ostringstream &out, const run_view &run, bool only_bad)
{
	const auto rows = cases_by_id(run);
	const bool table = worth_a_table(rows.size(), run.kernels.size(), run.cases.size());
	out << "| case |";
	if (table)
		for (const auto &k : run.kernels)
			out << " " << markdown_text(k.label()) << " |";
	else
		out << " kernel | verdict |";
	out << "\n|---|";
	for (size_t i = 0; i < (table ? run.kernels.size() : 2); i++)
		out << "---|";
	out << "\n";
	for (const auto &[id, per_kernel, all_pass] : rows) {
		if (only_bad && all_pass)
			continue;
		if (!table) {
			for (const auto &[k, c] : per_kernel)
				out << "| " << markdown_text(id) << " | " << markdown_text(run.kernels[k].label()) << " | "
				    << verdict_and_latency(*c) << " |\n";
			continue;
		}
		out << "| " << markdown_text(id) << " |";
		for (size_t k = 0; k < run.kernels.size(); k++) {
			const auto it = per_kernel.find(k);
			out << " " << (it == per_kernel.end() ? "-" : verdict_and_latency(*it->second)) << " |";
		}
		out << "\n";
	}
	out << "\nLatency: median registration latency of the case on that kernel.\n";
}

// One kernel: a row per case, what it pinned, expected and observed.
void render_case_rows(std::ostringstream &out, const run_view &run, bool only_bad)
{
	out << "| case | placement | first pin | expected | observed | verdict | latency |\n"
	    << "|---|---|---|---|---|---|---|\n";
	for (const auto &c : run.cases) {
		if (only_bad && c.result == verdict::pass)
			continue;
		out << "| " << markdown_text(c.title()) << " | "
		    << markdown_text(c.placement.empty() ? "-" : c.placement) << " | "
		    << markdown_text(c.first_pin.empty() ? "-" : c.first_pin) << " | " << markdown_text(c.expected)
		    << " | " << markdown_text(c.observed) << " | " << verdict_text(c.result) << " | "
		    << markdown_text(latency_text(c)) << " |\n";
	}
}

constexpr size_t slowest_shown = 5;

// Where the run's time went besides its cases (results.json's time_ms),
// the longest first.
void render_run_steps(std::ostringstream &out, const json &doc)
{
	const json *steps_json = doc.is_object() ? member(doc, "time_ms") : nullptr;
	if (!steps_json)
		return;
	step_times steps = step_times_from_json(*steps_json);
	std::erase_if(steps, [](const auto &s) { return s.first == "cases"; });
	if (!steps.empty())
		out << "\nThe run besides its cases: " << markdown_text(steps_text(std::move(steps), SIZE_MAX)) << "\n";
}

// The slowest cases and the steps that took their time (observed.time_ms):
// where a run's minutes go, for whoever makes it faster.
void render_slowest(std::ostringstream &out, const run_view &run)
{
	std::vector<const case_view *> timed;
	for (const auto &c : run.cases)
		if (c.duration_ns)
			timed.push_back(&c);
	if (timed.empty())
		return;
	const size_t n = std::min(slowest_shown, timed.size());
	std::partial_sort(timed.begin(), timed.begin() + n, timed.end(),
			  [](const case_view *a, const case_view *b) { return *a->duration_ns > *b->duration_ns; });
	out << "\nSlowest cases:\n\n| case | took | longest steps |\n|---|---|---|\n";
	for (size_t i = 0; i < n; i++) {
		const std::string steps = case_steps_text(*timed[i], 3);
		out << "| " << markdown_text(timed[i]->title()) << " | " << markdown_text(format_ns(*timed[i]->duration_ns))
		    << " | " << markdown_text(steps.empty() ? "-" : steps) << " |\n";
	}
}

// The compact table; past table_limit cases only those that did not pass.
void render_case_table(std::ostringstream &out, const run_view &run)
{
	if (run.cases.empty())
		return;
	const bool only_bad = run.total() > table_limit;
	out << "\n";
	if (only_bad)
		out << "Cases other than PASS (" << run.total() - size_t(run.pass) << " of " << run.total()
		    << "; all in report.html):\n\n";
	if (run.several_kernels())
		render_kernel_table(out, run, only_bad);
	else
		render_case_rows(out, run, only_bad);
}

} // namespace

std::string format_summary_markdown(const json &doc, const report::run_files *files)
{
	const run_view run = view_run(doc);
	std::ostringstream out;
	render_heading(out, run, doc, files);
	render_unexpected_passes(out, run);
	render_failing(out, run, files);
	render_known_bugs(out, run);
	render_skipped(out, run);
	render_classified_errors(out, run);
	render_case_table(out, run);
	render_slowest(out, run);
	render_run_steps(out, doc);
	return out.str();
}

} // namespace pinmatrix
