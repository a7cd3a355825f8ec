// SPDX-License-Identifier: GPL-2.0
#include "compare.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "bench_report.hpp"
#include "sys_error.hpp"
#include "text.hpp"
#include "user_input.hpp"

namespace pinmatrix {

using namespace report;

namespace {

struct change_names {
	verdict_change change;
	const char *id, *name;
};
constexpr change_names change_table[] = {
	{verdict_change::unchanged, "unchanged", "unchanged"},
	{verdict_change::regression, "regression", "REGRESSION"},
	{verdict_change::skipped, "skipped", "REGRESSION (now skipped)"},
	{verdict_change::disappeared, "disappeared", "REGRESSION (case missing)"},
	{verdict_change::improvement, "improvement", "improvement"},
	{verdict_change::changed, "changed", "changed"},
	{verdict_change::appeared, "appeared", "new case"},
};

const change_names &names_of(verdict_change c)
{
	return *std::find_if(std::begin(change_table), std::end(change_table),
			     [&](const change_names &n) { return n.change == c; });
}

} // namespace

const char *name(verdict_change c)
{
	return names_of(c).name;
}

const char *id(verdict_change c)
{
	return names_of(c).id;
}

bool is_regression(verdict_change c)
{
	return c == verdict_change::regression || c == verdict_change::skipped ||
	       c == verdict_change::disappeared;
}

compare_format compare_format_of(std::string_view name)
{
	require_format(name, {"text", "md", "json"});
	return name == "md" ? compare_format::md : name == "json" ? compare_format::json : compare_format::text;
}

std::optional<double> case_comparison::median_change_pct() const
{
	if (!latency_before || !latency_after || !(latency_before->median > 0))
		return std::nullopt;
	return (latency_after->median / latency_before->median - 1) * 100;
}

const char *case_comparison::latency_beyond_spread() const
{
	if (!latency_before || !latency_after || latency_before->n < latency_spread_min_samples ||
	    latency_after->n < latency_spread_min_samples)
		return nullptr;
	if (latency_after->min > latency_before->max)
		return "slower";
	if (latency_after->max < latency_before->min)
		return "faster";
	return nullptr;
}

int comparison::regressions() const
{
	return int(std::count_if(cases.begin(), cases.end(),
				 [](const case_comparison &c) { return c.regressed(); }));
}

namespace {

// One side's record of a key on one kernel (and boot). The same key on the
// same kernel twice (a rerun): the worse verdict stands, the samples add up.
struct kernel_record {
	kernel_config kernel;
	verdict result = verdict::error;
	std::string reason, expected, observed;
	std::vector<double> latency_ns;
};

struct keyed_records {
	case_key key;
	std::vector<kernel_record> records;	// one per kernel
};

using key_tuple = std::tuple<std::string, std::string, std::string>;

key_tuple tuple_of(const case_key &k)
{
	return {k.suite, k.placement, k.id};
}

using kernel_tuple = std::tuple<std::string, std::string, std::string, std::string>;

kernel_tuple tuple_of(const kernel_config &k)
{
	return {k.name, k.release, k.boot, k.append};
}

// A run's records by key, in document order, and where each key is.
struct keyed_run {
	std::vector<keyed_records> keys;
	std::map<key_tuple, size_t> index;

	const std::vector<kernel_record> &records_of(const case_key &key) const
	{
		static const std::vector<kernel_record> none;
		auto it = index.find(tuple_of(key));
		return it == index.end() ? none : keys[it->second].records;
	}
};

keyed_run keyed(const run_view &run)
{
	keyed_run out;
	std::map<std::pair<size_t, kernel_tuple>, size_t> record_index;	// (key, kernel) -> record
	for (const auto &c : run.cases) {
		const case_key key{c.suite, c.placement, c.id};
		const auto [k, fresh_key] = out.index.emplace(tuple_of(key), out.keys.size());
		if (fresh_key)
			out.keys.push_back({key, {}});
		auto &records = out.keys[k->second].records;
		const auto [r, fresh] = record_index.emplace(std::pair{k->second, tuple_of(c.kernel)}, records.size());
		if (fresh)
			records.push_back({c.kernel, c.result, c.reason, c.expected, c.observed, {}});
		kernel_record &record = records[r->second];
		if (!fresh && c.result < record.result)
			record = {c.kernel, c.result, c.reason, c.expected, c.observed, std::move(record.latency_ns)};
		record.latency_ns.insert(record.latency_ns.end(), c.latency_ns.begin(), c.latency_ns.end());
	}
	return out;
}

// <0, 0, >0 in kernel-series order: numbers compare as numbers, so
// "6.1.0-57-amd64" < "6.12.9-pinmatrix" < "7.2.0".
int compare_releases(std::string_view a, std::string_view b)
{
	auto number_at = [](std::string_view s, size_t i) {
		size_t end = i;
		while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end])))
			end++;
		std::string_view n = s.substr(i, end - i);
		while (n.size() > 1 && n[0] == '0')
			n.remove_prefix(1);
		return std::pair{n, end};
	};
	size_t i = 0, j = 0;
	while (i < a.size() && j < b.size()) {
		const auto [x, x_end] = number_at(a, i);
		const auto [y, y_end] = number_at(b, j);
		if (x_end > i && y_end > j) {
			if (x.size() != y.size() || x != y)
				return x.size() != y.size() ? (x.size() < y.size() ? -1 : 1) : (x < y ? -1 : 1);
			i = x_end, j = y_end;
		} else if (a[i] != b[j]) {
			return a[i] < b[j] ? -1 : 1;
		} else {
			i++, j++;
		}
	}
	return int(i < a.size()) - int(j < b.size());
}

