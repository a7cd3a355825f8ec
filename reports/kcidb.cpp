// SPDX-License-Identifier: GPL-2.0
// KCIDB I/O data from results.json (reports/kcidb.hpp): the kernels as
// checkouts and builds, the cases and benchmarks as tests.

#include "kcidb.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <map>

#include "atomic_file.hpp"
#include "user_input.hpp"
#include "bench_report.hpp"
#include "report_input.hpp"
#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

using namespace report;
namespace fs = std::filesystem;

bool is_kcidb_origin(std::string_view origin)
{
	return !origin.empty() && std::all_of(origin.begin(), origin.end(), [](char ch) {
		return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
	});
}

namespace {

// FNV-1a (64 bits) as 16 hex digits: a stable name for what an id stands
// for, not a guard against forgery.
std::string digest(std::string_view s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned char ch : s) {
		h ^= ch;
		h *= 0x100000001b3ull;
	}
	char buf[17];
	std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
	return buf;
}

std::string dumped(const json &j)
{
	return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// One kernel the run covered (its boots are the tests' environments).
struct kernel_build {
	std::string name, release;
	json facts = json::object();	// what the run recorded of it
	std::string checkout_id, build_id;
};

// The facts a kernel is known by; the boot's (cmdline) are not among them.
constexpr const char *kernel_fact_keys[] = {"release", "version", "machine", "source",
					    "describe", "patches", "fragments"};

// Each fact the first of these kernel records that has it: the groups'
// (a merged run), the run's own and the case record's, where their name and
// release match.
json kernel_facts(const json &doc, const json *record, const std::string &name, const std::string &release)
{
	std::vector<const json *> sources;
	if (const json *groups = member(doc, "groups"); groups && groups->is_array())
		for (const auto &g : *groups)
			sources.push_back(member(g, "kernel"));
	sources.push_back(member(doc, "kernel"));
	sources.push_back(record ? member(*record, "kernel") : nullptr);
	json facts = json::object();
	for (const json *k : sources) {
		if (!k || !k->is_object() || text_at(*k, "release") != release || text_at(*k, "name") != name)
			continue;
		for (const char *key : kernel_fact_keys)
			if (const json *v = member(*k, key); v && !facts.contains(key))
				facts[key] = *v;
	}
	if (!name.empty())
		facts["name"] = name;
	return facts;
}

// The build of kernel (name, release), added on first sight (record: the
// first case that ran on it, or null). A kernel without a recorded release
// is this run's alone (run_id in its key).
size_t build_index(std::vector<kernel_build> &builds, const json &doc, const json *record, const std::string &name,
		   const std::string &release, const std::string &origin, const std::string &run_id)
{
	for (size_t i = 0; i < builds.size(); i++)
		if (builds[i].name == name && builds[i].release == release)
			return i;
	kernel_build b{name, release, kernel_facts(doc, record, name, release), "", ""};
	json key = b.facts;
	key.erase("name");	// the matrix file's label for it, not the kernel
	if (!b.facts.contains("release"))
		key["run"] = run_id;
	const std::string d = digest(dumped(key));
	b.checkout_id = origin + ":checkout-" + d;
	b.build_id = origin + ":build-" + d;
	builds.push_back(std::move(b));
	return builds.size() - 1;
}

// "6.1.0-57-amd64 (debian)": the kernel as the run named it.
std::string kernel_title(const kernel_build &b)
{
	std::string t = b.facts.contains("release") ? b.release : "a kernel whose release was not recorded";
	const std::string source = text_at(b.facts, "source");
	if (!b.name.empty() || !source.empty())
		t += " (" + (b.name.empty() ? source : b.name) + ")";
	return t;
}

json checkout_of(const kernel_build &b, const std::string &origin)
{
	std::string comment = "Linux " + kernel_title(b);
	if (auto version = text_at(b.facts, "version"); !version.empty())
		comment += ", " + version;
	comment += ". Its source tree, commit and patch URLs are not recorded by pinmatrix; misc.kernel has what is.";
	return {{"id", b.checkout_id}, {"origin", origin}, {"comment", comment}, {"misc", {{"kernel", b.facts}}}};
}

// The kernel's ARCH for uname's machine, where the two are known to differ.
std::string kernel_arch(const std::string &machine)
{
	static const std::map<std::string, std::string> arch = {
		{"x86_64", "x86_64"}, {"aarch64", "arm64"},	{"i686", "i386"},     {"i386", "i386"},
		{"riscv64", "riscv"}, {"ppc64le", "powerpc"}, {"s390x", "s390"}, {"armv7l", "arm"}};
	const auto it = arch.find(machine);
	return it == arch.end() ? "" : it->second;
}

json build_of(const kernel_build &b, const std::string &origin)
{
	json out = {{"id", b.build_id}, {"checkout_id", b.checkout_id}, {"origin", origin}};
	std::vector<std::string> unknown = {"compiler", "command"};
	if (auto arch = kernel_arch(text_at(b.facts, "machine")); !arch.empty())
		out["architecture"] = arch;
	else
		unknown.insert(unknown.begin(), "architecture");
	std::string config;
	if (const json *fragments = member(b.facts, "fragments"); fragments && fragments->is_array())
		config = join(*fragments, "+", as_text);
	if (!config.empty())
		out["config_name"] = config;
	else
		unknown.push_back("configuration");
	out["comment"] =
		"Linux " + kernel_title(b) + " as booted for the run; not recorded: " + join(unknown, ", ") + ".";
	out["misc"] = {{"kernel", b.facts}};
	return out;
}

// "pinmatrix." + prefix's parts + each '/'-separated part of name: KCIDB's
// paths are dot-separated names of [a-zA-Z0-9_-] (name_part()).
std::string dotted_path(const std::string &prefix, std::string_view name)
{
	std::string path = "pinmatrix." + name_part(prefix);
	for (size_t start = 0;;) {
		const size_t slash = name.find('/', start);
		path += "." + name_part(name.substr(start, slash - start));
		if (slash == std::string_view::npos)
			return path;
		start = slash + 1;
	}
}

// pinmatrix.SUITE.CASE: "backing/hugetlb-2m" -> pinmatrix.backing.hugetlb-2m.
std::string test_path(const case_view &c)
{
	std::string_view id = c.id;
	if (id.size() > c.suite.size() && id.substr(0, c.suite.size()) == c.suite && id[c.suite.size()] == '/')
		id.remove_prefix(c.suite.size() + 1);
	return dotted_path(c.suite, id);
}

bool not_reached(const case_view &c)
{
	const json *n = member(*c.record, "not_reached");
	return c.result == verdict::error && n && n->is_boolean() && n->get<bool>();
}

// KCIDB has no expected failure: an xfail is a FAIL with an incident of its
// known bug, an xpass a PASS with the bug's incident absent.
std::string status_of(const case_view &c)
{
	if (not_reached(c))
		return "MISS";
	switch (c.result) {
	case verdict::xfail: return "FAIL";
	case verdict::xpass: return "PASS";
	default: return upper_name(c.result);
	}
}

// A record's started_at when it is an RFC 3339 time, else empty.
std::string start_time_of(const json &record)
{
	const std::string t = text_at(record, "started_at");
	int y, mo, d, h, mi, s, n = 0;
	if (std::sscanf(t.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &n) != 6 || n != 19)
		return "";
	const std::string zone = t.substr(19);
	const bool zone_ok = zone == "Z" || (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':');
	const bool in_range = mo >= 1 && mo <= 12 && d >= 1 && d <= 31 && h < 24 && mi < 60 && s < 60;
	return zone_ok && in_range ? t : "";
}

// The serial log lines that explain an error (not those of the guest's end
// for every case it never reached). KCIDB's log_excerpt holds at most 16384
// characters: the end of a longer excerpt (where a panic's trace is), cut at
// a UTF-8 boundary.
std::string log_excerpt(const run_view &run, const case_view &c)
{
	constexpr size_t max_bytes = 16384;
	const std::string note = "[cut: the whole console is in serial.log]\n";
	std::string text = not_reached(c) ? "" : serial_excerpt_for(run, c).text;
	if (text.size() <= max_bytes)
		return text;
	size_t from = text.size() - (max_bytes - note.size());
	while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80)
		from++;
	return note + text.substr(from);
}

