// SPDX-License-Identifier: GPL-2.0
// Real first and second pinners in one guest (tests/vm/first-pinners.sh):
// io_uring fixed buffers as the first pin, the second pin and both, and the
// GPU host-pin TEST DOUBLE (tests/doubles/gpu_host_pin_double.c) behind
// --first-pin cuda and hip in both contracts: R535 (FOLL_PIN: case B fails
// with ENOMEM) and R555 (FOLL_PIN|FOLL_LONGTERM: B succeeds like C, the page
// moved at the driver's pin).

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

namespace {


class VmFirstPinners : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		dir_ = fs::path(PINMATRIX_TEST_OUT) / "first-pinners";
		fs::remove_all(dir_);
		run_ = run_pinmatrix("vm --timeout 2400 --out " + dir_.string() + " --guest-cmd 'bash " +
				     PINMATRIX_SOURCE_DIR "/tests/vm/first-pinners.sh " PINMATRIX_BIN " " +
				     PINMATRIX_GPU_DOUBLE + "'");
	}
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root (the guest runs the module)";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			GTEST_SKIP() << "qemu-system-x86_64 is not installed";
	}
	static json load(const std::string &name)
	{
		std::ifstream in(dir_ / "guest" / name / "results.json");
		if (!in)
			throw std::runtime_error("no results for " + name + ":\n" + run_.output);
		return json::parse(in);
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
};

} // namespace

TEST_F(VmFirstPinners, EveryRunPasses)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	for (const char *name : {"cuda-r535", "cuda-r555", "hip-r535", "hip-r555", "io_uring-first",
				 "io_uring-second", "io_uring-both"}) {
		const json doc = load(name);
		EXPECT_EQ(doc["verdict"], "pass") << name;
		for (const auto &c : doc["cases"])
			EXPECT_EQ(c["verdict"], "pass") << name << " " << c["id"] << ": " << c.value("reason", "");
	}
}

TEST_F(VmFirstPinners, CudaDoubleR535_BFailsWithENOMEM)
{
	const json doc = load("cuda-r535");
	EXPECT_EQ(doc["first_pin_source"], "cuda");
	const auto &b = case_by_id(doc, "B");
	EXPECT_EQ(b["first_pin"], "cuda-register");
	EXPECT_EQ(b["expected"]["contract_source"], "observed");
	EXPECT_NE(b["expected"]["first_pin_contract"].get<std::string>().find("R535-style"), std::string::npos);
	EXPECT_EQ(b["observed"]["errno"], 12);
	EXPECT_FALSE(b["observed"]["migrated_by_first_pin"].get<bool>());
	EXPECT_EQ(b["observed"]["page"]["after_registration"]["zone"], "Movable");
	EXPECT_TRUE(b["observed"]["content_intact"].get<bool>());
	EXPECT_EQ(b["observed"]["recovery"]["errno"], 0);
	EXPECT_NE(b["observed"]["first_pinner"].get<std::string>().find("TEST DOUBLE"), std::string::npos);
	// The runtime's entry point behaves the same.
	EXPECT_EQ(case_by_id(doc, "movable-cudart-register")["observed"]["errno"], 12);
	EXPECT_EQ(case_by_id(doc, "D")["observed"]["errno"], 0);
}

TEST_F(VmFirstPinners, CudaDoubleR555_BSucceedsLikeC)
{
	const json doc = load("cuda-r555");
	const auto &b = case_by_id(doc, "B");
	EXPECT_NE(b["expected"]["first_pin_contract"].get<std::string>().find("R555-style"), std::string::npos);
	EXPECT_EQ(b["expected"]["summary"], "ok, no move");
	EXPECT_EQ(b["observed"]["errno"], 0);
	EXPECT_TRUE(b["observed"]["migrated_by_first_pin"].get<bool>());
	EXPECT_FALSE(b["observed"]["migrated_by_registration"].get<bool>());
	EXPECT_NE(b["observed"]["page"]["after_first_pin"]["zone"], "Movable");
	EXPECT_TRUE(b["observed"]["rdma_write_readback"].get<bool>());
	// C-like: the same outcome as the module's declared long-term pin.
	EXPECT_EQ(case_by_id(doc, "C")["observed"]["errno"], 0);
	EXPECT_TRUE(case_by_id(doc, "C")["observed"]["migrated_by_first_pin"].get<bool>());
}

TEST_F(VmFirstPinners, HipDoubleFollowsItsContract)
{
	EXPECT_EQ(case_by_id(load("hip-r535"), "B")["observed"]["errno"], 12);
	EXPECT_EQ(case_by_id(load("hip-r555"), "B")["observed"]["errno"], 0);
	EXPECT_EQ(case_by_id(load("hip-r535"), "B")["first_pin"], "hip-register");
}

TEST_F(VmFirstPinners, IoUringFirstPinMigratesAtItsPin)
{
	const json doc = load("io_uring-first");
	const auto &c = case_by_id(doc, "C");
	EXPECT_EQ(c["first_pin"], "io-uring");
	EXPECT_EQ(c["expected"]["contract_source"], "declared");
	EXPECT_TRUE(c["observed"]["migrated_by_first_pin"].get<bool>());
	EXPECT_EQ(c["observed"]["errno"], 0);
	EXPECT_EQ(case_by_id(doc, "B")["observed"]["errno"], 12);
}

TEST_F(VmFirstPinners, IoUringSecondPinNeedsNoRdmaDevice)
{
	for (const char *name : {"io_uring-second", "io_uring-both"}) {
		const json doc = load(name);
		EXPECT_FALSE(doc.contains("rdma_device")) << name;
		const auto &a = case_by_id(doc, "A");
		EXPECT_EQ(a["second_pin"], "io_uring");
		EXPECT_TRUE(a["observed"]["migrated_by_registration"].get<bool>()) << name;
		EXPECT_EQ(a["observed"]["readback_method"], "io_uring-read-fixed");
		EXPECT_TRUE(a["observed"]["rdma_write_readback"].get<bool>()) << name;
		EXPECT_EQ(case_by_id(doc, "B")["observed"]["errno"], 12) << name;
		EXPECT_EQ(case_by_id(doc, "C")["observed"]["errno"], 0) << name;
		EXPECT_EQ(case_by_id(doc, "D")["observed"]["errno"], 0) << name;
	}
	EXPECT_EQ(case_by_id(load("io_uring-both"), "C")["first_pin"], "io-uring");
}
