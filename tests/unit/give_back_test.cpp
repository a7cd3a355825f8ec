// SPDX-License-Identifier: GPL-2.0
// The give-back oracle's answer for a block that had not gone offline when
// its child was killed (lib/give_back.hpp: answer_unfinished_offline): a
// refusal needs the kernel's count of failed migrations; a block that is
// only slow (memory pressure, a starved vCPU) is unknown, never a refusal
// that fails a case whose memory was expected back.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "give_back.hpp"
#include "kernel_info.hpp"
#include "pin/pin_judge.hpp"
#include "pin/plan.hpp"

using namespace pinmatrix;

namespace {

give_back_attempt unfinished(std::optional<uint64_t> failed_migrations, give_back_patience patience)
{
	give_back_attempt g{"offline memory block 6", std::nullopt, "", patience.bound.count() * 1000000};
	answer_unfinished_offline(g, failed_migrations, patience);
	return g;
}

bool says(const give_back_attempt &g, const char *text)
{
	return g.detail.find(text) != std::string::npos;
}

} // namespace

TEST(GiveBack, FailedMigrationsProveARefusal)
{
	for (const auto patience : {expecting_refusal, expecting_return}) {
		const auto g = unfinished(failed_migrations_proof + 2, patience);
		EXPECT_EQ(g.given_back, false) << g.detail;
		EXPECT_TRUE(says(g, "refused: 5 failed migrations in ")) << g.detail;
	}
}

// vm.memory-pressure, movable-mlock: the registration had moved the page
// out, stress-ng left 16 MB available, and the block was still offlining
// at 12 s with no failed migration; the control then went in 35 ms.
TEST(GiveBack, ASlowBlockIsUnknownNotRefused)
{
	for (const uint64_t failed : {uint64_t(0), failed_migrations_proof - 1}) {
		const auto g = unfinished(failed, expecting_return);
		EXPECT_EQ(g.given_back, std::nullopt) << g.detail;
		EXPECT_TRUE(says(g, "still offlining after 12000 ms")) << g.detail;
		EXPECT_TRUE(says(g, "slow, not refused")) << g.detail;
	}
	EXPECT_EQ(unfinished(0, expecting_refusal).given_back, std::nullopt);
}

TEST(GiveBack, WithoutTheCounterARefusalCannotBeToldFromSlowness)
{
	for (const auto patience : {expecting_refusal, expecting_return}) {
		const auto g = unfinished(std::nullopt, patience);
		EXPECT_EQ(g.given_back, std::nullopt) << g.detail;
		EXPECT_TRUE(says(g, "VM_EVENT_COUNTERS")) << g.detail;
	}
}

// The case that failed under memory pressure, judged again: its answers
// as the oracle gives them now.
TEST(GiveBack, ASlowBlockFailsNoCase)
{
	const case_def *mlock = nullptr;
	for (const auto &c : pin_cases())
		if (c.id == "movable-mlock")
			mlock = &c;
	ASSERT_NE(mlock, nullptr);
	observation obs;
	obs.give_back_held = unfinished(0, expecting_return);
	obs.give_back_control = give_back_attempt{"offline memory block 6", true, "offline", 35000000};
	const auto r = judge(*mlock, obs);
	EXPECT_EQ(r.reason.find("memory not given back"), std::string::npos) << r.reason;
}

// A child that outlives its SIGKILL (an offline stuck in the kernel) must
// not keep the case waiting: reap_within() gives up at its bound and says
// where the child was. Here a child that was not killed stands for it.
TEST(GiveBack, AChildThatDoesNotExitIsLeftWithWhereItWas)
{
	const pid_t sleeper = fork();
	ASSERT_GE(sleeper, 0);
	if (sleeper == 0) {
		pause();
		_exit(0);
	}
	int status = 0;
	const auto where = reap_within(sleeper, status, std::chrono::milliseconds(200));
	ASSERT_TRUE(where.has_value());
	EXPECT_EQ(where->rfind("state S", 0), 0u) << *where;
	kill(sleeper, SIGKILL);
	EXPECT_EQ(reap_within(sleeper, status, std::chrono::seconds(10)), std::nullopt);
	EXPECT_TRUE(WIFSIGNALED(status));
}

// A block whose pages the kernel keeps moving is slow, not stuck: the
// bound counts from the last page moved (a busy fleet node took 11.9 s for
// one, against the 12 s that was the whole bound), up to twice the bound.
TEST(GiveBack, ABlockStillMovingPagesIsNotStoppedAtTheBound)
{
	using std::chrono::seconds;
	const auto b = expecting_return.bound;
	EXPECT_FALSE(stop_attempt_now(expecting_return, b + seconds(3), seconds(1), 0));
	EXPECT_TRUE(stop_attempt_now(expecting_return, b + seconds(3), b, 0)) << "nothing moved for the bound";
	EXPECT_TRUE(stop_attempt_now(expecting_return, b * progress_cap_factor, seconds(0), 0)) << "the cap";
	// Where a refusal is expected, the proof stops it at once; where the
	// memory is expected back, failed migrations alone do not.
	EXPECT_TRUE(stop_attempt_now(expecting_refusal, seconds(1), seconds(0), failed_migrations_proof));
	EXPECT_FALSE(stop_attempt_now(expecting_return, seconds(1), seconds(0), failed_migrations_proof));
}
