// SPDX-License-Identifier: GPL-2.0
#include "fleet.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "atomic_file.hpp"
#include "gpu_pin.hpp"
#include "report_input.hpp"
#include "reports.hpp"
#include "results.hpp"
#include "sys_error.hpp"
#include "user_input.hpp"

namespace pinmatrix {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A node's file, null when the playbook fetched none; an object when it did.
json read_optional(const fs::path &file)
{
	if (!fs::exists(file))
		return nullptr;
	json doc = read_json(file);
	if (!doc.is_object())
		throw usage_error("report --fleet: " + file.string() + ": not a JSON object");
	return doc;
}

// What ansible/roles/collect fetched from one node.
struct node_files {
	fs::path dir;
	json status, facts, results;
	std::string node;	// status.json's, else the directory's name
};

// How a node without results stands in the grid: one record, by the state
// the playbook left (ansible/.../pinmatrix_collect). Any other state is a
// failed node (the playbook may leave "ready" from the preflight).
struct node_state_record {
	const char *state, *name, *verdict, *prefix;
};
constexpr node_state_record node_state_records[] = {
	{"cannot_run", "cannot-run-here", "skip", "cannot run here: "},
	{"unreachable", "node-unreachable", "error", "unreachable: "},
	{"", "node-failed", "error", "run failed: "},
};

const node_state_record &record_for_state(const std::string &state)
{
	for (const auto &r : node_state_records)
		if (state == r.state)
			return r;
	return node_state_records[std::size(node_state_records) - 1];
}

// "cannot run here: " before a cannot_run node's reason, "unreachable: "
// before an unreachable one's; nothing before a failed one's (its reason
// names the task).
std::string reason_prefix(const json &node)
{
	const std::string state = node.value("state", "");
	return state == "cannot_run" || state == "unreachable" ? record_for_state(state).prefix : "";
}

// Reads and checks a node directory: something in it, each file an object,
// a state that is a string, results.json a results document.
node_files read_node(const fs::path &dir)
{
	if (!fs::is_directory(dir))
		throw usage_error("report --fleet: " + dir.string() + " is not a directory");
	node_files n{dir, read_optional(dir / "status.json"), read_optional(dir / "facts.json"),
		     read_optional(dir / "results.json"), ""};
	if (n.status.is_null() && n.facts.is_null() && n.results.is_null())
		throw usage_error("report --fleet: " + dir.string() + ": no status.json, facts.json or results.json");
	const fs::path status_file = dir / "status.json";
	if (const json *node = report::member(n.status, "node"); node && (!node->is_string() || node->empty()))
		throw usage_error("report --fleet: " + status_file.string() + ": node is not a name");
	// A state must be a word (node_state_records).
	if (const json *state = report::member(n.status, "state"); state && !state->is_string())
		throw usage_error("report --fleet: " + status_file.string() + ": state " + state->dump() +
				  " is not a string");
	if (!n.results.is_null())
		report::check_schema(n.results, (dir / "results.json").string());
	n.node = report::text_at(n.status, "node", dir.filename().string());
	return n;
}

// Every node directory read and checked before anything is merged: each
// node once.
std::vector<node_files> read_nodes(const std::vector<fs::path> &node_dirs)
{
	std::vector<node_files> nodes;
	std::map<std::string, fs::path> seen;
	for (const auto &dir : node_dirs) {
		nodes.push_back(read_node(dir));
		const auto [it, fresh] = seen.emplace(nodes.back().node, dir);
		if (!fresh)
			throw usage_error("report --fleet: node " + it->first + " twice (" + it->second.string() +
					  " and " + dir.string() + ")");
	}
	return nodes;
}

std::string text(const json &j, const char *key, std::string fallback = "")
{
	return report::text_at(j, key, std::move(fallback));
}

// The facts worth a line each, in the order an engineer reads them.
const std::vector<std::pair<const char *, const char *>> fact_lines = {
	{"kernel_release", "kernel"},
	{"cmdline", "command line"},
	{"cma", "CMA (CmaTotal / CmaFree kB)"},
	{"movable_zone", "ZONE_MOVABLE"},
	{"rdma_devices", "RDMA devices"},
	{"mlx5_core", "mlx5_core"},
	{"nvidia", "nvidia"},
	{"amdgpu", "amdgpu"},
	{"iommu", "IOMMU"},
	{"memlock", "memlock (run user)"},
	{"kernel_headers", "kernel headers"},
	{"io_uring", "io_uring"},
};

// What the node's NVIDIA driver version says of its host pin, from the one
// version table (lib/gpu_pin.cpp); the preflight reports the version only.
json with_host_pin_contract(json facts)
{
	if (!facts.is_object())
		return json::object();
	json *nvidia = facts.contains("nvidia") && facts["nvidia"].is_object() ? &facts["nvidia"] : nullptr;
	if (!nvidia || !(*nvidia)["version"].is_string())
		return facts;
	const auto longterm = nvidia_host_pin_longterm((*nvidia)["version"].get<std::string>(), text(facts, "machine"));
	(*nvidia)["host_pin_foll_longterm_by_version"] = longterm ? json(*longterm) : json(nullptr);
	(*nvidia)["host_pin"] = !longterm ? "unknown for this version"
				: *longterm ? "FOLL_PIN|FOLL_LONGTERM (R555-style)"
					    : "FOLL_PIN without FOLL_LONGTERM (R535-style)";
	return facts;
}

} // namespace

