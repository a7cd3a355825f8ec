// SPDX-License-Identifier: GPL-2.0
// A matrix's groups side by side (vm/parallel_groups.hpp): how many guests
// the host holds, and the runner that hands outcomes back in order.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parallel_groups.hpp"

using namespace pinmatrix;

namespace {

unsigned at_once(unsigned requested, std::vector<unsigned> memory, std::vector<unsigned> cpus, host_capacity host)
{
	std::string why;
	return guests_at_once(requested, memory, cpus, host, why);
}

} // namespace

TEST(GuestsAtOnce, BoundedByCoresMemoryAndGroups)
{
	const std::vector<unsigned> eight(8, 1024), one_cpu(8, 1);
	EXPECT_EQ(at_once(0, eight, one_cpu, {2, 23000}), 2u) << "2 cores";
	EXPECT_EQ(at_once(0, eight, one_cpu, {16, 3000}), 1u) << "3000 MiB: one 1024 MiB guest and QEMU's own";
	EXPECT_EQ(at_once(0, eight, one_cpu, {16, 6000}), 3u) << "80% of 6000 MiB in 1280 MiB guests";
	EXPECT_EQ(at_once(0, eight, std::vector<unsigned>(8, 2), {2, 23000}), 1u) << "2-vCPU guests on 2 cores";
	EXPECT_EQ(at_once(0, {1024}, {1}, {16, 64000}), 1u) << "one group";
	EXPECT_EQ(at_once(0, {512, 2048}, {1, 1}, {16, 4000}), 1u) << "the largest guest decides";
	EXPECT_EQ(at_once(0, eight, one_cpu, {1, 0}), 1u) << "nothing known: one";
}

TEST(GuestsAtOnce, RequestedIsTakenUpToOnePerGroup)
{
	const std::vector<unsigned> two(2, 1024), cpus(2, 1);
	EXPECT_EQ(at_once(1, two, cpus, {16, 64000}), 1u);
	EXPECT_EQ(at_once(5, two, cpus, {1, 100}), 2u);
	std::string why;
	guests_at_once(2, two, cpus, {16, 64000}, why);
	EXPECT_EQ(why, "--jobs 2");
	guests_at_once(0, two, cpus, {2, 23000}, why);
	EXPECT_EQ(why, "2 cores, 23000 MiB available, at most 1024 MiB and 1 vCPU a guest");
}

// Job 0 ends only after job 1 has: both ran at once, and done() still
// sees 0 before 1.
TEST(RunInOrder, JobsRunSideBySideAndEndInTheMatrixOrder)
{
	std::mutex m;
	std::condition_variable cv;
	bool one_ended = false;
	std::vector<size_t> started, done;
	run_in_order<int>(
		3, 2, [&](size_t k) { started.push_back(k); },
		[&](size_t k) {
			if (k == 0) {
				std::unique_lock lock(m);
				if (!cv.wait_for(lock, std::chrono::seconds(20), [&] { return one_ended; }))
					throw std::runtime_error("job 1 never ran beside job 0");
			}
			if (k == 1) {
				std::lock_guard lock(m);
				one_ended = true;
				cv.notify_all();
			}
			return int(k) * 10;
		},
		[&](size_t k, int &r) {
			EXPECT_EQ(r, int(k) * 10);
			done.push_back(k);
		});
	EXPECT_EQ(started, (std::vector<size_t>{0, 1, 2}));
	EXPECT_EQ(done, (std::vector<size_t>{0, 1, 2}));
}

TEST(RunInOrder, NeverMoreAtOnceThanAsked)
{
	std::atomic<int> running = 0, most = 0;
	run_in_order<int>(
		6, 2, [](size_t) {},
		[&](size_t) {
			const int now = ++running;
			for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);)
				;
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
			--running;
			return 0;
		},
		[](size_t, int &) {});
	EXPECT_LE(most.load(), 2);
	EXPECT_GE(most.load(), 1);
}

TEST(RunInOrder, AFailedJobStopsNewOnesAndIsThrownAfterTheEarlierOnesAreDone)
{
	std::vector<size_t> started, done;
	EXPECT_THROW(run_in_order<int>(
			     4, 1, [&](size_t k) { started.push_back(k); },
			     [](size_t k) -> int {
				     if (k == 1)
					     throw std::runtime_error("qemu would not start");
				     return 0;
			     },
			     [&](size_t k, int &) { done.push_back(k); }),
		     std::runtime_error);
	EXPECT_EQ(started, (std::vector<size_t>{0, 1}));
	EXPECT_EQ(done, (std::vector<size_t>{0}));
}
