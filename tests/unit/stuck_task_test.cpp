// SPDX-License-Identifier: GPL-2.0
// A timed-out case's stuck thread: its CPU time as /proc counts it, and
// when that time says a system call never returns (cases/runner.hpp).

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include <gtest/gtest.h>

#include "kernel_info.hpp"
#include "runner.hpp"

using namespace pinmatrix;
using nlohmann::json;

TEST(StuckTask, CpuTimeIsReadFromProcAndGrowsInUserSpace)
{
	const auto before = read_cpu_time(getpid());
	ASSERT_TRUE(before);
	volatile unsigned long n = 0;
	const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
	while (std::chrono::steady_clock::now() < until)
		n = n + 1;
	const auto after = read_cpu_time(getpid());
	ASSERT_TRUE(after);
	EXPECT_GT(after->user + after->system, before->user + before->system) << "300 ms of a busy loop";
	EXPECT_GE(after->user, before->user);
}

TEST(StuckTask, NoCpuTimeForATaskThatIsGone)
{
	const pid_t child = fork();
	ASSERT_GE(child, 0);
	if (child == 0)
		_exit(0);
	int status = 0;
	waitpid(child, &status, 0);
	EXPECT_FALSE(read_cpu_time(child));
}

TEST(StuckTask, OnlyAThreadThatRanInTheKernelAndNowhereElseNeverReturns)
{
	auto stuck = [](const char *state, int user_ms, int system_ms) {
		return json{{"state", state}, {"cpu_time", {{"over_ms", 500}, {"user_ms", user_ms}, {"system_ms", system_ms}}}};
	};
	EXPECT_TRUE(runs_in_the_kernel(stuck("R", 0, 490)));
	EXPECT_FALSE(runs_in_the_kernel(stuck("R", 10, 480))) << "some of it in user space: a loop of ours, maybe";
	EXPECT_FALSE(runs_in_the_kernel(stuck("R", 0, 0))) << "it did not run while watched: nothing decided";
	EXPECT_FALSE(runs_in_the_kernel(stuck("D", 0, 490))) << "asleep: a wait, not a loop";
	EXPECT_FALSE(runs_in_the_kernel(json{{"state", "R"}})) << "no CPU time read";
}
