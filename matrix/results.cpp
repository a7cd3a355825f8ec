// SPDX-License-Identifier: GPL-2.0
#include "results.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "atomic_file.hpp"
#include "build_info.hpp"
#include "sys_error.hpp"

namespace pinmatrix {

using nlohmann::json;

namespace {

void count(run_summary &s, verdict v)
{
	switch (v) {
	case verdict::pass: s.pass++; break;
	case verdict::fail: s.fail++; break;
	case verdict::xfail: s.xfail++; break;
	case verdict::xpass: s.xpass++; break;
	case verdict::skip: s.skip++; break;
	case verdict::error: s.error++; break;
	}
	s.overall = worst(s.overall, v);
}

} // namespace

json tool_json()
{
	const std::string_view commit = suite_commit();
	return {{"name", "pinmatrix"},
		{"version", std::string(suite_version())},
		{"commit", commit.empty() ? json(nullptr) : json(std::string(commit))}};
}

run_summary summarize_json(const json &cases)
{
	run_summary s;
	for (const auto &c : cases)
		count(s, verdict_of(c.value("verdict", "error")));
	return s;
}

json summary_json(const run_summary &s)
{
	return {{"pass", s.pass}, {"fail", s.fail}, {"xfail", s.xfail}, {"xpass", s.xpass},
		{"skip", s.skip}, {"error", s.error}};
}

std::string summary_text(const run_summary &s)
{
	std::string text = "pass " + std::to_string(s.pass) + ", fail " + std::to_string(s.fail);
	if (s.xfail || s.xpass)
		text += ", xfail " + std::to_string(s.xfail) + ", xpass " + std::to_string(s.xpass);
	return text + ", skip " + std::to_string(s.skip) + ", error " + std::to_string(s.error);
}

int exit_code(const run_summary &s)
{
	if (s.fail || s.error)
		return 1;
	if (!s.pass && !s.xfail && !s.xpass)
		return 4;
	return 0;
}

std::string results_json_text(const json &doc)
{
	return doc.dump(2) + '\n';
}

void write_json_atomically(const std::filesystem::path &path, const json &doc)
{
	write_file_atomically(path, results_json_text(doc));
}

std::string results_text::of(const json &doc)
{
	const json *cases = doc.is_object() && doc.contains("cases") ? &doc["cases"] : nullptr;
	if (!cases || !cases->is_array() || cases->empty()) {
		cases_.clear();
		return results_json_text(doc);
	}
	if (cases_.size() > cases->size())
		cases_.clear();
	for (size_t i = cases_.size(); i < cases->size(); i++) {
		// dump(2) of the document puts a case at depth 2: 4 more spaces.
		std::string text = "    ";
		for (char ch : (*cases)[i].dump(2)) {
			text += ch;
			if (ch == '\n')
				text += "    ";
		}
		cases_.push_back(std::move(text));
	}
	json head = json::object();
	for (const auto &[key, value] : doc.items())
		head[key] = key == "cases" ? json::array() : value;
	std::string text = results_json_text(head);
	// The top-level key alone has exactly two spaces before it.
	const std::string empty = "\n  \"cases\": []";
	const size_t at = text.find(empty);
	if (at == std::string::npos)
		return results_json_text(doc);
	std::string array = "\n  \"cases\": [\n";
	for (size_t i = 0; i < cases_.size(); i++)
		array += cases_[i] + (i + 1 < cases_.size() ? ",\n" : "\n");
	array += "  ]";
	return text.replace(at, empty.size(), array);
}

namespace {

// Whether text nests arrays and objects deeper than max (outside strings).
bool nested_deeper_than(std::string_view text, size_t max)
{
	size_t depth = 0;
	bool in_string = false;
	for (size_t i = 0; i < text.size(); i++) {
		const char ch = text[i];
		if (in_string) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_string = false;
		} else if (ch == '"') {
			in_string = true;
		} else if (ch == '[' || ch == '{') {
			if (++depth > max)
				return true;
		} else if ((ch == ']' || ch == '}') && depth) {
			depth--;
		}
	}
	return false;
}

} // namespace

json read_json(const std::filesystem::path &path)
{
	std::error_code ec;
	const uintmax_t size = std::filesystem::file_size(path, ec);
	if (ec)
		throw usage_error(path.string() + ": cannot read it (" + ec.message() + ")");
	if (size > max_json_bytes)
		throw usage_error(path.string() + ": larger than " + std::to_string(max_json_bytes >> 20) +
				  " MiB (" + std::to_string(size) + " bytes): not a results document");
	std::ifstream in(path, std::ios::binary);
	std::string text(size_t(size), '\0');
	if (!in || !in.read(text.data(), std::streamsize(text.size())))
		throw usage_error(path.string() + ": cannot read it");
	if (nested_deeper_than(text, max_json_depth))
		throw usage_error(path.string() + ": nested deeper than " + std::to_string(max_json_depth) +
				  " levels: not a results document");
	try {
		return json::parse(text);
	} catch (const json::exception &e) {
		throw usage_error(path.string() + ": not valid JSON (" + e.what() + ")");
	}
}

} // namespace pinmatrix
