// SPDX-License-Identifier: GPL-2.0
// judge() on hand-built observations: it must pass what agrees with the rule
// table and fail, naming the mismatch, what does not.

#include <cerrno>

#include <gtest/gtest.h>

#include "pin/plan.hpp"
#include "pin/pin_judge.hpp"

using namespace pinmatrix;

namespace {

page_state page(uint64_t pfn, const char *where)
{
	page_state p;
	p.pfn = pfn;
	p.placement = where;
	p.zone = std::string(where) == "movable" ? "Movable" : "DMA32";
	p.migratetype = "Movable";
	p.longterm_pinnable = std::string(where) == "ordinary";
	return p;
}

const case_def &find(const std::string &id)
{
	for (const auto &c : pin_cases())
		if (c.id == id)
			return c;
	throw std::runtime_error(id);
}

// What a correct kernel shows for case A.
observation good_a()
{
	observation o;
	o.before = page(0x20a5a, "movable");
	o.after_first_pin = o.before;
	o.after_registration = page(0x30bf, "ordinary");
	o.rdma_write_readback = true;
	return o;
}

// ... and for case B.
observation good_b()
{
	observation o;
	o.before = page(0x20a5a, "movable");
	o.after_first_pin = o.before;
	o.after_registration = o.before;
	o.registration_errno = ENOMEM;
	o.content_intact = true;
	o.recovery = recovery_record{0, 1000, 0x30bf};
	return o;
}

} // namespace

TEST(Judge, PassesWhatTheRulesExpect)
{
	EXPECT_EQ(judge(find("A"), good_a()).outcome, verdict::pass);
	EXPECT_EQ(judge(find("B"), good_b()).outcome, verdict::pass);
}

// The harm oracle (lib/give_back.hpp): a stranded pin keeps restricted
// memory from going back; a correct registration does not.
static give_back_attempt answer(std::optional<bool> given_back)
{
	return {"offline memory block 4", given_back, given_back ? "" : "no memory hotplug", 1000};
}

TEST(Judge, TheMemoryGoesBackUnlessAPinStrandsThePage)
{
	auto a = good_a();
	a.give_back_held = answer(true);
	EXPECT_EQ(judge(find("A"), a).outcome, verdict::pass);
	auto b = good_b();
	b.give_back_held = answer(false);
	b.give_back_released = answer(true);
	EXPECT_EQ(judge(find("B"), b).outcome, verdict::pass);

	// A refusal counts where the memory went back later in the case (the
	// control, every pin released).
	a.give_back_held = answer(false);
	a.give_back_control = answer(true);
	auto r = judge(find("A"), a);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("memory not given back with the pins held, expected given"), std::string::npos)
		<< r.reason;
	b.give_back_held = answer(true);
	r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("memory given back with the pins held, expected refused"), std::string::npos)
		<< r.reason;
	b = good_b();
	b.give_back_held = answer(false);
	b.give_back_released = answer(false);
	b.give_back_control = answer(true);
	r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("after the first pin was released"), std::string::npos) << r.reason;
}

// Under memory pressure a block may not go back even with every pin of the
// case released (tests/vm/memory-pressure.sh): then its answers prove
// nothing about the pins, and the case, whose every other check held, is a
// SKIP that says so (issue 40 part 2: PASS only when every check decided);
// with the control given back they decide.
TEST(Judge, AGiveBackTheControlCouldNotDoEitherDecidesNothing)
{
	auto a = good_a();
	a.give_back_held = answer(false);
	a.give_back_control = answer(false);
	auto r = judge(find("A"), a);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("the give-back decided nothing: with every pin of the case released the memory did "
				"not go back either"),
		  std::string::npos)
		<< r.reason;
	a.give_back_control = answer(true);
	EXPECT_EQ(judge(find("A"), a).outcome, verdict::fail);
	auto b = good_b();
	b.give_back_held = answer(false);
	b.give_back_released = answer(false);
	b.give_back_control = answer(false);
	EXPECT_EQ(judge(find("B"), b).outcome, verdict::skip);
	// A control never asked is no control.
	b.give_back_control.reset();
	r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("no control"), std::string::npos) << r.reason;
	// A failure of another check stays a FAIL, and says the give-back decided nothing.
	b.content_intact = false;
	r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("page content changed"), std::string::npos) << r.reason;
	EXPECT_NE(r.reason.find("the give-back decided nothing"), std::string::npos) << r.reason;
}

// The oracle there but answering neither yes nor no (a block still
// offlining at the bound): the check decided nothing, never a PASS.
TEST(Judge, AnUnknownGiveBackDecidesNothing)
{
	auto a = good_a();
	a.give_back_held = answer(std::nullopt);
	a.give_back_control = answer(true);
	auto r = judge(find("A"), a);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("neither yes nor no with the pins held"), std::string::npos) << r.reason;
	auto b = good_b();
	b.give_back_held = answer(false);
	b.give_back_released = answer(std::nullopt);
	b.give_back_control = answer(true);
	r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::skip);
	EXPECT_NE(r.reason.find("after the first pin was released"), std::string::npos) << r.reason;
	b.give_back_control = answer(std::nullopt);
	EXPECT_EQ(judge(find("B"), b).outcome, verdict::skip);
	// Memory that went back needs no control: B's refusal is decided by
	// the memory going back once the first pin was released.
	b.give_back_released = answer(true);
	EXPECT_EQ(judge(find("B"), b).outcome, verdict::pass);
}

