// SPDX-License-Identifier: GPL-2.0
#include "guest_results.hpp"

#include <cctype>
#include <iostream>

#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "parallel_groups.hpp"
#include "qemu_command.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "serial_log.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// "  [3/36] C: PASS", "  [4/36] movable-mlock: SKIP - why": a case the
// guest finished, as the guest's own console says it; after the group's
// label while other guests run beside it.
void print_case_progress(size_t i, size_t total, const json &c, const std::string &label)
{
	std::string verdict = c.value("verdict", "error");
	for (auto &ch : verdict)
		ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
	const std::string reason = c.value("reason", "");
	say_line("  " + label + "[" + std::to_string(i + 1) + "/" + std::to_string(total) + "] " + c.value("id", "?") +
		 ": " + verdict + (reason.empty() ? "" : " - " + reason));
}

} // namespace

json group_doc(const group_spec &g)
{
	return {{"schema", results_schema},
		{"tool", tool_json()},	// the guest's results.json names its own (this build)
		{"kernel", {{"name", g.kernel.name}, {"source", g.kernel.source}}},
		{"boot",
		 {{"placement", g.boot->name},
		  {"append", boot_append(g)},
		  {"memory_mib", guest_memory_mib(g)},
		  {"cpus", g.guest.cpus}}},
		{"cases", json::array()}};
}

json records_not_run(const guest_plan &plan, verdict v, const std::string &reason)
{
	json cases = json::array();
	for (const auto &[owner, c] : plan.entries) {
		case_record r = owner->not_run(c, v, reason);
		r.suite = owner->name();
		cases.push_back(to_json(r));
	}
	return cases;
}

void merge_guest_results(json &doc, const fs::path &guest_dir, std::string &ended)
{
	const fs::path guest_results = guest_dir / "results.json";
	json guest;
	if (fs::exists(guest_results)) {
		try {
			guest = read_json(guest_results);
		} catch (const std::exception &e) {
			ended += std::string(ended.empty() ? "" : "; ") + "guest results unreadable: " + e.what();
		}
	}
	if (guest.is_object() && guest.value("schema", "") == results_schema) {
		for (auto &[key, value] : guest.items())
			if (key != "kernel")
				doc[key] = value;
		doc["kernel"].update(guest.value("kernel", json::object()));
	}
}

// The runner writes results.json as it starts and after each case, in
// plan order: when the guest died, the first case without a record was
// running, and its reason names the console's first kernel bug report.
// (A job that ended without them said why on the console: a results disk
// that filled up, say.)
void add_missing_records(json &doc, const group_spec &g, const guest_plan &plan, const std::string &ended,
			 const std::optional<int> &job_status, const std::string &excerpt)
{
	const std::string alarm = first_console_alarm(g.out / "serial.log");
	const bool guest_died = doc.contains("plan") && !doc.value("complete", false) && !job_status;
	bool first_missing = true;
	for (const auto &[owner, c] : plan.entries) {
		bool reported = false;
		for (const auto &r : doc["cases"])
			reported |= r.value("id", "") == c.id;
		if (reported)
			continue;
		std::string why = ended.empty() ? "unknown" : ended;
		if (const auto line = unwritten_record_line(g.out / "serial.log", c.id); !line.empty())
			why = line;
		case_record r = owner->not_run(c, verdict::error,
					       "no result from the guest: " +
						       (!guest_died ? ""
							: first_missing ? "case " + c.id + " was running when the guest ended: "
									: "not reached: ") +
						       why);
		if (guest_died && first_missing && !alarm.empty())
			r.add_reason("the kernel reported a bug on the console: " + alarm);
		r.suite = owner->name();
		if (guest_died && !first_missing)
			r.details["not_reached"] = true;	// never started (KCIDB's MISS)
		if (first_missing && !excerpt.empty())
			r.details["serial_excerpt"] = excerpt;
		first_missing = false;
		doc["cases"].push_back(to_json(r));
	}
}

void label_cases(json &doc)
{
	for (auto &c : doc["cases"]) {
		c["kernel"] = {{"name", doc["kernel"].value("name", "")},
			       {"release", doc["kernel"].value("release", "")},
			       {"source", doc["kernel"].value("source", "")}};
		c["boot"] = doc["boot"];
	}
}