bool series_less(const kernel_record *a, const kernel_record *b)
{
	if (const int order = compare_releases(a->kernel.release, b->kernel.release))
		return order < 0;
	return std::tie(a->kernel.name, a->kernel.boot, a->kernel.append) <
	       std::tie(b->kernel.name, b->kernel.boot, b->kernel.append);
}

using record_pair = std::pair<const kernel_record *, const kernel_record *>;

// The kernel-pairing rule (compare.hpp, reports/README.md): OLD's records of
// one key against NEW's, both in kernel-series order; each of OLD's takes
// NEW's first free one of the same matrix kernel name and boot placement,
// then the rest pair in that order. Left over: {old, null} or {null, new}.
std::vector<record_pair> pair_by_kernel(const std::vector<kernel_record> &old_records,
					const std::vector<kernel_record> &new_records)
{
	auto in_series = [](const std::vector<kernel_record> &records) {
		std::vector<const kernel_record *> out;
		for (const auto &r : records)
			out.push_back(&r);
		std::stable_sort(out.begin(), out.end(), series_less);
		return out;
	};
	const auto olds = in_series(old_records), news = in_series(new_records);
	std::vector<const kernel_record *> partner(olds.size());
	std::vector<bool> taken(news.size());
	// NEW's records by matrix kernel name and boot, each list in series order.
	std::map<std::pair<std::string_view, std::string_view>, std::deque<size_t>> by_name;
	for (size_t j = 0; j < news.size(); j++)
		by_name[{news[j]->kernel.name, news[j]->kernel.boot}].push_back(j);
	for (size_t i = 0; i < olds.size(); i++) {
		auto it = by_name.find({olds[i]->kernel.name, olds[i]->kernel.boot});
		if (it == by_name.end() || it->second.empty())
			continue;
		const size_t j = it->second.front();
		it->second.pop_front();
		partner[i] = news[j], taken[j] = true;
	}
	for (size_t i = 0, j = 0; i < olds.size(); i++) {
		while (!partner[i] && j < news.size() && taken[j])
			j++;
		if (!partner[i] && j < news.size())
			partner[i] = news[j], taken[j] = true;
	}

	std::vector<record_pair> out;
	for (size_t i = 0; i < olds.size(); i++)
		out.push_back({olds[i], partner[i]});
	for (size_t j = 0; j < news.size(); j++)
		if (!taken[j])
			out.push_back({nullptr, news[j]});
	return out;
}

// An xpass is a pass (the known-bug table is what is out of date); an
// xfail after a pass is a regression all the same: the update brought a
// known bug in, and an xfail that became another failure is a new one.
verdict_change classify(verdict before, verdict after)
{
	if (before == after)
		return verdict_change::unchanged;
	const bool passed = before == verdict::pass || before == verdict::xpass;
	if (after == verdict::pass || after == verdict::xpass)
		return passed ? verdict_change::unchanged : verdict_change::improvement;
	if ((passed || before == verdict::xfail) && counts_as_failure(after))
		return verdict_change::regression;
	if (passed && after == verdict::xfail)
		return verdict_change::regression;
	// Coverage lost is a regression: a kernel on which the module does not
	// load (or the device is gone) must not pass the gate by skipping.
	if (passed && after == verdict::skip)
		return verdict_change::skipped;
	return verdict_change::changed;
}

