// SPDX-License-Identifier: GPL-2.0
// cases/pinner: the judge on hand-built observations, and the version rule:
// udmabuf pins long-term (memfd_pin_folios()) from 6.11, so a 6.12 kernel
// must move the page out of restricted memory while a 6.1 kernel is
// expected to leave it in place (a known gap); an on-demand-paging MR must
// pin nothing; vhost-vdpa and VFIO type1 move the page; a case without a
// body only SKIPs.

#include <cerrno>

#include <gtest/gtest.h>

#include "known_bugs.hpp"
#include "pinner/pinner_cases.hpp"

using namespace pinmatrix;
using namespace pinmatrix::pinner_cases;
using nlohmann::json;

namespace {

const pinner_case &case_by_id(const std::string &id) { return row_of(definition, id); }

// The suite's judge, as the runner calls it on kernel v.
case_record judge_case(const pinner_case &c, const std::optional<kernel_version> &v, const nlohmann::json &o)
{
	return judge_row(definition, c, v, o);
}

} // namespace

namespace {

const kernel_version k6_1{6, 1, 158};
const kernel_version k6_12{6, 12, 117};

json give_back(std::optional<bool> held, std::optional<bool> released)
{
	auto one = [](std::optional<bool> b) {
		return json{{"method", "offline memory block 9"}, {"given_back", b ? json(*b) : json(nullptr)},
			    {"detail", ""}, {"latency_ns", 1}};
	};
	return {{"with_pin_held", one(held)}, {"released", one(released)}};
}

json observed(const std::string &after, std::optional<bool> held, int err = 0,
	      std::optional<bool> pinned = std::nullopt)
{
	return {{"errno", err},
		{"placement", "movable"},
		{"probe", "module"},
		{"before", {{"pfn", 300000}, {"placement", "movable"}, {"maybe_dma_pinned", false}}},
		{"after",
		 {{"pfn", after == "movable" ? 300000 : 4000},
		  {"placement", after},
		  {"maybe_dma_pinned", pinned ? json(*pinned) : json(nullptr)}}},
		{"give_back", give_back(held, true)}};
}

} // namespace

TEST(PinnerJudge, UdmabufExpectationFollowsTheKernelVersion)
{
	const auto &c = case_by_id("pinner/udmabuf");
	const auto old = expectation_for(c, k6_1);
	const auto now = expectation_for(c, k6_12);
	EXPECT_EQ(old.fate, page_fate::stays_gap);
	EXPECT_EQ(now.fate, page_fate::moved);
	EXPECT_EQ(old.versions, "before 6.11");
	EXPECT_EQ(now.versions, "6.11.0 on (c6a3194c05e7)");
	EXPECT_NE(old.summary.find("stays in place (known gap of kernels before 6.11"), std::string::npos)
		<< old.summary;
	EXPECT_NE(now.source.find("memfd_pin_folios()"), std::string::npos);
	EXPECT_EQ(old.given_back_while_held, false);
	EXPECT_EQ(now.given_back_while_held, true);
	// The first release of the new rule, and the last of the old one.
	EXPECT_EQ(expectation_for(c, kernel_version{6, 11, 0}).fate, page_fate::moved);
	EXPECT_EQ(expectation_for(c, kernel_version{6, 10, 14}).fate, page_fate::stays_gap);
	// An unknown version chooses no row: the rows differ, so what the
	// kernel must do is unknown, and the case says so as a SKIP.
	const auto unknown = expectation_for(c, std::nullopt);
	EXPECT_FALSE(unknown.fate);
	EXPECT_NE(unknown.summary.find("cannot be read"), std::string::npos) << unknown.summary;
	const auto r = judge_case(c, std::nullopt, observed("ordinary", true));
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("unknown"), std::string::npos) << r.reason;
}

