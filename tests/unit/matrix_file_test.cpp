// SPDX-License-Identifier: GPL-2.0
// Matrix files and boot placements: what the file says is what runs, and a
// bad file is refused with its line before anything boots.

#include <algorithm>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "boot.hpp"
#include "matrix_file.hpp"
#include "promises.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

class MatrixFile : public ::testing::Test {
protected:
	fs::path dir = fs::temp_directory_path() / ("pm-matrix-" + std::to_string(getpid()));
	void SetUp() override { fs::create_directories(dir); }
	void TearDown() override { fs::remove_all(dir); }

	fs::path write(const std::string &name, const std::string &text)
	{
		std::ofstream(dir / name) << text;
		return dir / name;
	}

	// The usage_error's message, or "" when the file loaded.
	std::string error_of(const std::string &text)
	{
		try {
			load_matrix(write("m.toml", text));
		} catch (const usage_error &e) {
			return e.what();
		}
		return "";
	}
};

} // namespace

TEST_F(MatrixFile, DefaultMatrixCoversEveryPlacementOnEveryStockKernel)
{
	const auto def = load_matrix(fs::path(PINMATRIX_SOURCE_DIR) / "matrix/default.toml");
	std::set<std::pair<std::string, std::string>> groups;
	for (const auto &g : def.groups)
		groups.insert({g.kernel.name, g.boot});
	const std::map<std::string, std::string> specs = {
		{"debian-6.1", "debian:6.1"}, {"debian-6.12", "debian:6.12+deb12"}, {"debian-7.2", "debian:7.2"}};
	for (const auto &[k, spec] : specs)
		for (const auto &b : boot_placements())
			EXPECT_EQ(groups.count({k, b.name}), b.comparison_only ? 0u : 1u) << k << " " << b.name;
	for (const auto &g : def.groups)
		EXPECT_EQ(g.kernel.spec, specs.at(g.kernel.name)) << "a default kernel that needs a build";
}

TEST_F(MatrixFile, BuildsMatrixBuildsEachSeriesWithTheFragment)
{
	const auto def = load_matrix(fs::path(PINMATRIX_SOURCE_DIR) / "matrix/builds.toml");
	std::set<std::string> specs;
	for (const auto &g : def.groups)
		specs.insert(g.kernel.spec.substr(0, g.kernel.spec.find(':')));
	EXPECT_EQ(specs, (std::set<std::string>{"build", "build@6.12"}));
}

TEST_F(MatrixFile, SeriesKeyNamesTheLinuxSource)
{
	write("frag.config", "CONFIG_CMA=y\n");
	const std::string head = "[kernels.k]\nsource = \"build\"\nfragment = \"frag.config\"\n";
	const std::string run = "[[run]]\nkernel = \"k\"\nboots = [\"cma\"]\n";
	const auto def = load_matrix(write("m.toml", head + "series = \"7.2\"\n" + run));
	EXPECT_EQ(def.groups.at(0).kernel.spec, "build@7.2:" + (dir / "frag.config").string());
	EXPECT_NE(error_of(head + "series = \"../7\"\n" + run).find("not a kernel series"), std::string::npos);
}

