// SPDX-License-Identifier: GPL-2.0
// The other long-term pinners (cases/pinner/) in guests booted with
// ZONE_MOVABLE, per kernel version: Debian's stock 6.1 has no udmabuf
// (CONFIG_UDMABUF not set) and rxe without ODP, so every case SKIPs with
// its reason; stock 6.12 pins a udmabuf through memfd_pin_folios(): the
// page leaves ZONE_MOVABLE and its block goes offline with the udmabuf
// held (PASS), while rxe still has no ODP there; stock 7.2 does the same
// with udmabuf and registers an on-demand MR on rxe with no pin: the page
// stays and its block goes offline with the MR held (its rxe misplaces the
// device's writes through such an MR: the case FAILs on that alone, which
// this test allows, by name). iommufd's mock
// domain, the vDPA simulator and VFIO type1 SKIP on all three (not in
// Debian's kernels, no IOMMU in the guest).

#include <algorithm>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

using nlohmann::json;

namespace {

struct kernel_case {
	const char *kernel;
	bool udmabuf_runs;	// CONFIG_UDMABUF, and udmabuf pins long-term (6.11+)
	bool odp_runs;		// rxe has ODP (drivers/infiniband/sw/rxe/rxe_odp.c)
};

std::map<std::string, json> by_id(const json &doc)
{
	std::map<std::string, json> out;
	for (const auto &c : doc["cases"])
		out[c["id"]] = c;
	return out;
}

void expect_skip(const json &c, const std::string &because)
{
	EXPECT_EQ(c["verdict"], "skip") << c["id"] << ": " << c.value("reason", "");
	EXPECT_NE(c.value("reason", "").find(because), std::string::npos) << c["id"] << ": " << c.value("reason", "");
}

} // namespace

class VmPinner : public ::testing::TestWithParam<kernel_case> {
protected:
	void SetUp() override { PINMATRIX_REQUIRE_GUEST(); }
};

TEST_P(VmPinner, OutcomeByKernelVersion)
{
	const std::string kernel = GetParam().kernel;
	const json doc =
		pinmatrix::test::run_guest("pinner-" + kernel, "--kernel debian:" + kernel + " --boot movable --cases pinner")
			.doc;
	ASSERT_TRUE(doc.is_object());
	ASSERT_EQ(doc["cases"].size(), 5u);
	auto cases = by_id(doc);
	const json &udmabuf = cases["pinner/udmabuf"];
	if (GetParam().udmabuf_runs) {
		EXPECT_EQ(udmabuf["verdict"], "pass") << udmabuf.value("reason", "");
		EXPECT_EQ(udmabuf["expected"]["page"], "moved");
		const auto &o = udmabuf["observed"];
		ASSERT_TRUE(o.is_object());
		EXPECT_EQ(o["errno"], 0);
		EXPECT_EQ(o["before"]["placement"], "movable");
		EXPECT_NE(o["after"]["placement"], "movable");
		EXPECT_NE(o["after"]["pfn"], o["before"]["pfn"]);
		EXPECT_EQ(o["give_back"]["with_pin_held"]["given_back"], true) << o["give_back"].dump();
	} else {
		expect_skip(udmabuf, "no /dev/udmabuf (CONFIG_UDMABUF not set)");
		EXPECT_EQ(udmabuf["expected"]["page"], "stays (known gap)");
	}
	const json &odp = cases["pinner/rxe-odp"];
	if (GetParam().odp_runs) {
		// Registered, no pin, the block given back with the MR held, and
		// the control write through an ordinary MR where it was aimed, as
		// is every transfer of the data path through an ordinary MR.
		// Stock 7.2.13's rxe moves an on-demand MR's data at the page's
		// start whatever its offset (README, "Other long-term pinners"):
		// the known bug's expected failure (matrix/known_bugs.cpp), or a
		// PASS on a kernel without it.
		const auto &o = odp["observed"];
		ASSERT_TRUE(o.is_object()) << odp.value("reason", "");
		EXPECT_EQ(o["errno"], 0);
		EXPECT_EQ(o["after"]["placement"], "movable");
		EXPECT_EQ(o["after"]["pfn"], o["before"]["pfn"]);
		EXPECT_EQ(o["after"]["maybe_dma_pinned"], false);
		EXPECT_EQ(o["give_back"]["with_pin_held"]["given_back"], true) << o["give_back"].dump();
		EXPECT_EQ(o["device_write"]["control"]["same"], true) << o["device_write"].dump();
		ASSERT_EQ(o["data_path"]["transfers"].size(), 9u) << o.dump();
		for (const auto &t : o["data_path"]["transfers"])
			EXPECT_EQ(t["ordinary"]["same"], true) << t.dump();
		if (odp["verdict"] != "pass") {
			EXPECT_EQ(odp["verdict"], "xfail");
			EXPECT_EQ(odp.value("reason", "").find("expected failure, known bug rxe-odp-offset of 7.2."), 0u)
				<< odp.value("reason", "");
			EXPECT_EQ(odp["known_bug"]["id"], "rxe-odp-offset");
		}
	} else {
		expect_skip(odp, "has no on-demand paging");
	}
	expect_skip(cases["pinner/iommufd-mock"], "CONFIG_IOMMUFD");
	expect_skip(cases["pinner/vdpa-sim"], "no vDPA simulator");
	expect_skip(cases["pinner/vfio-type1"], "no IOMMU group");
}

std::string kernel_name(const ::testing::TestParamInfo<kernel_case> &info)
{
	std::string n = std::string("debian_") + info.param.kernel;
	n = n.substr(0, n.find('+'));
	std::replace(n.begin(), n.end(), '.', '_');
	return n;
}

INSTANTIATE_TEST_SUITE_P(StockKernels, VmPinner,
			 ::testing::Values(kernel_case{"6.1", false, false}, kernel_case{"6.12+deb12", true, false},
					   kernel_case{"7.2", true, true}),
			 kernel_name);