TEST(PinnerJudge, UdmabufOnOneObservationPerVersion)
{
	const auto &c = case_by_id("pinner/udmabuf");
	// The page stayed in ZONE_MOVABLE and its block could not go offline.
	const json stayed = observed("movable", false, 0, true);
	const auto on_6_1 = judge_case(c, k6_1, stayed);
	EXPECT_EQ(on_6_1.outcome, verdict::pass) << on_6_1.reason;
	EXPECT_NE(on_6_1.reason.find("stays in place (known gap of kernels before 6.11)"), std::string::npos);
	EXPECT_EQ(on_6_1.expected.at("kernel_version"), "6.1.158");
	const auto on_6_12 = judge_case(c, k6_12, stayed);
	EXPECT_EQ(on_6_12.outcome, verdict::fail);
	EXPECT_NE(on_6_12.reason.find("succeeded in place"), std::string::npos) << on_6_12.reason;
	EXPECT_NE(on_6_12.reason.find("not given back with the pin held"), std::string::npos) << on_6_12.reason;
	// Moved out, and its block went offline with the udmabuf held.
	const auto moved = judge_case(c, k6_12, observed("ordinary", true, 0, true));
	EXPECT_EQ(moved.outcome, verdict::pass) << moved.reason;
	EXPECT_EQ(moved.observed->at("summary"), "UDMABUF_CREATE ok; page movable -> ordinary");
	EXPECT_EQ(moved.expected.at("memory_given_back_while_held"), true);
}

TEST(PinnerJudge, FailsARefusedPinAndARefusalTheControlExplains)
{
	const auto &c = case_by_id("pinner/udmabuf");
	const auto refused = judge_case(c, k6_12, observed("movable", std::nullopt, 12));
	EXPECT_EQ(refused.outcome, verdict::fail);
	EXPECT_NE(refused.reason.find("errno 12"), std::string::npos) << refused.reason;
	// Moved, but the block stayed busy even once released: the give-back
	// decided nothing, and the case is no PASS (a SKIP that says why).
	json o = observed("ordinary", false);
	o["give_back"] = give_back(false, false);
	const auto busy = judge_case(c, k6_12, o);
	EXPECT_EQ(busy.outcome, verdict::skip) << busy.reason;
	EXPECT_NE(busy.reason.find("the give-back with the pin held decided nothing"), std::string::npos)
		<< busy.reason;
}

// Where a give-back answer is no answer, or a refusal the control shares,
// the check decided nothing: SKIP with why (the machine could not answer),
// on the version that expects a refusal too (6.1's known gap), never PASS;
// a FAIL of another check stays a FAIL.
TEST(PinnerJudge, AGiveBackThatDecidedNothingIsNoPass)
{
	const auto &c = case_by_id("pinner/udmabuf");
	json unknown = observed("ordinary", std::nullopt);
	EXPECT_EQ(judge_case(c, k6_12, unknown).outcome, verdict::skip);
	// No oracle on this machine at all (a CMA area nothing in user space
	// can ask back): not this machine's check, and the reason says so.
	unknown["give_back"]["with_pin_held"]["method"] = "none";
	unknown["give_back"]["with_pin_held"]["detail"] = "nothing in user space asks this CMA area back";
	const auto no_oracle = judge_case(c, k6_12, unknown);
	EXPECT_EQ(no_oracle.outcome, verdict::pass) << no_oracle.reason;
	EXPECT_NE(no_oracle.reason.find("the give-back is not checked here: nothing in user space asks"),
		  std::string::npos) << no_oracle.reason;
	json refused_everywhere = observed("movable", false);
	refused_everywhere["give_back"] = give_back(false, false);
	const auto gap = judge_case(c, k6_1, refused_everywhere);
	EXPECT_EQ(gap.outcome, verdict::skip) << gap.reason;
	refused_everywhere["give_back"] = give_back(false, true);
	EXPECT_EQ(judge_case(c, k6_1, refused_everywhere).outcome, verdict::pass) << "the control went back";
	// Memory that went back with the pin held decides, whatever the control.
	json back = observed("ordinary", true);
	back["give_back"] = give_back(true, false);
	EXPECT_EQ(judge_case(c, k6_12, back).outcome, verdict::pass);
}

