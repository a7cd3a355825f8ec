// SPDX-License-Identifier: GPL-2.0
// `pinmatrix gate --baseline OLD --out DIR [vm options]` on a real guest:
// a baseline run of A and B, then the gate of a kernel on which B's pin
// hangs in the kernel (the fault a kernel-side stall plants): exit 1 naming
// B's regression alone, while A, unchanged, is none; the run's own
// results and reports in DIR as `vm` writes them, the comparison in
// DIR/gate.md and gate.json.

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

namespace fs = std::filesystem;
using namespace pinmatrix::test;

TEST(VmGate, ARegressionOfTheNewKernelFailsTheGateAlone)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto baseline = run_guest("gate-baseline", "--cases A,B");
	ASSERT_EQ(baseline.run.exit_code, 0) << baseline.run.output;
	const fs::path base_dir = fs::path(PINMATRIX_TEST_OUT) / "gate-baseline";
	const fs::path out = fs::path(PINMATRIX_TEST_OUT) / "gate-new";
	fs::remove_all(out);

	// Refused before anything runs: the new run would write over its input.
	const auto over = run_pinmatrix("gate --baseline " + base_dir.string() + " --out " + base_dir.string() +
					" --cases A,B");
	EXPECT_EQ(over.exit_code, 2) << over.output;
	EXPECT_NE(over.output.find("holds the baseline"), std::string::npos) << over.output;

	const auto gate = run_pinmatrix("gate --baseline " + base_dir.string() + " --out " + out.string() +
					" --cases A,B --fault kernel-hang-at=B --case-timeout 10");
	EXPECT_EQ(gate.exit_code, 1) << gate.output;
	EXPECT_NE(gate.output.find("1 verdict regression (B): exit 1"), std::string::npos) << gate.output;
	for (const char *file : {"results.json", "report.html", "junit.xml", "gate.md", "gate.json"})
		EXPECT_TRUE(fs::exists(out / file)) << file;
	std::ifstream in(out / "gate.json");
	ASSERT_TRUE(in);
	const auto doc = nlohmann::json::parse(in);
	EXPECT_EQ(doc["regressions"], 1);
	for (const auto &c : doc["cases"]) {
		EXPECT_EQ(c["regression"], c["id"] == "B") << c.dump();
		if (c["id"] == "A") {
			EXPECT_EQ(c["change"], "unchanged") << c.dump();
		}
	}
}
