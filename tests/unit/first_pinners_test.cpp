// SPDX-License-Identifier: GPL-2.0
// --first-pin / --second-pin without a VM: the plan's slots per source, the
// rule table for declared and observed contracts, the NVIDIA version table,
// the judge's use of what a driver was seen to do, and the fleet merge.

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "fleet.hpp"
#include "gpu_pin.hpp"
#include "pin/plan.hpp"
#include "pin/pin_record.hpp"
#include "results.hpp"
#include "rules.hpp"
#include "sys_error.hpp"
#include "pin/pin_judge.hpp"

using namespace pinmatrix;
namespace fs = std::filesystem;

namespace {

const case_def &find(const std::vector<case_def> &cases, const std::string &id)
{
	for (const auto &c : cases)
		if (c.id == id)
			return c;
	throw std::runtime_error(id);
}

page_state page(uint64_t pfn, bool movable)
{
	page_state p;
	p.pfn = pfn;
	p.placement = movable ? "movable" : "ordinary";
	p.zone = movable ? "Movable" : "DMA32";
	p.migratetype = "Movable";
	p.longterm_pinnable = !movable;
	return p;
}

} // namespace

TEST(FirstPinners, ModulePlanIsUnchanged)
{
	const auto &cases = pin_cases(placement::movable, {});
	EXPECT_EQ(find(cases, "B").first, first_pin::foll_pin);
	EXPECT_EQ(find(cases, "C").first, first_pin::foll_pin_longterm);
	EXPECT_EQ(cases.size(), first_pins_of("module").size() * 2);
}

TEST(FirstPinners, IoUringIsTheLongTermFirstPinOfC)
{
	const auto &cases = pin_cases(placement::movable, {"io_uring", "io_uring"});
	EXPECT_EQ(find(cases, "A").first, first_pin::none);
	EXPECT_EQ(find(cases, "B").first, first_pin::foll_pin);
	EXPECT_EQ(find(cases, "C").first, first_pin::io_uring);
	EXPECT_EQ(find(cases, "D").first, first_pin::foll_pin);
	EXPECT_EQ(find(cases, "ordinary-io-uring").second_pin, "io_uring");
	EXPECT_EQ(expect(placement::movable, first_pin::io_uring).summary(), "ok, no move");
}

TEST(FirstPinners, GpuDriverPinIsBAndD)
{
	const auto &cases = pin_cases(placement::movable, {"cuda", "ibv_reg_mr"});
	EXPECT_EQ(find(cases, "B").first, first_pin::cuda_register);
	EXPECT_EQ(find(cases, "C").first, first_pin::foll_pin_longterm);
	EXPECT_EQ(find(cases, "D").first, first_pin::cuda_register);
	// cudaHostAlloc: one case, the driver chooses the page.
	int allocs = 0;
	for (const auto &c : cases)
		allocs += c.first == first_pin::cudart_host_alloc;
	EXPECT_EQ(allocs, 1);
	EXPECT_EQ(find(pin_cases(placement::movable, {"hip", "io_uring"}), "B").first, first_pin::hip_register);
}

TEST(FirstPinners, UnknownSourceOrSecondPinIsAUsageError)
{
	EXPECT_THROW(check(pin_sources{"nvidia", "ibv_reg_mr"}), usage_error);
	EXPECT_THROW(check(pin_sources{"module", "mlx5"}), usage_error);
	EXPECT_NO_THROW(check(pin_sources{"hip", "io_uring"}));
}

TEST(FirstPinners, ObservedContractDecidesTheExpectation)
{
	auto pending = expect(placement::movable, first_pin::cuda_register);
	EXPECT_EQ(pending.contract_source, "pending");
	EXPECT_EQ(pending.summary(), "ENOMEM (R535-style) | ok, no move (R555-style)");
	auto r535 = expect(placement::movable, first_pin::cuda_register, false);
	EXPECT_EQ(r535.registration_errno, ENOMEM);
	EXPECT_FALSE(r535.first_pin_migrates);
	auto r555 = expect(placement::movable, first_pin::cuda_register, true);
	EXPECT_EQ(r555.registration_errno, 0);
	EXPECT_TRUE(r555.first_pin_migrates);
	EXPECT_EQ(r555.summary(), "ok, no move");
	EXPECT_NE(r555.contract.find("R555-style"), std::string::npos);
}