std::string comment_of(const case_view &c)
{
	if (!c.reason.empty())
		return c.title() + ": " + c.reason;
	return c.title() + ": expected " + c.expected + ", observed " + c.observed;
}

// What is known of where a case ran: its guest's size, its boot, its node.
json environment_misc(const json &doc, const kernel_config &k, const json *record)
{
	json misc = json::object();
	const json *boot = record ? member(*record, "boot") : nullptr;
	for (const json *from : {boot, member(doc, "boot"), member(doc, "vm")})
		for (const char *key : {"memory_mib", "cpus", "accel"})
			if (const json *v = from ? member(*from, key) : nullptr; v && !misc.contains(key))
				misc[key] = *v;
	if (!k.boot.empty())
		misc["boot"] = k.boot;
	if (!k.append.empty())
		misc["append"] = k.append;
	if (const std::string node = record ? text_at(*record, "node") : ""; !node.empty())
		misc["node"] = node;
	if (const json *kernel = member(doc, "kernel"); kernel && !member(doc, "groups"))
		if (auto cmdline = text_at(*kernel, "cmdline"); !cmdline.empty())
			misc["kernel_cmdline"] = cmdline;
	return misc;
}

// "QEMU guest (tcg), boot movable (movablecore=512M), 1024 MiB, 1 vCPU(s)".
json environment_of(const json &doc, const kernel_config &k, const json *record)
{
	const json misc = environment_misc(doc, k, record);
	const bool guest = member(doc, "vm") || misc.contains("boot") || (record && member(*record, "boot"));
	std::string comment = misc.contains("node") ? "node " + text_at(misc, "node")
			      : guest		   ? "QEMU guest"
						   : "the machine pinmatrix ran on";
	if (misc.contains("accel"))
		comment += " (" + as_text(misc["accel"]) + ")";
	if (!k.boot.empty())
		comment += ", boot " + k.boot + (k.append.empty() ? "" : " (" + k.append + ")");
	if (misc.contains("memory_mib"))
		comment += ", " + as_text(misc["memory_mib"]) + " MiB";
	if (misc.contains("cpus"))
		comment += ", " + as_text(misc["cpus"]) + " vCPU(s)";
	return {{"comment", comment}, {"misc", misc}};
}