TEST(PinnerJudge, OnDemandRegistrationPinsNothing)
{
	const auto &c = case_by_id("pinner/rxe-odp");
	const auto ok = judge_case(c, k6_12, observed("movable", true, 0, false));
	EXPECT_EQ(ok.outcome, verdict::pass) << ok.reason;
	EXPECT_EQ(ok.expected.at("page"), "stays (no pin)");
	const auto pinned = judge_case(c, k6_12, observed("movable", false, 0, true));
	EXPECT_EQ(pinned.outcome, verdict::fail);
	EXPECT_NE(pinned.reason.find("DMA-pinned"), std::string::npos) << pinned.reason;
	EXPECT_NE(pinned.reason.find("not given back"), std::string::npos) << pinned.reason;
	const auto moved = judge_case(c, k6_12, observed("ordinary", true));
	EXPECT_EQ(moved.outcome, verdict::fail);
	EXPECT_NE(moved.reason.find("migrated it"), std::string::npos) << moved.reason;
	// The device's writes through the MR, in place and once the memory
	// went back, judged where the control through an ordinary MR holds.
	const json good = {{"same", true}, {"detail", "1024 bytes written by the device at offset 2048, read there"}};
	const json lost = {{"same", false}, {"detail", "1024 bytes written by the device at offset 2048 landed at "
							"offset 0 (as the CPU reads the page)"}};
	json o = observed("movable", true, 0, false);
	o["device_write"] = {{"in_place", good}, {"after_give_back", good}, {"control", good}};
	EXPECT_EQ(judge_case(c, k6_12, o).outcome, verdict::pass);
	o["device_write"]["in_place"] = lost;
	const auto misplaced = judge_case(c, k6_12, o);
	EXPECT_EQ(misplaced.outcome, verdict::fail);
	EXPECT_NE(misplaced.reason.find("in place: 1024 bytes written by the device at offset 2048 landed at offset 0"),
		  std::string::npos) << misplaced.reason;
	o["device_write"]["control"] = lost;
	o["device_write"]["in_place"] = good;
	const auto undecided = judge_case(c, k6_12, o);
	EXPECT_EQ(undecided.outcome, verdict::error) << undecided.reason;
	EXPECT_NE(undecided.reason.find("the device writes through the on-demand MR decided nothing"),
		  std::string::npos) << undecided.reason;
}

namespace {

json transfer(const std::string &what, const json &ordinary, const json &odp)
{
	return {{"transfer", what}, {"ordinary", ordinary}, {"odp", odp}};
}

const json went_right = {{"same", true}, {"detail", "landed where it was sent"}};
const json landed_at_0 = {{"same", false}, {"misplaced", true},
			  {"detail", "per packet at its offset: [2048: landed at 0]"}};

json odp_observation(const json &transfers)
{
	json o = observed("movable", true, 0, false);
	o["device"] = "rxe0";
	o["data_path"] = {{"transfers", transfers}};
	return o;
}

} // namespace

