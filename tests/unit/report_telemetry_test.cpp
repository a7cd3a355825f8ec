// SPDX-License-Identifier: GPL-2.0
// The registration telemetry and kernel paths in the reports a person reads
// at 2 a.m., from a real guest run (tests/data/results-telemetry.json:
// Debian's 6.1 under QEMU, cases A, B, C and the registration suite):
// B's ENOMEM classified as placement blocked by the held pin with its path
// ending in -ENOMEM, A's migration, the memlock case's quota.

#include <cstdio>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text.hpp"
#include "report_input.hpp"
#include "reports.hpp"

using namespace pinmatrix;
using nlohmann::json;

namespace {

json telemetry_run()
{
	std::ifstream in(std::string(PINMATRIX_SOURCE_DIR) + "/tests/data/results-telemetry.json");
	return json::parse(in);
}

bool has(const std::string &text, const std::string &s)
{
	return text.find(s) != std::string::npos;
}

const json &record(const json &doc, const std::string &id)
{
	for (const auto &c : doc["cases"])
		if (c["id"] == id)
			return c;
	throw std::runtime_error("no case " + id);
}

} // namespace

TEST(ReportTelemetry, RegistrationViewsOfTheRecords)
{
	const json doc = telemetry_run();
	const auto run = report::view_run(doc);
	for (const auto &c : run.cases) {
		const auto regs = report::registrations_of(c);
		ASSERT_FALSE(regs.empty()) << c.id;
		const auto *main = report::main_registration(regs);
		ASSERT_NE(main, nullptr);
		EXPECT_TRUE(main->from_trace) << c.id;
		if (c.id == "B") {
			EXPECT_EQ(main->errno_name, "ENOMEM (12)");
			EXPECT_EQ(main->classification, "long-term placement blocked by an existing pin");
			EXPECT_EQ(main->path_lines.back().find("  -ENOMEM"), 0u) << main->path_lines.back();
			EXPECT_EQ(main->path_sources.size(), main->path_lines.size());
		}
		if (c.id == "A") {
			EXPECT_TRUE(has(main->path_one_line, "/ migrate 0x")) << main->path_one_line;
		}
		if (c.id == "registration/memlock-quota") {
			EXPECT_EQ(main->classification, "memlock quota");
		}
	}
	// Nothing of the telemetry is left to the generic "extra fields".
	for (const auto &c : run.cases)
		for (const auto &x : report::extra_fields(c))
			EXPECT_EQ(x.label.find("registrations"), std::string::npos) << c.id;
}

TEST(ReportTelemetry, HtmlShowsClassificationAndKernelPath)
{
	const json doc = telemetry_run();
	const std::string html = format_html(doc);
	const auto &a = record(doc, "A")["observed"];
	EXPECT_TRUE(has(html, "Registrations: telemetry and kernel path"));
	EXPECT_TRUE(has(html, "<span class=\"cls\">long-term placement blocked by an existing pin</span>"));
	EXPECT_TRUE(has(html, "<span class=\"cls\">memlock quota</span>"));
	EXPECT_TRUE(has(html, "source P has an existing pin: pinmatrix module FOLL_PIN pin #1"));
	EXPECT_TRUE(has(html, "<span class=\"end-err\">  -ENOMEM: __gup_longterm_locked -12"));
	EXPECT_TRUE(has(html, "migrate " + hex(a["pfn_before"]) + " -&gt; " + hex(a["pfn_after"])))
		<< "A's migration, P and Q";
	EXPECT_TRUE(has(html, "First pin: kernel path"));
	EXPECT_TRUE(has(html, "pin requested WITHOUT FOLL_LONGTERM: pin_user_pages_fast(1 page, FOLL_WRITE)"));
	EXPECT_TRUE(has(html, "no placement check: without FOLL_LONGTERM the page is pinned where it is"));
	EXPECT_TRUE(has(html, "kernel trace</dt>")) << "the run's probes";
	EXPECT_FALSE(has(html, "<script"));
}

TEST(ReportTelemetry, KtapDiagnosticsCarryTheClassificationAndPath)
{
	const json doc = telemetry_run();
	const std::string ktap = format_ktap(doc);
	const std::string P = hex(record(doc, "B")["observed"]["pfn_before"]);
	EXPECT_TRUE(has(ktap, "# B: registration #1 the case's registration: ibv_reg_mr -> ENOMEM (12): long-term "
			      "placement blocked by an existing pin (rule placement-blocked-by-visible-pin)\n"))
		<< ktap;
	EXPECT_TRUE(has(ktap, "# B:   kernel path: long-term pin requested / zone = ZONE_MOVABLE, pageblock "
			      "MIGRATE_MOVABLE / migrate " + P + " -> Q / source P has an existing pin / migration fails / "
			      "-ENOMEM\n"))
		<< ktap;
	EXPECT_TRUE(has(ktap, "# registration/memlock-quota: registration #1 with RLIMIT_MEMLOCK 2048 bytes and no "
			      "CAP_IPC_LOCK: ibv_reg_mr -> ENOMEM (12): memlock quota (rule memlock-quota)\n"))
		<< ktap;
	// Still exactly one result line per case (inside its suite's subtest).
	std::istringstream lines(ktap);
	size_t results = 0;
	for (std::string l; std::getline(lines, l);)
		results += l.rfind("  ok ", 0) == 0 || l.rfind("  not ok ", 0) == 0;
	EXPECT_EQ(results, telemetry_run()["cases"].size());
}

TEST(ReportTelemetry, MarkdownListsClassifiedRegistrationErrors)
{
	const std::string md = format_summary_markdown(telemetry_run());
	EXPECT_TRUE(has(md, "#### Registration errors, classified"));
	EXPECT_TRUE(has(md, "- **B** ENOMEM (12): long-term placement blocked by an existing pin (kernel path: "))
		<< md;
	EXPECT_TRUE(has(md, "- **registration/memlock-quota** ENOMEM (12): memlock quota")) << md;
	EXPECT_TRUE(has(md, "- **registration/memlock-zero** EPERM (1): not ENOMEM")) << md;
}

TEST(ReportTelemetry, JunitSystemOutCarriesTheClassificationAndPath)
{
	const std::string xml = format_junit(telemetry_run());
	EXPECT_TRUE(has(xml, "registration #1 the case&#39;s registration: ibv_reg_mr: ENOMEM (12): long-term placement "
			     "blocked by an existing pin"))
		<< xml.substr(0, 3000);
	EXPECT_TRUE(has(xml, "  |   -ENOMEM: __gup_longterm_locked -12"));
}
