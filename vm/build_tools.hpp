// SPDX-License-Identifier: GPL-2.0
#pragma once

// What a kernel build needs of the host, checked before the build starts
// anything (a download, an unpacked tree, a lock, a log): vm/kernel-build.sh
// and vm/kernel-configure.sh (`pinmatrix kernel build`, `vm --kernel
// build`), vm/bisect-build.sh (`pinmatrix bisect`) and the kernel's own
// make, as its Documentation/process/changes.rst lists it. A host set up
// by `tools/setup-host --kernels` has them all. A build that lacked one
// failed minutes in, its cause in a log; now one line names each missing
// tool and the apt-get command that installs it.

#include <filesystem>
#include <string>
#include <vector>

namespace pinmatrix {

// One row of the table: what the build needs, how it is found, the Debian
// package that has it.
struct build_tool {
	enum class kind { program, header };
	const char *name;	// as the message names it: "flex", "libelf headers"
	kind found_as;
	const char *probe;	// a program looked up in PATH, or a header under an include dir
	const char *package;	// Debian's
	const char *why;	// what needs it
	// Needed only when the build asks it (build_request): "linux-source"
	// (vm/kernel-build.sh unpacks Debian's source and installs the
	// modules), "--patch", or a fragment's option ("CONFIG_DEBUG_INFO_BTF=y");
	// nullptr: always.
	const char *only_with = nullptr;
};
const std::vector<build_tool> &kernel_build_tools();

// Where a host's tools are looked for: its PATH and its compiler's include
// directories.
struct build_host {
	std::string path;
	std::vector<std::filesystem::path> include_dirs;
};
// This process's PATH; /usr/local/include, /usr/include.
build_host this_build_host();

// What a build asks beyond the table's always-needed rows: Debian's source
// package (vm/kernel-build.sh; a bisect builds the user's tree), patches,
// and the options its fragments set (their "CONFIG_X=y" lines).
struct build_request {
	bool source_package = true;
	bool patches = false;
	std::vector<std::filesystem::path> fragments;
};

// The table's rows the host lacks, in table order.
std::vector<build_tool> missing_build_tools(const build_host &host, const build_request &request);

// "a kernel build needs what this host lacks: flex (Kconfig's lexer; not in
// PATH), ...; install them: apt-get install flex ..." (each package once,
// in table order).
std::string missing_build_tools_message(const std::vector<build_tool> &missing, const build_host &host);

// Throws unmet_need with that message when anything is missing.
void require_build_tools(const build_request &request, const build_host &host = this_build_host());

} // namespace pinmatrix