// The ODP data path at offsets: each transfer decided by its control; one
// whose bytes moved to another offset in the page, on rxe, is the known
// kernel bug (7.2's __rxe_odp_mr_copy(), matrix/known_bugs.cpp) on the
// kernels that carry it: an expected failure there, a FAIL elsewhere.
TEST(PinnerJudge, TheOdpDataPathIsJudgedByItsControlAndMeetsTheKnownBug)
{
	const auto &c = case_by_id("pinner/rxe-odp");
	const json fine = odp_observation(json::array({transfer("RDMA READ of 1 KiB at offset 2048", went_right, went_right),
					   transfer("ATOMIC FETCH_AND_ADD at offset 2056", went_right,
						    {{"offered", false}, {"detail", "not offered"}})}));
	EXPECT_EQ(judge_case(c, k6_12, fine).outcome, verdict::pass);

	auto bug = judge_case(c, k6_12, odp_observation(json::array({transfer("SEND of 1 KiB received at offset 2048",
									  went_right, landed_at_0)})));
	EXPECT_EQ(bug.outcome, verdict::fail);
	EXPECT_NE(bug.reason.find("SEND of 1 KiB received at offset 2048 through an ODP MR: per packet at its "
				  "offset: [2048: landed at 0]"), std::string::npos) << bug.reason;
	auto on_6_12 = bug;
	apply_known_bugs(on_6_12, k6_12, false);
	EXPECT_EQ(on_6_12.outcome, verdict::fail) << "6.12 is no kernel the bug is known on";
	apply_known_bugs(bug, kernel_version{7, 2, 13}, false);
	EXPECT_EQ(bug.outcome, verdict::xfail) << bug.reason;
	EXPECT_EQ(bug.reason.find("expected failure, known bug rxe-odp-offset of 7.2.13: "), 0u) << bug.reason;
	EXPECT_NE(bug.reason.find("__rxe_odp_mr_copy()"), std::string::npos);
	EXPECT_NE(bug.reason.find("[2048: landed at 0]"), std::string::npos) << bug.reason;
	EXPECT_EQ(bug.details.at("known_bug").at("id"), "rxe-odp-offset");
	EXPECT_EQ(bug.details.at("known_bug").at("reproducer"), "tools/rxe-odp-offset.c");

	// Another device, or bytes lost rather than moved: a FAIL that names no
	// rxe function.
	json other = odp_observation(json::array({transfer("RDMA WRITE of 1 KiB at offset 2048", went_right, landed_at_0)}));
	other["device"] = "mlx5_0";
	auto mlx = judge_case(c, k6_12, other);
	apply_known_bugs(mlx, kernel_version{7, 2, 13}, false);
	EXPECT_EQ(mlx.outcome, verdict::fail);
	EXPECT_EQ(mlx.reason.find("__rxe_odp_mr_copy"), std::string::npos) << mlx.reason;
	EXPECT_FALSE(mlx.details.contains("known_bug"));

	// The control through an ordinary MR failed: that transfer decided
	// nothing, and the case is no PASS, and no kernel bug is named from it.
	const json broken = {{"same", false}, {"step", "registration"}, {"detail", "ibv_reg_mr ENOMEM"}};
	auto undecided = judge_case(c, k6_12, odp_observation(json::array({transfer("RDMA WRITE of 4 KiB at offset 0",
										broken, landed_at_0)})));
	apply_known_bugs(undecided, kernel_version{7, 2, 13}, false);
	EXPECT_EQ(undecided.outcome, verdict::error) << undecided.reason;
	EXPECT_NE(undecided.reason.find("RDMA WRITE of 4 KiB at offset 0 through an ODP MR decided nothing: the "
					"same through an ordinary MR failed (ibv_reg_mr ENOMEM)"),
		  std::string::npos) << undecided.reason;
	EXPECT_FALSE(undecided.details.contains("known_bug"));
}

// vhost-vdpa, VFIO type1 and iommufd's mock domain pin long-term on every
// kernel the suite runs (iommufd from 6.2): the page must leave restricted
// memory, and a device that writes through the mapping (VFIO's edu) must
// write where the CPU reads; the mock domain must translate to that page.
TEST(PinnerJudge, DeviceMappersMoveThePageOnEveryKernel)
{
	EXPECT_EQ(case_table().size(), 7u);
	for (const char *id : {"pinner/vdpa-sim", "pinner/vfio-type1", "pinner/iommufd-mock"}) {
		const auto &c = case_by_id(id);
		for (const auto &k : {k6_1, k6_12}) {
			EXPECT_EQ(expectation_for(c, k).fate, page_fate::moved) << id;
			EXPECT_EQ(judge_case(c, k, observed("ordinary", true)).outcome, verdict::pass) << id;
			const auto in_place = judge_case(c, k, observed("movable", false, 0, true));
			EXPECT_EQ(in_place.outcome, verdict::fail) << id;
			EXPECT_NE(in_place.reason.find("succeeded in place"), std::string::npos) << in_place.reason;
			EXPECT_EQ(judge_case(c, k, observed("ordinary", true, ENOMEM)).outcome, verdict::fail) << id;
		}
	}
	const auto &vfio = case_by_id("pinner/vfio-type1");
	json o = observed("ordinary", true);
	o["pin_device_write"] = {{"same", false}, {"detail", "CPU read differs from what the edu device's DMA wrote"}};
	const auto misplaced = judge_case(vfio, k6_1, o);
	EXPECT_EQ(misplaced.outcome, verdict::fail);
	EXPECT_NE(misplaced.reason.find("the device's access through the pin: CPU read differs"), std::string::npos)
		<< misplaced.reason;
	const auto &iommufd = case_by_id("pinner/iommufd-mock");
	EXPECT_EQ(expectation_for(iommufd, k6_12).versions, "every kernel") << "where iommufd is (6.2 on)";
	o["pin_device_write"] = {{"same", false},
				 {"detail", "the mock domain translates the IOVA to another page than the CPU sees"}};
	const auto elsewhere = judge_case(iommufd, k6_12, o);
	EXPECT_EQ(elsewhere.outcome, verdict::fail);
	EXPECT_NE(elsewhere.reason.find("the device's access through the pin: the mock domain translates the IOVA "
					"to another page"),
		  std::string::npos)
		<< elsewhere.reason;
	o["pin_device_write"] = {{"same", nullptr}, {"detail", "no device write: 0000:00:03.0 is not QEMU's edu"}};
	const auto no_write = judge_case(vfio, k6_1, o);
	EXPECT_EQ(no_write.outcome, verdict::pass);
	EXPECT_NE(no_write.reason.find("is not QEMU's edu"), std::string::npos) << no_write.reason;
}

