// SPDX-License-Identifier: GPL-2.0
// The pin matrix under memory pressure (tests/vm/memory-pressure.sh): the
// default stock-kernel guest runs the pin cases while stress-ng maps,
// touches and unmaps anonymous memory and a reader churns the page cache.
// Same verdicts as without it: every case PASSes (its observation matches
// the rule table's expectation), or SKIPs because its placement could not
// be found or because the pressure kept the memory block even with every
// pin of the case released (the give-back decided nothing); never FAIL or
// ERROR. And the pressure was real: the stress was
// still running when the matrix ended, and held memory.

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

using nlohmann::json;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

namespace {

// The page finder's reason when no page in the wanted placement turned up.
constexpr const char *placement_not_found = "no page in ";
// The pin judge's, when the give-back could not decide (cases/pin/pin_judge.cpp).
constexpr const char *give_back_undecided = "every other check held, but the give-back decided nothing: ";

class VmMemoryPressure : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (!missing().empty())
			return;
		dir_ = fs::path(PINMATRIX_TEST_OUT) / "memory-pressure";
		fs::remove_all(dir_);
		run_ = run_pinmatrix("vm --timeout 900 --out " + dir_.string() + " --guest-cmd 'bash " +
				     PINMATRIX_SOURCE_DIR "/tests/vm/memory-pressure.sh " PINMATRIX_BIN "'");
		results_ = load("results.json");
		stress_ = load("stress.json");
	}
	void SetUp() override
	{
		if (const auto why = missing(); !why.empty())
			GTEST_SKIP() << why;
		ASSERT_TRUE(results_.is_object()) << run_.output;
		ASSERT_TRUE(stress_.is_object()) << run_.output;
	}
	static std::string missing()
	{
		if (geteuid() != 0)
			return "needs root (the guest runs the module)";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			return "qemu-system-x86_64 is not installed";
		if (system("command -v stress-ng >/dev/null"))
			return "stress-ng is not installed (tools/setup-host installs it)";
		return {};
	}
	static json load(const char *name)
	{
		std::ifstream in(dir_ / "guest" / "pressure" / name);
		return in ? json::parse(in, nullptr, false) : json();
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
	static inline json results_, stress_;
};

} // namespace

TEST_F(VmMemoryPressure, EveryCasePassesOrCannotFindItsPlacement)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	ASSERT_EQ(results_["plan"].size(), results_["cases"].size()) << "a planned case has no verdict";
	int pass = 0, skip = 0;
	for (const auto &c : results_["cases"]) {
		const std::string v = c["verdict"], reason = c.value("reason", "");
		RecordProperty(c["id"].get<std::string>(), v + (reason.empty() ? "" : ": " + reason));
		if (v == "skip") {
			skip++;
			EXPECT_TRUE(reason.rfind(placement_not_found, 0) == 0 || reason.rfind(give_back_undecided, 0) == 0)
				<< c["id"] << " skipped: " << reason;
			continue;
		}
		pass += v == "pass";
		ASSERT_EQ(v, "pass") << c["id"] << ": " << reason;
		// The rule table's expectation, met under pressure.
		const auto &e = c["expected"], &o = c["observed"];
		EXPECT_EQ(o["errno"], e["errno"]) << c["id"];
		EXPECT_EQ(o["migrated_by_first_pin"], e["first_pin_migrates"]) << c["id"];
		EXPECT_EQ(o["migrated_by_registration"], e["registration_migrates"]) << c["id"];
	}
	RecordProperty("pass", pass);
	RecordProperty("skip", skip);
	EXPECT_GT(pass, 0) << "nothing ran under pressure";
}

// A block the pressure only slows down is not a refusal: every refused
// offline is proved by the kernel's count of failed migrations, else the
// answer is unknown (lib/give_back.hpp: answer_unfinished_offline).
TEST_F(VmMemoryPressure, EveryRefusedOfflineIsProvedByFailedMigrations)
{
	for (const auto &c : results_["cases"]) {
		if (!c["observed"].is_object() || !c["observed"].contains("give_back"))
			continue;
		for (const auto &[when, g] : c["observed"]["give_back"].items()) {
			const std::string method = g.value("method", ""), detail = g.value("detail", "");
			if (g["given_back"] != false || method.rfind("offline memory block", 0) != 0)
				continue;
			EXPECT_NE(detail.find("failed migrations"), std::string::npos)
				<< c["id"] << " " << when << ": " << detail;
		}
	}
}

TEST_F(VmMemoryPressure, EveryPinWasReleased)
{
	const auto &v = results_["vmstat_after"];
	EXPECT_EQ(v["nr_foll_pin_acquired"], v["nr_foll_pin_released"]);
}

TEST_F(VmMemoryPressure, TheStressRanAlongsideAndHeldMemory)
{
	EXPECT_TRUE(stress_["alive_at_end"].get<bool>()) << stress_.dump(2);
	EXPECT_GT(stress_["samples"].get<int>(), 0) << stress_.dump(2);
	EXPECT_GE(stress_["stress_rss_peak_kb"].get<int64_t>(), 64 * 1024) << stress_.dump(2);
	EXPECT_LT(stress_["mem_available_min_kb"].get<int64_t>(), stress_["mem_available_before_kb"].get<int64_t>())
		<< stress_.dump(2);
	for (const char *k : {"stress_rss_peak_kb", "mem_total_kb", "mem_available_before_kb", "mem_available_min_kb",
			      "cached_max_kb"})
		RecordProperty(k, std::to_string(stress_[k].get<int64_t>()));
}
