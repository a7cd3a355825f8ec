// SPDX-License-Identifier: GPL-2.0
// matrix/default.toml end to end: Debian's stock 6.1, 6.12 and 7.2 (no
// build), every boot placement. Cases A-D on every kernel's ZONE_MOVABLE,
// and on real MIGRATE_CMA pages of stock 7.2 with cma= and hugetlb_cma=;
// 6.1's and 6.12's CMA rows SKIP with the reason, without a boot.

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "../command.hpp"
#include "vm_records.hpp"

using nlohmann::json;
using pinmatrix::test::case_by_id;
using pinmatrix::test::run_pinmatrix;
namespace fs = std::filesystem;

namespace {

json cases_of(const json &doc, const std::string &kernel, const std::string &placement)
{
	json out = json::array();
	for (const auto &c : doc["cases"])
		if (c["kernel"]["name"] == kernel && c["boot"]["placement"] == placement)
			out.push_back(c);
	return out;
}


} // namespace

class VmDefaultMatrix : public ::testing::Test {
protected:
	static void SetUpTestSuite()
	{
		if (geteuid() != 0 || system("command -v qemu-system-x86_64 >/dev/null"))
			return;
		const fs::path dir = fs::path(PINMATRIX_TEST_OUT) / "default-matrix";
		fs::remove_all(dir);
		run_ = run_pinmatrix("vm --matrix " + std::string(PINMATRIX_SOURCE_DIR) +
				     "/matrix/default.toml --out " + dir.string());
		std::ifstream in(dir / "results.json");
		if (in)
			doc_ = json::parse(in);
	}
	void SetUp() override
	{
		if (geteuid() != 0)
			GTEST_SKIP() << "needs root";
		ASSERT_TRUE(doc_.is_object()) << run_.output;
	}
	static inline pinmatrix::test::command_result run_;
	static inline json doc_;
};

const char *const stock_kernels[] = {"debian-6.1", "debian-6.12", "debian-7.2"};

TEST_F(VmDefaultMatrix, EveryGroupRanOrSaidWhyNot)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	EXPECT_EQ(doc_["groups"].size(), 12u);
	for (const auto &c : doc_["cases"]) {
		EXPECT_TRUE(c["verdict"] == "pass" || c["verdict"] == "skip")
			<< c["kernel"]["name"] << "/" << c["boot"]["placement"] << "/" << c["id"] << ": "
			<< c.value("reason", "");
		if (c["verdict"] == "skip") {
			EXPECT_FALSE(c.value("reason", "").empty());
		}
	}
}

TEST_F(VmDefaultMatrix, KernelsWithoutCmaSkipItsRowsWithTheReason)
{
	for (const char *kernel : {"debian-6.1", "debian-6.12"})
		for (const char *placement : {"cma", "hugetlb_cma"}) {
			SCOPED_TRACE(std::string(kernel) + "/" + placement);
			const auto cases = cases_of(doc_, kernel, placement);
			ASSERT_FALSE(cases.empty());
			for (const auto &c : cases) {
				EXPECT_EQ(c["verdict"], "skip");
				EXPECT_NE(c["reason"].get<std::string>().find("CONFIG_CMA is not set"),
					  std::string::npos)
					<< c["reason"];
			}
		}
}

// A's page moved by the registration, B ENOMEM in place, C moved at the
// first pin, D registered where it was.
void expect_seed_cases(const json &cases, const char *restricted_mt)
{
	for (const char *id : {"A", "B", "C", "D"}) {
		const auto &c = case_by_id(cases, id);
		EXPECT_EQ(c["verdict"], "pass") << id << ": " << c.value("reason", "");
	}
	EXPECT_EQ(case_by_id(cases, "A")["observed"]["migrated_by_registration"], true);
	const auto &b = case_by_id(cases, "B")["observed"];
	EXPECT_EQ(b["errno"], 12);
	EXPECT_EQ(b["migrated"], false);
	EXPECT_EQ(case_by_id(cases, "C")["observed"]["migrated_by_first_pin"], true);
	const auto &d = case_by_id(cases, "D")["observed"];
	EXPECT_EQ(d["errno"], 0);
	EXPECT_EQ(d["migrated"], false);
	if (!restricted_mt)
		return;
	for (const char *id : {"A", "B", "C"}) {
		EXPECT_EQ(case_by_id(cases, id)["observed"]["page"]["before"]["migratetype"], restricted_mt) << id;
	}
}

TEST_F(VmDefaultMatrix, SeedCasesOnEveryKernelsMovableZone)
{
	for (const char *kernel : stock_kernels) {
		SCOPED_TRACE(kernel);
		expect_seed_cases(cases_of(doc_, kernel, "movable"), nullptr);
	}
}

