// SPDX-License-Identifier: GPL-2.0
#include "run_files.hpp"

#include <cstdio>
#include <optional>
#include <system_error>

namespace pinmatrix::report {

namespace fs = std::filesystem;

std::string percent_encoded(std::string_view path)
{
	std::string out;
	for (const char ch : path) {
		const auto byte = static_cast<unsigned char>(ch);
		const bool ascii_alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
		if (ascii_alnum || ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '/') {
			out += ch;
			continue;
		}
		char buf[4];
		std::snprintf(buf, sizeof(buf), "%%%02X", byte);
		out += buf;
	}
	return out;
}

std::string file_link::href() const
{
	return percent_encoded(path);
}

const std::vector<file_link> &run_files::of_case(const case_view &c) const
{
	const auto it = by_kernel.find(c.kernel);
	return it == by_kernel.end() ? run : guests[it->second].files;
}

namespace {

// A file the reports link, and the names it may have (the first that
// exists is linked).
struct candidate {
	std::string label;
	std::vector<std::string> names;
};

// Where the reports are made from and go, resolved once.
struct dirs {
	fs::path run;		// the results file's directory
	fs::path reports;
	bool same = false;
	const std::set<std::string> *written = nullptr;
};

// A name a results file gives, taken only as a path below the run's
// directory: relative, no "..", "." or empty part, no NUL (which would end
// the name the kernel sees early).
bool safe_relative(const std::string &name)
{
	if (name.empty() || name.find('\0') != std::string::npos)
		return false;
	const fs::path p(name);
	if (p.has_root_name() || p.has_root_directory())
		return false;
	for (const auto &part : p) {
		const std::string s = part.string();
		if (s.empty() || s == "." || s == "..")
			return false;
	}
	return true;
}

bool exists_now(const dirs &d, const fs::path &rel)
{
	if (d.same && d.written->count(rel.generic_string()))
		return true;
	std::error_code ec;
	return fs::is_regular_file(d.run / rel, ec);
}

// The first of c's names below `under` (a group's directory, or none) that
// exists, as a link from the reports' directory.
std::optional<file_link> link_to(const dirs &d, const fs::path &under, const candidate &c)
{
	for (const auto &name : c.names) {
		if (!safe_relative(name))
			continue;
		const fs::path rel = under / name;
		if (!exists_now(d, rel))
			continue;
		const fs::path path = d.same ? rel : (d.run / rel).lexically_relative(d.reports);
		if (!path.empty())
			return file_link{c.label, path.generic_string()};
	}
	return std::nullopt;
}

std::vector<file_link> links_of(const dirs &d, const fs::path &under, const std::vector<candidate> &candidates)
{
	std::vector<file_link> out;
	std::set<std::string> seen;
	for (const auto &c : candidates)
		if (auto link = link_to(d, under, c); link && seen.insert(link->path).second)
			out.push_back(std::move(*link));
	return out;
}

// The run's own files: the names results.json gives first, then those
// pinmatrix vm and the guest's job write.
std::vector<candidate> run_candidates(const json &doc, const std::string &results_name)
{
	const json *vm = member(doc, "vm");
	const json *kernel_log = member(doc, "kernel_log");
	std::vector<candidate> out = {
		{results_name, {results_name}},
		{"serial log", {vm ? text_at(*vm, "serial_log") : "", "serial.log"}},
		{"kernel log", {kernel_log ? text_at(*kernel_log, "file") : "", "guest/kernel.log", "kernel.log"}},
		{"QEMU log", {"qemu.log"}},
		{"guest job log", {"guest/job.log", "job.log"}},
		{"benchmarks", {text_at(doc, "benchmarks"), "bench.json"}},
	};
	const json *retries = vm ? member(*vm, "boot_retries") : nullptr;
	for (size_t i = 0; retries && retries->is_array() && i < retries->size(); i++)
		out.push_back({"serial log of boot " + std::to_string(i + 1), {text_at((*retries)[i], "serial_log")}});
	if (const json *fb = vm ? member(*vm, "accel_fallback") : nullptr) {
		out.push_back({"serial log of the KVM attempt", {text_at(*fb, "serial_log")}});
		out.push_back({"QEMU log of the KVM attempt", {text_at(*fb, "qemu_log")}});
	}
	return out;
}

// What a merged run's group directory holds (vm/guest_results.cpp).
const std::vector<candidate> &guest_candidates()
{
	static const std::vector<candidate> out = {
		{"report.html", {"report.html"}},	   {"results.json", {"results.json"}},
		{"serial log", {"serial.log"}},		   {"kernel log", {"guest/kernel.log"}},
		{"QEMU log", {"qemu.log"}},
	};
	return out;
}

// A directory as one absolute path, its links resolved where it exists.
fs::path resolved(const fs::path &dir)
{
	std::error_code ec;
	const fs::path absolute = fs::absolute(dir, ec).lexically_normal();
	const fs::path canonical = fs::weakly_canonical(absolute, ec);
	return ec ? absolute : canonical;
}

dirs resolve(const report_place &place)
{
	dirs d;
	const fs::path run = place.results.parent_path().empty() ? fs::path(".") : place.results.parent_path();
	d.run = resolved(run);
	d.reports = resolved(place.report_dir.empty() ? run : place.report_dir);
	d.same = d.run == d.reports;
	d.written = &place.written;
	return d;
}

} // namespace

run_files find_run_files(const json &doc, const report_place &place)
{
	const dirs d = resolve(place);
	run_files out;
	out.run = links_of(d, {}, run_candidates(doc, place.results.filename().string()));
	const json *groups = member(doc, "groups");
	for (size_t i = 0; groups && groups->is_array() && i < groups->size(); i++) {
		const json &g = (*groups)[i];
		const std::string dir = text_at(g, "dir");
		if (!safe_relative(dir))
			continue;
		auto files = links_of(d, dir, guest_candidates());
		if (files.empty())
			continue;
		out.by_kernel.emplace(group_kernel(g), out.guests.size());
		out.guests.push_back({group_kernel(g), dir, std::move(files)});
	}
	return out;
}

} // namespace pinmatrix::report
