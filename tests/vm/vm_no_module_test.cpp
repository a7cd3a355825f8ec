// SPDX-License-Identifier: GPL-2.0
// `pinmatrix vm --no-module` on Debian's stock 6.12: cases A-D with no
// out-of-tree module at all (a Secure Boot node): B's first pin is a pipe's
// GUP reference (vmsplice), C's io_uring's long-term pin, the rungs of an
// O_DIRECT write held by a suspended device-mapper target, every page read
// through /proc/self/pagemap.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "vm_records.hpp"

using nlohmann::json;
using pinmatrix::test::case_by_id;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

class VmNoModule : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		const fs::path dir = fs::path(PINMATRIX_TEST_OUT) / "no-module";
		fs::remove_all(dir);
		run_ = run_pinmatrix("vm --kernel debian:6.12+deb12 --no-module --cases pin --out " + dir.string());
		std::ifstream in(dir / "results.json");
		if (in)
			doc_ = json::parse(in);
	}
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			GTEST_SKIP() << "needs qemu-system-x86_64";
		ASSERT_TRUE(doc_.is_object()) << run_.output;
	}
	static inline pinmatrix::test::command_result run_;
	static inline json doc_;
};

TEST_F(VmNoModule, SeedCasesPassWithNoModuleLoaded)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	for (const char *id : {"A", "B", "C", "D"}) {
		const auto &c = case_by_id(doc_, id);
		EXPECT_EQ(c["verdict"], "pass") << id << ": " << c.value("reason", "");
	}
	EXPECT_FALSE(doc_.contains("module"));
	EXPECT_EQ(doc_["module_loaded_by_run"], false);
	EXPECT_EQ(doc_["out_of_tree_modules"], json::array()) << doc_["out_of_tree_modules"].dump();
}

TEST_F(VmNoModule, EveryCaseSaysWhichProbeAndWhichFirstPin)
{
	EXPECT_EQ(doc_["probe"], "pagemap");
	for (const char *id : {"A", "B", "C", "D"})
		EXPECT_EQ(case_by_id(doc_, id)["observed"]["probe"], "pagemap") << id;
	auto pinner = [](const json &c) { return c["observed"]["first_pinner"].get<std::string>(); };
	EXPECT_NE(pinner(case_by_id(doc_, "B")).find("vmsplice"), std::string::npos);
	EXPECT_NE(pinner(case_by_id(doc_, "C")).find("io_uring"), std::string::npos);
	EXPECT_NE(pinner(case_by_id(doc_, "D")).find("vmsplice"), std::string::npos);
}

// The pipe's reference strands B's page in ZONE_MOVABLE, as the module's
// FOLL_PIN does: ENOMEM, the page where it was, its block not given back
// until the pipe is gone; then the registration and the block go.
TEST_F(VmNoModule, AVmsplicedPageBlocksTheLongTermPinUntilThePipeGoes)
{
	const auto &o = case_by_id(doc_, "B")["observed"];
	EXPECT_EQ(o["errno"], 12);
	EXPECT_EQ(o["page"]["after_registration"]["zone"], "Movable");
	EXPECT_EQ(o["recovery"]["errno"], 0);
	EXPECT_EQ(o["give_back"]["with_pins_held"]["given_back"], false) << o["give_back"].dump();
	EXPECT_EQ(o["give_back"]["first_pin_released"]["given_back"], true) << o["give_back"].dump();
	EXPECT_NE(case_by_id(doc_, "A")["observed"]["page"]["after_registration"]["zone"], "Movable");
}

// The short-term pin of I/O with no module: an O_DIRECT write deferred by a
// suspended device-mapper target holds its page (FOLL_PIN on 6.12), so the
// registration of a page in ZONE_MOVABLE is refused (ENOMEM) and succeeds
// once the target resumes; an ordinary page registers with it held.
TEST_F(VmNoModule, ADirectWriteHeldInTheKernelStrandsThePage)
{
	const auto &held = case_by_id(doc_, "movable-direct-write");
	EXPECT_EQ(held["verdict"], "pass") << held.value("reason", "");
	EXPECT_EQ(held["first_pin"], "direct-write");
	EXPECT_EQ(held["observed"]["errno"], 12);
	EXPECT_EQ(held["observed"]["content_intact"], true);
	EXPECT_EQ(held["observed"]["recovery"]["errno"], 0);
	EXPECT_NE(held["observed"]["first_pinner"].get<std::string>().find("O_DIRECT write"), std::string::npos);
	const auto &ordinary = case_by_id(doc_, "ordinary-direct-write");
	EXPECT_EQ(ordinary["verdict"], "pass") << ordinary.value("reason", "");
	EXPECT_EQ(ordinary["observed"]["errno"], 0);
}
