// SPDX-License-Identifier: GPL-2.0
#include "mutants_report.hpp"

#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "promises.hpp"
#include "report_input.hpp"
#include "text.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

// The value of pinmatrix_mutant=N in a command line, 0 without it.
int mutant_of(const std::string &append)
{
	const std::string key = std::string(mutant_boot_parameter) + "=";
	for (size_t at = append.find(key); at != std::string::npos; at = append.find(key, at + 1)) {
		if (at && append[at - 1] != ' ')
			continue;
		try {
			return std::stoi(append.substr(at + key.size()));
		} catch (const std::exception &) {
			return -1;
		}
	}
	return 0;
}

// What the cases of one (kernel, boot, mutant) did.
struct cell {
	size_t pass = 0, skip = 0;
	std::vector<std::string> caught;	// failed (a known bug's XFAIL too)
	std::vector<std::string> errored;	// ERROR: decided nothing, catches nothing
};

using where = std::pair<std::string, std::string>;	// kernel name, boot

struct tally {
	std::map<int, std::map<where, cell>> by_mutant;
	std::set<where> places;
};

tally tally_of(const json &doc)
{
	tally t;
	const report::run_view run = report::view_run(doc);
	for (const auto &c : run.cases) {
		const where w{c.kernel.name.empty() ? c.kernel.release : c.kernel.name, c.kernel.boot};
		cell &x = t.by_mutant[mutant_of(c.kernel.append)][w];
		t.places.insert(w);
		if (c.result == verdict::pass || c.result == verdict::xpass)
			x.pass++;
		else if (c.result == verdict::skip)
			x.skip++;
		else if (c.result == verdict::error)
			x.errored.push_back(c.id);
		else
			x.caught.push_back(c.id);
	}
	return t;
}

std::string joined(const std::vector<std::string> &ids)
{
	return join(ids, ", ", report::one_line);
}

// One line per (kernel, boot); whether the line is what it should be.
bool print_places(const tally &t, int n, std::ostream &out)
{
	bool good = true;
	const auto it = t.by_mutant.find(n);
	for (const auto &w : t.places) {
		out << "    " << report::one_line(w.first) << " " << report::one_line(w.second) << ": ";
		if (it == t.by_mutant.end() || !it->second.count(w)) {
			out << "not run\n";
			continue;
		}
		const cell &x = it->second.at(w);
		// An ERROR decided nothing: it neither catches a mutant nor
		// leaves the kernel as it was clean, and is said apart.
		const std::string errors =
			x.errored.empty() ? "" : "; ERROR, which decides nothing: " + joined(x.errored);
		const bool decided = x.pass || !x.caught.empty();
		if (!decided) {
			out << "DECIDED NOTHING (" << x.skip << " skipped" << errors << ")\n";
			good = false;
		} else if (n == 0) {
			out << (!x.caught.empty()  ? "FAILED on the kernel as it was: " + joined(x.caught) + errors
				: !x.errored.empty() ? "NOT CLEAN (" + std::to_string(x.pass) + " passed" + errors + ")"
						     : "clean (" + std::to_string(x.pass) + " passed)")
			    << '\n';
			good = good && x.caught.empty() && x.errored.empty();
		} else {
			out << (x.caught.empty() ? "NOT CAUGHT (" + std::to_string(x.pass) + " passed" + errors + ")"
						 : "caught by " + joined(x.caught) + errors)
			    << '\n';
			good = good && !x.caught.empty();
		}
	}
	return good;
}

} // namespace

int print_mutants_table(const json &doc, std::ostream &out)
{
	const tally t = tally_of(doc);
	if (t.places.empty()) {
		out << "no case records: nothing ran\n";
		return 1;
	}
	out << "mutant 0: the kernel as it was\n";
	std::vector<std::string> findings;
	if (!print_places(t, 0, out))
		findings.emplace_back("the kernel as it was");
	size_t mutants = 0;
	for (const auto &m : mutant_table()) {
		if (m.kind != mutant_kind::kernel_patch || !m.boot_value)
			continue;
		mutants++;
		out << "mutant " << m.boot_value << ": " << m.name << ": " << m.deviation << "\n    breaks "
		    << join(m.breaks, ", ") << "; the table expects " << join(m.caught_by, ", ") << "\n";
		if (!print_places(t, m.boot_value, out))
			findings.push_back(std::string(m.name));
	}
	out << '\n'
	    << mutants << " mutants on " << t.places.size() << " (kernel, boot): "
	    << (findings.empty() ? "every mutant caught everywhere it ran, the kernel as it was clean"
				 : "findings: " + join(findings, ", "))
	    << '\n';
	return findings.empty() ? 0 : 1;
}

int mutants_report_command(const std::filesystem::path &dir_or_file)
{
	const auto results = report::load_results(dir_or_file);
	return print_mutants_table(results.doc, std::cout);
}

} // namespace pinmatrix
