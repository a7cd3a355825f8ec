// SPDX-License-Identifier: GPL-2.0
// The CLI's contract with scripts: exit 2 and one clear message for bad
// input, and nothing written when the input was bad.

#include <unistd.h>

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
				       "vm --cases nope", "run --cases nope"}) {
		auto r = run_pinmatrix(args + " --out " + out.string());
		EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
		EXPECT_FALSE(fs::exists(out)) << args;
	}
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
