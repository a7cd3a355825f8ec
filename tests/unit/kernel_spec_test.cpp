// SPDX-License-Identifier: GPL-2.0
// --kernel as parse_kernel_spec reads it: what it refuses, before a cache
// directory, a lock, a download or a build (issue 13, items 5 and 6).

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "kernels.hpp"
#include "sys_error.hpp"

namespace fs = std::filesystem;

namespace {

struct scratch {
	fs::path dir;
	explicit scratch(const std::string &name)
		: dir(fs::temp_directory_path() / (name + "-" + std::to_string(getpid())))
	{
		fs::remove_all(dir);
		fs::create_directories(dir);
	}
	~scratch() { fs::remove_all(dir); }
	fs::path write(const std::string &name, const std::string &text) const
	{
		FILE *f = std::fopen((dir / name).c_str(), "w");
		std::fputs(text.c_str(), f);
		std::fclose(f);
		return dir / name;
	}
	fs::path fifo(const std::string &name) const
	{
		mkfifo((dir / name).c_str(), 0600);
		return dir / name;
	}
};

} // namespace

TEST(KernelSpec, EmptyNameAfterTheColonIsRefused)
{
	for (const std::string k : {"build:", "debian:", "tree:", "debs:", "image:", "build@6.12:"}) {
		try {
			pinmatrix::parse_kernel_spec(k);
			ADD_FAILURE() << k << " was accepted";
		} catch (const pinmatrix::usage_error &e) {
			EXPECT_NE(std::string(e.what()).find("empty after ':'"), std::string::npos) << k << ": " << e.what();
		}
	}
}

// build:FRAGMENT takes a Kconfig fragment, not any readable file (item 6).
TEST(KernelSpec, FragmentMustLookLikeOne)
{
	const scratch s("pm-spec-frag");
	const auto frag = s.write("ok.config", "# mine\nCONFIG_CMA=y\n# CONFIG_KASAN is not set\n\n");
	EXPECT_EQ(pinmatrix::parse_kernel_spec("build:" + frag.string()).fragments.size(), 1u);
	struct {
		std::string file, says;
	} bad[] = {
		{"/etc/passwd", "line 1 'root:"},
		{"/dev/null", "is a character device, not a regular file"},
		{s.write("comments.config", "# nothing\n").string(), "sets no CONFIG_ option"},
		{s.fifo("fifo.config").string(), "is a FIFO"},
	};
	for (const auto &b : bad) {
		try {
			pinmatrix::parse_kernel_spec("build:" + b.file);
			ADD_FAILURE() << b.file << " was accepted";
		} catch (const pinmatrix::usage_error &e) {
			EXPECT_NE(std::string(e.what()).find(b.says), std::string::npos) << b.file << ": " << e.what();
		}
	}
}
