// SPDX-License-Identifier: GPL-2.0
// matrix/default.toml end to end: Debian's stock kernel and the CMA build
// (built once into the cache), every boot placement. Cases A-D on real
// MIGRATE_CMA pages with cma= and with hugetlb_cma=; the stock kernel's CMA
// rows SKIP with the reason, without a boot.

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

json cases_of(const json &doc, const std::string &kernel, const std::string &placement)
{
	json out = json::array();
	for (const auto &c : doc["cases"])
		if (c["kernel"]["name"] == kernel && c["boot"]["placement"] == placement)
			out.push_back(c);
	return out;
}

const json &by_id(const json &cases, const std::string &id)
{
	for (const auto &c : cases)
		if (c["id"] == id)
			return c;
	throw std::runtime_error("no case " + id);
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

TEST_F(VmDefaultMatrix, EveryGroupRanOrSaidWhyNot)
{
	EXPECT_EQ(run_.exit_code, 0) << run_.output;
	EXPECT_EQ(doc_["groups"].size(), 8u);
	for (const auto &c : doc_["cases"]) {
		EXPECT_TRUE(c["verdict"] == "pass" || c["verdict"] == "skip")
			<< c["kernel"]["name"] << "/" << c["boot"]["placement"] << "/" << c["id"] << ": "
			<< c.value("reason", "");
		if (c["verdict"] == "skip") {
			EXPECT_FALSE(c.value("reason", "").empty());
		}
	}
}

TEST_F(VmDefaultMatrix, StockKernelCmaRowsSkipWithTheReason)
{
	for (const char *placement : {"cma", "hugetlb_cma"}) {
		const auto cases = cases_of(doc_, "debian", placement);
		ASSERT_FALSE(cases.empty()) << placement;
		for (const auto &c : cases) {
			EXPECT_EQ(c["verdict"], "skip");
			EXPECT_NE(c["reason"].get<std::string>().find("CONFIG_CMA is not set"), std::string::npos)
				<< c["reason"];
		}
	}
}

TEST_F(VmDefaultMatrix, SeedCasesPassOnRealCmaPages)
{
	for (const char *placement : {"cma", "hugetlb_cma"}) {
		SCOPED_TRACE(placement);
		const auto cases = cases_of(doc_, "cma", placement);
		for (const char *id : {"A", "B", "C", "D"}) {
			const auto &c = by_id(cases, id);
			EXPECT_EQ(c["verdict"], "pass") << id << ": " << c.value("reason", "");
		}
		for (const char *id : {"A", "B", "C"}) {
			const auto &page = by_id(cases, id)["observed"]["page"];
			EXPECT_EQ(page["before"]["migratetype"], "CMA") << id;
			EXPECT_TRUE(page["before"]["cma_area"].is_string()) << id;
		}
		// A and C leave CMA (at the registration, at the first pin); B stays.
		const auto &a = by_id(cases, "A")["observed"]["page"];
		EXPECT_NE(a["after_registration"]["migratetype"], "CMA");
		EXPECT_TRUE(a["after_registration"]["cma_area"].is_null());
		EXPECT_NE(by_id(cases, "C")["observed"]["page"]["after_first_pin"]["migratetype"], "CMA");
		const auto &b = by_id(cases, "B")["observed"];
		EXPECT_EQ(b["errno"], 12);
		EXPECT_EQ(b["page"]["after_registration"]["migratetype"], "CMA");
	}
}

TEST_F(VmDefaultMatrix, HugetlbCmaReallyReserved)
{
	const fs::path dir = fs::path(PINMATRIX_TEST_OUT) / "default-matrix" / "groups" / "cma-hugetlb_cma";
	std::ifstream in(dir / "results.json");
	ASSERT_TRUE(in);
	const auto group = json::parse(in);
	ASSERT_TRUE(group.contains("cma_areas"));
	uint64_t pages = 0;
	for (const auto &a : group["cma_areas"])
		pages += a["count"].get<uint64_t>();
	EXPECT_GE(pages, 262144u) << "hugetlb_cma=1G should reserve a 1 GiB area";
}

TEST_F(VmDefaultMatrix, BothKernelsAgreeOnMovable)
{
	for (const char *id : {"A", "B", "C", "D"})
		EXPECT_EQ(by_id(cases_of(doc_, "debian", "movable"), id)["verdict"],
			  by_id(cases_of(doc_, "cma", "movable"), id)["verdict"])
			<< id;
}
