// SPDX-License-Identifier: GPL-2.0
// The CLI's contract with scripts: exit 2 and one clear message for bad
// input, and nothing written when the input was bad.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <gtest/gtest.h>

#include "../command.hpp"

using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

TEST(Cli, HelpAndCasesExitZero)
{
	EXPECT_EQ(run_pinmatrix("--help").exit_code, 0);
	auto cases = run_pinmatrix("cases");
	EXPECT_EQ(cases.exit_code, 0);
	for (const char *id : {"A (movable-none)", "B (movable-foll-pin)", "C (movable-foll-pin-longterm)",
			       "D (ordinary-foll-pin)", "movable-mlock", "ordinary-gup-ref"})
		EXPECT_NE(cases.output.find(id), std::string::npos) << id;
}

TEST(Cli, BadUsageExitsTwoWithAMessage)
{
	struct {
		const char *args;
		const char *says;
	} bad[] = {
		{"", "subcommand"},
		{"frobnicate", "frobnicate"},
		{"run --cases Z", "unknown case 'Z'"},
		{"run --case-timeout -3", "case-timeout"},
		{"run --module /nonexistent.ko", "/nonexistent.ko"},
		{"run --fault explode", "panic-at=CASE"},
		{"run --fault panic-at=Q", "unknown case 'Q'"},
		{"run --fault kernel-hang-at=A", "case A takes no pin through /dev/pinmatrix"},
		{"vm", "--out"},
		{"vm --out /tmp/x --memory 12", "memory"},
		{"vm --out /tmp/x --cases A --guest-cmd true", "excludes"},
		{"vm --out /tmp/x --kernel build:nosuch", "NAME one of: debug"},
		{"kernel build --kernel build:nosuch", "no Kconfig fragment at nosuch"},
		{"kernel build --kernel build:+", "an empty fragment name"},
		{"kernel build --kernel image:", "image dir"},
		{"kernel build --kernel build@six", "build@SERIES needs a kernel series"},
		{"kernel build --kernel build@6.12:nosuch", "NAME one of: debug"},
		{"vm --out /tmp/x --kernel debian:6.12/../..", "not a Debian kernel ABI name"},
		{"kernel build --kernel tree:", "needs a directory"},
		{"kernel build --kernel debs:", "needs a directory"},
		{"kernel build --kernel tree:/nonexistent-pm-tree", "no directory /nonexistent-pm-tree"},
		{"vm --out /tmp/x --kernel debs:/nonexistent-pm-debs", "no directory /nonexistent-pm-debs"},
		{"kernel build --kernel fedora:41", "tree:DIR or debs:DIR"},
	};
	for (const auto &b : bad) {
		auto r = run_pinmatrix(b.args);
		EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.output;
		EXPECT_NE(r.output.find(b.says), std::string::npos) << b.args << "\n" << r.output;
	}
}

TEST(Cli, BadInputWritesNothing)
{
	const fs::path out = fs::temp_directory_path() / ("pm-cli-" + std::to_string(getpid()));
	fs::remove_all(out);
	for (const std::string args : {"vm --kernel fedora:41", "vm --kernel debian:../../etc",
				       "vm --kernel tree:/nonexistent-pm", "vm --kernel debs:/nonexistent-pm",
				       "vm --cases nope", "run --cases nope"}) {
		auto r = run_pinmatrix(args + " --out " + out.string());
		EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
		EXPECT_FALSE(fs::exists(out)) << args;
	}
}

