// SPDX-License-Identifier: GPL-2.0
#pragma once

// gup_test (/sys/kernel/debug/gup_test, CONFIG_GUP_TEST): kselftest's
// handle on pin_user_pages(). PIN_LONGTERM_BENCHMARK pins a buffer with
// FOLL_LONGTERM, so many pages per call as the caller asks (mm/gup_test.c:
// __gup_test_ioctl()), and unpins it before it returns. A refused pin is
// no errno: the ioctl stops at the first call that pinned nothing and
// reports how far it got (gup_test.size), which pinned_bytes carries.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "unique_fd.hpp"

namespace pinmatrix {

struct gup_test_pin_result {
	int err = 0;			// the ioctl's errno; 0 when it ran
	uint64_t pinned_bytes = 0;	// how much the pin calls covered before the first refusal
	uint64_t pin_us = 0;		// the pin_user_pages() calls, in the kernel's clock
	uint64_t unpin_us = 0;		// the unpin_user_pages() call
};

class gup_test_pin {
public:
	static constexpr const char *file = "/sys/kernel/debug/gup_test";

	// Throws unmet_need with what is missing: no such file (a kernel
	// without CONFIG_GUP_TEST, or no debugfs), or it cannot be opened.
	static gup_test_pin open();

	// PIN_LONGTERM_BENCHMARK of [addr, addr + length) for writing,
	// pages_per_call pages to each pin_user_pages(FOLL_LONGTERM) call:
	// pinned, then unpinned. An EINVAL err may be this kernel's struct
	// gup_test differing from the one declared here.
	gup_test_pin_result pin_longterm(void *addr, size_t length, uint32_t pages_per_call) const;

private:
	explicit gup_test_pin(unique_fd fd) : fd_(std::move(fd)) {}
	unique_fd fd_;
};

} // namespace pinmatrix
