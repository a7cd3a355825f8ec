// SPDX-License-Identifier: GPL-2.0
// The rule table against the specification it encodes: section 16.5 of the
// incident write-up, and the ladder of fig. 3.

#include <cerrno>

#include <gtest/gtest.h>

#include "pin/plan.hpp"
#include "rules.hpp"

using namespace pinmatrix;

TEST(Rules, CaseA_UnpinnedMovablePageIsMigratedByTheRegistration)
{
	auto e = expect(placement::movable, first_pin::none);
	EXPECT_EQ(e.registration_errno, 0);
	EXPECT_TRUE(e.registration_migrates);
	EXPECT_FALSE(e.first_pin_migrates);
}

TEST(Rules, CaseB_ShortTermPinBlocksMigrationAndRegistrationFailsWithENOMEM)
{
	auto e = expect(placement::movable, first_pin::foll_pin);
	EXPECT_EQ(e.registration_errno, ENOMEM);
	EXPECT_FALSE(e.registration_migrates);
	EXPECT_FALSE(e.first_pin_migrates);
}

TEST(Rules, CaseC_LongTermFirstPinMigratesSoTheRegistrationNeedNot)
{
	auto e = expect(placement::movable, first_pin::foll_pin_longterm);
	EXPECT_TRUE(e.first_pin_migrates);
	EXPECT_EQ(e.registration_errno, 0);
	EXPECT_FALSE(e.registration_migrates);
}

TEST(Rules, CaseD_OrdinaryPageNeedsNoMigration)
{
	auto e = expect(placement::ordinary, first_pin::foll_pin);
	EXPECT_EQ(e.registration_errno, 0);
	EXPECT_FALSE(e.registration_migrates);
	EXPECT_FALSE(e.first_pin_migrates);
}

TEST(Rules, CmaBehavesLikeMovable)
{
	for (const auto &f : all_first_pins()) {
		auto m = expect(placement::movable, f.kind);
		auto c = expect(placement::cma, f.kind);
		EXPECT_EQ(m.registration_errno, c.registration_errno) << f.name;
		EXPECT_EQ(m.registration_migrates, c.registration_migrates) << f.name;
		EXPECT_EQ(m.first_pin_migrates, c.first_pin_migrates) << f.name;
	}
}

TEST(Rules, MlockIsNotADevicePinAndDoesNotBlockMigration)
{
	auto e = expect(placement::movable, first_pin::mlock);
	EXPECT_EQ(e.registration_errno, 0);
	EXPECT_TRUE(e.registration_migrates);
}

TEST(Rules, AHeldGupReferenceBlocksMigrationLikeAPin)
{
	EXPECT_EQ(expect(placement::movable, first_pin::gup_ref).registration_errno, ENOMEM);
}

TEST(Rules, OrdinaryPlacementNeverMovesAndNeverFails)
{
	for (const auto &f : all_first_pins()) {
		auto e = expect(placement::ordinary, f.kind);
		EXPECT_EQ(e.registration_errno, 0) << f.name;
		EXPECT_FALSE(e.registration_migrates) << f.name;
		EXPECT_FALSE(e.first_pin_migrates) << f.name;
	}
}

TEST(Rules, ThePageMovesAtMostOnce)
{
	for (placement p : {placement::ordinary, placement::movable, placement::cma})
		for (const auto &f : all_first_pins()) {
			auto e = expect(p, f.kind);
			EXPECT_FALSE(e.first_pin_migrates && e.registration_migrates);
		}
}

TEST(Rules, SummariesReadAsTheIssueTable)
{
	EXPECT_EQ(expect(placement::movable, first_pin::none).summary(), "migrate, ok");
	EXPECT_EQ(expect(placement::movable, first_pin::foll_pin).summary(), "ENOMEM");
	EXPECT_EQ(expect(placement::movable, first_pin::foll_pin_longterm).summary(), "ok, no move");
	EXPECT_EQ(expect(placement::ordinary, first_pin::foll_pin).summary(), "ok");
}
