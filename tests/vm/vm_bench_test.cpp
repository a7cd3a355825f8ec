// SPDX-License-Identifier: GPL-2.0
// `pinmatrix vm --bench` smoke runs: a guest runs case A, then a few
// iterations of every benchmark family at small sizes; bench.json must be
// kept beside results.json and hold every family for every placement of the
// boot: Debian's 6.1 (movable, ordinary) and Debian's 7.2, which has CMA,
// with every placement in one boot (movable, ordinary, cma). Speed is measured, never
// asserted here: the machines are shared and TCG is slow.

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Every family at its smallest sizes, a few iterations each.
const char *const smoke_args =
	"--benchmark_filter=^(harness/(clock_read|ibv_reg_mr_raw|register_memory)|probe/(unpopulated|populated)"
	"|populate/4k|ualink/(export|import)/65536|(reg_mr|pin/[a-z_]+|gup_test/pin_longterm)/[a-z]+/(4096|65536))(/|$) "
	"--benchmark_min_time=0.01 --pm_iterations_scale=0.05";

// The boots the smoke run covers, and the placements each must benchmark.
struct bench_boot {
	const char *name;
	const char *vm_args;
	std::vector<std::string> placements;
};

const bench_boot boots[] = {
	{"stock-movable", "", {"movable", "ordinary"}},
	// Debian's 6.1 has no CMA, its 7.2 has: every placement in one boot
	// (matrix/boot.cpp "all").
	{"stock72-all", "--kernel debian:7.2 --boot all", {"movable", "ordinary", "cma"}},
};

struct bench_run {
	fs::path dir;
	pinmatrix::test::command_result run;
	json bench, results;
};

const bench_run &run_of(const bench_boot &boot)
{
	static std::map<std::string, bench_run> runs;
	if (auto it = runs.find(boot.name); it != runs.end())
		return it->second;
	bench_run &r = runs[boot.name];
	r.dir = fs::path(PINMATRIX_TEST_OUT) / (std::string("bench-smoke-") + boot.name);
	fs::remove_all(r.dir);
	r.run = pinmatrix::test::run_pinmatrix("vm --out " + r.dir.string() + " " + boot.vm_args +
					       " --cases A --timeout 900 --bench '--bench-args=" + smoke_args + "'");
	if (fs::exists(r.dir / "bench.json")) {
		std::ifstream in(r.dir / "bench.json");
		r.bench = json::parse(in);
	}
	if (fs::exists(r.dir / "results.json")) {
		std::ifstream in(r.dir / "results.json");
		r.results = json::parse(in);
	}
	return r;
}

} // namespace

class VmBench : public ::testing::TestWithParam<bench_boot> {
protected:
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root (the guest runs the module)";
		if (system("command -v qemu-system-x86_64 >/dev/null"))
			GTEST_SKIP() << "qemu-system-x86_64 is not installed";
		run_ = &run_of(GetParam());
		ASSERT_TRUE(run_->bench.is_object()) << "no bench.json in " << run_->dir << "\n" << run_->run.output;
	}
	// name -> the benchmark's record ("/iterations:N/manual_time" dropped).
	std::map<std::string, json> by_name() const
	{
		std::map<std::string, json> out;
		for (const auto &b : run_->bench["benchmarks"]) {
			std::string n = b.value("run_name", b.value("name", std::string()));
			if (auto p = n.rfind("/manual_time"); p != std::string::npos && p + 12 == n.size())
				n.erase(p);
			if (auto p = n.rfind("/iterations:"); p != std::string::npos)
				n.erase(p);
			out[n] = b;
		}
		return out;
	}
	const bench_run *run_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Boots, VmBench, ::testing::ValuesIn(boots),
			 [](const auto &info) {
				 std::string n = info.param.name;
				 std::replace(n.begin(), n.end(), '-', '_');
				 return n;
			 });

TEST_P(VmBench, RunPassesAndKeepsBenchJsonWithTheResults)
{
	const json &results = run_->results;
	EXPECT_EQ(run_->run.exit_code, 0) << run_->run.output;
	ASSERT_TRUE(results.is_object());
	EXPECT_EQ(results.value("benchmarks", ""), "bench.json");
	EXPECT_EQ(results["bench"].value("exit", json(-1)), json(0)) << results["bench"].dump();
	EXPECT_EQ(results.value("verdict", ""), "pass");
	// The report shows them.
	std::ifstream html(run_->dir / "report.html");
	const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
	EXPECT_NE(page.find("<section id=\"benchmarks\">"), std::string::npos);
	EXPECT_NE(page.find("<svg class=\"plot xy\""), std::string::npos);
}

TEST_P(VmBench, HoldsEveryFamilyForEveryPlacementOfTheBoot)
{
	const auto b = by_name();
	std::set<std::string> want = {
		"harness/clock_read",		"harness/ibv_reg_mr_raw/4096", "harness/register_memory/4096",
		"probe/unpopulated/1073741824", "probe/populated/67108864",    "populate/4k/67108864",
		"ualink/export/65536",		"ualink/import/65536"};
	for (const std::string &p : GetParam().placements)
		for (const char *family : {"reg_mr/", "pin/foll_pin/", "pin/foll_pin_longterm/", "gup_test/pin_longterm/"})
			for (const char *size : {"4096", "65536"})
				want.insert(family + p + "/" + size);
	for (const auto &name : want)
		EXPECT_TRUE(b.count(name)) << name << " missing from bench.json";
	// And no placement the boot does not have.
	for (const auto &[name, r] : b) {
		if (name.rfind("reg_mr/", 0))
			continue;
		const std::string p = name.substr(7, name.find('/', 7) - 7);
		EXPECT_TRUE(std::ranges::count(GetParam().placements, p)) << name;
	}
}

// kselftest's anchor: where the kernel has gup_test, its long-term pin left
// restricted memory (and only that); where not (Debian's kernels have no
// CONFIG_GUP_TEST), a skip that says so, never a number.
TEST_P(VmBench, GupTestAnchorMovedRestrictedPagesOrSaysWhyItCouldNotRun)
{
	size_t seen = 0;
	for (const auto &[name, r] : by_name()) {
		if (name.rfind("gup_test/", 0))
			continue;
		seen++;
		if (r.value("error_occurred", false)) {
			EXPECT_NE(r.value("error_message", "").find("CONFIG_GUP_TEST"), std::string::npos) << name;
			continue;
		}
		const bool restricted = name.find("/ordinary/") == std::string::npos;
		EXPECT_EQ(r.value("left_placement", -1.0), restricted ? 1.0 : 0.0) << name;
		EXPECT_GT(r.value("kernel_pin_ns_per_page", 0.0), 0) << name;
	}
	EXPECT_EQ(seen, 2 * GetParam().placements.size());
}

TEST_P(VmBench, PinningFamiliesRanOnFreshPagesInTheirPlacement)
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
