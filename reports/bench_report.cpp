// SPDX-License-Identifier: GPL-2.0
#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "report_input.hpp"
#include "svg_plot.hpp"
#include "text.hpp"

namespace pinmatrix::report {

namespace fs = std::filesystem;

namespace {

double unit_ns(const std::string &unit)
{
	if (unit == "us")
		return 1e3;
	if (unit == "ms")
		return 1e6;
	if (unit == "s")
		return 1e9;
	return 1;
}

bool all_digits(const std::string &s)
{
	return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "reg_mr/movable/4096/manual_time" -> "reg_mr/movable/4096"
std::string clean_name(const std::string &run_name)
{
	std::vector<std::string> parts;
	std::istringstream in(run_name);
	for (std::string p; std::getline(in, p, '/');)
		parts.push_back(p);
	static const std::vector<std::string> suffixes = {"manual_time", "real_time", "process_time"};
	static const std::vector<std::string> prefixes = {"iterations:", "repeats:", "min_time:", "threads:",
							  "min_warmup_time:"};
	while (!parts.empty()) {
		const std::string &last = parts.back();
		const bool drop = std::find(suffixes.begin(), suffixes.end(), last) != suffixes.end() ||
				  std::any_of(prefixes.begin(), prefixes.end(),
					      [&](const std::string &p) { return last.rfind(p, 0) == 0; });
		if (!drop)
			break;
		parts.pop_back();
	}
	return join(parts, "/");
}

struct sample {
	double ns = 0;
	int64_t iterations = 0;
	std::map<std::string, double> counters;
	std::string error;
};

sample sample_of(const json &r)
{
	static const std::set<std::string> fields = {
		"name",		 "family_index", "per_family_instance_index", "run_name",	"run_type",
		"repetitions",	 "repetition_index", "threads",		    "iterations",	"real_time",
		"cpu_time",	 "time_unit",	 "error_occurred",	    "error_message", "aggregate_name",
		"aggregate_unit", "label"};
	sample s;
	s.ns = r.value("real_time", 0.0) * unit_ns(r.value("time_unit", std::string("ns")));
	if (const json *it = member(r, "iterations"); it && it->is_number())
		s.iterations = it->get<int64_t>();
	if (r.value("error_occurred", false))
		s.error = r.value("error_message", std::string("skipped"));
	for (const auto &[k, v] : r.items())
		if (v.is_number() && !fields.count(k))
			s.counters[k] = v.get<double>();
	return s;
}

const char *series_color(const std::string &name, size_t i)
{
	// The placements keep their colours across plots.
	if (name.find("movable") != std::string::npos)
		return name.find("longterm") != std::string::npos ? "#bf3989" : "#8250df";
	if (name.find("cma") != std::string::npos)
		return name.find("longterm") != std::string::npos ? "#1a7f37" : "#4ac26b";
	if (name.find("ordinary") != std::string::npos)
		return name.find("longterm") != std::string::npos ? "#0969da" : "#54aeff";
	static const char *palette[] = {"#0969da", "#bf3989", "#1a7f37", "#9a6700", "#8250df", "#0a7b83"};
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

std::string bytes_text(double b)
{
	char buf[32];
	if (b >= double(1ull << 30))
		std::snprintf(buf, sizeof(buf), "%g GiB", b / double(1ull << 30));
	else if (b >= double(1 << 20))
		std::snprintf(buf, sizeof(buf), "%g MiB", b / double(1 << 20));
	else
		std::snprintf(buf, sizeof(buf), "%g KiB", b / 1024);
	return buf;
}

std::string counter_text(const std::string &key, double v)
{
	char buf[64];
	if (key.size() > 3 && key.compare(key.size() - 3, 3, "_ns") == 0)
		return format_ns(v);
	if (key == "ns_per_page" || key == "reg_ns_per_page")
		return format_ns(v);
	if (key == "in_placement" || key == "present" || key == "thp_share") {
		std::snprintf(buf, sizeof(buf), "%.0f%%", v * 100);
		return buf;
	}
	if (std::fabs(v) >= 1e6)
		std::snprintf(buf, sizeof(buf), "%.3gM", v / 1e6);
	else if (std::fabs(v) >= 1e4)
		std::snprintf(buf, sizeof(buf), "%.3gk", v / 1e3);
	else
		std::snprintf(buf, sizeof(buf), "%.4g", v);
	return buf;
}

const bench_entry *find_entry(const std::vector<bench_entry> &entries, const std::string &name)
{
	for (const auto &e : entries)
		if (e.name == name)
			return &e;
	return nullptr;
}

// Where the numbers come from and what a time is.
void render_bench_intro(std::ostringstream &out, const json &bench, const std::vector<bench_entry> &entries)
{
	const json ctx = bench.value("context", json::object());
	out << "<p class=\"muted\">From <code>bench.json</code> (Google Benchmark, <code>pinmatrix_bench</code>): "
	    << entries.size() << " benchmarks";
	if (auto d = text_at(ctx, "date"); !d.empty())
		out << ", " << h(d);
	if (auto k = text_at(ctx, "pinmatrix.kernel_release"); !k.empty())
		out << ", kernel <code>" << h(k) << "</code>";
	if (auto p = text_at(ctx, "pinmatrix.restricted_placement"); !p.empty())
		out << ", restricted placement <code>" << h(p) << "</code>";
	out << ". Times are per iteration of the timed calls only (the mean over a benchmark's iterations; "
	       "the median over repetitions when it has several): every pinning benchmark maps, populates and "
	       "probes fresh pages outside the timed region, since a page migrated once is no longer in the "
	       "placement it was measured for.</p>\n";
}

// The first path component of a family: "reg_mr" of "reg_mr/movable".
std::string family_group(const std::string &family)
{
	return family.substr(0, family.find('/'));
}

// Families with sizes, grouped by their first path component: the
// registrations first, then the file's order.
std::vector<std::string> size_groups(const std::vector<bench_entry> &entries)
{
	std::vector<std::string> groups = {"reg_mr", "pin", "ualink"};
	for (const auto &e : entries)
		if (e.bytes) {
			const std::string g = family_group(e.family);
			if (std::find(groups.begin(), groups.end(), g) == groups.end())
				groups.push_back(g);
		}
	return groups;
}

std::string group_title(const std::string &g)
{
	static const std::map<std::string, std::string> titles = {
		{"reg_mr", "ibv_reg_mr + ibv_dereg_mr by placement"},
		{"pin", "The module's pin + unpin, FOLL_PIN with and without FOLL_LONGTERM"},
		{"gup_test", "kselftest's gup_test: PIN_LONGTERM_BENCHMARK (pin_user_pages(FOLL_LONGTERM) + unpin)"},
		{"ualink", "UALink export and import (first, of a new BO)"},
		{"probe", "The placement probe: /proc/self/pagemap, then PINMATRIX_IOC_PROBE on present runs"},
		{"populate", "MADV_POPULATE_WRITE of a new mapping"}};
	return titles.count(g) ? titles.at(g) : g;
}

// The families of group g that have sizes, in file order.
std::vector<std::string> sized_families(const std::vector<bench_entry> &entries, const std::string &g)
{
	std::vector<std::string> families;
	for (const auto &e : entries)
		if (e.bytes && family_group(e.family) == g &&
		    std::find(families.begin(), families.end(), e.family) == families.end())
			families.push_back(e.family);
	return families;
}

// A family's lines, its i-th in the group: time per iteration by size, and
// ns per page where the benchmark counts it.
struct family_lines {
	xy_series latency, per_page;
};

family_lines family_series(const std::vector<bench_entry> &entries, const std::string &family,
			   const std::string &label, size_t i)
{
	family_lines f{{label, series_color(label, i), {}}, {label, series_color(label, i), {}}};
	for (const auto &e : entries) {
		if (e.family != family || !e.bytes || !e.skipped.empty())
			continue;
		std::string tip = family + " " + bytes_text(*e.bytes) + ": " + format_ns(e.ns);
		if (auto it = e.counters.find("ns_per_page"); it != e.counters.end()) {
			tip += " (" + format_ns(it->second) + " per 4 KiB page)";
			f.per_page.points.push_back({*e.bytes, it->second, tip});
		}
		f.latency.points.push_back({*e.bytes, e.ns, tip});
	}
	return f;
}

// A group's plots, time and ns per page against size, when some family of
// it has two sizes or more.
void render_size_plots(std::ostringstream &out, const std::vector<bench_entry> &entries, const std::string &g)
{
	std::vector<xy_series> lat, per_page;
	const std::vector<std::string> families = sized_families(entries, g);
	size_t sized_points = 0;
	for (size_t i = 0; i < families.size(); i++) {
		const std::string label = families[i].size() > g.size() ? families[i].substr(g.size() + 1) : families[i];
		family_lines f = family_series(entries, families[i], label, i);
		sized_points = std::max(sized_points, f.latency.points.size());
		lat.push_back(f.latency);
		if (!f.per_page.points.empty())
			per_page.push_back(f.per_page);
	}
	if (sized_points < 2)
		return;
	const std::string title = group_title(g);
	out << "<h3>" << h(title) << "</h3>\n"
	    << svg_xy_plot(lat, title + ": time per iteration vs size, log scales", "time per iteration");
	if (!per_page.empty())
		out << svg_xy_plot(per_page, title + ": ns per 4 KiB page vs size, log scales", "per 4 KiB page");
}

// The harness overhead: the raw call against the suite's measured path.
void render_harness_overhead(std::ostringstream &out, const std::vector<bench_entry> &entries)
{
	const bench_entry *raw = find_entry(entries, "harness/ibv_reg_mr_raw/4096");
	const bench_entry *wrapped = find_entry(entries, "harness/register_memory/4096");
	const bench_entry *path = find_entry(entries, "harness/case_path/4096");
	const bench_entry *clock = find_entry(entries, "harness/clock_read");
	if (!raw && !wrapped && !path)
		return;
	out << "<h3>Harness overhead (4 KiB)</h3>\n<table class=\"plain\"><tbody>\n";
	auto row = [&](const std::string &what, const std::string &value) {
		out << "<tr><th>" << h(what) << "</th><td>" << h(value) << "</td></tr>\n";
	};
	if (clock && clock->skipped.empty())
		row("one CLOCK_MONOTONIC_RAW read", format_ns(clock->ns));
	if (raw && raw->skipped.empty())
		row("ibv_reg_mr alone (between two clock reads)", format_ns(raw->ns));
	if (wrapped && wrapped->skipped.empty()) {
		row("register_memory() (the suite's measured call), timed from outside", format_ns(wrapped->ns));
		if (auto it = wrapped->counters.find("reported_ns"); it != wrapped->counters.end()) {
			row("... the latency_ns it reports (same iterations)", format_ns(it->second));
			row("... what the wrapper adds (outside - reported)", format_ns(wrapped->ns - it->second));
		}
	}
	if (path && path->skipped.empty()) {
		row("a case's path: find_page + probes + register_memory", format_ns(path->ns));
		if (auto it = path->counters.find("reported_ns"); it != path->counters.end()) {
			row("... of which the reported registration", format_ns(it->second));
			row("... the harness around it (path - reported)", format_ns(path->ns - it->second));
		}
	}
	out << "</tbody></table>\n";
}

// The anchors' table: one row per pair, the ratio first.
void render_anchor_ratios(std::ostringstream &out, const std::vector<bench_entry> &entries)
{
	const auto ratios = anchor_ratios(entries);
	if (ratios.empty())
		return;
	out << "<h3>The suite against its anchors</h3>\n<table class=\"plain\"><thead><tr><th>ratio</th>"
	       "<th>what</th><th>suite</th><th>anchor</th></tr></thead><tbody>\n";
	for (const auto &r : ratios) {
		char ratio[32];
		std::snprintf(ratio, sizeof(ratio), "%.2fx", r.ratio);
		out << "<tr><td>" << ratio << "</td><td>" << h(r.what) << "</td><td>" << h(r.suite) << " "
		    << h(format_ns(r.suite_ns)) << "</td><td>" << h(r.anchor) << " " << h(format_ns(r.anchor_ns))
		    << "</td></tr>\n";
	}
	out << "</tbody></table>\n";
}

// A table of every benchmark: time, iterations and counters, or why it
// was skipped.
void render_every_benchmark(std::ostringstream &out, const std::vector<bench_entry> &entries)
{
	out << "<h3>Every benchmark</h3>\n<table class=\"plain\"><thead><tr><th>benchmark</th><th>time</th>"
	       "<th>iterations</th><th>counters</th></tr></thead><tbody>\n";
	for (const auto &e : entries) {
		out << "<tr><td><code>" << h(e.name) << "</code></td>";
		if (!e.skipped.empty()) {
			out << "<td colspan=\"3\" class=\"muted\">skipped: " << h(e.skipped) << "</td></tr>\n";
			continue;
		}
		out << "<td style=\"white-space: nowrap\">" << h(format_ns(e.ns))
		    << (e.samples > 1 ? " (median of " + std::to_string(e.samples) + ")" : "")
		    << "</td><td>" << e.iterations << "</td><td>";
		bool first = true;
		for (const auto &[k, v] : e.counters) {
			out << (first ? "" : ", ") << h(k) << " " << h(counter_text(k, v));
			first = false;
		}
		out << "</td></tr>\n";
	}
	out << "</tbody></table>\n";
}

} // namespace

std::optional<json> load_bench(const fs::path &run_dir, const json &doc, std::string *problem)
{
	const json *ref = member(doc, "benchmarks");
	if (!ref || !ref->is_string() || ref->get<std::string>().empty())
		return std::nullopt;
	const fs::path file = run_dir / ref->get<std::string>();
	std::string why;
	std::ifstream in(file);
	if (!in) {
		why = file.string() + " (named by results.json \"benchmarks\") cannot be read";
	} else {
		try {
			json b = json::parse(in);
			if (b.is_object() && b.contains("benchmarks") && b["benchmarks"].is_array())
				return b;
			why = file.string() + ": not Google Benchmark JSON (no \"benchmarks\" array)";
		} catch (const json::exception &e) {
			why = file.string() + ": not JSON: " + e.what();
		}
	}
	if (problem)
		*problem = why;
	return std::nullopt;
}

std::vector<bench_entry> bench_entries(const json &bench)
{
	std::vector<std::string> order;
	std::map<std::string, std::vector<sample>> singles;
	std::map<std::string, std::map<std::string, sample>> aggregates;
	const json *list = member(bench, "benchmarks");
	if (!list || !list->is_array())
		return {};
	for (const auto &r : *list) {
		if (!r.is_object())
			continue;
		const std::string run = clean_name(r.value("run_name", r.value("name", std::string())));
		if (run.empty())
			continue;
		if (std::find(order.begin(), order.end(), run) == order.end())
			order.push_back(run);
		if (r.value("run_type", std::string("iteration")) == "aggregate")
			aggregates[run][r.value("aggregate_name", std::string())] = sample_of(r);
		else
			singles[run].push_back(sample_of(r));
	}
	std::vector<bench_entry> out;
	for (const auto &run : order) {
		bench_entry e;
		e.name = run;
		const auto slash = run.rfind('/');
		if (slash != std::string::npos && all_digits(run.substr(slash + 1))) {
			e.family = run.substr(0, slash);
			e.bytes = std::stod(run.substr(slash + 1));
		} else {
			e.family = run;
		}
		std::vector<sample> ok;
		std::string error;
		for (const auto &s : singles[run])
			(s.error.empty() ? ok.push_back(s) : void(error = s.error));
		if (ok.empty() && singles[run].empty()) {
			auto &agg = aggregates[run];
			for (const char *which : {"median", "mean"})
				if (agg.count(which)) {
					ok.push_back(agg[which]);
					break;
				}
		}
		if (ok.empty()) {
			e.skipped = error.empty() ? "no result" : error;
			out.push_back(e);
			continue;
		}
		std::sort(ok.begin(), ok.end(), [](const sample &a, const sample &b) { return a.ns < b.ns; });
		const size_t mid = (ok.size() - 1) / 2;
		e.ns = ok.size() % 2 ? ok[mid].ns : (ok[mid].ns + ok[mid + 1].ns) / 2;
		e.samples = ok.size();
		e.iterations = ok[mid].iterations;
		e.counters = ok[mid].counters;
		out.push_back(e);
	}
	return out;
}

std::vector<anchor_ratio> anchor_ratios(const std::vector<bench_entry> &entries)
{
	std::vector<anchor_ratio> out;
	auto pair = [&](const std::string &what, const std::string &suite, const std::string &anchor) {
		const bench_entry *s = find_entry(entries, suite);
		const bench_entry *a = find_entry(entries, anchor);
		if (s && a && s->skipped.empty() && a->skipped.empty() && a->ns > 0)
			out.push_back({what, suite, anchor, s->ns, a->ns, s->ns / a->ns});
	};
	pair("the suite's registration (register_memory) / the raw ibv_reg_mr, 4 KiB",
	     "harness/register_memory/4096", "harness/ibv_reg_mr_raw/4096");
	pair("a case's whole path (find_page, probes, register_memory) / the raw ibv_reg_mr, 4 KiB",
	     "harness/case_path/4096", "harness/ibv_reg_mr_raw/4096");
	for (const auto &e : entries) {
		const std::string prefix = "gup_test/pin_longterm/";
		if (e.family.rfind(prefix, 0) != 0 || !e.bytes)
			continue;
		const std::string where = e.name.substr(prefix.size());	// "movable/1048576"
		const std::string label = where.substr(0, where.find('/')) + " " + bytes_text(*e.bytes);
		pair("the module's long-term pin / gup_test's, " + label, "pin/foll_pin_longterm/" + where, e.name);
		pair("ibv_reg_mr + dereg / gup_test's long-term pin, " + label, "reg_mr/" + where, e.name);
	}
	return out;
}

std::string bench_html_section(const json &bench)
{
	const auto entries = bench_entries(bench);
	std::ostringstream out;
	out << "<section id=\"benchmarks\">\n<h2>Benchmarks</h2>\n";
	render_bench_intro(out, bench, entries);
	for (const auto &g : size_groups(entries))
		render_size_plots(out, entries, g);
	render_harness_overhead(out, entries);
	render_anchor_ratios(out, entries);
	render_every_benchmark(out, entries);
	out << "</section>\n";
	return out.str();
}

int bench_comparison::regressions() const
{
	if (!threshold_pct)
		return 0;
	return int(std::count_if(rows.begin(), rows.end(), [](const bench_change &r) { return r.slower; }));
}

bench_comparison compare_bench(const json &before, const json &after, std::optional<double> threshold_pct)
{
	bench_comparison c;
	c.threshold_pct = threshold_pct;
	const double limit = 1 + threshold_pct.value_or(10) / 100;
	const auto old_entries = bench_entries(before), new_entries = bench_entries(after);
	for (const auto &o : old_entries) {
		bench_change r;
		r.name = o.name;
		if (o.skipped.empty())
			r.before_ns = o.ns;
		const bench_entry *n = find_entry(new_entries, o.name);
		if (!n)
			r.note = "gone";
		else if (!n->skipped.empty())
			r.note = "skipped: " + one_line(n->skipped);
		else
			r.after_ns = n->ns;
		if (r.before_ns && r.after_ns && *r.before_ns > 0) {
			r.ratio = *r.after_ns / *r.before_ns;
			r.slower = r.ratio > limit;
		} else if (!o.skipped.empty() && r.note.empty()) {
			r.note = "was skipped";
		}
		c.rows.push_back(r);
	}
	for (const auto &n : new_entries)
		if (!find_entry(old_entries, n.name)) {
			bench_change r;
			r.name = n.name;
			if (n.skipped.empty())
				r.after_ns = n.ns;
			r.note = n.skipped.empty() ? "new" : "new, skipped: " + one_line(n.skipped);
			c.rows.push_back(r);
		}
	return c;
}

std::string format_bench_comparison(const bench_comparison &c)
{
	std::ostringstream out;
	const double pct = c.threshold_pct.value_or(10);
	out << "\nbenchmarks (bench.json): time per iteration (median over repetitions), new / old; ";
	if (c.threshold_pct)
		out << "slower than +" << pct << "% is a regression\n";
	else
		out << "informational (--bench-threshold PCT makes a slowdown beyond PCT% fail)\n";
	size_t w = 9;
	for (const auto &r : c.rows)
		w = std::max(w, r.name.size());
	w += 2;
	const auto pad = pad_to_width;
	out << "  " << pad("benchmark", w) << pad("old", 12) << pad("new", 12) << "ratio\n";
	std::vector<std::string> slower;
	for (const auto &r : c.rows) {
		out << "  " << pad(r.name, w) << pad(r.before_ns ? format_ns(*r.before_ns, true) : "-", 12)
		    << pad(r.after_ns ? format_ns(*r.after_ns, true) : "-", 12);
		if (r.before_ns && r.after_ns) {
			char buf[48];
			std::snprintf(buf, sizeof(buf), "%.2fx (%+.1f%%)", r.ratio, (r.ratio - 1) * 100);
			out << buf << (r.slower ? (c.threshold_pct ? "  SLOWER" : "  slower") : "");
		}
		if (!r.note.empty())
			out << (r.before_ns && r.after_ns ? "  " : "") << r.note;
		out << "\n";
		if (r.slower)
			slower.push_back(r.name);
	}
	if (c.threshold_pct) {
		if (slower.empty())
			out << "benchmark result: none slower than +" << pct << "%: exit 0\n";
		else
			out << "benchmark result: " << slower.size() << " slower than +" << pct << "%: exit 1\n";
	} else if (!slower.empty()) {
		out << "  " << slower.size() << " slower than +" << pct
		    << "% (informational: one run each side is noisy; repeat with --benchmark_repetitions)\n";
	}
	return out.str();
}

int bench_runs_comparison::exit_code() const
{
	return comparison && comparison->regressions() ? 1 : 0;
}

bench_runs_comparison compare_bench_runs(const results_file &before, const results_file &after,
					 std::optional<double> threshold_pct)
{
	auto dir = [](const results_file &f) {
		return f.path.parent_path().empty() ? fs::path(".") : f.path.parent_path();
	};
	bench_runs_comparison out;
	std::string old_problem, new_problem;
	const auto old_bench = load_bench(dir(before), before.doc, &old_problem);
	const auto new_bench = load_bench(dir(after), after.doc, &new_problem);
	for (const auto *p : {&old_problem, &new_problem})
		if (!p->empty())
			out.notes.push_back("benchmarks: " + *p);
	if (old_bench && new_bench)
		out.comparison = compare_bench(*old_bench, *new_bench, threshold_pct);
	else if (old_bench || new_bench)
		out.notes.push_back(std::string("benchmarks: only the ") + (old_bench ? "old" : "new") +
				    " run has bench.json: nothing to compare");
	else if (threshold_pct)
		out.notes.push_back("benchmarks: neither run has any (--bench-threshold has nothing to compare)");
	return out;
}

std::string format_bench_runs(const bench_runs_comparison &c)
{
	std::string out;
	for (const auto &note : c.notes)
		out += "\n" + note + "\n";
	return c.comparison ? out + format_bench_comparison(*c.comparison) : out;
}

json bench_runs_json(const bench_runs_comparison &c)
{
	json out = {{"notes", c.notes}, {"rows", json::array()}, {"threshold_pct", nullptr}, {"regressions", 0}};
	if (!c.comparison)
		return out;
	if (c.comparison->threshold_pct)
		out["threshold_pct"] = *c.comparison->threshold_pct;
	out["regressions"] = c.comparison->regressions();
	auto ns = [](const std::optional<double> &v) { return v ? json(*v) : json(nullptr); };
	for (const auto &r : c.comparison->rows)
		out["rows"].push_back({{"name", r.name}, {"before_ns", ns(r.before_ns)}, {"after_ns", ns(r.after_ns)},
				       {"ratio", r.before_ns && r.after_ns ? json(r.ratio) : json(nullptr)},
				       {"slower", r.slower}, {"note", r.note}});
	return out;
}

} // namespace pinmatrix::report
