// SPDX-License-Identifier: GPL-2.0
// `pinmatrix vm --bench` smoke run: one guest runs case A, then a few
// iterations of every benchmark family at small sizes; bench.json must be
// kept beside results.json and hold every family. Speed is measured, never
// asserted here: the machines are shared and TCG is slow.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every family at its smallest sizes, a few iterations each.
const char *const smoke_args =
	"--benchmark_filter=^(harness/(clock_read|ibv_reg_mr_raw|register_memory)|probe/(unpopulated|populated)"
	"|populate/4k|ualink/(export|import)/65536|(reg_mr|pin/[a-z_]+)/[a-z]+/(4096|65536))(/|$) "
	"--benchmark_min_time=0.01 --pm_iterations_scale=0.05";

} // namespace

class VmBench : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		dir_ = fs::path(PINMATRIX_TEST_OUT) / "bench-smoke";
		fs::remove_all(dir_);
		run_ = pinmatrix::test::run_pinmatrix("vm --out " + dir_.string() + " --cases A --timeout 900 --bench " +
						      "'--bench-args=" + smoke_args + "'");
		if (fs::exists(dir_ / "bench.json")) {
			std::ifstream in(dir_ / "bench.json");
			bench_ = json::parse(in);
		}
		if (fs::exists(dir_ / "results.json")) {
			std::ifstream in(dir_ / "results.json");
			results_ = json::parse(in);
		}
	}
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root (the guest runs the module)";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			GTEST_SKIP() << "qemu-system-x86_64 is not installed";
		ASSERT_TRUE(bench_.is_object()) << "no bench.json in " << dir_ << "\n" << run_.output;
	}
	// name -> the benchmark's record ("/iterations:N/manual_time" dropped).
	static std::map<std::string, json> by_name()
	{
		std::map<std::string, json> out;
		for (const auto &b : bench_["benchmarks"]) {
			std::string n = b.value("run_name", b.value("name", std::string()));
			if (auto p = n.rfind("/manual_time"); p != std::string::npos && p + 12 == n.size())
				n.erase(p);
			if (auto p = n.rfind("/iterations:"); p != std::string::npos)
				n.erase(p);
			out[n] = b;
		}
		return out;
	}
	static inline fs::path dir_;
	static inline pinmatrix::test::command_result run_;
	static inline json bench_, results_;
};

TEST_F(VmBench, RunPassesAndKeepsBenchJsonWithTheResults)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	ASSERT_TRUE(results_.is_object());
	EXPECT_EQ(results_.value("benchmarks", ""), "bench.json");
	EXPECT_EQ(results_["bench"].value("exit", json(-1)), json(0)) << results_["bench"].dump();
	EXPECT_EQ(results_.value("verdict", ""), "pass");
	// The report shows them.
	std::ifstream html(dir_ / "report.html");
	const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
	EXPECT_NE(page.find("<section id=\"benchmarks\">"), std::string::npos);
	EXPECT_NE(page.find("<svg class=\"plot xy\""), std::string::npos);
}

TEST_F(VmBench, HoldsEveryFamily)
{
	const auto b = by_name();
	const std::string restricted = bench_["context"].value("pinmatrix.restricted_placement", "");
	ASSERT_FALSE(restricted.empty());
	std::set<std::string> want = {
		"harness/clock_read",		"harness/ibv_reg_mr_raw/4096", "harness/register_memory/4096",
		"probe/unpopulated/1073741824", "probe/populated/67108864",    "populate/4k/67108864",
		"ualink/export/65536",		"ualink/import/65536"};
	for (const std::string &p : {restricted, std::string("ordinary")}) {
		if (p == "ordinary" && restricted == "ordinary")
			continue;
		for (const char *family : {"reg_mr/", "pin/foll_pin/", "pin/foll_pin_longterm/"})
			for (const char *size : {"4096", "65536"})
				want.insert(family + p + "/" + size);
	}
	for (const auto &name : want)
		EXPECT_TRUE(b.count(name)) << name << " missing from bench.json";
}

TEST_F(VmBench, PinningFamiliesRanOnFreshPagesInTheirPlacement)
{
	// In the guest every placement of the boot is reachable: no family may
	// have been skipped, and each iteration's pages were where they belong.
	for (const auto &[name, r] : by_name()) {
		if (name.rfind("reg_mr/", 0) && name.rfind("pin/", 0))
			continue;
		EXPECT_FALSE(r.value("error_occurred", false)) << name << ": " << r.value("error_message", "");
		if (r.value("error_occurred", false))
			continue;
		EXPECT_GE(r.value("in_placement", 0.0), 0.9) << name;
		EXPECT_GT(r.value("ns_per_page", 0.0), 0) << name;
	}
}
