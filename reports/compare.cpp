// SPDX-License-Identifier: GPL-2.0
#include "compare.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace pinmatrix {

using namespace report;

const char *name(verdict_change c)
{
	switch (c) {
	case verdict_change::unchanged: return "unchanged";
	case verdict_change::regression: return "REGRESSION";
	case verdict_change::skipped: return "REGRESSION (now skipped)";
	case verdict_change::disappeared: return "REGRESSION (case missing)";
	case verdict_change::improvement: return "improvement";
	case verdict_change::changed: return "changed";
	case verdict_change::appeared: return "new case";
	}
	return "?";
}

bool is_regression(verdict_change c)
{
	return c == verdict_change::regression || c == verdict_change::skipped ||
	       c == verdict_change::disappeared;
}

int comparison::regressions() const
{
	return int(std::count_if(cases.begin(), cases.end(),
				 [](const case_comparison &c) { return is_regression(c.change); }));
}

namespace {

struct keyed_case {
	outcome result = outcome::error;
	std::string reason, expected, observed;
	std::vector<double> latency_ns;
};

// Cases by key, in document order. Two runs of one kernel each compare by
// case id (the kernels differ on purpose); merged runs by kernel and id.
std::vector<std::pair<std::string, keyed_case>> keyed(const run_view &run, bool by_kernel)
{
	std::vector<std::pair<std::string, keyed_case>> out;
	for (const auto &c : run.cases) {
		const std::string key = by_kernel ? c.kernel.label() + " / " + c.id : c.id;
		auto it = std::find_if(out.begin(), out.end(), [&](auto &e) { return e.first == key; });
		if (it == out.end()) {
			out.push_back({key, {c.result, c.reason, c.expected, c.observed, {}}});
			it = out.end() - 1;
		} else if (c.result < it->second.result) {
			// The same key twice (a rerun): the worse verdict stands.
			it->second.result = c.result;
			it->second.reason = c.reason;
		}
		auto &samples = it->second.latency_ns;
		samples.insert(samples.end(), c.latency_ns.begin(), c.latency_ns.end());
	}
	return out;
}

verdict_change classify(outcome before, outcome after)
{
	if (before == after)
		return verdict_change::unchanged;
	if (after == outcome::pass)
		return verdict_change::improvement;
	if (before == outcome::pass && (after == outcome::fail || after == outcome::error))
		return verdict_change::regression;
	// Coverage lost is a regression: a kernel on which the module does not
	// load (or the device is gone) must not pass the gate by skipping.
	if (before == outcome::pass && after == outcome::skip)
		return verdict_change::skipped;
	return verdict_change::changed;
}

std::string summary_line(const json &doc)
{
	const run_view run = view_run(doc);
	std::string kernels;
	for (const auto &k : run.kernels)
		kernels += (kernels.empty() ? "" : ", ") + k.label();
	std::ostringstream out;
	out << (kernels.empty() ? "no kernel recorded" : kernels) << ": pass " << run.pass << ", fail " << run.fail
	    << ", skip " << run.skip << ", error " << run.error;
	if (incomplete(doc))
		out << " (run incomplete)";
	return out.str();
}

std::string pad(std::string s, size_t width)
{
	// Widths count code points, not bytes ("µs").
	size_t shown = 0;
	for (unsigned char ch : s)
		shown += (ch & 0xC0) != 0x80;
	if (shown < width)
		s += std::string(width - shown, ' ');
	return s;
}

} // namespace

comparison compare_results(const json &before, const json &after)
{
	const run_view old_run = view_run(before), new_run = view_run(after);
	comparison result;
	result.by_kernel = old_run.several_kernels() || new_run.several_kernels();
	const auto old_cases = keyed(old_run, result.by_kernel);
	const auto new_cases = keyed(new_run, result.by_kernel);
	auto find = [](const auto &cases, const std::string &key) -> const keyed_case * {
		for (const auto &[k, c] : cases)
			if (k == key)
				return &c;
		return nullptr;
	};

	for (const auto &[key, o] : old_cases) {
		case_comparison cc;
		cc.key = key;
		cc.before = o.result;
		cc.latency_before = stats_of(o.latency_ns);
		if (const keyed_case *n = find(new_cases, key)) {
			cc.after = n->result;
			cc.change = classify(o.result, n->result);
			cc.latency_after = stats_of(n->latency_ns);
			if (n->result == outcome::fail)
				cc.detail = "expected " + n->expected + ", observed " + n->observed +
					    (n->reason.empty() ? "" : ": " + one_line(n->reason));
			else if (n->result != outcome::pass)
				cc.detail = one_line(n->reason);
		} else {
			cc.change = verdict_change::disappeared;
			cc.detail = "not in the new run";
		}
		result.cases.push_back(std::move(cc));
	}
	for (const auto &[key, n] : new_cases) {
		if (find(old_cases, key))
			continue;
		case_comparison cc;
		cc.key = key;
		cc.after = n.result;
		cc.change = verdict_change::appeared;
		cc.latency_after = stats_of(n.latency_ns);
		if (n.result != outcome::pass)
			cc.detail = one_line(n.reason);
		result.cases.push_back(std::move(cc));
	}
	return result;
}

