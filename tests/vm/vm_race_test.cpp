// SPDX-License-Identifier: GPL-2.0
// The race family (cases/race/) in guests with 2 vCPUs on ZONE_MOVABLE:
// 4 threads pin one 64-page buffer at once, 20 rounds a case. On correct
// kernels no pin succeeds in place: every success leaves the buffer out of
// ZONE_MOVABLE. Debian's stock 6.1 and 6.12 (both past the 2025 regression's
// stable windows); the kernel with it reapplied is the documented command in
// README ("Races").

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

using nlohmann::json;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

class VmRace : public ::testing::TestWithParam<const char *> {
protected:
	static json run_on(const std::string &kernel)
	{
		const fs::path dir = fs::path(PINMATRIX_TEST_OUT) / ("race-" + kernel);
		fs::remove_all(dir);
		const auto run = run_pinmatrix("vm --kernel debian:" + kernel +
					       " --boot movable --cpus 2 --cases race --out " + dir.string());
		std::ifstream in(dir / "results.json");
		EXPECT_TRUE(in) << run.output;
		return in ? json::parse(in) : json();
	}
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			GTEST_SKIP() << "needs qemu-system-x86_64";
	}
};

TEST_P(VmRace, NoPinSucceedsInPlace)
{
	const json doc = run_on(GetParam());
	ASSERT_TRUE(doc.is_object());
	ASSERT_EQ(doc["cases"].size(), 3u);
	for (const auto &c : doc["cases"]) {
		EXPECT_EQ(c["verdict"], "pass") << c["id"] << ": " << c.value("reason", "");
		const auto &o = c["observed"];
		ASSERT_TRUE(o.is_object()) << c["id"];
		EXPECT_EQ(o["rounds"].size(), 20u) << c["id"];
		EXPECT_EQ(o["rounds_in_place"], 0) << c["id"];
		// The race was run: pins succeeded, so the check had something to check.
		EXPECT_GT(o["successes"].get<int>(), 0) << c["id"];
		EXPECT_EQ(o["cpus"], 2) << c["id"];
	}
}

INSTANTIATE_TEST_SUITE_P(StockKernels, VmRace, ::testing::Values("6.1", "6.12+deb12"),
			 [](const auto &info) { return std::string(info.index ? "debian_6_12" : "debian_6_1"); });
