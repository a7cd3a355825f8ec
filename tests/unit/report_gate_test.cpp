// SPDX-License-Identifier: GPL-2.0
// The gate (reports/gate.hpp): a run, then its comparison with a baseline,
// and an exit code that fails only on what got worse. The run here is a
// step that writes a results.json, as `pinmatrix run` and `vm` do
// (vm.gate boots a guest for the real one).

#include <gtest/gtest.h>

#include "gate.hpp"
#include "report_fixtures.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

struct gate_fixture {
	temp_dir dir;
	fs::path baseline_dir = dir / "old", out = dir / "new";

	explicit gate_fixture(const json &baseline) { write_file(baseline_dir / "results.json", baseline.dump(2)); }

	// The gate over a run that writes NOW into OUT and exits RUN_EXIT.
	int gate(const json &now, int run_exit = 0, compare_options options = {})
	{
		const auto old = read_baseline({baseline_dir, options}, out);
		return gated_run(
			[&] {
				write_file(out / "results.json", now.dump(2));
				return run_exit;
			},
			old, out, false, options);
	}
	json gate_json() const { return json::parse(read_file(out / "gate.json")); }
};

json with_verdict(json doc, const std::string &id, const std::string &verdict)
{
	record(doc, id)["verdict"] = verdict;
	return doc;
}

json with_kernel_alarm(json doc, const std::string &line)
{
	doc["kernel_log"] = {{"file", "guest/kernel.log"}, {"alarms", {line}}};
	return doc;
}

const char *const warn_line = "WARNING: CPU: 0 PID: 1 at mm/gup.c:2070 __gup_longterm_locked+0x1/0x2";

} // namespace

TEST(Gate, TheSameVerdictsPassAndSayWhere)
{
	gate_fixture f(sample_run());
	EXPECT_EQ(f.gate(sample_run()), 0);
	EXPECT_EQ(f.gate_json()["exit_code"], 0);
	EXPECT_EQ(f.gate_json()["schema"], "pinmatrix-gate/1");
	EXPECT_EQ(read_file(f.out / "gate.md").rfind("## pinmatrix gate: no regression\n", 0), 0u);
	EXPECT_NE(read_file(f.out / "gate.md").find("no verdict regression: exit 0"), std::string::npos);
}

TEST(Gate, APassThatFailsIsARegression)
{
	gate_fixture f(sample_run());
	EXPECT_EQ(f.gate(with_verdict(sample_run(), "B", "fail"), 1), 1);
	const auto doc = f.gate_json();
	EXPECT_EQ(doc["regressions"], 1);
	for (const auto &c : doc["cases"])
		EXPECT_EQ(c["regression"], c["id"] == "B") << c.dump();
	EXPECT_EQ(read_file(f.out / "gate.md").rfind("## pinmatrix gate: REGRESSION\n", 0), 0u);
	EXPECT_NE(read_file(f.out / "gate.md").find("**REGRESSION**"), std::string::npos);
}

// The run's own exit is 1 (B fails), the gate's is 0: nothing got worse.
TEST(Gate, AFailureTheBaselineHadIsNoRegression)
{
	gate_fixture f(with_verdict(sample_run(), "B", "fail"));
	EXPECT_EQ(f.gate(with_verdict(sample_run(), "B", "fail"), 1), 0);
}

TEST(Gate, CoverageLostIsARegression)
{
	gate_fixture skipped(sample_run());
	EXPECT_EQ(skipped.gate(run_all_skipped(), 4), 1);
	json fewer = sample_run();
	fewer["cases"].erase(fewer["cases"].begin());
	gate_fixture missing(sample_run());
	EXPECT_EQ(missing.gate(fewer), 1);
	EXPECT_EQ(missing.gate_json()["cases"][0]["change"], "disappeared");
}

TEST(Gate, RunsThatDecidedNothingAreNoPass)
{
	gate_fixture f(run_all_skipped());
	EXPECT_EQ(f.gate(run_all_skipped(), 4), 4);
}

// A WARN no case explains, where the baseline had none: no verdict shows
// it, the gate does. Where the baseline had one too, it is not new.
TEST(Gate, ANewKernelBugLineIsARegression)
{
	gate_fixture f(sample_run());
	EXPECT_EQ(f.gate(with_kernel_alarm(sample_run(), warn_line), 1), 1);
	EXPECT_NE(f.gate_json()["new_kernel_alarm"].get<std::string>().find("mm/gup.c:2070"), std::string::npos);
	gate_fixture had(with_kernel_alarm(sample_run(), "BUG: unable to handle page fault"));
	EXPECT_EQ(had.gate(with_kernel_alarm(sample_run(), warn_line), 1), 0);
	EXPECT_TRUE(had.gate_json()["new_kernel_alarm"].is_null());
}

TEST(Gate, LatencyCountsWhenAsked)
{
	auto timed = [](std::vector<double> ns) {
		json doc = sample_run();
		record(doc, "A")["observed"]["latency_samples_ns"] = ns;
		return doc;
	};
	gate_fixture f(timed({900, 1000, 1100}));
	EXPECT_EQ(f.gate(timed({1400, 1500, 1600})), 0);
	EXPECT_EQ(f.gate(timed({1400, 1500, 1600}), 0, {.latency = true}), 1);
	EXPECT_TRUE(f.gate_json()["cases"][0]["latency_regression"]);
}

TEST(Gate, ARunWithoutResultsComparesNothing)
{
	gate_fixture f(sample_run());
	const auto old = read_baseline({f.baseline_dir, {}}, f.out);
	EXPECT_EQ(gated_run([] { return 2; }, old, f.out, false, {}), 2);
	EXPECT_FALSE(fs::exists(f.out / "gate.json"));
}

// Never over an input: OUT may not be the baseline's directory or hold it;
// a baseline that is no run is refused before anything runs.
TEST(Gate, TheBaselineIsCheckedBeforeTheRun)
{
	gate_fixture f(sample_run());
	for (const fs::path &out : {f.baseline_dir, fs::path(f.baseline_dir.string() + "/"), f.dir.path()})
		EXPECT_THROW(read_baseline({f.baseline_dir, {}}, out), usage_error) << out;
	EXPECT_NO_THROW(read_baseline({f.baseline_dir / "results.json", {}}, f.dir / "old-2"));
	EXPECT_THROW(read_baseline({f.dir / "absent", {}}, f.out), usage_error);
	EXPECT_THROW(read_baseline({f.baseline_dir, {}}, {}), usage_error);
	write_file(f.dir / "bad" / "results.json", "{\"schema\": \"pinmatrix/1\", \"cases\": 5}");
	EXPECT_THROW(read_baseline({f.dir / "bad", {}}, f.out), usage_error);
	EXPECT_THROW(read_baseline({f.baseline_dir, {.bench_threshold_pct = -1.0}}, f.out), usage_error);
}
