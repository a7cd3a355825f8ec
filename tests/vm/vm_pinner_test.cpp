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
// this test allows, by name). VFIO type1 runs on all three: the guest gets
// QEMU's intel-iommu and edu device, the page leaves ZONE_MOVABLE and edu's
// DMA through the mapping lands where the CPU reads. iommufd's mock domain,
// the vDPA simulator and the CMA heap SKIP on all three (not in Debian's
// kernels; no CMA area).

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
	ASSERT_EQ(doc["cases"].size(), 7u);
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
		// start whatever its offset (docs/cases.md, "Other long-term pinners"):
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
	expect_skip(cases["pinner/vdpa-sim"], "no vDPA simulator (CONFIG_VDPA_SIM_NET not set");
	expect_skip(cases["pinner/cma-heap"], "dma_heap");
	expect_skip(cases["pinner/gup-test-over-2g"], "(a kernel without CONFIG_GUP_TEST, or no debugfs)");
	const json &vfio = cases["pinner/vfio-type1"];
	EXPECT_EQ(vfio["verdict"], "pass") << vfio.value("reason", "");
	const auto &o = vfio["observed"];
	ASSERT_TRUE(o.is_object()) << vfio.value("reason", "");
	EXPECT_EQ(o["before"]["placement"], "movable");
	EXPECT_NE(o["after"]["placement"], "movable");
	EXPECT_EQ(o["after"]["maybe_dma_pinned"], true);
	EXPECT_EQ(o["pin_device_write"]["same"], true) << o["pin_device_write"].dump();
	EXPECT_EQ(o["give_back"]["with_pin_held"]["given_back"], true) << o["give_back"].dump();
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

// The pin matrix's seed cases with VFIO type1 as the second pin
// (--second-pin vfio-type1): A's page moves at VFIO_IOMMU_MAP_DMA, B's
// first pin strands it (ENOMEM), C's long-term first pin moved it already;
// every mapping that succeeds is checked by edu's DMA through the IOMMU.
TEST(VmVfioSecondPin, SeedCasesWithVfioType1AsTheSecondPin)
{
	PINMATRIX_REQUIRE_GUEST();
	const json doc = pinmatrix::test::run_guest("vfio-second-pin", "--kernel debian:6.1 --boot movable "
								   "--second-pin vfio-type1 --cases A,B,C,D")
				 .doc;
	ASSERT_TRUE(doc.is_object());
	auto cases = by_id(doc);
	ASSERT_EQ(cases.size(), 4u);
	for (const auto &[id, c] : cases) {
		EXPECT_EQ(c["verdict"], "pass") << id << ": " << c.value("reason", "");
		EXPECT_EQ(c["second_pin"], "vfio-type1") << id;
	}
	EXPECT_EQ(cases["B"]["observed"]["errno"], 12);
	EXPECT_EQ(cases["B"]["observed"]["recovery"]["errno"], 0);
	for (const char *id : {"A", "C", "D"}) {
		EXPECT_EQ(cases[id]["observed"]["errno"], 0) << id;
		EXPECT_EQ(cases[id]["observed"]["readback_method"], "vfio-edu-dma") << id;
		EXPECT_EQ(cases[id]["observed"]["rdma_write_readback"], true) << id;
	}
	EXPECT_TRUE(cases["A"]["observed"]["migrated_by_registration"].get<bool>());
}
