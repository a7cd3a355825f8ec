// SPDX-License-Identifier: GPL-2.0
// What a kernel build needs of the host (vm/build_tools.hpp), on a made-up
// host: a directory of programs as its PATH, one of headers as its include
// directory.

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "build_tools.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

// A host with every program and header of the table, but those named in
// `lacking`.
struct fake_host {
	fs::path dir = fs::temp_directory_path() / ("pm-build-host-" + std::to_string(getpid()));
	build_host host{(dir / "bin").string(), {dir / "include"}};

	explicit fake_host(const std::set<std::string> &lacking = {})
	{
		fs::remove_all(dir);
		fs::create_directories(dir / "bin");
		for (const auto &t : kernel_build_tools())
			if (!lacking.count(t.name))
				add(t);
	}
	~fake_host() { fs::remove_all(dir); }
	void add(const build_tool &t) const
	{
		const bool program = t.found_as == build_tool::kind::program;
		const fs::path file = program ? dir / "bin" / t.probe : dir / "include" / t.probe;
		fs::create_directories(file.parent_path());
		std::ofstream(file) << "#!/bin/sh\n";
		if (program)
			fs::permissions(file, fs::perms::owner_all);
	}
	fs::path fragment(const std::string &text) const
	{
		std::ofstream(dir / "extra.config") << text;
		return dir / "extra.config";
	}
};

std::vector<std::string> names(const std::vector<build_tool> &tools)
{
	std::vector<std::string> out;
	for (const auto &t : tools)
		out.emplace_back(t.name);
	return out;
}

} // namespace

TEST(KernelBuildTools, AHostWithEverythingLacksNothing)
{
	fake_host h;
	EXPECT_TRUE(missing_build_tools(h.host, {.patches = true}).empty());
	EXPECT_NO_THROW(require_build_tools({}, h.host));
}

// One line: each missing tool, what needs it and where it was looked for,
// then the one apt-get command with each Debian package.
TEST(KernelBuildTools, EachMissingToolIsNamedWithTheCommandThatInstallsIt)
{
	fake_host h({"flex", "libelf headers", "depmod"});
	const auto missing = missing_build_tools(h.host, {});
	EXPECT_EQ(names(missing), (std::vector<std::string>{"flex", "libelf headers", "depmod"}));
	EXPECT_EQ(missing_build_tools_message(missing, h.host),
		  "a kernel build needs what this host lacks: flex (Kconfig's lexer; not in PATH), libelf headers "
		  "(objtool; no gelf.h in " + (h.dir / "include").string() + "), depmod (the modules' index; not in "
		  "PATH); install them: apt-get install flex libelf-dev kmod");
	try {
		require_build_tools({}, h.host);
		ADD_FAILURE() << "no unmet_need";
	} catch (const unmet_need &e) {
		EXPECT_EQ(e.what(), missing_build_tools_message(missing, h.host));
	}
}

// A file that is there but cannot be run is not the program.
TEST(KernelBuildTools, AProgramMustBeExecutable)
{
	fake_host h;
	fs::permissions(h.dir / "bin/bison", fs::perms::owner_read | fs::perms::owner_write);
	if (access((h.dir / "bin/bison").c_str(), X_OK) == 0)
		GTEST_SKIP() << "root executes any file with an x bit; none is set, yet access() says yes";
	EXPECT_EQ(names(missing_build_tools(h.host, {})), std::vector<std::string>{"bison"});
}

// What only some builds need: patch with --patch; tar, xz and depmod for
// Debian's source (a bisect builds the user's tree); pahole and cpio when
// a fragment asks for BTF or the in-kernel headers.
TEST(KernelBuildTools, ConditionalToolsAreAskedOnlyWhenTheBuildNeedsThem)
{
	fake_host h({"patch", "tar", "xz", "depmod", "pahole", "cpio"});
	EXPECT_EQ(names(missing_build_tools(h.host, {})), (std::vector<std::string>{"tar", "xz", "depmod"}));
	EXPECT_TRUE(missing_build_tools(h.host, {.source_package = false}).empty());
	EXPECT_EQ(names(missing_build_tools(h.host, {.source_package = false, .patches = true})),
		  std::vector<std::string>{"patch"});
	const auto btf = h.fragment("# a comment\nCONFIG_DEBUG_INFO_BTF=y\n# CONFIG_IKHEADERS is not set\n");
	EXPECT_EQ(names(missing_build_tools(h.host, {.source_package = false, .fragments = {btf}})),
		  std::vector<std::string>{"pahole"});
	const auto headers = h.fragment("CONFIG_IKHEADERS=y  \n");
	EXPECT_EQ(names(missing_build_tools(h.host, {.source_package = false, .fragments = {headers}})),
		  std::vector<std::string>{"cpio"});
}

// A bare host: every package once, in the table's order, in one command.
TEST(KernelBuildTools, ABareHostGetsOneInstallCommand)
{
	fake_host h;
	fs::remove_all(h.dir / "bin");
	fs::remove_all(h.dir / "include");
	const std::string message = missing_build_tools_message(missing_build_tools(h.host, {}), h.host);
	const std::string install = message.substr(message.find("; install them: apt-get install ") + 32);
	EXPECT_EQ(install, "make gcc binutils libc6-dev flex bison bc perl libelf-dev libssl-dev tar xz-utils kmod");
	EXPECT_EQ(message.find('\n'), std::string::npos);
}

// The PATH's entries in order; an empty one is the current directory.
TEST(KernelBuildTools, PathEntriesAreSearchedAsExecvpDoes)
{
	fake_host h;
	const build_host split{"/nonexistent-pm:" + h.host.path + ":", h.host.include_dirs};
	EXPECT_TRUE(missing_build_tools(split, {}).empty());
	const build_host none{"/nonexistent-pm", h.host.include_dirs};
	EXPECT_EQ(missing_build_tools(none, {}).size(), 10u);
}