TEST_F(MatrixFile, RelativePathsAreRelativeToTheFile)
{
	write("frag.config", "CONFIG_CMA=y\n");
	write("fix.patch", "--- a\n+++ b\n");
	const auto def = load_matrix(write("m.toml", R"(
[kernels.k]
source = "build"
fragment = "frag.config"
patches = ["fix.patch"]
[[run]]
kernel = "k"
boots = ["cma"]
cases = ["A", "B"]
)"));
	ASSERT_EQ(def.groups.size(), 1u);
	EXPECT_EQ(def.groups[0].kernel.spec, "build:" + (dir / "frag.config").string());
	ASSERT_EQ(def.groups[0].kernel.patches.size(), 1u);
	EXPECT_EQ(def.groups[0].kernel.patches[0], dir / "fix.patch");
	EXPECT_EQ(def.groups[0].cases, (std::vector<std::string>{"A", "B"}));
}

TEST_F(MatrixFile, TreeAndDebsKernelsTakeADirRelativeToTheFile)
{
	for (const std::string source : {"image", "tree", "debs"}) {
		const auto def = load_matrix(write("m.toml", "[kernels.k]\nsource = \"" + source +
								"\"\ndir = \"kernels/mine\"\n[[run]]\nkernel = \"k\"\n"
								"boots = [\"movable\"]\n"));
		ASSERT_EQ(def.groups.size(), 1u) << source;
		EXPECT_EQ(def.groups[0].kernel.spec, source + ":" + (dir / "kernels/mine").string());
	}
}

// matrix/mutants.toml: every value of the mutant kernel's boot parameter,
// 0 and each kernel mutant row's (matrix/promises.cpp), on each series whose
// patch (mutants-SERIES.patch) the row names, and nowhere else: a mutant
// the pin and race suites catch on the movable and cma boots, one only
// backing rows catch on the ordinary boot (its rows need a page GUP-fast
// may pin in place), and 0 wherever either runs; a run's append is its
// group's own.
TEST_F(MatrixFile, MutantsMatrixBootsEveryKernelMutantOnBothBoots)
{
	const auto def = load_matrix(fs::path(PINMATRIX_SOURCE_DIR) / "matrix/mutants.toml");
	std::set<std::tuple<std::string, std::string, std::string>> groups;
	for (const auto &g : def.groups)
		groups.insert({g.kernel.name, g.boot, g.append});
	std::set<std::tuple<std::string, std::string, int>> expected;
	const auto add = [&](const std::string &kernel, bool backing, int n) {
		for (const char *boot : backing ? std::vector<const char *>{"ordinary"}
						: std::vector<const char *>{"movable", "cma"})
			expected.insert({kernel, boot, n});
	};
	for (const auto &m : mutant_table()) {
		if (m.kind != mutant_kind::kernel_patch || !m.boot_value)
			continue;
		const bool backing = std::all_of(m.caught_by.begin(), m.caught_by.end(),
						 [](std::string_view c) { return c.starts_with("backing/"); });
		for (const auto p : m.patches) {
			const std::string kernel(p.substr(0, p.size() - std::string_view(".patch").size()));
			add(kernel, backing, m.boot_value);
			add(kernel, backing, 0);
		}
	}
	for (const auto &[k, boot, n] : expected)
		EXPECT_TRUE(groups.count({k, boot, std::string(mutant_boot_parameter) + "=" + std::to_string(n)}))
			<< k << " " << boot << " " << n;
	EXPECT_EQ(groups.size(), expected.size()) << "a mutant where no row of the table expects it";
	EXPECT_EQ(groups.size(), def.groups.size()) << "a group twice";
}

TEST_F(MatrixFile, AppendIsARunsOwnAndMustBePlainWords)
{
	const std::string kernels = "[kernels.k]\nsource = \"debian\"\n";
	const std::string run = "[[run]]\nkernel = \"k\"\nboots = [\"movable\"]\n";
	const auto def = load_matrix(write("ok.toml", kernels + run + "append = \"a=1\"\n" + run + "append = \"a=2\"\n"));
	ASSERT_EQ(def.groups.size(), 2u);
	EXPECT_EQ(def.groups[0].append, "a=1");
	EXPECT_EQ(def.groups[1].append, "a=2");
	EXPECT_NE(error_of(kernels + run + "append = \"a=1\"\n" + run + "append = \"a=1\"\n").find("listed twice"),
		  std::string::npos);
	for (const char *bad : {"", "a=\\\"b\\\"", "x;reboot", "a\\nb"})
		EXPECT_NE(error_of(kernels + run + "append = \"" + bad + "\"\n").find("'append' must be"), std::string::npos)
			<< bad;
}

// A run's guest RAM (vm --memory): its groups', whole MiB from 256 to
// 16384, and none where a run says nothing (the boot's own need).
TEST_F(MatrixFile, MemoryIsARunsOwnWholeMiB)
{
	const std::string kernels = "[kernels.k]\nsource = \"debian\"\n";
	const std::string run = "[[run]]\nkernel = \"k\"\nboots = [\"movable\", \"cma\"]\n";
	const auto def = load_matrix(write("mem.toml", kernels + run + "memory = 3584\n" + run + "append = \"a=1\"\n"));
	ASSERT_EQ(def.groups.size(), 4u);
	EXPECT_EQ(def.groups[0].memory_mib, 3584u);
	EXPECT_EQ(def.groups[1].memory_mib, 3584u);
	EXPECT_EQ(def.groups[2].memory_mib, 0u);
	for (const char *bad : {"255", "16385", "-1", "\"3584\"", "3584.5"})
		EXPECT_NE(error_of(kernels + run + "memory = " + bad + "\n").find("m.toml:6: 'memory' must be a whole "
										 "number of MiB, 256 to 16384"),
			  std::string::npos)
			<< bad << ": " << error_of(kernels + run + "memory = " + bad + "\n");
}

TEST_F(MatrixFile, BadFilesNameTheLineAndTheProblem)
{
	const std::string head = "[kernels.k]\nsource = \"debian\"\n";
	struct {
		std::string text;
		std::string says;
	} bad[] = {
		{"[kernels.k\n", "m.toml:1:"},
		{head, "no [[run]] entry"},
		{"[[run]]\nkernel = \"k\"\nboots = [\"movable\"]\n", "no [kernels.<name>]"},
		{head + "[[run]]\nkernel = \"nope\"\nboots = [\"movable\"]\n", ":3: kernel 'nope' is not defined"},
		{head + "[[run]]\nkernel = \"k\"\nboots = [\"moveable\"]\n", "unknown boot 'moveable'"},
		{head + "[[run]]\nkernel = \"k\"\nplacements = [\"movable\"]\n", "'placements' is now 'boots'"},
		{head + "[[run]]\nkernel = \"k\"\nboots = []\n", "non-empty list"},
		// Ran every case before: the empty list read as "not given".
		{head + "[[run]]\nkernel = \"k\"\nboots = [\"movable\"]\ncases = []\n",
		 "'cases' must be a non-empty list of strings (leave it out for every one)"},
		{head + "[[run]]\nkernel = \"k\"\nboots = [\"movable\", \"movable\"]\n", "listed twice"},
		{head + "[[run]]\nkernel = \"k\"\nplacement = [\"movable\"]\n", "unknown key 'placement'"},
		{"[kernels.k]\nsource = \"fedora\"\n[[run]]\nkernel = \"k\"\nboots = [\"movable\"]\n", "expected debian, build, image, tree or debs"},
		{"[kernels.k]\nsource = \"build\"\nfragment = \"missing.config\"\n[[run]]\nkernel = \"k\"\nboots = [\"cma\"]\n", "not found"},
	};
	for (const auto &b : bad) {
		const auto err = error_of(b.text);
		EXPECT_NE(err.find(b.says), std::string::npos) << b.text << "\n-> " << err;
	}
	EXPECT_THROW(load_matrix(dir / "absent.toml"), usage_error);
}

// A kernel's name becomes OUT/groups/<name>-<placement>/: one that would
// leave that directory, or that a NUL would cut, is refused with its line
// (issue 13, item 1).
TEST_F(MatrixFile, KernelNamesThatAreNotOnePathComponentAreRefused)
{
	for (const std::string name : {"../../escaped", "..", ".", "a/b", "a\\u0000b", ".hidden", "-x", "a b",
				       "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"}) {
		const std::string text = "[kernels.\"" + name + "\"]\nsource = \"debian\"\n[[run]]\nkernel = \"" +
					 name + "\"\nboots = [\"movable\"]\n";
		const auto err = error_of(text);
		EXPECT_NE(err.find("m.toml:1: kernel name '"), std::string::npos) << name << " -> " << err;
		EXPECT_NE(err.find("' is not a name"), std::string::npos) << name << " -> " << err;
	}
	EXPECT_EQ(error_of("[kernels.\"debian-6.12+deb12_x\"]\nsource = \"debian\"\n[[run]]\n"
			   "kernel = \"debian-6.12+deb12_x\"\nboots = [\"movable\"]\n"), "");
}

// A NUL in any string of the file would cut the path or argument it becomes.
TEST_F(MatrixFile, NulInAStringIsRefused)
{
	write("frag.config", "CONFIG_CMA=y\n");
	const auto err = error_of("[kernels.k]\nsource = \"build\"\nfragment = \"frag.config\\u0000/../x\"\n"
				  "[[run]]\nkernel = \"k\"\nboots = [\"cma\"]\n");
	EXPECT_NE(err.find("m.toml:3: 'fragment' holds a NUL"), std::string::npos) << err;
}

// A fragment must be a Kconfig fragment and a patch a patch: the file check
// refuses them with the line, before any group runs (items 2 and 6).
TEST_F(MatrixFile, FragmentAndPatchMustBeWhatTheySay)
{
	write("frag.config", "CONFIG_CMA=y\n");
	write("empty.patch", "");
	write("notes.patch", "just some notes\n");
	const std::string run = "[[run]]\nkernel = \"k\"\nboots = [\"cma\"]\n";
	const auto kernel = [&](const std::string &keys) {
		return "[kernels.k]\nsource = \"build\"\n" + keys + run;
	};
	struct {
		std::string text, says;
	} bad[] = {
		{kernel("fragment = \"/etc/passwd\"\n"), ":3: fragment /etc/passwd: line 1 'root:"},
		{kernel("fragment = \"/dev/null\"\n"), "fragment /dev/null: is a character device, not a regular file"},
		{kernel("fragment = \"frag.config\"\npatches = [\"empty.patch\"]\n"), "empty.patch: is empty"},
		{kernel("fragment = \"frag.config\"\npatches = [\"notes.patch\"]\n"), "notes.patch: is not a patch"},
		{kernel("fragment = \"frag.config\"\npatches = [\"/dev/null\"]\n"), "is a character device"},
	};
	for (const auto &b : bad) {
		const auto err = error_of(b.text);
		EXPECT_NE(err.find(b.says), std::string::npos) << b.text << "\n-> " << err;
	}
}

TEST(BootPlacement, KconfigNeedsDecideSkipWithTheReason)
{
	const std::string stock = "CONFIG_MIGRATION=y\n# CONFIG_CMA is not set\nCONFIG_HUGETLB_PAGE=y\n";
	const std::string built = "CONFIG_CMA=y\nCONFIG_HUGETLB_PAGE=y\nCONFIG_RDMA_RXE=m\n";
	EXPECT_EQ(kconfig_value(built, "CONFIG_RDMA_RXE"), "m");
	EXPECT_EQ(kconfig_value(stock, "CONFIG_CMA"), "");
	EXPECT_EQ(unmet_kconfig(find_boot_placement("cma"), stock, "6.1.0-57-amd64"),
		  "cma: CONFIG_CMA is not set in 6.1.0-57-amd64");
	EXPECT_FALSE(unmet_kconfig(find_boot_placement("cma"), built, "x").has_value());
	EXPECT_FALSE(unmet_kconfig(find_boot_placement("movable"), stock, "x").has_value());
	EXPECT_TRUE(unmet_kconfig(find_boot_placement("hugetlb_cma"), stock, "x").has_value());
	EXPECT_THROW(find_boot_placement("zone_movable"), usage_error);
}

TEST(BootPlacement, EachRestrictedPlacementHasAKernelParameter)
{
	for (const auto &b : boot_placements()) {
		if (b.restricted == placement::ordinary)
			EXPECT_STREQ(b.append, "") << b.name;
		else
			EXPECT_GT(std::string(b.append).size(), 0u) << b.name;
	}
	// A 1 GiB gigantic page needs RAM beyond it.
	EXPECT_GT(find_boot_placement("hugetlb_cma").memory_mib, 2048u);
}

// The flavours' matrix: each of bookworm's 6.12 and unstable's 7.2 as the
// plain, rt and cloud flavour, in the movable boot.
TEST_F(MatrixFile, FlavoursMatrixRunsEachFlavourOfEachSeries)
{
	const auto def = load_matrix(fs::path(PINMATRIX_SOURCE_DIR) / "matrix/flavours.toml");
	std::set<std::string> specs;
	for (const auto &g : def.groups) {
		specs.insert(g.kernel.spec);
		EXPECT_EQ(g.boot, "movable") << g.kernel.spec;
	}
	EXPECT_EQ(specs, (std::set<std::string>{"debian:6.12+deb12", "debian:6.12+deb12-rt", "debian:6.12+deb12-cloud",
						 "debian:7.2", "debian:7.2-rt", "debian:7.2-cloud"}));
}
