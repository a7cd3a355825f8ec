// SPDX-License-Identifier: GPL-2.0
#pragma once

// The run's evidence files that report.html and summary.md link: those
// beside its results.json (the serial log, the guest kernel's log, QEMU's
// log, results.json itself, ...) and, in a merged matrix run, each guest's
// (its group's directory: its report, results, serial and kernel logs).
// Only files that exist when the reports are written are linked (a link to
// nothing is worse than none), by a path relative to the reports'
// directory. A name results.json gives (vm.serial_log, kernel_log.file,
// groups[].dir, ...) is taken only as a relative path without "..", and
// every name reaches a report percent-encoded (href_of()) and escaped.

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "report_input.hpp"

namespace pinmatrix::report {

struct file_link {
	std::string label;	// "serial log", "kernel log", "results.json", "report.html"
	std::string path;	// from the reports' directory: "serial.log", "../run/guest/kernel.log"
	// path as a URL path: every byte but [A-Za-z0-9._~/-] as %XX, so that
	// no name can end an attribute, a Markdown link or become a scheme; an
	// HTML attribute still escapes it (escape_markup).
	std::string href() const;
};

// A guest of a merged run: its group's kernel and boot, directory and files.
struct guest_files {
	kernel_config kernel;
	std::string dir;	// groups[].dir as results.json has it
	std::vector<file_link> files;
};

struct run_files {
	std::vector<file_link> run;
	std::vector<guest_files> guests;		// in the order of "groups"; those with files
	std::map<kernel_config, size_t> by_kernel;	// into guests

	// The files of the guest c ran in: its group's in a merged run, else
	// the run's own.
	const std::vector<file_link> &of_case(const case_view &c) const;
};

// Where a set of reports is made from and written to.
struct report_place {
	std::filesystem::path results;		// the results file read (or written with them)
	std::filesystem::path report_dir;	// where report.html and summary.md go
	std::set<std::string> written;		// names written into report_dir with them
};

// The files of doc's run that exist now (or are in place.written),
// relative to place.report_dir.
run_files find_run_files(const json &doc, const report_place &place);

// A path as a URL path (what file_link::href() returns).
std::string percent_encoded(std::string_view path);

} // namespace pinmatrix::report