// A CMA heap's page cannot move: the registration must return, refused or
// in place; one the kernel still retries at the bound FAILs, and a heap page
// outside MIGRATE_CMA decides nothing.
TEST(PinnerJudge, ACmaHeapPageMustEndItsPin)
{
	const auto &c = case_by_id("pinner/cma-heap");
	EXPECT_EQ(expectation_for(c, k6_1).fate, page_fate::never_movable);
	EXPECT_FALSE(expectation_for(c, k6_1).given_back_while_held.has_value());
	const json page = {{"pfn", 70000}, {"placement", "cma"}, {"maybe_dma_pinned", nullptr}};
	json o = {{"pinner", c.pinner}, {"heap", "/dev/dma_heap/reserved"}, {"before", page}, {"after", page},
		  {"returned", true}, {"errno", ENOMEM},
		  {"bound_s", 10}};
	const auto refused = judge_case(c, k6_1, o);
	EXPECT_EQ(refused.outcome, verdict::pass) << refused.reason;
	EXPECT_NE(refused.reason.find("refused with ENOMEM"), std::string::npos) << refused.reason;
	o["errno"] = 0;
	const auto in_place = judge_case(c, k6_1, o);
	EXPECT_EQ(in_place.outcome, verdict::pass) << in_place.reason;
	EXPECT_NE(in_place.reason.find("registered with the page in place"), std::string::npos);
	// A heap that maps by PFN (VM_PFNMAP): GUP refuses the mapping, and the
	// page's placement is the CMA area's account of the allocation; without
	// that account the case decides nothing.
	json by_pfn = o;
	by_pfn["before"]["probe"] = "CMA area reserved's debugfs used count, 0 -> 1 at the allocation";
	by_pfn["errno"] = EFAULT;
	const auto pfn_mapped = judge_case(c, k6_12, by_pfn);
	EXPECT_EQ(pfn_mapped.outcome, verdict::pass) << pfn_mapped.reason;
	EXPECT_NE(pfn_mapped.reason.find("refused with EFAULT (14); the page's placement from the CMA area "
					 "reserved's debugfs used count, 0 -> 1"),
		  std::string::npos)
		<< pfn_mapped.reason;
	by_pfn["before"]["placement"] = "absent";
	EXPECT_EQ(judge_case(c, k6_12, by_pfn).outcome, verdict::error);
	o["returned"] = false;
	o["errno"] = nullptr;
	o["at_bound"] = "state R";
	o["ended_after_kill"] = true;
	const auto retrying = judge_case(c, k6_1, o);
	EXPECT_EQ(retrying.outcome, verdict::fail);
	EXPECT_NE(retrying.reason.find("did not return in 10 s (state R; it ended at SIGKILL): the long-term pin "
				       "retries without end"),
		  std::string::npos)
		<< retrying.reason;
	// 6.1's retry without end is a known bug: an expected failure on 6.1.192,
	// a FAIL where 1aaf8c122918 ended the loop (6.1.129-6.1.154) and on 6.12,
	// which the suite has not met it on.
	auto known = judge_case(c, kernel_version{6, 1, 192}, o);
	apply_known_bugs(known, kernel_version{6, 1, 192}, false);
	EXPECT_EQ(known.outcome, verdict::xfail) << known.reason;
	EXPECT_EQ(known.reason.find("expected failure, known bug cma-heap-longterm-retry of 6.1.192: "), 0u)
		<< known.reason;
	for (const auto &k : {kernel_version{6, 1, 140}, k6_12}) {
		auto unknown = judge_case(c, k, o);
		apply_known_bugs(unknown, k, false);
		EXPECT_EQ(unknown.outcome, verdict::fail) << k.text();
	}
	// A pin that returned on 6.1.192 is an unexpected pass: the table is
	// out of date there, or the kernel carries a fix.
	o["returned"] = true;
	o["errno"] = ENOMEM;
	auto fixed = judge_case(c, kernel_version{6, 1, 192}, o);
	apply_known_bugs(fixed, kernel_version{6, 1, 192}, false);
	EXPECT_EQ(fixed.outcome, verdict::xpass) << fixed.reason;
	o["before"]["placement"] = "ordinary";
	EXPECT_EQ(judge_case(c, k6_1, o).outcome, verdict::error);
}

