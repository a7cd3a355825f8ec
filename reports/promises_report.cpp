// SPDX-License-Identifier: GPL-2.0
#include "promises_report.hpp"

#include <map>
#include <sstream>

#include "promises.hpp"
#include "report_input.hpp"
#include "text.hpp"
#include "verdict.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

bool selected(const promise &p, const promises_filter &f)
{
	if (!f.contract.empty() && f.contract != name(p.of))
		return false;
	return !f.unproved_only || proofs_of(p).empty();
}

std::vector<std::string> mutant_ids(const std::vector<const mutant *> &ms)
{
	std::vector<std::string> ids;
	for (const auto *m : ms)
		ids.push_back(m->id());
	return ids;
}

// text wrapped at width, each line after `indent` spaces.
std::string wrapped(std::string_view text, size_t indent, size_t width)
{
	const size_t room = width > indent + 20 ? width - indent : 20;
	std::string out, line;
	size_t from = 0;
	while (from < text.size()) {
		size_t to = text.find(' ', from);
		if (to == std::string_view::npos)
			to = text.size();
		const std::string_view word = text.substr(from, to - from);
		if (!line.empty() && line.size() + 1 + word.size() > room) {
			out += std::string(indent, ' ') + line + '\n';
			line.clear();
		}
		line += (line.empty() ? "" : " ") + std::string(word);
		from = to + 1;
	}
	if (!line.empty())
		out += std::string(indent, ' ') + line + '\n';
	return out;
}

// "1 case", "3 cases".
std::string counted(size_t n, const std::string &what)
{
	return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

struct promise_tally {
	size_t promises = 0, checked = 0, proved = 0;
	std::vector<std::string> unchecked;
};

promise_tally count(const promises_filter &f)
{
	promise_tally t;
	for (const auto &p : promise_table()) {
		if (!selected(p, f))
			continue;
		t.promises++;
		t.checked += !p.cases.empty();
		t.proved += !proofs_of(p).empty();
		if (p.cases.empty())
			t.unchecked.emplace_back(p.id);
	}
	return t;
}

} // namespace

std::string format_promises_text(const promises_filter &f, size_t width)
{
	std::ostringstream out;
	for (const auto &p : promise_table()) {
		if (!selected(p, f))
			continue;
		const auto proofs = mutant_ids(proofs_of(p));
		out << p.id << "  (" << p.source << ")\n"
		    << wrapped(report::one_line(p.text), 4, width)
		    << wrapped("checked by: " + (p.cases.empty() ? std::string("NO CASE") : join(p.cases, ", ")), 4, width)
		    << wrapped("proved by: " + (proofs.empty() ? std::string("no mutant") : join(proofs, ", ")), 4, width);
	}
	const promise_tally t = count(f);
	out << "\npromises: " << t.promises << ", checked by a case: " << t.checked
	    << ", proved by a mutant: " << t.proved << "; mutants: " << mutant_table().size() << '\n';
	if (!t.unchecked.empty())
		out << "not checked by any case: " << join(t.unchecked, ", ") << '\n';
	return out.str();
}

json promises_json(const promises_filter &f)
{
	json promises = json::array();
	for (const auto &p : promise_table())
		if (selected(p, f))
			promises.push_back({{"id", p.id}, {"contract", name(p.of)}, {"source", p.source}, {"text", p.text},
					    {"cases", p.cases}, {"proved_by", mutant_ids(proofs_of(p))}});
	json mutants = json::array();
	for (const auto &m : mutant_table()) {
		json j = {{"id", m.id()}, {"kind", name(m.kind)}, {"deviation", m.deviation}, {"breaks", m.breaks},
			  {"caught_by", m.caught_by}};
		if (m.kind == mutant_kind::model_fault) {
			j["bit"] = m.bit;
		} else {
			j["patches"] = json::array();
			for (const auto p : m.patches)
				j["patches"].push_back("matrix/patches/" + std::string(p));
			if (m.boot_value)
				j["boot"] = std::string(mutant_boot_parameter) + "=" + std::to_string(m.boot_value);
		}
		mutants.push_back(j);
	}
	const promise_tally t = count(f);
	return {{"promises", promises},
		{"mutants", mutants},
		{"summary",
		 {{"promises", t.promises}, {"checked", t.checked}, {"proved", t.proved}, {"unchecked", t.unchecked}}}};
}

std::string promises_html_section(const json &cases)
{
	using report::h;
	// Each case id of the run: its verdicts (one per kernel and boot).
	std::map<std::string, std::vector<verdict>, std::less<>> seen;
	for (const auto &c : cases)
		if (c.is_object() && c.contains("id") && c["id"].is_string())
			seen[c["id"].get<std::string>()].push_back(verdict_of(c.value("verdict", "error")));
	std::ostringstream out;
	const promise_tally t = count({});
	out << "<section id=\"promises\">\n<h2>Promises</h2>\n<p class=\"muted\">" << t.promises
	    << " promises of the two contracts (<code>pinmatrix promises</code>): " << t.checked
	    << " checked by a case, " << t.proved << " proved by a mutant the suite carries.";
	if (!t.unchecked.empty())
		out << " <b>Not checked by any case: " << h(join(t.unchecked, ", ")) << ".</b>";
	out << "</p>\n<table class=\"plain\">\n<tr><th>promise</th><th>checked by</th><th>in this run</th>"
	       "<th>proved by</th></tr>\n";
	for (const auto &p : promise_table()) {
		std::vector<std::string> badges;
		for (const auto id : p.cases)
			if (const auto it = seen.find(id); it != seen.end())
				for (const verdict v : it->second)
					badges.push_back(std::string("<span class=\"badge v-") + name(v) + "\" title=\"" +
							 h(id) + "\">" + upper_name(v) + "</span>");
		const size_t proofs = proofs_of(p).size();
		out << "<tr><td><code>" << h(p.id) << "</code><br><span class=\"muted\">" << h(p.source) << ": "
		    << h(p.text) << "</span></td><td>" << (p.cases.empty() ? "<b>no case</b>" : counted(p.cases.size(), "case"))
		    << "</td><td>" << (badges.empty() ? "-" : join(badges, " ")) << "</td><td>"
		    << (proofs ? counted(proofs, "mutant") : "none") << "</td></tr>\n";
	}
	out << "</table>\n</section>\n";
	return out.str();
}

} // namespace pinmatrix
