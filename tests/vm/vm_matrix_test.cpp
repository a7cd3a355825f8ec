// SPDX-License-Identifier: GPL-2.0
// The whole matrix in a real guest: Debian's stock kernel under QEMU, the
// real rdma_rxe driver and libibverbs, and the project's module. Then the
// runner's promises when the guest misbehaves: a panic, a case that never
// returns, a guest that never ends.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

using nlohmann::json;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

namespace {

void require_vm()
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root (the guest runs the module)";
	if (system("command -v qemu-system-x86_64 >/dev/null"))
		GTEST_SKIP() << "qemu-system-x86_64 is not installed";
}

fs::path out_dir(const std::string &name)
{
	fs::path p = fs::path(PINMATRIX_TEST_OUT) / name;
	fs::remove_all(p);
	return p;
}

json load(const fs::path &dir)
{
	std::ifstream in(dir / "results.json");
	return json::parse(in);
}

const json &by_id(const json &doc, const std::string &id)
{
	for (const auto &c : doc["cases"])
		if (c["id"] == id)
			return c;
	throw std::runtime_error("no case " + id);
}

} // namespace

class VmMatrix : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		dir_ = out_dir("matrix");
		run_ = run_pinmatrix("vm --out " + dir_.string());
		if (fs::exists(dir_ / "results.json"))
			doc_ = load(dir_);
	}
	void SetUp() override
	{
		require_vm();
		ASSERT_TRUE(doc_.is_object()) << run_.output;
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
	static inline json doc_;
};

TEST_F(VmMatrix, EveryPlannedCasePassesOnce)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	EXPECT_EQ(doc_["schema"], "pinmatrix/1");
	EXPECT_EQ(doc_["verdict"], "pass");
	ASSERT_EQ(doc_["plan"].size(), doc_["cases"].size());
	for (size_t i = 0; i < doc_["plan"].size(); i++) {
		const auto &c = doc_["cases"][i];
		EXPECT_EQ(c["id"], doc_["plan"][i]);
		EXPECT_EQ(c["verdict"], "pass") << c["id"] << ": " << c.value("reason", "");
		if (c["suite"] == "pin") {
			EXPECT_GT(c["latency_ns"].get<int64_t>(), 0) << c["id"];
		}
	}
	// Both suites ran: the pin matrix and UALink against the reference model.
	std::set<std::string> suites;
	for (const auto &c : doc_["cases"])
		suites.insert(c["suite"]);
	EXPECT_EQ(suites, (std::set<std::string>{"pin", "ualink"}));
}

TEST_F(VmMatrix, RecordsKernelAndBootParameters)
{
	EXPECT_NE(doc_["kernel"]["release"].get<std::string>().find("amd64"), std::string::npos);
	EXPECT_NE(doc_["kernel"]["cmdline"].get<std::string>().find("movablecore="), std::string::npos);
	EXPECT_EQ(doc_["rdma_device"], "rxe0");
	EXPECT_EQ(doc_["module"]["migratetype_method"], "pageblock-bitmap");
}

TEST_F(VmMatrix, ObservedAgreesWithExpectedInTheRecord)
{
	for (const auto &c : doc_["cases"]) {
		if (c["suite"] != "pin")
			continue;
		const auto &e = c["expected"], &o = c["observed"];
		ASSERT_TRUE(o.is_object()) << c["id"];
		EXPECT_EQ(o["errno"], e["errno"]) << c["id"];
		EXPECT_EQ(o["migrated_by_first_pin"], e["first_pin_migrates"]) << c["id"];
		EXPECT_EQ(o["migrated_by_registration"], e["registration_migrates"]) << c["id"];
		EXPECT_EQ(o["pfn_before"], o["page"]["before"]["pfn"]) << c["id"];
		EXPECT_EQ(o["page"]["before"]["placement"], c["placement"]) << c["id"];
	}
}