// The case as pinmatrix saw it, for a reader of the KCIDB test.
json test_misc(const case_view &c)
{
	json m = {{"case", c.id}, {"name", c.name}, {"suite", c.suite}, {"verdict", name(c.result)}};
	for (const auto &[key, value] : {std::pair{"placement", c.placement}, {"first_pin", c.first_pin},
					 {"second_pin", c.second_pin}, {"expected", c.expected},
					 {"observed", c.observed}})
		if (!value.empty() && value != "-")
			m[key] = value;
	if (!c.latency_ns.empty())
		m["latency_ns"] = c.latency_ns;
	if (not_reached(c))
		m["not_reached"] = true;
	json evidence = json::object();
	for (const auto &f : evidence_facts(c))
		if (!evidence.contains(f.label))
			evidence[f.label] = f.value;
	if (!evidence.empty())
		m["evidence"] = evidence;
	return m;
}

json test_of(const run_view &run, const case_view &c, const std::string &id, const kernel_build &b,
	     const std::string &origin)
{
	json t = {{"id", id},
		  {"build_id", b.build_id},
		  {"origin", origin},
		  {"path", test_path(c)},
		  {"status", status_of(c)},
		  {"comment", comment_of(c)},
		  {"environment", environment_of(*run.doc, c.kernel, c.record)},
		  {"misc", test_misc(c)}};
	if (auto excerpt = log_excerpt(run, c); !excerpt.empty())
		t["log_excerpt"] = excerpt;
	if (auto start = start_time_of(*c.record); !start.empty())
		t["start_time"] = start;
	if (c.duration_ns && *c.duration_ns >= 0)
		t["duration"] = *c.duration_ns / 1e9;
	return t;
}