TEST_F(VmDefaultMatrix, SeedCasesOnRealCmaPagesOfStock72)
{
	for (const char *placement : {"cma", "hugetlb_cma"}) {
		SCOPED_TRACE(placement);
		const auto cases = cases_of(doc_, "debian-7.2", placement);
		expect_seed_cases(cases, "CMA");
		for (const char *id : {"A", "B", "C"})
			EXPECT_TRUE(case_by_id(cases, id)["observed"]["page"]["before"]["cma_area"].is_string()) << id;
		const auto &a = case_by_id(cases, "A")["observed"]["page"];
		EXPECT_NE(a["after_registration"]["migratetype"], "CMA");
		EXPECT_TRUE(a["after_registration"]["cma_area"].is_null());
		EXPECT_EQ(case_by_id(cases, "B")["observed"]["page"]["after_registration"]["migratetype"], "CMA");
	}
}

// The harm (lib/give_back.hpp): A's memory goes back with its registration
// held, B's not while its first pin holds the page, and once it is released.
void expect_memory_given_back_unless_stranded(const json &cases)
{
	auto answer = [&](const char *id, const char *when) {
		return case_by_id(cases, id)["observed"]["give_back"][when]["given_back"];
	};
	EXPECT_EQ(answer("A", "with_pins_held"), true) << case_by_id(cases, "A")["observed"]["give_back"].dump();
	EXPECT_EQ(answer("C", "with_pins_held"), true) << case_by_id(cases, "C")["observed"]["give_back"].dump();
	EXPECT_EQ(answer("B", "with_pins_held"), false) << case_by_id(cases, "B")["observed"]["give_back"].dump();
	EXPECT_EQ(answer("B", "first_pin_released"), true) << case_by_id(cases, "B")["observed"]["give_back"].dump();
}

// On every stock kernel, B's stranded block is shown refused by its failed
// migrations (pgmigrate_fail), not by waiting out the bound: the rule
// lib/give_back.hpp states of offline_pages(), checked on each kernel.
TEST_F(VmDefaultMatrix, MovableMemoryGoesBackUnlessAPinStrandsIt)
{
	for (const char *kernel : stock_kernels) {
		SCOPED_TRACE(kernel);
		const auto cases = cases_of(doc_, kernel, "movable");
		expect_memory_given_back_unless_stranded(cases);
		const auto &held = case_by_id(cases, "B")["observed"]["give_back"]["with_pins_held"];
		EXPECT_EQ(held["detail"].get<std::string>().rfind("refused: ", 0), 0u) << held.dump();
		EXPECT_NE(held["detail"].get<std::string>().find("failed migrations"), std::string::npos) << held.dump();
	}
}

// Stock 7.2 has CMA_SYSFS but no CMA_DEBUGFS: the hugetlb_cma area is asked
// back as 1 GiB pages; cma='s area has nothing in user space to ask it, and
// says so (unknown, never a default).
TEST_F(VmDefaultMatrix, CmaMemoryGoesBackUnlessAPinStrandsItWhereItCanBeAsked)
{
	expect_memory_given_back_unless_stranded(cases_of(doc_, "debian-7.2", "hugetlb_cma"));
	const auto cma = cases_of(doc_, "debian-7.2", "cma");
	const auto &unknown = case_by_id(cma, "B")["observed"]["give_back"];
	EXPECT_TRUE(unknown["with_pins_held"]["given_back"].is_null()) << unknown.dump();
	EXPECT_NE(unknown["with_pins_held"]["detail"].get<std::string>().find("no CMA_DEBUGFS"), std::string::npos);
}

TEST_F(VmDefaultMatrix, HugetlbCmaReallyReserved)
{
	const fs::path dir =
		fs::path(PINMATRIX_TEST_OUT) / "default-matrix" / "groups" / "debian-7.2-hugetlb_cma";
	// The kernel's own word (7.x reserves it as a multi-range area whose
	// boot log names no address)...
	std::ifstream log(dir / "guest" / "kernel.log");
	ASSERT_TRUE(log);
	const std::string text{std::istreambuf_iterator<char>(log), {}};
	EXPECT_NE(text.find("hugetlb_cma: reserved 1024 MiB"), std::string::npos);
	// ...and the cross-check source the run used says so.
	std::ifstream in(dir / "results.json");
	ASSERT_TRUE(in);
	const auto group = json::parse(in);
	ASSERT_FALSE(group["cma_areas"].empty());
	for (const auto &a : group["cma_areas"])
		EXPECT_FALSE(a["source"].get<std::string>().empty());
}