json merge_fleet(const std::vector<fs::path> &node_dirs)
{
	if (node_dirs.empty())
		throw usage_error("report --fleet: give one directory per node");
	json fleet = {{"schema", results_schema}, {"fleet", true}, {"nodes", json::array()},
		      {"groups", json::array()}, {"cases", json::array()}, {"complete", true}};
	for (auto &[dir, status, facts, results, node] : read_nodes(node_dirs)) {
		if (!status.is_object())
			status = json::object();
		std::string state = text(status, "state", results.is_object() ? "ran" : "failed");
		std::string reason = text(status, "reason");
		// Not reached in this play: a results.json beside it is an earlier
		// play's, not this one's.
		if (state == "unreachable")
			results = json();
		if (state == "ran" && !results.is_object()) {
			state = "failed";
			reason = "the run left no results.json" + (reason.empty() ? "" : ": " + reason);
		}
		const std::string release = results.is_object()
						    ? text(results.value("kernel", json::object()), "release")
						    : text(facts.is_object() ? facts : json::object(), "kernel_release",
							   "unknown kernel");
		const json kernel = {{"name", node}, {"release", release}};

		json entry = {{"node", node}, {"state", state}, {"dir", dir.string()},
			      {"facts", with_host_pin_contract(facts)}, {"status", status}};
		if (!reason.empty())
			entry["reason"] = reason;
		if (results.is_object()) {
			if (!results.value("complete", true) && state == "ran") {
				state = "failed";
				reason = "the run stopped before its last case (timeout or crash?)";
				entry["state"] = state;
				entry["reason"] = reason;
			}
			entry["verdict"] = results.value("verdict", "error");
			entry["summary"] = results.value("summary", json::object());
			for (const char *k : {"first_pin_source", "second_pin", "rdma_device", "restricted_placement",
					      "memlock", "module", "gpu_drivers"})
				if (results.contains(k))
					entry["run"][k] = results[k];
			for (auto c : results["cases"]) {
				c["node"] = node;
				c["kernel"] = kernel;
				c["boot"] = {{"placement", results.value("restricted_placement", "")}};
				fleet["cases"].push_back(c);
			}
		} else {
			// One record stands for the node in the grid.
			const node_state_record &how = record_for_state(state);
			json r = {{"id", "node"}, {"name", how.name}, {"suite", "fleet"}, {"node", node},
				  {"kernel", kernel}, {"boot", {{"placement", ""}}}, {"verdict", how.verdict},
				  {"reason", how.prefix + (reason.empty() ? std::string("no reason recorded") : reason)}};
			fleet["cases"].push_back(r);
			entry["verdict"] = r["verdict"];
			fleet["groups"].push_back({{"kernel", kernel}, {"boot", r["boot"]}, {"ended", r["reason"]}});
		}
		fleet["nodes"].push_back(entry);
	}
	const auto s = summarize_json(fleet["cases"]);
	fleet["summary"] = summary_json(s);
	fleet["verdict"] = name(s.overall);
	return fleet;
}

// A node name, case id or reason in the grid, on the terminal and in
// fleet.md's code fence: one line, and no backtick that could close the
// fence at a line's start.
std::string grid_text(std::string_view s)
{
	std::string out = report::one_line(s);
	std::replace(out.begin(), out.end(), '`', '\'');
	return out;
}

