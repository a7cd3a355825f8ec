// SPDX-License-Identifier: GPL-2.0
// The race family (cases/race/) in guests with 2 vCPUs on ZONE_MOVABLE:
// 4 threads pin one 64-page buffer at once, 20 rounds a case (and one
// registration while another holds the buffer isolated, 3 rounds). On correct
// kernels no pin succeeds in place: every success leaves the buffer out of
// ZONE_MOVABLE. Debian's stock 6.1 and 6.12 (both past the 2025 regression's
// stable windows); the kernel with it reapplied is the documented command in
// docs/cases.md ("Races").

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "vm_records.hpp"

using nlohmann::json;

class VmRace : public ::testing::TestWithParam<const char *> {
protected:
	void SetUp() override { PINMATRIX_REQUIRE_GUEST(); }
};

TEST_P(VmRace, NoPinSucceedsInPlace)
{
	const json doc = pinmatrix::test::run_guest(std::string("race-") + GetParam(),
						    std::string("--kernel debian:") + GetParam() +
							    " --boot movable --cpus 2 --cases race")
				 .doc;
	ASSERT_TRUE(doc.is_object());
	ASSERT_EQ(doc["cases"].size(), 5u);
	for (const auto &c : doc["cases"]) {
		EXPECT_EQ(c["verdict"], "pass") << c["id"] << ": " << c.value("reason", "");
		const auto &o = c["observed"];
		ASSERT_TRUE(o.is_object()) << c["id"];
		EXPECT_EQ(o["rounds"].size(), c["id"] == "race/reg-mr-while-isolated" ? 3u : 20u) << c["id"];
		EXPECT_EQ(o["rounds_in_place"], 0) << c["id"];
		// The race was run: pins succeeded, so the check had something to check.
		EXPECT_GT(o["successes"].get<int>(), 0) << c["id"];
		EXPECT_EQ(o["cpus"], 2) << c["id"];
	}
	// In each round that held the window open (a round whose first
	// registration held nothing isolated decides nothing, as the case's
	// judge says: one of three did so in a CI run on a loaded host), the
	// second registration waited it out (a correct kernel retries until the
	// first one's migration is done): the window ended on that proof, its
	// CPU time in the call, not on the window's bound.
	int held = 0;
	for (const auto &round : pinmatrix::test::case_by_id(doc, "race/reg-mr-while-isolated")["observed"]["rounds"]) {
		if (round["first_pin_held_isolated"] != true)
			continue;
		held++;
		EXPECT_EQ(round["second_pin_returned_while_isolated"], false) << round;
		EXPECT_EQ(round["errnos"].size(), 2u) << round;
		EXPECT_EQ(round["window_ended_by"], "the second registration was retrying (its CPU time in the call)")
			<< round;
		EXPECT_GE(round["second_pin_cpu_ms_in_window"].get<int>(), 300) << round;
	}
	EXPECT_GE(held, 1) << "no round held the window open: the case decided nothing";
	// The mlock()ing thread's own call succeeded every round, and is no pin.
	for (const auto &round : pinmatrix::test::case_by_id(doc, "race/mlock-batch-reg-mr")["observed"]["rounds"]) {
		EXPECT_EQ(round["mlock_errno"], 0);
		EXPECT_EQ(round["errnos"].size(), 3u);
	}
}

INSTANTIATE_TEST_SUITE_P(StockKernels, VmRace, ::testing::Values("6.1", "6.12+deb12"),
			 [](const auto &info) { return std::string(info.index ? "debian_6_12" : "debian_6_1"); });