// Why NEW's record is not a pass.
std::string detail_of(const kernel_record &r)
{
	if (r.result == verdict::fail || r.result == verdict::xfail)
		return one_line("expected " + r.expected + ", observed " + r.observed +
				(r.reason.empty() ? "" : ": " + r.reason));
	return r.result == verdict::pass ? "" : one_line(r.reason);
}

case_comparison row_of(const case_key &key, const kernel_record *o, const kernel_record *n)
{
	case_comparison cc;
	cc.key = key;
	if (o) {
		cc.kernel_before = o->kernel;
		cc.before = o->result;
		cc.latency_before = stats_of(o->latency_ns);
	}
	if (n) {
		cc.kernel_after = n->kernel;
		cc.after = n->result;
		cc.latency_after = stats_of(n->latency_ns);
		cc.detail = detail_of(*n);
	}
	if (!n) {
		cc.change = verdict_change::disappeared;
		cc.detail = "not in the new run";
	} else {
		cc.change = o ? classify(o->result, n->result) : verdict_change::appeared;
	}
	return cc;
}

// A row shows its id; with the placement where the comparison has the id
// in several.
void label_rows(std::vector<case_comparison> &rows)
{
	std::map<std::string_view, std::set<std::string_view>> placements;	// of each id
	for (const auto &r : rows)
		placements[r.key.id].insert(r.key.placement);
	for (auto &r : rows) {
		const bool several = placements[r.key.id].size() > 1;
		const std::string placement = r.key.placement.empty() ? "-" : r.key.placement;
		r.label = several ? r.key.id + " (" + placement + ")" : r.key.id;
	}
}

compared_run side_of(const json &doc, const run_view &run)
{
	compared_run side;
	std::set<std::string> seen;
	for (const auto &k : run.kernels)
		if (std::string kernel = kernel_config{k.name, k.release, "", ""}.label(); seen.insert(kernel).second)
			side.kernels.push_back(std::move(kernel));
	side.kernel_per_row = run.several_kernels();
	side.pass = run.pass;
	side.fail = run.fail;
	side.skip = run.skip;
	side.error = run.error;
	side.xfail = run.xfail;
	side.xpass = run.xpass;
	side.incomplete = incomplete(doc);
	return side;
}

} // namespace

comparison compare_results(const json &before, const json &after, const compare_options &options)
{
	const run_view old_run = view_run(before), new_run = view_run(after);
	comparison result{side_of(before, old_run), side_of(after, new_run), {}};
	const auto old_keys = keyed(old_run), new_keys = keyed(new_run);
	for (const auto &k : old_keys.keys)
		for (const auto &[o, n] : pair_by_kernel(k.records, new_keys.records_of(k.key)))
			result.cases.push_back(row_of(k.key, o, n));
	for (const auto &k : new_keys.keys)
		if (old_keys.records_of(k.key).empty())
			for (const auto &[o, n] : pair_by_kernel({}, k.records))
				result.cases.push_back(row_of(k.key, o, n));
	label_rows(result.cases);
	result.latency_gated = options.latency;
	if (options.latency)
		for (auto &cc : result.cases)
			if (const char *moved = cc.latency_beyond_spread())
				cc.latency_regression = std::string_view(moved) == "slower";
	return result;
}