// A benchmark: DONE with its time per iteration (KCIDB's number, in
// seconds with a metric prefix to scale), or SKIP with the reason.
json bench_test_of(const bench_entry &e, const std::string &id, const kernel_build &b, const json &environment,
		   const std::string &origin)
{
	json misc = {{"benchmark", e.name}, {"repetitions", e.samples}, {"iterations", e.iterations}};
	if (e.bytes)
		misc["bytes"] = *e.bytes;
	if (!e.counters.empty())
		misc["counters"] = e.counters;
	json t = {{"id", id},		 {"build_id", b.build_id},	{"origin", origin},
		  {"path", dotted_path("bench", e.name)}, {"environment", environment}};
	if (!e.skipped.empty()) {
		t["status"] = "SKIP";
		t["comment"] = e.name + ": skipped: " + e.skipped;
	} else {
		t["status"] = "DONE";
		t["comment"] = e.name + ": " + format_ns(e.ns, true) + " per iteration (median of " +
			       std::to_string(e.samples) + " repetition(s))";
		t["number"] = {{"value", e.ns / 1e9}, {"unit", "s"}, {"prefix", "metric"}};
		misc["ns"] = e.ns;
	}
	t["misc"] = misc;
	return t;
}

// The benchmarks ran on the run's own kernel (`vm --bench` is one guest).
void add_bench_tests(json &out, const json &doc, const json &bench, std::vector<kernel_build> &builds,
		     const std::string &origin, const std::string &run_id)
{
	const json *kernel = member(doc, "kernel");
	const std::string release = kernel ? text_at(*kernel, "release", "unknown kernel") : "unknown kernel";
	const size_t b =
		build_index(builds, doc, nullptr, kernel ? text_at(*kernel, "name") : "", release, origin, run_id);
	const json *boot = member(doc, "boot");
	const json *vm = member(doc, "vm");
	const kernel_config k{"", release, boot ? text_at(*boot, "placement") : "", vm ? text_at(*vm, "append") : ""};
	const json environment = environment_of(doc, k, nullptr);
	const auto entries = bench_entries(bench);
	for (size_t i = 0; i < entries.size(); i++)
		out["tests"].push_back(
			bench_test_of(entries[i], run_id + "-bench-" + std::to_string(i + 1), builds[b], environment, origin));
}

// Every test names the suite that ran it (misc.tool): its version and the
// commit it was built from, "unknown" where results.json does not say.
void add_tool(json &out, const json &doc)
{
	const tool_view tool = tool_of(doc);
	const json t = {{"name", tool.name}, {"version", tool.version}, {"commit", tool.commit}};
	for (auto &test : out["tests"])
		test["misc"]["tool"] = t;
}

// A known kernel bug as a KCIDB issue (the code is the culprit), and each
// case it met as an incident of the case's test: present for an xfail,
// absent for an xpass.
void add_known_bugs(json &out, const run_view &run, const std::vector<std::string> &test_ids,
		    const std::string &origin)
{
	out["issues"] = json::array();
	out["incidents"] = json::array();
	std::map<const case_view *, size_t> test_of_case;
	for (size_t i = 0; i < run.cases.size(); i++)
		test_of_case[&run.cases[i]] = i;
	for (const auto &b : known_bugs_met(run)) {
		const std::string issue_id = origin + ":pinmatrix-known-bug-" + b.id;
		out["issues"].push_back({{"id", issue_id},
					 {"version", 1},
					 {"origin", origin},
					 {"report_subject", b.title},
					 {"comment", b.title + " (" + b.where + ")"},
					 {"culprit", {{"code", true}, {"tool", false}, {"harness", false}}},
					 {"test_status", "FAIL"},
					 {"misc", {{"known_bug", b.id}, {"kernels", b.kernels}, {"fix", b.fix}}}});
		for (const auto &[present, cases] : {std::pair{true, &b.xfail}, std::pair{false, &b.xpass}})
			for (const auto *c : *cases) {
				const std::string &test_id = test_ids[test_of_case.at(c)];
				out["incidents"].push_back(
					{{"id", test_id + "-" + b.id},
					 {"origin", origin},
					 {"issue_id", issue_id},
					 {"issue_version", 1},
					 {"test_id", test_id},
					 {"present", present},
					 {"comment", std::string(present ? "expected failure: " : "unexpected pass: ") +
							     c->reason}});
			}
	}
}