TEST_F(VmDefaultMatrix, EveryKernelRanTheSuitesInItsOrdinaryBoot)
{
	for (const char *kernel : stock_kernels) {
		SCOPED_TRACE(kernel);
		const auto cases = cases_of(doc_, kernel, "ordinary");
		int ualink = 0, registration = 0, fork = 0;
		for (const auto &c : cases) {
			const std::string id = c["id"];
			ualink += id.rfind("ualink/", 0) == 0 && c["verdict"] == "pass";
			registration += id.rfind("registration/", 0) == 0 && c["verdict"] == "pass";
			fork += id.rfind("fork/", 0) == 0 && c["verdict"] == "pass";
		}
		EXPECT_GT(ualink, 0);
		EXPECT_GT(registration, 0);
		// Fork with a registered page: both cases on every kernel.
		EXPECT_EQ(fork, 2);
	}
}

// The guests ran side by side (as many as the host holds: 2 on CI's 2
// cores), each group's serial log its own guest's alone, and the results
// merged in the matrix's order as they are serially.
TEST_F(VmDefaultMatrix, GuestsRanSideBySideEachWithItsOwnSerialLog)
{
	ASSERT_TRUE(doc_.contains("guests_at_once")) << run_.output;
	if (doc_["guests_at_once"] == 1)
		GTEST_SKIP() << "one guest at a time on this host: " << run_.output.substr(0, 300);
	EXPECT_NE(run_.output.find("pinmatrix vm: 12 groups, " + doc_["guests_at_once"].dump() + " guests at a time ("),
		  std::string::npos)
		<< run_.output;
	const fs::path dir = fs::path(PINMATRIX_TEST_OUT) / "default-matrix";
	// Each booted group's guest, in matrix order: from its QEMU's start to
	// its run's end, as [end - wall_s, end] (its own results.json's
	// finished_at, 1 s resolution, and the host's wall_s). Its cases alone
	// may not overlap another's: an ordinary group's take 2-3 s.
	std::vector<std::pair<double, double>> spans;	// start, end (s since the epoch)
	for (const auto &g : doc_["groups"]) {
		const std::string kernel = g["kernel"]["name"], placement = g["boot"]["placement"];
		const auto cases = cases_of(doc_, kernel, placement);
		if (cases.empty() || cases[0]["verdict"] == "skip")
			continue;	// refused before a boot
		SCOPED_TRACE(kernel + "/" + placement);
		std::ifstream group_results(dir / g["dir"].get<std::string>() / "results.json");
		const json group_doc = json::parse(group_results, nullptr, false);
		ASSERT_TRUE(group_doc.is_object() && group_doc.contains("finished_at")) << g["dir"];
		std::tm tm{};
		std::istringstream(group_doc["finished_at"].get<std::string>()) >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
		const double end = double(timegm(&tm));
		spans.emplace_back(end - g["wall_s"].get<double>(), end);
		// Its serial log: one guest's run line, naming its own kernel and boot.
		std::ifstream in(dir / g["dir"].get<std::string>() / "serial.log");
		const std::string serial((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		size_t runs = 0;
		for (size_t at = 0; (at = serial.find("\npinmatrix: ", at)) != std::string::npos; at++)
			runs += serial.find(" cases on ", at) < serial.find('\n', at + 1);
		EXPECT_EQ(runs, 1u) << serial.substr(0, 2000);
		const std::string release = g["kernel"]["release"], append = g["boot"]["append"];
		EXPECT_NE(serial.find(" cases on " + release + " ("), std::string::npos) << serial.substr(0, 2000);
		if (!append.empty()) {
			EXPECT_NE(serial.find(append + ")"), std::string::npos) << serial.substr(0, 2000);
		}
	}
	// Some later group's guest started before an earlier one's ended.
	bool overlapped = false;
	for (size_t i = 0; i < spans.size(); i++)
		for (size_t j = i + 1; j < spans.size(); j++)
			overlapped = overlapped || spans[j].first < spans[i].second - 1;
	EXPECT_TRUE(overlapped) << "no two guests ran at once\n" << run_.output;
	// The merge keeps the matrix's order (matrix/default.toml's runs).
	ASSERT_GE(doc_["groups"].size(), 2u);
	EXPECT_EQ(doc_["groups"][0]["kernel"]["name"], "debian-6.1");
	EXPECT_EQ(doc_["groups"][0]["boot"]["placement"], "ordinary");
	EXPECT_EQ(doc_["groups"][1]["boot"]["placement"], "movable");
}
