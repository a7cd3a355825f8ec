// SPDX-License-Identifier: GPL-2.0
#include "serial_log.hpp"

#include <fstream>
#include <regex>
#include <vector>

#include "kernel_info.hpp"
#include "kernel_log.hpp"
#include "text.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

std::string serial_excerpt(const fs::path &serial)
{
	std::ifstream in(serial);
	std::vector<std::string> lines;
	for (std::string l; std::getline(in, l);) {
		if (!l.empty() && l.back() == '\r')
			l.pop_back();
		lines.push_back(l);
	}
	static const std::regex alarm(
		"Kernel panic|BUG:|Oops|WARNING:|Call Trace|pinmatrix-init: ERROR|pinmatrix: ERROR|hung_task|"
		"blocked for more than");
	std::string out;
	int taken = 0;
	for (size_t i = 0; i < lines.size() && taken < 80; i++) {
		if (!std::regex_search(lines[i], alarm))
			continue;
		out += lines[i] + "\n";
		taken++;
		// The frames of a call trace say where it happened (a panic's task dump).
		if (lines[i].find("Call Trace") == std::string::npos)
			continue;
		for (; i + 1 < lines.size() && taken < 80; i++) {
			out += lines[i + 1] + "\n";
			taken++;
			if (lines[i + 1].find("</TASK>") != std::string::npos)
				break;
		}
	}
	if (!out.empty())
		return out;
	for (size_t i = lines.size() > 15 ? lines.size() - 15 : 0; i < lines.size(); i++)
		out += lines[i] + "\n";
	return out;
}

std::optional<int> console_job_exit(const fs::path &serial)
{
	std::ifstream in(serial);
	static const std::regex done("pinmatrix-stage2: job exit code ([0-9]+)");
	std::optional<int> code;
	std::smatch m;
	for (std::string l; std::getline(in, l);)
		if (std::regex_search(l, m, done))
			code = std::stoi(m[1]);
	return code;
}

std::string unwritten_record_line(const fs::path &serial, const std::string &id)
{
	std::ifstream in(serial);
	const std::string prefix = "pinmatrix: ERROR: case " + id + " (";
	for (std::string l; std::getline(in, l);)
		if (const auto at = l.find(prefix); at != std::string::npos) {
			while (!l.empty() && l.back() == '\r')
				l.pop_back();
			return l.substr(at);
		}
	return "";
}

std::string first_console_alarm(const fs::path &serial)
{
	std::string text;
	try {
		text = read_text_file(serial.string());
	} catch (const std::exception &) {
		return "";
	}
	const auto alarms = kernel_alarms(text);
	return alarms.empty() ? "" : trimmed(alarms.front());
}

} // namespace pinmatrix
