// SPDX-License-Identifier: GPL-2.0
// Debian's kernel flavours in guests.
// - The real-time kernel (PREEMPT_RT) of bookworm's 6.12. Its headers are
//   its own flavour's (-common-rt, from its headers package's Depends: the
//   test modules build against them), and it has no transparent huge pages
//   (TRANSPARENT_HUGEPAGE depends on !PREEMPT_RT), so its base-page
//   mappings take no MADV_NOHUGEPAGE and the THP row says why it cannot run.
// - The cloud kernel of bookworm's 6.12: no 9p (the host's files over
//   virtiofs, the root read-only host-side), no Soft-RoCE (the long-term
//   pin is io_uring's; the rows that need ibv_reg_mr SKIP saying so), no
//   DRM (ualink_sim is left out; the UALink rows SKIP saying so).

#include <unistd.h>

#include <filesystem>

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

TEST(VmFlavours, Cloud612RunsWhatItCanOverVirtiofs)
{
	PINMATRIX_REQUIRE_GUEST();
	const auto g = run_guest("flavour-cloud", "--kernel debian:6.12+deb12-cloud --boot movable");
	ASSERT_TRUE(g.doc.is_object());
	EXPECT_EQ(g.run.exit_code, 0) << g.run.output;
	EXPECT_TRUE(g.doc["kernel"].value("release", "").ends_with("-cloud-amd64")) << g.doc["kernel"];
	const json &vm = g.doc["vm"];
	EXPECT_EQ(vm.value("share", ""), "virtiofs") << vm;
	EXPECT_EQ(vm["second_pin"].value("name", ""), "io_uring") << vm;
	EXPECT_TRUE(vm["modules_left_out"].contains("ualink_sim")) << vm;
	EXPECT_NE(g.run.output.find("has no Soft-RoCE (CONFIG_RDMA_RXE): the long-term pin is io_uring's"),
		  std::string::npos) << g.run.output;
	// The seed's cases with io_uring as the long-term pin: B's ENOMEM too.
	for (const char *id : {"A", "B", "C", "D"}) {
		const json &c = case_by_id(g.doc, id);
		EXPECT_EQ(c["verdict"], "pass") << id << ": " << c.value("reason", "");
		EXPECT_EQ(c.value("second_pin", ""), "io_uring") << id;
	}
	EXPECT_EQ(case_by_id(g.doc, "B")["observed"].value("errno", 0), 12);
	// Each row that cannot run says why: no Soft-RoCE, no DRM.
	const json &reg = case_by_id(g.doc, "backing/memfd");
	EXPECT_EQ(reg["verdict"], "skip");
	EXPECT_NE(reg.value("reason", "").find("has no Soft-RoCE to make one"), std::string::npos) << reg["reason"];
	const json &ualink = case_by_id(g.doc, "ualink/export-idempotent");
	EXPECT_EQ(ualink["verdict"], "skip");
	EXPECT_NE(ualink.value("reason", "").find("the kernel has no DRM"), std::string::npos) << ualink["reason"];
	size_t passed = 0;
	for (const auto &c : g.doc["cases"]) {
		EXPECT_TRUE(c["verdict"] == "pass" || c["verdict"] == "skip") << c["id"] << ": " << c.value("reason", "");
		passed += c["verdict"] == "pass";
	}
	EXPECT_GE(passed, 10u);
}

// virtiofs: the host root is read-only host-side (virtiofsd's mount
// namespace), not by the guest's mount option: a guest that remounts it
// read-write still writes nothing on the host.
TEST(VmFlavours, CloudGuestCannotWriteTheHostRoot)
{
	PINMATRIX_REQUIRE_GUEST();
	const std::string probe = "/var/tmp/pinmatrix-virtiofs-probe-" + std::to_string(getpid());
	const std::filesystem::path dir = std::filesystem::path(PINMATRIX_TEST_OUT) / "flavour-cloud-ro";
	std::filesystem::remove_all(dir);
	const auto r = pinmatrix::test::run_pinmatrix("vm --kernel debian:6.12+deb12-cloud --out " + dir.string() +
						      " --guest-cmd 'bash " PINMATRIX_SOURCE_DIR
						      "/tests/vm/host-root-read-only.sh " + probe + "'");
	EXPECT_EQ(r.exit_code, 0) << r.output;
	EXPECT_NE(r.output.find(" / virtiofs "), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("/ remounted read-write in the guest"), std::string::npos) << r.output;
	EXPECT_NE(r.output.find("the write was refused: "), std::string::npos) << r.output;
	EXPECT_FALSE(std::filesystem::exists(probe));
}
