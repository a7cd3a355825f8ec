// SPDX-License-Identifier: GPL-2.0
#include "build_tools.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>

#include "sys_error.hpp"
#include "text.hpp"

namespace pinmatrix {

namespace fs = std::filesystem;

const std::vector<build_tool> &kernel_build_tools()
{
	using k = build_tool::kind;
	// From vm/kernel-build.sh, vm/kernel-configure.sh, vm/bisect-build.sh,
	// the kernel's changes.rst ("Current Minimal Requirements") and
	// tools/setup-host's kernel build packages. Not here: what Debian marks
	// Essential (bash, coreutils, grep, sed, dpkg), pkg-config (make's
	// {g,x}config only), rsync (headers_install, which no build here runs),
	// zstd (Debian's kernels of other suites, not builds).
	static const std::vector<build_tool> table = {
		{"make", k::program, "make", "make", "the kernel's build"},
		{"gcc", k::program, "gcc", "gcc", "the compiler"},
		{"ld", k::program, "ld", "binutils", "the linker and assembler"},
		{"libc headers", k::header, "stdio.h", "libc6-dev", "the build's host programs: Kconfig, fixdep"},
		{"flex", k::program, "flex", "flex", "Kconfig's lexer"},
		{"bison", k::program, "bison", "bison", "Kconfig's parser"},
		{"bc", k::program, "bc", "bc", "the kernel's time constants"},
		{"perl", k::program, "perl", "perl", "the kernel's build scripts"},
		{"libelf headers", k::header, "gelf.h", "libelf-dev", "objtool"},
		{"openssl headers", k::header, "openssl/evp.h", "libssl-dev",
		 "the kernel's certificate and signing tools (changes.rst: kernels from 4.3)"},
		{"tar", k::program, "tar", "tar", "unpacking linux-source", "linux-source"},
		{"xz", k::program, "xz", "xz-utils", "unpacking linux-source's .tar.xz", "linux-source"},
		{"depmod", k::program, "depmod", "kmod", "the modules' index", "linux-source"},
		{"patch", k::program, "patch", "patch", "applying --patch", "--patch"},
		{"pahole", k::program, "pahole", "dwarves", "BTF (a fragment's CONFIG_DEBUG_INFO_BTF=y)",
		 "CONFIG_DEBUG_INFO_BTF=y"},
		{"cpio", k::program, "cpio", "cpio", "the in-kernel headers (a fragment's CONFIG_IKHEADERS=y)",
		 "CONFIG_IKHEADERS=y"},
	};
	return table;
}

build_host this_build_host()
{
	const char *path = std::getenv("PATH");
	return {path ? path : "", {"/usr/local/include", "/usr/include"}};
}

namespace {

// An executable regular file named `program` in a directory of `path`
// (an empty entry is the current directory, as for execvp).
bool in_path(const std::string &path, const char *program)
{
	size_t from = 0;
	for (size_t at = 0; at != std::string::npos; from = at + 1) {
		at = path.find(':', from);
		const std::string dir = path.substr(from, at == std::string::npos ? at : at - from);
		const fs::path file = fs::path(dir.empty() ? "." : dir) / program;
		std::error_code ec;
		if (fs::is_regular_file(file, ec) && access(file.c_str(), X_OK) == 0)
			return true;
	}
	return false;
}

bool has_header(const build_host &host, const char *header)
{
	std::error_code ec;
	for (const auto &dir : host.include_dirs)
		if (fs::is_regular_file(dir / header, ec))
			return true;
	return false;
}

// What the build asks: "linux-source", "--patch", and each fragment's
// "CONFIG_X=..." lines.
std::set<std::string> asked(const build_request &request)
{
	std::set<std::string> asks;
	if (request.source_package)
		asks.insert("linux-source");
	if (request.patches)
		asks.insert("--patch");
	for (const auto &f : request.fragments) {
		std::ifstream in(f);
		for (std::string line; std::getline(in, line);)
			if (line.rfind("CONFIG_", 0) == 0)
				asks.insert(trimmed(line));
	}
	return asks;
}

bool is_found(const build_tool &t, const build_host &host)
{
	return t.found_as == build_tool::kind::program ? in_path(host.path, t.probe) : has_header(host, t.probe);
}

// "not in PATH", "no gelf.h in /usr/local/include or /usr/include".
std::string where_not_found(const build_tool &t, const build_host &host)
{
	if (t.found_as == build_tool::kind::program)
		return "not in PATH";
	return std::string("no ") + t.probe + " in " +
	       join(host.include_dirs, " or ", [](const fs::path &d) { return d.string(); });
}

} // namespace

std::vector<build_tool> missing_build_tools(const build_host &host, const build_request &request)
{
	const auto asks = asked(request);
	std::vector<build_tool> missing;
	for (const auto &t : kernel_build_tools())
		if ((!t.only_with || asks.count(t.only_with)) && !is_found(t, host))
			missing.push_back(t);
	return missing;
}

std::string missing_build_tools_message(const std::vector<build_tool> &missing, const build_host &host)
{
	std::string lacks, install;
	std::set<std::string> packages;
	for (const auto &t : missing) {
		lacks += std::string(lacks.empty() ? "" : ", ") + t.name + " (" + t.why + "; " +
			 where_not_found(t, host) + ")";
		if (packages.insert(t.package).second)
			install += std::string(" ") + t.package;
	}
	return "a kernel build needs what this host lacks: " + lacks + "; install them: apt-get install" + install;
}

void require_build_tools(const build_request &request, const build_host &host)
{
	if (const auto missing = missing_build_tools(host, request); !missing.empty())
		throw unmet_need(missing_build_tools_message(missing, host));
}

} // namespace pinmatrix
