// SPDX-License-Identifier: GPL-2.0
// report.html: one self-contained page (no script, no external style, font
// or image) for whoever is woken by a red run. Top to bottom: the verdict
// and counts, what failed and why, the matrix as a grid coloured by
// verdict, registration latency plots, every case's evidence (failures
// first and open), and the run's facts.

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "bench_report.hpp"
#include "promises_report.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "run_files.hpp"
#include "svg_plot.hpp"
#include "text.hpp"

namespace pinmatrix {

using namespace report;

namespace {

std::string ha(std::string_view s)
{
	return escape_markup(s, true);
}

std::string shorten(std::string s, size_t max)
{
	s = one_line(s);
	if (s.size() <= max)
		return s;
	size_t cut = max;
	while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80)
		cut--;	// not inside a UTF-8 sequence
	return s.substr(0, cut) + "\u2026";
}

const char *verdict_class(verdict o)
{
	switch (o) {
	case verdict::pass: return "v-pass";
	case verdict::fail: return "v-fail";
	case verdict::skip: return "v-skip";
	case verdict::xfail: return "v-xfail";
	case verdict::xpass: return "v-xpass";
	case verdict::error: break;
	}
	return "v-error";
}

std::string badge(verdict o)
{
	return std::string("<span class=\"badge ") + verdict_class(o) + "\">" + upper_name(o) + "</span>";
}

// Links to files of the run: their labels, each to its (percent-encoded,
// escaped) relative path.
std::string links_html(const std::vector<file_link> &links)
{
	return join(links, " \u00b7 ", [](const file_link &l) {
		return "<a href=\"" + ha(l.href()) + "\">" + h(l.label) + "</a>";
	});
}

// Colours of the verdicts (dots of a single-kernel plot) and of kernels.
const char *verdict_color(verdict o)
{
	switch (o) {
	case verdict::pass: return "#1a7f37";
	case verdict::fail: return "#cf222e";
	case verdict::skip: return "#6e7781";
	case verdict::xfail: return "#8250df";
	case verdict::xpass: return "#9a6700";
	case verdict::error: break;
	}
	return "#bc4c00";
}

const char *kernel_color(size_t i)
{
	static const char *palette[] = {"#0969da", "#bf3989", "#1a7f37", "#9a6700",
					"#8250df", "#0a7b83", "#cf222e", "#57606a"};
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

const char *style = R"css(
:root { --pass:#1a7f37; --pass-bg:#dafbe1; --fail:#cf222e; --fail-bg:#ffebe9;
  --error:#bc4c00; --error-bg:#fff1e5; --skip:#59636e; --skip-bg:#eaeef2;
  --xfail:#8250df; --xfail-bg:#fbefff; --xpass:#9a6700; --xpass-bg:#fff8c5;
  --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --paper:#ffffff; --page:#f6f8fa; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: var(--page);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", sans-serif; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", "Liberation Mono", Menlo, monospace; font-size: 12.5px; }
a { color: #0969da; text-decoration: none; } a:hover { text-decoration: underline; }
header.banner { color: #fff; padding: 18px 28px 16px; }
header.banner.v-pass { background: var(--pass); } header.banner.v-fail { background: var(--fail); }
header.banner.v-error { background: var(--error); } header.banner.v-skip { background: #57606a; }
header.banner.v-xfail { background: var(--xfail); } header.banner.v-xpass { background: var(--xpass); }
.banner .top { display: flex; align-items: baseline; gap: 22px; flex-wrap: wrap; }
.banner .verdict { font-size: 34px; font-weight: 800; letter-spacing: .04em; }
.banner .what { font-size: 17px; font-weight: 600; }
.banner .meta { margin-top: 6px; opacity: .95; }
.banner .meta code { background: rgba(255,255,255,.18); padding: 1px 5px; border-radius: 4px; color: #fff; }
.counts { display: flex; gap: 8px; flex-wrap: wrap; margin-top: 10px; }
.count { background: #fff; border-radius: 999px; padding: 3px 12px; font-weight: 700; }
.count.v-pass { color: var(--pass); } .count.v-fail { color: var(--fail); }
.count.v-error { color: var(--error); } .count.v-skip { color: var(--skip); }
.count.v-xfail { color: var(--xfail); } .count.v-xpass { color: var(--xpass); }
.count.zero { opacity: .55; font-weight: 500; }
main { max-width: 1360px; margin: 0 auto; padding: 4px 24px 40px; }
section { background: var(--paper); border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px 16px; margin: 16px 0; }
h2 { font-size: 18px; margin: 0 0 10px; } h3 { font-size: 15px; margin: 14px 0 6px; }
h4 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); text-transform: uppercase; letter-spacing: .04em; }
.muted { color: var(--muted); }
.badge { display: inline-block; min-width: 52px; text-align: center; border-radius: 4px; padding: 0 6px;
  font-weight: 700; font-size: 12px; line-height: 20px; color: #fff; }
.badge.v-pass { background: var(--pass); } .badge.v-fail { background: var(--fail); }
.badge.v-error { background: var(--error); } .badge.v-skip { background: var(--skip); }
.badge.v-xfail { background: var(--xfail); } .badge.v-xpass { background: var(--xpass); }
ol.attention { margin: 0; padding: 0; list-style: none; }
ol.attention li { border-left: 5px solid var(--fail); background: var(--fail-bg); padding: 8px 12px; margin: 6px 0; border-radius: 0 6px 6px 0; }
ol.attention li.v-error { border-color: var(--error); background: var(--error-bg); }
ol.attention .why { display: block; margin-top: 2px; }
ol.attention .eo { display: block; color: var(--muted); }
.allgood { color: var(--pass); font-weight: 600; margin: 0; }
.skips { margin: 10px 0 0; color: var(--muted); }
.alarm { border: 2px solid var(--error); background: var(--error-bg); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.alarm.v-xpass { border-color: var(--xpass); background: var(--xpass-bg); }
.known-bugs { margin: 10px 0 0; } .known-bugs li { margin: 4px 0; }
table.grid { border-collapse: separate; border-spacing: 4px; }
table.grid th { font-weight: 600; padding: 4px 8px; text-align: center; }
table.grid th.kernel { background: #ddf4ff; border-radius: 4px; }
table.grid th[scope=row] { text-align: right; white-space: nowrap; }
table.grid td { padding: 0; vertical-align: top; }
table.grid td.empty { color: var(--muted); text-align: center; }
.cell { display: block; width: 230px; min-height: 62px; border-radius: 6px; padding: 6px 9px;
  border: 1px solid transparent; color: var(--ink); margin-bottom: 3px; }
.cell:hover { text-decoration: none; filter: brightness(.97); }
.cell.v-pass { background: var(--pass-bg); border-color: #aceebb; }
.cell.v-fail { background: var(--fail-bg); border: 2px solid var(--fail); }
.cell.v-error { background: var(--error-bg); border: 2px solid var(--error); }
.cell.v-skip { background: var(--skip-bg); border-color: #d0d7de; }
.cell.v-xfail { background: var(--xfail-bg); border: 2px solid var(--xfail); }
.cell.v-xpass { background: var(--xpass-bg); border: 2px solid var(--xpass); }
.cell .cid { font-weight: 700; } .cell .cv { float: right; font-weight: 700; font-size: 12px; }
.cell.v-pass .cv { color: var(--pass); } .cell.v-fail .cv { color: var(--fail); }
.cell.v-error .cv { color: var(--error); } .cell.v-skip .cv { color: var(--skip); }
.cell.v-xfail .cv { color: var(--xfail); } .cell.v-xpass .cv { color: var(--xpass); }
.cell .co { display: block; font-size: 12px; color: var(--muted); overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
.cells-caption { color: var(--muted); padding: 8px 4px 4px; }
.cells { display: flex; flex-wrap: wrap; gap: 4px; padding: 0 4px; }
table.grid.compact .cell { width: 122px; min-height: 44px; padding: 5px 7px; font-size: 13px; }
table.grid.compact .cell .cv { float: none; display: block; }
table.grid.compact .cell.v-pass .co { display: none; }
.legend { display: flex; gap: 14px; flex-wrap: wrap; color: var(--muted); margin-top: 6px; }
.legend .sw { display: inline-block; width: 14px; height: 14px; border-radius: 3px; vertical-align: -2px; margin-right: 5px; border: 1px solid #d0d7de; }
.sw.v-pass { background: var(--pass-bg); border-color: var(--pass); } .sw.v-fail { background: var(--fail-bg); border: 2px solid var(--fail); }
.sw.v-error { background: var(--error-bg); border: 2px solid var(--error); } .sw.v-skip { background: var(--skip-bg); }
svg.plot { max-width: 100%; height: auto; display: block; }
svg.plot text { font-size: 12.5px; fill: var(--ink); }
svg.plot .heading { font-weight: 700; font-size: 13px; }
svg.plot .aggregate { font-weight: 700; }
svg.plot .note, svg.plot .axis { fill: var(--muted); }
svg.plot .stripe { fill: #f6f8fa; }
svg.plot .tick { stroke: #d8dee4; stroke-width: 1; }
svg.plot .range { stroke-width: 2; opacity: .6; }
svg.plot .iqr { opacity: .25; }
svg.plot circle { fill-opacity: .8; stroke: #fff; stroke-width: 1; }
svg.plot .median { stroke: var(--ink); stroke-width: 2.5; }
table.plain { border-collapse: collapse; }
table.plain th, table.plain td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
table.plain th { color: var(--muted); font-weight: 600; white-space: nowrap; }
table.plain td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.changed { background: #fff8c5; font-weight: 700; }
details.case { border: 1px solid var(--line); border-left: 6px solid var(--line); border-radius: 6px; margin: 8px 0; background: #fff; }
details.case.v-pass { border-left-color: var(--pass); } details.case.v-fail { border-left-color: var(--fail); }
details.case.v-error { border-left-color: var(--error); } details.case.v-skip { border-left-color: var(--skip); }
details.case > summary { cursor: pointer; padding: 7px 12px; list-style-position: outside; }
details.case > summary .where { color: var(--muted); margin-left: 8px; }
details.case > summary .why { display: block; margin: 2px 0 0 64px; color: var(--ink); }
details.case .body { padding: 0 14px 12px 14px; }
pre { background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px;
  white-space: pre-wrap; overflow-wrap: anywhere; max-height: 420px; overflow: auto; margin: 4px 0; }
pre.serial { background: #1f2328; color: #e6edf3; border-color: #1f2328; }
dl.run { display: grid; grid-template-columns: max-content 1fr; gap: 3px 16px; margin: 0; }
dl.run dt { color: var(--muted); font-weight: 600; } dl.run dd { margin: 0; overflow-wrap: anywhere; }
footer { color: var(--muted); text-align: center; font-size: 12px; padding: 8px; }
.registration { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px 8px; margin: 8px 0; }
.registration h5 { font-size: 13.5px; margin: 2px 0 6px; }
.classify { border-left: 5px solid var(--error); background: var(--error-bg); padding: 6px 12px; margin: 6px 0; border-radius: 0 6px 6px 0; }
.classify .cls { font-weight: 700; } .classify ul { margin: 4px 0 0; padding-left: 20px; }
pre.path { background: #f6f8fa; max-height: none; }
pre.path .src { color: var(--muted); font-size: 11px; }
pre.path .end-ok { color: var(--pass); font-weight: 700; } pre.path .end-err { color: var(--fail); font-weight: 700; }
.oneline { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
.banner .meta a { color: #fff; text-decoration: underline; }
.banner .meta .build { opacity: .85; }
p.files { margin: 6px 0; } td.gb-no { color: var(--fail); font-weight: 700; } td.gb-yes { color: var(--pass); font-weight: 700; }
details.raw { margin-top: 10px; }
)css";

// The grid of one suite: for the pin matrix, first pin (rows) x kernel x
// placement (columns); for a suite without placements, case x kernel.
// Every case is exactly one cell.
struct suite_grid {
	std::string suite;
	bool by_placement = false;
	std::vector<std::string> rows;
	std::vector<std::string> placements;	// columns within a kernel
	std::set<std::string> second_pins;
	std::map<std::tuple<std::string, size_t, std::string>, std::vector<const case_view *>> cells;
};

// Appends s to list unless seen has it: first appearance order, no rescan.
void add_once(std::vector<std::string> &list, std::set<std::string> &seen, const std::string &s)
{
	if (seen.insert(s).second)
		list.push_back(s);
}

std::vector<suite_grid> grids_of(const run_view &run)
{
	std::vector<suite_grid> grids;
	std::vector<std::vector<const case_view *>> members;
	std::map<std::string_view, size_t> index;
	for (const auto &c : run.cases) {
		const auto [it, fresh] = index.emplace(c.suite, grids.size());
		if (fresh) {
			grids.push_back({c.suite});
			members.emplace_back();
		}
		members[it->second].push_back(&c);
	}
	for (size_t i = 0; i < grids.size(); i++) {
		auto &g = grids[i];
		// By placement only when that names every case once per kernel.
		std::set<std::tuple<std::string, size_t, std::string>> seen;
		g.by_placement = true;
		for (const auto *c : members[i])
			g.by_placement &= !c->placement.empty() && !c->first_pin.empty() &&
					  seen.insert({c->first_pin, c->kernel_index, c->placement}).second;
		std::set<std::string> rows, placements;
		for (const auto *c : members[i]) {
			const std::string row = g.by_placement ? c->first_pin : c->title();
			const std::string column = g.by_placement ? c->placement : "";
			add_once(g.rows, rows, row);
			add_once(g.placements, placements, column);
			if (!c->second_pin.empty())
				g.second_pins.insert(c->second_pin);
			g.cells[{row, c->kernel_index, column}].push_back(c);
		}
	}
	return grids;
}

std::string cell_html(const case_view &c)
{
	const std::string detail = c.result == verdict::pass ? c.observed : c.reason.empty() ? c.observed : c.reason;
	std::ostringstream out;
	out << "<a class=\"cell " << verdict_class(c.result) << "\" href=\"#" << ha(c.anchor) << "\" data-case=\""
	    << ha(c.id) << "\" title=\"" << ha(c.title() + ": " + upper_name(c.result) + " \u2014 " + detail)
	    << "\"><span class=\"cid\">" << h(c.id) << "</span><span class=\"cv\">" << upper_name(c.result)
	    << "</span><span class=\"co\">" << h(shorten(detail, 90)) << "</span></a>";
	return out.str();
}

// A grid is drawn where it is mostly cells (worth_a_table). A suite spread
// thin over many kernels (a fleet, every node on its own kernel) would draw
// rows x kernels cells, nearly all empty: quadratic in the cases (4k cases,
// one kernel each, made a 494 MB page). It is listed by kernel instead.
bool too_sparse_for_a_grid(const run_view &run, const suite_grid &g)
{
	return !worth_a_table(g.rows.size(), run.kernels.size() * g.placements.size(), g.cells.size());
}

// The suite's cases by kernel, a line of cells under each kernel's name:
// every case once, every kernel named once.
void render_by_kernel(std::ostringstream &out, const run_view &run, const suite_grid &g)
{
	std::map<size_t, std::vector<const case_view *>> by_kernel;
	size_t cases = 0;
	for (const auto &[key, cell] : g.cells) {
		auto &list = by_kernel[std::get<1>(key)];
		list.insert(list.end(), cell.begin(), cell.end());
		cases += cell.size();
	}
	out << "<div class=\"cells-caption\">suite <b>" << h(g.suite) << "</b>: by kernel (" << cases
	    << " cases over " << by_kernel.size() << " kernels, too few a kernel for a grid)</div>\n";
	for (const auto &[k, list] : by_kernel) {
		out << "<h4>" << h(run.kernels[k].label()) << "</h4>\n<div class=\"cells\">";
		for (const auto *c : list)
			out << cell_html(*c);
		out << "</div>\n";
	}
}

void render_grid(std::ostringstream &out, const run_view &run, const suite_grid &g)
{
	if (too_sparse_for_a_grid(run, g)) {
		render_by_kernel(out, run, g);
		return;
	}
	if (!g.by_placement && !run.several_kernels()) {
		// Nothing to cross: the suite's cases side by side.
		out << "<div class=\"cells-caption\">suite <b>" << h(g.suite) << "</b></div>\n<div class=\"cells\">";
		for (const auto &row : g.rows)
			for (const auto *c : g.cells.at({row, 0, ""}))
				out << cell_html(*c);
		out << "</div>\n";
		return;
	}
	const size_t kernels = run.kernels.size();
	out << "<div class=\"cells-caption\">";
	if (g.by_placement) {
		const auto &second = g.second_pins;
		out << "suite <b>" << h(g.suite) << "</b>: first pin (rows) \u00d7 "
		    << (run.several_kernels() ? "kernel \u00d7 " : "") << "placement (columns)";
		if (second.size() == 1)
			out << "; second pin <code>" << h(*second.begin()) << "</code>";
	} else {
		out << "suite <b>" << h(g.suite) << "</b>: case (rows) \u00d7 kernel";
	}
	// Several kernels: narrower cells (the details are a click away).
	out << "</div>\n<div class=\"scroll\"><table class=\"grid" << (run.several_kernels() ? " compact" : "")
	    << "\">\n<thead>\n";
	if (run.several_kernels() && g.by_placement) {
		out << "<tr><th></th>";
		for (const auto &k : run.kernels)
			out << "<th class=\"kernel\" colspan=\"" << g.placements.size() << "\">" << h(k.label()) << "</th>";
		out << "</tr>\n";
	}
	out << "<tr><th></th>";
	for (size_t k = 0; k < kernels; k++)
		for (const auto &p : g.placements)
			out << "<th" << (g.by_placement ? "" : " class=\"kernel\"") << ">"
			    << h(g.by_placement ? p : run.several_kernels() ? run.kernels[k].label() : std::string("verdict"))
			    << "</th>";
	out << "</tr>\n</thead>\n<tbody>\n";
	for (const auto &row : g.rows) {
		out << "<tr><th scope=\"row\">" << h(row) << "</th>";
		for (size_t k = 0; k < kernels; k++)
			for (const auto &p : g.placements) {
				auto it = g.cells.find({row, k, p});
				if (it == g.cells.end()) {
					out << "<td class=\"empty\">\u2014</td>";
					continue;
				}
				out << "<td>";
				for (const auto *c : it->second)
					out << cell_html(*c);
				out << "</td>";
			}
		out << "</tr>\n";
	}
	out << "</tbody>\n</table></div>\n";
}

// The plot shows the range; the note says the median, the IQR and n.
std::string plot_note(const std::vector<double> &samples)
{
	auto s = stats_of(samples);
	if (!s)
		return "no sample";
	std::string out = "median " + format_ns(s->median);
	if (s->n >= 4)
		out += " \u00b7 IQR " + format_ns(s->p25) + "\u2013" + format_ns(s->p75);
	return out + " \u00b7 n=" + std::to_string(s->n);
}

// The cases of one group of the latency plot (a placement, or a suite for
// cases without one): a row per case id, a lane per kernel that ran it (a
// kernel without the case has no lane: a fleet with a kernel per node would
// otherwise draw rows x kernels lanes), in order of first appearance.
struct latency_row {
	plot_row row;
	std::map<size_t, plot_lane> lanes;	// by kernel index
	size_t label_kernel = 0;		// the kernel of the case that labels the row
};

struct latency_group {
	std::string name;
	std::vector<std::string> ids;
	std::vector<latency_row> rows;
	std::map<std::string_view, size_t> index;
};

std::string group_of(const case_view &c)
{
	return c.placement.empty() ? "suite " + c.suite : "placement " + c.placement;
}

plot_lane kernel_lane(const run_view &run, size_t k, bool aggregate)
{
	return {run.kernels[k].label(), aggregate && !run.several_kernels() ? "#57606a" : kernel_color(k), {}};
}

// Every case into its group's row, in one pass: a row is labelled and
// linked by its case on the last kernel (the last such in the document).
std::vector<latency_group> latency_groups(const run_view &run)
{
	std::vector<latency_group> groups;
	std::map<std::string, size_t> index;
	for (const auto &c : run.cases) {
		const auto [g, fresh_group] = index.emplace(group_of(c), groups.size());
		if (fresh_group)
			groups.push_back({g->first});
		latency_group &group = groups[g->second];
		const auto [r, fresh_row] = group.index.emplace(c.id, group.rows.size());
		if (fresh_row) {
			group.ids.push_back(c.id);
			group.rows.emplace_back();
		}
		latency_row &row = group.rows[r->second];
		if (fresh_row || c.kernel_index >= row.label_kernel) {
			// The plot's label column fits about 32 characters.
			row.row.label = c.title().size() <= 32 ? c.title() : shorten(c.id, 32);
			row.row.link = "#" + c.anchor;
			row.label_kernel = c.kernel_index;
		}
		auto lane = row.lanes.try_emplace(c.kernel_index, kernel_lane(run, c.kernel_index, false)).first;
		if (!run.several_kernels())
			lane->second.color = verdict_color(c.result);
		lane->second.samples.insert(lane->second.samples.end(), c.latency_ns.begin(), c.latency_ns.end());
	}
	return groups;
}

// A row's samples, its lanes in kernel order into the plot row, and each
// into the group's "all" lanes.
std::vector<double> close_row(const run_view &run, latency_row &r, std::map<size_t, plot_lane> &all)
{
	std::vector<double> samples;
	for (auto &[k, lane] : r.lanes) {
		samples.insert(samples.end(), lane.samples.begin(), lane.samples.end());
		auto &sum = all.try_emplace(k, kernel_lane(run, k, true)).first->second.samples;
		sum.insert(sum.end(), lane.samples.begin(), lane.samples.end());
		r.row.lanes.push_back(std::move(lane));
	}
	return samples;
}

// Rows of the latency plot: per group, each case with one lane per kernel
// that ran it, then all its cases together.
std::vector<plot_row> latency_rows(const run_view &run, std::vector<std::string> &without_samples)
{
	std::vector<plot_row> rows;
	for (auto &group : latency_groups(run)) {
		std::vector<plot_row> group_rows;
		std::map<size_t, plot_lane> all_lanes;
		std::vector<double> all_samples;
		for (size_t i = 0; i < group.rows.size(); i++) {
			const std::vector<double> samples = close_row(run, group.rows[i], all_lanes);
			if (samples.empty()) {
				without_samples.push_back(group.ids[i]);
				continue;
			}
			all_samples.insert(all_samples.end(), samples.begin(), samples.end());
			group.rows[i].row.note = plot_note(samples);
			group_rows.push_back(std::move(group.rows[i].row));
		}
		if (group_rows.empty())
			continue;
		rows.push_back({group.name, "", "", true});
		rows.insert(rows.end(), group_rows.begin(), group_rows.end());
		if (group_rows.size() > 1) {
			plot_row all;
			all.label = "all " + group.name.substr(group.name.find(' ') + 1) + " cases";
			all.aggregate = true;
			for (auto &[k, lane] : all_lanes)
				all.lanes.push_back(std::move(lane));
			all.note = plot_note(all_samples);
			rows.push_back(std::move(all));
		}
	}
	return rows;
}

// Each case id's samples per kernel that ran it, over every suite and
// placement: the medians of a run over several kernels.
std::vector<std::pair<std::string, std::map<size_t, std::vector<double>>>> samples_per_kernel(const run_view &run)
{
	std::vector<std::pair<std::string, std::map<size_t, std::vector<double>>>> out;
	std::map<std::string_view, size_t> index;
	for (const auto &c : run.cases) {
		const auto [it, fresh] = index.emplace(c.id, out.size());
		if (fresh)
			out.push_back({c.id, {}});
		auto &samples = out[it->second].second[c.kernel_index];
		samples.insert(samples.end(), c.latency_ns.begin(), c.latency_ns.end());
	}
	return out;
}

// A median as a cell: the value, its change against the first kernel's
// (when there is one), n.
std::string median_cell(const std::vector<double> &samples, std::optional<double> &first)
{
	auto s = stats_of(samples);
	if (!s)
		return "<td class=\"num muted\">\u2014</td>";
	std::string change;
	if (!first) {
		first = s->median;
	} else if (*first > 0) {
		char buf[32];
		std::snprintf(buf, sizeof(buf), " (%+.0f%%)", (s->median / *first - 1) * 100);
		change = buf;
	}
	return "<td class=\"num\">" + h(format_ns(s->median)) + h(change) + " <span class=\"muted\">n=" +
	       std::to_string(s->n) + "</span></td>";
}

// The same medians as numbers, against the first kernel: a case x kernel
// table where most cases ran on most kernels, else a line per (case,
// kernel) that ran (a table of empty cells would be quadratic).
void render_medians(std::ostringstream &out, const run_view &run)
{
	const auto per_case = samples_per_kernel(run);
	const bool table = worth_a_table(per_case.size(), run.kernels.size(), run.cases.size());
	out << "<h3>Median per kernel</h3>\n<table class=\"plain\"><thead><tr><th>case</th>";
	if (table)
		for (const auto &k : run.kernels)
			out << "<th>" << h(k.label()) << "</th>";
	else
		out << "<th>kernel</th><th>median</th>";
	out << "</tr></thead><tbody>\n";
	for (const auto &[id, per_kernel] : per_case) {
		std::optional<double> first;
		if (!table) {
			for (const auto &[k, samples] : per_kernel)
				out << "<tr><th>" << h(id) << "</th><td>" << h(run.kernels[k].label()) << "</td>"
				    << median_cell(samples, first) << "</tr>\n";
			continue;
		}
		out << "<tr><th>" << h(id) << "</th>";
		for (size_t k = 0; k < run.kernels.size(); k++) {
			const auto it = per_kernel.find(k);
			out << median_cell(it == per_kernel.end() ? std::vector<double>{} : it->second, first);
		}
		out << "</tr>\n";
	}
	out << "</tbody></table>\n";
}

void render_latency(std::ostringstream &out, const run_view &run)
{
	out << "<section id=\"latency\">\n<h2>Registration latency</h2>\n";
	std::vector<std::string> without;
	const auto rows = latency_rows(run, without);
	const std::string svg = svg_dot_plot(rows, "Registration latency per case and placement, log scale");
	if (svg.empty()) {
		out << "<p class=\"muted\">No case recorded a registration latency.</p>\n</section>\n";
		return;
	}
	out << "<p class=\"muted\">Each dot is one registration (CLOCK_MONOTONIC_RAW around the second pin); "
	       "the black bar is the median"
	    << (run.several_kernels() ? "; one lane per kernel that ran the case" : "; dots are coloured by the case's verdict")
	    << ". Logarithmic axis: a migration costs milliseconds, a registration in place microseconds.</p>\n";
	if (run.several_kernels()) {
		out << "<div class=\"legend\">";
		for (size_t k = 0; k < run.kernels.size(); k++)
			out << "<span><span class=\"sw\" style=\"background:" << kernel_color(k) << "\"></span>"
			    << h(run.kernels[k].label()) << "</span>";
		out << "</div>\n";
	}
	out << svg;
	if (!without.empty()) {
		out << "<p class=\"muted\">No latency (the case did not reach its registration): ";
		for (size_t i = 0; i < without.size(); i++)
			out << (i ? ", " : "") << h(without[i]);
		out << ".</p>\n";
	}
	if (run.several_kernels())
		render_medians(out, run);
	out << "</section>\n";
}

// The columns of the placement table: the page facts read first, in this
// order, then any other a step has, in order of first appearance.
std::vector<std::string> step_columns(const std::vector<page_step> &steps)
{
	static const char *first[] = {"pfn",	   "pfn_after",	       "zone",		   "migratetype",
				      "placement", "cma_area",	       "refcount",	   "maybe_dma_pinned",
				      "longterm_pinnable"};
	std::vector<std::string> out;
	std::set<std::string> seen;
	for (const char *key : first)
		for (const auto &step : steps)
			if (member(*step.page, key))
				add_once(out, seen, key);
	for (const auto &step : steps)
		for (const auto &[key, value] : step.page->items())
			add_once(out, seen, key);
	return out;
}

std::string column_title(const std::string &key)
{
	static const std::map<std::string, std::string> titles = {
		{"pfn", "PFN"}, {"pfn_after", "PFN after"}, {"first_pfn", "first PFN"},
		{"migratetype", "pageblock"}, {"cma_area", "CMA area"}, {"maybe_dma_pinned", "DMA-pinned"},
		{"longterm_pinnable", "long-term pinnable"}};
	const auto it = titles.find(key);
	return it == titles.end() ? key : it->second;
}

// A step's fact as a cell: PFNs in hex, yes/no, nested values on one line.
std::string step_value(const json &page, const std::string &key)
{
	const json *v = member(page, key);
	if (!v)
		return "\u2014";
	if (v->is_boolean())
		return v->get<bool>() ? "yes" : "no";
	const bool pfn = key.find("pfn") != std::string::npos;
	if (pfn && (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0)))
		return hex(v->get<uint64_t>());
	if (v->is_structured())
		return shorten(v->dump(-1, ' ', false, json::error_handler_t::replace), 200);
	return as_text(*v);
}

// The page's placement at each step, a cell marked where it changed.
void render_pages(std::ostringstream &out, const case_view &c)
{
	const auto steps = page_steps(c);
	if (steps.empty())
		return;
	const auto columns = step_columns(steps);
	out << "<h4>Placement at each step</h4>\n<table class=\"plain mono placement\"><thead><tr><th>step</th>";
	for (const auto &key : columns)
		out << "<th>" << h(column_title(key)) << "</th>";
	out << "</tr></thead><tbody>\n";
	const json *previous = nullptr;
	for (const auto &step : steps) {
		const json &p = *step.page;
		out << "<tr><th>" << h(step.step) << "</th>";
		for (const auto &key : columns) {
			const bool changed = previous && key != "refcount" && member(p, key) && member(*previous, key) &&
					     p[key] != (*previous)[key];
			out << "<td" << (changed ? " class=\"changed\"" : "") << ">" << h(step_value(p, key)) << "</td>";
		}
		out << "</tr>\n";
		previous = &p;
	}
	out << "</tbody></table>\n";
}

// The harm oracle's attempts: was the memory given back, pins held and not.
void render_give_back(std::ostringstream &out, const case_view &c)
{
	const auto rows = give_back_rows(c);
	if (rows.empty())
		return;
	out << "<h4>Give-back: the memory handed back to the kernel</h4>\n<table class=\"plain give-back\"><thead><tr>"
	       "<th>when</th><th>given back</th><th>how</th><th>what the kernel answered</th><th>took</th></tr></thead>"
	       "<tbody>\n";
	for (const auto &r : rows)
		out << "<tr><th>" << h(r.when) << "</th><td class=\"gb-" << h(r.given_back) << "\">" << h(r.given_back)
		    << "</td><td>" << h(r.method) << "</td><td>" << h(r.detail) << "</td><td class=\"num\">"
		    << h(r.took.empty() ? "\u2014" : r.took) << "</td></tr>\n";
	out << "</tbody></table>\n";
}

// One row per registration: what, its result and class, latency, pages.
void render_registration_table(std::ostringstream &out, const std::vector<registration_view> &regs)
{
	auto cell = [](const std::string &s) { return "<td>" + h(s.empty() ? "\u2014" : s) + "</td>"; };
	out << "<table class=\"plain registrations\"><thead><tr><th>registration</th><th>result</th>"
	       "<th>classification</th><th>latency</th><th>pages</th></tr></thead><tbody>\n";
	for (const auto &r : regs)
		out << "<tr><th>" << h(r.title) << "</th>" << cell(r.errno_name) << cell(r.classification)
		    << cell(r.latency) << cell(shorten(r.pages, 200)) << "</tr>\n";
	out << "</tbody></table>\n";
}

// Each registration: what it was, its errno's classification (with the
// facts that decided it) and the kernel path of section 16.6.
void render_registrations(std::ostringstream &out, const case_view &c)
{
	const auto regs = registrations_of(c);
	if (regs.empty())
		return;
	if (auto fp = first_pin_path_of(c)) {
		out << "<h4>First pin: kernel path</h4>\n<pre class=\"path\">";
		for (const auto &l : fp->lines)
			out << h(l) << "\n";
		out << "</pre>\n";
	}
	out << "<h4>Registrations: telemetry and kernel path</h4>\n";
	render_registration_table(out, regs);
	for (const auto &r : regs) {
		out << "<div class=\"registration\"><h5>" << h(r.title) << " \u2192 " << h(r.errno_name) << "</h5>\n";
		if (!r.classification.empty()) {
			out << "<div class=\"classify\">" << h(r.errno_name) << " means: <span class=\"cls\">"
			    << h(r.classification) << "</span> <span class=\"muted\">(rule " << h(r.rule) << ")</span><ul>";
			for (const auto &f : r.facts)
				out << "<li>" << h(f) << "</li>";
			out << "</ul></div>\n";
		}
		if (!r.path_lines.empty()) {
			out << "<div class=\"muted\">Kernel path" << (r.from_trace ? " (tracefs)" : " (not traced: from the page probes)")
			    << ": <span class=\"oneline\">" << h(r.path_one_line) << "</span></div>\n<pre class=\"path\">";
			for (size_t i = 0; i < r.path_lines.size(); i++) {
				const bool last = i + 1 == r.path_lines.size();
				const std::string cls = !last ? "" : r.err ? "end-err" : "end-ok";
				if (!cls.empty())
					out << "<span class=\"" << cls << "\">";
				out << h(r.path_lines[i]);
				if (!cls.empty())
					out << "</span>";
				if (i < r.path_sources.size() && !r.path_sources[i].empty())
					out << "  <span class=\"src\">[" << h(r.path_sources[i]) << "]</span>";
				out << "\n";
			}
			out << "</pre>\n";
			for (const auto &n : r.trace_notes)
				out << "<div class=\"muted\">note: " << h(n) << "</div>\n";
		}
		out << "<table class=\"plain\"><tbody>\n";
		for (const auto &f : r.telemetry)
			out << "<tr><th>" << h(f.label) << "</th><td>" << h(f.value) << "</td></tr>\n";
		out << "</tbody></table>\n";
		if (!r.events.empty()) {
			out << "<details><summary class=\"muted\">" << r.events.size() << " trace events</summary><pre>";
			for (const auto &e : r.events)
				out << h(e) << "\n";
			out << "</pre></details>\n";
		}
		out << "</div>\n";
	}
	const json *obs = member(*c.record, "observed");
	const json *kt = obs ? member(*obs, "kernel_trace") : nullptr;
	if (const json *outside = kt ? member(*kt, "outside_registrations") : nullptr;
	    outside && outside->is_array() && !outside->empty()) {
		out << "<details><summary class=\"muted\">" << outside->size()
		    << " trace events outside the registrations (the first pin)</summary><pre>";
		for (const auto &e : *outside)
			out << h(as_text(e)) << "\n";
		out << "</pre></details>\n";
	}
}

// A case's <summary>: verdict, title, where it pinned, why.
void render_case_summary(std::ostringstream &out, const run_view &run, const case_view &c)
{
	out << "<summary>" << badge(c.result) << " <b>" << h(c.title()) << "</b>";
	std::string where;
	if (!c.placement.empty())
		where += c.placement;
	if (!c.first_pin.empty())
		where += (where.empty() ? "" : " \u00b7 ") + c.first_pin;
	if (!c.second_pin.empty())
		where += " \u2192 " + c.second_pin;
	if (run.several_kernels())
		where += (where.empty() ? "" : " \u00b7 ") + c.kernel.label();
	if (!where.empty())
		out << "<span class=\"where\">" << h(where) << "</span>";
	if (c.result != verdict::pass) {
		if (!c.reason.empty())
			out << "<span class=\"why\">" << h(shorten(c.reason, 240)) << "</span>";
	} else if (c.observed != "-") {
		out << "<span class=\"where\">" << h(c.observed) << "</span>";
	}
	const auto regs = registrations_of(c);
	if (const auto *r = main_registration(regs); r && !r->classification.empty())
		out << "<span class=\"where\">\u00b7 " << h(r->errno_name) << ": " << h(r->classification) << "</span>";
	out << "</summary>\n";
}

void render_serial(std::ostringstream &out, const run_view &run, const case_view &c)
{
	const auto serial = serial_excerpt_for(run, c);
	if (serial.text.empty())
		return;
	if (serial.guest.empty())
		out << "<h4>Serial log (excerpt)</h4>\n<pre class=\"serial\">" << h(serial.text) << "</pre>\n";
	else
		out << "<h4>Serial log</h4>\n<p>The " << h(serial.guest == "guest" ? "guest" : "guest of " + serial.guest)
		    << " ended early: its serial log excerpt is under <a href=\"#attention\">Failures and "
		       "errors</a>.</p>\n";
}

// The facts, then the tables (placement, give-back, registrations), the
// rest of the record, the files of its guest and the raw record.
void render_case_body(std::ostringstream &out, const run_view &run, const case_view &c, const run_files *files)
{
	out << "<div class=\"body\">\n";
	if (files && !files->of_case(c).empty())
		out << "<p class=\"files\">Files: " << links_html(files->of_case(c)) << "</p>\n";
	out << "<table class=\"plain\"><tbody>\n";
	for (const auto &f : evidence_facts(c)) {
		if (f.label.rfind("page ", 0) == 0 || f.label == "reason" || f.label.rfind("memory given back", 0) == 0)
			continue;	// the tables and the reason below say it in full
		out << "<tr><th>" << h(f.label) << "</th><td>" << h(f.value) << "</td></tr>\n";
	}
	out << "</tbody></table>\n";
	render_pages(out, c);
	render_give_back(out, c);
	render_registrations(out, c);
	// The summary line shows a short reason whole; a long one in full here.
	if (c.reason.size() > 240 || c.reason.find('\n') != std::string::npos)
		out << "<h4>Reason</h4>\n<pre>" << h(c.reason) << "</pre>\n";
	render_serial(out, run, c);
	for (const auto &x : extra_fields(c))
		out << "<h4>" << h(x.label) << "</h4>\n<pre>" << h(echo_json(*x.value)) << "</pre>\n";
	out << "<details class=\"raw\"><summary class=\"muted\">The record in results.json (raw JSON)</summary>\n<pre>"
	    << h(echo_json(*c.record)) << "</pre></details>\n</div>\n";
}

void render_case(std::ostringstream &out, const run_view &run, const case_view &c, const run_files *files)
{
	const bool open = c.result == verdict::fail || c.result == verdict::error;
	out << "<details class=\"case " << verdict_class(c.result) << "\" id=\"" << ha(c.anchor) << "\""
	    << (open ? " open" : "") << ">\n";
	render_case_summary(out, run, c);
	render_case_body(out, run, c, files);
	out << "</details>\n";
}

// A merged run's guests, each with the files in its group's directory.
void render_guest_files(std::ostringstream &out, const run_files *files)
{
	if (!files || files->guests.empty())
		return;
	out << "<h3>Each guest's files</h3>\n<table class=\"plain\"><tbody>\n";
	for (const auto &g : files->guests)
		out << "<tr><th>" << h(g.kernel.label()) << "</th><td>" << links_html(g.files) << "</td></tr>\n";
	out << "</tbody></table>\n";
}

void render_run(std::ostringstream &out, const json &doc, const run_files *files)
{
	out << "<section id=\"run\">\n<h2>Run</h2>\n<dl class=\"run\">\n";
	auto row = [&](const std::string &label, const std::string &value) {
		if (!value.empty() && value != "-")
			out << "<dt>" << h(label) << "</dt><dd>" << h(value) << "</dd>\n";
	};
	if (const json *k = member(doc, "kernel")) {
		row("kernel", text_at(*k, "release"));
		row("kernel version", text_at(*k, "version"));
		row("kernel source", text_at(*k, "source"));
		row("machine", text_at(*k, "machine"));
		row("command line", text_at(*k, "cmdline"));
	}
	row("RDMA device", text_at(doc, "rdma_device"));
	if (const json *m = member(doc, "memlock"))
		row("memlock", "limit " + text_at(*m, "limit_bytes", "?") + " bytes, CAP_IPC_LOCK " +
				       text_at(*m, "cap_ipc_lock", "?"));
	if (const json *kt = member(doc, "kernel_trace")) {
		// The functions probed, once each; the roles that had none here.
		std::vector<std::string> placed, skipped;
		std::set<std::string> placed_seen, skipped_seen;
		if (const json *probes = member(*kt, "probes"); probes && probes->is_array())
			for (const auto &p : *probes) {
				const bool ok = p.value("placed", false);
				if (ok)
					add_once(placed, placed_seen, text_at(p, "symbol"));
				else
					add_once(skipped, skipped_seen, text_at(p, "role"));
			}
		std::string t = kt->value("available", false) ? "tracefs instance " + text_at(*kt, "instance") : "unavailable";
		if (!placed.empty())
			t += "; kprobes on " + join(placed, ", ");
		if (!skipped.empty())
			t += "; skipped (inlined or absent in this kernel): " + join(skipped, ", ");
		if (const json *tps = member(*kt, "tracepoints"); tps && tps->is_array() && !tps->empty())
			t += "; tracepoints " + std::to_string(tps->size());
		if (const json *notes = member(*kt, "notes"); notes && notes->is_array())
			for (const auto &n : *notes)
				t += "; " + as_text(n);
		if (kt->value("removed", false))
			t += "; removed at the end of the run";
		row("kernel trace", t);
	}
	for (const char *key : {"module", "vmstat_before", "vmstat_after", "placement_pressure"})
		if (const json *v = member(doc, key))
			row(key, v->is_object() || v->is_array() ? v->dump() : as_text(*v));
	if (const json *vm = member(doc, "vm")) {
		std::string guest = text_at(*vm, "accel", "?") + ", " + text_at(*vm, "memory_mib", "?") + " MiB";
		if (auto wall = number_at(*vm, "wall_s")) {
			char buf[32];
			std::snprintf(buf, sizeof(buf), ", %.1f s boot to verdict", *wall);
			guest += buf;
		}
		guest += ", QEMU exit " + text_at(*vm, "qemu_exit", "?") + ", job exit " + text_at(*vm, "job_exit", "none");
		row("guest", guest);
		if (const json *fb = member(*vm, "accel_fallback"))
			row("accelerator", "TCG: " + text_at(*fb, "tried", "kvm") + " did not serve (" + text_at(*fb, "why") + ")");
		row("guest ended", text_at(*vm, "ended"));
	}
	row("started", text_at(doc, "started_at"));
	row("finished", text_at(doc, "finished_at"));
	row("tool", tool_of(doc).text());
	row("schema", text_at(doc, "schema"));
	out << "</dl>\n";
	render_guest_files(out, files);
	json rest = json::object();
	for (const auto &[key, value] : doc.items())
		if (key != "cases")
			rest[key] = value;
	out << "<details><summary class=\"muted\">All run fields of results.json</summary>\n<pre>" << h(echo_json(rest))
	    << "</pre></details>\n</section>\n";
}

// <head>, its title the verdict and the kernels.
void render_head(std::ostringstream &out, const run_view &run)
{
	std::string kernels = join(run.kernels, ", ", &kernel_config::release);
	if (kernels.empty())
		kernels = "no kernel recorded";

	out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	    << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	    << "<title>pinmatrix " << upper_name(run.overall) << ": " << h(kernels) << "</title>\n"
	    << "<style>" << style << "</style>\n</head>\n<body>\n";
}

// A kernel in the banner: its name and release once, its version.
std::string kernel_meta(const kernel_with_version &k)
{
	std::string out = "<code>" + h(k.name_and_release) + "</code> version <code>" + h(k.version.upstream) + "</code>";
	if (!k.version.build.empty())
		out += " <span class=\"build\">(" + h(k.version.build) + ")</span>";
	return out;
}

// The banner's lines under the counts: the kernel(s) with their versions
// (and the boot of a single one), the suite's version and commit, the
// run's files.
void render_meta(std::ostringstream &out, const run_view &run, const json &doc, const run_files *files)
{
	const auto kernels = kernels_with_versions(run);
	out << "<div class=\"meta kernel\">" << (kernels.size() > 1 ? "kernels " : "kernel ")
	    << join(kernels, ", ", kernel_meta);
	if (!run.several_kernels() && !run.kernels.empty()) {
		const kernel_config &k = run.kernels[0];
		if (!k.boot.empty())
			out << " \u00b7 boot placement <code>" << h(k.boot) << "</code>";
		if (!k.append.empty())
			out << " \u00b7 <code>" << h(k.append) << "</code>";
	}
	if (auto dev = text_at(doc, "rdma_device"); !dev.empty())
		out << " \u00b7 RDMA <code>" << h(dev) << "</code>";
	if (auto t = text_at(doc, "started_at"); !t.empty())
		out << " \u00b7 " << h(t);
	const tool_view tool = tool_of(doc);
	out << "</div>\n<div class=\"meta suite\">" << h(tool.name) << " version <code>" << h(tool.version)
	    << "</code> \u00b7 commit <code>" << h(tool.commit) << "</code></div>\n";
	if (files && !files->run.empty())
		out << "<div class=\"meta files\">files: " << links_html(files->run) << "</div>\n";
}

// The banner: the verdict, the counts, the kernel and the suite.
void render_banner(std::ostringstream &out, const run_view &run, const json &doc, const run_files *files)
{
	out << "<header class=\"banner " << verdict_class(run.overall) << "\">\n<div class=\"top\">"
	    << "<span class=\"verdict\">" << upper_name(run.overall) << "</span><span class=\"what\">pinmatrix: "
	    << run.total() << (run.total() == 1 ? " case" : " cases");
	if (run.several_kernels())
		out << " on " << run.kernels.size() << " kernels";
	out << "</span></div>\n<div class=\"counts\">";
	for (auto [o, n] : {std::pair{verdict::fail, run.fail}, std::pair{verdict::error, run.error},
			    std::pair{verdict::xpass, run.xpass}, std::pair{verdict::xfail, run.xfail},
			    std::pair{verdict::pass, run.pass}, std::pair{verdict::skip, run.skip}})
		out << "<span class=\"count " << verdict_class(o) << (n ? "" : " zero") << "\">" << n << " " << name(o)
		    << "</span>";
	out << "</div>\n";
	render_meta(out, run, doc, files);
	out << "</header>\n<main>\n";
}

// Cases that failed or ended in error, those that went wrong the same way
// (a dead guest takes every case after it) as one item.
void render_failures(std::ostringstream &out, const run_view &run)
{
	const auto ordered = run.worst_first();
	if (run.fail + run.error == 0) {
		out << "<p class=\"allgood\">No case failed or ended in error.</p>\n";
	} else {
		std::vector<std::vector<const case_view *>> items;
		std::map<std::tuple<verdict, std::string_view, std::string_view, std::string_view>, size_t> index;
		for (const auto *c : ordered) {
			if (c->result != verdict::fail && c->result != verdict::error)
				continue;
			const auto [it, fresh] = index.emplace(std::tuple{c->result, std::string_view(c->reason),
									  std::string_view(c->expected),
									  std::string_view(c->observed)},
							       items.size());
			if (fresh)
				items.emplace_back();
			items[it->second].push_back(c);
		}
		out << "<ol class=\"attention\">\n";
		for (const auto &item : items) {
			const case_view &first = *item.front();
			out << "<li class=\"" << verdict_class(first.result) << "\">" << badge(first.result) << " ";
			for (size_t i = 0; i < item.size(); i++) {
				out << (i ? ", " : "") << "<a href=\"#" << ha(item[i]->anchor) << "\"><b>" << h(item[i]->title())
				    << "</b></a>";
				if (run.several_kernels())
					out << " <span class=\"muted\">on " << h(item[i]->kernel.label()) << "</span>";
			}
			out << "<span class=\"why\">"
			    << h(shorten(first.reason.empty() ? "(no reason recorded)" : first.reason, 400)) << "</span>";
			out << "<span class=\"eo\">expected " << h(first.expected) << " \u00b7 "
			    << h(first.observed == "-" ? std::string("nothing observed") : "observed " + first.observed)
			    << "</span>";
			out << "</li>\n";
		}
		out << "</ol>\n";
	}
}

// Skips share few reasons: one line per reason.
void render_skips(std::ostringstream &out, const run_view &run)
{
	if (!run.skip)
		return;
	const auto reasons = run.skip_reasons();
	out << "<div class=\"skips\"><b>Skipped</b>";
	for (const auto &[reason, ids] : reasons) {
		// A long list of ids hides the reason: the grid shows them all.
		constexpr size_t shown = 8;
		out << "<br>" << ids.size() << (ids.size() == 1 ? " case (" : " cases (");
		for (size_t i = 0; i < ids.size() && i < shown; i++)
			out << (i ? ", " : "") << h(ids[i]);
		if (ids.size() > shown)
			out << " and " << ids.size() - shown << " more";
		out << "): " << h(reason.empty() ? "(no reason recorded)" : reason);
	}
	out << "</div>\n";
}

// The known kernel bugs the run met, with the fix to pick up; an
// unexpected pass as an alarm above everything else.
void render_known_bugs(std::ostringstream &out, const run_view &run)
{
	const auto bugs = known_bugs_met(run);
	if (bugs.empty())
		return;
	auto case_links = [&](const std::vector<const case_view *> &cases) {
		return join(cases, ", ", [&](const case_view *c) {
			return "<a href=\"#" + ha(c->anchor) + "\">" + h(c->title()) + "</a>" +
			       (run.several_kernels() ? " <span class=\"muted\">on " + h(c->kernel.label()) + "</span>" : "");
		});
	};
	out << "<div class=\"known-bugs\"><b>Known kernel bugs</b><ul>\n";
	for (const auto &b : bugs) {
		out << "<li>" << badge(b.xpass.empty() ? verdict::xfail : verdict::xpass) << " <b>" << h(b.id)
		    << "</b>: " << h(b.title) << " <span class=\"muted\">(" << h(b.where) << "; kernels "
		    << h(b.kernels) << ")</span><br>fix: " << h(b.fix);
		if (!b.xfail.empty())
			out << "<br>expected failure: " << case_links(b.xfail);
		if (!b.xpass.empty())
			out << "<br>unexpected pass: " << case_links(b.xpass);
		out << "</li>\n";
	}
	out << "</ul></div>\n";
}

void render_unexpected_passes(std::ostringstream &out, const run_view &run)
{
	for (const auto &b : known_bugs_met(run))
		for (const auto *c : b.xpass)
			out << "<div class=\"alarm v-xpass\"><b>Unexpected pass</b> of <a href=\"#" << ha(c->anchor)
			    << "\">" << h(c->title()) << "</a>: known bug " << h(b.id)
			    << " should fail it on this kernel. The known-bug table is out of date, or this kernel "
			       "carries the fix.</div>\n";
}

// What needs attention, with the reason, before anything else.
void render_attention(std::ostringstream &out, const run_view &run, const json &doc)
{
	out << "<section id=\"attention\">\n<h2>Failures and errors</h2>\n";
	if (incomplete(doc))
		out << "<div class=\"alarm\"><b>The run did not complete</b>: results.json was written before its "
		       "last case; cases without a record are missing.</div>\n";
	for (const auto &g : guest_endings(doc)) {
		out << "<div class=\"alarm\"><b>" << h(g.guest == "guest" ? "Guest" : "Guest " + g.guest) << ":</b> "
		    << h(g.ended);
		if (!g.serial_excerpt.empty())
			out << "<pre class=\"serial\">" << h(g.serial_excerpt) << "</pre>";
		out << "</div>\n";
	}
	render_unexpected_passes(out, run);
	render_failures(out, run);
	render_known_bugs(out, run);
	render_skips(out, run);
	out << "</section>\n";
}

void render_matrix(std::ostringstream &out, const run_view &run)
{
	out << "<section id=\"matrix\">\n<h2>Matrix</h2>\n";
	if (run.cases.empty())
		out << "<p class=\"muted\">The document has no case records.</p>\n";
	for (const auto &g : grids_of(run))
		render_grid(out, run, g);
	out << "<div class=\"legend\">";
	for (auto o : {verdict::pass, verdict::fail, verdict::error, verdict::xfail, verdict::xpass, verdict::skip})
		out << "<span><span class=\"sw " << verdict_class(o) << "\"></span>" << name(o) << "</span>";
	out << "<span>click a cell for its evidence</span></div>\n</section>\n";
}

} // namespace

std::string format_html(const json &doc, const json *bench, const report::run_files *files)
{
	const run_view run = view_run(doc);
	std::ostringstream out;
	render_head(out, run);
	render_banner(out, run, doc, files);
	render_attention(out, run, doc);
	render_matrix(out, run);
	render_latency(out, run);
	out << "<section id=\"cases\">\n<h2>Evidence per case <span class=\"muted\">(failures first)</span></h2>\n";
	for (const auto *c : run.worst_first())
		render_case(out, run, *c, files);
	out << "</section>\n";
	if (bench)
		out << report::bench_html_section(*bench);
	out << promises_html_section(doc.value("cases", json::array()));
	render_run(out, doc, files);
	out << "</main>\n<footer>Made from results.json (schema " << h(text_at(doc, "schema")) << ") by "
	    << "<code>pinmatrix report</code>. Self-contained: no script, nothing fetched.</footer>\n</body>\n</html>\n";
	return out.str();
}

} // namespace pinmatrix
