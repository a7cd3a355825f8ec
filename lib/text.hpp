// SPDX-License-Identifier: GPL-2.0
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace pinmatrix {

// "0x1a2b": PFNs, addresses, flags and PTEs, as the kernel prints them.
inline std::string hex(uint64_t v)
{
	char buf[24];
	std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
	return buf;
}

// s without trailing white space (what a sysfs or proc file ends with).
inline std::string trimmed(std::string s)
{
	while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
		s.pop_back();
	return s;
}

// The items one after another with sep between, each as text gives it (a
// callable or a pointer to a member): "1,2" for
// join(ids, ",", [](int id) { return std::to_string(id); }).
template <typename Range, typename Text> std::string join(const Range &items, std::string_view sep, Text text)
{
	std::string out;
	bool first = true;
	for (const auto &item : items) {
		if (!first)
			out += sep;
		out += std::string_view(std::invoke(text, item));
		first = false;
	}
	return out;
}

// Strings (or string_views) one after another with sep between: "a, b".
template <typename Range> std::string join(const Range &items, std::string_view sep)
{
	return join(items, sep, [](const auto &item) { return std::string_view(item); });
}

// A message as a terminal or a log gets it: one line, every control byte
// shown as \xNN (no escape sequence reaches the terminal), and one longer
// than max bytes cut after them, saying how much was left out (a 10 MB
// path in a matrix file gets a short line, not a 10 MB one). Linear.
inline std::string shown_message(std::string_view s, size_t max = 1000)
{
	static constexpr std::string_view cut = " [...] ";
	std::string left_out;
	if (s.size() > max) {
		left_out = " (" + std::to_string(s.size() - max) + " bytes left out)";
		s = s.substr(0, max);
	}
	std::string out;
	out.reserve(s.size());
	for (const char ch : s) {
		const auto byte = static_cast<unsigned char>(ch);
		if (byte < 0x20 || byte == 0x7f) {
			char buf[8];
			std::snprintf(buf, sizeof(buf), "\\x%02x", byte);
			out += buf;
		} else {
			out += ch;
		}
	}
	if (!left_out.empty())
		out += std::string(cut) + left_out;
	return out;
}

} // namespace pinmatrix