void summarize_into(json &doc)
{
	const auto summary = summarize_json(doc["cases"]);
	doc["summary"] = summary_json(summary);
	verdict v = summary.overall;
	if (!report::unexplained_kernel_alarms(doc).empty())
		v = worst(v, verdict::fail);
	doc["verdict"] = name(v);
}

std::vector<std::string> note_guest_kernel_log(const fs::path &guest_dir, json &doc)
{
	const fs::path log = guest_dir / "kernel.log";
	if (!fs::exists(log))
		return {};
	auto alarms = kernel_alarms(read_text_file(log.string()));
	doc["kernel_log"] = {{"file", "guest/kernel.log"}, {"alarms", alarms}};
	return alarms;
}

int with_kernel_alarms(int rc, const std::vector<std::string> &alarms)
{
	if (alarms.empty())
		return rc;
	std::cout << "pinmatrix vm: FAIL: the guest kernel reported " << alarms.size()
		  << " bug line(s) (guest/kernel.log), first: " << report::one_line(alarms.front()) << std::endl;
	return rc == 0 || rc == 4 ? 1 : rc;
}

void merge_group(const group_spec &g, group_outcome &outcome, const fs::path &out, json &merged)
{
	json &doc = outcome.doc;
	label_cases(doc);
	summarize_into(doc);
	fs::create_directories(g.out);	// a group refused before its boot has none yet
	write_reports(g.out, doc, {{"results.json", results_json_text(doc)}});
	json group = {{"kernel", doc["kernel"]},
		      {"boot", doc["boot"]},
		      {"dir", fs::relative(g.out, out).string()},
		      {"verdict", doc["verdict"]},
		      {"summary", doc["summary"]},
		      {"wall_s", doc.contains("vm") ? doc["vm"]["wall_s"] : json(0)},
		      {"ended", outcome.ended.empty() ? json(nullptr) : json(outcome.ended)}};
	if (doc.contains("vm") && doc["vm"].contains("serial_excerpt"))
		group["serial_excerpt"] = doc["vm"]["serial_excerpt"];
	if (!outcome.kernel_alarms.empty()) {
		group["kernel_alarms"] = outcome.kernel_alarms;
		for (const auto &a : outcome.kernel_alarms)
			merged["kernel_log"]["alarms"].push_back(group["dir"].get<std::string>() + ": " + a);
	}
	merged["groups"].push_back(group);
	for (const auto &c : doc["cases"])
		merged["cases"].push_back(c);
}

std::function<void()> watch_guest(const json &doc, const fs::path &guest_dir, const group_progress &progress)
{
	if (!progress)
		return {};
	return [&doc, guest_dir, &progress, seen = fs::file_time_type::min()]() mutable {
		std::error_code ec;
		const auto written = fs::last_write_time(guest_dir / "results.json", ec);
		if (ec || written == seen)
			return;
		seen = written;
		json now = doc;
		std::string unread;	// said at the end, if it still is
		merge_guest_results(now, guest_dir, unread);
		label_cases(now);
		progress(now);
	};
}

guest_ktap::guest_ktap(const std::string &format, ktap_plan plan, bool live) : live_(live)
{
	if (streams_ktap(format))
		console_.emplace(std::move(plan));
}

group_progress guest_ktap::progress(size_t total, const std::string &label)
{
	return [this, total, label, shown = size_t(0)](const json &doc) mutable {
		const auto &cases = doc["cases"];
		for (; shown < cases.size(); shown++)
			print_case_progress(shown, total, cases[shown], label);
		if (console_ && live_)
			streamed_ += console_->stream().records(doc, streamed_);
	};
}

void guest_ktap::header(const json &doc)
{
	if (console_)
		console_->stream().header(doc);
}

void guest_ktap::rest_of(const json &doc)
{
	if (console_)
		console_->stream().records(doc, streamed_);
	streamed_ = 0;
}

void guest_ktap::end_group(const json &entry)
{
	if (console_)
		console_->stream().end_group(&entry);
}

void guest_ktap::end(const json &doc)
{
	if (console_)
		console_->stream().end(doc);
}

} // namespace pinmatrix
