// SPDX-License-Identifier: GPL-2.0
#pragma once

// The end of a held-open isolation (race/reg-mr-while-isolated), from a
// process of its own. A round's first registration waits for folio locks
// the test module holds (PINMATRIX_PIN_LOCK), with every folio of the
// buffer isolated from the LRU, and it waits holding the mmap lock of the
// case's process for reading. A thread of that process that needed the
// lock for writing (a new thread's stack, a heap that grows) would queue
// behind it, and every fault behind that writer: so no thread of the case's
// process may be the one to release the locks. This helper, forked before
// the first round, shares the module's file (one pin table): it waits until
// a task waits for one of the locks (the migration, which isolated every
// folio of the buffer before it began: struct pinmatrix_pin_info
// .lock_waiters), lets the second registration go, holds the window, and
// unpins. The window ends on what the kernel did, not on a clock: the second
// registration returned, or it spent retry_proof of CPU in the call (the
// kernel retries it); the window's length bounds it for a kernel that makes
// it wait asleep.

#include <sys/types.h>

#include <chrono>
#include <cstdint>

#include "pin_module.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::race_cases {

class isolation_release {
public:
	// What ended a window.
	enum window_end : uint32_t { ended_at_bound, ended_on_return, ended_on_retries };
	struct timings {
		bool isolated = false;		// a migration waited for the locks before the wait ran out
		int64_t released_ns = 0;	// when the locks went (CLOCK_MONOTONIC_RAW)
		window_end ended = ended_at_bound;
		int64_t second_cpu_ms = 0;	// the second registration's CPU time in the window
	};

	// Forks the helper. wait: for the isolation; window: the most the second
	// registration has to return while it holds; retry_proof: its CPU time
	// in the call that proves the kernel retries it.
	isolation_release(const pin_module &module, std::chrono::milliseconds wait, std::chrono::milliseconds window,
			  std::chrono::milliseconds retry_proof);
	~isolation_release();	// tells the helper to end, and reaps it
	isolation_release(const isolation_release &) = delete;
	isolation_release &operator=(const isolation_release &) = delete;

	// A round: the helper waits until a task waits for a folio lock of
	// lock_id, writes 'I' (or 'N' when the wait ran out) to go_fd(), holds
	// the window (after 'I') on thread second_tid, and unpins lock_id.
	void start(uint32_t lock_id, pid_t second_tid) const;
	// Where the second registration reads its one byte.
	int go_fd() const { return go_read_.get(); }
	// Said by the second registration's thread as its call returns.
	void second_returned() const;
	// After the round's threads ended: what the helper saw. Throws
	// sys_error when it said nothing.
	timings finish() const;

private:
	pid_t pid_ = -1;
	unique_fd request_write_, go_read_, returned_write_, report_read_;
};

// "the second registration returned", ...
const char *name(isolation_release::window_end e);

} // namespace pinmatrix::race_cases