std::string format_comparison(const comparison &c, const std::string &before_name, const json &before,
			      const std::string &after_name, const json &after)
{
	std::ostringstream out;
	out << "old: " << before_name << "\n     " << summary_line(before) << "\n";
	out << "new: " << after_name << "\n     " << summary_line(after) << "\n";

	size_t key_w = 4;
	for (const auto &cc : c.cases)
		key_w = std::max(key_w, cc.key.size());
	key_w += 2;

	out << "\nverdict changes (" << (c.by_kernel ? "by kernel and case id" : "by case id") << "):\n";
	int unchanged = 0;
	for (const auto &cc : c.cases) {
		if (cc.change == verdict_change::unchanged) {
			unchanged++;
			continue;
		}
		const std::string transition = std::string(cc.before ? name(*cc.before) : "(none)") + " -> " +
					       (cc.after ? name(*cc.after) : "(missing)");
		out << "  " << pad(cc.key, key_w) << pad(transition, 18) << name(cc.change);
		if (!cc.detail.empty())
			out << ": " << cc.detail;
		out << "\n";
	}
	if (unchanged == int(c.cases.size()))
		out << "  none: all " << unchanged << " cases have the same verdict\n";
	else
		out << "  " << unchanged << " cases unchanged\n";

	// Latency: the median, how the samples spread (IQR from four on, else
	// the range) and how many there were.
	auto cell = [](const std::optional<sample_stats> &s) {
		if (!s)
			return std::string("-");
		std::string out = format_ns(s->median, true) + " (";
		if (s->n >= 4)
			out += "IQR " + format_ns(s->p25, true) + " - " + format_ns(s->p75, true) + ", ";
		else if (s->n >= 2)
			out += "range " + format_ns(s->min, true) + " - " + format_ns(s->max, true) + ", ";
		return out + "n=" + std::to_string(s->n) + ")";
	};
	struct latency_row {
		std::string key, before, after, change;
	};
	std::vector<latency_row> rows;
	size_t single_samples = 0;
	for (const auto &cc : c.cases) {
		if (!cc.latency_before && !cc.latency_after)
			continue;
		latency_row r{cc.key, cell(cc.latency_before), cell(cc.latency_after), "-"};
		if (cc.latency_before && cc.latency_after && cc.latency_before->median > 0) {
			char buf[32];
			std::snprintf(buf, sizeof(buf), "%+.1f%%",
				      (cc.latency_after->median / cc.latency_before->median - 1) * 100);
			r.change = buf;
			single_samples += cc.latency_before->n == 1 || cc.latency_after->n == 1;
		}
		rows.push_back(std::move(r));
	}
	out << "\nlatency per case (registration, or export/import): median (spread, n = samples):\n";
	if (rows.empty()) {
		out << "  no case has a latency in either run\n";
	} else {
		size_t before_w = 3, after_w = 3;
		for (const auto &r : rows) {
			before_w = std::max(before_w, r.before.size());
			after_w = std::max(after_w, r.after.size());
		}
		out << "  " << pad("case", key_w) << pad("old", before_w + 2) << pad("new", after_w + 2)
		    << "median change\n";
		for (const auto &r : rows)
			out << "  " << pad(r.key, key_w) << pad(r.before, before_w + 2) << pad(r.after, after_w + 2)
			    << r.change << "\n";
	}
	if (single_samples)
		out << "  note: " << single_samples << " case(s) have a single sample on one side: a change "
		    << "there is one registration against another, indicative only\n";

	const int regressions = c.regressions();
	out << "\n";
	if (regressions) {
		out << "result: " << regressions << " verdict regression" << (regressions == 1 ? "" : "s") << " (";
		bool first = true;
		for (const auto &cc : c.cases)
			if (is_regression(cc.change)) {
				out << (first ? "" : ", ") << cc.key;
				first = false;
			}
		out << "): exit 1\n";
	} else {
		out << "result: no verdict regression: exit 0\n";
	}
	return out.str();
}

int compare_runs(const std::filesystem::path &before, const std::filesystem::path &after, std::ostream &out)
{
	// Both are read before anything is printed: bad input prints one message.
	const auto old_file = load_results(before);
	const auto new_file = load_results(after);
	const comparison c = compare_results(old_file.doc, new_file.doc);
	out << format_comparison(c, old_file.path.string(), old_file.doc, new_file.path.string(), new_file.doc);
	return c.exit_code();
}

} // namespace pinmatrix
