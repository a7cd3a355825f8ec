// SPDX-License-Identifier: GPL-2.0
// write_file_atomically() (lib/atomic_file.hpp): a new file or a regular
// file replaced whole, through a temporary file made here; never through a
// link someone planted, never over a link, FIFO, device or directory.

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "atomic_file.hpp"
#include "sys_error.hpp"
#include "unique_fd.hpp"

using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

struct scratch {
	fs::path dir;
	scratch()
	{
		std::string pattern = (fs::temp_directory_path() / "pm-atomic-XXXXXX").string();
		dir = mkdtemp(pattern.data());
	}
	~scratch() { fs::remove_all(dir); }
	std::vector<std::string> names() const
	{
		std::vector<std::string> out;
		for (const auto &e : fs::directory_iterator(dir))
			out.push_back(e.path().filename().string());
		std::sort(out.begin(), out.end());
		return out;
	}
};

std::string text_of(const fs::path &p)
{
	std::ifstream in(p);
	std::stringstream s;
	s << in.rdbuf();
	return s.str();
}

void put(const fs::path &p, const std::string &text)
{
	std::ofstream(p) << text;
}

} // namespace

TEST(AtomicFile, ANewFileGetsTheTextAndTheUmasksMode)
{
	scratch s;
	const mode_t old = umask(027);
	write_file_atomically(s.dir / "results.json", "new\n");
	umask(old);
	EXPECT_EQ(text_of(s.dir / "results.json"), "new\n");
	struct stat st;
	ASSERT_EQ(stat((s.dir / "results.json").c_str(), &st), 0);
	EXPECT_EQ(st.st_mode & 0777, 0640u);
	EXPECT_EQ(s.names(), std::vector<std::string>{"results.json"});
}

TEST(AtomicFile, ARegularFileIsReplacedWhole)
{
	scratch s;
	put(s.dir / "summary.md", "old and longer\n");
	write_file_atomically(s.dir / "summary.md", "new\n");
	EXPECT_EQ(text_of(s.dir / "summary.md"), "new\n");
	EXPECT_EQ(s.names(), std::vector<std::string>{"summary.md"});
}

// The old scheme wrote to FILE.tmp.PID, following a link planted there: the
// file the link names, outside the directory, was overwritten.
TEST(AtomicFile, ALinkPlantedForTheTemporaryNameIsNotFollowed)
{
	scratch s;
	put(s.dir / "outside", "precious\n");
	fs::create_directory(s.dir / "run");
	fs::create_symlink(s.dir / "outside", s.dir / "run" / ("results.ktap.tmp." + std::to_string(getpid())));
	write_file_atomically(s.dir / "run" / "results.ktap", "KTAP\n");
	EXPECT_EQ(text_of(s.dir / "outside"), "precious\n");
	EXPECT_EQ(text_of(s.dir / "run" / "results.ktap"), "KTAP\n");
	EXPECT_FALSE(fs::is_symlink(s.dir / "run" / "results.ktap"));
}

TEST(AtomicFile, WhatIsNotARegularFileIsRefusedAndLeftAsItWas)
{
	scratch s;
	put(s.dir / "outside", "precious\n");
	fs::create_symlink(s.dir / "outside", s.dir / "link");
	fs::create_symlink(s.dir / "nowhere", s.dir / "dangling");
	ASSERT_EQ(mkfifo((s.dir / "fifo").c_str(), 0600), 0);
	fs::create_directory(s.dir / "dir");
	for (const char *name : {"link", "dangling", "fifo", "dir"})
		EXPECT_THROW(write_file_atomically(s.dir / name, "x"), usage_error) << name;
	EXPECT_THROW(write_file_atomically(s.dir / "newdir/", "x"), usage_error);
	EXPECT_EQ(text_of(s.dir / "outside"), "precious\n");
	EXPECT_TRUE(fs::is_symlink(s.dir / "link") && fs::is_symlink(s.dir / "dangling"));
	EXPECT_TRUE(fs::is_fifo(s.dir / "fifo"));
	const std::vector<std::string> as_made = {"dangling", "dir", "fifo", "link", "outside"};
	EXPECT_EQ(s.names(), as_made);
}

// A directory it cannot write: an errno, and nothing left behind.
TEST(AtomicFile, AFailureLeavesNoTemporaryFile)
{
	scratch s;
	EXPECT_THROW(write_file_atomically(s.dir / "absent" / "results.json", "x"), std::system_error);
	EXPECT_TRUE(s.names().empty());
}

TEST(AtomicFileSet, WaitsWhileAnotherWriterHoldsTheDirectory)
{
	scratch s;
	unique_fd other(open(s.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	ASSERT_EQ(flock(other.get(), LOCK_EX), 0);
	std::thread writer([&] { write_file_set(s.dir, {{"a", "1"}, {"b", "2"}}); });
	std::this_thread::sleep_for(std::chrono::milliseconds(300));
	EXPECT_EQ(s.names(), std::vector<std::string>{}) << "written while another writer held the directory";
	other.reset();
	writer.join();
	EXPECT_EQ(s.names(), (std::vector<std::string>{"a", "b"}));
	EXPECT_EQ(text_of(s.dir / "b"), "2");
}

TEST(AtomicFileSet, ARefusedFileWritesNoneOfTheSet)
{
	scratch s;
	ASSERT_EQ(mkfifo((s.dir / "b").c_str(), 0600), 0);
	EXPECT_THROW(write_file_set(s.dir, {{"a", "1"}, {"b", "2"}}), usage_error);
	EXPECT_EQ(s.names(), std::vector<std::string>{"b"});
}
