// SPDX-License-Identifier: GPL-2.0
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <sstream>

#include "mapping.hpp"
#include "terminal_table.hpp"
#include "placement.hpp"
#include "proc_pages.hpp"
#include "pin/pin_record.hpp"
#include "results.hpp"
#include "terminal_table.hpp"
#include "sys_error.hpp"

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
	o.give_back_held = give_back_attempt{"offline memory block 4", false, "still offlining", 4000};
	o.give_back_released = give_back_attempt{"offline memory block 4", std::nullopt, "unknown", 0};
	auto back = observation_from_json(to_json(o));
	EXPECT_EQ(to_json(back), to_json(o));
	EXPECT_EQ(back.after_registration->pfn, 0x99u);
	EXPECT_EQ(back.recovery->latency_ns, 77);
	EXPECT_EQ(back.give_back_held->given_back, false);
	EXPECT_FALSE(back.give_back_released->given_back.has_value());
}

TEST(Results, UnknownPinnabilityStaysUnknown)
{
	page_state p;
	p.placement = "unknown";
	EXPECT_TRUE(to_json(p)["longterm_pinnable"].is_null());
	EXPECT_FALSE(page_state_from_json(to_json(p)).longterm_pinnable.has_value());
	p.longterm_pinnable = false;
	EXPECT_EQ(page_state_from_json(to_json(p)).longterm_pinnable, false);
}

