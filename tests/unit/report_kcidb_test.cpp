// SPDX-License-Identifier: GPL-2.0
// The KCIDB export (reports/kcidb.hpp): statuses from the verdicts (MISS
// for a case never reached, DONE for a benchmark), one checkout and build
// per kernel, ids that repeat for the same run and differ for another,
// KCIDB's paths, what a test carries, and `pinmatrix report --kcidb` as a
// command. The document against KCIDB's own schema: ctest
// report.kcidb-schema (tests/unit/kcidb_export_test.py).

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "../command.hpp"
#include "bench_report.hpp"
#include "kcidb.hpp"
#include "report_fixtures.hpp"
#include "sys_error.hpp"

using namespace pinmatrix;
using namespace pinmatrix::test;

namespace {

const std::string origin = "pinmatrix_test";

std::string expected_status(const json &record)
{
	if (record.value("not_reached", false))
		return "MISS";
	std::string v = record["verdict"].get<std::string>();
	for (auto &ch : v)
		ch = char(std::toupper(static_cast<unsigned char>(ch)));
	return v;
}

const json &by_id(const json &list, const std::string &id)
{
	for (const auto &o : list)
		if (o["id"] == id)
			return o;
	throw std::runtime_error("no object " + id);
}

size_t count_status(const json &k, const std::string &status)
{
	size_t n = 0;
	for (const auto &t : k["tests"])
		n += t["status"] == status;
	return n;
}

// Code points of UTF-8 text (what JSON Schema's maxLength counts).
size_t code_points(const std::string &s)
{
	return size_t(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
}

} // namespace

TEST(ReportKcidb, StatusesAreTheVerdictsWithMissForCasesNeverReached)
{
	for (const json &doc : {run_cut_short(), run_with_failures(), run_all_skipped(), run_with_another_suite()}) {
		const json k = format_kcidb(doc, origin);
		ASSERT_EQ(k["tests"].size(), doc["cases"].size());
		for (size_t i = 0; i < doc["cases"].size(); i++)
			EXPECT_EQ(k["tests"][i]["status"], expected_status(doc["cases"][i])) << doc["cases"][i]["id"];
	}
	const json cut = format_kcidb(run_cut_short(), origin);
	EXPECT_EQ(count_status(cut, "ERROR"), 1u);	// D, running when the guest died
	EXPECT_EQ(count_status(cut, "MISS"), size_t(count_verdict(run_cut_short(), "error")) - 1);
	EXPECT_GT(count_status(cut, "MISS"), 0u);
	// The same reason without the marker is an error, not a miss: no
	// guessing from text.
	json unmarked = run_cut_short();
	for (auto &c : unmarked["cases"])
		c.erase("not_reached");
	EXPECT_EQ(count_status(format_kcidb(unmarked, origin), "MISS"), 0u);
}

TEST(ReportKcidb, EachKernelIsOneCheckoutAndOneBuildItsTestsPointTo)
{
	const json doc = run_of_several_kernels();	// two kernels x two boots
	const json k = format_kcidb(doc, origin);
	ASSERT_EQ(k["checkouts"].size(), 2u);
	ASSERT_EQ(k["builds"].size(), 2u);
	std::set<std::string> checkouts;
	for (const auto &c : k["checkouts"])
		checkouts.insert(c["id"].get<std::string>());
	for (const auto &b : k["builds"])
		EXPECT_TRUE(checkouts.count(b["checkout_id"].get<std::string>())) << b;
	for (size_t i = 0; i < doc["cases"].size(); i++) {
		const json &build = by_id(k["builds"], k["tests"][i]["build_id"]);
		EXPECT_EQ(build["misc"]["kernel"]["release"], doc["cases"][i]["kernel"]["release"]);
		EXPECT_EQ(k["tests"][i]["environment"]["misc"]["boot"], doc["cases"][i]["boot"]["placement"]);
	}
	const json single = format_kcidb(sample_run(), origin);
	ASSERT_EQ(single["builds"].size(), 1u);
	EXPECT_EQ(single["builds"][0]["architecture"], "x86_64");	// uname's machine, recorded
	EXPECT_EQ(single["builds"][0]["misc"]["kernel"]["version"], sample_run()["kernel"]["version"]);
	EXPECT_NE(single["builds"][0]["comment"].get<std::string>().find("not recorded: compiler"), std::string::npos);
}

TEST(ReportKcidb, IdsRepeatForTheSameRunAndDifferForAnother)
{
	const json a = format_kcidb(run_with_failures(), origin);
	EXPECT_EQ(a, format_kcidb(run_with_failures(), origin));
	std::set<std::string> ids;
	for (const char *list : {"checkouts", "builds", "tests"})
		for (const auto &o : a[list]) {
			EXPECT_EQ(o["id"].get<std::string>().rfind(origin + ":", 0), 0u) << o["id"];
			EXPECT_EQ(o["origin"], origin);
			ids.insert(o["id"].get<std::string>());
		}
	EXPECT_EQ(ids.size(), a["checkouts"].size() + a["builds"].size() + a["tests"].size());

	json other_run = run_with_failures();
	other_run["started_at"] = "2026-12-01T00:00:00Z";
	const json b = format_kcidb(other_run, origin);
	EXPECT_NE(a["tests"][0]["id"], b["tests"][0]["id"]);
	EXPECT_EQ(a["builds"][0]["id"], b["builds"][0]["id"]);	// the same kernel
	const json c = format_kcidb(on_kernel(run_with_failures(), "6.12.9-pinmatrix"), origin);
	EXPECT_NE(a["builds"][0]["id"], c["builds"][0]["id"]);
}

TEST(ReportKcidb, PathsArePinmatrixSuiteCaseInKcidbCharacters)
{
	json doc = run_with_another_suite();
	doc["cases"].push_back({{"id", "backing/hugetlb 2m:x"}, {"suite", "backing"}, {"verdict", "pass"}});
	const json k = format_kcidb(doc, origin);
	const std::regex kcidb_path("^[.a-zA-Z0-9_-]*$");
	for (const auto &t : k["tests"])
		EXPECT_TRUE(std::regex_match(t["path"].get<std::string>(), kcidb_path)) << t["path"];
	EXPECT_EQ(k["tests"][0]["path"], "pinmatrix.pin.A");
	EXPECT_EQ(k["tests"][3]["path"], "pinmatrix.ualink.export-idempotent");
	EXPECT_EQ(k["tests"].back()["path"], "pinmatrix.backing.hugetlb_2m_x");
}

TEST(ReportKcidb, TestsCarryReasonTimesEnvironmentEvidenceAndTheSerialExcerpt)
{
	const json doc = run_cut_short();
	const json k = format_kcidb(doc, origin);
	for (size_t i = 0; i < doc["cases"].size(); i++) {
		const json &r = doc["cases"][i], &t = k["tests"][i];
		SCOPED_TRACE(r["id"].get<std::string>());
		EXPECT_DOUBLE_EQ(t["duration"].get<double>(), r["duration_ns"].get<double>() / 1e9);
		EXPECT_EQ(t.value("start_time", ""), r.value("started_at", ""));
		EXPECT_EQ(t["environment"]["misc"]["append"], doc["vm"]["append"]);
		EXPECT_NE(t["environment"]["comment"].get<std::string>().find("QEMU guest (tcg)"), std::string::npos);
		EXPECT_EQ(t["misc"]["verdict"], r["verdict"]);
		if (r["verdict"] == "pass")
			EXPECT_FALSE(t["misc"]["evidence"].empty());
		else
			EXPECT_NE(t["comment"].get<std::string>().find(r["reason"].get<std::string>()), std::string::npos);
		// The panic goes with the case that was running, not with those
		// that never started.
		EXPECT_EQ(t.contains("log_excerpt"), t["status"] == "ERROR") << t;
	}
	EXPECT_NE(k["tests"][5].value("log_excerpt", "").find("Kernel panic"), std::string::npos);	// D
}

TEST(ReportKcidb, ALongSerialExcerptIsCutToKcidbsLimitKeepingItsEnd)
{
	json doc = run_cut_short();
	std::string serial;
	while (serial.size() < 40000)
		serial += "[    5.1] µs line of the console\n";
	serial += "the last line";
	doc["vm"]["serial_excerpt"] = serial;
	const json k = format_kcidb(doc, origin);
	const std::string excerpt = k["tests"][5]["log_excerpt"];
	EXPECT_LE(code_points(excerpt), 16384u);
	EXPECT_GT(excerpt.size(), 16000u);
	EXPECT_EQ(excerpt.rfind("the last line"), excerpt.size() - 13);
	EXPECT_EQ(json::parse(json(excerpt).dump()).get<std::string>(), excerpt);	// valid UTF-8
}

TEST(ReportKcidb, BenchmarksAreDoneWithTheirTimeOrSkipWithTheReason)
{
	const json bench = sample_bench();
	const auto entries = report::bench_entries(bench);
	const json k = format_kcidb(sample_run(), origin, &bench);
	const size_t cases = sample_run()["cases"].size();
	ASSERT_EQ(k["tests"].size(), cases + entries.size());
	ASSERT_EQ(k["builds"].size(), 1u);
	for (size_t i = 0; i < entries.size(); i++) {
		const json &t = k["tests"][cases + i];
		SCOPED_TRACE(entries[i].name);
		EXPECT_EQ(t["build_id"], k["builds"][0]["id"]);
		EXPECT_EQ(t["path"].get<std::string>().rfind("pinmatrix.bench.", 0), 0u);
		if (entries[i].skipped.empty()) {
			EXPECT_EQ(t["status"], "DONE");
			EXPECT_DOUBLE_EQ(t["number"]["value"].get<double>(), entries[i].ns / 1e9);
			EXPECT_EQ(t["number"]["unit"], "s");
		} else {
			EXPECT_EQ(t["status"], "SKIP");
			EXPECT_FALSE(t.contains("number"));
			EXPECT_NE(t["comment"].get<std::string>().find(entries[i].skipped), std::string::npos);
		}
	}
	EXPECT_EQ(count_status(k, "DONE"), 3u);
	EXPECT_EQ(k["tests"][cases + 1]["path"], "pinmatrix.bench.reg_mr.movable.4096");
}

TEST(ReportKcidb, OriginIsKcidbsNameForTheCiSystem)
{
	for (const char *good : {"my_lab", "pinmatrix", "lab2"})
		EXPECT_TRUE(is_kcidb_origin(good)) << good;
	for (const char *bad : {"", "My_Lab", "my-lab", "a:b", "a b", "lab\n", "é"})
		EXPECT_FALSE(is_kcidb_origin(bad)) << bad;
	EXPECT_THROW(format_kcidb(sample_run(), "Bad-Origin"), usage_error);
}

TEST(ReportKcidb, CommandWritesTheFileOnceWholeAndRefusesBadInputFirst)
{
	temp_dir dir;
	json doc = run_cut_short();
	doc["benchmarks"] = "bench.json";
	write_file(dir / "run/results.json", doc.dump(2));
	write_file(dir / "run/bench.json", sample_bench().dump());
	auto r = run_pinmatrix("report " + shell_quoted(dir / "run") + " --kcidb --origin my_lab");
	ASSERT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find("MISS"), std::string::npos) << r.output;
	const json k = json::parse(read_file(dir / "run/kcidb.json"));
	EXPECT_EQ(k["version"], json({{"major", kcidb_major}, {"minor", kcidb_minor}}));
	EXPECT_EQ(k["tests"].size(), doc["cases"].size() + report::bench_entries(sample_bench()).size());

	r = run_pinmatrix("report " + shell_quoted(dir / "run/results.json") + " --kcidb --origin my_lab --out " +
			  shell_quoted(dir / "out/sub/k.json"));
	ASSERT_EQ(r.exit_code, 0) << r.output;
	EXPECT_EQ(json::parse(read_file(dir / "out/sub/k.json")), k);	// the same ids again
	for (const auto &e : fs::recursive_directory_iterator(dir.path()))
		EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

	const auto before = read_file(dir / "run/kcidb.json");
	const std::vector<std::string> bad_args = {" --kcidb --origin My-Lab", " --kcidb",
						   " --kcidb --origin lab --out " + shell_quoted(dir / "out"),
						   " --origin lab"};
	for (const auto &bad : bad_args) {
		r = run_pinmatrix("report " + shell_quoted(dir / "run") + bad);
		EXPECT_EQ(r.exit_code, 2) << bad << "\n" << r.output;
		EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
	}
	EXPECT_EQ(read_file(dir / "run/kcidb.json"), before);
	EXPECT_EQ(std::distance(fs::directory_iterator(dir / "out"), fs::directory_iterator()), 1);
}