TEST(FirstPinners, NvidiaHostPinByVersionFollowsTheFacts)
{
	EXPECT_EQ(nvidia_host_pin_longterm("525.60.13", "x86_64"), false);
	EXPECT_EQ(nvidia_host_pin_longterm("535.161.08", "x86_64"), false);
	EXPECT_EQ(nvidia_host_pin_longterm("535.171.04", "x86_64"), true);
	EXPECT_EQ(nvidia_host_pin_longterm("545.29.06", "x86_64"), false);
	EXPECT_EQ(nvidia_host_pin_longterm("550.54.15", "x86_64"), false);
	EXPECT_EQ(nvidia_host_pin_longterm("550.67", "x86_64"), true);
	EXPECT_EQ(nvidia_host_pin_longterm("555.42.02", "x86_64"), true);
	EXPECT_EQ(nvidia_host_pin_longterm("570.86.10", "aarch64"), false);
	EXPECT_EQ(nvidia_host_pin_longterm("535.165.00", "x86_64"), std::nullopt);
	EXPECT_EQ(nvidia_host_pin_longterm("470.256.02", "x86_64"), std::nullopt);
}

TEST(FirstPinners, JudgeUsesWhatTheDriverDid)
{
	const auto &b = find(pin_cases(placement::movable, {"cuda", "ibv_reg_mr"}), "B");
	observation r555;
	r555.before = page(0x20a5a, true);
	r555.after_first_pin = page(0x30bf, false);
	r555.after_registration = r555.after_first_pin;
	r555.rdma_write_readback = true;
	auto ok = judge(b, r555);
	EXPECT_EQ(ok.outcome, verdict::pass) << ok.reason;
	EXPECT_EQ(ok.expected.contract_source, "observed");

	// A driver whose version predicts a short-term pin but moved the page.
	r555.longterm_by_version = false;
	auto mismatch = judge(b, r555);
	EXPECT_EQ(mismatch.outcome, verdict::fail);
	EXPECT_NE(mismatch.reason.find("version predicts"), std::string::npos);

	observation r535;
	r535.before = page(0x20a5a, true);
	r535.after_first_pin = r535.before;
	r535.after_registration = r535.before;
	r535.registration_errno = ENOMEM;
	r535.content_intact = true;
	r535.recovery = recovery_record{0, 1000, 0x30bf};
	auto blocked = judge(b, r535);
	EXPECT_EQ(blocked.outcome, verdict::pass) << blocked.reason;
	EXPECT_NE(blocked.expected.contract.find("R535-style"), std::string::npos);
}

TEST(FirstPinners, ObservationRoundTripsThroughJson)
{
	observation o;
	o.before = page(1, true);
	o.first_pinner = "libcuda.so.1 (NVIDIA 555.42.02)";
	o.longterm_by_version = true;
	o.readback_method = "io_uring-read-fixed";
	auto back = observation_from_json(to_json(o));
	EXPECT_EQ(back.first_pinner, o.first_pinner);
	EXPECT_EQ(back.longterm_by_version, true);
	EXPECT_EQ(back.readback_method, "io_uring-read-fixed");
}