// A machine with no oracle (method "none": a CMA area nothing in user
// space asks back) owns no give-back check: a PASS that says so.
TEST(Judge, AMachineWithoutAnOracleOwnsNoGiveBack)
{
	auto a = good_a();
	a.give_back_held = give_back_attempt{"none", std::nullopt, "no CMA_DEBUGFS", 0};
	a.give_back_control = give_back_attempt{"none", std::nullopt, "no CMA_DEBUGFS", 0};
	const auto r = judge(find("A"), a);
	EXPECT_EQ(r.outcome, verdict::pass);
	EXPECT_EQ(r.reason, "the give-back is not checked here: no CMA_DEBUGFS");
}

// A pin the case released must be gone from its page, whatever the
// give-back could decide (kernel mutant 3 leaks one where a migration
// fails; the control then cannot give the block back either).
TEST(Judge, APinThatOutlivedItsReleaseFailsTheCase)
{
	auto b = good_b();
	b.probe = "module";
	b.after_release = b.before;
	b.after_release->maybe_dma_pinned = true;
	b.after_release->refcount = 1025;
	b.give_back_held = answer(false);
	b.give_back_released = answer(false);
	b.give_back_control = answer(false);
	auto r = judge(find("B"), b);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("a pin outlived its release"), std::string::npos) << r.reason;
	EXPECT_NE(r.reason.find("refcount 1025"), std::string::npos) << r.reason;
	b.after_release->maybe_dma_pinned = false;
	EXPECT_NE(judge(find("B"), b).outcome, verdict::fail);
	// The pagemap probe cannot read it: nothing is concluded from it.
	b.after_release->maybe_dma_pinned = true;
	b.probe = "pagemap";
	EXPECT_NE(judge(find("B"), b).outcome, verdict::fail);
}

TEST(Judge, FailsARegistrationThatDidNotMove)
{
	auto o = good_a();
	o.after_registration = o.before;
	auto r = judge(find("A"), o);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("did not move"), std::string::npos) << r.reason;
}

TEST(Judge, FailsWhenTheFirstPinDidNotBlock)
{
	// A kernel where B succeeds is the interesting regression.
	auto r = judge(find("B"), good_a());
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("expected ENOMEM"), std::string::npos) << r.reason;
}

TEST(Judge, FailsAFailureThatChangedThePageOrDidNotRecover)
{
	auto o = good_b();
	o.content_intact = false;
	EXPECT_EQ(judge(find("B"), o).outcome, verdict::fail);
	o = good_b();
	o.recovery->errno_value = ENOMEM;
	EXPECT_EQ(judge(find("B"), o).outcome, verdict::fail);
	o = good_b();
	o.recovery.reset();
	EXPECT_EQ(judge(find("B"), o).outcome, verdict::fail);
}

TEST(Judge, FailsASuccessWithoutDeviceReadback)
{
	auto o = good_a();
	o.rdma_write_readback = false;
	o.rdma_detail = "CPU read differs";
	auto r = judge(find("A"), o);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("CPU read differs"), std::string::npos);
	o.rdma_write_readback.reset();
	EXPECT_EQ(judge(find("A"), o).outcome, verdict::fail);
}

TEST(Judge, FailsAPageLeftInMovableMemory)
{
	auto o = good_a();
	o.after_registration = page(0x999, "movable");
	auto r = judge(find("A"), o);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("left in movable"), std::string::npos) << r.reason;
}

TEST(Judge, UnknownPinnabilityIsNoPass)
{
	auto o = good_a();
	o.after_registration->longterm_pinnable.reset();
	auto r = judge(find("A"), o);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("long-term pinnable unknown"), std::string::npos) << r.reason;
}

TEST(Judge, FirstPinFailureIsAFail)
{
	observation o;
	o.before = page(1, "movable");
	o.first_pin_errno = ENOMEM;
	auto r = judge(find("C"), o);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("first pin failed"), std::string::npos);
}

TEST(Judge, SummaryShowsTheMoveAndTheErrno)
{
	EXPECT_EQ(good_a().summary(), "moved 0x20a5a->0x30bf, ok");
	EXPECT_EQ(good_b().summary(), "ENOMEM (12), page intact");
}

TEST(Verdict, KernelCiOrder)
{
	EXPECT_EQ(worst(verdict::pass, verdict::skip), verdict::pass);
	EXPECT_EQ(worst(verdict::fail, verdict::pass), verdict::fail);
	EXPECT_EQ(worst(verdict::fail, verdict::error), verdict::error);
	EXPECT_EQ(worst(verdict::skip, verdict::skip), verdict::skip);
}
