// SPDX-License-Identifier: GPL-2.0
// The terminal's table through libsmartcols (util-linux's column layout,
// as lsblk and findmnt print theirs): it measures the cells, gives the
// columns their widths and cuts the truncatable ones to the width asked.
#include "terminal_table.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <new>
#include <sstream>

#include <libsmartcols/libsmartcols.h>

namespace pinmatrix {

using nlohmann::json;

namespace {

struct table_unref {
	void operator()(libscols_table *t) const { scols_unref_table(t); }
};
using table_ptr = std::unique_ptr<libscols_table, table_unref>;

std::string member_text(const json &c, const char *key)
{
	const auto it = c.find(key);
	return it != c.end() && it->is_string() ? it->get<std::string>() : "-";
}

std::string summary_of(const json &c, const char *key)
{
	const auto it = c.find(key);
	if (it == c.end() || !it->is_object())
		return "-";
	return it->value("summary", "-");
}

std::string verdict_cell(const json &c)
{
	std::string v = c.value("verdict", "error");
	for (auto &ch : v)
		ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
	return v;
}

// "FOLL_PIN (held) -> ibv_reg_mr": the first pin, then the long-term one.
std::string pins_cell(const json &c)
{
	return member_text(c, "first_pin_label") + " -> " + member_text(c, "second_pin");
}

// The columns, in order. width_hint: a fraction of the width a cut column
// keeps at least (libsmartcols' whint); 0 lets it take what it needs.
struct column {
	const char *name;
	double width_hint;
	int flags;
	std::string (*cell)(const json &c);
};
const column columns[] = {
	{"verdict", 0, 0, verdict_cell},
	{"case", 0, 0, [](const json &c) { return c.value("id", std::string("?")); }},
	{"placement", 0, SCOLS_FL_TRUNC, [](const json &c) { return member_text(c, "placement"); }},
	{"pins", 0.18, SCOLS_FL_TRUNC, pins_cell},
	{"expected", 0.2, SCOLS_FL_TRUNC, [](const json &c) { return summary_of(c, "expected"); }},
	{"observed", 0.3, SCOLS_FL_TRUNC, [](const json &c) { return summary_of(c, "observed"); }},
};

table_ptr new_table(size_t width)
{
	table_ptr tb(scols_new_table());
	if (!tb)
		throw std::bad_alloc();
	scols_table_set_termforce(tb.get(), SCOLS_TERMFORCE_ALWAYS);
	scols_table_set_termwidth(tb.get(), width);
	for (const auto &col : columns)
		if (!scols_table_new_column(tb.get(), col.name, col.width_hint, col.flags))
			throw std::bad_alloc();
	return tb;
}

void add_row(libscols_table *tb, const json &c)
{
	libscols_line *line = scols_table_new_line(tb, nullptr);
	if (!line)
		throw std::bad_alloc();
	for (size_t i = 0; i < std::size(columns); i++)
		if (scols_line_set_data(line, i, columns[i].cell(c).c_str()))
			throw std::bad_alloc();
}

std::string printed(libscols_table *tb)
{
	char *data = nullptr;
	if (scols_print_table_to_string(tb, &data) || !data)
		throw std::bad_alloc();
	const std::unique_ptr<char, decltype(&std::free)> owned(data, &std::free);
	return std::string(data) + '\n';
}

} // namespace

std::string wrap_words(const std::string &text, size_t width, size_t first_indent, size_t next_indent)
{
	std::istringstream words(text);
	std::string out, line(first_indent, ' ');
	size_t indent = first_indent;
	for (std::string word; words >> word;) {
		if (line.size() > indent && line.size() + 1 + word.size() > width) {
			out += line + '\n';
			indent = next_indent;
			line.assign(indent, ' ');
		}
		word.resize(std::min(word.size(), width > indent ? width - indent : size_t(1)));
		line += (line.size() > indent ? " " : "") + word;
	}
	return out + line + '\n';
}

namespace {

// The known kernel bugs the cases met, each once: what, the fix, the cases.
std::string known_bugs_block(const json &cases, size_t width, bool wrap)
{
	std::vector<std::pair<std::string, std::string>> bugs;	// id, its line so far
	for (const auto &c : cases) {
		const std::string v = c.value("verdict", "");
		if ((v != "xfail" && v != "xpass") || !c.contains("known_bug") || !c["known_bug"].is_object())
			continue;
		const json &b = c["known_bug"];
		const std::string id = b.value("id", "?");
		auto it = std::find_if(bugs.begin(), bugs.end(), [&](const auto &e) { return e.first == id; });
		if (it == bugs.end()) {
			bugs.emplace_back(id, id + ": " + b.value("title", "-") + "; " + b.value("fix_note", "-") + ";");
			it = bugs.end() - 1;
		}
		it->second += " " + std::string(v == "xfail" ? "expected failure " : "UNEXPECTED PASS ") +
			      c.value("id", std::string("?")) + ";";
	}
	if (bugs.empty())
		return "";
	std::string out = "known kernel bugs:\n";
	for (const auto &[id, line] : bugs)
		out += wrap ? wrap_words(line, width, 2, 6) : "  " + line + '\n';
	return out;
}

} // namespace

std::string format_table(const json &cases, size_t width, bool wrap_reasons)
{
	table_ptr tb = new_table(width);
	for (const auto &c : cases)
		add_row(tb.get(), c);
	std::string out = printed(tb.get());
	for (const auto &c : cases) {
		const std::string reason = c.value("reason", "");
		if (reason.empty())
			continue;
		const std::string line = c.value("id", std::string("?")) + ": " + c.value("verdict", "error") + ": " + reason;
		out += wrap_reasons ? wrap_words(line, width, 2, 6) : "  " + line + '\n';
	}
	return out + known_bugs_block(cases, width, wrap_reasons);
}

std::string format_table_for_stdout(const json &cases)
{
	const auto width = terminal_width();
	return format_table(cases, width.value_or(default_table_width), width.has_value());
}

std::optional<size_t> terminal_width()
{
	if (const char *columns_env = std::getenv("COLUMNS")) {
		size_t n = 0;
		const std::string_view s(columns_env);
		const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
		if (ec == std::errc() && end == s.data() + s.size() && n >= 20)
			return n;
	}
	winsize ws{};
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return std::nullopt;
}

} // namespace pinmatrix