void check_origin(const std::string &origin)
{
	if (origin.empty())
		throw usage_error("report --kcidb needs --origin NAME: the CI system's name in KCIDB "
				  "(lowercase letters, digits and '_', e.g. my_lab)");
	if (!is_kcidb_origin(origin))
		throw usage_error("report --kcidb --origin " + dumped(json(origin)) +
				  ": KCIDB's origin is lowercase letters, digits and '_' (^[a-z0-9_]+$), e.g. my_lab");
}

} // namespace

json format_kcidb(const json &doc, const std::string &origin, const json *bench)
{
	check_origin(origin);
	const run_view run = view_run(doc);
	const std::string run_id = origin + ":pinmatrix-" + digest(dumped(doc));
	std::vector<kernel_build> builds;
	json out = {{"version", {{"major", kcidb_major}, {"minor", kcidb_minor}}}, {"tests", json::array()}};
	std::vector<std::string> test_ids;
	for (size_t i = 0; i < run.cases.size(); i++) {
		const case_view &c = run.cases[i];
		const size_t b = build_index(builds, doc, c.record, c.kernel.name, c.kernel.release, origin, run_id);
		test_ids.push_back(run_id + "-" + std::to_string(i + 1));
		out["tests"].push_back(test_of(run, c, test_ids.back(), builds[b], origin));
	}
	add_known_bugs(out, run, test_ids, origin);
	if (bench)
		add_bench_tests(out, doc, *bench, builds, origin, run_id);
	add_tool(out, doc);
	out["checkouts"] = json::array();
	out["builds"] = json::array();
	for (const auto &b : builds) {
		out["checkouts"].push_back(checkout_of(b, origin));
		out["builds"].push_back(build_of(b, origin));
	}
	return out;
}

namespace {

// "PASS 9, FAIL 1, MISS 2": the tests by status, in KCIDB's order.
std::string status_counts(const json &k)
{
	std::map<std::string, int> n;
	for (const auto &t : k["tests"])
		n[t["status"].get<std::string>()]++;
	std::vector<std::string> counts;
	for (const char *s : {"FAIL", "ERROR", "MISS", "PASS", "DONE", "SKIP"})
		if (n[s])
			counts.push_back(std::string(s) + " " + std::to_string(n[s]));
	return counts.empty() ? "none" : join(counts, ", ");
}

} // namespace

void kcidb_report_command(const fs::path &dir_or_file, const std::string &origin, const fs::path &out)
{
	check_origin(origin);
	if (dir_or_file.empty())
		throw usage_error("report --kcidb: give a run directory (or its results.json)");
	std::error_code ec;
	const bool to_stdout = out == "-";
	if (!out.empty() && !to_stdout && fs::is_directory(out, ec))
		throw usage_error("report --kcidb --out " + out.string() + ": a directory; --out names the file to write");
	if (!out.empty() && !to_stdout)
		require_replaceable(out);
	const auto results = load_results(dir_or_file);
	if (!out.empty() && !to_stdout)
		require_not_input(out, results.path, "report --kcidb --out");
	const fs::path run_dir = results.path.parent_path().empty() ? fs::path(".") : results.path.parent_path();
	std::string bench_problem;
	const auto bench = load_bench(run_dir, results.doc, &bench_problem);
	if (!bench_problem.empty())
		std::cerr << "pinmatrix: warning: " << bench_problem << ": no benchmark tests in the KCIDB data\n";
	const json k = format_kcidb(results.doc, origin, bench ? &*bench : nullptr);
	const std::string text = k.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
	if (to_stdout) {
		std::cout << text;
		return;
	}
	const fs::path file = out.empty() ? run_dir / "kcidb.json" : out;
	if (file.has_parent_path())
		fs::create_directories(file.parent_path());
	write_file_atomically(file, text);
	std::cout << "pinmatrix report: KCIDB " << kcidb_major << "." << kcidb_minor << " for origin " << origin << ": "
		  << k["checkouts"].size() << " checkout(s), " << k["builds"].size() << " build(s), "
		  << k["tests"].size() << " test(s) (" << status_counts(k) << "); wrote " << file.string() << "\n";
}

} // namespace pinmatrix
