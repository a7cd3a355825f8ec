// SPDX-License-Identifier: GPL-2.0
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <gtest/gtest.h>

#include "placement.hpp"
#include "results.hpp"

using namespace pinmatrix;
namespace fs = std::filesystem;

TEST(Results, ObservationSurvivesTheTripThroughJson)
{
	observation o;
	o.before = {0x1234, "movable", "Movable", "Movable", false, false, 1};
	o.after_first_pin = o.before;
	o.after_registration = {0x99, "ordinary", "DMA32", "Movable", true, true, 3};
	o.first_pin_pfns = {0x1234};
	o.registration_errno = ENOMEM;
	o.latency_ns = 4242;
	o.content_intact = true;
	o.recovery = recovery_record{0, 77, 0x99};
	auto back = observation_from_json(to_json(o));
	EXPECT_EQ(to_json(back), to_json(o));
	EXPECT_EQ(back.after_registration->pfn, 0x99u);
	EXPECT_EQ(back.recovery->latency_ns, 77);
}

TEST(Results, CaseRecordCarriesTheContractFields)
{
	const auto &a = pin_cases().front();
	observation o;
	o.before = {1, "movable", "Movable", "Movable", false, false, 1};
	o.after_first_pin = o.before;
	o.after_registration = {2, "ordinary", "DMA32", "Movable", true, true, 2};
	o.rdma_write_readback = true;
	auto j = to_json(judge(a, o));
	for (const char *key : {"id", "placement", "first_pin", "second_pin", "expected", "observed",
				"latency_ns", "verdict"})
		EXPECT_TRUE(j.contains(key)) << key;
	for (const char *key : {"errno", "migrated", "pfn_before", "pfn_after"})
		EXPECT_TRUE(j["observed"].contains(key)) << key;
	EXPECT_EQ(j["verdict"], "pass");
	EXPECT_EQ(j["observed"]["pfn_after"], 2);
	EXPECT_TRUE(j["observed"]["migrated"].get<bool>());
	auto skipped = to_json(not_run(a, verdict::skip, "no device"));
	EXPECT_EQ(skipped["verdict"], "skip");
	EXPECT_EQ(skipped["reason"], "no device");
}

TEST(Results, ExitCodes)
{
	EXPECT_EQ(exit_code({1, 0, 0, 0}), 0);
	EXPECT_EQ(exit_code({1, 0, 3, 0}), 0);
	EXPECT_EQ(exit_code({5, 1, 0, 0}), 1);
	EXPECT_EQ(exit_code({5, 0, 0, 1}), 1);
	EXPECT_EQ(exit_code({0, 0, 4, 0}), 4);
	EXPECT_EQ(exit_code({0, 0, 0, 0}), 4);
}

TEST(Results, AtomicWriteLeavesOnlyTheFile)
{
	fs::path dir = fs::temp_directory_path() / ("pm-results-" + std::to_string(getpid()));
	fs::create_directories(dir);
	write_json_atomically(dir / "results.json", {{"schema", results_schema}});
	EXPECT_EQ(read_json(dir / "results.json")["schema"], results_schema);
	size_t files = 0;
	for ([[maybe_unused]] auto &e : fs::directory_iterator(dir))
		files++;
	EXPECT_EQ(files, 1u);
	EXPECT_THROW(write_json_atomically(dir / "missing-dir" / "r.json", {}), std::system_error);
	fs::remove_all(dir);
}

TEST(Results, TableHasOneRowPerCaseAndTheReasons)
{
	nlohmann::json cases = nlohmann::json::array();
	for (const auto &c : pin_cases())
		cases.push_back(to_json(not_run(c, verdict::error, "guest died")));
	auto table = format_table(cases);
	size_t lines = std::count(table.begin(), table.end(), '\n');
	EXPECT_EQ(lines, 1 + 2 * pin_cases().size());
	EXPECT_NE(table.find("ERROR"), std::string::npos);
	EXPECT_NE(table.find("guest died"), std::string::npos);
}

TEST(Placement, ClassifyFromWhatTheModuleReports)
{
	pinmatrix_page p{};
	EXPECT_FALSE(classify(p).has_value()); // absent
	p.flags = PINMATRIX_PAGE_PRESENT;
	p.zone = PINMATRIX_ZONE_MOVABLE;
	EXPECT_EQ(classify(p), placement::movable);
	p.zone = PINMATRIX_ZONE_DMA32;
	p.migratetype = PINMATRIX_MT_MOVABLE;
	EXPECT_EQ(classify(p), placement::ordinary);
	p.migratetype = PINMATRIX_MT_CMA;
	EXPECT_EQ(classify(p), placement::cma);
	p.flags |= PINMATRIX_PAGE_ZERO;
	EXPECT_FALSE(classify(p).has_value());
	EXPECT_EQ(parse_placement("movable"), placement::movable);
	EXPECT_FALSE(parse_placement("Movable").has_value());
}
