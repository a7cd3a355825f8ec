// SPDX-License-Identifier: GPL-2.0
// kselftest's anchor for a long-term pin: gup_test's PIN_LONGTERM_BENCHMARK
// (/sys/kernel/debug/gup_test, CONFIG_GUP_TEST), by size and placement, the
// same sizes and fresh pages as the module's pin (bench_pin.cpp), so that
// the report can set the two side by side (reports/bench_report.cpp).

#include <fcntl.h>
#include <linux/types.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "bench_env.hpp"
#include "unique_fd.hpp"

namespace pinmatrix::bench {

namespace {

// mm/gup_test.h of the kernel tree, which is not uapi: kselftest's
// mm/gup_test.c includes it from the tree. The command encodes the
// struct's size, so a layout this kernel does not have is refused
// (EINVAL), a skip with the reason, never a wrong measurement.
constexpr int gup_test_max_pages_to_dump = 8;
struct gup_test {
	__u64 get_delta_usec;	// out: the pin_user_pages() calls, in the kernel's clock
	__u64 put_delta_usec;	// out: the unpin_user_pages() call
	__u64 addr;		// in: the buffer
	__u64 size;		// in: its length
	__u32 nr_pages_per_call;	// in: pages per pin_user_pages() call
	__u32 gup_flags;	// in: FOLL_* besides the FOLL_LONGTERM the command adds
	__u32 test_flags;	// in: DUMP_USER_PAGES_TEST only
	__u32 which_pages[gup_test_max_pages_to_dump];	// in: DUMP_USER_PAGES_TEST only
};
constexpr unsigned long pin_longterm_benchmark = _IOWR('g', 3, struct gup_test);
// FOLL_WRITE, as kselftest's gup_test.c passes it (the module's pin asks
// for write access too: PINMATRIX_PIN_WRITE).
constexpr __u32 foll_write = 0x01;

const char *const gup_test_file = "/sys/kernel/debug/gup_test";

// gup_test/pin_longterm/<placement>/<bytes>: a fresh mapping per iteration
// (populated and probed untimed), as the module's pin; timed: the ioctl,
// which pins the whole buffer in one pin_user_pages(FOLL_LONGTERM) call
// (migrating movable and CMA pages first) and unpins it. Counters as the
// module's pin, and `left_placement`: the share of the pages no longer in
// the placement afterwards, which a long-term pin of restricted memory
// must make 1.
void bm_gup_test(benchmark::State &state, placement p)
{
	env &e = env::get();
	if (!e.module()) {
		state.SkipWithError(("no test module (it probes the placements): " + e.module_why()).c_str());
		return;
	}
	unique_fd fd(::open(gup_test_file, O_RDWR | O_CLOEXEC));
	if (!fd) {
		const int err = errno;
		state.SkipWithError((std::string(gup_test_file) + ": " + std::strerror(err) +
				     (err == ENOENT ? " (a kernel without CONFIG_GUP_TEST, or no debugfs)" : ""))
					    .c_str());
		return;
	}
	const size_t bytes = size_t(state.range(0));
	if (auto why = e.make_room(p, bytes, !traits(p).longterm_pinnable); !why.empty()) {
		state.SkipWithError(why.c_str());
		return;
	}
	int64_t total_ns = 0, kernel_pin_us = 0;
	double in_placement = 0, left = 0;
	size_t pages = 0;
	for (auto _ : state) {
		auto fresh = fresh_or_skip(state, *e.module(), p, bytes);
		if (!fresh)
			break;
		const fresh_pages &f = *fresh;
		pages = f.pages;
		gup_test g{};
		g.addr = f.map.addr();
		g.size = bytes;
		g.nr_pages_per_call = __u32(f.pages);
		g.gup_flags = foll_write;
		const int64_t t0 = time_ns();
		const int rc = ::ioctl(fd.get(), pin_longterm_benchmark, &g);
		const int64_t t1 = time_ns();
		if (rc) {
			const int err = errno;
			state.SkipWithError(("PIN_LONGTERM_BENCHMARK of " + size_label(bytes) + ": " +
					     std::strerror(err) +
					     (err == EINVAL ? " (this kernel's struct gup_test differs)" : ""))
						    .c_str());
			break;
		}
		state.SetIterationTime(double(t1 - t0) * 1e-9);
		total_ns += t1 - t0;
		kernel_pin_us += int64_t(g.get_delta_usec);
		in_placement += f.in_placement;
		left += 1 - share_in(*e.module(), f.map, p);
	}
	set_pin_counters(state, total_ns, in_placement, pages);
	if (const auto n = state.iterations(); n && pages) {
		state.counters["kernel_pin_ns_per_page"] = double(kernel_pin_us) * 1e3 / (double(n) * double(pages));
		state.counters["left_placement"] = left / double(n);
	}
}

} // namespace

void register_gup_test(placement p)
{
	register_sized("gup_test/pin_longterm/" + std::string(name(p)), pinning_sizes(),
		       [p](benchmark::State &state) { bm_gup_test(state, p); });
}

} // namespace pinmatrix::bench
