// SPDX-License-Identifier: GPL-2.0
// Debian's kernel flavours in guests: the real-time kernel (PREEMPT_RT)
// of bookworm's 6.12. Its headers are its own flavour's (-common-rt, from
// its headers package's Depends: the test modules build against them), and
// it has no transparent huge pages (TRANSPARENT_HUGEPAGE depends on
// !PREEMPT_RT), so its base-page mappings take no MADV_NOHUGEPAGE and the
// THP row says why it cannot run.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

using nlohmann::json;
using pinmatrix::test::case_by_id;
using pinmatrix::test::run_guest;

TEST(VmFlavours, RealTime612RunsTheSeedAndBackingCases)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto g = run_guest("flavour-rt", "--kernel debian:6.12+deb12-rt --boot movable --cases A,B,C,D,backing");
	ASSERT_TRUE(g.doc.is_object());
	EXPECT_EQ(g.run.exit_code, 0) << g.run.output;
	const std::string release = g.doc["kernel"].value("release", "");
	EXPECT_TRUE(release.ends_with("-rt-amd64")) << release;
	EXPECT_NE(g.doc["kernel"].value("version", "").find("PREEMPT_RT"), std::string::npos) << g.doc["kernel"];
	for (const char *id : {"A", "B", "C", "D", "backing/unpopulated", "backing/memfd", "backing/zero-page"})
		EXPECT_EQ(case_by_id(g.doc, id)["verdict"], "pass") << id << ": " << case_by_id(g.doc, id).value("reason", "");
	const json &thp = case_by_id(g.doc, "backing/anon-thp");
	EXPECT_EQ(thp["verdict"], "skip");
	EXPECT_NE(thp.value("reason", "").find("no transparent huge pages"), std::string::npos) << thp["reason"];
	EXPECT_NE(thp.value("reason", "").find("PREEMPT_RT kernel (uname -v)"), std::string::npos) << thp["reason"];
	for (const auto &c : g.doc["cases"])
		EXPECT_TRUE(c["verdict"] == "pass" || c["verdict"] == "skip") << c["id"] << ": " << c.value("reason", "");
}