namespace {

// gup_test's one call of 2 GiB and a page: how far it pinned, and the
// probed pages (one per 2 MiB) in restricted memory before and after.
json one_call(uint64_t pinned, uint64_t restricted_before, uint64_t restricted_after)
{
	const uint64_t want = (uint64_t(2) << 30) + 4096;
	const bool moved = restricted_after == 0;
	return {{"errno", 0},
		{"placement", "movable"},
		{"probe", "module"},
		{"requested_bytes", want},
		{"pinned_bytes", pinned == 1 ? want : pinned},
		{"before", {{"pfn", 300000}, {"placement", restricted_before ? "movable" : "ordinary"}}},
		{"after", {{"pfn", 4000}, {"placement", moved ? "ordinary" : "movable"}}},
		{"sampled", {{"pages", 1026}, {"restricted_before", restricted_before},
			     {"restricted_after", restricted_after}}}};
}

} // namespace

// One long-term pin of more than 2 GiB in one call: the whole buffer must
// be pinned and its restricted pages moved, on every kernel; 6.11's refusal
// (53ba78de064b, pinned 0 bytes: gup_test passes on no errno) is a FAIL,
// and an expected one on 6.11 alone. No give-back is asked of a pin that
// ended inside the ioctl.
TEST(PinnerJudge, OneLongTermPinOver2GiBIsTakenWhole)
{
	const auto &c = case_by_id("pinner/gup-test-over-2g");
	EXPECT_FALSE(expectation_for(c, k6_12).given_back_while_held.has_value());
	EXPECT_EQ(judge_case(c, k6_12, one_call(1, 256, 0)).outcome, verdict::pass);
	const auto refused = judge_case(c, k6_12, one_call(0, 256, 256));
	EXPECT_EQ(refused.outcome, verdict::fail);
	EXPECT_NE(refused.reason.find("call of 2147487744 bytes pinned 0: refused"), std::string::npos)
		<< refused.reason;
	const auto half = judge_case(c, k6_12, one_call(uint64_t(1) << 30, 256, 0));
	EXPECT_EQ(half.outcome, verdict::fail) << half.reason;
	const auto in_place = judge_case(c, k6_12, one_call(1, 256, 3));
	EXPECT_EQ(in_place.outcome, verdict::fail);
	EXPECT_NE(in_place.reason.find("3 of the 1026 probed pages (one per 2 MiB) still in movable memory"),
		  std::string::npos)
		<< in_place.reason;
	const auto nowhere = judge_case(c, k6_12, one_call(1, 0, 0));
	EXPECT_EQ(nowhere.outcome, verdict::pass);
	EXPECT_NE(nowhere.reason.find("the pin's size is checked, not where its pages went"), std::string::npos)
		<< nowhere.reason;

	const kernel_version k6_11{6, 11, 5};
	auto xfail = judge_case(c, k6_11, one_call(0, 256, 256));
	apply_known_bugs(xfail, k6_11, false);
	EXPECT_EQ(xfail.outcome, verdict::xfail) << xfail.reason;
	EXPECT_EQ(xfail.details["known_bug"]["id"], "53ba78de064b");
	auto fixed = judge_case(c, k6_11, one_call(1, 256, 0));
	apply_known_bugs(fixed, k6_11, false);
	EXPECT_EQ(fixed.outcome, verdict::xpass) << fixed.reason;
	auto elsewhere = judge_case(c, k6_12, one_call(0, 256, 256));
	apply_known_bugs(elsewhere, k6_12, false);
	EXPECT_EQ(elsewhere.outcome, verdict::fail);
}