// The four edges of section 16.5, read from the evidence itself.
TEST_F(VmMatrix, CaseA_RegistrationMovedThePageOutOfZoneMovable)
{
	const auto &o = by_id(doc_, "A")["observed"];
	EXPECT_EQ(o["page"]["before"]["zone"], "Movable");
	EXPECT_NE(o["page"]["after_registration"]["zone"], "Movable");
	EXPECT_NE(o["pfn_before"], o["pfn_after"]);
	EXPECT_TRUE(o["migrated_by_registration"].get<bool>());
	EXPECT_TRUE(o["rdma_write_readback"].get<bool>()) << o.value("rdma_detail", "");
}

TEST_F(VmMatrix, CaseB_RegistrationFailedWithENOMEMAndRecovered)
{
	const auto &o = by_id(doc_, "B")["observed"];
	EXPECT_EQ(o["errno"], 12);
	EXPECT_EQ(o["page"]["after_registration"]["zone"], "Movable");
	EXPECT_TRUE(o["page"]["after_first_pin"]["maybe_dma_pinned"].get<bool>());
	EXPECT_TRUE(o["content_intact"].get<bool>());
	EXPECT_EQ(o["recovery"]["errno"], 0);
}

TEST_F(VmMatrix, CaseC_FirstPinMovedThePage)
{
	const auto &o = by_id(doc_, "C")["observed"];
	EXPECT_EQ(o["page"]["before"]["zone"], "Movable");
	EXPECT_NE(o["page"]["after_first_pin"]["zone"], "Movable");
	EXPECT_TRUE(o["migrated_by_first_pin"].get<bool>());
	EXPECT_FALSE(o["migrated_by_registration"].get<bool>());
	EXPECT_EQ(o["errno"], 0);
}

TEST_F(VmMatrix, CaseD_OrdinaryPageStaysAndRegisters)
{
	const auto &o = by_id(doc_, "D")["observed"];
	EXPECT_NE(o["page"]["before"]["zone"], "Movable");
	EXPECT_FALSE(o["migrated"].get<bool>());
	EXPECT_EQ(o["errno"], 0);
}

TEST_F(VmMatrix, EveryPinWasReleased)
{
	const auto &v = doc_["vmstat_after"];
	EXPECT_GT(v["nr_foll_pin_acquired"].get<uint64_t>(), 0u);
	EXPECT_EQ(v["nr_foll_pin_acquired"], v["nr_foll_pin_released"]);
}

TEST(VmFaults, GuestPanicIsAnErrorAndKeepsWhatFinished)
{
	require_vm();
	auto dir = out_dir("panic");
	auto r = run_pinmatrix("vm --cases A,B,D --fault panic-at=B --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(doc["verdict"], "error");
	EXPECT_EQ(by_id(doc, "A")["verdict"], "pass");
	for (const char *id : {"B", "D"}) {
		EXPECT_EQ(by_id(doc, id)["verdict"], "error") << id;
		EXPECT_NE(by_id(doc, id)["reason"].get<std::string>().find("no result from the guest"),
			  std::string::npos);
	}
	EXPECT_NE(doc["vm"]["serial_excerpt"].get<std::string>().find("Kernel panic"), std::string::npos)
		<< doc["vm"]["serial_excerpt"];
	EXPECT_TRUE(fs::exists(dir / "serial.log"));
}

TEST(VmFaults, CaseThatNeverReturnsIsKilledAndTheRestRun)
{
	require_vm();
	auto dir = out_dir("hang");
	auto r = run_pinmatrix("vm --cases B,C --fault hang-at=B --case-timeout 5 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(by_id(doc, "B")["verdict"], "error");
	EXPECT_NE(by_id(doc, "B")["reason"].get<std::string>().find("did not finish within 5 s"),
		  std::string::npos);
	EXPECT_EQ(by_id(doc, "C")["verdict"], "pass");
}

TEST(VmFaults, GuestThatNeverEndsIsKilledAtTheTimeout)
{
	require_vm();
	auto dir = out_dir("timeout");
	auto r = run_pinmatrix("vm --cases A --timeout 2 --out " + dir.string());
	EXPECT_EQ(r.exit_code, 1) << r.output;
	auto doc = load(dir);
	EXPECT_EQ(by_id(doc, "A")["verdict"], "error");
	EXPECT_NE(by_id(doc, "A")["reason"].get<std::string>().find("killed"), std::string::npos);
	EXPECT_EQ(doc["vm"]["qemu_exit"], "killed");
}