std::string format_fleet_grid(const json &fleet)
{
	std::vector<std::string> nodes, ids;
	for (const auto &n : fleet["nodes"])
		nodes.push_back(grid_text(n.value("node", "?")));
	std::set<std::string> seen;
	std::map<std::pair<std::string, std::string>, std::string> cells;	// (id, node) -> VERDICT
	for (const auto &c : fleet["cases"]) {
		const std::string id = grid_text(c.value("id", "?"));
		if (seen.insert(id).second)
			ids.push_back(id);
		std::string v = c.value("verdict", "error");
		std::transform(v.begin(), v.end(), v.begin(), ::toupper);
		cells.emplace(std::pair{grid_text(c.value("id", "?")), grid_text(c.value("node", ""))},
			      grid_text(v));	// the first stands
	}
	auto cell = [&](const std::string &id, const std::string &node) {
		auto it = cells.find({id, node});
		return it == cells.end() ? std::string("-") : it->second;
	};
	size_t w0 = 4;
	for (const auto &id : ids)
		w0 = std::max(w0, id.size());
	std::vector<size_t> w;
	for (const auto &n : nodes)
		w.push_back(std::max<size_t>(n.size(), 5));
	std::ostringstream out;
	out << "case" << std::string(w0 - 4 + 2, ' ');
	for (size_t i = 0; i < nodes.size(); i++)
		out << nodes[i] << std::string(w[i] - nodes[i].size() + 2, ' ');
	out << '\n';
	for (const auto &id : ids) {
		out << id << std::string(w0 - id.size() + 2, ' ');
		for (size_t i = 0; i < nodes.size(); i++) {
			const std::string v = cell(id, nodes[i]);
			out << v << std::string(w[i] - v.size() + 2, ' ');
		}
		out << '\n';
	}
	for (const auto &n : fleet["nodes"])
		if (n.contains("reason"))
			out << grid_text(n.value("node", "?")) << ": "
			    << grid_text(reason_prefix(n) + n["reason"].get<std::string>()) << '\n';
	return out.str();
}

std::string format_fleet_markdown(const json &fleet)
{
	std::map<std::string, std::vector<const json *>> with_reason;	// by node
	for (const auto &c : fleet["cases"])
		if (c.contains("reason"))
			with_reason[c.value("node", "")].push_back(&c);
	std::ostringstream out;
	const auto &s = fleet["summary"];
	out << "# pinmatrix fleet: " << fleet.value("verdict", "error") << "\n\n"
	    << fleet["nodes"].size() << " nodes; cases pass " << s.value("pass", 0) << ", fail "
	    << s.value("fail", 0) << ", skip " << s.value("skip", 0) << ", error " << s.value("error", 0)
	    << ".\n\n## Node x case\n\n```\n" << format_fleet_grid(fleet) << "```\n";
	for (const auto &n : fleet["nodes"]) {
		out << "\n## " << report::markdown_text(n.value("node", "?")) << ": "
		    << report::markdown_text(n.value("state", "?"));
		if (n.contains("reason"))
			out << " (" << report::markdown_text(reason_prefix(n) + n["reason"].get<std::string>()) << ")";
		out << "\n\n| fact | value |\n| --- | --- |\n";
		const json &facts = n["facts"];
		for (const auto &[key, label] : fact_lines)
			if (const json *v = report::member(facts, key))
				out << "| " << label << " | " << report::markdown_text(report::as_text(*v)) << " |\n";
		if (n.contains("run"))
			for (const auto &[k, v] : n["run"].items())
				out << "| run: " << report::markdown_text(k) << " | "
				    << report::markdown_text(report::as_text(v)) << " |\n";
		for (const json *c : with_reason[n.value("node", "")])
			out << "\n- " << report::markdown_text(c->value("id", "?")) << ": "
			    << report::markdown_text(c->value("verdict", "?")) << ": "
			    << report::markdown_text((*c)["reason"].get<std::string>());
		out << "\n";
	}
	return out.str();
}

int fleet_report_command(const std::vector<fs::path> &node_dirs, const fs::path &out)
{
	if (out.empty())
		throw usage_error("report --fleet: --out DIR is required");
	// OUT gets results.json: a node's own would be written over.
	for (const auto &node : node_dirs)
		require_not_input(out, node, "report --fleet --out");
	const json fleet = merge_fleet(node_dirs);
	fs::create_directories(out);
	const std::string md = format_fleet_markdown(fleet);
	write_reports(out, fleet, {{"results.json", results_json_text(fleet)}, {"fleet.md", md}});
	std::cout << format_fleet_grid(fleet) << "pinmatrix report --fleet: " << fleet["verdict"].get<std::string>()
		  << "; wrote results.json, fleet.md, report.html, junit.xml, results.ktap and summary.md in "
		  << out.string() << "\n";
	return exit_code(summarize_json(fleet["cases"]));
}

} // namespace pinmatrix
