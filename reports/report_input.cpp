// SPDX-License-Identifier: GPL-2.0
#include "report_input.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <span>
#include <set>
#include <sstream>
#include <tuple>

#include "kernel_version.hpp"
#include "results.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix::report {

namespace fs = std::filesystem;

namespace {

std::vector<std::string> strings_of(const json &doc, const char *key)
{
	std::vector<std::string> out;
	if (doc.is_object() && doc.contains(key) && doc[key].is_array())
		for (const auto &s : doc[key])
			if (s.is_string())
				out.push_back(s.get<std::string>());
	return out;
}

} // namespace

std::vector<std::string> unexplained_kernel_alarms(const json &doc)
{
	if (!doc.is_object() || !doc.contains("kernel_log") || !doc.contains("cases") || !doc["cases"].is_array())
		return {};
	std::vector<std::string> expected;
	for (const auto &c : doc["cases"])
		if (c.is_object() && c.contains("verdict") && c["verdict"] == name(verdict::xfail))
			for (auto &line : strings_of(c, "kernel_alarms"))
				if (!trimmed(line).empty())
					expected.push_back(trimmed(line));
	std::vector<std::string> left;
	for (const auto &line : strings_of(doc["kernel_log"], "alarms"))
		if (std::none_of(expected.begin(), expected.end(),
				 [&](const std::string &e) { return line.find(e) != std::string::npos; }))
			left.push_back(line);
	return left;
}

results_file load_results(const fs::path &dir_or_file)
{
	std::error_code ec;
	const auto status = fs::status(dir_or_file, ec);
	if (ec || !fs::exists(status))
		throw usage_error(dir_or_file.string() + ": no such directory or file");
	results_file r;
	r.path = fs::is_directory(status) ? dir_or_file / "results.json" : dir_or_file;
	if (!fs::is_regular_file(r.path, ec))
		throw usage_error(dir_or_file.string() + ": no results.json in this directory");
	r.doc = read_json(r.path);
	check_schema(r.doc, r.path.string());
	return r;
}

std::string kernel_config::name_and_release() const
{
	if (name.empty())
		return release;
	return name.find(release) != std::string::npos ? name : name + " " + release;
}

std::string kernel_config::label() const
{
	std::string out = name_and_release();
	if (!boot.empty())
		out += " (" + boot + ")";
	else if (!append.empty())
		out += " " + append;
	return out;
}

std::string case_title(std::string_view id, std::string_view name)
{
	return std::string(id) + (name.empty() || name == id ? "" : " (" + std::string(name) + ")");
}

std::string case_view::title() const
{
	return case_title(id, name);
}

