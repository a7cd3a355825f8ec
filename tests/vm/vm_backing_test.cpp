// SPDX-License-Identifier: GPL-2.0
// The backing family (cases/backing/) in guests: Debian's stock 6.1 and
// 6.12 on ZONE_MOVABLE, and stock 7.2 on hugetlb_cma for the 1 GiB page
// (neither Debian 6.1 nor bookworm's 6.12 has CONFIG_CMA). Each record's
// expectation comes from the table by the kernel's version; here the
// versions are seen to differ where the kernel's contract changed (a
// writable long-term pin of a file mapping, refused from 6.5; a read-only
// MR of a read-only file mapping, refused before 6.2), and 6.1's hugetlb
// bug (a WARNING and ENOMEM instead of a migration) is caught.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

using nlohmann::json;
using pinmatrix::test::case_by_id;
using pinmatrix::test::run_guest;

namespace {

// The record answered what its row expects for this kernel.
void expect_row_held(const json &c)
{
	EXPECT_EQ(c["verdict"], "pass") << c["id"] << ": " << c.value("reason", "");
	ASSERT_TRUE(c["observed"].is_object()) << c["id"];
	EXPECT_EQ(c["observed"]["errno"], c["expected"]["errno"]) << c["id"];
}

const json &observed(const json &doc, const std::string &id)
{
	return case_by_id(doc, "backing/" + id)["observed"];
}

} // namespace

TEST(VmBacking, Debian61)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto g = run_guest("backing-6.1", "--kernel debian:6.1 --boot movable --cases backing");
	ASSERT_TRUE(g.doc.is_object());
	EXPECT_EQ(g.run.exit_code, 0) << g.run.output;	// hugetlb-2m, below: an expected failure
	for (const char *id : {"anon-thp", "memfd", "file-shared-writable", "file-shared-read-only", "anon-read-only",
			       "unpopulated", "zero-page", "secretmem"})
		expect_row_held(case_by_id(g.doc, std::string("backing/") + id));
	// 6.1 registers a writable pin of a file's shared mapping, moving the page ...
	EXPECT_EQ(observed(g.doc, "file-shared-writable")["errno"], 0);
	EXPECT_EQ(observed(g.doc, "file-shared-writable")["pages_moved"], 1);
	// ... and refuses a read-only MR of a read-only one (ib_umem_get() forced a write).
	EXPECT_EQ(observed(g.doc, "file-shared-read-only")["errno_name"], "EFAULT");
	// The fresh pages would have landed in ZONE_MOVABLE without the pin.
	EXPECT_GT(observed(g.doc, "unpopulated")["control_fresh_pages"]["restricted"].get<int>(), 0);
	// The 2 MiB hugetlb page: a WARNING and ENOMEM, the known bug's
	// expected failure (matrix/known_bugs.cpp).
	const json &huge = case_by_id(g.doc, "backing/hugetlb-2m");
	EXPECT_EQ(huge["verdict"], "xfail");
	EXPECT_EQ(huge["known_bug"]["id"], "hugetlb-longterm-warn");
	EXPECT_NE(huge["reason"].get<std::string>().find("follow_hugetlb_page()"), std::string::npos) << huge["reason"];
	EXPECT_NE(huge["reason"].get<std::string>().find("WARNING"), std::string::npos) << huge["reason"];
	EXPECT_EQ(case_by_id(g.doc, "backing/hugetlb-1g-cma")["verdict"], "skip");
}

TEST(VmBacking, Debian612)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto g = run_guest("backing-6.12", "--kernel debian:6.12+deb12 --boot movable --cases backing");
	ASSERT_TRUE(g.doc.is_object());
	EXPECT_EQ(g.run.exit_code, 0) << g.run.output;
	for (const auto &c : g.doc["cases"])
		if (c["id"] != "backing/hugetlb-1g-cma" && c["id"] != "backing/file-shared-writable-in-place")
			expect_row_held(c);
	// On the movable boot the page cache is in ZONE_MOVABLE: GUP-fast's own
	// file rule is out of reach (the ordinary boot gives it).
	const json &in_place = case_by_id(g.doc, "backing/file-shared-writable-in-place");
	EXPECT_EQ(in_place["verdict"], "skip") << in_place.value("reason", "");
	// From 6.5 the writable pin of a file's shared mapping is refused; from
	// 6.2 the read-only MR registers and the page moves.
	EXPECT_EQ(observed(g.doc, "file-shared-writable")["errno_name"], "EFAULT");
	EXPECT_EQ(observed(g.doc, "file-shared-read-only")["errno"], 0);
	EXPECT_EQ(observed(g.doc, "file-shared-read-only")["pages_moved"], 1);
	EXPECT_EQ(observed(g.doc, "hugetlb-2m")["pages_moved"], 512);
	EXPECT_EQ(case_by_id(g.doc, "backing/hugetlb-1g-cma")["verdict"], "skip");
	// Which GUP path took the pages, from the trace of pin_user_pages_fast
	// and __gup_longterm_locked (issue 40 part 3): a slow-path row's pages
	// all went to the slow path, and so did a GUP-fast row's that started
	// in ZONE_MOVABLE (GUP-fast may not pin them where they are).
	for (const char *id : {"memfd-slow-path", "file-shared-writable-slow-path", "file-shared-read-only-slow-path",
			       "secretmem-slow-path", "memfd", "file-shared-writable", "anon-read-only"}) {
		const std::string decided = observed(g.doc, id)["gup_path"].value("decided_by", "");
		EXPECT_EQ(decided.rfind("GUP-fast pinned 0 of ", 0), 0u) << id << ": " << decided;
	}
}

// The 1 GiB page of hugetlb_cma is refused, never registered in place.
TEST(VmBacking, Debian72GiganticPageFromHugetlbCma)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto g = run_guest("backing-7.2-hugetlb_cma",
				   "--kernel debian:7.2 --boot hugetlb_cma --cases backing/hugetlb-1g-cma,backing/anon-thp");
	ASSERT_TRUE(g.doc.is_object());
	EXPECT_EQ(g.run.exit_code, 0) << g.run.output;
	expect_row_held(case_by_id(g.doc, "backing/hugetlb-1g-cma"));
	EXPECT_EQ(observed(g.doc, "hugetlb-1g-cma")["errno_name"], "ENOMEM");
	EXPECT_EQ(observed(g.doc, "hugetlb-1g-cma")["before"]["restricted"], 1);
	expect_row_held(case_by_id(g.doc, "backing/anon-thp"));
}