namespace {

// What came from a results file is one line here: no control character
// (a terminal's escape sequence, a newline that breaks a row) reaches the
// text, and Markdown escapes it further (markdown_text).
std::string kernel_text(const std::optional<kernel_config> &k)
{
	return k ? one_line(k->label()) : "-";
}

// "6.1.0-57-amd64 (movable) -> 6.12.9 (movable)": for rows, when either
// side ran several kernels.
std::string row_kernels(const case_comparison &cc)
{
	return kernel_text(cc.kernel_before) + " -> " + kernel_text(cc.kernel_after);
}

std::string verdict_text(const std::optional<verdict> &o, const char *none)
{
	return o ? name(*o) : none;
}

// Latency: the median, how the samples spread (IQR from four on, else the
// range) and how many there were.
std::string latency_cell(const std::optional<sample_stats> &s)
{
	if (!s)
		return "-";
	std::string out = format_ns(s->median, true) + " (";
	if (s->n >= 4)
		out += "IQR " + format_ns(s->p25, true) + " - " + format_ns(s->p75, true) + ", ";
	else if (s->n >= 2)
		out += "range " + format_ns(s->min, true) + " - " + format_ns(s->max, true) + ", ";
	return out + "n=" + std::to_string(s->n) + ")";
}

std::string change_pct_text(const case_comparison &cc)
{
	const auto pct = cc.median_change_pct();
	if (!pct)
		return "-";
	char buf[32];
	std::snprintf(buf, sizeof(buf), "%+.1f%%", *pct);
	if (const char *moved = cc.latency_beyond_spread())
		return buf + std::string(", ") + moved + " beyond the spread";
	return buf;
}

std::string kernels_text(const compared_run &r)
{
	const std::string out = join(r.kernels, ", ", one_line);
	return out.empty() ? "none recorded" : out;
}

std::string counts_text(const compared_run &r)
{
	return "pass " + std::to_string(r.pass) + ", fail " + std::to_string(r.fail) +
	       (r.xfail || r.xpass ? ", xfail " + std::to_string(r.xfail) + ", xpass " + std::to_string(r.xpass) : "") +
	       ", skip " + std::to_string(r.skip) + ", error " + std::to_string(r.error) +
	       (r.incomplete ? " (run incomplete)" : "");
}

// The names of the rows that regressed one way (a verdict, or latency
// alone), for the result line: the label, and the kernel where rows name
// theirs.
std::string regression_names(const comparison &c, bool by_verdict)
{
	std::vector<std::string> names;
	for (const auto &cc : c.cases)
		if (cc.regressed() && is_regression(cc.change) == by_verdict)
			names.push_back(one_line(cc.label) +
					(c.kernels_per_row() ? " on " + kernel_text(cc.kernel_after ? cc.kernel_after
												   : cc.kernel_before)
							     : ""));
	return join(names, ", ");
}

std::string result_text(const comparison &c)
{
	const auto verdicts = std::count_if(c.cases.begin(), c.cases.end(),
					    [](const case_comparison &cc) { return is_regression(cc.change); });
	const auto latency = c.regressions() - verdicts;
	if (!verdicts && !latency)
		return c.latency_gated ? "no verdict or latency regression: exit 0" : "no verdict regression: exit 0";
	std::string out;
	if (verdicts)
		out = std::to_string(verdicts) + " verdict regression" + (verdicts == 1 ? "" : "s") + " (" +
		      regression_names(c, true) + ")";
	if (latency)
		out += (out.empty() ? "" : ", ") + std::to_string(latency) + " latency regression" +
		       (latency == 1 ? "" : "s") + " (" + regression_names(c, false) + ")";
	return out + ": exit 1";
}

std::string text_verdict_changes(const comparison &c, size_t key_w, size_t kernel_w)
{
	std::ostringstream out;
	out << "\nverdict changes (by suite, placement and case id):\n";
	int unchanged = 0;
	for (const auto &cc : c.cases) {
		if (cc.change == verdict_change::unchanged) {
			unchanged++;
			continue;
		}
		const std::string transition = verdict_text(cc.before, "(none)") + " -> " +
					       verdict_text(cc.after, "(missing)");
		out << "  " << pad_to_width(one_line(cc.label), key_w)
		    << (kernel_w ? pad_to_width(row_kernels(cc), kernel_w) : "") << pad_to_width(transition, 18)
		    << name(cc.change) << (cc.detail.empty() ? "" : ": " + one_line(cc.detail)) << "\n";
	}
	if (unchanged == int(c.cases.size()))
		out << "  none: all " << unchanged << " cases have the same verdict\n";
	else
		out << "  " << unchanged << " cases unchanged\n";
	return out.str();
}

// The rows now skipped, counted by their reason, the most first: between
// two flavours of one kernel (plain and cloud) what the second lacks, in a
// line a reason. "" unless two rows or more were skipped.
std::string text_skip_reasons(const comparison &c)
{
	std::map<std::string, size_t> count;
	for (const auto &cc : c.cases)
		if (cc.change == verdict_change::skipped)
			++count[cc.detail];
	size_t rows = 0;
	std::vector<std::pair<size_t, std::string>> reasons;
	for (const auto &[reason, n] : count) {
		rows += n;
		reasons.emplace_back(n, reason);
	}
	if (rows < 2)
		return "";
	std::stable_sort(reasons.begin(), reasons.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
	std::ostringstream out;
	out << "\nnow skipped, by reason (" << rows << " cases):\n";
	for (const auto &[n, reason] : reasons)
		out << "  " << n << (n == 1 ? " case: " : " cases: ") << (reason.empty() ? "(no reason given)" : reason)
		    << "\n";
	return out.str();
}

std::string text_latency(const comparison &c, size_t key_w, size_t kernel_w)
{
	std::ostringstream out;
	out << "\nlatency per case (registration, or export/import): median (spread, n = samples):\n";
	size_t before_w = 3, after_w = 3, single_samples = 0, rows = 0, moved = 0;
	bool gated = false;
	for (const auto &cc : c.cases) {
		before_w = std::max(before_w, latency_cell(cc.latency_before).size());
		after_w = std::max(after_w, latency_cell(cc.latency_after).size());
	}
	auto kernels = [&](const std::string &s) { return kernel_w ? pad_to_width(s, kernel_w) : ""; };
	for (const auto &cc : c.cases) {
		if (!cc.latency_before && !cc.latency_after)
			continue;
		if (!rows++)
			out << "  " << pad_to_width("case", key_w) << kernels("kernel") << pad_to_width("old", before_w + 2)
			    << pad_to_width("new", after_w + 2) << "median change\n";
		out << "  " << pad_to_width(one_line(cc.label), key_w) << kernels(row_kernels(cc))
		    << pad_to_width(latency_cell(cc.latency_before), before_w + 2)
		    << pad_to_width(latency_cell(cc.latency_after), after_w + 2) << change_pct_text(cc) << "\n";
		single_samples += cc.median_change_pct() && (cc.latency_before->n == 1 || cc.latency_after->n == 1);
		moved += cc.latency_beyond_spread() != nullptr;
		gated |= cc.latency_regression;
	}
	if (!rows)
		out << "  no case has a latency in either run\n";
	if (moved)
		out << "  " << moved << " case(s) moved beyond the spread: every new sample above (slower) or below "
		    << "(faster) every old one" << (gated ? "; slower is a REGRESSION (--latency)" : " (informational)")
		    << "\n";
	if (single_samples)
		out << "  note: " << single_samples << " case(s) have a single sample on one side: a change "
		    << "there is one registration against another, indicative only\n";
	return out.str();
}

std::string markdown_row(const comparison &c, const case_comparison &cc)
{
	const bool bad = cc.regressed();
	auto verdict_cell = [](const std::optional<verdict> &o) { return o ? std::string(upper_name(*o)) : "-"; };
	std::string row = "| " + markdown_text(cc.label) + " | " + markdown_text(cc.key.suite) + " | " +
			  markdown_text(cc.key.placement.empty() ? "-" : cc.key.placement) + " | ";
	if (c.kernels_per_row())
		row += markdown_text(kernel_text(cc.kernel_before)) + " | " +
		       markdown_text(kernel_text(cc.kernel_after)) + " | ";
	return row + verdict_cell(cc.before) + " | " + verdict_cell(cc.after) + " | " + (bad ? "**" : "") +
	       markdown_text(name(cc.change)) + (bad ? "**" : "") + " | " +
	       markdown_text(cc.detail.empty() ? "-" : cc.detail) + " | " +
	       markdown_text(latency_cell(cc.latency_before)) + " | " + markdown_text(latency_cell(cc.latency_after)) +
	       " | " + (cc.latency_regression ? "**" : "") + markdown_text(change_pct_text(cc)) +
	       (cc.latency_regression ? "**" : "") + " |\n";
}

json stats_json(const std::optional<sample_stats> &s)
{
	if (!s)
		return nullptr;
	return {{"median_ns", s->median}, {"n", s->n},	       {"min_ns", s->min},
		{"max_ns", s->max},	  {"p25_ns", s->p25}, {"p75_ns", s->p75}};
}

json side_json(const std::optional<verdict> &result, const std::optional<kernel_config> &kernel,
	       const std::optional<sample_stats> &latency)
{
	if (!result)
		return nullptr;
	return {{"verdict", name(*result)}, {"kernel", kernel_text(kernel)}, {"latency", stats_json(latency)}};
}

json run_json(const compared_run &r)
{
	return {{"path", r.path}, {"kernels", r.kernels}, {"pass", r.pass},   {"fail", r.fail},	{"xfail", r.xfail},
		{"xpass", r.xpass}, {"skip", r.skip},	  {"error", r.error}, {"incomplete", r.incomplete}};
}

} // namespace

std::string format_comparison_text(const comparison &c)
{
	std::ostringstream out;
	out << "old: " << c.before.path << "\n     " << (c.before.kernels.size() > 1 ? "kernels " : "kernel ")
	    << kernels_text(c.before) << ": " << counts_text(c.before) << "\n";
	out << "new: " << c.after.path << "\n     " << (c.after.kernels.size() > 1 ? "kernels " : "kernel ")
	    << kernels_text(c.after) << ": " << counts_text(c.after) << "\n";
	size_t key_w = 4, kernel_w = 0;
	for (const auto &cc : c.cases) {
		key_w = std::max(key_w, cc.label.size() + 2);
		if (c.kernels_per_row())
			kernel_w = std::max(kernel_w, row_kernels(cc).size() + 2);
	}
	out << text_verdict_changes(c, key_w, kernel_w) << text_skip_reasons(c) << text_latency(c, key_w, kernel_w);
	out << "\nresult: " << result_text(c) << "\n";
	return out.str();
}

std::string format_comparison_markdown(const comparison &c)
{
	std::ostringstream out;
	out << "### pinmatrix report --compare: " << markdown_text(result_text(c)) << "\n\n";
	out << "| run | results | kernel | pass | fail | skip | error |\n| --- | --- | --- | --- | --- | --- | --- |\n";
	for (const auto &[which, r] : {std::pair{"old", &c.before}, std::pair{"new", &c.after}})
		out << "| " << which << " | " << markdown_text(r->path) << (r->incomplete ? " (run incomplete)" : "")
		    << " | " << markdown_text(kernels_text(*r)) << " | " << r->pass << " | " << r->fail << " | "
		    << r->skip << " | " << r->error << " |\n";
	out << "\n| case | suite | placement | " << (c.kernels_per_row() ? "old kernel | new kernel | " : "")
	    << "old | new | change | detail | old latency | new latency | median change |\n";
	out << "| --- | --- | --- | " << (c.kernels_per_row() ? "--- | --- | " : "")
	    << "--- | --- | --- | --- | --- | --- | --- |\n";
	for (const auto &cc : c.cases)
		out << markdown_row(c, cc);
	return out.str();
}

json comparison_json(const comparison &c)
{
	json rows = json::array();
	for (const auto &cc : c.cases) {
		const auto pct = cc.median_change_pct();
		rows.push_back({{"suite", cc.key.suite},
				{"placement", cc.key.placement},
				{"id", cc.key.id},
				{"label", cc.label},
				{"old", side_json(cc.before, cc.kernel_before, cc.latency_before)},
				{"new", side_json(cc.after, cc.kernel_after, cc.latency_after)},
				{"change", id(cc.change)},
				{"regression", cc.regressed()},
				{"latency_regression", cc.latency_regression},
				{"detail", cc.detail},
				{"median_change_pct", pct ? json(*pct) : json(nullptr)},
				{"latency_beyond_spread", cc.latency_beyond_spread() ? json(cc.latency_beyond_spread())
										      : json(nullptr)}});
	}
	return {{"schema", "pinmatrix-compare/1"}, {"old", run_json(c.before)}, {"new", run_json(c.after)},
		{"cases", rows},		     {"regressions", c.regressions()}};
}

int run_comparison::exit_code() const
{
	return std::max(verdicts.exit_code(), bench.exit_code());
}

run_comparison compare_run_files(const results_file &before, const results_file &after,
				 const compare_options &options)
{
	run_comparison c{compare_results(before.doc, after.doc, options),
			 compare_bench_runs(before, after, options.bench_threshold_pct)};
	c.verdicts.before.path = before.path.string();
	c.verdicts.after.path = after.path.string();
	return c;
}

json run_comparison_json(const run_comparison &c)
{
	json doc = comparison_json(c.verdicts);
	doc["benchmarks"] = bench_runs_json(c.bench);
	doc["exit_code"] = c.exit_code();
	return doc;
}

std::string format_run_comparison(const run_comparison &c, compare_format format)
{
	const std::string bench_text = format_bench_runs(c.bench);
	switch (format) {
	case compare_format::md:
		return format_comparison_markdown(c.verdicts) +
		       (bench_text.empty() ? "" : "\n```text" + bench_text + "```\n");
	case compare_format::json:
		return run_comparison_json(c).dump(2) + "\n";
	case compare_format::text:
		break;
	}
	return format_comparison_text(c.verdicts) + bench_text;
}

int compare_runs(const std::filesystem::path &before, const std::filesystem::path &after, compare_format format,
		 const compare_options &options, std::ostream &out)
{
	// Both are read before anything is printed: bad input prints one message.
	const auto old_file = load_results(before);
	const auto new_file = load_results(after);
	const run_comparison c = compare_run_files(old_file, new_file, options);
	out << format_run_comparison(c, format);
	return c.exit_code();
}

} // namespace pinmatrix