TEST(Results, CaseRecordCarriesTheContractFields)
{
	const auto &a = pin_cases().front();
	observation o;
	o.before = {1, "movable", "Movable", "Movable", false, false, 1};
	o.after_first_pin = o.before;
	o.after_registration = {2, "ordinary", "DMA32", "Movable", true, true, 2};
	o.rdma_write_readback = true;
	auto j = to_json(record_of(judge(a, o)));
	for (const char *key : {"id", "placement", "first_pin", "second_pin", "expected", "observed",
				"latency_ns", "verdict"})
		EXPECT_TRUE(j.contains(key)) << key;
	for (const char *key : {"errno", "migrated", "pfn_before", "pfn_after"})
		EXPECT_TRUE(j["observed"].contains(key)) << key;
	EXPECT_EQ(j["verdict"], "pass");
	EXPECT_EQ(j["observed"]["pfn_after"], 2);
	EXPECT_TRUE(j["observed"]["migrated"].get<bool>());
	auto skipped = to_json(record_of(not_run(a, verdict::skip, "no device")));
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

// The launcher reads the guest's results.json with read_json(): a guest's
// file nested 200,000 deep crashed it (recursion in the parser), one that
// is not JSON threw a parser error naming no file. Each is one message
// naming the file now; the launcher records it as the run's end.
TEST(Results, ReadJsonRefusesADeepOrBrokenFileByName)
{
	fs::path dir = fs::temp_directory_path() / ("pm-results-deep-" + std::to_string(getpid()));
	fs::create_directories(dir);
	auto refused = [&](const std::string &name, const std::string &text, const std::string &why) {
		const fs::path f = dir / name;
		std::ofstream(f) << text;
		try {
			read_json(f);
			ADD_FAILURE() << name << ": read";
		} catch (const usage_error &e) {
			EXPECT_NE(std::string(e.what()).find(f.string() + ": " + why), std::string::npos) << e.what();
		}
	};
	refused("deep.json", std::string(200000, '[') + std::string(200000, ']'), "nested deeper than 64");
	refused("past.json", std::string(max_json_depth + 1, '[') + std::string(max_json_depth + 1, ']'),
		"nested deeper than");
	refused("broken.json", "{\"schema\": ", "not valid JSON");
	refused("missing.json.d/none", "", "cannot read it");
	// Brackets inside strings are not nesting; the bound itself reads.
	std::ofstream(dir / "ok.json") << std::string(max_json_depth, '[') << "\"[[[[{{{{\""
				       << std::string(max_json_depth, ']');
	EXPECT_NO_THROW(read_json(dir / "ok.json"));
	fs::remove_all(dir);
}

TEST(Results, TableHasOneRowPerCaseAndTheReasons)
{
	nlohmann::json cases = nlohmann::json::array();
	for (const auto &c : pin_cases())
		cases.push_back(to_json(record_of(not_run(c, verdict::error, "guest died"))));
	auto table = format_table(cases, default_table_width, true);
	size_t lines = std::count(table.begin(), table.end(), '\n');
	EXPECT_EQ(lines, 1 + 2 * pin_cases().size());
	EXPECT_NE(table.find("ERROR"), std::string::npos);
	EXPECT_NE(table.find("guest died"), std::string::npos);
}

// Long cells are cut and long reasons wrapped to the width; the verdict
// and the case id are never cut, and the verdict comes first.
TEST(Results, TableFitsTheWidthVerdictFirst)
{
	const std::string long_text(300, 'x');
	nlohmann::json cases = nlohmann::json::array();
	for (const auto &c : pin_cases()) {
		auto j = to_json(record_of(not_run(c, verdict::fail, "the reason " + long_text + " and more words")));
		j["expected"]["summary"] = "expected " + long_text;
		j["observed"] = {{"summary", "observed " + long_text}};
		cases.push_back(j);
	}
	for (size_t width : {size_t(100), size_t(80)}) {
		const std::string table = format_table(cases, width, true);
		std::istringstream lines(table);
		std::string line;
		std::getline(lines, line);
		EXPECT_EQ(line.rfind("verdict", 0), 0u) << line;
		for (size_t n = 1; std::getline(lines, line); n++) {
			EXPECT_LE(line.size(), width) << "line " << n << ": " << line;
			if (n <= pin_cases().size()) {
				EXPECT_EQ(line.rfind("FAIL ", 0), 0u) << line;
			}
		}
		EXPECT_NE(table.find(pin_cases().back().id + " "), std::string::npos) << table;
		EXPECT_NE(table.find("and more words"), std::string::npos) << table;
	}
	// In a log each reason stays on one line, whole.
	const std::string log = format_table(cases, default_table_width, false);
	EXPECT_NE(log.find("the reason " + long_text + " and more words\n"), std::string::npos);
}

TEST(Results, WrapWordsBreaksBetweenWordsWithAHangingIndent)
{
	EXPECT_EQ(wrap_words("aa bb cc dd", 9, 2, 4), "  aa bb\n    cc dd\n");
	EXPECT_EQ(wrap_words("aa bb cc dd", 8, 2, 4), "  aa bb\n    cc\n    dd\n");
	EXPECT_EQ(wrap_words("abcdefghij", 6, 0, 2), "abcdef\n");
}

TEST(Placement, ClassifyFromWhatTheModuleReports)
{
	pinmatrix_page p{};
	EXPECT_FALSE(classify(p).has_value()); // absent
	p.flags = PINMATRIX_PAGE_PRESENT;
	p.zone = PINMATRIX_ZONE_MOVABLE;
	EXPECT_EQ(classify(p), placement::movable);
	p.zone = PINMATRIX_ZONE_DMA32;
	p.migratetype = PINMATRIX_MT_UNKNOWN;
	// CONFIG_CMA and an unreadable pageblock: it may be CMA.
	EXPECT_FALSE(classify(p).has_value());
	EXPECT_EQ(placement_of(p), "unknown");
	p.migratetype = PINMATRIX_MT_MOVABLE;
	p.flags |= PINMATRIX_PAGE_PINNABLE_KNOWN | PINMATRIX_PAGE_LONGTERM_PINNABLE;
	EXPECT_EQ(classify(p), placement::ordinary);
	EXPECT_EQ(placement_of(p), "ordinary");
	p.migratetype = PINMATRIX_MT_CMA;
	EXPECT_EQ(classify(p), placement::cma);
	p.flags |= PINMATRIX_PAGE_ZERO;
	EXPECT_FALSE(classify(p).has_value());
	EXPECT_EQ(placement_of(p), "absent");
	EXPECT_EQ(parse_placement("movable"), placement::movable);
	EXPECT_FALSE(parse_placement("Movable").has_value());
}

TEST(Placement, LongTermPinnableOnlyWhenKnown)
{
	pinmatrix_page p{};
	p.flags = PINMATRIX_PAGE_LONGTERM_PINNABLE | PINMATRIX_PAGE_PINNABLE_KNOWN;
	EXPECT_FALSE(longterm_pinnable(p).has_value()); // absent
	p.flags = PINMATRIX_PAGE_PRESENT;
	EXPECT_FALSE(longterm_pinnable(p).has_value());
	p.flags |= PINMATRIX_PAGE_PINNABLE_KNOWN;
	EXPECT_EQ(longterm_pinnable(p), false);
	p.flags |= PINMATRIX_PAGE_LONGTERM_PINNABLE;
	EXPECT_EQ(longterm_pinnable(p), true);
}

TEST(ProcPages, PagemapShowsWhatIsPresent)
{
	const size_t ps = page_size();
	mapping m = mapping::anonymous(4 * ps, false);
	m.data()[ps] = std::byte{1};
	m.data()[3 * ps] = std::byte{1};
	const auto entries = read_pagemap(getpid(), m.addr(), 4);
	ASSERT_EQ(entries.size(), 4u);
	EXPECT_FALSE(pagemap_present(entries[0]));
	EXPECT_TRUE(pagemap_present(entries[1]));
	EXPECT_FALSE(pagemap_present(entries[2]));
	EXPECT_TRUE(pagemap_present(entries[3]));
	EXPECT_FALSE(pagemap_swapped(entries[0]));
	// Past the end of user space: refused, not zeros.
	EXPECT_THROW(read_pagemap(getpid(), uint64_t(1) << 63, 1), std::system_error);
}

// results.json as a run writes it after each case, each record serialized
// once: the same text as the whole document's, case by case, and after a
// document whose cases went back to fewer.
TEST(Results, TextMadeCaseByCaseIsTheWholeDocumentsText)
{
	nlohmann::json doc = {{"schema", results_schema},
		    {"plan", {"A", "B", "C"}},
		    {"complete", false},
		    {"zeta", {{"cases", nlohmann::json::array()}}},
		    {"cases", nlohmann::json::array()}};
	results_text text;
	EXPECT_EQ(text.of(doc), results_json_text(doc));
	for (const char *id : {"A", "B", "C"}) {
		doc["cases"].push_back({{"id", id}, {"observed", {{"lines", {"a\nb", 1, nullptr}}, {"nested", {{"x", {}}}}}}});
		EXPECT_EQ(text.of(doc), results_json_text(doc)) << id;
	}
	doc["cases"].erase(doc["cases"].begin() + 1, doc["cases"].end());
	doc["cases"][0]["id"] = "A2";
	EXPECT_EQ(text.of(doc), results_json_text(doc));
}
