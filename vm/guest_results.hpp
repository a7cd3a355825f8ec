// SPDX-License-Identifier: GPL-2.0
#pragma once

// A group's results: its record as the host starts it, the guest
// runner's results.json merged in, a verdict for every planned case the
// guest did not report, the guest kernel's log; a matrix's groups merged
// into one record; and what people and runners see while a guest runs
// (each case's line, KTAP as it grows).

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "group_spec.hpp"
#include "ktap.hpp"
#include "verdict.hpp"

namespace pinmatrix {

struct group_outcome {
	nlohmann::json doc;		// the group's results.json
	std::optional<int> guest_cmd_exit;
	std::string ended;		// why the guest ended early, if it did
	std::vector<std::string> kernel_alarms;	// from guest/kernel.log
};

// The group's record before anything is known of its kernel.
nlohmann::json group_doc(const group_spec &g);

// Every case of the plan as a record of one verdict, with the reason.
nlohmann::json records_not_run(const guest_plan &plan, verdict v, const std::string &reason);

// The guest runner's results.json into the group's record (its kernel
// facts added to the host's); one that cannot be read is said in ended.
void merge_guest_results(nlohmann::json &doc, const std::filesystem::path &guest_dir, std::string &ended);

// Every planned case gets exactly one verdict: the missing ones are
// errors, each with why (ended, the console's lines). excerpt: the serial
// log's, for the first.
void add_missing_records(nlohmann::json &doc, const group_spec &g, const guest_plan &plan, const std::string &ended,
			 const std::optional<int> &job_status, const std::string &excerpt);

// Each case names where it ran, so merged results stay readable.
void label_cases(nlohmann::json &doc);

// The record's summary and verdict (a kernel bug report no case explains
// fails it).
void summarize_into(nlohmann::json &doc);

// The guest's kernel log as vm/guest/stage2 saved it after the job: a
// report of a kernel bug in it (KASAN, lockdep, a WARN ...) fails the run
// whatever the job said, and the record says which lines.
std::vector<std::string> note_guest_kernel_log(const std::filesystem::path &guest_dir, nlohmann::json &doc);

// A run whose kernel reported a bug fails, unless it already failed worse.
int with_kernel_alarms(int rc, const std::vector<std::string> &alarms);

// One group's results written in its dir, and its line in the merged record.
void merge_group(const group_spec &g, group_outcome &outcome, const std::filesystem::path &out,
		 nlohmann::json &merged);

// What the caller of run_group() is shown while the guest runs: the
// group's record as it would be merged now (--format ktap streams its new
// cases).
using group_progress = std::function<void(const nlohmann::json &doc)>;

// A watch of the guest's results.json (rewritten whole after each case):
// each new version, merged into the group's record and labelled as at
// the group's end, goes to progress(). None without a progress.
std::function<void()> watch_guest(const nlohmann::json &doc, const std::filesystem::path &guest_dir,
				  const group_progress &progress);

// What a person and a runner see while a guest runs (watch_guest()): each
// case's progress line as the guest's results.json gains it, and, with
// --format ktap, the KTAP document on stdout as it grows, then the cases
// the host's merge decides (those the guest never reached); with ktap the
// people's lines go to stderr. While guests run side by side (not live),
// a group's KTAP comes whole once it and the groups before it have ended.
class guest_ktap {
public:
	guest_ktap(const std::string &format, ktap_plan plan, bool live = true);
	// total: the cases the group plans; label: before each line.
	group_progress progress(size_t total, const std::string &label = "");
	void header(const nlohmann::json &doc);
	// The group's cases not streamed yet, from its record as merged.
	void rest_of(const nlohmann::json &doc);
	void end_group(const nlohmann::json &entry);
	void end(const nlohmann::json &doc);

private:
	std::optional<ktap_console> console_;
	bool live_;
	size_t streamed_ = 0;	// of the group's cases, in KTAP
};

} // namespace pinmatrix