// tree:DIR and debs:DIR are checked before anything is written: a file,
// a dir that is not a built kernel tree, a dir without .debs.
TEST(Cli, TreeAndDebsNeedTheirKindOfDirectory)
{
	const fs::path base = fs::temp_directory_path() / ("pm-cli-dirs-" + std::to_string(getpid()));
	fs::remove_all(base);
	const auto touch = [&](const fs::path &f) {
		fs::create_directories(f.parent_path());
		std::fclose(std::fopen(f.c_str(), "w"));
	};
	touch(base / "a-file");
	touch(base / "source-only/Makefile");		// no .config
	touch(base / "configured/Makefile");		// no image
	touch(base / "configured/.config");
	touch(base / "no-debs/linux-image.txt");
	const fs::path out = base / "out", cache = base / "cache";
	struct {
		std::string kernel;
		std::string says;
	} bad[] = {
		{"tree:" + (base / "a-file").string(), "a-file is not a directory"},
		{"debs:" + (base / "a-file").string(), "a-file is not a directory"},
		{"tree:" + (base / "source-only").string(), "is not a kernel build tree (no .config or Makefile)"},
		{"tree:" + (base / "no-debs").string(), "is not a kernel build tree (no .config or Makefile)"},
		{"tree:" + (base / "configured").string(), "is not built (no arch/x86/boot/bzImage or vmlinux"},
		{"debs:" + (base / "no-debs").string(), "no .deb files in"},
		{"debs:" + (base / "missing").string(), "no directory"},
	};
	for (const auto &b : bad)
		for (const auto &cmd : {"vm --out " + out.string(), std::string("kernel build")}) {
			auto r = run_pinmatrix(cmd + " --kernel " + b.kernel + " --cache " + cache.string());
			EXPECT_EQ(r.exit_code, 2) << cmd << " " << b.kernel << "\n" << r.output;
			EXPECT_NE(r.output.find(b.says), std::string::npos) << b.kernel << "\n" << r.output;
			EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
			EXPECT_FALSE(fs::exists(out)) << b.kernel;
			EXPECT_FALSE(fs::exists(cache)) << b.kernel;
		}
	fs::remove_all(base);
}

// A built tree is laid out (vm/kernel-tree.sh, here on a stub tree whose
// Makefile answers kernelrelease) and its .config checked for what the
// guest needs before any boot: each missing option named, exit 2.
TEST(Cli, TreeLackingWhatTheGuestNeedsIsRefusedNamingTheOptions)
{
	const fs::path base = fs::temp_directory_path() / ("pm-cli-tree-" + std::to_string(getpid()));
	fs::remove_all(base);
	const auto write = [&](const fs::path &f, const std::string &text) {
		fs::create_directories(f.parent_path());
		FILE *out = std::fopen(f.c_str(), "w");
		std::fputs(text.c_str(), out);
		std::fclose(out);
	};
	const fs::path tree = base / "tree";
	write(tree / "Makefile", "kernelrelease:\n\t@echo 6.99.0-stub\n");
	write(tree / "arch/x86/boot/bzImage", "bzImage\n");
	write(tree / ".config", "# CONFIG_MODULES is not set\nCONFIG_BLK_DEV_INITRD=y\nCONFIG_DEVTMPFS=y\n"
				"CONFIG_TMPFS=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_NET_9P_VIRTIO=y\n");
	auto r = run_pinmatrix("kernel build --kernel tree:" + tree.string() + " --cache " + (base / "cache").string());
	EXPECT_EQ(r.exit_code, 2) << r.output;
	EXPECT_NE(r.output.find("kernel 'tree:" + tree.string() + "' (6.99.0-stub) lacks what the guest needs"),
		  std::string::npos) << r.output;
	for (const char *missing : {"CONFIG_9P_FS", "CONFIG_RDMA_RXE", "CONFIG_INFINIBAND_USER_ACCESS"})
		EXPECT_NE(r.output.find(missing), std::string::npos) << missing << "\n" << r.output;
	for (const char *there : {"CONFIG_BLK_DEV_INITRD", "CONFIG_NET_9P_VIRTIO"})
		EXPECT_EQ(r.output.find(there), std::string::npos) << there << "\n" << r.output;
	fs::remove_all(base);
}

TEST(Cli, RunWithoutTheModuleSkipsEveryCaseWithTheReason)
{
	if (fs::exists("/dev/pinmatrix"))
		GTEST_SKIP() << "the module is loaded on this machine";
	const fs::path out = fs::temp_directory_path() / ("pm-skip-" + std::to_string(getpid()));
	auto r = run_pinmatrix("run --cases A,D --out " + out.string());
	EXPECT_EQ(r.exit_code, 4) << r.output;
	EXPECT_NE(r.output.find("/dev/pinmatrix is absent"), std::string::npos) << r.output;
	EXPECT_TRUE(fs::exists(out / "results.json"));
	fs::remove_all(out);
}
