// SPDX-License-Identifier: GPL-2.0
#include "gup_test_pin.hpp"

#include <fcntl.h>
#include <linux/types.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <string>

#include "sys_error.hpp"

namespace pinmatrix {

namespace {

// mm/gup_test.h of the kernel tree, which is not uapi: kselftest's
// mm/gup_test.c includes it from the tree. The command encodes the
// struct's size, so a layout this kernel does not have is refused
// (EINVAL), never a wrong measurement. The same from 5.11 to 7.2.
constexpr int gup_test_max_pages_to_dump = 8;
struct gup_test {
	__u64 get_delta_usec;	// out: the pin_user_pages() calls
	__u64 put_delta_usec;	// out: the unpin_user_pages() call
	__u64 addr;		// in: the buffer
	__u64 size;		// in: its length; out: how far the pins got
	__u32 nr_pages_per_call;	// in: pages per pin_user_pages() call
	__u32 gup_flags;	// in: FOLL_* besides the FOLL_LONGTERM the command adds
	__u32 test_flags;	// in: DUMP_USER_PAGES_TEST only
	__u32 which_pages[gup_test_max_pages_to_dump];	// in: DUMP_USER_PAGES_TEST only
};
static_assert(sizeof(gup_test) == 80);
constexpr unsigned long pin_longterm_benchmark = _IOWR('g', 3, struct gup_test);
// FOLL_WRITE (include/linux/mm_types.h), as kselftest's gup_test.c passes it.
constexpr __u32 foll_write = 0x01;

} // namespace

gup_test_pin gup_test_pin::open()
{
	unique_fd fd(::open(file, O_RDWR | O_CLOEXEC));
	if (!fd) {
		const int err = errno;
		throw unmet_need(std::string(file) + ": " + errno_text(err) +
				 (err == ENOENT ? " (a kernel without CONFIG_GUP_TEST, or no debugfs)" : ""));
	}
	return gup_test_pin(std::move(fd));
}

gup_test_pin_result gup_test_pin::pin_longterm(void *addr, size_t length, uint32_t pages_per_call) const
{
	gup_test g{};
	g.addr = reinterpret_cast<uintptr_t>(addr);
	g.size = length;
	g.nr_pages_per_call = pages_per_call;
	g.gup_flags = foll_write;
	gup_test_pin_result r;
	if (::ioctl(fd_.get(), pin_longterm_benchmark, &g)) {
		r.err = errno;
		return r;
	}
	r.pinned_bytes = g.size;
	r.pin_us = g.get_delta_usec;
	r.unpin_us = g.put_delta_usec;
	return r;
}

} // namespace pinmatrix
