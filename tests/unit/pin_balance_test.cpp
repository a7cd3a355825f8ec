// SPDX-License-Identifier: GPL-2.0
// The pins a case leaves behind (cases/pin_balance.hpp), over a scripted
// count of the pins held system-wide: the real count is read in the guest
// (ctest vm.faults, --fault kernel-leak-pin-at).

#include <chrono>
#include <deque>

#include <gtest/gtest.h>

#include "pin_balance.hpp"

using namespace pinmatrix;
using namespace std::chrono_literals;

namespace {

// The counts read in turn; the last one repeats.
pin_balance::reader counts(std::deque<int64_t> values)
{
	return [values]() mutable -> std::optional<int64_t> {
		const int64_t v = values.front();
		if (values.size() > 1)
			values.pop_front();
		return v;
	};
}

case_record passed()
{
	case_record r;
	r.id = "C";
	r.outcome = verdict::pass;
	return r;
}

} // namespace

TEST(PinBalance, ACaseThatKeptPinsFailsAndSaysHowMany)
{
	pin_balance b(counts({7, 8}), true, 100ms);
	b.before_case();
	auto r = passed();
	b.after_case(r);
	EXPECT_EQ(r.outcome, verdict::fail);
	EXPECT_NE(r.reason.find("the case left 1 FOLL_PIN pin behind"), std::string::npos) << r.reason;
	EXPECT_EQ(r.details["pin_balance"]["kept"], 1);
	// The next case starts from there: the pin is counted once.
	auto next = passed();
	b.before_case();
	b.after_case(next);
	EXPECT_EQ(next.outcome, verdict::pass) << next.reason;
}

// A pinner that lets go late (io_uring's ring exit), or a passing pin of
// another's (9p during a write), is back within the grace.
TEST(PinBalance, PinsGivenBackWithinTheGraceAreNoLeak)
{
	pin_balance b(counts({5, 9, 7, 5}), true, 1000ms);
	b.before_case();
	auto r = passed();
	b.after_case(r);
	EXPECT_EQ(r.outcome, verdict::pass) << r.reason;
	EXPECT_EQ(r.details["pin_balance"]["held_after"], 5);
}

// Where others pin too, a difference is evidence, not the verdict.
TEST(PinBalance, OnABusyMachineADifferenceIsOnlyEvidence)
{
	pin_balance b(counts({3, 10}), false, 50ms);
	b.before_case();
	auto r = passed();
	b.after_case(r);
	EXPECT_EQ(r.outcome, verdict::pass);
	EXPECT_NE(r.reason.find("not judged: other processes on this machine pin too"), std::string::npos)
		<< r.reason;
	EXPECT_EQ(r.details["pin_balance"]["decides"], false);
}

// A FAIL or an ERROR stays what it was, and says the pins too; a kernel
// that counts no pins decides nothing and says nothing.
TEST(PinBalance, OtherVerdictsKeepTheirsAndNoCountSaysNothing)
{
	pin_balance b(counts({0, 2}), true, 50ms);
	b.before_case();
	auto r = passed();
	r.outcome = verdict::error;
	b.after_case(r);
	EXPECT_EQ(r.outcome, verdict::error);
	EXPECT_NE(r.reason.find("left 2 FOLL_PIN pins behind"), std::string::npos) << r.reason;
	pin_balance none([]() -> std::optional<int64_t> { return std::nullopt; }, true, 50ms);
	none.before_case();
	auto q = passed();
	none.after_case(q);
	EXPECT_EQ(q.outcome, verdict::pass);
	EXPECT_FALSE(q.details.contains("pin_balance"));
}
