// SPDX-License-Identifier: GPL-2.0
#include "gate.hpp"

#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <system_error>

#include <nlohmann/json.hpp>

#include "atomic_file.hpp"
#include "sys_error.hpp"
#include "user_input.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

namespace {

// Neither run passed (or xfailed) a case: every verdict was a skip.
bool decided_nothing(const comparison &c)
{
	for (const auto &side : {&c.before, &c.after})
		if (side->pass || side->fail || side->xfail || side->xpass || side->error)
			return false;
	return true;
}

// A new kernel bug line that no case explains, where the baseline had none
// (a WARN at boot, between cases): no verdict shows it, the gate does.
std::optional<std::string> new_kernel_alarm(const report::results_file &before, const report::results_file &after)
{
	const auto now = report::unexplained_kernel_alarms(after.doc);
	if (now.empty() || !report::unexplained_kernel_alarms(before.doc).empty())
		return std::nullopt;
	return std::to_string(now.size()) + " kernel bug line(s) that no case explains, where the baseline had none "
	       "(guest/kernel.log), first: " + report::one_line(now.front());
}

// gate.md for a ticket, gate.json for machines: the comparison, and the
// new kernel bug line.
void write_gate_files(const fs::path &out, const run_comparison &c, const std::optional<std::string> &alarm)
{
	auto doc = run_comparison_json(c);
	doc["schema"] = "pinmatrix-gate/1";
	doc["new_kernel_alarm"] = alarm ? nlohmann::json(*alarm) : nlohmann::json(nullptr);
	doc["exit_code"] = std::max(c.exit_code(), alarm ? 1 : 0);
	write_file_atomically(out / "gate.json", doc.dump(2) + "\n");
	const bool regressed = c.exit_code() || alarm;
	write_file_atomically(out / "gate.md",
			      std::string("## pinmatrix gate: ") + (regressed ? "REGRESSION" : "no regression") + "\n\n" +
				      format_run_comparison(c, compare_format::md) +
				      (alarm ? "\n**REGRESSION**: " + report::markdown_text(*alarm) + "\n" : ""));
}

} // namespace

report::results_file read_baseline(const gate_options &gate, const fs::path &out)
{
	if (gate.compare.bench_threshold_pct && !(*gate.compare.bench_threshold_pct > 0))
		throw usage_error("--bench-threshold: a percentage above 0");
	if (out.empty())
		throw usage_error("--baseline: the new run needs --out DIR to be compared");
	auto baseline = report::load_results(gate.baseline);
	// The run writes into OUT (results.json, its reports, guest/): the
	// baseline, an input, must not be among them.
	if (is_within(baseline.path, out))
		throw usage_error("--out " + out.string() + " holds the baseline " + baseline.path.string() +
				  ": the new run would write over it");
	return baseline;
}

int gated_run(const std::function<int()> &run, const report::results_file &baseline, const fs::path &out,
	      bool stdout_is_ktap, const compare_options &compare)
{
	const int run_exit = run();
	if (run_exit == 2 || !fs::exists(out / "results.json")) {
		std::cerr << "pinmatrix: the run ended without results (exit " << run_exit
			  << "): nothing to compare with the baseline\n";
		return 2;
	}
	const auto now = report::load_results(out);
	const run_comparison c = compare_run_files(baseline, now, compare);
	const auto alarm = new_kernel_alarm(baseline, now);
	write_gate_files(out, c, alarm);
	std::ostream &people = stdout_is_ktap ? std::cerr : std::cout;
	people << "\npinmatrix gate: the new run against the baseline (also in " << (out / "gate.md").string()
	       << " and gate.json)\n"
	       << format_run_comparison(c, compare_format::text);
	if (alarm)
		people << "gate: REGRESSION: " << *alarm << ": exit 1\n";
	if (c.exit_code() || alarm)
		return 1;
	return decided_nothing(c.verdicts) ? 4 : 0;
}

} // namespace pinmatrix
