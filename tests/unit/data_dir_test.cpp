// SPDX-License-Identifier: GPL-2.0
// Where the binary finds its data files (lib/data_dir.hpp): an installed
// layout, a build tree's link, and neither; the default cache of root and
// of other users.

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "data_dir.hpp"

namespace fs = std::filesystem;
using pinmatrix::data_dir_for;

namespace {

class DataDir : public ::testing::Test {
protected:
	void SetUp() override
	{
		root_ = fs::temp_directory_path() / ("pinmatrix-data-dir-" + std::to_string(::getpid()));
		fs::remove_all(root_);
		fs::create_directories(root_);
	}
	void TearDown() override { fs::remove_all(root_); }

	// A data directory with its marker file at DIR.
	void make_data(const fs::path &dir)
	{
		fs::create_directories(dir / "vm/guest");
		std::ofstream(dir / "vm/guest/init") << "#!/bin/busybox sh\n";
	}

	fs::path root_;
};

TEST_F(DataDir, InstalledBinaryReadsShareBesideBin)
{
	make_data(root_ / "usr/share/pinmatrix");
	EXPECT_EQ(data_dir_for(root_ / "usr/bin/pinmatrix"), fs::canonical(root_ / "usr/share/pinmatrix"));
}

TEST_F(DataDir, BuildTreeBinaryFollowsItsLinkToTheSources)
{
	make_data(root_ / "checkout");
	fs::create_directories(root_ / "checkout/build/share");
	fs::create_directory_symlink(root_ / "checkout", root_ / "checkout/build/share/pinmatrix");
	EXPECT_EQ(data_dir_for(root_ / "checkout/build/pinmatrix"), fs::canonical(root_ / "checkout"));
}

TEST_F(DataDir, NeitherIsOneMessageNamingBothPlaces)
{
	fs::create_directories(root_ / "usr/share/pinmatrix/vm");
	try {
		data_dir_for(root_ / "usr/bin/pinmatrix");
		FAIL() << "no data directory, yet one was found";
	} catch (const std::runtime_error &e) {
		const std::string what = e.what();
		EXPECT_NE(what.find((root_ / "usr/share/pinmatrix").string()), std::string::npos) << what;
		EXPECT_NE(what.find((root_ / "usr/bin/share/pinmatrix").string()), std::string::npos) << what;
	}
}

// Root shares the host's cache; a user who may not write there gets their
// own (a non-root package build ran the CLI tests into /var/cache).
TEST(DefaultCache, RootsIsTheHostsAUsersIsInTheirHome)
{
	using pinmatrix::default_cache_dir_for;
	EXPECT_EQ(default_cache_dir_for(true, "/x/cache", "/home/u"), "/var/cache/pinmatrix");
	EXPECT_EQ(default_cache_dir_for(false, "/x/cache", "/home/u"), "/x/cache/pinmatrix");
	EXPECT_EQ(default_cache_dir_for(false, nullptr, "/home/u"), "/home/u/.cache/pinmatrix");
	// A relative XDG_CACHE_HOME is ignored (XDG Base Directory specification).
	EXPECT_EQ(default_cache_dir_for(false, "rel/cache", "/home/u"), "/home/u/.cache/pinmatrix");
	EXPECT_EQ(default_cache_dir_for(false, "", "/home/u"), "/home/u/.cache/pinmatrix");
	EXPECT_EQ(default_cache_dir_for(false, nullptr, nullptr), "/var/cache/pinmatrix");
}

} // namespace