const json *member(const json &j, std::string_view key)
{
	if (!j.is_object())
		return nullptr;
	auto it = j.find(key);
	return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string as_text(const json &j)
{
	if (j.is_string())
		return j.get<std::string>();
	if (j.is_null())
		return "-";
	return j.dump();
}

namespace {

// Appends j as dump(2) writes it, and stops once out holds max bytes.
void echo_into(std::string &out, const json &j, size_t indent, size_t max)
{
	if (out.size() > max)
		return;
	if (!j.is_structured() || j.empty()) {
		const bool long_string = j.is_string() && j.get_ref<const std::string &>().size() > max;
		out += (long_string ? json(j.get_ref<const std::string &>().substr(0, max)) : j)
			       .dump(-1, ' ', false, json::error_handler_t::replace);
		return;
	}
	out += j.is_array() ? '[' : '{';
	const char *separator = "\n";
	for (auto it = j.begin(); it != j.end() && out.size() <= max; ++it) {
		out += separator;
		separator = ",\n";
		out.append(indent + 2, ' ');
		if (j.is_object())
			out += json(it.key()).dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
		echo_into(out, *it, indent + 2, max);
	}
	out += '\n';
	out.append(indent, ' ');
	out += j.is_array() ? ']' : '}';
}

} // namespace

std::string echo_json(const json &j, size_t max_bytes)
{
	std::string out;
	if (j.is_string())
		out = j.get_ref<const std::string &>().substr(0, max_bytes + 1);
	else
		echo_into(out, j, 0, max_bytes);
	if (out.size() <= max_bytes)
		return out;
	size_t cut = max_bytes;
	while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
		cut--;	// not inside a UTF-8 sequence
	out.resize(cut);
	return out + "\n\u2026 (cut at " + std::to_string(max_bytes) + " bytes; the rest is in results.json)";
}

std::string text_at(const json &j, std::string_view key, std::string fallback)
{
	const json *v = member(j, key);
	if (!v)
		return fallback;
	std::string s = as_text(*v);
	return s.empty() ? fallback : s;
}

std::optional<double> number_at(const json &j, std::string_view key)
{
	const json *v = member(j, key);
	if (!v || !v->is_number())
		return std::nullopt;
	return v->get<double>();
}

namespace {

// The kernel a record ran on and how it was booted: its own (a merged
// matrix run), else the run's.
kernel_config kernel_of(const json &doc, const json &record)
{
	kernel_config k;
	for (const json *kernel : {member(record, "kernel"), member(doc, "kernel")}) {
		if (!kernel)
			continue;
		if (kernel->is_string()) {
			k.release = kernel->get<std::string>();
		} else {
			k.release = text_at(*kernel, "release");
			k.name = text_at(*kernel, "name");
		}
		if (!k.release.empty() || !k.name.empty())
			break;
	}
	if (k.release.empty())
		k.release = "unknown kernel";
	for (const json *boot : {member(record, "boot"), member(doc, "boot")}) {
		if (!boot)
			continue;
		k.boot = text_at(*boot, "placement");
		k.append = text_at(*boot, "append");
		break;
	}
	if (k.append.empty()) {
		if (const json *append = member(record, "append"))
			k.append = as_text(*append);
		else if (const json *vm = member(doc, "vm"))
			k.append = text_at(*vm, "append");
	}
	return k;
}

std::vector<double> latency_samples(const json &record)
{
	std::vector<double> out;
	// A suite that repeats its registration may record every sample.
	for (const json *where : {&record, member(record, "observed")}) {
		const json *samples = where ? member(*where, "latency_samples_ns") : nullptr;
		if (samples && samples->is_array()) {
			for (const auto &s : *samples)
				if (s.is_number() && s.get<double>() >= 0)
					out.push_back(s.get<double>());
			return out;
		}
	}
	if (auto one = number_at(record, "latency_ns"); one && *one >= 0)
		out.push_back(*one);
	return out;
}

std::string summary_of(const json &record, std::string_view key)
{
	const json *part = member(record, key);
	if (!part)
		return "-";
	if (part->is_string())
		return part->get<std::string>();
	return text_at(*part, "summary", "-");
}

std::string suite_of(const json &record, const std::string &id, const std::string &placement)
{
	const size_t slash = id.find('/');
	if (slash != std::string::npos && slash > 0)
		return text_at(record, "suite", id.substr(0, slash));
	return text_at(record, "suite", placement.empty() ? "other" : "pin");
}

std::string html_id(std::string_view s)
{
	std::string out;
	for (char ch : s)
		out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
	return out;
}

} // namespace

namespace {

// A value in a message: short, on one line.
std::string quoted(const json &j)
{
	std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
	return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

bool is_number_array(const json &j)
{
	return j.is_array() && std::all_of(j.begin(), j.end(), [](const json &x) { return x.is_number(); });
}

// What the reports read of a record, by the type they read it as. Null
// stands for absent.
struct field_rule {
	const char *key;
	bool (*fits)(const json &);
	const char *expected;
};
const field_rule field_rules[] = {
	{"name", [](const json &j) { return j.is_string(); }, "a string"},
	{"suite", [](const json &j) { return j.is_string(); }, "a string"},
	{"placement", [](const json &j) { return j.is_string(); }, "a string"},
	{"reason", [](const json &j) { return j.is_string(); }, "a string"},
	{"first_pin", [](const json &j) { return j.is_string(); }, "a string"},
	{"first_pin_label", [](const json &j) { return j.is_string(); }, "a string"},
	{"second_pin", [](const json &j) { return j.is_string(); }, "a string"},
	{"latency_ns", [](const json &j) { return j.is_number(); }, "a number"},
	{"duration_ns", [](const json &j) { return j.is_number(); }, "a number"},
	{"latency_samples_ns", is_number_array, "an array of numbers"},
	{"expected", [](const json &j) { return j.is_object() || j.is_string(); }, "an object or a string"},
	{"observed", [](const json &j) { return j.is_object() || j.is_string(); }, "an object or a string"},
	{"kernel", [](const json &j) { return j.is_object() || j.is_string(); }, "an object or a string"},
	{"boot", [](const json &j) { return j.is_object(); }, "an object"},
	{"vm", [](const json &j) { return j.is_object(); }, "an object"},
	{"stuck_task", [](const json &j) { return j.is_object(); }, "an object"},
	{"started_at", [](const json &j) { return j.is_string(); }, "a string"},
	{"not_reached", [](const json &j) { return j.is_boolean(); }, "true or false"},
};

// Why a record is not a case the reports can count; empty when it is one.
std::string record_problem(const json &r)
{
	const auto verdict = r.find("verdict");
	if (verdict == r.end())
		return "no verdict (pass, fail, xfail, xpass, skip or error)";
	if (!verdict->is_string() || !is_verdict_name(verdict->get<std::string>()))
		return "verdict " + quoted(*verdict) + " is not pass, fail, xfail, xpass, skip or error";
	// An expected failure or unexpected pass names the known bug it is about.
	if (*verdict == "xfail" || *verdict == "xpass") {
		const json *bug = member(r, "known_bug");
		const json *id = bug && bug->is_object() ? member(*bug, "id") : nullptr;
		if (!id || !id->is_string())
			return "verdict " + verdict->get<std::string>() + " without a known_bug object naming its id";
	}
	for (const auto &rule : field_rules)
		if (const json *v = member(r, rule.key); v && !rule.fits(*v))
			return std::string(rule.key) + " is not " + rule.expected;
	if (const json *obs = member(r, "observed"))
		if (const json *v = member(*obs, "latency_samples_ns"); v && !is_number_array(*v))
			return "observed latency_samples_ns is not an array of numbers";
	if (const json *stuck = member(r, "stuck_task"))
		if (const json *v = member(*stuck, "timeout_s"); v && !(v->is_number_integer() && *v > 0))
			return "stuck_task timeout_s is not a whole number of seconds";
	return "";
}

// "case 3 (B)": the record's number in the document (from 1) and its id.
std::string case_name(size_t i, const json &r)
{
	const json *id = member(r, "id");
	return "case " + std::to_string(i + 1) +
	       (id && id->is_string() && !id->get_ref<const std::string &>().empty()
			? " (" + one_line(id->get<std::string>()) + ")"
			: "");
}

// A case is its suite, placement and id on one kernel and boot of one node
// (a fleet's merged results name it): once a run.
using case_identity = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string,
				 std::string, std::string>;

case_identity identity_of(const json &doc, const json &r)
{
	const std::string id = text_at(r, "id"), placement = text_at(r, "placement");
	const kernel_config k = kernel_of(doc, r);
	return {suite_of(r, id, placement), placement, id, k.name, k.release, k.boot, k.append, text_at(r, "node", "")};
}

void check_record(const json &r, size_t i, const std::string &where)
{
	if (!r.is_object())
		throw usage_error(where + ": " + case_name(i, r) + ": not an object");
	const json *id = member(r, "id");
	if (!id)
		throw usage_error(where + ": " + case_name(i, r) + ": no id");
	if (!id->is_string())
		throw usage_error(where + ": " + case_name(i, r) + ": id is not a string");
	if (id->get_ref<const std::string &>().empty())
		throw usage_error(where + ": " + case_name(i, r) + ": id is empty");
	if (const std::string problem = record_problem(r); !problem.empty())
		throw usage_error(where + ": " + case_name(i, r) + ": " + problem);
}

} // namespace

void check_schema(const json &doc, const std::string &where)
{
	if (!doc.is_object())
		throw usage_error(where + ": not a pinmatrix results document (expected a JSON object)");
	const json *schema = member(doc, "schema");
	if (!schema)
		throw usage_error(where + ": no \"schema\" field; expected schema " +
				  std::string(results_schema));
	if (!schema->is_string() || schema->get<std::string>() != results_schema)
		throw usage_error(where + ": schema is " + quoted(*schema) + ", expected \"" +
				  std::string(results_schema) + "\"");
	const json *cases = member(doc, "cases");
	if (!cases || !cases->is_array())
		throw usage_error(where + ": no \"cases\" array");
	std::map<case_identity, size_t> seen;
	for (size_t i = 0; i < cases->size(); i++) {
		const json &r = (*cases)[i];
		check_record(r, i, where);
		const auto [first, fresh] = seen.emplace(identity_of(doc, r), i);
		if (!fresh)
			throw usage_error(where + ": " + case_name(i, r) + ": the same case as case " +
					  std::to_string(first->second + 1) +
					  " (suite, placement, id, kernel and boot): one record per case");
	}
}

run_view view_run(const json &doc)
{
	run_view run;
	run.doc = &doc;
	const json *cases = member(doc, "cases");
	if (!cases || !cases->is_array())
		return run;
	std::set<std::string> anchors;
	std::map<std::tuple<std::string, std::string, std::string, std::string>, size_t> kernel_index;
	for (const auto &record : *cases) {
		case_view c;
		c.record = &record;
		c.id = text_at(record, "id", "case-" + std::to_string(run.cases.size() + 1));
		c.name = text_at(record, "name", c.id);
		c.placement = text_at(record, "placement");
		c.suite = suite_of(record, c.id, c.placement);
		c.result = verdict_of(text_at(record, "verdict", "error"));
		c.reason = text_at(record, "reason");
		c.kernel = kernel_of(doc, record);
		c.first_pin = text_at(record, "first_pin_label", text_at(record, "first_pin"));
		c.second_pin = text_at(record, "second_pin");
		c.expected = summary_of(record, "expected");
		c.observed = summary_of(record, "observed");
		c.latency_ns = latency_samples(record);
		c.duration_ns = number_at(record, "duration_ns");

		const auto [k, fresh] = kernel_index.emplace(
			std::tuple{c.kernel.name, c.kernel.release, c.kernel.boot, c.kernel.append}, run.kernels.size());
		c.kernel_index = k->second;
		if (fresh)
			run.kernels.push_back(c.kernel);

		std::string anchor = "case-" + html_id(c.id);
		if (!anchors.insert(anchor).second) {
			anchor += "-k" + std::to_string(c.kernel_index + 1);
			for (int n = 2; !anchors.insert(anchor).second; n++)
				anchor = "case-" + html_id(c.id) + "-" + std::to_string(n);
		}
		c.anchor = anchor;

		switch (c.result) {
		case verdict::pass: run.pass++; break;
		case verdict::fail: run.fail++; break;
		case verdict::xfail: run.xfail++; break;
		case verdict::xpass: run.xpass++; break;
		case verdict::skip: run.skip++; break;
		case verdict::error: run.error++; break;
		}
		run.overall = worst(run.overall, c.result);
		run.cases.push_back(std::move(c));
	}
	// A run that never reported its cases is not a pass.
	if (run.cases.empty() && incomplete(doc))
		run.overall = verdict::error;
	return run;
}

std::string tool_view::text() const
{
	if (version == "unknown")
		return name + " (version unknown, commit " + commit + ")";
	return name + " " + version + " (commit " + commit + ")";
}

tool_view tool_of(const json &doc)
{
	tool_view t;
	if (const json *tool = member(doc, "tool")) {
		t.name = text_at(*tool, "name", t.name);
		t.version = text_at(*tool, "version", t.version);
		t.commit = text_at(*tool, "commit", t.commit);
	}
	return t;
}

kernel_version_view kernel_version_of(const json &doc, const kernel_config &k)
{
	const json *group = group_entry(doc, k);
	const json *kernel = member(group ? *group : doc, "kernel");
	kernel_version_view v;
	v.build = kernel ? text_at(*kernel, "version") : "";
	if (auto upstream = upstream_version(k.release, v.build))
		v.upstream = upstream->text();
	return v;
}

std::vector<kernel_with_version> kernels_with_versions(const run_view &run)
{
	std::vector<kernel_with_version> out;
	std::map<std::string, size_t> index;
	for (const auto &k : run.kernels) {
		const auto [it, fresh] = index.emplace(k.name_and_release(), out.size());
		if (fresh)
			out.push_back({it->first, {}});
		kernel_version_view &v = out[it->second].version;
		if (v.upstream == "unknown" && v.build.empty())
			v = kernel_version_of(*run.doc, k);
	}
	return out;
}

bool incomplete(const json &doc)
{
	const json *complete = member(doc, "complete");
	return complete && complete->is_boolean() && !complete->get<bool>();
}

namespace {

// A serial log carries terminal escape sequences ("ESC[0m"): none belong in
// a report.
std::string without_escapes(std::string_view s)
{
	std::string out;
	for (size_t i = 0; i < s.size(); i++) {
		if (s[i] == '\x1b') {
			if (i + 1 < s.size() && s[i + 1] == '[') {
				i += 2;	// CSI: parameters, then one final byte in @..~
				while (i < s.size() && !(s[i] >= '@' && s[i] <= '~'))
					i++;
			}
			continue;
		}
		if (s[i] == '\r')
			continue;
		out += s[i];
	}
	return out;
}

// The serial log excerpt of a guest's entry (a run's "vm", a merged run's
// group, which may hold its own "vm").
std::string guest_serial(const json &entry)
{
	std::string serial = text_at(entry, "serial_excerpt");
	if (const json *vm = member(entry, "vm"); vm && serial.empty())
		serial = text_at(*vm, "serial_excerpt");
	return without_escapes(serial);
}

} // namespace

std::optional<guest_ending> ending_of(const json &entry, const std::string &guest)
{
	const std::string ended = text_at(entry, "ended");
	if (ended.empty())
		return std::nullopt;
	return guest_ending{guest, ended, guest_serial(entry)};
}

std::vector<guest_ending> guest_endings(const json &doc)
{
	std::vector<guest_ending> out;
	if (const json *vm = member(doc, "vm"))
		if (auto ending = ending_of(*vm, "guest"))
			out.push_back(*ending);
	if (const json *groups = member(doc, "groups"); groups && groups->is_array())
		for (const auto &g : *groups)
			if (auto ending = ending_of(g, kernel_of(g, g).label()))
				out.push_back(*ending);
	return out;
}

std::vector<const case_view *> run_view::worst_first() const
{
	std::vector<const case_view *> out;
	for (const auto &c : cases)
		out.push_back(&c);
	auto rank = [](verdict o) {
		switch (o) {
		case verdict::fail: return 0;
		case verdict::error: return 1;
		case verdict::xpass: return 2;
		case verdict::xfail: return 3;
		case verdict::skip: return 4;
		case verdict::pass: break;
		}
		return 5;
	};
	std::stable_sort(out.begin(), out.end(),
			 [&](const case_view *a, const case_view *b) { return rank(a->result) < rank(b->result); });
	return out;
}

std::vector<std::pair<std::string, std::vector<std::string>>> run_view::skip_reasons() const
{
	std::vector<std::pair<std::string, std::vector<std::string>>> reasons;
	std::map<std::string_view, size_t> index;
	for (const auto &c : cases) {
		if (c.result != verdict::skip)
			continue;
		const auto [it, fresh] = index.emplace(c.reason, reasons.size());
		if (fresh)
			reasons.push_back({c.reason, {}});
		reasons[it->second].second.push_back(c.id);
	}
	return reasons;
}

std::vector<known_bug_met> known_bugs_met(const run_view &run)
{
	std::vector<known_bug_met> bugs;
	std::map<std::string, size_t> index;
	for (const auto &c : run.cases) {
		if (c.result != verdict::xfail && c.result != verdict::xpass)
			continue;
		const json *bug = member(*c.record, "known_bug");
		if (!bug || !bug->is_object())
			continue;
		const auto [it, fresh] = index.emplace(text_at(*bug, "id", "?"), bugs.size());
		if (fresh)
			bugs.push_back({it->first, text_at(*bug, "title", "-"), text_at(*bug, "where", "-"),
					text_at(*bug, "fix_note", "-"), text_at(*bug, "kernels", "-")});
		(c.result == verdict::xfail ? bugs[it->second].xfail : bugs[it->second].xpass).push_back(&c);
	}
	return bugs;
}

kernel_config group_kernel(const json &entry)
{
	return kernel_of(entry, entry);
}

const json *group_entry(const json &doc, const kernel_config &k)
{
	if (const json *groups = member(doc, "groups"); groups && groups->is_array())
		for (const auto &g : *groups)
			if (group_kernel(g) == k)
				return &g;
	return nullptr;
}

std::string own_serial_excerpt(const case_view &c)
{
	return guest_serial(*c.record);
}

std::optional<long long> timed_out_after_s(const case_view &c)
{
	const json *stuck = member(*c.record, "stuck_task");
	if (!stuck)
		return std::nullopt;
	if (auto s = number_at(*stuck, "timeout_s"))
		return static_cast<long long>(*s);
	// Records written before stuck_task named its timeout: the reason does.
	static const std::regex within("did not finish within ([0-9]+) s");
	if (std::smatch m; std::regex_search(c.reason, m, within))
		return std::stoll(m[1]);
	return std::nullopt;
}

case_serial serial_excerpt_for(const run_view &run, const case_view &c)
{
	if (c.result != verdict::error)
		return {};
	if (auto own = own_serial_excerpt(c); !own.empty())
		return {own, ""};
	// A merged run keeps one entry per guest in "groups": the excerpt of the
	// guest that ran this kernel and boot.
	if (const json *g = group_entry(*run.doc, c.kernel)) {
		const std::string serial = guest_serial(*g);
		return {serial, serial.empty() ? "" : c.kernel.label()};
	}
	if (run.several_kernels())
		return {};
	if (const json *vm = member(*run.doc, "vm"))
		if (auto serial = text_at(*vm, "serial_excerpt"); !serial.empty())
			return {without_escapes(serial), "guest"};
	return {};
}

namespace {

std::string yes_no(const json &j)
{
	return j.is_boolean() ? (j.get<bool>() ? "yes" : "no") : as_text(j);
}

std::string pfn_text(const json &j)
{
	return j.is_number_unsigned() || j.is_number_integer() ? hex(j.get<uint64_t>()) : as_text(j);
}

std::string page_text(const json &page)
{
	std::vector<std::string> parts;
	auto add = [&](std::string s) { parts.push_back(std::move(s)); };
	if (const json *pfn = member(page, "pfn"))
		add("pfn " + pfn_text(*pfn));
	if (auto zone = text_at(page, "zone"); !zone.empty())
		add("zone " + zone);
	if (auto mt = text_at(page, "migratetype"); !mt.empty())
		add(mt + " pageblock");
	if (const json *dma = member(page, "maybe_dma_pinned"); dma && dma->is_boolean() && dma->get<bool>())
		add("DMA-pinned");
	if (const json *rc = member(page, "refcount"))
		add("refcount " + as_text(*rc));
	return parts.empty() ? page.dump() : join(parts, ", ");
}

} // namespace

namespace {

// The steps of observed.page (the pin suite), then those of observed
// itself (backing, pinner): key, label.
constexpr std::pair<const char *, const char *> page_keys[] = {
	{"before", "before"}, {"after_first_pin", "after first pin"},
	{"after_registration", "after registration"}, {"after_release", "after release"}};
constexpr std::pair<const char *, const char *> observed_step_keys[] = {
	{"before", "before"}, {"after", "after"}, {"after_give_back", "after give-back"}};

// Whether observed[key] is a step page_steps() shows (no longer an extra field).
bool is_observed_step(const json &obs, const std::string &key)
{
	if (member(obs, "page"))
		return false;
	for (const auto &[k, label] : observed_step_keys)
		if (key == k) {
			const json *v = member(obs, key);
			return v && v->is_object();
		}
	return false;
}

} // namespace

std::vector<page_step> page_steps(const case_view &c)
{
	std::vector<page_step> out;
	const json *observed = member(*c.record, "observed");
	if (!observed)
		return out;
	const json *pages = member(*observed, "page");
	using keys = std::span<const std::pair<const char *, const char *>>;
	for (const auto &[key, label] : pages ? keys(page_keys) : keys(observed_step_keys))
		if (const json *p = member(pages ? *pages : *observed, key); p && p->is_object())
			out.push_back({label, p});
	return out;
}

namespace {

give_back_row give_back_row_of(std::string when, const json &a)
{
	const json *given = member(a, "given_back");
	const auto ns = number_at(a, "latency_ns");
	return {std::move(when), given && given->is_boolean() ? (given->get<bool>() ? "yes" : "no") : "unknown",
		text_at(a, "method"), text_at(a, "detail"), ns ? format_ns(*ns) : ""};
}

} // namespace

std::vector<give_back_row> give_back_rows(const case_view &c)
{
	// In the order they are made: the pin suite's three attempts, the
	// pinner suite's two; a key of neither after them, by its name.
	static constexpr std::pair<const char *, const char *> when[] = {
		{"with_pins_held", "pins held"}, {"with_pin_held", "pin held"},
		{"first_pin_released", "first pin released"}, {"released", "pin released (control)"},
		{"all_released", "every pin released (control)"}};
	std::vector<give_back_row> out;
	const json *obs = member(*c.record, "observed");
	const json *g = obs ? member(*obs, "give_back") : nullptr;
	if (!g || !g->is_object())
		return out;
	std::set<std::string> known;
	for (const auto &[key, label] : when) {
		known.insert(key);
		if (const json *a = member(*g, key); a && a->is_object())
			out.push_back(give_back_row_of(label, *a));
	}
	for (const auto &[key, a] : g->items())
		if (!known.count(key) && a.is_object())
			out.push_back(give_back_row_of(key, a));
	return out;
}

namespace {

// "memory given back, pins held": "no: offline memory block 5 (...): ...".
std::vector<fact> give_back_facts(const case_view &c)
{
	std::vector<fact> out;
	for (const auto &r : give_back_rows(c))
		out.push_back({"memory given back, " + r.when, r.given_back + ": " + r.method + ": " + r.detail});
	return out;
}

} // namespace

std::vector<fact> evidence_facts(const case_view &c)
{
	std::vector<fact> out;
	auto add = [&](std::string label, std::string value) {
		if (!value.empty() && value != "-")
			out.push_back({std::move(label), std::move(value)});
	};
	add("placement", c.placement);
	add("first pin", c.first_pin);
	add("second pin", c.second_pin);
	add("kernel", c.kernel.label());
	add("expected", c.expected);
	add("observed", c.observed);
	add("reason", c.reason);
	const json none = json::object();
	const json &obs = member(*c.record, "observed") ? (*c.record)["observed"] : none;
	add("errno", text_at(obs, "errno_name", text_at(obs, "errno")));
	if (auto e = number_at(obs, "first_pin_errno"); e && *e != 0)
		add("first pin errno", text_at(obs, "first_pin_errno"));
	if (const json *before = member(obs, "pfn_before")) {
		std::string moved;
		if (const json *m = member(obs, "migrated_by_first_pin"); m && m->is_boolean() && m->get<bool>())
			moved = " (moved by the first pin)";
		else if (const json *r = member(obs, "migrated_by_registration"); r && r->is_boolean() && r->get<bool>())
			moved = " (moved by the registration)";
		else if (const json *any = member(obs, "migrated"); any && any->is_boolean())
			moved = any->get<bool>() ? " (moved)" : " (not moved)";
		const json *after = member(obs, "pfn_after");
		add("PFN", pfn_text(*before) + " -> " + (after ? pfn_text(*after) : "?") + moved);
	}
	for (const auto &step : page_steps(c))
		add("page " + step.step, page_text(*step.page));
	if (const json *rdma = member(obs, "rdma_write_readback"))
		add("RDMA write read back", yes_no(*rdma) + (member(obs, "rdma_detail") ? ": " + text_at(obs, "rdma_detail") : ""));
	else
		add("RDMA", text_at(obs, "rdma_detail"));
	if (const json *intact = member(obs, "content_intact"))
		add("page content intact", yes_no(*intact));
	if (const json *rec = member(obs, "recovery")) {
		std::string text = "registration after releasing the first pin: errno " + text_at(*rec, "errno", "?");
		if (auto ns = number_at(*rec, "latency_ns"))
			text += ", " + format_ns(*ns);
		if (const json *pfn = member(*rec, "pfn_after"))
			text += ", page then at " + pfn_text(*pfn);
		add("recovery", text);
	}
	for (auto &f : give_back_facts(c))
		add(std::move(f.label), std::move(f.value));
	if (auto s = stats_of(c.latency_ns))
		add("registration latency", s->n == 1 ? format_ns(s->median) : describe(*s));
	add("started at", text_at(*c.record, "started_at"));
	if (c.duration_ns)
		add("case duration", format_ns(*c.duration_ns));
	add("time by step", case_steps_text(c, SIZE_MAX));
	return out;
}

std::string case_steps_text(const case_view &c, size_t most)
{
	const json *obs = c.record ? member(*c.record, "observed") : nullptr;
	const json *steps_json = obs ? member(*obs, "time_ms") : nullptr;
	return steps_json ? steps_text(step_times_from_json(*steps_json), most) : "";
}

std::string steps_text(step_times steps, size_t most)
{
	std::stable_sort(steps.begin(), steps.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
	std::string out;
	for (size_t i = 0; i < steps.size() && i < most; i++)
		out += (out.empty() ? "" : ", ") + one_line(steps[i].first) + " " + format_ns(steps[i].second * 1e6);
	return out;
}

std::vector<extra_field> extra_fields(const case_view &c)
{
	static const std::set<std::string> known_record = {
		"id", "name", "suite", "verdict", "reason", "expected", "observed", "latency_ns",
		"latency_samples_ns", "duration_ns", "placement", "first_pin", "first_pin_label",
		"second_pin", "kernel", "boot", "append", "vm", "serial_excerpt", "started_at",
		"not_reached"};	// its reason says so
	static const std::set<std::string> known_observed = {
		"errno", "errno_name", "migrated", "migrated_by_first_pin", "migrated_by_registration",
		"pfn_before", "pfn_after", "first_pin_errno", "first_pin_pfns", "latency_ns",
		"latency_samples_ns", "scanned_bytes", "summary", "page", "rdma_write_readback",
		"rdma_detail", "content_intact", "recovery", "registrations", "kernel_trace", "give_back",
		"time_ms"};
	std::vector<extra_field> out;
	if (!c.record->is_object())
		return out;
	for (const auto &[key, value] : c.record->items())
		if (!known_record.count(key) && !value.is_null())
			out.push_back({key, &value});
	if (const json *obs = member(*c.record, "observed"); obs && obs->is_object())
		for (const auto &[key, value] : obs->items())
			if (!known_observed.count(key) && !value.is_null() && !is_observed_step(*obs, key))
				out.push_back({"observed " + key, &value});
	return out;
}

namespace {

// Its classification and its reconstructed kernel path.
void read_diagnosis(registration_view &v, const json &r)
{
	if (const json *cls = member(r, "classification")) {
		v.classification = text_at(*cls, "class");
		v.rule = text_at(*cls, "rule");
		if (const json *f = member(*cls, "facts"); f && f->is_array())
			for (const auto &x : *f)
				v.facts.push_back(as_text(x));
	}
	v.failure_stage = text_at(r, "failure_stage");
	const json *t = member(r, "trace");
	if (!t)
		return;
	v.path_one_line = text_at(*t, "one_line");
	v.from_trace = t->value("from_trace", false);
	if (const json *steps = member(*t, "steps"); steps && steps->is_array())
		for (const auto &st : *steps) {
			const int depth = int(number_at(st, "depth").value_or(0));
			v.path_lines.push_back(std::string(size_t(std::max(0, depth)) * 2, ' ') + text_at(st, "text"));
			v.path_sources.push_back(text_at(st, "source"));
		}
	if (const json *n = member(*t, "notes"); n && n->is_array())
		for (const auto &x : *n)
			v.trace_notes.push_back(as_text(x));
	if (const json *ev = member(*t, "events"); ev && ev->is_array())
		for (const auto &x : *ev)
			v.events.push_back(as_text(x));
}

std::string memlock_line(const json &m)
{
	return "RLIMIT_MEMLOCK " + text_at(m, "limit_bytes", "?") + " (hard " + text_at(m, "hard_limit_bytes", "?") +
	       "), VmPin " + text_at(m, "vm_pin_kb_before", "?") + " kB before, " + text_at(m, "vm_pin_kb_after", "?") +
	       " kB after, VmLck " + text_at(m, "vm_lck_kb", "?") + " kB, CAP_IPC_LOCK " +
	       (m.value("cap_ipc_lock", false) ? "yes" : "no");
}

// "pfn 0x1234 -> 0x5678, zone Movable, pageblock movable, ..." for one page.
std::string page_line(const json &pg)
{
	std::string one = "pfn " + pfn_text(pg.value("pfn", json(0)));
	if (const json *after = member(pg, "pfn_after"); after && *after != pg.value("pfn", json(0)))
		one += " -> " + pfn_text(*after);
	one += ", zone " + text_at(pg, "zone", "?") + ", pageblock " + text_at(pg, "migratetype", "?");
	if (const json *lp = member(pg, "longterm_pinnable"); lp && lp->is_boolean())
		one += lp->get<bool>() ? ", long-term pinnable" : ", NOT long-term pinnable";
	else if (lp && lp->is_null())
		one += ", long-term pinnable unknown";
	if (pg.value("maybe_dma_pinned", false))
		one += ", maybe_dma_pinned";
	if (const json *pins = member(pg, "module_pins"); pins && pins->is_array() && !pins->empty()) {
		one += ", module holds";
		for (const auto &p : *pins)
			one += " " + as_text(p);
	}
	return one;
}

// The pages, cut after 400 characters.
std::string pages_line(const json &pages)
{
	std::string t;
	for (const auto &pg : pages) {
		if (t.size() > 400) {
			t += "; ...";
			break;
		}
		t += (t.empty() ? "" : "; ") + page_line(pg);
	}
	return t;
}

// The telemetry rows people read: label, value (empty or "-" left out).
void read_telemetry(registration_view &v, const json &r)
{
	auto add = [&](std::string label, std::string value) {
		if (!value.empty() && value != "-")
			v.telemetry.push_back({std::move(label), std::move(value)});
	};
	std::string range;
	if (auto a = number_at(r, "address"))
		range = hex(uint64_t(*a));
	if (auto n = number_at(r, "length"))
		range += (range.empty() ? "" : ", ") + std::to_string(uint64_t(*n)) + " bytes";
	add("address, length", range);
	add("allocation class", text_at(r, "allocation_class"));
	add("mapping", text_at(r, "mapping"));
	add("API", text_at(r, "api") + (text_at(r, "device").empty() ? "" : " on " + text_at(r, "device")));
	add("access", text_at(r, "access_flags"));
	if (const json *lt = member(r, "foll_longterm_requested"))
		add("FOLL_LONGTERM requested", std::string(lt->is_boolean() && lt->get<bool>() ? "yes" : "no") +
						       (text_at(r, "foll_longterm_how").empty() ? "" : " (" + text_at(r, "foll_longterm_how") + ")"));
	add("errno", v.errno_name);
	add("failure stage", v.failure_stage);
	if (const json *m = member(r, "memlock"))
		add("memlock", memlock_line(*m));
	if (const json *pages = member(r, "pages"); pages && pages->is_array())
		v.pages = pages_line(*pages);
	add("pages (" + text_at(r, "pages_source", "?") + ")", v.pages);
	if (auto ns = number_at(r, "latency_ns"))
		v.latency = format_ns(*ns);
	add("latency", v.latency);
}

} // namespace

std::vector<registration_view> registrations_of(const case_view &c)
{
	std::vector<registration_view> out;
	const json *obs = member(*c.record, "observed");
	const json *regs = obs ? member(*obs, "registrations") : nullptr;
	if (!regs || !regs->is_array())
		return out;
	for (const auto &r : *regs) {
		if (!r.is_object())
			continue;
		registration_view v;
		v.record = &r;
		v.title = "#" + text_at(r, "seq", "?") + " " + text_at(r, "role", "registration") + ": " +
			  text_at(r, "api", "?");
		v.err = int(number_at(r, "errno").value_or(0));
		v.errno_name = text_at(r, "errno_name", v.err ? "errno " + std::to_string(v.err) : "ok");
		read_diagnosis(v, r);
		read_telemetry(v, r);
		out.push_back(std::move(v));
	}
	return out;
}

std::optional<first_pin_path> first_pin_path_of(const case_view &c)
{
	const json *obs = member(*c.record, "observed");
	const json *kt = obs ? member(*obs, "kernel_trace") : nullptr;
	const json *p = kt ? member(*kt, "first_pin_path") : nullptr;
	if (!p || !p->is_object())
		return std::nullopt;
	first_pin_path out;
	out.one_line = text_at(*p, "one_line");
	if (const json *lines = member(*p, "lines"); lines && lines->is_array())
		for (const auto &l : *lines)
			out.lines.push_back(as_text(l));
	return out;
}

const registration_view *main_registration(const std::vector<registration_view> &regs)
{
	for (const auto &r : regs)
		if (r.err)
			return &r;
	return regs.empty() ? nullptr : &regs.front();
}

std::string format_ns(double ns, bool ascii)
{
	char buf[64];
	const char *micro = ascii ? "us" : "\u00b5s";
	if (ns < 1e3)
		std::snprintf(buf, sizeof(buf), "%.0f ns", ns);
	else if (ns < 1e4)
		std::snprintf(buf, sizeof(buf), "%.2f %s", ns / 1e3, micro);
	else if (ns < 1e6)
		std::snprintf(buf, sizeof(buf), "%.0f %s", ns / 1e3, micro);
	else if (ns < 1e7)
		std::snprintf(buf, sizeof(buf), "%.2f ms", ns / 1e6);
	else if (ns < 1e9)
		std::snprintf(buf, sizeof(buf), "%.0f ms", ns / 1e6);
	else
		std::snprintf(buf, sizeof(buf), "%.2f s", ns / 1e9);
	return buf;
}

std::string name_part(std::string_view s)
{
	std::string out;
	for (char ch : s)
		out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
	return out.empty() ? "_" : out;
}

std::string one_line(std::string_view s)
{
	std::string out;
	for (char ch : s) {
		if (ch == '\n' || ch == '\r' || ch == '\t')
			ch = ' ';
		else if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
			continue;	// a serial log's escape sequences
		if (ch == ' ' && (out.empty() || out.back() == ' '))
			continue;
		out += ch;
	}
	while (!out.empty() && out.back() == ' ')
		out.pop_back();
	return out;
}

std::string markdown_code(std::string_view s)
{
	const std::string text = one_line(s);
	size_t longest = 0, run = 0;
	for (char ch : text) {
		run = ch == '`' ? run + 1 : 0;
		longest = std::max(longest, run);
	}
	const std::string fence(longest + 1, '`');
	// A space inside the fence where the text starts or ends with a backtick.
	const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
	return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

std::string markdown_text(std::string_view s)
{
	std::string out;
	for (char ch : one_line(s)) {
		switch (ch) {
		case '<': out += "&lt;"; continue;
		case '>': out += "&gt;"; continue;
		case '&': out += "&amp;"; continue;
		case '|': case '*': case '_': case '`': case '[': case ']': case '\\':
			out += '\\';
			break;
		default: break;
		}
		out += ch;
	}
	return out;
}

std::string pad_to_width(std::string s, size_t width)
{
	size_t shown = 0;
	for (unsigned char ch : s)
		shown += (ch & 0xC0) != 0x80;
	if (shown < width)
		s += std::string(width - shown, ' ');
	return s;
}

std::string escape_markup(std::string_view s, bool attribute)
{
	std::string out;
	out.reserve(s.size() + s.size() / 8);
	for (size_t i = 0; i < s.size(); i++) {
		const unsigned char ch = static_cast<unsigned char>(s[i]);
		switch (ch) {
		case '&': out += "&amp;"; continue;
		case '<': out += "&lt;"; continue;
		case '>': out += "&gt;"; continue;
		case '"': out += "&quot;"; continue;
		case '\'': out += "&#39;"; continue;
		case '\n': out += attribute ? "&#10;" : "\n"; continue;
		case '\t': out += attribute ? "&#9;" : "\t"; continue;
		case '\r': out += attribute ? "&#13;" : ""; continue;
		default: break;
		}
		// XML 1.0 has no place for other C0 controls (a serial log's escape
		// sequences) nor for U+FFFE/U+FFFF: they become U+FFFD.
		if (ch < 0x20) {
			out += "\uFFFD";
			continue;
		}
		if (ch == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
		    (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE) {
			out += "\uFFFD";
			i += 2;
			continue;
		}
		out += char(ch);
	}
	return out;
}

namespace {

double quantile(const std::vector<double> &sorted, double q)
{
	const double pos = q * double(sorted.size() - 1);
	const size_t lo = size_t(std::floor(pos));
	const size_t hi = std::min(lo + 1, sorted.size() - 1);
	return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}

} // namespace

std::optional<sample_stats> stats_of(std::vector<double> samples)
{
	if (samples.empty())
		return std::nullopt;
	std::sort(samples.begin(), samples.end());
	sample_stats s;
	s.n = samples.size();
	s.min = samples.front();
	s.max = samples.back();
	s.median = quantile(samples, 0.5);
	s.p25 = quantile(samples, 0.25);
	s.p75 = quantile(samples, 0.75);
	return s;
}

std::string describe(const sample_stats &s, bool ascii)
{
	std::string out = "median " + format_ns(s.median, ascii);
	if (s.n >= 4)
		out += ", IQR " + format_ns(s.p25, ascii) + " - " + format_ns(s.p75, ascii);
	if (s.n >= 2)
		out += ", range " + format_ns(s.min, ascii) + " - " + format_ns(s.max, ascii);
	out += ", n=" + std::to_string(s.n);
	return out;
}

} // namespace pinmatrix::report