TEST(Fleet, NodesMergeIntoOneGridWithCannotRunHere)
{
	const fs::path root = fs::temp_directory_path() / ("pinmatrix-fleet-" + std::to_string(getpid()));
	fs::remove_all(root);
	fs::create_directories(root / "n1");
	fs::create_directories(root / "n2");
	nlohmann::json results = {{"schema", "pinmatrix/1"}, {"complete", true},
				  {"kernel", {{"release", "6.1.0-57-amd64"}}},
				  {"restricted_placement", "movable"},
				  {"cases", {{{"id", "A"}, {"verdict", "pass"}}, {{"id", "B"}, {"verdict", "pass"}}}}};
	std::ofstream(root / "n1" / "results.json") << results.dump();
	std::ofstream(root / "n1" / "status.json") << R"({"node": "n1", "state": "ran"})";
	std::ofstream(root / "n2" / "status.json")
		<< R"({"node": "n2", "state": "cannot_run", "reason": "no kernel headers for 6.12.0"})";
	std::ofstream(root / "n1" / "facts.json")
		<< R"({"machine": "x86_64", "nvidia": {"loaded": true, "version": "535.161.08"}})";
	std::ofstream(root / "n2" / "facts.json")
		<< R"({"kernel_release": "6.12.0", "machine": "x86_64", "nvidia": {"version": "550.60"}})";
	auto fleet = merge_fleet({root / "n1", root / "n2"});
	// The host pin by driver version, from the one table (lib/gpu_pin.cpp).
	const auto &nv1 = fleet["nodes"][0]["facts"]["nvidia"];
	EXPECT_EQ(nv1["host_pin_foll_longterm_by_version"], false);
	EXPECT_EQ(nv1["host_pin"], "FOLL_PIN without FOLL_LONGTERM (R535-style)");
	EXPECT_TRUE(fleet["nodes"][1]["facts"]["nvidia"]["host_pin_foll_longterm_by_version"].is_null());
	EXPECT_EQ(fleet["verdict"], "pass");
	ASSERT_EQ(fleet["cases"].size(), 3u);
	EXPECT_EQ(fleet["cases"][0]["node"], "n1");
	EXPECT_EQ(fleet["cases"][0]["kernel"]["name"], "n1");
	EXPECT_EQ(fleet["cases"][2]["verdict"], "skip");
	EXPECT_EQ(fleet["cases"][2]["reason"], "cannot run here: no kernel headers for 6.12.0");
	const std::string grid = format_fleet_grid(fleet);
	EXPECT_NE(grid.find("n2: cannot run here: no kernel headers"), std::string::npos) << grid;
	EXPECT_THROW(merge_fleet({root / "missing"}), usage_error);
	fs::remove_all(root);
}

// A node the controller did not reach (its status written before the first
// connection, or the preflight's unreachable result) is an ERROR in the
// grid with SSH's words, not a node that vanished.
TEST(Fleet, UnreachableNodeIsAnErrorWithItsReason)
{
	const fs::path root = fs::temp_directory_path() / ("pinmatrix-fleet-unreached-" + std::to_string(getpid()));
	fs::remove_all(root);
	fs::create_directories(root / "n3");
	std::ofstream(root / "n3" / "status.json")
		<< R"({"node": "n3", "state": "unreachable", "reason": "ssh: connect to host 10.0.0.3 port 22: Connection refused"})";
	// An earlier play's results, which this play did not refresh.
	std::ofstream(root / "n3" / "results.json")
		<< R"({"schema": "pinmatrix/1", "complete": true, "cases": [{"id": "A", "verdict": "pass"}]})";
	const auto fleet = merge_fleet({root / "n3"});
	ASSERT_EQ(fleet["cases"].size(), 1u);
	EXPECT_EQ(fleet["cases"][0]["name"], "node-unreachable");
	EXPECT_EQ(fleet["cases"][0]["verdict"], "error");
	EXPECT_EQ(fleet["cases"][0]["reason"], "unreachable: ssh: connect to host 10.0.0.3 port 22: Connection refused");
	EXPECT_EQ(fleet["nodes"][0]["state"], "unreachable");
	EXPECT_EQ(fleet["verdict"], "error");
	const std::string md = format_fleet_markdown(fleet);
	EXPECT_NE(md.find("## n3: unreachable (unreachable: ssh: connect"), std::string::npos) << md;
	fs::remove_all(root);
}
